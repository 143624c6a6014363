"""Task splitting: few long rows, or few columns over many rows, cut across blocks.

A row schedule gives a long row one block, a column schedule gives 32 columns one block: with
4 rows of a million elements, or a [65536, 8] -> [8] sum, most SMs of a big GPU idle. Here each
row (each column's reduced elements, its "rows") is cut into `plan.splits` chunks of
ceil(length / splits) elements, and a grid-stride loop hands the work items (slot, chunk) to
the blocks, a slot being a row or a tile of `column_tile` columns. A block reduces its item's
chunk like the unsplit schedule reduces a whole row or tile (the row code is loops.py's
`row_partial`, with the chunk's bounds) and writes one partial per reduction and row (column)
to the global scratch buffer, at [slot][chunk] in the accumulation type. The partials are then combined
in chunk order, so results do not depend on which block finished first:

- Tickets (single-phase kernels whose outputs as wide as the operand read no reduction, and
  every column split; a normal launch, any grid): after its partials, a block runs
  `__threadfence()` and takes a ticket with `atomicAdd` on its slot's counter in scratch; the
  block drawing the last ticket (`splits - 1`) fences again, combines the partials, applies
  the init value, writes the outputs of the reduction's size and puts the counter back to 0,
  so the next launch on the same scratch (timing loops) starts clean. Wide outputs that read
  no reduction are written in the chunk loop.
- Grid barriers (row kernels with chained reductions, as softmax's max then sum of
  exp(x - max), or wide outputs reading a reduction: they need every chunk's partials in
  every block): a cooperative launch, in the cooperative grid sizes (`cooperative_grids`;
  the projected model refuses a grid its device cannot hold all at once). Phase k is one
  loop over the items: each combines the partials of the earlier phases' reductions of its
  row, then reduces its chunk for phase k's reductions and writes their partials;
  `fx_grid_sync()` follows every phase, outside the item loop, so every thread reaches each
  barrier once. A last loop over the items combines everything and writes the outputs: the
  wide ones over its chunk, the row-sized ones from chunk 0.

Partials are read through `volatile` pointers: in the ticket scheme another block wrote them
during this launch, and a volatile load is not served from a stale L1 line. Outputs of other
sizes (`candidates` only splits when they read none of the split reductions) get the elementwise
loops after the items.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from compiler.codegen.c_syntax import reducer_functor, reducer_identity
from compiler.codegen.elemental import Elemental
from compiler.codegen.indexing import Index, Ix
from compiler.codegen.loops import (accumulate_columns, accumulator_ctype, elementwise_loops,
                                    finish_reduction, row_partial, split_index)
from compiler.codegen.plan import (COOPERATIVE_GRIDS, SPLIT_SCHEDULES, WARP, CodeGenPlan,
                                   column_reductions, column_split, cooperative_grids,
                                   global_reductions, next_power_of_two, reduction_depths,
                                   row_split)
from compiler.codegen.schedules import columns, rows
from compiler.codegen.workload import Counter
from compiler.ir.dtypes import accumulation_dtype
from compiler.ir.graph import Graph, Node
from compiler.kernels.plan import Kernel

SCHEDULES = SPLIT_SCHEDULES

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
    order = graph.positions()
    return sorted(names, key=order.__getitem__)


def split_scratch(reductions: int, slots: int, splits: int,
                  tickets: int) -> tuple[list[int], int, int]:
    """A split plan's scratch: each reduction's partials ([slot][chunk], 8 bytes apiece
    whatever the accumulator type), then `tickets` unsigned counters; (the partials' byte
    offsets, the tickets' offset, the total), every part 16-byte aligned."""
    part = -(-slots * splits * 8 // 16) * 16
    offsets = [k * part for k in range(reductions)]
    total = reductions * part + -(-tickets * 4 // 16) * 16
    return offsets, reductions * part, max(total, 16)


def candidates(graph: Graph, kernel: Kernel, dominant: str) -> list[CodeGenPlan]:
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
        slots = -(-columns[0] // min(WARP, next_power_of_two(columns[0])))
        wide_size = graph.nodes[graph.nodes[dominant].operands[0]].array_shape.size
        schedule, narrow_size = "column-reduce-split", columns[0]
    else:
        return []
    if slots > SPLIT_MAX_SLOTS or length < SPLIT_MIN_LENGTH:
        return []
    reductions = split_reductions(graph, kernel, schedule, dominant)
    depth = reduction_depths(graph, kernel, reductions)
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
        for splits in SPLIT_COUNTS:
            items = rows * splits
            if -(-length // splits) < block or items > SPLIT_MAX_ITEMS:
                continue
            scratch = split_scratch(reductions, rows, splits, 0 if cooperative else rows)[2]
            shared = 8 * (block // WARP) * reductions + (0 if cooperative else 16)
            for grid in cooperative_grids(items, block) if cooperative else [items]:
                plans.append(CodeGenPlan(
                    schedule="row-reduce-split", dominant=dominant, block_size=block,
                    grid_size=grid, threads_per_row=block, rows_per_block=1,
                    shared_bytes=shared, rows=rows, row_length=length,
                    cooperative=cooperative, scratch_bytes=scratch, splits=splits))
    return plans


def _column_split_plans(dominant: str, columns: int, length: int,
                        reductions: int) -> list[CodeGenPlan]:
    tile = min(WARP, next_power_of_two(columns))
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


def choose(plans: list[CodeGenPlan]) -> CodeGenPlan | None:
    """The split plan the heuristic prefers, or None to fall through to the others.

    Split candidates exist only where the unsplit schedule leaves most SMs idle; of them:
    - none when fewer than SPLIT_MIN_ELEMENTS elements are reduced in all (launch-bound);
    - 256 threads, and the most splits that still give each thread at least 4 elements of its
      chunk (a row's chunk over the block; a column's chunk over the row groups) and keep
      the work items within 2 blocks per SM of a 132-SM GPU (a cooperative plan: within its
      grid, so each phase is one round of work items, of at most COOPERATIVE_GRIDS[0]
      blocks, one per SM of the smallest GPU: co-resident on any).
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
        if p.cooperative and p.grid_size > COOPERATIVE_GRIDS[0]:
            return False
        limit = p.grid_size if p.cooperative else 2 * SPLIT_SMS
        return -(-length // p.splits) >= 4 * threads and slots * p.splits <= limit

    first = split[0]
    outputs = first.rows if first.schedule == "row-reduce-split" else first.columns
    if outputs * first.row_length < SPLIT_MIN_ELEMENTS:
        return None
    return max((p for p in split if fits(p)), key=lambda p: p.splits, default=None)


# -- emission --------------------------------------------------------------------------------


# Names every split kernel declares (the elemental emitter must not reuse them).
_NAMES = {"shared", "t", "row_slot", "r", "c", "w", "x", "g", "col", "j", "tile_index", "item",
          "chunk", "chunk_start", "chunk_end", "tickets", "is_last"}


def emit(graph: Graph, kernel: Kernel, emitter: Elemental, output_nodes: list[Node],
               buffers: dict[str, str], plan: CodeGenPlan) -> None:
    emitter.used_names.update(_NAMES)
    emitter.body.line("FX_SHARED_MEMORY(shared);")
    if plan.schedule == "row-reduce-split":
        _split_rows(graph, kernel, emitter, output_nodes, buffers, plan)
    else:
        _split_columns(graph, kernel, emitter, output_nodes, buffers, plan)


# -- shared by both ----------------------------------------------------------------------------


def _partial_pointers(emitter: Elemental, reductions: list[Node], slots: int, splits: int,
                      tickets: int) -> dict[str, str]:
    """{reduction: a volatile pointer to its partials in scratch}; declares `tickets` too when
    the plan takes them (the layout is `split_scratch`'s)."""
    offsets, ticket_offset, _ = split_scratch(len(reductions), slots, splits, tickets)
    pointers = {}
    emitter.body.line(f"// scratch: each reduction's partials [slot][chunk] ({splits} chunks)")
    for node, offset in zip(reductions, offsets):
        ctype = f"volatile {accumulator_ctype(node)}"
        pointer = emitter.fresh(f"{emitter.tag(node.name)}_partials")
        emitter.body.line(f"{ctype}* {pointer} = reinterpret_cast<{ctype}*>({emitter.scratch} + "
                          f"{offset});", node.name)
        pointers[node.name] = pointer
    if tickets:
        emitter.body.line(f"unsigned* tickets = reinterpret_cast<unsigned*>({emitter.scratch} + "
                          f"{ticket_offset});  // one counter per slot, 0 between launches")
    return pointers


@contextmanager
def _work_items(emitter: Elemental, plan: CodeGenPlan, slot: str, slots: int,
                length: int) -> Iterator[None]:
    """A grid-stride loop over the (slot, chunk) items; `slot`, `chunk` and the chunk's
    bounds [chunk_start, chunk_end) are declared inside."""
    body, splits = emitter.body, plan.splits
    size = -(-length // splits)
    loop = (f"for (int item = {emitter.block_index}; item < {slots * splits}; "
            f"item += {emitter.grid_blocks}) {{")
    with body.block(loop), emitter.scope():
        body.line(f"const int {slot} = item / {splits};")
        body.line(f"const int chunk = item % {splits};")
        body.line(f"const int chunk_start = chunk * {size};")
        body.line(f"const int chunk_end = min(chunk_start + {size}, {length});")
        yield


def _write_partials(emitter: Elemental, accumulators: list[tuple[Node, str]],
                    pointers: dict[str, str], slot: str, splits: int, condition: str) -> None:
    with emitter.body.block(f"if ({condition}) {{"):
        for node, acc in accumulators:
            emitter.body.line(f"{pointers[node.name]}[{slot} * {splits} + chunk] = {acc};",
                              node.name)


def _combine(emitter: Elemental, node: Node, pointer: str, slot: str, splits: int,
             index: Index) -> str:
    """The reduce's value at `slot` from its partials, combined in chunk order."""
    ctype = accumulator_ctype(node)
    identity = reducer_identity(node.attrs["reducer"], accumulation_dtype(node.array_shape.dtype))
    functor = reducer_functor(node.attrs["reducer"])
    acc = emitter.fresh(f"{emitter.tag(node.name)}_total")
    k = emitter.fresh("k")
    emitter.body.line(f"{ctype} {acc} = {identity};", node.name)
    emitter.body.line(f"for (int {k} = 0; {k} < {splits}; ++{k}) {acc} = {functor}()({acc}, "
                      f"{ctype}({pointer}[{slot} * {splits} + {k}]));", node.name)
    return finish_reduction(emitter, node, acc, index)


@contextmanager
def _last_block(emitter: Elemental, slot: str, splits: int) -> Iterator[None]:
    """The ticket: the body runs in the block that finishes the slot's last chunk."""
    body = emitter.body
    body.line("__threadfence();  // the partials reach every SM before the ticket")
    body.line("__syncthreads();")
    body.line(f"if (threadIdx.x == 0) is_last[0] = atomicAdd(&tickets[{slot}], 1u) == "
              f"{splits - 1}u;")
    body.line("__syncthreads();")
    with body.block("if (is_last[0]) {  // every chunk of the slot is in scratch"), \
            emitter.scope():
        body.line("__threadfence();")
        yield
        body.line(f"if (threadIdx.x == 0) tickets[{slot}] = 0u;  // clean for the next launch")


# -- rows -------------------------------------------------------------------------------------


def _split_rows(graph: Graph, kernel: Kernel, emitter: Elemental, output_nodes: list[Node],
                buffers: dict[str, str], plan: CodeGenPlan) -> None:
    body = emitter.body
    rows, length, splits = plan.rows, plan.row_length, plan.splits
    names = split_reductions(graph, kernel, plan.schedule, plan.dominant)
    reductions = [graph.nodes[n] for n in names]
    depth = reduction_depths(graph, kernel, names)
    phases = [[n for n in reductions if depth[n.name] == level]
              for level in range(1, max(depth[n] for n in names) + 1)]
    wide = [n for n in output_nodes if n.array_shape.size == rows * length]
    narrow = [n for n in output_nodes if n.array_shape.size == rows and n not in wide]
    others = [n for n in output_nodes if n not in wide and n not in narrow]
    pointers = _partial_pointers(emitter, reductions, rows, splits,
                                 0 if plan.cooperative else rows)
    body.line("const int t = threadIdx.x;  // thread within the row")
    body.line("const int row_slot = 0;  // a block works on one row at a time")
    row_ix, column_ix = Ix.var("r", rows), Ix.var("c", length)
    bounds = ("chunk_start", "chunk_end")
    shared_offset = 0

    def combine_rows(nodes: list[Node]) -> None:
        for node in nodes:
            _combine(emitter, node, pointers[node.name], "r", splits,
                     emitter.delinearize(row_ix, node.array_shape.dims))

    def reduce_chunk(nodes: list[Node]) -> None:
        nonlocal shared_offset
        accumulators = []
        for node in nodes:
            acc, shared_offset = row_partial(graph, emitter, node, plan, row_ix, column_ix,
                                              shared_offset, bounds)
            accumulators.append((node, acc))
        _write_partials(emitter, accumulators, pointers, "r", splits, "t == 0")

    def write_wide() -> None:
        if not wide:
            return
        loop = f"for (int c = chunk_start + t; c < chunk_end; c += {plan.block_size}) {{"
        with body.block(loop), emitter.scope():
            for node in wide:
                index = split_index(emitter, node.array_shape.dims, rows, row_ix, column_ix)
                emitter.store(node, buffers[node.name], index)

    def write_narrow(condition: str) -> None:
        with body.block(f"if ({condition}) {{"), emitter.scope():
            if not plan.cooperative:
                combine_rows(reductions)
            for node in narrow:
                emitter.store(node, buffers[node.name],
                              emitter.delinearize(row_ix, node.array_shape.dims))

    if plan.cooperative:
        for level, phase in enumerate(phases):
            with _work_items(emitter, plan, "r", rows, length):
                combine_rows([n for earlier in phases[:level] for n in earlier])
                reduce_chunk(phase)
            body.line(f"fx_grid_sync();  // every chunk's partials of phase {level + 1} are in "
                      f"scratch")
        with _work_items(emitter, plan, "r", rows, length):
            combine_rows(reductions)
            write_wide()
            if narrow:
                write_narrow("chunk == 0 && t == 0")
    else:
        body.line(f"unsigned* is_last = reinterpret_cast<unsigned*>(shared + "
                  f"{8 * (plan.block_size // WARP) * len(reductions)});")
        with _work_items(emitter, plan, "r", rows, length):
            reduce_chunk(reductions)
            write_wide()
            with _last_block(emitter, "r", splits):
                write_narrow("t == 0")
    if others:
        elementwise_loops(emitter, others, buffers, plan)


# -- columns ----------------------------------------------------------------------------------


def _split_columns(graph: Graph, kernel: Kernel, emitter: Elemental,
                   output_nodes: list[Node], buffers: dict[str, str],
                   plan: CodeGenPlan) -> None:
    """`columns.emit_columns`' loop over a chunk of the rows per work item; then the ticket."""
    body = emitter.body
    columns, length = column_split(graph, plan.dominant)
    tile, splits = plan.column_tile, plan.splits
    groups = plan.block_size // tile
    tiles = -(-columns // tile)
    dominant = graph.nodes[plan.dominant]
    reductions = [graph.nodes[n]
                  for n in split_reductions(graph, kernel, plan.schedule, plan.dominant)]
    source = graph.nodes[dominant.operands[0]].array_shape
    reduced_dims = sorted(dominant.attrs["dimensions"])
    kept_dims = [n for d, n in enumerate(source.dims) if d not in reduced_dims]
    depth = reduction_depths(graph, kernel, [n.name for n in reductions])
    wide = [n for n in output_nodes if n.array_shape.dims == source.dims
            and depth.get(n.name, 0) == 0]
    narrow = [n for n in output_nodes if n.array_shape.size == columns and n not in wide]
    others = [n for n in output_nodes if n not in wide and n not in narrow]
    pointers = _partial_pointers(emitter, reductions, columns, splits, tiles)
    shared_partials = 8 * plan.block_size * len(reductions) if groups > 1 else 0
    body.line(f"unsigned* is_last = reinterpret_cast<unsigned*>(shared + {shared_partials});")
    body.line(f"const int x = threadIdx.x % {tile};  // column within the tile")
    body.line(f"const int g = threadIdx.x / {tile};  // row group")
    column_ix, row_ix = Ix.var("col", columns), Ix.var("j", length)
    with _work_items(emitter, plan, "tile_index", tiles, length):
        body.line(f"const int col = tile_index * {tile} + x;")
        accumulators = []
        for node in reductions:
            acc = emitter.fresh(f"{emitter.tag(node.name)}_acc")
            identity = reducer_identity(node.attrs["reducer"],
                                        accumulation_dtype(node.array_shape.dtype))
            body.line(f"{accumulator_ctype(node)} {acc} = {identity};", node.name)
            accumulators.append((node, acc))
        with body.block(f"if (col < {columns}) {{"), emitter.scope():
            accumulate_columns(emitter, dominant, kept_dims,
                               [source.dims[d] for d in reduced_dims], column_ix, row_ix,
                               accumulators, wide, buffers,
                               f"for (int j = chunk_start + g; j < chunk_end; j += {groups}) {{")
        if groups > 1:
            _combine_row_groups(emitter, accumulators, plan.block_size, tile, groups)
        _write_partials(emitter, accumulators, pointers, "col", splits,
                        f"g == 0 && col < {columns}")
        with _last_block(emitter, "tile_index", splits):
            with body.block(f"if (g == 0 && col < {columns}) {{"), emitter.scope():
                for node in reductions:
                    _combine(emitter, node, pointers[node.name], "col", splits,
                             emitter.delinearize(column_ix, node.array_shape.dims))
                for node in narrow:
                    emitter.store(node, buffers[node.name],
                                  emitter.delinearize(column_ix, node.array_shape.dims))
    if others:
        elementwise_loops(emitter, others, buffers, plan)


def _combine_row_groups(emitter: Elemental, accumulators: list[tuple[Node, str]], block: int,
                        tile: int, groups: int) -> None:
    """Row group 0 ends with the block's partial of each column (in row-group order)."""
    body = emitter.body
    partials = []
    for k, (node, acc) in enumerate(accumulators):
        ctype = accumulator_ctype(node)
        partial = emitter.fresh(f"{emitter.tag(node.name)}_groups")
        body.line(f"{ctype}* {partial} = reinterpret_cast<{ctype}*>(shared + {8 * block * k});",
                  node.name)
        body.line(f"{partial}[threadIdx.x] = {acc};", node.name)
        partials.append(partial)
    body.line("__syncthreads();")
    with body.block("if (g == 0) {"):
        for (node, acc), partial in zip(accumulators, partials):
            functor = reducer_functor(node.attrs["reducer"])
            body.line(f"for (int w = 1; w < {groups}; ++w) {acc} = {functor}()({acc}, "
                      f"{partial}[w * {tile} + x]);", node.name)
    body.line("__syncthreads();  // the partials are reused by the next item")


# -- its workload (what the projected model prices) ------------------------------------------------


def count(graph: Graph, kernel: Kernel, plan: CodeGenPlan, counter: Counter) -> None:
    """The loops of `emit`: a row plan's are the row schedule's over chunks of the rows
    (rows.count), a column plan's the column schedule's over chunks of the columns
    (columns.count); both count the partials each chunk writes and reads back."""
    if plan.schedule == "row-reduce-split":
        rows.count(graph, kernel, plan, counter)
    else:
        columns.count(graph, kernel, plan, counter)
