"""Groups of nodes that strategies merge into kernels, with an always-acyclic group graph.

Every strategy starts from one group per kernel-forming node (see `node_role`) and merges
groups. Groups may merge only if no path between them runs through a third group — else
the kernel graph would have a cycle ("would form cycle" in the decision log). Checking that
naively costs a graph walk per merge, quadratic overall. `GroupGraph` instead keeps the groups
in a topological order, each with an integer rank that grows along it, and updates the order
on every merge, as a dynamic topological sort does (Pearce and Kelly, "A dynamic topological
sort algorithm for directed acyclic graphs", JEA 2007): a path between the merged groups only
passes groups ranked between them (the window).

Unlike Pearce-Kelly, which walks the window both ways (forward from the lower group and
backward from the higher) and re-ranks what both walks found, the merge walks the two ways in
turns and stops at the first walk that ends: either walk alone proves the merge safe, and
either set alone can be moved out of the way (what the lower group reaches goes right after
the merged group, or what reaches the higher group right before it). In a training step one
side is often tiny and the other huge (a forward value that the backward pass reads: the
groups reaching the backward consumer are thousands), so the merge costs the smaller side.
Moving a set next to a group needs free ranks there: ranks are integers spaced `SPACING`
apart, and a place with no room left is made room for by spreading a few neighbours' ranks
(order maintenance as in Bender et al., "Two simplified algorithms for maintaining order in
a list", ESA 2002).
"""

from __future__ import annotations

from collections import Counter
from typing import Container, Iterable

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
    if node.shape.is_tuple:
        return LIBRARY  # a copy of a whole tuple: one device copy per element, not a kernel
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


def kernel_outputs(owned: Iterable[str], computed: Container[str],
                   users: dict[str, list[str]], graph_outputs: Container[str]) -> list[str]:
    """The owned values a kernel computing `computed` writes, as `build_plan` decides for a
    kernel alone: those the graph returns or a node outside the kernel reads (`users`:
    `Graph.users()`). A strategy asks while it merges, before the other kernels are settled."""
    return [name for name in owned
            if name in graph_outputs or any(user not in computed for user in users[name])]


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


# Ranks of consecutive groups start SPACING apart: that many groups fit between two before
# their neighbours are re-ranked. Re-ranking spreads a run of groups so that at least
# MIN_GAP ranks separate any two of them.
SPACING = 1 << 32
MIN_GAP = 1 << 16


class GroupGraph:
    """Disjoint groups of kernel-forming nodes, their dependency edges and topological ranks.

    A group is named by one of its members (its id). Edges pass through plumbing: a group that
    reads `get-tuple-element(x)` depends on the group of `x`. `rank` grows along a topological
    order of the groups; only the comparison of two ranks means anything.
    """

    def __init__(self, graph: Graph, nodes: Iterable[str] | None = None,
                 spacing: int = SPACING):
        """Groups of one node each, for `nodes` (default: every kernel-forming node), ranked
        as soon as possible. `spacing`: the ranks' initial distance (tests make it small, to
        exercise re-ranking)."""
        self.graph = graph
        kernel_nodes = [n.name for n in graph if node_role(n) in (FUSIBLE, LIBRARY)] \
            if nodes is None else list(nodes)
        kernel_nodes = as_soon_as_possible(graph, kernel_nodes)
        self.group_of: dict[str, str] = {name: name for name in kernel_nodes}
        self.members: dict[str, list[str]] = {name: [name] for name in kernel_nodes}
        self.order = _Order(kernel_nodes, spacing)
        self.rank: dict[str, int] = self.order.label
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
        return list(self.order)

    def producers(self, group: str) -> list[str]:
        return list(self.pred[group])

    def consumers(self, group: str) -> list[str]:
        return list(self.succ[group])

    # -- merging ----------------------------------------------------------------------------

    def can_merge(self, a: str, b: str) -> bool:
        """True when merging groups a and b leaves the group graph acyclic."""
        return self.check((a, b)) is None

    def check(self, groups: Iterable[str], budget: int | None = None) -> str | None:
        """None when merging `groups` into one leaves the group graph acyclic, else "would
        form cycle". WindowTooWide when finding out would visit more than `budget` groups."""
        return "would form cycle" if self._window(frozenset(groups), budget) is None else None

    def merge(self, a: str, b: str, budget: int | None = None) -> str:
        """Merge group b into group a; returns the merged group's id (a). ValueError on a
        cycle; WindowTooWide when checking for one would visit more than `budget` groups."""
        return self.merge_all(a, (a, b), budget)

    def merge_all(self, head: str, groups: Iterable[str], budget: int | None = None) -> str:
        """Merge `groups` (among them `head`) into one, named `head`; the errors of `merge`.
        Nothing changes when it raises."""
        pieces = frozenset(groups)
        if len(pieces) == 1:
            return head
        window = self._window(pieces, budget)
        if window is None:
            raise ValueError(f"merging {', '.join(sorted(pieces))} would form a cycle")
        side, moved = window
        ordered = sorted(pieces, key=self.rank.__getitem__)
        moved = sorted(moved, key=self.rank.__getitem__)
        # What the pieces reach goes right after the last of them, which the merged group
        # takes the place of; or what reaches them right before the first.
        place = ordered[-1] if side == "forward" else ordered[0]
        self.order.move(moved, place, after=side == "forward")
        for piece in ordered:
            if piece != place:
                self.order.remove(piece)
        self.order.rename(place, head)
        for piece in ordered:
            if piece != head:
                self._absorb(head, piece)
        return head

    def _absorb(self, a: str, b: str) -> None:
        """Group b's members and edges become group a's (the order is settled already)."""
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

    def _window(self, pieces: frozenset[str], budget: int | None):
        """The groups that must move for the pieces to merge, as ("forward", the groups
        ranked inside the pieces' window that a path from a piece reaches) or ("backward",
        those that reach a piece), whichever walk ends first; None when a path leaves the
        pieces and comes back (through a third group). WindowTooWide after `budget` visits."""
        ranks = [self.rank[p] for p in pieces]
        low, high = min(ranks), max(ranks)
        walks = (_Walk("forward", pieces, self.succ, self.rank, high),
                 _Walk("backward", pieces, self.pred, self.rank, low))
        visited = 0
        while True:
            for walk in walks:
                found = walk.step()
                if found == "cycle":
                    return None
                if found == "done":
                    return walk.side, walk.seen
                visited += 1
                if budget is not None and visited > budget:
                    raise WindowTooWide(f"more than {budget} groups between "
                                        f"{' and '.join(sorted(pieces))} to check for a cycle")


class _Walk:
    """One side of `GroupGraph._window`: a depth-first walk from a set of groups along
    `edges` (successors or predecessors), through the groups ranked inside the window: below
    `end` forward, above it backward."""

    def __init__(self, side: str, pieces: frozenset[str], edges: dict, rank: dict[str, int],
                 end: int):
        self.side, self.pieces, self.edges, self.rank = side, pieces, edges, rank
        # Ranks are compared as `sign * rank < sign * end`: one comparison either way.
        self.sign = 1 if side == "forward" else -1
        self.end = self.sign * end
        # The pieces' own neighbours are taken one at a time, as the stack runs dry: a group
        # with a thousand consumers must not cost its walk a thousand steps up front when the
        # other side's walk ends first. In rank order, not the set's (which follows the
        # strings' hashes, different in every process): which walk ends first, and so whether
        # a merge is refused as a cycle or as too wide to check, is the same in every run.
        self.start = (n for p in sorted(pieces, key=rank.__getitem__) for n in edges[p])
        self.stack: list[str] = []
        self.seen: set[str] = set()

    def step(self) -> str | None:
        """Visit one group: "cycle" when it leads back into the pieces, "done" when nothing
        is left to visit, else None."""
        pieces, seen, stack, rank = self.pieces, self.seen, self.stack, self.rank
        sign, end = self.sign, self.end
        if not stack:
            for n in self.start:
                if n not in pieces and n not in seen and sign * rank[n] < end:
                    seen.add(n)
                    stack.append(n)
                    break
            else:
                return "done"
        for nxt in self.edges[stack.pop()]:
            if nxt in pieces:
                return "cycle"
            if nxt not in seen and sign * rank[nxt] < end:
                seen.add(nxt)
                stack.append(nxt)
        return None


class _Order:
    """Items in a sequence, each with an integer label that grows along it (`label`): a
    doubly linked list whose labels leave gaps, so that moving items next to another
    relabels only them, or a few neighbours when the gap is used up."""

    def __init__(self, items: list[str], spacing: int):
        self.spacing = max(2, spacing)
        self.label: dict[str, int] = {item: i * self.spacing for i, item in enumerate(items)}
        self.next: dict[str, str | None] = dict(zip(items, [*items[1:], None]))
        self.prev: dict[str, str | None] = dict(zip(items, [None, *items[:-1]]))
        self.first = items[0] if items else None

    def __iter__(self):
        item = self.first
        while item is not None:
            yield item
            item = self.next[item]

    def remove(self, item: str) -> None:
        before, after = self.prev.pop(item), self.next.pop(item)
        del self.label[item]
        self._connect(before, after)

    def rename(self, old: str, new: str) -> None:
        """`new` (not in the sequence) takes `old`'s place and label."""
        if old == new:
            return
        before, after = self.prev.pop(old), self.next.pop(old)
        self.label[new] = self.label.pop(old)
        self._connect(before, new)
        self._connect(new, after)

    def _connect(self, before: str | None, after: str | None) -> None:
        """Make `after` follow `before` (None: the sequence's start, or its end)."""
        if before is None:
            self.first = after
        else:
            self.next[before] = after
        if after is not None:
            self.prev[after] = before

    def move(self, items: list[str], anchor: str, after: bool) -> None:
        """Move `items` (in sequence order, `anchor` not among them) right after `anchor`, or
        right before it, keeping their order."""
        if not items:
            return
        for item in items:
            self.remove(item)
        neighbour = self.next[anchor] if after else self.prev[anchor]
        if not self._room(anchor, neighbour, len(items)):
            self._spread(anchor, len(items), after)
            neighbour = self.next[anchor] if after else self.prev[anchor]
        sign = 1 if after else -1
        start = self.label[anchor]
        end = start + sign * (len(items) + 1) * self.spacing if neighbour is None \
            else self.label[neighbour]
        gap = sign * (abs(end - start) // (len(items) + 1))
        ordered = items if after else items[::-1]
        link = anchor
        for k, item in enumerate(ordered, 1):
            self.label[item] = start + k * gap
            self._link(link, item, after)
            link = item

    def _room(self, anchor: str, neighbour: str | None, count: int) -> bool:
        """Whether `count` labels fit between `anchor` and its `neighbour`."""
        if neighbour is None:
            return True
        return abs(self.label[neighbour] - self.label[anchor]) > count

    def _link(self, anchor: str, item: str, after: bool) -> None:
        """Insert `item` right after (or before) `anchor`."""
        before, following = (anchor, self.next[anchor]) if after else (self.prev[anchor], anchor)
        self._connect(before, item)
        self._connect(item, following)

    def _spread(self, anchor: str, count: int, after: bool) -> None:
        """Make room for `count` items next to `anchor`: take its neighbours on that side, as
        many as needed (doubling) for their labels to span at least MIN_GAP per item, theirs
        and the new ones, and spread them evenly (at the sequence's end the span is free)."""
        step = self.next if after else self.prev
        sign = 1 if after else -1
        start = self.label[anchor]
        run: list[str] = []
        item = step[anchor]
        wanted = 1
        while True:
            while item is not None and len(run) < wanted:
                run.append(item)
                item = step[item]
            slots = len(run) + count + 1
            if item is None:
                end = start + sign * slots * self.spacing
                break
            if abs(self.label[item] - start) >= slots * MIN_GAP:
                end = self.label[item]
                break
            wanted *= 2
        gap = sign * (abs(end - start) // slots)
        for k, member in enumerate(run, count + 1):
            self.label[member] = start + k * gap
