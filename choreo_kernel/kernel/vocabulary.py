"""The words of Choreo that completion offers and Shift-Tab explains, each with one line of help.

Help text paraphrases the language reference (docs/reference) and ends with the `%docs PAGE`
that says more (tests/test_kernel_help.py checks that each page exists); element types and
built-ins come from the compiler itself so the two lists cannot drift apart.
"""

from __future__ import annotations

from choreo_kernel.compiler.analysis.builtins import ATOMIC_BUILTINS, BUILTINS
from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES, SUB_BYTE_BITS
from choreo_kernel.compiler.parser import TYPE_ALIASES
from choreo_kernel.compiler.semantics.math import MATH_FUNCTIONS

KEYWORDS = {
    "__co__": "`__co__ RET NAME(PARAMS) { ... }` defines a Choreo function, callable from Python (`%docs programs`).",
    "parallel": "`parallel {i, j} by [M, N] : block { ... }` runs its body once per instance of a level: "
    "block, group-4 (warpgroup), group (warp) or thread (`%docs parallelism`).",
    "by": "`parallel x by N` gives the number of instances of a parallel level (`%docs parallelism`).",
    "inthreads": "`inthreads (t < 64) { ... }` predicates a region on parallel variables; "
    "`inthreads.async` makes it an independent path (`%docs parallelism`).",
    "foreach": "`foreach k in [K / 64] { ... }` loops over a bounded range; `foreach x(1:)` slices "
    "a bounded variable (`%docs control`).",
    "in": "`foreach k in [N]`, `with x in 128`: the extent of a loop or bounded variable (`%docs control`).",
    "with": "`with x in 128 { ... }` binds a bounded variable without iterating it (`%docs control`).",
    "if": "`if (cond) { ... } else { ... }` (`%docs control`).",
    "else": "the other branch of an `if` (`%docs control`).",
    "while": "`while (cond) { ... }` (`%docs control`).",
    "break": "leaves the innermost loop (`%docs control`).",
    "continue": "goes on with the next iteration of the innermost loop (`%docs control`).",
    "return": "returns a host-level buffer, a parameter or a future's `.data` (`%docs programs`).",
    "wait": "`wait f;` observes a future; `wait e.at(k);` waits for an event generation "
    "(`%docs futures`, `%docs events`).",
    "trigger": "`trigger e;` completes an event generation; `trigger e after f;` binds it to an async "
    "operation's completion (`%docs events`).",
    "after": "`dma.copy.async src => dst after f` orders a copy after `f` without a wait; "
    "`trigger e after f` publishes `f` on event `e` (`%docs copies`, `%docs events`).",
    "event": "`shared event full[2], empty[2] = ready;` declares events or a ring of them (`%docs events`).",
    "shared": "storage of one instance per block (a buffer, an event), or `=> shared` to let the compiler "
    "allocate a copy's destination (`%docs types`, `%docs copies`).",
    "local": "storage of one instance per thread, declared in a thread-level scope (`%docs types`).",
    "global": "device memory: host-level buffers, and parameters used in place (`%docs programs`, `%docs types`).",
    "mutable": "`mutable int k = 0;` a scalar that can be re-assigned and incremented (`%docs types`).",
    "mdspan": "`mdspan<2> s : [128, 64];` a shape (`%docs tuples`).",
    "ituple": "`ituple<3> t = {1, 2, 3};` an integer tuple; `{t, 5}` concatenates, `t {(1), (0)}` "
    "permutes (`%docs tuples`).",
    "stream": "`stream s` a parameter that takes a CUDA stream (a CuPy stream, or None); `parallel<s>` "
    "launches a kernel on it (`%docs parallelism`).",
    "void": "a function that returns nothing (`%docs programs`).",
    "auto": "a return type inferred from the `return` statement (`%docs programs`).",
    "true": "the boolean literal true (`%docs types`).",
    "false": "the boolean literal false (`%docs types`).",
    "ready": "`= ready` starts an event with generation zero complete (`%docs events`).",
    "block": "the parallel level of a CUDA thread block (CTA) (`%docs parallelism`).",
    "thread": "the parallel level of single threads (`%docs parallelism`).",
    "group": "the parallel level of a warp, 32 threads; `group-4` is a warpgroup of 128 (`%docs parallelism`).",
    "call": "`call f(x);`, `mutable int r = call ns::g<f32, 64>(a.data, |a.span|);` calls a C++ device "
    "function of the file's C++ part or of a %%cuda cell, in each thread that runs it: scalars by value, "
    "data as a pointer to its first element (`%docs device-code`).",
    "__asm__": '`__asm__ volatile("mov.u32 %0, %1;" : "=r"(x) : "r"(v));` inline PTX (GNU extended asm), '
    "emitted as written on CUDA; the sim has no meaning for it (give it an equivalent under "
    "`#ifdef __CHOREO_SIM__`; `%docs device-code`).",
    "yield": "`yield;` the thread leaves its kernel: nothing after it runs in that thread (`%docs control`).",
    "assert": '`assert(cond, "message");` checked at compile time where the condition is known, else when it '
    "runs (before the kernels at host level); a failure is an error naming the statement (`%docs control`).",
    "print": '`print(a, " ", b);` writes its arguments when it runs, once per instance of its level; '
    "`print!` writes what the compiler knows of them, as it compiles (`%docs printing`).",
    "println": "`println(...)` is `print(...)` and a new line; `println!` prints at compile time (`%docs printing`).",
    "cooperative": "`parallel b by N : block<cooperative>` launches every block at once, so that "
    "`sync.barrier : block` can make the whole grid meet (`%docs control`, `%docs hints`).",
    "frag": "`frag f32[64] m {-inf};` registers of a warpgroup laid out as an MMA accumulator: a row vector "
    "[M] or a tile [M, N], read and written inside `apply` (`%docs mma`).",
    "apply": "`apply {i, j} in acc.span acc.at(i, j) *= s.at(i);` a statement for every element of an "
    "accumulator or fragment, at logical (i, j) (`%docs mma`).",
    "reduce_max": "`reduce_max(m, acc, 1);` each row's maximum of a tile into a row vector (`%docs mma`).",
    "reduce_sum": "`reduce_sum(l, acc, 1);` each row's sum of a tile into a row vector (`%docs mma`).",
    "inf": "the float infinity; `-inf` starts a running maximum (`%docs mma`).",
}

OPERATIONS = {
    "dma.copy": "`dma.copy SRC => DST;` a synchronous copy between memory levels (`%docs copies`).",
    "dma.copy.async": "`f = dma.copy.async SRC => DST;` an async copy: a data future to wait (`%docs copies`, `%docs futures`).",
    "dma.any": "`next = dma.any;` a placeholder data future, for `swap` rotations (`%docs copies`).",
    "dma.pad": "`dma.pad<{low...}, {high...}, {0, ...}, v> SRC => DST;` copies SRC into DST at `low`, the "
    "rest of DST being v; `=> shared` sizes DST from the padding (`%docs copies`).",
    "dma.transp": "`dma.transp<1, 0> SRC => DST;` copies with the dimensions permuted: DST dimension k is "
    "SRC dimension p_k (`%docs copies`).",
    "tma.load": "`tma.load SRC => DST;` a Hopper bulk tensor copy, global to shared (`%docs copies`).",
    "tma.load.async": "`f = tma.load.async.swiz<128> SRC => DST;` an async TMA load; it can complete an "
    "event with `trigger e after f` (`%docs copies`, `%docs events`).",
    "tma.load.async.evict_first": "`f = tma.load.async.evict_first.swiz<128> SRC => DST;` a TMA load that "
    "asks L2 to evict its data first (read once); `.evict_last` keeps it (`%docs copies`).",
    "tma.copy": "`tma.copy SRC => DST;` a bulk tensor store, shared to global (`%docs copies`).",
    "tma.copy.async": "`f = tma.copy.async SRC => DST;` an async bulk tensor store (`%docs copies`).",
    "mma.fill": "`acc = mma.fill.f32 0.0f;` an accumulator; `mma.fill acc, 0.0f;` resets one (`%docs mma`).",
    "mma.fill.f32": "`acc = mma.fill.f32 0.0f;` an f32 accumulator (`%docs mma`).",
    "mma.fill.f16": "`acc = mma.fill.f16 0.0f;` an f16 accumulator (`%docs mma`).",
    "mma.row.row": "`mma.row.row acc, a, b;` acc += a * b^T with a [M, K] and b [N, K] (`%docs mma`).",
    "mma.row.col": "`mma.row.col acc, a, b;` acc += a * b with a [M, K] and b [K, N] (`%docs mma`).",
    "mma.col.row": "`mma.col.row acc, a, b;` A is [K, M], B is [N, K] (`%docs mma`).",
    "mma.col.col": "`mma.col.col acc, a, b;` A is [K, M], B is [K, N] (`%docs mma`).",
    "mma.row.row.async": "`op = mma.row.row.async acc, a, b;` an operation future, waited with `wait op` "
    "(`%docs futures`, `%docs mma`).",
    "mma.row.col.async": "`op = mma.row.col.async acc, a, b;` an operation future (`%docs mma`).",
    "mma.load": "`frag = mma.load.swiz<128> tile;` an explicit operand fragment (`%docs mma`).",
    "mma.store": "`mma.store acc, out_view;` stores an accumulator, converted to the view's type (`%docs mma`).",
    "mma.store.mask": "`mma.store.mask acc, out_view, rows, cols;` stores only the first rows and columns: "
    "the tail of a tile that reaches past the array (`%docs mma`).",
    "parallel.async": "`parallel.async b by 132 : block { ... }` launches without synchronizing the host "
    "(`%docs parallelism`).",
    "inthreads.async": "`inthreads.async (wg == 0) { ... }` an independent async path (`%docs parallelism`).",
    "sync.shared": "`sync.shared;` a barrier of all threads of the block (`%docs parallelism`).",
    "sync.barrier": "`sync.barrier : L;` the threads of an instance of L meet (group: a warp, group-4: a "
    "warpgroup, block: the block, or the whole grid in a block<cooperative> kernel) (`%docs control`).",
    "sync.fence": "`sync.fence : L;` this thread's earlier memory writes are seen before its later ones by "
    "the threads of the block (thread, group, group-4) or of the device (block, device) (`%docs control`).",
}

VIEW_METHODS = {
    "chunkat": "`x.chunkat(i, j)` splits each dimension into #i, #j tiles and takes tile (i, j) (`%docs views`).",
    "subspan": "`x.subspan(a, b).at(i, j)` tiles of extent a x b, tile (i, j) (`%docs views`).",
    "step": "`x.subspan(a, b).step(sa, sb)` sets the tile stride (`%docs views`).",
    "at": "`x.at(i, j)` an element, or a sub-array with fewer indices; `e.at(order)` a ring event (`%docs views`, `%docs events`).",
    "view": "`x.view(a, b).from(o0, o1)` a window of extent a x b; `x.view(a, b : sa, sb)` with element "
    "strides of its own (`%docs views`).",
    "sqz": "`x.subspan(1, S, 1, D).at(b, 0, h, 0).sqz()` the view without its dimensions of extent 1 "
    "(`%docs views`).",
    "from": "`x.view(a, b).from(o0, o1)` the window's element offset (`%docs views`).",
    "span_as": "`x.span_as([a, b])` the same elements, reshaped (`%docs views`).",
    "modspan": "`x.modspan(a, b)` what whole a x b tiles leave of `x` (extent dim % a), where they end; "
    "`.at(i, j)` places it at element (i * a, j * b) (`%docs views`).",
    "span": "`x.span` the shape of spanned data or of a data future's destination (`%docs types`, `%docs futures`).",
    "data": "`f.data` the destination of a data future (`%docs futures`).",
}

ELEMENT_TYPES = (*ELEMENT_BYTES, *TYPE_ALIASES)

_TYPE_HELP = {
    "f8": "an alias of f8_e4m3",
    "int": "a 32-bit signed integer (s32)",
    "float": "f32",
    "double": "f64",
    "half": "f16",
    "bfp16": "bf16",
}
assert set(_TYPE_HELP) == set(TYPE_ALIASES), "every type alias of the compiler has help"

BUILTIN_HELP = {
    "cdiv": "`cdiv(a, b)` integer division rounding up (`%docs expressions`).",
    "swap": "`swap(cur, next);` exchanges two futures and their buffers (`%docs copies`).",
    "rotate": "`rotate(a, b, c);` moves futures and their buffers one name along, as `swap` does for two "
    "(`%docs copies`).",
    "select": "`select(k, a, b, ...)` the k-th of buffers or views of one type (or of data futures' data); "
    "a factor the compiler cannot bound is checked when it runs (`%docs select`).",
    **{
        function.name: f"`{function.name}({', '.join('xyz'[: function.arity])})` {function.help} (`%docs numerics`)."
        for function in MATH_FUNCTIONS.values()
    },
    **{
        name: f"`{name}(x.at(i), {'compare, ' if name == '__atomic_cas' else ''}v)` the atomic "
        f"{name.removeprefix('__atomic_')} of one element of shared or global data, for each thread that "
        "runs it; the element's old value (`%docs device-code`)."
        for name in ATOMIC_BUILTINS
    },
}
assert set(BUILTIN_HELP) == set(BUILTINS), "every compiler built-in has help"

FAMILIES = ("dma", "tma", "mma")


def element_type_help(name: str) -> str:
    """One line about an element type: its size, or what it stands for."""
    if name in _TYPE_HELP:
        return f"`{name}` is {_TYPE_HELP[name]} (`%docs types`)."
    if name in SUB_BYTE_BITS:
        return f"`{name}` an element type of {SUB_BYTE_BITS[name]} bits, stored one per byte (`%docs types`)."
    size = ELEMENT_BYTES[name]
    return f"`{name}` an element type of {size} byte{'s' * (size != 1)} (`%docs types`)."


def words() -> list[str]:
    """Every undotted word that may start a token: keywords, types, built-ins, operation families."""
    return [*KEYWORDS, *ELEMENT_TYPES, *BUILTIN_HELP, *FAMILIES, "sync"]
