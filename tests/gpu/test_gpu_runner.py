"""The GPU runner on a real device: generated kernels of real plans run, match the reference
interpreter and get timed. Timings are reported (the GPU report section), never asserted
(DESIGN.md: no timed asserts in tests), beyond being positive.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.codegen.check import PRELUDE_DIR
from compiler.fusion.explore import explore
from compiler.importers.hlo_text import import_hlo
from compiler.runtime.gpu import TIMED_RUNS, GpuRunner, run_plan
from compiler.stages.codegen import generate
from compiler.target.devices import get_device

DATA = Path(__file__).resolve().parents[1] / "data" / "hlo"
MODULES = ["layer_norm_fwd", "softmax", "layer_norm_bwd", "transformer_step_bf16"]
STRATEGIES = ["cost", "xla"]

ADD = """#include "fx_prelude.cuh"
extern "C" __global__ void add(const float* __restrict__ a, const float* __restrict__ b,
                               float* __restrict__ out) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 4096; i += gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}
"""


@pytest.fixture(scope="module")
def runner() -> GpuRunner:
    return GpuRunner()


def test_a_built_kernel_loads_runs_and_is_timed_after_l2_flushes(runner, gpu_report):
    import cupy

    from compiler.toolchain import build_kernels

    build = build_kernels({"add": ADD}, runner.arch, [str(PRELUDE_DIR)])["add"]
    assert build.ok, build.error
    a = cupy.arange(4096, dtype=cupy.float32)
    b = cupy.full(4096, 0.5, dtype=cupy.float32)
    out = cupy.zeros(4096, dtype=cupy.float32)
    launch = runner.launcher(runner.load("add", build), (8, 1, 1), (128, 1, 1), 0, [a, b, out])
    launch()
    runner.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(out), np.arange(4096, dtype=np.float32) + 0.5)
    timing = runner.time(launch)
    assert timing.runs >= TIMED_RUNS and timing.median_us > 0 and timing.min_us > 0
    assert timing.cv >= 0
    gpu_report.append(f"{runner.name}: add of 4096 f32: median {timing.median_us:.2f} us, "
                      f"min {timing.min_us:.2f} us, cv {timing.cv:.3f}, L2 {runner.l2_bytes} B")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("module", MODULES)
def test_every_generated_kernel_of_the_plan_matches_the_interpreter_and_is_timed(
        module, strategy, runner, gpu_report):
    graph = import_hlo((DATA / f"{module}.hlo").read_text(), f"{module}.hlo")
    archive = np.load(DATA / f"{module}.inputs.npz")
    inputs = [archive[f"arg{i}"] for i in range(len(graph.parameters))]
    plan = explore(graph, "h100", ["xla", "cost"])[strategy]  # cost compares itself with xla
    codes = generate(graph, plan, get_device("h100"), arch=runner.arch)

    run = run_plan(graph, plan, codes, inputs, runner=runner)

    assert [k.kernel for k in run.kernels] == [k.name for k in plan.kernels]
    generated = [(code, result) for code, result in zip(codes, run.kernels)
                 if code.emitted is not None and not code.emitted.library and not code.error]
    assert generated, f"{module}/{strategy}: no generated kernel to run"
    for code, result in generated:
        assert result.not_measured is None, (code.function, result.not_measured)
        assert not result.mismatches, (code.function, result.mismatches[:3])
        assert result.timing.runs >= TIMED_RUNS and result.timing.median_us > 0
        assert result.timing.cv >= 0
    if run.not_measured is None:
        assert run.total_us > 0 and run.end_to_end.median_us > 0
    else:
        assert run.total_us is None and run.end_to_end is None

    end_to_end = (f"end-to-end median {run.end_to_end.median_us:.1f} us "
                  f"(cv {run.end_to_end.cv:.3f})" if run.end_to_end else run.not_measured)
    total = f"{run.total_us:.1f} us" if run.total_us is not None else "none"
    gpu_report.append(f"{module} {strategy} on {run.device}: {len(run.kernels)} kernels, sum of "
                      f"medians {total}, {end_to_end}")
    for result in run.kernels:
        if result.timing:
            gpu_report.append(
                f"  {result.kernel} ({result.kind}): median {result.timing.median_us:.2f} us, "
                f"min {result.timing.min_us:.2f} us, cv {result.timing.cv:.3f}, "
                f"max error {result.max_abs_error:.3g}")
        else:
            gpu_report.append(f"  {result.kernel} ({result.kind}): {result.not_measured}")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("module", ["transformer_step_bf16", "ops_gather_scatter"])
def test_library_dots_and_scatters_run_through_torch_and_match_the_interpreter(
        module, runner, gpu_report):
    pytest.importorskip("torch")
    graph = import_hlo((DATA / f"{module}.hlo").read_text(), f"{module}.hlo")
    archive = np.load(DATA / f"{module}.inputs.npz")
    inputs = [archive[f"arg{i}"] for i in range(len(graph.parameters))]
    plan = explore(graph, "h100", ["unfused"])["unfused"]
    codes = generate(graph, plan, get_device("h100"), arch=runner.arch)

    run = run_plan(graph, plan, codes, inputs, runner=runner, end_to_end=False)

    library = [(kernel, result) for kernel, result in zip(plan.kernels, run.kernels)
               if kernel.kind == "library"]
    ops = {graph.nodes[kernel.nodes[0]].op for kernel, _ in library}
    assert ops & {"dot", "scatter"}, f"{module}: no library dot or scatter"
    for kernel, result in library:
        node = graph.nodes[kernel.nodes[0]]
        if node.op == "scatter" and (len(node.operands) != 3 or node.attrs.get("reducer")
                                     not in ("add", "maximum", "minimum", "multiply")):
            assert "scatter" in (result.not_measured or ""), result.not_measured
            continue
        if node.op not in ("dot", "scatter"):
            continue
        assert result.not_measured is None, (kernel.name, node.op, result.not_measured)
        assert not result.mismatches, (kernel.name, result.mismatches[:3])
        assert result.timing.median_us > 0
        gpu_report.append(f"{module} {kernel.name} ({node.op}, "
                          f"{node.array_shape.dtype.name}{list(node.array_shape.dims)}): "
                          f"median {result.timing.median_us:.2f} us, "
                          f"max error {result.max_abs_error:.3g}")
