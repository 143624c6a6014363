"""Cutting chains of loop kernels where a cut costs least.

A chain of elementwise ops longer than one kernel may hold (plan.MAX_KERNEL_NODES) must be cut,
and every cut writes the values that cross it and reads them back. The cost strategy's greedy
search merges by gain until a merge would pass the cap, so its kernels end wherever its merges
stopped: groups of 256 nodes that no neighbour can join, or a cut through values of four bytes
an element beside one of two. `recut_chains` re-partitions consecutive loop kernels along each
chain, first to last: a kernel and the one kernel reading its values that together pass the
cap are cut anew where the fewest bytes cross (a tie goes to the fuller first kernel), and the
rest of a cut joins the next kernel when they fit. Only loop kernels of one iteration space
are cut (any prefix of their nodes in graph order is a loop kernel again), and a cut that
would give a kernel more than MAX_KERNEL_PARAMETERS operands and outputs leaves the pair as it
was. The cost strategy searches again from the result and keeps it only when it is priced
lower, or the same with less DRAM traffic (cost_based/__init__.py, `_recut`).
"""

from __future__ import annotations

from compiler.ir.graph import Graph
from compiler.kernels.grouping import graph_output_sources, value_readers
from compiler.kernels.plan import MAX_KERNEL_NODES, MAX_KERNEL_PARAMETERS, FusionPlan, KernelSpec


def recut_chains(graph: Graph, plan: FusionPlan) -> list[KernelSpec] | None:
    """The plan's kernels with its chains of loop kernels re-cut (module docstring), or None
    when no cut moves."""
    return _Chains(graph, plan).run()


class _Chains:
    def __init__(self, graph: Graph, plan: FusionPlan):
        self.graph = graph
        self.nodes = graph.nodes
        self.position = graph.positions()
        self.readers = value_readers(graph)
        self.outputs = graph_output_sources(graph)
        self.specs: list[KernelSpec | None] = [
            KernelSpec(list(k.nodes), k.kind, list(k.recomputed), k.dominant)
            for k in plan.kernels]
        self.computers: dict[str, set[int]] = {}  # node -> the specs computing it
        for index, spec in enumerate(self.specs):
            for name in (*spec.nodes, *spec.recomputed):
                self.computers.setdefault(name, set()).add(index)

    def run(self) -> list[KernelSpec] | None:
        changed = False
        done: set[int] = set()
        for start in range(len(self.specs)):
            current, rest = start, False  # rest: the kernel is what a cut left over
            while current not in done and self._is_cuttable(current):
                consumer = self._only_consumer(current)
                if consumer is None:
                    break
                outcome = self._repartition(current, consumer, may_merge=rest)
                changed |= outcome is not None
                if outcome == "merged":
                    continue  # the merged kernel goes on down the chain
                done.add(current)
                current, rest = consumer, outcome == "cut"
            done.add(current)
        if not changed:
            return None
        return [spec for spec in self.specs if spec is not None]

    # -- which kernels -------------------------------------------------------------------------

    def _elements(self, name: str) -> int:
        return sum(leaf.size for leaf in self.nodes[name].shape.leaves())

    def _is_cuttable(self, index: int) -> bool:
        """A loop kernel whose nodes share one iteration space."""
        spec = self.specs[index]
        if spec is None or spec.kind != "loop":
            return False
        return len({self._elements(name) for name in spec.nodes}) == 1

    def _only_consumer(self, index: int) -> int | None:
        """The one other kernel that reads the values this kernel owns, when it is a loop
        kernel of the same iteration space and none of the values is returned."""
        spec = self.specs[index]
        found: set[int] = set()
        for name in spec.nodes:
            if name in self.outputs:
                return None
            for reader in self.readers[name]:
                found |= self.computers.get(reader, set())
        found.discard(index)
        if len(found) != 1:
            return None
        (consumer,) = found
        if not self._is_cuttable(consumer) or \
                self._elements(spec.nodes[0]) != self._elements(self.specs[consumer].nodes[0]):
            return None
        return consumer

    # -- cutting -------------------------------------------------------------------------------

    def _repartition(self, first: int, second: int, may_merge: bool) -> str | None:
        """Cut the two kernels anew ("cut"), or, when they fit one kernel and `may_merge` (the
        first is what a cut left over), make them one ("merged"); None when they stay as they
        are (two kernels that fit one are the search's to merge or not)."""
        a, b = self.specs[first], self.specs[second]
        owned = sorted(a.nodes + b.nodes, key=self.position.__getitem__)
        recomputed = (set(a.recomputed) | set(b.recomputed)) - set(owned)
        if len(owned) + len(self._needed(owned, recomputed)) <= MAX_KERNEL_NODES:
            if not may_merge:
                return None
            self._replace(first, owned, recomputed)
            self._replace(second, [], recomputed)
            return "merged"
        cut = self._cheapest_cut(owned, recomputed, {first, second})
        if cut is None or set(owned[:cut]) == set(a.nodes):
            return None
        before, after = owned[:cut], owned[cut:]
        if self._parameters(before, recomputed) > MAX_KERNEL_PARAMETERS or \
                self._parameters(after, recomputed) > MAX_KERNEL_PARAMETERS:
            return None
        self._replace(first, before, recomputed)
        self._replace(second, after, recomputed)
        return "cut"

    def _needed(self, owned: list[str], recomputed: set[str]) -> set[str]:
        """The recomputed nodes a kernel owning `owned` computes: those they read, through
        chains of them."""
        found: set[str] = set()
        stack = [o for name in owned for o in self.nodes[name].operands if o in recomputed]
        while stack:
            name = stack.pop()
            if name not in found:
                found.add(name)
                stack.extend(o for o in self.nodes[name].operands if o in recomputed)
        return found

    def _cheapest_cut(self, owned: list[str], recomputed: set[str],
                      pair: set[int]) -> int | None:
        """The number of nodes the first kernel keeps: both kernels within the cap, the
        fewest bytes crossing, the fullest first kernel on a tie; None when no cut fits."""
        count = len(owned)
        index = {name: i for i, name in enumerate(owned)}
        # The last node (by index) that needs each owned value, directly or through the
        # recomputed nodes it computes.
        last_use = dict.fromkeys(owned, -1)
        prefix: list[int] = []   # recomputed nodes the first i + 1 owned nodes need
        needed: set[str] = set()
        for i, name in enumerate(owned):
            own = self._needed([name], recomputed)
            for node in (name, *own):
                for operand in self.nodes[node].operands:
                    if operand in last_use:
                        last_use[operand] = i
            needed |= own
            prefix.append(len(needed))
        suffix = [0] * (count + 1)  # recomputed nodes the owned nodes from i on need
        needed = set()
        for i in range(count - 1, -1, -1):
            needed |= self._needed([owned[i]], recomputed)
            suffix[i] = len(needed)
        crossing = [0] * (count + 1)  # bytes written at a cut before node i, by difference
        for name, last in last_use.items():
            if last > index[name] and not self._written_anyway(name, pair):
                crossing[index[name] + 1] += self.nodes[name].shape.nbytes
                crossing[last + 1] -= self.nodes[name].shape.nbytes
        best, best_key, running = None, None, 0
        for cut in range(1, count):
            running += crossing[cut]
            if cut + prefix[cut - 1] > MAX_KERNEL_NODES or \
                    count - cut + suffix[cut] > MAX_KERNEL_NODES:
                continue
            key = (running, -cut)
            if best_key is None or key < best_key:
                best, best_key = cut, key
        return best

    def _written_anyway(self, name: str, pair: set[int]) -> bool:
        """Returned, or read by a kernel outside the pair: in memory wherever the cut is."""
        return name in self.outputs or any(
            computer not in pair for reader in self.readers[name]
            for computer in self.computers.get(reader, ()))

    def _parameters(self, owned: list[str], recomputed: set[str]) -> int:
        """Operands and outputs of a kernel owning `owned` (scalar constants are immediates;
        an owned value is written when something outside the kernel reads it)."""
        inside = set(owned) | self._needed(owned, recomputed)
        inputs = {o for name in inside for o in self.nodes[name].operands if o not in inside
                  and not (self.nodes[o].op == "constant" and self._elements(o) == 1)}
        written = [name for name in owned if name in self.outputs
                   or any(reader not in inside for reader in self.readers[name])]
        return len(inputs) + len(written)

    def _replace(self, index: int, owned: list[str], recomputed: set[str]) -> None:
        """Spec `index` now owns `owned` (none: it is gone) and recomputes what they need."""
        old = self.specs[index]
        for name in (*old.nodes, *old.recomputed):
            self.computers[name].discard(index)
        if not owned:
            self.specs[index] = None
            return
        needed = sorted(self._needed(owned, recomputed), key=self.position.__getitem__)
        self.specs[index] = KernelSpec(owned, "loop", needed, dominant=owned[-1])
        for name in (*owned, *needed):
            self.computers.setdefault(name, set()).add(index)
