"""What the parts of one kernel's lowering share: the function's analysis, the names and bindings
made so far, the writer, the launch's threads, the events and the shared-memory arena.

The statement emitter (statements.py) is one of these, and hands itself to the TMA and WGMMA
lowerings (tma.py, wgmma.py), which need only what is here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES, Symbol
from choreo_kernel.compiler.cuda import cexpr, elements
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.events import Events
from choreo_kernel.compiler.cuda.expressions import Expressions, root_name
from choreo_kernel.compiler.cuda.plan import WaitSite
from choreo_kernel.compiler.cuda.roles import elected_paths
from choreo_kernel.compiler.cuda.swizzles import shared_swizzles
from choreo_kernel.compiler.cuda.threads import Group, KernelThreads
from choreo_kernel.compiler.cuda.views import Lowered, LoweringError, View, buffer, element_count
from choreo_kernel.compiler.cuda.writer import CodeWriter, Names
from choreo_kernel.compiler.semantics.levels import Storage

SHARED_ALIGNMENT = 128  # bytes: what a TMA copy needs of its shared side
SWIZZLED_ALIGNMENT = 1024  # bytes: a swizzle pattern repeats every 1024 bytes of the shared address space


@dataclass
class Arena:
    """All shared buffers and events of a block, at fixed offsets in one dynamic shared allocation."""

    size: int = 0
    alignment: int = SHARED_ALIGNMENT
    entries: list[tuple[str, int, int]] = field(default_factory=list)  # name, offset, bytes

    def allocate(self, name: str, size: int, alignment: int = SHARED_ALIGNMENT) -> int:
        offset = -(-self.size // alignment) * alignment
        self.size = offset + size
        self.alignment = max(self.alignment, alignment)
        self.entries.append((name, offset, size))
        return offset


class KernelContext:
    """The state of one kernel's lowering, and the helpers every part of it uses."""

    def __init__(
        self,
        info: FunctionInfo,
        kernel: ast.Parallel,
        bindings: dict[Symbol, Lowered],
        names: Names,
        wait_sites: list[WaitSite],
    ) -> None:
        self.info = info
        self.kernel = kernel
        self.bindings = bindings
        self.names = names
        self.out = CodeWriter(indent=1)
        self.expressions = Expressions(info, bindings)
        self.threads = KernelThreads(info, kernel)
        self.elected_paths = elected_paths(info, kernel)  # paths one thread per instance runs
        self.events = Events(info, kernel, self.threads, self.expressions, wait_sites)
        self.arena = Arena()
        self.shared_memory = names.fresh("shared_memory")
        self.status = names.fresh("status")
        self.written: set[Symbol] = set()
        self.positions = {  # each statement of a block: the block and its index there
            id(item): (block, index)
            for block in ast.walk_statements(kernel)
            if isinstance(block, ast.Block)
            for index, item in enumerate(block.body)
        }
        self.swizzles = shared_swizzles(info, kernel)
        self.in_elected_path = False  # inside a path that one elected thread per instance runs

    def _group(self, stmt: ast.Stmt) -> Group:
        return self.threads.group(self.info.context_of[id(stmt)])

    def elected(self, stmt: ast.Stmt) -> CExpr | None:
        """The condition that picks the thread issuing a TMA copy for its instance; None where the
        statement's threads are that thread already."""
        if self.in_elected_path:
            return None
        return self.threads.elected(self.info.context_of[id(stmt)])

    def _divergent(self, stmt: ast.Stmt) -> bool:
        """Inside an `inthreads` that picks threads below the block: no block-wide barrier may be emitted."""
        context = self.info.context_of[id(stmt)]
        return bool(context.predicates) and context.below_block

    def destination(self, stmt: ast.OperationStmt, source: View, swizzle: int = 0) -> View:
        """The destination view; `=> shared` and `=> local` allocate one shaped like the source (in the
        `swizzle`-byte layout a TMA load names, or the one an MMA that reads `f.data` needs)."""
        expr = stmt.operation.destination
        assert expr is not None
        storage = self.info.allocates.get(id(stmt.operation))
        if storage is None:
            return self.expressions.view(expr)
        future = self.info.symbol_of.get(id(stmt.result)) if stmt.result is not None else None
        swizzle = swizzle or (self.swizzles.get(future, 0) if future is not None else 0)
        total = element_count(source.dims)
        if total.value is None:
            raise LoweringError(f"'=> {storage}' needs a source whose size is known at compile time", stmt)
        base = stmt.result.id if stmt.result is not None else f"copy_line{stmt.span.line}"
        name = self.names.fresh(f"{base}_data")
        element = elements.c_type(source.elem)
        if storage == Storage.SHARED:
            alignment = SWIZZLED_ALIGNMENT if swizzle else SHARED_ALIGNMENT
            offset = self.arena.allocate(name, total.value * ELEMENT_BYTES[source.elem], alignment)
            self.out.line(
                f"{element}* const {name} = reinterpret_cast<{element}*>({self.shared_memory} + {offset});"
            )
        else:
            self.out.line(f"{element} {name}[{total.value}];")
        return buffer(source.elem, cexpr.name(name), source.dims, storage, name, swizzle)

    def note_written(self, target: ast.Expr) -> None:
        root = root_name(target)
        if root is not None and id(root) in self.info.symbol_of:
            self.written.add(self.info.symbol_of[id(root)])
