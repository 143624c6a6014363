"""The reference interpreter: the living definition of every op's semantics.

Every fusion plan, every generated kernel and every cost model's correctness test compares
against `evaluate`, and `evaluate` must itself reproduce JAX/XLA's outputs on real HLO. The rules
follow XLA's operation semantics (https://openxla.org/xla/operation_semantics) and, where that
page leaves a case implementation-defined, what XLA's CPU and GPU backends actually do (their
shared elemental IR emitter); each such rule is cited at the function that applies it.

Values are NumPy arrays of the node's dtype (ml_dtypes for bf16, fp8 and 4-bit types), Python
tuples for tuple-shaped nodes and None for tokens.

Numerics, as XLA computes them:
- elementwise ops on floats narrower than 32 bits compute in f32 and round the result once;
- reductions (reduce, reduce-window, dot, convolution) of such floats accumulate in f32
  (`dtypes.accumulation_dtype`) and round once at the end; scatter combiners round per update,
  as each is its own HLO op;
- integer arithmetic wraps (two's complement), with XLA's rules for division by zero, INT_MIN/-1,
  out-of-range shifts and float-to-int conversion.

Sub-computations (reducers, comparators, scatter combiners, map bodies) are scalar functions.
When every node of one is elementwise they are evaluated "lifted": once, on whole arrays, which
numpy broadcasting makes equivalent to calling them per element. Others run per element.
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from compiler.errors import InputError, LimitError, UnsupportedError
from compiler.ir import dtypes
from compiler.ir.dtypes import DType
from compiler.ir.graph import Graph, Node
from compiler.ir.ops import OPS
from compiler.ir.shapes import ArrayShape, Shape

SEMANTICS = "https://openxla.org/xla/operation_semantics"

Value = Any  # np.ndarray, a tuple of values, or None (a token)
Evaluator = Callable[[Node, list, "_Context"], Value]


@dataclass(frozen=True)
class InterpreterOptions:
    """Limits of one evaluation; frozen so it can key a cache."""

    max_while_iterations: int = 1_000_000


# -- public API ---------------------------------------------------------------------------------


def evaluate(
    graph: Graph, inputs: Sequence[Any], options: InterpreterOptions | None = None
) -> list[np.ndarray]:
    """The graph's outputs for `inputs` (in parameter order), flattened in output-tuple order.

    Tuple-shaped outputs are flattened too, so `outputs[i]` is the i-th array XLA returns.
    """
    values = evaluate_all(graph, inputs, options)
    outputs: list[np.ndarray] = []
    for name in graph.output_names():
        outputs.extend(_leaves(values[name]))
    return outputs


def evaluate_all(
    graph: Graph, inputs: Sequence[Any], options: InterpreterOptions | None = None
) -> dict[str, Value]:
    """Every node's value (tuple-shaped values as Python tuples), keyed by node name."""
    args = _check_inputs(graph, inputs)
    machine = _Machine(graph.computations, options or InterpreterOptions())
    with np.errstate(all="ignore"):
        return machine.run(graph, args)


def apply_op(graph: Graph, node: Node, operands: Sequence[Value],
             options: InterpreterOptions | None = None) -> Value:
    """`node`'s op (a node of `graph`) applied to `operands` as they are, not rounded to the
    node's dtype: float64 operands of a float op give float64 results (reductions and dots
    included). Error bounds (compiler/ir/error_bound.py) evaluate ops on perturbed values and
    magnitudes this way, with exactly the attribute handling `evaluate` has."""
    machine = _Machine(graph.computations, options or InterpreterOptions())
    context = _Context(machine, graph, {})
    evaluator = EVALUATORS.get(node.op)
    if evaluator is None:
        raise UnsupportedError(f"cannot evaluate {node.op}: not an op the explorer knows",
                               node.where())
    with np.errstate(all="ignore"):
        return evaluator(node, list(operands), context)


# -- input checking -----------------------------------------------------------------------------


def _check_inputs(graph: Graph, inputs: Sequence[Any]) -> list[Value]:
    params = graph.parameter_nodes()
    if len(inputs) != len(params):
        names = ", ".join(f"'{p.name}'" for p in params)
        where = graph.loc or f"computation '{graph.name}'"
        raise InputError(f"expected {len(params)} inputs ({names}), got {len(inputs)}", where)
    return [
        _check_input(value, param.shape, f"arg{i} (parameter '{param.name}')", param)
        for i, (value, param) in enumerate(zip(inputs, params))
    ]


def _check_input(value: Any, shape: Shape, label: str, param: Node) -> Value:
    if shape.is_tuple:
        if not isinstance(value, (tuple, list)) or len(value) != len(shape.elements):
            raise InputError(f"{label}: expected a tuple {shape}, got {type(value).__name__}",
                             param.where())
        return tuple(
            _check_input(v, s, f"{label}[{i}]", param)
            for i, (v, s) in enumerate(zip(value, shape.elements))
        )
    if not shape.dtype.is_array_type:
        return None
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise InputError(f"{label}: not an array ({err})", param.where()) from None
    expected = shape.dtype.numpy
    if array.dtype.kind == "V" and expected.kind == "V" and \
            array.dtype.itemsize == expected.itemsize:
        # An ml_dtypes array (bf16, fp8) read back from an .npz: NumPy stores it as raw records
        # ('|V2'), whose bytes are the values.
        array = array.view(expected)
    same_type = array.dtype == expected or np.can_cast(array.dtype, expected, "safe")
    if array.shape != shape.dims or not same_type:
        dims = ",".join(str(d) for d in array.shape)
        raise InputError(
            f"{label}: expected {_type_text(shape)}, got {array.dtype} ({dims})", param.where()
        )
    return array.astype(expected, copy=False)


def _type_text(shape: ArrayShape) -> str:
    return f"{shape.dtype.name}[{','.join(str(d) for d in shape.dims)}]"


# -- the machine: runs graphs node by node ------------------------------------------------------


class _Machine:
    """Evaluates a graph and the computations its nodes call."""

    def __init__(self, computations: dict[str, Graph], options: InterpreterOptions):
        self.computations = computations
        self.options = options
        self._liftable: dict[str, bool] = {}

    def run(self, graph: Graph, args: Sequence[Value], lifted: bool = False) -> dict[str, Value]:
        if len(args) != len(graph.parameters):
            raise InputError(f"computation '{graph.name}' takes {len(graph.parameters)} "
                             f"arguments, got {len(args)}", graph.loc or graph.name)
        context = _Context(self, graph, dict(zip(graph.parameters, args)), lifted)
        values: dict[str, Value] = {}
        for node in graph:
            missing = [name for name in node.operands if name not in values]
            if missing:
                raise InputError(f"operand '{missing[0]}' is used before it is defined",
                                 node.where())
            operands = [values[name] for name in node.operands]
            if lifted and node.op in _SCALAR_IDENTITIES:
                values[node.name] = operands[0]
            else:
                values[node.name] = self._evaluate_node(node, operands, context)
        return values

    def _evaluate_node(self, node: Node, operands: list, context: _Context) -> Value:
        evaluator = EVALUATORS.get(node.op)
        if evaluator is None:
            raise UnsupportedError(f"cannot evaluate {node.op}: not an op the explorer knows",
                                   node.where())
        try:
            value = evaluator(node, operands, context)
        except InputError:
            raise
        except (ArithmeticError, IndexError, KeyError, TypeError, ValueError) as err:
            message = f"cannot evaluate {node.op}: {type(err).__name__}: {err}"
            raise InputError(message, node.where()) from err
        return _conform(value, node.shape, node, context.lifted)

    def computation(self, name: str, caller: Node) -> Graph:
        if name not in self.computations:
            raise InputError(f"{caller.op} calls unknown computation '{name}'", caller.where())
        return self.computations[name]

    def call(self, name: str, args: Sequence[Value], caller: Node, lifted: bool = False) -> Value:
        computation = self.computation(name, caller)
        return self.run(computation, args, lifted)[computation.root]

    def apply(self, name: str, args: Sequence[np.ndarray], caller: Node) -> list[np.ndarray]:
        """Apply a scalar computation elementwise over arrays; one array per output leaf."""
        computation = self.computation(name, caller)
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        if self._is_liftable(name, computation):
            leaves = _leaves(self.call(name, args, caller, lifted=True))
            return [np.broadcast_to(leaf, shape) for leaf in leaves]
        columns = np.broadcast_arrays(*args)
        outputs = [np.empty(shape, leaf.dtype.numpy)
                   for leaf in computation.root_node.shape.leaves()]
        for index in np.ndindex(*shape):
            scalars = [np.asarray(column[index]) for column in columns]
            for output, leaf in zip(outputs, _leaves(self.call(name, scalars, caller))):
                output[index] = leaf
        return outputs

    def _is_liftable(self, name: str, computation: Graph) -> bool:
        if name not in self._liftable:
            self._liftable[name] = all(_liftable_node(n) for n in computation)
        return self._liftable[name]


# Ops that are the identity on scalars, so a lifted (whole-array) evaluation just forwards them.
_SCALAR_IDENTITIES = frozenset({"broadcast", "reshape", "bitcast", "transpose", "copy"})
_PLUMBING = frozenset({"parameter", "constant", "tuple", "get-tuple-element"})


def _liftable_node(node: Node) -> bool:
    if any(leaf.rank != 0 for leaf in node.shape.leaves()):
        return False
    if node.op in _PLUMBING or node.op in _SCALAR_IDENTITIES:
        return True
    info = OPS.get(node.op)
    return info is not None and info.is_elementwise and node.op != "stochastic-convert"


@dataclass
class _Context:
    """What an evaluator may use besides its operands: sub-computations and operand shapes."""

    machine: _Machine
    graph: Graph
    arguments: dict[str, Value]  # parameter name -> the value this call passes
    lifted: bool = False

    @property
    def options(self) -> InterpreterOptions:
        return self.machine.options

    def operand_shape(self, node: Node, index: int) -> Shape:
        return self.graph.nodes[node.operands[index]].shape

    def call(self, name: str, args: Sequence[Value], caller: Node) -> Value:
        return self.machine.call(name, args, caller)

    def apply(self, name: str, args: Sequence[np.ndarray], caller: Node) -> list[np.ndarray]:
        return self.machine.apply(name, args, caller)


def _conform(value: Value, shape: Shape, node: Node, lifted: bool) -> Value:
    """Round `value` to the node's dtype and check it has the node's declared shape."""
    if shape.is_tuple:
        if not isinstance(value, tuple) or len(value) != len(shape.elements):
            raise InputError(f"{node.op} produced a value that does not fit its shape {shape}",
                             node.where())
        return tuple(_conform(v, s, node, lifted) for v, s in zip(value, shape.elements))
    if not shape.dtype.is_array_type:
        return None
    array = np.asarray(value)
    if array.dtype != shape.dtype.numpy:
        array = array.astype(shape.dtype.numpy)
    if not lifted and array.shape != shape.dims:
        dims = ",".join(str(d) for d in array.shape)
        raise InputError(
            f"{node.op} produces {shape.dtype.name}[{dims}] but the node declares "
            f"{_type_text(shape)}", node.where()
        )
    return array


def _leaves(value: Value) -> list:
    if isinstance(value, tuple):
        return [leaf for element in value for leaf in _leaves(element)]
    return [value]


# -- dtype helpers ------------------------------------------------------------------------------

_BY_NUMPY: dict[np.dtype, DType] = {
    d.numpy: d for d in dtypes.DTYPES.values() if d.numpy_name is not None
}


def _dtype_of(array: np.ndarray) -> DType:
    return _BY_NUMPY[np.asarray(array).dtype]


def _widen(array: np.ndarray) -> np.ndarray:
    """The array in the type XLA computes it in: f32 for narrow floats, bytes for 4-bit ints."""
    d = _dtype_of(array)
    if d.is_float and d.bits < 32:
        return array.astype(dtypes.accumulation_dtype(d).numpy)
    if d.is_integer and d.bits < 8:
        return array.astype(np.int8 if d.kind == "sint" else np.uint8)
    return array


def _bit_pattern(array: np.ndarray, d: DType) -> np.ndarray:
    """The raw bits of every element as uint64 (sub-byte types occupy their low bits)."""
    array = np.asarray(array)
    if d.bits < 8:
        return (array.view(np.uint8) & ((1 << d.bits) - 1)).astype(np.uint64)
    if array.dtype.itemsize * 8 != d.bits or d.bits > 64:
        raise UnsupportedError(f"cannot take the bits of {d.name} values")
    return array.view(np.dtype(f"uint{d.bits}")).astype(np.uint64)


def _from_bit_pattern(bits: np.ndarray, d: DType) -> np.ndarray:
    """Inverse of `_bit_pattern`: values of dtype `d` with the given raw bits."""
    if d.bits >= 8:
        return bits.astype(np.dtype(f"uint{d.bits}")).view(d.numpy)
    nibble = (bits & ((1 << d.bits) - 1)).astype(np.uint8)
    if d.kind == "sint":
        signed = nibble.astype(np.int8)
        return np.where(signed >= 1 << (d.bits - 1), signed - (1 << d.bits), signed).astype(d.numpy)
    if d.kind == "uint":
        return nibble.astype(d.numpy)
    return nibble.view(d.numpy)


def _integer_limits(d: DType) -> tuple[int, int]:
    if d.kind == "sint":
        return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1
    return 0, (1 << d.bits) - 1


def _container(d: DType) -> np.dtype:
    """A NumPy integer type that holds every value of integer type `d`."""
    if d.bits < 8:
        return np.dtype(np.int8 if d.kind == "sint" else np.uint8)
    return d.numpy


def _output_dtype(node: Node) -> DType:
    return node.shape.leaves()[0].dtype


# -- registry -----------------------------------------------------------------------------------

EVALUATORS: dict[str, Evaluator] = {}


def _register(*ops: str) -> Callable[[Evaluator], Evaluator]:
    def decorate(function: Evaluator) -> Evaluator:
        for op in ops:
            EVALUATORS[op] = function
        return function

    return decorate


def _elementwise(function: Callable[..., np.ndarray]) -> Evaluator:
    """An evaluator applying `function` to the operands in their compute type (see `_widen`)."""

    def evaluate_elementwise(node: Node, args: list, context: _Context) -> np.ndarray:
        return function(*(_widen(a) for a in args))

    return evaluate_elementwise


# -- leaves: parameters, constants, iota ---------------------------------------------------------


@_register("parameter")
def _eval_parameter(node: Node, args: list, context: _Context) -> Value:
    if node.name not in context.arguments:
        raise InputError("parameter is not listed among the computation's parameters",
                         node.where())
    return context.arguments[node.name]


@_register("constant")
def _eval_constant(node: Node, args: list, context: _Context) -> np.ndarray:
    value = node.attrs.get("value")
    if value is None:
        raise UnsupportedError(
            f"cannot evaluate constant '{node.name}': constant elided in the dump; export the "
            "module with large constants printed", node.where())
    return np.asarray(value)


@_register("iota")
def _eval_iota(node: Node, args: list, context: _Context) -> np.ndarray:
    dims = node.array_shape.dims
    axis = node.attrs["iota_dimension"]
    counts = np.arange(dims[axis]).reshape([n if d == axis else 1 for d, n in enumerate(dims)])
    return _convert(np.broadcast_to(counts, dims), node.array_shape.dtype)


# -- elementwise unary --------------------------------------------------------------------------


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _erf(x: np.ndarray) -> np.ndarray:
    """erf via math.erf in f64, rounded to the compute type (f32 for f32 and narrower)."""
    if x.dtype.kind == "c":
        raise UnsupportedError("cannot evaluate erf of complex numbers")
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype)


def _round_half_away_from_zero(x: np.ndarray) -> np.ndarray:
    """round-nearest-afz: ties go away from zero (C's round), sign of zero kept."""
    whole = np.trunc(x)
    rounded = np.where(np.abs(x - whole) >= 0.5, whole + np.sign(x), whole)
    return np.copysign(rounded, x)


def _sign(x: np.ndarray) -> np.ndarray:
    """sign: -1, -0, +0 or 1 for floats (NaN stays NaN), x/|x| for complex numbers.

    XLA's emitter computes copysign(x != 0, x) and passes NaN through, so sign(-0.0) is -0.0.
    """
    if x.dtype.kind == "c":
        return np.where(x == 0, 0, x / np.where(x == 0, 1, np.abs(x)))
    if x.dtype.kind != "f":
        return np.sign(x)
    return np.where(np.isnan(x), x, np.copysign((x != 0).astype(x.dtype), x))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1 / np.sqrt(x)


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exponential": np.exp,
    "exponential-minus-one": np.expm1,
    "log": np.log,
    "log-plus-one": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": _rsqrt,
    "cbrt": np.cbrt,
    "tanh": np.tanh,
    "logistic": _logistic,
    "sine": np.sin,
    "cosine": np.cos,
    "tan": np.tan,
    "erf": _erf,
    "acos": np.arccos,
    "acosh": np.arccosh,
    "asin": np.arcsin,
    "asinh": np.arcsinh,
    "atan": np.arctan,
    "atanh": np.arctanh,
    "cosh": np.cosh,
    "sinh": np.sinh,
    "abs": np.abs,
    "negate": np.negative,
    "floor": np.floor,
    "ceil": np.ceil,
    "round-nearest-afz": _round_half_away_from_zero,
    "round-nearest-even": np.rint,
    "sign": _sign,
    "not": np.invert,
    "is-finite": np.isfinite,
    "real": np.real,
    "imag": np.imag,
}

for _op, _function in _UNARY.items():
    EVALUATORS[_op] = _elementwise(_function)


@_register("popcnt")
def _eval_popcnt(node: Node, args: list, context: _Context) -> np.ndarray:
    return np.bitwise_count(_bit_pattern(args[0], _dtype_of(args[0])))


@_register("count-leading-zeros")
def _eval_count_leading_zeros(node: Node, args: list, context: _Context) -> np.ndarray:
    d = _dtype_of(args[0])
    bits = _bit_pattern(args[0], d)
    length = np.zeros(bits.shape, np.int64)
    for shift in (32, 16, 8, 4, 2, 1):
        high = (bits >> np.uint64(shift)) != 0
        length += np.where(high, shift, 0)
        bits = np.where(high, bits >> np.uint64(shift), bits)
    length += bits != 0
    return d.bits - length


# Exponent and mantissa widths of the float types reduce-precision accepts.
_FLOAT_FIELDS = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}


@_register("reduce-precision")
def _eval_reduce_precision(node: Node, args: list, context: _Context) -> np.ndarray:
    """Round to `mantissa_bits` (to nearest even) and clamp to an `exponent_bits` range.

    Bit for bit XLA's EmitReducePrecisionIR: overflow goes to signed infinity, anything at or
    below the smallest normal of the reduced format (denormals included) flushes to signed
    zero, and NaN stays the input NaN (or becomes +inf when no mantissa bits are kept).
    """
    x = args[0]
    d = _dtype_of(x)
    if d.name not in _FLOAT_FIELDS:
        raise UnsupportedError(f"cannot evaluate reduce-precision of {d.name}", node.where())
    src_exponent, src_mantissa = _FLOAT_FIELDS[d.name]
    exponent_bits = node.attrs["exponent_bits"]
    mantissa_bits = node.attrs["mantissa_bits"]
    bits = _bit_pattern(x, d)
    all_ones = (1 << d.bits) - 1
    sign_mask = 1 << (d.bits - 1)
    exponent_mask = ((1 << src_exponent) - 1) << src_mantissa
    is_nan = (bits & (all_ones ^ sign_mask)) > exponent_mask
    if mantissa_bits < src_mantissa:
        dropped = src_mantissa - mantissa_bits
        last_kept = 1 << dropped
        bias = ((bits & last_kept) >> np.uint64(dropped)) + ((last_kept >> 1) - 1)
        bits = ((bits + bias) & all_ones) & (all_ones ^ (last_kept - 1))
    if exponent_bits < src_exponent:
        exponent_bias = (1 << (src_exponent - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = bits & exponent_mask
        overflows = exponent > (exponent_bias + reduced_bias) << src_mantissa
        underflows = exponent <= (exponent_bias - reduced_bias) << src_mantissa
        signed_zero = bits & sign_mask
        bits = np.where(overflows, signed_zero | exponent_mask, bits)
        bits = np.where(underflows, signed_zero, bits)
    result = _from_bit_pattern(bits, d)
    nan_result = x if mantissa_bits > 0 else np.array(np.inf, d.numpy)
    return np.where(is_nan, nan_result, result)


# -- elementwise binary -------------------------------------------------------------------------


def _integer_divide(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Truncating division; x/0 = -1 (all ones) and INT_MIN/-1 = INT_MIN, as XLA emits it."""
    zero, overflow = _division_hazards(x, y)
    safe = np.where(zero | overflow, np.ones_like(y), y)
    quotient = (x - np.fmod(x, safe)) // safe
    return np.where(zero, np.invert(np.zeros_like(quotient)), quotient)


def _integer_remainder(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Remainder with the dividend's sign; x%0 = x and INT_MIN%-1 = 0, as XLA emits it."""
    zero, overflow = _division_hazards(x, y)
    safe = np.where(zero | overflow, np.ones_like(y), y)
    return np.where(zero, x, np.fmod(x, safe))


def _division_hazards(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    zero = y == 0
    if x.dtype.kind != "i":
        return zero, np.zeros_like(zero)
    return zero, (x == np.iinfo(x.dtype).min) & (y == -1)


def _divide(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _integer_divide(x, y) if x.dtype.kind in "iu" else np.true_divide(x, y)


def _remainder(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _integer_remainder(x, y) if x.dtype.kind in "iu" else np.fmod(x, y)


def _power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _integer_power(x, y) if x.dtype.kind in "iu" else np.power(x, y)


def _integer_power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Integer power exactly as XLA's EmitIntegerPow computes it.

    Squaring over the exponent's low 6 bits only (so 0**64 == 1), wrapping on overflow; an
    exponent that is negative as a signed number gives 1 for base 1 and 0 otherwise.
    """
    x, y = np.broadcast_arrays(x, y)
    result = np.ones_like(x)
    base = x.copy()
    exponent = y.copy()
    for _ in range(6):
        result = np.where((exponent & 1) == 1, result * base, result)
        base = base * base
        exponent = exponent >> 1
    negative = y.view(np.dtype(f"int{y.dtype.itemsize * 8}")) < 0
    return np.where(negative, (x == 1).astype(x.dtype), result)


def _complex(real: np.ndarray, imag: np.ndarray) -> np.ndarray:
    kind = np.complex128 if real.dtype == np.float64 else np.complex64
    out = np.empty(np.broadcast_shapes(real.shape, imag.shape), kind)
    out.real = real
    out.imag = imag
    return out


_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": _divide,
    "remainder": _remainder,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "power": _power,
    "atan2": np.arctan2,
    "complex": _complex,
}

for _op, _function in _BINARY.items():
    EVALUATORS[_op] = _elementwise(_function)


@_register("shift-left", "shift-right-logical", "shift-right-arithmetic")
def _eval_shift(node: Node, args: list, context: _Context) -> np.ndarray:
    """Shifts by amounts >= the bit width (read unsigned) give 0, or the sign for arithmetic.

    LLVM leaves such shifts undefined; XLA saturates them (SaturateShiftIfNecessary).
    """
    d = _output_dtype(node)
    x = _bit_pattern(args[0], d)
    amount = _bit_pattern(args[1], d)
    too_far = amount >= d.bits
    amount = np.where(too_far, np.uint64(0), amount)
    all_ones = np.uint64((1 << d.bits) - 1)
    if node.op == "shift-left":
        shifted = np.where(too_far, np.uint64(0), (x << amount) & all_ones)
    elif node.op == "shift-right-logical":
        shifted = np.where(too_far, np.uint64(0), x >> amount)
    else:
        negative = (x >> np.uint64(d.bits - 1)) == 1
        sign_fill = all_ones ^ (all_ones >> amount)
        shifted = np.where(negative, (x >> amount) | sign_fill, x >> amount)
        shifted = np.where(too_far, np.where(negative, all_ones, np.uint64(0)), shifted)
    return _from_bit_pattern(shifted, d)


# -- ternary, compare, select -------------------------------------------------------------------


@_register("clamp")
def _eval_clamp(node: Node, args: list, context: _Context) -> np.ndarray:
    """clamp(lo, x, hi) = min(max(x, lo), hi), NaN-propagating like XLA's float min/max."""
    low, x, high = (_widen(a) for a in args)
    return np.minimum(np.maximum(x, low), high)


@_register("select")
def _eval_select(node: Node, args: list, context: _Context) -> np.ndarray:
    predicate, on_true, on_false = args
    return np.where(predicate, on_true, on_false)


_COMPARISONS = {
    "EQ": np.equal, "NE": np.not_equal, "LT": np.less,
    "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
}


@_register("compare")
def _eval_compare(node: Node, args: list, context: _Context) -> np.ndarray:
    """IEEE comparison, or with type=TOTALORDER the total order
    -NaN < -inf < ... < -0 < +0 < ... < inf < NaN (see the Compare section of SEMANTICS)."""
    x, y = args
    d = _dtype_of(x)
    if node.attrs.get("type") == "TOTALORDER" and d.is_float:
        x, y = _total_order_key(x, d), _total_order_key(y, d)
    else:
        x, y = _widen(x), _widen(y)
    return _COMPARISONS[node.attrs["direction"]](x, y)


def _total_order_key(x: np.ndarray, d: DType) -> np.ndarray:
    """Signed integers ordered like the floats' total order: negatives map below -1."""
    bits = _bit_pattern(x, d)
    magnitude = (bits & np.uint64((1 << (d.bits - 1)) - 1)).astype(np.int64)
    negative = (bits >> np.uint64(d.bits - 1)) == 1
    return np.where(negative, -magnitude - 1, magnitude)


# -- conversions --------------------------------------------------------------------------------


@_register("convert")
def _eval_convert(node: Node, args: list, context: _Context) -> np.ndarray:
    return _convert(args[0], node.shape.dtype)


def _convert(x: np.ndarray, to: DType) -> np.ndarray:
    """XLA's convert: to pred is x != 0; complex to real keeps the real part; float to integer
    truncates toward zero, saturates at the type's limits and maps NaN to 0."""
    source = _dtype_of(x)
    if to.kind == "pred":
        return x != 0
    if source.kind == "complex" and to.kind != "complex":
        x = x.real
        source = _dtype_of(x)
    if to.is_integer and source.is_float:
        return _float_to_integer(x, to)
    return x.astype(to.numpy)


def _float_to_integer(x: np.ndarray, to: DType) -> np.ndarray:
    low, high = _integer_limits(to)
    container = _container(to)
    truncated = np.trunc(x.astype(np.float64))
    clipped = np.clip(np.where(np.isnan(truncated), 0.0, truncated), float(low), float(high))
    at_top = clipped >= float(high)
    exact = np.where(at_top, 0.0, clipped).astype(container)
    return np.where(at_top, np.array(high, container), exact)


@_register("bitcast-convert")
def _eval_bitcast_convert(node: Node, args: list, context: _Context) -> np.ndarray:
    """Reinterpret bits. Narrowing adds a minor dimension of width-ratio elements (lowest bits
    first, as on little-endian hardware); widening consumes one (see BitcastConvertType)."""
    x = args[0]
    source = _dtype_of(x)
    target = node.shape.dtype
    if source.bits == target.bits == x.dtype.itemsize * 8:
        return x.view(target.numpy)
    bits = _bit_pattern(x, source)
    if source.bits > target.bits:
        ratio = source.bits // target.bits
        shifts = np.arange(ratio, dtype=np.uint64) * np.uint64(target.bits)
        bits = bits[..., None] >> shifts
    elif source.bits < target.bits:
        ratio = target.bits // source.bits
        if x.shape[-1:] != (ratio,):
            raise InputError(f"bitcast-convert to {target.name} needs a minor dimension of "
                             f"{ratio}, got shape {x.shape}", node.where())
        shifts = np.arange(ratio, dtype=np.uint64) * np.uint64(source.bits)
        bits = np.bitwise_or.reduce(bits << shifts, axis=-1)
    return _from_bit_pattern(bits & np.uint64((1 << target.bits) - 1), target)


@_register("stochastic-convert")
def _eval_stochastic_convert(node: Node, args: list, context: _Context) -> np.ndarray:
    raise UnsupportedError("cannot evaluate stochastic-convert: its rounding consumes random "
                           "bits the explorer does not model", node.where())


# -- shapes: broadcast, reshape, bitcast, transpose ---------------------------------------------


@_register("broadcast")
def _eval_broadcast(node: Node, args: list, context: _Context) -> np.ndarray:
    """Operand dimension i becomes output dimension dimensions[i]; the rest are replicated."""
    x = args[0]
    mapping = tuple(node.attrs.get("dimensions", ()))
    order = np.argsort(mapping)
    x = np.transpose(x, order)
    dims = node.array_shape.dims
    placed = [1] * len(dims)
    for operand_dim, output_dim in enumerate(sorted(mapping)):
        placed[output_dim] = x.shape[operand_dim]
    return np.broadcast_to(x.reshape(placed), dims)


@_register("reshape")
def _eval_reshape(node: Node, args: list, context: _Context) -> np.ndarray:
    return args[0].reshape(node.array_shape.dims)


@_register("bitcast")
def _eval_bitcast(node: Node, args: list, context: _Context) -> np.ndarray:
    """Reinterpret the operand's buffer: logical -> physical order (by minor_to_major),
    reshape, back to the output's logical order. With default layouts this is a reshape."""
    source = context.operand_shape(node, 0)
    target = node.array_shape
    physical = np.transpose(args[0], tuple(reversed(source.minor_to_major)))
    target_major_to_minor = tuple(reversed(target.minor_to_major))
    physical = physical.reshape([target.dims[d] for d in target_major_to_minor])
    if physical.dtype != target.dtype.numpy:
        if physical.dtype.itemsize != target.dtype.numpy.itemsize:
            raise UnsupportedError("cannot evaluate a bitcast that changes the element width",
                                   node.where())
        physical = np.ascontiguousarray(physical).view(target.dtype.numpy)
    return np.transpose(physical, np.argsort(target_major_to_minor))


@_register("dynamic-reshape")
def _eval_dynamic_reshape(node: Node, args: list, context: _Context) -> np.ndarray:
    """A reshape whose sizes arrive as operands; only sizes equal to the static bounds have a
    single-device reference value."""
    sizes = tuple(int(s) for s in args[1:])
    if sizes != node.array_shape.dims:
        raise UnsupportedError(f"cannot evaluate dynamic-reshape to runtime sizes {sizes} "
                               f"below the static bounds {node.array_shape.dims}", node.where())
    return args[0].reshape(sizes)


@_register("transpose")
def _eval_transpose(node: Node, args: list, context: _Context) -> np.ndarray:
    return np.transpose(args[0], tuple(node.attrs["dimensions"]))


# -- data movement: slice, pad, concatenate, reverse --------------------------------------------


@_register("slice")
def _eval_slice(node: Node, args: list, context: _Context) -> np.ndarray:
    return args[0][tuple(slice(start, limit, stride)
                         for start, limit, stride in node.attrs["slice"])]


@_register("pad")
def _eval_pad(node: Node, args: list, context: _Context) -> np.ndarray:
    """Interior padding goes between elements; negative low/high padding removes elements."""
    x, value = args
    padding = node.attrs["padding"]
    grown = []
    for n, (low, high, interior) in zip(x.shape, padding):
        inner = n + max(n - 1, 0) * interior
        grown.append(max(low, 0) + inner + max(high, 0))
    out = np.full(grown, value, dtype=x.dtype)
    place = tuple(slice(max(low, 0), max(low, 0) + n + max(n - 1, 0) * interior, interior + 1)
                  for n, (low, high, interior) in zip(x.shape, padding))
    out[place] = x
    crop = tuple(slice(max(-low, 0), size - max(-high, 0))
                 for size, (low, high, _) in zip(grown, padding))
    return out[crop]


@_register("concatenate")
def _eval_concatenate(node: Node, args: list, context: _Context) -> np.ndarray:
    return np.concatenate(args, axis=node.attrs["dimensions"][0])


@_register("reverse")
def _eval_reverse(node: Node, args: list, context: _Context) -> np.ndarray:
    return np.flip(args[0], tuple(node.attrs["dimensions"]))


# -- indexed: dynamic slices, gather, scatter ---------------------------------------------------


def _clamped_starts(starts: list, dims: Sequence[int], sizes: Sequence[int]) -> list[int]:
    """XLA clamps dynamic start indices so the whole window lies inside the operand."""
    return [int(np.clip(int(s), 0, max(n - k, 0))) for s, n, k in zip(starts, dims, sizes)]


@_register("dynamic-slice")
def _eval_dynamic_slice(node: Node, args: list, context: _Context) -> np.ndarray:
    x = args[0]
    sizes = node.attrs["dynamic_slice_sizes"]
    starts = _clamped_starts(args[1:], x.shape, sizes)
    return x[tuple(slice(s, s + k) for s, k in zip(starts, sizes))]


@_register("dynamic-update-slice")
def _eval_dynamic_update_slice(node: Node, args: list, context: _Context) -> np.ndarray:
    x, update = args[0], args[1]
    starts = _clamped_starts(args[2:], x.shape, update.shape)
    out = x.copy()
    out[tuple(slice(s, s + k) for s, k in zip(starts, update.shape))] = update
    return out


def _index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """Start indices with the index vector as the last axis (adding it when implicit)."""
    indices = np.asarray(indices).astype(np.int64)
    if index_vector_dim == indices.ndim:
        return indices[..., None]
    return np.moveaxis(indices, index_vector_dim, -1)


def _batch_iota(batch_shape: tuple, indices_dim: int, index_vector_dim: int) -> np.ndarray:
    """For a batching dimension: each batch position's own index along that dimension."""
    axis = indices_dim if indices_dim < index_vector_dim else indices_dim - 1
    shape = [n if a == axis else 1 for a, n in enumerate(batch_shape)]
    return np.broadcast_to(np.arange(batch_shape[axis]).reshape(shape), batch_shape)


def _window_starts(
    starts: np.ndarray,
    rank: int,
    index_map: Sequence[int],
    batching_dims: Sequence[int],
    indices_batching_dims: Sequence[int],
    index_vector_dim: int,
) -> list[np.ndarray]:
    """Per operand dimension, the window start of every batch position (before clamping)."""
    batch_shape = starts.shape[:-1]
    result = []
    for d in range(rank):
        if d in index_map:
            result.append(starts[..., list(index_map).index(d)])
        elif d in batching_dims:
            source = indices_batching_dims[list(batching_dims).index(d)]
            result.append(_batch_iota(batch_shape, source, index_vector_dim))
        else:
            result.append(np.zeros(batch_shape, np.int64))
    return result


@_register("gather")
def _eval_gather(node: Node, args: list, context: _Context) -> np.ndarray:
    """Gather in full generality (see the Gather section of SEMANTICS).

    Batch positions come from the start indices (minus index_vector_dim); each reads a window of
    `slice_sizes` whose start is clamped into the operand. Window dimensions that are neither
    collapsed nor batching appear at `offset_dims`, the batch dimensions fill the rest.
    """
    operand, indices = args
    attrs = node.attrs
    offset_dims = tuple(attrs["offset_dims"])
    slice_sizes = tuple(attrs["slice_sizes"])
    batching = tuple(attrs.get("operand_batching_dims", ()))
    skipped = set(attrs["collapsed_slice_dims"]) | set(batching)
    starts = _index_vectors(indices, attrs["index_vector_dim"])
    batch_shape = starts.shape[:-1]
    window_dims = [d for d in range(operand.ndim) if d not in skipped]
    n_batch, n_window = len(batch_shape), len(window_dims)
    window_starts = _window_starts(
        starts, operand.ndim, attrs["start_index_map"], batching,
        attrs.get("start_indices_batching_dims", ()), attrs["index_vector_dim"],
    )
    index = []
    for d, start in enumerate(window_starts):
        start = np.clip(start, 0, max(operand.shape[d] - slice_sizes[d], 0))
        start = start.reshape(batch_shape + (1,) * n_window)
        if d in window_dims:
            j = window_dims.index(d)
            shape = (1,) * n_batch + tuple(slice_sizes[d] if k == j else 1
                                           for k in range(n_window))
            start = start + np.arange(slice_sizes[d]).reshape(shape)
        index.append(start)
    window_shape = tuple(slice_sizes[d] for d in window_dims)
    gathered = operand[tuple(index)] if index else operand
    gathered = np.broadcast_to(gathered, batch_shape + window_shape)
    batch_positions = [d for d in range(n_batch + n_window) if d not in offset_dims]
    order = [n_batch + offset_dims.index(d) if d in offset_dims else batch_positions.index(d)
             for d in range(n_batch + n_window)]
    return np.transpose(gathered, order)


def scatter_targets(attrs: dict, operand_shape: Sequence[int], update_shape: Sequence[int],
                    indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(keep, targets) of a scatter: `keep`, over the updates' shape, is False for the
    elements of a window that does not fit entirely inside the operand; `targets` is the flat
    (row-major) operand position of every kept element, in the updates' row-major order."""
    operand_shape, update_shape = tuple(operand_shape), tuple(update_shape)
    window_dims = tuple(attrs["update_window_dims"])
    batching = tuple(attrs.get("input_batching_dims", ()))
    skipped = set(attrs["inserted_window_dims"]) | set(batching)
    starts = _index_vectors(indices, attrs["index_vector_dim"])
    batch_shape = starts.shape[:-1]
    scatter_axes = [d for d in range(len(update_shape)) if d not in window_dims]
    window_operand_dims = [d for d in range(len(operand_shape)) if d not in skipped]
    window_starts = _window_starts(
        starts, len(operand_shape), attrs["scatter_dims_to_operand_dims"], batching,
        attrs.get("scatter_indices_batching_dims", ()), attrs["index_vector_dim"],
    )

    def spread(batch_array: np.ndarray) -> np.ndarray:
        shape = [1] * len(update_shape)
        for axis, size in zip(scatter_axes, batch_shape):
            shape[axis] = size
        return np.broadcast_to(batch_array.reshape(shape), update_shape)

    fits = np.ones(batch_shape, bool)
    index = []
    for d, start in enumerate(window_starts):
        extent = 1
        position = spread(start)
        if d in window_operand_dims:
            axis = window_dims[window_operand_dims.index(d)]
            extent = update_shape[axis]
            offsets = np.arange(extent).reshape([extent if k == axis else 1
                                                 for k in range(len(update_shape))])
            position = position + offsets
        fits &= (start >= 0) & (start <= operand_shape[d] - extent)
        index.append(np.broadcast_to(position, update_shape))
    keep = spread(fits)
    targets = np.ravel_multi_index(tuple(i[keep] for i in index), operand_shape)
    return keep, targets


@_register("scatter")
def _eval_scatter(node: Node, args: list, context: _Context) -> Value:
    """Scatter in full generality (see the Scatter section of SEMANTICS).

    Every update element is combined into operand[start + window offset] with the combiner,
    updates in row-major order. An update window that does not fit entirely inside the operand
    is skipped, as XLA's CPU and GPU backends (and its HloEvaluator) do.
    """
    n = (len(args) - 1) // 2
    operands, indices, updates = args[:n], args[n], args[n + 1:]
    keep, targets = scatter_targets(node.attrs, operands[0].shape, updates[0].shape, indices)
    results = _combine_at(
        [o.reshape(-1) for o in operands], targets, [u[keep] for u in updates],
        _combiner(node, context, "to_apply"),
    )
    results = [r.reshape(operands[0].shape) for r in results]
    return tuple(results) if node.shape.is_tuple else results[0]


Combiner = Callable[[list, list], list]


def _combine_at(flat: list, targets: np.ndarray, updates: list, combine: Combiner) -> list:
    """out[t] = combine(out[t], u) for every (t, u) in order, repeated targets included.

    Updates are applied in rounds: round r holds every target's r-th update, so one round never
    writes one element twice and can be evaluated on whole arrays.
    """
    outputs = [np.array(f, copy=True) for f in flat]
    if targets.size == 0:
        return outputs
    order = np.argsort(targets, kind="stable")
    sorted_targets = targets[order]
    starts_group = np.r_[True, sorted_targets[1:] != sorted_targets[:-1]]
    group_start = np.maximum.accumulate(np.where(starts_group, np.arange(targets.size), 0))
    occurrence = np.empty(targets.size, np.int64)
    occurrence[order] = np.arange(targets.size) - group_start
    for round_number in range(int(occurrence.max()) + 1):
        chosen = occurrence == round_number
        where = targets[chosen]
        combined = combine([o[where] for o in outputs], [u[chosen] for u in updates])
        for output, value in zip(outputs, combined):
            output[where] = np.asarray(value).astype(output.dtype)
    return outputs


# Reducer names the importer recognises -> the NumPy ufunc that computes them.
_REDUCER_UFUNCS = {
    "add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}


def _combiner(node: Node, context: _Context, key: str) -> Combiner:
    """combine(accumulators, values) -> new accumulators, for the computation in attrs[key].

    A recognised binary reducer runs as its ufunc in the compute type; anything else calls the
    computation elementwise on whole arrays.
    """
    reducer = node.attrs.get("reducer") if key == "to_apply" else None
    if reducer is not None:
        ufunc = _REDUCER_UFUNCS[reducer]
        return lambda accumulators, values: [ufunc(_widen(accumulators[0]), _widen(values[0]))]
    name = node.attrs[key]
    return lambda accumulators, values: context.apply(name, [*accumulators, *values], node)


# -- reductions ---------------------------------------------------------------------------------


@_register("reduce")
def _eval_reduce(node: Node, args: list, context: _Context) -> Value:
    """Reduce N inputs over `dimensions` with N init values (see the Reduce section).

    A recognised reducer is one NumPy reduction in the accumulation type (f32 for 16-bit
    floats), rounded once. A general (e.g. variadic argmax) reducer is applied as a pairwise
    tree over the reduced positions, keeping their order (the combination order is unspecified
    in XLA), then once more with the init values.
    """
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    dims = tuple(node.attrs["dimensions"])
    reducer = node.attrs.get("reducer")
    if reducer is not None and n == 1:
        x = _widen(inputs[0])
        init = _widen(inits[0]).astype(x.dtype)
        return _REDUCER_UFUNCS[reducer].reduce(x, axis=dims, dtype=x.dtype, initial=init[()])
    kept = [s for d, s in enumerate(inputs[0].shape) if d not in dims]
    positions = math.prod(inputs[0].shape[d] for d in dims)
    columns = [np.moveaxis(x, dims, tuple(range(len(dims)))).reshape([positions] + kept)
               for x in inputs]
    combine = _combiner(node, context, "to_apply")
    accumulators = [np.broadcast_to(init, kept) for init in inits]
    if columns[0].shape[0] > 0:
        accumulators = combine(accumulators, _tree_reduce(columns, combine))
    return tuple(accumulators) if node.shape.is_tuple else accumulators[0]


def _tree_reduce(columns: list, combine: Combiner) -> list:
    """Combine rows pairwise (0 with 1, 2 with 3, ...) until one row is left."""
    while columns[0].shape[0] > 1:
        count = columns[0].shape[0]
        pairs = count - count % 2
        combined = combine([c[0:pairs:2] for c in columns], [c[1:pairs:2] for c in columns])
        combined = [np.asarray(v).astype(c.dtype) for v, c in zip(combined, columns)]
        if count % 2:
            combined = [np.concatenate([v, c[-1:]]) for v, c in zip(combined, columns)]
        columns = combined
    return [c[0] for c in columns]


@dataclass(frozen=True)
class _Window:
    size: tuple[int, ...]
    stride: tuple[int, ...]
    pad: tuple[tuple[int, int], ...]
    base_dilation: tuple[int, ...]
    window_dilation: tuple[int, ...]
    reversal: tuple[bool, ...]

    @staticmethod
    def parse(attrs: dict, rank: int, default_size: Sequence[int] | None = None) -> _Window:
        def get(key: str, default: Any) -> tuple:
            value = attrs.get(key)
            return tuple(value) if value is not None else (default,) * rank

        size = attrs.get("size")
        if size is None:
            size = default_size if default_size is not None else (1,) * rank
        return _Window(tuple(size), get("stride", 1), tuple(tuple(p) for p in get("pad", (0, 0))),
                       get("lhs_dilate", 1), get("rhs_dilate", 1),
                       get("window_reversal", False))


def _window_output_shape(dims: Sequence[int], window: _Window) -> tuple[int, ...]:
    shape = []
    for d, n in enumerate(dims):
        (low, high), base = window.pad[d], window.base_dilation[d]
        padded = low + high + ((n - 1) * base + 1 if n > 0 else 0)
        span = (window.size[d] - 1) * window.window_dilation[d] + 1
        shape.append((padded - span) // window.stride[d] + 1 if padded >= span else 0)
    return tuple(shape)


def _window_taps(dims: Sequence[int], window: _Window) -> Iterator[tuple]:
    """For each window offset: (offset, operand index arrays for np.ix_, valid mask).

    Each output position reads operand[index] at this offset; `valid` is False where the tap
    falls into padding or a base-dilation hole. XLA's emitters skip such taps rather than
    combining the init value into them.
    """
    out_shape = _window_output_shape(dims, window)
    if 0 in dims:
        return
    for offset in np.ndindex(*window.size):
        indices, masks = [], []
        for d, n in enumerate(dims):
            base = window.base_dilation[d]
            q = (np.arange(out_shape[d]) * window.stride[d]
                 + offset[d] * window.window_dilation[d] - window.pad[d][0])
            masks.append((q >= 0) & (q <= (n - 1) * base) & (q % base == 0))
            indices.append(np.clip(q // base, 0, n - 1))
        valid = np.ones((), bool)
        for mask in masks:
            valid = np.logical_and.outer(valid, mask)
        yield offset, np.ix_(*indices), valid


@_register("reduce-window")
def _eval_reduce_window(node: Node, args: list, context: _Context) -> Value:
    """Reduce every window (size, stride, padding, base and window dilation) of N inputs."""
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    window = _Window.parse(node.attrs.get("window", {}), inputs[0].ndim)
    out_shape = _window_output_shape(inputs[0].shape, window)
    known = node.attrs.get("reducer") is not None and n == 1
    prepare = _widen if known else np.asarray
    accumulators = [np.full(out_shape, prepare(init)) for init in inits]
    combine = _combiner(node, context, "to_apply")
    for _, index, valid in _window_taps(inputs[0].shape, window):
        combined = combine(accumulators, [x[index] for x in inputs])
        accumulators = [np.where(valid, value, acc).astype(acc.dtype)
                        for value, acc in zip(combined, accumulators)]
    return tuple(accumulators) if node.shape.is_tuple else accumulators[0]


@_register("select-and-scatter")
def _eval_select_and_scatter(node: Node, args: list, context: _Context) -> np.ndarray:
    """In every window pick one operand element with `select`, then combine the window's
    source value into that position with `scatter`; the output starts as init everywhere.

    The pick scans the window in order, replacing the current choice c by element e when
    select(c, e) is false (XLA's HloEvaluator); padding is never picked.
    """
    operand, source, init = args
    window = _Window.parse(node.attrs.get("window", {}), operand.ndim)
    strides = np.cumprod((1,) + operand.shape[:0:-1])[::-1]
    chosen_value = np.zeros(source.shape, operand.dtype)
    chosen_at = np.zeros(source.shape, np.int64)
    found = np.zeros(source.shape, bool)
    for _, index, valid in _window_taps(operand.shape, window):
        value = operand[index]
        keep = context.apply(node.attrs["select"], [chosen_value, value], node)[0]
        take = valid & (~found | ~keep.astype(bool))
        chosen_value = np.where(take, value, chosen_value)
        flat = sum(i * s for i, s in zip(index, strides)) if index else np.zeros((), np.int64)
        chosen_at = np.where(take, flat, chosen_at)
        found |= valid
    out = np.full(operand.size, init, dtype=operand.dtype)
    scatter_name = node.attrs["scatter"]

    def combine(accumulators: list, values: list) -> list:
        return context.apply(scatter_name, [*accumulators, *values], node)

    (result,) = _combine_at([out], chosen_at[found], [source[found]], combine)
    return result.reshape(operand.shape)


# -- dot and convolution ------------------------------------------------------------------------


def _product_dtype(out: DType, *operands: np.ndarray) -> np.dtype:
    """The type a dot/convolution multiplies and accumulates in, as XLA does.

    Operands are converted to the output type first; 16-bit floats accumulate in f32.
    """
    wide = any(o.dtype in (np.float64, np.complex128) for o in operands)
    if out.kind == "complex":
        return np.dtype(np.complex128 if wide or out.bits == 128 else np.complex64)
    if out.is_float:
        return np.dtype(np.float64 if wide or out.bits == 64 else np.float32)
    if out.kind == "pred":
        return np.dtype(np.int32)
    return _container(out)


@_register("dot")
def _eval_dot(node: Node, args: list, context: _Context) -> np.ndarray:
    """dot_general: output dimensions are batch, lhs free, rhs free (see DotGeneral)."""
    lhs, rhs = args
    attrs = node.attrs
    letters = iter(string.ascii_letters)
    lhs_labels: list = [None] * lhs.ndim
    rhs_labels: list = [None] * rhs.ndim
    pairs = [*zip(attrs.get("lhs_batch_dims", ()), attrs.get("rhs_batch_dims", ())),
             *zip(attrs.get("lhs_contracting_dims", ()), attrs.get("rhs_contracting_dims", ()))]
    for l_dim, r_dim in pairs:
        lhs_labels[l_dim] = rhs_labels[r_dim] = next(letters)
    lhs_free = [d for d, label in enumerate(lhs_labels) if label is None]
    rhs_free = [d for d, label in enumerate(rhs_labels) if label is None]
    for d in lhs_free:
        lhs_labels[d] = next(letters)
    for d in rhs_free:
        rhs_labels[d] = next(letters)
    output = ([lhs_labels[d] for d in attrs.get("lhs_batch_dims", ())]
              + [lhs_labels[d] for d in lhs_free] + [rhs_labels[d] for d in rhs_free])
    compute = _product_dtype(_output_dtype(node), lhs, rhs)
    spec = f"{''.join(lhs_labels)},{''.join(rhs_labels)}->{''.join(output)}"
    return np.einsum(spec, lhs.astype(compute), rhs.astype(compute), optimize=True)


def _parse_dim_labels(labels: str, spatial_rank: int) -> tuple[list, list, list]:
    """'b01f_01io->b01f' -> axis permutations to [b, f, 0, 1], [o, i, 0, 1] and back."""
    try:
        lhs, rest = labels.split("_")
        rhs, out = rest.split("->")
    except ValueError:
        raise InputError(f"malformed dim_labels '{labels}'") from None
    spatial = [str(k) for k in range(spatial_rank)]
    lhs_order = [lhs.index(c) for c in ["b", "f", *spatial]]
    rhs_order = [rhs.index(c) for c in ["o", "i", *spatial]]
    canonical = ["b", "f", *spatial]
    out_order = [canonical.index(c) for c in out]
    return lhs_order, rhs_order, out_order


@_register("convolution")
def _eval_convolution(node: Node, args: list, context: _Context) -> np.ndarray:
    """Convolution with windows, dilations and feature / batch groups (see Conv in SEMANTICS).

    feature_group_count G splits input features into G contiguous groups, each convolved with
    its contiguous block of output features; batch_group_count splits the batch the same way
    (the StableHLO spec's definition). Accumulates over the kernel's taps, one einsum per tap.
    """
    lhs, rhs = args
    spatial_rank = lhs.ndim - 2
    lhs_order, rhs_order, out_order = _parse_dim_labels(node.attrs["dim_labels"], spatial_rank)
    compute = _product_dtype(_output_dtype(node), lhs, rhs)
    lhs = np.transpose(lhs, lhs_order).astype(compute)
    rhs = np.transpose(rhs, rhs_order).astype(compute)
    window = _Window.parse(node.attrs.get("window", {}), spatial_rank, rhs.shape[2:])
    feature_groups = node.attrs.get("feature_group_count", 1)
    batch_groups = node.attrs.get("batch_group_count", 1)
    batch, features = lhs.shape[:2]
    out_features, kernel_features = rhs.shape[:2]
    out_spatial = _window_output_shape(lhs.shape[2:], window)
    per_group = out_features // (feature_groups * batch_groups)
    kernel = rhs.reshape((batch_groups, feature_groups, per_group, kernel_features)
                         + rhs.shape[2:])
    out = np.zeros((batch // batch_groups, batch_groups, feature_groups, per_group,
                    math.prod(out_spatial)), compute)
    whole = (slice(None), slice(None))
    for offset, index, valid in _window_taps(lhs.shape[2:], window):
        patch = np.where(valid, lhs[whole + index], 0)
        patch = patch.reshape(batch_groups, batch // batch_groups, feature_groups,
                              kernel_features, -1)
        tap = tuple(k - 1 - o if flip else o
                    for k, o, flip in zip(window.size, offset, window.reversal))
        out += np.einsum("xbgis,xgoi->bxgos", patch, kernel[(Ellipsis, *tap)], optimize=True)
    out = out.reshape((batch // batch_groups, out_features) + out_spatial)
    return np.transpose(out, out_order)


# -- sort ---------------------------------------------------------------------------------------


@_register("sort")
def _eval_sort(node: Node, args: list, context: _Context) -> Value:
    """Sort N operands along one dimension by the comparator (2N scalar params -> pred).

    A stable merge sort; every comparator call is on whole arrays (see `_sort_permutation`).
    """
    axis = node.attrs["dimensions"][0]
    moved = [np.moveaxis(a, axis, -1) for a in args]
    shape = moved[0].shape
    rows = [m.reshape(math.prod(shape[:-1]), shape[-1]) for m in moved]

    def less(left: list, right: list) -> np.ndarray:
        interleaved = [v for pair in zip(left, right) for v in pair]
        return context.apply(node.attrs["to_apply"], interleaved, node)[0].astype(bool)

    permutation = _sort_permutation(rows, less) if math.prod(shape) else None
    results = []
    for row, original in zip(rows, moved):
        if permutation is not None:
            row = np.take_along_axis(row, permutation, axis=1)
        results.append(np.moveaxis(row.reshape(shape), -1, axis))
    return tuple(results) if node.shape.is_tuple else results[0]


def _sort_permutation(rows: list, less: Callable[[list, list], np.ndarray]) -> np.ndarray:
    """A stable sort of every row at once, by bottom-up merging of runs of width 1, 2, 4, ...

    An element's place in a merged pair of runs is its rank in its own run plus the number of
    elements of the other run that go before it, found by binary search; so each merge level
    needs only log(width) comparator calls, each on all elements together.
    """
    count, n = rows[0].shape
    permutation = np.broadcast_to(np.arange(n), (count, n)).copy()
    position = np.arange(n)
    width = 1
    while width < n:
        current = [np.take_along_axis(r, permutation, axis=1) for r in rows]
        pair_start = position // (2 * width) * (2 * width)
        in_left = position < pair_start + width
        own_start = np.where(in_left, pair_start, pair_start + width)
        other_start = np.where(in_left, pair_start + width, pair_start)
        other_length = np.where(in_left, np.clip(n - pair_start - width, 0, width), width)
        low = np.zeros((count, n), np.int64)
        high = np.broadcast_to(other_length, (count, n)).copy()
        while True:
            active = low < high
            if not active.any():
                break
            middle = (low + high) // 2
            partner = np.minimum(other_start + middle, n - 1)
            other = [np.take_along_axis(c, partner, axis=1) for c in current]
            # A left element counts right ones strictly before it; a right element counts the
            # left ones not after it, which keeps equal elements in their original order.
            left_args = [np.where(in_left, o, c) for o, c in zip(other, current)]
            right_args = [np.where(in_left, c, o) for o, c in zip(other, current)]
            before = less(left_args, right_args)
            go_up = np.where(in_left, before, ~before)
            low = np.where(active & go_up, middle + 1, low)
            high = np.where(active & ~go_up, middle, high)
        merged = np.empty_like(permutation)
        np.put_along_axis(merged, pair_start + (position - own_start) + low, permutation, axis=1)
        permutation = merged
        width *= 2
    return permutation


# -- control flow -------------------------------------------------------------------------------


@_register("map")
def _eval_map(node: Node, args: list, context: _Context) -> np.ndarray:
    return context.apply(node.attrs["to_apply"], args, node)[0]


@_register("while")
def _eval_while(node: Node, args: list, context: _Context) -> Value:
    limit = context.options.max_while_iterations
    state = args[0]
    iterations = 0
    while bool(np.asarray(context.call(node.attrs["condition"], [state], node))):
        if iterations == limit:
            raise LimitError(
                f"while loop still running after {limit} iterations; raise "
                "InterpreterOptions.max_while_iterations if it is meant to run longer",
                node.where())
        state = context.call(node.attrs["body"], [state], node)
        iterations += 1
    return state


@_register("conditional")
def _eval_conditional(node: Node, args: list, context: _Context) -> Value:
    """A pred selects branch 0 when true, else 1; an out-of-range index runs the last branch."""
    selector = np.asarray(args[0])
    branches = node.attrs["branch_computations"]
    if selector.dtype == np.bool_:
        index = 0 if bool(selector) else 1
    else:
        index = int(selector)
        if not 0 <= index < len(branches):
            index = len(branches) - 1
    return context.call(branches[index], [args[1 + index]], node)


# -- tuples, tokens and plumbing ----------------------------------------------------------------


@_register("tuple")
def _eval_tuple(node: Node, args: list, context: _Context) -> tuple:
    return tuple(args)


@_register("get-tuple-element")
def _eval_get_tuple_element(node: Node, args: list, context: _Context) -> Value:
    return args[0][node.attrs["index"]]


@_register("after-all")
def _eval_after_all(node: Node, args: list, context: _Context) -> None:
    return None


@_register("copy", "opt-barrier", "domain", "add-dependency", "set-dimension-size")
def _eval_forward(node: Node, args: list, context: _Context) -> Value:
    """Ops that order or annotate their first operand without changing its value.

    set-dimension-size only marks how much of a bounded dimension is valid; the static buffer
    is unchanged.
    """
    return args[0]


@_register("get-dimension-size")
def _eval_get_dimension_size(node: Node, args: list, context: _Context) -> np.ndarray:
    return np.array(args[0].shape[node.attrs["dimensions"][0]], np.int32)


@_register("partition-id", "replica-id")
def _eval_device_id(node: Node, args: list, context: _Context) -> np.ndarray:
    return np.zeros((), np.uint32)


# -- collectives on a single device -------------------------------------------------------------


def _matches(value: Value, shape: Shape) -> bool:
    if shape.is_tuple:
        return (isinstance(value, tuple) and len(value) == len(shape.elements)
                and all(_matches(v, s) for v, s in zip(value, shape.elements)))
    return (isinstance(value, np.ndarray) and value.shape == shape.dims
            and value.dtype == shape.dtype.numpy)


@_register("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
           "collective-broadcast", "collective-reduce", "all-reduce-start")
def _eval_collective(node: Node, args: list, context: _Context) -> Value:
    """On one replica every collective whose result has its operand's shape is a copy: the
    reduction or exchange has a single participant."""
    data = args[0] if len(args) == 1 else tuple(args)
    if not _matches(data, node.shape):
        raise UnsupportedError(
            f"cannot evaluate {node.op} whose result shape {node.shape} differs from its "
            "operands': it needs more than one device", node.where())
    return data


@_register("all-gather-start", "collective-permute-start", "copy-start")
def _eval_async_start(node: Node, args: list, context: _Context) -> tuple:
    """Start ops return (operand, result, contexts...): on one device result = operand."""
    data = args[0] if len(args) == 1 else tuple(args)
    elements = []
    for element in node.shape.elements:
        if _matches(data, element):
            elements.append(data)
        elif not element.is_tuple and element.rank == 0:
            elements.append(np.zeros((), element.dtype.numpy))
        else:
            raise UnsupportedError(f"cannot evaluate {node.op} producing {node.shape} on one "
                                   "device", node.where())
    return tuple(elements)


@_register("async-start")
def _eval_async_start_call(node: Node, args: list, context: _Context) -> tuple:
    """async-start runs its `calls` computation; the value is ((operands), result, contexts)."""
    if "calls" not in node.attrs:
        raise UnsupportedError("cannot evaluate async-start without its calls computation",
                               node.where())
    result = context.call(node.attrs["calls"], args, node)
    contexts = [np.zeros((), e.dtype.numpy) for e in node.shape.elements[2:]]
    return (tuple(args), result, *contexts)


# Which element of its start op's tuple a done op returns (None: the start value itself).
_DONE_ELEMENT = {"all-reduce-done": None, "all-gather-done": 1, "collective-permute-done": 1,
                 "copy-done": 0, "async-done": 1, "async-update": None}


@_register(*_DONE_ELEMENT)
def _eval_async_done(node: Node, args: list, context: _Context) -> Value:
    element = _DONE_ELEMENT[node.op]
    return args[0] if element is None else args[0][element]


# -- library calls: fft, linear algebra, custom calls -------------------------------------------


def _option(node: Node, key: str) -> Any:
    """An attribute the conventions do not fix yet: parsed in attrs, or raw text in extra."""
    if key in node.attrs:
        return node.attrs[key]
    if key in node.extra:
        return node.extra[key]
    raise UnsupportedError(f"cannot evaluate {node.op} without its {key} attribute",
                           node.where())


def _flag(value: Any) -> bool:
    return value.strip().lower() == "true" if isinstance(value, str) else bool(value)


def _integers(value: Any) -> tuple[int, ...]:
    if isinstance(value, str):
        return tuple(int(v) for v in re.findall(r"-?\d+", value))
    return tuple(int(v) for v in value)


@_register("fft")
def _eval_fft(node: Node, args: list, context: _Context) -> np.ndarray:
    """FFT, IFFT, RFFT or IRFFT over the trailing len(fft_length) dimensions."""
    x = args[0]
    kind = str(_option(node, "fft_type")).strip().upper()
    lengths = _integers(_option(node, "fft_length"))
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    transforms = {
        "FFT": lambda: np.fft.fftn(x, axes=axes),
        "IFFT": lambda: np.fft.ifftn(x, axes=axes),
        "RFFT": lambda: np.fft.rfftn(x, s=lengths, axes=axes),
        "IRFFT": lambda: np.fft.irfftn(x, s=lengths, axes=axes),
    }
    if kind not in transforms:
        raise InputError(f"unknown fft_type '{kind}'", node.where())
    return transforms[kind]()


def _swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


@_register("triangular-solve")
def _eval_triangular_solve(node: Node, args: list, context: _Context) -> np.ndarray:
    """Solve op(a) x = b (left_side) or x op(a) = b, reading only a's `lower` triangle."""
    a, b = args
    compute = np.complex128 if a.dtype.kind == "c" else np.float64
    a, b = a.astype(compute), b.astype(compute)
    lower = _flag(_option(node, "lower"))
    matrix = np.tril(a) if lower else np.triu(a)
    if _flag(_option(node, "unit_diagonal")):
        diagonal = np.arange(a.shape[-1])
        matrix[..., diagonal, diagonal] = 1
    transpose = str(_option(node, "transpose_a")).strip().upper()
    if transpose in ("TRANSPOSE", "ADJOINT"):
        matrix = _swap(matrix.conj() if transpose == "ADJOINT" else matrix)
        lower = not lower
    if _flag(_option(node, "left_side")):
        return _substitute(matrix, b, lower)
    return _swap(_substitute(_swap(matrix), _swap(b), not lower))


def _substitute(matrix: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """Forward (lower) or backward substitution; a zero pivot gives inf/NaN as XLA does."""
    x = np.zeros_like(b)
    m = matrix.shape[-1]
    for i in range(m) if lower else reversed(range(m)):
        partial = np.einsum("...k,...kn->...n", matrix[..., i, :], x)
        x[..., i, :] = (b[..., i, :] - partial) / matrix[..., i, i][..., None]
    return x


@_register("cholesky")
def _eval_cholesky(node: Node, args: list, context: _Context) -> np.ndarray:
    """Cholesky factor from the `lower` (or upper) triangle; NaN where not positive definite."""
    a = args[0]
    compute = np.complex128 if a.dtype.kind == "c" else np.float64
    lower = _flag(_option(node, "lower"))
    triangle = np.tril(a.astype(compute)) if lower else np.triu(a.astype(compute))
    hermitian = triangle + _swap(triangle.conj())
    diagonal = np.arange(a.shape[-1])
    hermitian[..., diagonal, diagonal] = triangle[..., diagonal, diagonal]
    matrices = hermitian.reshape((-1,) + a.shape[-2:])
    factors = np.full(matrices.shape, np.nan, compute)
    for i, matrix in enumerate(matrices):
        try:
            factors[i] = np.linalg.cholesky(matrix)
        except np.linalg.LinAlgError:
            pass
    factors = factors.reshape(a.shape)
    return factors if lower else _swap(factors.conj())


def _feature_axes(x: np.ndarray, node: Node) -> tuple[tuple[int, ...], list[int]]:
    """The axes batch norm reduces over, and the shape a per-feature vector broadcasts as."""
    feature = node.attrs["feature_index"]
    axes = tuple(d for d in range(x.ndim) if d != feature)
    return axes, [n if d == feature else 1 for d, n in enumerate(x.shape)]


@_register("batch-norm-inference")
def _eval_batch_norm_inference(node: Node, args: list, context: _Context) -> np.ndarray:
    """(x - mean) * rsqrt(variance + epsilon) * scale + offset, per feature."""
    x, scale, offset, mean, variance = (_widen(a) for a in args)
    _, feature_shape = _feature_axes(x, node)
    scale, offset, mean, variance = (v.reshape(feature_shape)
                                     for v in (scale, offset, mean, variance))
    epsilon = np.asarray(node.attrs["epsilon"], x.dtype)
    return (x - mean) * _rsqrt(variance + epsilon) * scale + offset


@_register("batch-norm-training")
def _eval_batch_norm_training(node: Node, args: list, context: _Context) -> tuple:
    """Normalise by the batch's own statistics; returns (output, mean, variance).

    The variance is E[x^2] - E[x]^2 over every dimension but the feature one, as XLA's
    BatchNormExpander computes it.
    """
    x, scale, offset = (_widen(a) for a in args)
    axes, feature_shape = _feature_axes(x, node)
    mean = np.mean(x, axis=axes)
    variance = np.mean(x * x, axis=axes) - mean * mean
    epsilon = np.asarray(node.attrs["epsilon"], x.dtype)
    normalised = (x - mean.reshape(feature_shape)) * _rsqrt(variance.reshape(feature_shape)
                                                            + epsilon)
    output = normalised * scale.reshape(feature_shape) + offset.reshape(feature_shape)
    return output, mean, variance


@_register("batch-norm-grad")
def _eval_batch_norm_grad(node: Node, args: list, context: _Context) -> tuple:
    """Gradients (d_operand, d_scale, d_offset) of batch-norm-training's output."""
    x, scale, mean, variance, grad = (_widen(a) for a in args)
    axes, feature_shape = _feature_axes(x, node)
    count = math.prod(x.shape[d] for d in axes)
    epsilon = np.asarray(node.attrs["epsilon"], x.dtype)
    centered = x - mean.reshape(feature_shape)
    inverse_std = _rsqrt(variance + epsilon)
    grad_offset = np.sum(grad, axis=axes)
    grad_centered = np.sum(grad * centered, axis=axes)
    grad_operand = (scale * inverse_std).reshape(feature_shape) / count * (
        count * grad - grad_offset.reshape(feature_shape)
        - centered * (grad_centered / (variance + epsilon)).reshape(feature_shape))
    return grad_operand, grad_centered * inverse_std, grad_offset


# Custom-call targets that mean "this value, unchanged" on a single device.
_IDENTITY_TARGETS = frozenset({
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "MoveToHost", "MoveToDevice",
})


@_register("custom-call")
def _eval_custom_call(node: Node, args: list, context: _Context) -> Value:
    target = node.attrs.get("custom_call_target", "")
    if target in _IDENTITY_TARGETS and len(args) == 1:
        return args[0]
    if target == "TopK" and len(args) == 1:
        return _top_k(args[0], node.shape.elements[0].dims[-1], largest=True)
    raise UnsupportedError(
        f"cannot evaluate custom-call target '{target}': its semantics live in a library the "
        "explorer does not model", node.where())


@_register("topk")
def _eval_topk(node: Node, args: list, context: _Context) -> tuple:
    return _top_k(args[0], node.attrs["k"], node.attrs.get("largest", True))


def _top_k(x: np.ndarray, k: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """The k largest (or smallest) along the last dimension, in order, with their indices.

    Values are ranked by the floats' total order (NaN above inf); ties keep the lower index.
    """
    d = _dtype_of(x)
    key = _total_order_key(x, d) if d.is_float else _widen(x).astype(np.int64)
    order = np.argsort(~key if largest else key, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)


# -- ops with no single-device reference value --------------------------------------------------


def _unsupported(reason: str) -> Evaluator:
    def evaluate_unsupported(node: Node, args: list, context: _Context) -> Value:
        raise UnsupportedError(f"cannot evaluate {node.op}: {reason}", node.where())

    return evaluate_unsupported


for _op in ("rng", "rng-bit-generator", "rng-get-and-update-state"):
    EVALUATORS[_op] = _unsupported(
        "random numbers have no reference value; pass them in as a parameter instead")
for _op in ("infeed", "outfeed", "send", "recv", "send-done", "recv-done"):
    EVALUATORS[_op] = _unsupported("it exchanges data with the host or another device")
EVALUATORS["scan"] = _unsupported("its semantics are not pinned down by XLA's documentation")
EVALUATORS["ragged-all-to-all"] = _unsupported("its ragged exchange needs several devices")
