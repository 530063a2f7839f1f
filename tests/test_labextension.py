"""The JupyterLab extension is committed prebuilt, and Jupyter finds it after `pip install`.

The build (choreo_kernel/labextension/) must match its sources; the wheel, built as a release
would build it, ships it; installed with no dependencies into a fresh virtual environment that
borrows this one's packages (JupyterLab among them; tests/environments.py), `jupyter
labextension list` there must show it under that environment's labextensions directory,
enabled, OK, and owned by the Python package. None of this needs Node.js.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from environments import fresh_environment

ROOT = Path(__file__).parent.parent
EXTENSION = "choreo-kernel"
LABEXTENSION = ROOT / "labextension"

# One extension line: `        choreo-kernel v0.1.0 enabled OK (python, choreo_kernel)`.
_ENTRY = re.compile(
    r"^\s+(?P<name>\S+) v(?P<version>\S+) (?P<enabled>enabled|disabled) +(?P<status>OK|X)"
    r"(?: \((?P<manager>[^,]+), (?P<package>[^)]+)\))?"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def listed_extensions(output: str) -> dict[Path | None, list[dict[str, str]]]:
    """The extensions of `jupyter labextension list`, by the labextensions directory they are listed under.

    Prebuilt extensions are listed under the directory they were found in; extensions that
    JupyterLab must build itself come under "Other labextensions", kept here under None.
    """
    sections: dict[Path | None, list[dict[str, str]]] = {}
    section: Path | None = None
    for line in _ANSI.sub("", output).splitlines():
        if line and not line[0].isspace():
            section = Path(line).resolve() if line.startswith("/") else None
            sections.setdefault(section, [])
        elif match := _ENTRY.match(line):
            sections.setdefault(section, []).append(match.groupdict())
    return sections


def _skip_reason() -> str | None:
    if importlib.util.find_spec("jupyterlab") is None:
        return "needs JupyterLab (pip install -e '.[browser]')"
    missing = [
        name
        for name in ("hatchling", "hatch_jupyter_builder", "jupyter_builder")
        if not importlib.util.find_spec(name)
    ]
    if missing:
        return f"needs {', '.join(missing)} to build the wheel without build isolation (pip install -e '.[test]')"
    return None


BUILD = ROOT / "choreo_kernel" / "labextension"


def test_the_committed_build_is_made_from_the_sources_as_they_are() -> None:
    """The build is committed, so that installing needs no Node.js; it must not lag its sources.

    `npm run build` records the SHA-256 of each source file (labextension/stamp.mjs); here every
    recorded file must still hash the same, and every file in their folders must be recorded.
    """
    recorded = dict(
        reversed(line.split("  ", 1)) for line in (BUILD / "sources.sha256").read_text().splitlines()
    )
    folders = {Path(path).parent for path in recorded} - {Path(".")}
    present = {
        path.relative_to(LABEXTENSION).as_posix()
        for folder in folders
        for path in (LABEXTENSION / folder).rglob("*")
        if path.is_file()
    }
    current = {path: hashlib.sha256((LABEXTENSION / path).read_bytes()).hexdigest() for path in recorded}
    rebuild = "labextension/ changed since choreo_kernel/labextension was built: run `npm run build` there and commit"
    assert present <= set(recorded), f"{sorted(present - set(recorded))} are not in the build; {rebuild}"
    assert current == recorded, rebuild


def test_wheel_installs_the_prebuilt_extension(tmp_path: Path) -> None:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)

    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            wheels,
            ROOT,
        ],
        check=True,
    )
    (wheel,) = wheels.glob("choreo_kernel-*.whl")

    python = fresh_environment(tmp_path / "env")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", wheel],
        check=True,
    )

    # `jupyter labextension` would run the first jupyter-labextension on PATH, maybe another
    # environment's; the module runs under the new environment's interpreter. It prints to stderr.
    listing = subprocess.run(
        [python, "-m", "jupyterlab.labextensions", "list"], capture_output=True, text=True, check=True
    )
    output = listing.stdout + listing.stderr
    directory = (tmp_path / "env" / "share" / "jupyter" / "labextensions").resolve()
    entries = {entry["name"]: entry for entry in listed_extensions(output).get(directory, [])}
    assert EXTENSION in entries, f"{EXTENSION} is not listed under {directory}:\n{output}"
    assert entries[EXTENSION] | {"version": ""} == {
        "name": EXTENSION,
        "version": "",
        "enabled": "enabled",
        "status": "OK",
        "manager": "python",
        "package": "choreo_kernel",
    }, output

    # Prebuilt: the module federation entry that JupyterLab loads is there, no build needed.
    installed = directory / EXTENSION
    build = json.loads((installed / "package.json").read_text())["jupyterlab"]["_build"]
    assert (installed / build["load"]).is_file()
