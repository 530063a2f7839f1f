"""The tuning line magics: `%bench`, `%sweep` and `%resources`, in `%%python` cells and as lines.

They evaluate Python in the notebook's namespace, so an expression calls the compiled
functions and arrays the user already has; everything they measure they also leave there
(`_bench`, `_sweep`, `_resources`) for a later cell to plot or assert on.
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class
from IPython.display import Image, display

from choreo_kernel.cli import parse_define
from choreo_kernel.kernel.resources import kernel_resources, resources_bundle, sim_message
from choreo_kernel.kernel.session import CompiledFunction, SessionMagics
from choreo_kernel.kernel.sweep import (
    Grid,
    Sweep,
    SweepOptions,
    check_cell_takes,
    plot_png,
    run_sweep,
    sweep_table,
)
from choreo_kernel.kernel.timing import (
    BYTES,
    FLOPS,
    Device,
    Timing,
    Work,
    array_bytes,
    current_device,
    format_seconds,
    measure,
)

DEFAULT_REPEATS = 10
DEFAULT_RTOL = 1e-2
DEFAULT_ATOL = 1e-2
# `--flops 2*M*N*K`, `-n 20`, `--rtol=1e-3`: a value is one word or a quoted text.
_OPTION = re.compile(r"""(?:^|\s)(--flops|--bytes|--rtol|--atol|-n)(?:=|\s+)("[^"]*"|'[^']*'|\S+)""")


@magics_class
class TuningMagics(SessionMagics):
    @line_magic
    def bench(self, line: str) -> None:
        """%bench EXPR [--flops N | --bytes N] [-n REPEATS]: time EXPR, the median and spread of its runs.

        On a GPU each run is timed with CUDA events, on the sim backend with the wall clock,
        after one untimed run (compiling, loading). With the work of one run (--flops, or
        --bytes; for a call, bytes default to the arrays it passes and returns) it shows the
        rate and, on a device it knows, the share of the device's peak. The Timing object is
        left in `_bench`.
        """
        expression, options = self._split(line, {"--flops", "--bytes", "-n"})
        if not expression:
            raise UsageError("%bench EXPR [--flops N | --bytes N] [-n REPEATS]")
        run = self._runner(expression)
        result = run()
        work = self._work(options) or Work(self._call_bytes(expression, result), BYTES)
        device = self._device()
        seconds = measure(run, self._repeats(options), device)
        timing = Timing(expression, seconds, device, work if work.amount else None)
        self._namespace["_bench"] = timing
        print(timing)

    @line_magic
    def sweep(self, line: str) -> None:
        """%sweep NAME=v1,v2,... [NAME2=...] [--flops N | --bytes N] [-n R] [--rtol X] [--atol X] -- EXPR

        Compiles the last Choreo cell again for every combination of the values (as `-D`
        defines), runs EXPR once to compare its result with the first point's (np.allclose,
        --rtol and --atol, 1e-2 by default), times it as %bench does, and shows a table, a
        plot and, on a GPU, the best point as `#define` lines (sim times are CPU times and rank
        nothing). The Sweep object is left in `_sweep`.
        """
        head, separator, expression = f" {line}".partition(" -- ")
        grid_text, options = self._split(head, {"--flops", "--bytes", "-n", "--rtol", "--atol"})
        if not separator or not expression.strip() or not grid_text:
            raise UsageError("%sweep NAME=v1,v2,... [NAME2=...] [--flops N | --bytes N] [-n R] -- EXPR")
        cell = self.session.last_cell
        if cell is None:
            raise UsageError("%sweep recompiles the last Choreo cell: run one first")
        grid = parse_grid(grid_text)
        try:
            check_cell_takes(cell, grid)
        except ValueError as error:
            raise UsageError(str(error)) from None
        expression = expression.strip()
        settings = SweepOptions(
            self._repeats(options),
            current_device(cell.target == "cuda"),  # the points run on the cell's target
            self._work(options),
            float(self._value(options.get("--rtol", str(DEFAULT_RTOL)))),
            float(self._value(options.get("--atol", str(DEFAULT_ATOL)))),
        )
        progress = display({"text/plain": f"sweep of {cell.filename}: starting"}, raw=True, display_id=True)
        start = time.perf_counter()
        result = run_sweep(
            self.session,
            grid,
            expression,
            self._runner(expression),
            settings,
            lambda text: progress.update({"text/plain": text}, raw=True),
        )
        elapsed = time.perf_counter() - start
        progress.update(
            {"text/plain": f"sweep of {cell.filename}: {len(result.points)} points in {elapsed:.1f} s"},
            raw=True,
        )
        self._namespace["_sweep"] = result
        show_sweep(result)

    @line_magic
    def resources(self, line: str) -> None:
        """%resources FUNC: registers, shared memory, spills and occupancy of each kernel of FUNC (cuda only)."""
        function = self._function(line.strip())
        if function.module.target != "cuda":
            print(sim_message(function))
            return
        kernels = kernel_resources(function)
        self._namespace["_resources"] = kernels
        display(resources_bundle(function.__name__, kernels), raw=True)

    # ------------------------------------------------------------------ helpers

    @property
    def _namespace(self) -> dict[str, Any]:
        """The notebook's namespace, where expressions run and results are left."""
        return self.session.shell.user_ns

    def _split(self, text: str, allowed: set[str]) -> tuple[str, dict[str, str]]:
        """The text without its options, and the options by flag."""
        options: dict[str, str] = {}

        def take(match: re.Match[str]) -> str:
            flag, value = match.group(1), match.group(2)
            if flag not in allowed:
                raise UsageError(
                    f"{flag} is not an option here; the options are {', '.join(sorted(allowed))}"
                )
            options[flag] = value.strip("'\"")
            return " "

        rest = _OPTION.sub(take, text).strip()
        if "--flops" in options and "--bytes" in options:
            raise UsageError("give the work as --flops or as --bytes, not both")
        return rest, options

    def _value(self, text: str) -> Any:
        """An option's value: a Python expression in the notebook's namespace (`2*M*N*K`)."""
        return eval(text, self._namespace)

    def _repeats(self, options: dict[str, str]) -> int:
        repeats = int(self._value(options.get("-n", str(DEFAULT_REPEATS))))
        if repeats < 1:
            raise UsageError("-n needs at least 1 repeat")
        return repeats

    def _work(self, options: dict[str, str]) -> Work | None:
        for flag, unit in (("--flops", FLOPS), ("--bytes", BYTES)):
            if flag in options:
                return Work(float(self._value(options[flag])), unit)
        return None

    def _runner(self, expression: str) -> Callable[[], Any]:
        try:
            code = compile(expression, "<expression>", "eval")
        except SyntaxError as error:
            raise UsageError(f"not a Python expression: {expression} ({error.msg})") from None
        namespace = self._namespace
        return lambda: eval(code, namespace)

    def _call_bytes(self, expression: str, result: Any) -> int:
        """For `f(a, b)`: the bytes of the arrays passed and returned, the least a call can move."""
        tree = ast.parse(expression, mode="eval").body
        if not isinstance(tree, ast.Call):
            return 0
        arguments = [
            eval(compile(ast.Expression(argument), "<argument>", "eval"), self._namespace)
            for argument in tree.args
            if not isinstance(argument, ast.Starred)
        ]
        return array_bytes([*arguments, result])

    def _device(self) -> Device:
        return current_device(self.session.auto_target == "cuda")

    def _function(self, text: str) -> CompiledFunction:
        value = self._namespace.get(text)
        if not isinstance(value, CompiledFunction):
            names = ", ".join(self.session.functions) or "none yet"
            raise UsageError(f"%resources FUNC: FUNC is a compiled Choreo function (these are: {names})")
        return value


def parse_grid(text: str) -> Grid:
    """`BN=128,256 STAGES=2,3` -> {"BN": [128, 256], "STAGES": [2, 3]} (integers where they are)."""
    grid: Grid = {}
    for word in text.split():
        name, _, values = word.partition("=")
        if not name.isidentifier() or not values:
            raise UsageError(f"'{word}' is not NAME=v1,v2,...")
        grid[name] = [parse_define(f"{name}={value}")[1] for value in values.split(",") if value]
    return grid


def show_sweep(result: Sweep) -> None:
    """The table, the plot, and the best point as `#define` lines to paste into the cell."""
    display(sweep_table(result), raw=True)
    display(Image(plot_png(result), format="png"))
    if not result.ranked:
        print(
            "not ranked: on the sim backend these are the NumPy interpreter's times on the CPU, which "
            "say nothing about a GPU; run the sweep on a GPU (the cuda target) to find the best point"
        )
        return
    best = result.best
    if best is None or best.timing is None:
        print("no point ran and agreed with the first point: nothing to recommend")
        return
    rate = f", {best.timing.rate_text()}" if best.timing.rate is not None else ""
    print(f"best: {best.label} (median {format_seconds(best.timing.median)}{rate}); paste into the cell:")
    print(result.defines_text())
