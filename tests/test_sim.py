"""The sim backend (target "sim"): the conformance corpus, protocol bugs, signatures, semantics.

- Every valid corpus program that lists `sim` computes its REF / REF-ARG within TOL, for
  two scheduling seeds (a correct program does not depend on the seed).
- tests/sim/*.co are programs with a protocol bug.  Their header: `SIM: deadlock` or
  `SIM: poison`, `CALL` as in the corpus, `BUG-LINES` (the front end may report errors only
  there: it catches some of these bugs statically, and the sim must catch them anyway),
  `BLOCKED: line | path | need` per blocked path of a deadlock, `POISONED: return` or the
  argument that ends up holding poison, and `SEEDS: a-b` where whether the bug shows
  depends on the schedule (at least one seed of the range must show it).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from corpus import Program, load, parse_call, parse_program
from generators import assert_close, make_arguments, relative_error
from hypothesis import given, settings
from hypothesis import strategies as st
from programs import GUARDED_TRIGGER

import choreo_kernel as ck
from choreo_kernel.compiler.cuda.emit import emit_program
from choreo_kernel.compiler.driver import analyze
from choreo_kernel.compiler.semantics import sparsity
from choreo_kernel.runtime.sim import SimBackend
from choreo_kernel.runtime.sim.arith import poison_of

# The corpus and the CUDA backend's own programs (tests/cuda), each against its REF on the sim.
SIM_PROGRAMS = [p for p in load("valid") if "sim" in p.targets] + [
    parse_program(path) for path in sorted((Path(__file__).parent / "cuda").glob("*.co"))
]
SIM_PROGRAMS = [p for p in SIM_PROGRAMS if "sim" in p.targets]
BUGS = Path(__file__).parent / "sim"


def _call(program: Program, seed: int) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """Run CALL; (result, the arguments after the call, copies of them from before)."""
    module = ck.compile(program.source, target="sim", filename=program.name)
    arguments = make_arguments(program.arguments)
    before = {name: np.copy(value) for name, value in arguments.items()}
    assert program.function is not None
    result = module.function(program.function)(*arguments.values(), seed=seed)
    return result, arguments, before


def test_corpus_has_sim_programs() -> None:
    assert len(SIM_PROGRAMS) >= 30


@pytest.mark.parametrize("seed", [0, 5])
@pytest.mark.parametrize("program", SIM_PROGRAMS, ids=lambda p: p.name)
def test_corpus_program_matches_reference(program: Program, seed: int) -> None:
    if program.compile_only:
        ck.compile(program.source, target="sim", filename=program.name)
        return
    result, arguments, before = _call(program, seed)
    env = {
        "np": np,
        "ml_dtypes": ml_dtypes,
        "sparsity": sparsity,
        **before,
    }  # ml_dtypes: the narrow float types
    if program.ref is not None:
        assert_close(result, eval(program.ref, env), program.tol, "the result")
    for name, expression in program.ref_args:
        assert_close(arguments[name], eval(expression, env), program.tol, f"argument '{name}'")


# ---------------------------------------------------------------- protocol bugs


@dataclass(frozen=True)
class Bug:
    path: Path
    source: str
    kind: str  # deadlock | poison
    function: str
    arguments: tuple[tuple[str, str], ...]
    bug_lines: frozenset[int]
    blocked: tuple[tuple[int, str, str], ...]  # (line, path, need)
    poisoned: str | None
    seeds: range

    @property
    def name(self) -> str:
        return self.path.name


def _parse_bug(path: Path) -> Bug:
    source = path.read_text(encoding="utf-8")
    keys: dict[str, list[str]] = {}
    for line in source.splitlines():
        match = re.fullmatch(r"//\s*([A-Z-]+):\s*(.*?)\s*", line)
        if match:
            keys.setdefault(match[1], []).append(match[2])
    function, arguments = parse_call(keys["CALL"][0])
    blocked = []
    for entry in keys.get("BLOCKED", []):
        line, path_name, need = (part.strip() for part in entry.split("|"))
        blocked.append((int(line), path_name, need))
    low, _, high = (keys.get("SEEDS") or ["0"])[0].partition("-")
    return Bug(
        path,
        source,
        keys["SIM"][0],
        function,
        arguments,
        frozenset(int(n) for n in keys["BUG-LINES"][0].split()),
        tuple(blocked),
        (keys.get("POISONED") or [None])[0],
        range(int(low), int(high or low) + 1),
    )


BUG_PROGRAMS = [_parse_bug(path) for path in sorted(BUGS.glob("*.co"))]


def _run_bug(bug: Bug, seed: int) -> tuple[Any, dict[str, Any]]:
    """Run the program on the sim whether or not the front end caught the bug."""
    analysis = analyze(bug.source, target="sim")
    stray = [d for d in analysis.diagnostics if d.severity == "error" and d.line not in bug.bug_lines]
    assert not stray, "errors away from BUG-LINES:\n" + "\n".join(d.render(bug.source) for d in stray)
    backend = SimBackend(analysis, source=bug.source, filename=bug.name)
    arguments = make_arguments(bug.arguments)
    return backend.function(bug.function)(*arguments.values(), seed=seed), arguments


def _has_poison(value: Any) -> bool:
    array = np.asarray(value)
    if np.issubdtype(array.dtype, np.integer):
        return bool((array == poison_of(array.dtype)).any())
    return bool(np.isnan(array.astype(np.float64)).any())


def test_bug_programs_cover_both_kinds() -> None:
    kinds = {bug.kind for bug in BUG_PROGRAMS}
    assert kinds == {"deadlock", "poison"}


@pytest.mark.parametrize("bug", [b for b in BUG_PROGRAMS if b.kind == "deadlock"], ids=lambda b: b.name)
def test_deadlock_names_each_blocked_path(bug: Bug) -> None:
    for seed in bug.seeds:
        with pytest.raises(ck.ChoreoError) as raised:
            _run_bug(bug, seed)
        (diagnostic,) = raised.value.diagnostics
        assert "deadlock" in diagnostic.message
        assert diagnostic.line == min(line for line, _, _ in bug.blocked)
        notes = [note.message for note in diagnostic.notes]
        for line, path_name, need in bug.blocked:
            matching = [n for n in notes if f"waits at line {line} " in n and path_name in n and need in n]
            assert matching, f"no note says {path_name} waits at line {line} for {need}:\n" + "\n".join(notes)
        assert f"{bug.name}:{diagnostic.line}:" in str(raised.value)


@pytest.mark.parametrize("bug", [b for b in BUG_PROGRAMS if b.kind == "poison"], ids=lambda b: b.name)
def test_missing_wait_shows_poison(bug: Bug) -> None:
    shown = []
    for seed in bug.seeds:
        result, arguments = _run_bug(bug, seed)
        shown.append(_has_poison(result if bug.poisoned == "return" else arguments[bug.poisoned]))
    assert any(shown), f"no seed of {bug.seeds} left poison in {bug.poisoned}"


# ------------------------------------------------------------------ signatures

ADD = """
__co__ f32 [M, N] add(f32 [M, N] a, f32 [M, N] b, f32 scale) {
  f32 [M, N] out;
  parallel {i, j} by [M / 8, N / 8] : block {
    parallel {x, y} by [8, 8] : thread {
      out.chunkat(i, j).at(x, y) = a.chunkat(i, j).at(x, y) * scale + b.chunkat(i, j).at(x, y);
    }
  }
  return out;
}
"""


@pytest.fixture(scope="module")
def add() -> Any:
    return ck.compile(ADD, target="sim").add


def _ones(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return np.ones(shape, dtype=dtype)


def test_call_returns_numpy(add: Any) -> None:
    out = add(_ones(16, 24), _ones(16, 24), 2.0)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert np.array_equal(out, np.full((16, 24), 3.0, np.float32))


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ((_ones(16, 24), _ones(16, 24)), ["takes 3 arguments", "got 2"]),
        ((_ones(16, 24), _ones(16), 1.0), ["'b'", "rank 2"]),
        ((_ones(16, 24), _ones(16, 24, dtype=np.float16), 1.0), ["'b'", "f32", "float16"]),
        ((_ones(16, 24), _ones(16, 32), 1.0), ["'b'", "dimension 1", "N = 24", "32"]),
        ((_ones(16, 24), _ones(16, 24), "2"), ["'scale'", "f32"]),
    ],
    ids=["count", "rank", "element-type", "symbolic-dimension", "scalar"],
)
def test_signature_mismatch_names_parameter(add: Any, arguments: tuple[Any, ...], words: list[str]) -> None:
    with pytest.raises(ck.ChoreoError) as raised:
        add(*arguments)
    for word in words:
        assert word in str(raised.value)


INPLACE = """
__co__ void scale(f32 [N] x, global f32 [N] y) {
  parallel i by N {
    y.at(i) = x.at(i) * 2.0f;
    x.at(i) = 0.0f;
  }
}
"""


def test_global_parameter_is_written_in_place_and_others_are_copied() -> None:
    module = ck.compile(INPLACE, target="sim")
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, dtype=np.float32)
    module.scale(x, y)
    assert np.array_equal(y, np.arange(8, dtype=np.float32) * 2)
    assert np.array_equal(x, np.arange(8, dtype=np.float32)), "a non-global argument is copied in"
    strided = np.zeros(16, dtype=np.float32)[::2]
    module.scale(x, strided)
    assert np.array_equal(strided, y)


def test_read_only_global_argument_is_rejected() -> None:
    y = np.zeros(8, dtype=np.float32)
    y.flags.writeable = False
    with pytest.raises(ck.ChoreoError, match="'y' is global"):
        ck.compile(INPLACE, target="sim").scale(np.ones(8, np.float32), y)


# ------------------------------------------------------------------- semantics


def _run(source: str, *arguments: Any, **options: Any) -> Any:
    module = ck.compile(source, target="sim")
    return module.function(module.functions[0])(*arguments, **options)


@pytest.mark.parametrize(
    ("elem", "dtype"),
    [
        ("f16", np.float16),
        ("bf16", ml_dtypes.bfloat16),
        ("f8_e4m3", ml_dtypes.float8_e4m3fn),
        ("f8_e5m2", ml_dtypes.float8_e5m2),
    ],
)
def test_narrow_floats_round_on_store(elem: str, dtype: Any) -> None:
    source = f"""
__co__ {elem} [64] scaled(f32 [64] x) {{
  {elem} [64] out;
  parallel i by 64 {{ out.at(i) = x.at(i) * 3.0f; }}
  return out;
}}"""
    x = np.random.default_rng(1).uniform(-1, 1, 64).astype(np.float32)
    out = _run(source, x)
    assert out.dtype == np.dtype(dtype)
    assert np.array_equal(out.astype(np.float32), (x * np.float32(3)).astype(dtype).astype(np.float32))


MMA = """
__co__ f32 [M, N] mm(T [M, K] a, T [N, K] b) {
  f32 [M, N] c;
  parallel {bm, bn} by [M / 64, N / 64] : block {
    shared T [64, 64] sa;
    shared T [64, 64] sb;
    parallel wg by 1 : group-4 {
      acc = mma.fill.ACC 0.0f;
      foreach k in [K / 64] {
        tma.load.swiz<128> a.subspan(64, 64).at(bm, k) => sa;
        tma.load.swiz<128> b.subspan(64, 64).at(bn, k) => sb;
        mma.row.row acc, sa, sb;
      }
      mma.store acc, c.subspan(64, 64).at(bm, bn);
    }
  }
  return c;
}"""


@pytest.mark.parametrize(
    ("elem", "accumulator", "dtype", "tol"),
    [("bf16", "f32", ml_dtypes.bfloat16, 1e-5), ("f16", "f16", np.float16, 1e-2)],
)
def test_mma_operand_and_accumulator_types(elem: str, accumulator: str, dtype: Any, tol: float) -> None:
    source = MMA.replace("T [", f"{elem} [").replace("ACC", accumulator)
    rng = np.random.default_rng(2)
    a = rng.uniform(-1, 1, (128, 128)).astype(dtype)
    b = rng.uniform(-1, 1, (64, 128)).astype(dtype)
    out = _run(source, a, b)
    assert relative_error(out, a.astype(np.float32) @ b.astype(np.float32).T) <= tol


LOOPS = """
__co__ s32 [64] loops(s32 [64] x) {
  s32 [64] out;
  parallel t by 64 {
    mutable int acc = 0;
    mutable int i = 0;
    while (i < t) {
      i++;
      if (i % 3 == 0) { continue; }
      if (i > 40) { break; }
      acc += i;
    }
    foreach k in [10] {
      if (k == t % 7) { break; }
      acc += 100;
    }
    out.at(t) = acc + x.at(t);
  }
  return out;
}"""


def _loops_reference(t: int) -> int:
    acc = i = 0
    while i < t:
        i += 1
        if i % 3 == 0:
            continue
        if i > 40:
            break
        acc += i
    return acc + 100 * (t % 7) + t


def test_break_continue_while_with_thread_dependent_conditions() -> None:
    out = _run(LOOPS, np.arange(64, dtype=np.int32))
    assert out.tolist() == [_loops_reference(t) for t in range(64)]


NESTED = """
__co__ f32 [B, 256] nested(f32 [B, 256] x) {
  f32 [B, 256] out;
  parallel b by B : block {
    shared f32 [256] s;
    shared event<2> done;
    parallel wg by 2 : group-4 {
      parallel t by 128 : thread {
        s.at(wg * 128 + t) = x.at(b, wg * 128 + t) + 1.0f;
      }
      trigger done;
      wait done;
    }
    parallel q by 256 : thread {
      out.at(b, q) = s.at(255 - q);
    }
  }
  return out;
}"""


def test_levels_nested_and_sibling_parallels_with_stated_arrival_count() -> None:
    x = np.random.default_rng(3).uniform(-1, 1, (3, 256)).astype(np.float32)
    assert np.array_equal(_run(NESTED, x), (x + 1)[:, ::-1])


OUT_OF_RANGE = """
__co__ f32 [64] shifted(f32 [64] x) {
  f32 [64] out;
  parallel t by 64 {
    out.at(t) = x.at(t + 1);
  }
  return out;
}"""


def _one_error(source: str, *arguments: Any) -> Any:
    """The one diagnostic that running `source` on the sim raises."""
    with pytest.raises(ck.ChoreoError) as raised:
        _run(source, *arguments)
    (diagnostic,) = raised.value.diagnostics
    return diagnostic


def test_index_out_of_range_is_a_located_error() -> None:
    diagnostic = _one_error(OUT_OF_RANGE, np.zeros(64, np.float32))
    assert diagnostic.line == 5
    assert "64" in diagnostic.message and "0..63" in diagnostic.message


def test_seed_is_a_backend_default_and_a_call_option() -> None:
    program = next(p for p in SIM_PROGRAMS if p.name == "gemm_ws_1p2c.co")
    analysis = analyze(program.source, target="sim")
    arguments = list(make_arguments(program.arguments).values())
    results = [SimBackend(analysis, seed=seed).function("gemm_ws")(*arguments) for seed in range(3)]
    results.append(SimBackend(analysis).function("gemm_ws")(*arguments, seed=11))
    for result in results[1:]:
        assert np.array_equal(result, results[0])


# ------------------------------------------------------- property: C integer arithmetic


def _wrap32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def _c_divide(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


Term = tuple[str, Callable[[int, int, int], int]]  # Choreo text, and its C value for a.at(i), b.at(i), i


def _combine(op: str, left: Term, right: Term) -> Term:
    (lt, lf), (rt, rf) = left, right
    if op in ("/", "%"):  # `| 1` keeps the divisor odd, so never zero

        def divided(a: int, b: int, i: int) -> int:
            x, y = lf(a, b, i), rf(a, b, i) | 1
            quotient = _c_divide(x, y)
            return _wrap32(quotient if op == "/" else x - quotient * y)

        return f"({lt} {op} ({rt} | 1))", divided
    if op == ">>":
        return f"({lt} >> ({rt} & 7))", lambda a, b, i: lf(a, b, i) >> (rf(a, b, i) & 7)
    if op == "<":
        return f"({lt} < {rt})", lambda a, b, i: int(lf(a, b, i) < rf(a, b, i))
    if op == "?":
        return f"({lt} > 0 ? {lt} : {rt})", lambda a, b, i: lf(a, b, i) if lf(a, b, i) > 0 else rf(a, b, i)
    python = {"+": operator.add, "-": operator.sub, "*": operator.mul, "&": operator.and_}
    python |= {"|": operator.or_, "^": operator.xor}
    return f"({lt} {op} {rt})", lambda a, b, i: _wrap32(python[op](lf(a, b, i), rf(a, b, i)))


_LEAVES = st.sampled_from(
    [("a.at(i)", lambda a, b, i: a), ("b.at(i)", lambda a, b, i: b), ("i", lambda a, b, i: i)]
) | st.integers(-20, 20).map(lambda c: (f"({c})", lambda a, b, i, c=c: c))
_TERMS = st.recursive(
    _LEAVES,
    lambda inner: st.builds(
        _combine, st.sampled_from(["+", "-", "*", "/", "%", "&", "|", "^", ">>", "<", "?"]), inner, inner
    ),
    max_leaves=8,
)


@settings(max_examples=40, deadline=None)
@given(term=_TERMS, seed=st.integers(0, 2**16))
def test_integer_expressions_follow_c(term: Term, seed: int) -> None:
    """Random integer expressions over thread values agree with C evaluated element by element."""
    text, reference = term
    source = f"""
__co__ s32 [64] expr(s32 [64] a, s32 [64] b) {{
  s32 [64] out;
  parallel i by 64 {{ out.at(i) = {text}; }}
  return out;
}}"""
    rng = np.random.default_rng(seed)
    a = rng.integers(-100, 100, 64).astype(np.int32)
    b = rng.integers(-100, 100, 64).astype(np.int32)
    out = _run(source, a, b)
    assert out.tolist() == [reference(int(x), int(y), i) for i, (x, y) in enumerate(zip(a, b))], text


def test_data_dependent_if_does_not_reduce_the_arrival_count() -> None:
    """language.md 12.2: all 32 threads of warp 0 must trigger; when half do, the waiter is stuck."""
    x = np.ones(32, np.float32)
    x[:16] = 200.0
    with pytest.raises(ck.ChoreoError) as raised:
        _run(GUARDED_TRIGGER, x, np.zeros(32, np.float32))
    (note,) = [n.message for n in raised.value.diagnostics[0].notes if "'some'" in n.message]
    assert "waits at line 10" in note and "16 of the 32 arrivals" in note
    out = np.zeros(32, np.float32)
    _run(GUARDED_TRIGGER, np.full(32, 200.0, np.float32), out)
    assert np.array_equal(out, np.full(32, 200.0, np.float32))


EPILOGUE = """
__co__ f32 [B, 128] doubled(f32 [B, 128] x) {
  f32 [B, 128] out;
  parallel b by B : block {
    shared f32 [128] buf;
    shared event full;
    parallel w by 2 : group, l by 32 : thread {
      inthreads.async (w == 0) {
        foreach e in [4] {
          buf.at(e * 32 + l) = x.at(b, e * 32 + l) * 2.0f;
        }
        trigger full;
      }
      inthreads.async (w == 1) {
        wait full;
      }
      out.at(b, w * 64 + l) = buf.at(w * 64 + l);
      out.at(b, w * 64 + 32 + l) = buf.at(w * 64 + 32 + l);
    }
  }
  return out;
}"""


@pytest.mark.parametrize("seed", range(4))
def test_statements_after_async_paths_run_when_each_path_ends(seed: int) -> None:
    """No re-join (language.md 4.2): warp 1 reads the tile only after its own path waited for it."""
    x = np.random.default_rng(seed).uniform(-1, 1, (3, 128)).astype(np.float32)
    assert np.array_equal(_run(EPILOGUE, x, seed=seed), x * 2)


@pytest.mark.parametrize(("elem", "limit"), [("f8_e4m3", 448.0), ("f8_e5m2", 57344.0)])
def test_fp8_stores_saturate_like_satfinite(elem: str, limit: float) -> None:
    source = f"""
__co__ {elem} [4] narrowed(f32 [4] x) {{
  {elem} [4] out;
  parallel i by 4 {{ out.at(i) = x.at(i); }}
  return out;
}}"""
    out = _run(source, np.array([1e6, -1e6, 1.0, np.nan], np.float32)).astype(np.float32)
    assert out[:3].tolist() == [limit, -limit, 1.0] and np.isnan(out[3])


DMA_OF_A_TAIL = """__co__ f32 [M] tails(f32 [M] x) {
  f32 [M] out;
  parallel b by cdiv(M, 64) : block {
    shared f32 [64] tile;
    dma.copy x.subspan(64).at(b) => tile;
    dma.copy tile => out.subspan(64).at(b);
  }
  return out;
}"""


def test_every_copy_takes_a_tail_tile_as_tma_does() -> None:
    """A plain dma.copy of a tail tile reads zeros past the end and writes only what exists, as TMA does."""
    x = np.arange(100, dtype=np.float32)
    for copy in ("dma.copy", "tma.copy"):
        np.testing.assert_array_equal(_run(DMA_OF_A_TAIL.replace("dma.copy", copy), x), x)
    padded = DMA_OF_A_TAIL.replace("f32 [M] out;", "f32 [cdiv(M, 64), 64] out;").replace(
        "out.subspan(64).at(b)", "out.at(b)"
    )
    out = _run(padded.replace("__co__ f32 [M]", "__co__ f32 [cdiv(M, 64), 64]"), x)
    np.testing.assert_array_equal(out.reshape(-1), np.pad(x, (0, 28)))


CONSTANT_TAIL = """__co__ f32 [64] last(f32 [100] x) {
  f32 [64] out;
  parallel b by 1 : block {
    dma.copy x.subspan(64).at(1) => out;
  }
  return out;
}"""


def test_a_constant_index_of_a_tail_tile_compiles_and_reads_zeros_past_the_end() -> None:
    """As Croqtile, a constant index counts the tiles that start inside the data: tile 1 of 64 of 100
    elements is a tail tile; tile 2 would start past the end, an error when compiling."""
    x = np.arange(100, dtype=np.float32)
    np.testing.assert_array_equal(_run(CONSTANT_TAIL, x), np.pad(x[64:], (0, 28)))
    cuda = emit_program(analyze(CONSTANT_TAIL, target="cuda"))  # the 36 elements that exist, zeros after
    assert (
        "choreo::copy_padded<false>(choreo::region(out, {64}, {1}), choreo::region(x + 64, {36}, {1})" in cuda
    )
    (error,) = ck.check(CONSTANT_TAIL.replace(".at(1)", ".at(2)"))
    assert "index 2 is out of range for dimension 0 of the tiles of 'x' (extent 2)" in error.message


FIRST_TILE = """__co__ f32 [64] first(f32 [M] x) {
  f32 [64] out;
  parallel b by 1 : block {
    dma.copy x.subspan(64) => out;
  }
  return out;
}"""


def test_the_first_tile_of_shorter_data_is_a_tail_tile_on_both_backends() -> None:
    """`x.subspan(64)` without `.at` is tile 0, a tail tile where M < 64: zeros after the M elements."""
    x = np.arange(1, 41, dtype=np.float32)
    np.testing.assert_array_equal(_run(FIRST_TILE, x), np.pad(x, (0, 24)))
    cuda = emit_program(analyze(FIRST_TILE, target="cuda"))
    assert "choreo::region(x, {min(64, max(M, 0))}, {1})" in cuda


TAIL_STACK = """__co__ s32 [T, 8, 4] stacked(s32 [R, C] x) {
  s32 [T, 8, 4] out;
  parallel {i, j} by [cdiv(R, 8), cdiv(C, 4)] : block {
    shared s32 [8, 4] tile;
    dma.copy x.subspan(8, 4).at(i, j) => tile;
    dma.copy tile => out.at(i * cdiv(C, 4) + j);
  }
  return out;
}"""


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 30), cols=st.integers(1, 14))
def test_tail_tiles_of_any_shape_read_as_the_array_padded_with_zeros(rows: int, cols: int) -> None:
    """For any extents, short in the rows, the columns, both or neither, the tiles of 8 x 4 come out as
    those of the array padded with zeros to whole tiles."""
    x = np.arange(1, rows * cols + 1, dtype=np.int32).reshape(rows, cols)
    tall, wide = -(-rows // 8), -(-cols // 4)
    out = _run(TAIL_STACK.replace("[T, 8, 4]", f"[{tall * wide}, 8, 4]"), x)
    padded = np.pad(x, ((0, tall * 8 - rows), (0, wide * 4 - cols)))
    np.testing.assert_array_equal(
        out, padded.reshape(tall, 8, wide, 4).transpose(0, 2, 1, 3).reshape(-1, 8, 4)
    )


TAIL_OF_A_WINDOW = """__co__ f32 [64] tails(f32 [M] x) {
  f32 [64] out;
  parallel b by 1 : block {
    shared f32 [64] tile;
    dma.copy x.view(M - 20).from(0).subspan(64).at(1) => tile;
    dma.copy tile => out;
  }
  return out;
}"""


def test_a_tile_past_a_view_that_stops_inside_the_array_is_a_range_error() -> None:
    """Only a dimension that ends where the array does has tail tiles: past the end of a window that
    stops short of it, a tile would be the array's next elements, not zeros, so it stays a range error."""
    diagnostic = _one_error(TAIL_OF_A_WINDOW, np.zeros(100, np.float32))
    assert diagnostic.line == 5 and "the tile index is 1, outside 0..0" in diagnostic.message
    x = np.arange(100, dtype=np.float32)
    whole = TAIL_OF_A_WINDOW.replace("view(M - 20)", "view(M)")
    np.testing.assert_array_equal(_run(whole, x), np.pad(x[64:], (0, 28)))


TAIL_ELEMENT = """__co__ f32 [64] tails(f32 [M] x) {
  f32 [64] out;
  parallel t by 64 {
    out.at(t) = x.subspan(64).at(1).at(t);
  }
  return out;
}"""


def test_an_element_of_a_tail_tile_is_a_range_error() -> None:
    """Copies and accumulator stores take a tail tile; reading one of its elements is the range error."""
    diagnostic = _one_error(TAIL_ELEMENT, np.zeros(100, np.float32))
    assert "the tile index is 1, outside 0..0" in diagnostic.message and "only copies" in diagnostic.message
