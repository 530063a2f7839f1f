"""A program's device code built for the CPU, so that the sim runs its `call`s with their meaning.

The system's C++ compiler (`$CXX`, else `c++`, `g++` or `clang++`) builds the device code, after a
prelude that defines CUDA's qualifiers away and gives what device functions commonly use
(device_prelude.h), into a shared library with one entry point per call site. An entry point runs
its call for all the threads of a frame in one go: it sets `threadIdx` and `blockIdx` for each
thread in turn, reads the thread's arguments from columns (one value or data address per thread)
and writes its result into another, so Python crosses into C once per statement, not per thread.

Libraries are cached on disk by a hash of what was compiled and with which compiler. A compiler
message is mapped back to where the user wrote the code it is about: a line of the source's own
device code, or the call whose entry point it is in.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.device_checks import own_expressions
from choreo_kernel.compiler.analysis.values import (
    CUDA_HALF_TYPES,
    NARROW_FLOAT_TYPES,
    DeviceArgument,
    DeviceCallInfo,
)
from choreo_kernel.compiler.cuda.elements import C_TYPES
from choreo_kernel.compiler.devicecode import DevicePart, LineMap, render
from choreo_kernel.compiler.diagnostics import ERROR, ChoreoError, Diagnostic, Span
from choreo_kernel.compiler.program import Analysis
from choreo_kernel.compiler.version import __version__
from choreo_kernel.runtime.cache import cache_directory, cached_file
from choreo_kernel.runtime.dtypes import numpy_dtype

COMPILERS = ("c++", "g++", "clang++")
COMPILE_TIMEOUT_S = 120
# The host C type of each element type: the CUDA lowering's where it is plain C (narrow floats travel
# as float: the analysis widens them).
HOST_TYPES = {name: c_type for name, c_type in C_TYPES.items() if not c_type.startswith("choreo::")}
_ASM = re.compile(r"(?<![\w\"])(?:asm|__asm__|__asm)\s*(?:volatile|__volatile__|inline|goto)?\s*\(")
_MESSAGE = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<column>\d+):)? (?:fatal )?error: (?P<text>.*)$"
)
# CUDA headers that device code includes for what the prelude already gives; empty for the host.
_EMPTY_HEADERS = (
    "cuda_runtime.h",
    "cuda.h",
    "device_launch_parameters.h",
    "device_functions.h",
    *(header for _, header in CUDA_HALF_TYPES.values()),
)


@dataclass(frozen=True)
class Site:
    """One `call` of the program: its entry point in the library and what the analysis decided."""

    index: int
    call: ast.DeviceCall
    info: DeviceCallInfo

    @property
    def symbol(self) -> str:
        return f"choreo_site_{self.index}"


def host_result(element: str) -> str:
    """The type a call's result comes back in: its own, or f32 for a narrow float (rounded after)."""
    return "f32" if element in NARROW_FLOAT_TYPES else element


def host_compiler() -> str | None:
    """The C++ compiler the sim builds device code with: `$CXX`, else the first one on PATH."""
    configured = os.environ.get("CXX")
    if configured:
        return shutil.which(configured)
    return next((path for path in map(shutil.which, COMPILERS) if path), None)


def device_calls(analysis: Analysis) -> Iterator[ast.DeviceCall]:
    """Every `call` of the program's functions, in source order."""
    for info in analysis.functions.values():
        for stmt in ast.walk_statements(info.function.body):
            for expr in own_expressions(stmt):
                yield from (node for node in ast.walk_expr(expr) if isinstance(node, ast.DeviceCall))


def program_library(analysis: Analysis, source: str, filename: str) -> DeviceLibrary:
    """The library of an analyzed program: its device code and an entry point per call."""
    infos = {key: value for info in analysis.functions.values() for key, value in info.device_calls.items()}
    calls = [(call, infos[id(call)]) for call in device_calls(analysis) if id(call) in infos]
    return DeviceLibrary(analysis.device_code, calls, source, filename)


class DeviceLibrary:
    """Device code and the calls into it, built and loaded. `source` and `filename` are where the
    parts whose origin is `filename` (and the calls) were written, for the compiler's messages."""

    def __init__(
        self,
        parts: Sequence[DevicePart],
        calls: Sequence[tuple[ast.DeviceCall, DeviceCallInfo]],
        source: str,
        filename: str,
    ) -> None:
        self.source = source
        self.filename = filename
        self.sites = {id(call): Site(index, call, info) for index, (call, info) in enumerate(calls)}
        text, self._device_lines, self._site_lines = self._unit(parts)
        self._library = ctypes.CDLL(str(self._built(text)))
        self._failure = self._library.choreo_sim_failure
        self._failure.restype = ctypes.c_char_p
        self._entries = {}
        for site in self.sites.values():
            entry = getattr(self._library, site.symbol)
            entry.restype = ctypes.c_longlong
            entry.argtypes = [ctypes.c_longlong, *(ctypes.c_void_p,) * 5, ctypes.c_int]
            self._entries[site.index] = entry

    # ------------------------------------------------------------------ running

    def run(
        self,
        site: Site,
        columns: list[np.ndarray],
        threads: np.ndarray,
        block: tuple[int, int, int],
        grid: tuple[int, int, int],
        block_threads: int,
    ) -> np.ndarray | None:
        """Run the call for each of `threads` (thread indices in the block); its results (a narrow float's
        as f32), or None where it is a statement. A device function that used what the sim cannot run
        stops with a message."""
        count = len(threads)
        result = (
            None if site.info.result is None else np.empty(count, numpy_dtype(host_result(site.info.result)))
        )
        lanes = np.ascontiguousarray(threads, dtype=np.int64)
        pointers = np.array([column.ctypes.data for column in columns] or [0], dtype=np.uint64)
        place = np.array([*block, *grid], dtype=np.int32)
        stopped = self._entries[site.index](
            count,
            pointers.ctypes.data,
            result.ctypes.data if result is not None else None,
            lanes.ctypes.data,
            place.ctypes.data,
            place[3:].ctypes.data,
            block_threads,
        )
        if stopped:
            what = (self._failure() or b"something").decode()
            raise DeviceStop(site.call.callee, what, int(lanes[stopped - 1]))
        return result

    # ------------------------------------------------------------------ building

    def _unit(self, parts: Sequence[DevicePart]) -> tuple[str, LineMap, dict[int, Site]]:
        """The translation unit: prelude, device code (inline assembly stubbed out), entry points."""
        prelude = resources.files("choreo_kernel.runtime.sim").joinpath("device_prelude.h").read_text()
        lines = prelude.rstrip("\n").split("\n")
        host_parts = [
            DevicePart(_ASM.sub("CHOREO_SIM_ASM(", part.text), part.origin, part.line, part.name)
            for part in parts
        ]
        device_lines, line_map = render(host_parts, len(lines) + 1)
        lines.extend(device_lines)
        site_lines: dict[int, Site] = {}
        lines.append("// the program's calls, each run for the threads of a frame")
        for site in self.sites.values():
            entry = _entry_point(site)
            for offset in range(len(entry)):
                site_lines[len(lines) + 1 + offset] = site
            lines.extend(entry)
        return "\n".join(lines) + "\n", line_map, site_lines

    def _built(self, text: str) -> Path:
        compiler = host_compiler()
        if compiler is None:
            configured = os.environ.get("CXX")
            where = (
                f"$CXX is '{configured}', which is not a program here" if configured else "none is on PATH"
            )
            raise self._error(
                f"the sim runs device functions compiled for the CPU, and no C++ compiler was found ({where}): "
                "install one (apt-get install g++) or name it in $CXX",
                None,
            )
        key = hashlib.sha256("\0".join([text, compiler, _version(compiler), __version__]).encode())
        return cached_file(
            cache_directory() / "sim" / f"{key.hexdigest()[:40]}.so", lambda: self._compile(compiler, text)
        )

    def _compile(self, compiler: str, text: str) -> bytes:
        with tempfile.TemporaryDirectory(prefix="choreo-sim-") as directory:
            folder = Path(directory)
            for header in _EMPTY_HEADERS:
                (folder / header).write_text("// the sim's prelude defines what this header would\n")
            unit, library = folder / "device.cpp", folder / "device.so"
            unit.write_text(text)
            command = [
                compiler,
                "-std=c++17",
                "-O1",
                "-shared",
                "-fPIC",
                "-fno-diagnostics-color",
                f"-I{folder}",
                "-o",
                str(library),
                str(unit),
            ]
            try:
                done = subprocess.run(
                    command,
                    capture_output=True,
                    text=True,
                    timeout=COMPILE_TIMEOUT_S,
                    env={**os.environ, "LC_ALL": "C"},  # plain quotes in the messages
                )
            except subprocess.TimeoutExpired:
                raise self._error(
                    f"the C++ compiler took over {COMPILE_TIMEOUT_S} s on the device code", None
                ) from None
            if done.returncode != 0:
                raise self._compile_errors(done.stderr or done.stdout, unit.name)
            return library.read_bytes()

    # ------------------------------------------------------------------ messages

    def _compile_errors(self, log: str, unit: str) -> ChoreoError:
        diagnostics: list[Diagnostic] = []
        for line in log.splitlines():
            match = _MESSAGE.match(line)
            if match is None or not match.group("file").endswith(unit):
                continue
            diagnostics.append(
                self._located(int(match.group("line")), int(match.group("column") or 1), match.group("text"))
            )
            if len(diagnostics) == 3:
                break
        if not diagnostics:
            first = next((line for line in log.splitlines() if line.strip()), "no message")
            diagnostics.append(self._diagnostic(f"the sim could not build the device code: {first}", None))
        return ChoreoError(diagnostics, self.source, self.filename)

    def _located(self, line: int, column: int, text: str) -> Diagnostic:
        """A compiler message at the user's line it is about."""
        site = self._site_lines.get(line)
        if site is not None:
            return Diagnostic(
                ERROR,
                f"the sim cannot build this call of '{site.call.callee}': {text}",
                site.call.callee_span,
            )
        found = self._device_lines.locate(line)
        if found is not None:
            part, origin_line = found
            if part.origin == self.filename:
                span = Span(origin_line, column, origin_line, column + 1)
                return Diagnostic(ERROR, f"the sim's C++ compiler rejects this device code: {text}", span)
            return self._diagnostic(
                f"the device code of {part.origin} does not build for the sim: {part.origin}:{origin_line}:"
                f"{column}: {text}",
                None,
            )
        return self._diagnostic(f"the sim could not build the device code: {text}", None)

    def _diagnostic(self, message: str, span: Span | None) -> Diagnostic:
        """At `span`, or at the first call when the message is about no line of this source."""
        if span is None:
            first = next(iter(self.sites.values()), None)
            span = first.call.span if first is not None else Span(1, 1, 1, 2)
        return Diagnostic(ERROR, message, span)

    def _error(self, message: str, span: Span | None) -> ChoreoError:
        return ChoreoError([self._diagnostic(message, span)], self.source, self.filename)


class DeviceStop(Exception):
    """A device function did what the sim cannot run (a barrier, a shuffle, inline assembly)."""

    def __init__(self, callee: str, what: str, thread: int) -> None:
        why = (
            "inline assembly has no meaning on the CPU (give the sim an equivalent in C++ under "
            "'#ifdef __CHOREO_SIM__')"
            if "asm" in what
            else "it calls device functions one thread after the other, so threads cannot meet or trade "
            "values inside one"
        )
        super().__init__(
            f"device function '{callee}' (thread {thread}) used {what}, which the sim cannot run: {why}"
        )


def _entry_point(site: Site) -> list[str]:
    info = site.info
    template = ""
    if info.template_args is not None:
        texts = [
            HOST_TYPES.get(str(v.value), str(v.value)) if v.kind == "type" else str(v.value)
            for v in info.template_args
        ]
        template = f"<{', '.join(texts)}>"
    args = [_argument(argument, position) for position, argument in enumerate(info.arguments)]
    call = f"{site.call.callee}{template}({', '.join(args)})"
    if info.result is not None:
        host = HOST_TYPES[host_result(info.result)]
        call = f"static_cast<{host}*>(result)[i] = static_cast<{host}>({call})"
    return [
        f"// line {site.call.span.line}: call {site.call.callee}",
        f'extern "C" long long {site.symbol}(long long count, void** columns, void* result, '
        "const long long* threads, const int* block, const int* grid, int block_threads) {",
        "  choreo_sim::failure = nullptr;  // what stopped an earlier call was reported then",
        "  for (long long i = 0; i < count; ++i) {",
        "    choreo_sim::enter(threads[i], block, grid, block_threads);",
        f"    {call};",
        "    if (choreo_sim::failure != nullptr) return i + 1;",
        "  }",
        "  return 0;",
        "}",
    ]


def _argument(argument: DeviceArgument, position: int) -> str:
    """What the entry point passes for one argument, from its column; `(T)(...)` for a foreign cast."""
    if argument.kind == "null":
        text = "nullptr"
    elif argument.kind in ("data", "registers"):
        pointee = (
            CUDA_HALF_TYPES[argument.type][0]
            if argument.type in CUDA_HALF_TYPES
            else HOST_TYPES[argument.type]
        )
        text = f"static_cast<{pointee}**>(columns[{position}])[i]"
    else:
        text = f"static_cast<const {HOST_TYPES[argument.type]}*>(columns[{position}])[i]"
    return f"(({argument.cast})({text}))" if argument.cast is not None else text


@functools.cache
def _version(compiler: str) -> str:
    try:
        return subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
