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
