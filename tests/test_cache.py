"""The disk cache of binaries (runtime/cache.py, issue 17 item 11): a binary is code this process will
run, so what is loaded is checked (a plain file of this user whose SHA-256 matches), the cache is
private whatever the umask, and a failed write is a ChoreoError that leaves nothing behind."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

import choreo_kernel as ck
from choreo_kernel.runtime import cache

BINARY = b"\x7fELF a binary" * 100


class Builder:
    """Counts its builds, so that a test sees whether the cache built again."""

    def __init__(self, data: bytes = BINARY) -> None:
        self.data = data
        self.builds = 0

    def __call__(self) -> bytes:
        self.builds += 1
        return self.data


@pytest.fixture
def entry(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "sim" / "0123abcd.so"


@pytest.fixture
def umask_000() -> Iterator[None]:
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def test_an_intact_entry_is_loaded_and_not_built_again(entry: Path) -> None:
    build = Builder()
    assert cache.cached_file(entry, build) == entry
    assert cache.cached_file(entry, build) == entry
    assert build.builds == 1 and entry.read_bytes() == BINARY


@pytest.mark.parametrize("damage", ["truncate", "flip", "digest", "no digest"])
def test_a_corrupt_or_truncated_entry_is_built_again(entry: Path, damage: str) -> None:
    build = Builder()
    cache.cached_file(entry, build)
    digest = entry.with_name(entry.name + ".sha256")
    if damage == "truncate":
        entry.write_bytes(BINARY[:-10])
    elif damage == "flip":
        entry.write_bytes(b"X" + BINARY[1:])
    elif damage == "digest":
        digest.write_text("0" * 64)
    else:
        digest.unlink()
    cache.cached_file(entry, build)
    assert build.builds == 2 and entry.read_bytes() == BINARY


def test_a_link_in_the_cache_is_not_followed(entry: Path, tmp_path: Path) -> None:
    planted = tmp_path / "planted.so"
    planted.write_bytes(b"someone else's code")
    entry.parent.mkdir(parents=True)
    entry.symlink_to(planted)
    digest = entry.with_name(entry.name + ".sha256")
    digest.write_text(cache._digest(planted.read_bytes()))  # even with a matching digest
    build = Builder()
    cache.cached_file(entry, build)
    assert build.builds == 1
    assert not entry.is_symlink() and entry.read_bytes() == BINARY
    assert planted.read_bytes() == b"someone else's code"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_an_entry_of_another_user_is_not_loaded(entry: Path) -> None:
    build = Builder()
    cache.cached_file(entry, build)
    os.chown(entry, 12345, 12345)
    cache.cached_file(entry, build)
    assert build.builds == 2 and entry.stat().st_uid == os.getuid()


def test_a_directory_of_another_user_is_refused(entry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache.cached_file(entry, Builder())
    monkeypatch.setattr(cache.os, "getuid", lambda: os.stat(entry.parent).st_uid + 1)
    with pytest.raises(ck.ChoreoError, match="belongs to another user"):
        cache.cached_file(entry, Builder())


def test_the_cache_is_private_whatever_the_umask(entry: Path, tmp_path: Path, umask_000: None) -> None:
    cache.cached_file(entry, Builder())
    for directory in (tmp_path / "cache", entry.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    for file in (entry, entry.with_name(entry.name + ".sha256")):
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file


def test_an_existing_open_directory_of_this_user_is_made_private(entry: Path) -> None:
    entry.parent.mkdir(parents=True)
    entry.parent.chmod(0o777)
    cache.cached_file(entry, Builder())
    assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700


def test_a_failed_write_is_a_choreo_error_and_leaves_no_temporary_file(
    entry: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(source: object, target: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache.os, "replace", full)
    with pytest.raises(ck.ChoreoError, match="No space left on device"):
        cache.cached_file(entry, Builder())
    assert list(entry.parent.iterdir()) == []


def test_a_cache_path_that_is_a_file_is_a_choreo_error(tmp_path: Path) -> None:
    (tmp_path / "cache").write_text("not a directory")
    with pytest.raises(ck.ChoreoError, match="compile cache cannot use"):
        cache.cached_file(tmp_path / "cache" / "x.so", Builder())
