"""Thread-block clusters: the launch model's cluster shape and arrival counts, the CUDA they lower
to, and the sim's semantics (a cluster's blocks run together; trigger.cluster reaches each block;
a multicast delivers one tile). The programs of tests/cuda/cluster_*.co also run against NumPy on
the sim (test_sim.py), build with nvcc (test_cuda_compile.py) and run on a GPU (test_gpu.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import choreo_kernel as ck
from choreo_kernel.compiler.cuda import emit_program
from choreo_kernel.compiler.driver import analyze

CUDA = Path(__file__).parent / "cuda"


def source(name: str) -> str:
    return (CUDA / name).read_text(encoding="utf-8")


def test_the_launch_model_has_the_cluster_and_counts_every_blocks_arrivals() -> None:
    analysis = analyze(source("cluster_event_every_block.co"))
    info = analysis.functions["cluster_event_every_block"]
    (kernel,) = info.launches.structure.kernels
    launch = info.launches.launch(kernel)
    assert launch.cluster is not None and launch.cluster.dims == (2, 1, 1)
    assert launch.threads == 32  # the cluster makes blocks, not threads
    (arrivals,) = info.arrivals.values()
    assert arrivals.count == 64  # 32 threads in each of the 2 blocks of the cluster


def test_the_cluster_rank_follows_blockIdx_x_first() -> None:
    analysis = analyze(source("cluster_event_every_block.co"))
    info = analysis.functions["cluster_event_every_block"]
    (kernel,) = info.launches.structure.kernels
    shape = info.launches.launch(kernel).cluster
    assert shape is not None
    assert [shape.rank((x, 0, 0)) for x in range(4)] == [0, 1, 0, 1]


def test_the_kernel_is_compiled_for_clusters_and_syncs_them_after_init_and_before_exit() -> None:
    cuda = emit_program(analyze(source("cluster_event_remote_release.co")))
    assert "__cluster_dims__(2, 1, 1)" in cuda
    body = cuda[cuda.index("__cluster_dims__") :]
    init = body.index("choreo::mbarrier_init(&empty[slot], 8)")  # 4 consumer warps in each of 2 blocks
    assert body.index("choreo::fence_mbarrier_init();", init) < body.index("choreo::cluster_sync();", init)
    assert "choreo::mbarrier_arrive_cluster_all_warp(&empty[k % 2], 2);" in body
    assert "if (choreo::cluster_ctarank() == 0) choreo::tma_load_multicast(" in body
    assert ", 0x3, " in body  # the mask of both blocks
    assert body.rindex("choreo::cluster_sync();") < body.index("choreo::block_ends();")


def test_a_synchronous_multicast_waits_for_the_whole_cluster_first() -> None:
    cuda = emit_program(analyze(source("cluster_gemm_multicast.co")))
    loop = cuda[cuda.index("for (int k = 0;") :]
    assert loop.index("choreo::cluster_sync();") < loop.index("choreo::tma_load_multicast(")


def test_the_launch_carries_the_cluster_shape() -> None:
    analysis = analyze(source("cluster_gemm_multicast.co"))
    assert analysis.lowered is not None
    (launch,) = analysis.lowered.plans["cluster_gemm_multicast"].steps
    assert launch.cluster == (2, 1, 1)


MISMATCHED = """
__co__ void spread(global f16 [M, 64] a, global f16 [M, 64] b) {
  parallel c by 2 : cluster {
    parallel bm by M / 64 : block {
      shared f16 [64, 64] tile;
      tma.copy.multicast a.subspan(64, 64).at(bm, 0) => tile;
      tma.copy tile => b.subspan(64, 64).at(bm, 0);
    }
  }
}
"""


def test_the_sim_refuses_a_multicast_whose_blocks_name_different_tiles() -> None:
    spread = ck.compile(MISMATCHED, target="sim").function("spread")
    a = np.ones((128, 64), dtype=np.float16)
    with pytest.raises(ck.ChoreoError, match="multicast different tiles at line 6"):
        spread(a, np.zeros_like(a))


def test_a_grid_of_part_of_a_cluster_is_refused_at_the_call() -> None:
    spread = ck.compile(MISMATCHED.replace(".at(bm, 0) => tile", ".at(0, 0) => tile"), target="sim")
    a = np.ones((192, 64), dtype=np.float16)  # 3 blocks: one cluster and a half
    with pytest.raises(ck.ChoreoError, match="3 blocks along grid axis x, not a multiple of its clusters' 2"):
        spread.function("spread")(a, np.zeros_like(a))


def test_a_local_trigger_in_place_of_trigger_cluster_leaves_the_peers_waiting_on_the_sim() -> None:
    """With `trigger.cluster`, each block's `done` counts 64 arrivals; with `trigger` and the same count
    stated, a block's own 32 threads never complete it: the sim reports the deadlock."""
    program = source("cluster_event_every_block.co").replace("trigger.cluster done", "trigger done")
    program = program.replace("shared event done", "shared event<64> done")
    run = ck.compile(program, target="sim").function("cluster_event_every_block")
    with pytest.raises(ck.ChoreoError, match="deadlock"):
        run(np.zeros((4, 32), dtype=np.float32))


SIXTEEN = """
__co__ void fill(global f32 [64, 32] x) {
  parallel c by 16 : cluster {
    parallel b by 64 : block, t by 32 : thread {
      shared event done;
      trigger.cluster done;
      wait done;
      x.at(b, t) = c;
    }
  }
}
"""


@pytest.mark.gpu
def test_a_cluster_of_sixteen_blocks_runs_with_the_non_portable_opt_in() -> None:
    """More than 8 blocks per cluster: the runtime sets the kernel's non-portable cluster size attribute;
    each block's event counts the 16 blocks' 32 arrivals each."""
    fill = ck.compile(SIXTEEN, target="cuda").function("fill")
    x = np.zeros((64, 32), dtype=np.float32)
    fill(x)
    np.testing.assert_array_equal(x, np.repeat((np.arange(64) % 16)[:, None], 32, axis=1).astype(np.float32))


def test_yield_in_a_cluster_kernel_is_refused_at_check_time() -> None:
    program = """
__co__ void f(global f32 [4, 32] x) {
  parallel c by 2 : cluster {
    parallel b by 4 : block, t by 32 : thread {
      if (t > 3) { yield; }
      x.at(b, t) = 1.0f;
    }
  }
}
"""
    (error,) = [d for d in ck.check(program) if d.severity == "error"]
    assert error.line == 5 and "cluster barrier before they exit" in error.message


def test_the_kernel_summary_names_the_cluster_size() -> None:
    from choreo_kernel.kernel.summary import describe

    text = source("cluster_event_every_block.co")
    analysis = analyze(text)
    info = analysis.functions["cluster_event_every_block"]
    assert analysis.lowered is not None
    line = describe(info, text, analysis.lowered.plans["cluster_event_every_block"])
    assert "1 kernel, 32 threads/block in clusters of 2 blocks, 8 B shared" in line
