"""The argument generators of the corpus header (tests/conformance/README.md): CALL's `name=generator`,
and the comparison of a result with REF under TOL.

`rand(T, d0, d1, ...)` is uniform in [-1, 1) for float types, integers in [-8, 8) for
signed types and [0, 8) for unsigned ones (within the range of the narrower ones, such as u2); `zeros`, `ones`, `arange` (0 .. n-1 reshaped);
`meta24(u8, M, K / 8)` is valid 2:4 sparsity metadata (semantics/sparsity.py: two distinct increasing positions
per group of 4, a nibble each);
a plain integer or float literal is a scalar argument; `None` is the current stream, for a
`stream` parameter.  Values come from the generator
passed in, so a test seeds them.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from choreo_kernel.compiler.analysis.values import INT_TYPES, SUB_BYTE_BITS
from choreo_kernel.runtime.dtypes import numpy_dtype

_GENERATOR = re.compile(
    r"(?P<kind>rand|zeros|ones|arange|meta24)\s*\(\s*(?P<type>\w+)\s*(?P<dims>(,\s*\d+\s*)*)\)"
)


def make_argument(text: str, rng: np.random.Generator) -> Any:
    """The value that one generator text stands for."""
    text = text.strip()
    if text == "None":  # for a `stream` parameter: the current stream
        return None
    match = _GENERATOR.fullmatch(text)
    if match is None:
        try:
            return int(text)
        except ValueError:
            return float(text)
    dtype = numpy_dtype(match["type"])
    dims = tuple(int(d) for d in match["dims"].replace(",", " ").split())
    kind = match["kind"]
    if kind == "zeros":
        return np.zeros(dims, dtype=dtype)
    if kind == "ones":
        return np.ones(dims, dtype=dtype)
    if kind == "arange":
        return np.arange(int(np.prod(dims))).reshape(dims).astype(dtype)
    if kind == "meta24":
        pairs = np.array([(i, j) for i in range(4) for j in range(i + 1, 4)])
        chosen = pairs[rng.integers(0, len(pairs), size=(*dims, 2))]
        nibbles = chosen[..., 0] | (chosen[..., 1] << 2)
        return (nibbles[..., 0] | (nibbles[..., 1] << 4)).astype(dtype)
    element = match["type"]
    if element in INT_TYPES:  # ml_dtypes' int4 is no np.integer: ask the Choreo type
        low, high = (-8, 8) if element.startswith("s") else (0, 8)
        if element in SUB_BYTE_BITS:  # the values the type holds, at most [-8, 8)
            bits = SUB_BYTE_BITS[element] - element.startswith("s")
            low, high = max(low, -(1 << bits) if element.startswith("s") else 0), min(high, 1 << bits)
        return rng.integers(low, high, size=dims).astype(dtype)
    return rng.uniform(-1, 1, size=dims).astype(dtype)


def make_arguments(arguments: tuple[tuple[str, str], ...], seed: int = 0) -> dict[str, Any]:
    """name -> value for CALL's (name, generator) pairs, in order."""
    rng = np.random.default_rng(seed)
    return {name: make_argument(text, rng) for name, text in arguments}


def relative_error(got: Any, ref: Any) -> float:
    """max|got - ref| / max(max|ref|, 1), in f64 (NaN when got holds NaN)."""
    got64, ref64 = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if not ref64.size:
        return 0.0
    return float(np.max(np.abs(got64 - ref64)) / max(float(np.max(np.abs(ref64))), 1.0))


def assert_close(got: Any, expected: Any, tol: float | None, what: str) -> None:
    """`got` equals `expected` (TOL absent: exactly, NaN never equal) or within relative error `tol`."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    if tol is None:
        assert np.array_equal(got, expected), f"{what} differs from the reference:\n{got}\n{expected}"
    else:
        error = relative_error(got, expected)
        assert error <= tol, f"{what}: relative error {error:.3g} over {tol}"
