// CUDA C++ emitted by choreo-kernel 0.1.0 from bench/gemm_ws.co, for sm_90a.
// Each block is marked with the Choreo line it implements.
#include "choreo_runtime.cuh"

// The wgmma.mma_async forms these kernels use, generated: each lists all its accumulator registers.
namespace choreo {

// wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16: acc (128 float registers per thread) += A * B,
// A (K-major: [M, K]) and B (K-major: [N, K]) read from shared memory through their descriptors.
CHOREO_DEVICE void wgmma_m64n256k16_f32_f16(float* acc, unsigned long long a, unsigned long long b) {
  asm volatile(
      "{\n.reg .pred accumulate;\n"
      "setp.ne.b32 accumulate, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, accumulate, 1, 1, 0, 0;\n}\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3]), "+f"(acc[4]), "+f"(acc[5]), "+f"(acc[6]), "+f"(acc[7]),
        "+f"(acc[8]), "+f"(acc[9]), "+f"(acc[10]), "+f"(acc[11]), "+f"(acc[12]), "+f"(acc[13]), "+f"(acc[14]), "+f"(acc[15]),
        "+f"(acc[16]), "+f"(acc[17]), "+f"(acc[18]), "+f"(acc[19]), "+f"(acc[20]), "+f"(acc[21]), "+f"(acc[22]), "+f"(acc[23]),
        "+f"(acc[24]), "+f"(acc[25]), "+f"(acc[26]), "+f"(acc[27]), "+f"(acc[28]), "+f"(acc[29]), "+f"(acc[30]), "+f"(acc[31]),
        "+f"(acc[32]), "+f"(acc[33]), "+f"(acc[34]), "+f"(acc[35]), "+f"(acc[36]), "+f"(acc[37]), "+f"(acc[38]), "+f"(acc[39]),
        "+f"(acc[40]), "+f"(acc[41]), "+f"(acc[42]), "+f"(acc[43]), "+f"(acc[44]), "+f"(acc[45]), "+f"(acc[46]), "+f"(acc[47]),
        "+f"(acc[48]), "+f"(acc[49]), "+f"(acc[50]), "+f"(acc[51]), "+f"(acc[52]), "+f"(acc[53]), "+f"(acc[54]), "+f"(acc[55]),
        "+f"(acc[56]), "+f"(acc[57]), "+f"(acc[58]), "+f"(acc[59]), "+f"(acc[60]), "+f"(acc[61]), "+f"(acc[62]), "+f"(acc[63]),
        "+f"(acc[64]), "+f"(acc[65]), "+f"(acc[66]), "+f"(acc[67]), "+f"(acc[68]), "+f"(acc[69]), "+f"(acc[70]), "+f"(acc[71]),
        "+f"(acc[72]), "+f"(acc[73]), "+f"(acc[74]), "+f"(acc[75]), "+f"(acc[76]), "+f"(acc[77]), "+f"(acc[78]), "+f"(acc[79]),
        "+f"(acc[80]), "+f"(acc[81]), "+f"(acc[82]), "+f"(acc[83]), "+f"(acc[84]), "+f"(acc[85]), "+f"(acc[86]), "+f"(acc[87]),
        "+f"(acc[88]), "+f"(acc[89]), "+f"(acc[90]), "+f"(acc[91]), "+f"(acc[92]), "+f"(acc[93]), "+f"(acc[94]), "+f"(acc[95]),
        "+f"(acc[96]), "+f"(acc[97]), "+f"(acc[98]), "+f"(acc[99]), "+f"(acc[100]), "+f"(acc[101]), "+f"(acc[102]), "+f"(acc[103]),
        "+f"(acc[104]), "+f"(acc[105]), "+f"(acc[106]), "+f"(acc[107]), "+f"(acc[108]), "+f"(acc[109]), "+f"(acc[110]), "+f"(acc[111]),
        "+f"(acc[112]), "+f"(acc[113]), "+f"(acc[114]), "+f"(acc[115]), "+f"(acc[116]), "+f"(acc[117]), "+f"(acc[118]), "+f"(acc[119]),
        "+f"(acc[120]), "+f"(acc[121]), "+f"(acc[122]), "+f"(acc[123]), "+f"(acc[124]), "+f"(acc[125]), "+f"(acc[126]), "+f"(acc[127])
      : "l"(a), "l"(b), "r"(1));
}
}  // namespace choreo

// __co__ gemm_ws, line 14: kernel for the parallel at line 15
// one block per SM: its warpgroups trade registers with setmaxnreg (producer and consumers)
extern "C" __global__ void __launch_bounds__(384, 1) gemm_ws_kernel(const choreo::f16* lhs, const choreo::f16* rhs, choreo::f16* out, const __grid_constant__ choreo::TensorMap lhs_tma, const __grid_constant__ choreo::TensorMap rhs_tma, int M, int K, int N, choreo::Status* status) {
  // shared memory (147504 bytes): ls at 0, rs at 49152, full at 147456, empty at 147480
  extern __shared__ __align__(128) unsigned char shared_memory_raw[];
  unsigned char* const shared_memory = choreo::align_shared(shared_memory_raw, 1024);  // swizzled tiles start here
  // line 15: parallel.async {bm, bn} by [M / 128, N / 256] : block
  const int bm = blockIdx.x;
  const int bn = blockIdx.y;
  // line 16: shared f16 [128, 64] ls[3];
  choreo::f16* const ls = reinterpret_cast<choreo::f16*>(shared_memory + 0);  // 128-byte swizzled layout, for TMA and WGMMA
  // line 17: shared f16 [256, 64] rs[3];
  choreo::f16* const rs = reinterpret_cast<choreo::f16*>(shared_memory + 49152);  // 128-byte swizzled layout, for TMA and WGMMA
  // line 18: shared event full[3];
  choreo::mbarrier* const full = reinterpret_cast<choreo::mbarrier*>(shared_memory + 147456);
  if (threadIdx.x == 0) {
    for (int slot = 0; slot < 3; ++slot) {
      choreo::mbarrier_init(&full[slot], 1);  // 1 arrival completes a generation
    }
    choreo::fence_mbarrier_init();
  }
  __syncthreads();
  // line 19: shared event empty[3] = ready;
  choreo::mbarrier* const empty = reinterpret_cast<choreo::mbarrier*>(shared_memory + 147480);
  if (threadIdx.x == 0) {
    for (int slot = 0; slot < 3; ++slot) {
      choreo::mbarrier_init(&empty[slot], 8);  // 8 arrivals complete a generation (one per triggering warp)
    }
    choreo::fence_mbarrier_init();
  }
  __syncthreads();
  // line 20: parallel wg by 3 : group-4
  {
    const int wg = threadIdx.x / 128;
    // line 21: inthreads.async (wg == 0) (an independent path: it talks to the others through events)
    if (wg == 0) {
      choreo::setmaxnreg_dec<40>();  // producer: few registers for issuing copies
      if ((threadIdx.x % 128) == 0) {
        // only copies and event waits here: one elected thread runs them for its instance
        // line 22: foreach {k} in [K / 64]
        for (int k = 0; k < K / 64; ++k) {
          // line 23: wait empty.at(k);
          choreo::event_wait(&empty[k % 3], ((k / 3) & 1) ^ 1, status, 0);
          // line 24: la = tma.load.async.swiz<128> lhs.subspan(128, 64).at(bm, k) => ls[k % 3];
          // issued by the 'trigger ... after' that binds it, on that event's mbarrier
          // line 25: ra = tma.load.async.swiz<128> rhs.subspan(256, 64).at(bn, k) => rs[k % 3];
          // issued by the 'trigger ... after' that binds it, on that event's mbarrier
          // line 26: trigger full.at(k) after la, ra;
          choreo::mbarrier_arrive_expect_tx(&full[k % 3], 49152);  // la, ra: 16384 + 32768 bytes
          choreo::tma_load(ls + (k % 3) * 8192, &lhs_tma, &full[k % 3], k * 64, bm * 128);  // line 24
          choreo::tma_load(rs + (k % 3) * 16384, &rhs_tma, &full[k % 3], k * 64, bn * 256);  // line 25
        }
      }
    }
    // line 29: inthreads.async (wg > 0) (an independent path: it talks to the others through events)
    if (wg > 0) {
      choreo::setmaxnreg_inc<232>();  // consumer: registers for accumulators
      // line 30: acc = mma.fill.f32 0.0f;
      float acc[128];  // 64x256 f32: 1 m64n256 fragment(s) per warpgroup
      choreo::fill_accumulator(acc, 0.0f);
      choreo::wgmma_fence_operand(acc);
      // line 31: foreach {k} in [K / 64]
      for (int k = 0; k < K / 64; ++k) {
        // line 32: wait full.at(k);
        choreo::event_wait(&full[k % 3], (k / 3) & 1, status, 1);
        // line 33: op = mma.row.row.async acc, ls[k % 3].subspan(64, 64).at(wg - 1, 0), rs[k % 3];
        choreo::wgmma_fence_operand(acc);
        choreo::wgmma_fence();  // the accumulator and the operand tiles are ready for the tensor cores
        #pragma unroll
        for (int k_step = 0; k_step < 4; ++k_step) {
          choreo::wgmma_m64n256k16_f32_f16(acc, choreo::wgmma_descriptor<128>(ls + ((k % 3) * 8192 + (wg - 1) * 64 * 64) + k_step * 16), choreo::wgmma_descriptor<128>(rs + (k % 3) * 16384 + k_step * 16));
        }
        choreo::wgmma_commit_group();
        // line 34: wait op;
        choreo::wgmma_wait_group<0>();  // 'op' is complete; no MMA group of this path is still running
        choreo::wgmma_fence_operand(acc);
        // line 35: trigger empty.at(k);
        choreo::mbarrier_arrive_warp(&empty[k % 3]);
      }
      // line 37: mma.store acc, out.subspan(64, 256).at(bm * 2 + wg - 1, bn);
      choreo::store_accumulator<256, 1, 0>(acc, out + ((bm * 2 + wg - 1) * 64 * N + bn * 256), N);
    }
  }
}
