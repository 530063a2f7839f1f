// choreo_runtime.cuh: the device library that kernels emitted by choreo-kernel call.
//
// Every PTX instruction the CUDA backend uses lives here, behind a small named wrapper whose
// comment names the instruction and what its operands mean, so the emitted kernels read as
// Choreo statements rather than inline assembly. The header includes nothing: it compiles as it
// is under NVRTC and under nvcc (-gencode=arch=compute_90a,code=sm_90a).
#pragma once

#define CHOREO_DEVICE __device__ __forceinline__
// Device code (a cell's C++ part, a %%cuda cell) can tell it is built for the GPU, as the sim's prelude
// defines __CHOREO_SIM__ for its host build.
#ifndef __CHOREO_CUDA__
#define __CHOREO_CUDA__ 1
#endif

// How long a wait on an event may take before the kernel gives up and reports a deadlock.
#ifndef CHOREO_WAIT_TIMEOUT_NS
#define CHOREO_WAIT_TIMEOUT_NS 2000000000ull
#endif
// After this long a waiting thread also checks whether another block has already given up.
#define CHOREO_WAIT_POLL_NS 1000000ull
// How long a block that gave up lets the TMA loads it issued before land, so none still writes its
// shared memory when it exits (they take microseconds).
#define CHOREO_DRAIN_NS 100000ull

// Whether a block of a launch has given up, in device memory, which every block reads at its start and
// when it polls: the Status that tells the host lives in pinned host memory, and reading that at each
// block's start was measured to cost a whole wave on the H200 (a bench GEMM of 2048 blocks ran at a
// fifth of the speed of the same kernel as 132 persistent blocks). The host clears it after it reported
// the failure (runtime/cuda.py).
extern "C" {
__device__ unsigned choreo_launch_gave_up;
}

namespace choreo {

// ------------------------------------------------------------------------- element types

// Narrow floating types are kept as their bits; arithmetic on them happens in f32 (choreo docs types).
struct f16 { unsigned short bits; };
struct bf16 { unsigned short bits; };
struct f8_e4m3 { unsigned char bits; };
struct f8_e5m2 { unsigned char bits; };

// cvt.f32.f16 d, a: widen a half to a float (exact).
CHOREO_DEVICE float to_f32(f16 value) {
  float out;
  asm("cvt.f32.f16 %0, %1;" : "=f"(out) : "h"(value.bits));
  return out;
}

// A bf16 is the high half of an f32, so widening is a shift (exact).
CHOREO_DEVICE float to_f32(bf16 value) { return __uint_as_float(static_cast<unsigned>(value.bits) << 16); }

// cvt.rn.f16x2.e4m3x2 d, a: two fp8 values to two halves (exact); the low half is ours.
CHOREO_DEVICE float to_f32(f8_e4m3 value) {
  unsigned halves;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(halves) : "h"(static_cast<unsigned short>(value.bits)));
  return to_f32(f16{static_cast<unsigned short>(halves & 0xffffu)});
}

// cvt.rn.f16x2.e5m2x2 d, a: as above for e5m2.
CHOREO_DEVICE float to_f32(f8_e5m2 value) {
  unsigned halves;
  asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(halves) : "h"(static_cast<unsigned short>(value.bits)));
  return to_f32(f16{static_cast<unsigned short>(halves & 0xffffu)});
}

// cvt.rn.f16.f32 d, a: round a float to the nearest half.
CHOREO_DEVICE f16 to_f16(float value) {
  f16 out;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(out.bits) : "f"(value));
  return out;
}

// cvt.rn.bf16.f32 d, a: round a float to the nearest bf16.
CHOREO_DEVICE bf16 to_bf16(float value) {
  bf16 out;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(out.bits) : "f"(value));
  return out;
}

// cvt.rn.satfinite.e4m3x2.f32 d, a, b: two floats to two fp8 values (b lands in the low byte).
CHOREO_DEVICE f8_e4m3 to_f8_e4m3(float value) {
  unsigned short pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(value));
  return f8_e4m3{static_cast<unsigned char>(pair & 0xffu)};
}

// cvt.rn.satfinite.e5m2x2.f32 d, a, b: as above for e5m2.
CHOREO_DEVICE f8_e5m2 to_f8_e5m2(float value) {
  unsigned short pair;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(value));
  return f8_e5m2{static_cast<unsigned char>(pair & 0xffu)};
}

// ------------------------------------------------------------------------- narrow element types
// fp6 (e3m2, e2m3), fp4 (e2m1) and the integers of 6, 4, 2 and 1 bits are stored one per byte, as
// NumPy (ml_dtypes) holds them. Hopper has no conversion instructions for them (cvt's e2m1x2, e2m3x2
// and e3m2x2 need sm_100a), so they convert in software: to the nearest value, ties to even, finite
// values saturating at the largest one and NaN becoming -0, as ml_dtypes converts them; arithmetic
// happens in f32 and int (language.md 10). Host and device: tests build them for the CPU too.
#define CHOREO_ANY __host__ __device__ __forceinline__

struct f6_e3m2 { unsigned char bits; };
struct f6_e2m3 { unsigned char bits; };
struct f4_e2m1 { unsigned char bits; };

union float_bits {
  float value;
  unsigned bits;
};

// 2^n for -126 <= n <= 127, exactly.
CHOREO_ANY float power_of_two(int n) {
  float_bits out;
  out.bits = static_cast<unsigned>(127 + n) << 23;
  return out.value;
}

// A float rounded to the fp format of E exponent and M mantissa bits without infinities or NaN.
template <int E, int M> CHOREO_ANY unsigned char encode_minifloat(float x) {
  const int bias = (1 << (E - 1)) - 1;
  float_bits in;
  in.value = x;
  const unsigned sign = (in.bits >> 31) << (E + M);
  if ((in.bits & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned char>(1u << (E + M));  // NaN: -0
  float_bits magnitude;
  magnitude.bits = in.bits & 0x7fffffffu;
  const float largest = (2.0f - power_of_two(-M)) * power_of_two((1 << E) - 1 - bias);
  if (!(magnitude.value < largest)) return static_cast<unsigned char>(sign | ((1u << (E + M)) - 1));
  int exponent = static_cast<int>(magnitude.bits >> 23) - 127;
  if (exponent < 1 - bias) exponent = 1 - bias;  // the format's subnormals share one step
  const float units = rintf(magnitude.value / power_of_two(exponent - M));  // exact division, ties to even
  // units counts steps of 2^(exponent - M): the code is (exponent field - 1) * 2^M + units, which also
  // carries into the next exponent when the rounding reaches it and covers the subnormals (field 0).
  const unsigned code = (static_cast<unsigned>(exponent + bias - 1) << M) + static_cast<unsigned>(units);
  return static_cast<unsigned char>(sign | code);
}

template <int E, int M> CHOREO_ANY float decode_minifloat(unsigned char code) {
  const int bias = (1 << (E - 1)) - 1;
  const unsigned field = (code >> M) & ((1u << E) - 1);
  const unsigned mantissa = code & ((1u << M) - 1);
  const float magnitude = field ? static_cast<float>((1u << M) + mantissa) * power_of_two(static_cast<int>(field) - bias - M)
                                : static_cast<float>(mantissa) * power_of_two(1 - bias - M);
  return (code >> (E + M)) & 1 ? -magnitude : magnitude;
}

CHOREO_ANY float to_f32(f6_e3m2 value) { return decode_minifloat<3, 2>(value.bits); }
CHOREO_ANY float to_f32(f6_e2m3 value) { return decode_minifloat<2, 3>(value.bits); }
CHOREO_ANY float to_f32(f4_e2m1 value) { return decode_minifloat<2, 1>(value.bits); }
CHOREO_ANY f6_e3m2 to_f6_e3m2(float value) { return f6_e3m2{encode_minifloat<3, 2>(value)}; }
CHOREO_ANY f6_e2m3 to_f6_e2m3(float value) { return f6_e2m3{encode_minifloat<2, 3>(value)}; }
CHOREO_ANY f4_e2m1 to_f4_e2m1(float value) { return f4_e2m1{encode_minifloat<2, 1>(value)}; }

// An integer of `Bits` bits in a byte: read from its low bits (sign-extended where signed), written as
// C converts to a narrower integer, keeping the low bits (a signed one sign-extended through the byte).
#define CHOREO_SMALL_INT(NAME, BITS, SIGNED)                                                        \
  struct NAME { unsigned char bits; };                                                              \
  CHOREO_ANY int to_int(NAME value) {                                                               \
    const int low = value.bits & ((1 << BITS) - 1);                                                 \
    return SIGNED && (low >> (BITS - 1)) ? low - (1 << BITS) : low;                                 \
  }                                                                                                 \
  template <class T> CHOREO_ANY NAME to_##NAME(T value) {                                           \
    const int low = static_cast<int>(static_cast<long long>(value)) & ((1 << BITS) - 1);            \
    return NAME{static_cast<unsigned char>(SIGNED && (low >> (BITS - 1)) ? low - (1 << BITS) : low)}; \
  }
CHOREO_SMALL_INT(u6, 6, false)
CHOREO_SMALL_INT(s6, 6, true)
CHOREO_SMALL_INT(u4, 4, false)
CHOREO_SMALL_INT(s4, 4, true)
CHOREO_SMALL_INT(u2, 2, false)
CHOREO_SMALL_INT(s2, 2, true)
CHOREO_SMALL_INT(u1, 1, false)
#undef CHOREO_SMALL_INT

// bin1: one bit with bool's conversion (any non-zero value is 1), as cute's bin1_t.
struct bin1 { unsigned char bits; };
CHOREO_ANY int to_int(bin1 value) { return value.bits & 1; }
template <class T> CHOREO_ANY bin1 to_bin1(T value) { return bin1{static_cast<unsigned char>(value != T(0))}; }

// ------------------------------------------------------------------------- scalar helpers

// cdiv(a, b): a / b rounded up, for tile counts.
CHOREO_DEVICE int cdiv(int a, int b) { return (a + b - 1) / b; }

// __max, __min and __abs of Choreo, for any arithmetic type (C promotion of mixed operands).
template <class A, class B> CHOREO_DEVICE auto max(A a, B b) -> decltype(a + b) { return a > b ? a : b; }
template <class A, class B> CHOREO_DEVICE auto min(A a, B b) -> decltype(a + b) { return a < b ? a : b; }
template <class T> CHOREO_DEVICE T abs(T value) { return value < T(0) ? -value : value; }

// The math built-ins of Choreo (compiler/semantics/math.py lists them): each for float and double,
// so a call computes in the type the compiler chose (f64 where an argument is f64, else f32).
namespace math {
using choreo::abs;
using choreo::max;
using choreo::min;

#define CHOREO_MATH_UNARY(NAME, F32, F64)                      \
  CHOREO_DEVICE float NAME(float x) { return F32(x); }      \
  CHOREO_DEVICE double NAME(double x) { return F64(x); }
#define CHOREO_MATH_BINARY(NAME, F32, F64)                                \
  CHOREO_DEVICE float NAME(float x, float y) { return F32(x, y); }     \
  CHOREO_DEVICE double NAME(double x, double y) { return F64(x, y); }

CHOREO_MATH_UNARY(exp, ::expf, ::exp)
CHOREO_MATH_UNARY(expm1, ::expm1f, ::expm1)
CHOREO_MATH_UNARY(log, ::logf, ::log)
CHOREO_MATH_UNARY(log1p, ::log1pf, ::log1p)
CHOREO_MATH_UNARY(sqrt, ::sqrtf, ::sqrt)
CHOREO_MATH_UNARY(rsqrt, ::rsqrtf, ::rsqrt)
CHOREO_MATH_UNARY(frcp_rn, ::__frcp_rn, ::__drcp_rn)
CHOREO_MATH_UNARY(sin, ::sinf, ::sin)
CHOREO_MATH_UNARY(cos, ::cosf, ::cos)
CHOREO_MATH_UNARY(tan, ::tanf, ::tan)
CHOREO_MATH_UNARY(asin, ::asinf, ::asin)
CHOREO_MATH_UNARY(acos, ::acosf, ::acos)
CHOREO_MATH_UNARY(atan, ::atanf, ::atan)
CHOREO_MATH_UNARY(sinh, ::sinhf, ::sinh)
CHOREO_MATH_UNARY(cosh, ::coshf, ::cosh)
CHOREO_MATH_UNARY(tanh, ::tanhf, ::tanh)
CHOREO_MATH_UNARY(ceil, ::ceilf, ::ceil)
CHOREO_MATH_UNARY(floor, ::floorf, ::floor)
CHOREO_MATH_UNARY(round, ::roundf, ::round)
CHOREO_MATH_UNARY(fabs, ::fabsf, ::fabs)
CHOREO_MATH_BINARY(pow, ::powf, ::pow)
CHOREO_MATH_BINARY(atan2, ::atan2f, ::atan2)
// __exp2f in f32 is one ex2.approx.ftz.f32 (one MUFU.EX2, as FlashAttention's softmax takes it): CUDA's
// exp2f is the same MUFU with four more instructions a call that only keep results below 2^-126 subnormal;
// here they flush to 0 (the sim does the same: compiler/semantics/math.py).
CHOREO_DEVICE float exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
CHOREO_DEVICE double exp2(double x) { return ::exp2(x); }
#undef CHOREO_MATH_UNARY
#undef CHOREO_MATH_BINARY

template <class T> CHOREO_DEVICE T fma(T a, T b, T c) { return ::fma(a, b, c); }
CHOREO_DEVICE float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
template <class T> CHOREO_DEVICE T sign(T x) { return T((x > T(0)) - (x < T(0))); }  // NaN: 0
template <class T> CHOREO_DEVICE T isfinite(T x) { return T(x - x == T(0)); }  // inf - inf and NaN are NaN
template <class T> CHOREO_DEVICE T sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }
template <class T> CHOREO_DEVICE T softplus(T x) { return log1p(exp(x)); }
// GELU's tanh approximation: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <class T> CHOREO_DEVICE T gelu(T x) {
  return x * T(0.5) * (T(1) + tanh(T(0.7978845608028654) * (x + T(0.044715) * x * x * x)));
}
// __alignup / __aligndown: n rounded to a multiple of a, with C's division (as cdiv).
template <class A, class B> CHOREO_DEVICE auto alignup(A n, B a) -> decltype(n + a) { return (n + a - 1) / a * a; }
template <class A, class B> CHOREO_DEVICE auto aligndown(A n, B a) -> decltype(n + a) { return n / a * a; }
}  // namespace math

// A Python-slice bound of `foreach j(start:stop:step)`: negative counts from the end, then clamped.
CHOREO_DEVICE int slice_bound(int index, int extent, bool descending) {
  if (index < 0) index += extent;
  const int low = descending ? -1 : 0;
  const int high = descending ? extent - 1 : extent;
  return index < low ? low : (index > high ? high : index);
}

// %globaltimer: nanoseconds of the GPU's global clock.
CHOREO_DEVICE unsigned long long global_timer_ns() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

// cvta.to.shared: the 32-bit shared-memory address that PTX shared-memory instructions take.
CHOREO_DEVICE unsigned shared_address(const void* pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

// ------------------------------------------------------------------------- barriers

// Whether this block has given up on a wait, or learned that another block of the launch did. Once it
// has, the block's later waits return at once and it issues no more TMA loads; every thread runs the
// rest of the kernel (its barriers stay matched, and the copies and MMAs it waits for itself complete),
// the kernel ends, and the host raises the error. A wait never traps: a trap would lose the process's
// CUDA context, and every later call with it.
__shared__ unsigned block_failed;

// bar.sync id, threads: named barrier `id` (1..15; 0 is __syncthreads) for `threads` threads, whole warps.
CHOREO_DEVICE void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// bar.arrive id, threads: count this warp in on named barrier `id` without waiting for the others.
CHOREO_DEVICE void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// An event slot: a 64-bit mbarrier in shared memory (phase bit, pending arrivals, expected arrivals).
struct alignas(8) mbarrier {
  unsigned long long state;
};

// mbarrier.init.shared::cta.b64 [bar], count: phase 0 starts pending and completes after `count` arrivals.
CHOREO_DEVICE void mbarrier_init(mbarrier* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(count) : "memory");
}

// fence.mbarrier_init.release.cluster: publish initialized mbarriers before the block barrier that follows.
CHOREO_DEVICE void fence_mbarrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

// %cluster_ctarank: this block's rank in its thread-block cluster.
CHOREO_DEVICE unsigned cluster_ctarank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

// barrier.cluster.arrive.release + barrier.cluster.wait.acquire: every thread of every block of the cluster
// meets here; the writes before it (mbarrier inits, shared memory) are visible to the blocks after it.
CHOREO_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

// mapa.shared::cluster + mbarrier.arrive.release.cta.shared::cluster.b64 _, [remote]: one arrival on the
// mbarrier at the same place in the shared memory of the cluster's block `rank`. The release is at the
// block's scope, as CUTLASS's ClusterBarrier::arrive: it orders this thread's accesses to its own block's
// shared memory (the tiles a multicast refills) before the arrival. A cluster-scope release would be a
// GPU-wide memory barrier (MEMBAR.ALL.GPU in SASS) before every arrival, on every stage of a main loop.
CHOREO_DEVICE void mbarrier_arrive_cluster(mbarrier* bar, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(shared_address(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.release.cta.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

// One arrival per thread on the mbarrier of each of the cluster's `blocks` blocks.
CHOREO_DEVICE void mbarrier_arrive_cluster_all(mbarrier* bar, unsigned blocks) {
  for (unsigned rank = 0; rank < blocks; ++rank) mbarrier_arrive_cluster(bar, rank);
}

// One arrival for a whole warp on the mbarrier of each of the cluster's `blocks` blocks, once its lanes
// have all arrived here: lane r arrives on block r's, so the arrivals leave together.
CHOREO_DEVICE void mbarrier_arrive_cluster_all_warp(mbarrier* bar, unsigned blocks) {
  __syncwarp();
  const unsigned lane = threadIdx.x & 31;
  if (lane < blocks) mbarrier_arrive_cluster(bar, lane);
}

// mbarrier.arrive.release.cta.shared::cta.b64 _, [bar]: one arrival; this thread's earlier writes happen before it.
CHOREO_DEVICE void mbarrier_arrive(mbarrier* bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(shared_address(bar)) : "memory");
}

// One arrival for a whole warp: __syncwarp gathers its threads (and orders their shared-memory accesses),
// then lane 0 arrives for all 32. An event whose triggering threads are whole warps counts warps.
CHOREO_DEVICE void mbarrier_arrive_warp(mbarrier* bar) {
  __syncwarp();
  if ((threadIdx.x & 31) == 0) mbarrier_arrive(bar);
}

// mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [bar], bytes: one arrival that also announces
// `bytes` still to land; the phase completes when the arrivals are in and the copy engine has counted
// all those bytes down (complete_tx).
CHOREO_DEVICE void mbarrier_arrive_expect_tx(mbarrier* bar, unsigned bytes) {
  if (block_failed) return;  // no more loads once the block has given up (their waits return at once)
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)),
               "r"(bytes)
               : "memory");
}

// mbarrier.try_wait.parity.cta.shared::cta.b64 done, [bar], parity: has the phase of this parity
// completed? Suspends the thread for a short while before answering no.
CHOREO_DEVICE bool mbarrier_try_wait_parity(mbarrier* bar, unsigned parity) {
  unsigned done;
  asm volatile(
      "{\n .reg .pred complete;\n"
      " mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 complete, [%1], %2;\n"
      " selp.u32 %0, 1, 0, complete;\n}"
      : "=r"(done)
      : "r"(shared_address(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

// What a kernel tells the host when a wait gives up: kept in host memory the GPU writes directly, so it
// can be read whatever state the GPU is left in. `site` indexes the function's table of wait sites.
struct Status {
  unsigned failed;
  unsigned site;
};

CHOREO_DEVICE void report_timeout(Status* status, unsigned site) {
  volatile Status* shared_status = status;
  shared_status->site = site;
  __threadfence_system();
  shared_status->failed = 1;
  __threadfence_system();
  *static_cast<volatile unsigned*>(&choreo_launch_gave_up) = 1;
  __threadfence();
}

// This thread's place among all the threads of the grid (blocks in x, y, z order, then threadIdx.x): where
// a local buffer whose size the call's arguments give finds its slice of the launch's global scratch.
CHOREO_DEVICE size_t grid_thread() {
  const size_t block = (size_t(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  return block * blockDim.x + threadIdx.x;
}

// Whether another block of the launch has given up (the host's Status says the same, but reads slower).
CHOREO_DEVICE unsigned launch_failed(Status*) { return *static_cast<volatile unsigned*>(&choreo_launch_gave_up); }

// This block gives up: its later waits return at once (false, for the wait that gave up).
CHOREO_DEVICE bool give_up() {
  block_failed = 1;
  return false;
}

// At the start of a block: whether to run it at all. A block that starts after another has given up does
// nothing; one thread reads the host-visible status and the block's threads decide alike.
CHOREO_DEVICE bool block_starts(Status* status) {
  if (threadIdx.x == 0) block_failed = launch_failed(status);
  __syncthreads();
  return !block_failed;
}

// At the end of a block: if it gave up, let the TMA loads it issued before that land before it exits.
CHOREO_DEVICE void block_ends() {
  if (!block_failed) return;
  const unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < CHOREO_DRAIN_NS) {
  }
}

// wait on an event generation: the phase of `parity` on `bar`; false if the block gave up on it. A wait
// is bounded: after CHOREO_WAIT_TIMEOUT_NS it reports `site` and gives up, and it gives up at once when
// the block already has, or (checked every CHOREO_WAIT_POLL_NS) when another block has, so a deadlock
// becomes an error on the host instead of a hung GPU.
__device__ inline bool event_wait(mbarrier* bar, unsigned parity, Status* status, unsigned site) {
  if (mbarrier_try_wait_parity(bar, parity)) return true;
  const unsigned long long start = global_timer_ns();
  unsigned long long polled = start;
  while (!mbarrier_try_wait_parity(bar, parity)) {
    if (static_cast<volatile unsigned&>(block_failed)) return false;
    const unsigned long long now = global_timer_ns();
    if (now - polled > CHOREO_WAIT_POLL_NS) {
      polled = now;
      if (launch_failed(status)) return give_up();
    }
    if (now - start > CHOREO_WAIT_TIMEOUT_NS) {
      report_timeout(status, site);
      return give_up();
    }
  }
  return true;
}

// A `while (event)` loop spins while the generations it names are pending, at most
// CHOREO_WAIT_TIMEOUT_NS: then it reports `site`, the block gives up and the loop ends (`start` is the
// loop's own clock, 0 before its first test).
CHOREO_DEVICE bool spinning(bool pending, unsigned long long& start, Status* status, unsigned site) {
  if (!pending || static_cast<volatile unsigned&>(block_failed)) return false;
  const unsigned long long now = global_timer_ns();
  if (start == 0) {
    start = now;
  } else if (now - start > CHOREO_WAIT_TIMEOUT_NS) {
    report_timeout(status, site);
    return give_up();
  } else if (launch_failed(status)) {
    return give_up();
  }
  return true;
}

// Whether any of `slots` event slots is pending: slot i waits for the parity in bit i of `phase`.
CHOREO_DEVICE bool any_pending(mbarrier* bar, int slots, unsigned long long phase) {
  for (int slot = 0; slot < slots; ++slot)
    if (!mbarrier_try_wait_parity(&bar[slot], static_cast<unsigned>((phase >> slot) & 1ull))) return true;
  return false;
}

// sync.barrier : block in a cooperative launch: every block of the grid meets (they are all resident).
// Thread 0 of each block counts its block in at `barrier[0]`; the last to arrive resets the count and
// opens the next generation in `barrier[1]`, which the others wait for, bounded like an event wait.
__device__ inline void grid_sync(unsigned* barrier, Status* status, unsigned site) {
  __syncthreads();
  if (threadIdx.x == 0 && !block_failed) {
    const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
    volatile unsigned* generation = barrier + 1;
    const unsigned seen = *generation;
    __threadfence();  // this block's writes before the barrier are seen by every block after it
    if (atomicAdd(barrier, 1u) == blocks - 1) {
      atomicExch(barrier, 0u);
      __threadfence();
      atomicAdd(barrier + 1, 1u);
    } else {
      const unsigned long long start = global_timer_ns();
      while (*generation == seen) {
        const unsigned long long now = global_timer_ns();
        if (now - start > CHOREO_WAIT_TIMEOUT_NS) {
          report_timeout(status, site);
          give_up();
          break;
        }
        if (launch_failed(status)) {
          give_up();
          break;
        }
      }
    }
    __threadfence();
  }
  __syncthreads();
}

// assert(cond, "message") that fails when it runs: the host reports `site` (the statement and its
// message) after the launch; the block gives up its later waits, as after a timeout, and runs on.
CHOREO_DEVICE void assertion_fails(Status* status, unsigned site) {
  report_timeout(status, site);
  block_failed = 1;
}

// ------------------------------------------------------------------------- cp.async

// cp.async.cg.shared.global [dst], [src], 16: copy 16 bytes from global to shared memory in the background.
CHOREO_DEVICE void cp_async_16(void* shared_destination, const void* global_source) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared_address(shared_destination)),
               "l"(global_source)
               : "memory");
}

// cp.async.ca.shared.global [dst], [src], N (N = 4 or 8): copy one small element in the background.
template <int Bytes> CHOREO_DEVICE void cp_async_element(void* shared_destination, const void* global_source) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(shared_address(shared_destination)),
               "l"(global_source), "n"(Bytes)
               : "memory");
}

// cp.async.commit_group: close this thread's batch of cp.async copies; returns the batch's number.
CHOREO_DEVICE int cp_async_commit(int& committed) {
  asm volatile("cp.async.commit_group;" ::: "memory");
  return ++committed;
}

// cp.async.wait_group N: wait until at most N of this thread's batches are still in flight.
template <int N> CHOREO_DEVICE void cp_async_wait_group() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// Wait for batch `group` out of `committed`: the batches after it may stay in flight. Batch 0 is
// "nothing in flight" (a placeholder future, or a copy that completed at once).
__device__ inline void cp_async_wait(int group, int committed) {
  if (group <= 0) return;
  switch (committed - group) {  // wait_group takes an immediate
    case 0: cp_async_wait_group<0>(); break;
    case 1: cp_async_wait_group<1>(); break;
    case 2: cp_async_wait_group<2>(); break;
    case 3: cp_async_wait_group<3>(); break;
    default: cp_async_wait_group<4>(); break;  // waits for more than needed, never less
  }
}

// ------------------------------------------------------------------------- copies

// A 2-D region: `rows` rows of `cols` contiguous elements, the rows `stride` elements apart; in shared
// memory, possibly in the `swizzle`-byte layout of TMA and WGMMA (0: row-major). A tile of a buffer
// whose rows are wider than its swizzle lies in panels (compiler/cuda/layouts.py): each panel holds
// `stride` columns of every row, the panels `panel_stride` elements apart, and the tile's first
// element is column `first` of its panel (panel_stride 0: the rows are contiguous).
template <class T> struct Tile {
  T* data;
  int rows;
  int cols;
  int stride;
  int swizzle;
  int panel_stride;
  int first;
};

template <class T>
CHOREO_DEVICE Tile<T> tile(T* data, int rows, int cols, int stride, int swizzle = 0, int panel_stride = 0,
                           int first = 0) {
  return Tile<T>{data, rows, cols, stride, swizzle, panel_stride, first};
}

// An R-dimensional region of any strides (in elements), outermost dimension first: what a copy moves
// where its elements do not form rows of contiguous elements (a transpose, a strided view, a tile
// strided in three or more dimensions).
template <class T, int R> struct Region {
  T* data;
  int dims[R];
  int strides[R];
};

template <class T, int R> CHOREO_DEVICE Region<T, R> region(T* data, const int (&dims)[R], const int (&strides)[R]) {
  Region<T, R> out{data, {}, {}};
#pragma unroll
  for (int k = 0; k < R; ++k) {
    out.dims[k] = dims[k];
    out.strides[k] = strides[k];
  }
  return out;
}

// R coordinates, outermost first: where dma.pad places its source in the destination.
template <int R> struct Index {
  int values[R];
};

struct alignas(16) Vector16 {
  unsigned x, y, z, w;
};

// The 16-byte vector type with the constness of T.
template <class T> struct VectorOf {
  using type = Vector16;
};
template <class T> struct VectorOf<const T> {
  using type = const Vector16;
};

CHOREO_DEVICE bool aligned(const void* pointer, unsigned bytes) {
  return (reinterpret_cast<unsigned long long>(pointer) & (bytes - 1)) == 0;
}

template <class T> CHOREO_DEVICE int count(Tile<T> region) { return region.rows * region.cols; }
template <class T, int R> CHOREO_DEVICE int count(Region<T, R> region) {
  int total = 1;
#pragma unroll
  for (int k = 0; k < R; ++k) total *= region.dims[k];
  return total;
}

// Whether a tile can move as 16-byte vectors: its start, its row length and its row stride are multiples of 16 bytes.
template <class T> CHOREO_DEVICE bool vectorizable(Tile<T> region) {
  return aligned(region.data, 16) && (region.cols * sizeof(T)) % 16 == 0 &&
         (region.rows == 1 || (region.stride * sizeof(T)) % 16 == 0) &&
         (region.panel_stride * sizeof(T)) % 16 == 0 && (region.first * sizeof(T)) % 16 == 0;
}
// A region can when its innermost dimension is contiguous and a multiple of 16 bytes, its start and
// its other strides multiples of 16 bytes.
template <class T, int R> CHOREO_DEVICE bool vectorizable(Region<T, R> region) {
  bool able = aligned(region.data, 16) && region.strides[R - 1] == 1 && (region.dims[R - 1] * sizeof(T)) % 16 == 0;
#pragma unroll
  for (int k = 0; k < R - 1; ++k) able = able && (region.dims[k] == 1 || (region.strides[k] * sizeof(T)) % 16 == 0);
  return able;
}

// Where item `index` of a tile lies, counting `per_row` items per row; rows == 1 needs no division.
CHOREO_DEVICE int item_offset(int index, int rows, int per_row, int stride) {
  return rows == 1 ? index : (index / per_row) * stride + index % per_row;
}

// Item `index` of a tile, counting row by row. In a swizzled tile the 16-byte chunk number within each
// `swizzle`-byte row is XORed with bits 7 and up of the shared address (CUTLASS's Swizzle<B,4,3>), which
// is where TMA puts it and where a WGMMA descriptor reads it.
// Where column `column` of row `row` of a tile in panels lies, from the tile's first element.
CHOREO_DEVICE int panel_item_offset(int row, int column, int stride, int panel_stride, int first) {
  const int within = first + column;
  return (within / stride) * panel_stride + row * stride + within % stride - first;
}

template <class T> CHOREO_DEVICE T& item(Tile<T> region, int index) {
  T* const at = region.data + (region.panel_stride == 0
                                   ? item_offset(index, region.rows, region.cols, region.stride)
                                   : panel_item_offset(index / region.cols, index % region.cols, region.stride,
                                                       region.panel_stride, region.first));
  if (region.swizzle == 0) return *at;
  const unsigned address = shared_address(at);
  const unsigned chunks = ((address >> 7) & (region.swizzle / 16 - 1)) << 4;
  return at[(static_cast<int>(address ^ chunks) - static_cast<int>(address)) / static_cast<int>(sizeof(T))];
}

// Item `index` of a region, counting in row-major order.
template <class T, int R> CHOREO_DEVICE T& item(Region<T, R> region, int index) {
  int offset = 0;
#pragma unroll
  for (int k = R - 1; k > 0; --k) {
    offset += (index % region.dims[k]) * region.strides[k];
    index /= region.dims[k];
  }
  return region.data[offset + index * region.strides[0]];
}

// A vectorizable tile or region seen as 16-byte vectors: its innermost extent and other strides counted in vectors.
template <class T> CHOREO_DEVICE Tile<typename VectorOf<T>::type> as_vectors(Tile<T> region) {
  return Tile<typename VectorOf<T>::type>{reinterpret_cast<typename VectorOf<T>::type*>(region.data), region.rows,
                                          static_cast<int>(region.cols * sizeof(T) / 16),
                                          static_cast<int>(region.stride * sizeof(T) / 16), region.swizzle,
                                          static_cast<int>(region.panel_stride * sizeof(T) / 16),
                                          static_cast<int>(region.first * sizeof(T) / 16)};
}
template <class T, int R> CHOREO_DEVICE Region<typename VectorOf<T>::type, R> as_vectors(Region<T, R> region) {
  Region<typename VectorOf<T>::type, R> out{reinterpret_cast<typename VectorOf<T>::type*>(region.data), {}, {}};
#pragma unroll
  for (int k = 0; k < R; ++k) {
    out.dims[k] = region.dims[k];
    out.strides[k] = static_cast<int>(region.strides[k] * sizeof(T) / 16);
  }
  out.dims[R - 1] = static_cast<int>(region.dims[R - 1] * sizeof(T) / 16);
  out.strides[R - 1] = 1;
  return out;
}

// Copy `source` into `destination` (tiles or regions of as many elements, each side walked in its own
// row-major order) with the `threads` threads of the calling group, `rank` being this thread's place among
// them. Both sides move in 16-byte vectors when they allow it, four vectors in flight per thread; otherwise
// element by element.
template <class To, class From> __device__ inline void copy(To destination, From source, int rank, int threads) {
  static_assert(sizeof(*destination.data) == sizeof(*source.data), "a copy keeps the element type");
  if (vectorizable(destination) && vectorizable(source)) {
    const auto to = as_vectors(destination);
    const auto from = as_vectors(source);
    const int total = count(from);
    int index = rank;
    for (; index + 3 * threads < total; index += 4 * threads) {
      Vector16 batch[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) batch[k] = item(from, index + k * threads);
#pragma unroll
      for (int k = 0; k < 4; ++k) item(to, index + k * threads) = batch[k];
    }
    for (; index < total; index += threads) item(to, index) = item(from, index);
    return;
  }
  for (int index = rank; index < count(source); index += threads) item(destination, index) = item(source, index);
}

// Start copying global `source` into shared `destination` with cp.async: 16-byte pieces when both sides
// allow it, else 4- or 8-byte elements. Other element sizes are copied at once, which an async copy allows.
template <class To, class From> __device__ inline void copy_async(To destination, From source, int rank, int threads) {
  static_assert(sizeof(*destination.data) == sizeof(*source.data), "a copy keeps the element type");
  constexpr unsigned size = sizeof(*source.data);
  if (vectorizable(destination) && vectorizable(source)) {
    const auto to = as_vectors(destination);
    const auto from = as_vectors(source);
    for (int index = rank; index < count(from); index += threads) cp_async_16(&item(to, index), &item(from, index));
    return;
  }
  if constexpr (size == 4 || size == 8) {
    for (int index = rank; index < count(source); index += threads) {
      cp_async_element<size>(&item(destination, index), &item(source, index));
    }
  } else {
    copy(destination, source, rank, threads);
  }
}

// dma.pad, and a copy into a larger tile: `source` lands at `low` in `destination` (regions of one rank) and
// every other element of the destination becomes `fill` (converted to its type), shared among the `threads`
// threads of the group. The source moves as a plain copy into the corner (in vectors where it can), the
// fill touches only the elements around it, and where the corner is the whole tile (a tail tile that is
// not short this time) there is nothing to fill. `Async`: the corner moves with cp.async (global to shared),
// the fill at once.
template <class T> struct Same {
  using type = T;
};

template <bool Async, class D, class S, int R>
__device__ inline void copy_padded(Region<D, R> destination, Region<S, R> source, Index<R> low,
                                   typename Same<D>::type fill, int rank, int threads) {
  static_assert(sizeof(D) == sizeof(S), "a copy keeps the element type");
  Region<D, R> corner = destination;
  bool whole = true;
#pragma unroll
  for (int k = 0; k < R; ++k) {
    corner.data += low.values[k] * destination.strides[k];
    corner.dims[k] = source.dims[k];
    whole = whole && low.values[k] == 0 && source.dims[k] == destination.dims[k];
  }
  if (!whole) {
    for (int index = rank; index < count(destination); index += threads) {
      int rest = index, at = 0;
      bool inside = true;
#pragma unroll
      for (int k = R - 1; k >= 0; --k) {
        const int coordinate = rest % destination.dims[k];
        rest /= destination.dims[k];
        at += coordinate * destination.strides[k];
        inside = inside && low.values[k] <= coordinate && coordinate < low.values[k] + source.dims[k];
      }
      if (!inside) destination.data[at] = fill;
    }
  }
  if constexpr (Async) {
    copy_async(corner, source, rank, threads);
  } else {
    copy(corner, source, rank, threads);
  }
}

// The same into a 2-D tile in a swizzled layout (possibly in panels): every element is placed by item(),
// the source's corner moved to `low` in the tile as the tile's layout moves it.
template <bool Async, class D, class S>
__device__ inline void copy_padded(Tile<D> destination, Region<S, 2> source, Index<2> low,
                                   typename Same<D>::type fill, int rank, int threads) {
  static_assert(sizeof(D) == sizeof(S), "a copy keeps the element type");
  const int top = low.values[0], left = low.values[1];
  const bool whole = top == 0 && left == 0 && source.dims[0] == destination.rows && source.dims[1] == destination.cols;
  for (int index = rank; !whole && index < count(destination); index += threads) {
    const int row = index / destination.cols, column = index % destination.cols;
    const bool inside = top <= row && row < top + source.dims[0] && left <= column && column < left + source.dims[1];
    if (!inside) item(destination, index) = fill;
  }
  Tile<D> corner = destination;
  corner.rows = source.dims[0];
  corner.cols = source.dims[1];
  if (destination.panel_stride == 0) {
    corner.data += top * destination.stride + left;
  } else {
    corner.data += panel_item_offset(top, left, destination.stride, destination.panel_stride, destination.first);
    corner.first = (destination.first + left) % destination.stride;
  }
  if constexpr (Async) {
    copy_async(corner, source, rank, threads);
  } else {
    copy(corner, source, rank, threads);
  }
}

// Fill `count` elements with `value`, shared among `threads` threads.
template <class T> CHOREO_DEVICE void fill(T* data, int count, T value, int rank, int threads) {
  for (int index = rank; index < count; index += threads) data[index] = value;
}

// ------------------------------------------------------------------------- futures

// A data future: where its copy lands and the cp.async batch that carries it (0: nothing in flight).
template <class T> struct DataFuture {
  T* data;
  int group;
};

// A TMA future that swap/rotate move between names: where its load lands, the mbarrier it lands on,
// and the phase of that mbarrier this thread waits for next (the phase belongs to the mbarrier, so
// the future points at it). All null: a placeholder (tma.any) that holds no buffer yet.
template <class T> struct TmaFuture {
  T* data;
  mbarrier* landed;
  unsigned* phase;
};

// swap(a, b) and rotate(a, b, c, ...) of Choreo: each future takes the next one's value, the last the first's.
template <class T> CHOREO_DEVICE void rotate(T& first, T& second) {
  T kept = first;
  first = second;
  second = kept;
}
template <class T, class... Rest> CHOREO_DEVICE void rotate(T& first, T& second, Rest&... rest) {
  rotate(first, second);
  rotate(second, rest...);
}

// ------------------------------------------------------------------------- shared layouts

// The first `alignment`-byte aligned address of the dynamic shared memory: swizzled tiles repeat their
// pattern every 1024 bytes of the shared address space, so they start on such a boundary.
CHOREO_DEVICE unsigned char* align_shared(unsigned char* base, unsigned alignment) {
  const unsigned misalignment = shared_address(base) & (alignment - 1);
  return base + (misalignment ? alignment - misalignment : 0);
}

// Byte `offset` of a tile in the `Swizzle`-byte swizzled layout of TMA and WGMMA (CUTLASS's Swizzle<B,4,3>):
// the 16-byte chunk number within each `Swizzle`-byte row is XORed with the row number (mod Swizzle / 16).
template <int Swizzle> CHOREO_DEVICE unsigned swizzled(unsigned offset) {
  if constexpr (Swizzle == 0) {
    return offset;
  } else {
    return offset ^ (((offset >> 7) & (Swizzle / 16 - 1)) << 4);
  }
}

// Element `offset` (row-major, counting from `base`) of a shared buffer of `rows` rows of `columns`
// elements stored in panels `width` elements wide (compiler/cuda/layouts.py): panel by panel, each panel
// holding `width` columns of every row. Consecutive buffers of a buffer array follow one another.
// Unsigned: an offset is never negative, and with the power-of-two sizes of tiles each division is then
// a shift and each remainder a mask (signed ones round towards zero: a dozen instructions each, between
// the WGMMAs whose descriptors they address).
CHOREO_DEVICE int panel_offset(int offset, int rows, int columns, int width) {
  const unsigned at = offset, matrix = rows * columns, within = at % matrix, column = within % columns;
  const unsigned panel_rows = rows, panel = width;
  return static_cast<int>(at - within + (column / panel) * panel_rows * panel + (within / columns) * panel + column % panel);
}

// The element at `base + offset` of a shared buffer in the `Swizzle`-byte swizzled layout: its 16-byte chunk
// moves as item() moves it, by the bits of its shared address.
template <int Swizzle, class T> CHOREO_DEVICE T& swizzled_element(T* base, int offset) {
  T* const at = base + offset;
  const unsigned address = shared_address(at);
  const unsigned chunks = ((address >> 7) & (Swizzle / 16 - 1)) << 4;
  return at[(static_cast<int>(address ^ chunks) - static_cast<int>(address)) / static_cast<int>(sizeof(T))];
}

// fence.proxy.async.shared::cta: this thread's ordinary shared-memory writes become visible to the copy engine
// and the tensor cores (the async proxy), which a TMA store or a WGMMA reading them next needs.
CHOREO_DEVICE void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// ------------------------------------------------------------------------- TMA (bulk tensor copies)

// A tensor map (CUtensorMap): 128 opaque bytes describing a global array and the box one copy moves, encoded
// on the host (runtime/tensormap.py) and passed by value as a `const __grid_constant__` kernel parameter.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

// cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes [dst], [map, {x, ...}], [bar]:
// the copy engine moves the box at coordinates (x innermost, 1 to 5 of them) of the map's array into shared
// memory at `dst` and counts its bytes down on `bar`.
template <class... Coordinates>
CHOREO_DEVICE void tma_load(void* dst, const TensorMap* map, mbarrier* bar, Coordinates... coordinates) {
  constexpr int rank = sizeof...(Coordinates);
  static_assert(1 <= rank && rank <= 5, "a TMA box has 1 to 5 dimensions");
  if (block_failed) return;
  const int c[] = {coordinates...};
  const unsigned to = shared_address(dst), on = shared_address(bar);
  if constexpr (rank == 1) {
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];"
                 ::"r"(to), "l"(map), "r"(on), "r"(c[0]) : "memory");
  } else if constexpr (rank == 2) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
                 ::"r"(to), "l"(map), "r"(on), "r"(c[0]), "r"(c[1]) : "memory");
  } else if constexpr (rank == 3) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
                 ::"r"(to), "l"(map), "r"(on), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
  } else if constexpr (rank == 4) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];"
                 ::"r"(to), "l"(map), "r"(on), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
  } else {
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], [%2];"
                 ::"r"(to), "l"(map), "r"(on), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
  }
}

// createpolicy.fractional.L2::evict_first.b64 / ::evict_last.b64 policy, 1.0: an L2 cache policy for all of
// a TMA load's bytes; evict_first for data read once (streamed past L2), evict_last for data read again.
CHOREO_DEVICE unsigned long long l2_evict_first() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
CHOREO_DEVICE unsigned long long l2_evict_last() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster
// [dst], [map, {x, ...}], [bar], mask: tma_load into `dst` of every block of the cluster whose rank's bit is set
// in `mask`, counting the bytes down on the mbarrier at `bar`'s place in each of them.
template <class... Coordinates>
CHOREO_DEVICE void tma_load_multicast(void* dst, const TensorMap* map, mbarrier* bar, unsigned short mask,
                                      Coordinates... coordinates) {
  constexpr int rank = sizeof...(Coordinates);
  static_assert(rank >= 1 && rank <= 5, "a tensor map has 1 to 5 dimensions");
  const int c[] = {static_cast<int>(coordinates)...};
  const unsigned to = shared_address(dst), on = shared_address(bar);
  if constexpr (rank == 1) {
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4}], [%2], %3;"
                 ::"r"(to), "l"(map), "r"(on), "h"(mask), "r"(c[0]) : "memory");
  } else if constexpr (rank == 2) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5}], [%2], %3;"
                 ::"r"(to), "l"(map), "r"(on), "h"(mask), "r"(c[0]), "r"(c[1]) : "memory");
  } else if constexpr (rank == 3) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6}], [%2], %3;"
                 ::"r"(to), "l"(map), "r"(on), "h"(mask), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
  } else if constexpr (rank == 4) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6, %7}], [%2], %3;"
                 ::"r"(to), "l"(map), "r"(on), "h"(mask), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
  } else {
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6, %7, %8}], [%2], %3;"
                 ::"r"(to), "l"(map), "r"(on), "h"(mask), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
  }
}

// cp.async.bulk.tensor.Nd...complete_tx::bytes.L2::cache_hint [dst], [map, {x, ...}], [bar], policy: tma_load
// with an L2 cache policy (from l2_evict_first or l2_evict_last) for the bytes it reads.
template <class... Coordinates>
CHOREO_DEVICE void tma_load_hinted(void* dst, const TensorMap* map, mbarrier* bar, unsigned long long policy,
                                   Coordinates... coordinates) {
  constexpr int rank = sizeof...(Coordinates);
  static_assert(1 <= rank && rank <= 5, "a TMA box has 1 to 5 dimensions");
  if (block_failed) return;
  const int c[] = {coordinates...};
  const unsigned to = shared_address(dst), on = shared_address(bar);
  if constexpr (rank == 1) {
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%4}], [%2], %3;"
                 ::"r"(to), "l"(map), "r"(on), "l"(policy), "r"(c[0]) : "memory");
  } else if constexpr (rank == 2) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%4, %5}], [%2], %3;"
                 ::"r"(to), "l"(map), "r"(on), "l"(policy), "r"(c[0]), "r"(c[1]) : "memory");
  } else if constexpr (rank == 3) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%4, %5, %6}], [%2], %3;"
                 ::"r"(to), "l"(map), "r"(on), "l"(policy), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
  } else if constexpr (rank == 4) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%4, %5, %6, %7}], [%2], %3;"
                 ::"r"(to), "l"(map), "r"(on), "l"(policy), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
  } else {
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%4, %5, %6, %7, %8}], [%2], %3;"
                 ::"r"(to), "l"(map), "r"(on), "l"(policy), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
  }
}

// cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [map, {x, ...}], [src]: the copy engine stores the
// shared tile at `src` into the box at coordinates (x innermost, 1 to 5 of them) of the map's array, in this
// thread's bulk group.
template <class... Coordinates> CHOREO_DEVICE void tma_store(const TensorMap* map, const void* src, Coordinates... coordinates) {
  constexpr int rank = sizeof...(Coordinates);
  static_assert(1 <= rank && rank <= 5, "a TMA box has 1 to 5 dimensions");
  const int c[] = {coordinates...};
  const unsigned from = shared_address(src);
  if constexpr (rank == 1) {
    asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%0, {%2}], [%1];" ::"l"(map), "r"(from),
                 "r"(c[0]) : "memory");
  } else if constexpr (rank == 2) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map),
                 "r"(from), "r"(c[0]), "r"(c[1]) : "memory");
  } else if constexpr (rank == 3) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(map),
                 "r"(from), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
  } else if constexpr (rank == 4) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::"l"(map),
                 "r"(from), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
  } else {
    asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
                 ::"l"(map), "r"(from), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
  }
}

// cp.async.bulk.commit_group: close this thread's batch of bulk stores.
CHOREO_DEVICE void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

// cp.async.bulk.wait_group 0: wait until this thread's bulk stores have written global memory.
CHOREO_DEVICE void bulk_wait_group() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

// ------------------------------------------------------------------------- WGMMA

// wgmma.fence.sync.aligned: order the warpgroup's earlier writes of accumulator registers and shared operands
// before the wgmma.mma_async that follows.
CHOREO_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }

// wgmma.commit_group.sync.aligned: close the batch of wgmma.mma_async issued since the last commit.
CHOREO_DEVICE void wgmma_commit_group() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }

// wgmma.wait_group.sync.aligned N: wait until at most N committed batches of this warpgroup are still running.
template <int N> CHOREO_DEVICE void wgmma_wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// An empty asm that reads and writes every accumulator register: the compiler cannot move other uses of the
// accumulator across it, so none lands between an async wgmma and the wait that completes it.
template <int R> CHOREO_DEVICE void wgmma_fence_operand(float (&acc)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(acc[i])::"memory");
}
template <int R> CHOREO_DEVICE void wgmma_fence_operand(unsigned (&acc)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+r"(acc[i])::"memory");
}

// A WGMMA shared-memory matrix descriptor (PTX "matrix descriptor"): the tile's address, the leading and
// stride byte offsets (16-byte units) and the swizzle mode (1, 2, 3 for 128-, 64-, 32-byte swizzles).
// A K-major tile (rows of K, `Swizzle` bytes apart): 8-row groups are 8 * Swizzle bytes apart, the leading
// offset is unused (one instruction reads 32 bytes of K, inside one panel). An MN-major tile (rows of M or
// N, one K each): 8-row groups of K are 8 * Swizzle bytes apart, and `panel_bytes` steps to the next
// `Swizzle`-byte panel of M or N where the tile's rows are wider than the swizzle (CUTLASS's canonical
// layouts, cute/atom/mma_traits_sm90_gmma.hpp).
template <int Swizzle>
CHOREO_DEVICE unsigned long long wgmma_descriptor(const void* tile, unsigned panel_bytes = 16) {
  constexpr unsigned long long mode = Swizzle == 128 ? 1 : Swizzle == 64 ? 2 : 3;
  constexpr unsigned long long group_bytes = 8 * Swizzle;
  const unsigned long long address = shared_address(tile) & 0x3FFFF;
  const unsigned long long leading = (panel_bytes >> 4) & 0x3FFF;
  return (address >> 4) | (leading << 16) | ((group_bytes >> 4) << 32) | (mode << 62);
}

// An accumulator filled with one value: f32 registers, or f16 pairs packed in 32-bit registers.
template <int R> CHOREO_DEVICE void fill_accumulator(float (&acc)[R], float value) {
#pragma unroll
  for (int i = 0; i < R; ++i) acc[i] = value;
}
template <int R> CHOREO_DEVICE void fill_accumulator(unsigned (&acc)[R], float value) {
  const unsigned short half = to_f16(value).bits;
#pragma unroll
  for (int i = 0; i < R; ++i) acc[i] = half | (static_cast<unsigned>(half) << 16);
}

// Element `i` of a fragment, as a float.
CHOREO_DEVICE float fragment_value(const float* acc, int i) { return acc[i]; }
CHOREO_DEVICE float fragment_value(const unsigned* acc, int i) {
  return to_f32(f16{static_cast<unsigned short>(acc[i / 2] >> (16 * (i % 2)))});
}

// One or two adjacent accumulator elements stored as T (converted from float).
CHOREO_DEVICE void store_element(float* out, float value) { *out = value; }
CHOREO_DEVICE void store_element(f16* out, float value) { *out = to_f16(value); }
CHOREO_DEVICE void store_element(bf16* out, float value) { *out = to_bf16(value); }
CHOREO_DEVICE void store_pair(float* out, float a, float b) { *reinterpret_cast<float2*>(out) = make_float2(a, b); }
CHOREO_DEVICE void store_pair(f16* out, float a, float b) {
  *reinterpret_cast<unsigned*>(out) = to_f16(a).bits | (static_cast<unsigned>(to_f16(b).bits) << 16);
}
CHOREO_DEVICE void store_pair(bf16* out, float a, float b) {
  *reinterpret_cast<unsigned*>(out) = to_bf16(a).bits | (static_cast<unsigned>(to_bf16(b).bits) << 16);
}

// Store a warpgroup's accumulator of `Tiles` m64nN fragments into a row-major tile (rows `row_stride`
// elements apart, in the `Swizzle`-byte swizzled layout for a shared tile that TMA or WGMMA reads: each
// element moves by its shared address, as item() moves it), converting each element to T. In a tile of a
// buffer in panels (`panel_stride` elements apart, `row_stride` columns each, the tile's first element
// column `first` of its panel) every element is placed as panel_item_offset() places it. The fragment
// layout: thread t of the warpgroup (warp w = t / 32, lane l) holds in register j * 4 + r of each fragment
// the element at row w * 16 + l / 4 + 8 * (r / 2), column j * 8 + (l % 4) * 2 + r % 2; both columns of a
// pair are stored together where the tile allows (a pair never straddles a panel or a swizzled chunk).
// `rows` and `columns` (mma.store.mask) leave out the elements at or past them: the tail of a tile that
// reaches past the end of the array. `Transposed` (mma.store.transp) writes element (i, j) at (j, i) of the
// tile, one element at a time.
template <int Swizzle, class T>
CHOREO_DEVICE T& tile_element(T* out, int row, int column, int row_stride, int panel_stride, int first) {
  const int element = panel_stride == 0 ? row * row_stride + column
                                        : panel_item_offset(row, column, row_stride, panel_stride, first);
  if constexpr (Swizzle == 0) {
    return out[element];
  } else {
    return swizzled_element<Swizzle>(out, element);
  }
}
template <int N, int Tiles, int Swizzle, bool Transposed = false, class T, class A>
__device__ inline void store_accumulator(const A* acc, T* out, int row_stride, int rows = Tiles * 64,
                                         int columns = N, int panel_stride = 0, int first = 0) {
  const int rank = threadIdx.x % 128, warp = rank / 32, lane = rank % 32;
  const bool paired =
      !Transposed && aligned(out, 2 * sizeof(T)) && row_stride % 2 == 0 && columns % 2 == 0 && first % 2 == 0;
  const auto at = [&](int row, int column) -> T& {
    return Transposed ? tile_element<Swizzle>(out, column, row, row_stride, panel_stride, first)
                      : tile_element<Swizzle>(out, row, column, row_stride, panel_stride, first);
  };
#pragma unroll
  for (int tile = 0; tile < Tiles; ++tile) {
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = tile * 64 + warp * 16 + lane / 4 + 8 * half;
        const int column = j * 8 + (lane % 4) * 2;
        const int i = tile * (N / 2) + j * 4 + half * 2;
        if (row >= rows || column >= columns) continue;
        if (paired) {
          store_pair(&at(row, column), fragment_value(acc, i), fragment_value(acc, i + 1));
        } else {
          store_element(&at(row, column), fragment_value(acc, i));
          if (column + 1 < columns) store_element(&at(row, column + 1), fragment_value(acc, i + 1));
        }
      }
    }
  }
}

// Two adjacent accumulator elements as one register of two 16-bit T (the low half first): a row pair of stmatrix.
CHOREO_DEVICE unsigned packed_pair(f16*, float a, float b) {
  return to_f16(a).bits | (static_cast<unsigned>(to_f16(b).bits) << 16);
}
CHOREO_DEVICE unsigned packed_pair(bf16*, float a, float b) {
  return to_bf16(a).bits | (static_cast<unsigned>(to_bf16(b).bits) << 16);
}

// stmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 [row], {r0, r1, r2, r3}: four 8x8 matrices of 16-bit
// elements, thread l holding in register i the pair at row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 of
// matrix i, and threads 8i .. 8i + 7 naming the shared addresses of the 16-byte rows of matrix i (.trans:
// of its columns, so each matrix lands transposed). The .x2 form stores matrices 0 and 1 (threads 0 .. 15).
template <bool Transposed> CHOREO_DEVICE void stmatrix_x4(unsigned row, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
  if constexpr (Transposed) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
                 ::"r"(row), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
  } else {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 ::"r"(row), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
  }
}
template <bool Transposed> CHOREO_DEVICE void stmatrix_x2(unsigned row, unsigned r0, unsigned r1) {
  if constexpr (Transposed) {
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" ::"r"(row), "r"(r0), "r"(r1)
                 : "memory");
  } else {
    asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" ::"r"(row), "r"(r0), "r"(r1) : "memory");
  }
}

// store_accumulator() into a whole shared tile of 16-bit T with stmatrix: each warp stores its 16 rows of
// each fragment as 8x8 matrices, two column blocks of 8 (four matrices) per instruction and an odd last
// block with .x2. Matrix m of the pair starting at column block j is rows 8 (m % 2) .. of the warp's 16,
// columns 8 (j + m / 2) ..: the accumulator registers j * 4 + ..., as the fragment layout above places
// them. A row of a matrix (a column, transposed) is 16 contiguous bytes of the tile, which a swizzle or a
// panel moves as a whole; where the tile does not start and step on 16 bytes, it is stored element by
// element instead (the same for the whole warpgroup, so stmatrix is reached by every thread of a warp).
// store_accumulator_stmatrix() into a tile of 16-bit T in the 128-byte swizzled layout that starts a row of
// 64-column panels (its first column 0 of a panel; the panels `panel_stride` elements apart, a multiple of 8
// rows, which the compiler's panel layout keeps), the epilogue of a GEMM through a swizzled staging tile. A
// row's 16-byte chunk c lies at chunk c ^ s, s the bits 7-9 of the row's address, the same for every row a
// thread addresses (its rows are 8 apart) and for the same row in every panel: so each stmatrix address is
// one of two per-thread bases XOR a constant, plus a constant, and none is computed per store (computed
// element by element, ptxas hoists all 16 of them out of a tile loop and spills them).
template <int N, int Tiles, class T, class A>
CHOREO_DEVICE void store_accumulator_stmatrix_swizzled128(const A* acc, T* out, int panel_stride) {
  static_assert(sizeof(T) == 2, "stmatrix stores 16-bit elements");
  const int rank = threadIdx.x % 128, warp = rank / 32, lane = rank % 32;
  const int matrix = lane / 8 % 4, line = lane % 8;
  const unsigned row = shared_address(out) + (warp * 16 + (matrix % 2) * 8 + line) * 128;
  const unsigned swizzle = (row >> 7) & 7;
  const unsigned pairs = row + ((swizzle ^ (matrix / 2)) << 4);  // .x4: column block j + matrix / 2, j even
  const unsigned last = row + (swizzle << 4);                    // .x2: the odd last column block
  const unsigned panel_bytes = panel_stride * sizeof(T);
  const auto pair = [&](int tile, int block, int half) {
    const int i = tile * (N / 2) + block * 4 + half * 2;
    return packed_pair(out, fragment_value(acc, i), fragment_value(acc, i + 1));
  };
#pragma unroll
  for (int tile = 0; tile < Tiles; ++tile) {
#pragma unroll
    for (int j = 0; j + 1 < N / 8; j += 2) {
      const unsigned address = (pairs ^ ((j % 8) << 4)) + tile * 64 * 128 + (j / 8) * panel_bytes;
      stmatrix_x4<false>(address, pair(tile, j, 0), pair(tile, j, 1), pair(tile, j + 1, 0), pair(tile, j + 1, 1));
    }
    if constexpr ((N / 8) % 2 == 1) {
      constexpr int block = N / 8 - 1;
      const unsigned address = (last ^ ((block % 8) << 4)) + tile * 64 * 128 + (block / 8) * panel_bytes;
      stmatrix_x2<false>(address, pair(tile, block, 0), pair(tile, block, 1));
    }
  }
}

template <int N, int Tiles, int Swizzle, bool Transposed = false, class T, class A>
__device__ inline void store_accumulator_stmatrix(const A* acc, T* out, int row_stride, int panel_stride = 0,
                                                  int first = 0) {
  static_assert(sizeof(T) == 2, "stmatrix stores 16-bit elements");
  if (!aligned(out, 16) || row_stride % 8 != 0 || panel_stride % 8 != 0 || first % 8 != 0) {
    store_accumulator<N, Tiles, Swizzle, Transposed>(acc, out, row_stride, Tiles * 64, N, panel_stride, first);
    return;
  }
  const int rank = threadIdx.x % 128, warp = rank / 32, lane = rank % 32;
  const int matrix = lane / 8 % 4, line = lane % 8;
  const auto row_address = [&](int tile, int block, int half) {
    const int row = tile * 64 + warp * 16 + half * 8, column = block * 8;
    T& first_element = Transposed ? tile_element<Swizzle>(out, column + line, row, row_stride, panel_stride, first)
                                  : tile_element<Swizzle>(out, row + line, column, row_stride, panel_stride, first);
    return shared_address(&first_element);
  };
  const auto pair = [&](int tile, int block, int half) {
    const int i = tile * (N / 2) + block * 4 + half * 2;
    return packed_pair(out, fragment_value(acc, i), fragment_value(acc, i + 1));
  };
#pragma unroll
  for (int tile = 0; tile < Tiles; ++tile) {
#pragma unroll
    for (int j = 0; j + 1 < N / 8; j += 2) {
      stmatrix_x4<Transposed>(row_address(tile, j + matrix / 2, matrix % 2), pair(tile, j, 0), pair(tile, j, 1),
                              pair(tile, j + 1, 0), pair(tile, j + 1, 1));
    }
    if constexpr ((N / 8) % 2 == 1) {
      stmatrix_x2<Transposed>(row_address(tile, N / 8 - 1, matrix % 2), pair(tile, N / 8 - 1, 0),
                              pair(tile, N / 8 - 1, 1));
    }
  }
}

// ------------------------------------------------------------------------- sparse and block-scaled MMA
// (compiler/semantics/sparsity.py). The metadata register of a 2:4 sparse wgmma (sparsity selector 0),
// gathered from a u8 [64, K / 8] tile whose rows are `row_stride` bytes apart (byte j of a row: groups 2j and
// 2j + 1 of 4 dense K elements, a nibble each). 16-bit types (k32): threads 4q and 4q + 1 of warp w hold
// bytes 2 * (t % 2) and the next of rows w * 16 + q and w * 16 + q + 8 (the other two threads of the quad the
// same, unused); 8-bit types (k64): thread 4q + 2h + p holds bytes 4h .. 4h + 3 of row w * 16 + q + 8p.
CHOREO_DEVICE unsigned metadata_byte(const unsigned char* meta, int row_stride, int row, int column) {
  return static_cast<unsigned>(meta[row * row_stride + column]);
}
template <bool EightBit> CHOREO_DEVICE unsigned wgmma_sparse_metadata(const unsigned char* meta, int row_stride) {
  const int rank = threadIdx.x % 128, warp = rank / 32, lane = rank % 32;
  if (EightBit) {
    const int row = warp * 16 + lane / 4 + (lane % 2) * 8, column = (lane / 2 % 2) * 4;
    unsigned value = 0;
#pragma unroll
    for (int b = 0; b < 4; ++b) value |= metadata_byte(meta, row_stride, row, column + b) << (8 * b);
    return value;
  }
  const int row = warp * 16 + lane / 4, column = (lane % 2) * 2;
  return metadata_byte(meta, row_stride, row, column) | metadata_byte(meta, row_stride, row, column + 1) << 8 |
         metadata_byte(meta, row_stride, row + 8, column) << 16 |
         metadata_byte(meta, row_stride, row + 8, column + 1) << 24;
}

// ------------------------------------------------------------------------- register fragments
// `frag` buffers, `apply`, `reduce_max` / `reduce_sum`, `copy` and `__to<T>(acc)` (compiler/cuda/fragments.py).
// A [64 * Tiles, N] fragment uses the accumulator layout above: thread t of the warpgroup (warp w = t / 32,
// lane l) holds, in register r, row tile * 64 + w * 16 + l / 4 + 8 * ((r % 4) / 2) and column
// ((r % (N / 2)) / 4) * 8 + (l % 4) * 2 + r % 2, tile = r / (N / 2). So every row lives in the 4 lanes of one
// quad (lanes 4q .. 4q + 3), each holding N / 4 of its columns; a row vector [64 * Tiles] keeps, in register
// v = tile * 2 + h, the row tile * 64 + w * 16 + l / 4 + 8 * h, the same in all 4 lanes of the quad.
// 16-bit fragments pack two adjacent columns into one 32-bit register (r / 2), as WGMMA's A operand wants.
// `inf`: the float infinity, by its bits (NVRTC compiles without math.h's INFINITY).
CHOREO_DEVICE float infinity() { return __int_as_float(0x7f800000); }

// TileRows 16: a warp's accumulator (mma.sync), the same layout with one warp per 16-row tile.
template <int N, int TileRows = 64> CHOREO_DEVICE int fragment_row(int r) {
  const int rank = threadIdx.x % (TileRows * 2);
  return r / (N / 2) * TileRows + rank / 32 * 16 + rank % 32 / 4 + 8 * (r % 4 / 2);
}
template <int N> CHOREO_DEVICE int fragment_column(int r) {
  return r % (N / 2) / 4 * 8 + threadIdx.x % 4 * 2 + r % 2;
}
template <int N> CHOREO_DEVICE constexpr int fragment_row_register(int r) { return r / (N / 2) * 2 + r % 4 / 2; }

// Block scaling as DeepGEMM promotes it on Hopper (no hardware block scales): acc[r, c] += partial[r, c] *
// row_scales[r * row_stride] * column_scale, element by element of the accumulator layout below.
CHOREO_DEVICE void add_to_element(float* acc, int i, float value) { acc[i] += value; }
CHOREO_DEVICE void add_to_element(unsigned* acc, int i, float value) {
  const unsigned shift = 16 * (i % 2), bits = to_f16(fragment_value(acc, i) + value).bits;
  acc[i / 2] = (acc[i / 2] & ~(0xFFFFu << shift)) | (bits << shift);
}
template <int N, int Tiles, class A>
CHOREO_DEVICE void scale_accumulator(A* acc, const A* partial, const float* row_scales, int row_stride,
                                     float column_scale) {
#pragma unroll
  for (int i = 0; i < Tiles * N / 2; ++i)
    add_to_element(acc, i, fragment_value(partial, i) * row_scales[fragment_row<N>(i) * row_stride] * column_scale);
}

// 8-bit fragments (f8_e4m3, f8_e5m2) hold WGMMA's A from registers in its k32 layout instead: of each 64 x 32
// slice s of a 64-row tile, thread t (warp w, lane l) holds 16 elements in 4 registers, element e (register
// e / 4, byte e % 4) at row w * 16 + l / 4 + 8 * ((e / 4) % 2) and column s * 32 + 16 * (e / 8) + (l % 4) * 4 +
// e % 4: the 4 lanes of a quad still share each row, with 4 adjacent columns of each 16-column half a lane.
template <int N, int TileRows = 64> CHOREO_DEVICE int fragment8_row(int e) {
  const int rank = threadIdx.x % (TileRows * 2);
  return e / (N / 2) * TileRows + rank / 32 * 16 + rank % 32 / 4 + 8 * (e % 16 / 4 % 2);
}
template <int N> CHOREO_DEVICE int fragment8_column(int e) {
  return e % (N / 2) / 16 * 32 + 16 * (e % 16 / 8) + threadIdx.x % 4 * 4 + e % 4;
}
template <int N> CHOREO_DEVICE constexpr int fragment8_row_register(int e) { return e / (N / 2) * 2 + e % 16 / 4 % 2; }

template <int TileRows = 64> CHOREO_DEVICE int vector_row(int v) {
  const int rank = threadIdx.x % (TileRows * 2);
  return v / 2 * TileRows + rank / 32 * 16 + rank % 32 / 4 + 8 * (v % 2);
}

// One 16-bit (f16, bf16) or 8-bit (f8) element of a packed register, read and written as T: element r of a
// fragment is in register r / (4 / sizeof(T)), from the low bits up.
template <class T> struct PackedElement {
  static constexpr unsigned mask = (1u << (8 * sizeof(T))) - 1u;
  unsigned& reg;
  int shift;
  CHOREO_DEVICE operator T() const { return T{static_cast<decltype(T::bits)>((reg >> shift) & mask)}; }
  CHOREO_DEVICE PackedElement& operator=(T value) {
    reg = (reg & ~(mask << shift)) | (static_cast<unsigned>(value.bits) << shift);
    return *this;
  }
};
template <class T, int R> CHOREO_DEVICE PackedElement<T> packed_element(unsigned (&regs)[R], int r) {
  constexpr int per_register = 4 / sizeof(T);
  return PackedElement<T>{regs[r / per_register], 8 * static_cast<int>(sizeof(T)) * (r % per_register)};
}
template <class T> CHOREO_DEVICE float to_f32(PackedElement<T> value) { return to_f32(static_cast<T>(value)); }

CHOREO_DEVICE unsigned pack(f16 lo, f16 hi) { return lo.bits | (static_cast<unsigned>(hi.bits) << 16); }
CHOREO_DEVICE unsigned pack(bf16 lo, bf16 hi) { return lo.bits | (static_cast<unsigned>(hi.bits) << 16); }
CHOREO_DEVICE f16 narrow(float value, f16) { return to_f16(value); }
CHOREO_DEVICE bf16 narrow(float value, bf16) { return to_bf16(value); }
CHOREO_DEVICE f8_e4m3 narrow(float value, f8_e4m3) { return to_f8_e4m3(value); }
CHOREO_DEVICE f8_e5m2 narrow(float value, f8_e5m2) { return to_f8_e5m2(value); }
// A register of one element repeated: two 16-bit ones or four 8-bit ones.
CHOREO_DEVICE unsigned replicated(f16 element) { return pack(element, element); }
CHOREO_DEVICE unsigned replicated(bf16 element) { return pack(element, element); }
CHOREO_DEVICE unsigned replicated(f8_e4m3 element) { return element.bits * 0x01010101u; }
CHOREO_DEVICE unsigned replicated(f8_e5m2 element) { return element.bits * 0x01010101u; }

// `frag T[...] x {v};`
template <int R> CHOREO_DEVICE void fill_fragment(float (&regs)[R], float value) { fill_accumulator(regs, value); }
template <class T, int R> CHOREO_DEVICE void fill_fragment(unsigned (&regs)[R], float value) {
  const unsigned packed = replicated(narrow(value, T{}));
#pragma unroll
  for (int i = 0; i < R; ++i) regs[i] = packed;
}

// `mma.load tile, x;`: each thread's elements of a [Tiles * 64, N] tile (placed as store_accumulator() places
// them: rows `row_stride` apart, swizzled, in panels) into fragment x, in the accumulator layout, which is also
// WGMMA's layout of an A operand from registers (k16: 4 registers of f16 pairs per 64 x 16 slice), converted
// to x's type. `Pair` receives each register pair: fragment element i and i + 1, adjacent columns of a row.
CHOREO_DEVICE float element_value(float value) { return value; }
template <class S> CHOREO_DEVICE float element_value(S value) { return to_f32(value); }
template <int N, int Tiles, int Swizzle, class S, class Pair>
CHOREO_DEVICE void load_fragment_pairs(const S* tile, int row_stride, int panel_stride, int first, Pair pair) {
  const int rank = threadIdx.x % 128, warp = rank / 32, lane = rank % 32;
#pragma unroll
  for (int t = 0; t < Tiles; ++t) {
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = t * 64 + warp * 16 + lane / 4 + 8 * half, column = j * 8 + (lane % 4) * 2;
        const float a = element_value(tile_element<Swizzle>(tile, row, column, row_stride, panel_stride, first));
        const float b = element_value(tile_element<Swizzle>(tile, row, column + 1, row_stride, panel_stride, first));
        pair(t * (N / 2) + j * 4 + half * 2, a, b);
      }
    }
  }
}
template <int N, int Tiles, int Swizzle, class S, int R>
CHOREO_DEVICE void load_fragment(float (&regs)[R], const S* tile, int row_stride, int panel_stride = 0, int first = 0) {
  load_fragment_pairs<N, Tiles, Swizzle>(tile, row_stride, panel_stride, first, [&](int i, float a, float b) {
    regs[i] = a;
    regs[i + 1] = b;
  });
}
template <class T, int N, int Tiles, int Swizzle, class S, int R>
CHOREO_DEVICE void load_fragment(unsigned (&regs)[R], const S* tile, int row_stride, int panel_stride = 0,
                                 int first = 0) {
  load_fragment_pairs<N, Tiles, Swizzle>(tile, row_stride, panel_stride, first, [&](int i, float a, float b) {
    regs[i / 2] = pack(narrow(a, T{}), narrow(b, T{}));
  });
}

// `mma.load tile, x;` into an 8-bit fragment: the k32 layout of A above, 4 adjacent elements of a row per
// register, converted to x's type T (taken as they are when the tile holds T).
template <class T, class S> struct ElementAs {
  CHOREO_DEVICE static T of(S value) { return narrow(element_value(value), T{}); }
};
template <class T> struct ElementAs<T, T> {
  CHOREO_DEVICE static T of(T value) { return value; }
};
template <class T, int N, int Tiles, int Swizzle, class S, int R>
CHOREO_DEVICE void load_fragment8(unsigned (&regs)[R], const S* tile, int row_stride, int panel_stride = 0,
                                  int first = 0) {
  const int rank = threadIdx.x % 128, warp = rank / 32, lane = rank % 32;
#pragma unroll
  for (int t = 0; t < Tiles; ++t) {
#pragma unroll
    for (int q = 0; q < N / 8; ++q) {  // register q of the tile: slice q / 4, half q % 4 / 2, row + 8 * (q % 2)
      const int row = t * 64 + warp * 16 + lane / 4 + 8 * (q % 2), column = q / 4 * 32 + 16 * (q % 4 / 2) + lane % 4 * 4;
      unsigned packed = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const T value = ElementAs<T, S>::of(tile_element<Swizzle>(tile, row, column + b, row_stride, panel_stride, first));
        packed |= static_cast<unsigned>(value.bits) << (8 * b);
      }
      regs[t * (N / 8) + q] = packed;
    }
  }
}

// `copy(dst, src)` / `__to<T>(acc)`: the same elements, converted (f32 -> 16-bit packs two per register).
template <int R> CHOREO_DEVICE void copy_fragment(float (&dst)[R], const float (&src)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) dst[i] = src[i];
}
template <int R> CHOREO_DEVICE void copy_fragment(unsigned (&dst)[R], const unsigned (&src)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) dst[i] = src[i];
}
template <class T, int R> CHOREO_DEVICE void convert_fragment(unsigned (&dst)[R], const float (&src)[2 * R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) dst[i] = pack(narrow(src[2 * i], T{}), narrow(src[2 * i + 1], T{}));
}
template <class T, int R> CHOREO_DEVICE void convert_fragment(float (&dst)[2 * R], const unsigned (&src)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) {
    dst[2 * i] = to_f32(T{static_cast<unsigned short>(src[i])});
    dst[2 * i + 1] = to_f32(T{static_cast<unsigned short>(src[i] >> 16)});
  }
}

// `call f(rows)` of a row vector: the 4 lanes of a quad hold the same rows, so after the call they all take
// what the quad's first lane holds (shfl from lane & ~3); `agreed` does so after a call whose value is used.
template <int R> CHOREO_DEVICE void agree_quads(float (&rows)[R]) {
#pragma unroll
  for (int v = 0; v < R; ++v) rows[v] = __shfl_sync(0xffffffffu, rows[v], threadIdx.x % 32 & ~3);
}
template <class T, int R> CHOREO_DEVICE T agreed(T result, float (&rows)[R]) {
  agree_quads(rows);
  return result;
}

// `reduce_max(rows, acc, 1)` / `reduce_sum(...)`: each thread combines its N / 4 columns of each of its rows
// as a balanced tree (pairs, then pairs of pairs: log2(N / 4) dependent steps instead of a chain of N / 4,
// with the two rows' trees independent of each other), then the 4 lanes of the quad that share the row
// exchange partial results (shfl.xor 1, then 2), so every lane of the quad ends with the whole row's value.
// A sum so taken rounds as a pairwise sum does, not as the left-to-right one.
struct MaxOf {
  CHOREO_DEVICE static float combine(float a, float b) { return fmaxf(a, b); }
};
struct SumOf {
  CHOREO_DEVICE static float combine(float a, float b) { return a + b; }
};
// rows[v] = start[v] + the sum of rows[v] over the 4 lanes of a quad (shfl.xor 1, 2): an apply's row sums.
template <int R> CHOREO_DEVICE void sum_quads(float (&rows)[R], const float (&start)[R]) {
#pragma unroll
  for (int v = 0; v < R; ++v) {
    float value = rows[v];
    value += __shfl_xor_sync(0xffffffffu, value, 1);
    value += __shfl_xor_sync(0xffffffffu, value, 2);
    rows[v] = start[v] + value;
  }
}
// The first Count elements of part combined as a balanced tree, in place: each level combines element i with
// element i + Half, halving the count (an odd count keeps its middle element for the next level). A template
// per level, so that every index is a constant and part stays in registers.
template <class Op, int Count, int Size> CHOREO_DEVICE float combine_tree(float (&part)[Size]) {
  if constexpr (Count == 1) {
    return part[0];
  } else {
    constexpr int Half = (Count + 1) / 2;
#pragma unroll
    for (int i = 0; i < Count / 2; ++i) part[i] = Op::combine(part[i], part[i + Half]);
    return combine_tree<Op, Half>(part);
  }
}
template <class Op, int N, int Tiles>
CHOREO_DEVICE void reduce_rows(float (&rows)[2 * Tiles], const float (&acc)[Tiles * N / 2]) {
  constexpr int Columns = N / 4;  // of each row, in this thread: 2 of each 8-column group
#pragma unroll
  for (int v = 0; v < 2 * Tiles; ++v) {
    float part[Columns];  // this thread's columns of row v, in register order
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
      const int r = v / 2 * (N / 2) + j * 4 + v % 2 * 2;
      part[2 * j] = acc[r];
      part[2 * j + 1] = acc[r + 1];
    }
    float value = combine_tree<Op, Columns>(part);
    value = Op::combine(value, __shfl_xor_sync(0xffffffffu, value, 1));
    value = Op::combine(value, __shfl_xor_sync(0xffffffffu, value, 2));
    rows[v] = value;
  }
}

// ------------------------------------------------------------------------- warp specialization

// setmaxnreg.dec.sync.aligned.u32 N: this warpgroup keeps N registers per thread and gives the rest back
// to the SM; a producer that only issues copies needs few.
template <int N> CHOREO_DEVICE void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N)); }

// setmaxnreg.inc.sync.aligned.u32 N: this warpgroup grows to N registers per thread, from those given back.
template <int N> CHOREO_DEVICE void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N)); }

// ---------------------------------------------------------------- atomics the CUDA library lacks

// atom.add.noftz.f16 d, [a], b: add b (rounded to a half) to the half at a; d is the old half.
CHOREO_DEVICE f16 atomic_add(f16* address, float value) {
  f16 old;
  asm volatile("atom.add.noftz.f16 %0, [%1], %2;"
               : "=h"(old.bits)
               : "l"(address), "h"(to_f16(value).bits)
               : "memory");
  return old;
}

// ------------------------------------------------------------------------- warp-level MMA (mma.sync)
// `mma.row.col acc, a, b` in a `group` scope (compiler/cuda/warp_mma.py): one warp multiplies its tile with
// mma.sync.aligned.m16n8kK, or m8n8kK for an 8-row tile (the forms are generated from
// compiler/semantics/mma_shapes.py). Lane l of the
// warp is in quad g = l / 4, at t = l % 4 within it; 32-bit registers hold P = 4 / sizeof(T) operand elements
// (1 for tf32, 2 for f16 and bf16, 4 for 8-bit integers), the first in the low bits (PTX ISA 9.7.14.5):
//   A [16, K]: register r holds row g + 8 * (r % 2), columns t * P + e + (K / 2) * (r / 2), e < P;
//   B [K, 8]:  register r holds rows t * P + e + (K / 2) * r, column g;
//   C [16, 8]: register r holds row g + 8 * (r / 2), column 2 * t + r % 2 (f16: pairs packed, as WGMMA's).
// A [16 * Tiles, N] accumulator keeps its m16n8 fragments in register order (m tile, n tile), so it is the
// WGMMA accumulator layout of a warpgroup of one warp with 16-row tiles. An [8, N] one (m8n8 forms) uses the
// top half of each fragment: m8n8k16 reads it as its C (row g, column 2 * t + r, r < 2) and A and B as
// the registers r = 0 above; m8n8k4 (f16) has each quad pair q (lanes 4q..4q+3, 16+4q..16+4q+3) compute
// the whole 8x8 tile, lane l holding row l % 4 + 4 * (l / 16) of A (4 columns), column l % 4 + 4 * (l / 16)
// of B (4 rows) and row l % 4 + 4 * (l / 16) of C (8 columns, in pairs).
template <class T> CHOREO_DEVICE unsigned operand_bits(T value) { return value.bits; }
CHOREO_DEVICE unsigned operand_bits(signed char value) { return static_cast<unsigned char>(value); }
CHOREO_DEVICE unsigned operand_bits(unsigned char value) { return value; }
CHOREO_DEVICE unsigned operand_bits(float value) { return __float_as_uint(value); }  // tf32: its top 19 bits

// A's K-step registers (R: 4, or 2 for s8/u8 k16) from a tile whose element (m, k) is at
// a[m * m_stride + k * k_stride].
template <int K, class T, int R>
CHOREO_DEVICE void load_mma_a(unsigned (&regs)[R], const T* a, int m_stride, int k_stride) {
  constexpr int P = 4 / sizeof(T);
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    unsigned packed = 0;
#pragma unroll
    for (int e = 0; e < P; ++e)
      packed |= operand_bits(a[(g + 8 * (r % 2)) * m_stride + (t * P + e + K / 2 * (r / 2)) * k_stride])
                << (32 / P * e);
    regs[r] = packed;
  }
}

// B's registers (R: 2, or 1 for s8/u8 k16) for one n tile from a tile whose element (k, n) is at
// b[k * k_stride + n * n_stride].
template <int K, class T, int R>
CHOREO_DEVICE void load_mma_b(unsigned (&regs)[R], const T* b, int k_stride, int n_stride) {
  constexpr int P = 4 / sizeof(T);
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    unsigned packed = 0;
#pragma unroll
    for (int e = 0; e < P; ++e)
      packed |= operand_bits(b[(t * P + e + K / 2 * r) * k_stride + g * n_stride]) << (32 / P * e);
    regs[r] = packed;
  }
}

// m8n8k4's A and B: the same row of A (column of B) in every quad pair, from a[m * m_stride + k * k_stride]
// and b[k * k_stride + n * n_stride].
template <class T>
CHOREO_DEVICE void load_quad_pair_a(unsigned (&regs)[2], const T* a, int m_stride, int k_stride) {
  const int lane = threadIdx.x % 32, row = lane % 4 + 4 * (lane / 16);
#pragma unroll
  for (int r = 0; r < 2; ++r)
    regs[r] = operand_bits(a[row * m_stride + 2 * r * k_stride]) |
              operand_bits(a[row * m_stride + (2 * r + 1) * k_stride]) << 16;
}
template <class T>
CHOREO_DEVICE void load_quad_pair_b(unsigned (&regs)[2], const T* b, int k_stride, int n_stride) {
  const int lane = threadIdx.x % 32, column = lane % 4 + 4 * (lane / 16);
#pragma unroll
  for (int r = 0; r < 2; ++r)
    regs[r] = operand_bits(b[2 * r * k_stride + column * n_stride]) |
              operand_bits(b[(2 * r + 1) * k_stride + column * n_stride]) << 16;
}

// An 8-row f16 tile into m8n8k4's C and back: lane 4 * row + j holds columns 2j, 2j+1 of `row` (the top half
// of an m16n8 fragment); in m8n8k4's layout lane l holds all 8 columns of row l % 4 + 4 * (l / 16).
CHOREO_DEVICE void to_quad_pair_rows(unsigned (&c)[4], unsigned top_half) {
  const int lane = threadIdx.x % 32, row = lane % 4 + 4 * (lane / 16);
#pragma unroll
  for (int j = 0; j < 4; ++j) c[j] = __shfl_sync(0xffffffffu, top_half, 4 * row + j);
}
CHOREO_DEVICE unsigned from_quad_pair_rows(const unsigned (&c)[4]) {
  const int lane = threadIdx.x % 32, row = lane / 4;  // held by lane row % 4 + 16 * (row / 4) of quad pair 0
  unsigned mine = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const unsigned pair = __shfl_sync(0xffffffffu, c[j], row % 4 + 16 * (row / 4));
    if (j == lane % 4) mine = pair;
  }
  return mine;
}

template <int R> CHOREO_DEVICE void fill_accumulator(int (&acc)[R], float value) {
#pragma unroll
  for (int i = 0; i < R; ++i) acc[i] = static_cast<int>(value);
}
CHOREO_DEVICE int fragment_value(const int* acc, int i) { return acc[i]; }
CHOREO_DEVICE void store_element(int* out, int value) { *out = value; }

// The elements a lane holds of a warp's [Rows, N] accumulator (Rows 8, or a multiple of 16), as
// visit(row, column, register index): m16n8 fragments down and across, an 8-row tile the top half of one.
template <int Rows, int N, class Visit>
CHOREO_DEVICE void for_each_warp_element(Visit visit) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int tile = 0; tile < (Rows + 15) / 16; ++tile)
#pragma unroll
    for (int j = 0; j < N / 8; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int row = tile * 16 + lane / 4 + 8 * (r / 2), column = j * 8 + (lane % 4) * 2 + r % 2;
        if (row < Rows) visit(row, column, (tile * (N / 8) + j) * 4 + r);
      }
}

// `mma.store acc, dst` of a warp's [Rows, N] accumulator: element (i, j) goes to
// out[i * row_stride + j * column_stride] (mma.store.transp passes the strides swapped), converted to T.
template <int Rows, int N, class T, class A>
CHOREO_DEVICE void store_warp_accumulator(const A* acc, T* out, int row_stride, int column_stride) {
  for_each_warp_element<Rows, N>([&](int row, int column, int index) {
    store_element(out + row * row_stride + column * column_stride, fragment_value(acc, index));
  });
}

// `acc = mma.load tile;` in a warp, as an accumulator: element (i, j) of a [Rows, N] tile (Rows 8, or a multiple
// of 16) from in[i * row_stride + j * column_stride], into the layout store_warp_accumulator writes from; the
// padding rows of an 8-row tile are zero.
CHOREO_DEVICE void set_element(float* acc, int i, float value) { acc[i] = value; }
CHOREO_DEVICE void set_element(int* acc, int i, int value) { acc[i] = value; }
CHOREO_DEVICE void set_element(unsigned* acc, int i, f16 value) {
  const int shift = 16 * (i % 2);
  acc[i / 2] = (acc[i / 2] & ~(0xffffu << shift)) | (static_cast<unsigned>(value.bits) << shift);
}
template <int Rows, int N, class A, int R, class T>
CHOREO_DEVICE void load_warp_accumulator(A (&acc)[R], const T* in, int row_stride, int column_stride) {
#pragma unroll
  for (int i = 0; i < R; ++i) acc[i] = 0;
  for_each_warp_element<Rows, N>([&](int row, int column, int index) {
    set_element(acc, index, in[row * row_stride + column * column_stride]);
  });
}

// ------------------------------------------------------------------------- run-time checks

// The factor of a `select`, checked where the compiler cannot show it in range: outside [0, count) it
// reports `site` (the host raises for it, as for a wait that gave up), this block gives up, and the first
// value is selected, so nothing is read or written out of bounds meanwhile.
CHOREO_DEVICE int checked_select(int factor, int count, Status* status, unsigned site) {
  if (factor >= 0 && factor < count) return factor;
  report_timeout(status, site);
  give_up();
  return 0;
}

// `select(k, a, b, ...)`: the start of the k-th value (k in range), each operand evaluated once.
template <typename T> CHOREO_DEVICE T pick(int, T only) { return only; }
template <typename T, typename... Rest> CHOREO_DEVICE auto pick(int k, T first, Rest... rest) {
  return k == 0 ? first : pick(k - 1, rest...);
}

}  // namespace choreo
