"""compiler.stages.measure without a GPU: it refuses at once with the reason (the GPU worker turns
that into the measurement's error), and it knows a device model in the driver's GPU names. The
measurement itself runs in tests/gpu/test_measure_gpu.py. An emulated GPU worker's check
(check_graph_emulated) runs here: every kernel checked on the CPU emulator, nothing timed."""
from pathlib import Path

import pytest

from compiler.runtime.gpu import GpuUnavailable, gpu_available
from compiler.stages.measure import (EMULATED, check_graph_emulated, gpu_matches_device,
                                     measure_graph)
from compiler.stages.pipeline import compile_graph

SOFTMAX = Path(__file__).resolve().parents[1] / "data" / "hlo" / "softmax.hlo"


@pytest.mark.skipif(gpu_available()[0], reason="this machine has a GPU")
def test_without_a_gpu_it_refuses_before_any_work_with_the_reason():
    progress = []
    with pytest.raises(GpuUnavailable, match="no GPU|no CUDA device"):
        measure_graph(SOFTMAX.read_bytes(), SOFTMAX.name, ["h100"], ["cost"],
                      progress=lambda *event: progress.append(event))
    assert progress == []


@pytest.mark.parametrize("driver_name, device, same", [
    ("NVIDIA H100 80GB HBM3", "h100", True),
    ("NVIDIA H100 PCIe", "h100", True),
    ("NVIDIA H200", "h200", True),
    ("NVIDIA H200", "h100", False),
    ("NVIDIA A100-SXM4-80GB", "a100", True),
    ("NVIDIA A100-SXM4-80GB", "h100", False),
    ("Tesla V100-SXM2-32GB", "v100", True),
    ("NVIDIA L4", "l4", True),
    ("NVIDIA L40S", "l4", False),
])
def test_the_device_model_is_recognised_in_driver_names(driver_name, device, same):
    assert gpu_matches_device(driver_name, device) is same


@pytest.mark.timeout(300)
def test_an_emulated_check_verifies_every_kernel_of_the_plans_the_run_shows_and_times_none():
    strategies = ["unfused", "cost"]
    progress = []
    result = check_graph_emulated(SOFTMAX.read_bytes(), SOFTMAX.name, ["h100"], strategies,
                                  progress=lambda *event: progress.append(event))

    assert result["emulated"] is True and [stage for stage, _, _ in progress][-1] == "measure"
    measured = result["devices"]["h100"]
    assert measured["eager"] == {"measured_us": None, "timing": None, "not_measured": EMULATED}
    artifact = compile_graph(SOFTMAX.read_bytes(), SOFTMAX.name, ["h100"], strategies)
    for strategy in strategies:
        plan = measured["strategies"][strategy]
        shown = artifact["devices"]["h100"]["strategies"][strategy]["kernels"]
        assert [k["name"] for k in plan["kernels"]] == [k["name"] for k in shown]
        assert (plan["total_us"], plan["end_to_end"]) == (None, None)
        assert plan["not_measured"] == EMULATED
        for kernel in plan["kernels"]:
            assert (kernel["measured_us"], kernel["timing"]) == (None, None)
            assert kernel["not_measured"].startswith(EMULATED)
            # Softmax's kernels are all generated: each one ran on the emulator and agreed
            # with the interpreter within its tolerance.
            assert kernel["max_abs_error"] is not None and kernel["mismatches"] == [], kernel
