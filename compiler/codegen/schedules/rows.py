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

from dataclasses import replace

from compiler.codegen.elemental import Elemental
from compiler.codegen.indexing import Ix
from compiler.codegen.loops import (RowCache, depends_on, elementwise_loops, row_columns,
                                    row_phase, scratch_pointers, split_index)
from compiler.codegen.plan import (BLOCK_SIZES, MAX_GRID, ROW_CACHE_MAX, ROW_SCHEDULES, WARP,
                                   CodeGenPlan, column_split, cooperative_grids, global_reductions,
                                   next_power_of_two, row_cache_reads, row_loop_outputs,
                                   row_reductions, row_split, row_values)
from compiler.codegen.schedules.columns import emit_columns
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
