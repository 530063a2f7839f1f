"""The sim backend: run a `__co__` function on the CPU with NumPy, with the GPU's semantics.

Arguments are checked against the signature before anything runs (runtime/signature.py).
Arrays of `global` parameters and of parameters passed by reference (`&`) are used in
place, so what the program writes into them reaches the caller; other arrays are copied, as the CUDA runtime copies host arrays to
the device.  The seed picks the order in which paths run and pending operations complete;
a correct program gives the same result for every seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.diagnostics import ChoreoError
from choreo_kernel.compiler.program import Analysis
from choreo_kernel.runtime.signature import bind_arguments
from choreo_kernel.runtime.sim.arith import convert
from choreo_kernel.runtime.sim.device_library import program_library
from choreo_kernel.runtime.sim.frames import Scope
from choreo_kernel.runtime.sim.interpreter import ONE_THREAD, Interpreter
from choreo_kernel.runtime.sim.values import Buffer


class SimBackend:
    """Runs the functions of one analyzed source; `seed` is the default scheduling seed of every call."""

    def __init__(
        self, analysis: Analysis, seed: int = 0, source: str = "", filename: str = "<source>"
    ) -> None:
        self.analysis = analysis
        self.seed = seed
        self.source = source  # for source lines in run-time error messages, when the caller has it
        self.filename = filename
        self._functions: dict[str, SimFunction] = {}
        # Built now, so that a compiler's complaint about the device code comes with the compile.
        calls = any(info.device_calls for info in analysis.functions.values())
        self.device = program_library(analysis, source, filename) if calls else None

    def function(self, name: str) -> SimFunction:
        if name not in self._functions:
            self._functions[name] = SimFunction(self.analysis.functions[name], self)
        return self._functions[name]


class SimFunction:
    """A callable `__co__` function: `fn(*arrays_and_scalars, seed=None)` returns NumPy values."""

    def __init__(self, info: FunctionInfo, backend: SimBackend) -> None:
        self.info = info
        self.backend = backend
        self.interpreter = Interpreter(info, backend.source, backend.filename, backend.device)
        self.__name__ = info.function.name

    def __call__(self, *args: Any, seed: int | None = None) -> Any:
        function = self.info.function
        bound = bind_arguments(function, args)
        scope = Scope(None, ONE_THREAD)
        scope.names.update(bound.dims)
        write_back: list[tuple[ast.Param, Any, np.ndarray]] = []
        for param, value in zip(function.params, bound.values):
            if param.is_stream:
                scope.names[param.name] = value  # the sim runs launches in order: streams change nothing
                continue
            if param.type.shape is None:
                scope.names[param.name] = convert(value, param.type.name)
                continue
            array = self._device_array(param, value)
            scope.names[param.name] = Buffer(array, 0, False)
            if param.writes_back and array is not value:
                write_back.append((param, value, array))
        with np.errstate(all="ignore"):  # NaN, overflow and casts behave as on the GPU, silently
            result = self.interpreter.run_host(scope, self.backend.seed if seed is None else seed)
        for param, caller, array in write_back:
            try:
                caller[...] = array
            except (TypeError, ValueError) as error:
                raise ChoreoError.simple(
                    f"{function.name}(): parameter '{param.name}' {_sharing(param)}, but the results cannot be written "
                    f"back into the {type(caller).__name__} passed for it ({error}); pass a writable NumPy array"
                ) from None
        return result

    def _device_array(self, param: ast.Param, value: Any) -> np.ndarray:
        """The array the program works on: the caller's own for a writable global parameter, else a copy
        (views address their buffer's elements in row-major order, so a strided array is copied too, and a
        global one written back)."""
        if not isinstance(value, np.ndarray):
            return np.array(value)
        if not param.writes_back:
            return value.copy()
        if not value.flags.writeable:
            raise ChoreoError.simple(
                f"{self.info.function.name}(): parameter '{param.name}' {_sharing(param)}, so results are written "
                "into it, but the array passed for it is read-only"
            )
        return np.ascontiguousarray(value)


def _sharing(param: ast.Param) -> str:
    return "is global" if param.is_global else "is passed by reference"
