"""The state XLA's fusion passes share: the fusions made so far, their books and the decision
log (`Fusions`, which every pass changes), over what they read of the graph (facts.GraphFacts).

A fusion is a group of nodes, named by its head (the consumer it grew from in instruction
fusion). It owns its members and may recompute cheap nodes other fusions own: `inside[g]` is
what its kernel computes, owned and recomputed. A cheap node that every kernel reading it
recomputes is a *ghost*: owned by no kernel. After instruction fusion the fusions become the
nodes of a `GroupGraph` (`build_group_graph`), which keeps them acyclic as the later passes merge
them, as XLA's passes keep a reachability map of the computation.
"""

from __future__ import annotations

import dataclasses
from itertools import chain

from compiler.fusion.xla.facts import GraphFacts
from compiler.fusion.xla.fusible import (IN_PLACE_OPS, elements, is_physically_transposing,
                                         is_reduction)
from compiler.ir.graph import Graph
from compiler.kernels.grouping import LIBRARY, PLUMBING, GroupGraph
from compiler.kernels.plan import Decision, KernelSpec
from compiler.target.sol import SolModel


class Fusions:
    """The fusions made so far, their books, and the decision log.

    Instruction fusion changes them with `absorb` and `recompute`; the later passes, once
    `build_group_graph` has run, with `merge_or_cycle`.
    """

    def __init__(self, graph: Graph, model: SolModel, check_code: bool = False):
        self.facts = facts = GraphFacts(graph)
        self.model = model
        self.check_code = check_code  # check each fusion's code size (`xla_fusion`)
        self.decisions: list[Decision] = []

        kernel_nodes = facts.kernel_nodes
        self.head_of = {name: name for name in kernel_nodes}  # node -> its fusion's head
        self.members = {name: [name] for name in kernel_nodes}
        self.recomputed: dict[str, set[str]] = {name: set() for name in kernel_nodes}
        self.inside = {name: {name} for name in kernel_nodes}
        self.inputs = {name: set(facts.nodes[name].operands) for name in kernel_nodes}
        self.recomputers: dict[str, list[str]] = {}   # node -> heads of groups recomputing it
        self.ghosts: set[str] = set()
        self.horizontal: set[str] = set()

        # Set by build_group_graph, kept by merge_or_cycle.
        self.gg: GroupGraph | None = None
        self.pinned: dict[str, set[str]] = {}
        self.reductions: dict[str, list[str]] = {}
        self.in_place: dict[str, bool] = {}
        self.transposing: dict[str, bool] = {}
        self.bits: dict[str, int] = {}
        self.reach: dict[str, int] = {}
        # Caches of outputs() and hero(), dropped for the two groups of each merge.
        self._outputs: dict[str, list[str]] = {}
        self._hero: dict[str, str] = {}

    def log(self, action: str, subject: str, reason: str, gain_us: float | None = None) -> None:
        self.decisions.append(Decision(action, subject, reason, gain_us))

    def group(self, name: str) -> str | None:
        """The group that owns node `name` now; None for leaves, plumbing and ghosts."""
        head = self.head_of.get(name)
        if head is None or head in self.ghosts:
            return None
        return head if self.gg is None else self.gg.group_of[head]

    def computers(self, name: str) -> set[str]:
        """The groups whose kernels compute `name`: its owner and its recomputers."""
        found = {self.group(head) for head in self.recomputers.get(name, ())}
        if name not in self.ghosts:
            found.add(self.group(name))
        return found

    # -- instruction fusion's changes -------------------------------------------------------

    def absorb(self, producer: str, head: str) -> None:
        """The fusion grown from `head` takes in `producer`, with what `producer` had taken in."""
        self.head_of[producer] = head
        self.members[head].extend(self.members.pop(producer))
        self._add_inside(producer, head)
        del self.recomputed[producer], self.inside[producer], self.inputs[producer]

    def recompute(self, producer: str, head: str) -> None:
        """The fusion grown from `head` computes `producer` again, which another kernel owns
        or which is a ghost."""
        self.recomputed[head].add(producer)
        self.recomputers.setdefault(producer, []).append(head)
        self._add_inside(producer, head)

    def _add_inside(self, producer: str, head: str) -> None:
        inside = self.inside[head]
        inside.add(producer)
        inputs = self.inputs[head]
        inputs.discard(producer)
        inputs.update(o for o in self.facts.nodes[producer].operands if o not in inside)

    # -- the group graph of the kernels -----------------------------------------------------

    def build_group_graph(self) -> None:
        """A GroupGraph with one node per kernel instruction fusion made, for the merges that
        follow: each kernel stands as its head, reading exactly the values the kernel reads
        from memory (what it recomputes is not read), so the edges are the kernels' own.

        GroupGraph ranks the kernels as soon as possible (grouping.as_soon_as_possible).
        """
        facts = self.facts
        nodes = facts.nodes
        heads = [h for h in facts.kernel_nodes if self.head_of[h] == h and h not in self.ghosts]

        def owner(value: str) -> str:
            head = self.head_of.get(value)
            return value if head is None else head

        view_nodes = dict(nodes)
        for name, node in nodes.items():
            if facts.role[name] == PLUMBING:
                view_nodes[name] = dataclasses.replace(
                    node, operands=tuple(owner(o) for o in node.operands))
        for head in heads:
            operands = tuple(dict.fromkeys(
                owner(v) for v in sorted(self.inputs[head], key=facts.position.__getitem__)))
            view_nodes[head] = dataclasses.replace(nodes[head], operands=operands)
        view = Graph(name=facts.graph.name, nodes=view_nodes, root=facts.graph.root,
                     computations=facts.graph.computations)
        self.gg = GroupGraph(view, heads)
        # Owned values some kernel reads through a tuple: they must stay in memory.
        self.pinned = {h: {n for n in self.members[h] if n in facts.plumbing_read}
                       for h in heads}
        self.reductions = {h: [n for n in self.members[h] if is_reduction(nodes[n])]
                           for h in heads}
        self.in_place = {h: any(nodes[n].op in IN_PLACE_OPS for n in self.inside[h])
                         for h in heads}
        self.transposing = {h: any(is_physically_transposing(nodes[n], facts.graph)
                                   for n in self.inside[h])
                            for h in heads}
        # Which groups each group reaches, as bitsets: merges only add paths, so a pair found
        # connected here stays connected (XLA keeps a reachability map the same way); pairs
        # found unconnected are settled by GroupGraph when they merge.
        order = self.gg.groups()
        self.bits = {group: 1 << i for i, group in enumerate(order)}
        self.reach = {}
        for group in reversed(order):
            reach = 0
            for successor in self.gg.succ[group]:
                reach |= self.bits[successor] | self.reach[successor]
            self.reach[group] = reach

    def merge_or_cycle(self, a: str, b: str) -> str | None:
        """Merge group b into group a, the last step of every merge rule, and keep the books;
        "would form cycle" when GroupGraph finds a path between them through a third group
        (it checks, as can_merge does, while it merges)."""
        try:
            self.gg.merge(a, b)
        except ValueError:
            return "would form cycle"
        self.members[a] += self.members.pop(b)
        self.recomputed[a] |= self.recomputed.pop(b)
        self.inside[a] |= self.inside.pop(b)
        self.inputs[a] = (self.inputs[a] | self.inputs.pop(b)) - self.inside[a]
        self.pinned[a] |= self.pinned.pop(b)
        self.reductions[a] += self.reductions.pop(b)
        self.in_place[a] |= self.in_place.pop(b)
        self.transposing[a] |= self.transposing.pop(b)
        self.bits[a] |= self.bits.pop(b)
        self.reach[a] |= self.reach.pop(b)
        if b in self.horizontal:
            self.horizontal.discard(b)
            self.horizontal.add(a)
        for cache in (self._outputs, self._hero):
            cache.pop(a, None)
            cache.pop(b, None)
        return None

    # -- facts about groups -----------------------------------------------------------------

    def is_library(self, group: str) -> bool:
        return self.facts.role[group] == LIBRARY

    def outputs(self, group: str) -> list[str]:
        """The owned values the group's kernel writes: returned, or read by a kernel that does
        not compute them (build_plan's rule)."""
        if group not in self._outputs:
            facts = self.facts
            self._outputs[group] = [
                n for n in self.members[group]
                if n in facts.graph_outputs or any(n not in self.inside[kernel]
                                                   for r in facts.all_readers[n]
                                                   for kernel in self.computers(r))]
        return self._outputs[group]

    def output_count(self, group: str) -> int:
        return len(self.outputs(group))

    def hero(self, group: str) -> str:
        """The node whose shape drives the kernel: the first reduction, else the largest
        output (GetRealHeroForMultiOutputFusion)."""
        if group not in self._hero:
            position = self.facts.position
            reductions = sorted(self.reductions[group], key=position.__getitem__)
            if reductions:
                self._hero[group] = reductions[0]
            else:
                outputs = self.outputs(group) or self.members[group]
                nodes = self.facts.nodes
                self._hero[group] = max(outputs, key=lambda n: (elements(nodes[n]), position[n]))
        return self._hero[group]

    def reading_groups(self, value: str) -> list[str]:
        """The kernels that read `value` from memory, in graph order of their readers."""
        found: dict[str, None] = {}
        for reader in self.facts.readers[value]:
            for group in sorted(self.computers(reader), key=self.facts.position.__getitem__):
                if value not in self.inside[group]:
                    found[group] = None
        return list(found)

    def operand_group(self, operand: str) -> str | None:
        """The kernel that writes `operand`, through get-tuple-element and bitcast
        (LatestNonGteAncestor)."""
        nodes = self.facts.nodes
        while nodes[operand].op in ("get-tuple-element", "bitcast"):
            if nodes[operand].op == "bitcast" and self.group(operand) is not None:
                break
            operand = nodes[operand].operands[0]
        return self.group(operand)

    # -- checks every merge of two groups makes ---------------------------------------------

    def cycle_or_dependence(self, a: str, b: str, independent: bool) -> str | None:
        """None when a and b may merge; for siblings and horizontal batches (`independent`)
        a direct edge between them is a refusal too."""
        gg = self.gg
        if independent and (b in gg.succ[a] or a in gg.succ[b]):
            return "xla: the fusions depend on each other (reachability)"
        if independent and (self.reach[a] & self.bits[b] or self.reach[b] & self.bits[a]):
            return "would form cycle"
        if not independent:
            low, high = (a, b) if b in gg.succ[a] else (b, a)
            if any(self.reach[s] & self.bits[high] for s in gg.succ[low] if s != high):
                return "would form cycle"
        return None

    def leaves_value_unwritten(self, a: str, b: str) -> str | None:
        """A value some node reads through a tuple must stay in memory: merging must not move
        all its readers into the kernel that computes it. (Values read by kernels that
        recompute their readers are written whatever the merges: build_plan sees to it.)"""
        inside_a, inside_b = self.inside[a], self.inside[b]
        for value in chain(self.pinned[a], self.pinned[b]):
            if value not in self.facts.graph_outputs and all(
                    r in inside_a or r in inside_b for r in self.facts.all_readers[value]):
                return f"xla: {value} would no longer be written for its tuple reader"
        return None

    # -- the plan ---------------------------------------------------------------------------

    def specs(self) -> list[KernelSpec]:
        """One kernel per group, of XLA's kind: library, input (a reduction's), horizontal or
        loop."""
        specs = []
        for group in self.gg.groups():  # ghosts are not in it
            owned = self.members[group]
            recomputed = sorted(self.recomputed[group] - set(owned),
                                key=self.facts.position.get)
            if self.is_library(group):
                kind = "library"
            elif self.reductions[group]:
                kind = "input"
            elif group in self.horizontal:
                kind = "horizontal"
            else:
                kind = "loop"
            dominant = group if kind == "library" else self.hero(group)
            specs.append(KernelSpec(list(owned), kind, recomputed, dominant))
        return specs
