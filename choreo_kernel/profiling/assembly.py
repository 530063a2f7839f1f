"""The PTX and SASS of emitted CUDA, each run of instructions marked with the Choreo line it came from.

PTX comes from NVRTC (through CuPy, with the cubin's options and a virtual architecture) for a
module on the cuda target, or from nvcc with the same options; SASS is nvdisasm's reading of
the cubin that the module loads (the CUDA backend's disk cache), or of one nvcc builds where
there is no GPU. Both carry line info (`-lineinfo`): PTX as `.loc` directives, SASS as nvdisasm
-gi's `//## File "F", line N [inlined at "G", line M]` comments. The outermost location of an
inlined call is the line of the emitted CUDA that made it, which `SourceMap` turns into a
Choreo line; the rest of the debug information (`.loc`, `.file`, string tables) is left out.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from choreo_kernel.compiler.cuda import HEADER, header_text
from choreo_kernel.profiling.lines import SourceMap, is_unit
from choreo_kernel.profiling.tools import ToolFailed, require
from choreo_kernel.runtime.cuda import UNIT, nvrtc_options

ARCH = "sm_90a"  # what the emitted CUDA is written for
VIRTUAL_ARCH = "compute_90a"
TOOL_TIMEOUT_S = 300
NVCC_INSTALL = "install the CUDA toolkit"
NVDISASM_INSTALL = "install the CUDA toolkit, or: pip install nvidia-cuda-nvdisasm"
_SASS_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]+)\*/")


@dataclass(frozen=True)
class Location:
    """A line of a source file named in line info (the emitted CUDA, the header)."""

    file: str
    line: int


@dataclass(frozen=True)
class AssemblyLine:
    """A line of a listing; an instruction has the outermost source location it was compiled from."""

    text: str
    location: Location | None = None
    offset: int | None = None  # SASS: the instruction's byte offset in its function

    @property
    def code(self) -> str:
        """The instruction without nvdisasm's `/*offset*/`."""
        return _SASS_INSTRUCTION.sub("", self.text).strip()


Listing = dict[str, list[AssemblyLine]]  # function name -> its lines, in order


# ---------------------------------------------------------------------------- SASS


_SASS_FUNCTION = re.compile(r"^//-+ \.text\.(\S+)")
_SASS_LOCATION = re.compile(r'File "([^"]+)", line (\d+)')
_SASS_LABEL = re.compile(r"^\.?\w+:\s*$")


def parse_sass(text: str) -> Listing:
    """nvdisasm -c -gi output: each function's instructions and labels, with their locations.

    A run of `//##` lines is one inlining chain, innermost first; its last line is the outermost
    frame. Directives (`.section`, `.align`, ...) and the chains themselves are not kept.
    """
    listing: Listing = {}
    lines: list[AssemblyLine] = []
    location: Location | None = None
    for raw in text.splitlines():
        function = _SASS_FUNCTION.match(raw)
        if function:
            lines = listing.setdefault(function.group(1), [])
            location = None
            continue
        stripped = raw.strip()
        if stripped.startswith("//##"):
            frames = _SASS_LOCATION.findall(stripped)
            location = Location(frames[-1][0], int(frames[-1][1]))  # "... inlined at" names the caller last
            continue
        instruction = _SASS_INSTRUCTION.match(raw)
        if instruction:
            lines.append(AssemblyLine(raw.rstrip(), location, int(instruction.group(1), 16)))
        elif _SASS_LABEL.match(stripped) and not stripped.startswith(".text"):
            lines.append(AssemblyLine(stripped))
    return listing


# ---------------------------------------------------------------------------- PTX


_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]+)"')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:.*inlined_at\s+(\d+)\s+(\d+)\s+(\d+))?")
_PTX_FUNCTION = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\b.*?([\w$]+)\s*\(\s*$")
_PTX_END = re.compile(r"^\s*(?:\.file\s|\.section\s+\.debug)")


def parse_ptx(text: str) -> Listing:
    """PTX with `.loc` directives: each function's lines, instructions with their outermost location.

    A `.loc` inlined at another location takes that location's own outermost frame, which the
    `.loc` before it in the same inlining chain recorded. The `.file` table comes last in the PTX.
    """
    files = {match.group(1): match.group(2) for match in map(_PTX_FILE.match, text.splitlines()) if match}
    outermost: dict[tuple[str, str, str], Location] = {}
    listing: Listing = {}
    lines: list[AssemblyLine] = []
    location: Location | None = None
    for raw in text.splitlines():
        if _PTX_END.match(raw):
            break
        function = _PTX_FUNCTION.match(raw)
        if function:
            lines = listing.setdefault(function.group(1), [])
            location = None
        loc = _PTX_LOC.match(raw)
        if loc:
            file, line, column, caller_file, caller_line, caller_column = loc.groups()
            if caller_file is None:
                location = Location(files.get(file, file), int(line))
            else:
                caller = (caller_file, caller_line, caller_column)
                location = outermost.get(caller) or Location(
                    files.get(caller_file, caller_file), int(caller_line)
                )
            outermost[(file, line, column)] = location
        elif listing:  # what comes before the first function (.version, .target) is the module's header
            lines.append(AssemblyLine(raw.rstrip(), location if _is_ptx_instruction(raw) else None))
    return listing


def _is_ptx_instruction(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and stripped.endswith(";") and not stripped.startswith((".", "//"))


# ---------------------------------------------------------------------------- marking


def annotate(lines: list[AssemblyLine], source_map: SourceMap) -> list[str]:
    """The lines of one function, with a `// line N: <Choreo source>` line wherever the Choreo line changes."""
    out: list[str] = []
    shown: str | None = None
    for line in lines:
        if line.location is not None:
            mark = _mark(line.location, source_map)
            if mark != shown:
                out.append(mark)
                shown = mark
        out.append(line.text)
    return out


def _mark(location: Location, source_map: SourceMap) -> str:
    if not is_unit(location.file):
        return f"// {PurePosixPath(location.file).name}, line {location.line}"
    line = source_map.choreo_line(location.line)
    if line is None:
        return "// (kernel set-up or end: no Choreo statement)"
    return f"// line {line}: {source_map.text(line)}"


def choreo_line_of(location: Location | None, source_map: SourceMap) -> int | None:
    """The Choreo line an instruction came from, or None."""
    if location is None or not is_unit(location.file):
        return None
    return source_map.choreo_line(location.line)


# ---------------------------------------------------------------------------- making them


def annotated_listing(kind: str, cuda_source: str, choreo_source: str, on_gpu: bool) -> str:
    """The PTX or SASS (`kind`) of every function of emitted CUDA, marked with Choreo lines.

    `on_gpu`: the module runs on the cuda target, so its own NVRTC build is what to show;
    otherwise nvcc builds the same source with the same options. Raises `ToolMissing` or
    `ToolFailed` where a tool is absent or fails.
    """
    if kind == "ptx":
        listing = parse_ptx(ptx_of(cuda_source, on_gpu))
        made = f"PTX from {'NVRTC' if on_gpu else 'nvcc'}"
    else:
        require("nvdisasm", "--sass", NVDISASM_INSTALL)  # before building a cubin it could not read
        listing = parse_sass(sass_of(cubin_of(cuda_source, on_gpu)))
        made = "SASS: nvdisasm of " + (
            "the cubin the cuda target loads" if on_gpu else f"nvcc's {ARCH} cubin"
        )
    source_map = SourceMap(cuda_source, choreo_source)
    head = f"// {made}; each run of instructions is marked with the Choreo line it came from"
    return "\n\n".join([head, *("\n".join(annotate(lines, source_map)) for lines in listing.values())]) + "\n"


def ptx_of(cuda_source: str, on_gpu: bool) -> str:
    """The PTX of emitted CUDA: NVRTC's (as the cuda target compiles it) or nvcc's with the same options."""
    if on_gpu:
        from choreo_kernel.runtime.cuda import architecture, nvrtc_ptx

        return nvrtc_ptx(cuda_source, architecture().replace("sm_", "compute_"))
    return _nvcc(cuda_source, "--ptx", "-ptx", VIRTUAL_ARCH).decode()


def cubin_of(cuda_source: str, on_gpu: bool) -> bytes:
    """The cubin of emitted CUDA: the one the cuda target loads (its disk cache), or nvcc's."""
    if on_gpu:
        from choreo_kernel.runtime.cuda import cubin_path

        return cubin_path(cuda_source).read_bytes()
    return _nvcc(cuda_source, "--sass", "-cubin", ARCH)


def sass_of(cubin: bytes) -> str:
    """nvdisasm's listing of a cubin's code, with the inlining chain of every instruction's line."""
    nvdisasm = require("nvdisasm", "--sass", NVDISASM_INSTALL)
    with tempfile.TemporaryDirectory(prefix="choreo-sass-") as folder:
        path = Path(folder) / "kernels.cubin"
        path.write_bytes(cubin)
        return _run([str(nvdisasm), "-c", "-gi", str(path)], "nvdisasm").decode()


def _nvcc(cuda_source: str, purpose: str, output: str, arch: str) -> bytes:
    """nvcc's `output` (-ptx or -cubin) of the emitted CUDA, laid out as NVRTC sees it: choreo.cu and its header."""
    nvcc = require("nvcc", purpose, NVCC_INSTALL)
    with tempfile.TemporaryDirectory(prefix="choreo-nvcc-") as folder:
        unit = Path(folder) / UNIT
        unit.write_text(cuda_source, encoding="utf-8")
        (Path(folder) / HEADER).write_text(header_text(), encoding="utf-8")
        result = unit.with_suffix(".out")
        _run([str(nvcc), *nvrtc_options(arch), output, "-o", str(result), str(unit)], "nvcc")
        return result.read_bytes()


def _run(command: list[str], tool: str) -> bytes:
    try:
        done = subprocess.run(command, capture_output=True, timeout=TOOL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ToolFailed(f"{tool} did not finish in {TOOL_TIMEOUT_S} s") from None
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines() or [
            f"exit status {done.returncode}"
        ]
        raise ToolFailed(f"{tool} failed: {reason[0]}")
    return done.stdout
