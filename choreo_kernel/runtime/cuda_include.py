"""Where NVRTC finds CUDA's own headers: emitted code includes cuda_fp16.h and cuda_bf16.h when device
functions take f16 or bf16 data (compiler/cuda/device_calls.py), and NVRTC searches no directory by
itself. nvcc finds them on its own; NVRTC is given the CUDA toolkit's include directory, or that of
NVIDIA's pip wheels (nvidia-cuda-runtime), whichever holds them."""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path

_TOOLKIT = "/usr/local/cuda"  # where the CUDA toolkit installs by default
_INCLUDES_CUDA_HEADER = re.compile(r"^#include <cuda_(?:fp16|bf16)\.h>", re.MULTILINE)


class MissingCudaHeaders(RuntimeError):
    """The emitted code needs cuda_fp16.h or cuda_bf16.h and no CUDA include directory has them."""


def include_options(source: str) -> tuple[str, ...]:
    """`-I` options for NVRTC: none unless `source` includes one of CUDA's half headers."""
    if not _INCLUDES_CUDA_HEADER.search(source):
        return ()
    directory = cuda_include_directory()
    if directory is None:
        raise MissingCudaHeaders(
            "device functions that take f16 or bf16 data need CUDA's cuda_fp16.h and cuda_bf16.h, which NVRTC "
            "found in no include directory: set CUDA_PATH to the CUDA toolkit, or pip install nvidia-cuda-runtime"
        )
    cccl = directory / "cccl"  # CUDA 13 keeps <nv/target>, which the headers may include, there
    return (f"-I{directory}", *((f"-I{cccl}",) if cccl.is_dir() else ()))


@functools.cache
def cuda_include_directory() -> Path | None:
    """The first include directory that holds cuda_fp16.h: $CUDA_PATH's or $CUDA_HOME's, CuPy's CUDA,
    /usr/local/cuda's, then NVIDIA's wheels on sys.path."""
    roots = [os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), _cupy_cuda_path(), _TOOLKIT]
    candidates = [Path(root) / "include" for root in roots if root]
    for entry in sys.path:
        candidates += [Path(entry) / "nvidia" / wheel / "include" for wheel in ("cu13", "cuda_runtime")]
    return next((c for c in candidates if (c / "cuda_fp16.h").is_file()), None)


def _cupy_cuda_path() -> str | None:
    try:
        import cupy  # type: ignore[import-not-found]

        return str(cupy.cuda.get_cuda_path() or "") or None
    except Exception:  # no CuPy, or one that cannot tell
        return None
