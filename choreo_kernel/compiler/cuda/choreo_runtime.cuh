// choreo_runtime.cuh: the device library that kernels emitted by choreo-kernel call.
//
// Every PTX instruction the CUDA backend uses lives here, behind a small named wrapper whose
// comment names the instruction and what its operands mean, so the emitted kernels read as
// Choreo statements rather than inline assembly. The header includes nothing: it compiles as it
// is under NVRTC and under nvcc (-gencode=arch=compute_90a,code=sm_90a).
#pragma once

#define CHOREO_DEVICE __device__ __forceinline__

// How long a wait on an event may take before the kernel gives up and reports a deadlock.
#ifndef CHOREO_WAIT_TIMEOUT_NS
#define CHOREO_WAIT_TIMEOUT_NS 2000000000ull
#endif
// After this long a waiting thread also checks whether another block has already given up.
#define CHOREO_WAIT_POLL_NS 1000000ull
// How long a block that gave up lets the TMA loads it issued before land, so none still writes its
// shared memory when it exits (they take microseconds).
#define CHOREO_DRAIN_NS 100000ull

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

// ------------------------------------------------------------------------- scalar helpers

// cdiv(a, b): a / b rounded up, for tile counts.
CHOREO_DEVICE int cdiv(int a, int b) { return (a + b - 1) / b; }

// __max, __min and __abs of Choreo, for any arithmetic type (C promotion of mixed operands).
template <class A, class B> CHOREO_DEVICE auto max(A a, B b) -> decltype(a + b) { return a > b ? a : b; }
template <class A, class B> CHOREO_DEVICE auto min(A a, B b) -> decltype(a + b) { return a < b ? a : b; }
template <class T> CHOREO_DEVICE T abs(T value) { return value < T(0) ? -value : value; }

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
}

CHOREO_DEVICE unsigned launch_failed(Status* status) { return static_cast<volatile Status*>(status)->failed; }

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
// memory, possibly in the `swizzle`-byte layout of TMA and WGMMA (0: row-major).
template <class T> struct Tile {
  T* data;
  int rows;
  int cols;
  int stride;
  int swizzle;
};

template <class T> CHOREO_DEVICE Tile<T> tile(T* data, int rows, int cols, int stride, int swizzle = 0) {
  return Tile<T>{data, rows, cols, stride, swizzle};
}

struct alignas(16) Vector16 {
  unsigned x, y, z, w;
};

CHOREO_DEVICE bool aligned(const void* pointer, unsigned bytes) {
  return (reinterpret_cast<unsigned long long>(pointer) & (bytes - 1)) == 0;
}

// Whether a tile can move as 16-byte vectors: its start, its row length and its row stride are multiples of 16 bytes.
template <class T> CHOREO_DEVICE bool vectorizable(Tile<T> region) {
  return aligned(region.data, 16) && (region.cols * sizeof(T)) % 16 == 0 &&
         (region.rows == 1 || (region.stride * sizeof(T)) % 16 == 0);
}

// Where item `index` of a tile lies, counting `per_row` items per row; rows == 1 needs no division.
CHOREO_DEVICE int item_offset(int index, int rows, int per_row, int stride) {
  return rows == 1 ? index : (index / per_row) * stride + index % per_row;
}

// Item `index` of a tile, counting row by row. In a swizzled tile the 16-byte chunk number within each
// `swizzle`-byte row is XORed with bits 7 and up of the shared address (CUTLASS's Swizzle<B,4,3>), which
// is where TMA puts it and where a WGMMA descriptor reads it.
template <class T> CHOREO_DEVICE T& item(Tile<T> region, int index) {
  T* const at = region.data + item_offset(index, region.rows, region.cols, region.stride);
  if (region.swizzle == 0) return *at;
  const unsigned address = shared_address(at);
  const unsigned chunks = ((address >> 7) & (region.swizzle / 16 - 1)) << 4;
  return at[(static_cast<int>(address ^ chunks) - static_cast<int>(address)) / static_cast<int>(sizeof(T))];
}

// A vectorizable tile seen as 16-byte vectors: its row length and stride counted in vectors.
template <class T> CHOREO_DEVICE Tile<Vector16> as_vectors(Tile<T> region) {
  return Tile<Vector16>{reinterpret_cast<Vector16*>(region.data), region.rows,
                        static_cast<int>(region.cols * sizeof(T) / 16), static_cast<int>(region.stride * sizeof(T) / 16),
                        region.swizzle};
}
template <class T> CHOREO_DEVICE Tile<const Vector16> as_vectors(Tile<const T> region) {
  return Tile<const Vector16>{reinterpret_cast<const Vector16*>(region.data), region.rows,
                              static_cast<int>(region.cols * sizeof(T) / 16),
                              static_cast<int>(region.stride * sizeof(T) / 16), region.swizzle};
}

// Copy `source` into `destination` (equal rows and cols) with the `threads` threads of the calling group,
// `rank` being this thread's place among them. Both sides move in 16-byte vectors when they allow it,
// four vectors in flight per thread; otherwise element by element.
template <class D, class S> __device__ inline void copy(Tile<D> destination, Tile<S> source, int rank, int threads) {
  static_assert(sizeof(D) == sizeof(S), "a copy keeps the element type");
  if (vectorizable(destination) && vectorizable(source)) {
    const Tile<Vector16> to = as_vectors(destination);
    const auto from = as_vectors(source);
    const int total = from.rows * from.cols;
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
  for (int index = rank; index < source.rows * source.cols; index += threads) item(destination, index) = item(source, index);
}

// Start copying global `source` into shared `destination` with cp.async: 16-byte pieces when both sides
// allow it, else 4- or 8-byte elements. Other element sizes are copied at once, which an async copy allows.
template <class D, class S> __device__ inline void copy_async(Tile<D> destination, Tile<S> source, int rank, int threads) {
  static_assert(sizeof(D) == sizeof(S), "a copy keeps the element type");
  if (vectorizable(destination) && vectorizable(source)) {
    const Tile<Vector16> to = as_vectors(destination);
    const auto from = as_vectors(source);
    for (int index = rank; index < from.rows * from.cols; index += threads) cp_async_16(&item(to, index), &item(from, index));
  } else if (sizeof(S) == 4 || sizeof(S) == 8) {
    for (int index = rank; index < source.rows * source.cols; index += threads) {
      cp_async_element<sizeof(S)>(&item(destination, index), &item(source, index));
    }
  } else {
    copy(destination, source, rank, threads);
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
// the copy engine moves the box at coordinates (x innermost) of the map's array into shared memory at `dst`
// and counts its bytes down on `bar`.
CHOREO_DEVICE void tma_load(void* dst, const TensorMap* map, mbarrier* bar, int x) {
  if (block_failed) return;
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];" ::"r"(
          shared_address(dst)),
      "l"(map), "r"(shared_address(bar)), "r"(x)
      : "memory");
}
CHOREO_DEVICE void tma_load(void* dst, const TensorMap* map, mbarrier* bar, int x, int y) {
  if (block_failed) return;
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
          shared_address(dst)),
      "l"(map), "r"(shared_address(bar)), "r"(x), "r"(y)
      : "memory");
}
CHOREO_DEVICE void tma_load(void* dst, const TensorMap* map, mbarrier* bar, int x, int y, int z) {
  if (block_failed) return;
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(
          shared_address(dst)),
      "l"(map), "r"(shared_address(bar)), "r"(x), "r"(y), "r"(z)
      : "memory");
}

// cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [map, {x, ...}], [src]: the copy engine stores the
// shared tile at `src` into the box at coordinates (x innermost) of the map's array, in this thread's bulk group.
CHOREO_DEVICE void tma_store(const TensorMap* map, const void* src, int x) {
  asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%0, {%2}], [%1];" ::"l"(map),
               "r"(shared_address(src)), "r"(x)
               : "memory");
}
CHOREO_DEVICE void tma_store(const TensorMap* map, const void* src, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map),
               "r"(shared_address(src)), "r"(x), "r"(y)
               : "memory");
}
CHOREO_DEVICE void tma_store(const TensorMap* map, const void* src, int x, int y, int z) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(map),
               "r"(shared_address(src)), "r"(x), "r"(y), "r"(z)
               : "memory");
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
// offset is unused. An MN-major tile (rows of M or N, one K each): 8-row groups of K are 8 * Swizzle bytes
// apart; the leading offset would step to the next `Swizzle`-byte panel of M or N, which one tile never needs.
template <int Swizzle> CHOREO_DEVICE unsigned long long wgmma_descriptor(const void* tile) {
  constexpr unsigned long long mode = Swizzle == 128 ? 1 : Swizzle == 64 ? 2 : 3;
  constexpr unsigned long long group_bytes = 8 * Swizzle;
  const unsigned long long address = shared_address(tile) & 0x3FFFF;
  return (address >> 4) | (1ull << 16) | ((group_bytes >> 4) << 32) | (mode << 62);
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
// elements apart, in the `Swizzle`-byte swizzled layout for a shared tile that a TMA store reads), converting
// each element to T. The fragment layout: thread t of the warpgroup (warp w = t / 32, lane l) holds in
// register j * 4 + r of each fragment the element at row w * 16 + l / 4 + 8 * (r / 2), column
// j * 8 + (l % 4) * 2 + r % 2; both columns of a pair are stored together where the tile allows.
template <int N, int Tiles, int Swizzle, class T, class A>
__device__ inline void store_accumulator(const A* acc, T* out, int row_stride) {
  const int rank = threadIdx.x % 128, warp = rank / 32, lane = rank % 32;
  const bool paired = aligned(out, 2 * sizeof(T)) && row_stride % 2 == 0;
  unsigned char* bytes = reinterpret_cast<unsigned char*>(out);
#pragma unroll
  for (int tile = 0; tile < Tiles; ++tile) {
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = tile * 64 + warp * 16 + lane / 4 + 8 * half;
        const int column = j * 8 + (lane % 4) * 2;
        const int i = tile * (N / 2) + j * 4 + half * 2;
        const unsigned offset = swizzled<Swizzle>((row * row_stride + column) * sizeof(T));
        T* at = reinterpret_cast<T*>(bytes + offset);
        if (paired) {
          store_pair(at, fragment_value(acc, i), fragment_value(acc, i + 1));
        } else {
          store_element(at, fragment_value(acc, i));
          store_element(reinterpret_cast<T*>(bytes + swizzled<Swizzle>((row * row_stride + column + 1) * sizeof(T))),
                        fragment_value(acc, i + 1));
        }
      }
    }
  }
}

// ------------------------------------------------------------------------- warp specialization

// setmaxnreg.dec.sync.aligned.u32 N: this warpgroup keeps N registers per thread and gives the rest back
// to the SM; a producer that only issues copies needs few.
template <int N> CHOREO_DEVICE void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N)); }

// setmaxnreg.inc.sync.aligned.u32 N: this warpgroup grows to N registers per thread, from those given back.
template <int N> CHOREO_DEVICE void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N)); }

}  // namespace choreo
