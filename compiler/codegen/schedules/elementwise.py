"""The "elementwise" schedule: one thread per element of the output.

A grid-stride loop per distinct output element count, `vector_width` consecutive elements per
thread per iteration (`loops.elementwise_loops`): with a width of 2 or 4, inputs read and
outputs written at consecutive aligned addresses (same layout, reshapes, aligned slices) move
as one vector access per thread; the rest stay scalar. Reductions inside it are computed
serially by the thread that needs them, so every kernel has this schedule to fall back on,
and kernels with reductions have faster ones (rows, columns, split).
"""

from __future__ import annotations

from compiler.codegen.elemental import Elemental
from compiler.codegen.loops import elementwise_loops
from compiler.codegen.plan import (BLOCK_SIZES, MAX_GRID, VECTOR_WIDTHS, CodeGenPlan,
                                   elementwise_size)
from compiler.codegen.workload import Counter
from compiler.ir.graph import Graph, Node
from compiler.kernels.plan import Kernel

SCHEDULES = ("elementwise",)


def candidates(graph: Graph, kernel: Kernel, dominant: str) -> list[CodeGenPlan]:
    """Every block size with every vector width that divides the largest output's size."""
    size = elementwise_size(graph, kernel)
    plans = []
    for block in BLOCK_SIZES:
        for width in VECTOR_WIDTHS:
            if size % width:
                continue
            grid = max(1, min(MAX_GRID, -(-size // (block * width))))
            plans.append(CodeGenPlan(schedule="elementwise", dominant=dominant,
                                     block_size=block, grid_size=grid, vector_width=width))
    return plans


def choose(plans: list[CodeGenPlan]) -> CodeGenPlan | None:
    """256 threads (a common occupancy sweet spot on A100/H100), the widest vector width that
    divides the size while leaving at least one block per 4 elements."""
    elementwise = [p for p in plans if p.schedule == "elementwise" and p.block_size == 256]
    if not elementwise:
        return None
    return max(elementwise, key=lambda p: (p.grid_size > 1 or p.vector_width == 1,
                                           p.vector_width))


def emit(graph: Graph, kernel: Kernel, emitter: Elemental, output_nodes: list[Node],
         buffers: dict[str, str], plan: CodeGenPlan) -> None:
    elementwise_loops(emitter, output_nodes, buffers, plan)


# -- its workload (what the projected model prices) ------------------------------------------------


def count(graph: Graph, kernel: Kernel, plan: CodeGenPlan, counter: Counter) -> None:
    """The loops of `emit`: one grid-stride loop per output element count."""
    counter.elementwise(plan, counter.outputs, vector=plan.vector_width)
