"""`python -m choreo_kernel install`: the kernelspec for Jupyters outside this environment.

`pip install` already puts the kernelspec in this environment's share/jupyter/kernels. A
Jupyter elsewhere (another venv, the user's own) needs one whose argv names this Python, so
this writes the shipped kernelspec with `sys.executable` in place of `python`.
"""

from __future__ import annotations

import json
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager

KERNEL_NAME = "choreo"


def shipped_kernelspec() -> Path:
    """The kernelspec directory: in the source tree (a checkout, an editable install) or as wheel data."""
    in_tree = Path(__file__).resolve().parents[2] / "kernelspec" / KERNEL_NAME
    if in_tree.is_dir():
        return in_tree
    return Path(sysconfig.get_path("data")) / "share" / "jupyter" / "kernels" / KERNEL_NAME


def install(user: bool = False, prefix: str | None = None) -> str:
    """Install the kernelspec (system-wide by default, as `jupyter kernelspec install` does); its path."""
    with tempfile.TemporaryDirectory() as scratch:
        spec_dir = Path(scratch) / KERNEL_NAME
        shutil.copytree(shipped_kernelspec(), spec_dir)
        spec_file = spec_dir / "kernel.json"
        spec = json.loads(spec_file.read_text())
        spec["argv"][0] = sys.executable
        spec_file.write_text(json.dumps(spec, indent=2) + "\n")
        return str(
            KernelSpecManager().install_kernel_spec(str(spec_dir), KERNEL_NAME, user=user, prefix=prefix)
        )
