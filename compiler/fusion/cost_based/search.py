"""The cost search itself: groups, their prices and the greedy rounds (the package's docstring,
"Algorithm", says what a round does and "Complexity" what it costs). `Search.run` returns the
kernels; the driver (`cost_fusion`, `refine` in __init__.py) seeds it and builds the plan.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
from dataclasses import dataclass

from compiler.fusion.cost_based.summaries import Analysis, Summary
from compiler.fusion.pricing import Price, Pricer
from compiler.ir.graph import Graph, Node
from compiler.kernels.grouping import (FUSIBLE, LIBRARY, GroupGraph, WindowTooWide,
                                       graph_output_sources, node_role, value_readers)
from compiler.kernels.plan import (MAX_KERNEL_PARAMETERS, Decision, Kernel, KernelSpec, make_kernel,
                                   too_many_nodes)
from compiler.target.sol import SolEstimate, SolModel

MAX_PIECES_FIRST = 4        # groups per candidate pattern in the first round
MAX_PIECES = 2              # ... in later rounds, when groups are kernels already
MAX_PRODUCERS = 6           # producer groups a pattern extends from (the latest ones)
MAX_SIBLINGS = 6            # groups reading one value, paired in topological order
HORIZONTAL_NEIGHBOURS = 2   # later groups each group is paired with for horizontal fusion
MAX_ROUNDS = 64
MIN_GAIN_US = 1e-6
SEARCH_BUDGET = 512         # groups a cycle check may visit (see Search._merge)
LOOK_AHEAD = 16             # heap entries looked at for candidates to price at once


@dataclass(frozen=True)
class _Kernel:
    """The verdict on one candidate kernel."""

    legal: bool
    cost_us: float          # its price; infinite when illegal; SOL alone when `bound`
    kind: str | None
    reason: str             # what kind of kernel and why, or why it is not legal
    dominant: str | None
    price: Price | None = None
    bound: bool = False     # not priced: its speed of light already left no gain
    sol: SolEstimate | None = None  # its speed of light while `bound` (for pricing it later)
    structure: tuple | None = None  # its pricer's key (`Signature.of`) while `bound`
    # The verdict of a structurally identical candidate: `reason` names that one's nodes
    # (`Search._bound`), so a merge works it out again.
    borrowed: bool = False


@dataclass(frozen=True)
class _Owners:
    """What `Search._written` asks of a kernel: the nodes it owns."""

    owned: frozenset[str]


class Search:
    """Groups, their prices and the greedy rounds (the package docstring, "Algorithm")."""

    def __init__(self, graph: Graph, model: SolModel, seed: list[KernelSpec], pricer: Pricer,
                 top_k: int):
        self.graph = graph
        self.model = model
        self.pricer = pricer
        self.top_k = top_k
        self.nodes = graph.nodes
        self.role = {node.name: node_role(node) for node in graph}
        self.decisions: list[Decision] = []
        self.readers = value_readers(graph)
        self.graph_outputs = graph_output_sources(graph)
        self.analysis = Analysis(graph, model, self._written)
        self.position = self.analysis.position
        self._cache: dict[frozenset, _Kernel] = {}
        self._unions: dict[frozenset, Summary] = {}  # this round's legal candidates
        self._cycles: dict[frozenset, str] = {}  # _merge's refusals, by group versions
        # Verdicts by the structure of the candidate kernel (`_bound`), with the index of its
        # dominant node among its nodes in graph order.
        self._shapes: dict[tuple, tuple[_Kernel, int]] = {}
        self._ahead: set[frozenset] = set()  # candidates priced ahead, here or by the assistant
        self._kernels: dict[frozenset, Kernel] = {}  # this round's, for pricing ahead
        self._notes: dict[str, tuple[tuple[str, str], str, float | None]] = {}
        self._sequence = itertools.count()  # the heap's last tie-break: insertion order
        self._seed(seed)

    def _seed(self, seed: list[KernelSpec]) -> None:
        """Groups = the seed's kernels, plus one for each kernel-forming node no seed kernel
        computes (a view nothing reads). The group graph's edges are what each kernel really
        reads: a node it recomputes is replaced by that node's operands."""
        nodes, position = self.nodes, self.position
        computed = {n for spec in seed for n in (*spec.nodes, *spec.recomputed)}
        seed = seed + [KernelSpec([name], "library" if role == LIBRARY else "loop", [], name)
                       for name, role in self.role.items()
                       if role in (FUSIBLE, LIBRARY) and name not in computed]
        view_nodes = dict(nodes)
        for spec in seed:
            if not spec.recomputed:
                continue
            recomputed = set(spec.recomputed)
            for name in spec.nodes:
                operands = nodes[name].operands
                if any(o in recomputed for o in operands):
                    view_nodes[name] = dataclasses.replace(
                        nodes[name], operands=_expand(nodes, operands, recomputed))
        view = Graph(name=self.graph.name, nodes=view_nodes, root=self.graph.root,
                     computations=self.graph.computations)
        self.gg = gg = GroupGraph(view, [n for spec in seed for n in spec.nodes])
        self.summary: dict[str, Summary] = {}
        self.kernel: dict[str, _Kernel] = {}
        self.recomputers: dict[str, set[str]] = {}
        self._tokens = itertools.count()
        self.token: dict[str, int] = {}
        self.dirty: set[str] = set()
        heads = []
        for spec in seed:  # every group first: what a kernel writes depends on the others
            members = sorted(spec.nodes, key=position.__getitem__)
            head = members[0]
            heads.append(head)
            for member in members[1:]:
                gg.merge(head, member)
            self.summary[head] = Summary(frozenset(members) | frozenset(spec.recomputed),
                                          frozenset(members), frozenset())
            for name in spec.recomputed:
                self.recomputers.setdefault(name, set()).add(head)
        for head, spec in zip(heads, seed):
            summary = self.summary[head]
            if self.is_library(head):
                summary.outputs = frozenset(v for v in summary.owned
                                            if self._written(v, summary))
            else:
                summary = self.analysis.full(set(summary.inside), set(summary.owned))
            self.summary[head] = summary
            price = self.pricer.price(self._candidate(summary, spec.kind, spec.dominant))
            self.kernel[head] = _Kernel(True, price.us, spec.kind, f"seed {spec.kind}",
                                        spec.dominant, price)
            self.token[head] = next(self._tokens)
            self.dirty.add(head)

    def _written(self, value: str, kernel: Summary) -> bool:
        """Whether a kernel that owns `value` must write it (`build_plan`'s rule): the graph
        returns it, or some other kernel computes one of its readers without computing it. A
        group is inside the kernel when its id (one of its nodes) is among the kernel's."""
        if value in self.graph_outputs:
            return True
        group_of, summary = self.gg.group_of, self.summary
        for reader in self.readers[value]:
            owner = group_of.get(reader)
            if owner is not None and owner not in kernel.owned \
                    and value not in summary[owner].inside:
                return True
            for other in self.recomputers.get(reader, ()):
                if other not in kernel.owned and value not in summary[other].inside:
                    return True
        return False

    # -- pricing ----------------------------------------------------------------------------------

    def is_library(self, group: str) -> bool:
        return self.role[group] == LIBRARY

    def _key(self, pieces: frozenset) -> frozenset:
        return frozenset(self.token[p] for p in pieces)

    def price(self, pieces: frozenset, exact: bool = False) -> _Kernel:
        """The verdict on merging these groups into one kernel (cached by group versions):
        legality and the speed of light of the merged kernel (a lower bound on its price);
        with `exact`, its price."""
        if len(pieces) == 1:
            return self.kernel[next(iter(pieces))]
        key = self._key(pieces)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._bound(pieces, key)
        if exact and found.bound:
            price = self.pricer.cached(found.structure)
            if price is None:
                price = self.pricer.price(self._kernel_of(pieces, found), found.structure)
            if price.refusal:  # no code for it: its code would be too large
                found = self._cache[key] = _Kernel(False, math.inf, None,
                                                   f"not a legal kernel: {price.refusal}", None)
                return found
            found = self._cache[key] = dataclasses.replace(found, cost_us=price.us,
                                                           price=price, bound=False, sol=None)
        return found

    def _union(self, pieces: frozenset) -> Summary:
        ordered = sorted(pieces, key=self.gg.rank.__getitem__)
        return self.analysis.union([self.summary[p] for p in ordered])

    def _bound(self, pieces: frozenset, key: frozenset) -> _Kernel:
        """The verdict on a candidate and its speed of light, from those of a structurally
        identical candidate when there was one (the layers of a model make the same candidates
        over and over): the kernel the pieces would make is outlined without analysing it
        (`_outline`), and only a new structure is analysed (`Analysis.union`)."""
        computed, recomputed, outputs = self._outline(pieces)
        too_large = too_many_nodes(len(computed))
        if too_large:
            return _Kernel(False, math.inf, None, f"not a legal kernel: {too_large}", None)
        shape = self.pricer.signature.shape(computed, recomputed, outputs)
        known = self._shapes.get(shape)
        if known is not None:
            verdict, index = known
            if not verdict.legal:
                return verdict
            # (as dataclasses.replace, which takes ten times as long)
            return _Kernel(True, verdict.cost_us, verdict.kind, verdict.reason,
                           computed[index] if index >= 0 else None, None, True, verdict.sol,
                           verdict.structure, borrowed=True)
        union = self._union(pieces)
        kind, reason, dominant = self.analysis.verdict(union)
        refusal = self._parameters(union) or (None if kind else reason)
        if refusal:
            verdict = _Kernel(False, math.inf, None, refusal, None)
            self._shapes[shape] = verdict, -1
            return verdict
        sol = self.model.estimate(union.inside, union.outputs)
        self._unions[key] = union
        index = computed.index(dominant) if dominant in union.inside else -1
        verdict = _Kernel(True, self.pricer.bound(sol), kind, reason, dominant, bound=True,
                          sol=sol, structure=(kind, index, shape))
        self._shapes[shape] = verdict, index
        return verdict

    def _own_verdict(self, pieces: frozenset, borrowed: _Kernel) -> _Kernel:
        """A borrowed verdict (`_bound`) with the reason worked out for these pieces' nodes,
        for the decision log of a merge."""
        key = self._key(pieces)
        union = self._unions.get(key) or self._union(pieces)
        self._unions[key] = union
        kind, reason, dominant = self.analysis.verdict(union)
        assert (kind, dominant) == (borrowed.kind, borrowed.dominant), \
            f"a structurally identical candidate was judged {borrowed.kind} at " \
            f"{borrowed.dominant}, these pieces {kind} at {dominant}"
        verdict = self._cache[key] = dataclasses.replace(borrowed, reason=reason,
                                                         borrowed=False)
        return verdict

    def _outline(self, pieces: frozenset) -> tuple[list[str], frozenset, frozenset]:
        """The nodes (in graph order), the recomputed ones and the outputs of the kernel the
        pieces would make: `Analysis.union`'s sets, without its analysis."""
        summaries = [self.summary[p] for p in pieces]
        inside: set[str] = set()
        shared: set[str] = set()   # computed by more than one piece
        for summary in summaries:
            shared |= summary.inside & inside
            inside |= summary.inside
        owned = frozenset().union(*(s.owned for s in summaries))
        read = set().union(*(s.inputs for s in summaries))
        outputs = frozenset().union(*(s.outputs for s in summaries))
        merged = _Owners(owned)
        outputs -= {v for v in outputs if (v in read or v in shared)
                    and not self._written(v, merged)}
        return (sorted(inside, key=self.position.__getitem__), frozenset(inside - owned),
                outputs)

    def _candidate(self, summary: Summary, kind: str, dominant: str | None,
                   sol: SolEstimate | None = None) -> Kernel:
        """The kernel a group (or a union of groups) would be, for the pricer; `sol`: its
        speed of light when known."""
        spec = KernelSpec(list(summary.owned), kind, list(summary.inside - summary.owned),
                          dominant)
        return make_kernel(self.graph, spec, summary.outputs, self.model, self.position,
                           sol=sol)

    def _pieces_us(self, pieces: frozenset) -> float:
        return sum(self.kernel[p].cost_us for p in sorted(pieces, key=self.position.get))

    def _parameters(self, union: Summary) -> str | None:
        nodes, elements = self.nodes, self.analysis.elements
        count = len(union.outputs) + sum(
            1 for v in union.inputs if not (nodes[v].op == "constant" and elements[v] == 1))
        if count > MAX_KERNEL_PARAMETERS:
            return (f"not a legal kernel: {count} operands and outputs > "
                    f"{MAX_KERNEL_PARAMETERS}")
        return None

    def gain(self, pieces: frozenset, exact: bool = False) -> tuple[float | None, _Kernel]:
        """What merging the pieces saves (None when the merged kernel is not legal): at most,
        from its lower bound, or with `exact`, from its price."""
        fused = self.price(pieces, exact)
        if not fused.legal:
            return None, fused
        return self._pieces_us(pieces) - fused.cost_us, fused

    # -- rounds -----------------------------------------------------------------------------------

    def run(self) -> list[KernelSpec]:
        horizontal, pieces, everywhere = False, MAX_PIECES_FIRST, True
        for _ in range(MAX_ROUNDS):
            applied = self._round(horizontal, pieces, everywhere)
            pieces, everywhere = MAX_PIECES, False
            if applied == 0:
                if horizontal:
                    break
                horizontal = everywhere = True
        self._log_refusals()
        specs = self.specs()
        # The analysis calls back into the search (`_written`): a reference cycle that would
        # keep every candidate of the search alive until the cyclic collector runs.
        self.analysis.written = None
        return specs

    def _round(self, horizontal: bool, max_pieces: int, everywhere: bool) -> int:
        """One enumeration and greedy pass; returns how many patterns it applied.

        After the first round a pattern is a group and some of its producers (a pattern of
        MAX_PIECES groups extends no other), so only groups that changed in the last round
        (`dirty`) and their consumers can have candidates that were not settled before:
        `everywhere` False enumerates only theirs. A candidate of unchanged groups keeps its
        verdict (prices are cached by group versions, and a cycle through a third group
        stays), so a round that merged a few groups costs a few enumerations, not a pass over
        the graph."""
        gg = self.gg
        order = [g for g in gg.groups() if not self.is_library(g)]
        changed = self.dirty
        sinks = order if everywhere else [
            g for g in order if g in changed or not changed.isdisjoint(gg.pred[g])]
        candidates: dict[frozenset, tuple] = {}  # pieces -> (gain bound, sink, shared, note)
        top: dict[str, list[tuple[float, frozenset]]] = {}
        for group in sinks:
            top[group] = self._patterns_ending_at(group, top, candidates, max_pieces)
        self._sibling_candidates(candidates)
        if horizontal:
            for i, group in enumerate(order):
                for other in order[i + 1:i + 1 + HORIZONTAL_NEIGHBOURS]:
                    if everywhere or group in changed or other in changed:
                        self._consider(frozenset((group, other)), candidates, note=False)

        # Lazy greedy: candidates come off a heap by the gain their lower bound allows; one
        # is priced when it reaches the top, and goes back with its real gain, which is never
        # higher. A priced candidate at the top gains the most of all left: it is merged when
        # none of its groups was merged this round and no cycle forms. Candidates whose
        # groups were merged before they reach the top are never priced this round.
        heap = []
        for pieces, (gain, sink, shared, note) in candidates.items():
            heap.append(self._entry(gain, pieces, False, sink, shared, note))
        heapq.heapify(heap)
        taken: set[str] = set()
        self.dirty = set()
        while heap:
            *_, exact, pieces, sink, shared, note = heapq.heappop(heap)
            if taken.intersection(pieces):
                continue
            subject, ends = self._describe(pieces, sink, shared)
            if not exact:
                if self.pricer.assistant is not None:
                    self._price_meanwhile(pieces, heap, taken)
                gain, fused = self.gain(pieces, exact=True)
                if gain is None:  # its code would be too large (`price`)
                    if note:
                        self._note(subject, ends, fused.reason, None)
                    continue
                if gain > MIN_GAIN_US:
                    heapq.heappush(heap, self._entry(gain, pieces, True, sink, shared, note))
                elif note:
                    self._note(subject, ends, self._loss(gain, fused), gain)
                continue
            key = self._key(pieces)
            refusal = self._cycles.get(key)  # a path between groups stays while they do
            if refusal is None:
                gain, fused = self.gain(pieces, exact=True)
                if fused.borrowed:
                    fused = self._own_verdict(pieces, fused)
                launches = self._launch_saved(pieces, fused)  # before the merge drops pieces
                refusal = self._merge(pieces, fused)
            if refusal:
                self._cycles[key] = refusal
                self._note(subject, ends, refusal, None)
                continue
            taken.update(pieces)
            self.decisions.append(Decision(
                "fuse", subject, f"{self.pricer.name}: {fused.kind}, gain {gain:.2f} µs"
                                 f"{launches} as {fused.price.describe()} ({fused.reason})",
                gain_us=gain))
        self._unions.clear()
        self._kernels.clear()
        return len(self.dirty)

    # -- pricing in two processes ------------------------------------------------------------
    # When the pricer has an assistant (explore's background process), the unpriced candidates
    # that come next off the heap are priced by both processes at once: the assistant is handed
    # the next few (`_feed`), and while it prices the one the greedy pass needs, this process
    # prices the next one nobody is pricing yet. A candidate priced ahead goes back on the heap
    # with its real gain when it reaches the top, as if it were priced then: the order of the
    # pass and the plan are the same as in one process.

    def _price_meanwhile(self, pieces: frozenset, heap: list, taken: set[str]) -> None:
        """Before the popped candidate `pieces` is priced: keep the assistant busy and, while
        it prices `pieces`, price the next candidates here."""
        found = self._cache.get(self._key(pieces))
        if found is None or not found.bound:
            return
        structure = found.structure
        if self.pricer.knows(structure):  # priced before, in either process
            return
        self._feed(pieces, heap, taken)
        while self.pricer.waiting_for(structure):
            following = next(self._unasked(pieces, heap, taken), None)
            if following is None:
                return
            self._ahead.add(self._key(following))
            self.price(following, exact=True)
            self._feed(pieces, heap, taken)

    def _feed(self, popped: frozenset, heap: list, taken: set[str]) -> None:
        """Hand the assistant the next candidates nobody prices yet, while it wants more."""
        while self.pricer.wants_ahead():
            pieces = next(self._unasked(popped, heap, taken), None)
            if pieces is None:
                return
            key = self._key(pieces)
            self._ahead.add(key)
            found = self._cache[key]
            self.pricer.price_ahead(self._kernel_of(pieces, found), found.structure)

    def _unasked(self, popped: frozenset, heap: list, taken: set[str]):
        """Among the first LOOK_AHEAD heap entries, in heap order: the unpriced candidates that
        share no group with the popped one (if it is merged, they are not priced this round)
        or with a group merged this round, whose kernel neither process prices or priced
        (the pricer's cache is by structure: the same candidate of another layer is not
        worth pricing twice)."""
        for entry in itertools.islice(_in_order(heap), LOOK_AHEAD):
            *_, exact, pieces, _sink, _shared, _note = entry
            if exact or not taken.isdisjoint(pieces) or not popped.isdisjoint(pieces):
                continue
            key = self._key(pieces)
            found = self._cache.get(key)
            if key in self._ahead or found is None or not found.bound:
                continue
            if self.pricer.needs(found.structure):
                yield pieces
            else:
                self._ahead.add(key)

    def _kernel_of(self, pieces: frozenset, found: _Kernel) -> Kernel:
        """The kernel a bounded candidate would be, for the pricer; kept for the round."""
        key = self._key(pieces)
        kernel = self._kernels.get(key)
        if kernel is None:
            union = self._unions.get(key) or self._union(pieces)
            kernel = self._kernels[key] = self._candidate(union, found.kind, found.dominant,
                                                          found.sol)
        return kernel

    def _entry(self, gain: float, pieces: frozenset, exact: bool, sink: str | None,
               shared: str | None, note: bool) -> tuple:
        """A heap entry: the largest gain first (gains equal up to rounding tie), then fewer
        groups, then the earliest groups; a priced candidate before an unpriced one."""
        ranks = [self.gg.rank[p] for p in pieces]
        return (-round(gain, 9), len(pieces), min(ranks), max(ranks), not exact,
                next(self._sequence), exact, pieces, sink, shared, note)

    def _patterns_ending_at(self, group: str, top: dict, candidates: dict, max_pieces: int
                            ) -> list[tuple[float, frozenset]]:
        """The top-k patterns with `group` as their sink (the package docstring, "Algorithm", step 1)."""
        own = frozenset((group,))
        rank = self.gg.rank
        producers = sorted((p for p in self.gg.pred[group] if not self.is_library(p)),
                           key=rank.__getitem__)[-MAX_PRODUCERS:]
        found: dict[frozenset, float] = {}
        extensions: list[tuple[float, frozenset]] = []
        for producer in producers:
            for _, pattern in [(0.0, frozenset((producer,)))] + top.get(producer, []):
                pieces = pattern | own
                if len(pieces) > max_pieces or pieces in found:
                    continue
                gain = self._consider(pieces, candidates, note=len(pattern) == 1, sink=group)
                if gain is not None:
                    found[pieces] = gain
                    extensions.append((gain, pieces))
        extensions.sort(key=lambda item: -item[0])
        if len(extensions) > 1:  # merge the best extensions of several producers
            best_gain, best = extensions[0]
            for _, pieces in extensions[1:2 * MAX_PRODUCERS]:
                union = best | pieces
                if union == best or len(union) > max(max_pieces, 3) or union in found:
                    continue
                gain = self._consider(union, candidates, note=False, sink=group)
                if gain is not None:
                    found[union] = gain
                    if gain > best_gain:
                        best_gain, best = gain, union
        ranked = sorted(found.items(), key=lambda item: -item[1])[:self.top_k]
        return [(gain, pieces) for pieces, gain in ranked]

    def _sibling_candidates(self, candidates: dict) -> None:
        """Groups reading one value, paired in topological order: fused, they read it once.
        Only values read by a group that changed last round can have new pairs."""
        group_of, rank, summary = self.gg.group_of, self.gg.rank, self.summary
        elements = self.analysis.elements
        values = {value for group in self.dirty if group in summary
                  for value in summary[group].inputs if elements[value] > 1}
        for value in sorted(values, key=self.position.__getitem__):
            groups: dict[str, None] = {}
            for reader in self.readers[value]:
                for group in (group_of.get(reader), *self.recomputers.get(reader, ())):
                    if group is not None and not self.is_library(group) \
                            and value not in summary[group].inside:
                        groups[group] = None
            if len(groups) < 2:
                continue
            ordered = sorted(groups, key=rank.__getitem__)[:MAX_SIBLINGS]
            for a, b in zip(ordered, ordered[1:]):
                self._consider(frozenset((a, b)), candidates, shared=value)

    def _consider(self, pieces: frozenset, candidates: dict, note: bool = True,
                  sink: str | None = None, shared: str | None = None) -> float | None:
        """Price a candidate (vertical ones end at `sink`, siblings share value `shared`);
        keep it if it gains, note why its pair was refused if not. Returns its gain, None when
        it is not a legal kernel."""
        gain, fused = self.gain(pieces)
        if gain is None:
            if note:
                self._note(*self._describe(pieces, sink, shared), fused.reason, None)
            return None
        if gain > MIN_GAIN_US:
            known = candidates.get(pieces)
            if known is None or known[0] < gain:
                candidates[pieces] = (gain, sink, shared, note)
        elif note:
            self._note(*self._describe(pieces, sink, shared), self._loss(gain, fused), gain)
        return gain

    def _launch_saved(self, pieces: frozenset, fused: _Kernel) -> str:
        """How much of a merge's gain is launch terms (" (0.50 µs of it launches)"), when
        every piece has a price."""
        prices = [self.kernel[p].price for p in pieces]
        if fused.price is None or any(price is None for price in prices):
            return ""
        saved = sum(price.launch_us for price in prices) - fused.price.launch_us
        return f" ({saved:.2f} µs of it launches, {self.pricer.runtime})"

    def _loss(self, gain: float, fused: _Kernel) -> str:
        """Why a legal merge was refused: what it would gain (a loss) under the pricer, as the
        best CodeGen plan of the merged kernel, or at most, by its speed of light."""
        if fused.bound:
            return (f"{self.pricer.name}: gain at most {gain:.2f} µs (the merged kernel's "
                    f"speed of light)")
        return f"{self.pricer.name}: gain {gain:.2f} µs as {fused.price.describe()}"

    def _describe(self, pieces: frozenset, sink: str | None, shared: str | None
                  ) -> tuple[str, tuple[str, str]]:
        """A decision's subject ("producer -> consumer" nodes for two groups joined by data,
        "a + b + c -> sink" for bigger patterns, "a + b" for horizontal ones) and two of its
        nodes, which stay apart if the decision was a refusal."""
        ordered = sorted(pieces, key=self.position.__getitem__)
        if sink is None:
            subject = " + ".join(ordered)
            return (f"{subject} (both read {shared})" if shared else subject), (ordered[0],
                                                                                 ordered[-1])
        producers = [p for p in ordered if p != sink]
        if len(producers) == 1:
            edge = self._edge(producers[0], sink)
            if edge:
                return f"{edge[0]} -> {edge[1]}", edge
        return f"{' + '.join(producers)} -> {sink}", (producers[-1], sink)

    def _edge(self, producer: str, consumer: str) -> tuple[str, str] | None:
        """A value of `producer` and the node of `consumer` that reads it (through nodes the
        consumer recomputes, if that is how it reads it)."""
        summary, analysis = self.summary[consumer], self.analysis
        for value in sorted(summary.inputs & self.summary[producer].owned,
                            key=self.position.__getitem__):
            readers = analysis.users_inside(value, summary.inside)
            while readers:
                owned = [r for r in readers if r in summary.owned]
                if owned:
                    return value, owned[0]
                readers = analysis.users_inside(readers[0], summary.inside)
        return None

    def _note(self, subject: str, ends: tuple[str, str], reason: str,
              gain: float | None) -> None:
        self._notes[subject] = (ends, reason, gain)

    def _log_refusals(self) -> None:
        """One refusal per considered subject (pair of producer and consumer, or of groups)
        whose nodes stayed apart, with the last reason found."""
        group_of = self.gg.group_of
        for subject, ((a, b), reason, gain) in self._notes.items():
            if group_of[a] != group_of[b]:
                self.decisions.append(Decision("refuse", subject, reason, gain))

    # -- merging ----------------------------------------------------------------------------------

    def _merge(self, pieces: frozenset, fused: _Kernel) -> str | None:
        """Merge the groups into one (kept in `dirty`), or say why not, changing nothing: the
        group graph's acyclicity (`GroupGraph.merge_all`: a walk forward from the set and one
        backward to it, in turns, the first to end deciding). A set whose walks both pass
        SEARCH_BUDGET groups is refused rather than searched."""
        gg = self.gg
        head = min(pieces, key=gg.rank.__getitem__)
        union = self._unions.get(self._key(pieces)) or self._union(pieces)
        summaries = {piece: self.summary[piece] for piece in pieces}
        try:
            gg.merge_all(head, pieces, SEARCH_BUDGET)
        except WindowTooWide:
            return (f"too far apart: more than {SEARCH_BUDGET} kernels on both sides of the "
                    "window to check for a cycle")
        except ValueError:
            return "would form cycle"
        for piece, summary in summaries.items():
            for name in summary.inside.difference(summary.owned):
                self.recomputers[name].discard(piece)
            del self.summary[piece], self.kernel[piece], self.token[piece]
        for name in union.inside.difference(gg.members[head]):
            self.recomputers[name].add(head)
        self.summary[head] = union
        self.kernel[head] = fused
        self.token[head] = next(self._tokens)
        self.dirty.add(head)
        return None

    def specs(self) -> list[KernelSpec]:
        position = self.position
        specs = []
        for group in self.gg.groups():
            owned = self.gg.members[group]
            recomputed = self.summary[group].inside.difference(owned)
            kernel = self.kernel[group]
            specs.append(KernelSpec(sorted(owned, key=position.__getitem__), kernel.kind,
                                    sorted(recomputed, key=position.__getitem__),
                                    kernel.dominant))
        return specs


def _in_order(heap: list):
    """The entries of a binary heap in the order heappop would give them, without popping:
    best-first over the heap's tree, so the first k cost O(k log k)."""
    if not heap:
        return
    frontier = [(heap[0], 0)]
    while frontier:
        entry, index = heapq.heappop(frontier)
        yield entry
        for child in (2 * index + 1, 2 * index + 2):
            if child < len(heap):
                heapq.heappush(frontier, (heap[child], child))


def _expand(nodes: dict[str, Node], operands, recomputed: set[str]) -> tuple[str, ...]:
    """Operands with every recomputed node replaced by its own operands, transitively."""
    found, stack, seen = [], list(reversed(operands)), set()
    while stack:
        name = stack.pop()
        if name not in recomputed:
            found.append(name)
        elif name not in seen:
            seen.add(name)
            stack.extend(reversed(nodes[name].operands))
    return tuple(dict.fromkeys(found))
