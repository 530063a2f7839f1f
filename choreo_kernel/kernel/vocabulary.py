"""The words of Choreo that completion offers and Shift-Tab explains, each with one line of help.

Help text paraphrases the language reference (spec/language.md, futures.md, events.md) and
names the section to read next; element types and built-ins come from the compiler itself so
the two lists cannot drift apart.
"""

from __future__ import annotations

from choreo_kernel.compiler.analysis.builtins import BUILTINS, MATH_BUILTINS
from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES
from choreo_kernel.compiler.parser import TYPE_ALIASES

KEYWORDS = {
    "__co__": "`__co__ RET NAME(PARAMS) { ... }` defines a Choreo function, callable from Python (language.md 2).",
    "parallel": "`parallel {i, j} by [M, N] : block { ... }` runs its body once per instance of a level: "
    "block, group-4 (warpgroup), group (warp) or thread (language.md 4.1).",
    "by": "`parallel x by N` gives the number of instances of a parallel level (language.md 4.1).",
    "inthreads": "`inthreads (t < 64) { ... }` predicates a region on parallel variables; "
    "`inthreads.async` makes it an independent path (language.md 4.2).",
    "foreach": "`foreach k in [K / 64] { ... }` loops over a bounded range; `foreach x(1:)` slices "
    "a bounded variable (language.md 4.3).",
    "in": "`foreach k in [N]`, `with x in 128`: the extent of a loop or bounded variable (language.md 4.3).",
    "with": "`with x in 128 { ... }` binds a bounded variable without iterating it (language.md 4.3, 12.8).",
    "if": "`if (cond) { ... } else { ... }` (language.md 4.3).",
    "else": "the other branch of an `if` (language.md 4.3).",
    "while": "`while (cond) { ... }` (language.md 4.3).",
    "break": "leaves the innermost loop (language.md 4.3).",
    "continue": "goes on with the next iteration of the innermost loop (language.md 4.3).",
    "return": "returns a host-level buffer, a parameter or a future's `.data` (language.md 2).",
    "wait": "`wait f;` observes a future; `wait e.at(k);` waits for an event generation "
    "(futures.md, events.md, language.md 7-8).",
    "trigger": "`trigger e;` completes an event generation; `trigger e after f;` binds it to an async "
    "operation's completion (events.md, language.md 8).",
    "after": "`dma.copy.async src => dst after f` orders a copy after `f` without a wait; "
    "`trigger e after f` publishes `f` on event `e` (language.md 6, 8).",
    "event": "`shared event full[2], empty[2] = ready;` declares events or a ring of them (events.md, language.md 8).",
    "shared": "storage of one instance per block (a buffer, an event), or `=> shared` to let the compiler "
    "allocate a copy's destination (language.md 3.5, 6).",
    "local": "storage of one instance per thread, declared in a thread-level scope (language.md 3.5).",
    "global": "device memory: host-level buffers, and parameters used in place (language.md 2, 3.5).",
    "mutable": "`mutable int k = 0;` a scalar that can be re-assigned and incremented (language.md 3.2).",
    "mdspan": "`mdspan<2> s : [128, 64];` a shape (language.md 3.3).",
    "ituple": "`ituple<3> t = {1, 2, 3};` an integer tuple (language.md 3.3).",
    "void": "a function that returns nothing (language.md 2).",
    "auto": "a return type inferred from the `return` statement (language.md 2).",
    "true": "the boolean literal true (language.md 3.2).",
    "false": "the boolean literal false (language.md 3.2).",
    "ready": "`= ready` starts an event with generation zero complete (events.md, language.md 8).",
    "block": "the parallel level of a CUDA thread block (CTA) (language.md 4.1).",
    "thread": "the parallel level of single threads (language.md 4.1).",
    "group": "the parallel level of a warp, 32 threads; `group-4` is a warpgroup of 128 (language.md 4.1).",
}

OPERATIONS = {
    "dma.copy": "`dma.copy SRC => DST;` a synchronous copy between memory levels (language.md 6).",
    "dma.copy.async": "`f = dma.copy.async SRC => DST;` an async copy: a data future to wait (language.md 6-7).",
    "dma.any": "`next = dma.any;` a placeholder data future, for `swap` rotations (language.md 6).",
    "tma.load": "`tma.load SRC => DST;` a Hopper bulk tensor copy, global to shared (language.md 6).",
    "tma.load.async": "`f = tma.load.async.swiz<128> SRC => DST;` an async TMA load; it can complete an "
    "event with `trigger e after f` (language.md 6, 8).",
    "tma.copy": "`tma.copy SRC => DST;` a bulk tensor store, shared to global (language.md 6).",
    "tma.copy.async": "`f = tma.copy.async SRC => DST;` an async bulk tensor store (language.md 6).",
    "mma.fill": "`acc = mma.fill.f32 0.0f;` an accumulator; `mma.fill acc, 0.0f;` resets one (language.md 9).",
    "mma.fill.f32": "`acc = mma.fill.f32 0.0f;` an f32 accumulator (language.md 9).",
    "mma.fill.f16": "`acc = mma.fill.f16 0.0f;` an f16 accumulator (language.md 9).",
    "mma.row.row": "`mma.row.row acc, a, b;` acc += a * b^T with a [M, K] and b [N, K] (language.md 9).",
    "mma.row.col": "`mma.row.col acc, a, b;` acc += a * b with a [M, K] and b [K, N] (language.md 9).",
    "mma.col.row": "`mma.col.row acc, a, b;` A is [K, M], B is [N, K] (language.md 9).",
    "mma.col.col": "`mma.col.col acc, a, b;` A is [K, M], B is [K, N] (language.md 9).",
    "mma.row.row.async": "`op = mma.row.row.async acc, a, b;` an operation future, waited with `wait op` "
    "(futures.md, language.md 9).",
    "mma.row.col.async": "`op = mma.row.col.async acc, a, b;` an operation future (language.md 9).",
    "mma.load": "`frag = mma.load.swiz<128> tile;` an explicit operand fragment (language.md 9).",
    "mma.store": "`mma.store acc, out_view;` stores an accumulator, converted to the view's type (language.md 9).",
    "parallel.async": "`parallel.async b by 132 : block { ... }` launches without synchronizing the host "
    "(language.md 4.1).",
    "inthreads.async": "`inthreads.async (wg == 0) { ... }` an independent async path (language.md 4.2).",
    "sync.shared": "`sync.shared;` a barrier of all threads of the block (language.md 4.2).",
}

VIEW_METHODS = {
    "chunkat": "`x.chunkat(i, j)` splits each dimension into #i, #j tiles and takes tile (i, j) (language.md 5).",
    "subspan": "`x.subspan(a, b).at(i, j)` tiles of extent a x b, tile (i, j) (language.md 5).",
    "step": "`x.subspan(a, b).step(sa, sb)` sets the tile stride (language.md 5).",
    "at": "`x.at(i, j)` an element, or a sub-array with fewer indices; `e.at(order)` a ring event (language.md 5, 8).",
    "view": "`x.view(a, b).from(o0, o1)` a window of extent a x b (language.md 5).",
    "from": "`x.view(a, b).from(o0, o1)` the window's element offset (language.md 5).",
    "span_as": "`x.span_as([a, b])` the same elements, reshaped (language.md 5).",
    "span": "`x.span` the shape of spanned data or of a data future's destination (language.md 3.3, 7).",
    "data": "`f.data` the destination of a data future (language.md 7).",
}

ELEMENT_TYPES = (*ELEMENT_BYTES, *TYPE_ALIASES)

_TYPE_HELP = {"f8": "an alias of f8_e4m3", "int": "a 32-bit signed integer (s32)", "float": "f32"}
assert set(_TYPE_HELP) == set(TYPE_ALIASES), "every type alias of the compiler has help"

BUILTIN_HELP = {
    "cdiv": "`cdiv(a, b)` integer division rounding up (language.md 10).",
    "swap": "`swap(cur, next);` exchanges two futures and their buffers (language.md 6).",
    "rotate": "`rotate(a, b, c);` moves futures and their buffers one name along, as `swap` does for two.",
    **{
        name: f"`{name}(x)` element-wise math on floating element types (language.md 10)."
        for name in MATH_BUILTINS
    },
}
assert set(BUILTIN_HELP) == set(BUILTINS), "every compiler built-in has help"

FAMILIES = ("dma", "tma", "mma")


def element_type_help(name: str) -> str:
    """One line about an element type: its size, or what it stands for."""
    if name in _TYPE_HELP:
        return f"`{name}` is {_TYPE_HELP[name]} (language.md 3.1)."
    size = ELEMENT_BYTES[name]
    return f"`{name}` an element type of {size} byte{'s' * (size != 1)} (language.md 3.1)."


def words() -> list[str]:
    """Every undotted word that may start a token: keywords, types, built-ins, operation families."""
    return [*KEYWORDS, *ELEMENT_TYPES, *BUILTIN_HELP, *FAMILIES, "sync"]
