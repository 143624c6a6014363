"""CodeGen plans: how one kernel of a fusion plan maps onto threads and blocks.

A `CodeGenPlan` (AStitch's "CodeGen plan": schedule, launch dimensions, thread mapping) is a
frozen value: the emitter renders exactly one plan, the cost models price each candidate, and
its `key()` joins the kernel's node names in a build-cache key. `enumerate_plans` lists the
candidates that are valid for a kernel (tens, not thousands); `choose_plan` picks one with a
documented heuristic until a cost model ranks them.

Schedules:
- "elementwise": one thread per element of the output (grid-stride loop), `vector_width`
  consecutive elements per thread; outputs of other element counts get loops of their own.
  Reductions inside it are computed serially by the thread that needs them.
- "row-reduce-warp" / "row-reduce-multirow" / "row-reduce-block": the dominant reduction's
  reduced dimensions are innermost (one row per output element); `threads_per_row` threads
  (32, fewer than 32 for short rows with several rows per warp, or the whole block) stride over
  a row, combine with warp shuffles and, across warps, shared memory. Every reduction of the
  kernel over the same rows is one phase; its result is known to all threads of the row, so
  later phases and the elementwise epilogue over the row read it (regional stitching): used
  for `input` and `stitch-regional` kernels alike.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from compiler.fusion.plan import Kernel
from compiler.ir.graph import Graph

BLOCK_SIZES = (128, 256, 512, 1024)
VECTOR_WIDTHS = (1, 2, 4)
WARP = 32
# Grid-stride loops cover any size, so grids are capped (a few waves on the largest GPU).
MAX_GRID = 65535

ROW_SCHEDULES = ("row-reduce-warp", "row-reduce-multirow", "row-reduce-block")


@dataclass(frozen=True)
class CodeGenPlan:
    schedule: str              # see the module docstring
    dominant: str              # the node whose iteration space drives the kernel
    block_size: int
    grid_size: int
    vector_width: int = 1      # elements per thread per iteration (elementwise)
    threads_per_row: int = 0   # row schedules: threads that share one row
    rows_per_block: int = 0    # row schedules: block_size // threads_per_row
    shared_bytes: int = 0      # dynamic shared memory the launch passes
    rows: int = 0              # row schedules: number of rows (reduce output elements)
    row_length: int = 0        # row schedules: elements reduced into each
    cooperative: bool = False

    def key(self) -> str:
        return ",".join(f"{k}={v}" for k, v in asdict(self).items())

    def to_dict(self) -> dict:
        return asdict(self)


def row_split(graph: Graph, reduce_name: str) -> tuple[int, int] | None:
    """(rows, row_length) when the reduce's reduced dimensions are its operand's innermost
    ones (in logical order), else None."""
    node = graph.nodes[reduce_name]
    if node.op != "reduce" or node.attrs.get("reducer") is None or len(node.operands) != 2:
        return None
    source = graph.nodes[node.operands[0]].array_shape
    dims = sorted(node.attrs["dimensions"])
    if dims != list(range(source.rank - len(dims), source.rank)):
        return None
    length = math.prod(source.dims[d] for d in dims)
    return math.prod(source.dims) // max(length, 1), length


def _elementwise_size(graph: Graph, kernel: Kernel) -> int:
    """Elements of the largest output: the iteration space the launch is sized for."""
    sizes = [graph.nodes[name].array_shape.size for name in kernel.outputs
             if not graph.nodes[name].shape.is_tuple]
    return max(sizes, default=1)


def _next_power_of_two(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _row_shared_bytes(graph: Graph, kernel: Kernel, rows_per_block: int,
                      threads_per_row: int) -> int:
    """8 bytes per warp of a row per row reduction (per-warp partials), 0 within a warp."""
    if threads_per_row <= WARP:
        return 0
    reductions = sum(1 for name in kernel.computed if graph.nodes[name].op == "reduce")
    return 8 * rows_per_block * (threads_per_row // WARP) * reductions


def enumerate_plans(graph: Graph, kernel: Kernel) -> list[CodeGenPlan]:
    """Every valid plan for the kernel (empty for library kernels)."""
    if kernel.kind == "library":
        return []
    dominant = kernel.dominant or (kernel.outputs or kernel.nodes)[-1]
    plans = []
    split = row_split(graph, dominant) if kernel.kind in ("input", "stitch-regional",
                                                          "stitch-global") else None
    if split is not None:
        rows, length = split
        for block in BLOCK_SIZES:
            options = [("row-reduce-block", block), ("row-reduce-warp", WARP)]
            if length < WARP:
                options.append(("row-reduce-multirow", max(2, _next_power_of_two(length))))
            for schedule, threads in options:
                per_block = block // threads
                plans.append(CodeGenPlan(
                    schedule=schedule, dominant=dominant, block_size=block,
                    grid_size=max(1, min(MAX_GRID, -(-rows // per_block))),
                    threads_per_row=threads, rows_per_block=per_block,
                    shared_bytes=_row_shared_bytes(graph, kernel, per_block, threads),
                    rows=rows, row_length=length))
    size = _elementwise_size(graph, kernel)
    for block in BLOCK_SIZES:
        for width in VECTOR_WIDTHS:
            if size % width:
                continue
            grid = max(1, min(MAX_GRID, -(-size // (block * width))))
            plans.append(CodeGenPlan(schedule="elementwise", dominant=dominant,
                                     block_size=block, grid_size=grid, vector_width=width))
    return plans


def choose_plan(plans: list[CodeGenPlan]) -> CodeGenPlan:
    """The heuristic until a cost model ranks the candidates.

    - Row schedules beat the elementwise one whenever the kernel has a row reduction (the
      elementwise schedule reduces serially, one thread per row).
    - Rows shorter than a warp: several rows per warp (threads_per_row = next power of two of
      the row length), 256 threads; rows up to 1024 elements: a warp per row, 256 threads (8
      rows per block: no shared memory, no __syncthreads); longer rows: a block per row, with
      enough threads for about 8 elements each (128 to 1024).
    - Elementwise: 256 threads (a common occupancy sweet spot on A100/H100), the widest
      vector width that divides the size while leaving at least one block per 4 elements.
    """
    if not plans:
        raise ValueError("no plans to choose from (a library kernel?)")
    rows = [p for p in plans if p.schedule in ROW_SCHEDULES]
    if rows:
        length = rows[0].row_length
        if length < WARP and any(p.schedule == "row-reduce-multirow" for p in rows):
            wanted, block = "row-reduce-multirow", 256
        elif length <= 1024:
            wanted, block = "row-reduce-warp", 256
        else:
            wanted = "row-reduce-block"
            block = min(1024, max(128, _next_power_of_two(-(-length // 8))))
        return next(p for p in rows if p.schedule == wanted and p.block_size == block)
    elementwise = [p for p in plans if p.schedule == "elementwise" and p.block_size == 256]
    return max(elementwise, key=lambda p: (p.grid_size > 1 or p.vector_width == 1,
                                           p.vector_width))
