"""Render one kernel of a fusion plan as CUDA C, under one CodeGenPlan.

The schedule (plan.py) owns the loops and the thread mapping; the elemental emitter
(elemental.py) writes the straight-line code for each value inside them. The text follows
notes/cuda_contract.md: `#include "fx_prelude.cuh"`, one `extern "C" __global__` function per
kernel whose parameters are the input buffers (`const T* __restrict__`, in the kernel's input
order; scalar constants are inlined instead) then the output buffers, sizes as constants,
dynamic shared memory only through FX_SHARED_MEMORY.

No graph node name reaches the text: parameters are `in<k>`/`out<k>`, a node's local is its
canonical tag `v<k>_<op>` (k counts nodes in the order the kernel first touches them), and the
statement computing a node ends with `// <tag>`. So kernels of the same structure (the same
block in every layer of a model) have the same source but for the function name, and the build
compiles them once (compiler/toolchain/nvcc.py, point 4). The node names live in
`EmittedKernel.line_nodes` (source line -> nodes) and `node_lines` (node -> lines) for the UI.
"""

from __future__ import annotations

import collections
import math
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Iterator

from compiler.codegen.elemental import (Body, CodegenUnsupported, Elemental, _round,
                                        c_identifier, load_expr, reducer_functor,
                                        reducer_identity, storage_ctype, store_expr,
                                        value_ctype)
from compiler.codegen.indexing import Index, Ix, linearize
from compiler.codegen.plan import (COLUMN_SCHEDULE, ROW_SCHEDULES, SPLIT_SCHEDULES,
                                   TRANSPOSE_SCHEDULE, WARP, CodeGenPlan,
                                   column_reductions, column_split, global_reductions,
                                   row_cache_reads, row_reductions)
from compiler.fusion.plan import Kernel
from compiler.ir.dtypes import accumulation_dtype
from compiler.ir.graph import Graph, Node
from compiler.ir.shapes import ArrayShape

PRELUDE = "fx_prelude.cuh"
# A globally stitched kernel's last parameter: `plan.scratch_bytes` bytes of global memory the
# launch allocates (uninitialised is fine: phase 1 writes before the grid barrier, phase 2
# reads after). Its role is "output" (a writable pointer) and its node "" (no graph value).
SCRATCH = "scratch"


@dataclass(frozen=True)
class Param:
    name: str        # C parameter name
    node: str        # the graph value it holds
    dtype: str
    dims: tuple[int, ...]
    role: str        # "input" | "output"

    def to_dict(self) -> dict:
        return {"name": self.name, "node": self.node, "dtype": self.dtype,
                "dims": list(self.dims), "role": self.role}


@dataclass
class EmittedKernel:
    name: str
    source: str
    params: list[Param]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    cooperative: bool
    plan: CodeGenPlan | None
    library: bool = False          # dot, convolution, ...: a library call, no generated code
    line_nodes: dict[int, list[str]] = field(default_factory=dict)  # 1-based line -> nodes

    @property
    def node_lines(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for line, nodes in sorted(self.line_nodes.items()):
            for node in nodes:
                out.setdefault(node, []).append(line)
        return out

    def to_dict(self) -> dict:
        return {"name": self.name, "source": self.source,
                "params": [p.to_dict() for p in self.params], "grid": list(self.grid),
                "block": list(self.block), "shared_bytes": self.shared_bytes,
                "cooperative": self.cooperative, "library": self.library,
                "plan": None if self.plan is None else self.plan.to_dict(),
                "line_nodes": {str(k): v for k, v in self.line_nodes.items()}}


def emit_kernel(graph: Graph, kernel: Kernel, plan: CodeGenPlan | None,
                name: str) -> EmittedKernel:
    """The CUDA source of `kernel` under `plan`; CodegenUnsupported names what is missing."""
    if kernel.kind == "library":
        return EmittedKernel(name=name, source="", params=[], grid=(0, 0, 0), block=(0, 0, 0),
                             shared_bytes=0, cooperative=False, plan=None, library=True)
    if plan is None:
        raise ValueError("a generated kernel needs a CodeGenPlan")
    name = c_identifier(name)
    largest = max((graph.nodes[n].array_shape.size for n in (*kernel.computed, *kernel.inputs)
                   if not graph.nodes[n].shape.is_tuple), default=0)
    if largest >= 2**31:
        raise CodegenUnsupported(f"arrays of {largest} elements need 64-bit indices")
    params, buffers, outputs = _params(graph, kernel)
    if plan.scratch_bytes:
        params.append(Param(SCRATCH, "", "u8", (plan.scratch_bytes,), "output"))
    body = Body()
    emitter = Elemental(graph, set(kernel.computed), buffers, body)
    emitter.used_names.update(p.name for p in params)
    output_nodes = [graph.nodes[n] for n in kernel.outputs]
    if plan.schedule == "elementwise":
        _elementwise(emitter, output_nodes, outputs, plan)
    elif plan.schedule in ROW_SCHEDULES:
        _rows(graph, kernel, emitter, output_nodes, outputs, plan)
    elif plan.schedule == COLUMN_SCHEDULE:
        _columns(graph, kernel, emitter, output_nodes, outputs, plan, plan.dominant)
    elif plan.schedule in SPLIT_SCHEDULES:
        from compiler.codegen.split import emit_split  # split.py builds on this module
        emit_split(graph, kernel, emitter, output_nodes, outputs, plan)
    elif plan.schedule == TRANSPOSE_SCHEDULE:
        from compiler.codegen.transpose import emit_transpose  # builds on this module too
        emit_transpose(graph, kernel, emitter, output_nodes, outputs, plan)
    else:
        raise CodegenUnsupported(f"schedule {plan.schedule} is not implemented")
    return _render(kernel, plan, name, params, emitter)


def _params(graph: Graph, kernel: Kernel) -> tuple[list[Param], dict[str, str], dict[str, str]]:
    """Inputs `in0, in1, ...` (scalar constants are inlined instead) then outputs `out0, ...`:
    names by position, so kernels of the same structure have the same signature."""
    params: list[Param] = []
    buffers: dict[str, str] = {}
    outputs: dict[str, str] = {}
    for value in kernel.inputs:
        node = graph.nodes[value]
        if node.shape.is_tuple:
            raise CodegenUnsupported(f"input '{value}' is a tuple")
        if node.op == "constant" and node.array_shape.size == 1 and \
                node.attrs.get("value") is not None:
            continue  # inlined as a literal
        buffers[value] = f"in{len(buffers)}"
        params.append(Param(buffers[value], value, node.array_shape.dtype.name,
                            node.array_shape.dims, "input"))
    for value in kernel.outputs:
        node = graph.nodes[value]
        if node.shape.is_tuple:
            raise CodegenUnsupported(f"output '{value}' is a tuple")
        outputs[value] = f"out{len(outputs)}"
        params.append(Param(outputs[value], value, node.array_shape.dtype.name,
                            node.array_shape.dims, "output"))
    return params, buffers, outputs


def _render(kernel: Kernel, plan: CodeGenPlan, name: str, params: list[Param],
            emitter: Elemental) -> EmittedKernel:
    """The text: the header comment says only what is structural (kind, schedule, op counts),
    each statement's comment names its value by its canonical tag, and the graph's node names
    go into `line_nodes` alone."""
    from compiler.ir.dtypes import dtype as dtype_named

    graph = emitter.graph
    ops = collections.Counter(graph.nodes[n].op for n in kernel.computed)
    header = [f'#include "{PRELUDE}"', "",
              f"// A {kernel.kind} kernel, schedule {plan.schedule}: "
              f"{plan.block_size} threads x {plan.grid_size} blocks"
              + (f", {plan.threads_per_row} threads per row" if plan.threads_per_row else "")
              + (f", {plan.vector_width} elements per thread" if plan.vector_width > 1 else ""),
              f"// {len(kernel.nodes)} nodes computed, {len(kernel.recomputed)} recomputed: "
              + ", ".join(f"{op} {n}" for op, n in sorted(ops.items()))]
    signature = []
    for p in params:
        ctype = storage_ctype(dtype_named(p.dtype))
        qualifier = "const " if p.role == "input" else ""
        signature.append(f"    {qualifier}{ctype}* __restrict__ {p.name}")
    lines = [(text, None) for text in header]
    lines.append((f'extern "C" __global__ void __launch_bounds__({plan.block_size}) '
                  f"{name}(", None))
    lines.extend((text + ("," if k < len(signature) - 1 else ") {"), None)
                 for k, text in enumerate(signature))
    if not signature:
        lines.append(("    ) {", None))
    lines.extend(emitter.body.lines)
    lines.append(("}", None))
    text, line_nodes = [], {}
    for number, (line, node) in enumerate(lines, start=1):
        if node is not None:
            line = f"{line}  // {emitter.tag(node)}"
            line_nodes[number] = [node]
        text.append(line)
    return EmittedKernel(name=name, source="\n".join(text) + "\n", params=params,
                         grid=(plan.grid_size, 1, 1), block=(plan.block_size, 1, 1),
                         shared_bytes=plan.shared_bytes, cooperative=plan.cooperative,
                         plan=plan, line_nodes=line_nodes)


# -- elementwise ----------------------------------------------------------------------------


def _elementwise(emitter: Elemental, output_nodes: list[Node], buffers: dict[str, str],
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
        step = "gridDim.x * blockDim.x" + (f" * {width}" if width > 1 else "")
        start = "blockIdx.x * blockDim.x + threadIdx.x"
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
                    pointer = _pointer(buffers[node.name], emitter.address(node, index))
                    body.line(f"fx_store_vec({pointer}, {values});", node.name)


def _lane_index(emitter: Elemental, node: Node, element: str, size: int) -> Index:
    """The index of the output `node` at a lane's linear element."""
    return emitter.delinearize(Ix.var(element, size), node.array_shape.dims)


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
        pointer = _pointer(emitter.buffers[name], emitter.address(node, index))
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


def _pointer(buffer: str, offset: str) -> str:
    return f"{buffer} + {offset}" if offset.isidentifier() else f"{buffer} + ({offset})"


# -- rows -----------------------------------------------------------------------------------


def _split_index(emitter: Elemental, dims, rows: int, row: Ix, column: Ix) -> Index:
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


def _rows(graph: Graph, kernel: Kernel, emitter: Elemental, output_nodes: list[Node],
          buffers: dict[str, str], plan: CodeGenPlan) -> None:
    """One row per `threads_per_row` threads, several rows per block when they are short.

    For each reduction over the same rows, in graph order (a phase): the row's threads stride
    over its columns accumulating in the accumulation type, combine with shuffles within a
    warp and through shared memory across warps, and all end with the result, which later
    phases and the epilogue find in the value cache at the row's index. Then the epilogue
    writes the outputs with the reduction's input size (per column) and with its output size
    (one thread per row). Outputs of other sizes get grid-stride loops after the row loop.
    With a `row_cache`, the loops over the row share values through registers (`_RowCache`).
    """
    body = emitter.body
    rows, length = plan.rows, plan.row_length
    threads, per_block = plan.threads_per_row, plan.rows_per_block
    reductions = [graph.nodes[n] for n in row_reductions(graph, kernel, rows, length)]
    second = global_reductions(graph, kernel) if plan.cooperative else []
    scratch = _scratch_pointers(graph, emitter, reductions) if second else {}
    if second:
        late = {n.name for n in output_nodes if _depends_on(graph, n.name, set(second),
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
    loop = (f"for (int row_base = blockIdx.x * {per_block}; row_base < {rows}; "
            f"row_base += gridDim.x * {per_block}) {{")
    wide = [n for n in output_nodes if n.array_shape.size == rows * length and length > 1]
    narrow = [n for n in output_nodes if n.array_shape.size == rows and n not in wide]
    with body.block(loop), emitter.scope():
        body.line("const int r = row_base + row_slot;")
        cache = _RowCache(emitter, plan, row_cache_reads(
            graph, kernel, [n.name for n in reductions], [n.name for n in wide])) \
            if plan.row_cache else None
        for node in reductions:
            shared_offset = _row_phase(graph, emitter, node, plan, row_ix, column_ix,
                                       shared_offset, cache)
        if wide:
            with body.block(f"if (r < {rows}) {{"), emitter.scope():
                with _row_columns(emitter, plan, None, cache):
                    for node in wide:
                        index = _split_index(emitter, node.array_shape.dims, rows, row_ix,
                                             column_ix)
                        emitter.store(node, buffers[node.name], index)
        if cache is not None:
            cache.declare()
        if narrow or scratch:
            with body.block(f"if (r < {rows} && t == 0) {{"), emitter.scope():
                for node in narrow:
                    index = emitter.delinearize(row_ix, node.array_shape.dims)
                    emitter.store(node, buffers[node.name], index)
                for node in reductions if scratch else ():
                    index = emitter.delinearize(row_ix, node.array_shape.dims)
                    emitter.store(node, scratch[node.name], index)
    done = {rows * length, rows}
    others = [n for n in output_nodes if n.array_shape.size not in done]
    if second:
        body.line("fx_grid_sync();  // every row's results are in scratch")
        with emitter.scope():
            saved = dict(emitter.buffers)
            emitter.buffers.update(scratch)  # phase 2 reads the row results back
            _columns(graph, kernel, emitter, others + phase2, buffers, plan, second[0])
            emitter.buffers.clear()
            emitter.buffers.update(saved)
    elif others:
        _elementwise(emitter, others, buffers, plan)


def _scratch_pointers(graph: Graph, emitter: Elemental, reductions: list[Node]) -> dict[str, str]:
    """{row reduction: a typed pointer into scratch}, each slice 16-byte aligned."""
    pointers, offset = {}, 0
    for node in reductions:
        shape = node.array_shape
        ctype = storage_ctype(shape.dtype)
        pointer = emitter.fresh(f"{emitter.tag(node.name)}_scratch")
        emitter.body.line(f"{ctype}* {pointer} = reinterpret_cast<{ctype}*>({SCRATCH} + "
                          f"{offset});", node.name)
        pointers[node.name] = pointer
        offset += -(-shape.size * shape.dtype.bits // 8 // 16) * 16
    return pointers


class _RowCache:
    """The register row cache of a plan with `row_cache` = K (plan.py's docstring).

    Each loop over the row is unrolled over k < K (`_row_columns`). In the loop where a value
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
def _row_columns(emitter: Elemental, plan: CodeGenPlan, node: str | None,
                 cache: _RowCache | None, chunk: tuple[str, str] | None = None) -> Iterator[None]:
    """The loop of a row's threads over its columns `c` (or those of a chunk), in a cache
    scope: strided, or with a row cache unrolled over its K elements per thread."""
    body, threads, length = emitter.body, plan.threads_per_row, plan.row_length
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


def _row_phase(graph: Graph, emitter: Elemental, node: Node, plan: CodeGenPlan, row: Ix,
               column: Ix, shared_offset: int, cache: _RowCache | None = None) -> int:
    acc, shared_offset = _row_partial(graph, emitter, node, plan, row, column, shared_offset,
                                      cache=cache)
    _finish_reduction(emitter, node, acc, emitter.delinearize(row, node.array_shape.dims))
    return shared_offset


def _row_partial(graph: Graph, emitter: Elemental, node: Node, plan: CodeGenPlan, row: Ix,
                 column: Ix, shared_offset: int, chunk: tuple[str, str] | None = None,
                 cache: _RowCache | None = None) -> tuple[str, int]:
    """The reduction of row `r` (or of its columns [chunk[0], chunk[1]) when split) without
    the init value, in an accumulator every thread of the row ends with; and the next free
    byte of shared memory."""
    body = emitter.body
    rows, length, threads = plan.rows, plan.row_length, plan.threads_per_row
    reducer = node.attrs["reducer"]
    dtype = node.array_shape.dtype
    acc_dtype = accumulation_dtype(dtype)
    acc_ctype = value_ctype(acc_dtype)
    shuffle_ctype = _shuffle_ctype(acc_ctype)
    functor = reducer_functor(reducer)
    identity = reducer_identity(reducer, acc_dtype)
    acc = emitter.fresh(f"{emitter.tag(node.name)}_acc")
    body.line(f"// {emitter.tag(node.name)}: {reducer} over each row of {length}")
    body.line(f"{shuffle_ctype} {acc} = {identity};", node.name)
    with body.block(f"if (r < {rows}) {{", node.name), emitter.scope():
        with _row_columns(emitter, plan, node.name, cache, chunk):
            source = graph.nodes[node.operands[0]].array_shape
            kept = [n for d, n in enumerate(source.dims) if d not in node.attrs["dimensions"]]
            reduced = [source.dims[d] for d in sorted(node.attrs["dimensions"])]
            index = emitter.reduce_operand_index(
                node, emitter.delinearize(row, kept), emitter.delinearize(column, reduced))
            x = emitter.value(node.operands[0], index)
            body.line(f"{acc} = {functor}()({acc}, {shuffle_ctype}({x}));", node.name)
    width = min(threads, WARP)
    body.line(f"{acc} = fx_group_allreduce({acc}, {width}, {functor}());", node.name)
    if threads > WARP:
        warps = threads // WARP
        partial = emitter.fresh(f"{emitter.tag(node.name)}_partial")
        body.line(f"{shuffle_ctype}* {partial} = reinterpret_cast<{shuffle_ctype}*>"
                  f"(shared + {shared_offset}) + row_slot * {warps};", node.name)
        body.line(f"if (t % {WARP} == 0) {partial}[t / {WARP}] = {acc};", node.name)
        body.line("__syncthreads();", node.name)
        body.line(f"{acc} = {identity};", node.name)
        body.line(f"for (int w = 0; w < {warps}; ++w) {acc} = {functor}()({acc}, "
                  f"{partial}[w]);", node.name)
        body.line("__syncthreads();  // the partials are reused by the next row", node.name)
        shared_offset += 8 * plan.rows_per_block * warps
    return acc, shared_offset


def _finish_reduction(emitter: Elemental, node: Node, acc: str, index: Index) -> str:
    """The reduce's value from its accumulator `acc` (of `_shuffle_ctype`): the init value
    combined once, rounded once to a 16-bit type; declared and remembered at `index`."""
    dtype = node.array_shape.dtype
    acc_dtype = accumulation_dtype(dtype)
    acc_ctype = value_ctype(acc_dtype)
    init = emitter.value(node.operands[1], ())
    combined = (f"{reducer_functor(node.attrs['reducer'])}()("
                f"{_shuffle_ctype(acc_ctype)}({init}), {acc})")
    result = emitter.declare(node, _round(dtype, f"{acc_ctype}({combined})")
                             if dtype != acc_dtype else f"{acc_ctype}({combined})")
    emitter.remember(node.name, index, result)
    return result


def _shuffle_ctype(ctype: str) -> str:
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


# -- columns --------------------------------------------------------------------------------


def accumulator_ctype(node: Node) -> str:
    """The C type a reduction accumulates in (its accumulation type, as shuffles move it)."""
    return _shuffle_ctype(value_ctype(accumulation_dtype(node.array_shape.dtype)))


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


def _depends_on(graph: Graph, name: str, targets: set[str], within: set[str]) -> bool:
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


def _columns(graph: Graph, kernel: Kernel, emitter: Elemental, output_nodes: list[Node],
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
            and n.name not in names and not _depends_on(graph, n.name, names, computed)]
    narrow = [n for n in output_nodes if n.array_shape.size == columns and n not in wide]
    if groups > 1 and "shared" not in emitter.used_names:
        body.line("FX_SHARED_MEMORY(shared);")
    body.line(f"const int x = threadIdx.x % {tile};  // column within the tile")
    body.line(f"const int g = threadIdx.x / {tile};  // row group")
    emitter.used_names.update({"x", "g", "tile", "col", "j", "shared", "w"})
    column_ix, row_ix = Ix.var("col", columns), Ix.var("j", length)
    loop = (f"for (int tile = blockIdx.x * {tile}; tile < {columns}; "
            f"tile += gridDim.x * {tile}) {{")
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
            result = emitter.declare(node, _round(dtype, value) if dtype != acc_dtype else value)
            emitter.remember(node.name, emitter.delinearize(column_ix, node.array_shape.dims),
                             result)
        if narrow:
            with body.block(f"if (col < {columns} && g == 0) {{"), emitter.scope():
                for node in narrow:
                    emitter.store(node, buffers[node.name],
                                  emitter.delinearize(column_ix, node.array_shape.dims))
    others = [n for n in output_nodes if n not in wide and n not in narrow]
    if others:
        _elementwise(emitter, others, buffers, plan)

