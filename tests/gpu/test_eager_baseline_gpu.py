"""The unfused CuPy baseline on a real device: the eager programs run with CuPy, match the
reference interpreter and are timed end to end. Timings are reported (the GPU report section),
never asserted beyond being positive (DESIGN.md: no timed asserts in tests).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.codegen.check import compare
from compiler.importers.hlo_text import import_hlo
from compiler.ir.interpreter import evaluate_all
from compiler.runtime.eager import eager_program, run_eager, time_eager
from compiler.runtime.gpu import TIMED_RUNS, GpuRunner

DATA = Path(__file__).resolve().parents[1] / "data" / "hlo"
# softmax and layer_norm_fwd first; the others cover matmul (cuBLAS), gather, scatter-add
# (CuPy's ufunc.at) and cupyx's rsqrt.
MODULES = ["softmax", "layer_norm_fwd", "layer_norm_bwd", "attention_block", "cross_entropy",
           "cross_entropy_grad", "adam", "bias_gelu_erf", "lstm_cell"]


@pytest.fixture(scope="module")
def runner() -> GpuRunner:
    return GpuRunner()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("module", MODULES)
def test_the_eager_baseline_on_cupy_matches_the_interpreter_and_is_timed(
        module, runner, gpu_report):
    graph = import_hlo((DATA / f"{module}.hlo").read_text(), f"{module}.hlo")
    archive = np.load(DATA / f"{module}.inputs.npz")
    inputs = [archive[f"arg{i}"] for i in range(len(graph.parameters))]
    program = eager_program(graph)

    outputs = run_eager(program, inputs, runner.cupy)

    names = graph.output_names()
    assert len(outputs) == len(names)
    assert all(isinstance(output, runner.cupy.ndarray) for output in outputs)
    got = {name: runner.cupy.asnumpy(output) for name, output in zip(names, outputs)}
    values = evaluate_all(graph, inputs)
    assert all(got[name].dtype == values[name].dtype for name in names)
    mismatches = compare(graph, got, values)
    assert not mismatches, mismatches[:3]

    timing = time_eager(program, inputs, runner)
    assert timing.runs >= TIMED_RUNS and timing.median_us > 0 and timing.min_us > 0
    gpu_report.append(f"{runner.name}: eager {module}: {len(program.steps)} steps, median "
                      f"{timing.median_us:.1f} us, min {timing.min_us:.1f} us, "
                      f"cv {timing.cv:.3f}")


SPECIAL = """
HloModule cupy_paths
add_f32 {
  l = f32[] parameter(0)
  r = f32[] parameter(1)
  ROOT s = f32[] add(l, r)
}
ENTRY e {
  x = f32[64,32] parameter(0)
  ids = s32[16,1] parameter(1)
  h = f16[64,32] parameter(2)
  logistic = f32[64,32] logistic(x)
  erf = f32[64,32] erf(x)
  rsqrt = f16[64,32] rsqrt(h)
  half = f16[] constant(0.5)
  padded = f16[66,36] pad(h, half), padding=1_1x2_2
  ten = f32[] constant(10)
  shifted = f32[64] reduce(x, ten), dimensions={1}, to_apply=add_f32
  rows = f32[16,32] gather(x, ids), offset_dims={1}, collapsed_slice_dims={0},
         start_index_map={0}, index_vector_dim=1, slice_sizes={1,32}
  summed = f32[64,32] scatter(x, ids, rows), update_window_dims={1},
           inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,
           to_apply=add_f32
  wide = f32[32,32] dot(h, h), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = (f32[64,32], f32[64,32], f16[64,32], f16[66,36], f32[64], f32[16,32], f32[64,32],
            f32[32,32]) tuple(logistic, erf, rsqrt, padded, shifted, rows, summed, wide)
}
"""


def test_the_calls_only_cupy_makes_match_the_interpreter(runner, gpu_report):
    graph = import_hlo(SPECIAL, "cupy_paths.hlo")
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((64, 32)).astype(np.float32),
              rng.integers(-4, 70, size=(16, 1)).astype(np.int32),
              (rng.random((64, 32)) + 0.5).astype(np.float16)]
    program = eager_program(graph)

    outputs = run_eager(program, inputs, runner.cupy)

    names = graph.output_names()
    got = {name: runner.cupy.asnumpy(output) for name, output in zip(names, outputs)}
    values = evaluate_all(graph, inputs)
    assert all(got[name].dtype == values[name].dtype for name in names)
    mismatches = compare(graph, got, values)
    assert not mismatches, mismatches[:3]
    gpu_report.append(f"{runner.name}: eager cupyx calls, pad, gather, scatter-add, f16 dot: "
                      "match the interpreter")
