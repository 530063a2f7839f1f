"""The disk cache of built binaries (cubins of the CUDA backend, the sim's device-code libraries).

Under `$CHOREO_CACHE_DIR` (default `~/.cache/choreo-kernel`). A binary is loaded into the process
as code, so the cache is private: its directories are 0700 and its files 0600 whatever the umask,
a directory of another user is refused, and an entry is used only when it is a plain file of
this user (not a link) whose SHA-256 matches the one written beside it (`NAME.sha256`); anything
else (a truncated or corrupt file, a binary planted in a shared directory) is built again.
Files are written to a temporary name and renamed into place, so concurrent processes never
read half a file; a write that fails is a `ChoreoError` and leaves no temporary file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from choreo_kernel.compiler.diagnostics import ChoreoError

PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600


def cache_directory() -> Path:
    configured = os.environ.get("CHOREO_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "choreo-kernel"


def cached_file(path: Path, build: Callable[[], bytes]) -> Path:
    """`path`, holding what `build()` makes: built and written when it is missing or fails its checks."""
    private_directory(path.parent)
    if not intact(path):
        data = build()
        write_atomically(path, data)
        write_atomically(_digest_path(path), _digest(data).encode())
    return path


def intact(path: Path) -> bool:
    """Whether `path` and its digest are plain files of this user and the digest is the file's."""
    digest = _owned_file(_digest_path(path))
    data = _owned_file(path)
    return (
        data is not None and digest is not None and digest.decode(errors="replace").strip() == _digest(data)
    )


def private_directory(directory: Path) -> Path:
    """`directory` (and the parents it needs) made, or checked, as this user's alone: 0700."""
    missing = [parent for parent in (directory, *directory.parents) if not parent.exists()]
    try:
        for parent in reversed(missing):
            with contextlib.suppress(FileExistsError):  # another process made it meanwhile
                parent.mkdir()
            os.chmod(parent, PRIVATE_DIRECTORY)  # mkdir's mode is cut by the umask, not raised
        info = os.stat(directory)
        if not stat.S_ISDIR(info.st_mode):
            raise _cache_error(directory, "it is not a directory")
        if info.st_uid != os.getuid():
            raise _cache_error(directory, "it belongs to another user, whose binaries this process would run")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(directory, PRIVATE_DIRECTORY)
    except OSError as error:
        raise _cache_error(directory, error.strerror or str(error)) from None
    return directory


def write_atomically(path: Path, data: bytes) -> None:
    """`data` into `path` (0600) through a temporary file renamed into place; a failure is a ChoreoError."""
    directory = private_directory(path.parent)
    try:
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=".tmp-")  # 0600 whatever the umask
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as error:
        raise _cache_error(path, error.strerror or str(error)) from None


def _owned_file(path: Path) -> bytes | None:
    """The bytes of `path` when it is a plain file of this user, not a link; else None."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            return None
        return handle.read()


def _digest_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _cache_error(path: Path, reason: str) -> ChoreoError:
    return ChoreoError.simple(
        f"the compile cache cannot use {path}: {reason}; set CHOREO_CACHE_DIR to a directory of your own"
    )
