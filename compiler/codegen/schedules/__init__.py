"""The schedules: one module each, every one over the emitter API of compiler/codegen/loops.py.

A schedule module has
- `SCHEDULES`: the `CodeGenPlan.schedule` names it emits;
- `candidates(graph, kernel, dominant)`: its valid plans for a kernel (none when it does not
  apply);
- `choose(plans)`: the plan its heuristic prefers among the candidates (None when none is its
  own), used before a cost model ranks them;
- `emit(graph, kernel, emitter, output_nodes, buffers, plan)`: the kernel's body;
- `count(graph, kernel, plan, counter)`: the loops that body runs, described to the workload
  counter (compiler/codegen/workload.py) as they are emitted: what the projected model prices
  (`kernel_workload`).

`enumerate_plans` lists every module's candidates, in ENUMERATION order (the projected model
breaks ties by that order); `choose_plan` asks the modules in PREFERENCE order. A new schedule is
a new module added to both lists, and nothing else: the registry finds its `emit` and `count`
by the names in its `SCHEDULES`. The horizontal schedule (horizontal.py) is built on the
others: it cuts a `horizontal` kernel into its independent parts, asks `enumerate_plans` and
`choose_plan` for each part's plan as for a kernel of its own, and emits each part with its
schedule's `emit` on a range of the launch's blocks.
"""

from __future__ import annotations

from types import ModuleType

from compiler.codegen.emission import check_emission
from compiler.codegen.plan import CodeGenPlan
from compiler.codegen.schedules import (columns, elementwise, horizontal, phased, rows, split,
                                        transpose)
from compiler.codegen.workload import Counter, Workload
from compiler.ir.graph import Graph
from compiler.kernels.plan import Kernel
from compiler.target.devices import Device

ENUMERATION: tuple[ModuleType, ...] = (horizontal, rows, columns, split, transpose, phased,
                                       elementwise)
# A horizontal kernel's parts each get the schedule they would get alone (a row reduction
# beside unrelated converts is no longer reduced serially per element): preferred whenever it
# exists. Task splitting exists only where the unsplit schedules leave most SMs idle, and a
# tiled transpose only where a side would stride: when they exist they are preferred. So are
# phased plans, for kernels whose reductions the row and column schedules would recompute
# (their `choose` leaves small kernels to those, and layer norm's backward to the row
# schedule's cooperative plans).
# Otherwise a reduction's schedule beats the elementwise one, which reduces serially per
# thread.
PREFERENCE: tuple[ModuleType, ...] = (horizontal, phased, split, transpose, rows, columns,
                                      elementwise)


def _owners(modules: tuple[ModuleType, ...]) -> dict[str, ModuleType]:
    """Schedule name -> the module that emits and counts it."""
    return {name: module for module in modules for name in module.SCHEDULES}


_OWNERS = _owners(ENUMERATION)


def enumerate_plans(graph: Graph, kernel: Kernel) -> list[CodeGenPlan]:
    """Every valid plan for the kernel (empty for library kernels); EmissionTooLarge for a
    kernel whose code would pass the statement budget (compiler/codegen/emission.py): no
    schedule emits it."""
    if kernel.kind == "library":
        return []
    check_emission(graph, kernel.computed, kernel.outputs)
    dominant = kernel.dominant or (kernel.outputs or kernel.nodes)[-1]
    return [plan for module in ENUMERATION for plan in module.candidates(graph, kernel,
                                                                          dominant)]


def choose_plan(plans: list[CodeGenPlan]) -> CodeGenPlan:
    """The heuristic until a cost model ranks the candidates: the first schedule of
    PREFERENCE that has a plan among `plans` picks one (each module's `choose` says how)."""
    if not plans:
        raise ValueError("no plans to choose from (a library kernel?)")
    for module in PREFERENCE:
        chosen = module.choose(plans)
        if chosen is not None:
            return chosen
    raise ValueError(f"no schedule chose among {len(plans)} plans")


def emitter_of(schedule: str):
    """The `emit` function of the module that owns `schedule`; KeyError when none does."""
    return _OWNERS[schedule].emit


def kernel_workload(graph: Graph, kernel: Kernel, plan: CodeGenPlan, device: Device,
                    memo: dict | None = None, read_before: set[str] | None = None) -> Workload:
    """The workload of `kernel` emitted under `plan` (compiler/codegen/workload.py), counted
    by the module that owns the plan's schedule. `memo`: a dict shared by calls for the same
    kernel, so its loops are walked once. `read_before`: values an earlier part of the same
    launch read (a horizontal kernel's parts), read again here from L2; the values this
    kernel reads are added to it."""
    owner = _OWNERS.get(plan.schedule)
    if owner is None:
        raise ValueError(f"no workload model for schedule {plan.schedule!r}")
    w = Workload(schedule=plan.schedule, grid=plan.grid_size, block=plan.block_size,
                 shared_bytes=plan.shared_bytes, cooperative=plan.cooperative)
    counter = Counter(graph, kernel, device, w, {} if memo is None else memo)
    if read_before is not None:
        counter.read_once = set(read_before)
    owner.count(graph, kernel, plan, counter)
    if read_before is not None:
        read_before |= counter.read_once
    return w
