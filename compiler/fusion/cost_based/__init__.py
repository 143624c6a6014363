"""The `cost` strategy: PAI's cost-based global fusion search, deciding fusion together with
the code the generator will emit ("V2" of the BladeDISC line of work: FusionStitching, Zheng et
al. 2020, and AStitch, ASPLOS 2022).

The rule-based strategies (xla, stitch) decide pair by pair with fixed rules. This one prices
every candidate kernel with a cost model (compiler/fusion/pricing.py: by default the projected
time of the best CodeGen plan the code generator enumerates for it, the model `codegen` ranks
plans with) and keeps the merges that save the most time. A group the code generator can only
emit badly (a reduction recomputed per element, a strided read, a grid of one block) is priced
as such, so it is never built unless it still pays: the fuser and the code generator agree.

The package: this module is the driver (`cost_fusion`: the search from the unfused plan, then
from the other strategies' plans when they are priced lower, then the re-cut chains);
`search.py` the greedy rounds over groups (`Search`); `summaries.py` what one candidate kernel
is, kept incrementally as groups merge, with its kind from the kernel analysis
(compiler/kernels/analysis.py).

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

What a kernel costs
-------------------
The pricer's time for the kernel of its nodes (owned and recomputed), with the outputs
`build_plan` will give it: an owned value is written when the graph returns it or another
kernel computes one of its readers without it (`Search._written`). That depends on the other
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
what one layer needs. The analysis is incremental: each group keeps its analysis (`Summary`)
and a union revisits only the nodes near the edges that become internal, then
`SolModel.estimate` walks the union's nodes. A cycle check visits at most SEARCH_BUDGET
groups. Groups grow from round to round, so rounds are few (MAX_ROUNDS caps them): O(n * k * s)
per round for kernels of s nodes, near-linear on sparse graphs. A merge moves the groups of
the smaller side of its window (`GroupGraph.merge_all`), and the group graph starts from an
as-soon-as-possible topological order (by depth, then graph order): a node the backward pass
computes from forward values alone (JAX emits many) then ranks next to them.
"""

from __future__ import annotations

from typing import Callable

from compiler.fusion.cost_based.search import MIN_GAIN_US, Search
from compiler.fusion.pricing import Pricer, ProjectedPricer, plan_price
from compiler.fusion.recut import recut_chains
from compiler.fusion.stitch import stitch_fusion
from compiler.fusion.unfused import unfused
from compiler.fusion.xla import xla_fusion
from compiler.gc_pause import cyclic_gc_paused
from compiler.ir.graph import Graph
from compiler.kernels.plan import Decision, FusionPlan, KernelSpec, build_plan
from compiler.target.sol import SolModel

STRATEGY = "cost"
TOP_K = 4                   # patterns kept per group


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
    search = Search(graph, model, _specs(start), pricer, top_k)
    specs = search.run()
    return build_plan(graph, specs, STRATEGY, model, (decisions or []) + search.decisions)


def _specs(plan: FusionPlan) -> list[KernelSpec]:
    return [KernelSpec(list(k.nodes), k.kind, list(k.recomputed), k.dominant)
            for k in plan.kernels]


def _other_plans(graph: Graph, model: SolModel) -> dict[str, FusionPlan]:
    return {"xla": xla_fusion(graph, model), "stitch": stitch_fusion(graph, model)}
