"""Tensor maps for TMA: the 128-byte descriptors `cp.async.bulk.tensor` reads, encoded on the host.

A map describes one global array (shape, strides, element type) and the box one copy moves,
with the shared-memory swizzle the consumer (WGMMA) expects. Kernels take maps as
`const __grid_constant__` parameters; CuPy passes a size-one NumPy array by value, so a map
travels as one 128-byte `void` element.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

from choreo_kernel.compiler.analysis.values import SUB_BYTE_BITS
from choreo_kernel.compiler.diagnostics import ChoreoError

TENSOR_MAP_BYTES = 128
_SWIZZLES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
_DATA_TYPES = {
    "f16": "FLOAT16",
    "bf16": "BFLOAT16",
    "f32": "FLOAT32",
    "tf32": "TFLOAT32",
    "f64": "FLOAT64",
    "s32": "INT32",
    "u32": "UINT32",
    "s64": "INT64",
    "u64": "UINT64",
    "u16": "UINT16",
    "u8": "UINT8",
    "s8": "UINT8",
    "f8_e4m3": "UINT8",
    "f8_e5m2": "UINT8",
    **dict.fromkeys(SUB_BYTE_BITS, "UINT8"),  # one per byte
}


def encode_tiled(array: Any, element_type: str, box: Sequence[int], swizzle: int = 0) -> np.ndarray:
    """The tensor map for copying `box`-shaped tiles (outermost dimension first) of `array`.

    `array` is a row-major CuPy array; TMA wants dimensions innermost first, strides in
    bytes for all but the innermost dimension, and a box no wider than the swizzle span.
    """
    from cuda.bindings import driver  # type: ignore[import-not-found]

    shape = tuple(int(n) for n in array.shape)
    itemsize = int(array.dtype.itemsize)
    if len(box) != len(shape) or not 1 <= len(shape) <= 5:
        raise ChoreoError.simple(f"a TMA copy needs a box of rank {len(shape)} (1 to 5), got {tuple(box)}")
    strides = [int(s) for s in array.strides]
    if strides[-1] != itemsize:
        raise ChoreoError.simple("a TMA copy needs a contiguous innermost dimension")
    inner_first = list(reversed(range(len(shape))))
    err, tensor_map = driver.cuTensorMapEncodeTiled(
        getattr(driver.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{_DATA_TYPES[element_type]}"),
        driver.cuuint32_t(len(shape)),
        int(array.data.ptr),
        [driver.cuuint64_t(shape[d]) for d in inner_first],
        [driver.cuuint64_t(strides[d]) for d in inner_first[1:]],
        [driver.cuuint32_t(int(box[d])) for d in inner_first],
        [driver.cuuint32_t(1)] * len(shape),
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(driver.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{_SWIZZLES[swizzle]}"),
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    if err != driver.CUresult.CUDA_SUCCESS:
        raise ChoreoError.simple(
            f"cannot encode a TMA tensor map for a {element_type} array of shape {shape} "
            f"with box {tuple(box)} and swizzle {swizzle}: {err.name}"
        )
    blob = ctypes.string_at(tensor_map.getPtr(), TENSOR_MAP_BYTES)
    return np.frombuffer(blob, dtype=np.dtype((np.void, TENSOR_MAP_BYTES))).copy()
