"""What the kernel tells about code without running it: summaries, completion, Shift-Tab help."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from corpus import CONFORMANCE, Program, load

import choreo_kernel as ck
from choreo_kernel import docs
from choreo_kernel.kernel.cells import split_cell
from choreo_kernel.kernel.completion import complete, complete_options
from choreo_kernel.kernel.inspection import help_at
from choreo_kernel.kernel.summary import describe, format_bytes
from choreo_kernel.kernel.vocabulary import (
    BUILTIN_HELP,
    ELEMENT_TYPES,
    KEYWORDS,
    OPERATIONS,
    VIEW_METHODS,
    element_type_help,
)


def summaries(source: str) -> list[str]:
    module = ck.compile(source, target="sim")
    return [
        describe(module.analysis.functions[name], source, module.cuda_plan(name)) for name in module.functions
    ]


@pytest.mark.parametrize(
    ("file", "expected"),
    [
        (
            "gemm_ws_1p2c.co",
            # 64 KiB of tiles, the events' mbarriers and the room to align swizzled tiles: what the launch asks.
            "f32 [M, N] gemm_ws(f16 [M, K] lhs, f16 [N, K] rhs): 1 kernel, 384 threads/block, 65 KiB shared",
        ),
        # Two compiler-allocated `=> shared` destinations and one declared buffer, 512 B each.
        (
            "dma_async_shared.co",
            "f32 [B, 128] blend(f32 [B, 128] x, f32 [B, 128] y, f32 w): 1 kernel, 128 threads/block, 1.5 KiB shared",
        ),
        # A thread count written as `|x.span| / 3`: the analysis folds it.
        ("chunk_truncation.co", "f32 [100] twice(f32 [100] x): 1 kernel, 33 threads/block, no shared memory"),
    ],
)
def test_summary_reads_the_analysis(file: str, expected: str) -> None:
    assert summaries((CONFORMANCE / "valid" / file).read_text()) == [expected]


def test_summary_of_several_kernels_and_symbolic_sizes() -> None:
    source = """\
__co__ f32 [N] two(f32 [N] a) {
  f32 [N] out;
  parallel t by N / 4 : thread {
    out.at(t) = a.at(t);
  }
  parallel b by 2 : block {
    shared f32 [N] staged;
    parallel t by 64 : thread {
      staged.at(t) = a.at(t);
    }
  }
  return out;
}"""
    # The first kernel's block size and the second's shared buffer are set by the arguments at the call.
    assert summaries(source) == [
        "f32 [N] two(f32 [N] a): 2 kernels: N / 4 threads/block, no shared memory; "
        "64 threads/block, shared memory set by the arguments"
    ]


def test_summary_says_when_the_arguments_size_shared_memory() -> None:
    """Buffers of symbolic size live after the fixed part of the arena; the host sizes them at launch."""
    source = (Path(__file__).parent / "cuda" / "shared_sized_at_launch.co").read_text()
    assert summaries(source) == [
        "s32 [M, 4, 32] summed(s32 [M, 4, 32] a, s32 [M, 4, 32] b): 1 kernel, 128 threads/block, "
        "128 B shared and more set by the arguments"
    ]


def test_summary_shared_memory_is_what_the_launch_asks_for() -> None:
    """The summary reads the CUDA lowering: bench/gemm_ws.co's launch asks for 147,504 bytes of buffers
    and events plus 1,024 to align its swizzled tiles (the summary said 144 KiB, the data alone)."""
    source = (CONFORMANCE.parent.parent / "bench" / "gemm_ws.co").read_text()
    module = ck.compile(source, target="sim")
    (launch,) = module.cuda_plan("gemm_ws").launches
    assert launch.shared_bytes == 147504 + 1024
    assert summaries(source)[0].endswith("384 threads/block, 145 KiB shared")


@pytest.mark.parametrize("program", load("valid"), ids=lambda program: program.name)
def test_every_valid_program_has_a_summary(program: Program) -> None:
    for line in summaries(program.source):
        assert "__co__" not in line and "threads/block" in line


def test_summary_says_thread_for_one() -> None:
    """A block-level program without inner levels runs one thread per block."""
    source = """\
__co__ f32 [N] copy(f32 [N] a) {
  f32 [N] out;
  parallel p by N / 32 : block {
    dma.copy a.chunkat(p) => out.chunkat(p);
  }
  return out;
}"""
    assert summaries(source) == ["f32 [N] copy(f32 [N] a): 1 kernel, 1 thread/block, no shared memory"]


def test_format_bytes() -> None:
    assert [format_bytes(n) for n in (0, 512, 1536, 65536)] == ["0 B", "512 B", "1.5 KiB", "64 KiB"]


def matches(code: str, names: tuple[str, ...] = ()) -> list[str]:
    return list(complete(code, len(code), names)["matches"])


def test_completion_of_dotted_operations() -> None:
    assert matches("  f = dma.") == ["dma.any", "dma.copy", "dma.copy.async", "dma.pad", "dma.transp"]
    assert matches("parallel.") == ["parallel.async"]
    assert set(matches("mma.")) == {name for name in OPERATIONS if name.startswith("mma.")}


def test_completion_of_view_methods_after_a_name() -> None:
    assert matches("lhs.sub") == ["lhs.subspan"]
    assert matches("x.chunkat(i).a") == ["at"]
    assert matches("stage[0].s") == ["span", "span_as", "sqz", "step", "subspan"]


def test_completion_of_words_and_names_from_earlier_cells() -> None:
    assert matches("  f1") == ["f16"]
    assert matches("para") == ["parallel"]
    assert matches("x = matm", ("matmul", "TILE_M")) == ["matmul"]
    assert matches("TIL", ("matmul", "TILE_M")) == ["TILE_M"]
    # Names of the cell itself, except the word being typed.
    assert matches("f32 [4] accum;\nacc") == ["accum"]
    reply = complete("x = ad more", 6, ("add",))
    assert (reply["cursor_start"], reply["cursor_end"], reply["matches"]) == (4, 6, ["add"])


def header_matches(code: str, cursor: int | None = None) -> list[str] | None:
    reply = complete_options(split_cell(code), len(code) if cursor is None else cursor)
    return None if reply is None else list(reply["matches"])


def test_completion_on_the_choreo_line_offers_its_options() -> None:
    assert header_matches("%%choreo --") == ["--cuda", "--graph", "--ptx", "--sass", "--target"]
    assert header_matches("%%choreo --graph -") == ["--cuda", "--graph", "--ptx", "--sass", "--target", "-D"]
    assert header_matches("%%choreo --target ") == ["auto", "cuda", "sim"]
    assert header_matches("%%choreo --target s") == ["sim"]
    assert header_matches("%%choreo --target=c") == ["--target=cuda"]
    assert header_matches("%%choreo") == []  # no space yet: an option would run into the word
    # The cursor on the header of a longer cell; below the header the Choreo words complete.
    cell = "%%choreo --gr\n__co__ void f() {}"
    assert header_matches(cell, len("%%choreo --gr")) == ["--graph"]
    assert header_matches(cell, len(cell) - 3) is None
    reply = complete_options(split_cell("%%choreo --graph --t"), len("%%choreo --graph --t"))
    assert (reply["cursor_start"], reply["cursor_end"]) == (17, 20)


def help_for(
    code: str, cursor: int | None = None, functions: dict | None = None, macros: dict | None = None
) -> str | None:
    return help_at(code, len(code) if cursor is None else cursor, functions or {}, macros or {})


def test_help_for_operations_keywords_and_types() -> None:
    assert help_for("la = tma.load.async.swiz<128> lhs => ls;", 8).startswith("tma.load.async:")
    assert help_for("  parallel p by 4", 4).startswith("parallel:")
    assert help_for("f16") == "`f16` an element type of 2 bytes (`%docs types`)."
    assert help_for("f8") == "`f8` is an alias of f8_e4m3 (`%docs types`)."
    assert help_for("cdiv(M, 64)", 2).startswith("cdiv:")
    assert help_for("nothing_known") is None
    assert help_for("   ", 1) is None


def test_every_help_names_a_docs_page_that_exists() -> None:
    """The help says where to read more, `%docs PAGE`; a renamed page must not leave it dangling."""
    texts = [
        *KEYWORDS.values(),
        *OPERATIONS.values(),
        *VIEW_METHODS.values(),
        *BUILTIN_HELP.values(),
        *(element_type_help(name) for name in ELEMENT_TYPES),
    ]
    for text in texts:
        named = re.findall(r"`%docs ([\w-]+)`", text)
        assert named, f"no docs page in: {text}"
        for name in named:
            assert name in docs.pages(), f"'{text}' names the docs page '{name}', which does not exist"


def test_help_for_a_dotted_name_follows_the_cursor() -> None:
    code = "lhs.subspan(64, 64)"
    assert help_for(code, 1) is None  # `lhs` is a name of the cell, not a known word
    assert help_for(code, 6).startswith(".subspan:")


def test_help_for_compiled_functions_and_macros() -> None:
    class Function:
        __doc__ = "f32 [M] f(f32 [M] a): 1 kernel, 32 threads/block, no shared memory"

    # In code spans: Markdown would read `__co__` as bold and `#define` as a heading.
    assert help_for("f", functions={"f": Function()}) == f"`__co__ {Function.__doc__}`"
    assert help_for("TILE", macros={"TILE": "64"}) == "`#define TILE 64`"
