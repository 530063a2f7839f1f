"""What each of Croqtile's end-to-end programs (tests/gpu/end2end/*.co) does with its kernels, in our words.

Each program there is `__co__` functions plus a C++ `main` that builds inputs, calls them and checks the
results on the CPU. The table here says, per program, how that `main` builds each call's arguments
(shapes, element types, values: the same fill patterns, or the same distributions from a seeded NumPy
generator where it draws random numbers) and what it checks, as a NumPy reference and the tolerance the
`main` allows. tests/test_peer_end2end.py runs it on the sim backend and on the GPU; the programs are read
where they lie, never copied here.

A builder takes the generator and `full`: False on the sim, where a program whose sizes are arguments
runs at smaller ones to keep CI fast, True on the GPU, which runs the `main`'s own sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

Arguments = Callable[[np.random.Generator, bool], tuple[Any, ...]]

F16 = np.float16
F32 = np.float32
BF16 = ml_dtypes.bfloat16
E4M3 = ml_dtypes.float8_e4m3fn
E5M2 = ml_dtypes.float8_e5m2
E3M2 = ml_dtypes.float6_e3m2fn
E2M3 = ml_dtypes.float6_e2m3fn
E2M1 = ml_dtypes.float4_e2m1fn


@dataclass(frozen=True)
class Tolerance:
    """What the `main` accepts: |got - ref| <= atol + rtol * |ref|, or with `either`, an element that is
    within atol or within rtol (relative to |ref|) is fine."""

    atol: float = 0.0
    rtol: float = 0.0
    either: bool = False


@dataclass(frozen=True)
class Printed:
    """A call whose `main` checks what it prints: these lines, in any order."""

    lines: frozenset[str]


@dataclass(frozen=True)
class Call:
    """One call the `main` makes: its arguments, the reference its check compares with, and where the
    results are (the returned array, or the `written` arguments, which the function writes in place). A call
    that `differs` must fail the check (or stop with an error), so the program is an xfail; once it
    passes, the test fails. One that `faults` would touch memory past its arrays on the GPU, which can
    lose the device for every later test: there it is counted as failing without running."""

    function: str
    arguments: Arguments
    reference: Callable[..., Any]
    tolerance: Tolerance | None = None  # None: exactly equal
    written: tuple[int, ...] = ()  # the arguments it writes in place; the reference gives each, in order
    differs: str | None = None  # why the main's check fails on both targets, by design or for now
    faults: bool = False  # it reads or writes past its arrays on the GPU: the GPU test does not run it


@dataclass(frozen=True)
class Program:
    """One `.co` file of the suite and the calls its `main` makes, in order. `sim_xfail` / `gpu_xfail`: why
    it cannot run there yet (a strict xfail, so a fix shows); `pending`: it does not compile yet (a
    non-strict xfail, for a program another change is making compile), on both targets or, without
    `pending_on_sim`, only for CUDA."""

    name: str
    calls: Sequence[Call]
    sim_xfail: str | None = None
    gpu_xfail: str | None = None
    pending: str | None = None
    pending_on_sim: bool = True  # False: only the CUDA target does not take it yet; the sim runs it
    notes: str = field(default="", compare=False)


# ---------------------------------------------------------------------------- how mains fill arrays


def uniform(
    dtype: Any, shape: tuple[int, ...], low: float, high: float
) -> Callable[[np.random.Generator], Any]:
    """`fill_random(low, high)` of a float type: uniform reals, rounded (and saturated) to the type."""
    return lambda rng: rng.uniform(low, high, shape).astype(np.float32).astype(dtype)


def integers(dtype: Any, shape: tuple[int, ...], low: int, high: int) -> Callable[[np.random.Generator], Any]:
    """`fill_random(low, high)` of an integer type: integers from low to high, both included."""
    return lambda rng: rng.integers(low, high, shape, endpoint=True).astype(dtype)


def pattern(
    dtype: Any, shape: tuple[int, ...], weights: tuple[int, ...], modulo: int, offset: int, constant: int = 0
) -> np.ndarray:
    """The mains' deterministic fills: (sum of index * weight + constant) % modulo - offset."""
    index = np.indices(shape).reshape(len(shape), -1).T
    values = (index @ np.array(weights) + constant) % modulo - offset
    return values.reshape(shape).astype(dtype)


def each(*makers: Callable[[np.random.Generator], Any]) -> Arguments:
    """Arguments made one after the other from the call's generator."""
    return lambda rng, full: tuple(make(rng) for make in makers)


def fixed(*values: Any) -> Arguments:
    return lambda rng, full: values


def same(x: Any, *rest: Any) -> Any:
    """A copy returns its input."""
    return x


def float_sum(a: Any, b: Any) -> np.ndarray:
    return a.astype(np.float32) + b.astype(np.float32)


def wrapped_sum(a: Any, b: Any) -> np.ndarray:
    """C's `static_cast<T>(a + b)`: the sum of the promoted values, wrapped to T."""
    return (a.astype(np.int64) + b.astype(np.int64)).astype(a.dtype)


def copies(function: str, array: Callable[[np.random.Generator], Any]) -> Call:
    return Call(function, each(array), same)


def sums(
    function: str, make: Callable[[np.random.Generator], Any], reference: Callable[..., Any], atol: float
) -> Call:
    return Call(function, each(make, make), reference, Tolerance(atol) if atol else None)


# ---------------------------------------------------------------------------- the simple programs

# add-shared copies a [1, 3, 64] buffer into output.view(1, X, _) with X = 2 on its last step: the
# element counts differ, which both backends report as a located run-time error (a copy's shapes must
# agree; Croqtile copies the overlap).
_SHORTER_DESTINATION = (
    "a dma.copy into a view with a run-time extent smaller than the source's (line 22: [1, 3, 64] into "
    "[1, X, 64], X = 2): the shapes of a copy must agree, and both backends stop with a located error"
)

S32_6x17x64 = integers(np.int32, (6, 17, 64), -10, 10)
S32_6x17x32 = integers(np.int32, (6, 17, 32), -10, 10)

ADD = [
    Program(
        "add",
        [
            Call(
                "ele_add_span_as",
                each(integers(np.int32, (2, 3, 64), -10, 10), integers(np.int32, (2, 3, 64), -10, 10)),
                lambda a, b: (a + b).reshape(6, 64),
            ),
            sums("ele_add_local_dma", S32_6x17x64, lambda a, b: a + b, 0),
        ],
    ),
    Program(
        "add-shared",
        [
            Call(
                "ele_add",
                each(S32_6x17x64, S32_6x17x64),
                lambda a, b: a + b,
                differs=_SHORTER_DESTINATION,
            )
        ],
    ),
    Program(
        "add_fp6_fp4",
        [
            sums("ele_add_f6", uniform(E2M3, (6, 64), -2, 2), float_sum, 0.35),
            sums("ele_add_f4", uniform(E2M1, (6, 64), -2, 2), float_sum, 0.6),
        ],
    ),
    Program(
        "asm_basic",
        [
            Call("test_volatile_copy", fixed(42), lambda v: np.array([v], np.int32)),
            Call("test_basic_copy", fixed(7), lambda v: np.array([v], np.int32)),
            Call("test_readwrite", fixed(99), lambda v: np.array([v], np.int32)),
            Call("test_named_copy", fixed(42), lambda v: np.array([v], np.int32)),
            Call("test_named_readwrite", fixed(7), lambda v: np.array([v], np.int32)),
        ],
        sim_xfail="inline assembly in a __co__ function is an error on sim (README: the program gives the "
        "sim an equivalent under #ifdef __CHOREO_SIM__; this one has none)",
    ),
    Program(
        "atomic_add",
        [
            Call(
                "histogram_shared",
                fixed(np.arange(256, dtype=np.int32)),
                lambda x: np.bincount(x % 16, minlength=16).astype(np.int32),
            )
        ],
    ),
    Program("cooperative_grid_sync", [Call("coop_grid_sync", fixed(), lambda: np.array([2, 1], np.int32))]),
    Program(
        "copy",
        [
            Call("dma_copy_sync", each(S32_6x17x64), same),
            Call("dma_copy_async", each(S32_6x17x64), same),
            Call("dma_copy_group", each(S32_6x17x32), same),
            sums("dma_add", S32_6x17x32, lambda a, b: a + b, 0),
            sums("dma_add1", S32_6x17x32, lambda a, b: a + b, 0),
        ],
    ),
    Program(
        "copy_fp6_fp4",
        [
            copies("dma_copy_sync_f6_e3m2", uniform(E3M2, (6, 17, 64), -2, 2)),
            copies("dma_copy_sync_f6_e2m3", uniform(E2M3, (6, 17, 64), -2, 2)),
            copies("dma_copy_sync_f4_e2m1", uniform(E2M1, (6, 17, 64), -2, 2)),
        ],
    ),
    Program(
        "float_types",
        [
            sums("ele_add_f32", uniform(F32, (6, 64), -10, 10), float_sum, 0.1),
            sums("ele_add_f16", uniform(F16, (6, 64), -10, 10), float_sum, 0.1),
            sums("ele_add_bf16", uniform(BF16, (6, 64), -10, 10), float_sum, 0.1),
            copies("copy_f8_e4m3", uniform(E4M3, (6, 64), -10, 10)),
            copies("copy_f8_e5m2", uniform(E5M2, (6, 64), -10, 10)),
        ],
    ),
    Program(
        "float_types_fp6_fp4",
        [
            copies("copy_f6_e3m2", uniform(E3M2, (6, 64), -10, 10)),
            copies("copy_f6_e2m3", uniform(E2M3, (6, 64), -10, 10)),
            copies("copy_f4_e2m1", uniform(E2M1, (6, 64), -10, 10)),
        ],
    ),
    Program(
        "fp6_fp4_copy",
        [
            copies("dma_copy_f6", uniform(E2M3, (6, 17, 32), -2, 2)),
            sums("dma_add_f6", uniform(E2M3, (6, 17, 32), -2, 2), float_sum, 0.35),
            copies("dma_copy_f4", uniform(E2M1, (6, 17, 32), -2, 2)),
        ],
    ),
    Program(
        "fp8_ops",
        [
            sums("ele_add_fp8_e4m3", uniform(E4M3, (6, 64), -2, 2), float_sum, 0.35),
            sums("ele_add_fp8_e5m2", uniform(E5M2, (6, 64), -2, 2), float_sum, 0.5),
            copies("fp8_dma_copy_sync", uniform(E4M3, (6, 17, 64), -2, 2)),
            copies("fp8_dma_copy_async", uniform(E5M2, (6, 17, 64), -2, 2)),
            copies("fp8_dma_copy_group", uniform(E5M2, (6, 17, 32), -2, 2)),
            sums("fp8_dma_add", uniform(E5M2, (6, 17, 32), -2, 2), float_sum, 0.35),
            sums("fp8_dma_add1", uniform(E5M2, (6, 17, 32), -2, 2), float_sum, 0.35),
        ],
    ),
]

# Integers: the wide ones add values 0..10, those of 6 and 4 bits 0..1, and those of 2 and 1 bits are copied
# (the main copies arrays it never fills; here they hold every value of the type).
_WIDE = {"s32": np.int32, "u32": np.uint32, "s16": np.int16, "u16": np.uint16, "s8": np.int8, "u8": np.uint8}
_NARROW = {"s6": np.int8, "u6": np.uint8, "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4}
_COPIED = {
    "s2": (ml_dtypes.int2, -2, 1),
    "u2": (ml_dtypes.uint2, 0, 3),
    "bin1": (np.bool_, 0, 1),
    "u1": (ml_dtypes.uint1, 0, 1),
}
INTEGRAL = Program(
    "integral_types",
    [
        *(
            sums(f"ele_add_{name}", integers(dtype, (6, 64), 0, 10), wrapped_sum, 0)
            for name, dtype in _WIDE.items()
        ),
        *(
            sums(f"ele_add_{name}", integers(dtype, (6, 64), 0, 1), wrapped_sum, 0)
            for name, dtype in _NARROW.items()
        ),
        *(
            copies(f"copy_{name}", integers(dtype, (6, 64), lo, hi))
            for name, (dtype, lo, hi) in _COPIED.items()
        ),
    ],
)

MEMREUSE = [
    Program(name, [sums(function, integers(np.uint8, (8, 256), 0, 10), lambda a, b: a + b, 0)])
    for name, function in (("memreuse", "mem_reuse_dynamic"), ("memreuse-static", "mem_reuse_static"))
]


def _core6(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return np.sqrt(x + 2) + 1 / np.sqrt(x + 2) + np.sin(x) + np.sinh(x * 0.25) + np.cos(x) + np.cosh(x * 0.25)


def _unary_mix(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return (
        np.arccos(x * 0.5) + np.arcsin(x * 0.5) + np.arctan(x) + np.sin(x) + np.cos(x) + np.cosh(x * 0.25)
        + np.sinh(x * 0.25) + np.exp(x * 0.25) + np.log(x + 2.5) + np.log1p(x * 0.25 + 0.5)
        + np.expm1(x * 0.25) + np.sqrt(x + 2.5) + 1 / np.sqrt(x + 2.5) + np.tan(x * 0.25) + np.tanh(x)
    )  # fmt: skip


def _binary_mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = x.astype(np.float64), y.astype(np.float64)
    return np.power(x + 1.5, y + 1.5) + np.arctan2(x, y)


_NUMERIC = Tolerance(atol=2e-4, rtol=2e-4)
_INPUT = uniform(F32, (512,), -0.5, 1.0)
NUMERICS = Program(
    "numerics",
    [
        Call("numerics_core6", each(_INPUT), _core6, _NUMERIC),
        Call("unary_mix", each(_INPUT), _unary_mix, _NUMERIC),
        Call("binary_mix", each(_INPUT, _INPUT), _binary_mix, _NUMERIC),
    ],
)

STREAM = Program(
    "stream",
    [
        Call(
            "foo",
            lambda rng, full: (100, _stream(full)),
            lambda a, s: Printed(frozenset(str(a + p) for p in range(6))),
        )
    ],
)


def _stream(gpu: bool) -> Any:
    """The stream the main creates; on the sim (which runs in order) the current one."""
    if not gpu:
        return None
    import cupy  # type: ignore[import-not-found]

    return cupy.cuda.Stream(non_blocking=True)


# ---------------------------------------------------------------------------- TMA


def _fp8_pairs(dtype: Any) -> Arguments:
    return each(uniform(dtype, (16, 16, 128), -2, 2), uniform(dtype, (16, 16, 128), -2, 2))


TMA = [
    Program(
        "tma_f32",
        [
            copies("tma_copy_async", uniform(F32, (6, 16, 64), -10, 10)),
            copies("tma_copy_multi_subspan", uniform(F32, (6, 16, 64), -10, 10)),
            copies("tma_copy_tiled", uniform(F32, (6, 16, 128), -10, 10)),
            Call("tma_ab_buffer_fp8", _fp8_pairs(E4M3), float_sum, Tolerance(0.2)),
        ],
    ),
    Program(
        "tma_fp6_fp4",
        [
            Call("tma_ab_buffer_f6", _fp8_pairs(E2M3), float_sum, Tolerance(0.2)),
            Call(
                "tma_ab_buffer_f4",
                _fp8_pairs(E2M1),
                lambda a, b: float_sum(a, b).astype(E2M1),  # the main's reference rounds the sum to fp4
                Tolerance(0.2),
                differs="the main expects f4 + f4 rounded to f4 (Croqtile's fp4 arithmetic, e.g. 1.5 + 1 = 2); "
                "choreo-kernel adds narrow floats in f32 (spec: element arithmetic promotes, rounds on store) "
                "and stores into f32 here, so 2.5",
            ),
        ],
    ),
    Program(
        "tma_v2",
        [
            Call(
                "tma_ab_buffer",
                each(uniform(F32, (6, 16, 128), -10, 10), uniform(F32, (6, 16, 128), -10, 10)),
                lambda a, b: a + b,
            )
        ],
    ),
]

# ---------------------------------------------------------------------------- DMA of 1 to 5 dimensions


def _s32(shape: tuple[int, ...]) -> np.ndarray:
    """The mains' s32 fill: weights 31, 17, 13, 5, 3 on the last dimensions (17, 5 for two), % 41 - 20."""
    weights = {1: (17,), 2: (17, 5), 3: (31, 17, 5), 4: (31, 17, 5, 3), 5: (31, 17, 13, 5, 3)}[len(shape)]
    return pattern(np.int32, shape, weights, 41, 20, constant=5 if len(shape) == 1 else 0)


def _f16(shape: tuple[int, ...]) -> np.ndarray:
    """The mains' f16 fill: small integers, % 19 - 9."""
    weights = {1: (7,), 2: (7, 1), 3: (11, 7, 1), 4: (11, 7, 3, 1)}[len(shape)]
    return pattern(F16, shape, weights, 19, 9, constant=3 if len(shape) == 1 else 0)


def _s8(shape: tuple[int, ...]) -> np.ndarray:
    """The mains' s8 fill: % 127 - 63."""
    weights = {1: (7,), 2: (7, 3), 3: (7, 3, 1)}[len(shape)]
    return pattern(np.int8, shape, weights, 127, 63, constant=3 if len(shape) == 1 else 0)


def _f32(shape: tuple[int, ...]) -> np.ndarray:
    return pattern(F32, shape, (13, 3), 37, 18)


def copy_of(function: str, array: np.ndarray, reference: Callable[[np.ndarray], Any] = same) -> Call:
    return Call(function, fixed(array), reference)


DMA_3D = Program(
    "dma_3d",
    [
        copy_of("test_flat_s32", _s32((2, 4, 8))),
        copy_of("test_flat_f16", _f16((3, 8, 16))),
        copy_of("test_flat_async", _s32((2, 8, 32))),
        copy_of("test_flat_large", _s32((4, 16, 32))),
        copy_of("test_flat_s8", _s8((2, 16, 64))),
        copy_of("test_batch_s32", _s32((2, 4, 8))),
        copy_of("test_batch_f16", _f16((3, 8, 16))),
        copy_of("test_batch_async", _s32((2, 8, 32))),
        copy_of("test_mixed_flatten", _s32((3, 4, 8))),
        copy_of("test_mixed_flatten_f16", _f16((4, 8, 16))),
        copy_of("test_mixed_batch", _s32((2, 4, 8))),
        copy_of("test_mixed_batch_inner_static", _s32((3, 4, 8))),
    ],
)

DMA_4D5D = Program(
    "dma_4d5d",
    [
        copy_of("test_4d_flat_s32", _s32((2, 3, 4, 8))),
        copy_of("test_4d_flat_f16", _f16((2, 2, 4, 16))),
        copy_of("test_4d_dyn_s32", _s32((2, 3, 4, 8))),
        copy_of("test_4d_mixed", _s32((2, 3, 5, 7))),
        copy_of("test_4d_dyn_outer", _s32((3, 3, 4, 8))),
        copy_of("test_5d_flat_s32", _s32((2, 2, 3, 4, 8))),
        copy_of("test_5d_dyn", _s32((2, 2, 3, 4, 5))),
        copy_of("test_5d_mixed", _s32((2, 3, 3, 4, 8))),
    ],
)


def _zero_filled_row(x: np.ndarray) -> np.ndarray:
    """A tile one row taller than its source: the source, then a row of zeros."""
    return np.concatenate([x, np.zeros((1, x.shape[1]), x.dtype)])


def _tail(shape: tuple[int, int]) -> np.ndarray:
    return pattern(F16, shape, (3, 1), 29, 14)


TILED_DMA = Program(
    "tiled_dma",
    [
        copy_of("foo1", _s32((32, 32))),
        copy_of("foo2", _f16((31, 32)), _zero_filled_row),
        copy_of("foo3", _f16((32, 1024)), lambda x: x[:7, :32]),
        copy_of("foo4", _s32((32, 64))),
        copy_of("foo5", _f16((31, 64)), _zero_filled_row),
        copy_of("foo6", _f32((128, 128)), lambda x: x[32:64, 64:96]),
        copy_of("foo7", _s32((64, 32))),
        copy_of("foo8", _s32((16, 48))),
        copy_of("foo9", _s8((32, 128))),
        copy_of("foo10", _s32((13, 32))),
        copy_of("foo11", _s32((13, 64))),
        copy_of("foo12", _f16((64, 64))),
        copy_of("foo13", _f16((128, 128))),
        copy_of("foo14", _f16((4, 128))),
        copy_of("foo15", _s32((128, 16))),
        copy_of("foo16", _s8((64, 128)), lambda x: x[:32, :64]),
        copy_of("foo17", _s32((48, 64)), lambda x: x[:16, :32]),
        copy_of("foo18", _s8((64, 128)), lambda x: x[:13, :64]),
        copy_of("foo19", _s32((128, 128)), lambda x: x[32:64, 64:96]),
        copy_of("foo20", _s32((64, 128)), lambda x: x.T),
        copy_of("foo21", _s32((64, 64)), lambda x: x[:16, :32].T),
        copy_of("foo22", _s32((32, 64)), lambda x: np.pad(x, ((2, 2), (4, 4)), constant_values=99)),
        copy_of("foo23", _s32((32, 64)), lambda x: np.pad(x, ((2, 2), (4, 4)), constant_values=99)),
        copy_of("foo24", _s32((30, 60)), lambda x: np.pad(x, ((2, 3), (1, 2)), constant_values=-1)),
        copy_of("foo25", _s32((128,))),
        copy_of("foo26", _f16((256,))),
        copy_of("foo27", _s32((64,))),
        copy_of("foo28", _s8((512,))),
        copy_of("copy_tail_m", _tail((70, 64))),
        copy_of("copy_tail_k", _tail((64, 72))),
        copy_of("copy_tail_mk", _tail((70, 72))),
    ],
)

# ---------------------------------------------------------------------------- semantics that differ

# Croqtile passes every array by pointer; here an array without '&' (or 'global') is the function's copy
A_BY_VALUE = (
    "the CPU part writes 'A', which is passed by value (no '&'): the function's copy changes, the caller's "
    "array does not"
)


def _ramp(n: int, scale: float = 1.0, modulo: int = 0) -> np.ndarray:
    values = np.arange(n) % modulo if modulo else np.arange(n)
    return (values * scale).astype(np.float32)


def _hetero(
    name: str, function: str, arrays: tuple[np.ndarray, ...], atol: float, *results: Callable[..., np.ndarray]
) -> Program:
    """A program whose `main` fills f32 arrays, calls once, and checks every array that the CPU and GPU
    parts write in place (the first ones, in order). Each compiles and runs; the check of 'A' fails by
    the rule of by-value arrays (A_BY_VALUE)."""
    reference = (lambda *a: tuple(r(*a) for r in results)) if len(results) > 1 else results[0]
    call = Call(function, fixed(*arrays), reference, Tolerance(atol), written=tuple(range(len(results))))
    return Program(name, [call], pending=A_BY_VALUE)


HETERO = [
    _hetero(
        "hetero_cpu_gpu",
        "hetero_add",
        (_ramp(1024), _ramp(1024, 2)),
        1e-5,
        lambda a, b: a + 1,
        lambda a, b: b + 2,
    ),
    _hetero(
        "hetero_cpu_gpu_dma",
        "hetero_dma_roundtrip",
        (_ramp(128), _ramp(128) + 100),
        1e-5,
        lambda a, b: a * 2,
        lambda a, b: b,
    ),
    _hetero(
        "hetero_cpu_gpu_multi",
        "hetero_multi_phase",
        (_ramp(256), _ramp(256), np.zeros(256, np.float32)),
        1e-5,
        lambda a, b, c: a + 1,
        lambda a, b, c: b * 2,
        lambda a, b, c: (a + 1) + b * 2,
    ),
    _hetero(
        "hetero_cpu_gpu_scale",
        "hetero_parallel_scale",
        (_ramp(4096, modulo=100), _ramp(4096, modulo=50), _ramp(4096, modulo=200), _ramp(4096, modulo=75)),
        1e-4,
        lambda a, b, c, d: a + 10,
        lambda a, b, c, d: b * 3,
        lambda a, b, c, d: c - 5,
        lambda a, b, c, d: d + 100,
    ),
]

# The main runs it under cuda-gdb; without the debugger it checks what it prints: each with-variable
# starts at {0, 0, 0}, at host level and in the block.
DEBUG_RTTI = Program(
    "debug_rtti_GDB_types",
    [
        Call(
            "debug_builtin_non_scalar_types",
            fixed(np.zeros((32, 64), np.int32), 1),
            lambda lhs, x: Printed(frozenset({"111{0, 0, 0}", "222{0, 0, 0}"})),
        )
    ],
)

PROGRAMS: list[Program] = [
    *ADD,
    INTEGRAL,
    *MEMREUSE,
    NUMERICS,
    STREAM,
    *TMA,
    DMA_3D,
    DMA_4D5D,
    TILED_DMA,
    *HETERO,
    DEBUG_RTTI,
]
