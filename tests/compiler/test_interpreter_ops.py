"""The reference interpreter, op family by op family, against independent references.

Each test builds a small graph by hand and compares the interpreter with something computed
another way: hand-worked arrays, NumPy formulas written differently from the implementation,
naive loops over windows, or identities (pad then slice, gather then scatter). XLA's documented
edge cases (integer division by zero, shifts, rounding, NaN ordering, saturating converts) are
spelled out with the values XLA's CPU and GPU backends produce.
"""

from __future__ import annotations

import math
import re

import ml_dtypes
import numpy as np
import pytest

from compiler.errors import InputError, LimitError, UnsupportedError
from compiler.ir import dtypes
from compiler.ir.graph import Graph, Node
from compiler.ir.interpreter import EVALUATORS, InterpreterOptions, evaluate, evaluate_all
from compiler.ir.ops import OPS
from compiler.ir.shapes import ArrayShape, Shape, TupleShape

RNG = np.random.default_rng(20240611)
BF16 = ml_dtypes.bfloat16


# -- building graphs by hand ---------------------------------------------------------------------


def shape(text: str | Shape) -> Shape:
    """'f32[2,3]', 'f32[2,3]{0,1}' (with a layout) or 's32[]' as an ArrayShape."""
    if not isinstance(text, str):
        return text
    match = re.fullmatch(r"(\w+)\[([\d,]*)\](?:\{([\d,]*)\})?", text)
    dims = tuple(int(d) for d in match.group(2).split(",") if d)
    layout = None if match.group(3) is None else tuple(int(d) for d in match.group(3).split(","))
    return ArrayShape(dtypes.dtype(match.group(1)), dims, layout)


def tuple_shape(*elements: str | Shape) -> TupleShape:
    return TupleShape(tuple(shape(e) for e in elements))


def type_of(array: np.ndarray) -> str:
    name = dtypes.from_numpy(np.asarray(array).dtype).name
    return f"{name}[{','.join(str(d) for d in np.shape(array))}]"


class Builder:
    """Adds nodes to a Graph; sub-computations share the entry graph's computations dict."""

    def __init__(self, name: str = "main", computations: dict | None = None):
        self.graph = Graph(name, computations={} if computations is None else computations)

    def param(self, text: str | Shape, name: str | None = None) -> str:
        name = name or f"p{len(self.graph.parameters)}"
        self.graph.parameters.append(name)
        return self.add("parameter", (), text, name=name,
                        parameter_number=len(self.graph.parameters) - 1)

    def const(self, value, dtype: str) -> str:
        array = np.asarray(value, dtype=dtypes.dtype(dtype).numpy)
        return self.add("constant", (), type_of(array), value=array)

    def add(self, op: str, operands, out: str | Shape, name: str | None = None, **attrs) -> str:
        name = name or f"{op}.{len(self.graph.nodes)}"
        self.graph.add(Node(name, op, tuple(operands), shape(out), attrs))
        return name

    def sub(self, name: str) -> Builder:
        builder = Builder(name, self.graph.computations)
        self.graph.computations[name] = builder.graph
        return builder

    def build(self, root: str) -> Graph:
        self.graph.root = root
        return self.graph


def binary_computation(b: Builder, name: str, op: str, dtype: str = "f32", **attrs) -> str:
    """A computation (x, y) -> op(x, y) on scalars, as reducers and comparators are."""
    sub = b.sub(name)
    out = "pred[]" if op == "compare" else f"{dtype}[]"
    sub.build(sub.add(op, (sub.param(f"{dtype}[]"), sub.param(f"{dtype}[]")), out, **attrs))
    return name


def run(graph: Graph, *inputs) -> list[np.ndarray]:
    return evaluate(graph, list(inputs))


def single(op: str, inputs: list, out: str | Shape, build=None, **attrs):
    """Evaluate one `op` node over parameters holding `inputs`; `build(b)` may add computations
    and returns extra attributes."""
    b = Builder()
    params = [b.param(type_of(x)) for x in inputs]
    if build is not None:
        attrs.update(build(b))
    outputs = run(b.build(b.add(op, params, out, **attrs)), *inputs)
    return outputs[0] if len(outputs) == 1 else outputs


def f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def s32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int32)


# -- coverage -----------------------------------------------------------------------------------


def test_every_op_in_the_ops_table_has_an_evaluator():
    assert sorted(set(OPS) - set(EVALUATORS)) == []


# -- elementwise float math ---------------------------------------------------------------------

_MATH_REFERENCES = {
    "exponential": (np.exp, (-5, 5)),
    "log": (np.log, (0.1, 10)),
    "sqrt": (np.sqrt, (0, 10)),
    "rsqrt": (lambda x: np.sqrt(x) ** -1, (0.1, 10)),
    "cbrt": (lambda x: np.sign(x) * np.abs(x) ** (1 / 3), (-8, 8)),
    "tanh": (lambda x: (np.exp(2 * x) - 1) / (np.exp(2 * x) + 1), (-4, 4)),
    "logistic": (lambda x: 0.5 * (1 + np.tanh(x / 2)), (-10, 10)),
    "sine": (np.sin, (-4, 4)),
    "cosine": (np.cos, (-4, 4)),
    "tan": (np.tan, (-1.4, 1.4)),
    "acos": (np.arccos, (-1, 1)),
    "asin": (np.arcsin, (-1, 1)),
    "atan": (np.arctan, (-5, 5)),
    "acosh": (lambda x: np.log(x + np.sqrt(x * x - 1)), (1, 5)),
    "asinh": (lambda x: np.log(x + np.sqrt(x * x + 1)), (-5, 5)),
    "atanh": (lambda x: 0.5 * np.log((1 + x) / (1 - x)), (-0.9, 0.9)),
    "cosh": (lambda x: (np.exp(x) + np.exp(-x)) / 2, (-4, 4)),
    "sinh": (lambda x: (np.exp(x) - np.exp(-x)) / 2, (-4, 4)),
}


@pytest.mark.parametrize("op", sorted(_MATH_REFERENCES))
def test_unary_math_on_f32_agrees_with_a_float64_formula(op):
    reference, (low, high) = _MATH_REFERENCES[op]
    x = f32(RNG.uniform(low, high, 64))
    result = single(op, [x], type_of(x))
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, reference(x.astype(np.float64)), rtol=3e-6, atol=1e-6)


def test_erf_matches_tabulated_values():
    x = f32([0.0, 0.5, 1.0, -2.0, 3.0])
    expected = [0.0, 0.5204998778130465, 0.8427007929497149, -0.9953222650189527,
                0.9999779095030014]
    np.testing.assert_allclose(single("erf", [x], "f32[5]"), expected, rtol=1e-7)


def test_expm1_and_log1p_keep_their_precision_near_zero():
    x = f32([1e-10, -3e-9])
    np.testing.assert_allclose(single("exponential-minus-one", [x], "f32[2]"), x, rtol=1e-6)
    np.testing.assert_allclose(single("log-plus-one", [x], "f32[2]"), x, rtol=1e-6)


def test_atan2_picks_the_quadrant_from_both_signs():
    y, x = f32([1, -1, 1, -1]), f32([1, 1, -1, -1])
    expected = [math.pi / 4, -math.pi / 4, 3 * math.pi / 4, -3 * math.pi / 4]
    np.testing.assert_allclose(single("atan2", [y, x], "f32[4]"), expected, rtol=1e-6)


def test_float_power_follows_c_pow():
    base, exponent = f32([2, -8, 0, 4]), f32([10, 1 / 3, -1, 0.5])
    result = single("power", [base, exponent], "f32[4]")
    np.testing.assert_allclose(result[[0, 3]], [1024, 2], rtol=1e-6)
    assert np.isnan(result[1]) and result[2] == np.inf


@pytest.mark.parametrize("op,reference", [
    ("add", lambda x, y: x + y),
    ("multiply", lambda x, y: x * y),
    ("divide", lambda x, y: x / y),
    ("subtract", lambda x, y: x - y),
])
def test_bf16_elementwise_result_is_the_f32_result_rounded_by_ml_dtypes(op, reference):
    x = RNG.normal(size=256).astype(BF16)
    y = RNG.normal(size=256).astype(BF16)
    result = single(op, [x, y], "bf16[256]")
    expected = reference(x.astype(np.float32), y.astype(np.float32)).astype(BF16)
    assert result.dtype == BF16
    np.testing.assert_array_equal(result.view(np.uint16), expected.view(np.uint16))


def test_f16_exponential_is_the_f32_result_rounded_once():
    x = RNG.uniform(-4, 4, 256).astype(np.float16)
    result = single("exponential", [x], "f16[256]")
    expected = np.exp(x.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(result.view(np.uint16), expected.view(np.uint16))


def test_f16_overflow_after_rounding_gives_infinity():
    x = np.array([60000, -60000], np.float16)
    np.testing.assert_array_equal(single("add", [x, x], "f16[2]"), [np.inf, -np.inf])


# -- integer arithmetic edge cases --------------------------------------------------------------


def test_integer_division_by_zero_follows_xla():
    x = s32([7, -7, 0])
    assert single("divide", [x, s32([0, 0, 0])], "s32[3]").tolist() == [-1, -1, -1]
    assert single("remainder", [x, s32([0, 0, 0])], "s32[3]").tolist() == [7, -7, 0]
    u = np.array([7, 0], np.uint8)
    assert single("divide", [u, np.zeros(2, np.uint8)], "u8[2]").tolist() == [255, 255]
    assert single("remainder", [u, np.zeros(2, np.uint8)], "u8[2]").tolist() == [7, 0]


def test_int_min_divided_by_minus_one_is_int_min_with_remainder_zero():
    x, y = s32([-2**31]), s32([-1])
    assert single("divide", [x, y], "s32[1]").tolist() == [-2**31]
    assert single("remainder", [x, y], "s32[1]").tolist() == [0]
    x8, y8 = np.array([-128], np.int8), np.array([-1], np.int8)
    assert single("divide", [x8, y8], "s8[1]").tolist() == [-128]


def test_integer_division_truncates_toward_zero_and_remainder_takes_the_dividends_sign():
    x, y = s32([-7, 7, -7, 7]), s32([2, -2, -2, 2])
    assert single("divide", [x, y], "s32[4]").tolist() == [-3, -3, 3, 3]
    assert single("remainder", [x, y], "s32[4]").tolist() == [-1, 1, -1, 1]


def test_float_remainder_takes_the_dividends_sign():
    result = single("remainder", [f32([-7.5, 7.5]), f32([2, -2])], "f32[2]")
    assert result.tolist() == [-1.5, 1.5]


def test_integer_arithmetic_wraps_around():
    assert single("add", [np.array([127], np.int8), np.array([1], np.int8)],
                  "s8[1]").tolist() == [-128]
    assert single("multiply", [s32([65536]), s32([65536])], "s32[1]").tolist() == [0]
    assert single("subtract", [np.array([0], np.uint8), np.array([1], np.uint8)],
                  "u8[1]").tolist() == [255]
    assert single("negate", [s32([-2**31])], "s32[1]").tolist() == [-2**31]
    assert single("abs", [s32([-2**31, -5])], "s32[2]").tolist() == [-2**31, 5]


def test_four_bit_integer_arithmetic_wraps_at_four_bits():
    x = np.array([7, -8, 3], ml_dtypes.int4)
    y = np.array([1, -1, 3], ml_dtypes.int4)
    result = single("add", [x, y], "s4[3]")
    assert result.dtype == ml_dtypes.int4
    assert result.astype(np.int8).tolist() == [-8, 7, 6]


def test_shifts_by_the_bit_width_or_more_give_zero_or_the_sign():
    x = s32([1, -8, -8, 5])
    amount = s32([32, 33, -1, 40])
    assert single("shift-left", [x, amount], "s32[4]").tolist() == [0, 0, 0, 0]
    assert single("shift-right-logical", [x, amount], "s32[4]").tolist() == [0, 0, 0, 0]
    assert single("shift-right-arithmetic", [x, amount], "s32[4]").tolist() == [0, -1, -1, 0]
    wide, far = np.array([1, -8], np.int64), np.array([64, 200], np.int64)
    assert single("shift-left", [wide, far], "s64[2]").tolist() == [0, 0]
    assert single("shift-right-logical", [wide, far], "s64[2]").tolist() == [0, 0]
    assert single("shift-right-arithmetic", [wide, far], "s64[2]").tolist() == [0, -1]


def test_shifts_within_the_bit_width_move_bits_as_two_s_complement():
    x, one = s32([1, -8, -8]), s32([31, 1, 1])
    assert single("shift-left", [x, one], "s32[3]").tolist() == [-2**31, -16, -16]
    assert single("shift-right-logical", [x, one], "s32[3]").tolist() == [0, 0x7FFFFFFC,
                                                                          0x7FFFFFFC]
    assert single("shift-right-arithmetic", [x, one], "s32[3]").tolist() == [0, -4, -4]
    u = np.array([0x80], np.uint8)
    assert single("shift-right-arithmetic", [u, np.array([3], np.uint8)],
                  "u8[1]").tolist() == [0xF0]


def test_integer_power_follows_xla_including_negative_exponents():
    base = s32([2, 3, -2, 1, -1, 5, 2])
    exponent = s32([10, 3, 3, -1, -1, -1, 31])
    # XLA's EmitIntegerPow: a negative exponent gives 1 for base 1 and 0 otherwise (even -1).
    assert single("power", [base, exponent], "s32[7]").tolist() == [1024, 27, -8, 1, 0, 0,
                                                                    -2**31]


def test_integer_power_uses_only_six_exponent_bits_as_xla_does():
    # EmitIntegerPow squares over the exponent's low 6 bits, so 0**64 == 1 in XLA.
    assert single("power", [s32([0, 3]), s32([64, 65])], "s32[2]").tolist() == [1, 3]


def test_bitwise_ops_on_integers_and_logical_ops_on_pred():
    x, y = s32([0b1100]), s32([0b1010])
    assert single("and", [x, y], "s32[1]").tolist() == [0b1000]
    assert single("or", [x, y], "s32[1]").tolist() == [0b1110]
    assert single("xor", [x, y], "s32[1]").tolist() == [0b0110]
    assert single("not", [x], "s32[1]").tolist() == [~0b1100]
    p, q = np.array([True, True, False]), np.array([True, False, False])
    assert single("and", [p, q], "pred[3]").tolist() == [True, False, False]
    assert single("not", [p], "pred[3]").tolist() == [False, False, True]


def test_popcnt_and_count_leading_zeros_count_bits():
    assert single("popcnt", [s32([-1, 0, 7, -2**31])], "s32[4]").tolist() == [32, 0, 3, 1]
    assert single("count-leading-zeros", [s32([0, 1, -1, 256])], "s32[4]").tolist() == \
        [32, 31, 0, 23]
    assert single("count-leading-zeros", [np.array([1, 0x80], np.uint8)],
                  "u8[2]").tolist() == [7, 0]
    assert single("count-leading-zeros", [np.array([1], np.int64)], "s64[1]").tolist() == [63]


# -- rounding, sign, predicates -----------------------------------------------------------------


def test_round_nearest_afz_rounds_half_away_from_zero():
    x = f32([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.3])
    result = single("round-nearest-afz", [x], "f32[8]")
    assert result.tolist() == [-3, -2, -1, 1, 2, 3, 0, 0]
    assert np.signbit(result[-1])


def test_round_nearest_even_rounds_half_to_even():
    x = f32([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.7])
    assert single("round-nearest-even", [x], "f32[7]").tolist() == [-2, -2, 0, 0, 2, 2, 4]


def test_sign_of_nan_is_nan_and_of_minus_zero_is_minus_zero():
    result = single("sign", [f32([np.nan, -0.0, 0.0, -3, 5, -np.inf])], "f32[6]")
    assert np.isnan(result[0])
    assert result[1] == 0 and np.signbit(result[1])
    assert result[2] == 0 and not np.signbit(result[2])
    assert result[3:].tolist() == [-1, 1, -1]
    assert single("sign", [s32([-7, 0, 9])], "s32[3]").tolist() == [-1, 0, 1]


def test_is_finite_is_false_for_infinities_and_nan():
    x = f32([1, np.inf, -np.inf, np.nan])
    assert single("is-finite", [x], "pred[4]").tolist() == [True, False, False, False]


def test_floor_ceil_and_abs():
    x = f32([-1.5, 1.5, -0.0])
    assert single("floor", [x], "f32[3]").tolist() == [-2, 1, 0]
    assert single("ceil", [x], "f32[3]").tolist() == [-1, 2, 0]
    assert single("abs", [x], "f32[3]").tolist() == [1.5, 1.5, 0]


def test_complex_construction_and_its_parts():
    re_, im = f32([1, -2]), f32([3, np.inf])
    z = single("complex", [re_, im], "c64[2]")
    assert z.dtype == np.complex64
    assert z.real.tolist() == [1, -2] and z.imag.tolist() == [3, np.inf]
    assert single("real", [z], "f32[2]").tolist() == [1, -2]
    assert single("imag", [z], "f32[2]").tolist() == [3, np.inf]
    np.testing.assert_allclose(single("abs", [z[:1]], "f32[1]"), [math.sqrt(10)], rtol=1e-6)


# -- compare, select, clamp ---------------------------------------------------------------------


def _pairwise(values: np.ndarray, direction: str, kind: str | None) -> np.ndarray:
    n = len(values)
    rows = np.repeat(values[:, None], n, axis=1)
    columns = np.repeat(values[None, :], n, axis=0)
    attrs = {"direction": direction} if kind is None else {"direction": direction, "type": kind}
    return single("compare", [rows, columns], f"pred[{n},{n}]", **attrs)


def test_totalorder_compare_orders_nans_infinities_and_signed_zeros():
    ordered = f32([np.copysign(np.nan, -1), -np.inf, -1, -0.0, 0.0, 1, np.inf, np.nan])
    n = len(ordered)
    less = _pairwise(ordered, "LT", "TOTALORDER")
    np.testing.assert_array_equal(less, np.triu(np.ones((n, n), bool), k=1))
    equal = _pairwise(ordered, "EQ", "TOTALORDER")
    np.testing.assert_array_equal(equal, np.eye(n, dtype=bool))


def test_float_compare_treats_nan_as_unordered_and_zeros_as_equal():
    x = f32([np.nan, -0.0])
    assert _pairwise(x, "EQ", "FLOAT").tolist() == [[False, False], [False, True]]
    assert _pairwise(x, "NE", None).tolist() == [[True, True], [True, False]]
    assert _pairwise(x, "LT", None).tolist() == [[False, False], [False, False]]


def test_unsigned_and_bf16_comparisons():
    u = np.array([0, 255], np.uint8)
    assert _pairwise(u, "LT", "UNSIGNED").tolist() == [[False, True], [False, False]]
    x = np.array([1, 1.0078125], BF16)
    assert _pairwise(x, "GE", None).tolist() == [[True, False], [True, True]]


def test_select_picks_per_element_and_broadcasts_a_scalar_predicate():
    on_true, on_false = f32([1, 2, 3]), f32([-1, -2, -3])
    predicate = np.array([True, False, True])
    assert single("select", [predicate, on_true, on_false], "f32[3]").tolist() == [1, -2, 3]
    assert single("select", [np.array(False), on_true, on_false], "f32[3]").tolist() == \
        [-1, -2, -3]


def test_clamp_bounds_each_element_and_accepts_scalar_bounds():
    x = f32([-5, 0.5, 5, np.nan])
    result = single("clamp", [f32(0), x, f32(1)], "f32[4]")
    assert result[:3].tolist() == [0, 0.5, 1] and np.isnan(result[3])
    bounds = single("clamp", [s32([0, 0]), s32([-3, 9]), s32([4, 4])], "s32[2]")
    assert bounds.tolist() == [0, 4]


def test_maximum_and_minimum_propagate_nan():
    x, y = f32([np.nan, 1]), f32([1, np.nan])
    assert np.isnan(single("maximum", [x, y], "f32[2]")).all()
    assert np.isnan(single("minimum", [x, y], "f32[2]")).all()


# -- conversions --------------------------------------------------------------------------------


def test_convert_float_to_int_truncates_saturates_and_maps_nan_to_zero():
    x = f32([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.9, -2.9])
    assert single("convert", [x], "s32[7]").tolist() == \
        [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, 2, -2]
    assert single("convert", [f32([-1.5, 300, 254.9])], "u8[3]").tolist() == [0, 255, 254]
    big = np.array([9.3e18, -9.3e18, 2.0**63], np.float64)
    assert single("convert", [big], "s64[3]").tolist() == [2**63 - 1, -2**63, 2**63 - 1]
    assert single("convert", [np.array([2.0**64, 1.5], np.float64)], "u64[2]").tolist() == \
        [2**64 - 1, 1]


def test_convert_to_pred_tests_for_nonzero():
    x = f32([0, -0.0, 0.5, np.nan])
    assert single("convert", [x], "pred[4]").tolist() == [False, False, True, True]
    assert single("convert", [s32([0, -3])], "pred[2]").tolist() == [False, True]


def test_convert_wraps_integers_and_rounds_floats_to_nearest_even():
    assert single("convert", [s32([300, -129])], "s8[2]").tolist() == [44, 127]
    ties = f32([1 + 2**-8, 1 + 3 * 2**-8])
    assert single("convert", [ties], "bf16[2]").astype(np.float32).tolist() == \
        [1.0, 1 + 2**-6]
    assert single("convert", [np.array([True, False])], "f32[2]").tolist() == [1, 0]


def test_convert_from_complex_keeps_the_real_part():
    z = np.array([3 - 4j], np.complex64)
    assert single("convert", [z], "f32[1]").tolist() == [3]


def test_bitcast_convert_reinterprets_bits_of_equal_width():
    bits = single("bitcast-convert", [f32([1.0, -2.0])], "u32[2]")
    assert bits.tolist() == [0x3F800000, 0xC0000000]
    assert single("bitcast-convert", [bits], "f32[2]").tolist() == [1.0, -2.0]
    assert single("bitcast-convert", [np.array([-1], np.int8)], "u8[1]").tolist() == [255]


def test_bitcast_convert_to_a_narrower_type_adds_a_minor_dimension_lowest_bytes_first():
    x = f32([1.0, 2.5])
    narrow = single("bitcast-convert", [x], "u8[2,4]")
    assert narrow.tolist() == [[0, 0, 128, 63], [0, 0, 32, 64]]
    assert single("bitcast-convert", [narrow], "f32[2]").tolist() == [1.0, 2.5]
    halves = single("bitcast-convert", [np.array([0x00010002], np.uint32)], "u16[1,2]")
    assert halves.tolist() == [[2, 1]]


def test_reduce_precision_to_bf16_fields_equals_bf16_rounding():
    x = f32(RNG.normal(size=512) * np.exp2(RNG.integers(-20, 20, 512)))
    result = single("reduce-precision", [x], "f32[512]", exponent_bits=8, mantissa_bits=7)
    np.testing.assert_array_equal(result, x.astype(BF16).astype(np.float32))


def test_reduce_precision_to_f16_fields_overflows_to_inf_and_flushes_denormals():
    x = f32([70000, -70000, 1e-5, -1e-5, 6.2e-5, 1.0009765625 + 2**-12, np.nan])
    result = single("reduce-precision", [x], "f32[7]", exponent_bits=5, mantissa_bits=10)
    assert result[:2].tolist() == [np.inf, -np.inf]
    assert result[2] == 0 and not np.signbit(result[2])
    assert result[3] == 0 and np.signbit(result[3])
    assert result[4] == np.float32(np.float16(6.2e-5))
    assert result[5] == np.float32(np.float16(x[5]))
    assert np.isnan(result[6])


def test_reduce_precision_without_mantissa_turns_nan_into_infinity_and_ties_to_even():
    result = single("reduce-precision", [f32([np.nan, 3.0, 6.0])], "f32[3]",
                    exponent_bits=8, mantissa_bits=0)
    # 3 = 1.1b * 2^1 and 6 = 1.1b * 2^2 are ties; the even exponent (128 vs 129) wins.
    assert result.tolist() == [np.inf, 2.0, 8.0]


def test_stochastic_convert_is_unsupported_and_says_so():
    with pytest.raises(UnsupportedError, match="stochastic-convert"):
        single("stochastic-convert", [f32([1.0]), np.array([3], np.uint32)], "bf16[1]")


# -- shape ops ----------------------------------------------------------------------------------


def test_broadcast_maps_operand_dimensions_to_output_dimensions():
    x = f32(np.arange(6).reshape(2, 3))
    result = single("broadcast", [x], "f32[3,4,2]", dimensions=(2, 0))
    for i in range(3):
        for j in range(4):
            for k in range(2):
                assert result[i, j, k] == x[k, i]


def test_broadcast_of_a_scalar_fills_the_shape():
    assert single("broadcast", [f32(7)], "f32[2,2]", dimensions=()).tolist() == [[7, 7], [7, 7]]


def test_reshape_is_row_major_and_transpose_permutes():
    x = f32(np.arange(24).reshape(2, 3, 4))
    np.testing.assert_array_equal(single("reshape", [x], "f32[6,4]"), x.reshape(6, 4))
    result = single("transpose", [x], "f32[4,2,3]", dimensions=(2, 0, 1))
    assert result[3, 1, 2] == x[1, 2, 3]


def test_bitcast_with_a_column_major_operand_is_a_transpose():
    b = Builder()
    x = b.param("f32[2,3]{0,1}")
    graph = b.build(b.add("bitcast", (x,), "f32[3,2]{1,0}"))
    value = f32(np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(run(graph, value)[0], value.T)


def test_bitcast_with_default_layouts_is_a_reshape():
    value = f32(np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(single("bitcast", [value], "f32[3,2]"), value.reshape(3, 2))


# -- data movement ------------------------------------------------------------------------------


def test_slice_with_strides_takes_every_kth_element():
    x = f32(np.arange(20).reshape(4, 5))
    result = single("slice", [x], "f32[2,2]", slice=((1, 4, 2), (0, 5, 3)))
    assert result.tolist() == [[5, 8], [15, 18]]


def test_pad_handles_negative_edges_and_interior_padding():
    result = single("pad", [f32([1, 2, 3]), f32(9)], "f32[6]", padding=((-1, 2, 1),))
    assert result.tolist() == [9, 2, 9, 3, 9, 9]
    x = f32([[1, 2], [3, 4]])
    result = single("pad", [x, f32(0)], "f32[3,4]", padding=((1, -1, 1), (0, 1, 1)))
    assert result.tolist() == [[0, 0, 0, 0], [1, 0, 2, 0], [0, 0, 0, 0]]


def test_pad_then_slice_is_the_identity():
    x = f32(RNG.normal(size=(3, 4)))
    b = Builder()
    p, value = b.param("f32[3,4]"), b.const(-1, "f32")
    padded = b.add("pad", (p, value), "f32[10,8]", padding=((2, 3, 1), (1, 0, 1)))
    graph = b.build(b.add("slice", (padded,), "f32[3,4]", slice=((2, 7, 2), (1, 8, 2))))
    np.testing.assert_array_equal(run(graph, x)[0], x)


def test_concatenate_and_reverse():
    x, y = f32([[1, 2]]), f32([[3, 4], [5, 6]])
    joined = single("concatenate", [x, y], "f32[3,2]", dimensions=(0,))
    assert joined.tolist() == [[1, 2], [3, 4], [5, 6]]
    assert single("reverse", [y], "f32[2,2]", dimensions=(0, 1)).tolist() == [[6, 5], [4, 3]]


def test_iota_counts_along_one_dimension():
    b = Builder()
    graph = b.build(b.add("iota", (), "s32[2,3]", iota_dimension=1))
    assert run(graph)[0].tolist() == [[0, 1, 2], [0, 1, 2]]


def test_bf16_iota_rounds_indices_bf16_cannot_hold():
    b = Builder()
    graph = b.build(b.add("iota", (), "bf16[300]", iota_dimension=0))
    result = run(graph)[0].astype(np.float32)
    assert result[255] == 255 and result[257] == 256 and result[259] == 260


def test_dynamic_slice_clamps_its_start_so_the_window_fits():
    x = f32(np.arange(10))
    sizes = {"dynamic_slice_sizes": (3,)}
    assert single("dynamic-slice", [x, s32(9)], "f32[3]", **sizes).tolist() == [7, 8, 9]
    assert single("dynamic-slice", [x, s32(-5)], "f32[3]", **sizes).tolist() == [0, 1, 2]
    assert single("dynamic-slice", [x, s32(4)], "f32[3]", **sizes).tolist() == [4, 5, 6]


def test_dynamic_update_slice_clamps_its_start_and_leaves_the_rest():
    x = f32(np.zeros((3, 4)))
    update = f32(np.ones((2, 2)))
    result = single("dynamic-update-slice", [x, update, s32(5), s32(-1)], "f32[3,4]")
    expected = np.zeros((3, 4))
    expected[1:3, 0:2] = 1
    np.testing.assert_array_equal(result, expected)
    assert x.sum() == 0


# -- gather and scatter -------------------------------------------------------------------------

_ROWS = {"offset_dims": (1,), "collapsed_slice_dims": (0,), "start_index_map": (0,),
         "index_vector_dim": 1, "slice_sizes": (1, 3)}


def test_gather_of_rows_is_numpy_take():
    x = f32(RNG.normal(size=(5, 3)))
    indices = s32([0, 4, 2, 4])
    np.testing.assert_array_equal(single("gather", [x, indices], "f32[4,3]", **_ROWS), x[indices])


def test_gather_clamps_windows_that_would_leave_the_operand():
    x = f32(np.arange(15).reshape(5, 3))
    indices = s32([[-1], [7]])
    result = single("gather", [x, indices], "f32[2,2,3]", offset_dims=(1, 2),
                    collapsed_slice_dims=(), start_index_map=(0,), index_vector_dim=1,
                    slice_sizes=(2, 3))
    np.testing.assert_array_equal(result, np.stack([x[0:2], x[3:5]]))


def test_gather_with_index_vectors_along_a_leading_dimension_reads_2d_windows():
    x = f32(np.arange(20).reshape(4, 5))
    indices = s32([[0, 2, 1], [1, 3, 0]])  # index_vector_dim 0: columns are (row, col) pairs
    result = single("gather", [x, indices], "f32[3,2,2]", offset_dims=(1, 2),
                    collapsed_slice_dims=(), start_index_map=(0, 1), index_vector_dim=0,
                    slice_sizes=(2, 2))
    for j, (row, col) in enumerate(indices.T):
        np.testing.assert_array_equal(result[j], x[row:row + 2, col:col + 2])


def test_gather_of_points_collapses_every_window_dimension():
    x = f32(np.arange(20).reshape(4, 5))
    indices = s32([[3, 4], [0, 1], [2, 2]])
    result = single("gather", [x, indices], "f32[3]", offset_dims=(),
                    collapsed_slice_dims=(0, 1), start_index_map=(0, 1), index_vector_dim=1,
                    slice_sizes=(1, 1))
    assert result.tolist() == [x[3, 4], x[0, 1], x[2, 2]]


def test_gather_with_batching_dimensions_matches_a_loop():
    x = f32(RNG.normal(size=(2, 5, 3)))
    indices = s32(RNG.integers(0, 5, size=(2, 4)))
    result = single("gather", [x, indices], "f32[2,4,3]", offset_dims=(2,),
                    collapsed_slice_dims=(1,), start_index_map=(1,), index_vector_dim=2,
                    slice_sizes=(1, 1, 3), operand_batching_dims=(0,),
                    start_indices_batching_dims=(0,))
    for batch in range(2):
        for i in range(4):
            np.testing.assert_array_equal(result[batch, i], x[batch, indices[batch, i]])


def _scatter_rows(combiner: str, reducer: str | None) -> dict:
    """Attributes of a scatter that writes whole rows of a matrix at row indices."""
    return {"update_window_dims": (1,), "inserted_window_dims": (0,),
            "scatter_dims_to_operand_dims": (0,), "index_vector_dim": 1,
            "to_apply": combiner, "reducer": reducer}


def _assignment(b: Builder, dtype: str = "f32") -> str:
    """A scatter combiner that keeps the update: (old, new) -> new, as jnp's .at[].set."""
    sub = b.sub(f"assign_{dtype}")
    sub.param(f"{dtype}[]")
    sub.build(sub.param(f"{dtype}[]"))
    return sub.graph.name


def test_scatter_add_accumulates_repeated_indices_like_numpy_add_at():
    operand = f32(RNG.normal(size=(5, 3)))
    indices = s32([1, 3, 1, 0, 1, 4])
    updates = f32(RNG.normal(size=(6, 3)))
    result = single("scatter", [operand, indices, updates], "f32[5,3]",
                    build=lambda b: _scatter_rows(binary_computation(b, "add", "add"), "add"))
    expected = operand.copy()
    np.add.at(expected, indices, updates)
    np.testing.assert_allclose(result, expected, rtol=1e-6)


def test_scatter_with_a_general_combiner_applies_updates_in_order():
    operand = f32(np.zeros((4, 2)))
    indices = s32([1, 3, 1])
    updates = f32([[1, 1], [2, 2], [3, 3]])
    result = single("scatter", [operand, indices, updates], "f32[4,2]",
                    build=lambda b: _scatter_rows(_assignment(b), None))
    assert result.tolist() == [[0, 0], [3, 3], [0, 0], [2, 2]]


def test_scatter_skips_updates_whose_window_leaves_the_operand():
    operand = f32(np.zeros((5, 3)))
    indices = s32([4, 1, -1])
    updates = f32(RNG.normal(size=(3, 2, 3)))

    def build(b):
        return {"update_window_dims": (1, 2), "inserted_window_dims": (),
                "scatter_dims_to_operand_dims": (0,), "index_vector_dim": 1,
                "to_apply": binary_computation(b, "add", "add"), "reducer": "add"}

    result = single("scatter", [operand, indices, updates], "f32[5,3]", build=build)
    expected = np.zeros((5, 3), np.float32)
    expected[1:3] = updates[1]
    np.testing.assert_array_equal(result, expected)


def test_gather_then_scatter_back_is_the_identity():
    x = f32(RNG.normal(size=(6, 2)))
    permutation = s32(RNG.permutation(6))
    b = Builder()
    p, idx = b.param("f32[6,2]"), b.param("s32[6]")
    rows = {**_ROWS, "slice_sizes": (1, 2)}
    gathered = b.add("gather", (p, idx), "f32[6,2]", **rows)
    zeros = b.add("broadcast", (b.const(0, "f32"),), "f32[6,2]", dimensions=())
    scattered = b.add("scatter", (zeros, idx, gathered), "f32[6,2]",
                      **_scatter_rows(_assignment(b), None))
    np.testing.assert_array_equal(run(b.build(scattered), x, permutation)[0], x)


def test_scatter_with_batching_dimensions_matches_a_loop():
    operand = f32(np.zeros((2, 5)))
    indices = s32(RNG.integers(0, 5, size=(2, 3)))
    updates = f32(RNG.normal(size=(2, 3)))

    def build(b):
        return {"update_window_dims": (), "inserted_window_dims": (1,),
                "scatter_dims_to_operand_dims": (1,), "index_vector_dim": 2,
                "input_batching_dims": (0,), "scatter_indices_batching_dims": (0,),
                "to_apply": binary_computation(b, "add", "add"), "reducer": "add"}

    result = single("scatter", [operand, indices, updates], "f32[2,5]", build=build)
    expected = np.zeros((2, 5), np.float32)
    for batch in range(2):
        for i in range(3):
            expected[batch, indices[batch, i]] += updates[batch, i]
    np.testing.assert_allclose(result, expected, rtol=1e-6)


def test_variadic_scatter_combines_every_operand_with_its_updates():
    b = Builder()
    values, counts = b.param("f32[4]"), b.param("s32[4]")
    idx, new_values, new_counts = b.param("s32[3]"), b.param("f32[3]"), b.param("s32[3]")
    sub = b.sub("add_pair")
    acc_v, acc_c, up_v, up_c = (sub.param(t) for t in ("f32[]", "s32[]", "f32[]", "s32[]"))
    sub.build(sub.add("tuple", (sub.add("add", (acc_v, up_v), "f32[]"),
                                sub.add("add", (acc_c, up_c), "s32[]")),
                      tuple_shape("f32[]", "s32[]")))
    node = b.add("scatter", (values, counts, idx, new_values, new_counts),
                 tuple_shape("f32[4]", "s32[4]"), update_window_dims=(),
                 inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,),
                 index_vector_dim=1, to_apply="add_pair", reducer=None)
    total, count = run(b.build(node), f32(np.zeros(4)), s32(np.zeros(4)), s32([2, 0, 2]),
                       f32([1.5, 2, 3]), s32([1, 1, 1]))
    assert total.tolist() == [2, 0, 4.5, 0] and count.tolist() == [1, 0, 2, 0]


# -- dot ----------------------------------------------------------------------------------------


def test_dot_general_with_batch_and_contracting_dimensions_is_einsum():
    lhs = f32(RNG.normal(size=(2, 3, 4)))
    rhs = f32(RNG.normal(size=(2, 4, 5)))
    result = single("dot", [lhs, rhs], "f32[2,3,5]", lhs_batch_dims=(0,), rhs_batch_dims=(0,),
                    lhs_contracting_dims=(2,), rhs_contracting_dims=(1,))
    np.testing.assert_allclose(result, np.einsum("bij,bjk->bik", lhs, rhs), rtol=1e-5)


def test_dot_general_orders_output_as_batch_then_lhs_free_then_rhs_free():
    lhs = f32(RNG.normal(size=(3, 2, 4)))
    rhs = f32(RNG.normal(size=(4, 5, 2)))
    result = single("dot", [lhs, rhs], "f32[2,3,5]", lhs_batch_dims=(1,), rhs_batch_dims=(2,),
                    lhs_contracting_dims=(2,), rhs_contracting_dims=(0,))
    expected = np.array([lhs[:, b, :] @ rhs[:, :, b] for b in range(2)])
    np.testing.assert_allclose(result, expected, rtol=1e-5)


def test_bf16_dot_accumulates_in_f32_and_rounds_once():
    lhs = np.ones((1, 512), BF16)
    rhs = np.ones((512, 1), BF16)
    result = single("dot", [lhs, rhs], "bf16[1,1]", lhs_contracting_dims=(1,),
                    rhs_contracting_dims=(0,))
    assert result.astype(np.float32).tolist() == [[512.0]]  # bf16 partial sums stop at 256


def test_int8_dot_into_s32_accumulates_without_int8_overflow():
    lhs = np.full((1, 4), 100, np.int8)
    rhs = np.full((4, 1), 100, np.int8)
    result = single("dot", [lhs, rhs], "s32[1,1]", lhs_contracting_dims=(1,),
                    rhs_contracting_dims=(0,))
    assert result.tolist() == [[40000]]


# -- convolution --------------------------------------------------------------------------------


def _padded(x: np.ndarray, pads) -> np.ndarray:
    """Pad the trailing spatial dims by (low, high); negative amounts crop."""
    grow = [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
    x = np.pad(x, grow)
    crop = [slice(None), slice(None)] + [slice(max(-lo, 0), x.shape[2 + d] - max(-hi, 0))
                                         for d, (lo, hi) in enumerate(pads)]
    return x[tuple(crop)]


def _dilated(x: np.ndarray, factors) -> np.ndarray:
    shape = x.shape[:2] + tuple((n - 1) * f + 1 for n, f in zip(x.shape[2:], factors))
    out = np.zeros(shape, x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(None, None, f) for f in factors)] = x
    return out


def naive_convolution(lhs, rhs, stride, pad, lhs_dilation, rhs_dilation, groups=1):
    """NCHW x OIHW -> NCHW by the textbook definition: dilate, pad, slide, multiply, sum."""
    image = _padded(_dilated(lhs.astype(np.float64), lhs_dilation), pad)
    kernel = _dilated(rhs.astype(np.float64), rhs_dilation)
    batch, out_features = lhs.shape[0], rhs.shape[0]
    in_per_group, out_per_group = rhs.shape[1], out_features // groups
    kh, kw = kernel.shape[2:]
    oh = (image.shape[2] - kh) // stride[0] + 1
    ow = (image.shape[3] - kw) // stride[1] + 1
    out = np.zeros((batch, out_features, oh, ow))
    for n in range(batch):
        for o in range(out_features):
            g = o // out_per_group
            for y in range(oh):
                for x in range(ow):
                    patch = image[n, g * in_per_group:(g + 1) * in_per_group,
                                  y * stride[0]:y * stride[0] + kh,
                                  x * stride[1]:x * stride[1] + kw]
                    out[n, o, y, x] = np.sum(patch * kernel[o])
    return out


def _conv_window(kernel_shape, stride, pad, lhs_dilation, rhs_dilation, reversal=(False, False)):
    return {"size": tuple(kernel_shape), "stride": tuple(stride), "pad": tuple(pad),
            "lhs_dilate": tuple(lhs_dilation), "rhs_dilate": tuple(rhs_dilation),
            "window_reversal": tuple(reversal)}


@pytest.mark.parametrize("stride,pad,lhs_dilation,rhs_dilation,groups", [
    ((1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1),
    ((2, 1), ((1, 2), (2, 0)), (1, 1), (1, 1), 1),
    ((1, 2), ((1, 1), (0, 1)), (2, 1), (1, 2), 1),
    ((1, 1), ((-1, 1), (1, -1)), (1, 1), (2, 2), 1),
    ((1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 2),
    ((2, 2), ((0, 1), (1, 0)), (1, 1), (1, 1), 4),
])
def test_convolution_matches_a_naive_loop(stride, pad, lhs_dilation, rhs_dilation, groups):
    lhs = f32(RNG.normal(size=(2, 4, 6, 5)))
    rhs = f32(RNG.normal(size=(4, 4 // groups, 3, 2)))
    expected = naive_convolution(lhs, rhs, stride, pad, lhs_dilation, rhs_dilation, groups)
    result = single("convolution", [lhs, rhs], f"f32[{','.join(map(str, expected.shape))}]",
                    window=_conv_window(rhs.shape[2:], stride, pad, lhs_dilation, rhs_dilation),
                    dim_labels="bf01_oi01->bf01", feature_group_count=groups,
                    batch_group_count=1)
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-4)


def test_convolution_dim_labels_only_change_the_layout():
    lhs = f32(RNG.normal(size=(2, 3, 5, 4)))  # NCHW
    rhs = f32(RNG.normal(size=(6, 3, 2, 2)))  # OIHW
    window = _conv_window((2, 2), (1, 1), ((1, 0), (0, 1)), (1, 1), (1, 1))
    nchw = single("convolution", [lhs, rhs], "f32[2,6,5,4]", window=window,
                  dim_labels="bf01_oi01->bf01")
    nhwc = single("convolution", [lhs.transpose(0, 2, 3, 1), rhs.transpose(2, 3, 1, 0)],
                  "f32[2,5,4,6]", window=window, dim_labels="b01f_01io->b01f")
    np.testing.assert_allclose(nhwc, nchw.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)


def test_convolution_window_reversal_flips_the_kernel():
    lhs = f32(RNG.normal(size=(1, 2, 5, 5)))
    rhs = f32(RNG.normal(size=(3, 2, 3, 2)))
    window = _conv_window((3, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), (True, False))
    result = single("convolution", [lhs, rhs], "f32[1,3,3,4]", window=window,
                    dim_labels="bf01_oi01->bf01")
    expected = naive_convolution(lhs, rhs[:, :, ::-1, :], (1, 1), ((0, 0), (0, 0)), (1, 1),
                                 (1, 1))
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)


def test_convolution_with_batch_groups_convolves_each_batch_chunk_with_its_features():
    lhs = f32(RNG.normal(size=(4, 3, 5, 5)))
    rhs = f32(RNG.normal(size=(4, 3, 2, 2)))
    window = _conv_window((2, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1))
    result = single("convolution", [lhs, rhs], "f32[2,4,4,4]", window=window,
                    dim_labels="bf01_oi01->bf01", batch_group_count=2)
    # StableHLO: split lhs batch and rhs output features into 2 chunks, convolve, concatenate.
    chunks = [naive_convolution(lhs[2 * g:2 * g + 2], rhs[2 * g:2 * g + 2], (1, 1),
                                ((0, 0), (0, 0)), (1, 1), (1, 1)) for g in range(2)]
    np.testing.assert_allclose(result, np.concatenate(chunks, axis=1), rtol=1e-5, atol=1e-5)


def test_f16_convolution_accumulates_in_f32():
    lhs = np.ones((1, 1, 1, 4096), np.float16)
    rhs = np.ones((1, 1, 1, 4096), np.float16)
    window = _conv_window((1, 4096), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1))
    result = single("convolution", [lhs, rhs], "f16[1,1,1,1]", window=window,
                    dim_labels="bf01_oi01->bf01")
    assert result.item() == 4096  # f16 partial sums would stop at 2048


# -- reductions ---------------------------------------------------------------------------------


def test_f16_sum_accumulates_in_f32_and_rounds_once():
    x = np.ones((4096, 2), np.float16)
    result = single("reduce", [x, np.float16(0)], "f16[2]", dimensions=(0,),
                    build=lambda b: {"to_apply": binary_computation(b, "add", "add", "f16")},
                    reducer="add")
    assert result.dtype == np.float16
    assert result.tolist() == [4096, 4096]  # f16 running sums stop at 2048 (2048 + 1 rounds)


def test_reduce_max_over_several_dimensions_combines_with_the_init_value():
    x = f32(RNG.normal(size=(3, 4, 5)))
    build = {"build": lambda b: {"to_apply": binary_computation(b, "max", "maximum")}}
    result = single("reduce", [x, f32(-np.inf)], "f32[4]", dimensions=(0, 2), reducer="maximum",
                    **build)
    np.testing.assert_array_equal(result, x.max(axis=(0, 2)))
    capped = single("reduce", [x, f32(100)], "f32[4]", dimensions=(0, 2), reducer="maximum",
                    **build)
    assert capped.tolist() == [100] * 4


def test_integer_sum_wraps_like_the_elementwise_add():
    x = s32([2**31 - 1, 1, 5])
    result = single("reduce", [x, s32(0)], "s32[]", dimensions=(0,), reducer="add",
                    build=lambda b: {"to_apply": binary_computation(b, "add", "add", "s32")})
    assert result.item() == -2**31 + 5


def test_reduce_of_an_empty_dimension_is_the_init_value():
    x = f32(np.zeros((0, 3)))
    result = single("reduce", [x, f32(7)], "f32[3]", dimensions=(0,), reducer="add",
                    build=lambda b: {"to_apply": binary_computation(b, "add", "add")})
    assert result.tolist() == [7, 7, 7]


def _argmax_computation(b: Builder) -> str:
    """JAX's argmax reducer: the larger value wins; on a tie the lower index."""
    sub = b.sub("argmax")
    acc_value, acc_index = sub.param("f32[]"), sub.param("s32[]")
    value, index = sub.param("f32[]"), sub.param("s32[]")
    greater = sub.add("compare", (acc_value, value), "pred[]", direction="GT")
    equal = sub.add("compare", (acc_value, value), "pred[]", direction="EQ")
    lower = sub.add("compare", (acc_index, index), "pred[]", direction="LT")
    keep = sub.add("or", (greater, sub.add("and", (equal, lower), "pred[]")), "pred[]")
    sub.build(sub.add("tuple", (sub.add("select", (keep, acc_value, value), "f32[]"),
                                sub.add("select", (keep, acc_index, index), "s32[]")),
                      tuple_shape("f32[]", "s32[]")))
    return "argmax"


@pytest.mark.parametrize("length", [1, 7, 64])
def test_variadic_reduce_with_a_general_computation_computes_argmax(length):
    x = f32(RNG.integers(0, 4, size=(5, length)))  # small integers: plenty of ties
    b = Builder()
    values = b.param(type_of(x))
    indices = b.add("iota", (), f"s32[5,{length}]", iota_dimension=1)
    node = b.add("reduce", (values, indices, b.const(-np.inf, "f32"), b.const(0, "s32")),
                 tuple_shape("f32[5]", "s32[5]"), dimensions=(1,),
                 to_apply=_argmax_computation(b), reducer=None)
    best, where = run(b.build(node), x)
    np.testing.assert_array_equal(best, x.max(axis=1))
    np.testing.assert_array_equal(where, np.argmax(x, axis=1))


def _naive_reduce_window(x, function, fill, size, stride, pad, base, dilation):
    """Place x on a base-dilated, padded canvas of `fill` (the reducer's identity), then
    reduce every strided, dilated window with `function`."""
    dilated = np.full([(n - 1) * f + 1 for n, f in zip(x.shape, base)], fill)
    dilated[tuple(slice(None, None, f) for f in base)] = x
    canvas = np.pad(dilated, [(max(lo, 0), max(hi, 0)) for lo, hi in pad], constant_values=fill)
    canvas = canvas[tuple(slice(max(-lo, 0), canvas.shape[d] - max(-hi, 0))
                          for d, (lo, hi) in enumerate(pad))]
    spans = [(k - 1) * d + 1 for k, d in zip(size, dilation)]
    out_shape = [(c - s) // st + 1 for c, s, st in zip(canvas.shape, spans, stride)]
    out = np.empty(out_shape)
    for i in range(out_shape[0]):
        for j in range(out_shape[1]):
            window = canvas[i * stride[0]:i * stride[0] + spans[0]:dilation[0],
                            j * stride[1]:j * stride[1] + spans[1]:dilation[1]]
            out[i, j] = function(window)
    return out


def _reduce_window_attrs(size, stride, pad, base, dilation) -> dict:
    return {"window": {"size": size, "stride": stride, "pad": pad, "lhs_dilate": base,
                       "rhs_dilate": dilation}}


@pytest.mark.parametrize("size,stride,pad,base,dilation", [
    ((2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    ((3, 2), (1, 2), ((1, 1), (2, 0)), (1, 1), (1, 1)),
    ((2, 3), (2, 1), ((1, 0), (0, 2)), (1, 1), (2, 1)),
    ((2, 2), (1, 1), ((0, 1), (1, 0)), (2, 3), (1, 1)),
])
def test_reduce_window_max_equals_a_naive_loop_over_windows(size, stride, pad, base, dilation):
    x = f32(RNG.normal(size=(5, 6)))
    expected = _naive_reduce_window(x, np.max, -np.inf, size, stride, pad, base, dilation)
    result = single("reduce-window", [x, f32(-np.inf)], type_of(f32(expected)),
                    build=lambda b: {"to_apply": binary_computation(b, "max", "maximum")},
                    reducer="maximum", **_reduce_window_attrs(size, stride, pad, base, dilation))
    np.testing.assert_array_equal(result, expected)


def test_reduce_window_sum_with_base_dilation_equals_a_naive_loop():
    x = f32(RNG.normal(size=(4, 5)))
    window = ((3, 3), (1, 2), ((2, 1), (1, 1)), (2, 2), (1, 2))
    expected = _naive_reduce_window(x, np.sum, 0.0, *window)
    result = single("reduce-window", [x, f32(0)], type_of(f32(expected)),
                    build=lambda b: {"to_apply": binary_computation(b, "add", "add")},
                    reducer="add", **_reduce_window_attrs(*window))
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)


def test_reduce_window_with_a_general_computation_matches_the_recognised_reducer():
    x = f32(RNG.normal(size=(6, 6)))
    attrs = _reduce_window_attrs((3, 3), (2, 1), ((1, 1), (0, 1)), (1, 1), (1, 1))
    known = single("reduce-window", [x, f32(-np.inf)], "f32[3,5]", reducer="maximum",
                   build=lambda b: {"to_apply": binary_computation(b, "max", "maximum")},
                   **attrs)
    general = single("reduce-window", [x, f32(-np.inf)], "f32[3,5]", reducer=None,
                     build=lambda b: {"to_apply": binary_computation(b, "max", "maximum")},
                     **attrs)
    np.testing.assert_array_equal(known, general)


def test_select_and_scatter_routes_each_window_to_its_first_maximum_like_a_loop():
    x = f32(RNG.integers(0, 3, size=(4, 6)))  # ties: the first maximum in the window wins
    size, stride, pad = (3, 3), (1, 2), ((1, 1), (1, 0))
    canvas = np.pad(x.astype(np.float64), [(1, 1), (1, 0)], constant_values=np.nan)
    out_shape = ((canvas.shape[0] - 3) // 1 + 1, (canvas.shape[1] - 3) // 2 + 1)
    source = f32(RNG.normal(size=out_shape))
    expected = np.full(x.shape, 0.5)
    for i in range(out_shape[0]):
        for j in range(out_shape[1]):
            window = canvas[i:i + 3, 2 * j:2 * j + 3]
            best = None
            for r, c in np.ndindex(3, 3):
                if not np.isnan(window[r, c]) and (best is None or window[r, c] > window[best]):
                    best = (r, c)
            expected[i + best[0] - 1, 2 * j + best[1] - 1] += source[i, j]

    def build(b):
        binary_computation(b, "add", "add")
        binary_computation(b, "ge", "compare", direction="GE")
        return {"select": "ge", "scatter": "add"}

    result = single("select-and-scatter", [x, source, f32(0.5)], "f32[4,6]", build=build,
                    window={"size": size, "stride": stride, "pad": pad})
    np.testing.assert_allclose(result, expected, rtol=1e-6)


# -- sort ---------------------------------------------------------------------------------------


def _sort(operands: list, dimension: int, comparator) -> list:
    b = Builder()
    params = [b.param(type_of(x)) for x in operands]
    out = tuple_shape(*map(type_of, operands)) if len(operands) > 1 else type_of(operands[0])
    node = b.add("sort", params, out, dimensions=(dimension,), is_stable=True,
                 to_apply=comparator(b))
    return run(b.build(node), *operands)


def _key_comparator(direction: str, dtype: str = "f32", operands: int = 1, kind=None):
    """Compares operand 0 of the two elements; the other operands only ride along."""

    def build(b: Builder) -> str:
        sub = b.sub("comparator")
        params = [sub.param(f"{dtype if i < 2 else 's32'}[]") for i in range(2 * operands)]
        attrs = {"direction": direction} if kind is None else {"direction": direction,
                                                               "type": kind}
        sub.build(sub.add("compare", params[:2], "pred[]", **attrs))
        return "comparator"

    return build


@pytest.mark.parametrize("dimension", [0, 1])
def test_sort_with_a_less_than_comparator_matches_numpy(dimension):
    x = f32(RNG.normal(size=(37, 5)) if dimension == 0 else RNG.normal(size=(4, 37)))
    (result,) = _sort([x], dimension, _key_comparator("LT"))
    np.testing.assert_array_equal(result, np.sort(x, axis=dimension))


def test_sort_with_a_greater_than_comparator_sorts_descending():
    x = s32(RNG.integers(-50, 50, size=100))
    (result,) = _sort([x], 0, _key_comparator("GT", "s32"))
    np.testing.assert_array_equal(result, np.sort(x)[::-1])


def test_sort_is_stable_and_carries_the_other_operands_along():
    keys = s32(RNG.integers(0, 5, size=(3, 50)))
    positions = s32(np.broadcast_to(np.arange(50), (3, 50)))
    sorted_keys, order = _sort([keys, positions], 1, _key_comparator("LT", "s32", operands=2))
    np.testing.assert_array_equal(order, np.argsort(keys, axis=1, kind="stable"))
    np.testing.assert_array_equal(sorted_keys, np.sort(keys, axis=1))


def test_sort_with_a_totalorder_comparator_puts_nan_last_and_minus_zero_first():
    x = f32([np.nan, 1, -0.0, 0.0, -np.inf, np.nan, -1])
    (result,) = _sort([x], 0, _key_comparator("LT", kind="TOTALORDER"))
    assert result[:5].tolist() == [-np.inf, -1, 0, 0, 1]
    assert np.signbit(result[2]) and not np.signbit(result[3])
    assert np.isnan(result[5:]).all()


def test_topk_returns_the_largest_values_with_the_lower_index_first_on_ties():
    x = f32([[1, 5, 3, 5, 2], [0, -1, np.nan, 4, 4]])
    values, indices = single("topk", [x], tuple_shape("f32[2,3]", "s32[2,3]"), k=3,
                             largest=True)
    assert values[0].tolist() == [5, 5, 3] and indices[0].tolist() == [1, 3, 2]
    assert np.isnan(values[1, 0]) and indices[1].tolist() == [2, 3, 4]
    smallest, where = single("topk", [x[:1]], tuple_shape("f32[1,2]", "s32[1,2]"), k=2,
                             largest=False)
    assert smallest.tolist() == [[1, 2]] and where.tolist() == [[0, 4]]


# -- control flow -------------------------------------------------------------------------------


def test_map_applies_its_computation_to_every_element():
    x, y = f32(RNG.normal(size=(3, 4))), f32(RNG.normal(size=(3, 4)))

    def build(b):
        sub = b.sub("fma")
        p, q = sub.param("f32[]"), sub.param("f32[]")
        two = sub.const(2, "f32")
        sub.build(sub.add("add", (sub.add("multiply", (p, q), "f32[]"), two), "f32[]"))
        return {"to_apply": "fma"}

    result = single("map", [x, y], "f32[3,4]", build=build, dimensions=(0, 1))
    np.testing.assert_allclose(result, x * y + 2, rtol=1e-6)


def test_map_with_a_computation_that_is_not_elementwise_runs_per_element():
    x = f32([1, 2, 3])

    def build(b):
        sub = b.sub("triple")
        p = sub.param("f32[]")
        spread = sub.add("broadcast", (p,), "f32[3]", dimensions=())
        binary_computation(b, "add", "add")
        sub.build(sub.add("reduce", (spread, sub.const(0, "f32")), "f32[]", dimensions=(0,),
                          to_apply="add", reducer="add"))
        return {"to_apply": "triple"}

    assert single("map", [x], "f32[3]", build=build, dimensions=(0,)).tolist() == [3, 6, 9]


def _counting_loop(b: Builder, limit: int) -> str:
    """while (i < limit) { acc += i; i += 1 } over the state (i, acc)."""
    state = tuple_shape("s32[]", "s32[]")
    condition = b.sub("condition")
    p = condition.param(state)
    i = condition.add("get-tuple-element", (p,), "s32[]", index=0)
    condition.build(condition.add("compare", (i, condition.const(limit, "s32")), "pred[]",
                                  direction="LT"))
    body = b.sub("body")
    p = body.param(state)
    i = body.add("get-tuple-element", (p,), "s32[]", index=0)
    acc = body.add("get-tuple-element", (p,), "s32[]", index=1)
    body.build(body.add("tuple", (body.add("add", (i, body.const(1, "s32")), "s32[]"),
                                  body.add("add", (acc, i), "s32[]")), state))
    init = b.add("tuple", (b.const(0, "s32"), b.const(0, "s32")), state)
    return b.add("while", (init,), state, condition="condition", body="body")


def test_while_loop_runs_its_body_until_the_condition_fails():
    b = Builder()
    graph = b.build(_counting_loop(b, 10))
    assert [int(v) for v in run(graph)] == [10, 45]


def test_while_loop_over_the_iteration_limit_raises_a_limit_error():
    b = Builder()
    graph = b.build(_counting_loop(b, 100))
    assert [int(v) for v in evaluate(graph, [], InterpreterOptions(100))] == [100, 4950]
    with pytest.raises(LimitError, match="99 iterations"):
        evaluate(graph, [], InterpreterOptions(max_while_iterations=99))


def _conditional(selector_type: str, branches: list[str]) -> Graph:
    b = Builder()
    selector = b.param(selector_type)
    operands = []
    for k, op in enumerate(branches):
        sub = b.sub(f"branch{k}")
        sub.build(sub.add(op, (sub.param("f32[2]"),), "f32[2]"))
        operands.append(b.param("f32[2]"))
    return b.build(b.add("conditional", (selector, *operands), "f32[2]",
                         branch_computations=tuple(f"branch{k}" for k in range(len(branches)))))


def test_conditional_on_a_pred_runs_branch_zero_when_true():
    graph = _conditional("pred[]", ["negate", "abs"])
    x = f32([-1, 2])
    assert run(graph, np.array(True), x, x)[0].tolist() == [1, -2]
    assert run(graph, np.array(False), x, x)[0].tolist() == [1, 2]


def test_conditional_with_an_out_of_range_index_runs_the_last_branch():
    graph = _conditional("s32[]", ["negate", "abs", "floor"])
    x = f32([-1.5, 2.5])
    assert run(graph, s32(1), x, x, x)[0].tolist() == [1.5, 2.5]
    assert run(graph, s32(7), x, x, x)[0].tolist() == [-2, 2]
    assert run(graph, s32(-1), x, x, x)[0].tolist() == [-2, 2]


# -- tuples, tokens, plumbing -------------------------------------------------------------------


def test_outputs_are_flattened_through_nested_tuples_and_tuple_values_kept_whole():
    b = Builder()
    x, y = b.param("f32[2]"), b.param("s32[]")
    inner = b.add("tuple", (x, y), tuple_shape("f32[2]", "s32[]"))
    second = b.add("get-tuple-element", (inner,), "s32[]", index=1)
    root = b.add("tuple", (inner, second), TupleShape((tuple_shape("f32[2]", "s32[]"),
                                                       shape("s32[]"))))
    graph = b.build(root)
    outputs = run(graph, f32([1, 2]), s32(3))
    assert [o.tolist() for o in outputs] == [[1, 2], 3, 3]
    values = evaluate_all(graph, [f32([1, 2]), s32(3)])
    assert isinstance(values[inner], tuple) and values[second].item() == 3


def test_a_tuple_shaped_root_that_is_not_a_tuple_op_is_flattened_too():
    b = Builder()
    graph = b.build(_counting_loop(b, 3))
    assert len(run(graph)) == 2


def test_barriers_tokens_and_device_ids_evaluate_to_their_single_device_values():
    b = Builder()
    x = b.param("f32[3]")
    token = b.add("after-all", (), "token[]")
    barrier = b.add("opt-barrier", (b.add("tuple", (x, token), tuple_shape("f32[3]",
                                                                           "token[]")),),
                    tuple_shape("f32[3]", "token[]"))
    kept = b.add("get-tuple-element", (barrier,), "f32[3]", index=0)
    size = b.add("get-dimension-size", (kept,), "s32[]", dimensions=(0,))
    partition = b.add("partition-id", (), "u32[]")
    copy = b.add("copy", (kept,), "f32[3]")
    graph = b.build(b.add("tuple", (copy, size, partition),
                          tuple_shape("f32[3]", "s32[]", "u32[]")))
    values = evaluate_all(graph, [f32([1, 2, 3])])
    assert values[token] is None
    copied, length, device = evaluate(graph, [f32([1, 2, 3])])
    assert copied.tolist() == [1, 2, 3] and length.item() == 3 and device.dtype == np.uint32
    assert device.item() == 0


def test_collectives_on_one_device_are_copies():
    x = f32([1, 2])
    assert single("all-reduce", [x], "f32[2]").tolist() == [1, 2]
    assert single("all-to-all", [x], "f32[2]").tolist() == [1, 2]
    start = single("all-gather-start", [x], tuple_shape("f32[2]", "f32[2]"))
    assert [s.tolist() for s in start] == [[1, 2], [1, 2]]


def test_a_collective_whose_result_shape_differs_needs_several_devices():
    with pytest.raises(UnsupportedError, match="all-gather"):
        single("all-gather", [f32([1, 2])], "f32[4]")


def test_async_start_runs_its_called_computation_and_done_returns_the_result():
    b = Builder()
    x = b.param("f32[2]")
    sub = b.sub("wrapped")
    sub.build(sub.add("negate", (sub.param("f32[2]"),), "f32[2]"))
    state = TupleShape((tuple_shape("f32[2]"), shape("f32[2]"), shape("s32[]")))
    start = b.add("async-start", (x,), state, calls="wrapped")
    done = b.add("async-done", (b.add("async-update", (start,), state),), "f32[2]")
    assert run(b.build(done), f32([1, -2]))[0].tolist() == [-1, 2]


# -- library calls ------------------------------------------------------------------------------


def test_fft_matches_the_dft_definition_and_irfft_inverts_rfft():
    x = (RNG.normal(size=(2, 8)) + 1j * RNG.normal(size=(2, 8))).astype(np.complex64)
    k = np.arange(8)
    dft = np.exp(-2j * np.pi * np.outer(k, k) / 8)
    result = single("fft", [x], "c64[2,8]", fft_type="FFT", fft_length=(8,))
    np.testing.assert_allclose(result, x.astype(np.complex128) @ dft.T, rtol=1e-5, atol=1e-5)
    real = f32(RNG.normal(size=8))
    half = single("fft", [real], "c64[5]", fft_type="RFFT", fft_length=(8,))
    np.testing.assert_allclose(half, (dft @ real)[:5], rtol=1e-5, atol=1e-5)
    back = single("fft", [half], "f32[8]", fft_type="IRFFT", fft_length=(8,))
    np.testing.assert_allclose(back, real, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("left_side", ["true", "false"])
@pytest.mark.parametrize("lower", ["true", "false"])
@pytest.mark.parametrize("transpose_a", ["NO_TRANSPOSE", "TRANSPOSE"])
def test_triangular_solve_solves_the_system_using_only_one_triangle(left_side, lower,
                                                                    transpose_a):
    a = RNG.normal(size=(3, 3)) + 4 * np.eye(3)
    b_matrix = RNG.normal(size=(3, 2) if left_side == "true" else (2, 3))
    b = Builder()
    node = Node("solve", "triangular-solve", (b.param("f64[3,3]"), b.param(type_of(b_matrix))),
                shape(type_of(b_matrix)),
                extra={"left_side": left_side, "lower": lower, "unit_diagonal": "false",
                       "transpose_a": transpose_a})
    b.graph.add(node)
    x = run(b.build("solve"), a, b_matrix)[0]
    triangle = np.tril(a) if lower == "true" else np.triu(a)
    op_a = triangle.T if transpose_a == "TRANSPOSE" else triangle
    product = op_a @ x if left_side == "true" else x @ op_a
    np.testing.assert_allclose(product, b_matrix, rtol=1e-10, atol=1e-10)


def test_cholesky_factor_reconstructs_the_matrix_and_fails_with_nan():
    m = RNG.normal(size=(3, 3))
    a = m @ m.T + 3 * np.eye(3)
    garbage_above = np.tril(a) + np.triu(np.full((3, 3), 99.0), k=1)
    b = Builder()
    b.graph.add(Node("chol", "cholesky", (b.param("f64[3,3]"),), shape("f64[3,3]"),
                     extra={"lower": "true"}))
    graph = b.build("chol")
    factor = run(graph, garbage_above)[0]
    np.testing.assert_allclose(factor @ factor.T, a, rtol=1e-10)
    assert np.all(np.triu(factor, k=1) == 0)
    assert np.isnan(run(graph, -np.eye(3))[0]).all()


def _batch_norm_forward(x, scale, offset, epsilon):
    mean = x.mean(axis=(0, 2), keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=(0, 2), keepdims=True)
    normalised = (x - mean) / np.sqrt(variance + epsilon)
    return normalised * scale[None, :, None] + offset[None, :, None]


def test_batch_norm_training_normalises_each_feature_and_returns_its_statistics():
    x = f32(RNG.normal(2, 3, size=(4, 3, 5)))
    scale, offset = f32([1, 2, 0.5]), f32([0, 1, -1])
    output, mean, variance = single("batch-norm-training", [x, scale, offset],
                                    tuple_shape("f32[4,3,5]", "f32[3]", "f32[3]"),
                                    epsilon=1e-3, feature_index=1)
    np.testing.assert_allclose(mean, x.mean(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(variance, x.var(axis=(0, 2)), rtol=1e-4)
    np.testing.assert_allclose(output, _batch_norm_forward(x.astype(np.float64), scale, offset,
                                                           1e-3), rtol=1e-4, atol=1e-4)


def test_batch_norm_inference_uses_the_given_statistics():
    x = f32(RNG.normal(size=(2, 3, 2)))
    scale, offset = f32([1, 2, 3]), f32([0, 1, 2])
    mean, variance = f32([0, 1, -1]), f32([1, 4, 0.25])
    result = single("batch-norm-inference", [x, scale, offset, mean, variance], "f32[2,3,2]",
                    epsilon=0.0, feature_index=1)
    per_feature = [(x[:, f] - mean[f]) / math.sqrt(variance[f]) * scale[f] + offset[f]
                   for f in range(3)]
    np.testing.assert_allclose(result, np.stack(per_feature, axis=1), rtol=1e-6)


def test_batch_norm_grad_matches_finite_differences():
    x = RNG.normal(size=(3, 2, 2))
    scale, offset, upstream = RNG.normal(size=2), RNG.normal(size=2), RNG.normal(size=(3, 2, 2))
    epsilon = 1e-2

    def loss(x_, scale_, offset_):
        return np.sum(upstream * _batch_norm_forward(x_, scale_, offset_, epsilon))

    mean, variance = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    d_x, d_scale, d_offset = single(
        "batch-norm-grad", [x, scale, mean, variance, upstream],
        tuple_shape("f64[3,2,2]", "f64[2]", "f64[2]"), epsilon=epsilon, feature_index=1)
    step = 1e-6
    for index in np.ndindex(x.shape):
        bump = np.zeros_like(x)
        bump[index] = step
        numeric = (loss(x + bump, scale, offset) - loss(x - bump, scale, offset)) / (2 * step)
        assert d_x[index] == pytest.approx(numeric, rel=1e-5, abs=1e-7)
    for f in range(2):
        bump = np.eye(2)[f] * step
        assert d_scale[f] == pytest.approx(
            (loss(x, scale + bump, offset) - loss(x, scale - bump, offset)) / (2 * step), rel=1e-5)
        assert d_offset[f] == pytest.approx(
            (loss(x, scale, offset + bump) - loss(x, scale, offset - bump)) / (2 * step), rel=1e-5)


def test_dynamic_reshape_to_the_static_sizes_is_a_reshape():
    x = f32(np.arange(6))
    result = single("dynamic-reshape", [x, s32(2), s32(3)], "f32[2,3]")
    assert result.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(UnsupportedError, match="dynamic-reshape"):
        single("dynamic-reshape", [x, s32(1), s32(3)], "f32[2,3]")


def test_identity_custom_calls_forward_and_unknown_targets_are_unsupported():
    x = f32([1, 2])
    assert single("custom-call", [x], "f32[2]", custom_call_target="Sharding").tolist() == [1, 2]
    with pytest.raises(UnsupportedError, match=re.escape("__cublas$gemm")):
        single("custom-call", [x, x], "f32[2]", custom_call_target="__cublas$gemm")


# -- errors -------------------------------------------------------------------------------------


def _two_parameter_graph() -> Graph:
    b = Builder()
    x, y = b.param("f32[2]", name="x"), b.param("f32[4,8]", name="y")
    reduced = b.add("reduce", (y, b.const(0, "f32")), "f32[4]", dimensions=(1,),
                    to_apply=binary_computation(b, "add", "add"), reducer="add")
    return b.build(b.add("tuple", (x, reduced), tuple_shape("f32[2]", "f32[4]")))


def test_a_wrong_input_shape_is_an_input_error_naming_the_parameter():
    graph = _two_parameter_graph()
    with pytest.raises(InputError) as error:
        evaluate(graph, [f32([1, 2]), np.zeros((3, 8))])
    assert "arg1 (parameter 'y'): expected f32[4,8], got float64 (3,8)" in str(error.value)
    assert "node 'y'" in str(error.value)


def test_an_unsafe_dtype_or_a_wrong_input_count_is_an_input_error():
    graph = _two_parameter_graph()
    with pytest.raises(InputError, match=r"arg0 \(parameter 'x'\): expected f32\[2\], got float64"):
        evaluate(graph, [np.array([1.0, 2.0]), f32(np.zeros((4, 8)))])
    with pytest.raises(InputError, match="expected 2 inputs"):
        evaluate(graph, [f32([1, 2])])


def test_an_input_of_a_safely_castable_dtype_is_accepted():
    graph = _two_parameter_graph()
    x, total = evaluate(graph, [np.array([1, 2], np.int16), f32(np.ones((4, 8)))])
    assert x.dtype == np.float32 and total.tolist() == [8, 8, 8, 8]


def test_a_bf16_input_read_back_from_an_npz_as_raw_records_is_taken_as_bf16(tmp_path):
    b = Builder()
    x = b.param("bf16[3]", name="x")
    graph = b.build(b.add("add", (x, x), "bf16[3]"))
    values = np.array([1.5, -2.0, 0.0078125], ml_dtypes.bfloat16)
    np.savez(tmp_path / "inputs.npz", arg0=values)
    stored = np.load(tmp_path / "inputs.npz")["arg0"]
    assert stored.dtype == np.dtype("V2")   # what NumPy gives back for an ml_dtypes array
    (doubled,) = evaluate(graph, [stored])
    assert doubled.dtype == ml_dtypes.bfloat16 and doubled.tolist() == [3.0, -4.0, 0.015625]
    with pytest.raises(InputError, match="expected bf16"):
        evaluate(graph, [np.zeros(3, np.dtype("V4"))])


def test_an_op_without_a_reference_value_raises_unsupported_error_naming_it():
    b = Builder()
    graph = b.build(b.add("rng", (b.const(0, "f32"), b.const(1, "f32")), "f32[3]",
                          distribution="rng_uniform"))
    with pytest.raises(UnsupportedError, match="cannot evaluate rng"):
        run(graph)


def test_an_elided_constant_raises_unsupported_error():
    b = Builder()
    graph = b.build(b.add("constant", (), "f32[1000]", name="weights", value=None))
    with pytest.raises(UnsupportedError, match="constant elided in the dump"):
        run(graph)


def test_a_node_whose_value_contradicts_its_declared_shape_is_an_input_error():
    with pytest.raises(InputError, match=r"produces f32\[2\] but the node declares f32\[3\]"):
        single("add", [f32([1, 2]), f32([3, 4])], "f32[3]")
