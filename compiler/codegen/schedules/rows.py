"""The row schedules: "row-reduce-warp", "row-reduce-multirow" and "row-reduce-block".

For kernels whose dominant reduction's reduced dimensions are innermost (one row per output
element). `threads_per_row` threads (32, fewer than 32 for short rows with several rows per
warp, or the whole block) stride over a row, combine with warp shuffles and, across warps,
shared memory. Every reduction of the kernel over the same rows is one phase; its result is
known to all threads of the row, so later phases and the elementwise epilogue over the row
read it (regional stitching): used for `input` and `stitch-regional` kernels alike. Values of
the same rows but another length (a slice of half of each row, the row concatenated with
itself; RoPE's halves of a normalised row, negated and joined, within the row's columns)
read the results all the same: the row's threads write such outputs in a loop over their
own columns after the wide one, and the elemental emitter reaches the row's results through
slices, concatenates and reshapes at the row's index (`indexing.reshape_index`).

Row cache. Each loop over the row recomputes what it needs from global memory unless the plan
has a `row_cache` (AStitch's value cache; the register-resident rows of Apex's and OneFlow's
softmax and layer norm): with each thread holding K = ceil(row_length / threads_per_row) <=
ROW_CACHE_MAX elements of its row, every loop is unrolled over k < K (column t + k *
threads_per_row), and a value that a later loop reads (`row_cache_reads`: x in softmax's max
phase, exp(x - max) in its sum phase) is kept in a K-element local array, constant-indexed
after unrolling so it stays in registers: each value is computed, and each input element
loaded, once per row.

Global stitching (a `stitch-global` kernel with a row schedule whose kernel also reduces over
the rows, as layer norm's backward pass sums gamma's and beta's gradients over the batch):
`cooperative` plans. Phase 1 is the row schedule; it writes each row reduction's result to a
global scratch buffer. `fx_grid_sync()`; phase 2 is the column schedule over the column
reductions (schedules/columns.py), reading the row results from scratch instead of
recomputing them. Both phases are grid-stride loops, so any grid is right: the plans come in
the cooperative grid sizes (`plan.cooperative_grids`), and the projected model refuses one
whose blocks its device cannot hold all at once.
"""

from __future__ import annotations

import math
from dataclasses import replace

from compiler.codegen.elemental import Elemental
from compiler.codegen.indexing import Ix
from compiler.codegen.loops import (RowCache, depends_on, elementwise_loops, row_columns,
                                    row_phase, scratch_pointers, split_index)
from compiler.codegen.plan import (BLOCK_SIZES, MAX_GRID, ROW_CACHE_MAX, ROW_SCHEDULES,
                                   SPLIT_SCHEDULES, WARP, CodeGenPlan, column_split,
                                   cooperative_grids, global_reductions,
                                   next_power_of_two, row_cache_reads, row_loop_outputs,
                                   row_reductions, row_split, row_values)
from compiler.codegen.schedules.columns import count_columns, emit_columns
from compiler.codegen.workload import Counter, Loop, ceil_div, loop_targets
from compiler.ir.graph import Graph, Node
from compiler.kernels.plan import Kernel

SCHEDULES = ROW_SCHEDULES
REDUCING_KINDS = ("input", "stitch-regional", "stitch-global")


def candidates(graph: Graph, kernel: Kernel, dominant: str) -> list[CodeGenPlan]:
    """For a kernel whose dominant reduction is over rows: every block size with a block per
    row and a warp per row (and several rows per warp when rows are shorter than a warp),
    globally stitched where the kernel needs it, then those with a row cache."""
    split = row_split(graph, dominant) if kernel.kind in REDUCING_KINDS else None
    if split is None:
        return []
    rows, length = split
    stitched = _global_phase(graph, kernel)
    plans = []
    for block in BLOCK_SIZES:
        options = [("row-reduce-block", block), ("row-reduce-warp", WARP)]
        if length < WARP:
            options.append(("row-reduce-multirow", max(2, next_power_of_two(length))))
        for schedule, threads in options:
            per_block = block // threads
            plan = CodeGenPlan(
                schedule=schedule, dominant=dominant, block_size=block,
                grid_size=max(1, min(MAX_GRID, -(-rows // per_block))),
                threads_per_row=threads, rows_per_block=per_block,
                shared_bytes=_row_shared_bytes(graph, kernel, per_block, threads),
                rows=rows, row_length=length)
            plans.extend(_globally_stitched(plan, stitched))
    return plans + _row_cached_plans(graph, kernel, plans)


def choose(plans: list[CodeGenPlan]) -> CodeGenPlan | None:
    """Rows shorter than a warp: several rows per warp (threads_per_row = next power of two of
    the row length), 256 threads; rows up to 1024 elements: a warp per row, 256 threads (8
    rows per block: no shared memory, no __syncthreads); longer rows: a block per row, with
    enough threads for about 8 elements each (128 to 1024). With its row cache when it has
    one (no value read twice from memory, none computed twice)."""
    rows = [p for p in plans if p.schedule in ROW_SCHEDULES]
    if not rows:
        return None
    length = rows[0].row_length
    if length < WARP and any(p.schedule == "row-reduce-multirow" for p in rows):
        wanted, block = "row-reduce-multirow", 256
    elif length <= 1024:
        wanted, block = "row-reduce-warp", 256
    else:
        wanted = "row-reduce-block"
        block = min(1024, max(128, next_power_of_two(-(-length // 8))))
    return max((p for p in rows if p.schedule == wanted and p.block_size == block),
               key=lambda p: p.row_cache)


def _row_shared_bytes(graph: Graph, kernel: Kernel, rows_per_block: int,
                      threads_per_row: int) -> int:
    """8 bytes per warp of a row per row reduction (per-warp partials), 0 within a warp."""
    if threads_per_row <= WARP:
        return 0
    reductions = sum(1 for name in kernel.computed if graph.nodes[name].op == "reduce")
    return 8 * rows_per_block * (threads_per_row // WARP) * reductions


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


def _global_phase(graph: Graph, kernel: Kernel) -> tuple[int, int, int, int] | None:
    """When the kernel needs a column phase behind a grid barrier (`global_reductions`): its
    reductions' count, columns and column tile, and the scratch bytes the row results take;
    else None. The kernel's, whatever the launch."""
    second = global_reductions(graph, kernel)
    if not second:
        return None
    columns, _ = column_split(graph, second[0])
    tile = min(WARP, next_power_of_two(columns))
    row_results = [n for n in kernel.computed if row_split(graph, n) is not None]
    scratch = sum(-(-graph.nodes[n].array_shape.size * graph.nodes[n].array_shape.dtype.bits
                    // 8 // 16) * 16 for n in row_results)
    return len(second), columns, tile, scratch


def _globally_stitched(plan: CodeGenPlan, stitched: tuple[int, int, int, int] | None
                       ) -> list[CodeGenPlan]:
    """`plan`, or when the kernel needs a column phase behind a grid barrier (`stitched`, from
    `_global_phase`), `plan` with one in each cooperative grid size."""
    if stitched is None:
        return [plan]
    count, columns, tile, scratch = stitched
    column_shared = 8 * plan.block_size * count if plan.block_size > tile else 0
    return [replace(plan, grid_size=grid, cooperative=True, columns=columns, column_tile=tile,
                    scratch_bytes=max(scratch, 16),
                    shared_bytes=max(plan.shared_bytes, column_shared))
            for grid in cooperative_grids(plan.grid_size, plan.block_size)]


def emit(graph: Graph, kernel: Kernel, emitter: Elemental, output_nodes: list[Node],
         buffers: dict[str, str], plan: CodeGenPlan) -> None:
    """One row per `threads_per_row` threads, several rows per block when they are short.

    For each reduction over the same rows, in graph order (a phase): the row's threads stride
    over its columns accumulating in the accumulation type, combine with shuffles within a
    warp and through shared memory across warps, and all end with the result, which later
    phases and the epilogue find in the value cache at the row's index, with the values of
    one element per row computed from them once (`plan.row_values`). Then the epilogue
    writes the outputs with the reduction's input size (per column), those of the same rows
    and another length that read the results (a loop over their own columns per length),
    and those with its output size (one thread per row): `plan.row_loop_outputs`. Outputs of
    other sizes get grid-stride loops after the row loop.
    With a `row_cache`, the loops over the row share values through registers (`RowCache`).
    """
    body = emitter.body
    rows, length = plan.rows, plan.row_length
    threads, per_block = plan.threads_per_row, plan.rows_per_block
    reductions = [graph.nodes[n] for n in row_reductions(graph, kernel, rows, length)]
    second = global_reductions(graph, kernel) if plan.cooperative else []
    scratch = scratch_pointers(graph, emitter, reductions) if second else {}
    if second:
        late = {n.name for n in output_nodes if depends_on(graph, n.name, set(second),
                                                            set(kernel.computed))}
        output_nodes, phase2 = ([n for n in output_nodes if n.name not in late],
                                [n for n in output_nodes if n.name in late])
    warps_per_row = threads // WARP
    if warps_per_row > 1 or second:
        body.line("FX_SHARED_MEMORY(shared);")
    body.line(f"const int t = threadIdx.x % {threads};  // thread within the row")
    body.line(f"const int row_slot = threadIdx.x / {threads};")
    emitter.used_names.update({"t", "row_slot", "r", "row_base", "c", "shared", "w"})
    row_ix, column_ix = Ix.var("r", rows), Ix.var("c", length)
    shared_offset = 0
    loop = (f"for (int row_base = {emitter.block_index} * {per_block}; row_base < {rows}; "
            f"row_base += {emitter.grid_blocks} * {per_block}) {{")
    wide, lengths, narrow, others = row_loop_outputs(graph, kernel, output_nodes, rows, length)
    with body.block(loop), emitter.scope():
        body.line("const int r = row_base + row_slot;")
        cache = RowCache(emitter, plan, row_cache_reads(
            graph, kernel, [n.name for n in reductions], [n.name for n in wide])) \
            if plan.row_cache else None
        for node in reductions:
            shared_offset = row_phase(graph, emitter, node, plan, row_ix, column_ix,
                                       shared_offset, cache)
        written = [*wide, *(n for nodes in lengths.values() for n in nodes), *narrow]
        if written or scratch:
            with body.block(f"if (r < {rows}) {{"), emitter.scope():
                for name in row_values(graph, kernel, [n.name for n in reductions],
                                       [n.name for n in written]):
                    emitter.value(name, emitter.delinearize(row_ix,
                                                            graph.nodes[name].array_shape.dims))
                if wide:
                    with row_columns(emitter, plan, None, cache):
                        for node in wide:
                            index = split_index(emitter, node.array_shape.dims, rows, row_ix,
                                                 column_ix)
                            emitter.store(node, buffers[node.name], index)
                for other_length, nodes in lengths.items():
                    with row_columns(emitter, plan, None, None, length=other_length):
                        columns = Ix.var("c", other_length)
                        for node in nodes:
                            index = split_index(emitter, node.array_shape.dims, rows, row_ix,
                                                 columns)
                            emitter.store(node, buffers[node.name], index)
                if narrow or scratch:
                    with body.block("if (t == 0) {"), emitter.scope():
                        for node in narrow:
                            index = emitter.delinearize(row_ix, node.array_shape.dims)
                            emitter.store(node, buffers[node.name], index)
                        for node in reductions if scratch else ():
                            index = emitter.delinearize(row_ix, node.array_shape.dims)
                            emitter.store(node, scratch[node.name], index)
        if cache is not None:
            cache.declare()
    if second:
        body.line("fx_grid_sync();  // every row's results are in scratch")
        with emitter.scope():
            saved = dict(emitter.buffers)
            emitter.buffers.update(scratch)  # phase 2 reads the row results back
            emit_columns(graph, kernel, emitter, others + phase2, buffers, plan, second[0])
            emitter.buffers.clear()
            emitter.buffers.update(saved)
    elif others:
        elementwise_loops(emitter, others, buffers, plan)


# -- its workload (what the projected model prices) ------------------------------------------------


def count(graph: Graph, kernel: Kernel, plan: CodeGenPlan, counter: Counter) -> None:
    """The loops of `emit` (and of split.py's row plans, `SPLIT_SCHEDULES`): per reduction
    a loop over its rows (a warp, a block or a few rows per block, `threads_per_row`), then
    the values computed once per row, the loops writing the row's outputs (at the row's
    length, at other lengths, one per row), and a cooperative plan's column phase after its
    grid barrier (columns.count_columns) or, without one, the other outputs elementwise."""
    w, outputs = counter.w, counter.outputs
    shuffle_latency, barrier_latency = counter.shuffle_latency, counter.barrier_latency
    rows, length = plan.rows, plan.row_length
    splits = max(1, plan.splits) if plan.schedule in SPLIT_SCHEDULES else 1
    threads_per_row = plan.threads_per_row or plan.block_size
    slots = plan.grid_size * max(1, plan.rows_per_block or 1)
    work_items = rows * splits
    rows_per_slot = ceil_div(work_items, slots)
    per_row = ceil_div(ceil_div(length, splits), threads_per_row)
    # The kernel's analyses depend on the rows and on whether the plan is cooperative or has
    # a row cache, not on its launch: the candidate plans of a kernel share them.
    split = plan.schedule in SPLIT_SCHEDULES
    key = ("rows", rows, length, plan.cooperative, bool(plan.row_cache), split)
    if key not in counter.memo:
        # Phases in graph order: a kernel owns its reductions (never recomputed), and its
        # owned nodes are in graph order.
        reductions = [n for n in kernel.nodes if graph.nodes[n].op == "reduce"
                      and row_split(graph, n) == (rows, length)]
        second = set(global_reductions(graph, kernel)) if plan.cooperative else set()
        # The column phase's results are written in that phase.
        late = [n for n in outputs if n.name in second]
        early = [n for n in outputs if n.name not in second]
        if split:  # split.py writes no other length in its work items, no row values
            wide = [n for n in early if n.array_shape.size == rows * length and length > 1]
            narrow = [n for n in early if n.array_shape.size == rows and n not in wide]
            lengths, rest = {}, [n for n in early if n not in wide and n not in narrow]
            once = []
        else:
            wide, lengths, narrow, rest = row_loop_outputs(graph, kernel, early, rows, length)
            written = [*wide, *(n for nodes in lengths.values() for n in nodes), *narrow]
            once = row_values(graph, kernel, reductions, [n.name for n in written])
        # A row cache keeps what later loops over the row read in registers: known there.
        cached = row_cache_reads(graph, kernel, reductions, [n.name for n in wide]) \
            if plan.row_cache else [frozenset()] * (len(reductions) + 1)
        counter.memo[key] = (reductions, second, loop_targets(wide),
                             [(n, loop_targets(nodes)) for n, nodes in lengths.items()],
                             loop_targets(narrow), rest + late, once, cached,
                             [loop_targets([graph.nodes[graph.nodes[name].operands[0]]])
                              for name in reductions])
    (reductions, second, wide, lengths, narrow, others, once, cached,
     reduced) = counter.memo[key]
    known: set[str] = set()
    steps = int(math.log2(max(1, min(threads_per_row, 32))))
    before = frozenset(counter.read_once)

    def recent() -> frozenset[str]:
        """What earlier loops over these rows read: the same block re-reads it (not so for
        a split plan's chunks, which meet behind the other chunks)."""
        return frozenset() if split else frozenset(counter.read_once) - before

    for k, name in enumerate(reductions):
        targets, axes, _ = reduced[k]
        counter.loop(Loop(elements=rows * length, targets=targets, axes=axes,
                           known=frozenset(known) | cached[k],
                           per_thread=rows_per_slot * per_row, recent=recent()))
        known.add(name)
        w.instructions["shfl"] = w.instructions.get("shfl", 0) + \
            rows * splits * threads_per_row * steps
        w.sync_cycles_per_thread += rows_per_slot * steps * shuffle_latency
        if threads_per_row > 32:
            w.barriers_per_block += 2 * rows_per_slot
            w.sync_cycles_per_thread += 2 * rows_per_slot * barrier_latency
            w.shared_traffic_bytes += rows * splits * (threads_per_row // 32) * 8 * 2
        if splits > 1:
            w.grid_syncs += 1 if plan.cooperative else 0
            w.dram_write_bytes += rows * splits * 8
            w.dram_read_bytes += rows * splits * 8
    if once:  # computed by every thread of the row, once per row
        counter.loop(Loop(elements=rows * threads_per_row, targets=once,
                           axes=dict.fromkeys(once), known=frozenset(known),
                           per_thread=rows_per_slot, recent=recent()))
        known.update(once)
    targets, axes, stores = wide
    if targets:
        counter.loop(Loop(elements=rows * length, targets=targets, axes=axes,
                           known=frozenset(known) | cached[-1],
                           per_thread=rows_per_slot * per_row, stores=stores, recent=recent()))
    # The same rows at another length, no cache.
    for other_length, (targets, axes, stores) in lengths:
        counter.loop(Loop(elements=rows * other_length, targets=targets, axes=axes,
                           known=frozenset(known),
                           per_thread=rows_per_slot * ceil_div(other_length, threads_per_row),
                           stores=stores, recent=recent()))
    targets, axes, stores = narrow
    if targets:
        counter.loop(Loop(elements=rows, targets=targets, axes=axes, known=frozenset(known),
                           per_thread=rows_per_slot, stores=stores, recent=recent()))
    if second:
        w.grid_syncs += 1
        for name in reductions:  # row results go through scratch
            w.dram_write_bytes += graph.nodes[name].array_shape.size * 4
            w.dram_read_bytes += graph.nodes[name].array_shape.size * 4
        first = next(n for n in kernel.computed if n in second)
        count_columns(graph, kernel, plan, counter, others, first, frozenset(known))
    elif others:
        # After the row loop the row results are gone: a value reading one reduces its row
        # again, per element (the emitted code's serial reduction).
        counter.elementwise(plan, others)
