"""The programs the CUDA backend is tested on: the valid corpus programs that target CUDA and
this backend's own (tests/cuda/*.co, same header format)."""

from __future__ import annotations

from pathlib import Path

from corpus import load, parse_program

CUDA_PROGRAMS = Path(__file__).parent / "cuda"

PROGRAMS = [p for p in load("valid") if "cuda" in p.targets] + [
    parse_program(path) for path in sorted(CUDA_PROGRAMS.glob("*.co"))
]
