"""`%autotune` in a notebook: a cell's function becomes a dispatcher to its best build per shape.

`%autotune gemm BN=128,256 STAGES=3,4` puts an AutotunedFunction in the notebook under `gemm`,
over gemm's own cell as it was compiled (its source, the macros of earlier cells, its `-D`
options, its target, the device functions of earlier cells). The first call of each shape tunes
(every point compiled, checked against the first point's result, timed) and shows the sweep; the
choice is kept on disk beside the binaries, so later calls, in this kernel or after a restart, go
straight to it. Running the cell again puts the plain function back.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from IPython.display import display

from choreo_kernel.kernel.sweep import progress_bundle, show_sweep
from choreo_kernel.kernel.tables import table_bundle
from choreo_kernel.tuning.autotune import Autotuned


class AutotunedFunction:
    """A cell's function that calls the best build for each call's shape, showing each tuning."""

    def __init__(self, tuned: Autotuned) -> None:
        self.tuned = tuned
        self.__name__ = tuned.function
        self.__doc__ = f"{tuned.function}, autotuned over {grid_text(tuned)}"

    def __call__(self, *args: Any) -> Any:
        tuned_before = len(self.tuned.sweeps)
        title = f"autotune of {self.__name__} for {describe_key(self.tuned.key(args))}"
        progress = None

        def report(done: int, total: int, text: str) -> None:
            nonlocal progress
            bundle = progress_bundle(title, done, total, text)
            if progress is None:
                progress = display(bundle, raw=True, display_id=True)
            else:
                progress.update(bundle, raw=True)

        self.tuned.progress = report
        result = self.tuned(*args)
        if len(self.tuned.sweeps) > tuned_before:  # this call tuned a new shape: show how it chose
            key, sweep = list(self.tuned.sweeps.items())[-1]
            show_sweep(sweep)
            print(f"{self.__name__}: {describe_choice(self.tuned.choices[key])} for {describe_key(key)}")
        return result

    def choices_bundle(self) -> dict[str, str]:
        """The shapes chosen so far in this kernel, and the build each calls."""
        rows = [
            [
                describe_key(key),
                describe_choice(choice),
                "tuned here" if key in self.tuned.sweeps else "on disk",
            ]
            for key, choice in self.tuned.choices.items()
        ]
        title = f"{self.__doc__}; choices kept in {self.tuned.record}"
        return table_bundle(["shape", "build", "chosen"], rows, set(), title)

    def __repr__(self) -> str:
        return f"<choreo function {self.__doc__}: {len(self.tuned.choices)} shape(s) chosen>"


def grid_text(tuned: Autotuned) -> str:
    return " ".join(f"{name}={','.join(map(str, values))}" for name, values in tuned.grid.items())


def describe_choice(choice: dict[str, object]) -> str:
    return " ".join(f"{name}={value}" for name, value in choice.items())


def describe_key(key: Hashable) -> str:
    """(((4096, 4096), 'float16'), 7) -> '4096x4096 float16, 7': the default key, readably."""
    if not isinstance(key, tuple):
        return repr(key)
    parts = []
    for part in key:
        if isinstance(part, tuple) and len(part) == 2 and isinstance(part[0], tuple):
            parts.append("x".join(map(str, part[0])) + f" {part[1]}")
        else:
            parts.append(repr(part))
    return ", ".join(parts)
