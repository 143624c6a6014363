"""The "phased" schedule: every reduction of a globally stitched kernel computed once, by the
whole grid, level after level, with results passed through global scratch.

A `stitch-global` kernel joins reductions that need values from other blocks: GroupNorm's
mean over (H, W, channels of a group) and then the variance of x - mean, BatchNorm's per-
channel statistics over N, H, W, reductions over different row spaces. The row and column
schedules can only recompute such a reduction wherever it is read (GroupNorm's variance loop
would recompute the group mean for every element). Here the kernel is one cooperative launch
in phases separated by grid barriers (`fx_grid_sync()`):

- Levels. A reduction's level is the longest chain of the kernel's reductions it reads
  (`plan.reduction_depths`): a reduction of the inputs is level 1, GroupNorm's variance 2.
  Level k's reductions are computed in phase k, in loops that share their operand's index
  space (`plan.PhaseLoop`; one pass over BatchNorm-backward's dy feeds both its sums).
  Reductions of one element per output move no data and are left to the elemental emitter.
- Work items. A loop's units (a slot, one output element, for the "row" mapping; a tile of 32
  virtual columns for the "column" mapping: see `PhaseLoop`) have their reduced elements cut
  into `splits` chunks so that the (unit, chunk) items fill the plan's grid
  (`PhaseLoop.splits`); a grid-stride loop hands the items to the blocks (or, for rows of at
  most PHASED_WARP_ROW elements, to warps). Threads walk the operand's innermost elements, so
  loads are coalesced: along the row, or along the virtual columns with row groups striding
  over the virtual rows as the column schedule does. NHWC GroupNorm reads as 32 x C/32
  virtual columns (a group's channels folded into its slot) over H x W virtual rows.
- Partials. An item's threads combine their accumulators (warp shuffles, then shared memory
  across warps or row groups, in a fixed order) and write one partial per slot (row) or
  virtual column (column) to scratch at [slot or column][chunk], in the accumulation type.
- `fx_grid_sync()`; then a warp per slot combines the slot's partials in order (its virtual
  columns' chunks, each lane a strided share, then a shuffle tree), applies the init value
  once, rounds to the reduction's type (`finish_reduction`) and writes the result to the
  reduction's result array in scratch, and to its output buffer when it is one. Results do
  not depend on which block finished first, nor on the grid the kernel is launched on: the
  chunks are fixed by the plan. Lane 0 also computes and stores the values derived from the
  result at its slot (`plan.derived_values`: GroupNorm's mean and 1 / sqrt(var + eps),
  BatchNorm's scale), where a dry run shows they read the result only there.
- `fx_grid_sync()`; later levels read earlier results and derived values from scratch: the
  elemental emitter finds them among its buffers (`emitter.buffers`), so it loads them
  instead of recomputing them at every element.
- A final phase writes the other outputs with the elementwise schedule's grid-stride loops
  (vectorised where `loops.elementwise_loops` can), reading from scratch likewise.

Every `fx_grid_sync()` is at the top level of the kernel, outside every loop and branch, so
every thread reaches each one. Scratch holds the result and derived value arrays, then the
partials, every region starting on a 128-byte line (`phased_scratch`). Candidates: block
sizes PHASED_BLOCK_SIZES x the cooperative grid sizes (`plan.cooperative_grids`); the
projected model refuses a grid its device cannot hold at once.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Iterator

from compiler.codegen.c_syntax import reducer_functor, reducer_identity, storage_ctype
from compiler.codegen.elemental import Elemental
from compiler.codegen.indexing import Index, Ix
from compiler.codegen.loops import accumulator_ctype, elementwise_loops, finish_reduction
from compiler.codegen.plan import (COOPERATIVE_GRIDS, PHASED_MIN_ELEMENTS, PHASED_SCHEDULE,
                                   VECTOR_WIDTHS, WARP, CodeGenPlan, PhaseLoop, cooperative_grids,
                                   derived_values, elementwise_size, phase_loops, row_split)
from compiler.codegen.workload import UNROLL, Counter, Loop, ceil_div, result_reads
from compiler.ir.dtypes import accumulation_dtype
from compiler.ir.graph import Graph, Node
from compiler.kernels.plan import Kernel

SCHEDULES = (PHASED_SCHEDULE,)
PHASED_BLOCK_SIZES = (128, 256, 512)
KINDS = ("input", "stitch-regional", "stitch-global")
# Scratch regions start on an L1 line, so no line a block caches holds a value that another
# phase writes later.
SCRATCH_ALIGNMENT = 128
# The heuristic's grid: two blocks of 256 threads per SM of an H100 (one leaves a phase's
# loads waiting on memory latency), co-resident on every listed GPU up to 48 registers per
# thread (an L4 then holds the 5 blocks per SM it needs).
HEURISTIC_GRID = 264


def phased_loops(graph: Graph, kernel: Kernel) -> list[PhaseLoop] | None:
    """The kernel's phase loops where the schedule applies, else None: every `stitch-global`
    kernel whose reductions all have a plain reducer, and `input` / `stitch-regional` kernels
    that the row and column schedules could only compute by recomputing a reduction: with
    reductions over several index spaces, or a chained reduction that is not a row reduction
    (the row schedule's phases chain rows; the column schedule has no phases)."""
    if kernel.kind not in KINDS or any(graph.nodes[n].shape.is_tuple for n in kernel.outputs):
        return None
    loops = phase_loops(graph, kernel)
    if loops is None or kernel.kind == "stitch-global":
        return loops
    spaces = {(loop.dims, loop.reduced) for loop in loops}
    chained = any(loop.level > 1 and row_split(graph, loop.reductions[0]) is None
                  for loop in loops)
    return loops if len(spaces) > 1 or chained else None


def phased_scratch(graph: Graph, loops: list[PhaseLoop], splits: list[int],
                   derived: dict[str, list[str]]) -> tuple[dict[str, int], dict[str, int], int]:
    """(the offset of each reduction's result and derived value, of each reduction's
    partials, total bytes): the results and derived values (`plan.derived_values`) in their
    dtype, then the partials, [slot or virtual column][chunk] at 8 bytes apiece whatever the
    accumulator type; every region on a SCRATCH_ALIGNMENT line."""
    offset = 0

    def take(nbytes: int) -> int:
        nonlocal offset
        start = offset
        offset += _aligned(nbytes)
        return start

    values = {name: take(_value_bytes(graph, name)) for name in _scratch_values(loops, derived)}
    partials = {name: take(loop.columns * count * 8)
                for loop, count in zip(loops, splits) for name in loop.reductions}
    return values, partials, max(offset, 16)


def _scratch_values(loops: list[PhaseLoop], derived: dict[str, list[str]]) -> list[str]:
    """The values a phased plan keeps in scratch: each reduction's result, then its derived
    values, loop by loop."""
    return [name for loop in loops for reduction in loop.reductions
            for name in (reduction, *derived[reduction])]


def _value_bytes(graph: Graph, name: str) -> int:
    shape = graph.nodes[name].array_shape
    return -(-shape.size * shape.dtype.bits // 8)


def _aligned(nbytes: int) -> int:
    """`nbytes` rounded up to a whole SCRATCH_ALIGNMENT line."""
    return -(-nbytes // SCRATCH_ALIGNMENT) * SCRATCH_ALIGNMENT


def _shared_bytes(loops: list[PhaseLoop], block: int) -> int:
    """8 bytes per reduction per warp of a block-wide row item, per thread of a column item
    with several row groups; the most any loop needs."""
    need = 0
    for loop in loops:
        threads = loop.item_threads(block)
        if loop.mapping == "row" and threads > WARP:
            need = max(need, 8 * (threads // WARP) * len(loop.reductions))
        elif loop.mapping == "column" and block > loop.tile:
            need = max(need, 8 * block * len(loop.reductions))
    return need


def candidates(graph: Graph, kernel: Kernel, dominant: str) -> list[CodeGenPlan]:
    """Where `phased_loops` applies: every block size of PHASED_BLOCK_SIZES with every
    cooperative grid size up to the blocks that give each thread PHASED_MIN_ELEMENTS elements
    of the largest iteration space; the widest vector width that divides the largest output
    for the final phase."""
    loops = phased_loops(graph, kernel)
    if loops is None:
        return []
    derived = derived_values(graph, kernel, loops)
    outputs = elementwise_size(graph, kernel)
    size = max([outputs] + [math.prod(loop.dims) for loop in loops])
    width = max(w for w in VECTOR_WIDTHS if outputs % w == 0)
    # phased_scratch's total: the values' regions, then the partials' (which depend on the
    # launch), without the offsets.
    values = sum(_aligned(_value_bytes(graph, name)) for name in _scratch_values(loops, derived))
    plans = []
    for block in PHASED_BLOCK_SIZES:
        natural = max(1, -(-size // (block * PHASED_MIN_ELEMENTS)))
        for grid in cooperative_grids(natural, block):
            splits = [loop.splits(grid, block) for loop in loops]
            partials = sum(_aligned(loop.columns * count * 8) * len(loop.reductions)
                           for loop, count in zip(loops, splits))
            scratch = max(16, values + partials)
            plans.append(CodeGenPlan(
                schedule=PHASED_SCHEDULE, dominant=dominant, block_size=block,
                grid_size=grid, vector_width=width, shared_bytes=_shared_bytes(loops, block),
                cooperative=True, scratch_bytes=scratch))
    return plans


def choose(plans: list[CodeGenPlan]) -> CodeGenPlan | None:
    """256 threads on the largest grid of at most HEURISTIC_GRID blocks. None when there is
    no phased plan; when the row or split schedule has a cooperative plan (it already
    stitches the kernel globally, in fewer passes: layer norm's backward); or when the kernel
    is small (too small for a grid of COOPERATIVE_GRIDS[0] blocks: under 60,000 elements),
    where the grid barriers cost more than recomputing a reduction does."""
    phased = [p for p in plans if p.schedule == PHASED_SCHEDULE and p.block_size == 256]
    if not phased or any(p.cooperative and p.schedule != PHASED_SCHEDULE for p in plans) or \
            max(p.grid_size for p in phased) < COOPERATIVE_GRIDS[0]:
        return None
    # The smallest grid of each block size is at most COOPERATIVE_GRIDS[0] <= HEURISTIC_GRID.
    return max((p for p in phased if p.grid_size <= HEURISTIC_GRID), key=lambda p: p.grid_size)


# -- emission --------------------------------------------------------------------------------

# Names the kernel declares (the elemental emitter must not reuse them).
_NAMES = {"shared", "item", "r", "t", "c", "x", "g", "vc", "j", "tile_index", "chunk",
          "chunk_start", "chunk_end", "s", "k", "w"}


def emit(graph: Graph, kernel: Kernel, emitter: Elemental, output_nodes: list[Node],
         buffers: dict[str, str], plan: CodeGenPlan) -> None:
    """The levels' item loops, barriers and combine steps, then the final phase (see the
    module docstring)."""
    body = emitter.body
    loops = phase_loops(graph, kernel)
    derived = derived_values(graph, kernel, loops)
    splits = [loop.splits(plan.grid_size, plan.block_size) for loop in loops]
    value_offsets, partial_offsets, _ = phased_scratch(graph, loops, splits, derived)
    emitter.used_names.update(_NAMES)
    body.line("FX_SHARED_MEMORY(shared);")
    body.line("// scratch: reduction results and values derived from them, then each "
              "reduction's partials [slot or column][chunk]")
    values = _pointers(emitter, value_offsets,
                       lambda node: storage_ctype(node.array_shape.dtype), "scratch")
    partials = _pointers(emitter, partial_offsets, accumulator_ctype, "partials")
    levels = sorted({loop.level for loop in loops})
    saved = dict(emitter.buffers)
    stored: set[str] = set()  # results and derived values in scratch, and so in `outputs`
    for level in levels:
        level_loops = [(loop, n) for loop, n in zip(loops, splits) if loop.level == level]
        for loop, count in level_loops:
            if loop.mapping == "row":
                _row_items(graph, emitter, loop, count, partials, plan)
            else:
                _column_items(graph, emitter, loop, count, partials, plan)
        body.line(f"fx_grid_sync();  // level {level}: every chunk's partials are in scratch")
        done = []
        for loop, count in level_loops:
            for name in loop.reductions:
                done += _combine(emitter, graph.nodes[name], loop, count, partials[name],
                                 values, derived[name], buffers, plan)
        stored.update(done)
        rest = [node for node in output_nodes if node.name not in stored]
        if level != levels[-1] or rest:
            body.line(f"fx_grid_sync();  // level {level}: its results are in scratch")
        # Later phases read these values from scratch instead of recomputing them.
        emitter.buffers.update({name: values[name] for name in done})
    if rest:
        elementwise_loops(emitter, rest, buffers, plan)
    emitter.buffers.clear()
    emitter.buffers.update(saved)


def _pointers(emitter: Elemental, offsets: dict[str, int], ctype_of, what: str) -> dict[str, str]:
    pointers = {}
    for name, offset in offsets.items():
        ctype = ctype_of(emitter.graph.nodes[name])
        pointer = emitter.fresh(f"{emitter.tag(name)}_{what}")
        emitter.body.line(f"{ctype}* {pointer} = reinterpret_cast<{ctype}*>("
                          f"{emitter.scratch} + {offset});", name)
        pointers[name] = pointer
    return pointers


def _accumulators(emitter: Elemental, nodes: list[Node]) -> list[tuple[Node, str, str, str,
                                                                     str]]:
    """(node, accumulator, its C type, the reducer's functor, its identity) per reduction,
    the accumulator declared at the identity."""
    out = []
    for node in nodes:
        ctype = accumulator_ctype(node)
        acc = emitter.fresh(f"{emitter.tag(node.name)}_acc")
        identity = reducer_identity(node.attrs["reducer"],
                                    accumulation_dtype(node.array_shape.dtype))
        emitter.body.line(f"{ctype} {acc} = {identity};", node.name)
        out.append((node, acc, ctype, reducer_functor(node.attrs["reducer"]), identity))
    return out


@contextmanager
def _item_loop(emitter: Elemental, loop: PhaseLoop, splits: int, unit: str, worker: str,
               workers: str) -> Iterator[None]:
    """The grid-stride loop over the loop's (unit, chunk) items, in a cache scope; `unit`,
    `chunk` and the chunk's bounds [chunk_start, chunk_end) are declared inside."""
    body = emitter.body
    size = -(-loop.length // splits)
    items = loop.units * splits
    body.line(f"// {', '.join(emitter.tag(n) for n in loop.reductions)}: {loop.units} "
              f"{loop.mapping} units x {splits} chunks of {size}")
    with body.block(f"for (int item = {worker}; item < {items}; item += {workers}) {{"), \
            emitter.scope():
        body.line(f"const int {unit} = item / {splits};")
        body.line(f"const int chunk = item % {splits};")
        body.line(f"const int chunk_start = chunk * {size};")
        body.line(f"const int chunk_end = min(chunk_start + {size}, {loop.length});")
        yield


def _row_items(graph: Graph, emitter: Elemental, loop: PhaseLoop, splits: int,
               partials: dict[str, str], plan: CodeGenPlan) -> None:
    """Each item's threads (a warp or the block) stride over the chunk of slot `r`'s reduced
    elements, combine with shuffles (then shared memory across warps) and write the partial."""
    body = emitter.body
    threads = loop.item_threads(plan.block_size)
    nodes = [graph.nodes[n] for n in loop.reductions]
    if threads == plan.block_size:
        worker, workers, t = emitter.block_index, emitter.grid_blocks, "threadIdx.x"
    else:
        per_block = plan.block_size // threads
        worker = f"{emitter.block_index} * {per_block} + threadIdx.x / {WARP}"
        workers, t = f"{emitter.grid_blocks} * {per_block}", f"threadIdx.x % {WARP}"
    with _item_loop(emitter, loop, splits, "r", worker, workers):
        body.line(f"const int t = {t};  // thread within the item")
        accumulators = _accumulators(emitter, nodes)
        step = f"for (int c = chunk_start + t; c < chunk_end; c += {threads}) {{"
        with body.block(step), emitter.scope():
            kept = emitter.delinearize(Ix.var("r", loop.slots), nodes[0].array_shape.dims)
            reduced = emitter.delinearize(Ix.var("c", loop.length),
                                          [loop.dims[d] for d in loop.reduced])
            _accumulate(emitter, accumulators,
                        emitter.reduce_operand_index(nodes[0], kept, reduced))
        for node, acc, _, functor, _ in accumulators:
            body.line(f"{acc} = fx_group_allreduce({acc}, {min(threads, WARP)}, {functor}());",
                      node.name)
        if threads > WARP:
            warps = threads // WARP
            _combine_in_shared(emitter, accumulators, warps, warps, f"t / {WARP}",
                               f"t % {WARP} == 0", "w", "t == 0")
        with body.block("if (t == 0) {"):
            for node, acc, *_ in accumulators:
                body.line(f"{partials[node.name]}[r * {splits} + chunk] = {acc};", node.name)


def _column_items(graph: Graph, emitter: Elemental, loop: PhaseLoop, splits: int,
                  partials: dict[str, str], plan: CodeGenPlan) -> None:
    """Each item's block owns a tile of `tile` virtual columns; thread (x, g) accumulates
    column vc = tile_index * tile + x over the chunk's virtual rows g, g + groups, ...; the
    row groups meet in shared memory and row group 0 writes the partials."""
    body = emitter.body
    tile, columns = loop.tile, loop.columns
    groups = plan.block_size // tile
    nodes = [graph.nodes[n] for n in loop.reductions]
    with _item_loop(emitter, loop, splits, "tile_index", emitter.block_index,
                    emitter.grid_blocks):
        body.line(f"const int x = threadIdx.x % {tile};  // virtual column within the tile")
        body.line(f"const int g = threadIdx.x / {tile};  // row group")
        body.line(f"const int vc = tile_index * {tile} + x;")
        accumulators = _accumulators(emitter, nodes)
        with body.block(f"if (vc < {columns}) {{"), emitter.scope():
            step = f"for (int j = chunk_start + g; j < chunk_end; j += {groups}) {{"
            with body.block(step), emitter.scope():
                _accumulate(emitter, accumulators, _column_index(emitter, loop))
        if groups > 1:
            _combine_in_shared(emitter, accumulators, plan.block_size, groups, "threadIdx.x",
                               None, f"w * {tile} + x", "g == 0")
        with body.block(f"if (g == 0 && vc < {columns}) {{"):
            for node, acc, *_ in accumulators:
                body.line(f"{partials[node.name]}[vc * {splits} + chunk] = {acc};", node.name)


def _column_index(emitter: Elemental, loop: PhaseLoop) -> Index:
    """The operand index of virtual column `vc` (the kept dims, then the folded ones) and
    virtual row `j` (the other reduced dims)."""
    kept = [d for d in range(len(loop.dims)) if d not in loop.reduced]
    column_dims = kept + list(loop.fold_dims)
    column = emitter.delinearize(Ix.var("vc", loop.columns), [loop.dims[d] for d in column_dims])
    row = emitter.delinearize(Ix.var("j", loop.length), [loop.dims[d] for d in loop.row_dims])
    index: list[Ix] = [Ix.const(0)] * len(loop.dims)
    for d, ix in zip(column_dims + list(loop.row_dims), column + row):
        index[d] = ix
    return tuple(index)


def _accumulate(emitter: Elemental, accumulators, index: Index) -> None:
    for node, acc, ctype, functor, _ in accumulators:
        x = emitter.value(node.operands[0], index)
        emitter.body.line(f"{acc} = {functor}()({acc}, {ctype}({x}));", node.name)


def _combine_in_shared(emitter: Elemental, accumulators, entries: int, parts: int,
                       slot: str, writer: str | None, reader: str, combiner: str) -> None:
    """The block's `parts` parts of each accumulator (a warp's or a row group's) meet in
    shared memory, in an array of `entries` per accumulator: each thread where `writer` holds
    (all when None) writes its accumulator at `slot`; the threads where `combiner` holds
    combine the parts in order, part w read at `reader`. A barrier follows, so the next item
    can reuse the memory."""
    body = emitter.body
    arrays = []
    for k, (node, acc, ctype, *_) in enumerate(accumulators):
        array = emitter.fresh(f"{emitter.tag(node.name)}_parts")
        body.line(f"{ctype}* {array} = reinterpret_cast<{ctype}*>(shared + {8 * entries * k});",
                  node.name)
        store = f"{array}[{slot}] = {acc};"
        body.line(store if writer is None else f"if ({writer}) {store}", node.name)
        arrays.append(array)
    body.line("__syncthreads();")
    with body.block(f"if ({combiner}) {{"):
        for (node, acc, _, functor, identity), array in zip(accumulators, arrays):
            body.line(f"{acc} = {identity};", node.name)
            body.line(f"for (int w = 0; w < {parts}; ++w) {acc} = {functor}()({acc}, "
                      f"{array}[{reader}]);", node.name)
    body.line("__syncthreads();  // the parts are reused by the next item")


def _combine(emitter: Elemental, node: Node, loop: PhaseLoop, splits: int, partials: str,
             values: dict[str, str], derived: list[str], outputs: dict[str, str],
             plan: CodeGenPlan) -> list[str]:
    """A warp per slot (a grid-stride loop over the slots): lane l combines the slot's
    partials l, l + 32, ... in order, the lanes combine with a shuffle tree, and lane 0
    finishes the reduction (the init value, the rounding) and writes its result to scratch,
    then the `derived` values at the slot's element that read the result only there (the
    others are computed where they are read), each to its output buffer too when it is an
    output. The values it wrote to scratch, the reduction first."""
    body = emitter.body
    per_slot = loop.fold * splits
    warps = plan.block_size // WARP
    start = f"{emitter.block_index} * {warps} + threadIdx.x / {WARP}"
    loop_line = (f"for (int s = {start}; s < {loop.slots}; s += {emitter.grid_blocks} * "
                 f"{warps}) {{")
    body.line(f"// {emitter.tag(node.name)}: a warp combines each slot's {per_slot} partials")
    with body.block(loop_line, node.name), emitter.scope():
        ((_, acc, ctype, functor, _),) = _accumulators(emitter, [node])
        body.line(f"for (int k = threadIdx.x % {WARP}; k < {per_slot}; k += {WARP}) "
                  f"{acc} = {functor}()({acc}, {partials}[s * {per_slot} + k]);", node.name)
        body.line(f"{acc} = fx_group_allreduce({acc}, {WARP}, {functor}());", node.name)
        with body.block(f"if (threadIdx.x % {WARP} == 0) {{"), emitter.scope():
            index = emitter.delinearize(Ix.var("s", loop.slots), node.array_shape.dims)
            finish_reduction(emitter, node, acc, index)
            done = [node.name] + [name for name in derived
                                  if _reads_its_slot_only(emitter, name, node.name, loop)]
            for name in done:
                target = emitter.graph.nodes[name]
                at = emitter.delinearize(Ix.var("s", loop.slots), target.array_shape.dims)
                emitter.store(target, values[name], at)
                if name in outputs:
                    emitter.store(target, outputs[name], at)
    return done


def _reads_its_slot_only(emitter: Elemental, name: str, reduction: str,
                         loop: PhaseLoop) -> bool:
    """Whether value `name` at the combined slot's element reads `reduction` only at that
    slot, whose value the cache holds: a dry run with the reduction among the buffers loads
    nothing of it. (Another slot's result is not in scratch until the barrier.)"""
    dims = emitter.graph.nodes[name].array_shape.dims
    emitter.buffers[reduction] = "unused"  # a miss is then a logged load, not a recomputation
    try:
        with emitter.dry_run() as loads:
            emitter.value(name, emitter.delinearize(Ix.var("s", loop.slots), dims))
    finally:
        del emitter.buffers[reduction]
    return all(node != reduction for node, _ in loads)


# -- its workload (what the projected model prices) ------------------------------------------------


def count(graph: Graph, kernel: Kernel, plan: CodeGenPlan, counter: Counter) -> None:
    """The loops of `emit`. Per level: each loop over work items reads its operands once,
    coalesced or not as its mapping walks them (`PhaseLoop.axis`), reads the earlier levels'
    results from scratch, combines each item's threads (shuffles, block barriers) and writes
    a partial per slot or virtual column and chunk; a grid barrier; a warp per slot combines
    the slot's partials into the result in scratch, with the values derived from it
    (`derived_values`: the emitter stores those that read the result only at its slot, which
    the model takes to be all); a grid barrier (none after the last level when no output is
    left). Then the other outputs' elementwise loops."""
    w, outputs = counter.w, counter.outputs
    shuffle_latency, barrier_latency = counter.shuffle_latency, counter.barrier_latency
    found = counter.memo.get("phases")
    if found is None:  # the kernel's, whatever the launch
        found = counter.memo["phases"] = _phased_analysis(graph, kernel, outputs)
    levels, rest, rest_sizes = found
    block, grid = plan.block_size, plan.grid_size
    steps = int(math.log2(WARP))
    known: frozenset[str] = frozenset()
    lsu = 0.0
    for k, (level_loops, level_known) in enumerate(levels):
        for loop, operands, elements, _ in level_loops:
            splits = loop.splits(grid, block)
            threads = loop.item_threads(block)
            items = loop.units * splits
            per_worker = ceil_div(items, grid * (block // threads))
            counter.loop(Loop(elements=elements, targets=operands,
                               axes=dict.fromkeys(operands, loop.axis), known=known,
                               per_thread=per_worker * ceil_div(ceil_div(loop.length, splits),
                                                             loop.sharing(block))))
            result_reads(counter, operands, known, elements)
            reductions = len(loop.reductions)
            # The item's parts (warps of a row item, row groups of a column item) meet in
            # shared memory: `entries` accumulators written, then read, per reduction.
            if loop.mapping == "row":
                w.instructions["shfl"] = w.instructions.get("shfl", 0) + \
                    items * threads * steps * reductions
                w.sync_cycles_per_thread += per_worker * steps * shuffle_latency * reductions
                parts = entries = threads // WARP
            else:
                parts, entries = block // loop.tile, block
            if parts > 1:
                w.barriers_per_block += 2 * per_worker
                w.sync_cycles_per_thread += 2 * per_worker * barrier_latency
                w.shared_traffic_bytes += items * entries * 8 * reductions * 2
                lsu += items * entries * reductions * 2
            # Partials (like results and derived values) are read back within the launch:
            # L2 traffic, written back to DRAM only on eviction.
            partial_bytes = loop.columns * splits * 8 * reductions
            lsu += partial_bytes / 8
            w.l2_bytes += partial_bytes
        w.grid_syncs += 1
        for loop, _, _, results in level_loops:
            lsu += _phased_combine(loop, loop.splits(grid, block), results, plan, counter,
                                   shuffle_latency)
        if k != len(levels) - 1 or rest:
            w.grid_syncs += 1
        known = level_known
    w.instructions["lsu"] = w.instructions.get("lsu", 0) + lsu
    if rest:
        counter.elementwise(plan, rest, known=known, vector=plan.vector_width)
        for size, group in rest_sizes:
            result_reads(counter, group, known, size)


def _phased_analysis(graph, kernel, outputs) -> tuple:
    """What `count` reads of a kernel whatever the launch: per level, its loops (each
    with the operands it reads, its elements and, per reduction, the bytes of the result and
    its derived values and how many stores its combine makes) and the values known after it;
    the outputs left to elementwise loops, and their names by size."""
    loops = phase_loops(graph, kernel)
    derived = derived_values(graph, kernel, loops)
    outputs_of_kernel = set(kernel.outputs)
    levels, known = [], frozenset()
    for level in sorted({loop.level for loop in loops}):
        level_loops = []
        for loop in loops:
            if loop.level != level:
                continue
            operands = list(dict.fromkeys(graph.nodes[n].operands[0] for n in loop.reductions))
            results = []
            for name in loop.reductions:
                stores = [graph.nodes[n] for n in (name, *derived[name])]
                result_bytes = sum(n.array_shape.size * max(1, n.array_shape.dtype.bits // 8)
                                   for n in stores)
                results.append((result_bytes,
                                sum(1 + (n.name in outputs_of_kernel) for n in stores)))
            level_loops.append((loop, operands, math.prod(loop.dims), results))
        known = known | {name for loop, *_ in level_loops for reduction in loop.reductions
                         for name in (reduction, *derived[reduction])}
        levels.append((level_loops, known))
    rest = [n for n in outputs if n.name not in known]   # known at last: all it stores
    sizes: dict[int, list[str]] = {}
    for node in rest:
        sizes.setdefault(node.array_shape.size, []).append(node.name)
    return levels, rest, list(sizes.items())


def _phased_combine(loop, splits, results, plan, counter, shuffle_latency) -> float:
    """A warp per slot combines the slot's fold x splits partials (from L2), shuffles, and
    lane 0 writes the result and its derived values to scratch (and to outputs); the load
    and store instructions. `results`: per reduction of the loop, the bytes of its result and
    derived values and the stores they take (`_phased_analysis`)."""
    w, device = counter.w, counter.device
    per_slot = loop.fold * splits
    warps = plan.grid_size * plan.block_size // WARP
    rounds = ceil_div(loop.slots, warps)
    loads = ceil_div(per_slot, WARP)
    steps = int(math.log2(WARP))
    lsu = 0.0
    for result_bytes, store_count in results:
        lsu += loop.slots * (per_slot + store_count)
        w.instructions["shfl"] = w.instructions.get("shfl", 0) + loop.slots * WARP * steps
        w.l2_bytes += loop.slots * per_slot * 8 + result_bytes
        w.iterations_per_thread += rounds * loads
        w.latency_cycles_per_thread += rounds * (
            loads / min(UNROLL, loads) * device.l2_hit_latency_cycles +
            loads * device.fp32_fma_latency_cycles)
        w.sync_cycles_per_thread += rounds * steps * shuffle_latency
    return lsu
