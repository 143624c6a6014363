"""compiler.runtime.device_check with NumPy standing in for CuPy: the GPU runner's on-device
check gives the verdict of the emulator's host check (compiler.codegen.check.compare), element
for element, on buffers laid out as the runner holds them (raw bytes, the graph's layouts).

The reference is `compare` itself, on the same values in logical order: the device check
must find the same outputs beyond tolerance, at the same element, with the same got, expected
and allowed values, and the same largest difference.
"""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

from compiler.codegen.check import compare, max_abs_error, to_memory
from compiler.importers.hlo_text import import_hlo
from compiler.ir.interpreter import evaluate_all
from compiler.runtime.device_check import as_float64, check_outputs, device_checkable

# A column-major output (layout {0,1}) downstream of a reduction (so it has an accumulation
# bound), a bf16 output and an f16 one, an s32 and a pred output.
HLO = """
HloModule device_check
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  a = f32[6,40]{1,0} parameter(0)
  zero = f32[] constant(0)
  total = f32[6]{0} reduce(a, zero), dimensions={1}, to_apply=add
  spread = f32[6,5]{0,1} broadcast(total), dimensions={0}
  scaled = f32[6,40]{0,1} multiply(a, a)
  narrow = bf16[6,40]{1,0} convert(a)
  half = f16[6,40]{1,0} convert(a)
  whole = s32[6,40]{1,0} convert(a)
  positive = pred[6,40]{1,0} compare(a, scaled), direction=LT
  ROOT out = (f32[6,5]{0,1}, f32[6,40]{0,1}, bf16[6,40]{1,0}, f16[6,40]{1,0}, s32[6,40]{1,0},
              pred[6,40]{1,0}) tuple(spread, scaled, narrow, half, whole, positive)
}
"""
OUTPUTS = ["spread", "scaled", "narrow", "half", "whole", "positive"]


@pytest.fixture(scope="module")
def case():
    graph = import_hlo(HLO, "device_check.hlo")
    rng = np.random.default_rng(7)
    values = evaluate_all(graph, [rng.standard_normal((6, 40)).astype(np.float32) * 4])
    return graph, values


def raw(graph, name: str, value) -> np.ndarray:
    """A value as the GPU runner holds it: its bytes in the node's memory layout."""
    shape = graph.nodes[name].array_shape
    value = np.asarray(value).astype(shape.dtype.numpy)
    return to_memory(value, shape.minor_to_major).view(np.uint8)


def both_checks(graph, values, got: dict):
    """(device check's (largest, mismatches), host reference's (largest, mismatches))."""
    on_device = check_outputs(np, graph, {n: raw(graph, n, v) for n, v in got.items()},
                              {n: raw(graph, n, values[n]) for n in got}, values)
    host = compare(graph, got, values)
    largest = max(max_abs_error(v, values[n]) for n, v in got.items())
    return on_device, (largest, host)


def test_outputs_equal_to_the_interpreter_pass_with_no_difference(case):
    graph, values = case
    (largest, mismatches), _ = both_checks(graph, values, {n: values[n] for n in OUTPUTS})
    assert largest == 0.0 and mismatches == []


def test_infinities_equal_to_the_interpreters_are_no_difference_and_warn_of_nothing():
    # lgamma at 0 and -1 is +inf, on the emulator as in the interpreter: inf - inf is NaN,
    # which must neither count as a difference nor print NumPy's RuntimeWarning to the user.
    expected = np.array([np.inf, -np.inf, 1.0, np.nan])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert max_abs_error(expected.copy(), expected) == 0.0
        opposite = max_abs_error(np.array([np.inf, np.inf, 1.0, np.nan]), expected)
        assert opposite >= np.finfo(np.float64).max


def test_differences_within_tolerance_and_beyond_it_get_the_host_checks_verdict(case):
    graph, values = case
    got = {n: np.array(values[n], copy=True) for n in OUTPUTS}
    # Beyond f32's rtol alone, within it plus the accumulation bound of a 40-term f32 sum.
    got["spread"] = got["spread"] * np.float32(1 + 1.5e-5)
    assert (np.abs(got["spread"] - values["spread"]) > 1e-5 * np.abs(values["spread"])).all()
    got["scaled"][4, 17] += 1.0                             # beyond tolerance
    got["narrow"][2, 3] = np.nan                            # a NaN where a number is due
    got["half"][5, 39] = got["half"][5, 39] + np.float16(2)  # beyond f16's one ulp
    got["whole"][0, 1] += 1                                 # integers compare exactly
    (largest, mismatches), (host_largest, host) = both_checks(graph, values, got)

    assert {m.node for m in host} == {"scaled", "narrow", "half", "whole"}
    # repr: a NaN got is the same NaN on both sides, which == would deny.
    assert sorted(map(repr, mismatches)) == sorted(map(repr, host))
    assert largest == host_largest


def test_the_worst_element_is_named_by_its_logical_index_in_a_column_major_buffer(case):
    graph, values = case
    got = {"scaled": np.array(values["scaled"], copy=True)}
    got["scaled"][1, 30] += 3.0
    got["scaled"][4, 2] += 0.5
    (_, mismatches), (_, host) = both_checks(graph, values, got)
    assert [m.where for m in mismatches] == [m.where for m in host] == [(1, 30)]
    assert mismatches[0].got == pytest.approx(values["scaled"][1, 30] + 3.0)


def test_nan_against_nan_agrees_and_an_infinite_allowance_passes_anything(case):
    graph, values = case
    expected = np.array(values["scaled"], copy=True)
    expected[0, 0] = np.nan
    got = np.array(expected, copy=True)
    largest, mismatches = check_outputs(np, graph, {"scaled": raw(graph, "scaled", got)},
                                        {"scaled": raw(graph, "scaled", expected)},
                                        {**values, "scaled": expected})
    assert (largest, mismatches) == (0.0, [])


def test_bf16_bits_read_as_the_float64_of_the_same_value():
    from compiler.ir.dtypes import dtype

    numbers = np.array([1.0, -2.5, 3.140625, 1e-30, np.inf, -np.inf], ml_dtypes.bfloat16)
    read = as_float64(np, numbers.view(np.uint8), dtype("bf16"))
    np.testing.assert_array_equal(read, numbers.astype(np.float64))
    assert device_checkable(dtype("bf16")) and device_checkable(dtype("pred"))
    assert not device_checkable(dtype("c64"))
