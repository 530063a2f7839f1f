"""Installing makes the kernel visible to Jupyter: the wheel's kernelspec, and `choreo install`.

The wheel is built from this checkout without build isolation (nothing downloaded) and
installed with --no-deps into a fresh virtual environment that borrows this one's packages
(tests/environments.py; never the base interpreter's), so the test checks what the wheel
itself brings: the kernelspec under the environment's share/jupyter/kernels.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from environments import fresh_environment

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 300


def run(*command: str | Path, cwd: Path) -> str:
    """Run a command outside the checkout, so that `python -c` cannot import it from the cwd."""
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_wheel_installs_the_kernelspec_into_a_fresh_environment(tmp_path: Path) -> None:
    run(
        sys.executable,
        "-m",
        "build",
        "--wheel",
        "--no-isolation",
        "--outdir",
        tmp_path / "dist",
        ROOT,
        cwd=tmp_path,
    )
    (wheel,) = (tmp_path / "dist").glob("choreo_kernel-*.whl")
    venv = tmp_path / "venv"
    python = fresh_environment(venv)
    run(
        python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--no-index",
        "--force-reinstall",
        wheel,
        cwd=tmp_path,
    )

    spec_dir = venv / "share" / "jupyter" / "kernels" / "choreo"
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["argv"] == ["python", "-m", "choreo_kernel.kernel", "-f", "{connection_file}"]
    assert (spec["display_name"], spec["language"]) == ("Choreo", "choreo")
    assert {path.name for path in spec_dir.iterdir()} == {"kernel.json", "logo-32x32.png", "logo-64x64.png"}

    # `jupyter kernelspec list`, run by the environment's Python (the `jupyter` launcher would
    # find another environment's `jupyter-kernelspec` on PATH).
    listed = run(python, "-m", "jupyter_client.kernelspecapp", "list", "--json", cwd=tmp_path)
    assert json.loads(listed)["kernelspecs"]["choreo"]["resource_dir"] == str(spec_dir)
    # The environment imports the wheel's package, not this checkout.
    where = run(python, "-c", "import choreo_kernel.kernel.kernel as k; print(k.__file__)", cwd=tmp_path)
    assert where.startswith(str(venv))
    # The docs' pages are in the wheel: `choreo docs` there reads them, not this checkout's.
    page = run(python, "-m", "choreo_kernel", "docs", "events", cwd=tmp_path)
    assert page.startswith("# Events\n")
    where = run(python, "-c", "from choreo_kernel import docs; print(docs.docs_directory())", cwd=tmp_path)
    assert where.startswith(str(venv))
    # `choreo install` there finds the kernelspec as wheel data, with no checkout to copy from.
    run(python, "-m", "choreo_kernel", "install", "--prefix", tmp_path / "elsewhere", cwd=tmp_path)
    installed = tmp_path / "elsewhere" / "share" / "jupyter" / "kernels" / "choreo"
    assert json.loads((installed / "kernel.json").read_text())["argv"][0] == str(python)
    assert (installed / "logo-32x32.png").is_file()


def test_choreo_install_writes_a_kernelspec_running_this_python(tmp_path: Path) -> None:
    out = run(sys.executable, "-m", "choreo_kernel", "install", "--prefix", tmp_path, cwd=tmp_path)
    spec_dir = tmp_path / "share" / "jupyter" / "kernels" / "choreo"
    assert str(spec_dir) in out
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["argv"] == [sys.executable, "-m", "choreo_kernel.kernel", "-f", "{connection_file}"]
    assert (spec_dir / "logo-64x64.png").read_bytes().startswith(b"\x89PNG")
