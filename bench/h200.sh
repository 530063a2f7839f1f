#!/usr/bin/env bash
# One device call on the H200 (the `device` tool), logs and plots under $OUT:
#   bench/h200.sh tests       every GPU test (`pytest -m gpu`: conformance on cuda vs REF and sim,
#                             the tutorials on cuda at full size, the tuning magics)
#   bench/h200.sh tutorials   only the tutorials and the tuning magics on cuda
#   bench/h200.sh profile     %profile, --ptx/--sass and %sweep --metric on cuda, and tutorial 05
#                             (ncu and nvdisasm from the CUDA toolkit; the facts line is printed)
#   bench/h200.sh attention   bench/attention.py (Choreo FlashAttention against torch SDPA) and
#                             tests/test_attention.py on the GPU
#   bench/h200.sh bench       bench/gemm.py, bench/copy_bandwidth.py, bench/compile.py
#                             (each alone: gemm, copy, compile)
#   bench/h200.sh autotune    bench/gemm.py --autotune: the builds ck.autotune chooses per type and
#                             shape, timed against the libraries
#   bench/h200.sh host        bench/host_overhead.py: the host's µs per call, replayed and slow, and
#                             of the autotuned dispatch
#   bench/h200.sh dask        the Dask sweep tests (`pytest -m gpu tests/test_tuning_dask.py`) and
#                             bench/sweep_dask.py (tutorial 05's sweep in process vs --gpus 1)
# Several modes run in order: `bench/h200.sh tutorials bench`.
# The machine has no package registry: run ../shared/tools/device-wheels.sh --kernel
# matplotlib contourpy cycler fonttools kiwisolver pyparsing python-dateutil six pillow packaging
# here first, and carry .whl. The dask mode also needs the wheels of bench/device-wheels.txt:
# add $(grep -v '^#' bench/device-wheels.txt) to that command.
set -uo pipefail
out=${OUT:-/tmp/choreo-h200}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv | tee "$out/gpu.txt"

# The kernelspec, for the tutorials (nbclient starts `python3 -m choreo_kernel.kernel`).
python3 -m choreo_kernel install --prefix /tmp/jupyter >/dev/null && export JUPYTER_PATH=/tmp/jupyter/share/jupyter
export CHOREO_TUTORIAL_OUT=/tmp/tutorials

gpu_tests() {
    timeout 540 python3 -m pytest -m gpu -q -p no:cacheprovider -rs "$@" 2>&1 | tee -a "$out/gpu-tests.log"
    tar czf "$out/tutorials.tgz" -C /tmp tutorials 2>/dev/null
}

run_mode() {
    case $1 in
    tests) gpu_tests tests ;;
    tutorials) gpu_tests tests/test_tutorials.py tests/test_kernel_tuning.py ;;
    profile) gpu_tests -s tests/test_kernel_tuning.py tests/test_tutorials.py -k "profile or sass or metric or 05_tuning" ;;
    gemm) timeout 300 python3 bench/gemm.py --repeats 30 2>&1 | tee "$out/gemm.log" ;;
    autotune) timeout 480 python3 bench/gemm.py --autotune --repeats 10 2>&1 | tee "$out/gemm-autotune.log" ;;
    host) timeout 240 python3 bench/host_overhead.py 2>&1 | tee "$out/host_overhead.log" ;;
    copy) timeout 90 python3 bench/copy_bandwidth.py 2>&1 | tee "$out/copy.log" ;;
    compile) timeout 120 python3 bench/compile.py --runs 5 2>&1 | tee "$out/compile.log" ;;
    attention)
        gpu_tests tests/test_attention.py
        timeout 400 python3 bench/attention.py --dtypes f16 bf16 2>&1 | tee "$out/attention.log"
        ;;
    bench) run_mode gemm && run_mode copy && run_mode compile ;;
    dask)
        gpu_tests tests/test_tuning_dask.py
        timeout 300 python3 bench/sweep_dask.py 2>&1 | tee "$out/sweep_dask.log"
        ;;
    *) echo "bench/h200.sh: unknown mode $1 (tests, tutorials, profile, gemm, autotune, host, copy, compile, attention, bench, dask)" >&2; return 2 ;;
    esac
}

for mode in "${@:-tests}"; do
    run_mode "$mode" || exit
done
