"""compiler.stages.measure without a GPU: it refuses at once with the reason (the GPU worker turns
that into the measurement's error), and it knows a device model in the driver's GPU names. The
measurement itself runs in tests/gpu/test_measure_gpu.py."""
from pathlib import Path

import pytest

from compiler.runtime.gpu import GpuUnavailable, gpu_available
from compiler.stages.measure import gpu_matches_device, measure_graph

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
