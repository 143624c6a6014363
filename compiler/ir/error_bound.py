"""How far another correct implementation of a graph may lie from the reference interpreter.

Two correct implementations of a sum of n floats differ when they add in different orders:
NumPy's pairwise sum, a BLAS kernel's blocked dot, a CUDA kernel's per-thread loops, warp
shuffles and atomics, the interpreter's own order. By how much depends on the data, not on the
dtype alone: a long sum with cancellation has a small result and large rounding errors. A fixed
relative tolerance is too loose for most values and too tight for those, and whether a check
passed then depended on the machine's BLAS kernel.

`error_bounds(graph, values, outputs)` bounds, per element of each output, the difference that
the order of accumulation alone can cause. It is computed in float64 from the graph and the
interpreter's values of every node (`evaluate_all`), node by node:

- A sum of n terms x_i, added in any order (recursive, pairwise, blocked, a tree of threads),
  lies within gamma(n) * sum |x_i| of the exact sum, gamma(n) = n*u / (1 - n*u), u the unit
  roundoff of the accumulation type (2^-24 for f32, and f32 for 16-bit floats, which XLA and
  the interpreter accumulate in f32). Higham, "Accuracy and Stability of Numerical Algorithms"
  (2nd ed., SIAM 2002): eq. (4.4) for summation in any order, eq. (3.5) for an inner product
  (the products' rounding included), Lemma 3.1 for a product of n terms. Two implementations
  may each be that far from the exact value, on opposite sides, so the bound is
  ORDER_FACTOR = 2 times that. n is counted per output element by running the op on ones (the
  init value counts as a term; padding and skipped window taps do not), and sum |x_i| by
  running it on the magnitudes: reduce, reduce-window, dot, convolution and scatter-add all
  get their attribute handling from the interpreter itself (`apply_op`).
- Differences the operands already carry propagate: through a sum they add up (plus the
  rounding term above), through a dot as |A| E_B + E_A |B| + E_A E_B, through a product of n
  terms as prod(|x| + E) - prod(|x|), through maximum and minimum as the largest one.
- Through an elementwise op f, the bound is the largest change of f (in float64) over the box
  of operand values within their bounds, taken at the box's corners: exact for monotone ops
  (most of a graph: add, multiply, exp, log, tanh, ...), first order for the others. A
  comparison whose operands may fall on either side gets 1 (both answers allowed), a select
  on such a predicate either branch, a float-to-integer convert its step.
- Data movement (broadcast, reshape, transpose, slice, pad, concatenate, gather, dynamic
  slices) moves the bounds with the values: the op applied to the bounds, with the real index
  operands. An index operand that carries a bound makes the result unbounded.

- A transcendental function (exp, log, tanh, sin, power, ...) is rounded by each
  implementation's math library its own way: CUDA's expf, the host's, NumPy's may each be a
  few ulps from the exact result, so their results may lie TRANSCENDENTAL_ULPS ulps apart. At
  the function itself the per-dtype tolerance of compiler/codegen/check.py covers that; what
  later ops make of it does not, when a sum cancels (in a fused selective scan, a * h + b
  whose terms nearly cancel turns an ulp or two of an exp into hundreds of the result). So the function is a
  source of a bound, as an accumulation is, and the bound propagates as above.

Nodes computed from exact values by the other elementwise ops and data movement only get no
bound (None): every implementation rounds the same IEEE operations on the same operands, and
the per-dtype tolerance of compiler/codegen/check.py covers the ops' own last-bit differences.
The checks add this bound to that tolerance.

What the bound does not model gets inf (anything allowed, nothing can be said): ops that
reinterpret bits or draw random numbers, control flow and general reducers whose computations
do arithmetic, library ops that accumulate in their own ways (fft, triangular-solve, cholesky,
batch norm, custom calls, select-and-scatter), and any op reading an operand that has a bound
where the op is not one of the above.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from compiler.ir import dtypes
from compiler.ir.graph import Graph, Node
from compiler.ir.interpreter import apply_op
from compiler.ir.ops import OPS, Category, index_operands
from compiler.ir.shapes import Shape

# Each of two implementations may be gamma(n) * sum|x| away from the exact sum, on either side.
ORDER_FACTOR = 2.0
# How many units in the last place two implementations' transcendental functions may differ:
# each may be a few ulps from the exact result, at most 4 for the CUDA math library's
# single-precision functions (powf; expf, tanhf, sinf, cosf and erff 2: CUDA C++ Programming
# Guide, "Mathematical Functions"), less for glibc's and NumPy's.
TRANSCENDENTAL_ULPS = 8

# None: exact (no accumulation upstream); an array of the node's shape (float64); a tuple of
# those for tuple-shaped nodes.
Bound = np.ndarray | tuple | None

# Ops that accumulate or round in ways the bound does not model: unbounded even on exact operands.
_UNMODELLED = frozenset({
    "fft", "triangular-solve", "cholesky", "batch-norm-training", "batch-norm-inference",
    "batch-norm-grad", "custom-call", "select-and-scatter", "rng", "rng-bit-generator",
    "stochastic-convert", "all-reduce", "reduce-scatter",
})
# Elementwise ops on bits, not on values: an operand that may differ makes any bit differ.
_BIT_LEVEL = frozenset({
    "bitcast-convert", "popcnt", "count-leading-zeros", "shift-left", "shift-right-logical",
    "shift-right-arithmetic",
})
_LOGICAL = frozenset({"and", "or", "xor", "not"})   # logical on pred, bitwise on integers
_FORWARDING = frozenset({"copy", "opt-barrier", "domain", "add-dependency"})
_MOVEMENT = frozenset({Category.BROADCAST, Category.RESHAPE, Category.TRANSPOSE,
                       Category.DATA_MOVEMENT, Category.INDEXED})
# Ops a general reducer or a called computation may use without accumulating rounding errors.
_EXACT_SCALAR_OPS = frozenset({
    "parameter", "constant", "tuple", "get-tuple-element", "compare", "select", "maximum",
    "minimum", "and", "or", "xor", "not", "copy", "broadcast", "reshape", "convert", "iota",
    "abs", "negate",
})
_SELECTIVE_REDUCERS = frozenset({"maximum", "minimum", "and", "or", "xor"})


def error_bounds(graph: Graph, values: Mapping[str, object], outputs: Sequence[str],
                 computed: Collection[str] | None = None) -> dict[str, Bound]:
    """{output: its bound (None when exact)} for `outputs`, nodes of `graph` whose
    interpreter values, and those of every node they depend on, are in `values`.

    `computed`: the nodes the implementation under test computed itself; it read the
    interpreter's values of the others (a kernel its inputs), so those count as exact.
    Default: every node, from the graph's parameters and constants."""
    needed = _upstream(graph, outputs, computed)
    bounds: dict[str, Bound] = {}
    for node in graph:            # graph order is topological
        if node.name in needed:
            bounds[node.name] = _simplified(_bound(graph, node, values, bounds))
    return {name: bounds.get(name) for name in outputs}


def gamma(terms: np.ndarray, unit_roundoff: float) -> np.ndarray:
    """Higham's gamma_n = n*u / (1 - n*u), elementwise; inf where n*u >= 1."""
    nu = np.asarray(terms, np.float64) * unit_roundoff
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(nu < 1, nu / (1 - nu), np.inf)


def unit_roundoff(dtype: dtypes.DType) -> float:
    """u of the type sums of `dtype` accumulate in (0 for integers: their sums are exact)."""
    accumulation = dtypes.accumulation_dtype(dtype)
    if accumulation.kind not in ("float", "complex"):
        return 0.0
    return float(np.finfo(accumulation.numpy).eps) / 2


# -- the walk ---------------------------------------------------------------------------------


def _upstream(graph: Graph, outputs: Sequence[str], computed: Collection[str] | None) -> set:
    """The nodes whose bounds the outputs' bounds depend on (stopping at uncomputed ones)."""
    inside = None if computed is None else set(computed)
    seen: set[str] = set()
    stack = [name for name in outputs if inside is None or name in inside]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        stack.extend(o for o in graph.nodes[name].operands
                     if o not in seen and (inside is None or o in inside))
    return seen


def _simplified(bound: Bound) -> Bound:
    """None for a bound that is zero everywhere, so exact values stay on the cheap path."""
    if bound is None:
        return None
    if isinstance(bound, tuple):
        parts = tuple(_simplified(part) for part in bound)
        return None if all(part is None for part in parts) else parts
    array = np.asarray(bound, np.float64)
    return array if np.any(array) else None


def _bound(graph: Graph, node: Node, values: Mapping, bounds: dict) -> Bound:
    op = node.op
    operand_bounds = [bounds.get(name) for name in node.operands]
    exact = all(bound is None for bound in operand_bounds)
    if op in ("reduce", "reduce-window"):
        return _reduction(graph, node, values, operand_bounds)
    if op in ("dot", "convolution"):
        return _contraction(graph, node, values, operand_bounds)
    if op == "scatter":
        return _scatter(graph, node, values, operand_bounds)
    if op in _UNMODELLED:
        return _unbounded(node.shape)
    if node.called_computations():      # while, conditional, map, sort, ...
        accumulates = any(_accumulates(graph, name) for name in node.called_computations())
        return None if exact and not accumulates else _unbounded(node.shape)
    info = OPS.get(op)
    if exact and not _rounds_its_own_way(node, info):
        return None
    if op == "tuple":
        return tuple(operand_bounds)
    if op == "get-tuple-element":
        whole = operand_bounds[0]
        return whole[node.attrs["index"]] if isinstance(whole, tuple) else None
    if op in _FORWARDING:
        return operand_bounds[0]
    if info is None or op in _BIT_LEVEL:
        return _unbounded(node.shape)
    if info.is_elementwise:
        bound = None if exact else _elementwise(graph, node, values, operand_bounds)
        if _rounds_its_own_way(node, info):
            bound = _dense(bound, values[node.name]) + _library_error(node, values[node.name])
        return bound
    if info.category in _MOVEMENT:
        return _moved(graph, node, values, operand_bounds)
    return _unbounded(node.shape)


def _rounds_its_own_way(node: Node, info) -> bool:
    """A float transcendental function: each implementation's math library rounds it its own
    way (module docstring)."""
    return info is not None and info.transcendental and not node.shape.is_tuple and \
        node.shape.dtype.is_float and node.shape.dtype.kind != "complex"


def _library_error(node: Node, value) -> np.ndarray:
    """How far two math libraries' results of `node` may lie apart: TRANSCENDENTAL_ULPS units
    in the last place of the type it is computed in (f32 for 16-bit floats); none where the
    result is infinite or NaN (an overflow, a domain error), which every library gives."""
    magnitude = _magnitude(value)
    finite = np.isfinite(magnitude)
    return np.where(finite, TRANSCENDENTAL_ULPS * 2 * unit_roundoff(node.shape.dtype) *
                    np.where(finite, magnitude, 0.0), 0.0)


def _does_arithmetic(graph: Graph, name: str) -> bool:
    """Whether a reducer or combiner (or what it calls) does more than select and compare:
    applied in an order the implementation chooses, its arithmetic rounds differently."""
    computation = graph.computations.get(name)
    if computation is None:
        return True
    return any(node.op not in _EXACT_SCALAR_OPS
               or any(_does_arithmetic(graph, c) for c in node.called_computations())
               for node in computation)


def _accumulates(graph: Graph, name: str) -> bool:
    """Whether a called computation (a loop body, a branch, a comparator, ...) or one it calls
    holds an op whose result depends on the order of accumulation; elementwise arithmetic
    applied in the graph's order is the same in every implementation."""
    computation = graph.computations.get(name)
    if computation is None:
        return True
    for node in computation:
        if node.op in ("reduce", "reduce-window", "dot", "convolution", "scatter") \
                or node.op in _UNMODELLED:
            return True
        if any(_accumulates(graph, called) for called in node.called_computations()):
            return True
    return False


# -- helpers on arrays ------------------------------------------------------------------------


def _unbounded(shape: Shape) -> Bound:
    if shape.is_tuple:
        return tuple(_unbounded(element) for element in shape.elements)
    if not shape.dtype.is_array_type:
        return None
    return np.full(shape.dims, np.inf)


def _wide(value) -> np.ndarray:
    """A value in float64 (complex128 for complex values; pred and integers as they are)."""
    array = np.asarray(value)
    if array.dtype.kind == "c":
        return array.astype(np.complex128)
    if array.dtype.kind in "biu":
        return array
    return array.astype(np.float64, copy=False)


def _magnitude(value) -> np.ndarray:
    return np.abs(np.asarray(value).astype(np.complex128 if np.iscomplexobj(value)
                                           else np.float64))


def _dense(bound: Bound, value) -> np.ndarray:
    """The bound as a float64 array of the value's shape (zeros for an exact value)."""
    shape = np.shape(value)
    if bound is None:
        return np.zeros(shape)
    return np.broadcast_to(np.asarray(bound, np.float64), shape)


def _ones(value) -> np.ndarray:
    return np.ones(np.shape(value))


def _nonnegative(result) -> np.ndarray:
    """An op's float64 result on bounds or magnitudes (complex ops give complex zeros' kin)."""
    return np.abs(np.asarray(result)).astype(np.float64)


def _with(node: Node, **attrs) -> Node:
    return dataclasses.replace(node, attrs={**node.attrs, **attrs})


def _rounding(graph: Graph, node: Node, magnitudes: list, counted: Node, ones: list) -> np.ndarray:
    """ORDER_FACTOR * gamma(n) * (the op on magnitudes), n counted by `counted` on ones."""
    dtype = node.shape.leaves()[0].dtype
    u = unit_roundoff(dtype)
    if u == 0:
        return np.zeros(())
    terms = _nonnegative(apply_op(graph, counted, ones))
    if dtype.kind == "complex":   # Higham (3.5) for complex arithmetic: sqrt(2) gamma(n + 2)
        return np.sqrt(2) * ORDER_FACTOR * gamma(terms + 2, u) * _nonnegative(
            apply_op(graph, node, magnitudes))
    return ORDER_FACTOR * gamma(terms, u) * _nonnegative(apply_op(graph, node, magnitudes))


# -- sums: reduce, reduce-window, dot, convolution, scatter -----------------------------------


def _reduction(graph: Graph, node: Node, values: Mapping, operand_bounds: list) -> Bound:
    count = len(node.operands) // 2
    reducer = node.attrs.get("reducer")
    exact = all(bound is None for bound in operand_bounds)
    if reducer is None or count != 1:
        general_is_exact = not _does_arithmetic(graph, node.attrs["to_apply"])
        return None if exact and general_is_exact else _unbounded(node.shape)
    x, init = (values[name] for name in node.operands)
    x_bound, init_bound = operand_bounds
    if reducer in _SELECTIVE_REDUCERS:       # the result is one of the terms
        if exact:
            return None
        largest = _with(node, reducer="maximum")
        return _nonnegative(apply_op(graph, largest, [_dense(x_bound, x),
                                                      _dense(init_bound, init)]))
    magnitudes = [_magnitude(x), _magnitude(init)]
    counter = _with(node, reducer="add")
    rounding = _rounding(graph, node, magnitudes, counter, [_ones(x), _ones(init)])
    if exact:
        return rounding
    if reducer == "add":
        carried = apply_op(graph, node, [_dense(x_bound, x), _dense(init_bound, init)])
    else:                                    # multiply: prod(|x| + E) - prod(|x|)
        widened = [magnitudes[0] + _dense(x_bound, x), magnitudes[1] + _dense(init_bound, init)]
        carried = _nonnegative(apply_op(graph, node, widened)) - _nonnegative(
            apply_op(graph, node, magnitudes))
    return _nonnegative(carried) + rounding


def _contraction(graph: Graph, node: Node, values: Mapping, operand_bounds: list) -> Bound:
    """A dot or convolution: sums of products (Higham (3.5)) plus the operands' bounds."""
    lhs, rhs = (values[name] for name in node.operands)
    lhs_bound, rhs_bound = operand_bounds
    if unit_roundoff(node.shape.dtype) == 0:   # integers: exact, but not on inexact operands
        return None if lhs_bound is None and rhs_bound is None else _unbounded(node.shape)
    magnitudes = [_magnitude(lhs), _magnitude(rhs)]
    bound = _rounding(graph, node, magnitudes, node, [_ones(lhs), _ones(rhs)])
    if lhs_bound is None and rhs_bound is None:
        return bound
    lhs_error, rhs_error = _dense(lhs_bound, lhs), _dense(rhs_bound, rhs)
    for pair in ([magnitudes[0], rhs_error], [lhs_error, magnitudes[1]], [lhs_error, rhs_error]):
        bound = bound + _nonnegative(apply_op(graph, node, pair))
    return bound


def _scatter(graph: Graph, node: Node, values: Mapping, operand_bounds: list) -> Bound:
    """Updates combined into the operand: a sum per target for scatter-add."""
    exact = all(bound is None for bound in operand_bounds)
    reducer = node.attrs.get("reducer")
    if len(node.operands) != 3 or reducer is None:   # variadic, or a computation (overwrite)
        return None if exact and not _does_arithmetic(graph, node.attrs["to_apply"]) \
            else _unbounded(node.shape)
    operand, indices, updates = (values[name] for name in node.operands)
    operand_bound, indices_bound, updates_bound = operand_bounds
    if indices_bound is not None:
        return _unbounded(node.shape)
    if reducer in _SELECTIVE_REDUCERS:
        if exact:
            return None
        largest = _with(node, reducer="maximum")
        return _nonnegative(apply_op(graph, largest, [_dense(operand_bound, operand), indices,
                                                      _dense(updates_bound, updates)]))
    if reducer != "add":
        return _unbounded(node.shape)
    rounding = _rounding(graph, node, [_magnitude(operand), indices, _magnitude(updates)], node,
                         [_ones(operand), indices, _ones(updates)])
    if exact:
        return rounding
    carried = apply_op(graph, node, [_dense(operand_bound, operand), indices,
                                     _dense(updates_bound, updates)])
    return _nonnegative(carried) + rounding


# -- elementwise ops and data movement --------------------------------------------------------


def _elementwise(graph: Graph, node: Node, values: Mapping, operand_bounds: list) -> Bound:
    """The largest change of the op over the corners of the operands' boxes (in float64);
    for the arithmetic that dominates normalisations, the same in closed form (`_linear`)."""
    closed = _linear(node, values, operand_bounds)
    if closed is not None:
        return closed
    centre_operands = [_wide(values[name]) for name in node.operands]
    choices = []
    for value, bound in zip(centre_operands, operand_bounds):
        if bound is None:
            choices.append((value,))
            continue
        bound = np.broadcast_to(bound, value.shape)
        if value.dtype == np.bool_:
            uncertain = bound > 0
            choices.append((value & ~uncertain, value | uncertain))
        elif value.dtype.kind in "iu":
            if node.op in _LOGICAL or not np.isfinite(bound).all():
                return _unbounded(node.shape)
            step = np.ceil(bound).astype(value.dtype)
            choices.append((value - step, value + step))
        else:
            with np.errstate(invalid="ignore"):   # inf +- inf: a NaN corner, see below
                choices.append((value - bound, value + bound))
    centre = _as_float(apply_op(graph, node, centre_operands))
    largest = np.zeros(np.shape(centre))
    for corner in itertools.product(*choices):
        if all(a is b for a, b in zip(corner, centre_operands)):
            continue
        moved = _as_float(apply_op(graph, node, list(corner)))
        with np.errstate(invalid="ignore"):
            change = np.abs(moved - centre)
        if np.isnan(change).any():
            # Equal infinities did not move; a NaN on one side only is an unbounded change.
            both_nan = np.isnan(moved) & np.isnan(centre)
            change = np.where((moved == centre) | both_nan, 0.0,
                              np.where(np.isnan(change), np.inf, change))
        np.maximum(largest, change, out=largest)
    return largest


def _linear(node: Node, values: Mapping, operand_bounds: list) -> Bound | None:
    """Interval arithmetic for float add, subtract, negate and multiply, whose largest change
    over the operands' boxes has a closed form (|x| bound_y + |y| bound_x + bound_x bound_y
    for a product): two or three array passes instead of evaluating every corner. None for
    other ops and dtypes (the corners decide)."""
    if node.op not in ("add", "subtract", "negate", "multiply") or node.shape.is_tuple or \
            not node.shape.dtype.is_float or node.shape.dtype.kind == "complex":
        return None
    bounds = [0.0 if bound is None else bound for bound in operand_bounds]
    if node.op == "negate":
        return np.broadcast_to(bounds[0], node.shape.dims).astype(np.float64)
    if node.op in ("add", "subtract"):
        return np.broadcast_to(np.add(bounds[0], bounds[1]), node.shape.dims).astype(np.float64)
    x, y = (np.abs(_wide(values[name])) for name in node.operands)
    with np.errstate(invalid="ignore"):
        change = x * bounds[1] + y * bounds[0] + np.multiply(bounds[0], bounds[1])
    # 0 x inf: an infinite operand that cannot move, or a NaN the result carries anyway.
    return np.nan_to_num(np.broadcast_to(change, node.shape.dims), nan=0.0, posinf=np.inf)


def _as_float(value) -> np.ndarray:
    """An op's result compared in float64 (pred as 0/1; complex by its modulus of change)."""
    array = np.asarray(value)
    if array.dtype.kind == "c":
        return array.astype(np.complex128, copy=False)
    return array.astype(np.float64, copy=False)


def _moved(graph: Graph, node: Node, values: Mapping, operand_bounds: list) -> Bound:
    """The op applied to the operands' bounds (index operands keep their values)."""
    indices = index_operands(node.op, len(node.operands))
    if any(operand_bounds[i] is not None for i in indices):
        return _unbounded(node.shape)
    if node.op == "bitcast":
        source = graph.nodes[node.operands[0]].shape
        if source.dtype != node.shape.dtype:       # a reinterpretation of the bits
            return _unbounded(node.shape)
        node = dataclasses.replace(node, shape=node.shape.with_dtype(dtypes.dtype("f64")))
    operands = [values[name] if i in indices else _dense(operand_bounds[i], values[name])
                for i, name in enumerate(node.operands)]
    return _nonnegative(apply_op(graph, node, operands))
