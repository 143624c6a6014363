"""The CPU emulator runs hand-written CUDA kernels as a GPU would, and reports what a GPU hides.

The kernels below include a small local prelude that maps FX_SHARED_MEMORY and fx_grid_sync as
notes/cuda_contract.md says the real one (compiler/codegen/fx_prelude.cuh) does. All kernels
compile into one module, once per test session, in a private cache folder.
"""

from __future__ import annotations

import subprocess

import ml_dtypes
import numpy as np
import pytest

from compiler.toolchain import emulate
from compiler.toolchain.emulate import EmulationError, compile_for_emulation

LOCAL_PRELUDE = r"""
#pragma once
#ifdef FX_EMULATION
#include "cuda_emu.h"
#define FX_SHARED_MEMORY(name) unsigned char* name = fx_emu::block_shared_memory()
__device__ __forceinline__ void fx_grid_sync() { fx_emu::grid_sync(); }
#endif
"""

KERNELS = r"""
#include "fx_prelude.cuh"

extern "C" __global__ void add(const float* __restrict__ a, const float* __restrict__ b,
                               const int* __restrict__ size, float* __restrict__ out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < *size; i += blockDim.x * gridDim.x) {
    out[i] = a[i] + b[i];
  }
}

// One block per row; any block size (a tree over shared memory that handles odd sizes).
extern "C" __global__ void row_sum(const float* __restrict__ x, const int* __restrict__ columns,
                                   float* __restrict__ out) {
  FX_SHARED_MEMORY(smem);
  float* partial = reinterpret_cast<float*>(smem);
  const float* row = x + blockIdx.x * *columns;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < *columns; c += blockDim.x) sum += row[c];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    if (threadIdx.x % (2 * stride) == 0 && threadIdx.x + stride < blockDim.x) {
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

// Per warp: an all-reduce with xor shuffles (every lane), a reduction with down shuffles (lane
// 0), an inclusive scan with up shuffles, and a broadcast of lane 5.
extern "C" __global__ void warp_ops(const float* __restrict__ x, float* __restrict__ xor_sum,
                                    float* __restrict__ down_sum, float* __restrict__ scan,
                                    float* __restrict__ broadcast) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  float all = v;
  for (int offset = 16; offset > 0; offset /= 2) all += __shfl_xor_sync(0xffffffff, all, offset);
  xor_sum[i] = all;
  float down = v;
  for (int offset = 16; offset > 0; offset /= 2) down += __shfl_down_sync(0xffffffff, down, offset);
  if (threadIdx.x % 32 == 0) down_sum[i / 32] = down;
  float prefix = v;
  for (int offset = 1; offset < 32; offset *= 2) {
    float up = __shfl_up_sync(0xffffffff, prefix, offset);
    if (threadIdx.x % 32 >= offset) prefix += up;
  }
  scan[i] = prefix;
  broadcast[i] = __shfl_sync(0xffffffff, v, 5);
}

extern "C" __global__ void atomic_sum(const float* __restrict__ x, float* __restrict__ total) {
  atomicAdd(total, x[blockIdx.x * blockDim.x + threadIdx.x]);
}

__device__ void atomic_max_float(float* address, float value) {
  int* bits = reinterpret_cast<int*>(address);
  int old = *bits;
  while (__int_as_float(old) < value) {
    int assumed = old;
    old = atomicCAS(bits, assumed, __float_as_int(value));
    if (old == assumed) break;
  }
}

extern "C" __global__ void atomic_max(const float* __restrict__ x, float* __restrict__ best) {
  atomic_max_float(best, x[blockIdx.x * blockDim.x + threadIdx.x]);
}

// Phase 1: each block's sum into partials; grid barrier; phase 2: every block adds them all.
extern "C" __global__ void grid_total(const float* __restrict__ x, float* __restrict__ partials,
                                      float* __restrict__ totals) {
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int t = 0; t < blockDim.x; ++t) sum += x[blockIdx.x * blockDim.x + t];
    partials[blockIdx.x] = sum;
  }
  fx_grid_sync();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int b = 0; b < gridDim.x; ++b) total += partials[b];
    totals[blockIdx.x] = total;
  }
}

extern "C" __global__ void divergent_barrier(const float* __restrict__ x, float* __restrict__ out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  }
  out[threadIdx.x] = x[threadIdx.x];
}

extern "C" __global__ void early_return_shuffle(const float* __restrict__ x,
                                                float* __restrict__ out) {
  if (threadIdx.x == 3) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffff, x[threadIdx.x], 1);
}

extern "C" __global__ void to_half(const float* __restrict__ x, __half* __restrict__ out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 65536 * 4; i += blockDim.x * gridDim.x) {
    out[i] = __float2half_rn(x[i]);
  }
}

extern "C" __global__ void to_bfloat16(const float* __restrict__ x,
                                       __nv_bfloat16* __restrict__ out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 65536 * 4; i += blockDim.x * gridDim.x) {
    out[i] = __float2bfloat16_rn(x[i]);
  }
}

extern "C" __global__ void from_16_bit(const __half* __restrict__ h,
                                       const __nv_bfloat16* __restrict__ b,
                                       float* __restrict__ h_out, float* __restrict__ b_out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 65536; i += blockDim.x * gridDim.x) {
    h_out[i] = __half2float(h[i]);
    b_out[i] = __bfloat162float(b[i]);
  }
}

// Copies the block's shared memory out without writing it first (after a barrier, so every
// thread of the block has started).
extern "C" __global__ void dump_shared(unsigned char* __restrict__ out) {
  FX_SHARED_MEMORY(smem);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = smem[threadIdx.x];
  __syncthreads();
  smem[threadIdx.x] = 0;  // the next block must see the pattern again
}

extern "C" __global__ void past_shared_end(float* __restrict__ out) {
  FX_SHARED_MEMORY(smem);
  reinterpret_cast<float*>(smem)[threadIdx.x + 64] = 1.0f;  // 256 bytes launched
  out[threadIdx.x] = 0.0f;
}

extern "C" __global__ void huge_frame(float* __restrict__ out) {
  volatile float local[256 * 1024];
  local[threadIdx.x] = 1.0f;
  out[threadIdx.x] = local[threadIdx.x];
}
"""

KERNEL_NAMES = ["add", "row_sum", "warp_ops", "atomic_sum", "atomic_max", "grid_total",
                "divergent_barrier", "early_return_shuffle", "to_half", "to_bfloat16",
                "from_16_bit", "dump_shared", "past_shared_end", "huge_frame"]


@pytest.fixture(scope="module")
def prelude_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("prelude")
    (directory / "fx_prelude.cuh").write_text(LOCAL_PRELUDE)
    return directory


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FUSION_EXPLORER_CACHE_DIR", str(directory))
        yield directory


@pytest.fixture(scope="module")
def module(prelude_dir, cache_dir):
    return compile_for_emulation(KERNELS, KERNEL_NAMES, include_dirs=[prelude_dir])


def random_floats(count, seed=0):
    return np.random.default_rng(seed).standard_normal(count).astype(np.float32)


def test_elementwise_add_with_a_grid_stride_loop(module):
    n = 1000
    a, b = random_floats(n, 1), random_floats(n, 2)
    out = np.zeros(n, np.float32)
    module.launch("add", (3,), (128,), 0, [a, b, np.array([n], np.int32), out])
    np.testing.assert_array_equal(out, a + b)


@pytest.mark.parametrize("block, columns", [(256, 1000), (96, 300), (32, 20)])
def test_block_reduction_through_shared_memory(module, block, columns):
    rows = 5
    x = random_floats(rows * columns).reshape(rows, columns)
    out = np.zeros(rows, np.float32)
    module.launch("row_sum", (rows,), (block,), block * 4,
                  [x, np.array([columns], np.int32), out])
    np.testing.assert_allclose(out, x.sum(axis=1, dtype=np.float64), rtol=1e-5, atol=1e-5)


def test_warp_shuffles_reduce_scan_and_broadcast(module):
    warps = 4
    x = random_floats(32 * warps)
    outputs = [np.zeros(32 * warps, np.float32), np.zeros(warps, np.float32),
               np.zeros(32 * warps, np.float32), np.zeros(32 * warps, np.float32)]
    module.launch("warp_ops", (2,), (64,), 0, [x, *outputs])
    xor_sum, down_sum, scan, broadcast = outputs
    per_warp = x.reshape(warps, 32)
    expected_sum = per_warp.sum(axis=1, dtype=np.float64)
    np.testing.assert_allclose(xor_sum.reshape(warps, 32),
                               np.repeat(expected_sum[:, None], 32, axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(down_sum, expected_sum, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(scan.reshape(warps, 32), np.cumsum(per_warp, axis=1),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(broadcast.reshape(warps, 32),
                                  np.repeat(per_warp[:, 5:6], 32, axis=1))


def test_atomic_add_accumulates_across_blocks(module):
    x = random_floats(8 * 64)
    total = np.zeros(1, np.float32)
    module.launch("atomic_sum", (8,), (64,), 0, [x, total])
    np.testing.assert_allclose(total[0], x.sum(dtype=np.float64), rtol=1e-5, atol=1e-4)


def test_cas_loop_computes_a_float_atomic_max(module):
    x = random_floats(6 * 96) - 10.0  # all negative: the int order of the bits is reversed
    x[123] = 3.5
    best = np.array([-np.inf], np.float32)
    module.launch("atomic_max", (6,), (96,), 0, [x, best])
    assert best[0] == np.float32(3.5)
    negative = x[x < 0]
    best = np.array([-np.inf], np.float32)
    module.launch("atomic_max", (4,), (64,), 0, [negative[:256].copy(), best])
    assert best[0] == negative[:256].max()


def test_cooperative_launch_completes_a_grid_barrier(module):
    blocks, threads = 4, 64
    x = random_floats(blocks * threads)
    partials = np.zeros(blocks, np.float32)
    totals = np.zeros(blocks, np.float32)
    module.launch("grid_total", (blocks,), (threads,), 0, [x, partials, totals], cooperative=True)
    np.testing.assert_allclose(partials, x.reshape(blocks, threads).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(totals, np.full(blocks, x.sum(dtype=np.float64)), rtol=1e-5)


def test_grid_barrier_without_a_cooperative_launch_is_a_deadlock_error(module):
    x = random_floats(4 * 64)
    with pytest.raises(EmulationError, match="deadlock.*cooperative"):
        module.launch("grid_total", (4,), (64,), 0,
                      [x, np.zeros(4, np.float32), np.zeros(4, np.float32)])


def test_syncthreads_in_a_divergent_branch_is_a_deadlock_error(module):
    x = random_floats(64)
    with pytest.raises(EmulationError) as caught:
        module.launch("divergent_barrier", (1,), (64,), 0, [x, np.zeros(64, np.float32)])
    message = str(caught.value)
    assert "deadlock in kernel 'divergent_barrier'" in message
    assert "16 wait at __syncthreads()" in message
    assert "48 exited" in message


def test_a_lane_that_returned_before_a_shuffle_is_a_deadlock_error(module):
    with pytest.raises(EmulationError, match="deadlock.*warp operation"):
        module.launch("early_return_shuffle", (1,), (32,), 0,
                      [random_floats(32), np.zeros(32, np.float32)])


def conversion_inputs(ties_of) -> np.ndarray:
    """Random float32 bit patterns, every tie between neighbouring values of the 16-bit type
    `ties_of`, and the specials; 65536 * 4 values."""
    rng = np.random.default_rng(7)
    values_16 = np.arange(65536, dtype=np.uint16).view(ties_of).astype(np.float32)
    finite = np.sort(np.unique(values_16[np.isfinite(values_16)]))
    ties = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 65504.0, 65519.996,
                         65520.0, -65520.0, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 2.0**-14,
                         np.finfo(np.float32).max, np.finfo(np.float32).tiny,
                         np.float32(1e-45), 3.3895314e38], np.float32)
    random_bits = rng.integers(0, 2**32, size=65536 * 4, dtype=np.uint64).astype(np.uint32)
    values = np.concatenate([specials, ties, finite * 1.0001, random_bits.view(np.float32)])
    return np.ascontiguousarray(values[:65536 * 4])


@pytest.mark.parametrize("kernel, dtype", [("to_half", np.float16),
                                           ("to_bfloat16", ml_dtypes.bfloat16)])
def test_float_to_16_bit_rounds_to_nearest_even_bit_exactly(module, kernel, dtype):
    x = conversion_inputs(dtype)
    out = np.zeros(x.size, dtype)
    module.launch(kernel, (64,), (256,), 0, [x, out])
    with np.errstate(over="ignore", invalid="ignore"):
        expected = x.astype(dtype)
    nan = np.isnan(x)
    assert np.isnan(out[nan].astype(np.float32)).all()
    mismatch = np.flatnonzero(out[~nan].view(np.uint16) != expected[~nan].view(np.uint16))
    assert mismatch.size == 0, (x[~nan][mismatch[:5]], out[~nan][mismatch[:5]])


def test_16_bit_to_float_is_exact_for_every_bit_pattern(module):
    bits = np.arange(65536, dtype=np.uint16)
    h, b = bits.view(np.float16), bits.view(ml_dtypes.bfloat16)
    h_out, b_out = np.zeros(65536, np.float32), np.zeros(65536, np.float32)
    module.launch("from_16_bit", (64,), (256,), 0, [h, b, h_out, b_out])
    for out, source in ((h_out, h), (b_out, b)):
        expected = source.astype(np.float32)
        nan = np.isnan(expected)
        assert np.isnan(out[nan]).all()
        np.testing.assert_array_equal(out[~nan].view(np.uint32), expected[~nan].view(np.uint32))


def test_unwritten_shared_memory_reads_as_the_garbage_pattern(module):
    out = np.zeros(3 * 64, np.uint8)
    module.launch("dump_shared", (3,), (64,), 64, [out])
    assert (out == 0xCD).all()


def test_an_access_past_the_shared_memory_is_reported_not_a_crash(module):
    with pytest.raises(EmulationError, match="past the end of block .* dynamic shared memory"):
        module.launch("past_shared_end", (1,), (32,), 256, [np.zeros(32, np.float32)])
    test_elementwise_add_with_a_grid_stride_loop(module)  # the next launch runs as usual


def test_a_stack_overflow_is_reported_not_a_crash(module):
    with pytest.raises(EmulationError, match="stack overflow"):
        module.launch("huge_frame", (1,), (2,), 0, [np.zeros(2, np.float32)])


@pytest.mark.parametrize("kwargs, message", [
    (dict(block=(1025,)), "at most 1024"),
    (dict(block=(32, 33)), "at most 1024"),
    (dict(grid=(0,)), "grid dimensions"),
    (dict(grid=(100,), cooperative=True), "exceeds the emulator's cap of 4096"),
    (dict(shared_bytes=300 * 1024), "at most 227 KiB"),
])
def test_bad_launches_are_errors(module, kwargs, message):
    launch = dict(grid=(1,), block=(64,), shared_bytes=0, cooperative=False) | kwargs
    with pytest.raises(EmulationError, match=message):
        module.launch("grid_total", launch["grid"], launch["block"], launch["shared_bytes"],
                      [random_floats(64), np.zeros(1, np.float32), np.zeros(1, np.float32)],
                      cooperative=launch["cooperative"])


def test_arguments_are_checked_against_the_kernel_signature(module):
    x = random_floats(64)
    out = np.zeros(1, np.float32)
    with pytest.raises(EmulationError, match="takes 2 arguments, got 1"):
        module.launch("atomic_sum", 1, 64, 0, [x])
    with pytest.raises(EmulationError, match="float64 .* 4-byte elements"):
        module.launch("atomic_sum", 1, 64, 0, [x.astype(np.float64), out])
    with pytest.raises(EmulationError, match="not C-contiguous"):
        module.launch("atomic_sum", 1, 32, 0, [np.zeros(128, np.float32)[::2], out])
    readonly = out.copy()
    readonly.flags.writeable = False
    with pytest.raises(EmulationError, match="read-only"):
        module.launch("atomic_sum", 1, 64, 0, [x, readonly])


def test_a_compile_error_carries_the_compiler_message(prelude_dir, cache_dir):
    source = '#include "fx_prelude.cuh"\nextern "C" __global__ void k(float* o) { o[0] = nope; }\n'
    with pytest.raises(EmulationError, match="kernels.cu:2:.*nope"):
        compile_for_emulation(source, ["k"], include_dirs=[prelude_dir])


def test_a_non_pointer_parameter_is_a_compile_error_naming_the_contract(prelude_dir, cache_dir):
    source = '#include "fx_prelude.cuh"\nextern "C" __global__ void k(float* o, int n) {}\n'
    with pytest.raises(EmulationError, match="parameters must all be pointers"):
        compile_for_emulation(source, ["k"], include_dirs=[prelude_dir])


def test_the_second_compile_of_the_same_source_does_not_run_the_compiler(
        prelude_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("FUSION_EXPLORER_CACHE_DIR", str(tmp_path))
    calls = []
    real_run = subprocess.run

    def counting_run(*args, **kwargs):
        calls.append(args)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(emulate.subprocess, "run", counting_run)
    source = ('#include "fx_prelude.cuh"\n'
              'extern "C" __global__ void fill(float* o) { o[threadIdx.x] = threadIdx.x; }\n')
    first = compile_for_emulation(source, ["fill"], include_dirs=[prelude_dir])
    second = compile_for_emulation(source, ["fill"], include_dirs=[prelude_dir])
    assert len(calls) == 1
    assert first.path == second.path and first.path.is_relative_to(tmp_path / "emulation")
    out = np.zeros(8, np.float32)
    second.launch("fill", 1, 8, 0, [out])
    np.testing.assert_array_equal(out, np.arange(8))
    (prelude_dir / "extra.cuh").write_text("// a header change invalidates the entry\n")
    try:
        compile_for_emulation(source, ["fill"], include_dirs=[prelude_dir])
    finally:
        (prelude_dir / "extra.cuh").unlink()
    assert len(calls) == 2
