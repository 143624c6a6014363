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
- "column-reduce": the dominant reduction keeps an inner dimension (reduced dims outermost or
  interleaved: a bias gradient summing over the batch). A block owns a tile of
  `column_tile` consecutive output elements ("columns", 32 when there are that many) and
  `block_size / column_tile` row groups; each thread strides over the reduced elements
  ("rows") of its column, so a warp's loads of one row are consecutive, and the row groups
  combine through shared memory. Every reduction over the same operand shape and dimensions
  shares the loop, and outputs of the operand's shape are written in it.
- Global stitching (a `stitch-global` kernel with a row schedule whose kernel also reduces
  over the rows, as layer norm's backward pass sums gamma's and beta's gradients over the
  batch): `cooperative` plans. Phase 1 is the row schedule; it writes each row reduction's
  result to a global scratch buffer. `fx_grid_sync()`; phase 2 is the column schedule over the
  column reductions, reading the row results from scratch instead of recomputing them. The
  grid is capped at `COOPERATIVE_GRID` blocks (and `COOPERATIVE_THREADS`) so that every block
  is resident at once (the fuser's one-wave bound is larger; both phases are grid-stride
  loops, so any grid is right).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from compiler.fusion.plan import Kernel
from compiler.ir.graph import Graph

BLOCK_SIZES = (128, 256, 512, 1024)
VECTOR_WIDTHS = (1, 2, 4)
WARP = 32
# Grid-stride loops cover any size, so grids are capped (a few waves on the largest GPU).
MAX_GRID = 65535

ROW_SCHEDULES = ("row-reduce-warp", "row-reduce-multirow", "row-reduce-block")
COLUMN_SCHEDULE = "column-reduce"
# Task splitting: a row (or a column's reduced elements) is cut into `splits` chunks reduced by
# different blocks, combined in a second step (emitted by compiler/codegen/split.py).
SPLIT_SCHEDULES = ("row-reduce-split", "column-reduce-split")
# A transpose of the innermost dimension staged through a shared-memory tile
# (emitted by compiler/codegen/transpose.py).
TRANSPOSE_SCHEDULE = "transpose-tiled"
COLUMN_BLOCK_SIZES = (64, 128, 256, 512, 1024)
# One block per SM of the smallest GPU the explorer targets (an L4 has 58 SMs): co-resident
# anywhere at the block sizes used, whatever the registers.
COOPERATIVE_GRID = 58
# ... and at most this many threads in all: the CPU emulator runs a cooperative grid's threads
# as fibers all at once, so larger grids cannot be checked there (see the report's "left").
COOPERATIVE_THREADS = 8192


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
    row_length: int = 0        # row and column schedules: elements reduced into each output
    columns: int = 0           # column schedule: reduce output elements
    column_tile: int = 0       # column schedule: columns per block (block_size / row groups)
    cooperative: bool = False   # launched cooperatively: the kernel calls fx_grid_sync()
    scratch_bytes: int = 0      # global scratch the launch allocates (the `scratch` parameter)
    splits: int = 0             # split schedules: chunks each row / column is cut into
    tile: int = 0               # transpose schedule: the square tile's edge in elements

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


def column_split(graph: Graph, reduce_name: str) -> tuple[int, int] | None:
    """(columns, reduced length) of a reduce whose reduced dimensions are not all innermost
    (those are rows: `row_split`), else None."""
    node = graph.nodes[reduce_name]
    if node.op != "reduce" or node.attrs.get("reducer") is None or len(node.operands) != 2:
        return None
    if row_split(graph, reduce_name) is not None:
        return None
    source = graph.nodes[node.operands[0]].array_shape
    length = math.prod(source.dims[d] for d in node.attrs["dimensions"])
    return node.array_shape.size, length


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
                plan = CodeGenPlan(
                    schedule=schedule, dominant=dominant, block_size=block,
                    grid_size=max(1, min(MAX_GRID, -(-rows // per_block))),
                    threads_per_row=threads, rows_per_block=per_block,
                    shared_bytes=_row_shared_bytes(graph, kernel, per_block, threads),
                    rows=rows, row_length=length)
                plans.append(_globally_stitched(graph, kernel, plan))
    columns = column_split(graph, dominant) if kernel.kind in (
        "input", "stitch-regional", "stitch-global") else None
    if columns is not None:
        plans.extend(_column_plans(graph, kernel, dominant, *columns))
    plans.extend(_split_plans(graph, kernel, dominant))
    plans.extend(_transpose_plans(graph, kernel, dominant))
    size = _elementwise_size(graph, kernel)
    for block in BLOCK_SIZES:
        for width in VECTOR_WIDTHS:
            if size % width:
                continue
            grid = max(1, min(MAX_GRID, -(-size // (block * width))))
            plans.append(CodeGenPlan(schedule="elementwise", dominant=dominant,
                                     block_size=block, grid_size=grid, vector_width=width))
    return plans


def global_reductions(graph: Graph, kernel: Kernel) -> list[str]:
    """The reductions a row-scheduled `stitch-global` kernel leaves to its second phase: the
    first column reduction and those sharing its loop."""
    if kernel.kind != "stitch-global":
        return []
    first = next((n for n in kernel.computed if column_split(graph, n) is not None), None)
    return column_reductions(graph, kernel, first) if first else []


def _globally_stitched(graph: Graph, kernel: Kernel, plan: CodeGenPlan) -> CodeGenPlan:
    """`plan` with a column phase behind a grid barrier when the kernel needs one."""
    second = global_reductions(graph, kernel)
    if not second:
        return plan
    columns, _ = column_split(graph, second[0])
    tile = min(WARP, _next_power_of_two(columns))
    row_results = [n for n in kernel.computed if row_split(graph, n) is not None]
    scratch = sum(-(-graph.nodes[n].array_shape.size * graph.nodes[n].array_shape.dtype.bits
                    // 8 // 16) * 16 for n in row_results)
    column_shared = 8 * plan.block_size * len(second) if plan.block_size > tile else 0
    grid = min(plan.grid_size, COOPERATIVE_GRID, max(1, COOPERATIVE_THREADS // plan.block_size))
    return replace(plan, grid_size=grid, cooperative=True,
                   columns=columns, column_tile=tile, scratch_bytes=max(scratch, 16),
                   shared_bytes=max(plan.shared_bytes, column_shared))


def _column_plans(graph: Graph, kernel: Kernel, dominant: str, columns: int,
                  length: int) -> list[CodeGenPlan]:
    tile = min(WARP, _next_power_of_two(columns))
    source = graph.nodes[graph.nodes[dominant].operands[0]].array_shape
    dims = sorted(graph.nodes[dominant].attrs["dimensions"])
    reductions = sum(1 for name in kernel.computed
                     if _column_key(graph, name) == (source.dims, tuple(dims)))
    plans = []
    for block in COLUMN_BLOCK_SIZES:
        groups = block // tile
        plans.append(CodeGenPlan(
            schedule=COLUMN_SCHEDULE, dominant=dominant, block_size=block,
            grid_size=max(1, min(MAX_GRID, -(-columns // tile))), row_length=length,
            columns=columns, column_tile=tile,
            shared_bytes=8 * block * reductions if groups > 1 else 0))
    return plans


def _column_key(graph: Graph, name: str) -> tuple | None:
    """Reductions with equal keys share a column loop: the operand's dims, the reduced dims."""
    if column_split(graph, name) is None:
        return None
    node = graph.nodes[name]
    source = graph.nodes[node.operands[0]].array_shape
    return (source.dims, tuple(sorted(node.attrs["dimensions"])))


def column_reductions(graph: Graph, kernel: Kernel, dominant: str) -> list[str]:
    """The kernel's reductions that share the dominant's column loop, in kernel order."""
    key = _column_key(graph, dominant)
    return [name for name in kernel.computed if _column_key(graph, name) == key]


# -- task splitting (emitted by split.py) ----------------------------------------------------


def _split_plans(graph: Graph, kernel: Kernel, dominant: str) -> list[CodeGenPlan]:
    """Split-row / split-column candidates for the kernel (none yet)."""
    return []


def _choose_split(plans: list[CodeGenPlan]) -> CodeGenPlan | None:
    """The split plan the heuristic prefers, or None to fall through to the others."""
    return None


# -- transposes through shared memory (emitted by transpose.py) ------------------------------


def _transpose_plans(graph: Graph, kernel: Kernel, dominant: str) -> list[CodeGenPlan]:
    """Tiled-transpose candidates for the kernel (none yet)."""
    return []


def _choose_transpose(plans: list[CodeGenPlan]) -> CodeGenPlan | None:
    """The tiled-transpose plan the heuristic prefers, or None."""
    return None


def choose_plan(plans: list[CodeGenPlan]) -> CodeGenPlan:
    """The heuristic until a cost model ranks the candidates.

    - Row schedules beat the elementwise one whenever the kernel has a row reduction (the
      elementwise schedule reduces serially, one thread per row).
    - Rows shorter than a warp: several rows per warp (threads_per_row = next power of two of
      the row length), 256 threads; rows up to 1024 elements: a warp per row, 256 threads (8
      rows per block: no shared memory, no __syncthreads); longer rows: a block per row, with
      enough threads for about 8 elements each (128 to 1024).
    - Columns: 32 columns per block (fewer when there are fewer), and as many row groups as
      the rows can keep busy, up to 256 threads (8 row groups).
    - Elementwise: 256 threads (a common occupancy sweet spot on A100/H100), the widest
      vector width that divides the size while leaving at least one block per 4 elements.
    """
    if not plans:
        raise ValueError("no plans to choose from (a library kernel?)")
    for preferred in (_choose_split(plans), _choose_transpose(plans)):
        if preferred is not None:
            return preferred
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
    columns = [p for p in plans if p.schedule == COLUMN_SCHEDULE]
    if columns:
        tile, length = columns[0].column_tile, columns[0].row_length
        block = min(256, max(COLUMN_BLOCK_SIZES[0], tile * _next_power_of_two(length)))
        return min(columns, key=lambda p: abs(p.block_size - block))
    elementwise = [p for p in plans if p.schedule == "elementwise" and p.block_size == 256]
    return max(elementwise, key=lambda p: (p.grid_size > 1 or p.vector_width == 1,
                                           p.vector_width))
