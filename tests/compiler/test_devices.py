"""The device table against NVIDIA's published figures: datasheet peaks and the CUDA
Programming Guide's per-compute-capability limits."""

from __future__ import annotations

import dataclasses

import pytest

from compiler.errors import InputError
from compiler.target.devices import DEVICES, Device, get_device

TERA = 1e12
KIB = 1024

# Datasheet headline figures (dense tensor-core peaks; the datasheets print sparse ones = 2x):
# device -> (FP32 TFLOP/s, DRAM GB/s, {tensor dtype: dense TFLOP/s}, FP64 TFLOP/s or None).
PUBLISHED = {
    # V100 SXM2 datasheet / whitepaper Table 1
    "v100": (15.7, 900, {"f16": 125}, 7.8),
    # A100 80GB datasheet, SXM column; whitepaper Table 1
    "a100": (19.5, 2039, {"f16": 312, "bf16": 312, "tf32": 156, "s8": 624}, 9.7),
    # H100 datasheet, SXM column
    "h100": (67, 3350, {"bf16": 989, "f16": 989, "tf32": 494.5, "f8e4m3fn": 1979, "s8": 1979},
             34),
    # H200 datasheet, SXM column: the H100's compute, more and faster memory
    "h200": (67, 4800, {"bf16": 989, "f16": 989, "tf32": 494.5, "f8e4m3fn": 1979}, 34),
    # L4 datasheet
    "l4": (30.3, 300, {"f16": 121, "bf16": 121, "tf32": 60, "f8e4m3fn": 242.5}, None),
}

# CUDA C++ Programming Guide, "Technical Specifications per Compute Capability".
# compute capability -> (max warps/SM, max blocks/SM, max threads/SM, shared KiB/SM,
#                        shared KiB/block opt-in)
PROGRAMMING_GUIDE = {
    (7, 0): (64, 32, 2048, 96, 96),
    (8, 0): (64, 32, 2048, 164, 163),
    (8, 9): (48, 24, 1536, 100, 99),
    (9, 0): (64, 32, 2048, 228, 227),
}


def within(value: float, published: float, tolerance: float = 0.03) -> bool:
    return abs(value - published) <= tolerance * published


def test_the_table_holds_the_five_devices_by_short_name():
    assert list(DEVICES) == ["v100", "a100", "h100", "h200", "l4"]
    assert all(name == device.name for name, device in DEVICES.items())


@pytest.mark.parametrize("name", PUBLISHED)
def test_derived_fp32_peak_matches_the_datasheet(name):
    fp32_tflops = PUBLISHED[name][0]
    assert within(DEVICES[name].peak_fp32_flops / TERA, fp32_tflops)


@pytest.mark.parametrize("name", PUBLISHED)
def test_dram_bandwidth_matches_the_datasheet(name):
    bandwidth_gbs = PUBLISHED[name][1]
    assert within(DEVICES[name].dram_bytes_per_s / 1e9, bandwidth_gbs)


@pytest.mark.parametrize("name", PUBLISHED)
def test_dense_tensor_core_peaks_match_the_datasheet(name):
    for dtype, tflops in PUBLISHED[name][2].items():
        peak = DEVICES[name].peak_tensor_flops(dtype)
        assert peak is not None and within(peak / TERA, tflops), (dtype, peak)


@pytest.mark.parametrize("name", [n for n, figures in PUBLISHED.items() if figures[3]])
def test_fp64_peak_matches_the_datasheet(name):
    assert within(DEVICES[name].peak_fp64_flops / TERA, PUBLISHED[name][3])


def test_h200_has_the_h100s_compute_and_its_own_memory():
    h100, h200 = DEVICES["h100"], DEVICES["h200"]
    assert h200.peak_fp32_flops == h100.peak_fp32_flops
    assert h200.peak_tensor_flops("bf16") == h100.peak_tensor_flops("bf16")
    assert h200.dram_bandwidth_gbs > h100.dram_bandwidth_gbs
    assert h200.dram_bytes > h100.dram_bytes


def test_volta_has_no_tensor_path_for_bf16_or_tf32():
    v100 = DEVICES["v100"]
    assert v100.peak_tensor_flops("bf16") is None
    assert v100.peak_tensor_flops("tf32") is None


@pytest.mark.parametrize("name", DEVICES)
def test_f32_dots_get_no_tensor_peak_unless_tf32_is_asked_for(name):
    assert DEVICES[name].peak_tensor_flops("f32") is None


@pytest.mark.parametrize("name", DEVICES)
def test_occupancy_limits_match_the_programming_guide(name):
    device = DEVICES[name]
    warps, blocks, threads, shared_sm_kib, shared_block_kib = \
        PROGRAMMING_GUIDE[device.compute_capability]
    assert device.max_warps_per_sm == warps
    assert device.max_blocks_per_sm == blocks
    assert device.max_threads_per_sm == threads == warps * device.warp_size
    assert device.shared_memory_per_sm_bytes == shared_sm_kib * KIB
    assert device.shared_memory_per_block_bytes == shared_block_kib * KIB
    assert device.shared_memory_per_block_default_bytes == 48 * KIB
    assert device.registers_per_sm == device.registers_per_block == 64 * KIB
    assert device.max_registers_per_thread == 255
    assert device.max_threads_per_block == 1024
    assert device.warp_size == 32


@pytest.mark.parametrize("name", DEVICES)
def test_allocation_units_follow_cuda_occupancy_h(name):
    device = DEVICES[name]
    major = device.compute_capability[0]
    assert device.shared_memory_allocation_unit_bytes == (256 if major <= 7 else 128)
    assert device.shared_memory_reserved_per_block_bytes == (0 if major <= 7 else 1 * KIB)
    assert device.register_allocation_unit == 256


@pytest.mark.parametrize("name", DEVICES)
def test_transcendentals_run_at_16_per_sm_per_clock(name):
    device = DEVICES[name]
    assert device.peak_transcendentals_per_s == 16 * device.sm_count * device.clock_hz


@pytest.mark.parametrize("name", DEVICES)
def test_arch_names_the_compute_capability(name):
    device = DEVICES[name]
    major, minor = device.compute_capability
    assert device.arch == f"sm_{major}{minor}"


@pytest.mark.parametrize("name", DEVICES)
def test_every_device_cites_its_sources_and_plausible_latencies(name):
    device = DEVICES[name]
    assert any("Programming Guide" in source for source in device.sources)
    assert any("datasheet" in source for source in device.sources)
    assert 400 <= device.dram_latency_cycles <= 600
    assert device.l2_hit_latency_cycles < device.dram_latency_cycles
    assert device.shared_memory_latency_cycles < device.l2_hit_latency_cycles


def test_devices_are_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEVICES["h100"].sm_count = 1


def test_get_device_finds_a_device_whatever_the_case():
    assert get_device("H100") is DEVICES["h100"]
    assert isinstance(get_device(" l4 "), Device)


def test_an_unknown_device_is_an_input_error_listing_the_known_ones():
    with pytest.raises(InputError) as error:
        get_device("h300")
    message = str(error.value)
    assert "h300" in message
    for name in DEVICES:
        assert name in message
