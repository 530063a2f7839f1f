"""The end-to-end programs of Croqtile's suite that run MMA (WGMMA, mma.sync, WMMA), in our words: how each
`main` builds its arguments and what it checks (see peer_end2end.py for the table's form).

The programs marked `pending` do not compile yet (other changes are making them compile); their entries
are written so that the lead can turn them on: each says what its `main` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from peer_end2end import (
    BF16,
    E2M1,
    E2M3,
    E4M3,
    F16,
    F32,
    Arguments,
    Call,
    Program,
    Tolerance,
    each,
    fixed,
    integers,
    pattern,
    uniform,
)

# ---------------------------------------------------------------------------- WGMMA programs

_DIM, _BLOCK = 64, 64


def _attention_inputs(causal: bool, whole_tiles: bool = False) -> Arguments:
    """Q and K uniform in [-0.5, 0.5), V in [-1, 1), f16; the main's 2 batches x 2 heads x 100 positions
    (on the sim one batch and head of 70: still a partial last tile), or 128 for `whole_tiles`."""

    def build(rng: np.random.Generator, full: bool) -> tuple[Any, ...]:
        batches, heads = (2, 2) if full else (1, 1)
        seq = 128 if whole_tiles else 100 if full else 70
        q = rng.uniform(-0.5, 0.5, (batches, heads, seq, _DIM)).astype(F16)
        k = rng.uniform(-0.5, 0.5, (batches, heads, seq, _DIM)).astype(F16)
        v = rng.uniform(-1.0, 1.0, (batches, heads, seq, _DIM)).astype(F16)
        return q, k, v, causal

    return build


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """The main's reference: softmax in base 2 with its scale, the probabilities rounded to f16 before they
    multiply V. Without the causal mask the last tile's missing keys count as scores of 0 (the kernel's
    zero-filled tile), so a row's maximum and sum run over the keys padded to a whole tile."""
    scale = 1.0 / np.sqrt(_DIM) * 1.44269504
    q32, k32, v32 = (x.astype(np.float32) for x in (q, k, v))
    seq_q, seq_kv = q.shape[2], k.shape[2]
    padded = -(-seq_kv // _BLOCK) * _BLOCK
    scores = np.zeros((*q.shape[:2], seq_q, padded), np.float32)
    scores[..., :seq_kv] = q32 @ np.swapaxes(k32, -1, -2)
    if causal:
        past = seq_kv - seq_q
        keep = np.arange(padded)[None, :] <= np.arange(seq_q)[:, None] + past
    else:
        keep = np.ones((seq_q, padded), bool)
    masked = np.where(keep, scores, -np.inf)
    peak = masked.max(axis=-1, keepdims=True)
    weights = np.where(keep, np.exp2(masked * scale - peak * scale), 0.0).astype(np.float32)
    total = weights.sum(axis=-1, keepdims=True)
    rounded = weights.astype(F16).astype(np.float32)
    return (rounded[..., :seq_kv] @ v32) / total


_ATTENTION = Tolerance(atol=0.01, rtol=0.05, either=True)  # a miss is both > 0.01 and > 5 % off
FLASH_ATTEN = Program(
    "flash_atten",
    [
        # Ours, not the main's: whole tiles only (128 positions), which must hold already.
        Call("flash_atten", _attention_inputs(False, whole_tiles=True), _attention, _ATTENTION),
        Call("flash_atten", _attention_inputs(True, whole_tiles=True), _attention, _ATTENTION),
        # The main's: 100 positions, a tile of 64 and a tail tile, read as zeros past the end (the dma.copy
        # of K and V) and stored only where it exists (the mma.store of O).
        Call("flash_atten", _attention_inputs(False), _attention, _ATTENTION),
        Call("flash_atten", _attention_inputs(True), _attention, _ATTENTION),
    ],
)

_CHUNK = 64


def _gdn_inputs(rng: np.random.Generator, full: bool) -> tuple[Any, ...]:
    """K, W, U uniform in [-0.05, 0.05) (bf16), gates G in (-0.01, 0], the state zero; the main's 2 heads of
    128 positions (on the sim one head: still two chunks, so the state carries over). V_new_T is the
    reference's transposed V_new, which the kernel reads back as the main gives it."""
    heads, seq = (2, 128) if full else (1, 128)
    k = rng.uniform(-0.05, 0.05, (heads, seq, _DIM)).astype(BF16)
    w = rng.uniform(-0.05, 0.05, (heads, seq, _DIM)).astype(BF16)
    u = rng.uniform(-0.05, 0.05, (heads, seq, _DIM)).astype(BF16)
    g = (-0.01 * rng.uniform(0.0, 1.0, (heads, seq))).astype(np.float32)
    state = np.zeros((heads, _DIM, _DIM), BF16)
    v_new = np.zeros((heads, seq, _DIM), BF16)
    v_new_t = _gdn(k, w, u, g)[1]
    return k, w, u, g, state, v_new, v_new_t


def _gdn(k: Any, w: Any, u: Any, g: Any) -> tuple[np.ndarray, np.ndarray]:
    """The chunked gated-delta state update in f32, from a zero state: per chunk, V_new = (U - W S) times
    each position's gate exp(g_last - g_t), S decays by exp(g_last) and gains K^T V_new. Returns the final
    state [head, dv, dk] and V_new transposed [head, dv, seq], both bf16."""
    k32, w32, u32 = (x.astype(np.float32) for x in (k, w, u))
    heads, seq, _ = k.shape
    states = np.zeros((heads, _DIM, _DIM), np.float32)
    v_new_t = np.zeros((heads, _DIM, seq), np.float32)
    for head in range(heads):
        s = np.zeros((_DIM, _DIM), np.float32)  # [dk, dv]
        for start in range(0, seq, _CHUNK):
            chunk = slice(start, min(start + _CHUNK, seq))
            v_new = u32[head, chunk] - w32[head, chunk] @ s
            last = g[head, chunk.stop - 1]
            v_new *= np.exp2((last - g[head, chunk]) * 1.442695)[:, None]
            s *= np.exp2(last * 1.442695)
            v_new_t[head, :, chunk] = v_new.T
            s += k32[head, chunk].T @ v_new
        states[head] = s.T
    return states.astype(BF16), v_new_t.astype(BF16)


GDN = Program(
    "gdn_recurrence",
    [
        Call(
            "gdn_chunk_state",
            _gdn_inputs,
            lambda k, w, u, g, *rest: _gdn(k, w, u, g)[0],
            Tolerance(5e-3),
            written=(4,),
        )
    ],
)

_RS_LHS = pattern(np.int64, (64, 16), (1, 2), 3, 0).astype(np.float32) * 0.5
_RS_RHS = pattern(np.int64, (64, 16), (2, 1), 3, 0).astype(np.float32) * 0.5
WGMMA_RS = Program(
    "wgmma_rs",
    [
        Call(
            "wgmma_rs1",
            fixed(_RS_RHS.astype(F16)),
            lambda b: np.broadcast_to(b.astype(np.float32).sum(axis=1), (64, 64)),
            Tolerance(0.1),
        ),
        Call(
            "wgmma_rs2",
            fixed(_RS_LHS.astype(F16), _RS_RHS.astype(F16)),
            lambda a, b: a.astype(np.float32) @ b.astype(np.float32).T,
            Tolerance(0.1),
        ),
    ],
)


# ---------------------------------------------------------------------------- not compiling yet

NOT_YET_COMPILED = "not yet compiled"


def _f32(x: Any) -> np.ndarray:
    return np.asarray(x).astype(np.float32)


def row_col(a: Any, b: Any) -> np.ndarray:
    """lhs [M, K] times rhs [K, N], in f32."""
    return _f32(a) @ _f32(b)


def row_row(a: Any, b: Any) -> np.ndarray:
    """lhs [M, K] times rhs [N, K] (each row of rhs is a column of the product), in f32."""
    return _f32(a) @ _f32(b).T


def rounded_products(a: Any, b: Any, dtype: Any) -> np.ndarray:
    """The mains' `sum over k of T(lhs[i][k] * rhs[k][j])`: each product rounded to T, summed in f32."""
    products = _f32(a)[:, :, None] * _f32(b)[None, :, :]
    return products.astype(dtype).astype(np.float32).sum(axis=1)


def _grid(shape: tuple[int, int], row: float, column: float) -> np.ndarray:
    """`f16(i * row + j * column)`, the mains' deterministic MMA inputs."""
    i, j = np.indices(shape)
    return (i * row + j * column).astype(np.float32).astype(F16)


HOPPER_MMA = Program(
    "hopper_mma",
    [
        Call(
            "matmul_f6",
            each(uniform(E2M3, (64, 32), -2, 2), uniform(E2M3, (32, 32), -2, 2)),
            row_col,
            Tolerance(0.6, 0.3),
        ),
        Call(
            "matmul_f4",
            each(uniform(E2M1, (64, 32), -2, 2), uniform(E2M1, (32, 32), -2, 2)),
            row_col,
            Tolerance(1.0, 0.5),
        ),
    ],
)

_F16_1_10 = (uniform(F16, (128, 256), 1, 10), uniform(F16, (256, 256), 1, 10))
_RELATIVE = Tolerance(rtol=0.005)
AMPERE_MMA = Program(
    "ampere_mma",
    [
        Call("matmul_group_rc", each(*_F16_1_10), lambda a, b: rounded_products(a, b, F16), _RELATIVE),
        Call(
            "matmul_pipeline",
            each(uniform(F16, (64, 16), 1, 10), uniform(F16, (16, 32), 1, 10)),
            row_col,
            Tolerance(0.001, 0.002),
        ),
        Call(
            "matmul_fusion_scalar",
            lambda rng, full: (*each(*_F16_1_10)(rng, full), float(np.float16(rng.uniform(1, 10)))),
            lambda a, b, bias: rounded_products(a, b, F16) + bias,
            _RELATIVE,
        ),
        Call(
            "mma_m8n8k4_f16_f16",
            fixed(_grid((128, 64), 0.02, 0.1), _grid((64, 256), 0.1, 0.03)),
            lambda a, b: rounded_products(a, b, F16) + 1.5,  # the kernel's accumulator starts at 1.5
            _RELATIVE,
        ),
        Call(
            "mma_m8n8k16_s8_s32",
            each(integers(np.int8, (128, 64), -10, 10), integers(np.int8, (64, 128), -10, 10)),
            lambda a, b: a.astype(np.int32) @ b.astype(np.int32),
        ),
        Call(
            "mma_m16n8k8_f16_f32",
            fixed(_grid((64, 64), 0.02, 0.1), _grid((64, 128), 0.07, 0.03)),
            lambda a, b: rounded_products(a, b, F16),
            Tolerance(rtol=0.002),
        ),
    ],
)


def _wmma(function: str, dtype: Any, product: Any) -> Call:
    makers = (
        (integers(dtype, (128, 256), 1, 10), integers(dtype, (256, 256), 1, 10))
        if np.dtype(dtype).kind in "iu"
        else (uniform(dtype, (128, 256), 1, 10), uniform(dtype, (256, 256), 1, 10))
    )
    return Call(function, each(*makers), lambda a, b: rounded_products(a, b, product), _RELATIVE)


WMMA = Program(
    "wmma",
    [
        _wmma("matmul_f16_f32", F16, F16),
        _wmma("matmul_f16_f16", F16, F16),
        _wmma("matmul_bf16_f32", BF16, BF16),
        _wmma("matmul_s8_s32", np.int8, np.int32),
        _wmma("matmul_u8_s32", np.uint8, np.int32),
        _wmma("matmul_tf32_f32", F32, F16),  # the main rounds each product to f16
    ],
)

# wgmma_ss: lhs (m + 2k) % 3 / 2 and rhs (2n + k) % 3 / 2, in f16 and (exactly) in e4m3; outputs written in
# place, within 0.1 of the f32 product.
_SS_M = _SS_N = 384
_SS_K = 128
_SS_LHS = pattern(np.int64, (_SS_M, _SS_K), (1, 2), 3, 0).astype(np.float32) * 0.5
_SS_RHS = pattern(np.int64, (_SS_N, _SS_K), (2, 1), 3, 0).astype(np.float32) * 0.5
_SS = Tolerance(0.1)


def _ss(
    function: str, operand: Any, out: Any, rows: int = _SS_M, cols: int = _SS_N, differs: str | None = None
) -> Call:
    lhs, rhs = _SS_LHS[:rows].astype(operand), _SS_RHS[:cols].astype(operand)
    return Call(
        function,
        fixed(lhs, rhs, np.zeros((rows, cols), out)),
        lambda a, b, o: row_row(a, b),
        _SS,
        written=(2,),
        differs=differs,
    )


def _blockscale_ss() -> Call:
    lhs, rhs = _SS_LHS.astype(E4M3), _SS_RHS.astype(E4M3)
    scale_lhs = np.ones((_SS_M, _SS_K // 128), np.float32)
    scale_rhs = np.ones((_SS_N // 48, _SS_K // 128), np.float32)
    out = np.zeros((_SS_M, _SS_N), F16)
    return Call(
        "blockscale_gemm_e4m3_n48",
        fixed(lhs, scale_lhs, rhs, scale_rhs, out),
        lambda a, sa, b, sb, o: row_row(a, b),
        _SS,
        written=(4,),
    )


WGMMA_SS = Program(
    "wgmma_ss",
    [
        _ss("matmul_e4m3", E4M3, F32),
        _ss("matmul_f16", F16, F16),
        _ss("matmul_e4m3_mwg", E4M3, F16),
        # 384 / 128 = 3 blocks along x in clusters of 4: CUDA launches whole clusters only, so the launch
        # fails (Croqtile's main does not see it: its output still holds the previous call's product)
        _ss("matmul_e4m3_mwg_tbc", E4M3, F16, differs="3 blocks along x are not whole clusters of 4"),
        _blockscale_ss(),
        _ss("matmul_f16_tbc", F16, F16),
        Call(
            "matmul_st_trans",
            fixed(_SS_LHS.astype(F16), _SS_RHS.astype(F16), np.zeros((_SS_N, _SS_M), F16)),
            lambda a, b, o: row_row(a, b).T,
            _SS,
            written=(2,),
        ),
        _ss("matmul_st_masked", F16, F16, rows=70, cols=130),  # the first 70 rows of lhs, 130 of rhs
        _ss("matmul_f16_ws_1p1c", F16, F16),
        _ss("matmul_f16_ws_1p3c", F16, F16),
        _ss("matmul_e4m3_ws_tbc", E4M3, F16),
    ],
)


def _sparse_lhs(rng: np.random.Generator, k: int, dtype: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A 2:4 structured sparse lhs [64, k] (two nonzeros, uniform in [-1, 1), in each group of four), its
    packed values [64, k/2] and metadata [64, k/8] u8: per group a nibble, the two positions (2 bits each,
    lower first), two groups to a byte, the first group in the low nibble."""
    dense = np.zeros((64, k), np.float32)
    positions = np.array([sorted(rng.choice(4, 2, replace=False)) for _ in range(64 * k // 4)])
    values = rng.uniform(-1, 1, (64 * k // 4, 2)).astype(np.float32)
    values[values == 0] = 1.0
    groups = dense.reshape(-1, 4)
    groups[np.arange(len(groups))[:, None], positions] = values
    dense = dense.astype(dtype)
    packed = np.take_along_axis(dense.reshape(-1, 4), positions, axis=1).reshape(64, k // 2)
    nibbles = (positions[:, 0] | positions[:, 1] << 2).reshape(64, k // 4)
    meta = (nibbles[:, 0::2] | nibbles[:, 1::2] << 4).astype(np.uint8)
    return dense, packed, meta


def _sparse_rhs(rng: np.random.Generator, n: int, k: int, dtype: Any) -> np.ndarray:
    """rhs [n, k] uniform in [-1, 1), with values under 0.1 in size moved to +-0.25."""
    values = rng.uniform(-1, 1, (n, k)).astype(np.float32)
    values = np.where(np.abs(values) < 0.1, np.where(values < 0, -0.25, 0.25), values)
    return values.astype(dtype)


def _sparse(function: str, dtype: Any, n: int, k: int, atol: float) -> Call:
    """The main keeps the dense lhs to check with; here it is rebuilt from the packed values and metadata."""

    def build(rng: np.random.Generator, full: bool) -> tuple[Any, ...]:
        _, packed, meta = _sparse_lhs(rng, k, dtype)
        return packed, meta, _sparse_rhs(rng, n, k, dtype)

    def reference(packed: Any, meta: Any, rhs: Any) -> np.ndarray:
        nibbles = np.stack([meta & 15, meta >> 4], axis=-1).reshape(64, -1).astype(np.int64)
        positions = np.stack([nibbles & 3, nibbles >> 2], axis=-1).reshape(-1, 2)
        dense = np.zeros((positions.shape[0], 4), np.float32)
        dense[np.arange(len(dense))[:, None], positions] = _f32(packed).reshape(-1, 2)
        return row_row(dense.reshape(64, k), rhs)

    return Call(function, build, reference, Tolerance(atol))


GEMM_SP = Program(
    "gemm_sp",
    [
        _sparse("matmul_f16_n32_k64", F16, 32, 64, 0.1),
        _sparse("matmul_f16_n32_k32", F16, 32, 32, 0.1),
        _sparse("matmul_fp8_n32", E4M3, 32, 64, 0.5),
        _sparse("matmul_fp8_n64", E4M3, 64, 64, 0.5),
        _sparse("matmul_fp8_n8", E4M3, 8, 64, 0.5),
        _sparse("matmul_f16_n8k64", F16, 8, 64, 0.1),
        _sparse("matmul_bf16_n8k64", BF16, 8, 64, 0.1),
        _sparse("matmul_f16_n16_k64", F16, 16, 64, 0.1),
    ],
    notes="the tolerances of the last three calls are assumed (0.1), as for the other f16 ones",
)


def hilbert_schedule(tiles_m: int, tiles_n: int) -> tuple[np.ndarray, np.ndarray]:
    """The tiles in the order of a Hilbert curve over the smallest power-of-two square holding them."""
    size = 1
    while size < max(tiles_m, tiles_n):
        size *= 2
    rows, cols = [], []
    for index in range(size * size):
        x = y = 0
        rest = index
        scale = 1
        while scale < size:
            rx = 1 & (rest // 2)
            ry = 1 & (rest ^ rx)
            if ry == 0:
                if rx == 1:
                    x, y = scale - 1 - x, scale - 1 - y
                x, y = y, x
            x, y = x + scale * rx, y + scale * ry
            rest //= 4
            scale *= 2
        if x < tiles_m and y < tiles_n:
            rows.append(x)
            cols.append(y)
    return np.array(rows, np.int32), np.array(cols, np.int32)


def _persistent_sizes(full: bool) -> tuple[int, int, int]:
    return (1536, 2048, 128) if full else (192, 256, 128)


def _persistent_f16(hilbert: bool) -> Arguments:
    """lhs [M, K] and rhs [N, K] uniform in [0, 2), the output zeroed; the main's 1536 x 2048 x 128 (on the
    sim 192 x 256 x 128); the Hilbert kernel also takes its schedule of 64 x 128 tiles."""

    def build(rng: np.random.Generator, full: bool) -> tuple[Any, ...]:
        m, n, k = _persistent_sizes(full)
        lhs = rng.uniform(0, 2, (m, k)).astype(F16)
        rhs = rng.uniform(0, 2, (n, k)).astype(F16)
        out = np.zeros((m, n), F16)
        return (lhs, rhs, out, *hilbert_schedule(m // 64, n // 128)) if hilbert else (lhs, rhs, out)

    return build


def _blockscale_persistent(rng: np.random.Generator, full: bool) -> tuple[Any, ...]:
    m, n, k = (512, 2048, 128) if full else (128, 256, 128)
    lhs = rng.uniform(0, 2, (m, k)).astype(E4M3)
    rhs = rng.uniform(0, 2, (n, k)).astype(E4M3)
    scale_lhs = rng.uniform(1, 3, (m, 1)).astype(np.float32)
    scale_rhs = rng.uniform(1, 3, (n // 128, 1)).astype(np.float32)
    return lhs, scale_lhs, rhs, scale_rhs, np.zeros((m, n), F16)


WGMMA_PERSIS = Program(
    "wgmma_persis",
    [
        Call(
            "matmul_persis_hilbert_sm90",
            _persistent_f16(hilbert=True),
            lambda a, b, *rest: row_row(a, b),
            Tolerance(0.5, 0.02),
            written=(2,),
        ),
        Call(
            "matmul_f16_ws_1p3c_persis",
            _persistent_f16(hilbert=False),
            lambda a, b, o: row_row(a, b),
            Tolerance(0.5, 0.02),
            written=(2,),
        ),
        Call(
            "blockscale_gemm_e4m3_ws_persis",
            _blockscale_persistent,
            lambda a, sa, b, sb, o: row_row(a, b) * sa * np.repeat(sb[:, 0], 128)[None, :],
            Tolerance(0.5, 0.08),
            written=(4,),
        ),
    ],
    pending=NOT_YET_COMPILED,
)

PROGRAMS = [FLASH_ATTEN, GDN, WGMMA_RS, HOPPER_MMA, AMPERE_MMA, WMMA, WGMMA_SS, GEMM_SP, WGMMA_PERSIS]
