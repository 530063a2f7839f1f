"""What the Choreo cells of one IPython session share, and how one cell is compiled and shown.

Both the `choreo` kernel and `%load_ext choreo_kernel` drive this class, so a Choreo cell
behaves the same in either. State changes only after a cell compiles: a failing cell leaves
every function and macro of the earlier cells as it was.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any

from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics
from IPython.display import display

from choreo_kernel import module as choreo_module
from choreo_kernel.compiler.devicecode import DevicePart, cell_parts, merged
from choreo_kernel.compiler.diagnostics import ERROR, ChoreoError, Diagnostic, DiagnosticSink
from choreo_kernel.compiler.driver import resolve_target
from choreo_kernel.compiler.preprocess import Macro, preprocess
from choreo_kernel.kernel.cells import split_cell
from choreo_kernel.kernel.display import (
    assembly_bundle,
    cuda_bundle,
    error_traceback,
    graph_bundle,
    summary_bundle,
)
from choreo_kernel.kernel.options import parse_options
from choreo_kernel.kernel.summary import describe
from choreo_kernel.module import Module
from choreo_kernel.tuning.point import SweptSource

SIM_NOTICE = "No CUDA GPU with CuPy here: Choreo functions run on the sim backend (NumPy)."
# Names of IPython's output history (`_`, `__`, `_i3`, `_7`) and Python's own (`__name__`), besides
# `shell.user_ns_hidden` (get_ipython, In, Out, exit...) and `choreo`, which this session pushes.
_HISTORY_NAME = re.compile(r"_+|_i{1,3}|_i?\d+|__\w*__")
# What `--target auto` means in this kernel, when set: runs notebooks on sim on a GPU machine too.
TARGET_VARIABLE = "CHOREO_TARGET"


class CompiledFunction:
    """A `__co__` function as a Python callable; its backend loads on the first call, not at compile."""

    def __init__(self, module: Module, name: str) -> None:
        self.module = module
        self.__name__ = name
        self.__doc__ = describe(module.analysis.functions[name], module.source, module.cuda_plan(name))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.module.function(self.__name__)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<choreo function {self.__doc__}>"


class ChoreoSession:
    """Functions, object-like macros and the last module of the Choreo cells run so far."""

    def __init__(self, shell: InteractiveShell) -> None:
        self.shell = shell
        self.functions: dict[str, CompiledFunction] = {}
        self.macros: dict[str, object] = {}
        self.module: Module | None = None
        self.last_cell: SweptSource | None = None  # what `%sweep` compiles again, with other defines
        self.function_sources: dict[str, SweptSource] = {}  # what each function was compiled from
        self.device_code: tuple[DevicePart, ...] = ()  # the device functions of the cells so far
        self._auto_target: str | None = None
        self._sim_notice_shown = False
        shell.set_custom_exc((ChoreoError,), show_choreo_error)

    def run_cell(self, text: str) -> None:
        """Compile a Choreo cell (its `%%choreo` header included, if any), remember it, show it.

        Everything that can fail (the compile, the summaries, graphs, CUDA and assembly the options
        ask for) is done before the session changes: a cell that fails anywhere leaves it as it was.
        """
        cell = split_cell(text)
        filename = f"cell[{running_cell_number(self.shell)}]"
        options = parse_options(cell, filename)
        target = self._target(options.target)
        defines = {**self.macros, **options.defines}
        module = choreo_module.compile(
            cell.masked, defines, target, filename, host_code=False, device_code=self.device_code
        )
        self._check_names(module, filename)
        functions = {name: CompiledFunction(module, name) for name in module.functions}
        bundles = [summary_bundle(function.__doc__ for function in functions.values())] if functions else []
        if options.graph:
            bundles.extend(graph_bundle(module, name) for name in module.functions)
        if options.cuda:
            bundles.append(cuda_bundle(module))
        bundles.extend(
            assembly_bundle(module, kind)
            for kind, wanted in (("ptx", options.ptx), ("sass", options.sass))
            if wanted
        )
        macros = preprocess(module.source, DiagnosticSink(), self.macros).macros
        # The cell has succeeded: from here on only assignments, which cannot fail half-way.
        self._remember(module, functions, macros)
        self.device_code = module.analysis.device_code
        self.last_cell = SweptSource(
            cell.masked, defines, target, filename, self.device_code, host_code=False
        )
        self.function_sources.update(dict.fromkeys(functions, self.last_cell))
        for warning in module.diagnostics:
            print(warning.render(module.source, filename), file=sys.stderr)
        chosen_by_probe = options.target == "auto" and not os.environ.get(TARGET_VARIABLE)
        if chosen_by_probe and target == "sim" and not self._sim_notice_shown:
            self._sim_notice_shown = True
            print(SIM_NOTICE)
        for bundle in bundles:
            display(bundle, raw=True)

    def run_cuda_cell(self, text: str) -> None:
        """Check a `%%cuda` cell's device functions (with those of earlier cells) on this session's
        target, and keep them for the Choreo cells after it; a later definition of a name replaces
        the earlier one, so running the cell again redefines nothing twice."""
        cell = split_cell(text)
        filename = f"cell[{running_cell_number(self.shell)}]"
        parts = cell_parts(cell.masked, filename)
        code = merged(self.device_code, parts)
        choreo_module.check_device_code(code, self._target("auto"), cell.masked, filename)
        self.device_code = code
        names = ", ".join(dict.fromkeys(part.name for part in parts if part.name is not None))
        print(f"device code for later cells: {names}" if names else "no device functions in this cell")

    @property
    def auto_target(self) -> str:
        """What `--target auto` means here: $CHOREO_TARGET when set, else cuda with a GPU, else sim."""
        return self._target("auto")

    def _target(self, target: str) -> str:
        """`auto` is looked up once per session: probing for a GPU imports CuPy, which is slow."""
        if target != "auto":
            return target
        if self._auto_target is None:
            self._auto_target = resolve_target(os.environ.get(TARGET_VARIABLE) or "auto")
        return self._auto_target

    def _check_names(self, module: Module, filename: str) -> None:
        """A function is published under its name in the notebook's namespace: one named after what the
        kernel itself keeps there (get_ipython, which runs every Choreo cell; In, Out, choreo...) would
        break the cells after it, so it is an error at its name."""
        kernel_names = {*self.shell.user_ns_hidden, "choreo"}
        clashes = [
            Diagnostic(
                ERROR,
                f"a function named '{function.name}' would replace the notebook's own '{function.name}', "
                "which the kernel needs: rename the function",
                function.name_span,
            )
            for function in module.analysis.program.functions
            if function.name in kernel_names or _HISTORY_NAME.fullmatch(function.name)
        ]
        if clashes:
            raise ChoreoError(clashes, module.source, filename)

    def _remember(
        self, module: Module, functions: dict[str, CompiledFunction], macros: dict[str, Macro]
    ) -> None:
        """Publish the module's functions to Python and keep its macros for later cells."""
        self.macros = {name: macro.body if macro.params is None else macro for name, macro in macros.items()}
        self.functions.update(functions)
        self.module = module
        self.shell.push({**functions, "choreo": module})


class SessionMagics(Magics):
    """Magics that work on a shell's `ChoreoSession`: `%%choreo` and the tuning magics share one."""

    def __init__(self, shell: InteractiveShell, session: ChoreoSession) -> None:
        super().__init__(shell)
        self.session = session


def running_cell_number(shell: InteractiveShell) -> int:
    """The In[N] number of the running cell, as the user sees it.

    IPython stores a cell's input in history before running it, but moves `execution_count`
    on before running from 9.x and after running before that; the history length is right in both.
    """
    history = shell.history_manager
    return len(history.input_hist_raw) - 1 if history is not None else shell.execution_count


def show_choreo_error(
    shell: InteractiveShell, etype: type, value: ChoreoError, tb: Any, tb_offset: int | None = None
) -> list[str]:
    """A `ChoreoError` as the user's problem, never a Python traceback through this package.

    A compile error shows its diagnostics against the cell's lines; an error found when
    running (bad arguments, a deadlock) shows its message and the user's line that called.
    """
    structured = error_traceback(value) if value.diagnostics else runtime_error_lines(shell, value, tb)
    shell._showtraceback(etype, value, structured)
    return structured


PACKAGE_DIRECTORY = Path(choreo_module.__file__).resolve().parent


def runtime_error_lines(shell: InteractiveShell, error: ChoreoError, tb: Any) -> list[str]:
    """`ChoreoError: message`, then a note naming the innermost line of the user's own code."""
    lines = [f"{type(error).__name__}: {error}"]
    caller = None
    for frame, line in traceback.walk_tb(tb):
        if not Path(frame.f_code.co_filename).resolve().is_relative_to(PACKAGE_DIRECTORY):
            caller = frame.f_code.co_filename, line
    if caller is not None:
        filename, line = caller
        label = shell.compile.format_code_name(filename)
        where = " ".join(label) if label else filename
        text = linecache.getline(filename, line).strip()
        lines.append(f"   = note: called from {where}, line {line}{f': {text}' if text else ''}")
    return lines
