"""What the front end makes of a source: the program, each function's analysis and graph, the
CUDA lowering where the target is cuda, and every diagnostic."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.devicecode import DevicePart
from choreo_kernel.compiler.diagnostics import ERROR, Diagnostic

if TYPE_CHECKING:
    from choreo_kernel.compiler.cuda.plan import LoweredProgram
    from choreo_kernel.compiler.graph.graph import Graph


@dataclass
class Analysis:
    """The front end's result: the program, what analysis learned per function, the dependency
    graph its checks read, the device code its calls reach, the CUDA lowering (target cuda, when
    analysis found no error), and all diagnostics."""

    program: ast.Program
    functions: dict[str, FunctionInfo]
    graphs: dict[str, Graph]
    diagnostics: list[Diagnostic]
    target: str = "cuda"
    filename: str = "<source>"  # what messages and the emitted CUDA call the source
    device_code: tuple[DevicePart, ...] = ()  # the C++ its `call`s reach, emitted before the kernels
    lowered: LoweredProgram | None = None

    @property
    def printed(self) -> str:
        """What the source's `print!` / `println!` statements show at compile time, in source order."""
        shown = {span: text for info in self.functions.values() for span, text in info.printed}
        return "".join(shown[span] for span in sorted(shown, key=lambda span: (span.line, span.column)))

    @property
    def has_errors(self) -> bool:
        return any(d.severity == ERROR for d in self.diagnostics)
