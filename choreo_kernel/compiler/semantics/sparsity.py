"""2:4 structured sparsity and block scaling: the forms of an MMA that change what it computes.

`mma.row.row.sp acc, a, b, e` multiplies a 2:4 sparse A: of every 4 consecutive K elements of a
row, at most 2 are non-zero, and `a` holds only those 2 (packed A is [M, K / 2]). The metadata
`e` (`mma.load` of a u8 [M, K / 8] tile) says where they were: byte `j` of row `r` describes the
groups `2j` (low nibble) and `2j + 1` (high nibble); a group's nibble is `i0 | i1 << 2`, the
positions 0..3 of its two kept elements, i0 < i1 (Croqtile's host encoder writes this layout;
the CUDA lowering gathers the bytes into WGMMA's metadata register).

`mma.row.row.scale acc, a, b, sa, sb` is block scaling as DeepGEMM promotes it on Hopper, which
has no hardware block scales: the product goes into a zeroed partial accumulator, then
acc[r, c] += partial[r, c] * sa[r] * sb (sa: one f32 per row, sb: one f32). `mma.scale acc, sa, sb`
does the same for the plain MMAs on `acc` before it in its enclosing block (`partial_mmas`): they
accumulate into the partial, which the mma.scale adds and clears.
"""

from __future__ import annotations

import numpy as np

from choreo_kernel.compiler import ast

PATTERN = (2, 4)  # the only structured sparsity Hopper runs: 2 kept of each 4
GROUP = 4
KEPT = 2
GROUPS_PER_BYTE = 2  # one nibble per group
DENSE_PER_METADATA_BYTE = GROUP * GROUPS_PER_BYTE  # 8 dense K elements per metadata byte


def metadata_columns(k: int) -> int:
    """The u8 metadata columns of a [M, K] dense operand (K / 8)."""
    return k // DENSE_PER_METADATA_BYTE


def positions(metadata: np.ndarray) -> np.ndarray:
    """[M, K/8] u8 metadata -> [M, K/4, 2] positions (0..3) of each group's kept elements."""
    data = np.asarray(metadata).astype(np.uint8)
    nibbles = np.stack([data & 0xF, data >> 4], axis=-1).reshape(data.shape[0], -1)
    return np.stack([nibbles & 0x3, nibbles >> 2], axis=-1).astype(np.int64)


def decompress(packed: np.ndarray, metadata: np.ndarray) -> np.ndarray:
    """The dense [M, K] operand that packed [M, K/2] values and their metadata stand for."""
    rows, kept = packed.shape
    where = positions(metadata)
    if where.shape[1] * KEPT != kept:
        raise ValueError(
            f"2:4 metadata of {metadata.shape[1]} bytes per row describes {where.shape[1] * GROUP} dense "
            f"columns, but the packed operand has {kept} (K / 2 = {kept} needs {kept // 4} bytes)"
        )
    unordered = np.argwhere(where[..., 0] >= where[..., 1])
    if len(unordered):  # WGMMA takes only these 6 nibbles; what it does with the others is undefined
        row, group = (int(x) for x in unordered[0])
        first, second = (int(x) for x in where[row, group])
        raise ValueError(
            f"2:4 metadata row {row}, group {group} (byte {group // GROUPS_PER_BYTE}) gives positions {first} and "
            f"{second}: the two kept positions of a group are distinct and increasing"
        )
    dense = np.zeros((rows, where.shape[1], GROUP), dtype=packed.dtype)
    values = np.asarray(packed).reshape(rows, -1, KEPT)
    row_index = np.arange(rows)[:, None]
    group_index = np.arange(where.shape[1])[None, :]
    for slot in range(KEPT):
        dense[row_index, group_index, where[..., slot]] = values[..., slot]
    return dense.reshape(rows, -1)


def compress(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(packed [M, K/2], metadata u8 [M, K/8]) of a 2:4 sparse dense [M, K] operand; a group with
    fewer than 2 non-zeros keeps zeros at the first free positions (as Croqtile's encoder)."""
    rows, k = dense.shape
    groups = np.asarray(dense).reshape(rows, k // GROUP, GROUP)
    nonzero = groups != 0
    if (nonzero.sum(axis=-1) > KEPT).any():
        raise ValueError("the operand is not 2:4 sparse: some group of 4 has more than 2 non-zeros")
    order = np.argsort(~nonzero, axis=-1, kind="stable")[..., :KEPT]  # non-zeros first, in order
    order = np.sort(order, axis=-1)
    packed = np.take_along_axis(groups, order, axis=-1).reshape(rows, k // 2)
    nibbles = (order[..., 0] | (order[..., 1] << 2)).astype(np.uint8).reshape(rows, -1, GROUPS_PER_BYTE)
    metadata = (nibbles[..., 0] | (nibbles[..., 1] << 4)).astype(np.uint8)
    return packed, metadata


def is_sparse(operation: ast.Operation) -> bool:
    return "sp" in operation.words


def is_scaled(operation: ast.Operation) -> bool:
    return "scale" in operation.words


def _accumulator_name(stmt: ast.Stmt, scale: bool) -> str | None:
    """The accumulator of an `mma.scale` (scale=True) or of a plain, unscaled MMA."""
    if not isinstance(stmt, ast.OperationStmt) or stmt.operation.family != "mma":
        return None
    words = stmt.operation.words
    if scale and words != ["scale"]:
        return None
    if not scale and (words[:1] not in (["row"], ["col"]) or "scale" in words):
        return None
    first = stmt.operation.args[0] if stmt.operation.args else None
    return first.id if isinstance(first, ast.Name) else None


def partial_mmas(root: ast.Stmt) -> dict[int, int]:
    """id(plain MMA) -> id(the mma.scale that adds its partial): the MMAs on the same accumulator
    before an `mma.scale` in the block that holds it, at any depth (Croqtile's scope rule)."""
    deferred: dict[int, int] = {}
    for stmt in ast.walk_statements(root):
        if not isinstance(stmt, ast.Block):
            continue
        for index, item in enumerate(stmt.body):
            name = _accumulator_name(item, scale=True)
            if name is None:
                continue
            for earlier in stmt.body[:index]:
                for inner in ast.walk_statements(earlier):
                    if _accumulator_name(inner, scale=False) == name and id(inner) not in deferred:
                        deferred[id(inner)] = id(item)
    return deferred
