"""An autotuner: for a program and a grid of defines, the best configuration per shape, chosen once,
kept on disk beside the binaries, and dispatched to on every later call.

    gemm = ck.autotune(source, "gemm_ws", {"BN": [128, 256], "STAGES": [2, 3, 4]})
    gemm(a, b, c)  # a new shape: every point is compiled, checked against the first and timed; the
                   # fastest that agrees is called, and remembered for this shape on this device
    gemm(a, b, c)  # the same shape, here or in a later process: straight to the remembered point

A shape is what `key` makes of the arguments (by default each array's shape and element type, and
each scalar's value). The points run one after another in this process, as `%sweep` runs them;
`runner=` takes a `cluster.DaskRunner` to spread a first tuning over the GPUs of a cluster. In a
notebook, `%autotune FUNC NAME=v1,v2 ...` makes a cell's function such a dispatcher.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

from choreo_kernel import module as choreo_module
from choreo_kernel.compiler.diagnostics import ChoreoError
from choreo_kernel.compiler.driver import resolve_target
from choreo_kernel.compiler.version import __version__
from choreo_kernel.tuning.point import SweepSettings, SweptSource
from choreo_kernel.tuning.sweep import (
    Grid,
    InProcess,
    Progress,
    Runner,
    Sweep,
    check_source_takes,
    run_sweep,
)
from choreo_kernel.tuning.timing import current_device

Key = Callable[[Sequence[Any]], Hashable]


def shape_key(args: Sequence[Any]) -> Hashable:
    """Each array argument's shape and element type, each other argument's value."""
    return tuple(
        (tuple(arg.shape), _dtype_name(arg.dtype)) if hasattr(arg, "shape") and hasattr(arg, "dtype") else arg
        for arg in args
    )


@functools.lru_cache(maxsize=256)
def _dtype_name(dtype: Any) -> str:
    """`str(dtype)`, which NumPy builds anew on every call (a third of a dispatch's own time)."""
    return str(dtype)


class Autotuned:
    """A `__co__` function that calls the best build of its program for the shape of each call."""

    def __init__(
        self,
        swept: SweptSource,
        function: str,
        grid: Grid,
        *,
        key: Key = shape_key,
        repeats: int = 10,
        rtol: float = 1e-2,
        atol: float = 1e-2,
        cache_dir: Path | None = None,
        runner: Runner | None = None,
        progress: Progress | None = None,
    ) -> None:
        try:
            check_source_takes(swept, grid)
        except ValueError as error:
            raise ChoreoError.simple(f"autotune {function}: {error}") from None
        self.swept = swept
        self.function = function
        self.grid = grid
        self.key = key
        self.settings = SweepSettings(f"{function}(...)", repeats, None, rtol, atol)
        self.runner = runner or InProcess()
        self.progress: Progress = progress or _quiet  # how a tuning reports its points as they run
        self.choices: dict[Hashable, dict[str, object]] = {}
        self.sweeps: dict[Hashable, Sweep] = {}  # the tunings this process ran, for a look at them
        self._modules: dict[tuple[tuple[str, object], ...], choreo_module.Module] = {}
        self._dispatch: dict[Hashable, Callable[..., Any]] = {}  # shape -> the chosen build's function
        self.record = _choices_file(cache_dir, swept, function, grid)

    def __call__(self, *args: Any) -> Any:
        key = self.key(args)
        function = self._dispatch.get(key)
        if function is None:
            function = self._module(self._choice(key, args)).function(self.function)
            self._dispatch[key] = function
        return function(*args)

    def choice(self, args: Sequence[Any]) -> dict[str, object]:
        """The defines of the best point for these arguments' shape: remembered, or tuned now."""
        return self._choice(self.key(args), args)

    def _choice(self, key: Hashable, args: Sequence[Any]) -> dict[str, object]:
        if key not in self.choices:
            recorded = _read(self.record).get(repr(key))
            self.choices[key] = recorded if recorded is not None else self._tune(key, args)
        return self.choices[key]

    def _tune(self, key: Hashable, args: Sequence[Any]) -> dict[str, object]:
        sweep = run_sweep(self.swept, self.grid, self._bind(args), self.settings, self.runner, self.progress)
        self.sweeps[key] = sweep
        # On a GPU the fastest that agrees; on the sim, whose CPU times rank nothing, the first that runs.
        best = sweep.best if sweep.ranked else next((point for point in sweep.points if point.usable), None)
        if best is None:
            failures = "; ".join(f"{p.label}: {p.error or p.difference}" for p in sweep.points)
            raise ChoreoError.simple(
                f"autotune {self.function}: no point ran and agreed with the first ({failures})"
            )
        _write(self.record, {**_read(self.record), repr(key): best.defines})
        return best.defines

    def _bind(self, args: Sequence[Any]) -> Callable[[choreo_module.Module], Callable[[], Any]]:
        """Each point calls the function on these arguments; what it checks is the result, or for a
        function that writes into its arguments, those arguments."""
        name = self.function

        def bind(module: choreo_module.Module) -> Callable[[], Any]:
            function = module.function(name)
            plan = module.cuda_plan(name)
            written = (
                [i for i, param in enumerate(plan.function.params) if param.name in plan.written]
                if plan
                else []
            )

            def run() -> Any:
                result = function(*args)
                if result is not None or not written:
                    return result
                return WrittenArguments([args[i] for i in written])

            return run

        return bind

    def _module(self, defines: dict[str, object]) -> choreo_module.Module:
        key = tuple(sorted(defines.items()))
        if key not in self._modules:
            self._modules[key] = self.swept.compile(defines)
        return self._modules[key]


class WrittenArguments:
    """What a call wrote into its arguments, as one array for the check: copied from the device only when
    the check reads it (`np.array(...)`), never inside the timed runs, where a copy of the output would
    outweigh the kernel and rank the points by the copy."""

    def __init__(self, arrays: list[Any]) -> None:
        self.arrays = arrays

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        import numpy as np

        joined = np.concatenate([np.asarray(_host(array)).ravel() for array in self.arrays])
        return joined if dtype is None else joined.astype(dtype)

    def device_copy(self) -> Any:
        """The same, joined in GPU memory where every array is there (point.result_copy); else None."""
        if not all(hasattr(array, "__cuda_array_interface__") for array in self.arrays):
            return None
        import cupy  # type: ignore[import-not-found]

        return cupy.concatenate([cupy.asarray(array).ravel() for array in self.arrays])


def autotune(
    source: str,
    function: str,
    grid: Grid,
    *,
    defines: Mapping[str, object] | None = None,
    target: str = "auto",
    filename: str = "<source>",
    **options: Any,
) -> Autotuned:
    """`ck.autotune`: the function `function` of `source`, tuned over `grid` per shape (see Autotuned);
    `defines` are fixed for every point, `options` are Autotuned's."""
    swept = SweptSource(source, dict(defines or {}), resolve_target(target), filename)
    return Autotuned(swept, function, grid, **options)


def _host(value: Any) -> Any:
    return value.get() if hasattr(value, "get") else value


def _quiet(done: int, total: int, text: str) -> None:
    return None


def _choices_file(cache_dir: Path | None, swept: SweptSource, function: str, grid: Grid) -> Path:
    """Where the choices for this program, grid and device live: one small JSON file in the cache."""
    from choreo_kernel.runtime.cache import cache_directory

    device = current_device(swept.target == "cuda").name
    material = json.dumps(
        [
            swept.source,
            sorted(swept.defines.items()),
            swept.target,
            function,
            sorted(grid.items()),
            device,
            __version__,
        ],
        default=str,
    )
    digest = hashlib.sha256(material.encode()).hexdigest()[:32]
    return (cache_dir or cache_directory()) / "autotune" / f"{function}-{digest}.json"


def _read(path: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: Path, choices: dict[str, dict[str, object]]) -> None:
    """Written to a temporary name and renamed into place, readable by this user alone."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".autotune-")
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(choices, handle, indent=1, default=str)
        os.replace(temporary, path)
    except OSError as error:
        raise ChoreoError.simple(f"autotune: cannot record the choice in {path}: {error}") from None
