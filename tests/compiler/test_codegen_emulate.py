"""`codegen --emulate` checks every kernel on its own (compiler/stages/codegen.emulate): made-up
values of its inputs (compiler/kernels/inputs.kernel_inputs), the interpreter on the kernel's
sub-graph only. A dump with elided constants (`constant({...})`) or with an op the interpreter
cannot evaluate outside the kernels is checked kernel by kernel instead of aborting; a kernel
that would need an elided constant's value says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from compiler.importers.hlo_text import import_hlo
from compiler.kernels.inputs import kernel_inputs, random_inputs

ROOT = Path(__file__).resolve().parents[2]
STRATEGIES = ("unfused", "xla", "stitch")

# `offsets` becomes the start of a dynamic slice through a convert; `table` is data only.
ELIDED = """HloModule elided

add_f32 {
  l = f32[] parameter(0)
  r = f32[] parameter(1)
  ROOT s = f32[] add(l, r)
}

ENTRY e {
  x = f32[64,16] parameter(0)
  i = s32[] parameter(1)
  offsets = f32[8] constant(OFFSETS)
  picked = f32[1] dynamic-slice(offsets, i), dynamic_slice_sizes={1}
  start_f = f32[] reshape(picked)
  start = s32[] convert(start_f)
  zero = s32[] constant(0)
  rows = f32[4,16] dynamic-slice(x, start, zero), dynamic_slice_sizes={4,16}
  table = f32[64,16] constant({...})
  shifted = f32[64,16] add(x, table)
  squares = f32[64,16] multiply(shifted, shifted)
  logs = f32[64,16] log(table)
  both = f32[64,16] add(squares, logs)
  init = f32[] constant(0)
  sums = f32[64] reduce(both, init), dimensions={1}, to_apply=add_f32
  ROOT out = (f32[4,16], f32[64]) tuple(rows, sums)
}
"""


def codegen_emulate(path: Path) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "compiler", "codegen", str(path), "--strategy",
         ",".join(STRATEGIES), "--emulate", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def generated_kernels(result: dict) -> list[tuple[str, dict]]:
    return [(strategy, kernel) for strategy in STRATEGIES
            for kernel in result["strategies"][strategy]["kernels"]
            if kernel["kind"] != "library"]


# -- the command ------------------------------------------------------------------------------


def test_a_dump_with_elided_constants_is_checked_kernel_by_kernel(tmp_path):
    path = tmp_path / "elided.hlo"
    path.write_text(ELIDED.replace("OFFSETS", "{...}"))
    kernels = generated_kernels(codegen_emulate(path))
    not_checked = []
    for strategy, kernel in kernels:
        assert kernel["codegen_error"] is None, kernel["codegen_error"]
        if kernel["not_checked"] is None:
            assert kernel["max_abs_error"] is not None and kernel["max_abs_error"] < 1e-4
        else:
            # Only `rows` reads `offsets` as an index, and only through the kernel's own ops.
            assert kernel["not_checked"] == (
                "not checked: needs the value of elided constant 'offsets'")
            assert "rows" in kernel["nodes"] and kernel["max_abs_error"] is None
            not_checked.append(strategy)
    # Unfused, `rows` reads its start from memory, made up in range: every kernel is checked.
    assert "unfused" not in not_checked
    assert not_checked, "some plan fuses the index computation into the slice's kernel"


def test_an_index_computed_from_a_constant_the_file_holds_is_taken_from_its_producers(tmp_path):
    path = tmp_path / "offsets_given.hlo"
    path.write_text(ELIDED.replace("OFFSETS", "{0, 9, 60, 3, 4, 70, 6, 7}"))
    for _, kernel in generated_kernels(codegen_emulate(path)):
        assert kernel["not_checked"] is None
        assert kernel["max_abs_error"] is not None and kernel["max_abs_error"] < 1e-4


def test_an_op_the_interpreter_cannot_evaluate_does_not_stop_the_other_kernels(tmp_path):
    path = tmp_path / "custom.hlo"
    path.write_text("""HloModule custom
ENTRY e {
  x = f32[256] parameter(0)
  y = f32[256] custom-call(x), custom_call_target="vendor_magic"
  ROOT z = f32[256] exponential(y)
}
""")
    kernels = generated_kernels(codegen_emulate(path))
    assert kernels
    for _, kernel in kernels:
        assert kernel["not_checked"] is None and kernel["max_abs_error"] < 1e-4


# -- made-up inputs ---------------------------------------------------------------------------


def graph_of(body: str):
    return import_hlo(f"HloModule m\nENTRY e {{\n{body}\n}}\n", "inputs.hlo")


def made_up(graph, computed, seed=0):
    inputs = [name for name in graph.nodes if name not in computed]
    return kernel_inputs(graph, inputs, computed, np.random.default_rng(seed))


def test_indices_read_directly_are_made_up_in_range():
    graph = graph_of("""
  table = f32[10,8] parameter(0)
  ids = s32[200,2] parameter(1)
  rows = f32[200,3,8] gather(table, ids), offset_dims={1,2}, collapsed_slice_dims={},
         start_index_map={0,1}, index_vector_dim=1, slice_sizes={3,8}
  x = f32[32,16] parameter(2)
  r = s32[] parameter(3)
  c = s32[] parameter(4)
  window = f32[5,4] dynamic-slice(x, r, c), dynamic_slice_sizes={5,4}
  patch = f32[2,16] parameter(5)
  u = s32[] parameter(6)
  v = s32[] parameter(7)
  patched = f32[32,16] dynamic-update-slice(x, patch, u, v)
  ROOT t = (f32[200,3,8], f32[5,4], f32[32,16]) tuple(rows, window, patched)
""")
    made = made_up(graph, ["rows", "window", "patched", "t"]).values
    assert made["ids"].dtype == np.int32 and made["ids"].shape == (200, 2)
    # Row starts in [0, 10 - 3], column starts in [0, 8 - 8].
    assert made["ids"][:, 0].min() >= 0 and made["ids"][:, 0].max() == 7
    assert (made["ids"][:, 1] == 0).all()
    for name, highest in (("r", 32 - 5), ("c", 16 - 4), ("u", 32 - 2), ("v", 0)):
        assert 0 <= int(made[name]) <= highest, name


def test_inputs_of_log_sqrt_and_asin_are_made_up_inside_their_domains():
    graph = graph_of("""
  a = f32[4096] parameter(0)
  b = f32[4096] parameter(1)
  c = f32[4096] parameter(2)
  la = f32[4096] log(a)
  sb = f32[4096] sqrt(b)
  rb = f32[4096] rsqrt(b)
  ac = f32[4096] asin(c)
  ROOT t = (f32[4096], f32[4096], f32[4096], f32[4096]) tuple(la, sb, rb, ac)
""")
    made = made_up(graph, ["la", "sb", "rb", "ac", "t"]).values
    assert made["a"].min() > 0 and made["b"].min() > 0
    assert np.abs(made["c"]).max() < 1


def test_an_input_that_becomes_an_index_through_the_kernels_ops_is_not_made_up():
    graph = graph_of("""
  x = f32[32,16] parameter(0)
  f = f32[] parameter(1)
  start = s32[] convert(f)
  zero = s32[] constant(0)
  ROOT window = f32[4,16] dynamic-slice(x, start, zero), dynamic_slice_sizes={4,16}
""")
    made = made_up(graph, ["start", "window"])
    assert made.not_made_up == ["f"]
    assert set(made.values) == {"x", "zero"}


def test_a_constant_keeps_its_value_and_an_elided_one_gets_one_of_its_type():
    graph = graph_of("""
  given = s32[3] constant({4, 5, 6})
  elided = f16[2,3] constant({...})
  ROOT sum = f16[2,3] add(elided, elided)
""")
    made = made_up(graph, ["sum"]).values
    assert made["given"].tolist() == [4, 5, 6]
    assert made["elided"].dtype == np.float16 and made["elided"].shape == (2, 3)


def test_graph_inputs_are_the_same_numbers_as_before():
    graph = graph_of("""
  a = f32[3] parameter(0)
  b = s32[2] parameter(1)
  c = pred[4] parameter(2)
  ROOT t = (f32[3], s32[2], pred[4]) tuple(a, b, c)
""")
    rng = np.random.default_rng(7)
    expected = [rng.standard_normal(3).astype(np.float32), rng.integers(0, 4, size=2),
                rng.random(4) < 0.5]
    for got, want in zip(random_inputs(graph, seed=7), expected):
        np.testing.assert_array_equal(got, want)
