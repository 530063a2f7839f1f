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


def _analysis_bug_on(monkeypatch: pytest.MonkeyPatch, bad: Path) -> None:
    """`analyze` raises as a compiler bug would, for `bad` only."""
    from choreo_kernel import cli

    real = cli.analyze

    def analyze(source: str, *args: object, filename: str = "<source>", **kwargs: object) -> object:
        if Path(filename).name == bad.name:
            raise AttributeError("'Tree' object has no attribute 'type'\nsecond line of the message")
        return real(source, *args, filename=filename, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cli, "analyze", analyze)
    monkeypatch.delenv("CHOREO_TRACEBACK", raising=False)


@pytest.mark.parametrize("command", ["emit", "graph"])
def test_an_internal_error_in_emit_or_graph_is_one_line_and_exit_3(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from choreo_kernel import cli

    _analysis_bug_on(monkeypatch, VALID_FILE)
    assert cli.main([command, str(VALID_FILE)]) == 3
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"choreo: internal error: {VALID_FILE}: AttributeError: 'Tree' object has no attribute 'type' "
        "(set CHOREO_TRACEBACK=1 for the traceback)"
    ]


def test_check_goes_on_after_an_internal_error_and_exits_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from choreo_kernel import cli

    _analysis_bug_on(monkeypatch, VALID_FILE)
    assert cli.main(["check", str(VALID_FILE), str(INVALID_FILE)]) == 3
    out, err = capsys.readouterr()
    assert err.startswith(f"choreo: internal error: {VALID_FILE}: AttributeError") and err.count("\n") == 1
    assert f"{INVALID_FILE}:" in out and " error: " in out  # the second file was checked
    assert "checked 1 file: 1 error" in out


def test_choreo_traceback_shows_the_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from choreo_kernel import cli

    _analysis_bug_on(monkeypatch, VALID_FILE)
    monkeypatch.setenv("CHOREO_TRACEBACK", "1")
    with pytest.raises(AttributeError):
        cli.main(["emit", str(VALID_FILE)])
