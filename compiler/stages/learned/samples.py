"""The learned cost model's samples of a whole program: every kernel of every strategy's fusion
plan, under its `top_k` candidate CodeGen plans as the projected model ranks them (what codegen
chooses from), one `KernelSample` each (compiler/cost/learned/features.py). A kernel two
strategies cut alike (same nodes, inputs and outputs) is one group, not two: its plans would
otherwise sit in the training and test sets as copies. Library kernels (cuBLAS dots) have no
CodeGen plan and no sample.

This is a stage above fusion (it explores the program with every strategy); the dataset file
these samples are written to is compiler/cost/learned/dataset.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.codegen.c_syntax import CodegenUnsupported
from compiler.codegen.plan import CodeGenPlan
from compiler.codegen.schedules import enumerate_plans
from compiler.cost.learned.dataset import family_of
from compiler.cost.learned.features import FEATURE_LAUNCH_US, KernelSample, kernel_sample
from compiler.cost.projected import Breakdown, rank_plans
from compiler.fusion.explore import explore
from compiler.ir.graph import Graph
from compiler.kernels.plan import Kernel
from compiler.target.devices import get_device

ALL_STRATEGIES = ("unfused", "xla", "stitch", "cost")


@dataclass
class Candidate:
    """One kernel under one CodeGen plan: what a collector emits, builds and times."""
    strategy: str
    kernel: Kernel
    plan: CodeGenPlan
    breakdown: Breakdown           # projected, with estimated registers
    group: str                     # "<program>/<strategy>/<kernel>" of its first strategy


def kernel_key(kernel: Kernel) -> tuple:
    """What makes two strategies' kernels the same kernel."""
    # Strategies may list the same nodes in another order (owned vs recomputed): same kernel.
    return (kernel.kind, frozenset(kernel.computed), frozenset(kernel.inputs),
            frozenset(kernel.outputs))


def program_candidates(graph: Graph, program: str, device: str,
                       strategies=ALL_STRATEGIES, top_k: int | None = None) -> list[Candidate]:
    """Every distinct generated kernel of the strategies' plans under its `top_k` fastest
    projected CodeGen plans (all ranked plans when None), groups in plan order; kernels codegen
    cannot emit are left out."""
    spec = get_device(device)
    seen: set[tuple] = set()
    out = []
    for strategy, plan in explore(graph, device, list(strategies)).items():
        for kernel in plan.kernels:
            if kernel.kind == "library" or kernel_key(kernel) in seen:
                continue
            seen.add(kernel_key(kernel))
            try:
                ranked = rank_plans(graph, kernel, enumerate_plans(graph, kernel), spec)
            except CodegenUnsupported:
                continue    # codegen cannot emit it (an s4 element type): nothing to measure
            group = f"{program}/{strategy}/{kernel.name}"
            out += [Candidate(strategy, kernel, codegen_plan, breakdown, group)
                    for codegen_plan, breakdown in ranked[:top_k]]
    return out


def candidate_sample(graph: Graph, candidate: Candidate, device: str, program: str,
                     family: str, breakdown: Breakdown | None = None) -> KernelSample:
    """The sample of a candidate; `breakdown`: its projection with ptxas' resources, once
    built (the candidate's own, with estimated registers, otherwise)."""
    sample = kernel_sample(graph, candidate.kernel, candidate.plan, device,
                           breakdown or candidate.breakdown)
    sample.program, sample.family, sample.group = program, family, candidate.group
    sample.extra.update(strategy=candidate.strategy, codegen_plan=candidate.plan.to_dict(),
                        launch_us=FEATURE_LAUNCH_US)
    return sample


def program_samples(graph: Graph, program: str, device: str, strategies=ALL_STRATEGIES,
                    top_k: int | None = None, family: str | None = None) -> list[KernelSample]:
    """The samples of `program_candidates`, without targets."""
    family = family if family is not None else family_of(program)
    return [candidate_sample(graph, c, device, program, family)
            for c in program_candidates(graph, program, device, strategies, top_k)]
