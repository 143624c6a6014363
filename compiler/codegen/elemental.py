"""The elemental emitter: the CUDA C statements that compute one node's value at one index.

Like XLA's elemental IR emitter, it asks for a node's value at a multi-index and recursively
asks for the operands' values at the indices the op derives (index propagation through
broadcast, reshape, transpose, slice, pad, concatenate, reverse, dynamic slices, gather, whose
start indices it reads elementally from the indices operand). Reductions (reduce,
reduce-window) are serial loops inside the thread that needs the value. Each
(node, index) pair is computed once per thread and kept in a named local (the value cache);
branches (pad, concatenate, dynamic-update-slice) and loops open a cache scope whose values
are forgotten when it closes, since C locals declared there are not visible after it.

Numerics are the reference interpreter's (compiler/ir/interpreter.py): f16/bf16 values live in
`float` locals rounded to their type after every op; reductions accumulate in
`accumulation_dtype` (f32 for 16-bit floats) and round once; integer arithmetic wraps (done in
unsigned arithmetic, where C would call signed overflow undefined); XLA's rules for division by
zero, shifts and float-to-int conversion come from helpers in fx_prelude.cuh.

Schedules (compiler/codegen/schedules/) own the loops and the thread mapping; this module
only writes the straight-line code inside them through a `Body`. The C text of each op (types,
literals, the expression of an add or a convert) is c_syntax.py's: this module decides which
values to compute at which indices.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Iterator

import numpy as np

from compiler.codegen.c_syntax import (COMPARISONS, Body, CodegenUnsupported, binary_expr,
                                       c_identifier, convert_expr, literal, load_expr,
                                       round_to_dtype, store_expr, unary_expr, value_ctype)
from compiler.codegen.indexing import Index, Ix, delinearize, linear_expr, linearize, reshape_index
from compiler.codegen.plan import SCRATCH
from compiler.ir.dtypes import S32 as _S32, DType, accumulation_dtype
from compiler.ir.graph import Graph, Node
from compiler.ir.idioms import function_idioms
from compiler.ir.interpreter import _Window
from compiler.ir.ops import OPS


# -- the emitter ----------------------------------------------------------------------------


# Nested `value` calls past which a kernel's chain of elementwise ops is computed without
# recursion (`Elemental._compute_chain`).
DEEP_CHAIN = 200


class Elemental:
    """Computes node values at indices, writing statements into `body`.

    `buffers` maps the kernel's input values (node names) to their C parameter names; any
    other node must be one the kernel computes, or a scalar constant (inlined as a literal).

    Schedules write the launch's geometry and its global scratch only through `block_index`,
    `grid_blocks` and `scratch` (C expressions): a horizontal kernel (schedules/horizontal.py)
    renames them for each of its parts, which sees its own range of blocks as a whole grid
    and its own slice of the scratch buffer.
    """

    def __init__(self, graph: Graph, computed: set[str], buffers: dict[str, str], body: Body):
        self.graph = graph
        self.computed = computed
        self.buffers = buffers
        self.body = body
        self.block_index = "blockIdx.x"
        self.grid_blocks = "gridDim.x"
        self.scratch = SCRATCH
        self.scopes: list[dict[tuple, str]] = [{}]
        self.used_names = set()
        self.tags: dict[str, str] = {}
        self.load_log: list[tuple[str, Index]] | None = None  # see `dry_run`
        self._depth = 0   # nested `value` calls: see `_compute_chain`

    # -- names and scopes -----------------------------------------------------------------

    def tag(self, name: str) -> str:
        """The node's canonical C name: `v<k>_<op>` (`v<k>_load` for an input), k counting
        the nodes in the order the kernel first touches them. Graph node names never reach the
        source, so kernels of the same structure have the same text (and compile once);
        `Body` keeps the node names in the line map instead."""
        if name not in self.tags:
            op = "load" if name in self.buffers else self.graph.nodes[name].op
            idiom = function_idioms(self.graph).get(name)
            if op != "load" and idiom is not None and idiom.applies(self.computed):
                op = idiom.function
            self.tags[name] = f"v{len(self.tags)}_{c_identifier(op)}"
        return self.tags[name]

    @property
    def used_names(self) -> set[str]:
        """The C names taken in the kernel so far (parameters, locals); a schedule adds its
        own, or replaces the set (a horizontal kernel's parts each start afresh)."""
        return self._used_names

    @used_names.setter
    def used_names(self, names: set[str]) -> None:
        self._used_names = names
        self._suffixes: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        """`base`, or the first of `base_1`, `base_2`, ... not taken yet. The suffix `fresh`
        last gave a base is kept, and the search starts there: names are only ever added to
        the set, so those before it are all taken (a value emitted thousands of times, as in
        a fused scan, would otherwise make each new name a walk over all the earlier ones)."""
        base = c_identifier(base)
        i = self._suffixes.get(base, 0)
        name = f"{base}_{i}" if i else base
        while name in self._used_names:
            i += 1
            name = f"{base}_{i}"
        self._suffixes[base] = i
        self._used_names.add(name)
        return name

    @contextmanager
    def dry_run(self) -> Iterator[list[tuple[str, Index]]]:
        """Emit into a scratch body, recording each buffer load as (node, index); afterwards the
        body, names, tags and value cache are as before. A schedule looks ahead with it at what
        its code will read (the elementwise schedule, to find loads it can vectorise)."""
        saved = (self.body, self.scopes, self._used_names, self._suffixes, self.tags,
                 self.load_log)
        self.body = Body(depth=self.body.depth, limit=self.body.limit)
        self.scopes = [dict(scope) for scope in self.scopes]
        self._used_names, self._suffixes = set(self._used_names), dict(self._suffixes)
        self.tags = dict(self.tags)
        self.load_log = []
        try:
            yield self.load_log
        finally:
            (self.body, self.scopes, self._used_names, self._suffixes, self.tags,
             self.load_log) = saved

    @contextmanager
    def scope(self) -> Iterator[None]:
        self.scopes.append({})
        try:
            yield
        finally:
            self.scopes.pop()

    def remember(self, node: str, index: Index, expr: str) -> None:
        self.scopes[-1][(node, tuple(ix.c() for ix in index))] = expr

    def _cached(self, node: str, index: Index) -> str | None:
        key = (node, tuple(ix.c() for ix in index))
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        return None

    def new_index_local(self, expr: str, bound: int) -> str:
        name = self.fresh("idx")
        self.body.line(f"const int {name} = {expr};")
        return name

    def delinearize(self, linear: Ix, dims) -> Index:
        return delinearize(linear, dims, self.new_index_local)

    def linearize(self, index: Index, dims) -> Ix:
        return linearize(index, dims, self.new_index_local)

    def address(self, node: Node, index: Index) -> str:
        """Offset of the element at `index` in the node's buffer, honouring its layout."""
        shape = node.array_shape
        major_to_minor = list(reversed(shape.minor_to_major))
        physical = tuple(index[d] for d in major_to_minor)
        return linear_expr(physical, [shape.dims[d] for d in major_to_minor])

    # -- values ---------------------------------------------------------------------------

    def value(self, name: str, index: Index) -> str:
        """A C expression (a local or a literal) of node `name`'s value at `index`."""
        cached = self._cached(name, index)
        if cached is not None:
            return cached
        node = self.graph.nodes[name]
        if node.op == "constant" and node.array_shape.size == 1 and node.attrs.get("value") \
                is not None:
            return literal(node.array_shape.dtype, np.asarray(node.attrs["value"]).reshape(-1)[0])
        if name in self.buffers:
            expr = self._load(node, index)
        elif name in self.computed:
            if self._depth >= DEEP_CHAIN:
                self._compute_chain(name, index)
                cached = self._cached(name, index)
                if cached is not None:
                    return cached
            self._depth += 1
            try:
                expr = self._compute(node, index)
            finally:
                self._depth -= 1
        else:
            raise CodegenUnsupported(f"'{name}' is neither an input nor computed by the kernel")
        self.remember(name, index, expr)
        return expr

    def _compute_chain(self, name: str, index: Index) -> None:
        """Values of `name`'s elementwise operands at `index` (operands read at the same
        index), deepest first, without recursion: a chain of 100,000 elementwise ops is one
        kernel, and computing it by recursion would exceed Python's stack. Only reached past
        DEEP_CHAIN nested values, so ordinary kernels are emitted as they always were (the
        order is the recursion's: operands left to right, each before its reader)."""
        order, stack, seen = [], [(name, False)], set()
        while stack:
            current, expanded = stack.pop()
            if expanded:
                order.append(current)
                continue
            if current in seen or self._cached(current, index) is not None:
                continue
            seen.add(current)
            stack.append((current, True))
            node = self.graph.nodes[current]
            info = OPS.get(node.op)
            if info is None or not info.is_elementwise or node.shape.is_tuple:
                continue
            for operand in reversed(node.operands):
                if operand in self.computed and operand not in self.buffers:
                    stack.append((operand, False))
        saved, self._depth = self._depth, 0
        try:
            for value in order[:-1]:     # `name` itself is the caller's
                self.value(value, index)
        finally:
            self._depth = saved

    def declare(self, node: Node, expr: str) -> str:
        local = self.fresh(self.tag(node.name))
        self.body.line(f"const {value_ctype(node.array_shape.dtype)} {local} = {expr};",
                       node.name)
        return local

    def _load(self, node: Node, index: Index) -> str:
        if node.shape.is_tuple:
            raise CodegenUnsupported(f"input '{node.name}' is a tuple")
        if self.load_log is not None:
            self.load_log.append((node.name, index))
        element = f"{self.buffers[node.name]}[{self.address(node, index)}]"
        return self.declare(node, load_expr(node.array_shape.dtype, element))

    def store(self, node: Node, buffer: str, index: Index) -> None:
        value = self.value(node.name, index)
        target = f"{buffer}[{self.address(node, index)}]"
        self.body.line(f"{target} = {store_expr(node.array_shape.dtype, value)};", node.name)

    def _compute(self, node: Node, index: Index) -> str:
        op = node.op
        if node.shape.is_tuple:
            raise CodegenUnsupported(f"{op} '{node.name}' has a tuple shape")
        idiom = function_idioms(self.graph).get(node.name)
        if idiom is not None and idiom.applies(self.computed):
            argument = self.value(idiom.argument, index)
            return self.declare(node, f"{idiom.c_function}({argument})")
        handler = getattr(self, "_op_" + op.replace("-", "_"), None)
        if handler is not None:
            return handler(node, index)
        dtype = node.array_shape.dtype
        operands = node.operands
        info = OPS.get(op)
        if info is None or not info.is_elementwise:
            raise CodegenUnsupported(f"no CUDA code for {op}")
        if len(operands) == 1:
            return self.declare(node, unary_expr(op, dtype, self.value(operands[0], index)))
        a, b = (self.value(o, index) for o in operands)
        return self.declare(node, binary_expr(op, dtype, a, b))

    def _operand_dtype(self, node: Node, k: int = 0) -> DType:
        return self.graph.nodes[node.operands[k]].array_shape.dtype

    # elementwise with special shapes of arguments

    def _op_compare(self, node: Node, index: Index) -> str:
        dtype = self._operand_dtype(node)
        if node.attrs.get("type") == "TOTALORDER" and dtype.is_float:
            raise CodegenUnsupported("compare with type=TOTALORDER")
        a, b = (self.value(o, index) for o in node.operands)
        return self.declare(node, f"({a} {COMPARISONS[node.attrs['direction']]} {b})")

    def _op_is_finite(self, node: Node, index: Index) -> str:
        return self.declare(node, f"isfinite({self.value(node.operands[0], index)})")

    def _op_select(self, node: Node, index: Index) -> str:
        predicate = self.graph.nodes[node.operands[0]].array_shape
        p = self.value(node.operands[0], index if predicate.rank else ())
        a, b = (self.value(o, index) for o in node.operands[1:])
        return self.declare(node, f"{p} ? {a} : {b}")

    def _op_clamp(self, node: Node, index: Index) -> str:
        low, x, high = (self.value(o, index) for o in node.operands)
        return self.declare(node, f"fx_min(fx_max({x}, {low}), {high})")

    def _op_convert(self, node: Node, index: Index) -> str:
        x = self.value(node.operands[0], index)
        return self.declare(node, convert_expr(self._operand_dtype(node),
                                               node.array_shape.dtype, x))

    def _op_bitcast_convert(self, node: Node, index: Index) -> str:
        source, target = self._operand_dtype(node), node.array_shape.dtype
        if source.bits != target.bits or source.bits not in (32, 64) or \
                self.graph.nodes[node.operands[0]].array_shape.dims != node.array_shape.dims:
            raise CodegenUnsupported(f"bitcast-convert {source.name} -> {target.name}")
        x = self.value(node.operands[0], index)
        return self.declare(node, f"fx_bitcast<{value_ctype(target)}>({x})")

    def _op_iota(self, node: Node, index: Index) -> str:
        position = index[node.attrs["iota_dimension"]].c()
        return self.declare(node, convert_expr(_S32, node.array_shape.dtype, f"({position})"))

    # movement: the operand's index derived from the output's

    def _op_copy(self, node: Node, index: Index) -> str:
        return self.value(node.operands[0], index)

    def _op_broadcast(self, node: Node, index: Index) -> str:
        dims = node.attrs.get("dimensions", ())
        return self.value(node.operands[0], tuple(index[d] for d in dims))

    def _op_reshape(self, node: Node, index: Index) -> str:
        source = self.graph.nodes[node.operands[0]].array_shape
        return self.value(node.operands[0], reshape_index(index, node.array_shape.dims,
                                                          source.dims, self.new_index_local))

    def _op_bitcast(self, node: Node, index: Index) -> str:
        """Logical index -> the target's physical order -> the source's physical order."""
        source = self.graph.nodes[node.operands[0]].array_shape
        target = node.array_shape
        if source.dtype != target.dtype:
            raise CodegenUnsupported("bitcast that changes the element type")
        target_order = list(reversed(target.minor_to_major))
        source_order = list(reversed(source.minor_to_major))
        linear = self.linearize(tuple(index[d] for d in target_order),
                                [target.dims[d] for d in target_order])
        physical = self.delinearize(linear, [source.dims[d] for d in source_order])
        logical: list[Ix] = [Ix.const(0)] * source.rank
        for position, d in enumerate(source_order):
            logical[d] = physical[position]
        return self.value(node.operands[0], tuple(logical))

    def _op_transpose(self, node: Node, index: Index) -> str:
        operand: list[Ix] = [Ix.const(0)] * len(index)
        for i, d in enumerate(node.attrs["dimensions"]):
            operand[d] = index[i]
        return self.value(node.operands[0], tuple(operand))

    def _op_slice(self, node: Node, index: Index) -> str:
        operand = tuple(ix.times(stride).plus(start)
                        for ix, (start, _, stride) in zip(index, node.attrs["slice"]))
        return self.value(node.operands[0], operand)

    def _op_reverse(self, node: Node, index: Index) -> str:
        dims = node.array_shape.dims
        flipped = set(node.attrs["dimensions"])
        operand = tuple(ix.times(-1).plus(dims[d] - 1) if d in flipped else ix
                        for d, ix in enumerate(index))
        return self.value(node.operands[0], operand)

    def _branch_value(self, node: Node, arms: list[tuple[str | None, callable]]) -> str:
        """`T v; if (cond0) { v = arm0(); } else if ... else { v = last(); }`: each arm computes
        its value in its own cache scope, so nothing it reads out of bounds is evaluated."""
        local = self.fresh(self.tag(node.name))
        self.body.line(f"{value_ctype(node.array_shape.dtype)} {local};", node.name)
        for k, (condition, arm) in enumerate(arms):
            if k == 0:
                opener = f"if ({condition}) {{"
            elif condition is None:
                opener = "} else {"
            else:
                opener = f"}} else if ({condition}) {{"
            if k > 0:
                self.body.depth -= 1
            self.body.line(opener, node.name)
            self.body.depth += 1
            with self.scope():
                self.body.line(f"{local} = {arm()};", node.name)
        self.body.depth -= 1
        self.body.line("}")
        return local

    def _op_pad(self, node: Node, index: Index) -> str:
        source = self.graph.nodes[node.operands[0]].array_shape
        pad_value = self.value(node.operands[1], ())
        conditions, operand = [], []
        for ix, n, (low, high, interior) in zip(index, source.dims, node.attrs["padding"]):
            shifted = ix.plus(-low)
            step = interior + 1
            if low > 0:
                conditions.append(f"{shifted.c()} >= 0")
            if interior > 0:
                conditions.append(f"({shifted.c()}) % {step} == 0")
                position = Ix.var(self.new_index_local(f"({shifted.c()}) / {step}",
                                                       max(n, 1)), max(n, 1))
            else:
                position = shifted
            if high > 0 or interior > 0:
                conditions.append(f"{position.c()} < {n}")
            operand.append(position)
        if not conditions:
            return self.value(node.operands[0], tuple(operand))
        return self._branch_value(node, [
            (" && ".join(conditions), lambda: self.value(node.operands[0], tuple(operand))),
            (None, lambda: pad_value)])

    def _op_concatenate(self, node: Node, index: Index) -> str:
        axis = node.attrs["dimensions"][0]
        arms, start = [], 0
        for k, name in enumerate(node.operands):
            size = self.graph.nodes[name].array_shape.dims[axis]
            piece = tuple(ix.plus(-start) if d == axis else ix for d, ix in enumerate(index))
            condition = None if k == len(node.operands) - 1 else f"{index[axis].c()} < " \
                                                                 f"{start + size}"
            arms.append((condition, lambda name=name, piece=piece: self.value(name, piece)))
            start += size
        if len(arms) == 1:
            return arms[0][1]()
        return self._branch_value(node, arms)

    def _clamped_starts(self, node: Node, first: int, dims, sizes) -> list[str]:
        """XLA clamps dynamic start indices so the window lies inside the operand."""
        starts = []
        for k, (n, size) in enumerate(zip(dims, sizes)):
            raw = self.value(node.operands[first + k], ())
            name = self.fresh(f"{self.tag(node.name)}_start{k}")
            self.body.line(f"const int {name} = fx_clamp_index({raw}, {max(n - size, 0)});",
                           node.name)
            starts.append(name)
        return starts

    def _op_dynamic_slice(self, node: Node, index: Index) -> str:
        source = self.graph.nodes[node.operands[0]].array_shape
        starts = self._clamped_starts(node, 1, source.dims, node.array_shape.dims)
        operand = tuple(Ix.var(self.new_index_local(f"{s} + {ix.c()}", n), n)
                        for s, ix, n in zip(starts, index, source.dims))
        return self.value(node.operands[0], operand)

    def _op_dynamic_update_slice(self, node: Node, index: Index) -> str:
        update = self.graph.nodes[node.operands[1]].array_shape
        dims = node.array_shape.dims
        starts = self._clamped_starts(node, 2, dims, update.dims)
        inside = " && ".join(f"{ix.c()} >= {s} && {ix.c()} < {s} + {k}"
                             for ix, s, k in zip(index, starts, update.dims)) or "true"

        def from_update() -> str:
            at = tuple(Ix.var(self.new_index_local(f"{ix.c()} - {s}", k), k)
                       for ix, s, k in zip(index, starts, update.dims))
            return self.value(node.operands[1], at)

        return self._branch_value(node, [(inside, from_update),
                                         (None, lambda: self.value(node.operands[0], index))])

    def _op_gather(self, node: Node, index: Index) -> str:
        """XLA's gather, as the interpreter computes it: the output dims not in offset_dims
        are the batch index (the start indices' index without index_vector_dim); operand dim
        d reads clamp(start_d) + offset_d, where start_d is the index vector's component that
        start_index_map sends to d (read from the indices operand at this batch index), the
        batch index along the matching start_indices_batching_dim for an operand batching
        dim, else 0; offset_d is the output index at the offset dim of a window dim (neither
        collapsed nor batching), else 0. Starts clamp so the slice lies inside the operand."""
        attrs = node.attrs
        operand = self.graph.nodes[node.operands[0]].array_shape
        indices = self.graph.nodes[node.operands[1]].array_shape
        offset_dims = tuple(attrs["offset_dims"])
        sizes = tuple(attrs["slice_sizes"])
        index_map = tuple(attrs["start_index_map"])
        batching = tuple(attrs.get("operand_batching_dims", ()))
        indices_batching = tuple(attrs.get("start_indices_batching_dims", ()))
        vector_dim = attrs["index_vector_dim"]
        skipped = set(attrs["collapsed_slice_dims"]) | set(batching)
        window_dims = [d for d in range(operand.rank) if d not in skipped]
        batch = [ix for d, ix in enumerate(index) if d not in offset_dims]
        offsets = [index[offset_dims[j]] for j in range(len(window_dims))]

        def batch_axis(indices_dim: int) -> int:
            return indices_dim if indices_dim < vector_dim else indices_dim - 1

        operand_index: list[Ix] = []
        for d, n in enumerate(operand.dims):
            high = max(n - sizes[d], 0)
            offset = offsets[window_dims.index(d)] if d in window_dims else Ix.const(0)
            if d in index_map and high > 0:
                component = index_map.index(d)
                at = list(batch)
                if vector_dim < indices.rank:
                    at.insert(vector_dim, Ix.const(component))
                raw = self.value(node.operands[1], tuple(at))
                start = self.fresh(f"{self.tag(node.name)}_start{d}")
                self.body.line(f"const int {start} = fx_clamp_index({raw}, {high});", node.name)
                if offset.is_const and offset.offset == 0:
                    operand_index.append(Ix.var(start, high + 1))
                else:
                    operand_index.append(Ix.var(self.new_index_local(
                        f"{start} + {offset.c()}", n), n))
            elif d in batching and high > 0:
                start = batch[batch_axis(indices_batching[batching.index(d)])]
                if start.max_value() > high:
                    start = Ix.var(self.new_index_local(f"min({start.c()}, {high})",
                                                        high + 1), high + 1)
                if offset.is_const and offset.offset == 0:
                    operand_index.append(start)
                else:
                    operand_index.append(Ix.var(self.new_index_local(
                        f"{start.c()} + {offset.c()}", n), n))
            else:
                operand_index.append(offset)  # the start clamps to 0
        return self.value(node.operands[0], tuple(operand_index))

    # reductions, computed serially by one thread (schedules replace this for their hero)

    def _op_reduce(self, node: Node, index: Index) -> str:
        reducer = node.attrs.get("reducer")
        if reducer is None or len(node.operands) != 2:
            raise CodegenUnsupported("reduce with a general reducer")
        source = self.graph.nodes[node.operands[0]].array_shape
        reduced = sorted(node.attrs["dimensions"])
        dtype = node.array_shape.dtype
        acc_dtype = accumulation_dtype(dtype)
        init = self.value(node.operands[1], ())
        acc = self.fresh(f"{self.tag(node.name)}_acc")
        self.body.line(f"{value_ctype(acc_dtype)} {acc} = {init};", node.name)
        count = math.prod(source.dims[d] for d in reduced)
        k = self.fresh("k")
        with self.body.block(f"for (int {k} = 0; {k} < {count}; ++{k}) {{", node.name):
            with self.scope():
                inner = self.delinearize(Ix.var(k, count), [source.dims[d] for d in reduced])
                operand = self.reduce_operand_index(node, index, inner)
                x = self.value(node.operands[0], operand)
                self.body.line(f"{acc} = {binary_expr(reducer, acc_dtype, acc, x)};", node.name)
        return self.declare(node, round_to_dtype(dtype, acc) if dtype != acc_dtype else acc)

    def _op_reduce_window(self, node: Node, index: Index) -> str:
        """One thread loops over its output element's window, as the interpreter does: the
        accumulator starts at the init value and combines every tap in row-major window order
        that falls on an operand element (taps in padding or in a base-dilation hole are
        skipped); the operand position along d is q = o * stride + k * window_dilation -
        pad_low, valid when 0 <= q <= (n - 1) * base_dilation and q % base_dilation == 0, and
        reads element q / base_dilation. 16-bit floats accumulate in f32, rounded once."""

        reducer = node.attrs.get("reducer")
        if reducer is None or len(node.operands) != 2:
            raise CodegenUnsupported("reduce-window with a general reducer")
        source = self.graph.nodes[node.operands[0]].array_shape
        window = _Window.parse(node.attrs.get("window", {}), source.rank)
        dtype = node.array_shape.dtype
        acc_dtype = accumulation_dtype(dtype)
        init = self.value(node.operands[1], ())
        acc = self.fresh(f"{self.tag(node.name)}_acc")
        self.body.line(f"{value_ctype(acc_dtype)} {acc} = {init};", node.name)
        opened = 0
        conditions: list[str] = []
        operand: list[Ix] = []
        self.scopes.append({})
        for d, (o, n) in enumerate(zip(index, source.dims)):
            size, stride = window.size[d], window.stride[d]
            low = window.pad[d][0]
            base, dilation = window.base_dilation[d], window.window_dilation[d]
            o_low = min(o.offset, o.offset + o.scale * (o.term_range() - 1))
            lowest = o_low * stride - low
            highest = o.max_value() * stride + (size - 1) * dilation - low
            if size > 1:
                k = self.fresh(f"k{d}")
                self.body.line(f"for (int {k} = 0; {k} < {size}; ++{k}) {{", node.name)
                self.body.depth += 1
                opened += 1
                self.scopes.append({})
                tap = f"{k} * {dilation}" if dilation != 1 else k
                term = f"({o.c()}) * {stride}" if stride != 1 else o.c()
                expr = f"{term} + {tap}" + (f" - {low}" if low > 0 else
                                            f" + {-low}" if low < 0 else "")
                q_text = self.new_index_local(expr, max(highest + 1, 1))
                q = Ix.var(q_text, max((n - 1) * base + 1, 1))  # read only where in range
            else:
                q = o.times(stride).plus(-low)
                q_text = q.c()
            if lowest < 0:
                conditions.append(f"{q_text} >= 0")
            if highest > (n - 1) * base:
                conditions.append(f"{q_text} <= {(n - 1) * base}")
            if base > 1:
                conditions.append(f"({q_text}) % {base} == 0")
                operand.append(Ix.var(self.new_index_local(f"({q_text}) / {base}", n), n))
            else:
                operand.append(q)  # inside the conditions: 0 <= q < n
        if conditions:
            self.body.line(f"if ({' && '.join(conditions)}) {{", node.name)
            self.body.depth += 1
        with self.scope():
            x = self.value(node.operands[0], tuple(operand))
            self.body.line(f"{acc} = {binary_expr(reducer, acc_dtype, acc, x)};", node.name)
        if conditions:
            self.body.depth -= 1
            self.body.line("}")
        for _ in range(opened):
            self.scopes.pop()
            self.body.depth -= 1
            self.body.line("}")
        self.scopes.pop()
        return self.declare(node, round_to_dtype(dtype, acc) if dtype != acc_dtype else acc)

    def reduce_operand_index(self, node: Node, kept: Index, reduced: Index) -> Index:
        """The operand index of a reduce from its output index and its reduced dims' index."""
        source = self.graph.nodes[node.operands[0]].array_shape
        dims = set(node.attrs["dimensions"])
        kept_it, reduced_it = iter(kept), iter(reduced)
        return tuple(next(reduced_it) if d in dims else next(kept_it)
                     for d in range(source.rank))



