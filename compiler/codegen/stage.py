"""The codegen stage of a fusion plan: CUDA source per kernel, built with nvcc, optionally
checked on the CPU emulator against the reference interpreter.

`generate(graph, plan, device)` returns one `KernelCode` per kernel: the candidate CodeGen
plans ranked by the projected cost model (compiler/cost/projected.py, with estimated
registers: nothing is compiled to rank), the fastest one emitted, what ptxas reports for it
(one nvcc batch for the whole plan), its projected breakdown with ptxas' registers, shared
memory and spills, and — after `emulate(...)` — the largest error against the interpreter.
Plans the workload model does not cover fall back to `choose_plan`'s heuristic. A kernel the
emitter cannot generate yet, or whose source does not compile, carries the reason in `error`;
the rest of the plan still completes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.codegen.check import PRELUDE_DIR, compare, emulate_kernel, max_abs_error
from compiler.codegen.elemental import CodegenUnsupported, c_identifier
from compiler.codegen.emit import EmittedKernel, emit_kernel
from compiler.codegen.plan import CodeGenPlan
from compiler.codegen.schedules import choose_plan, enumerate_plans
from compiler.cost.projected import (Breakdown, Resources, project_kernel, project_library,
                                     rank_plans)
from compiler.fusion.plan import FusionPlan, Kernel, projected_fields
from compiler.ir.graph import Graph
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

    @property
    def chosen(self) -> CodeGenPlan | None:
        return self.emitted.plan if self.emitted else None

    def fields(self, candidate_breakdowns: bool = True) -> dict:
        """The per-kernel fields `codegen --json` adds to the plan's kernel entry; without
        `candidate_breakdowns` the candidate plans carry their headline figures only."""
        emitted, build = self.emitted, self.build
        generated = emitted is not None and not emitted.library
        return {
            **projected_fields(self.breakdown),
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


# generate's three phases, also run one by one by compiler/pipeline.py to report progress.

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
    except CodegenUnsupported as error:
        code.error = f"not generated yet: {error}"
    return code


def build_codes(codes: list[KernelCode], arch: str) -> None:
    """Compile the generated kernels of `codes` in one nvcc batch and attach the results."""
    sources = {c.function: c.emitted.source for c in codes
               if c.emitted is not None and not c.emitted.library}
    if not sources:
        return
    results = build_kernels(sources, arch, [str(PRELUDE_DIR)])
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


def emulate(graph: Graph, codes: list[KernelCode], values: dict) -> None:
    """Run every generated kernel on the CPU emulator with the interpreter's values of its
    inputs (`values`: evaluate_all's result) and record the largest error of its outputs."""
    for code in codes:
        if code.emitted is None or code.emitted.library or code.error:
            continue
        got = emulate_kernel(graph, code.emitted, values)
        code.max_abs_error = max((max_abs_error(v, values[n]) for n, v in got.items()),
                                 default=0.0)
        code.mismatches = compare(graph, got, values, code.kernel.computed)
