"""The README's two commands and CI run one setup, tools/setup.sh, so CI tests what a reader runs.

CI (.ci/run) must run the README's test command, `tools/setup.sh test && .venv/bin/python -m
pytest -q`: its two halves, in that order, with only the linters in between.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETUP = ROOT / "tools" / "setup.sh"


def readme_commands() -> list[str]:
    first_block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.DOTALL)
    assert first_block, "the README has no sh block"
    return first_block.group(1).strip().splitlines()


def test_the_readme_commands_call_the_setup_script() -> None:
    lab, test = readme_commands()
    assert lab.startswith("tools/setup.sh lab && ")
    assert test == "tools/setup.sh test && .venv/bin/python -m pytest -q"


def test_ci_runs_the_readme_test_command() -> None:
    steps = [
        line
        for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    setup, tests = readme_commands()[1].split(" && ")
    assert setup in steps and tests in steps
    between = steps[steps.index(setup) + 1 : steps.index(tests)]
    assert all(step.startswith(".venv/bin/") for step in between), between
    assert steps[-1] == tests


def test_the_setup_script_is_executable_bash_and_knows_its_modes() -> None:
    assert os.access(SETUP, os.X_OK)
    assert subprocess.run(["bash", "-n", str(SETUP)], check=False).returncode == 0
    usage = subprocess.run([str(SETUP), "neither"], capture_output=True, text=True, check=False)
    assert usage.returncode == 2 and "usage: tools/setup.sh lab|test" in usage.stderr
