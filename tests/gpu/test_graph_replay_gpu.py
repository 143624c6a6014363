"""CUDA graph replays and the on-device check on a real GPU (issue 38, "whole steps on a fair
clock"): a plan captured once and replayed computes what its stream launches compute; a
capture that fails says why and leaves the runner usable; library calls are replayed; CuPy's
on-device verdict is NumPy's on the same bytes. Timings are reported, never asserted beyond
being positive (DESIGN.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.codegen.check import PRELUDE_DIR, to_memory
from compiler.fusion.explore import explore
from compiler.importers.hlo_text import import_hlo
from compiler.ir.interpreter import evaluate_all
from compiler.runtime.device_check import check_outputs
from compiler.runtime.gpu import CaptureFailed, GpuRunner, replay_timing, run_plan
from compiler.stages.codegen import generate
from compiler.target.devices import get_device

DATA = Path(__file__).resolve().parents[1] / "data" / "hlo"
SCALE = """#include "fx_prelude.cuh"
extern "C" __global__ void scale(const float* __restrict__ a, float* __restrict__ out) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 4096; i += gridDim.x * blockDim.x)
        out[i] = 2.0f * a[i] + 1.0f;
}
"""


@pytest.fixture(scope="module")
def runner() -> GpuRunner:
    return GpuRunner()


def module_plan(runner, module: str, strategy: str):
    graph = import_hlo((DATA / f"{module}.hlo").read_text(), f"{module}.hlo")
    archive = np.load(DATA / f"{module}.inputs.npz")
    inputs = [archive[f"arg{i}"] for i in range(len(graph.parameters))]
    plan = explore(graph, "h100", ["xla", strategy])[strategy]
    return graph, plan, generate(graph, plan, get_device("h100"), arch=runner.arch), inputs


def scale_launch(runner):
    import cupy

    from compiler.toolchain import build_kernels

    build = build_kernels({"scale": SCALE}, runner.arch, [str(PRELUDE_DIR)])["scale"]
    assert build.ok, build.error
    a = cupy.arange(4096, dtype=cupy.float32)
    out = cupy.zeros(4096, dtype=cupy.float32)
    return runner.launcher(runner.load("scale", build), (8, 1, 1), (128, 1, 1), 0, [a, out]), out


def test_a_captured_graph_replays_the_launch_and_is_timed(runner, gpu_report):
    launch, out = scale_launch(runner)
    graph = runner.capture(launch)
    assert not out.any()          # captured, not run
    graph.launch(runner.stream)
    runner.synchronize()
    np.testing.assert_array_equal(out.get(), 2 * np.arange(4096, dtype=np.float32) + 1)
    timing = runner.time_graph(launch)
    assert timing.median_us > 0
    gpu_report.append(f"{runner.name}: scale of 4096 f32 replayed as a graph: median "
                      f"{timing.median_us:.2f} us (on the stream "
                      f"{runner.time(launch).median_us:.2f} us)")


def test_a_launch_that_synchronises_fails_to_capture_and_leaves_the_stream_usable(runner):
    launch, out = scale_launch(runner)

    def synchronising():
        launch()
        out.get()                 # a device-to-host copy waits for the stream: not capturable

    with pytest.raises(CaptureFailed):
        runner.capture(synchronising)
    assert not runner.stream.is_capturing()
    timing, why = replay_timing(runner, synchronising)
    assert timing is None and why.startswith("not measured as a CUDA graph replay")
    assert runner.time(launch).median_us > 0


@pytest.mark.timeout(600)
@pytest.mark.parametrize("module", ["layer_norm_fwd", "softmax", "layer_norm_bwd"])
def test_plans_of_generated_kernels_are_replayed_as_one_graph(module, runner, gpu_report):
    graph, plan, codes, inputs = module_plan(runner, module, "cost")
    run = run_plan(graph, plan, codes, inputs, runner=runner)
    assert run.not_measured is None, run.not_measured
    assert run.graph_replay is not None, run.graph_not_measured
    assert run.graph_replay.median_us > 0 and run.end_to_end.median_us > 0
    assert not run.mismatched, [k.mismatches[:2] for k in run.mismatched]
    gpu_report.append(f"{module} cost ({len(run.kernels)} kernels): sum alone "
                      f"{run.total_us:.1f} us, back to back {run.end_to_end.median_us:.1f} us, "
                      f"graph replay {run.graph_replay.median_us:.1f} us")


@pytest.mark.timeout(600)
def test_library_calls_are_replayed_alone_and_in_the_plans_graph(runner, gpu_report):
    pytest.importorskip("torch")
    graph, plan, codes, inputs = module_plan(runner, "transformer_step_bf16", "cost")
    run = run_plan(graph, plan, codes, inputs, runner=runner)
    library = [k for k in run.kernels if k.kind == "library" and k.timing is not None]
    assert library, "no library call ran"
    for kernel in library:
        assert kernel.replay is not None or kernel.replay_not_measured, kernel.kernel
        assert not kernel.mismatches, (kernel.kernel, kernel.mismatches[:2])
        stream = kernel.timing.median_us
        gpu_report.append(
            f"  {kernel.kernel}: on the stream {stream:.2f} us, "
            + (f"replayed {kernel.replay.median_us:.2f} us" if kernel.replay
               else kernel.replay_not_measured))
    whole = (f"graph replay {run.graph_replay.median_us:.1f} us" if run.graph_replay
             else run.graph_not_measured)
    stream = f"{run.end_to_end.median_us:.1f} us" if run.end_to_end else run.not_measured
    gpu_report.append(f"transformer_step_bf16 cost: back to back {stream}, {whole}")


def test_the_on_device_verdict_is_numpys_on_the_same_bytes(runner):
    import cupy

    graph = import_hlo((DATA / "softmax.hlo").read_text(), "softmax.hlo")
    archive = np.load(DATA / "softmax.inputs.npz")
    values = evaluate_all(graph, [archive[f"arg{i}"] for i in range(len(graph.parameters))])
    output = graph.output_names()[0]
    shape = graph.nodes[output].array_shape
    expected = to_memory(np.asarray(values[output]).astype(shape.dtype.numpy),
                         shape.minor_to_major)
    got = expected.copy()
    got[::97] += np.float32(1e-3)
    got[5] = np.nan
    host = check_outputs(np, graph, {output: got.view(np.uint8)},
                         {output: expected.view(np.uint8)}, values)
    device = check_outputs(cupy, graph, {output: cupy.asarray(got.view(np.uint8))},
                           {output: cupy.asarray(expected.view(np.uint8))}, values)
    assert repr(device) == repr(host) and host[1]
