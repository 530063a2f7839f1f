"""Finding the CUDA tools these features run: Nsight Compute's `ncu`, `nvdisasm`, `nvcc`.

They come with the CUDA toolkit (on PATH, under $CUDA_HOME or /usr/local/cuda) and, for
nvdisasm, also as a wheel (`pip install nvidia-cuda-nvdisasm`, which puts it in site-packages,
not on PATH). A missing tool is one line that says what needs it and where it was looked for.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

# Where a CUDA toolkit or Nsight Compute is usually installed, after PATH.
_TOOLKITS = ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute")


class ToolMissing(Exception):
    """A CUDA tool this machine does not have; the message is one line for the user."""


class ToolFailed(Exception):
    """A CUDA tool that ran and failed (or ran too long); the message is its first line of complaint."""


def find_tool(name: str) -> Path | None:
    """The executable `name` from PATH, the CUDA toolkit, Nsight Compute's folder or NVIDIA's wheels."""
    found = shutil.which(name)
    if found:
        return Path(found)
    folders = [
        Path(home) / "bin" for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")) if home
    ]
    folders += [Path(folder) for folder in _TOOLKITS]
    folders += [path.parent for folder in _TOOLKITS[1:] for path in sorted(Path(folder).glob(f"*/{name}"))]
    folders += _wheel_folders()
    for folder in folders:
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def require(name: str, purpose: str, install: str) -> Path:
    """The tool, or `ToolMissing` saying that `purpose` needs it and how to get it."""
    path = find_tool(name)
    if path is None:
        raise ToolMissing(
            f"{purpose} needs {name}, which is not on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin ({install})"
        )
    return path


def _wheel_folders() -> list[Path]:
    """`nvidia/cu*/bin` of NVIDIA's tool wheels (nvidia-cuda-nvdisasm and the like), where installed."""
    spec = importlib.util.find_spec("nvidia")
    roots = spec.submodule_search_locations if spec is not None else None
    return [folder for root in roots or [] for folder in sorted(Path(root).glob("cu*/bin"))]
