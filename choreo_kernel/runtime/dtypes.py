"""Choreo element types as NumPy dtypes (bf16 and fp8 come from ml_dtypes)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

_DTYPES: dict[str, np.dtype] = {
    "f64": np.dtype(np.float64),
    "f32": np.dtype(np.float32),
    "tf32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f8_e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "s64": np.dtype(np.int64),
    "u64": np.dtype(np.uint64),
    "s32": np.dtype(np.int32),
    "u32": np.dtype(np.uint32),
    "s16": np.dtype(np.int16),
    "u16": np.dtype(np.uint16),
    "s8": np.dtype(np.int8),
    "u8": np.dtype(np.uint8),
    "bool": np.dtype(np.bool_),
}
_ELEMENT_TYPES = {dtype: name for name, dtype in reversed(_DTYPES.items())}


def numpy_dtype(element_type: str) -> np.dtype:
    """The NumPy dtype that holds a Choreo element type."""
    return _DTYPES[element_type]


def element_type_of(dtype: object) -> str | None:
    """The Choreo element type of a NumPy/CuPy dtype, or None when Choreo has no such type."""
    return _ELEMENT_TYPES.get(np.dtype(dtype))  # type: ignore[call-overload]
