"""Shape inference: the shape an op gives, computed from its operands' shapes and its attributes.

The rules are XLA's (xla/service/shape_inference.cc, documented at
https://openxla.org/xla/operation_semantics) for the HLO ops in `compiler.ir.ops.OPS`, in the
form the HLO verifier checks them: elementwise operands have equal dims and element types
(no implicit broadcasting), a broadcast keeps every operand dimension's size, and so on.

Some results are part of an op's definition rather than a consequence of its operands: the
target type of `convert`, the new dims of `reshape` and `broadcast`, the whole shape of `iota`,
the output type of a mixed-precision `dot`. Callers pass those as the hints
`attrs["dtype"]` (a DType or its name) and `attrs["new_dims"]`; the verifier takes them from
the declared shape (`declared_hints`), a graph builder from its caller. Without the hint the
result is not inferable and `infer_shape` returns None, as it does for ops whose result no rule
here describes (custom-call, collectives, fft, ...): the caller then trusts the declared shape.

Errors are `ShapeError`s whose message names the operand and the dimension that do not fit;
they carry no location, the caller adds the node's.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

from compiler.ir.dtypes import DTYPES, PRED, S32, TOKEN, DType, from_numpy
from compiler.ir.graph import Graph
from compiler.ir.ops import OPS, REDUCERS, Category
from compiler.ir.shapes import ArrayShape, Shape, TupleShape

HINT_ATTRS = ("dtype", "new_dims")

# Ops whose result element type is (or may be) given rather than computed.
RESULT_DTYPE_OPS = frozenset({
    "convert", "bitcast-convert", "stochastic-convert", "bitcast", "iota", "dot", "convolution",
})
# Ops whose result dims are given rather than computed.
RESULT_DIMS_OPS = frozenset({"reshape", "bitcast", "broadcast", "iota", "rng"})

# Operand counts of the variadic ops: (minimum, rule or None, what the rule says).
_VARIADIC_COUNTS: dict[str, tuple[int, Callable[[int], bool] | None, str]] = {
    "reduce": (2, lambda n: n % 2 == 0, "N inputs then N init values"),
    "reduce-window": (2, lambda n: n % 2 == 0, "N inputs then N init values"),
    "scatter": (3, lambda n: n % 2 == 1, "N inputs, the indices, then N updates"),
    "sort": (1, None, "one or more arrays"),
    "concatenate": (1, None, "one or more arrays"),
    "map": (1, None, "one or more arrays"),
    "dynamic-slice": (2, None, "the array then its start indices"),
    "dynamic-update-slice": (3, None, "the array, the update, then its start indices"),
    "conditional": (2, None, "the branch selector then one operand per branch"),
}

_COMPARE_DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")
_COMPARE_TYPES = ("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED")


class ShapeError(ValueError):
    """An op applied to operands or attributes it cannot take; says which operand and dim."""


# -- entry points -------------------------------------------------------------------------------


def infer_shape(
    op: str,
    operand_shapes: list[Shape],
    attrs: Mapping,
    computations: Mapping[str, Graph] | None = None,
) -> Shape | None:
    """The shape `op` gives for these operands and attributes, or None when not inferable.

    `computations` (name -> Graph) lets calls be checked against the called computation's
    signature (reducers, comparators, while bodies, branches); without it those checks are
    skipped and ops whose result is the called computation's (`map`, `conditional`) give None.
    """
    if op not in OPS:
        return None
    check_operand_count(op, len(operand_shapes))
    rule = _RULES.get(op)
    if rule is None:
        return None
    return rule(_Call(op, list(operand_shapes), attrs, computations))


def check_operand_count(op: str, count: int) -> None:
    """ShapeError when `op` cannot take `count` operands (the ops table's arity and rules)."""
    info = OPS.get(op)
    if info is None:
        return
    if info.arity is not None:
        if count != info.arity:
            raise ShapeError(f"{op} takes {_plural(info.arity, 'operand')}, got {count}")
        return
    if op not in _VARIADIC_COUNTS:
        return
    minimum, rule, what = _VARIADIC_COUNTS[op]
    if count < minimum or (rule is not None and not rule(count)):
        raise ShapeError(f"{op} takes {what}, got {_plural(count, 'operand')}")


def declared_hints(op: str, declared: Shape) -> dict:
    """The hints (`dtype`, `new_dims`) a declared result shape gives `op`'s inference."""
    if declared.is_tuple:
        return {}
    hints: dict = {}
    if op in RESULT_DTYPE_OPS:
        hints["dtype"] = declared.dtype
    if op in RESULT_DIMS_OPS:
        hints["new_dims"] = declared.dims
    return hints


def format_shape(shape: Shape) -> str:
    """The shape as HLO spells it, without its layout (layouts do not affect inference)."""
    if shape.is_tuple:
        return "(" + ", ".join(format_shape(e) for e in shape.elements) + ")"
    return f"{shape.dtype.name}[{','.join(str(d) for d in shape.dims)}]"


def format_dims(dims) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


def strip_layouts(shape: Shape) -> Shape:
    """The same shape with default layouts (inferred results never carry a layout)."""
    if shape.is_tuple:
        return TupleShape(tuple(strip_layouts(e) for e in shape.elements))
    return ArrayShape(shape.dtype, shape.dims)


def same_type_ignoring_precision(a: DType, b: DType) -> bool:
    """XLA's SameElementTypeIgnoringFpPrecision: equal, or both floating point."""
    return a == b or (a.is_float and b.is_float)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


# -- reading operands and attributes ------------------------------------------------------------


class _Call:
    """One inference: the op, its operand shapes and attributes, with checked accessors."""

    def __init__(self, op, shapes, attrs, computations):
        self.op = op
        self.shapes = shapes
        self.attrs = attrs
        self.computations = computations

    def array(self, index: int) -> ArrayShape:
        shape = self.shapes[index]
        if shape.is_tuple:
            raise ShapeError(
                f"operand {index} of {self.op} must be an array, got the tuple "
                f"{format_shape(shape)}"
            )
        if not shape.dtype.is_array_type:
            raise ShapeError(f"operand {index} of {self.op} must be an array, got {shape.dtype}")
        return shape

    def arrays(self) -> list[ArrayShape]:
        return [self.array(i) for i in range(len(self.shapes))]

    def int_attr(self, key: str, default: int | None = None) -> int:
        value = self.attrs.get(key, default)
        if value is None:
            raise ShapeError(f"{self.op} needs the attribute '{key}'")
        if not _is_int(value):
            raise ShapeError(f"{self.op} attribute '{key}' must be an integer, got {value!r}")
        return int(value)

    def ints_attr(self, key: str, default: tuple | None = None) -> tuple[int, ...]:
        value = self.attrs.get(key, default)
        if value is None:
            raise ShapeError(f"{self.op} needs the attribute '{key}'")
        return _int_tuple(value, f"{self.op} attribute '{key}'")

    def nested_attr(self, key: str, width: int) -> tuple[tuple[int, ...], ...]:
        """An attribute that is a tuple of `width`-tuples of ints, like `slice` and `padding`."""
        value = self.attrs.get(key)
        if value is None:
            raise ShapeError(f"{self.op} needs the attribute '{key}'")
        what = f"{self.op} attribute '{key}'"
        if not isinstance(value, (tuple, list)):
            raise ShapeError(f"{what} must be a list of {width}-element lists, got {value!r}")
        rows = []
        for row in value:
            row = _int_tuple(row, what)
            if len(row) != width:
                raise ShapeError(f"{what} must be a list of {width}-element lists, got {value!r}")
            rows.append(row)
        return tuple(rows)

    def dtype_hint(self) -> DType | None:
        value = self.attrs.get("dtype")
        if value is None or isinstance(value, DType):
            return value
        if isinstance(value, str) and value in DTYPES:
            return DTYPES[value]
        raise ShapeError(f"{self.op}: unknown element type {value!r}")

    def dims_hint(self) -> tuple[int, ...] | None:
        value = self.attrs.get("new_dims")
        if value is None:
            return None
        dims = _int_tuple(value, f"{self.op} result dims")
        if any(d < 0 for d in dims):
            raise ShapeError(f"{self.op} result dims {format_dims(dims)} must not be negative")
        return dims

    def computation(self, key: str) -> Graph | None:
        """The computation the attribute `key` names, when computations were given and it exists."""
        name = self.attrs.get(key)
        if self.computations is None or not isinstance(name, str):
            return None
        graph = self.computations.get(name)
        if graph is None or graph.root not in graph.nodes:
            return None
        return graph


def _is_int(value) -> bool:
    """A Python or NumPy integer (not a bool, which JSON and Python treat as one)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return getattr(value, "ndim", None) == 0 and getattr(value, "dtype", None) is not None and (
        value.dtype.kind in "iu"
    )


def _int_tuple(value, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(_is_int(v) for v in value):
        raise ShapeError(f"{what} must be a list of integers, got {value!r}")
    return tuple(int(v) for v in value)


def _dimension_numbers(dims: tuple[int, ...], rank: int, what: str, *, sorted_: bool = False):
    """Check that `dims` are distinct dimension numbers of a rank-`rank` array."""
    seen = set()
    for d in dims:
        if not 0 <= d < rank:
            raise ShapeError(f"{what} {d} is out of range for rank {rank}")
        if d in seen:
            raise ShapeError(f"{what} {format_dims(dims)} repeat dimension {d}")
        seen.add(d)
    if sorted_ and list(dims) != sorted(dims):
        raise ShapeError(f"{what} {format_dims(dims)} must be sorted")


def _same_dims(shapes: list[ArrayShape], indices, first: int | None = None) -> None:
    first = indices[0] if first is None else first
    for i in indices:
        if shapes[i].dims != shapes[first].dims:
            raise ShapeError(
                f"operand {i} has dims {format_dims(shapes[i].dims)} but operand {first} has "
                f"{format_dims(shapes[first].dims)}"
            )


def _same_dtype(shapes: list[ArrayShape], indices, first: int | None = None) -> None:
    first = indices[0] if first is None else first
    for i in indices:
        if shapes[i].dtype != shapes[first].dtype:
            raise ShapeError(
                f"operand {i} has element type {shapes[i].dtype} but operand {first} has "
                f"{shapes[first].dtype}"
            )


def _scalar(shape: ArrayShape, index: int, what: str, dtype: DType | None = None) -> None:
    if shape.rank != 0:
        raise ShapeError(f"operand {index} ({what}) must be a scalar, got {format_shape(shape)}")
    if dtype is not None and shape.dtype != dtype:
        raise ShapeError(
            f"operand {index} ({what}) has element type {shape.dtype} but must be {dtype}"
        )


def _need_kind(op: str, shape: ArrayShape, index: int, kinds: tuple[str, ...], what: str):
    if shape.dtype.kind not in kinds:
        raise ShapeError(f"{op} needs {what} operands; operand {index} is {format_shape(shape)}")


_FLOAT = ("float",)
_FLOAT_COMPLEX = ("float", "complex")
_INTEGRAL = ("sint", "uint")
_PRED_INTEGRAL = ("pred", "sint", "uint")
_NUMERIC = ("sint", "uint", "float", "complex")


# -- elementwise --------------------------------------------------------------------------------

_UNARY_KINDS = {
    **{op: (_FLOAT_COMPLEX, "floating-point or complex") for op in (
        "exponential exponential-minus-one log log-plus-one sqrt rsqrt cbrt tanh logistic sine "
        "cosine tan erf acos acosh asin asinh atan atanh cosh sinh"
    ).split()},
    **{op: (_FLOAT, "floating-point") for op in (
        "floor ceil round-nearest-afz round-nearest-even is-finite reduce-precision"
    ).split()},
    "popcnt": (_INTEGRAL, "integer"),
    "count-leading-zeros": (_INTEGRAL, "integer"),
    "not": (_PRED_INTEGRAL, "pred or integer"),
    "negate": (_NUMERIC, "numeric"),
    "abs": (_NUMERIC, "numeric"),
    "sign": (("sint", "float", "complex"), "signed numeric"),
    "real": (_FLOAT_COMPLEX, "floating-point or complex"),
    "imag": (_FLOAT_COMPLEX, "floating-point or complex"),
}

_COMPLEX_PARTS = {"c64": DTYPES["f32"], "c128": DTYPES["f64"]}
_COMPLEX_OF = {"f32": DTYPES["c64"], "f64": DTYPES["c128"]}


def _unary(call: _Call) -> Shape:
    if call.op == "copy" and call.shapes[0].is_tuple:
        return strip_layouts(call.shapes[0])
    x = call.array(0)
    if call.op in _UNARY_KINDS:
        kinds, what = _UNARY_KINDS[call.op]
        _need_kind(call.op, x, 0, kinds, what)
    if call.op == "reduce-precision":
        if call.int_attr("exponent_bits") < 1 or call.int_attr("mantissa_bits") < 0:
            raise ShapeError("reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0")
    if call.op == "is-finite":
        return ArrayShape(PRED, x.dims)
    if call.op in ("abs", "real", "imag") and x.dtype.kind == "complex":
        return ArrayShape(_COMPLEX_PARTS[x.dtype.name], x.dims)
    return ArrayShape(x.dtype, x.dims)


_BINARY_KINDS = {
    "and": (_PRED_INTEGRAL, "pred or integer"),
    "or": (_PRED_INTEGRAL, "pred or integer"),
    "xor": (_PRED_INTEGRAL, "pred or integer"),
    "shift-left": (_INTEGRAL, "integer"),
    "shift-right-logical": (_INTEGRAL, "integer"),
    "shift-right-arithmetic": (_INTEGRAL, "integer"),
    "atan2": (_FLOAT_COMPLEX, "floating-point or complex"),
    "complex": (("float",), "f32 or f64"),
}


def _binary(call: _Call) -> Shape:
    shapes = call.arrays()
    _same_dims(shapes, [0, 1])
    _same_dtype(shapes, [0, 1])
    a = shapes[0]
    if call.op in _BINARY_KINDS:
        kinds, what = _BINARY_KINDS[call.op]
        _need_kind(call.op, a, 0, kinds, what)
    if call.op == "complex":
        if a.dtype.name not in _COMPLEX_OF:
            raise ShapeError(f"complex needs f32 or f64 operands; operand 0 is {format_shape(a)}")
        return ArrayShape(_COMPLEX_OF[a.dtype.name], a.dims)
    return ArrayShape(a.dtype, a.dims)


def _compare(call: _Call) -> Shape:
    shapes = call.arrays()
    _same_dims(shapes, [0, 1])
    _same_dtype(shapes, [0, 1])
    direction = call.attrs.get("direction")
    if direction is None:
        raise ShapeError("compare needs the attribute 'direction' (EQ, NE, LT, LE, GT or GE)")
    if direction not in _COMPARE_DIRECTIONS:
        raise ShapeError(
            f"compare direction {direction!r} is not one of {', '.join(_COMPARE_DIRECTIONS)}"
        )
    compare_type = call.attrs.get("type")
    if compare_type is not None and compare_type not in _COMPARE_TYPES:
        raise ShapeError(f"compare type {compare_type!r} is not one of {', '.join(_COMPARE_TYPES)}")
    return ArrayShape(PRED, shapes[0].dims)


def _select(call: _Call) -> Shape:
    pred, on_true, on_false = call.arrays()
    if pred.dtype != PRED:
        raise ShapeError(f"operand 0 of select must be pred, got {format_shape(pred)}")
    _same_dims([pred, on_true, on_false], [2], first=1)
    _same_dtype([pred, on_true, on_false], [2], first=1)
    # A scalar predicate picks a whole operand (XLA keeps this for select).
    if pred.rank != 0:
        _same_dims([pred, on_true, on_false], [0], first=1)
    return ArrayShape(on_true.dtype, on_true.dims)


def _clamp(call: _Call) -> Shape:
    shapes = call.arrays()
    low, x, high = shapes
    _same_dtype(shapes, [0, 2], first=1)
    for index, bound in ((0, low), (2, high)):
        # A bound is either a scalar for every element or one bound per element.
        if bound.rank != 0:
            _same_dims(shapes, [index], first=1)
    return ArrayShape(x.dtype, x.dims)


# -- conversions and shape changes --------------------------------------------------------------


def _convert(call: _Call) -> Shape | None:
    x = call.array(0)
    target = call.dtype_hint()
    if target is None:
        return None
    if call.op == "convert" and x.dtype.kind == "complex" and target.kind != "complex":
        raise ShapeError(f"convert from {x.dtype} to {target} is not defined; use real or imag")
    if call.op == "stochastic-convert":
        random = call.array(1)
        _same_dims([x, random], [1], first=0)
        if random.dtype.kind != "uint" or random.dtype.bits != x.dtype.bits:
            raise ShapeError(
                f"operand 1 (random bits) must be a u{x.dtype.bits} array, got "
                f"{format_shape(random)}"
            )
    return ArrayShape(target, x.dims)


def _bitcast_convert(call: _Call) -> Shape | None:
    x = call.array(0)
    target = call.dtype_hint()
    if target is None:
        return None
    old, new = x.dtype.bits, target.bits
    if old == new:
        return ArrayShape(target, x.dims)
    # Changing the width adds (narrower) or consumes (wider) a minor dimension of the ratio.
    if new < old:
        return ArrayShape(target, x.dims + (old // new,))
    ratio = new // old
    if x.rank == 0 or x.dims[-1] != ratio:
        raise ShapeError(
            f"bitcast-convert from {x.dtype} to {target} needs a last dimension of size {ratio}; "
            f"operand 0 is {format_shape(x)}"
        )
    return ArrayShape(target, x.dims[:-1])


def _reshape(call: _Call) -> Shape | None:
    x = call.array(0)
    new_dims = call.dims_hint()
    if new_dims is None:
        return None
    dtype = x.dtype
    if call.op == "bitcast":
        dtype = call.dtype_hint() or x.dtype
        # A bitcast reinterprets the same bytes: equal bit counts, not element counts.
        if math.prod(new_dims) * dtype.bits != x.size * x.dtype.bits:
            raise ShapeError(
                f"cannot bitcast {format_shape(x)} to {dtype}{format_dims(new_dims)}: "
                f"the sizes in bits differ"
            )
        return ArrayShape(dtype, new_dims)
    if math.prod(new_dims) != x.size:
        raise ShapeError(
            f"cannot reshape {format_shape(x)} ({x.size} elements) to {format_dims(new_dims)} "
            f"({math.prod(new_dims)} elements)"
        )
    return ArrayShape(dtype, new_dims)


def _broadcast(call: _Call) -> Shape | None:
    x = call.array(0)
    dimensions = call.ints_attr("dimensions", ())
    new_dims = call.dims_hint()
    if len(dimensions) != x.rank:
        raise ShapeError(
            f"broadcast dimensions {format_dims(dimensions)} must map each of the "
            f"{x.rank} dimensions of operand 0 ({format_shape(x)})"
        )
    if new_dims is None:
        return None
    _dimension_numbers(dimensions, len(new_dims), "broadcast dimensions")
    for operand_dim, output_dim in enumerate(dimensions):
        if x.dims[operand_dim] != new_dims[output_dim]:
            raise ShapeError(
                f"operand 0 dimension {operand_dim} (size {x.dims[operand_dim]}) maps to "
                f"dimension {output_dim} of {format_dims(new_dims)} (size "
                f"{new_dims[output_dim]}); the sizes must be equal"
            )
    return ArrayShape(x.dtype, new_dims)


def _transpose(call: _Call) -> Shape:
    x = call.array(0)
    permutation = call.ints_attr("dimensions")
    if sorted(permutation) != list(range(x.rank)):
        raise ShapeError(
            f"transpose dimensions {format_dims(permutation)} are not a permutation of "
            f"0..{x.rank - 1} for operand 0 ({format_shape(x)})"
        )
    return ArrayShape(x.dtype, tuple(x.dims[p] for p in permutation))


def _iota(call: _Call) -> Shape | None:
    dtype, dims = call.dtype_hint(), call.dims_hint()
    if dtype is None or dims is None:
        return None
    dimension = call.int_attr("iota_dimension")
    if not 0 <= dimension < len(dims):
        raise ShapeError(
            f"iota_dimension {dimension} is out of range for {dtype}{format_dims(dims)}"
        )
    if dtype.kind == "pred" or not dtype.is_array_type:
        raise ShapeError(f"iota cannot count in {dtype}")
    return ArrayShape(dtype, dims)


def _constant(call: _Call) -> Shape | None:
    value = call.attrs.get("value")
    if value is None:
        return None
    if not hasattr(value, "dtype") or not hasattr(value, "shape"):
        raise ShapeError(f"constant value must be an array, got {type(value).__name__}")
    try:
        dtype = from_numpy(value.dtype)
    except KeyError as error:
        raise ShapeError(str(error.args[0])) from None
    return ArrayShape(dtype, tuple(int(d) for d in value.shape))


def _rng(call: _Call) -> Shape | None:
    shapes = call.arrays()
    if len(shapes) != 2:
        return None
    for index, bound in enumerate(shapes):
        _scalar(bound, index, "distribution parameter")
    _same_dtype(shapes, [0, 1])
    dims = call.dims_hint()
    return None if dims is None else ArrayShape(shapes[0].dtype, dims)


# -- reductions ---------------------------------------------------------------------------------


def _reducer_signature(
    call: _Call, key: str, accumulators: list[DType], inputs: list[DType]
) -> list[DType]:
    """Check the called reducer (N accumulators, N inputs -> N accumulators) and return the
    accumulator types it produces (the `accumulators` given when it cannot be checked)."""
    graph = call.computation(key)
    if graph is None:
        return accumulators
    n = len(accumulators)
    params = [graph.nodes[p].shape for p in graph.parameters if p in graph.nodes]
    result = graph.root_node.shape
    results = list(result.elements) if result.is_tuple else [result]
    scalars = [ArrayShape(d, ()) for d in accumulators]
    wanted = _signature_text(
        scalars + [ArrayShape(d, ()) for d in inputs],
        scalars[0] if n == 1 else TupleShape(tuple(scalars)),
    )
    message = (
        f"{key} '{graph.name}' has signature {_signature_text(params, result)} but {call.op} "
        f"needs {wanted}"
    )
    if len(params) != 2 * n or len(results) != n or (n > 1) != result.is_tuple:
        raise ShapeError(message)
    for i in range(n):
        acc, init, value = results[i], params[i], params[n + i]
        if any(s.is_tuple or s.rank != 0 for s in (acc, init, value)):
            raise ShapeError(message)
        if acc.dtype != init.dtype or not same_type_ignoring_precision(acc.dtype, accumulators[i]):
            raise ShapeError(message)
        if not same_type_ignoring_precision(value.dtype, inputs[i]):
            raise ShapeError(message)
    return [r.dtype for r in results]


def _split_inputs_inits(call: _Call) -> tuple[list[ArrayShape], list[ArrayShape]]:
    shapes = call.arrays()
    n = len(shapes) // 2
    inputs, inits = shapes[:n], shapes[n:]
    _same_dims(shapes, list(range(n)))
    for i, (x, init) in enumerate(zip(inputs, inits)):
        _scalar(init, n + i, f"init value of input {i}")
        if not same_type_ignoring_precision(x.dtype, init.dtype):
            raise ShapeError(
                f"operand {n + i} (init value) has element type {init.dtype} but input {i} "
                f"has {x.dtype}"
            )
    return inputs, inits


def _result(dtypes: list[DType], dims: tuple[int, ...]) -> Shape:
    if len(dtypes) == 1:
        return ArrayShape(dtypes[0], dims)
    return TupleShape(tuple(ArrayShape(d, dims) for d in dtypes))


def _reduce(call: _Call) -> Shape:
    inputs, inits = _split_inputs_inits(call)
    rank = inputs[0].rank
    dimensions = call.ints_attr("dimensions")
    _dimension_numbers(dimensions, rank, "reduce dimension")
    _check_reducer_name(call)
    dtypes = _reducer_signature(
        call, "to_apply", [i.dtype for i in inits], [x.dtype for x in inputs]
    )
    kept = tuple(d for i, d in enumerate(inputs[0].dims) if i not in dimensions)
    return _result(dtypes, kept)


def _check_reducer_name(call: _Call) -> None:
    reducer = call.attrs.get("reducer")
    if reducer is not None and reducer not in REDUCERS:
        raise ShapeError(f"reducer {reducer!r} is not one of {', '.join(REDUCERS)} (or None)")


def _window(call: _Call, rank: int) -> list[tuple[int, int, int, int, int, int]]:
    """The window attribute as (size, stride, pad_lo, pad_hi, lhs_dilate, rhs_dilate) per dim."""
    window = call.attrs.get("window")
    if window is None:
        raise ShapeError(f"{call.op} needs the attribute 'window'")
    if not isinstance(window, Mapping):
        raise ShapeError(f"{call.op} window must be a mapping of size, stride, pad, ...")

    def per_dim(key: str, default) -> tuple:
        value = window.get(key)
        if value is None:
            return (default,) * rank
        what = f"{call.op} window {key}"
        if not isinstance(value, (tuple, list)):
            raise ShapeError(f"{what} must be a list with one entry per dimension, got {value!r}")
        if key == "pad":
            value = tuple(_int_tuple(row, what) for row in value)
            if any(len(row) != 2 for row in value):
                raise ShapeError(f"{what} must be (low, high) pairs, got {value!r}")
        elif key == "window_reversal":
            value = tuple(bool(v) for v in value)
        else:
            value = _int_tuple(value, what)
        if len(value) != rank:
            raise ShapeError(
                f"{what} has {len(value)} entries but the window has {_plural(rank, 'dimension')}"
            )
        return value

    if window.get("size") is None:
        raise ShapeError(f"{call.op} window needs a size")
    sizes = per_dim("size", 1)
    strides = per_dim("stride", 1)
    pads = per_dim("pad", (0, 0))
    lhs_dilate = per_dim("lhs_dilate", 1)
    rhs_dilate = per_dim("rhs_dilate", 1)
    per_dim("window_reversal", False)
    dims = []
    for i in range(rank):
        if sizes[i] < 1 or strides[i] < 1 or lhs_dilate[i] < 1 or rhs_dilate[i] < 1:
            raise ShapeError(
                f"{call.op} window dimension {i}: size, stride and dilations must be >= 1, got "
                f"size={sizes[i]} stride={strides[i]} lhs_dilate={lhs_dilate[i]} "
                f"rhs_dilate={rhs_dilate[i]}"
            )
        dims.append((sizes[i], strides[i], pads[i][0], pads[i][1], lhs_dilate[i], rhs_dilate[i]))
    return dims


def _dilated(bound: int, dilation: int) -> int:
    return 0 if bound == 0 else (bound - 1) * dilation + 1


def _window_output(call: _Call, base_dims: tuple[int, ...], window) -> tuple[int, ...]:
    """XLA's InferWindowOutputShape: the positions a (dilated, strided) window takes."""
    out = []
    for i, (size, stride, low, high, lhs_dilate, rhs_dilate) in enumerate(window):
        padded = low + _dilated(base_dims[i], lhs_dilate) + high
        if padded < 0:
            raise ShapeError(
                f"{call.op} window dimension {i}: padding ({low}, {high}) leaves a negative size"
            )
        extent = _dilated(size, rhs_dilate)
        out.append(0 if extent > padded else (padded - extent) // stride + 1)
    return tuple(out)


def _reduce_window(call: _Call) -> Shape:
    inputs, inits = _split_inputs_inits(call)
    window = _window(call, inputs[0].rank)
    _check_reducer_name(call)
    dtypes = _reducer_signature(
        call, "to_apply", [i.dtype for i in inits], [x.dtype for x in inputs]
    )
    return _result(dtypes, _window_output(call, inputs[0].dims, window))


def _select_and_scatter(call: _Call) -> Shape:
    operand, source, init = call.arrays()
    window = _window(call, operand.rank)
    _scalar(init, 2, "init value", operand.dtype)
    windowed = _window_output(call, operand.dims, window)
    if source.dims != windowed:
        raise ShapeError(
            f"operand 1 (source) has dims {format_dims(source.dims)} but the window over "
            f"operand 0 {format_shape(operand)} gives {format_dims(windowed)}"
        )
    _same_dtype([operand, source], [1], first=0)
    select = call.computation("select")
    if select is not None:
        _check_signature(call, "select", select, [operand.dtype] * 2, ArrayShape(PRED, ()))
    if call.computation("scatter") is not None:
        _reducer_signature(call, "scatter", [operand.dtype], [operand.dtype])
    return ArrayShape(operand.dtype, operand.dims)


def _check_signature(call: _Call, key: str, graph: Graph, params: list, result: Shape) -> None:
    """The called computation takes `params` (element types of scalars, or shapes) and
    returns `result`; the message shows both signatures."""
    wanted_params = [p if isinstance(p, (ArrayShape, TupleShape)) else ArrayShape(p, ())
                     for p in params]
    got_params = [graph.nodes[p].shape for p in graph.parameters if p in graph.nodes]
    got_result = graph.root_node.shape
    ok = len(got_params) == len(wanted_params) and all(
        _same_shape(a, b) for a, b in zip(got_params, wanted_params)
    ) and _same_shape(got_result, result)
    if not ok:
        raise ShapeError(
            f"{key} '{graph.name}' has signature {_signature_text(got_params, got_result)} but "
            f"{call.op} needs {_signature_text(wanted_params, result)}"
        )


def _signature_text(params: list[Shape], result: Shape) -> str:
    return f"({', '.join(format_shape(p) for p in params)}) -> {format_shape(result)}"


def _same_shape(a: Shape, b: Shape) -> bool:
    if a.is_tuple or b.is_tuple:
        return (a.is_tuple and b.is_tuple and len(a.elements) == len(b.elements)
                and all(_same_shape(x, y) for x, y in zip(a.elements, b.elements)))
    return a.dtype == b.dtype and a.dims == b.dims


# -- data movement ------------------------------------------------------------------------------


def _slice(call: _Call) -> Shape:
    x = call.array(0)
    bounds = call.nested_attr("slice", 3)
    if len(bounds) != x.rank:
        raise ShapeError(
            f"slice has {_plural(len(bounds), 'bound')} but operand 0 {format_shape(x)} has "
            f"rank {x.rank}"
        )
    dims = []
    for d, (start, limit, stride) in enumerate(bounds):
        if stride < 1:
            raise ShapeError(f"slice of dimension {d}: stride {stride} must be >= 1")
        if not 0 <= start <= limit <= x.dims[d]:
            raise ShapeError(
                f"slice of dimension {d}: [{start}:{limit}] does not fit in 0..{x.dims[d]} "
                f"(operand 0 is {format_shape(x)})"
            )
        dims.append(-(-(limit - start) // stride))
    return ArrayShape(x.dtype, tuple(dims))


def _pad(call: _Call) -> Shape:
    x, value = call.arrays()
    _scalar(value, 1, "padding value", x.dtype)
    padding = call.nested_attr("padding", 3)
    if len(padding) != x.rank:
        raise ShapeError(
            f"padding has {_plural(len(padding), 'entry')} but operand 0 {format_shape(x)} "
            f"has rank {x.rank}"
        )
    dims = []
    for d, (low, high, interior) in enumerate(padding):
        if interior < 0:
            raise ShapeError(f"padding of dimension {d}: interior padding {interior} is negative")
        size = low + high + x.dims[d] + max(x.dims[d] - 1, 0) * interior
        if size < 0:
            raise ShapeError(
                f"padding of dimension {d}: ({low}, {high}, {interior}) makes size {x.dims[d]} "
                f"negative"
            )
        dims.append(size)
    return ArrayShape(x.dtype, tuple(dims))


def _concatenate(call: _Call) -> Shape:
    shapes = call.arrays()
    (dimension,) = _single(call.ints_attr("dimensions"), "concatenate dimensions")
    first = shapes[0]
    _dimension_numbers((dimension,), first.rank, "concatenate dimension")
    _same_dtype(shapes, list(range(len(shapes))))
    for i, s in enumerate(shapes):
        others = [d for k, d in enumerate(s.dims) if k != dimension]
        first_others = [d for k, d in enumerate(first.dims) if k != dimension]
        if s.rank != first.rank or others != first_others:
            raise ShapeError(
                f"operand {i} has dims {format_dims(s.dims)} but operand 0 has "
                f"{format_dims(first.dims)}; they may differ only in dimension {dimension}"
            )
    dims = list(first.dims)
    dims[dimension] = sum(s.dims[dimension] for s in shapes)
    return ArrayShape(first.dtype, tuple(dims))


def _single(values: tuple[int, ...], what: str) -> tuple[int]:
    if len(values) != 1:
        raise ShapeError(f"{what} must hold exactly one dimension, got {format_dims(values)}")
    return values


def _reverse(call: _Call) -> Shape:
    x = call.array(0)
    _dimension_numbers(call.ints_attr("dimensions"), x.rank, "reverse dimension")
    return ArrayShape(x.dtype, x.dims)


# -- indexed ops --------------------------------------------------------------------------------


def _index_dims(indices: ArrayShape, index_vector_dim: int, what: str) -> tuple[list[int], int]:
    """The batch dims of an index array and the length of its index vectors."""
    if not indices.dtype.is_integer:
        raise ShapeError(f"{what} must be integers, got {format_shape(indices)}")
    if not 0 <= index_vector_dim <= indices.rank:
        raise ShapeError(
            f"index_vector_dim {index_vector_dim} is out of range for {what} "
            f"{format_shape(indices)}"
        )
    # index_vector_dim == rank means each index is a scalar: an implicit trailing dim of 1.
    dims = list(indices.dims) + ([1] if index_vector_dim == indices.rank else [])
    vector = dims.pop(index_vector_dim)
    return dims, vector


def _gather(call: _Call) -> Shape:
    operand, indices = call.arrays()
    offset_dims = call.ints_attr("offset_dims", ())
    collapsed = call.ints_attr("collapsed_slice_dims", ())
    start_index_map = call.ints_attr("start_index_map")
    operand_batching = call.ints_attr("operand_batching_dims", ())
    indices_batching = call.ints_attr("start_indices_batching_dims", ())
    slice_sizes = call.ints_attr("slice_sizes")
    index_vector_dim = call.int_attr("index_vector_dim")
    batch_dims, vector = _index_dims(indices, index_vector_dim, "operand 1 (start indices)")

    if len(start_index_map) != vector:
        raise ShapeError(
            f"start_index_map {format_dims(start_index_map)} has {len(start_index_map)} entries "
            f"but the index vectors of operand 1 {format_shape(indices)} have {vector}"
        )
    _dimension_numbers(start_index_map, operand.rank, "start_index_map dimension")
    _dimension_numbers(collapsed, operand.rank, "collapsed_slice_dims dimension", sorted_=True)
    _dimension_numbers(operand_batching, operand.rank, "operand_batching_dims dimension",
                       sorted_=True)
    if set(collapsed) & set(operand_batching):
        raise ShapeError("collapsed_slice_dims and operand_batching_dims must not overlap")
    if set(start_index_map) & set(operand_batching):
        raise ShapeError("start_index_map and operand_batching_dims must not overlap")
    if len(slice_sizes) != operand.rank:
        raise ShapeError(
            f"slice_sizes {format_dims(slice_sizes)} has {len(slice_sizes)} entries but operand "
            f"0 {format_shape(operand)} has rank {operand.rank}"
        )
    for d, size in enumerate(slice_sizes):
        if not 0 <= size <= operand.dims[d]:
            raise ShapeError(
                f"slice_sizes[{d}] = {size} does not fit in dimension {d} of operand 0 "
                f"{format_shape(operand)}"
            )
    for d in collapsed + operand_batching:
        if slice_sizes[d] > 1:
            raise ShapeError(
                f"dimension {d} is collapsed or batching, so its slice size must be 0 or 1, "
                f"got {slice_sizes[d]}"
            )
    if len(offset_dims) + len(collapsed) + len(operand_batching) != operand.rank:
        raise ShapeError(
            f"offset_dims ({len(offset_dims)}) + collapsed_slice_dims ({len(collapsed)}) + "
            f"operand_batching_dims ({len(operand_batching)}) must equal the rank "
            f"{operand.rank} of operand 0"
        )
    _check_index_batching(indices_batching, operand_batching, index_vector_dim, indices, operand,
                          "start_indices_batching_dims")
    rank = len(offset_dims) + len(batch_dims)
    _dimension_numbers(offset_dims, rank, "offset_dims dimension", sorted_=True)

    window_sizes = iter(
        size for d, size in enumerate(slice_sizes)
        if d not in collapsed and d not in operand_batching
    )
    batch = iter(batch_dims)
    dims = tuple(next(window_sizes) if d in offset_dims else next(batch) for d in range(rank))
    return ArrayShape(operand.dtype, dims)


def _check_index_batching(index_batching, operand_batching, index_vector_dim, indices, operand,
                          what: str) -> None:
    if len(index_batching) != len(operand_batching):
        raise ShapeError(
            f"{what} {format_dims(index_batching)} must pair up with the operand's batching "
            f"dims {format_dims(operand_batching)}"
        )
    _dimension_numbers(index_batching, indices.rank, f"{what} dimension")
    if index_vector_dim in index_batching:
        raise ShapeError(f"{what} must not contain index_vector_dim {index_vector_dim}")
    for i, o in zip(index_batching, operand_batching):
        if indices.dims[i] != operand.dims[o]:
            raise ShapeError(
                f"batching dimension {i} of the indices (size {indices.dims[i]}) and dimension "
                f"{o} of the operand (size {operand.dims[o]}) must have equal sizes"
            )


def _scatter(call: _Call) -> Shape:
    shapes = call.arrays()
    n = (len(shapes) - 1) // 2
    inputs, indices, updates = shapes[:n], shapes[n], shapes[n + 1:]
    operand = inputs[0]
    _same_dims(shapes, list(range(n)))
    _same_dims(shapes, list(range(n + 1, 2 * n + 1)))
    for i in range(n):
        _same_dtype(shapes, [n + 1 + i], first=i)
    window_dims = call.ints_attr("update_window_dims", ())
    inserted = call.ints_attr("inserted_window_dims", ())
    to_operand = call.ints_attr("scatter_dims_to_operand_dims")
    input_batching = call.ints_attr("input_batching_dims", ())
    indices_batching = call.ints_attr("scatter_indices_batching_dims", ())
    index_vector_dim = call.int_attr("index_vector_dim")
    batch_dims, vector = _index_dims(indices, index_vector_dim, f"operand {n} (indices)")
    update = updates[0]

    _dimension_numbers(window_dims, update.rank, "update_window_dims dimension", sorted_=True)
    _dimension_numbers(inserted, operand.rank, "inserted_window_dims dimension", sorted_=True)
    _dimension_numbers(input_batching, operand.rank, "input_batching_dims dimension",
                       sorted_=True)
    if set(inserted) & set(input_batching):
        raise ShapeError("inserted_window_dims and input_batching_dims must not overlap")
    if len(window_dims) + len(inserted) + len(input_batching) != operand.rank:
        raise ShapeError(
            f"update_window_dims ({len(window_dims)}) + inserted_window_dims ({len(inserted)}) "
            f"+ input_batching_dims ({len(input_batching)}) must equal the rank {operand.rank} "
            f"of operand 0"
        )
    if len(to_operand) != vector:
        raise ShapeError(
            f"scatter_dims_to_operand_dims {format_dims(to_operand)} has {len(to_operand)} "
            f"entries but the index vectors of operand {n} {format_shape(indices)} have {vector}"
        )
    _dimension_numbers(to_operand, operand.rank, "scatter_dims_to_operand_dims dimension")
    _check_index_batching(indices_batching, input_batching, index_vector_dim, indices, operand,
                          "scatter_indices_batching_dims")
    if update.rank != len(window_dims) + len(batch_dims):
        raise ShapeError(
            f"operand {n + 1} (updates) {format_shape(update)} must have rank "
            f"{len(window_dims) + len(batch_dims)}: {len(window_dims)} window dims and "
            f"{len(batch_dims)} scatter dims from the indices"
        )
    window_operand_dims = [d for d in range(operand.rank)
                           if d not in inserted and d not in input_batching]
    for update_dim, operand_dim in zip(window_dims, window_operand_dims):
        if update.dims[update_dim] > operand.dims[operand_dim]:
            raise ShapeError(
                f"updates dimension {update_dim} (size {update.dims[update_dim]}) is larger "
                f"than operand dimension {operand_dim} (size {operand.dims[operand_dim]})"
            )
    scatter_dims = [d for d in range(update.rank) if d not in window_dims]
    for update_dim, index_size in zip(scatter_dims, batch_dims):
        if update.dims[update_dim] != index_size:
            raise ShapeError(
                f"updates dimension {update_dim} (size {update.dims[update_dim]}) must match "
                f"the indices' batch size {index_size}"
            )
    _check_reducer_name(call)
    dtypes = [x.dtype for x in inputs]
    _reducer_signature(call, "to_apply", dtypes, dtypes)
    return _result(dtypes, operand.dims)


def _start_indices(call: _Call, first: int, rank: int) -> None:
    starts = call.arrays()[first:]
    # The old form passes one index vector instead of one scalar per dimension.
    if len(starts) == 1 and starts[0].rank == 1 and rank != 1:
        if starts[0].dims[0] != rank or not starts[0].dtype.is_integer:
            raise ShapeError(
                f"operand {first} (start indices) must be s32[{rank}], got "
                f"{format_shape(starts[0])}"
            )
        return
    if len(starts) != rank:
        raise ShapeError(
            f"{call.op} of a rank-{rank} array takes {rank} start indices (one per dimension) "
            f"after operand {first - 1}, got {len(starts)}"
        )
    for i, start in enumerate(starts):
        if start.rank != 0 or not start.dtype.is_integer:
            raise ShapeError(
                f"operand {first + i} (start index) must be an integer scalar, got "
                f"{format_shape(start)}"
            )
    _same_dtype(starts, list(range(len(starts))))


def _dynamic_slice(call: _Call) -> Shape:
    x = call.array(0)
    _start_indices(call, 1, x.rank)
    sizes = call.ints_attr("dynamic_slice_sizes")
    if len(sizes) != x.rank:
        raise ShapeError(
            f"dynamic_slice_sizes {format_dims(sizes)} has {len(sizes)} entries but operand 0 "
            f"{format_shape(x)} has rank {x.rank}"
        )
    for d, size in enumerate(sizes):
        if not 0 <= size <= x.dims[d]:
            raise ShapeError(
                f"dynamic_slice_sizes[{d}] = {size} does not fit in dimension {d} of operand 0 "
                f"{format_shape(x)}"
            )
    return ArrayShape(x.dtype, sizes)


def _dynamic_update_slice(call: _Call) -> Shape:
    x, update = call.array(0), call.array(1)
    _start_indices(call, 2, x.rank)
    _same_dtype([x, update], [1], first=0)
    if update.rank != x.rank:
        raise ShapeError(
            f"operand 1 (update) {format_shape(update)} must have the rank of operand 0 "
            f"{format_shape(x)}"
        )
    for d in range(x.rank):
        if update.dims[d] > x.dims[d]:
            raise ShapeError(
                f"operand 1 (update) dimension {d} (size {update.dims[d]}) is larger than "
                f"operand 0's (size {x.dims[d]})"
            )
    return ArrayShape(x.dtype, x.dims)


# -- library calls ------------------------------------------------------------------------------


def _result_dtype(call: _Call, lhs: ArrayShape, rhs: ArrayShape) -> DType:
    if not same_type_ignoring_precision(lhs.dtype, rhs.dtype):
        raise ShapeError(
            f"operand 1 has element type {rhs.dtype} but operand 0 has {lhs.dtype}"
        )
    hint = call.dtype_hint()
    if hint is not None:
        return hint  # XLA's preferred_element_type, as in bf16 x bf16 -> f32
    return lhs.dtype if lhs.dtype.bits >= rhs.dtype.bits else rhs.dtype


def _dot(call: _Call) -> Shape:
    lhs, rhs = call.arrays()
    lhs_batch = call.ints_attr("lhs_batch_dims", ())
    rhs_batch = call.ints_attr("rhs_batch_dims", ())
    lhs_contracting = call.ints_attr("lhs_contracting_dims", ())
    rhs_contracting = call.ints_attr("rhs_contracting_dims", ())
    _dimension_numbers(lhs_batch + lhs_contracting, lhs.rank, "lhs batch/contracting dimension")
    _dimension_numbers(rhs_batch + rhs_contracting, rhs.rank, "rhs batch/contracting dimension")
    for kind, lhs_dims, rhs_dims in (("batch", lhs_batch, rhs_batch),
                                     ("contracting", lhs_contracting, rhs_contracting)):
        if len(lhs_dims) != len(rhs_dims):
            raise ShapeError(
                f"dot has {len(lhs_dims)} lhs {kind} dims {format_dims(lhs_dims)} but "
                f"{len(rhs_dims)} rhs {kind} dims {format_dims(rhs_dims)}"
            )
        for l, r in zip(lhs_dims, rhs_dims):
            if lhs.dims[l] != rhs.dims[r]:
                raise ShapeError(
                    f"{kind} dimension {l} of operand 0 {format_shape(lhs)} (size "
                    f"{lhs.dims[l]}) does not match dimension {r} of operand 1 "
                    f"{format_shape(rhs)} (size {rhs.dims[r]})"
                )
    dtype = _result_dtype(call, lhs, rhs)
    lhs_free = [d for i, d in enumerate(lhs.dims) if i not in lhs_batch + lhs_contracting]
    rhs_free = [d for i, d in enumerate(rhs.dims) if i not in rhs_batch + rhs_contracting]
    batch = [lhs.dims[d] for d in lhs_batch]
    return ArrayShape(dtype, tuple(batch + lhs_free + rhs_free))


def _parse_dim_labels(labels: str, lhs_rank: int, rhs_rank: int):
    """'b01f_01io->b01f' as (lhs, rhs, out) label strings, each checked."""
    try:
        operands, out = labels.split("->")
        lhs, rhs = operands.split("_")
    except ValueError:
        raise ShapeError(f"dim_labels {labels!r} must look like 'b01f_01io->b01f'") from None
    spatial = lhs_rank - 2
    digits = "".join(str(i) for i in range(spatial))
    for what, text, letters, rank in (("lhs", lhs, "bf", lhs_rank), ("rhs", rhs, "io", rhs_rank),
                                      ("output", out, "bf", lhs_rank)):
        if len(text) != rank or sorted(text) != sorted(letters + digits):
            raise ShapeError(
                f"dim_labels {labels!r}: the {what} labels {text!r} must name each of the "
                f"{rank} dimensions once ({letters[0]}, {letters[1]} and spatial 0..{spatial - 1})"
            )
    return lhs, rhs, out


def _convolution(call: _Call) -> Shape:
    lhs, rhs = call.arrays()
    if lhs.rank != rhs.rank or lhs.rank < 2:
        raise ShapeError(
            f"convolution operands must have equal rank >= 2, got {format_shape(lhs)} and "
            f"{format_shape(rhs)}"
        )
    labels = call.attrs.get("dim_labels")
    if not isinstance(labels, str):
        raise ShapeError("convolution needs the attribute 'dim_labels', e.g. 'b01f_01io->b01f'")
    lhs_labels, rhs_labels, out_labels = _parse_dim_labels(labels, lhs.rank, rhs.rank)
    spatial = lhs.rank - 2
    features = call.int_attr("feature_group_count", 1)
    batch_groups = call.int_attr("batch_group_count", 1)

    def size(shape, labels_, label):
        return shape.dims[labels_.index(label)]

    batch, in_features = size(lhs, lhs_labels, "b"), size(lhs, lhs_labels, "f")
    kernel_in, kernel_out = size(rhs, rhs_labels, "i"), size(rhs, rhs_labels, "o")
    if features < 1 or batch_groups < 1:
        raise ShapeError("feature_group_count and batch_group_count must be >= 1")
    if features > 1 and batch_groups > 1:
        raise ShapeError("feature_group_count and batch_group_count cannot both exceed 1")
    if in_features % features or in_features // features != kernel_in:
        raise ShapeError(
            f"operand 0 has {in_features} input features, which in {features} feature "
            f"group(s) must equal the kernel's {kernel_in} input features (operand 1 dimension "
            f"{rhs_labels.index('i')})"
        )
    if kernel_out % features:
        raise ShapeError(
            f"the kernel's {kernel_out} output features must divide into {features} groups"
        )
    if batch % batch_groups or kernel_out % batch_groups:
        raise ShapeError(
            f"batch size {batch} and the kernel's {kernel_out} output features must divide "
            f"into {batch_groups} batch groups"
        )
    kernel_spatial = tuple(size(rhs, rhs_labels, str(i)) for i in range(spatial))
    lhs_spatial = tuple(size(lhs, lhs_labels, str(i)) for i in range(spatial))
    if spatial == 0 and call.attrs.get("window") is None:
        window = []
    else:
        window = _window(call, spatial)
    for i, (window_size, *_rest) in enumerate(window):
        if window_size != kernel_spatial[i]:
            raise ShapeError(
                f"window size {window_size} in spatial dimension {i} does not match the "
                f"kernel's size {kernel_spatial[i]} (operand 1 dimension "
                f"{rhs_labels.index(str(i))})"
            )
    out_spatial = _window_output(call, lhs_spatial, window)
    dims = [0] * lhs.rank
    dims[out_labels.index("b")] = batch // batch_groups
    dims[out_labels.index("f")] = kernel_out
    for i in range(spatial):
        dims[out_labels.index(str(i))] = out_spatial[i]
    return ArrayShape(_result_dtype(call, lhs, rhs), tuple(dims))


def _sort(call: _Call) -> Shape:
    shapes = call.arrays()
    _same_dims(shapes, list(range(len(shapes))))
    (dimension,) = _single(call.ints_attr("dimensions"), "sort dimensions")
    _dimension_numbers((dimension,), shapes[0].rank, "sort dimension")
    key = "comparator" if "comparator" in call.attrs else "to_apply"
    comparator = call.computation(key)
    if comparator is not None:
        params = [s.dtype for s in shapes for _ in range(2)]
        _check_signature(call, key, comparator, params, ArrayShape(PRED, ()))
    results = [ArrayShape(s.dtype, s.dims) for s in shapes]
    return results[0] if len(results) == 1 else TupleShape(tuple(results))


def _batch_norm(call: _Call) -> Shape:
    """batch-norm-inference/-training/-grad: per-feature operands of the feature dim's size."""
    shapes = call.arrays()
    operand = shapes[0]
    _need_kind(call.op, operand, 0, _FLOAT, "floating-point")
    feature_index = call.int_attr("feature_index")
    _dimension_numbers((feature_index,), operand.rank, "feature_index")
    features = ArrayShape(operand.dtype, (operand.dims[feature_index],))
    # grad-output (the last operand of batch-norm-grad) has the operand's shape.
    per_feature = shapes[1:-1] if call.op == "batch-norm-grad" else shapes[1:]
    for i, shape in enumerate(per_feature, start=1):
        if shape.dtype != operand.dtype or shape.dims != features.dims:
            raise ShapeError(
                f"operand {i} must be {format_shape(features)} (one value per feature of "
                f"dimension {feature_index}), got {format_shape(shape)}"
            )
    if call.op == "batch-norm-grad":
        _same_dims(shapes, [len(shapes) - 1], first=0)
        _same_dtype(shapes, [len(shapes) - 1], first=0)
    result = ArrayShape(operand.dtype, operand.dims)
    if call.op == "batch-norm-inference":
        return result
    return TupleShape((result, features, features))


def _topk(call: _Call) -> Shape:
    x = call.array(0)
    k = call.int_attr("k")
    if x.rank == 0 or not 0 <= k <= x.dims[-1]:
        raise ShapeError(f"topk k={k} must be between 0 and the last dimension of "
                         f"{format_shape(x)}")
    dims = x.dims[:-1] + (k,)
    return TupleShape((ArrayShape(x.dtype, dims), ArrayShape(S32, dims)))


# -- tuples and control flow --------------------------------------------------------------------


def _tuple(call: _Call) -> Shape:
    return TupleShape(tuple(strip_layouts(s) for s in call.shapes))


def _get_tuple_element(call: _Call) -> Shape:
    shape = call.shapes[0]
    index = call.int_attr("index")
    if not shape.is_tuple:
        raise ShapeError(
            f"operand 0 of get-tuple-element must be a tuple, got {format_shape(shape)}"
        )
    if not 0 <= index < len(shape.elements):
        raise ShapeError(
            f"index {index} is out of range for the {len(shape.elements)}-element tuple "
            f"{format_shape(shape)}"
        )
    return strip_layouts(shape.elements[index])


def _while(call: _Call) -> Shape:
    state = strip_layouts(call.shapes[0])
    body, condition = call.computation("body"), call.computation("condition")
    if body is not None:
        _check_signature(call, "body", body, [state], state)
    if condition is not None:
        _check_signature(call, "condition", condition, [state], ArrayShape(PRED, ()))
    return state


def _conditional(call: _Call) -> Shape | None:
    selector = call.array(0)
    branches = call.attrs.get("branch_computations")
    if not isinstance(branches, (tuple, list)) or not all(isinstance(b, str) for b in branches):
        raise ShapeError("conditional needs 'branch_computations', a list of computation names")
    if selector.rank != 0 or selector.dtype not in (PRED, S32):
        raise ShapeError(f"operand 0 of conditional must be pred[] or s32[], got "
                         f"{format_shape(selector)}")
    if selector.dtype == PRED and len(branches) != 2:
        raise ShapeError(f"a conditional on a pred has 2 branches, got {len(branches)}")
    if len(branches) != len(call.shapes) - 1:
        raise ShapeError(
            f"conditional has {_plural(len(branches), 'branch')} but "
            f"{_plural(len(call.shapes) - 1, 'branch operand')}"
        )
    if call.computations is None:
        return None
    result = None
    for i, name in enumerate(branches):
        branch = call.computations.get(name)
        if branch is None or branch.root not in branch.nodes:
            return None
        branch_result = strip_layouts(branch.root_node.shape)
        if result is None:
            result = branch_result
        _check_signature(call, f"branch {i}", branch, [strip_layouts(call.shapes[i + 1])], result)
    return result


def _map(call: _Call) -> Shape | None:
    shapes = call.arrays()
    _same_dims(shapes, list(range(len(shapes))))
    dimensions = call.ints_attr("dimensions", tuple(range(shapes[0].rank)))
    if tuple(dimensions) != tuple(range(shapes[0].rank)):
        raise ShapeError(f"map dimensions must be 0..{shapes[0].rank - 1} in order, got "
                         f"{format_dims(dimensions)}")
    function = call.computation("to_apply")
    if function is None:
        return None
    result = function.root_node.shape
    if result.is_tuple or result.rank != 0:
        raise ShapeError(f"to_apply '{function.name}' of map must return a scalar, got "
                         f"{format_shape(result)}")
    _check_signature(call, "to_apply", function, [s.dtype for s in shapes], result)
    return ArrayShape(result.dtype, shapes[0].dims)


def _first_operand(call: _Call) -> Shape:
    if not call.shapes:
        raise ShapeError(f"{call.op} takes at least one operand")
    return strip_layouts(call.shapes[0])


_RULES: dict[str, Callable[[_Call], Shape | None]] = {
    **{name: _unary for name, info in OPS.items() if info.category == Category.UNARY},
    **{name: _binary for name, info in OPS.items() if info.category == Category.BINARY},
    "clamp": _clamp,
    "compare": _compare,
    "select": _select,
    "convert": _convert,
    "stochastic-convert": _convert,
    "bitcast-convert": _bitcast_convert,
    "constant": _constant,
    "iota": _iota,
    "rng": _rng,
    "broadcast": _broadcast,
    "reshape": _reshape,
    "bitcast": _reshape,
    "transpose": _transpose,
    "reduce": _reduce,
    "reduce-window": _reduce_window,
    "slice": _slice,
    "pad": _pad,
    "concatenate": _concatenate,
    "reverse": _reverse,
    "gather": _gather,
    "scatter": _scatter,
    "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice,
    "select-and-scatter": _select_and_scatter,
    "dot": _dot,
    "convolution": _convolution,
    "sort": _sort,
    "topk": _topk,
    "batch-norm-inference": _batch_norm,
    "batch-norm-training": _batch_norm,
    "batch-norm-grad": _batch_norm,
    "tuple": _tuple,
    "get-tuple-element": _get_tuple_element,
    "while": _while,
    "conditional": _conditional,
    "map": _map,
    "after-all": lambda call: ArrayShape(TOKEN, ()),
    "add-dependency": _first_operand,
    "opt-barrier": _first_operand,
    "domain": _first_operand,
    "get-dimension-size": lambda call: ArrayShape(S32, ()),
    "partition-id": lambda call: ArrayShape(DTYPES["u32"], ()),
    "replica-id": lambda call: ArrayShape(DTYPES["u32"], ()),
}
