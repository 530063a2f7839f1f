"""What the parts of one kernel's lowering share: the function's analysis, the names and bindings
made so far, the writer, the launch's threads, the events and the shared-memory arena.

The statement emitter (statements.py) is one of these, and hands itself to the TMA and WGMMA
lowerings (tma.py, wgmma.py), which need only what is here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from choreo_kernel.compiler import ast, printer
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.resolve.selection import SELECT
from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES, Symbol
from choreo_kernel.compiler.cuda import cexpr, elements
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.events import Events
from choreo_kernel.compiler.cuda.expressions import Expressions
from choreo_kernel.compiler.cuda.plan import WaitSite
from choreo_kernel.compiler.cuda.roles import elected_paths
from choreo_kernel.compiler.cuda.rotations import Rotations, rotation_groups
from choreo_kernel.compiler.cuda.swizzles import shared_swizzles
from choreo_kernel.compiler.cuda.threads import Group, KernelThreads
from choreo_kernel.compiler.cuda.views import (
    AccumulatorRegisters,
    Lowered,
    LoweringError,
    View,
    buffer,
    element_count,
)
from choreo_kernel.compiler.cuda.writer import CodeWriter, Names
from choreo_kernel.compiler.semantics.launch import UnknownSize
from choreo_kernel.compiler.semantics.levels import Storage

SHARED_ALIGNMENT = 128  # bytes: what a TMA copy needs of its shared side
SWIZZLED_ALIGNMENT = 1024  # bytes: a swizzle pattern repeats every 1024 bytes of the shared address space


@dataclass
class Arena:
    """All shared buffers and events of a block in one dynamic shared allocation: those of a size known at
    compile time at fixed offsets, then those whose size depends on the call's arguments (`=> shared` from a
    source of symbolic shape), one after another at offsets the kernel computes; the host evaluates the
    `dynamic_size` of a launch from its arguments."""

    size: int = 0
    alignment: int = SHARED_ALIGNMENT
    entries: list[tuple[str, int, int]] = field(default_factory=list)  # name, offset, bytes
    dynamic: list[tuple[str, CExpr, ast.Node]] = field(default_factory=list)  # name, bytes, the statement
    dynamic_size: CExpr = cexpr.ZERO  # bytes after the fixed part

    def allocate(self, name: str, size: int, alignment: int = SHARED_ALIGNMENT) -> int:
        offset = -(-self.size // alignment) * alignment
        self.size = offset + size
        self.alignment = max(self.alignment, alignment)
        self.entries.append((name, offset, size))
        return offset

    def allocate_dynamic(self, name: str, size: CExpr, node: ast.Node) -> CExpr:
        """The offset, after the fixed part, of `size` bytes whose count is known only at launch; every
        such buffer takes a multiple of SHARED_ALIGNMENT bytes, so each starts aligned."""
        offset = self.dynamic_size
        rounded = cexpr.multiply(
            cexpr.parenthesized(
                cexpr.binary(
                    "/", cexpr.add(size, cexpr.const(SHARED_ALIGNMENT - 1)), cexpr.const(SHARED_ALIGNMENT)
                )
            ),
            cexpr.const(SHARED_ALIGNMENT),
        )
        self.dynamic_size = cexpr.add(offset, rounded)
        self.dynamic.append((name, rounded, node))
        return offset

    @property
    def fixed_size(self) -> int:
        """Bytes of the fixed part, rounded so that the buffers after it start aligned."""
        return -(-self.size // SHARED_ALIGNMENT) * SHARED_ALIGNMENT


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
        self.out = CodeWriter(indent=1, names=names)
        self.expressions = Expressions(info, bindings)
        self.threads = KernelThreads(info, kernel, self.expressions.integer)
        self.elected_paths = elected_paths(info, kernel)  # paths one thread per instance runs
        self.events = Events(info, kernel, self.threads, self.expressions, wait_sites)
        self.expressions.check_select = self._check_select
        self.arena = Arena()
        self.shared_memory = names.fresh("shared_memory")
        self.shared_dynamic = names.fresh("shared_dynamic")  # where the buffers sized at launch start
        self.status = names.fresh("status")
        # local buffers sized at launch: each a slice per thread of a global scratch array the host
        # allocates for the launch (as Croqtile places them), by parameter name, with bytes per thread
        self.local_scratch: list[tuple[str, CExpr, ast.Node]] = []
        self.written: set[Symbol] = set()
        self.positions = {  # each statement of a block: the block and its index there
            id(item): (block, index)
            for block in ast.walk_statements(kernel)
            if isinstance(block, ast.Block)
            for index, item in enumerate(block.body)
        }
        self.swizzles = shared_swizzles(info, kernel)
        self.rotations = Rotations(rotation_groups(info, kernel))  # futures that swap/rotate move
        # WGMMA's A from registers, where the operand is a fragment (set by cuda/fragments.py)
        self.register_operand: Callable[[ast.Expr], AccumulatorRegisters | None] = lambda expr: None
        self.in_elected_path = False  # inside a path that one elected thread per instance runs
        # What the control statements (control.py) found: the grid barrier parameter where the kernel
        # syncs its grid, printf calls, yields, and the named barriers with the ids known.
        self.grid_barrier = names.fresh("grid_barrier")
        self.syncs_grid = False
        self.prints = False
        self.yields: list[ast.Yield] = []
        self.named_barriers: list[tuple[ast.NamedBarrier, int | None]] = []

    def _group(self, stmt: ast.Stmt) -> Group:
        return self.threads.group(self.info.context_of[id(stmt)])

    def elected(self, stmt: ast.Stmt) -> CExpr | None:
        """The condition that picks the thread issuing a TMA copy for its instance; None where the
        statement's threads are that thread already."""
        if self.in_elected_path:
            return None
        return self.threads.elected(self.info.context_of[id(stmt)])

    def _between_levels(self, stmt: ast.Stmt) -> bool:
        """Where the launch model runs `stmt` once per instance of a level: every thread of it runs it."""
        try:
            return self.threads.launch.execution_unit(self.info.context_of[id(stmt)]) > 1
        except UnknownSize:  # an instance of a size the arguments give: more than one thread
            return True

    def _divergent(self, stmt: ast.Stmt) -> bool:
        """Inside an `inthreads` that picks threads below the block: no block-wide barrier may be emitted."""
        context = self.info.context_of[id(stmt)]
        return bool(context.predicates) and context.below_block

    def destination(
        self, stmt: ast.OperationStmt, source: View, swizzle: int = 0, dims: tuple[CExpr, ...] | None = None
    ) -> View:
        """The destination view; `=> shared` and `=> local` allocate one shaped like the source, or of `dims`
        (a padded copy), in the `swizzle`-byte layout a TMA load names or an MMA that reads `f.data` needs."""
        expr = stmt.operation.destination
        assert expr is not None
        storage = self.info.allocates.get(id(stmt.operation))
        if storage is None:
            return self.expressions.view(expr)
        future = self.info.symbol_of.get(id(stmt.result)) if stmt.result is not None else None
        swizzle = self.swizzles.get(future, swizzle) if future is not None else swizzle
        dims = dims if dims is not None else source.dims
        base = stmt.result.id if stmt.result is not None else f"copy_line{stmt.span.line}"
        name = self.names.fresh(f"{base}_data")
        if storage == Storage.SHARED:
            self.out.line(self.shared_buffer(name, source.elem, dims, swizzle, stmt))
        else:
            self.out.line(self.local_buffer(name, source.elem, element_count(dims), stmt))
        own = buffer(source.elem, cexpr.name(name), dims, storage, name, swizzle)
        if future is None or future not in self.rotations.groups or storage != Storage.SHARED:
            return own
        return self.rotations.held_buffer(self, stmt, future, own)

    def local_buffer(self, name: str, elem: str, total: CExpr, node: ast.Stmt) -> str:
        """The declaration of a thread's local buffer `name` (a line of C): an array in registers, or, where
        the call's arguments give its size, the thread's slice of a global scratch array sized at launch."""
        element = elements.c_type(elem)
        if total.value is not None:
            copies = "  // one per thread" if self._between_levels(node) else ""
            return f"{element} {name}[{total.value}];{copies}"
        scratch = self.names.fresh(f"{name}_scratch")
        bytes_per_thread = cexpr.multiply(cexpr.const(ELEMENT_BYTES[elem]), total)
        self.local_scratch.append((scratch, bytes_per_thread, node))
        return (
            f"{element}* const {name} = reinterpret_cast<{element}*>({scratch}) + choreo::grid_thread() * "
            f"size_t({total.text});  // sized at launch: this thread's slice of global scratch"
        )

    def shared_buffer(
        self, name: str, elem: str, dims: tuple[CExpr, ...], swizzle: int, node: ast.Node
    ) -> str:
        """The declaration of a shared buffer's pointer `name` (a line of C): at a fixed offset of the arena,
        or, where its size depends on the call's arguments, after the fixed part (the launch sizes the arena)."""
        element = elements.c_type(elem)
        total = element_count(dims)
        if total.value is not None:
            alignment = SWIZZLED_ALIGNMENT if swizzle else SHARED_ALIGNMENT
            offset = self.arena.allocate(name, total.value * ELEMENT_BYTES[elem], alignment)
            layout = f"  // {swizzle}-byte swizzled layout, for TMA and WGMMA" if swizzle else ""
            return f"{element}* const {name} = reinterpret_cast<{element}*>({self.shared_memory} + {offset});{layout}"
        if swizzle:
            raise LoweringError(
                f"a {swizzle}-byte swizzled shared tile needs a size known at compile time (use a #define)",
                node,
            )
        size = cexpr.multiply(cexpr.const(ELEMENT_BYTES[elem]), total)
        start = cexpr.binary(
            "+", cexpr.name(self.shared_dynamic), self.arena.allocate_dynamic(name, size, node)
        )
        return f"{element}* const {name} = reinterpret_cast<{element}*>({start.text});  // sized at launch"

    def _check_select(self, factor: CExpr, count: int, select: ast.Call) -> CExpr:
        """A select factor checked when it runs: out of range, it reports this site to the host."""
        site = len(self.events.wait_sites)
        shown = printer.expression(select.args[0])
        failure = f"the select factor '{shown}' is not in bound [0, {count})"
        self.events.wait_sites.append(
            WaitSite("", select.span.line, printer.expression(select), "check", failure, select.span)
        )
        return cexpr.call(
            "choreo::checked_select", factor, cexpr.const(count), cexpr.name(self.status), cexpr.const(site)
        )

    def note_written(self, target: ast.Expr) -> None:
        if (
            isinstance(target, ast.Call)
            and isinstance(target.callee, ast.Name)
            and target.callee.id == SELECT
        ):
            for operand in target.args[1:]:  # writing the selection writes whichever it chose
                self.note_written(operand)
            return
        root = ast.root_name(target)
        if root is not None and id(root) in self.info.symbol_of:
            symbol = self.info.symbol_of[id(root)]
            self.written.add(symbol)
            declaration = symbol.declaration
            if isinstance(declaration, ast.Assign) and declaration.target is not root:
                self.note_written(declaration.value)  # `O_head = O.subspan(...)`: writing O_head writes O
