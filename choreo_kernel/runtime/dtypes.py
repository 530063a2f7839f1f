"""Choreo element types as NumPy dtypes (bf16, fp8, fp6, fp4 and the 4-, 2- and 1-bit integers come
from ml_dtypes).

`u6`, `s6` and `bin1` have no dtype of their own: they are uint8, int8 and bool arrays tagged with
the Choreo type in the dtype's metadata, which NumPy keeps through views and slices, so a buffer of
them still knows how a store must wrap (arith.stored).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

METADATA_KEY = "choreo"


def _tagged(base: type, element: str) -> np.dtype:
    return np.dtype(base, metadata={METADATA_KEY: element})


_DTYPES: dict[str, np.dtype] = {
    "f64": np.dtype(np.float64),
    "f32": np.dtype(np.float32),
    "tf32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f8_e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "f6_e3m2": np.dtype(ml_dtypes.float6_e3m2fn),
    "f6_e2m3": np.dtype(ml_dtypes.float6_e2m3fn),
    "f4_e2m1": np.dtype(ml_dtypes.float4_e2m1fn),
    "s64": np.dtype(np.int64),
    "u64": np.dtype(np.uint64),
    "s32": np.dtype(np.int32),
    "u32": np.dtype(np.uint32),
    "s16": np.dtype(np.int16),
    "u16": np.dtype(np.uint16),
    "s8": np.dtype(np.int8),
    "u8": np.dtype(np.uint8),
    "bool": np.dtype(np.bool_),
    "u4": np.dtype(ml_dtypes.uint4),
    "s4": np.dtype(ml_dtypes.int4),
    "u2": np.dtype(ml_dtypes.uint2),
    "s2": np.dtype(ml_dtypes.int2),
    "u1": np.dtype(ml_dtypes.uint1),
    "u6": _tagged(np.uint8, "u6"),
    "s6": _tagged(np.int8, "s6"),
    "bin1": _tagged(np.bool_, "bin1"),
}
# dtype -> type; where two types share a dtype (f32 and tf32, u8 and u6) the first one listed is the dtype's.
_ELEMENT_TYPES = {dtype: name for name, dtype in reversed(_DTYPES.items())}
# The types stored in a wider dtype, and the values they hold.
RANGES = {"u6": (0, 63), "s6": (-32, 31), "bin1": (0, 1)}


def numpy_dtype(element_type: str) -> np.dtype:
    """The NumPy dtype that holds a Choreo element type."""
    return _DTYPES[element_type]


def tagged_type(dtype: np.dtype) -> str | None:
    """The Choreo type a dtype's metadata names (u6, s6, bin1), or None."""
    metadata: dict[str, str] = dict(dtype.metadata or {})
    return metadata.get(METADATA_KEY)


def element_type_of(dtype: object) -> str | None:
    """The Choreo element type of a NumPy/CuPy dtype, or None when Choreo has no such type."""
    dtype = np.dtype(dtype)  # type: ignore[call-overload]
    return tagged_type(dtype) or _ELEMENT_TYPES.get(dtype)


# Types that CuPy has no dtype for: a device array of them holds their bits in unsigned integers of the
# same width (a PyTorch bf16 or float8 tensor viewed as int16 or uint8, say).
DEVICE_BITS: dict[str, np.dtype] = {
    "bf16": np.dtype(np.uint16),
    "f8_e4m3": np.dtype(np.uint8),
    "f8_e5m2": np.dtype(np.uint8),
}


def accepts(element: str, dtype: object, device: bool = False) -> bool:
    """Whether an array of `dtype` can be passed for data of `element`: its own dtype, or for the types
    stored in a wider one (u6: uint8) that dtype too (its values are checked, signature.py), or, for a
    device array (`device`) of a type CuPy lacks, its bits (DEVICE_BITS)."""
    found = element_type_of(dtype)
    if found == element or (element == "tf32" and found == "f32"):
        return True
    if device and element in DEVICE_BITS and np.dtype(dtype) == DEVICE_BITS[element]:  # type: ignore[call-overload]
        return True
    return element in RANGES and np.dtype(dtype) == _DTYPES[element]  # type: ignore[call-overload]
