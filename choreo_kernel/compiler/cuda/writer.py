"""The emitter's pen: indentation, source-line comments, and names that cannot collide."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from choreo_kernel.compiler import ast, printer

_CPP_KEYWORDS = """
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class
compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype
default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public
register reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch
template this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
wchar_t while xor xor_eq
"""
# Names the emitted code itself refers to without qualification.
_CUDA_NAMES = """
threadIdx blockIdx blockDim gridDim warpSize choreo std main
__syncthreads __syncwarp expf exp logf log sqrtf sqrt rsqrtf rsqrt tanhf tanh
"""
RESERVED = frozenset((_CPP_KEYWORDS + _CUDA_NAMES).split())


class Names:
    """C names for one kernel: source names kept (unless C++ reserves them), generated ones made unique.

    A local keeps its source name unless a variable of that C name is visible where it is declared
    (a parameter, or a local of an enclosing block): Choreo's `int a = a + 5;` shadowing parameter
    `a` reads the parameter in its initializer, where C would read the new variable.
    """

    def __init__(self, source_names: Iterable[str], visible: Iterable[str] = ()) -> None:
        self.taken = set(source_names) | RESERVED
        self.scopes: list[set[str]] = [set(visible)]  # the C names declared in each open block
        self.pending: set[str] = set()  # declared by the head of the next block (a for loop's variable)

    def source(self, name: str) -> str:
        return f"{name}_" if name in RESERVED else name

    def local(self, name: str, in_next_block: bool = False) -> str:
        """The C name of a variable declared here (or, with `in_next_block`, by the head of the block
        about to open): the source name when no visible variable has it, else a fresh one."""
        c_name = self.source(name)
        if c_name in self.pending or any(c_name in scope for scope in self.scopes):
            c_name = self.fresh(name)
        (self.pending if in_next_block else self.scopes[-1]).add(c_name)
        return c_name

    def enter(self) -> None:
        self.scopes.append(self.pending)
        self.pending = set()

    def leave(self) -> None:
        self.scopes.pop()

    def fresh(self, base: str) -> str:
        candidate = base
        suffix = 1
        while candidate in self.taken:
            suffix += 1
            candidate = f"{base}_{suffix}"
        self.taken.add(candidate)
        return candidate


def source_names(function: ast.Function) -> set[str]:
    """Every identifier of a function's source: generated names must avoid them all."""
    names = {function.name, *(param.name for param in function.params)}
    pending: list[object] = [function.body, *function.params]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name):
            names.add(node.id)
        if isinstance(node, ast.Node):
            for value in vars(node).values():
                if isinstance(value, str) and value.isidentifier():
                    names.add(value)
                if isinstance(value, ast.Node):
                    pending.append(value)
                elif isinstance(value, tuple):
                    pending.extend(value)
    return names


class CodeWriter:
    """Lines of CUDA with indentation; every lowered statement starts with the Choreo line it implements."""

    def __init__(self, indent: int = 0, names: Names | None = None) -> None:
        self.lines: list[str] = []
        self.depth = indent
        self.names = names  # told when a C block opens and closes, for the names visible in it

    def line(self, text: str = "") -> None:
        self.lines.append(f"{'  ' * self.depth}{text}" if text else "")

    def source(self, stmt: ast.Stmt, note: str = "") -> None:
        """`// line 12: dma.copy a.chunkat(i) => tile;` (and why, when the lowering is not obvious)."""
        self.line(f"// line {stmt.span.line}: {printer.statement(stmt)}{f' ({note})' if note else ''}")

    @contextmanager
    def block(self, head: str) -> Iterator[None]:
        self.line(f"{head} {{" if head else "{")
        self.depth += 1
        if self.names is not None:
            self.names.enter()
        try:
            yield
        finally:
            if self.names is not None:
                self.names.leave()
            self.depth -= 1
            self.line("}")

    def text(self) -> str:
        return "\n".join(self.lines)
