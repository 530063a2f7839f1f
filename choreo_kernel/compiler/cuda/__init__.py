"""Lowering to CUDA C++ for Hopper (sm_90a): kernels, their host plans, and a header of PTX wrappers.

No CuPy here: the runtime (choreo_kernel/runtime/cuda.py) compiles and launches what this emits.
"""

from choreo_kernel.compiler.cuda.emit import HEADER, emit_program, header_text, inline_header, lower_program
from choreo_kernel.compiler.cuda.plan import LoweredProgram

__all__ = [
    "HEADER",
    "LoweredProgram",
    "emit_program",
    "header_text",
    "inline_header",
    "lower_program",
]
