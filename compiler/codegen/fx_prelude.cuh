// fx_prelude.cuh: what every kernel Fusion Explorer generates includes first.
//
// The same text compiles with nvcc for the GPU and with g++ -std=c++17 -DFX_EMULATION for the
// CPU emulator (compiler/toolchain/cuda_emu.h), which is how the tests run generated kernels
// without a GPU. Shared memory and the grid barrier are reached only through FX_SHARED_MEMORY
// and fx_grid_sync() so the emulator can provide them (notes/cuda_contract.md).
//
// Numerics follow the reference interpreter (compiler/ir/interpreter.py), which follows XLA:
// 16-bit floats compute in f32 and round once per op; float min/max propagate NaN; integer
// division by zero, INT_MIN / -1 and over-wide shifts give XLA's results instead of C's
// undefined behaviour; float -> int conversion saturates and maps NaN to 0.
#pragma once

#ifdef FX_EMULATION
#include "cuda_emu.h"
#include <cmath>
#include <cstdint>
#define FX_SHARED_MEMORY(name) unsigned char* name = fx_emu::block_shared_memory()
__device__ __forceinline__ void fx_grid_sync() { fx_emu::grid_sync(); }
#else
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#define FX_SHARED_MEMORY(name) extern __shared__ __align__(16) unsigned char name[]
__device__ __forceinline__ void fx_grid_sync() { cooperative_groups::this_grid().sync(); }
#endif

#define FX_INF_F __builtin_huge_valf()
#define FX_INF_D __builtin_huge_val()
#define FX_NAN_F __builtin_nanf("")
#define FX_NAN_D __builtin_nan("")

// -- 16-bit floats: values live in float registers, rounded to the type after every op -------

__device__ __forceinline__ float fx_round_bf16(float x) {
  return __bfloat162float(__float2bfloat16_rn(x));
}
__device__ __forceinline__ float fx_round_f16(float x) { return __half2float(__float2half_rn(x)); }

// -- float helpers with XLA's semantics ------------------------------------------------------

// NaN propagates, as np.maximum and XLA's max: a when a is NaN, else b when b is (no
// comparison with NaN holds). One select, no branch: a branch on each loaded value (an early
// return for NaN) keeps the next load of a reduction loop behind it, one load in flight per
// thread (a standalone max over rows ran at 1.6 TB/s on an H200, the same loop's sum at 2.8).
template <typename T> __device__ __forceinline__ T fx_max(T a, T b) {
  return ((a > b) | (a != a)) ? a : b;
}
template <typename T> __device__ __forceinline__ T fx_min(T a, T b) {
  return ((a < b) | (a != a)) ? a : b;
}
// Integers have no NaN; the comparisons above are then plain max/min.

template <typename T> __device__ __forceinline__ T fx_sign(T x) {
  if (x != x) return x;
  return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);  // keeps the sign of zero
}

// Float -> integer: truncate toward zero, saturate at the type's limits, NaN -> 0.
template <typename I>
__device__ __forceinline__ I fx_float_to_int(double x, double lo, double hi, I lo_value,
                                             I hi_value) {
  if (x != x) return I(0);
  double t = trunc(x);
  if (t <= lo) return lo_value;
  if (t >= hi) return hi_value;
  return I(t);
}

// -- index helpers ---------------------------------------------------------------------------

// A dynamic start index (any integer type, read as int64 like XLA) clamped into [0, high].
template <typename T> __device__ __forceinline__ int fx_clamp_index(T raw, int high) {
  const long long v = (long long)(raw);
  return v < 0 ? 0 : (v > (long long)high ? high : int(v));
}

// -- integer helpers: XLA's rules where C leaves the result undefined ------------------------

// x / 0 = -1 (all ones); INT_MIN / -1 = INT_MIN. U is the unsigned type of the same width.
template <typename T> __device__ __forceinline__ T fx_idiv(T x, T y) {
  if (y == T(0)) return T(~T(0));
  if (T(-1) < T(0) && y == T(-1)) return T(T(0) - x);  // wraps for INT_MIN, like XLA
  return T(x / y);
}
// x % 0 = x; INT_MIN % -1 = 0.
template <typename T> __device__ __forceinline__ T fx_irem(T x, T y) {
  if (y == T(0)) return x;
  if (T(-1) < T(0) && y == T(-1)) return T(0);
  return T(x % y);
}
template <typename T> __device__ __forceinline__ T fx_iabs(T x) { return x < T(0) ? T(T(0) - x) : x; }

// Integer power as XLA's EmitIntegerPow: squaring over the exponent's low 6 bits; a negative
// exponent gives 1 for base 1 and 0 otherwise.
template <typename T> __device__ __forceinline__ T fx_ipow(T x, T y) {
  if (T(-1) < T(0) && y < T(0)) return x == T(1) ? T(1) : T(0);
  T result = T(1);
  T base = x;
  for (int i = 0; i < 6; ++i) {
    if (y & T(1)) result = T(result * base);
    base = T(base * base);
    y = T(y >> 1);
  }
  return result;
}

// Shifts by >= the bit width (the amount read unsigned) give 0, or the sign for arithmetic.
template <typename T, typename U> __device__ __forceinline__ T fx_shl(T x, T amount) {
  U a = U(amount);
  return a >= U(sizeof(T) * 8) ? T(0) : T(U(x) << a);
}
template <typename T, typename U> __device__ __forceinline__ T fx_shr_logical(T x, T amount) {
  U a = U(amount);
  return a >= U(sizeof(T) * 8) ? T(0) : T(U(x) >> a);
}
template <typename T, typename U> __device__ __forceinline__ T fx_shr_arith(T x, T amount) {
  U a = U(amount);
  bool negative = (U(x) >> (sizeof(T) * 8 - 1)) != U(0);
  if (a >= U(sizeof(T) * 8)) return negative ? T(~U(0)) : T(0);
  U shifted = U(x) >> a;
  if (negative && a > U(0)) shifted |= U(~U(0)) << (U(sizeof(T) * 8) - a);
  return T(shifted);
}
template <typename U> __device__ __forceinline__ U fx_popcount(U x) {
  U count = 0;
  for (; x != U(0); x &= U(x - U(1))) ++count;
  return count;
}
template <typename U> __device__ __forceinline__ U fx_count_leading_zeros(U x) {
  U count = 0;
  for (int bit = int(sizeof(U) * 8) - 1; bit >= 0 && ((x >> bit) & U(1)) == U(0); --bit) ++count;
  return count;
}

// Reinterpret the bits of a value of one type as another of the same width.
template <typename To, typename From> __device__ __forceinline__ To fx_bitcast(From x) {
  union { From from; To to; } u;
  u.from = x;
  return u.to;
}

// -- vector accesses -------------------------------------------------------------------------

// N consecutive elements of a buffer moved by one aligned access of N * sizeof(T) bytes (an
// access is at most 16 bytes: 4 doubles take two). The elementwise schedule reads a thread's
// `vector_width` elements this way: `const FxVec<float, 4> v = fx_load_vec<4>(in0 + e0);`, then
// `v.lane[k]`; and writes them with `fx_store_vec(out0 + e0, a, b, c, d)`.
template <typename T, int N>
struct alignas(N * sizeof(T) < 16 ? N * sizeof(T) : 16) FxVec { T lane[N]; };

// A GPU faults on a vector access whose address is not a multiple of its size; the emulator
// reports it as an error of the launch.
__device__ __forceinline__ void fx_check_vector_alignment(const void* address, unsigned bytes,
                                                          const char* access) {
#ifdef FX_EMULATION
  fx_emu::check_vector_alignment(address, bytes, access);
#endif
}

template <int N, typename T> __device__ __forceinline__ FxVec<T, N> fx_load_vec(const T* address) {
  fx_check_vector_alignment(address, alignof(FxVec<T, N>), "load");
  return *reinterpret_cast<const FxVec<T, N>*>(address);
}

template <typename T, typename... Lanes>
__device__ __forceinline__ void fx_store_vec(T* address, Lanes... lanes) {
  using Vec = FxVec<T, int(sizeof...(Lanes))>;
  fx_check_vector_alignment(address, alignof(Vec), "store");
  *reinterpret_cast<Vec*>(address) = Vec{{T(lanes)...}};
}

// -- reductions ------------------------------------------------------------------------------

struct FxAdd { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; } };
struct FxMul { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a * b; } };
struct FxMax { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return fx_max(a, b); } };
struct FxMin { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return fx_min(a, b); } };
struct FxAnd { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a & b; } };
struct FxOr { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a | b; } };
struct FxXor { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a ^ b; } };

// Butterfly all-reduce over aligned groups of `width` lanes (a power of two <= 32): every lane
// of the group ends with the group's result. All 32 lanes of the warp must call it.
template <typename T, typename Op>
__device__ __forceinline__ T fx_group_allreduce(T value, int width, Op op) {
  for (int offset = width / 2; offset > 0; offset /= 2) {
    value = op(value, __shfl_xor_sync(0xffffffff, value, offset));
  }
  return value;
}
