"""The "column-reduce" schedule: the dominant reduction keeps an inner dimension.

Reduced dimensions outermost or interleaved (a bias gradient summing over the batch). A block
owns a tile of `column_tile` consecutive output elements ("columns", 32 when there are that
many) and `block_size / column_tile` row groups; each thread strides over the reduced elements
("rows") of its column, so a warp's loads of one row are consecutive, and the row groups
combine through shared memory. Every reduction over the same operand shape and dimensions
shares the loop, and outputs of the operand's shape are written in it. The row schedule's
globally stitched plans run this schedule as their second phase (`emit_columns`).
"""

from __future__ import annotations

from compiler.codegen.c_syntax import reducer_functor, reducer_identity, round_to_dtype, value_ctype
from compiler.codegen.elemental import Elemental
from compiler.codegen.indexing import Ix
from compiler.codegen.loops import (accumulate_columns, accumulator_ctype, depends_on,
                                    elementwise_loops)
from compiler.codegen.plan import (COLUMN_BLOCK_SIZES, COLUMN_SCHEDULE, MAX_GRID,
                                   SPLIT_SCHEDULES, WARP, CodeGenPlan, column_reductions,
                                   column_split, next_power_of_two)
from compiler.codegen.workload import Counter, Loop, ceil_div, loop_targets
from compiler.ir.dtypes import accumulation_dtype
from compiler.ir.graph import Graph, Node
from compiler.kernels.plan import Kernel

SCHEDULES = (COLUMN_SCHEDULE,)
REDUCING_KINDS = ("input", "stitch-regional", "stitch-global")


def candidates(graph: Graph, kernel: Kernel, dominant: str) -> list[CodeGenPlan]:
    """For a kernel whose dominant reduction is over columns: every block size of
    COLUMN_BLOCK_SIZES with tiles of 32 columns (fewer when there are fewer)."""
    columns = column_split(graph, dominant) if kernel.kind in REDUCING_KINDS else None
    if columns is None:
        return []
    return _column_plans(graph, kernel, dominant, *columns)


def choose(plans: list[CodeGenPlan]) -> CodeGenPlan | None:
    """32 columns per block (fewer when there are fewer), and as many row groups as the rows
    can keep busy, up to 256 threads (8 row groups)."""
    columns = [p for p in plans if p.schedule == COLUMN_SCHEDULE]
    if not columns:
        return None
    tile, length = columns[0].column_tile, columns[0].row_length
    block = min(256, max(COLUMN_BLOCK_SIZES[0], tile * next_power_of_two(length)))
    return min(columns, key=lambda p: abs(p.block_size - block))


def emit(graph: Graph, kernel: Kernel, emitter: Elemental, output_nodes: list[Node],
         buffers: dict[str, str], plan: CodeGenPlan) -> None:
    emit_columns(graph, kernel, emitter, output_nodes, buffers, plan, plan.dominant)


def _column_plans(graph: Graph, kernel: Kernel, dominant: str, columns: int,
                  length: int) -> list[CodeGenPlan]:
    tile = min(WARP, next_power_of_two(columns))
    reductions = len(column_reductions(graph, kernel, dominant))
    plans = []
    for block in COLUMN_BLOCK_SIZES:
        groups = block // tile
        plans.append(CodeGenPlan(
            schedule=COLUMN_SCHEDULE, dominant=dominant, block_size=block,
            grid_size=max(1, min(MAX_GRID, -(-columns // tile))), row_length=length,
            columns=columns, column_tile=tile,
            shared_bytes=8 * block * reductions if groups > 1 else 0))
    return plans


def emit_columns(graph: Graph, kernel: Kernel, emitter: Elemental, output_nodes: list[Node],
                 buffers: dict[str, str], plan: CodeGenPlan, dominant_name: str) -> None:
    """A tile of `column_tile` columns per block, `groups` row groups striding over the rows.

    Thread (x, g) accumulates column `col` = tile + x over rows g, g + groups, ... for every
    reduction of the loop, writing the outputs of the operand's shape that do not read a
    reduction as it goes; the row groups' partials meet in shared memory, where row group 0
    combines them and writes the outputs of the reduction's size. Outputs of other sizes,
    or reading a reduction at every element, get grid-stride loops after the column loop.
    """
    body = emitter.body
    columns, length = column_split(graph, dominant_name)
    tile = plan.column_tile
    groups = plan.block_size // tile
    dominant = graph.nodes[dominant_name]
    reductions = [graph.nodes[n] for n in column_reductions(graph, kernel, dominant_name)]
    source = graph.nodes[dominant.operands[0]].array_shape
    reduced_dims = sorted(dominant.attrs["dimensions"])
    kept_dims = [n for d, n in enumerate(source.dims) if d not in reduced_dims]
    names = {n.name for n in reductions}
    computed = set(kernel.computed)
    wide = [n for n in output_nodes if n.array_shape.dims == source.dims and length > 1
            and n.name not in names and not depends_on(graph, n.name, names, computed)]
    narrow = [n for n in output_nodes if n.array_shape.size == columns and n not in wide]
    if groups > 1 and "shared" not in emitter.used_names:
        body.line("FX_SHARED_MEMORY(shared);")
    body.line(f"const int x = threadIdx.x % {tile};  // column within the tile")
    body.line(f"const int g = threadIdx.x / {tile};  // row group")
    emitter.used_names.update({"x", "g", "tile", "col", "j", "shared", "w"})
    column_ix, row_ix = Ix.var("col", columns), Ix.var("j", length)
    loop = (f"for (int tile = {emitter.block_index} * {tile}; tile < {columns}; "
            f"tile += {emitter.grid_blocks} * {tile}) {{")
    with body.block(loop), emitter.scope():
        body.line("const int col = tile + x;")
        accumulators = []
        for node in reductions:
            acc_ctype = accumulator_ctype(node)
            acc = emitter.fresh(f"{emitter.tag(node.name)}_acc")
            identity = reducer_identity(node.attrs["reducer"],
                                        accumulation_dtype(node.array_shape.dtype))
            body.line(f"{acc_ctype} {acc} = {identity};", node.name)
            accumulators.append((node, acc, acc_ctype, identity))
        with body.block(f"if (col < {columns}) {{"), emitter.scope():
            accumulate_columns(emitter, dominant, kept_dims,
                               [source.dims[d] for d in reduced_dims], column_ix, row_ix,
                               [(node, acc) for node, acc, *_ in accumulators], wide, buffers,
                               f"for (int j = g; j < {length}; j += {groups}) {{")
        if groups > 1:
            partials = []
            for k, (node, acc, acc_ctype, _) in enumerate(accumulators):
                partial = emitter.fresh(f"{emitter.tag(node.name)}_partial")
                body.line(f"{acc_ctype}* {partial} = reinterpret_cast<{acc_ctype}*>"
                          f"(shared + {8 * plan.block_size * k});", node.name)
                body.line(f"{partial}[threadIdx.x] = {acc};", node.name)
                partials.append(partial)
            body.line("__syncthreads();")
            for (node, acc, acc_ctype, identity), partial in zip(accumulators, partials):
                functor = reducer_functor(node.attrs["reducer"])
                body.line(f"{acc} = {identity};", node.name)
                body.line(f"for (int w = 0; w < {groups}; ++w) {acc} = {functor}()({acc}, "
                          f"{partial}[w * {tile} + x]);", node.name)
            body.line("__syncthreads();  // the partials are reused by the next tile")
        for node, acc, acc_ctype, _ in accumulators:
            dtype, acc_dtype = node.array_shape.dtype, accumulation_dtype(node.array_shape.dtype)
            init = emitter.value(node.operands[1], ())
            combined = f"{reducer_functor(node.attrs['reducer'])}()({acc_ctype}({init}), {acc})"
            value = f"{value_ctype(acc_dtype)}({combined})"
            if dtype != acc_dtype:
                value = round_to_dtype(dtype, value)
            result = emitter.declare(node, value)
            emitter.remember(node.name, emitter.delinearize(column_ix, node.array_shape.dims),
                             result)
        if narrow:
            with body.block(f"if (col < {columns} && g == 0) {{"), emitter.scope():
                for node in narrow:
                    emitter.store(node, buffers[node.name],
                                  emitter.delinearize(column_ix, node.array_shape.dims))
    others = [n for n in output_nodes if n not in wide and n not in narrow]
    if others:
        elementwise_loops(emitter, others, buffers, plan)


# -- its workload (what the projected model prices) ------------------------------------------------


def count(graph: Graph, kernel: Kernel, plan: CodeGenPlan, counter: Counter) -> None:
    """The loops of `emit`: the column tiles' loop, then the outputs of one element per
    column, then the rest elementwise (`count_columns`)."""
    count_columns(graph, kernel, plan, counter, counter.outputs, plan.dominant, frozenset())


def count_columns(graph: Graph, kernel: Kernel, plan: CodeGenPlan, counter: Counter,
                  outputs: list[Node], dominant_name: str, known: frozenset[str]) -> None:
    """The column phase writing `outputs` with `dominant_name`'s columns, `known` values in
    registers: this schedule's, split.py's column plans' and a cooperative row plan's
    second phase (rows.count)."""
    w = counter.w
    barrier_latency = counter.barrier_latency
    key = ("columns", dominant_name, tuple(n.name for n in outputs))
    found = counter.memo.get(key)
    if found is None:  # the kernel's, whatever the launch
        found = counter.memo[key] = _column_analysis(graph, kernel, outputs, dominant_name)
    columns, length, names, operands, axes, wide_names, narrow, others = found
    tile = max(1, plan.column_tile or min(32, columns))
    groups = max(1, plan.block_size // tile)
    splits = max(1, plan.splits) if plan.schedule in SPLIT_SCHEDULES else 1
    column_blocks = ceil_div(columns, tile) * splits
    tiles_per_block = ceil_div(column_blocks, plan.grid_size)
    per_thread = tiles_per_block * ceil_div(ceil_div(length, splits), groups)
    counter.loop(Loop(elements=columns * length, targets=operands, axes=axes, known=known,
                       per_thread=per_thread, stores=wide_names))
    all_known = frozenset(known) | frozenset(names)
    targets, narrow_axes, stores = narrow
    if targets:
        counter.loop(Loop(elements=columns, targets=targets, axes=narrow_axes,
                           known=all_known, per_thread=tiles_per_block, stores=stores))
    if groups > 1:
        w.barriers_per_block += 2 * tiles_per_block
        w.sync_cycles_per_thread += 2 * tiles_per_block * barrier_latency
        w.shared_traffic_bytes += column_blocks * plan.block_size * 8 * len(names) * 2
        w.instructions["lsu"] = w.instructions.get("lsu", 0) + \
            column_blocks * plan.block_size * len(names) * (1 + groups / tile)
    if splits > 1:
        w.dram_write_bytes += columns * splits * 8 * len(names)
        w.dram_read_bytes += columns * splits * 8 * len(names)
        w.grid_syncs += 1 if plan.cooperative else 0
    if others:
        # The emitted loop after the tiles (columns.py, split.py) recomputes the column
        # reductions it reads: their results are in the registers of the tile's threads.
        counter.elementwise(plan, others, known=frozenset(known))


def _column_analysis(graph, kernel, outputs, dominant_name) -> tuple:
    """What `count_columns` reads of a kernel whatever the launch: the columns and their
    length, the column reductions and the operands they read, the axis consecutive threads
    walk (the last kept dimension of the operand, for every target of the column loop), the
    outputs of the operand's size written in that loop, the `_loop_targets` of the outputs
    of one element per column, and the other outputs."""
    columns, length = column_split(graph, dominant_name)
    names = column_reductions(graph, kernel, dominant_name)
    dominant = graph.nodes[dominant_name]
    source = graph.nodes[dominant.operands[0]].array_shape
    reduced = sorted(dominant.attrs["dimensions"])
    kept = [d for d in range(source.rank) if d not in reduced]
    # Threads of a tile walk the columns: the last kept dimension of the operand.
    axis = next((d for d in reversed(kept) if source.dims[d] > 1), None)
    operands = list(dict.fromkeys(graph.nodes[n].operands[0] for n in names))
    wide = [n for n in outputs if n.array_shape.dims == source.dims and length > 1
            and n.name not in names]
    targets = operands + [n.name for n in wide]
    narrow = [n for n in outputs if n.array_shape.size == columns and n not in wide]
    others = [n for n in outputs if n not in wide and n not in narrow]
    return (columns, length, names, targets, dict.fromkeys(targets, axis),
            tuple(n.name for n in wide), loop_targets(narrow), others)
