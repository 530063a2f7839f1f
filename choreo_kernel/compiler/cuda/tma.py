"""TMA: `tma.load` and `tma.copy` as bulk tensor copies (cp.async.bulk.tensor) with host-encoded tensor maps.

A copy moves one box of a global array. The box is the view's extent along each dimension of
the array (1 along the dimensions that `.at` dropped) and its coordinates are where the view
starts (views.py keeps both). The host encodes one tensor map per array, box and swizzle from
the array of each call (runtime/tensormap.py) and passes it as a `__grid_constant__` parameter.

One elected thread per instance of the level around the copy issues it (language.md 12.2).
A load's completion is an mbarrier phase:

- a load bound by `trigger E after f` lands on E's mbarrier. The trigger becomes one
  `mbarrier.arrive.expect_tx` with the bytes of all the loads it joins, and the loads are issued
  right after it, since the trigger is what names the barrier (starting an async copy a few
  statements later changes nothing observable: only the event can observe it). Where something
  between could change what the load addresses (a statement other than a load, or an order
  with a side effect such as `full.at(issued++)`), its address and coordinates are evaluated
  where the load is written;
- a load that is waited, or synchronous, lands on a barrier of its own (one per instance),
  whose phase each waiting thread tracks in a bit.

A store reads a shared tile that ordinary stores wrote: each thread makes its writes visible to
the copy engine (fence.proxy.async) before the instance synchronizes and the elected thread
issues the store; a synchronous store then waits for it to be written.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

from choreo_kernel.compiler import ast, printer
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES, Symbol
from choreo_kernel.compiler.cuda import cexpr, elements
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.context import KernelContext
from choreo_kernel.compiler.cuda.events import write_once
from choreo_kernel.compiler.cuda.plan import WaitSite
from choreo_kernel.compiler.cuda.rotations import held_variable
from choreo_kernel.compiler.cuda.views import FutureValue, LoweringError, View, element_count
from choreo_kernel.compiler.semantics.levels import Storage

MAX_BOX = 256  # elements per box dimension
MAX_RANK = 5  # dimensions of a tensor map
COORDINATE_NAMES = "xyzwv"  # innermost first, as TMA takes them


@dataclass(frozen=True)
class TensorMap:
    """A tensor-map kernel parameter: which array, its element type, the box (outermost first), the swizzle."""

    name: str
    symbol: Symbol
    element: str
    box: tuple[int, ...]
    swizzle: int


@dataclass(frozen=True)
class Copy:
    """One bulk tensor copy, ready to issue: its map, its coordinates (innermost first), its bytes."""

    map: TensorMap
    shared: CExpr  # the shared side's first element
    coordinates: tuple[CExpr, ...]
    bytes: int
    line: int
    text: str
    hint: str = ""  # an L2 hint of the load (`evict_first`, `evict_last`), or none
    panels: int = 1  # boxes one swizzle wide that make up a tile whose rows are wider (see _panels)
    panel_elements: int = 0  # elements of each
    multicast: int = 0  # `.multicast`: the blocks of the cluster it lands in (issued by rank 0)

    def _pieces(self) -> list[tuple[str, str]]:
        """The shared address and the coordinates of each box the copy moves."""
        pieces = []
        width = self.map.box[-1]
        for panel in range(self.panels):
            shared = cexpr.add(self.shared, cexpr.const(panel * self.panel_elements))
            inner = cexpr.add(self.coordinates[0], cexpr.const(panel * width))
            pieces.append((shared.text, ", ".join(c.text for c in (inner, *self.coordinates[1:]))))
        return pieces

    def load(self, barrier: str) -> list[str]:
        if self.multicast:
            mask = hex((1 << self.multicast) - 1)
            return [
                f"if (choreo::cluster_ctarank() == 0) choreo::tma_load_multicast({shared}, &{self.map.name}, {barrier}, "
                f"{mask}, {arguments});  // line {self.line}: into the same tile of all {self.multicast} blocks"
                for shared, arguments in self._pieces()
            ]
        if self.hint:
            return [
                f"choreo::tma_load_hinted({shared}, &{self.map.name}, {barrier}, choreo::l2_{self.hint}(), "
                f"{arguments});  // line {self.line}, .{self.hint}"
                for shared, arguments in self._pieces()
            ]
        return [
            f"choreo::tma_load({shared}, &{self.map.name}, {barrier}, {arguments});  // line {self.line}"
            for shared, arguments in self._pieces()
        ]

    def store(self) -> list[str]:
        return [
            f"choreo::tma_store(&{self.map.name}, {shared}, {arguments});"
            for shared, arguments in self._pieces()
        ]

    def evaluated(self, name: str) -> tuple[list[str], Copy]:
        """Lines that evaluate the address and coordinates now, into locals named after `name`, and the
        copy that uses them."""
        lines = [f"auto* const {name}_shared = {self.shared.text};"]
        coordinates = []
        for axis, coordinate in zip(COORDINATE_NAMES, self.coordinates):
            if coordinate.value is not None:
                coordinates.append(coordinate)
                continue
            lines.append(f"const int {name}_{axis} = {coordinate.text};")
            coordinates.append(cexpr.name(f"{name}_{axis}"))
        return lines, replace(self, shared=cexpr.name(f"{name}_shared"), coordinates=tuple(coordinates))


@dataclass(frozen=True)
class Landing:
    """The mbarriers (one per issuing instance) on which a waited TMA load lands, and this thread's phase bit."""

    name: str
    phase: str
    instance: CExpr
    address: str = ""  # the mbarrier's address where a rotated future holds it (rotations.py)

    @property
    def barrier(self) -> str:
        return self.address or f"&{self.name}[{self.instance.text}]"


@dataclass
class Tma:
    """The TMA copies of one kernel."""

    emitter: KernelContext
    maps: dict[tuple[Symbol, str, tuple[int, ...], int], TensorMap] = field(default_factory=dict)
    bound: set[Symbol] = field(default_factory=set)  # futures that a `trigger ... after` binds
    landings: dict[int, Landing] = field(default_factory=dict)  # id(load statement) -> its barriers
    future_landings: dict[Symbol, Landing] = field(default_factory=dict)
    pending: dict[Symbol, Copy] = field(default_factory=dict)  # bound loads, issued at their trigger
    stores: dict[Symbol, ast.OperationStmt] = field(default_factory=dict)  # async stores not yet waited
    # futures that an async store names somewhere: a wait on one that comes before the store in the
    # source (the previous iteration's store, drained late) is a bulk wait too
    store_futures: dict[Symbol, ast.OperationStmt] = field(default_factory=dict)

    # ------------------------------------------------------------------ before the body

    def prepare(self, kernel: ast.Parallel) -> None:
        """Find the bound futures, and give each waited load its barriers (initialized before the body)."""
        info = self.emitter.info
        loads = [
            s
            for s in ast.walk_statements(kernel)
            if isinstance(s, ast.OperationStmt) and _kind(self.emitter, s) == "tma-load"
        ]
        for stmt in ast.walk_statements(kernel):
            if isinstance(stmt, ast.Trigger):
                self.bound.update(info.symbol_of[id(f)] for f in stmt.after if id(f) in info.symbol_of)
            if (
                isinstance(stmt, ast.OperationStmt)
                and stmt.operation.is_async
                and _kind(self.emitter, stmt) == "tma-store"
            ):
                symbol = self._future_symbol(stmt)
                if symbol is not None:
                    self.store_futures.setdefault(symbol, stmt)
        out = self.emitter.out
        threads = self.emitter.threads
        inits: list[str] = []
        for stmt in loads:
            if self._future_symbol(stmt) in self.bound:
                continue
            context = info.context_of[id(stmt)]
            instances = threads.static_block_threads() // threads.issuing_size(context)
            root = ast.root_name(stmt.operation.destination)
            base = stmt.result.id if stmt.result is not None else root.id if root is not None else "tma"
            name = self.emitter.names.fresh(f"{base}_landed")
            offset = self.emitter.arena.allocate(name, 8 * instances, 8)
            landing = Landing(name, self.emitter.names.fresh(f"{name}_phase"), threads.instance(context))
            self.landings[id(stmt)] = landing
            out.source(stmt, f"lands on {name}, an mbarrier per issuing instance")
            out.line(
                f"choreo::mbarrier* const {name} = reinterpret_cast<choreo::mbarrier*>({self.emitter.shared_memory} + {offset});"
            )
            out.line(f"unsigned {landing.phase} = 0;  // the phase of {name} this thread waits for next")
            inits.extend(f"choreo::mbarrier_init(&{name}[{index}], 1);" for index in range(instances))
        if inits:
            with out.block("if (threadIdx.x == 0)"):
                for line in inits:
                    out.line(f"{line}  // one arrival: the elected thread's expect_tx")
                out.line("choreo::fence_mbarrier_init();")
            out.line(threads.after_barrier_init())

    # ------------------------------------------------------------------ statements

    def operation(self, stmt: ast.OperationStmt) -> None:
        emitter = self.emitter
        operation = stmt.operation
        assert operation.destination is not None
        source = emitter.expressions.view(operation.args[0])
        if source.storage == Storage.GLOBAL:
            destination = emitter.destination(stmt, source, _swizzle(operation))
            self._load(stmt, source, destination)
        else:
            destination = emitter.expressions.view(operation.destination)
            self._store(stmt, source, destination)
        emitter.note_written(operation.destination)

    def _load(self, stmt: ast.OperationStmt, source: View, destination: View) -> None:
        emitter, out = self.emitter, self.emitter.out
        if destination.storage != Storage.SHARED:
            raise LoweringError("a TMA load copies global memory into shared memory", stmt)
        copy = self._copy(stmt, source, destination, stmt.operation.args[0])
        cluster = emitter.threads.launch.cluster
        multicast = stmt.operation.is_multicast and cluster is not None
        if multicast:
            assert cluster is not None
            if copy.hint:
                raise LoweringError("a multicast TMA load takes no L2 hint on the CUDA backend", stmt)
            copy = replace(copy, multicast=cluster.blocks)
        symbol = self._future_symbol(stmt)
        rotated = symbol is not None and symbol in emitter.rotations.groups and symbol not in self.bound
        if symbol is not None and not rotated:
            emitter.bindings[symbol] = FutureValue(None, destination, destination.elem)
        if symbol is not None and symbol in self.bound:
            if not self._only_loads_until_trigger(stmt, symbol):
                lines, copy = copy.evaluated(emitter.names.fresh(symbol.name))
                for line in lines:
                    out.line(line)
            self.pending[symbol] = copy
            out.line("// issued by the 'trigger ... after' that binds it, on that event's mbarrier")
            return
        landing = self.landings[id(stmt)]
        context = emitter.info.context_of[id(stmt)]
        if multicast and not stmt.operation.is_async:
            self._cluster_done_with(stmt, context)
        elif emitter.threads.covers_instances(context):
            barrier = emitter.threads.issuing_group(context).barrier()
            if barrier is not None:
                out.line("// every thread is done with the destination's previous contents")
                out.line(barrier)
        if rotated:
            assert symbol is not None
            landing = self._rotated_landing(stmt, symbol, destination, landing)
        lines = [
            f"choreo::mbarrier_arrive_expect_tx({landing.barrier}, {copy.bytes});",
            *copy.load(landing.barrier),
        ]
        self._elected(stmt, lines)
        if symbol is not None:
            self.future_landings[symbol] = landing
        if not stmt.operation.is_async:
            self._wait_landing(landing, stmt, printer.statement(stmt))

    def _cluster_done_with(self, stmt: ast.OperationStmt, context: Context) -> None:
        """Before a synchronous multicast: every block of the cluster is done with the tile it overwrites. The
        cluster barrier needs every thread of every block; an asynchronous multicast releases the peers'
        buffers through a cluster event instead (`trigger.cluster`)."""
        threads = self.emitter.threads
        if threads.threads_reaching(context) != frozenset(range(threads.static_block_threads())):
            raise LoweringError(
                "a synchronous 'tma.copy.multicast' waits for the whole cluster, so every thread of the block must "
                "reach it; in a warp-specialized kernel use 'tma.copy.async.multicast' with a cluster event "
                "('trigger.cluster') that releases the tile",
                stmt,
            )
        self.emitter.out.line("// every block of the cluster is done with the tile this multicast overwrites")
        self.emitter.out.line("choreo::cluster_sync();")

    def _rotated_landing(
        self, stmt: ast.OperationStmt, symbol: Symbol, destination: View, own: Landing
    ) -> Landing:
        """A load into a future that swap/rotate move: the future (a `choreo::TmaFuture` in every thread)
        carries the buffer, the mbarrier and the phase, and keeps those it holds (rotations.py)."""
        emitter, out = self.emitter, self.emitter.out
        fresh = f"{{{destination.start.text}, {own.barrier}, &{own.phase}}}"
        variable = held_variable(emitter.bindings, stmt, symbol)
        if variable is None:
            variable = emitter.names.local(symbol.name)
            out.line(f"choreo::TmaFuture<{elements.c_type(destination.elem)}> {variable} = {fresh};")
        else:
            out.line(f"if (!{variable}.landed) {variable} = {fresh};  // it held no buffer yet")
        data = replace(destination, pointer=cexpr.raw(f"{variable}.data"), offset=cexpr.ZERO)
        emitter.bindings[symbol] = FutureValue(cexpr.name(variable), data, destination.elem)
        return Landing(own.name, f"(*{variable}.phase)", cexpr.ZERO, f"{variable}.landed")

    def _store(self, stmt: ast.OperationStmt, source: View, destination: View) -> None:
        emitter, out = self.emitter, self.emitter.out
        if source.storage != Storage.SHARED or destination.storage != Storage.GLOBAL:
            raise LoweringError(
                "'tma.copy' moves global data to shared memory or shared data to global memory", stmt
            )
        assert stmt.operation.destination is not None
        copy = self._copy(stmt, destination, source, stmt.operation.destination)
        context = emitter.info.context_of[id(stmt)]
        group = emitter.threads.issuing_group(context)
        out.line(
            "choreo::fence_proxy_async_shared();  // this thread's writes of the tile, visible to the copy engine"
        )
        barrier = group.barrier() if emitter.threads.covers_instances(context) else None
        if barrier is not None:
            out.line(barrier)
        lines = [*copy.store(), "choreo::bulk_commit_group();"]
        if not stmt.operation.is_async:
            lines.append(
                "choreo::bulk_wait_group();  // a synchronous store has been written when it returns"
            )
        self._elected(stmt, lines)
        if stmt.operation.is_async:
            symbol = self._future_symbol(stmt)
            if symbol is not None:
                self.stores[symbol] = stmt
                emitter.bindings[symbol] = FutureValue(None, source, source.elem)
        elif barrier is not None:
            out.line("// the tile may be written again")
            out.line(barrier)

    def trigger_after(self, stmt: ast.Trigger) -> None:
        """`trigger E after f, g`: one expect_tx arrival with the bytes of f and g, then the loads on E's barrier."""
        emitter = self.emitter
        if len(stmt.targets) != 1:
            raise LoweringError("'trigger ... after' binds one event", stmt)
        copies: list[Copy] = []
        for item in stmt.after:
            symbol = emitter.info.symbol_of.get(id(item))
            copy = self.pending.pop(symbol, None) if symbol is not None else None
            if copy is None:
                raise LoweringError(
                    f"'{printer.expression(item)}' is not a TMA load issued before this trigger in the same "
                    "block; the CUDA backend binds loads to the trigger that follows them",
                    item,
                )
            copies.append(copy)
        address, setup = emitter.events.barrier(stmt.targets[0])
        if setup:  # the order's side effect may change what the loads address: evaluate them first
            evaluated = [
                copy.evaluated(emitter.names.fresh(f"{copy.map.symbol.name}_copy")) for copy in copies
            ]
            setup = [line for lines, _ in evaluated for line in lines] + setup
            copies = [copy for _, copy in evaluated]
        names = ", ".join(printer.expression(item) for item in stmt.after)
        sizes = " + ".join(str(copy.bytes) for copy in copies)
        total = sum(copy.bytes for copy in copies)
        issue = [
            f"choreo::mbarrier_arrive_expect_tx({address}, {total});  // {names}: {sizes} bytes",
            *(line for copy in copies for line in copy.load(address)),
        ]
        condition = emitter.elected(stmt)
        if condition is None:
            write_once([*setup, *issue], emitter.out)
            return
        with emitter.out.block("") if setup else nullcontext():
            for line in setup:
                emitter.out.line(line)
            with emitter.out.block(f"if ({condition.text})"):
                for line in issue:
                    emitter.out.line(line)

    def _only_loads_until_trigger(self, stmt: ast.OperationStmt, symbol: Symbol) -> bool:
        """Whether only TMA loads stand between a bound load and the trigger that binds it (same block)."""
        position = self.emitter.positions.get(id(stmt))
        if position is None:
            return False
        block, index = position
        for later in block.body[index + 1 :]:
            if isinstance(later, ast.Trigger) and any(
                self.emitter.info.symbol_of.get(id(item)) is symbol for item in later.after
            ):
                return True
            if not (isinstance(later, ast.OperationStmt) and later.operation.family == "tma"):
                return False
        return False

    def waits(self, symbol: Symbol) -> bool:
        return symbol in self.future_landings or symbol in self.stores or symbol in self.store_futures

    def wait(self, symbol: Symbol, stmt: ast.Wait) -> None:
        if symbol in self.stores or symbol not in self.future_landings:
            # the store named here, or the one an earlier iteration issued (none yet: nothing to wait for)
            store = self.stores.pop(symbol, None) or self.store_futures[symbol]
            self._elected(store, ["choreo::bulk_wait_group();  // the store has been written"])
            context = self.emitter.info.context_of[id(store)]
            barrier = self.emitter.threads.issuing_group(context).barrier()
            if barrier is not None and self.emitter.threads.covers_instances(context):
                self.emitter.out.line("// the tile may be written again")
                self.emitter.out.line(barrier)
            return
        self._wait_landing(self.future_landings[symbol], stmt, printer.statement(stmt))

    # ------------------------------------------------------------------ pieces

    def _wait_landing(self, landing: Landing, stmt: ast.Stmt, text: str) -> None:
        emitter = self.emitter
        site = len(emitter.events.wait_sites)
        emitter.events.wait_sites.append(WaitSite(landing.name, stmt.span.line, text))
        emitter.out.line(f"choreo::event_wait({landing.barrier}, {landing.phase}, {emitter.status}, {site});")
        emitter.out.line(f"{landing.phase} ^= 1;")

    def _elected(self, stmt: ast.Stmt, lines: list[str]) -> None:
        """Lines that one elected thread per instance runs."""
        condition = self.emitter.elected(stmt)
        if condition is None:
            for line in lines:
                self.emitter.out.line(line)
            return
        if len(lines) == 1:
            self.emitter.out.line(f"if ({condition.text}) {lines[0]}")
            return
        with self.emitter.out.block(f"if ({condition.text})"):
            for line in lines:
                self.emitter.out.line(line)

    def _copy(self, stmt: ast.OperationStmt, tile: View, shared: View, tile_expr: ast.Expr) -> Copy:
        """The copy of `tile` (global) to or from `shared`: a tensor map, coordinates and bytes."""
        swizzle = shared.swizzle
        element_bytes = ELEMENT_BYTES[tile.elem]
        if tile.origin is None:
            raise LoweringError(
                f"this view of '{tile.root}' is reshaped, transposed or has strides of its own, so a TMA copy cannot "
                "address it as a box of the array; copy a tile of the array (chunkat, subspan, at, sqz)",
                tile_expr,
            )
        box = [1] * len(tile.origin)
        for dim, axis in zip(tile.dims, tile.axes):
            if dim.value is None:
                raise LoweringError(
                    "a TMA box's shape must be known when the host encodes its tensor map, so its extents must be "
                    "compile-time constants (use #define for tile sizes)",
                    tile_expr,
                )
            box[axis] = dim.value
        if not 1 <= len(box) <= MAX_RANK:
            raise LoweringError(
                f"TMA copies of {len(box)}-dimensional arrays are not supported yet", tile_expr
            )
        rows, row_bytes = math.prod(box[:-1]), box[-1] * element_bytes
        panels, panel_width = _panels(rows, row_bytes, element_bytes, swizzle)
        problems = (
            [f"each box extent at most {MAX_BOX} elements"] if max([*box[:-1], panel_width]) > MAX_BOX else []
        )
        if row_bytes % 16:
            problems.append(f"rows of a multiple of 16 bytes (these are {row_bytes})")
        if swizzle and not panels:
            problems.append(
                f"rows of {swizzle} bytes with .swiz<{swizzle}>, or of a multiple of {swizzle} bytes in a multiple "
                f"of 8 rows (these are {rows} rows of {row_bytes} bytes)"
            )
        if problems:
            raise LoweringError(f"a TMA copy of box {tuple(box)} needs " + " and ".join(problems), tile_expr)
        total = element_count(shared.dims).value
        if not shared.is_compact or total != element_count(tuple(cexpr.const(b) for b in box)).value:
            raise LoweringError(
                f"the shared side of a TMA copy is one contiguous tile of the box's {tuple(box)} elements",
                stmt,
            )
        symbol = self._array_symbol(tile_expr)
        map_box = (*box[:-1], panel_width)
        key = (symbol, tile.elem, map_box, swizzle)
        if key not in self.maps:
            name = self.emitter.names.fresh(f"{symbol.name}_tma")
            self.maps[key] = TensorMap(name, symbol, tile.elem, map_box, swizzle)
        coordinates = tuple(reversed(tile.origin))
        bytes_moved = element_count(tuple(cexpr.const(b) for b in box)).value or 0
        hints = [q for q in stmt.operation.qualifiers if q in ast.L2_HINTS]
        return Copy(
            self.maps[key],
            shared.start,
            coordinates,
            bytes_moved * element_bytes,
            stmt.span.line,
            printer.statement(stmt),
            hints[0] if hints else "",
            panels or 1,
            _panel_elements(shared, total or 0, panels or 1),
        )

    def _array_symbol(self, expr: ast.Expr) -> Symbol:
        """The global array (a parameter or host-level buffer) a TMA copy addresses, through the names
        given to views of it (`head = q.subspan(...).at(b, 0, h, 0).sqz();`)."""
        root = ast.root_name(expr)
        symbol = self.emitter.info.symbol_of.get(id(root)) if root is not None else None
        while symbol is not None and isinstance(symbol.declaration, ast.Assign):
            root = ast.root_name(symbol.declaration.value)
            symbol = self.emitter.info.symbol_of.get(id(root)) if root is not None else None
        value = self.emitter.bindings.get(symbol) if symbol is not None else None
        if symbol is None or not isinstance(value, View) or value.storage != Storage.GLOBAL:
            raise LoweringError(
                "a TMA copy addresses a global array: a parameter or a host-level buffer", expr
            )
        return symbol

    def _future_symbol(self, stmt: ast.OperationStmt) -> Symbol | None:
        if stmt.result is None:
            return None
        return self.emitter.info.symbol_of.get(id(stmt.result)) or self.emitter.info.futures.get(id(stmt))


def _panels(rows: int, row_bytes: int, element_bytes: int, swizzle: int) -> tuple[int, int]:
    """How a box maps onto shared memory: (panels, width of each in elements). A swizzled box is at most
    one swizzle wide; a tile whose rows are k swizzles wide is k such boxes side by side in the array and
    one after another in shared memory (the layout CUTLASS gives a K-major tile of 128 bf16 columns), each
    a multiple of 8 rows so that every panel starts on the swizzle pattern. (0, 0): no such layout."""
    if not swizzle or row_bytes == swizzle:
        return 1, row_bytes // element_bytes
    if row_bytes % swizzle or rows % 8:
        return 0, 0
    return row_bytes // swizzle, swizzle // element_bytes


def _panel_elements(shared: View, total: int, panels: int) -> int:
    """Elements from one box's shared tile to the next: the buffer's panel stride where it lies in panels
    (a box of some of its rows, say one warpgroup's 64 of 128, has its panels that far apart), else the
    boxes follow one another."""
    if shared.panels is not None and panels > 1:
        return shared.panels.stride
    return total // panels


def _swizzle(operation: ast.Operation) -> int:
    argument = operation.template_args.get("swiz")
    return int(argument) if argument is not None else 0


def _kind(emitter: KernelContext, stmt: ast.Stmt) -> str:
    info = emitter.info.operations.get(id(stmt))
    return info.kind if info is not None else ""
