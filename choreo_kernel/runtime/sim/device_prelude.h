// What CUDA device code commonly relies on, for the host C++ compiler that builds a program's
// device functions for the sim. The sim calls a device function once per thread, one thread after
// the other, with threadIdx, blockIdx, blockDim and gridDim set as on the GPU; so atomics are plain
// read-modify-writes, fences do nothing, and what needs the threads of a warp or a block at once
// (barriers, shuffles, votes) stops the call with a message naming it. Inline PTX has no meaning on
// the CPU: the statement stops the call the same way.
#pragma once
#include <algorithm>
#include <cassert>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __constant__
#define __shared__ static
#define __restrict__ __restrict
#define __co_device__
#define __launch_bounds__(...)
#define __CHOREO_SIM__ 1

struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; };
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
struct int2 { int x, y; };
struct int4 { int x, y, z, w; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }

thread_local uint3 threadIdx, blockIdx;
thread_local dim3 blockDim, gridDim;
constexpr int warpSize = 32;

namespace choreo_sim {
thread_local const char* failure = nullptr;  // what stopped the call, for the sim's message
inline void unsupported(const char* what) {
  if (failure == nullptr) failure = what;
}
}  // namespace choreo_sim

extern "C" const char* choreo_sim_failure() { return choreo_sim::failure; }

// -------------------------------------------------------------------- threads that run together

inline void __syncthreads() { choreo_sim::unsupported("__syncthreads()"); }
inline int __syncthreads_count(int) { choreo_sim::unsupported("__syncthreads_count()"); return 0; }
inline int __syncthreads_and(int) { choreo_sim::unsupported("__syncthreads_and()"); return 0; }
inline int __syncthreads_or(int) { choreo_sim::unsupported("__syncthreads_or()"); return 0; }
inline void __syncwarp(unsigned = 0xffffffffu) { choreo_sim::unsupported("__syncwarp()"); }
template <typename T> T __shfl_sync(unsigned, T v, int, int = warpSize) { choreo_sim::unsupported("__shfl_sync()"); return v; }
template <typename T> T __shfl_up_sync(unsigned, T v, unsigned, int = warpSize) { choreo_sim::unsupported("__shfl_up_sync()"); return v; }
template <typename T> T __shfl_down_sync(unsigned, T v, unsigned, int = warpSize) { choreo_sim::unsupported("__shfl_down_sync()"); return v; }
template <typename T> T __shfl_xor_sync(unsigned, T v, int, int = warpSize) { choreo_sim::unsupported("__shfl_xor_sync()"); return v; }
inline unsigned __ballot_sync(unsigned, int) { choreo_sim::unsupported("__ballot_sync()"); return 0; }
inline int __any_sync(unsigned, int) { choreo_sim::unsupported("__any_sync()"); return 0; }
inline int __all_sync(unsigned, int) { choreo_sim::unsupported("__all_sync()"); return 0; }
inline unsigned __activemask() { choreo_sim::unsupported("__activemask()"); return 0; }
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}
inline void __nanosleep(unsigned) {}
#define CHOREO_SIM_ASM(...) choreo_sim::unsupported("inline assembly (asm)")

// ------------------------------------------------------------------------- atomics, one at a time

template <typename T, typename U> T atomicAdd(T* a, U v) { T old = *a; *a = old + T(v); return old; }
template <typename T, typename U> T atomicSub(T* a, U v) { T old = *a; *a = old - T(v); return old; }
template <typename T, typename U> T atomicExch(T* a, U v) { T old = *a; *a = T(v); return old; }
template <typename T, typename U> T atomicMin(T* a, U v) { T old = *a; *a = std::min(old, T(v)); return old; }
template <typename T, typename U> T atomicMax(T* a, U v) { T old = *a; *a = std::max(old, T(v)); return old; }
template <typename T, typename U> T atomicAnd(T* a, U v) { T old = *a; *a = old & T(v); return old; }
template <typename T, typename U> T atomicOr(T* a, U v) { T old = *a; *a = old | T(v); return old; }
template <typename T, typename U> T atomicXor(T* a, U v) { T old = *a; *a = old ^ T(v); return old; }
template <typename T, typename U, typename V> T atomicCAS(T* a, U compare, V v) {
  T old = *a;
  if (old == T(compare)) *a = T(v);
  return old;
}
inline unsigned atomicInc(unsigned* a, unsigned v) { unsigned old = *a; *a = old >= v ? 0 : old + 1; return old; }
inline unsigned atomicDec(unsigned* a, unsigned v) { unsigned old = *a; *a = (old == 0 || old > v) ? v : old - 1; return old; }

// ---------------------------------------------------------------------------- CUDA's half types
// Device functions take f16 and bf16 data as CUDA's __half and __nv_bfloat16 (cuda_fp16.h, cuda_bf16.h,
// whose includes are empty here): an IEEE half is the host compiler's _Float16, a bfloat16 the high half
// of a float's bits, rounded to nearest even as CUDA rounds it.
using __half = _Float16;
using half = __half;
inline float __half2float(__half h) { return static_cast<float>(h); }
inline __half __float2half(float f) { return static_cast<__half>(f); }
inline __half __float2half_rn(float f) { return static_cast<__half>(f); }

struct __nv_bfloat16 {
  unsigned short bits;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) {
    unsigned u;
    std::memcpy(&u, &f, sizeof u);
    bits = (u & 0x7fffffffu) > 0x7f800000u ? static_cast<unsigned short>((u >> 16) | 0x40u)  // a NaN stays one
                                           : static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  operator float() const {
    unsigned u = static_cast<unsigned>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
};
using nv_bfloat16 = __nv_bfloat16;
inline float __bfloat162float(__nv_bfloat16 b) { return b; }
inline __nv_bfloat16 __float2bfloat16(float f) { return f; }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return f; }

// --------------------------------------------------------------------------- math and bit tricks

template <typename T, typename U> auto min(T a, U b) -> decltype(a < b ? a : b) { return a < b ? a : b; }
template <typename T, typename U> auto max(T a, U b) -> decltype(a < b ? b : a) { return a < b ? b : a; }
inline float __expf(float x) { return std::exp(x); }
inline float __exp10f(float x) { return std::pow(10.0f, x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __frsqrt_rn(float x) { return 1.0f / std::sqrt(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline int __float_as_int(float x) { int i; std::memcpy(&i, &x, 4); return i; }
inline unsigned __float_as_uint(float x) { unsigned i; std::memcpy(&i, &x, 4); return i; }
inline float __int_as_float(int i) { float x; std::memcpy(&x, &i, 4); return x; }
inline float __uint_as_float(unsigned i) { float x; std::memcpy(&x, &i, 4); return x; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline int __mul24(int a, int b) { return a * b; }
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline long long clock64() { static thread_local long long ticks = 0; return ++ticks; }

// A thread of the frame the sim runs the call for: its index in the block, the block's, the sizes.
namespace choreo_sim {
inline void enter(long long thread, const int* block, const int* grid, int threads) {
  threadIdx = {static_cast<unsigned>(thread), 0, 0};
  blockIdx = {static_cast<unsigned>(block[0]), static_cast<unsigned>(block[1]), static_cast<unsigned>(block[2])};
  blockDim = {static_cast<unsigned>(threads), 1, 1};
  gridDim = {static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]), static_cast<unsigned>(grid[2])};
}
}  // namespace choreo_sim
