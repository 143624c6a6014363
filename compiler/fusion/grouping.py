"""Groups of nodes that strategies merge into kernels, with an always-acyclic group graph.

Every strategy starts from one group per kernel-forming node (see `node_role`) and merges
groups. Two groups may merge only if no path between them runs through a third group — else
the kernel graph would have a cycle ("would form cycle" in the decision log). Checking that
naively costs a graph walk per merge, quadratic overall. `GroupGraph` instead keeps a
topological rank per group and updates it on every merge with Pearce and Kelly's dynamic
topological sort ("A dynamic topological sort algorithm for directed acyclic graphs", JEA
2007): the cycle check and the re-ranking only visit groups ranked between the two being
merged, so merging the groups of a sparse graph stays near-linear.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from compiler.ir.graph import Graph, Node
from compiler.ir.ops import OPS, Category

# Node roles: what a node is to a fusion strategy.
LEAF = "leaf"            # parameter, constant: data that is already in memory
PLUMBING = "plumbing"    # tuple, get-tuple-element, ...: select buffers, launch nothing
LIBRARY = "library"      # dot, convolution, custom-call, control flow, ...: a kernel of its own
FUSIBLE = "fusible"      # everything a generated kernel can compute

_LEAF_OPS = {"parameter", "constant"}
_PLUMBING_OPS = {"tuple", "get-tuple-element", "after-all", "add-dependency", "domain",
                 "opt-barrier", "partition-id", "replica-id", "get-dimension-size"}
_UNFUSIBLE_CATEGORIES = {Category.LIBRARY, Category.CONTROL_FLOW, Category.COMMUNICATION}
_UNFUSIBLE_OPS = {"scatter", "select-and-scatter", "set-dimension-size", "dynamic-reshape"}

# XLA's "expensive" ops (HloInstruction::IsOpElementwise + instruction_fusion.cc IsExpensive):
# fusing one into several consumers would compute it several times, so XLA never duplicates
# them. Everything else elementwise, and the cheap movement ops, may be recomputed.
_EXPENSIVE_OPS = {
    "divide", "remainder", "power", "sqrt", "rsqrt", "cbrt", "exponential",
    "exponential-minus-one", "log", "log-plus-one", "logistic", "tanh", "sine", "cosine", "tan",
    "atan2", "erf", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh",
}
_DUPLICABLE_OPS = {"broadcast", "reshape", "bitcast", "iota", "convert", "transpose", "slice",
                   "reverse", "pad", "concatenate", "bitcast-convert"}


def node_role(node: Node) -> str:
    if node.op in _LEAF_OPS:
        return LEAF
    if node.op in _PLUMBING_OPS:
        return PLUMBING
    info = OPS.get(node.op)
    if info is None or info.category in _UNFUSIBLE_CATEGORIES or node.op in _UNFUSIBLE_OPS:
        return LIBRARY
    if node.op in ("reduce", "reduce-window") and node.attrs.get("reducer") is None:
        return LIBRARY  # a general (e.g. variadic argmax) reducer: no generated kernel for it
    return FUSIBLE


def is_duplicable(node: Node) -> bool:
    """Cheap enough to recompute in every kernel that reads it, instead of writing it once."""
    if node_role(node) != FUSIBLE:
        return False
    if node.op in _DUPLICABLE_OPS:
        return True
    info = OPS[node.op]
    return info.is_elementwise and node.op not in _EXPENSIVE_OPS


def plumbing_sources(graph: Graph, name: str, memo: dict | None = None) -> tuple[str, ...]:
    """The non-plumbing nodes (leaves included) whose values `name` carries: itself unless it is
    plumbing, else what its operands carry, through any depth of tuples and GTEs."""
    memo = {} if memo is None else memo
    if name not in memo:
        node = graph.nodes[name]
        if node_role(node) == PLUMBING:
            memo[name] = tuple(s for o in node.operands for s in plumbing_sources(graph, o, memo))
        else:
            memo[name] = (name,)
    return memo[name]


def graph_output_sources(graph: Graph) -> set[str]:
    """The non-plumbing nodes whose values the graph returns."""
    return set(plumbing_sources(graph, graph.root))


def value_readers(graph: Graph) -> dict[str, list[str]]:
    """For every node, the kernel-forming nodes that read its value, looking through plumbing."""
    readers: dict[str, list[str]] = {name: [] for name in graph.nodes}
    memo: dict = {}
    for node in graph:
        if node_role(node) in (FUSIBLE, LIBRARY):
            for operand in node.operands:
                for source in plumbing_sources(graph, operand, memo):
                    readers[source].append(node.name)
    return readers


def as_soon_as_possible(graph: Graph, names: Iterable[str]) -> list[str]:
    """`names` in a topological order that puts each node right after its longest path from
    the inputs, then in graph order.

    Ranking groups this way keeps GroupGraph's re-ranking windows short: JAX lists ops that
    need only forward values among the backward pass, and in graph order every merge of such an
    op with its forward producers would re-rank everything in between (quadratic overall).
    """
    position = {name: i for i, name in enumerate(graph.nodes)}
    depth: dict[str, int] = {}
    waiting: set[str] = set()  # expanded, operands not all done: met again means a cycle
    for start in names:
        stack = [start]
        while stack:
            name = stack[-1]
            if name in depth:
                stack.pop()
                continue
            pending = [o for o in graph.nodes[name].operands if o not in depth]
            if not pending:
                depth[name] = 1 + max((depth[o] for o in graph.nodes[name].operands), default=-1)
                stack.pop()
            elif name in waiting:
                raise ValueError(f"cycle through '{name}'")
            else:
                waiting.add(name)
                stack.extend(pending)
    return sorted(names, key=lambda name: (depth[name], position[name]))


class WindowTooWide(ValueError):
    """A merge whose cycle check would visit more groups than its budget allows."""


class GroupGraph:
    """Disjoint groups of kernel-forming nodes, their dependency edges and topological ranks.

    A group is named by one of its members (its id). Edges pass through plumbing: a group that
    reads `get-tuple-element(x)` depends on the group of `x`.
    """

    def __init__(self, graph: Graph, nodes: Iterable[str] | None = None):
        """Groups of one node each, for `nodes` (default: every kernel-forming node), ranked
        as soon as possible."""
        self.graph = graph
        kernel_nodes = [n.name for n in graph if node_role(n) in (FUSIBLE, LIBRARY)] \
            if nodes is None else list(nodes)
        kernel_nodes = as_soon_as_possible(graph, kernel_nodes)
        self.group_of: dict[str, str] = {name: name for name in kernel_nodes}
        self.members: dict[str, list[str]] = {name: [name] for name in kernel_nodes}
        self.rank: dict[str, int] = {name: i for i, name in enumerate(kernel_nodes)}
        self.succ: dict[str, Counter] = {name: Counter() for name in kernel_nodes}
        self.pred: dict[str, Counter] = {name: Counter() for name in kernel_nodes}
        self._sources: dict = {}  # memo of plumbing_sources
        for name in kernel_nodes:
            for producer in self.producing_nodes(name):
                if producer in self.group_of and producer != name:
                    self.succ[producer][name] += 1
                    self.pred[name][producer] += 1

    # -- reading ----------------------------------------------------------------------------

    def producing_nodes(self, name: str) -> tuple[str, ...]:
        """The kernel-forming nodes whose values `name` reads, looking through plumbing."""
        found = [source for operand in self.graph.nodes[name].operands
                 for source in plumbing_sources(self.graph, operand, self._sources)
                 if node_role(self.graph.nodes[source]) != LEAF]
        return tuple(dict.fromkeys(found))

    def groups(self) -> list[str]:
        """Group ids in topological order."""
        return sorted(self.members, key=self.rank.__getitem__)

    def producers(self, group: str) -> list[str]:
        return list(self.pred[group])

    def consumers(self, group: str) -> list[str]:
        return list(self.succ[group])

    # -- merging ----------------------------------------------------------------------------

    def can_merge(self, a: str, b: str) -> bool:
        """True when merging groups a and b leaves the group graph acyclic."""
        return self._windows(a, b) is not None

    def merge(self, a: str, b: str, budget: int | None = None) -> str:
        """Merge group b into group a; returns the merged group's id. ValueError on a cycle;
        WindowTooWide when checking for one would visit more than `budget` groups."""
        if a == b:
            return a
        windows = self._windows(a, b, budget)
        if windows is None:
            raise ValueError(f"merging {a} and {b} would form a cycle")
        merged_rank = self._rerank(*windows)
        for member in self.members[b]:
            self.group_of[member] = a
        self.members[a].extend(self.members.pop(b))
        for other, count in self.succ.pop(b).items():
            self.pred[other][a] += count
            del self.pred[other][b]
            self.succ[a][other] += count
        for other, count in self.pred.pop(b).items():
            self.succ[other][a] += count
            del self.succ[other][b]
            self.pred[a][other] += count
        self.succ[a].pop(a, None)
        self.pred[a].pop(a, None)
        del self.rank[b]
        self.rank[a] = merged_rank
        return a

    def _windows(self, a: str, b: str, budget: int | None = None):
        """Groups between a and b in rank order that are reached forward from the lower one and
        backward from the higher one; None when a path between them runs through a third.
        WindowTooWide after visiting `budget` groups (None: no limit)."""
        low, high = (a, b) if self.rank[a] < self.rank[b] else (b, a)
        limit_high, limit_low = self.rank[high], self.rank[low]
        forward, stack = {low}, [low]
        visited = 0
        while stack:
            visited += 1
            if budget is not None and visited > budget:
                raise WindowTooWide(f"more than {budget} groups between {a} and {b} to check "
                                    "for a cycle")
            group = stack.pop()
            for nxt in self.succ[group]:
                if nxt == high:
                    if group != low:
                        return None  # low -> ... -> group -> high
                    continue
                if nxt not in forward and self.rank[nxt] < limit_high:
                    forward.add(nxt)
                    stack.append(nxt)
        backward, stack = {high}, [high]
        while stack:
            visited += 1
            if budget is not None and visited > budget:
                raise WindowTooWide(f"more than {budget} groups between {a} and {b} to check "
                                    "for a cycle")
            group = stack.pop()
            for prv in self.pred[group]:
                if prv == low:
                    continue
                if prv in forward:
                    return None
                if prv not in backward and self.rank[prv] > limit_low:
                    backward.add(prv)
                    stack.append(prv)
        return forward, backward, low, high

    def _rerank(self, forward: set[str], backward: set[str], low: str, high: str) -> int:
        """Pearce-Kelly: the backward set (minus `high`), then the merged group, then the
        forward set (minus `low`) take the window's ranks, each keeping its relative order.
        Returns the merged group's rank."""
        pool = sorted(self.rank[g] for g in forward | backward)
        before = sorted(backward - {high}, key=self.rank.__getitem__)
        after = sorted(forward - {low}, key=self.rank.__getitem__)
        for group, rank in zip(before, pool):
            self.rank[group] = rank
        for group, rank in zip(after, pool[len(before) + 1:]):
            self.rank[group] = rank
        return pool[len(before)]
