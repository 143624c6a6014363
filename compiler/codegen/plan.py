"""CodeGen plans: how one kernel of a fusion plan maps onto threads and blocks.

A `CodeGenPlan` (AStitch's "CodeGen plan": schedule, launch dimensions, thread mapping) is a
frozen value: the emitter renders exactly one plan, the cost models price each candidate, and
its `key()` joins the kernel's node names in a build-cache key. Each schedule lives in its own
module under compiler/codegen/schedules/, which lists its candidates for a kernel (tens, not
thousands), says which one its heuristic prefers and emits it; `schedules.enumerate_plans`
and `schedules.choose_plan` walk them all. This module holds the plan itself, the constants
the schedules share, and the analyses of a kernel that both the schedules' emitters and their
workload counts (`count`, over compiler/codegen/workload.py) read: which reductions are rows
(`row_split`) or columns (`column_split`), which share a row or column loop, which outputs a
row plan writes in which of its loops (`row_loop_outputs`) and which values of one element per
row once per row (`row_values`), what a row cache holds, what a phased plan's levels loop
over (`phase_loops`).

Schedules (their modules say how each maps threads):
- "elementwise": one thread per output element, `vector_width` consecutive elements per
  thread (schedules/elementwise.py);
- "row-reduce-warp" / "row-reduce-multirow" / "row-reduce-block": `threads_per_row` threads
  per row of the dominant reduction, with an optional register `row_cache`, and `cooperative`
  plans that add a column phase behind a grid barrier (global stitching; schedules/rows.py);
- "column-reduce": a tile of `column_tile` output columns per block (schedules/columns.py);
- "row-reduce-split" / "column-reduce-split": task splitting, a row or a column's reduced
  elements cut into `splits` chunks reduced by different blocks (schedules/split.py);
- "horizontal": the independent parts of a `horizontal` kernel in one launch, each under
  the plan it would get as a kernel of its own (`parts`), on its own range of the launch's
  blocks (`part_ranges`; schedules/horizontal.py);
- "transpose-tiled": a transpose of the innermost dimension staged through shared-memory
  tiles of `tile` x `tile` elements (schedules/transpose.py);
- "phased": a cooperative kernel in levels behind grid barriers, each reduction computed once
  by the whole grid in work items of its own (`PhaseLoop`), its result passed to later
  levels through global scratch (global stitching of any stitch-global kernel;
  schedules/phased.py).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import cached_property, lru_cache

from compiler.ir.graph import Graph
from compiler.kernels.plan import Kernel

BLOCK_SIZES = (128, 256, 512, 1024)
VECTOR_WIDTHS = (1, 2, 4)
WARP = 32
# Grid-stride loops cover any size, so grids are capped (a few waves on the largest GPU).
MAX_GRID = 65535
ROW_SCHEDULES = ("row-reduce-warp", "row-reduce-multirow", "row-reduce-block")
COLUMN_SCHEDULE = "column-reduce"
# Task splitting: a row (or a column's reduced elements) is cut into `splits` chunks reduced by
# different blocks, combined in a second step (schedules/split.py).
SPLIT_SCHEDULES = ("row-reduce-split", "column-reduce-split")
# A transpose of the innermost dimension staged through a shared-memory tile
# (schedules/transpose.py).
TRANSPOSE_SCHEDULE = "transpose-tiled"
# Independent parts of one launch, each under its own plan on its own range of blocks
# (schedules/horizontal.py).
HORIZONTAL_SCHEDULE = "horizontal"
# Every reduction computed once by the whole grid, level after level, behind grid barriers
# (schedules/phased.py).
PHASED_SCHEDULE = "phased"
COLUMN_BLOCK_SIZES = (64, 128, 256, 512, 1024)
# Cooperative plans (a kernel that calls fx_grid_sync()) need every block resident at once.
# Their loops are grid-stride loops, right for any grid (and their results do not depend on
# it), so candidates come in several grid sizes: an L4's 58 SMs (one block per SM of the
# smallest GPU the explorer targets: co-resident anywhere, whatever the registers), an H100's
# 132 and multiples.
# The projected model refuses a plan whose grid its device cannot hold at once (occupancy.py
# with the plan's registers), the GPU runner refuses to launch one, and the CPU emulator runs
# any of them on a grid capped to what it can run as fibers (check.launch_emulated).
COOPERATIVE_GRIDS = (58, 132, 264, 528, 1056)
# The most threads any listed GPU holds at once (H100, H200: 132 SMs x 2048): no cooperative
# candidate has more.
MAX_RESIDENT_THREADS = 132 * 2048
# The most row elements a thread keeps in registers per cached value. Softmax and layer norm
# cache two values: 16 registers at 8 (ptxas: at most 48 in all, no spills, sm_80 and sm_90).
# At 16 they would take 32 of the 64 a thread has under __launch_bounds__(1024), with about 30
# more for indices, accumulators and the epilogue: at the edge of spilling.
ROW_CACHE_MAX = 8
# A kernel whose plan has `scratch_bytes` takes one more parameter, last: that many bytes of
# global memory the launch allocates and zeroes once (cooperative plans pass row results
# through it, split plans their partials and tickets). Its role is "output" (a writable
# pointer) and its node "" (no graph value).
SCRATCH = "scratch"


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
    # Horizontal schedule: each part's own plan, in part order (schedules/horizontal.py); part
    # k runs on the blocks [sum of the earlier parts' grids, + its grid): `part_ranges`.
    parts: tuple[CodeGenPlan, ...] = ()

    def key(self) -> str:
        """Every field; `parts` only when there are some, so that the keys of plans without
        (every schedule but the horizontal one) read as they did before it existed."""
        fields = [f"{k}={v}" for k, v in asdict(self).items() if k != "parts"]
        if self.parts:
            fields.append("parts=[" + "; ".join(part.key() for part in self.parts) + "]")
        return ",".join(fields)

    def to_dict(self) -> dict:
        """The fields as JSON holds them; `parts` (a list of the parts' dicts) only when there
        are some, as `key` does."""
        out = {k: v for k, v in asdict(self).items() if k != "parts"}
        if self.parts:
            out["parts"] = [part.to_dict() for part in self.parts]
        return out

    def part_ranges(self) -> list[tuple[int, int]]:
        """Horizontal: each part's blocks [start, end) of the launch, in part order."""
        ranges, start = [], 0
        for part in self.parts:
            ranges.append((start, start + part.grid_size))
            start += part.grid_size
        return ranges


def row_split(graph: Graph, reduce_name: str) -> tuple[int, int] | None:
    """(rows, row_length) when the reduce's reduced dimensions are its operand's innermost
    ones (in logical order), else None."""
    known = graph.analysis_cache("plan.row_split")
    if reduce_name not in known:
        known[reduce_name] = _row_split(graph, reduce_name)
    return known[reduce_name]


def _row_split(graph: Graph, reduce_name: str) -> tuple[int, int] | None:
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
    known = graph.analysis_cache("plan.column_split")
    if reduce_name not in known:
        known[reduce_name] = _column_split(graph, reduce_name)
    return known[reduce_name]


def _column_split(graph: Graph, reduce_name: str) -> tuple[int, int] | None:
    node = graph.nodes[reduce_name]
    if node.op != "reduce" or node.attrs.get("reducer") is None or len(node.operands) != 2:
        return None
    if row_split(graph, reduce_name) is not None:
        return None
    source = graph.nodes[node.operands[0]].array_shape
    length = math.prod(source.dims[d] for d in node.attrs["dimensions"])
    return node.array_shape.size, length


def elementwise_size(graph: Graph, kernel: Kernel) -> int:
    """Elements of the largest output: the iteration space the launch is sized for."""
    sizes = [graph.nodes[name].array_shape.size for name in kernel.outputs
             if not graph.nodes[name].shape.is_tuple]
    return max(sizes, default=1)


def next_power_of_two(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def row_reductions(graph: Graph, kernel: Kernel, rows: int, length: int) -> list[str]:
    """The kernel's reductions over the same rows (rows x length), in graph order: a row
    schedule's phases."""
    order = graph.positions()
    names = [n for n in kernel.computed if graph.nodes[n].op == "reduce"
             and row_split(graph, n) == (rows, length)]
    return sorted(names, key=order.__getitem__)


def row_loop_outputs(graph: Graph, kernel: Kernel, outputs: list, rows: int,
                     length: int) -> tuple[list, dict[int, list], list, list]:
    """Where a row schedule (schedules/rows.py) writes each of `outputs` (nodes), as the
    workload model counts it: (wide, other lengths, narrow, rest).

    - wide: rows x length elements, written in the loop over each row's columns after the
      reductions;
    - other lengths, {row length: outputs}: values of the same rows but another length that
      read the row's reductions (a slice of half of each row, the row concatenated with
      itself: locality.py's `full` values of their own length), each length in a loop of the
      row's threads over its own columns, after the wide one, so they read the row's results
      where they are at hand instead of reducing the row again per element;
    - narrow: one element per row, written by the row's first thread;
    - rest: grid-stride loops after the row loop (values that read no row result, or read
      them across rows: those compute a reduction per element)."""
    wide = [n for n in outputs if n.array_shape.size == rows * length and length > 1]
    narrow = [n for n in outputs if n.array_shape.size == rows and n not in wide]
    depth = reduction_depths(graph, kernel, row_reductions(graph, kernel, rows, length))
    lengths: dict[int, list] = {}
    rest = []
    for node in outputs:
        if node in wide or node in narrow:
            continue
        size = node.array_shape.size
        if rows and size and size % rows == 0 and depth.get(node.name, 0):
            lengths.setdefault(size // rows, []).append(node)
        else:
            rest.append(node)
    return wide, lengths, narrow, rest


def row_values(graph: Graph, kernel: Kernel, reductions: list[str],
               targets: list[str]) -> list[str]:
    """The values of one element per row that a row schedule computes once per row after its
    reductions, in graph order: the kernel's values of as many elements as the reductions'
    results that read one of them and that the `targets` (the outputs written in the row
    loop) read, stopping at the reductions. Every thread of the row computes them before the
    loops over its columns, which find them in the value cache: a layer norm's mean and
    1 / sqrt(var + eps) cost two divides and a square root per row, not per element."""
    if not reductions:
        return []
    rows = graph.nodes[reductions[0]].array_shape.size
    depth = reduction_depths(graph, kernel, reductions)
    computed, stop = set(kernel.computed), set(reductions)
    found, seen, stack = set(), set(), list(targets)
    while stack:
        name = stack.pop()
        if name in seen or name in stop or name not in computed:
            continue
        seen.add(name)
        node = graph.nodes[name]
        if not node.shape.is_tuple and node.array_shape.size == rows and depth.get(name, 0):
            found.add(name)
        stack.extend(node.operands)
    return sorted(found, key=graph.positions().__getitem__)


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


def global_reductions(graph: Graph, kernel: Kernel) -> list[str]:
    """The reductions a row-scheduled `stitch-global` kernel leaves to its second phase: the
    first column reduction and those sharing its loop."""
    if kernel.kind != "stitch-global":
        return []
    first = next((n for n in kernel.computed if column_split(graph, n) is not None), None)
    return column_reductions(graph, kernel, first) if first else []


def _column_key(graph: Graph, name: str) -> tuple | None:
    """Reductions with equal keys share a column loop: the operand's dims, the reduced dims."""
    if column_split(graph, name) is None:
        return None
    node = graph.nodes[name]
    source = graph.nodes[node.operands[0]].array_shape
    return (source.dims, tuple(sorted(node.attrs["dimensions"])))


def column_reductions(graph: Graph, kernel: Kernel, dominant: str) -> list[str]:
    """The kernel's reductions that share the dominant's column loop, in kernel order."""
    keys = graph.analysis_cache("plan.column_key")
    for name in (dominant, *kernel.computed):
        if name not in keys:
            keys[name] = _column_key(graph, name)
    return [name for name in kernel.computed if keys[name] == keys[dominant]]


def cooperative_grids(natural: int, block: int) -> list[int]:
    """The grid sizes of a cooperative plan whose work would take `natural` blocks of `block`
    threads: each of COOPERATIVE_GRIDS capped at `natural` and at MAX_RESIDENT_THREADS
    threads, smallest first, without repeats."""
    cap = max(1, MAX_RESIDENT_THREADS // block)
    return sorted({max(1, min(grid, natural, cap)) for grid in COOPERATIVE_GRIDS})


def reduction_depths(graph: Graph, kernel: Kernel, reductions: list[str]) -> dict[str, int]:
    """For each value the kernel computes, the longest chain of `reductions` it reads (a
    reduction counts itself): 0 for a value reading none, 1 for a reduction of the inputs,
    2 for one reading such a reduction (softmax's sum of exp(x - max)), ..."""
    targets = set(reductions)
    depth: dict[str, int] = {}
    get, nodes = depth.get, graph.nodes
    for name in kernel_order(graph, kernel):
        reads = 0
        for operand in nodes[name].operands:
            found = get(operand, 0)
            if found > reads:
                reads = found
        depth[name] = reads + (name in targets)
    return depth


def kernel_order(graph: Graph, kernel: Kernel) -> list[str]:
    """The nodes the kernel computes (owned and recomputed) in graph order: topological."""
    return sorted(kernel.computed, key=graph.positions().__getitem__)


# -- the phased schedule's loops (schedules/phased.py) ----------------------------------------

# A row of at most this many elements is reduced by a warp per work item, a longer one by a
# block (the row schedules' choice: rows.choose).
PHASED_WARP_ROW = 1024
# Splitting stops where a thread of a chunk would reduce fewer elements than this...
PHASED_MIN_ELEMENTS = 4
# ... or where a slot would have more chunks than this (its partials are combined by a warp).
PHASED_MAX_SPLITS = 1024


@dataclass(frozen=True)
class PhaseLoop:
    """One loop over work items in a level of a phased plan: the reductions of the level, in
    graph order, whose operands share one index space (the same dims and reduced dims), so one
    pass over it feeds all of them. A work item is (unit, chunk): a unit's reduced elements
    are cut into `splits` chunks so that the items fill the grid.

    `mapping` says how threads walk the operand so that consecutive threads read consecutive
    elements (of a row-major operand):
    - "row": the threads of an item stride over one slot's (output element's) reduced elements
      in row-major order; a unit is a slot. For rows (reduced dims innermost) and reductions
      whose reduced elements inside the last kept dim (`fold`) make runs of a warp or more
      (NCHW BatchNorm's H x W).
    - "column": the operand is read as columns. A virtual column is a kept index followed by
      the `fold` reduced elements inside the last kept dim (a group's channels in NHWC
      GroupNorm; 1 in NHWC BatchNorm), so consecutive virtual columns are consecutive
      elements; the other reduced dims are the virtual rows, which the row groups of an item
      stride over (as the column schedule does). A unit is a tile of `tile` virtual columns;
      a slot's `fold` virtual columns are combined after the grid barrier."""

    level: int
    reductions: tuple[str, ...]
    mapping: str                  # "row" | "column"
    dims: tuple[int, ...]         # the operands' dims
    reduced: tuple[int, ...]      # the reduced dims, sorted
    slots: int                    # output elements of each reduction
    fold: int                     # column: virtual columns per slot; row: 1

    @cached_property
    def fold_dims(self) -> tuple[int, ...]:
        """The reduced dims inside the last kept dim of more than one element."""
        kept = [d for d in range(len(self.dims)) if d not in self.reduced and self.dims[d] > 1]
        last = max(kept, default=-1)
        return tuple(d for d in self.reduced if d > last)

    @cached_property
    def row_dims(self) -> tuple[int, ...]:
        """Column mapping: the reduced dims that are not folded (the virtual rows)."""
        return tuple(d for d in self.reduced if d not in self.fold_dims)

    @cached_property
    def length(self) -> int:
        """The elements a unit's chunks are cut from: a slot's reduced elements (row), the
        virtual rows (column)."""
        dims = self.reduced if self.mapping == "row" else self.row_dims
        return math.prod(self.dims[d] for d in dims)

    @cached_property
    def columns(self) -> int:
        """Partials per chunk: a slot's (row), a virtual column's (column)."""
        return self.slots * self.fold

    @cached_property
    def tile(self) -> int:
        """Column mapping: virtual columns per unit."""
        return min(WARP, next_power_of_two(self.columns))

    @cached_property
    def units(self) -> int:
        return self.slots if self.mapping == "row" else -(-self.columns // self.tile)

    @cached_property
    def axis(self) -> int | None:
        """The operand dim consecutive threads walk."""
        if self.mapping == "row":
            dims = self.reduced
        else:
            dims = self.fold_dims if self.fold > 1 else \
                [d for d in range(len(self.dims)) if d not in self.reduced]
        return max((d for d in dims if self.dims[d] > 1), default=None)

    def item_threads(self, block: int) -> int:
        """The threads that work on one item: a warp for rows of at most PHASED_WARP_ROW
        elements, else the block."""
        return WARP if self.mapping == "row" and self.length <= PHASED_WARP_ROW else block

    def sharing(self, block: int) -> int:
        """The threads that share a chunk's elements: an item's (row); its row groups
        (column)."""
        return self.item_threads(block) if self.mapping == "row" else block // self.tile

    def splits(self, grid: int, block: int) -> int:
        """Chunks per unit: the count that gives the busiest worker (a block, or a warp for
        warp items) the fewest elements over the grid-stride loop of items (the fewest chunks
        on a tie), with at least PHASED_MIN_ELEMENTS elements per thread of a chunk and at
        most PHASED_MAX_SPLITS chunks. It depends on the plan's grid, not on the launched one,
        so a launch on another grid computes the same partials."""
        most = max(1, min(PHASED_MAX_SPLITS, self.length // (self.sharing(block) *
                                                              PHASED_MIN_ELEMENTS)))
        return _best_splits(self.units, self.length,
                            grid * (block // self.item_threads(block)), most)


@lru_cache(maxsize=4096)
def _best_splits(units: int, length: int, workers: int, most: int) -> int:
    """`PhaseLoop.splits`' search (remembered: the candidates of a kernel, and the kernels of
    a model's layers, ask the same)."""

    def busiest(splits: int) -> tuple[int, int]:
        return -(-units * splits // workers) * -(-length // splits), splits

    return min(range(1, most + 1), key=busiest)


def phase_loops(graph: Graph, kernel: Kernel) -> list[PhaseLoop] | None:
    """The loops of a phased plan, by level then graph order: a reduction's level is the
    longest chain of the kernel's reductions it reads (`reduction_depths`). A reduction of one
    element per output (its reduced dims all of size 1) moves no data: it is not a phase's,
    the elemental emitter computes it where it is read. None when the kernel has no other
    reduction, or one the phases cannot compute (a variadic or general reducer)."""
    order = graph.positions()

    def reduces(node) -> bool:
        if node.op != "reduce":
            return False
        source = graph.nodes[node.operands[0]].array_shape
        return math.prod(source.dims[d] for d in node.attrs["dimensions"]) > 1

    names = sorted((n for n in kernel.computed if reduces(graph.nodes[n])),
                   key=order.__getitem__)
    if not names or any(graph.nodes[n].attrs.get("reducer") is None
                        or len(graph.nodes[n].operands) != 2 for n in names):
        return None
    depth = reduction_depths(graph, kernel, names)
    groups: dict[tuple, list[str]] = {}
    for name in names:
        node = graph.nodes[name]
        source = graph.nodes[node.operands[0]].array_shape
        key = (depth[name], source.dims, tuple(sorted(node.attrs["dimensions"])))
        groups.setdefault(key, []).append(name)
    loops = []
    for (level, dims, reduced), members in groups.items():
        loop = PhaseLoop(level=level, reductions=tuple(members), mapping="row", dims=dims,
                         reduced=reduced, slots=graph.nodes[members[0]].array_shape.size,
                         fold=1)
        fold = math.prod(dims[d] for d in loop.fold_dims)
        folded_all = all(dims[d] == 1 for d in loop.row_dims)
        if folded_all or fold >= WARP:
            loops.append(loop)
        else:
            loops.append(PhaseLoop(level=level, reductions=tuple(members), mapping="column",
                                   dims=dims, reduced=reduced, slots=loop.slots, fold=fold))
    return sorted(loops, key=lambda loop: loop.level)


def derived_values(graph: Graph, kernel: Kernel,
                   loops: list[PhaseLoop]) -> dict[str, list[str]]:
    """For each reduction of a phased plan, the values its combine step also computes and
    stores in scratch, in graph order, so that later phases load them instead of computing
    them at every element (GroupNorm's mean and 1 / sqrt(var + eps), BatchNorm's scale): the
    kernel's values with as many elements as the reduction's result that read it and no
    other reduction of its level, each at the last such value before something else reads
    it (a larger value, one reading another reduction, a reduction, the kernel's outputs)."""
    levels = {name: loop.level for loop in loops for name in loop.reductions}
    depth = reduction_depths(graph, kernel, list(levels))
    reads: dict[str, set[str]] = {}  # value -> the reductions of its level it reads
    readers: dict[str, set[str]] = {}
    for name in kernel_order(graph, kernel):
        node = graph.nodes[name]
        for operand in node.operands:
            readers.setdefault(operand, set()).add(name)
        if name in levels or node.shape.is_tuple or depth[name] == 0:
            continue
        reads[name] = set()
        for operand in node.operands:
            if levels.get(operand) == depth[name]:
                reads[name].add(operand)
            elif operand in reads and depth[operand] == depth[name]:
                reads[name] |= reads[operand]

    def source(name: str) -> str | None:
        """The reduction a value is narrow for, if it is."""
        found = reads.get(name, ())
        if len(found) != 1:
            return None
        (reduction,) = found
        same = graph.nodes[name].array_shape.size == graph.nodes[reduction].array_shape.size
        return reduction if same else None

    derived: dict[str, list[str]] = {name: [] for name in levels}
    for name in reads:
        reduction = source(name)
        if reduction is not None and (name in kernel.outputs or any(
                source(reader) != reduction for reader in readers.get(name, ()))):
            derived[reduction].append(name)
    return derived
