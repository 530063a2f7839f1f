"""The disk cache of built binaries (cubins of the CUDA backend, the sim's device-code libraries).

Under `$CHOREO_CACHE_DIR` (default `~/.cache/choreo-kernel`); files are written to a temporary
name and renamed into place, so concurrent processes never read half a file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_directory() -> Path:
    configured = os.environ.get("CHOREO_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "choreo-kernel"


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".tmp-", delete=False) as handle:
        handle.write(data)
        temporary = handle.name
    os.replace(temporary, path)
