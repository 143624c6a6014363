"""The emitter API that schedules build on: the loops and reductions several schedules share.

A schedule (compiler/codegen/schedules/) owns a kernel's thread mapping; the elemental emitter
(elemental.py) writes the straight-line code of each value inside it. Between the two sit the
pieces here, each writing a well-defined part of a kernel body through an `Elemental`:

- `elementwise_loops`: grid-stride loops over outputs, with vector loads and stores where the
  lanes' accesses are consecutive and aligned (the elementwise schedule, and the epilogue of
  every other schedule for outputs of other sizes);
- `row_partial` / `row_phase` / `finish_reduction`: one reduction over a row shared by
  `threads_per_row` threads (warp shuffles, then shared memory across warps), and
  `row_columns` / `RowCache`, the loop over a row's columns with its optional register cache;
- `accumulate_columns`: the inner loop of the column schedules;
- helpers: `split_index` (an element of a rows x length array), `depends_on`,
  `scratch_pointers` (typed pointers into a cooperative kernel's global scratch),
  `buffer_pointer`, `shuffle_ctype` / `accumulator_ctype`.

Every name here is public: a new schedule is a new module over this API, and no schedule
reaches into another's private helpers. A schedule's loops over blocks read the block index,
the grid's size and the scratch buffer as `emitter.block_index`, `emitter.grid_blocks` and
`emitter.scratch`, never `blockIdx.x`, `gridDim.x` or `scratch` themselves: a horizontal
kernel runs each part's schedule on a range of its blocks (schedules/horizontal.py).
"""

from __future__ import annotations

import math
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from typing import Iterator

from compiler.codegen.c_syntax import (load_expr, reducer_functor, reducer_identity, round_to_dtype,
                                       storage_ctype, store_expr, value_ctype)
from compiler.codegen.elemental import Elemental
from compiler.codegen.indexing import Index, Ix, linearize
from compiler.codegen.plan import WARP, CodeGenPlan
from compiler.ir.dtypes import accumulation_dtype
from compiler.ir.graph import Graph, Node
from compiler.ir.shapes import ArrayShape


# -- loops over elements -------------------------------------------------------------------


def elementwise_loops(emitter: Elemental, output_nodes: list[Node], buffers: dict[str, str],
                 plan: CodeGenPlan, groups_done: set[int] | None = None) -> None:
    """Grid-stride loops, one per distinct output element count; each thread computes
    `vector_width` consecutive elements per iteration (its lanes), every output of that count
    at each. The width is used only where it divides the count, so there is no tail.

    With several lanes, an input that the lanes read at consecutive physical offsets from a
    multiple of the width (the output's own layout, or reached through reshape, bitcast,
    copy, slices that keep the alignment) is read by one vector load (`fx_load_vec` in
    fx_prelude.cuh) ahead of the lanes, whose code finds its elements in the value cache; an
    output the lanes write that way is written by one `fx_store_vec` after them. Other reads
    (broadcasts, transposes, gathers) and writes stay scalar."""
    body = emitter.body
    sizes: dict[int, list[Node]] = {}
    for node in output_nodes:
        sizes.setdefault(node.array_shape.size, []).append(node)
    for size, nodes in sizes.items():
        if groups_done is not None and size in groups_done:
            continue
        width = plan.vector_width if size % plan.vector_width == 0 else 1
        i = emitter.fresh("i")
        step = f"{emitter.grid_blocks} * blockDim.x" + (f" * {width}" if width > 1 else "")
        start = f"{emitter.block_index} * blockDim.x + threadIdx.x"
        start = f"({start}) * {width}" if width > 1 else start
        body.line(f"// {', '.join(buffers[n.name] for n in nodes)}: {size} elements")
        with body.block(f"for (int {i} = {start}; {i} < {size}; {i} += {step}) {{"), \
                emitter.scope():
            lanes = [i] if width == 1 else [emitter.fresh(f"e{lane}") for lane in range(width)]
            vector_outputs: dict[str, list[str]] = {}
            if width > 1:
                for lane, element in enumerate(lanes):
                    body.line(f"const int {element} = {i}" + (f" + {lane};" if lane else ";"))
                _vector_loads(emitter, nodes, lanes, size)
                vector_outputs = {node.name: [] for node in nodes if _vector_aligned(
                    node.array_shape, _lane_index(emitter, node, lanes[0], size), lanes[0],
                    width)}
            for element in lanes:
                with emitter.scope():
                    for node in nodes:
                        index = _lane_index(emitter, node, element, size)
                        if node.name in vector_outputs:
                            vector_outputs[node.name].append(emitter.value(node.name, index))
                        else:
                            emitter.store(node, buffers[node.name], index)
            for node in nodes:
                if node.name in vector_outputs:
                    index = _lane_index(emitter, node, lanes[0], size)
                    values = ", ".join(store_expr(node.array_shape.dtype, value)
                                       for value in vector_outputs[node.name])
                    pointer = buffer_pointer(buffers[node.name], emitter.address(node, index))
                    body.line(f"fx_store_vec({pointer}, {values});", node.name)


def _lane_index(emitter: Elemental, node: Node, element: str, size: int) -> Index:
    """The index of the output `node` at a lane's element, counted in the output's memory
    order: consecutive threads write consecutive addresses whatever the output's layout (a
    transpose into a layout that keeps its operand's memory order is then a plain copy, not a
    read and a write a row apart per thread)."""
    shape = node.array_shape
    major_to_minor = list(reversed(shape.minor_to_major))
    physical = emitter.delinearize(Ix.var(element, size), [shape.dims[d] for d in major_to_minor])
    index: list[Ix] = [Ix.const(0)] * shape.rank
    for position, d in enumerate(major_to_minor):
        index[d] = physical[position]
    return tuple(index)


def _vector_loads(emitter: Elemental, nodes: list[Node], lanes: list[str], size: int) -> None:
    """A dry run of the first lane lists the (input, index) pairs its code loads; each that
    the lanes read contiguously and aligned (`_vector_aligned`) is loaded once as a vector,
    and lane k's element is remembered at the index with the first lane's element replaced
    by lane k's (the same element, so any read of it by any lane finds it)."""
    width = len(lanes)
    with emitter.dry_run() as loads:
        for node in nodes:
            emitter.value(node.name, _lane_index(emitter, node, lanes[0], size))
    seen = set()
    for name, index in loads:
        node = emitter.graph.nodes[name]
        key = (name, tuple(ix.c() for ix in index))
        if key in seen or not _vector_aligned(node.array_shape, index, lanes[0], width):
            continue
        seen.add(key)
        dtype = node.array_shape.dtype
        vector = emitter.fresh(emitter.tag(name))
        pointer = buffer_pointer(emitter.buffers[name], emitter.address(node, index))
        emitter.body.line(f"const FxVec<{storage_ctype(dtype)}, {width}> {vector} = "
                          f"fx_load_vec<{width}>({pointer});", name)
        for lane, element in enumerate(lanes):
            at = tuple(replace(ix, base=element) if ix.base == lanes[0] else ix for ix in index)
            emitter.remember(name, at, load_expr(dtype, f"{vector}.lane[{lane}]"))


def _vector_aligned(shape: ArrayShape, index: Index, first: str, width: int) -> bool:
    """Whether `width` lanes, lane k at element `first` + k with `first` a multiple of
    `width`, reading (or writing) an array of `shape` at `index` (over `first`) touch the
    physical offsets base, base + 1, ..., base + width - 1 with base a multiple of `width`,
    all inside the array, whatever `first` is.

    The offset is a sum of digit terms c * ((first / d) % m) plus a constant, digits that
    chain merged (`_address_terms`). Exactly one term must be `first % m` itself (c = d = 1,
    m a multiple of the width or no modulo): it steps by one from lane to lane without
    wrapping; every other term must not change across the lanes (d a multiple of the
    width) and keep the base aligned (c a multiple of the width), as must the constant."""
    for ix, n in zip(index, shape.dims):
        if ix.base not in (None, first):
            return False
        if min(ix.offset, ix.offset + ix.scale * (ix.term_range() - 1)) < 0 \
                or ix.max_value() >= n:
            return False  # a read in a branch (pad, concatenate): not safe to hoist
    constant, steps = 0, 0
    for ix, stride in _address_terms(shape, index):
        constant += ix.offset * stride
        coefficient = ix.scale * stride
        if ix.is_const:
            continue
        if ix.div == 1 and coefficient == 1 and (ix.mod is None or ix.mod % width == 0):
            steps += 1
        elif ix.div % width or coefficient % width:
            return False
    return steps == 1 and constant % width == 0


class _NoChain(Exception):
    """Two digits of an index do not merge into one."""


def _no_local(expr: str, bound: int) -> str:
    raise _NoChain(expr)


def _address_terms(shape: ArrayShape, index: Index) -> list[tuple[Ix, int]]:
    """The physical offset of `index` in an array of `shape` as (digit, stride) terms, from
    the layout's most minor dimension out; adjacent digits of one variable that chain (as the
    digits of a reshaped linear index do) are merged into one term."""
    terms: list[tuple[Ix, int]] = []
    stride, span = 1, 1  # span: the elements the last term's digit ranges over
    for d in shape.minor_to_major:
        ix, n = index[d], shape.dims[d]
        if n == 1:
            continue
        last, last_stride = terms[-1] if terms else (None, 0)
        if last is not None and ix.is_digit and last.is_digit and ix.base == last.base:
            try:
                terms[-1] = (linearize((ix, last), (n, span), _no_local), last_stride)
                span *= n
                stride *= n
                continue
            except _NoChain:
                pass
        terms.append((ix, stride))
        span = n
        stride *= n
    return terms


def buffer_pointer(buffer: str, offset: str) -> str:
    return f"{buffer} + {offset}" if offset.isidentifier() else f"{buffer} + ({offset})"


def split_index(emitter: Elemental, dims, rows: int, row: Ix, column: Ix) -> Index:
    """Index of an element of an array with rows * row_length elements: row digits over the
    leading dims whose product is `rows`, column digits over the rest (else via the linear
    position, a local)."""
    prefix = 1
    for k, n in enumerate(dims):
        if prefix == rows:
            return emitter.delinearize(row, dims[:k]) + emitter.delinearize(column, dims[k:])
        prefix *= n
    if prefix == rows:
        return emitter.delinearize(row, dims) + ()
    total = math.prod(dims)
    linear = emitter.new_index_local(f"{row.c()} * {total // rows} + {column.c()}", total)
    return emitter.delinearize(Ix.var(linear, total), dims)


def depends_on(graph: Graph, name: str, targets: set[str], within: set[str]) -> bool:
    """Whether the kernel's value `name` reads any of `targets` (through nodes in `within`)."""
    stack, seen = [name], set()
    while stack:
        current = stack.pop()
        if current in targets:
            return True
        if current in seen or current not in within:
            continue
        seen.add(current)
        stack.extend(graph.nodes[current].operands)
    return False


# -- reductions over rows -----------------------------------------------------------------


def scratch_pointers(graph: Graph, emitter: Elemental, reductions: list[Node]) -> dict[str, str]:
    """{row reduction: a typed pointer into scratch}, each slice 16-byte aligned."""
    pointers, offset = {}, 0
    for node in reductions:
        shape = node.array_shape
        ctype = storage_ctype(shape.dtype)
        pointer = emitter.fresh(f"{emitter.tag(node.name)}_scratch")
        emitter.body.line(f"{ctype}* {pointer} = reinterpret_cast<{ctype}*>({emitter.scratch} + "
                          f"{offset});", node.name)
        pointers[node.name] = pointer
        offset += -(-shape.size * shape.dtype.bits // 8 // 16) * 16
    return pointers


class RowCache:
    """The register row cache of a plan with `row_cache` = K (schedules/rows.py's docstring).

    Each loop over the row is unrolled over k < K (`row_columns`). In the loop where a value
    that a later loop reads (`row_cache_reads`) is first evaluated, it is stored into a local
    array `<tag>_row[K]` at k; later loops find it there: the array element is seeded into the
    value cache at the value's (row, column) index, so the emitter neither recomputes nor
    reloads it (nor anything behind it). The arrays are declared before the first loop, once
    the loops have said which they need."""

    def __init__(self, emitter: Elemental, plan: CodeGenPlan, reads: list[frozenset[str]]):
        self.emitter = emitter
        self.size = plan.row_cache
        self.reads = reads
        self.loop = 0                          # the loop over the row being emitted
        self.arrays: dict[tuple, str] = {}     # value-cache key -> its array
        self.declare_at = (len(emitter.body.lines), emitter.body.depth)
        emitter.used_names.add("k")

    def seed(self) -> None:
        """At the start of a loop's body: every array's element k is known."""
        for key, array in self.arrays.items():
            self.emitter.scopes[-1][key] = f"{array}[k]"

    def keep(self) -> None:
        """At the end of a loop's body: store the values later loops read; next loop."""
        later = frozenset().union(*self.reads[self.loop + 1:])
        self.loop += 1
        emitter = self.emitter
        arrays = {f"{array}[k]": array for array in self.arrays.values()}
        for key, expr in list(emitter.scopes[-1].items()):
            if key[0] not in later or key in self.arrays or \
                    (expr not in arrays and expr not in emitter.used_names):
                continue  # not read later, stored already, or a literal
            if expr not in arrays:
                arrays[expr] = emitter.fresh(f"{emitter.tag(key[0])}_row")
                emitter.body.line(f"{arrays[expr]}[k] = {expr};", key[0])
            self.arrays[key] = arrays[expr]

    def declare(self) -> None:
        """The arrays' declarations, before the first loop over the row."""
        graph, (at, depth) = self.emitter.graph, self.declare_at
        declared = {}
        for (name, _), array in self.arrays.items():
            ctype = value_ctype(graph.nodes[name].array_shape.dtype)
            declared.setdefault(array, ("  " * depth + f"{ctype} {array}[{self.size}];", name))
        self.emitter.body.lines[at:at] = list(declared.values())


@contextmanager
def row_columns(emitter: Elemental, plan: CodeGenPlan, node: str | None,
                 cache: RowCache | None, chunk: tuple[str, str] | None = None,
                 length: int | None = None) -> Iterator[None]:
    """The loop of a row's threads over its columns `c` (or those of a chunk, or of a row of
    another `length` than the plan's: a value of the same rows, without a cache), in a cache
    scope: strided, or with a row cache unrolled over its K elements per thread."""
    body, threads = emitter.body, plan.threads_per_row
    length = plan.row_length if length is None else length
    if cache is None:
        start, end = ("t", length) if chunk is None else (f"{chunk[0]} + t", chunk[1])
        with body.block(f"for (int c = {start}; c < {end}; c += {threads}) {{", node), \
                emitter.scope():
            yield
        return
    body.line("#pragma unroll", node)
    with body.block(f"for (int k = 0; k < {cache.size}; ++k) {{", node):
        body.line(f"const int c = t + k * {threads};", node)
        exact = cache.size * threads == length  # every c is in the row
        with body.block(f"if (c < {length}) {{", node) if not exact else nullcontext(), \
                emitter.scope():
            cache.seed()
            yield
            cache.keep()


def row_phase(graph: Graph, emitter: Elemental, node: Node, plan: CodeGenPlan, row: Ix,
               column: Ix, shared_offset: int, cache: RowCache | None = None) -> int:
    acc, shared_offset = row_partial(graph, emitter, node, plan, row, column, shared_offset,
                                      cache=cache)
    finish_reduction(emitter, node, acc, emitter.delinearize(row, node.array_shape.dims))
    return shared_offset


def row_partial(graph: Graph, emitter: Elemental, node: Node, plan: CodeGenPlan, row: Ix,
                 column: Ix, shared_offset: int, chunk: tuple[str, str] | None = None,
                 cache: RowCache | None = None) -> tuple[str, int]:
    """The reduction of row `r` (or of its columns [chunk[0], chunk[1]) when split) without
    the init value, in an accumulator every thread of the row ends with; and the next free
    byte of shared memory."""
    body = emitter.body
    rows, length, threads = plan.rows, plan.row_length, plan.threads_per_row
    reducer = node.attrs["reducer"]
    dtype = node.array_shape.dtype
    acc_dtype = accumulation_dtype(dtype)
    acc_ctype = value_ctype(acc_dtype)
    acc_type = shuffle_ctype(acc_ctype)
    functor = reducer_functor(reducer)
    identity = reducer_identity(reducer, acc_dtype)
    acc = emitter.fresh(f"{emitter.tag(node.name)}_acc")
    body.line(f"// {emitter.tag(node.name)}: {reducer} over each row of {length}")
    body.line(f"{acc_type} {acc} = {identity};", node.name)
    with body.block(f"if (r < {rows}) {{", node.name), emitter.scope():
        with row_columns(emitter, plan, node.name, cache, chunk):
            source = graph.nodes[node.operands[0]].array_shape
            kept = [n for d, n in enumerate(source.dims) if d not in node.attrs["dimensions"]]
            reduced = [source.dims[d] for d in sorted(node.attrs["dimensions"])]
            index = emitter.reduce_operand_index(
                node, emitter.delinearize(row, kept), emitter.delinearize(column, reduced))
            x = emitter.value(node.operands[0], index)
            body.line(f"{acc} = {functor}()({acc}, {acc_type}({x}));", node.name)
    width = min(threads, WARP)
    body.line(f"{acc} = fx_group_allreduce({acc}, {width}, {functor}());", node.name)
    if threads > WARP:
        warps = threads // WARP
        partial = emitter.fresh(f"{emitter.tag(node.name)}_partial")
        body.line(f"{acc_type}* {partial} = reinterpret_cast<{acc_type}*>"
                  f"(shared + {shared_offset}) + row_slot * {warps};", node.name)
        body.line(f"if (t % {WARP} == 0) {partial}[t / {WARP}] = {acc};", node.name)
        body.line("__syncthreads();", node.name)
        body.line(f"{acc} = {identity};", node.name)
        body.line(f"for (int w = 0; w < {warps}; ++w) {acc} = {functor}()({acc}, "
                  f"{partial}[w]);", node.name)
        body.line("__syncthreads();  // the partials are reused by the next row", node.name)
        shared_offset += 8 * plan.rows_per_block * warps
    return acc, shared_offset


def finish_reduction(emitter: Elemental, node: Node, acc: str, index: Index) -> str:
    """The reduce's value from its accumulator `acc` (of `shuffle_ctype`): the init value
    combined once, rounded once to a 16-bit type; declared and remembered at `index`."""
    dtype = node.array_shape.dtype
    acc_dtype = accumulation_dtype(dtype)
    acc_ctype = value_ctype(acc_dtype)
    init = emitter.value(node.operands[1], ())
    combined = (f"{reducer_functor(node.attrs['reducer'])}()("
                f"{shuffle_ctype(acc_ctype)}({init}), {acc})")
    result = emitter.declare(node, round_to_dtype(dtype, f"{acc_ctype}({combined})")
                             if dtype != acc_dtype else f"{acc_ctype}({combined})")
    emitter.remember(node.name, index, result)
    return result


def shuffle_ctype(ctype: str) -> str:
    """The type accumulators live in so warp shuffles can move them."""
    if ctype in ("float", "double"):
        return ctype
    if ctype in ("int64_t",):
        return "long long"
    if ctype in ("uint64_t",):
        return "unsigned long long"
    if ctype in ("uint32_t", "uint16_t", "uint8_t"):
        return "unsigned"
    return "int"  # bool, int8/16/32


# -- reductions over columns --------------------------------------------------------------


def accumulator_ctype(node: Node) -> str:
    """The C type a reduction accumulates in (its accumulation type, as shuffles move it)."""
    return shuffle_ctype(value_ctype(accumulation_dtype(node.array_shape.dtype)))


def accumulate_columns(emitter: Elemental, dominant: Node, kept_dims, reduced_sizes,
                       column_ix: Ix, row_ix: Ix, accumulators: list[tuple[Node, str]],
                       wide: list[Node], buffers: dict[str, str], loop: str) -> None:
    """The column schedules' inner loop (`loop`, over the rows `row_ix` of column
    `column_ix`): each (reduction, accumulator) takes its operand's element, and the outputs of
    the operand's shape in `wide` are written at the same index."""
    body = emitter.body
    with body.block(loop), emitter.scope():
        index = emitter.reduce_operand_index(
            dominant, emitter.delinearize(column_ix, kept_dims),
            emitter.delinearize(row_ix, reduced_sizes))
        for node, acc in accumulators:
            x = emitter.value(node.operands[0], index)
            body.line(f"{acc} = {reducer_functor(node.attrs['reducer'])}()({acc}, "
                      f"{accumulator_ctype(node)}({x}));", node.name)
        for node in wide:
            emitter.store(node, buffers[node.name], index)
