"""`python -m choreo_kernel check` as a person runs it: exit codes 0/1/2 and what it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import CONFORMANCE, parse_program

VALID_FILE = CONFORMANCE / "valid" / "gemm_rr_sync.co"
INVALID_FILE = CONFORMANCE / "invalid" / "undeclared_name.co"
SIM_WARNING_FILE = CONFORMANCE / "invalid" / "trigger_after_dma_cuda.co"  # an error on cuda only


def choreo(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a fresh interpreter, as the console script would."""
    result = subprocess.run(
        [sys.executable, "-m", "choreo_kernel", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def assert_one_line_error(result: subprocess.CompletedProcess[str], path: Path, reason: str) -> None:
    """Exit 2 and a single `choreo: error: FILE: reason` line on stderr, nothing else."""
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"choreo: error: {path}: "), lines[0]
    assert reason in lines[0]
    assert result.stdout == ""


def test_valid_file_exits_0() -> None:
    result = choreo("check", VALID_FILE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " error: " not in result.stdout


def test_all_valid_files_exit_0() -> None:
    result = choreo("check", *sorted((CONFORMANCE / "valid").glob("*.co")))
    assert result.returncode == 0, result.stdout + result.stderr


def test_invalid_file_exits_1_with_located_diagnostic() -> None:
    line = parse_program(INVALID_FILE).error_line
    result = choreo("check", INVALID_FILE)
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(rf"^{re.escape(str(INVALID_FILE))}:{line}:\d+: error: ", result.stdout, re.MULTILINE)
    assert re.search(r"^\s*\|\s*\^~*\s*$", result.stdout, re.MULTILINE), "no caret line"


def test_warnings_alone_exit_0() -> None:
    """A CUDA-only rule is a warning on sim (language.md 12.10): reported, yet not a failure."""
    result = choreo("check", "--target", "sim", SIM_WARNING_FILE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(rf"^{re.escape(str(SIM_WARNING_FILE))}:\d+:\d+: warning: ", result.stdout, re.MULTILINE)


def test_error_in_one_file_of_many_exits_1() -> None:
    result = choreo("check", VALID_FILE, INVALID_FILE)
    assert result.returncode == 1


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.co"
    assert_one_line_error(choreo("check", path), path, "no such file")


def test_directory(tmp_path: Path) -> None:
    assert_one_line_error(choreo("check", tmp_path), tmp_path, "directory")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.co"
    path.write_bytes(b"")
    assert_one_line_error(choreo("check", path), path, "empty")


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "blob.co"
    path.write_bytes(bytes(range(256)))
    assert_one_line_error(choreo("check", path), path, "binary")


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.co"
    path.write_bytes("// caf\u00e9\n__co__ void f() {}\n".encode("latin-1"))
    assert_one_line_error(choreo("check", path), path, "UTF-8")


def test_unreadable_file_among_good_ones_exits_2(tmp_path: Path) -> None:
    """An I/O problem outranks diagnostics: the run did not see everything it was asked to."""
    result = choreo("check", INVALID_FILE, tmp_path / "nope.co")
    assert result.returncode == 2
    assert " error: " in result.stdout  # the readable file was still checked


@pytest.mark.parametrize("args", [(), ("check",), ("bogus",), ("check", "--target", "ptx", "x.co")])
def test_usage_errors_exit_2(args: tuple[str, ...]) -> None:
    result = choreo(*args)
    assert result.returncode == 2
    assert "usage:" in result.stderr


def test_version() -> None:
    result = choreo("--version")
    assert result.returncode == 0
    assert re.fullmatch(r"choreo \d+\.\d+\.\d+\S*\n", result.stdout)
