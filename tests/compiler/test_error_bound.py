"""Tolerances from error bounds (compiler/ir/error_bound.py, compiler/codegen/check.compare).

A value downstream of a reduction or dot may differ from the interpreter's by what the order of
accumulation changes (2 gamma(n) sum|x_i|, Higham ch. 3-4), whatever order the other
implementation used; a value made by elementwise ops alone keeps the tight per-dtype tolerance.
The references here are computed independently: exact sums (math.fsum), sums in explicit other
orders, and the textbook formula written out.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from compiler.codegen.check import compare
from compiler.importers.hlo_text import import_hlo
from compiler.ir.error_bound import TRANSCENDENTAL_ULPS, error_bounds
from compiler.ir.interpreter import evaluate_all

U32 = 2.0 ** -24        # f32's unit roundoff

ADD = """
add_f32 {
  l = f32[] parameter(0)
  r = f32[] parameter(1)
  ROOT s = f32[] add(l, r)
}
max_f32 {
  l = f32[] parameter(0)
  r = f32[] parameter(1)
  ROOT m = f32[] maximum(l, r)
}
"""


def hlo(body: str):
    return import_hlo(f"HloModule m\n{ADD}\nENTRY e {{\n{body}\n}}\n", "bounds.hlo")


def row_sums(rows: int, length: int):
    return hlo(f"""
  x = f32[{rows},{length}] parameter(0)
  zero = f32[] constant(0)
  ROOT total = f32[{rows}] reduce(x, zero), dimensions={{1}}, to_apply=add_f32
""")


def sequential_sum(x: np.ndarray) -> np.ndarray:
    """Row sums in f32, one term after the other, left to right (not NumPy's pairwise order)."""
    return np.add.accumulate(x, axis=1, dtype=np.float32)[:, -1]


def textbook_bound(terms: np.ndarray) -> np.ndarray:
    """2 gamma(n) sum|x_i| per row, with the init value 0 as one more term."""
    n = terms.shape[1] + 1
    return 2 * (n * U32 / (1 - n * U32)) * np.abs(terms.astype(np.float64)).sum(axis=1)


# -- sums in another order --------------------------------------------------------------------


def test_many_same_sign_values_summed_in_two_other_orders_pass_where_a_fixed_rtol_fails():
    graph = row_sums(2, 1 << 21)
    x = np.random.default_rng(5).random((2, 1 << 21)).astype(np.float32)
    values = evaluate_all(graph, [x])
    for other_order in (sequential_sum(x), sequential_sum(x[:, ::-1])):
        difference = np.abs(other_order.astype(np.float64) - values["total"])
        assert (difference > 1e-5 * np.abs(values["total"])).all()   # beyond the old f32 rtol
        assert compare(graph, {"total": other_order}, values) == []


def test_the_bound_of_a_sum_is_the_textbook_one_and_holds_against_the_exact_sum():
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((16, 4096)) * rng.random((16, 1)) * 100).astype(np.float32)
    graph = row_sums(16, 4096)
    values = evaluate_all(graph, [x])
    bound = error_bounds(graph, values, ["total"])["total"]
    np.testing.assert_allclose(bound, textbook_bound(x), rtol=1e-12)
    exact = np.array([math.fsum(row) for row in x.astype(np.float64)])
    for computed in (values["total"], sequential_sum(x), sequential_sum(x[:, ::-1])):
        # Each implementation is within half the bound (gamma(n) sum|x|) of the exact sum.
        assert (np.abs(computed - exact) <= bound / 2).all()


def test_one_element_off_by_a_thousandth_in_a_4096_long_sum_fails_with_where_and_how_much():
    graph = row_sums(8, 4096)
    x = (np.random.default_rng(7).random((8, 4096)) + 1).astype(np.float32)
    values = evaluate_all(graph, [x])
    wrong = values["total"].copy()
    wrong[5] *= np.float32(1 + 1e-3)
    (mismatch,) = compare(graph, {"total": wrong}, values)
    assert (mismatch.node, mismatch.where) == ("total", (5,))
    assert (mismatch.got, mismatch.expected) == (float(wrong[5]), float(values["total"][5]))
    relative_allowance = mismatch.allowed / mismatch.expected
    assert 1e-5 < relative_allowance < 1e-3
    text = str(mismatch)
    assert text.startswith("total[5]: got ") and "allowed" in text


def test_a_value_made_by_elementwise_ops_alone_keeps_the_tight_tolerance():
    graph = hlo("""
  x = f32[64] parameter(0)
  y = f32[64] parameter(1)
  ROOT s = f32[64] multiply(x, y)
""")
    x, y = np.random.default_rng(8).standard_normal((2, 64)).astype(np.float32)
    values = evaluate_all(graph, [x, y])
    assert error_bounds(graph, values, ["s"]) == {"s": None}
    off = values["s"].copy()
    off[3] *= np.float32(1 + 1e-4)
    (mismatch,) = compare(graph, {"s": off}, values)
    assert mismatch.where == (3,)
    assert mismatch.allowed == pytest.approx(1e-6 + 1e-5 * abs(float(values["s"][3])))


def test_a_transcendental_function_may_differ_by_a_few_ulps_and_so_may_what_cancels_after_it():
    """Math libraries round exp their own ways; a sum that cancels after it (a selective scan's
    a * h + b) turns those ulps into many of its own result, which the bound allows, while an
    error in the sum's own arithmetic is still caught."""
    graph = hlo("""
  x = f32[64] parameter(0)
  b = f32[64] parameter(1)
  e = f32[64] exponential(x)
  ROOT s = f32[64] subtract(e, b)
""")
    x = np.random.default_rng(13).standard_normal(64).astype(np.float32)
    b = np.exp(x.astype(np.float64)).astype(np.float32)    # e - b cancels to about an ulp of e
    values = evaluate_all(graph, [x, b])
    bounds = error_bounds(graph, values, ["e", "s"])
    ulps = TRANSCENDENTAL_ULPS * np.spacing(np.float32(1)).astype(np.float64)
    np.testing.assert_allclose(bounds["e"], ulps * np.abs(values["e"].astype(np.float64)))
    np.testing.assert_allclose(bounds["s"], bounds["e"])
    # Another library's exp, two ulps up: the difference is many ulps of the tiny result.
    other = np.nextafter(np.nextafter(values["e"], np.inf), np.inf) - b
    assert compare(graph, {"s": other}, values) == []
    wrong = other.copy()
    wrong[5] += np.float32(16) * ulps * abs(float(values["e"][5]))
    assert [m.where for m in compare(graph, {"s": wrong}, values)] == [(5,)]


# -- propagation through later ops ------------------------------------------------------------


def test_a_dot_in_another_order_and_what_is_computed_from_it_pass():
    graph = hlo("""
  a = f32[8,512] parameter(0)
  b = f32[512,8] parameter(1)
  d = f32[8,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  scale = f32[] constant(0.05)
  s = f32[8,8] broadcast(scale), dimensions={}
  scaled = f32[8,8] multiply(d, s)
  e = f32[8,8] exponential(scaled)
  zero = f32[] constant(0)
  total = f32[8] reduce(e, zero), dimensions={1}, to_apply=add_f32
  ROOT t = (f32[8,8], f32[8]) tuple(e, total)
""")
    rng = np.random.default_rng(9)
    a = rng.standard_normal((8, 512)).astype(np.float32)
    b = rng.standard_normal((512, 8)).astype(np.float32)
    values = evaluate_all(graph, [a, b])
    # The dot's products added last to first, then the later ops as the interpreter does them.
    d = a[:, -1:] * b[-1:, :]
    for k in range(510, -1, -1):
        d = d + a[:, k:k + 1] * b[k:k + 1, :]
    e = np.exp(d * np.float32(0.05))
    total = sequential_sum(e)
    assert compare(graph, {"e": e, "total": total}, values) == []
    wrong = e.copy()
    wrong[2, 3] *= np.float32(1.5)
    assert [m.where for m in compare(graph, {"e": wrong, "total": total}, values)] == [(2, 3)]


def test_a_comparison_near_a_sum_may_go_either_way_but_not_far_from_it():
    graph = hlo("""
  x = f32[2,4096] parameter(0)
  zero = f32[] constant(0)
  total = f32[2] reduce(x, zero), dimensions={1}, to_apply=add_f32
  threshold = f32[2] parameter(1)
  ROOT above = pred[2] compare(total, threshold), direction=GT
""")
    x = (np.random.default_rng(10).random((2, 4096)) + 1).astype(np.float32)
    total = x.astype(np.float64).sum(axis=1)
    # Row 0's threshold is within rounding of its sum, row 1's far below its sum.
    threshold = np.array([total[0], total[1] * 0.9], np.float32)
    values = evaluate_all(graph, [x, threshold])
    flipped = ~values["above"]
    (mismatch,) = compare(graph, {"above": flipped}, values)
    assert mismatch.where == (1,)


def test_a_kernels_inputs_read_from_the_interpreter_carry_no_bound():
    graph = hlo("""
  x = f32[4,1024] parameter(0)
  zero = f32[] constant(0)
  total = f32[4] reduce(x, zero), dimensions={1}, to_apply=add_f32
  ROOT twice = f32[4] add(total, total)
""")
    x = (np.random.default_rng(11).random((4, 1024)) + 1).astype(np.float32)
    values = evaluate_all(graph, [x])
    whole = error_bounds(graph, values, ["twice"])["twice"]
    np.testing.assert_allclose(whole, 2 * textbook_bound(x), rtol=1e-12)
    # A kernel computing only `twice` read `total` from memory: elementwise, tight tolerance.
    assert error_bounds(graph, values, ["twice"], computed=["twice"]) == {"twice": None}


def test_maximum_is_exact_and_carries_the_bounds_of_what_it_picks_from():
    graph = hlo("""
  x = f32[4,256] parameter(0)
  zero = f32[] constant(0)
  total = f32[4] reduce(x, zero), dimensions={1}, to_apply=add_f32
  low = f32[] constant(-inf)
  largest_x = f32[] reduce(x, low), dimensions={0,1}, to_apply=max_f32
  largest_total = f32[] reduce(total, low), dimensions={0}, to_apply=max_f32
  ROOT t = (f32[], f32[]) tuple(largest_x, largest_total)
""")
    x = (np.random.default_rng(12).random((4, 256)) + 1).astype(np.float32)
    values = evaluate_all(graph, [x])
    bounds = error_bounds(graph, values, ["largest_x", "largest_total"])
    assert bounds["largest_x"] is None
    assert bounds["largest_total"] == pytest.approx(textbook_bound(x).max(), rel=1e-12)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply"])
def test_sums_and_products_of_bounded_values_bound_every_corner_of_their_boxes(op):
    """Add, subtract and multiply are bounded in closed form; the bound must cover what the op
    gives at every corner of its operands' uncertainty boxes (and not much more)."""
    graph = hlo(f"""
  x = f32[64,256] parameter(0)
  y = f32[64,256] parameter(1)
  zero = f32[] constant(0)
  sx = f32[64] reduce(x, zero), dimensions={{1}}, to_apply=add_f32
  sy = f32[64] reduce(y, zero), dimensions={{1}}, to_apply=add_f32
  ROOT z = f32[64] {op}(sx, sy)
""")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    y = rng.standard_normal((64, 256)).astype(np.float32) * 100
    values = evaluate_all(graph, [x, y])
    bounds = error_bounds(graph, values, ["sx", "sy", "z"])
    sx, sy = (values[n].astype(np.float64) for n in ("sx", "sy"))
    bx, by = bounds["sx"], bounds["sy"]
    apply = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}[op]
    centre = apply(sx, sy)
    corners = np.max([np.abs(apply(sx + dx, sy + dy) - centre)
                      for dx in (-bx, bx) for dy in (-by, by)], axis=0)
    assert np.all(bounds["z"] >= corners * (1 - 1e-12))
    assert np.all(bounds["z"] <= corners * (1 + 1e-6) + 1e-300)
