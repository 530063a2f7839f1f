"""Fresh virtual environments for the tests that install the wheel: they see this environment's
packages (JupyterLab, jupyter_client, pip) and nothing of the base interpreter's.

`venv --system-site-packages` made from inside a virtual environment reaches the *base*
interpreter's packages, not this environment's, so a test that relied on it passed only where
the base happened to have them (issue 18). Here the new environment is isolated from the base
and borrows this environment's site directories through a `.pth` file; `fresh_environment`
checks that, so a leak fails on any machine, however bare or full its base interpreter is.
"""

from __future__ import annotations

import json
import site
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path


def _site_directories(prefix: str, exec_prefix: str) -> set[str]:
    scheme = {"base": prefix, "platbase": exec_prefix}
    return {sysconfig.get_path(name, vars=scheme) for name in ("purelib", "platlib")}


def fresh_environment(directory: Path) -> Path:
    """A new environment in `directory` that borrows this one's packages; its python."""
    venv.create(directory, system_site_packages=False, with_pip=False)
    python = directory / "bin" / "python"
    own = [path for path in site.getsitepackages() if Path(path).is_relative_to(sys.prefix)]
    if sys.prefix != sys.base_prefix:
        target = sysconfig.get_path("purelib", vars={"base": str(directory), "platbase": str(directory)})
        # Plain directory lines: the directories are added, their own .pth files (this checkout's
        # editable install) are not run, so the new environment imports what is installed in it.
        Path(target, "_borrowed_environment.pth").write_text("\n".join(own) + "\n")
    seen = json.loads(
        subprocess.run(
            [python, "-c", "import json, sys; print(json.dumps(sys.path))"],
            capture_output=True,
            text=True,
            check=True,
            cwd=directory,
        ).stdout
    )
    base = _site_directories(sys.base_prefix, sys.base_exec_prefix) - _site_directories(
        sys.prefix, sys.exec_prefix
    )
    leaked = sorted(base & set(seen))
    assert not leaked, f"the fresh environment sees the base interpreter's packages: {leaked}"
    return python
