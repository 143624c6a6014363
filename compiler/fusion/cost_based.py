"""The `cost` strategy: PAI's cost-based global fusion search, deciding fusion together with
the code the generator will emit ("V2" of the BladeDISC line of work: FusionStitching, Zheng et
al. 2020, and AStitch, ASPLOS 2022).

The rule-based strategies (xla, stitch) decide pair by pair with fixed rules. This one prices
every candidate kernel with a cost model (compiler/fusion/pricing.py: by default the projected
time of the best CodeGen plan the code generator enumerates for it, the model `codegen` ranks
plans with) and keeps the merges that save the most time. A group the code generator can only
emit badly (a reduction recomputed per element, a strided read, a grid of one block) is priced
as such, so it is never built unless it still pays: the fuser and the code generator agree.

Algorithm
---------
State: the graph cut into *groups* (future kernels) in a `grouping.GroupGraph`, which keeps the
group graph acyclic. The search starts from the unfused plan (one kernel per op, views
recomputed by their readers). A group may recompute cheap nodes owned elsewhere or by no
kernel (`KernelSpec.recomputed`), so the search can start from any plan's grouping (`refine`).

One round:
1. Candidate patterns, in one walk over the groups in topological order. A pattern is a set of
   current groups that would become one kernel: at most MAX_PIECES_FIRST in the first round,
   when groups are single ops, and MAX_PIECES later, when they are kernels already. For each
   group g the top-k patterns *ending at* g (g is their sink) are: every kept pattern of a
   producer group p, and p alone, extended with g (vertical fusion); the best of those of
   several producers merged together with g. A pattern of several groups is the search's
   lookahead: a merge that loses alone may win with the next one. Patterns are ranked by the
   most they can gain: the price of the pieces they replace minus a lower bound on the fused
   kernel's price (`Pricer.bound`: its speed of light, with DRAM at the bandwidth the
   projected model allows), which costs no CodeGen plan; illegal ones are dropped, the k best
   kept. Horizontal candidates come beside them: groups reading one value (siblings, which
   then read it once) and, once vertical fusion has converged, independent groups next to each
   other in topological order (one launch instead of two).
2. Greedy plan, lazily priced: candidates come off a heap by the gain their bound allows; one
   reaching the top is priced (its best CodeGen plan found and projected) and goes back with
   its real gain, never higher than the bound. A priced candidate at the top gains the most of
   all left: it is merged when none of its groups was merged this round and merging keeps the
   group graph acyclic: no path leaves the set and comes back (`GroupGraph.merge_all` walks
   within the set's rank window as it merges, and refuses). The
   order is the one pricing every candidate would give, but candidates whose groups were
   merged before they reach the top are never priced.
3. Rounds repeat, re-scoring patterns against the new groups, until no positive gain is left.

Finally the plan is compared with the other strategies' (xla, stitch; `explore` hands them
over): when one is priced lower, the search runs again from its grouping (seeding) and keeps
its kernels as they are if even that does not beat them, so the result is never priced above
any other plan. Last, where chains of loop kernels hit the size cap (MAX_KERNEL_NODES), they
are cut anew where the fewest bytes cross and searched again from there (recut.py); that plan
is kept when it is priced lower, or the same with less DRAM traffic ("re-cut chains"). The
decision log says which cost model decided and what happened ("seed from the stitch plan");
besides, it holds one "fuse" per accepted pattern ("projected: stitch-regional, gain 3.02 µs
as row-reduce-warp, 256 threads x 64 blocks, dram-bound (...)": the model, the kind, the gain
and the CodeGen plan that won) and one "refuse" per considered pair of producer and consumer
(or of siblings) that stayed apart, with the last reason found:
"would form cycle", "projected: gain -0.30 µs as elementwise, ... alu-bound" (a loss, with the
plan that would have been emitted), "projected: gain at most -0.1 µs (the merged kernel's
speed of light)", "not a legal kernel: ...".

What one kernel may be (`_Analysis`, kernels/analysis.py)
------------------------------------
A kernel's nodes fall into *components*: sets joined by data flow inside the kernel. Each
component gets a kind from AStitch's block-locality labels (compiler/kernels/locality.py: a
node is invariant, one value per row of a reduction, row-aligned, the rows of any length, or
needs data of other blocks; whole rows moved by a transpose count as the latter here, the row
schedules having their results at other rows' places). `_Analysis` keeps the labels and
components of every group as groups merge; the kernel analysis (compiler/kernels/analysis.py,
the stitch strategy's and the code generator's too) gives each component's kind and the
kernel's (`kind_of`, `combine_parts`). The kind says which CodeGen plans the code generator
enumerates (compiler/codegen/schedules/):
- `loop`: no reduction;
- `input`: reductions of one row space whose results nothing in the kernel reads;
- `stitch-regional`: reductions of one row space whose results the kernel consumes within a
  block: the rows fit a block (`row <= max_threads_per_block * ELEMENTS_PER_THREAD`, strided
  rows do not) and the block's row buffers fit its shared memory;
- `stitch-global`: anything else (reductions of different rows, chained reductions whose rows
  do not fit a block, values read across rows): the phased schedule computes each reduction
  once with the whole grid, behind grid barriers, at any size;
- library nodes (dot, custom-call, ...) stay alone in `library` kernels.
Several components make a `horizontal` kernel (each part on blocks of its own, under the plan
it would get alone) or a multi-output `loop` / `input` kernel when they share one iteration
space; a part that needs a grid barrier makes the kernel `stitch-global`. A kernel takes at
most MAX_KERNEL_PARAMETERS operands and outputs (XLA's fusion budget) and computes at most
MAX_KERNEL_NODES nodes (nvcc's time grows faster than a kernel's size; plan.py). Whether a
legal kernel is worth building is the price's to say.

What a kernel costs
-------------------
The pricer's time for the kernel of its nodes (owned and recomputed), with the outputs
`build_plan` will give it: an owned value is written when the graph returns it or another
kernel computes one of its readers without it (`_Search._written`). That depends on the other
kernels too; a merge that lets a third kernel stop writing a value (it brings the value into
every kernel computing its readers, which only a seed with recomputed owned nodes allows) does
not re-price that kernel, `build_plan` settles it. Prices are cached by the kernel's structure,
so the layers of a model price each candidate shape once.

Complexity
----------
Let n be the number of nodes, with bounded degree (real graphs). A round walks the groups
once; each gets at most MAX_PRODUCERS * (k + 1) vertical candidates and as many merges, each
of a bounded number of pieces, plus MAX_SIBLINGS sibling and HORIZONTAL_NEIGHBOURS horizontal
ones. Bounds are cached by group versions, so a round bounds only candidates holding a group
that changed, and by the structure of the kernel a candidate would make (outlined from its
groups' node sets, without the analysis), so the layers of a model analyse each candidate
shape once; prices are cached by structure, so a model of L identical layers prices about
what one layer needs. The analysis is incremental: each group keeps its analysis (`_Summary`)
and a union revisits only the nodes near the edges that become internal, then
`SolModel.estimate` walks the union's nodes. A cycle check visits at most SEARCH_BUDGET
groups. Groups grow from round to round, so rounds are few (MAX_ROUNDS caps them): O(n * k * s)
per round for kernels of s nodes, near-linear on sparse graphs. A merge moves the groups of
the smaller side of its window (`GroupGraph.merge_all`), and the group graph starts from an
as-soon-as-possible topological order (by depth, then graph order): a node the backward pass
computes from forward values alone (JAX emits many) then ranks next to them.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
from dataclasses import dataclass
from typing import Callable

from compiler.fusion.pricing import Price, Pricer, ProjectedPricer, plan_price
from compiler.fusion.recut import recut_chains
from compiler.fusion.stitch import stitch_fusion
from compiler.fusion.unfused import unfused
from compiler.fusion.xla import xla_fusion
from compiler.gc_pause import cyclic_gc_paused
from compiler.ir.graph import Graph, Node
from compiler.kernels.analysis import (BARRIER, STITCHED, GraphFacts, combine_parts, fits_block,
                                       kind_of, node_label, reduction_label, row_cap)
from compiler.kernels.grouping import (FUSIBLE, LIBRARY, GroupGraph, WindowTooWide,
                                       graph_output_sources, node_role, value_readers)
from compiler.kernels.locality import INV
from compiler.kernels.plan import (MAX_KERNEL_PARAMETERS, Decision, FusionPlan, Kernel, KernelSpec,
                                   build_plan, make_kernel, too_many_nodes)
from compiler.target.sol import SolEstimate, SolModel

STRATEGY = "cost"
TOP_K = 4                   # patterns kept per group
MAX_PIECES_FIRST = 4        # groups per candidate pattern in the first round
MAX_PIECES = 2              # ... in later rounds, when groups are kernels already
MAX_PRODUCERS = 6           # producer groups a pattern extends from (the latest ones)
MAX_SIBLINGS = 6            # groups reading one value, paired in topological order
HORIZONTAL_NEIGHBOURS = 2   # later groups each group is paired with for horizontal fusion
MAX_ROUNDS = 64
MIN_GAIN_US = 1e-6
SEARCH_BUDGET = 512         # groups a cycle check may visit (see _Search._merge)
FEW_USERS = 8               # users of a value listed one by one (_Analysis.users_inside)
LOOK_AHEAD = 16             # heap entries looked at for candidates to price at once


def cost_fusion(graph: Graph, model: SolModel, top_k: int = TOP_K,
                pricer: Pricer | None = None,
                others: dict[str, FusionPlan] | Callable[[], dict[str, FusionPlan]] | None = None
                ) -> FusionPlan:
    """The cost-based plan (module docstring), never priced above another strategy's plan.

    `pricer`: the cost model that decides (default: the projected model of `model`'s device).
    `others`: the other strategies' plans of this graph and device when the caller has them
    (explore runs them first), or a function returning them, called once the search from the
    unfused plan is done (explore makes them in another process meanwhile); the xla and stitch
    plans are made here otherwise.
    """
    pricer = pricer or ProjectedPricer(graph, model)
    with cyclic_gc_paused():
        plan = refine(graph, model, unfused(graph, model), pricer, top_k)
        if others is None:
            others = _other_plans(graph, model)
        elif callable(others):  # made meanwhile (explore's background process)
            others = others()
        own = plan_price(plan, pricer)
        start = "the greedy search from the unfused plan"
        ranked = sorted(((plan_price(other, pricer), name, other)
                         for name, other in others.items() if name != STRATEGY),
                        key=lambda item: item[:2])
        for theirs, name, other in ranked:
            subject = f"seed from the {name} plan"
            if theirs >= own - MIN_GAIN_US:
                plan.decisions.append(Decision(
                    "refuse", subject, f"{pricer.name}: not needed: {start} {own:.2f} µs <= "
                                       f"{name} {theirs:.2f} µs", gain_us=theirs - own))
                continue
            seeding = Decision("fuse", subject,
                               f"{pricer.name}: {name} {theirs:.2f} µs < {start} {own:.2f} µs, "
                               f"so the greedy search restarted from {name}'s kernels",
                               gain_us=own - theirs)
            seeded = refine(graph, model, other, pricer, top_k, [seeding])
            seeded_us = plan_price(seeded, pricer)
            if seeded_us > theirs + MIN_GAIN_US:
                # A merge can change what a third kernel must write (build_plan settles it):
                # the search's own figure was not the plan's.
                kept = Decision("refuse", f"greedy from the {name} plan",
                                f"{pricer.name}: {seeded_us:.2f} µs > {name} {theirs:.2f} µs: "
                                f"kept {name}'s kernels as they are")
                seeded = build_plan(graph, _specs(other), STRATEGY, model, [seeding, kept])
                seeded_us = theirs
            plan, own, start = seeded, seeded_us, f"the search from {name}'s kernels"
        plan = _recut(graph, model, plan, own, pricer, top_k)
        plan.cost_model = pricer.name
        return plan


def _recut(graph: Graph, model: SolModel, plan: FusionPlan, own: float, pricer: Pricer,
           top_k: int) -> FusionPlan:
    """The plan with its chains of loop kernels cut where a cut costs least (recut.py) and
    searched again from there, when that is priced lower, or priced the same and moves fewer
    bytes (a chain of hundreds of ops per element is compute-bound: where it is cut changes
    its DRAM traffic, not its time); else the plan. Only chains that hit the kernel size cap
    have a cut to move."""
    specs = recut_chains(graph, plan)
    if specs is None:
        return plan
    # The plan's own search decisions describe its kernels; how it was seeded still holds.
    seeding = [d for d in plan.decisions if d.subject.startswith(("seed from", "greedy from"))]
    recut = refine(graph, model, build_plan(graph, specs, STRATEGY, model), pricer, top_k,
                   seeding)
    recut_us = plan_price(recut, pricer)
    figures = (f"chains of kernels at the size cap cut where the fewest bytes cross: "
               f"{recut_us:.2f} µs and {recut.dram_bytes:,} B of DRAM traffic, against "
               f"{own:.2f} µs and {plan.dram_bytes:,} B")
    if recut_us < own - MIN_GAIN_US or (recut_us <= own + MIN_GAIN_US
                                        and recut.dram_bytes < plan.dram_bytes):
        recut.decisions.append(Decision("fuse", "re-cut chains", f"{pricer.name}: {figures}",
                                        gain_us=own - recut_us))
        return recut
    plan.decisions.append(Decision("refuse", "re-cut chains", f"{pricer.name}: {figures}",
                                   gain_us=own - recut_us))
    return plan


def refine(graph: Graph, model: SolModel, start: FusionPlan, pricer: Pricer,
           top_k: int = TOP_K, decisions: list[Decision] | None = None) -> FusionPlan:
    """The greedy search (module docstring, rounds) started from `start`'s kernels: merges
    groups of them while a merge gains under `pricer`. `decisions` go first in the plan's
    log."""
    search = _Search(graph, model, _specs(start), pricer, top_k)
    specs = search.run()
    return build_plan(graph, specs, STRATEGY, model, (decisions or []) + search.decisions)


def _specs(plan: FusionPlan) -> list[KernelSpec]:
    return [KernelSpec(list(k.nodes), k.kind, list(k.recomputed), k.dominant)
            for k in plan.kernels]


def _other_plans(graph: Graph, model: SolModel) -> dict[str, FusionPlan]:
    return {"xla": xla_fusion(graph, model), "stitch": stitch_fusion(graph, model)}


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
    # (`_Search._bound`), so a merge works it out again.
    borrowed: bool = False


@dataclass(frozen=True)
class _Component:
    """What decides the schedule of a component (nodes joined by data flow in a kernel)."""

    reductions: tuple[str, ...] = ()
    stitched: bool = False       # consumes a reduction's result inside the kernel
    barrier: str | None = None   # a node that reads a reduction's result across rows
    work: int = 1                # its largest iteration space, in elements
    largest: tuple = ()          # (elements, -position, name) of its largest owned node

    def join(self, other: _Component) -> _Component:
        return _Component(self.reductions + other.reductions, self.stitched or other.stitched,
                          self.barrier or other.barrier, max(self.work, other.work),
                          max(self.largest, other.largest))


@dataclass
class _Summary:
    """One kernel's analysis. Kept per group, so that analysing a union of groups revisits only
    the nodes downstream (labels, components) or upstream (replication) of the edges that
    become internal."""

    inside: frozenset[str]                # computed here: owned and recomputed nodes
    owned: frozenset[str]
    inputs: frozenset[str]                # values read from outside
    outputs: frozenset[str] = frozenset()
    parent: dict[str, str] = dataclasses.field(default_factory=dict)  # union-find of owned
    anchor: dict[str, str] = dataclasses.field(default_factory=dict)  # recomputed -> an owned
    components: dict[str, _Component] = dataclasses.field(default_factory=dict)  # root -> it
    labels: dict[str, tuple] = dataclasses.field(default_factory=dict)  # all but INV


class _Analysis:
    """The labels, components and outputs of a candidate kernel, kept incrementally: `full`
    summarises a kernel from scratch, `union` several summarised ones merged. Which kernel
    they make (module docstring: legality) is the kernel analysis's verdict (`verdict`)."""

    def __init__(self, graph: Graph, model: SolModel, written):
        self.graph = graph
        self.nodes = nodes = graph.nodes
        self.device = device = model.device
        self.written = written  # (value, kernel's summary) -> must the kernel write it
        self.facts = facts = GraphFacts.of(graph)  # what the kernel analysis reads
        self.position = facts.position
        self.users = facts.users
        self._user_sets: dict[str, frozenset[str]] = {}  # of values with many users
        self.operands = {name: tuple(dict.fromkeys(node.operands))
                         for name, node in nodes.items()}
        self.elements = facts.elements
        self.space = facts.space
        self.row_cap = row_cap(device)

    # -- analyses ---------------------------------------------------------------------------------

    def full(self, inside: set[str], owned: set[str]) -> _Summary:
        inputs = {o for name in inside for o in self.operands[name] if o not in inside}
        summary = _Summary(frozenset(inside), frozenset(owned), frozenset(inputs))
        for name in owned:
            summary.parent[name] = name
            summary.components[name] = self.component(name)
        order = sorted(inside, key=self.position.__getitem__)
        for name in order:
            self._settle(summary, name)
        summary.outputs = frozenset(v for v in owned if self.written(v, summary))
        return summary

    def union(self, pieces: list[_Summary]) -> _Summary:
        inside = frozenset().union(*(piece.inside for piece in pieces))
        read = frozenset().union(*(piece.inputs for piece in pieces))
        summary = _Summary(inside, frozenset().union(*(piece.owned for piece in pieces)),
                           read - inside)
        parent, anchor = summary.parent, summary.anchor
        links = []  # a node two pieces compute (one may own it) joins their components
        shared: set[str] = set()  # nodes several pieces compute
        covered: frozenset[str] = frozenset()
        for piece in pieces:
            shared |= covered & piece.inside
            covered |= piece.inside
            parent.update(piece.parent)  # the pieces own disjoint sets of nodes
            summary.components.update(piece.components)
            summary.labels.update(piece.labels)
            for name, target in piece.anchor.items():
                if name in anchor:
                    links.append((anchor[name], target))
                else:
                    anchor[name] = target
        for name in anchor.keys() & summary.owned:  # recomputed by one piece, owned by another
            links.append((name, anchor.pop(name)))
        for a, b in links:
            self._join(summary, a, b)
        internal = read & inside  # values a piece read from another: edges now inside
        # Their readers, and the nodes several pieces compute: one piece may have computed
        # such a node from outside values only, its users there joining no component.
        self._relabel(summary, [*shared, *(user for value in internal
                                           for user in self.users_inside(value, inside))])
        # A value written for a reader in another piece, which reads it or computes it too,
        # may be needed outside no more.
        outputs = frozenset().union(*(piece.outputs for piece in pieces))
        summary.outputs = outputs - {v for v in outputs & (internal | shared)
                                     if not self.written(v, summary)}
        return summary

    def users_inside(self, name: str, inside) -> list[str]:
        """The users of `name` among `inside`, in graph order. A value with many users (a
        shared constant every layer reads, a global norm every parameter update reads) is
        intersected as sets, which walks the smaller of the two: a kernel must not cost its
        fan-out, nor a big kernel its size, each time it is asked."""
        users = self.users[name]
        if len(users) <= FEW_USERS:
            return [user for user in users if user in inside]
        found = self._user_sets.get(name)
        if found is None:
            found = self._user_sets[name] = frozenset(users)
        return sorted(found.intersection(inside), key=self.position.__getitem__)

    def component(self, name: str) -> _Component:
        """The component of an owned node alone."""
        node = self.nodes[name]
        work = self.elements[name]
        if node.op in ("reduce", "reduce-window"):
            work = max(work, self.elements[node.operands[0]])
        return _Component(reductions=(name,) if name in self.space else (), work=work,
                          largest=(self.elements[name], -self.position[name], name))

    def _root(self, summary: _Summary, name: str) -> str:
        """The component of an owned or anchored node."""
        return _find(summary.parent, summary.anchor.get(name, name))

    def _join(self, summary: _Summary, a: str, b: str) -> None:
        parent, components = summary.parent, summary.components
        root_a, root_b = self._root(summary, a), self._root(summary, b)
        if root_a != root_b:
            parent[root_b] = root_a
            components[root_a] = components[root_a].join(components.pop(root_b))

    # -- block locality (locality.py's labels) and components, downstream -----------------------

    def _relabel(self, summary: _Summary, start: list[str]) -> None:
        """Settle the nodes that read values now inside, then their users as long as something
        changes. The first ones' users always: a node a piece recomputed from outside values
        only may now belong to a component its users in that piece did not join."""
        position, inside = self.position, summary.inside
        first = set(start)
        queued = set(first)
        heap = [(position[name], name) for name in queued]
        heapq.heapify(heap)
        while heap:
            _, name = heapq.heappop(heap)
            if self._settle(summary, name) or name in first:
                for user in self.users_inside(name, inside):
                    if user not in queued:
                        queued.add(user)
                        heapq.heappush(heap, (position[user], user))

    def _settle(self, summary: _Summary, name: str) -> bool:
        """Join `name` to the components of its operands inside and give it its label; True
        when that changed something its users depend on."""
        parent, anchor = summary.parent, summary.anchor
        labels, components = summary.labels, summary.components
        anchored = [o for o in self.operands[name]
                    if o in summary.inside and (o in parent or o in anchor)]
        changed = False
        if anchored and name not in parent and name not in anchor:
            # a recomputed node now fed from inside belongs to its operands' component
            anchor[name] = owner = anchored[0] if anchored[0] in parent else anchor[anchored[0]]
            root = _find(parent, owner)
            components[root] = components[root].join(_Component(work=self.elements[name]))
            changed = True
        for operand in anchored:
            self._join(summary, name, operand)
        node = self.nodes[name]
        label, flag = self._label(node, [labels.get(o, INV) for o in node.operands])
        if label != labels.get(name, INV):
            changed = True
            if label == INV:
                del labels[name]
            else:
                labels[name] = label
        if flag is not None and (name in parent or name in anchor):
            root = self._root(summary, name)
            component = components[root]
            if flag == STITCHED and not component.stitched:
                components[root] = dataclasses.replace(component, stitched=True)
            elif flag == BARRIER and component.barrier is None:
                components[root] = dataclasses.replace(component, barrier=name)
        return changed

    def _label(self, node: Node, operand_labels: list[tuple]) -> tuple[tuple, str | None]:
        """The node's label and flag (the kernel analysis's STITCHED or BARRIER) from its
        operands' labels; `moved` rows count as read across rows (the row schedules read a
        moved row's elements at other rows' places, where the row results are not at hand:
        only the phased schedule computes it well)."""
        space = self.space.get(node.name)
        if space is not None:
            return reduction_label(space, fits_block(space, self.row_cap), operand_labels)
        return node_label(self.graph, node, operand_labels, moved_rows_local=False)

    # -- kinds ------------------------------------------------------------------------------------

    def verdict(self, summary: _Summary) -> tuple[str, str, str]:
        """(kind, reason, dominant node): the kernel analysis's verdict on each component, and
        on the kernel of them all (`combine_parts`)."""
        components = list(summary.components.values())
        inside, device = summary.inside, self.device
        verdicts = [kind_of(self.facts, list(c.reductions), c.stitched, c.barrier is not None,
                            lambda value: self.users_inside(value, inside), device, c.barrier)
                    for c in components]
        kind, reason = combine_parts(verdicts, [c.work for c in components])
        reductions = [r for c in components for r in c.reductions]
        if reductions:
            return kind, reason, self.facts.dominant_reduction(reductions)
        return kind, reason, max(c.largest for c in components)[2]


@dataclass(frozen=True)
class _Owners:
    """What `_Search._written` asks of a kernel: the nodes it owns."""

    owned: frozenset[str]


def _find(parent: dict[str, str], name: str) -> str:
    root = name
    while parent[root] != root:
        root = parent[root]
    while parent[name] != root:
        parent[name], name = root, parent[name]
    return root


# -- the search -----------------------------------------------------------------------------------


class _Search:
    """Groups, their prices and the greedy rounds (module docstring)."""

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
        self.analysis = _Analysis(graph, model, self._written)
        self.position = self.analysis.position
        self._cache: dict[frozenset, _Kernel] = {}
        self._unions: dict[frozenset, _Summary] = {}  # this round's legal candidates
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
        self.summary: dict[str, _Summary] = {}
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
            self.summary[head] = _Summary(frozenset(members) | frozenset(spec.recomputed),
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

    def _written(self, value: str, kernel: _Summary) -> bool:
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

    def _union(self, pieces: frozenset) -> _Summary:
        ordered = sorted(pieces, key=self.gg.rank.__getitem__)
        return self.analysis.union([self.summary[p] for p in ordered])

    def _bound(self, pieces: frozenset, key: frozenset) -> _Kernel:
        """The verdict on a candidate and its speed of light, from those of a structurally
        identical candidate when there was one (the layers of a model make the same candidates
        over and over): the kernel the pieces would make is outlined without analysing it
        (`_outline`), and only a new structure is analysed (`_Analysis.union`)."""
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
        pieces would make: `_Analysis.union`'s sets, without its analysis."""
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

    def _candidate(self, summary: _Summary, kind: str, dominant: str | None,
                   sol: SolEstimate | None = None) -> Kernel:
        """The kernel a group (or a union of groups) would be, for the pricer; `sol`: its
        speed of light when known."""
        spec = KernelSpec(list(summary.owned), kind, list(summary.inside - summary.owned),
                          dominant)
        return make_kernel(self.graph, spec, summary.outputs, self.model, self.position,
                           sol=sol)

    def _pieces_us(self, pieces: frozenset) -> float:
        return sum(self.kernel[p].cost_us for p in sorted(pieces, key=self.position.get))

    def _parameters(self, union: _Summary) -> str | None:
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
        """The top-k patterns with `group` as their sink (module docstring, step 1)."""
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
