"""The tuning line magics: `%bench`, `%sweep`, `%resources` and `%profile`, in `%%python` cells and as lines.

They evaluate Python in the notebook's namespace, so an expression calls the compiled
functions and arrays the user already has; everything they measure they also leave there
(`_bench`, `_sweep`, `_resources`, `_profile`) for a later cell to plot or assert on.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class
from IPython.display import display

from choreo_kernel.compiler.diagnostics import ChoreoError
from choreo_kernel.compiler.preprocess import parse_define
from choreo_kernel.kernel.resources import kernel_resources, resources_bundle, sim_message
from choreo_kernel.kernel.session import CompiledFunction, SessionMagics
from choreo_kernel.kernel.sweep import (
    notebook_bind,
    progress_bundle,
    restore,
    shipped_bind,
    show_sweep,
    sweep_title,
)
from choreo_kernel.module import Module
from choreo_kernel.tuning.point import Bind, MetricProbe, SweepSettings, SweptSource
from choreo_kernel.tuning.sweep import (
    Grid,
    InProcess,
    Runner,
    check_source_takes,
    grid_points,
    run_sweep,
)
from choreo_kernel.tuning.timing import (
    BYTES,
    FLOPS,
    Device,
    Timing,
    Work,
    array_bytes,
    current_device,
    measure,
)

DEFAULT_REPEATS = 10
DEFAULT_RTOL = 1e-2
DEFAULT_ATOL = 1e-2
# `--flops 2*M*N*K`, `-n 20`, `--rtol=1e-3`: a value is one word or a quoted text.
_OPTION = re.compile(
    r"""(?:^|\s)(--flops|--bytes|--rtol|--atol|--metric|--cluster|--gpus|-n)(?:=|\s+)("[^"]*"|'[^']*'|\S+)"""
)
AUTOTUNE_USAGE = "%autotune FUNC NAME=v1,v2,... [NAME2=...] [-n R] [--rtol X] [--atol X]"
SWEEP_USAGE = (
    "%sweep NAME=v1,v2,... [NAME2=...] [--flops N | --bytes N] [-n R] [--rtol X] [--atol X]"
    " [--metric M] [--cluster ADDRESS | --gpus N] -- EXPR"
)


@magics_class
class TuningMagics(SessionMagics):
    @line_magic
    def bench(self, line: str) -> None:
        """%bench EXPR [--flops N | --bytes N] [-n REPEATS]: time EXPR, the median and spread of its runs.

        On a GPU each run is timed with CUDA events, on the sim backend with the wall clock,
        after one untimed run (compiling, loading). With the work of one run (--flops, or
        --bytes; for a call, bytes default to the arrays it passes and returns) it shows the
        rate and, on a device it knows, the share of the device's peak. Counting those bytes evaluates
        the call's arguments once more (without --flops or --bytes), as the docs say. The Timing
        object is left in `_bench`.
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
        """%sweep NAME=v1,v2,... [NAME2=...] [--flops N | --bytes N] [-n R] [--rtol X] [--atol X] [--metric M] [--cluster ADDRESS | --gpus N] -- EXPR

        Compiles the last Choreo cell again for every combination of the values (as `-D`
        defines), runs EXPR once to compare its result with the first point's (np.allclose,
        --rtol and --atol, 1e-2 by default), times it as %bench does, and shows a table, a
        plot and, on a GPU, the best point as `#define` lines (sim times are CPU times and rank
        nothing). The Sweep object is left in `_sweep`.

        With --metric (an Nsight Compute metric: `sm__throughput` is its % of peak,
        `gpu__time_duration` its sum, or a full name), each point's call, EXPR = FUNC(ARGS) of a
        function of the cell, is also profiled once, and the best point is the one with the
        highest value (the lowest for durations and cycles).

        --cluster ADDRESS sends the points to the Dask scheduler at ADDRESS; --gpus N to a
        LocalCUDACluster of N workers, one per GPU of this machine (started once, kept for
        later sweeps). Each worker compiles and times its points on its own GPU; EXPR and the
        values it names are copied to every worker, with the cell's functions standing for
        each point's build. (--metric profiles in this process only.)
        """
        head, separator, expression = f" {line}".partition(" -- ")
        grid_text, options = self._split(
            head, {"--flops", "--bytes", "-n", "--rtol", "--atol", "--metric", "--cluster", "--gpus"}
        )
        if not separator or not expression.strip() or not grid_text:
            raise UsageError(SWEEP_USAGE)
        cell = self.session.last_cell
        if cell is None:
            raise UsageError("%sweep recompiles the last Choreo cell: run one first")
        grid = parse_grid(grid_text)
        try:
            check_source_takes(cell, grid)
        except ValueError as error:
            raise UsageError(f"the last Choreo cell: {error}") from None
        expression = expression.strip()
        cluster = self._cluster_options(options)
        if cluster is not None and "--metric" in options:
            raise UsageError(
                "%sweep --metric profiles each point under ncu in this process: "
                "give it without --cluster or --gpus"
            )
        settings = SweepSettings(
            expression,
            self._repeats(options),
            self._work(options),
            float(self._value(options.get("--rtol", str(DEFAULT_RTOL)))),
            float(self._value(options.get("--atol", str(DEFAULT_ATOL)))),
            self._metric_probe(options["--metric"], expression) if "--metric" in options else None,
        )
        total = len(grid_points(grid))
        code = self._compiled(expression)
        progress = display(
            progress_bundle(f"sweep of {cell.filename}", 0, total, "starting"), raw=True, display_id=True
        )

        def report(done: int, total: int, text: str) -> None:
            progress.update(progress_bundle(f"sweep of {cell.filename}", done, total, text), raw=True)

        if cluster is None:
            runner: Runner = InProcess()
            bind: Bind = notebook_bind(self.session, code)
        else:
            report(
                0,
                total,
                "connecting to Dask" if cluster[0] else f"starting {cluster[1]} Dask workers, one per GPU",
            )
            runner, bind = self._dask_runner(*cluster, expression)
        report(0, total, f"starting {runner.where}")
        try:
            result = run_sweep(cell, grid, bind, settings, runner, report)
        finally:
            restore(self.session)
        summary = f"{sweep_title(result)}: {len(result.points)} points in {result.seconds:.1f} s"
        progress.update({"text/plain": summary}, raw=True)
        self._namespace["_sweep"] = result
        show_sweep(result)

    @line_magic
    def autotune(self, line: str) -> None:
        """%autotune FUNC NAME=v1,v2,... [NAME2=...] [-n R] [--rtol X] [--atol X]: FUNC calls its best build per shape.

        FUNC, a function of a Choreo cell, is replaced in the notebook by a dispatcher over the
        grid: the first call of each shape (each array argument's shape and element type, each
        other argument's value) compiles every point from FUNC's cell with those defines, checks
        each against the first point's result (--rtol and --atol, 1e-2 by default), times them
        (-n runs each), shows the sweep, and calls the fastest; the choice is kept on disk
        beside the binaries, so later calls of that shape, in this kernel or after a restart,
        go straight to it. On the sim backend nothing ranks the points: the first that agrees
        is called. `%autotune FUNC` alone lists the choices so far; running the cell again puts
        the plain function back. The dispatcher is also left in `_autotune`.
        """
        from choreo_kernel.kernel.autotune import AutotunedFunction
        from choreo_kernel.tuning.autotune import Autotuned

        head, options = self._split(line, {"-n", "--rtol", "--atol"})
        name, _, grid_text = head.partition(" ")
        if not name:
            raise UsageError(AUTOTUNE_USAGE)
        current = self._namespace.get(name)
        if not grid_text.strip():
            if not isinstance(current, AutotunedFunction):
                raise UsageError(f"'{name}' is not autotuned: {AUTOTUNE_USAGE}")
            display(current.choices_bundle(), raw=True)
            return
        if name not in self.session.function_sources:
            raise UsageError(f"'{name}' is not a function of a Choreo cell run so far")
        cell = self.session.function_sources[name]
        grid = parse_grid(grid_text)
        try:
            tuned = Autotuned(
                cell,
                name,
                grid,
                repeats=self._repeats(options),
                rtol=float(self._value(options.get("--rtol", str(DEFAULT_RTOL)))),
                atol=float(self._value(options.get("--atol", str(DEFAULT_ATOL)))),
            )
        except ChoreoError as error:  # a define the cell does not guard with #ifndef
            raise UsageError(str(error)) from None
        function = AutotunedFunction(tuned)
        self.session.shell.push({name: function, "_autotune": function})
        print(f"{name} now calls its best build per shape, over {grid_text.strip()}")

    def _cluster_options(self, options: dict[str, str]) -> tuple[str | None, int | None] | None:
        """(--cluster ADDRESS, --gpus N), or None to sweep in this process."""
        if "--cluster" in options and "--gpus" in options:
            raise UsageError("give --cluster ADDRESS or --gpus N, not both")
        if "--cluster" in options:
            return options["--cluster"], None
        if "--gpus" in options:
            gpus = int(self._value(options["--gpus"]))
            if gpus < 1:
                raise UsageError("--gpus needs at least 1 GPU")
            return None, gpus
        return None

    def _dask_runner(self, address: str | None, gpus: int | None, expression: str) -> tuple[Runner, Bind]:
        """Dask workers, and the expression with its values as they will receive them."""
        from choreo_kernel.tuning.cluster import ClusterError, connect

        try:
            bind = shipped_bind(self.session, expression)
            return connect(address, gpus), bind
        except (ClusterError, ValueError) as error:
            raise UsageError(str(error)) from None

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

    @line_magic
    def profile(self, line: str) -> None:
        """%profile [--source] [-D NAME=VALUE]... [-o REPORT] FUNC(ARGS): why a call is slow, from Nsight Compute.

        The call runs once in a child process under ncu (the notebook's process is not profiled),
        compiled from the function's cell again, with -D values in place of the cell's where given
        (the cell must guard them with #ifndef). For each kernel: its time, SM, tensor-pipe, L2 and
        DRAM throughput as % of peak, achieved occupancy, registers, shared memory, the top warp-stall
        reasons, and a roofline plot. --source adds the Choreo lines with the most warp samples. The
        full report is saved as FUNC.ncu-rep (or REPORT) in the working directory, for Nsight Compute's
        GUI; the Profile is left in `_profile` (None when nothing was profiled).
        """
        from choreo_kernel.kernel.profile import NO_GPU, show_profile
        from choreo_kernel.profiling import profile as profiling
        from choreo_kernel.profiling.tools import ToolMissing

        options = parse_profile_line(line)
        function, args, kwargs = self._call(options.expression)
        module = self._module_with(function, options.defines)
        self._namespace["_profile"] = None
        if self.session.auto_target != "cuda":
            print(NO_GPU)
            return
        call = saved_call(module, function.__name__, args, kwargs)
        label = options.expression + "".join(f" {name}={value}" for name, value in options.defines.items())
        report = profile_report_path(options.report, function.__name__, options.defines)
        try:
            result = profiling.profile(call, module.kernels(function.__name__), report, label, options.source)
        except ToolMissing as missing:  # "%profile needs ncu, ..."
            print(missing)
            return
        except profiling.ProfileFailed as failed:
            print(f"%profile: {failed}")
            return
        self._namespace["_profile"] = result
        show_profile(result)

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

    def _compiled(self, expression: str) -> Any:
        try:
            return compile(expression, "<expression>", "eval")
        except SyntaxError as error:
            raise UsageError(f"not a Python expression: {expression} ({error.msg})") from None

    def _runner(self, expression: str) -> Callable[[], Any]:
        code, namespace = self._compiled(expression), self._namespace
        return lambda: eval(code, namespace)

    def _call_bytes(self, expression: str, result: Any) -> int:
        """For `f(a, b)`: the bytes of the arrays passed and returned, the least a call can move."""
        tree = ast.parse(expression, mode="eval").body
        if not isinstance(tree, ast.Call):
            return 0
        arguments = [
            self._evaluate(argument) for argument in tree.args if not isinstance(argument, ast.Starred)
        ]
        return array_bytes([*arguments, result])

    def _device(self) -> Device:
        return current_device(self.session.auto_target == "cuda")

    def _call(
        self, expression: str, magic: str = "%profile"
    ) -> tuple[CompiledFunction, list[Any], dict[str, Any]]:
        """The compiled function and the argument values of `FUNC(ARGS)`, evaluated in the notebook."""
        try:
            tree = ast.parse(expression, mode="eval").body
        except SyntaxError as error:
            raise UsageError(f"not a Python expression: {expression} ({error.msg})") from None
        function = self._evaluate(tree.func) if isinstance(tree, ast.Call) else None
        if not isinstance(tree, ast.Call) or not isinstance(function, CompiledFunction):
            raise UsageError(
                f"{magic} profiles one call of a compiled Choreo function: EXPR must be FUNC(ARGS)"
            )
        if any(isinstance(argument, ast.Starred) for argument in tree.args) or any(
            keyword.arg is None for keyword in tree.keywords
        ):
            raise UsageError(f"{magic} FUNC(ARGS): write the arguments out, without * or **")
        args = [self._evaluate(argument) for argument in tree.args]
        return (
            function,
            args,
            {keyword.arg: self._evaluate(keyword.value) for keyword in tree.keywords if keyword.arg},
        )

    def _evaluate(self, node: ast.expr) -> Any:
        return eval(compile(ast.Expression(node), "<argument>", "eval"), self._namespace)

    def _metric_probe(self, metric: str, expression: str) -> MetricProbe:
        """`--metric`: each point's build of the function EXPR calls, profiled on EXPR's arguments."""
        from choreo_kernel.kernel.profile import NO_GPU
        from choreo_kernel.profiling import profile as profiling
        from choreo_kernel.profiling.tools import ToolMissing

        function, _, _ = self._call(expression, "%sweep --metric")
        if function.module is not self.session.module:  # its build would be the same at every point
            raise UsageError(
                f"%sweep --metric profiles a function of the last Choreo cell, and {function.__name__} "
                "was compiled by an earlier cell"
            )
        if self.session.auto_target != "cuda":
            raise UsageError(f"%sweep --metric: {NO_GPU}")
        name = profiling.metric_name(metric)

        def measure(module: Module) -> float:
            _, args, kwargs = self._call(expression, "%sweep --metric")
            call = saved_call(module, function.__name__, args, kwargs)
            try:
                return profiling.measure_metric(call, module.kernels(function.__name__), name)
            except (ToolMissing, profiling.ProfileFailed) as problem:
                raise ChoreoError.simple(f"--metric {name}: {problem}") from None

        return MetricProbe(name, profiling.lower_is_better(name), measure)

    def _module_with(self, function: CompiledFunction, overrides: dict[str, object]) -> Module:
        """The function's module, compiled again for cuda with `overrides` in place of its cell's values."""
        module = function.module
        if not overrides:
            return module
        swept = SweptSource(module.source, module.defines, "cuda", module.filename)
        try:
            check_source_takes(swept, {name: [value] for name, value in overrides.items()})
        except ValueError as error:
            raise UsageError(str(error)) from None
        return swept.compile(overrides)

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
        if "" in values.split(","):  # `T=,` or `T=1,,2` would sweep no value or a missing one
            raise UsageError(f"'{word}' has an empty value: write NAME=v1,v2,... with a value between commas")
        grid[name] = [parse_define(f"{name}={value}")[1] for value in values.split(",")]
    return grid


@dataclass(frozen=True)
class ProfileOptions:
    expression: str
    source: bool = False
    defines: dict[str, object] = field(default_factory=dict)
    report: str | None = None


def parse_profile_line(line: str) -> ProfileOptions:
    """`--source -D BN=128 -o best gemm(a, b)`: the options come first, then the call."""
    usage = "%profile [--source] [-D NAME=VALUE]... [-o REPORT] FUNC(ARGS)"
    words = line.split()
    options = ProfileOptions("")
    index = 0
    while index < len(words) and words[index].startswith("-"):
        word = words[index]
        index += 1
        if word == "--source":
            options = replace(options, source=True)
            continue
        if word != "-o" and not word.startswith("-D"):
            raise UsageError(
                f"{word} is not an option of %profile; the options are --source, -D NAME=VALUE and -o REPORT"
            )
        value = word[2:]  # -DNAME=VALUE
        if not value:
            if index == len(words):
                raise UsageError(f"{word} needs a value: {usage}")
            value = words[index]
            index += 1
        if word == "-o":
            options = replace(options, report=value)
        else:
            try:
                name, define = parse_define(value)
            except ValueError as error:
                raise UsageError(f"-D {error}") from None
            options.defines[name] = define
    expression = " ".join(words[index:])
    if not expression:
        raise UsageError(usage)
    return replace(options, expression=expression)


def saved_call(module: Module, function: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """The call as the profile's child process makes it: the module's source and defines, host copies of the values."""
    from choreo_kernel.profiling.call import Call, host_value

    return Call(
        module.source,
        module.defines,
        module.filename,
        function,
        tuple(host_value(value) for value in args),
        {name: host_value(value) for name, value in kwargs.items()},
    )


def profile_report_path(report: str | None, function: str, defines: dict[str, object]) -> Path:
    """Where the report is saved: REPORT, or FUNC (with the -D values) in the working directory."""
    name = report or function + "".join(f"_{key}{value}" for key, value in defines.items())
    path = Path(name)
    return (path if path.suffix == ".ncu-rep" else path.with_name(path.name + ".ncu-rep")).resolve()
