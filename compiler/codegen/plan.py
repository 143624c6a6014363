"""CodeGen plans: how one kernel of a fusion plan maps onto threads and blocks.

A `CodeGenPlan` (AStitch's "CodeGen plan": schedule, launch dimensions, thread mapping) is a
frozen value: the emitter renders exactly one plan, the cost models price each candidate, and
its `key()` joins the kernel's node names in a build-cache key. `enumerate_plans` lists the
candidates that are valid for a kernel (tens, not thousands); `choose_plan` picks one with a
documented heuristic until a cost model ranks them.

Schedules:
- "elementwise": one thread per element of the output (grid-stride loop), `vector_width`
  consecutive elements per thread; outputs of other element counts get loops of their own.
  With a width of 2 or 4, inputs read and outputs written at consecutive aligned addresses
  (same layout, reshapes, aligned slices) move as one vector access per thread; the rest
  stay scalar. Reductions inside it are computed serially by the thread that needs them.
- "row-reduce-warp" / "row-reduce-multirow" / "row-reduce-block": the dominant reduction's
  reduced dimensions are innermost (one row per output element); `threads_per_row` threads
  (32, fewer than 32 for short rows with several rows per warp, or the whole block) stride over
  a row, combine with warp shuffles and, across warps, shared memory. Every reduction of the
  kernel over the same rows is one phase; its result is known to all threads of the row, so
  later phases and the elementwise epilogue over the row read it (regional stitching): used
  for `input` and `stitch-regional` kernels alike. Each loop over the row recomputes what it
  needs from global memory unless the plan has a `row_cache` (AStitch's value cache; the
  register-resident rows of Apex's and OneFlow's softmax and layer norm): with each thread
  holding K = ceil(row_length / threads_per_row) <= ROW_CACHE_MAX elements of its row, every
  loop is unrolled over k < K (column t + k * threads_per_row), and a value that a later loop
  reads (`row_cache_reads`: x in softmax's max phase, exp(x - max) in its sum phase) is
  kept in a K-element local array, constant-indexed after unrolling so it stays in registers:
  each value is computed, and each input element loaded, once per row.
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
- "row-reduce-split" / "column-reduce-split" (task splitting, compiler/codegen/split.py):
  few long rows, or few column tiles over many reduced rows, would leave most SMs idle, so
  each row (each column's reduced elements) is cut into `splits` chunks; a block reduces the
  chunk of a work item (slot, chunk), grid-stride over `rows` (column tiles) x `splits`, into
  per-chunk partials in the accumulation type in the global scratch. Single-phase kernels
  whose wide outputs read no reduction (every column split) take a ticket per slot
  (`atomicAdd` after `__threadfence()`): the block drawing the last one combines the partials
  in chunk order (deterministic), writes the outputs of the reduction's size and resets the
  counter for the next launch (the launcher zeroes scratch once). Row kernels with chained
  reductions (softmax) or wide outputs reading them are `cooperative`: every phase's items
  write partials, `fx_grid_sync()`, and the next phase's items combine them first; a last
  loop over the items writes the wide outputs of each chunk. The grid is capped as above.
- "transpose-tiled": a `loop` or `horizontal` kernel whose transpose (the `dominant` hero)
  moves the innermost dimension: its operand is contiguous along another dim than its
  outputs. A block owns a `tile` x `tile` tile of those two dims (at one index of the
  others): it reads the hero's value coalesced along the operand's dim into shared memory
  (`tile` + 1 columns: no bank conflicts), `__syncthreads()`, and writes the outputs of the
  hero's size coalesced along theirs, reading the value back from the tile; outputs of other
  sizes get the elementwise loops after it (compiler/codegen/transpose.py).
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
# The most row elements a thread keeps in registers per cached value. Softmax and layer norm
# cache two values: 16 registers at 8 (ptxas: at most 48 in all, no spills, sm_80 and sm_90).
# At 16 they would take 32 of the 64 a thread has under __launch_bounds__(1024), with about 30
# more for indices, accumulators and the epilogue: at the edge of spilling.
ROW_CACHE_MAX = 8


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
    # Row schedules: elements of its row each thread keeps in registers, ceil(row_length /
    # threads_per_row); 0: no register cache, each loop over the row recomputes its values.
    row_cache: int = 0

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
        plans.extend(_row_cached_plans(graph, kernel, plans))
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


def row_reductions(graph: Graph, kernel: Kernel, rows: int, length: int) -> list[str]:
    """The kernel's reductions over the same rows (rows x length), in graph order: a row
    schedule's phases."""
    order = {name: k for k, name in enumerate(graph.nodes)}
    names = [n for n in kernel.computed if graph.nodes[n].op == "reduce"
             and row_split(graph, n) == (rows, length)]
    return sorted(names, key=order.__getitem__)


def row_cache_reads(graph: Graph, kernel: Kernel, reductions: list[str],
                    wide: list[str]) -> list[frozenset[str]]:
    """For each loop over a row (a phase per reduction of `reductions`, then the epilogue
    writing the `wide` outputs): the values it takes from the row cache. Walking a loop's
    targets through their operands, the first values reached that an earlier loop evaluated
    (loaded or computed) are read from the cache, and nothing behind them is walked; earlier
    phases' row results are known already. Only these frontier values are cached, not what a
    later loop does not need."""
    computed = set(kernel.computed)
    evaluated: set[str] = set()
    reads = []
    loops = [[graph.nodes[name].operands[0]] for name in reductions] + [list(wide)]
    for k, targets in enumerate(loops):
        known = set(reductions[:k])
        frontier, seen, stack = set(), set(), list(targets)
        while stack:
            name = stack.pop()
            node = graph.nodes[name]
            if name in seen or name in known or \
                    (node.op == "constant" and node.array_shape.size == 1):
                continue
            seen.add(name)
            if name in evaluated:
                frontier.add(name)
            elif name in computed:
                stack.extend(node.operands)
        evaluated |= seen
        reads.append(frozenset(frontier))
    return reads


def _row_cached_plans(graph: Graph, kernel: Kernel,
                      plans: list[CodeGenPlan]) -> list[CodeGenPlan]:
    """Each row plan with at most ROW_CACHE_MAX elements per thread again with its row cache,
    when a later loop over the row reads a value an earlier one computes. Not for
    cooperative (globally stitched) plans, whose second phase is a column schedule."""
    first = plans[0]
    reductions = row_reductions(graph, kernel, first.rows, first.row_length)
    size = first.rows * first.row_length
    wide = [n for n in kernel.outputs if not graph.nodes[n].shape.is_tuple
            and graph.nodes[n].array_shape.size == size and first.row_length > 1]
    if not any(row_cache_reads(graph, kernel, reductions, wide)):
        return []
    cached = []
    for plan in plans:
        elements = -(-plan.row_length // plan.threads_per_row)
        if not plan.cooperative and elements <= ROW_CACHE_MAX:
            cached.append(replace(plan, row_cache=elements))
    return cached


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

# Splitting pays off where the unsplit schedule keeps few SMs of a big GPU busy (an H100 has
# 132): at most SPLIT_MAX_SLOTS rows (a block each in the row schedule) or column tiles, each
# reducing at least SPLIT_MIN_LENGTH elements.
SPLIT_SMS = 132
SPLIT_MAX_SLOTS = SPLIT_SMS // 4
SPLIT_MIN_LENGTH = 4096
SPLIT_COUNTS = (2, 4, 8, 16, 32, 64)
SPLIT_BLOCK_SIZES = (128, 256, 512)
# Candidates keep (rows or tiles) x splits work items within 4 waves of a block per SM.
SPLIT_MAX_ITEMS = 4 * SPLIT_SMS
# Below this many elements reduced in all (64 KiB of f32) a kernel is launch-bound whatever
# its schedule, and the split's second step (fence, ticket, combine) would only add to it.
SPLIT_MIN_ELEMENTS = 16384


def split_reductions(graph: Graph, kernel: Kernel, schedule: str, dominant: str) -> list[str]:
    """The reductions a split schedule cuts, in graph order: every reduction over the
    dominant's rows (row split) or those sharing its column loop (column split)."""
    if schedule == "column-reduce-split":
        names = column_reductions(graph, kernel, dominant)
    else:
        rows = row_split(graph, dominant)
        names = [n for n in kernel.computed if graph.nodes[n].op == "reduce"
                 and row_split(graph, n) == rows]
    order = {name: k for k, name in enumerate(graph.nodes)}
    return sorted(names, key=order.__getitem__)


def split_depths(graph: Graph, kernel: Kernel, reductions: list[str]) -> dict[str, int]:
    """For each value the kernel computes, the longest chain of `reductions` it reads (a
    reduction counts itself): 0 for a value reading none, 1 for a reduction of the inputs,
    2 for one reading such a reduction (softmax's sum of exp(x - max)), ..."""
    targets, computed = set(reductions), set(kernel.computed)
    depth: dict[str, int] = {}
    for name, node in graph.nodes.items():  # topological order
        if name in computed:
            reads = max((depth.get(o, 0) for o in node.operands), default=0)
            depth[name] = reads + (name in targets)
    return depth


def split_scratch(reductions: int, slots: int, splits: int,
                  tickets: int) -> tuple[list[int], int, int]:
    """A split plan's scratch: each reduction's partials ([slot][chunk], 8 bytes apiece
    whatever the accumulator type), then `tickets` unsigned counters; (the partials' byte
    offsets, the tickets' offset, the total), every part 16-byte aligned."""
    part = -(-slots * splits * 8 // 16) * 16
    offsets = [k * part for k in range(reductions)]
    total = reductions * part + -(-tickets * 4 // 16) * 16
    return offsets, reductions * part, max(total, 16)


def _split_plans(graph: Graph, kernel: Kernel, dominant: str) -> list[CodeGenPlan]:
    """Split-row / split-column candidates (see the module docstring), only where they can
    pay off: few long rows or few column tiles over many rows, and every output either of
    the reduction's size, of its operand's size, or reading none of the reductions (which
    would otherwise be recomputed serially per element). Every count of SPLIT_COUNTS and
    block size of SPLIT_BLOCK_SIZES that gives each thread of a chunk at least one element
    and at most SPLIT_MAX_ITEMS work items (a cooperative grid: 4 rounds of its capped grid)."""
    if kernel.kind not in ("input", "stitch-regional", "stitch-global") or \
            global_reductions(graph, kernel):
        return []
    rows = row_split(graph, dominant)
    columns = column_split(graph, dominant)
    if rows is not None:
        slots, length = rows
        schedule, wide_size, narrow_size = "row-reduce-split", slots * length, slots
    elif columns is not None:
        length = columns[1]
        slots = -(-columns[0] // min(WARP, _next_power_of_two(columns[0])))
        wide_size = graph.nodes[graph.nodes[dominant].operands[0]].array_shape.size
        schedule, narrow_size = "column-reduce-split", columns[0]
    else:
        return []
    if slots > SPLIT_MAX_SLOTS or length < SPLIT_MIN_LENGTH:
        return []
    reductions = split_reductions(graph, kernel, schedule, dominant)
    depth = split_depths(graph, kernel, reductions)
    outputs = [graph.nodes[n] for n in kernel.outputs if not graph.nodes[n].shape.is_tuple]
    if any(depth.get(n.name, 0) and n.array_shape.size not in (wide_size, narrow_size)
           for n in outputs):
        return []
    # One reduction phase and nothing wide reading it: the last block of a slot finishes it
    # (tickets). Otherwise the row phases meet at grid barriers: a cooperative launch.
    cooperative = max(depth[n] for n in reductions) > 1 or any(
        depth.get(n.name, 0) and n.array_shape.size == wide_size for n in outputs)
    if cooperative and schedule == "column-reduce-split":
        return []
    if schedule == "row-reduce-split":
        return _row_split_plans(dominant, slots, length, len(reductions), cooperative)
    return _column_split_plans(dominant, columns[0], length, len(reductions))


def _row_split_plans(dominant: str, rows: int, length: int, reductions: int,
                     cooperative: bool) -> list[CodeGenPlan]:
    plans = []
    for block in SPLIT_BLOCK_SIZES:
        cap = min(COOPERATIVE_GRID, COOPERATIVE_THREADS // block) if cooperative else MAX_GRID
        limit = 4 * cap if cooperative else SPLIT_MAX_ITEMS
        for splits in SPLIT_COUNTS:
            items = rows * splits
            if -(-length // splits) < block or items > limit:
                continue
            scratch = split_scratch(reductions, rows, splits, 0 if cooperative else rows)[2]
            shared = 8 * (block // WARP) * reductions + (0 if cooperative else 16)
            plans.append(CodeGenPlan(
                schedule="row-reduce-split", dominant=dominant, block_size=block,
                grid_size=min(items, cap), threads_per_row=block, rows_per_block=1,
                shared_bytes=shared, rows=rows, row_length=length, cooperative=cooperative,
                scratch_bytes=scratch, splits=splits))
    return plans


def _column_split_plans(dominant: str, columns: int, length: int,
                        reductions: int) -> list[CodeGenPlan]:
    tile = min(WARP, _next_power_of_two(columns))
    tiles = -(-columns // tile)
    plans = []
    for block in SPLIT_BLOCK_SIZES:
        groups = block // tile
        for splits in SPLIT_COUNTS:
            items = tiles * splits
            if -(-length // splits) < groups or items > SPLIT_MAX_ITEMS:
                continue
            shared = (8 * block * reductions if groups > 1 else 0) + 16
            plans.append(CodeGenPlan(
                schedule="column-reduce-split", dominant=dominant, block_size=block,
                grid_size=items, shared_bytes=shared, row_length=length, columns=columns,
                column_tile=tile, scratch_bytes=split_scratch(reductions, columns, splits,
                                                              tiles)[2],
                splits=splits))
    return plans


def _choose_split(plans: list[CodeGenPlan]) -> CodeGenPlan | None:
    """The split plan the heuristic prefers, or None to fall through to the others.

    Split candidates exist only where the unsplit schedule leaves most SMs idle; of them:
    - none when fewer than SPLIT_MIN_ELEMENTS elements are reduced in all (launch-bound);
    - 256 threads, and the most splits that still give each thread at least 4 elements of its
      chunk (a row's chunk over the block; a column's chunk over the row groups) and keep
      the work items within 2 blocks per SM of a 132-SM GPU (a cooperative plan: within its
      capped grid, so each phase is one round of work items).
    """
    split = [p for p in plans if p.schedule in SPLIT_SCHEDULES and p.block_size == 256]
    if not split:
        return None

    def shape(p: CodeGenPlan) -> tuple[int, int, int]:
        """(slots, elements reduced per output, threads sharing a chunk)"""
        if p.schedule == "row-reduce-split":
            return p.rows, p.row_length, p.block_size
        return -(-p.columns // p.column_tile), p.row_length, p.block_size // p.column_tile

    def fits(p: CodeGenPlan) -> bool:
        slots, length, threads = shape(p)
        limit = p.grid_size if p.cooperative else 2 * SPLIT_SMS
        return -(-length // p.splits) >= 4 * threads and slots * p.splits <= limit

    first = split[0]
    outputs = first.rows if first.schedule == "row-reduce-split" else first.columns
    if outputs * first.row_length < SPLIT_MIN_ELEMENTS:
        return None
    return max((p for p in split if fits(p)), key=lambda p: p.splits, default=None)


# -- transposes through shared memory (emitted by transpose.py) ------------------------------


# Square tile edges; a tile is enumerated when the next smaller one does not cover the plane.
TRANSPOSE_TILES = (8, 16, 32)


def _transpose_plans(graph: Graph, kernel: Kernel, dominant: str) -> list[CodeGenPlan]:
    """Tiled-transpose candidates when the kernel transposes the innermost dimension (what
    qualifies is `transpose.transpose_tile`'s rule): each tile edge up to the first that
    covers the tile's plane (the two dims it spans), with edge/4, edge/2 or edge rows of
    threads (at least a warp): 32x8, 32x16 and 32x32 threads for 32-element tiles. The
    hero transpose is the plan's `dominant`."""
    from compiler.codegen.transpose import transpose_tile  # transpose.py imports this module

    tile = transpose_tile(graph, kernel)
    if tile is None:
        return []
    plane = max(tile.dims[tile.out_dim], tile.dims[tile.in_dim])
    plans = []
    for edge in TRANSPOSE_TILES:
        if edge > TRANSPOSE_TILES[0] and edge // 2 >= plane:
            break
        tiles = tile.tiles(edge)
        grid = min(MAX_GRID, tiles)
        shared = tile.shared_bytes(graph, edge, double_buffered=grid < tiles)
        for rows in sorted({edge // 4, edge // 2, edge}):
            if edge * rows >= WARP:
                plans.append(CodeGenPlan(schedule=TRANSPOSE_SCHEDULE, dominant=tile.hero,
                                         block_size=edge * rows, grid_size=grid,
                                         shared_bytes=shared, tile=edge))
    return plans


def _choose_transpose(plans: list[CodeGenPlan]) -> CodeGenPlan | None:
    """The tiled-transpose plan, whenever there is one (a strided side costs a sector per
    element, the tile one barrier per tile): the largest tile enumerated (the smallest that
    covers the plane, 32 for larger planes: a warp reads a whole tile row), with the block
    nearest 256 threads (32x8 threads for 32-element tiles, each moving 4 elements per
    phase; 16x16 and 8x8 for the smaller tiles). None when there is none."""
    tiled = [p for p in plans if p.schedule == TRANSPOSE_SCHEDULE]
    if not tiled:
        return None
    edge = max(p.tile for p in tiled)
    return min((p for p in tiled if p.tile == edge), key=lambda p: abs(p.block_size - 256))


def choose_plan(plans: list[CodeGenPlan]) -> CodeGenPlan:
    """The heuristic until a cost model ranks the candidates.

    - Row schedules beat the elementwise one whenever the kernel has a row reduction (the
      elementwise schedule reduces serially, one thread per row).
    - Rows shorter than a warp: several rows per warp (threads_per_row = next power of two of
      the row length), 256 threads; rows up to 1024 elements: a warp per row, 256 threads (8
      rows per block: no shared memory, no __syncthreads); longer rows: a block per row, with
      enough threads for about 8 elements each (128 to 1024). With its row cache when it has
      one (no value read twice from memory, none computed twice).
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
        return max((p for p in rows if p.schedule == wanted and p.block_size == block),
                   key=lambda p: p.row_cache)
    columns = [p for p in plans if p.schedule == COLUMN_SCHEDULE]
    if columns:
        tile, length = columns[0].column_tile, columns[0].row_length
        block = min(256, max(COLUMN_BLOCK_SIZES[0], tile * _next_power_of_two(length)))
        return min(columns, key=lambda p: abs(p.block_size - block))
    elementwise = [p for p in plans if p.schedule == "elementwise" and p.block_size == 256]
    return max(elementwise, key=lambda p: (p.grid_size > 1 or p.vector_width == 1,
                                           p.vector_width))
