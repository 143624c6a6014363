"""GPU device models: the spec table every cost model reads. Adding a device is one entry here.

Each figure carries a comment naming the public document it comes from. Short names used there:

- [PG]  CUDA C++ Programming Guide, "Compute Capabilities" appendix: table "Technical
        Specifications per Compute Capability" (threads, warps, blocks, registers, shared memory)
        and table "Throughput of Native Arithmetic Instructions (Number of Results per Clock
        Cycle per Multiprocessor)" in section "Arithmetic Instructions".
- [OCC] cuda_occupancy.h (CUDA toolkit): cudaOccSMemAllocationGranularity (256 B for compute
        capability 7.x, 128 B for 8.x and 9.x), cudaOccRegAllocationGranularity (256 registers,
        per warp); cudaDeviceProp::reservedSharedMemPerBlock (1 KiB from 8.0 on, 0 on 7.0).
- [V100-WP] NVIDIA Tesla V100 GPU Architecture whitepaper (WP-08608-001), Table 1 and the
        Volta GV100 SM figure.
- [A100-WP] NVIDIA A100 Tensor Core GPU Architecture whitepaper, Table 1 / Table 3 and the
        GA100 SM figure; [A100-DS] NVIDIA A100 80GB datasheet (SXM column).
- [H100-WP] NVIDIA H100 Tensor Core GPU Architecture whitepaper, the GH100 SM figure and the
        H100 SXM5 column of the GPU comparison table; [H100-DS] NVIDIA H100 datasheet
        (H100 SXM column); [H200-DS] NVIDIA H200 datasheet (H200 SXM column).
- [ADA-WP] NVIDIA Ada GPU Architecture whitepaper, the AD102 SM figure; [L4-DS] NVIDIA L4
        datasheet.
- [JIA18] Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking",
        arXiv:1804.06826, chapter 3 (memory latencies) and chapter 4 (instruction latencies).
- [ABD22] Abdelkhalik et al., "Demystifying the Nvidia Ampere Architecture through
        Microbenchmarking and Instruction-level Analysis", arXiv:2208.11174, latency tables.
- [LUO24] Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture",
        arXiv:2402.13499, memory-latency comparison of RTX 4090 (Ada), A100 and H800 (Hopper).

Units are in the field names. Throughputs are per SM per clock, counted as the Programming
Guide counts them: one result per lane, so a half2 FMA counts two fp16 results and an FMA one
fp32 result (two flops). Tensor-core figures are dense (no structured sparsity) flops per SM per
clock with fp32 accumulation; 0 means the chip has no tensor-core path for that type.

Latencies are typical dependent-access figures from microbenchmark papers, rounded: they feed
latency models (registers -> occupancy -> waves), not the speed-of-light bound, and vary by tens
of cycles with the access pattern and the clock. The MUFU figure is the same everywhere: the
papers report 14-23 cycles for MUFU.EX2/RSQ/RCP from Volta to Hopper and we take 18.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from compiler.errors import InputError

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

# The MUFU dependent-issue latency taken for every chip (module docstring: papers give 14-23).
MUFU_LATENCY_CYCLES = 18


@dataclass(frozen=True)
class Device:
    name: str                     # short name used on the command line: "h100"
    full_name: str
    arch: str                     # nvcc's -arch value: "sm_90"
    compute_capability: tuple[int, int]
    sm_count: int
    boost_clock_mhz: float        # the clock NVIDIA's CUDA-core peak figures assume
    tensor_clock_mhz: float       # the clock NVIDIA's tensor-core peak figures assume
    dram_bandwidth_gbs: float     # peak, decimal GB/s
    dram_bytes: int
    l2_bytes: int

    # Occupancy limits ([PG] table "Technical Specifications per Compute Capability", [OCC]).
    shared_memory_per_sm_bytes: int             # the largest configurable carveout
    shared_memory_per_block_bytes: int          # opt-in maximum (cudaFuncSetAttribute)
    shared_memory_per_block_default_bytes: int  # without opting in
    shared_memory_reserved_per_block_bytes: int  # taken by the CUDA runtime from every block
    shared_memory_allocation_unit_bytes: int
    registers_per_sm: int
    registers_per_block: int
    max_registers_per_thread: int
    register_allocation_unit: int               # registers, allocated per warp
    max_threads_per_block: int
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    warp_size: int

    # Pipe throughputs, results per SM per clock ([PG] throughput table unless noted).
    fp32_ops_per_cycle_per_sm: int      # FP32 add/mul/FMA lanes
    fp16_ops_per_cycle_per_sm: int      # non-tensor half (half2 counts two)
    bf16_ops_per_cycle_per_sm: int      # non-tensor bfloat16 (0: no native bf16 arithmetic)
    fp64_ops_per_cycle_per_sm: int
    int32_ops_per_cycle_per_sm: int     # 32-bit integer add/logic/compare
    transcendental_ops_per_cycle_per_sm: int  # MUFU/XU: rcp, rsqrt, lg2, ex2, sin, cos
    lsu_ops_per_cycle_per_sm: int       # load/store lanes (whitepaper SM figures)

    # Dense tensor-core flops per SM per clock (0: no tensor-core path for the type).
    tensor_fp16_flops_per_cycle_per_sm: int
    tensor_bf16_flops_per_cycle_per_sm: int
    tensor_tf32_flops_per_cycle_per_sm: int
    tensor_fp8_flops_per_cycle_per_sm: int
    tensor_int8_ops_per_cycle_per_sm: int

    # Typical latencies in cycles of the boost clock.
    dram_latency_cycles: int
    l2_hit_latency_cycles: int
    shared_memory_latency_cycles: int
    fp32_fma_latency_cycles: int        # dependent-issue latency of FFMA
    mufu_latency_cycles: int

    sources: tuple[str, ...]

    # -- derived peaks ------------------------------------------------------------------------

    @property
    def clock_hz(self) -> float:
        return self.boost_clock_mhz * 1e6

    @property
    def peak_fp32_flops(self) -> float:
        """FP32 flops per second with every lane issuing an FMA (2 flops) each clock."""
        return 2 * self.fp32_ops_per_cycle_per_sm * self.sm_count * self.clock_hz

    @property
    def peak_fp64_flops(self) -> float:
        return 2 * self.fp64_ops_per_cycle_per_sm * self.sm_count * self.clock_hz

    @property
    def peak_int32_ops(self) -> float:
        return self.int32_ops_per_cycle_per_sm * self.sm_count * self.clock_hz

    @property
    def peak_transcendentals_per_s(self) -> float:
        return self.transcendental_ops_per_cycle_per_sm * self.sm_count * self.clock_hz

    @property
    def dram_bytes_per_s(self) -> float:
        return self.dram_bandwidth_gbs * 1e9

    def peak_tensor_flops(self, dtype: str) -> float | None:
        """Dense tensor-core flops per second for operands of `dtype`, None if there are none.

        `dtype` is an IR dtype name (f16, bf16, f8e4m3fn, f8e5m2, s8, u8) or "tf32". f32 maps to
        None on purpose: XLA runs f32 dots on the FP32 pipe unless TF32 is explicitly allowed.
        """
        per_cycle = {
            "f16": self.tensor_fp16_flops_per_cycle_per_sm,
            "bf16": self.tensor_bf16_flops_per_cycle_per_sm,
            "tf32": self.tensor_tf32_flops_per_cycle_per_sm,
            "f8e4m3fn": self.tensor_fp8_flops_per_cycle_per_sm,
            "f8e5m2": self.tensor_fp8_flops_per_cycle_per_sm,
            "s8": self.tensor_int8_ops_per_cycle_per_sm,
            "u8": self.tensor_int8_ops_per_cycle_per_sm,
        }.get(dtype, 0)
        if per_cycle == 0:
            return None
        return per_cycle * self.sm_count * self.tensor_clock_mhz * 1e6


# -- per compute capability: [PG] "Technical Specifications per Compute Capability", [OCC] ------

_COMMON_LIMITS = dict(
    shared_memory_per_block_default_bytes=48 * KIB,
    registers_per_sm=64 * KIB,
    registers_per_block=64 * KIB,
    max_registers_per_thread=255,
    register_allocation_unit=256,
    max_threads_per_block=1024,
    warp_size=32,
)

_CC_7_0 = dict(
    _COMMON_LIMITS,
    shared_memory_per_sm_bytes=96 * KIB,
    shared_memory_per_block_bytes=96 * KIB,
    shared_memory_reserved_per_block_bytes=0,
    shared_memory_allocation_unit_bytes=256,
    max_threads_per_sm=2048,
    max_warps_per_sm=64,
    max_blocks_per_sm=32,
)

_CC_8_0 = dict(
    _COMMON_LIMITS,
    shared_memory_per_sm_bytes=164 * KIB,
    shared_memory_per_block_bytes=163 * KIB,
    shared_memory_reserved_per_block_bytes=1 * KIB,
    shared_memory_allocation_unit_bytes=128,
    max_threads_per_sm=2048,
    max_warps_per_sm=64,
    max_blocks_per_sm=32,
)

_CC_8_9 = dict(
    _COMMON_LIMITS,
    shared_memory_per_sm_bytes=100 * KIB,
    shared_memory_per_block_bytes=99 * KIB,
    shared_memory_reserved_per_block_bytes=1 * KIB,
    shared_memory_allocation_unit_bytes=128,
    max_threads_per_sm=1536,
    max_warps_per_sm=48,
    max_blocks_per_sm=24,
)

_CC_9_0 = dict(
    _COMMON_LIMITS,
    shared_memory_per_sm_bytes=228 * KIB,
    shared_memory_per_block_bytes=227 * KIB,
    shared_memory_reserved_per_block_bytes=1 * KIB,
    shared_memory_allocation_unit_bytes=128,
    max_threads_per_sm=2048,
    max_warps_per_sm=64,
    max_blocks_per_sm=32,
)

_COMMON_SOURCES = (
    "CUDA C++ Programming Guide, Compute Capabilities: Technical Specifications per Compute "
    "Capability; Throughput of Native Arithmetic Instructions",
    "CUDA toolkit cuda_occupancy.h: shared memory and register allocation granularity",
)


V100 = Device(
    name="v100",
    full_name="NVIDIA Tesla V100 SXM2 32GB",  # the 16GB model differs only in capacity
    arch="sm_70",
    compute_capability=(7, 0),
    sm_count=80,                     # [V100-WP] Table 1: 80 SMs
    boost_clock_mhz=1530,            # [V100-WP] Table 1: GPU boost clock 1530 MHz
    tensor_clock_mhz=1530,           # 125 TFLOPS = 1024 x 80 x 1.53 GHz
    dram_bandwidth_gbs=900,          # [V100-WP] Table 1: 900 GB/s HBM2
    dram_bytes=32 * GIB,             # V100 datasheet: 32/16 GB HBM2
    l2_bytes=6 * MIB,                # [V100-WP] Table 1: L2 cache 6144 KB
    **_CC_7_0,
    fp32_ops_per_cycle_per_sm=64,    # [PG] 7.x: 64; [V100-WP] 64 FP32 cores/SM
    fp16_ops_per_cycle_per_sm=128,   # [PG] 7.x: 128 (half2)
    bf16_ops_per_cycle_per_sm=0,     # sm_70 has no bf16 arithmetic (PTX bf16 needs sm_80)
    fp64_ops_per_cycle_per_sm=32,    # [PG] 7.x: 32; [V100-WP] 32 FP64 cores/SM
    int32_ops_per_cycle_per_sm=64,   # [PG] 7.x: 64; [V100-WP] 64 INT32 cores/SM
    transcendental_ops_per_cycle_per_sm=16,  # [PG] 7.x: 16 (rcp, rsqrt, lg2, ex2, sin, cos)
    lsu_ops_per_cycle_per_sm=32,     # [V100-WP] GV100 SM figure: 8 LD/ST units x 4 partitions
    tensor_fp16_flops_per_cycle_per_sm=1024,  # [V100-WP] 8 tensor cores x 64 FMA/clock
    tensor_bf16_flops_per_cycle_per_sm=0,     # Volta tensor cores take fp16 only
    tensor_tf32_flops_per_cycle_per_sm=0,
    tensor_fp8_flops_per_cycle_per_sm=0,
    tensor_int8_ops_per_cycle_per_sm=0,
    dram_latency_cycles=400,         # [JIA18] ch. 3: global memory ~400 cycles (TLB hit)
    l2_hit_latency_cycles=193,       # [JIA18] ch. 3: L2 hit 193 cycles
    shared_memory_latency_cycles=19,  # [JIA18] ch. 3: shared memory 19 cycles
    fp32_fma_latency_cycles=4,       # [JIA18] ch. 4: FFMA 4 cycles on Volta
    mufu_latency_cycles=MUFU_LATENCY_CYCLES,
    sources=_COMMON_SOURCES + (
        "NVIDIA Tesla V100 GPU Architecture whitepaper (WP-08608-001), Table 1, GV100 SM figure",
        "NVIDIA V100 Tensor Core GPU datasheet (SXM2)",
        "Jia et al., Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking, "
        "arXiv:1804.06826, ch. 3-4",
    ),
)

A100 = Device(
    name="a100",
    full_name="NVIDIA A100 SXM4 80GB",
    arch="sm_80",
    compute_capability=(8, 0),
    sm_count=108,                    # [A100-WP] Table 1: 108 SMs
    boost_clock_mhz=1410,            # [A100-WP] Table 1: GPU boost clock 1410 MHz
    tensor_clock_mhz=1410,           # 312 TFLOPS = 2048 x 108 x 1.41 GHz
    dram_bandwidth_gbs=2039,         # [A100-DS] A100 80GB SXM: 2,039 GB/s HBM2e
    dram_bytes=80 * GIB,             # [A100-DS] 80GB HBM2e
    l2_bytes=40 * MIB,               # [A100-WP] Table 1: L2 cache 40 MB
    **_CC_8_0,
    fp32_ops_per_cycle_per_sm=64,    # [PG] 8.0: 64; [A100-WP] 64 FP32 cores/SM
    fp16_ops_per_cycle_per_sm=256,   # [PG] 8.0: 256; [A100-WP] FP16 non-tensor 78 TFLOPS
    bf16_ops_per_cycle_per_sm=128,   # [A100-WP] BF16 non-tensor 39 TFLOPS
    fp64_ops_per_cycle_per_sm=32,    # [PG] 8.0: 32; [A100-WP] 32 FP64 cores/SM
    int32_ops_per_cycle_per_sm=64,   # [PG] 8.0: 64; [A100-WP] 64 INT32 cores/SM
    transcendental_ops_per_cycle_per_sm=16,  # [PG] 8.0: 16
    lsu_ops_per_cycle_per_sm=32,     # [A100-WP] GA100 SM figure: 8 LD/ST units x 4 partitions
    tensor_fp16_flops_per_cycle_per_sm=2048,  # [A100-WP] 4 tensor cores x 256 FMA/clock
    tensor_bf16_flops_per_cycle_per_sm=2048,  # [A100-WP] BF16 tensor = FP16 tensor, 312 TFLOPS
    tensor_tf32_flops_per_cycle_per_sm=1024,  # [A100-WP] TF32 tensor 156 TFLOPS
    tensor_fp8_flops_per_cycle_per_sm=0,      # FP8 tensor cores arrive with sm_89/sm_90
    tensor_int8_ops_per_cycle_per_sm=4096,    # [A100-WP] INT8 tensor 624 TOPS
    dram_latency_cycles=470,         # [LUO24] A100 global memory ~466 cycles
    l2_hit_latency_cycles=200,       # [ABD22] L2 hit ~200 cycles
    shared_memory_latency_cycles=23,  # [ABD22] shared memory load ~23 cycles
    fp32_fma_latency_cycles=4,       # [ABD22] FFMA 4 cycles
    mufu_latency_cycles=MUFU_LATENCY_CYCLES,
    sources=_COMMON_SOURCES + (
        "NVIDIA A100 Tensor Core GPU Architecture whitepaper, Table 1, GA100 SM figure",
        "NVIDIA A100 80GB datasheet, SXM column",
        "Abdelkhalik et al., Demystifying the Nvidia Ampere Architecture through "
        "Microbenchmarking and Instruction-level Analysis, arXiv:2208.11174",
        "Luo et al., Benchmarking and Dissecting the Nvidia Hopper GPU Architecture, "
        "arXiv:2402.13499, memory latency comparison",
    ),
)

H100 = Device(
    name="h100",
    full_name="NVIDIA H100 SXM5 80GB",
    arch="sm_90",
    compute_capability=(9, 0),
    sm_count=132,                    # [H100-WP] H100 SXM5: 132 SMs
    # [H100-DS] FP32 67 TFLOPS = 128 x 2 x 132 x 1.98 GHz (the SXM5 maximum boost clock), but
    # BF16 989 TFLOPS dense = 4096 x 132 x 1.83 GHz: NVIDIA quotes tensor-core peaks at 1830 MHz.
    boost_clock_mhz=1980,
    tensor_clock_mhz=1830,
    dram_bandwidth_gbs=3350,         # [H100-DS] H100 SXM: 3.35 TB/s HBM3
    dram_bytes=80 * GIB,             # [H100-DS] 80GB
    l2_bytes=50 * MIB,               # [H100-WP] H100 SXM5: L2 cache 50 MB
    **_CC_9_0,
    fp32_ops_per_cycle_per_sm=128,   # [PG] 9.0: 128; [H100-WP] 128 FP32 cores/SM
    fp16_ops_per_cycle_per_sm=256,   # [PG] 9.0: 256; [H100-WP] FP16 non-tensor 133.8 TFLOPS
    bf16_ops_per_cycle_per_sm=256,   # [H100-WP] BF16 non-tensor 133.8 TFLOPS
    fp64_ops_per_cycle_per_sm=64,    # [PG] 9.0: 64; [H100-WP] 64 FP64 cores/SM (34 TFLOPS)
    int32_ops_per_cycle_per_sm=64,   # [PG] 9.0: 64; [H100-WP] 64 INT32 cores/SM
    transcendental_ops_per_cycle_per_sm=16,  # [PG] 9.0: 16
    lsu_ops_per_cycle_per_sm=32,     # [H100-WP] GH100 SM figure: 8 LD/ST units x 4 partitions
    tensor_fp16_flops_per_cycle_per_sm=4096,  # [H100-WP] 2x A100 per SM per clock
    tensor_bf16_flops_per_cycle_per_sm=4096,  # [H100-DS] BF16 1,979 TFLOPS sparse = 989 dense
    tensor_tf32_flops_per_cycle_per_sm=2048,  # [H100-DS] TF32 989 TFLOPS sparse = 494 dense
    tensor_fp8_flops_per_cycle_per_sm=8192,   # [H100-DS] FP8 3,958 TFLOPS sparse = 1,979 dense
    tensor_int8_ops_per_cycle_per_sm=8192,    # [H100-DS] INT8 3,958 TOPS sparse
    dram_latency_cycles=480,         # [LUO24] H800 global memory ~478 cycles
    l2_hit_latency_cycles=260,       # [LUO24] H800 L2 hit ~260 cycles (partitioned L2)
    shared_memory_latency_cycles=29,  # [LUO24] H800 shared memory ~29 cycles
    fp32_fma_latency_cycles=4,       # [LUO24] FFMA 4 cycles
    mufu_latency_cycles=MUFU_LATENCY_CYCLES,
    sources=_COMMON_SOURCES + (
        "NVIDIA H100 Tensor Core GPU Architecture whitepaper, GH100 SM figure, "
        "GPU comparison table (H100 SXM5)",
        "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column",
        "Luo et al., Benchmarking and Dissecting the Nvidia Hopper GPU Architecture, "
        "arXiv:2402.13499, memory latency comparison (H800)",
    ),
)

# The H200 is an H100 SXM5 die with 141 GB of HBM3e: [H200-DS] lists the same compute peaks
# (FP32 67 TFLOPS, BF16 1,979 TFLOPS sparse) and 4.8 TB/s. No microbenchmark paper covers it
# yet, so the latencies are the H100's.
H200 = dataclasses.replace(
    H100,
    name="h200",
    full_name="NVIDIA H200 SXM 141GB",
    dram_bandwidth_gbs=4800,         # [H200-DS] H200 SXM: 4.8 TB/s HBM3e
    dram_bytes=141 * GIB,            # [H200-DS] 141GB
    sources=_COMMON_SOURCES + (
        "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column",
        "NVIDIA H100 Tensor Core GPU Architecture whitepaper (same GH100 SM and clocks)",
        "Luo et al., Benchmarking and Dissecting the Nvidia Hopper GPU Architecture, "
        "arXiv:2402.13499, memory latency comparison (H800)",
    ),
)

L4 = Device(
    name="l4",
    full_name="NVIDIA L4 24GB",
    arch="sm_89",
    compute_capability=(8, 9),
    # [L4-DS] gives no SM count: 58 SMs (7,424 CUDA cores of the AD104) at the 2040 MHz boost
    # clock is what its 30.3 TFLOPS FP32 works out to (128 lanes x 2 flops x 58 x 2.04 GHz).
    sm_count=58,
    boost_clock_mhz=2040,
    tensor_clock_mhz=2040,           # [L4-DS] FP16 242 TFLOPS sparse = 1024 x 58 x 2.04 x 2
    dram_bandwidth_gbs=300,          # [L4-DS] 300 GB/s GDDR6
    dram_bytes=24 * GIB,             # [L4-DS] 24GB
    l2_bytes=48 * MIB,               # AD104's 48 MB (third-party spec databases; not in [L4-DS])
    **_CC_8_9,
    fp32_ops_per_cycle_per_sm=128,   # [PG] 8.9: 128; [ADA-WP] 128 FP32 lanes/SM
    fp16_ops_per_cycle_per_sm=128,   # [PG] 8.9: 128 (non-tensor FP16 = FP32 rate on Ada)
    bf16_ops_per_cycle_per_sm=128,   # [PG] 8.9: 128
    fp64_ops_per_cycle_per_sm=2,     # [PG] 8.9: 2
    int32_ops_per_cycle_per_sm=64,   # [PG] 8.9: 64 (half the FP32 lanes also run INT32)
    transcendental_ops_per_cycle_per_sm=16,  # [PG] 8.9: 16
    lsu_ops_per_cycle_per_sm=16,     # [ADA-WP] AD102 SM figure: 4 LD/ST units x 4 partitions
    tensor_fp16_flops_per_cycle_per_sm=1024,  # [L4-DS] FP16 242 TFLOPS sparse = 121 dense
    tensor_bf16_flops_per_cycle_per_sm=1024,  # [L4-DS] BF16 242 TFLOPS sparse
    tensor_tf32_flops_per_cycle_per_sm=512,   # [L4-DS] TF32 120 TFLOPS sparse = 60 dense
    tensor_fp8_flops_per_cycle_per_sm=2048,   # [L4-DS] FP8 485 TFLOPS sparse = 242 dense
    tensor_int8_ops_per_cycle_per_sm=2048,    # [L4-DS] INT8 485 TOPS sparse
    # No microbenchmark paper covers the L4; [LUO24]'s RTX 4090 (same Ada SM and L2 design,
    # GDDR6X rather than GDDR6) is the nearest measured chip.
    dram_latency_cycles=540,         # [LUO24] RTX 4090 global memory ~540 cycles
    l2_hit_latency_cycles=270,       # [LUO24] RTX 4090 L2 hit ~270 cycles
    shared_memory_latency_cycles=30,  # [LUO24] RTX 4090 shared memory ~30 cycles
    fp32_fma_latency_cycles=4,       # [LUO24] FFMA 4 cycles
    mufu_latency_cycles=MUFU_LATENCY_CYCLES,
    sources=_COMMON_SOURCES + (
        "NVIDIA L4 Tensor Core GPU datasheet",
        "NVIDIA Ada GPU Architecture whitepaper, AD102 SM figure",
        "Luo et al., Benchmarking and Dissecting the Nvidia Hopper GPU Architecture, "
        "arXiv:2402.13499, memory latency comparison (RTX 4090)",
    ),
)

DEVICES: dict[str, Device] = {device.name: device for device in (V100, A100, H100, H200, L4)}


def get_device(name: str) -> Device:
    """The device called `name` (case-insensitive); InputError naming the known ones otherwise."""
    device = DEVICES.get(name.strip().lower())
    if device is None:
        known = ", ".join(DEVICES)
        raise InputError(f"unknown device '{name}': choose one of {known}")
    return device
