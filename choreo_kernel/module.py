"""`ck.compile`: a compiled source whose `__co__` functions run on the chosen backend.

This is the one place that joins the compiler core to the runtimes, so the core stays free
of CuPy and the backends are imported only when a function is first called.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from choreo_kernel.compiler.devicecode import DevicePart
from choreo_kernel.compiler.diagnostics import ChoreoError, Diagnostic
from choreo_kernel.compiler.driver import analyze, resolve_target
from choreo_kernel.compiler.program import Analysis

if TYPE_CHECKING:
    from choreo_kernel.compiler.cuda import LoweredProgram
    from choreo_kernel.compiler.cuda.plan import FunctionPlan
    from choreo_kernel.compiler.graph import Graph


class Build:
    """What compiling one source for one target produced: the analysis, and lazily its CUDA and backend.

    Builds are remembered per (source, defines, target, filename), so re-running an unchanged
    notebook cell or calling `ck.compile` again reuses the analysis, the emitted code and the
    loaded GPU module instead of redoing them.
    """

    def __init__(
        self, analysis: Analysis, source: str, defines: Mapping[str, object], target: str, filename: str
    ) -> None:
        self.analysis = analysis
        self.source = source
        self.defines = dict(defines)
        self.target = target
        self.filename = filename

    @cached_property
    def lowered(self) -> LoweredProgram:
        """One lowering for both the CUDA text and the host plans the CUDA backend runs: the one the
        analysis made for target cuda, or (for the CUDA text of a sim module) one made now."""
        from choreo_kernel.compiler.cuda import lower_program

        lowered = self.analysis.lowered or lower_program(self.analysis)
        return lowered.checked(self.filename)

    @property
    def cuda_source(self) -> str:
        return self.lowered.source

    @cached_property
    def backend(self) -> Any:
        if self.target == "cuda":
            from choreo_kernel.runtime.cuda import CudaBackend

            return CudaBackend(self.analysis, self.lowered, self.source)
        from choreo_kernel.runtime.sim import SimBackend

        return SimBackend(self.analysis, source=self.source, filename=self.filename)


class Module:
    """A compiled source: call its functions by name, look at its graph and its CUDA code."""

    def __init__(self, build: Build) -> None:
        self._build = build
        self.analysis = build.analysis
        self.source = build.source
        self.defines = build.defines  # what the source was compiled with: a profile compiles it again
        self.target = build.target
        self.filename = build.filename

    @property
    def functions(self) -> list[str]:
        """Names of the `__co__` functions, in source order."""
        return list(self.analysis.functions)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Warnings that did not stop compilation."""
        return self.analysis.diagnostics

    def graph(self, name: str | None = None) -> Graph:
        """The future/event dependency graph of function `name` (the only one when omitted)."""
        from choreo_kernel.compiler.graph import build_graph

        return build_graph(self.analysis, self._function_name(name))

    @property
    def cuda_source(self) -> str:
        """The emitted CUDA C++ of every function (available whatever the target)."""
        return self._build.cuda_source

    def cuda_plan(self, name: str) -> FunctionPlan | None:
        """The CUDA lowering's plan of function `name`; None where it cannot be lowered for CUDA (a sim
        module of a program only the sim runs)."""
        try:
            return self._build.lowered.plans.get(name)
        except ChoreoError:
            return None

    def kernels(self, name: str | None = None) -> list[str]:
        """The CUDA kernels function `name` launches, in order (whatever the target; none where the
        program cannot be lowered for CUDA)."""
        plan = self.cuda_plan(self._function_name(name))
        return [] if plan is None else [launch.kernel for launch in plan.launches]

    def function(self, name: str) -> Callable[..., Any]:
        """The callable for `__co__` function `name` on this module's target."""
        return self._build.backend.function(self._function_name(name))

    def _function_name(self, name: str | None) -> str:
        if name is None:
            if len(self.functions) != 1:
                raise ValueError(f"this module has functions {', '.join(self.functions)}: name one")
            return self.functions[0]
        if name not in self.analysis.functions:
            raise AttributeError(
                f"no __co__ function '{name}' in this module (it has: {', '.join(self.functions) or 'none'})"
            )
        return name

    def __getattr__(self, name: str) -> Callable[..., Any]:
        analysis = self.__dict__.get("analysis")  # absent while copy or pickle rebuilds the object
        if name.startswith("_") or analysis is None or name not in analysis.functions:
            raise AttributeError(name)
        return self.function(name)

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self.functions]

    def __repr__(self) -> str:
        return f"<choreo Module target={self.target} functions={self.functions}>"


def compile(
    source: str,
    defines: Mapping[str, object] | None = None,
    target: str = "auto",
    filename: str = "<source>",
    host_code: bool = True,
    device_code: Sequence[DevicePart] = (),
) -> Module:
    """Analyze `source` for `target` (auto: cuda with a GPU and CuPy, else sim); raise `ChoreoError` on any error.

    With `host_code` (a `.co` file's way) text outside the `__co__` functions is C++ host code
    and skipped; without it (a notebook cell's way) such text is an error. `device_code` is C++
    from outside the source that its `call`s may reach (`%%cuda` cells).
    """
    resolved = resolve_target(target)
    key = _build_key(source, defines, resolved, filename, host_code, tuple(device_code))
    build = _BUILDS.get(key) if key is not None else None
    if build is not None:
        _BUILDS.move_to_end(key)
    else:
        analysis = analyze(source, defines, resolved, host_code, filename=filename, device_code=device_code)
        sys.stdout.write(analysis.printed)  # print!: what the compiler knows, as it compiles
        if analysis.has_errors:
            raise ChoreoError(analysis.diagnostics, source, filename)
        build = Build(analysis, source, defines or {}, resolved, filename)
        calls = any(info.device_calls for info in analysis.functions.values())
        if calls or (resolved == "cuda" and analysis.device_code):
            build.backend  # noqa: B018  builds the device code now: its errors belong to the compile
        if key is not None:
            _remember(key, build)
    return Module(build)


def check_device_code(
    parts: Sequence[DevicePart], target: str = "auto", source: str = "", filename: str = "<source>"
) -> None:
    """Build device code on its own for `target` (a `%%cuda` cell), raising `ChoreoError` with what the
    compiler says about it at its lines; `source` is the text of the parts whose origin is `filename`."""
    if resolve_target(target) == "cuda":
        from choreo_kernel.runtime.cuda import check_device_code as check_with_nvrtc

        check_with_nvrtc(parts, source, filename)
        return
    from choreo_kernel.runtime.sim.device_library import DeviceLibrary

    DeviceLibrary(parts, (), source, filename)


_BUILDS: OrderedDict[Hashable, Build] = OrderedDict()
_BUILDS_KEPT = 64


def _build_key(
    source: str,
    defines: Mapping[str, object] | None,
    target: str,
    filename: str,
    host_code: bool,
    device_code: tuple[DevicePart, ...] = (),
) -> Hashable | None:
    """The memo key of a build; None when a define's value cannot be a key (it is then rebuilt).

    A value's type is part of the key: `1` and `1.0` are equal but define different text.
    """
    values = tuple(sorted((name, type(value), value) for name, value in (defines or {}).items()))
    key = (source, values, target, filename, host_code, device_code)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _remember(key: Hashable, build: Build) -> None:
    _BUILDS[key] = build
    if len(_BUILDS) > _BUILDS_KEPT:
        _BUILDS.popitem(last=False)
