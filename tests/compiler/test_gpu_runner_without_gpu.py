"""Without a GPU the runner says why and returns no numbers (DESIGN.md, GPU policy).

These run on CI and the development machines, which have no GPU; on a GPU worker they are
skipped and tests/gpu/ covers the runner instead.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.runtime.gpu import (GpuRunner, GpuUnavailable, KernelRun, PlanRun, Timing,
                                  gpu_available, run_plan)

DATA = Path(__file__).resolve().parents[1] / "data" / "hlo"


@pytest.fixture(scope="module")
def no_gpu_reason() -> str:
    available, reason = gpu_available()
    if available:
        pytest.skip(f"a GPU is present ({reason}); tests/gpu/ runs the runner on it")
    return reason


def test_gpu_available_says_why_there_is_no_gpu(no_gpu_reason):
    assert no_gpu_reason.startswith(("no GPU", "no CUDA device", "CUDA device"))
    assert gpu_available(device_index=3) == (False, no_gpu_reason)


def test_the_runner_refuses_to_start_with_the_reason(no_gpu_reason):
    with pytest.raises(GpuUnavailable) as raised:
        GpuRunner()
    assert str(raised.value) == no_gpu_reason


def test_run_plan_raises_with_the_reason_instead_of_returning_numbers(no_gpu_reason):
    from compiler.fusion.explore import explore
    from compiler.importers.hlo_text import import_hlo

    graph = import_hlo((DATA / "softmax.hlo").read_text(), "softmax.hlo")
    archive = np.load(DATA / "softmax.inputs.npz")
    inputs = [archive[f"arg{i}"] for i in range(len(graph.parameters))]
    plan = explore(graph, "h100", ["xla", "cost"])["cost"]
    # No codes: the runner must refuse before it looks at them (or builds anything).
    with pytest.raises(GpuUnavailable) as raised:
        run_plan(graph, plan, [], inputs)
    assert str(raised.value) == no_gpu_reason


def test_a_kernel_that_did_not_run_has_no_numbers_and_the_plan_no_total():
    ran = KernelRun("loop.0", "loop", timing=Timing((3.0, 1.0, 2.0), warmup_runs=3),
                    max_abs_error=0.0)
    skipped = KernelRun("library.1", "library",
                        not_measured="not measured: CuPy has no bf16 arrays for the library dot")
    run = PlanRun("cost", "a GPU", [ran, skipped], not_measured="not measured: 1 of 2 kernels")
    assert skipped.measured_us is None and skipped.to_dict()["timing"] is None
    assert run.total_us is None and run.to_dict()["end_to_end"] is None
    assert run.to_dict()["kernels"][1]["measured_us"] is None


def test_timing_reports_median_minimum_and_coefficient_of_variation():
    timing = Timing((4.0, 2.0, 3.0, 5.0), warmup_runs=3)
    assert (timing.median_us, timing.min_us, timing.runs) == (3.5, 2.0, 4)
    assert timing.cv == pytest.approx(np.std([4.0, 2.0, 3.0, 5.0], ddof=1) / 3.5)
    assert Timing((7.0,), warmup_runs=0).cv == 0.0
    with pytest.raises(ValueError):
        Timing((), warmup_runs=3)


# -- graph replays: the bookkeeping and the fallback, with stand-ins for the GPU ---------------


class _CudaError(Exception):
    """Stands for CuPy's CUDA errors."""


class _StandInRunner:
    """A runner whose graph capture fails (or a replay raises a CUDA error): what
    `replay_timing` makes of it must not depend on a GPU."""

    cuda_errors = (_CudaError,)

    def __init__(self, failure: Exception):
        self.failure = failure

    def time_graph(self, launch, warmup, runs):
        raise self.failure


def test_a_failed_capture_says_why_and_gives_no_replay_time():
    from compiler.runtime.gpu import CaptureFailed, replay_timing

    timing, why = replay_timing(_StandInRunner(CaptureFailed(
        "RuntimeError: operation not permitted when stream is capturing")), lambda: None)
    assert timing is None
    assert why == ("not measured as a CUDA graph replay: the capture failed: RuntimeError: "
                   "operation not permitted when stream is capturing")
    timing, why = replay_timing(_StandInRunner(_CudaError("invalid graph")), lambda: None)
    assert timing is None and why.endswith("CUDA error: invalid graph")


def test_a_library_calls_time_is_its_graph_replay_and_the_plan_keeps_both_whole_timings():
    stream, replay = Timing((40.0, 42.0, 44.0), 3), Timing((9.0, 10.0, 11.0), 3)
    library = KernelRun("library.0", "library", timing=stream, replay=replay)
    generated = KernelRun("loop.1", "loop", timing=Timing((3.0, 5.0, 4.0), 3))
    unreplayed = KernelRun("library.2", "library", timing=Timing((30.0,), 3),
                           replay_not_measured="not measured as a CUDA graph replay: ...")
    assert (library.measured_us, library.clock) == (10.0, "graph replay")
    assert (generated.measured_us, generated.clock) == (4.0, "stream")
    assert (unreplayed.measured_us, unreplayed.clock) == (30.0, "stream")
    assert KernelRun("x", "loop").clock is None

    run = PlanRun("cost", "a GPU", [library, generated, unreplayed],
                  end_to_end=Timing((60.0,), 3), graph_replay=Timing((41.0, 43.0), 3))
    assert run.total_us == 10.0 + 4.0 + 30.0
    record = run.to_dict()
    assert record["end_to_end"]["median_us"] == 60.0
    assert record["graph_replay"]["median_us"] == 42.0 and record["graph_not_measured"] is None
    assert record["kernels"][0]["replay"]["median_us"] == 10.0
    assert record["kernels"][0]["timing"]["median_us"] == 42.0
    assert record["kernels"][2]["replay_not_measured"].startswith("not measured as a CUDA")


def test_a_plan_without_a_replay_says_why_in_its_record():
    failed = PlanRun("cost", "a GPU", [], end_to_end=Timing((5.0,), 3),
                     graph_not_measured="not measured as a CUDA graph replay: the capture "
                                        "failed: ...")
    assert failed.to_dict()["graph_replay"] is None
    assert failed.to_dict()["graph_not_measured"].endswith("the capture failed: ...")
    # A plan that has no whole time at all gives that reason for the replay too.
    partial = PlanRun("cost", "a GPU", [], not_measured="not measured: 1 of 2 kernels did not "
                                                        "run (loop.3)")
    assert partial.to_dict()["graph_not_measured"] == partial.not_measured
