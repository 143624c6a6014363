"""The codegen stage of a fusion plan: CUDA source per kernel, built with nvcc, optionally
checked on the CPU emulator against the reference interpreter.

`generate(graph, plan, device)` returns one `KernelCode` per kernel: the candidate CodeGen
plans ranked by the projected cost model (compiler/cost/projected.py, with estimated
registers: nothing is compiled to rank), the fastest one emitted, what ptxas reports for it
(one nvcc batch for the whole plan), its projected breakdown with ptxas' registers, shared
memory and spills, and — after `emulate(...)` — the largest error against the interpreter.
Plans the workload model does not cover fall back to `choose_plan`'s heuristic. A kernel the
emitter cannot generate yet, whose code would pass the statement budget (codegen/emission.py:
"not generated: ...", found before any of it is written), or whose source does not compile,
carries the reason in `error`; the rest of the plan still completes.

`emulate` checks each kernel on its own: made-up values of its inputs
(compiler/kernels/inputs.kernel_inputs), the interpreter on the kernel's sub-graph only, the
emulated kernel compared with that. The graph is never evaluated as a whole, so a dump whose
large constants are elided (`constant({...})`) can be checked: a constant is an input like any
other. Only an input that cannot be made up (one that becomes an index through the kernel's
ops) is computed from its producers on random graph inputs; when that needs an elided
constant's value, the kernel is reported as not checked, with the reason in `not_checked`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from compiler.codegen.check import PRELUDE_DIR, compare, emulate_kernel, max_abs_error
from compiler.codegen.c_syntax import CodegenUnsupported, EmissionTooLarge, c_identifier
from compiler.codegen.emit import EmittedKernel, emit_kernel
from compiler.codegen.plan import CodeGenPlan
from compiler.codegen.schedules import choose_plan, enumerate_plans
from compiler.cost.projected import (Breakdown, Resources, project_kernel, project_library,
                                     projected_fields, rank_plans)
from compiler.ir.graph import Graph
from compiler.ir.interpreter import evaluate_all
from compiler.kernels.inputs import kernel_inputs, kernel_rng, random_inputs
from compiler.kernels.plan import FusionPlan, Kernel, kernel_graph
from compiler.toolchain import BuildResult, arch_for_device, build_kernels


@dataclass
class KernelCode:
    kernel: Kernel
    function: str                                   # the CUDA function's name
    candidates: list[CodeGenPlan] = field(default_factory=list)
    ranking: list[tuple[CodeGenPlan, Breakdown]] = field(default_factory=list)  # fastest first
    breakdown: Breakdown | None = None              # the chosen plan, with ptxas' resources
    emitted: EmittedKernel | None = None
    build: BuildResult | None = None
    error: str | None = None                        # why there is no (working) code
    max_abs_error: float | None = None              # after emulate()
    mismatches: list = field(default_factory=list)
    not_checked: str | None = None                  # after emulate(): why it was not checked

    @property
    def chosen(self) -> CodeGenPlan | None:
        return self.emitted.plan if self.emitted else None

    def fields(self, device: str, runtime: str, candidate_breakdowns: bool = True) -> dict:
        """The per-kernel fields `codegen --json` adds to the plan's kernel entry (launch terms
        of `runtime` on `device`); without `candidate_breakdowns` the candidate plans carry
        their headline figures only."""
        emitted, build = self.emitted, self.build
        generated = emitted is not None and not emitted.library
        return {
            **projected_fields(self.breakdown, self.kernel.sol,
                               self.chosen.schedule if self.chosen else None, device=device,
                               runtime=runtime),
            "function": self.function if generated else None,
            "schedule": self.chosen.schedule if self.chosen else None,
            "codegen_plan": self.chosen.to_dict() if self.chosen else None,
            "candidate_plans": self._candidates(candidate_breakdowns),
            "block_size": emitted.block[0] * emitted.block[1] * emitted.block[2]
            if generated else None,
            "grid_size": emitted.grid[0] * emitted.grid[1] * emitted.grid[2]
            if generated else None,
            "registers": build.registers if build and build.ok else None,
            "shared_bytes": (emitted.shared_bytes + build.shared_static_bytes)
            if generated and build and build.ok else None,
            "spill_bytes": (build.spill_store_bytes + build.spill_load_bytes)
            if build and build.ok else None,
            "max_abs_error": self.max_abs_error,
            "not_checked": self.not_checked,
            "codegen_error": self.error,
        }


    def _candidates(self, breakdowns: bool = True) -> list[dict]:
        """Every candidate plan; ranked ones carry their projected figures (estimated
        registers) and, with `breakdowns`, their whole breakdown, fastest first, then the ones
        the workload model does not cover."""
        out, ranked = [], set()
        for plan, breakdown in self.ranking:
            ranked.add(plan)
            figures = {"projected_us": round(breakdown.projected_us, 4),
                       "limiter": breakdown.limiter,
                       "occupancy": round(breakdown.occupancy, 4),
                       "registers_estimated": breakdown.registers}
            if breakdowns:
                figures["projected"] = breakdown.to_dict()
            out.append({**plan.to_dict(), **figures})
        out.extend(p.to_dict() for p in self.candidates if p not in ranked)
        return out


def generate(graph: Graph, plan: FusionPlan, device, arch: str | None = None) -> list[KernelCode]:
    """Emit every kernel of `plan` under its fastest projected CodeGen plan and build the
    generated ones in one nvcc batch."""
    codes = [emit_code(graph, plan, kernel, device) for kernel in plan.kernels]
    build_codes(codes, arch or arch_for_device(device.name))
    for code in codes:
        project_code(graph, code, device)
    return codes


# generate's three phases, also run one by one by compiler/stages/pipeline.py to report progress.

def emit_code(graph: Graph, plan: FusionPlan, kernel: Kernel, device) -> KernelCode:
    """One kernel's CUDA source under the CodeGen plan the projected model ranks fastest."""
    code = KernelCode(kernel, c_identifier(f"{plan.strategy}_{kernel.name}"))
    try:
        if kernel.kind == "library":
            code.emitted = emit_kernel(graph, kernel, None, code.function)
        else:
            code.candidates = enumerate_plans(graph, kernel)
            code.ranking = rank_plans(graph, kernel, code.candidates, device)
            chosen = code.ranking[0][0] if code.ranking else choose_plan(code.candidates)
            code.emitted = emit_kernel(graph, kernel, chosen, code.function)
    except EmissionTooLarge as error:
        code.error = f"not generated: {error}"
    except CodegenUnsupported as error:
        code.error = f"not generated yet: {error}"
    return code


def build_codes(codes: list[KernelCode], arch: str,
                progress: Callable[[int], None] | None = None,
                phase: Callable[[str], None] | None = None) -> None:
    """Compile the generated kernels of `codes` in one nvcc batch and attach the results.
    `progress(n)` as codes are done, n at a time (the n add up to len(codes): a code that
    builds nothing, a library call, is done at once); `phase(text)` as the batch moves from
    one step to the next (nvcc's front end, ptxas)."""
    def report(count: int) -> None:
        if count and progress is not None:
            progress(count)

    sources = {c.function: c.emitted.source for c in codes
               if c.emitted is not None and not c.emitted.library}
    compiled = sum(1 for c in codes if c.function in sources)
    report(len(codes) - compiled)
    if not sources:
        return
    # nvcc's batch reports kernels by function; when two codes share one (not in a plan,
    # whose kernel names are unique), they are reported together at the end.
    one_each = compiled == len(sources)
    results = build_kernels(sources, arch, [str(PRELUDE_DIR)],
                            progress=report if one_each else None, phase=phase)
    if not one_each:
        report(compiled)
    for code in codes:
        if code.function in results:
            code.build = results[code.function]
            if not code.build.ok:
                code.error = f"does not compile (a codegen bug): {code.build.error}"


def project_code(graph: Graph, code: KernelCode, device) -> None:
    """The projected breakdown of the emitted kernel, with ptxas' resources once built."""
    if code.kernel.kind == "library":
        code.breakdown = project_library(code.kernel, device)
    elif code.emitted is not None and code.chosen is not None:
        build = code.build if code.build is not None and code.build.ok else None
        resources = None if build is None else built_resources(build)
        try:
            code.breakdown = project_kernel(graph, code.kernel, code.chosen, device, resources)
        except ValueError:
            code.breakdown = None  # a schedule the workload model does not cover
    code.kernel.projected = code.breakdown


def built_resources(build: BuildResult) -> Resources:
    """What ptxas reports for a built kernel, as the projected model reads it."""
    return Resources(registers=build.registers, static_shared_bytes=build.shared_static_bytes,
                     spill_bytes=build.spill_store_bytes + build.spill_load_bytes)


def emulate(graph: Graph, codes: list[KernelCode], seed: int = 0) -> None:
    """Run every generated kernel on the CPU emulator, each on its own inputs (see the module
    docstring), and record the largest error of its outputs against the interpreter, the
    outputs beyond tolerance, or why the kernel could not be checked."""
    producers = Producers(graph, seed)
    for code in codes:
        if code.emitted is None or code.emitted.library or code.error:
            continue
        try:
            values = kernel_reference(graph, code.kernel, producers, seed)
        except NotCheckable as reason:
            code.not_checked = f"not checked: {reason}"
            continue
        got = emulate_kernel(graph, code.emitted, values)
        code.max_abs_error = max((max_abs_error(v, values[n]) for n, v in got.items()),
                                 default=0.0)
        code.mismatches = compare(graph, got, values, code.kernel.computed)


class NotCheckable(Exception):
    """A kernel whose inputs can be neither made up nor computed; the message says why."""


def kernel_reference(graph: Graph, kernel: Kernel, producers: Producers,
                     seed: int = 0) -> dict:
    """The interpreter's values of the kernel's inputs and of every node it computes: inputs
    made up where they can be (the same for a given seed and kernel name), else computed by
    `producers`; NotCheckable when neither works."""
    made = kernel_inputs(graph, kernel.inputs, kernel.computed, kernel_rng(seed, kernel.name))
    values = dict(made.values)
    if made.not_made_up:
        values.update(producers.values_of(made.not_made_up))
    return evaluate_all(kernel_graph(graph, kernel), [values[name] for name in kernel.inputs])


class Producers:
    """The interpreter's values of nodes computed from random graph inputs (`random_inputs`
    with the seed): as much of the graph as they need is evaluated, once."""

    def __init__(self, graph: Graph, seed: int = 0):
        self.graph, self.seed = graph, seed
        self.values: dict = {}

    def values_of(self, names: list[str]) -> dict:
        """{name: value}; NotCheckable naming an elided constant that one of them needs."""
        missing = [name for name in names if name not in self.values]
        if missing:
            self.values.update(self._evaluate(missing))
        return {name: self.values[name] for name in names}

    def _evaluate(self, names: list[str]) -> dict:
        graph = self.graph
        needed, pending = set(), list(names)
        while pending:
            name = pending.pop()
            if name not in needed:
                needed.add(name)
                pending.extend(graph.nodes[name].operands)
        elided = [node.name for node in graph if node.name in needed
                  and node.op == "constant" and node.attrs.get("value") is None]
        if elided:
            raise NotCheckable(f"needs the value of elided constant '{elided[0]}'")
        upstream = Graph(name=f"{graph.name}.upstream", computations=graph.computations)
        for node in graph:
            if node.name in needed:
                upstream.add(node)
        upstream.parameters = [name for name in graph.parameters if name in needed]
        upstream.root = names[0]
        arguments = dict(zip(graph.parameters, random_inputs(graph, self.seed)))
        return evaluate_all(upstream, [arguments[name] for name in upstream.parameters])
