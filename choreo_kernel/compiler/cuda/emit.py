"""Lowering a whole source: each function's host plan and kernels, assembled into one translation unit.

A function's statements at host level become a `FunctionPlan` for the runtime; each
outermost `parallel` becomes one `__global__` kernel named after the function. The wgmma
forms the kernels use are generated once, before them (wgmma.py), and so is the device code
their `call`s reach (devicecode.py).
"""

from __future__ import annotations

from importlib import resources

from choreo_kernel.compiler import ast, printer
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import UNKNOWN, Scalar, Symbol
from choreo_kernel.compiler.cuda import cexpr, elements
from choreo_kernel.compiler.cuda.cexpr import Term
from choreo_kernel.compiler.cuda.context import SHARED_ALIGNMENT, Arena
from choreo_kernel.compiler.cuda.device_calls import cuda_headers
from choreo_kernel.compiler.cuda.expressions import Expressions
from choreo_kernel.compiler.cuda.host_values import HostUpdate, host_update
from choreo_kernel.compiler.cuda.plan import (
    FunctionPlan,
    HostBuffer,
    HostCheck,
    HostIf,
    HostLoop,
    HostPrint,
    HostScalar,
    HostStore,
    HostSync,
    KernelParameter,
    Launch,
    LoweredProgram,
    Step,
    WaitSite,
)
from choreo_kernel.compiler.cuda.statements import KernelEmitter, names_in
from choreo_kernel.compiler.cuda.views import (
    BufferSlots,
    IndexTuple,
    Lowered,
    LoweringError,
    Operand,
    ShapeValue,
    View,
    buffer,
)
from choreo_kernel.compiler.cuda.writer import CodeWriter, Names, source_names
from choreo_kernel.compiler.devicecode import render
from choreo_kernel.compiler.diagnostics import ERROR, Diagnostic, Note
from choreo_kernel.compiler.program import Analysis
from choreo_kernel.compiler.semantics.evaluate import constant
from choreo_kernel.compiler.semantics.levels import MAX_THREADS_PER_BLOCK, Level, Storage
from choreo_kernel.compiler.version import __version__

HEADER = "choreo_runtime.cuh"
MAX_SHARED_BYTES = 227 * 1024  # dynamic shared memory per block on sm_90a


def header_text() -> str:
    """The device library that every emitted translation unit includes."""
    return resources.files("choreo_kernel.compiler.cuda").joinpath(HEADER).read_text(encoding="utf-8")


def lower_program(analysis: Analysis) -> LoweredProgram:
    """Every function's kernels and host plan; a function that cannot be lowered has its diagnostics
    in `errors` instead (the analysis reports them for target cuda)."""
    out = CodeWriter()
    out.line(f"// CUDA C++ emitted by choreo-kernel {__version__} from {analysis.filename}, for sm_90a.")
    out.line("// Each block is marked with the Choreo line it implements.")
    out.line(f'#include "{HEADER}"')
    program = LoweredProgram("")
    kernel_names = Names(set())
    functions = CodeWriter()
    wrappers: dict[str, str] = {}
    for name, info in analysis.functions.items():
        lowering = FunctionLowering(info, kernel_names)
        try:
            plan, text = lowering.lower()
        except LoweringError as error:
            node = error.node if isinstance(error.node, ast.Node) else info.function
            program.errors[name] = [Diagnostic(ERROR, error.message, node.span, _notes(info.function))]
            continue
        program.plans[name] = plan
        wrappers.update(lowering.wrappers)
        functions.line()
        functions.lines.extend(text.splitlines())
    if wrappers:
        out.line()
        out.line(
            "// The wgmma.mma_async and mma.sync forms these kernels use, generated: each lists all its accumulator "
            "registers."
        )
        out.line("namespace choreo {")
        for text in wrappers.values():
            out.line()
            out.lines.extend(text.splitlines())
        out.line("}  // namespace choreo")
    headers = cuda_headers(analysis.functions.values(), (part.text for part in analysis.device_code))
    if headers:
        out.line()
    for header in headers:
        out.line(f"#include <{header}>  // CUDA's half type: device functions take f16/bf16 data as it")
    if analysis.device_code:
        out.line()
        if any("__co_device__" in part.text for part in analysis.device_code):
            out.line("#define __co_device__ __device__  // Croqtile's mark of device functions")
        lines, program.device_lines = render(analysis.device_code, len(out.lines) + 1)
        out.lines.extend(lines)
    out.lines.extend(functions.lines)
    program.source = out.text() + "\n"
    return program


def _notes(function: ast.Function) -> tuple[Note, ...]:
    return (Note(f"in __co__ function '{function.name}'", function.name_span),)


def emit_program(analysis: Analysis, self_contained: bool = False) -> str:
    """The CUDA C++ of every function; `self_contained` inlines the header (for nvcc). Raises `ChoreoError`."""
    lowered = analysis.lowered or lower_program(analysis)
    source = lowered.checked(analysis.filename).source
    return inline_header(source) if self_contained else source


def inline_header(source: str) -> str:
    """One translation unit: the header's text in place of its #include."""
    return source.replace(f'#include "{HEADER}"', header_text().replace("#pragma once\n", ""), 1)


# ---------------------------------------------------------------------------- one function


class FunctionLowering:
    """The host plan of one function and the CUDA text of its kernels."""

    def __init__(self, info: FunctionInfo, kernel_names: Names) -> None:
        self.info = info
        self.function = info.function
        self.kernel_names = kernel_names
        self.names = Names(source_names(info.function))
        self.bindings: dict[Symbol, Lowered] = {}
        self.expressions = Expressions(info, self.bindings)
        self.host_order: list[Symbol] = []  # host-level symbols a kernel may take, in declaration order
        self.extents: dict[str, KernelParameter] = {}  # C name -> a `?` dimension's parameter
        self.wait_sites: list[WaitSite] = []
        self.wrappers: dict[str, str] = {}  # wgmma form name -> its device function

    def lower(self) -> tuple[FunctionPlan, str]:
        parameters = tuple(self._parameter(param) for param in self.function.params)
        self.kernels: list[str] = []
        self.result: ast.Expr | None = None
        self.written: set[Symbol] = set()
        steps = self._steps(self.function.body.body)
        written_params = frozenset(s.name for s in self.written if s.origin == "param")
        dimensions = tuple(s for s in self.host_order if s.origin == "dim")
        plan = FunctionPlan(
            self.function,
            steps,
            self.result,
            written_params,
            tuple(self.wait_sites),
            parameters,
            dimensions,
        )
        return plan, "\n\n".join(self.kernels)

    # ------------------------------------------------------------------ host level

    def _steps(self, statements: tuple[ast.Stmt, ...]) -> tuple[Step, ...]:
        """The steps of host-level statements, in order: each outermost parallel a kernel launch."""
        steps: list[Step] = []
        for stmt in statements:
            if isinstance(stmt, ast.Parallel):
                kernel = self.info.launches.structure.kernel_at(stmt)
                if kernel is None:
                    raise LoweringError("a 'cluster' level stands around one block-level parallel", stmt)
                launch, text, wrote = self._kernel(kernel)
                steps.append(launch)
                self.kernels.append(text)
                self.written |= wrote
            elif isinstance(stmt, ast.Return):
                self.result = stmt.value
            elif isinstance(stmt, ast.Block):
                steps.extend(self._steps(stmt.body))
            elif isinstance(stmt, ast.Foreach):
                steps.append(self._host_loop(stmt))
            elif isinstance(stmt, ast.With):
                steps.extend(self._host_with(stmt))
            elif isinstance(stmt, ast.If):
                self._host_elements(stmt.condition)
                then = self._steps(_statements(stmt.then))  # its kernels first, as in the source
                otherwise = self._steps(_statements(stmt.otherwise)) if stmt.otherwise is not None else ()
                steps.append(HostIf(stmt, then, otherwise))
            else:
                step = self._host_statement(stmt)
                if step is not None:
                    steps.append(step)
        return tuple(steps)

    def _host_elements(self, *exprs: ast.Expr) -> None:
        """The host reads and writes elements of arrays whose elements NumPy holds as numbers; a narrow
        type lies on the device as its bits, which the host would misread."""
        for expr in exprs:
            for node in ast.walk_expr(expr):
                if not (isinstance(node, ast.Method) and node.name == "at"):
                    continue
                symbol = self.info.symbol_of.get(id(node.value))
                view = self.bindings.get(symbol) if symbol is not None else None
                if isinstance(view, View) and view.elem in elements.STORED_AS_BITS:
                    raise LoweringError(
                        f"at host level the CUDA backend reads and writes elements of 8- to 64-bit integer, f32 and f64 "
                        f"arrays; '{printer.expression(node.value)}' holds {view.elem}: move this into a parallel",
                        node,
                    )

    def _host_with(self, stmt: ast.With) -> list[Step]:
        """A host-level `with`: outside a foreach over it a with-variable is 0, so each element is the
        host scalar 0 and its ituple the zeros (for the host's prints and the kernels inside it)."""
        steps: list[Step] = []
        for binding in stmt.bindings:
            variables = binding.variables
            counts = self.expressions.counts(binding.extent)
            anonymous = id(variables) in self.info.anonymous_tuples
            names = [] if anonymous else [name.id for name in variables.names[: len(counts)]]
            elements = [Operand(cexpr.const(0), "s32", count) for count in counts]
            zero = ast.IntLiteral(binding.span, 0)
            for name, element in zip(names, elements):
                symbol = self.expressions.declared(stmt, name)
                if symbol is not None:
                    self._host(symbol, element)
                    steps.append(HostScalar(symbol, "s32", zero))
            group = variables.names[0].id if anonymous else variables.group.id if variables.group else None
            symbol = self.expressions.declared(stmt, group) if group is not None else None
            if symbol is not None:
                self._host(symbol, IndexTuple(tuple(elements)))
                steps.append(HostScalar(symbol, "s32", ast.TupleLiteral(binding.span, (zero,) * len(counts))))
        return [*steps, *self._steps(_statements(stmt.body))]

    def _host_loop(self, stmt: ast.Foreach) -> HostLoop:
        """A host-level `foreach`: its variables are host scalars, so a kernel inside it takes the
        iteration's index as an argument (one launch per iteration)."""
        if stmt.variables.group is not None:
            raise LoweringError(
                "at host level the CUDA backend loops over named variables, not a tuple of them", stmt
            )
        variables = tuple(self.expressions.declared(stmt, name.id) for name in stmt.variables.names)
        for symbol in variables:
            if symbol is not None:
                self._host(symbol, Operand(cexpr.name(self.names.source(symbol.name)), "s32"))
        return HostLoop(stmt, variables, self._steps(_statements(stmt.body)))

    def _parameter(self, param: ast.Param) -> Symbol:
        symbol = self._symbol_named(param.name, param)
        shape = param.type.shape
        if param.is_stream:  # a host value only: `parallel<s>` names the stream a launch goes on
            return symbol
        if shape is None:
            self._host(symbol, Operand(cexpr.name(self.names.source(param.name)), param.type.name))
            return symbol
        dims = []
        for axis, dim in enumerate(shape):
            if isinstance(dim, ast.AnyDim):
                name = self.names.fresh(f"{param.name}_dim{axis}")
                self.extents[name] = KernelParameter(name, "extent", "s32", symbol, axis)
                dims.append(cexpr.name(name))
                continue
            for node in _names_in_expr(dim):
                dim_symbol = self.info.symbol_of.get(id(node))
                if dim_symbol is not None and dim_symbol not in self.bindings:
                    self._host(dim_symbol, Operand(cexpr.name(self.names.source(node.id)), "s32"))
            dims.append(self.expressions.integer(dim))
        view = buffer(
            param.type.name,
            cexpr.name(self.names.source(param.name)),
            tuple(dims),
            Storage.GLOBAL,
            param.name,
        )
        self._host(symbol, view)
        return symbol

    def _symbol_named(self, name: str, declaration: object) -> Symbol:
        symbol = self.expressions.declared(declaration, name)
        return symbol or Symbol(  # a parameter nothing refers to
            name, UNKNOWN, self.function.span, declaration=declaration, origin="param"
        )

    def _host(self, symbol: Symbol, value: Lowered) -> None:
        self.bindings[symbol] = value
        self.host_order.append(symbol)

    def _host_statement(self, stmt: ast.Stmt) -> Step | None:
        if isinstance(stmt, ast.Empty | ast.Unsupported):
            return None
        if isinstance(stmt, ast.Print):
            return None if stmt.compile_time else HostPrint(stmt, self.info.print_formats[id(stmt)])
        if isinstance(stmt, ast.Sync) and stmt.kind == "global":
            return HostSync(stmt)
        if isinstance(stmt, ast.Assign) and isinstance(stmt.target, ast.Method) and stmt.target.name == "at":
            self._host_elements(stmt.target, stmt.value)
            array = self.info.symbol_of.get(id(stmt.target.value))
            if array is not None:
                self.written.add(array)  # the host writes it: a parameter passed by reference goes back
            return HostStore(stmt)
        if isinstance(stmt, ast.Assert):
            known = self.info.value_of.get(id(stmt.condition))
            return None if isinstance(known, Scalar) and known.const else HostCheck(stmt)
        if isinstance(stmt, ast.BufferDecl):
            symbol = self.expressions.declared_by(stmt)
            dims = self.expressions.dims(stmt.shape)
            counts = tuple(self.expressions.integer(count) for count in stmt.array_dims)
            view = buffer(
                stmt.elem_type, cexpr.name(self.names.source(stmt.name)), dims, Storage.GLOBAL, stmt.name
            )
            if symbol is not None:  # a buffer array is one allocation, its buffers one after another
                self._host(symbol, BufferSlots(view, counts) if counts else view)
            if stmt.init is not None and len(stmt.init) != 1:
                raise LoweringError("the CUDA backend fills a buffer with one value: '{v}'", stmt)
            fill = stmt.init[0] if stmt.init else None
            shape = (*stmt.array_dims, *stmt.shape)
            return HostBuffer(symbol, stmt.elem_type, shape, fill) if symbol is not None else None
        if isinstance(stmt, ast.ShapeDecl | ast.TupleDecl):
            symbol = self.expressions.declared_by(stmt)
            if symbol is not None:
                self._host(symbol, ShapeValue(self.expressions.dims((stmt.value,))))
            return None
        update = host_update(stmt, self.info)
        if update is not None:
            self._host_elements(update.value)
            return self._host_value(update)
        raise LoweringError(
            "at host level (outside every parallel) the CUDA backend runs declarations, 'foreach', 'with' and 'if', "
            "element writes, 'sync.global', parallel blocks and 'return'; move this statement into a parallel",
            stmt,
        )

    def _host_value(self, update: HostUpdate) -> Step | None:
        """A host-level scalar computed where its statement stands (host_values.py); a view or shape
        given a name is another name for the same data."""
        symbol = update.symbol
        if symbol is None:
            return None
        value = symbol.value
        if not isinstance(value, Scalar):
            if update.declares:
                self.bindings[symbol] = self.expressions.value(update.value)
            return None
        if update.declares and not symbol.mutable and isinstance(value.const, int):
            self._host(symbol, Operand(cexpr.const(value.const), value.type))  # the kernels use the number
            return None
        if symbol not in self.bindings:
            self._host(symbol, Operand(cexpr.name(self.names.source(symbol.name)), value.type))
        return HostScalar(symbol, value.type, update.value)

    # ------------------------------------------------------------------ kernels

    def _kernel(self, stmt: ast.Parallel) -> tuple[Launch, str, set[Symbol]]:
        names = Names(self.names.taken, (self.names.source(symbol.name) for symbol in self.host_order))
        bindings = dict(self.bindings)
        emitter = KernelEmitter(self.info, stmt, bindings, names, self.wait_sites)
        body = emitter.emit()
        kernel_name = self.kernel_names.fresh(f"{self.function.name}_kernel")
        parameters = self._kernel_parameters(stmt, emitter)
        grid = tuple(count for _, count in emitter.threads.grid())
        written = emitter.written
        out = CodeWriter()
        signature = ", ".join(self._c_parameter(p, written) for p in parameters)
        out.line(
            f"// __co__ {self.function.name}, line {self.function.span.line}: kernel for the parallel at line {stmt.span.line}"
        )
        block_threads = emitter.threads.block_threads
        factors = self._thread_factors(emitter) if block_threads is None else ()
        if emitter.roles:
            out.line(
                "// one block per SM: its warpgroups trade registers with setmaxnreg (producer and consumers)"
            )
        limits = kernel_limits(stmt, block_threads or MAX_THREADS_PER_BLOCK, bool(emitter.roles))
        cluster = emitter.threads.launch.cluster
        if cluster is not None:
            out.line(
                f"// thread-block clusters of {cluster.blocks} blocks (line {cluster.parallel.span.line}): consecutive "
                "blocks along blockIdx.x share their shared memory"
            )
            limits += f" __cluster_dims__({', '.join(map(str, cluster.dims))})"
        out.line(f'extern "C" __global__ void {limits} {kernel_name}({signature}) {{')
        arena = emitter.arena
        shared_bytes = arena.size
        if arena.size + (arena.alignment if arena.alignment > SHARED_ALIGNMENT else 0) > MAX_SHARED_BYTES:
            raise LoweringError(
                f"this kernel needs {arena.size} bytes of shared memory per block; a block on sm_90a has at most "
                f"{MAX_SHARED_BYTES} (227 KiB): use smaller tiles or fewer stages",
                stmt,
            )
        dynamic = self._dynamic_shared(arena, parameters)
        if arena.dynamic:
            shared_bytes = arena.fixed_size
        if arena.size or arena.dynamic:
            placed = [f"{name} at {offset}" for name, offset, _ in arena.entries]
            placed += [f"{name} after them" for name, _, _ in arena.dynamic]
            size = f"{arena.size} bytes" + (
                " and those of the buffers sized at launch" if arena.dynamic else ""
            )
            out.line(f"  // shared memory ({size}): {', '.join(placed)}")
            if arena.alignment > SHARED_ALIGNMENT:
                shared_bytes += arena.alignment  # room to align the start
                out.line(
                    f"  extern __shared__ __align__({SHARED_ALIGNMENT}) unsigned char {emitter.shared_memory}_raw[];"
                )
                out.line(
                    f"  unsigned char* const {emitter.shared_memory} = "
                    f"choreo::align_shared({emitter.shared_memory}_raw, {arena.alignment});  // swizzled tiles start here"
                )
            else:
                out.line(
                    f"  extern __shared__ __align__({arena.alignment}) unsigned char {emitter.shared_memory}[];"
                )
        if arena.dynamic:
            out.line(
                f"  unsigned char* const {emitter.shared_dynamic} = {emitter.shared_memory} + {arena.fixed_size};"
            )
        out.line(
            f"  if (!choreo::block_starts({emitter.status})) return;  // the launch already gave up on a wait"
        )
        out.lines.extend(body.splitlines())
        if cluster is not None:
            out.line(
                "  choreo::cluster_sync();  // no block exits while a peer may still write its shared memory"
            )
        out.line("  choreo::block_ends();")
        out.line("}")
        self.wrappers.update(emitter.mma.wrappers())
        self.wrappers.update(emitter.warp_mma.wrappers())
        cooperative = stmt.clauses[0].cooperative and self.info.levels_of[id(stmt)][0] == Level.BLOCK
        stream = self.info.symbol_of.get(id(stmt.stream)) if stmt.stream is not None else None
        launch = Launch(
            kernel_name,
            stmt,
            grid,
            block_threads or 0,
            shared_bytes,
            parameters,
            dynamic_shared=dynamic,
            cooperative=cooperative,
            cluster=cluster.dims if cluster is not None else None,
            prints=emitter.prints,
            stream=stream,
            thread_factors=factors,
        )
        return launch, out.text(), written

    @staticmethod
    def _dynamic_shared(arena: Arena, parameters: tuple[KernelParameter, ...]) -> Term | None:
        """The bytes of the buffers sized at launch, as a term the host evaluates from the kernel's scalar
        parameters; a size that needs anything else (a loop variable, a value computed in the kernel) is an
        error at the buffer that has it."""
        if not arena.dynamic:
            return None
        known = {p.name for p in parameters if p.kind in ("scalar", "dim", "extent")}
        for _, size, node in arena.dynamic:
            missing = sorted(cexpr.names_in(size.term) - known) if size.term is not None else ["?"]
            if missing:
                what = (
                    f"shared buffer '{node.name}'" if isinstance(node, ast.BufferDecl) else "'=> shared' here"
                )
                raise LoweringError(
                    f"the size of {what} depends on {', '.join(missing)}, which the host cannot know when it "
                    "launches the kernel: shared memory is sized at launch from the function's arguments (make the "
                    "extents depend on parameters only, or fix them with a #define)",
                    node,
                )
        assert arena.dynamic_size.term is not None
        return arena.dynamic_size.term

    def _thread_factors(self, emitter: KernelEmitter) -> tuple[int | ast.Expr, ...]:
        """The factors of a block size the arguments give, which the host evaluates at each call: their
        names must be known before the launch."""
        factors = emitter.threads.launch.block_factors()
        for factor in factors:
            if isinstance(factor, int):
                continue
            for name in _names_in_expr(factor):
                symbol = self.info.symbol_of.get(id(name))
                if symbol is not None and symbol not in self.bindings:
                    raise LoweringError(
                        f"the thread count '{printer.expression(factor)}' uses '{name.id}', which the kernel "
                        "computes; the block size must be known before the launch (a parameter, a dimension "
                        "or a host-level value)",
                        factor,
                    )
        return factors

    def _kernel_parameters(self, stmt: ast.Parallel, emitter: KernelEmitter) -> tuple[KernelParameter, ...]:
        """The host-level values the kernel refers to (and the dimensions their shapes need), in order."""
        used = self._used_host_symbols(stmt)
        parameters: list[KernelParameter] = []
        for symbol in self.host_order:
            if symbol not in used:
                continue
            value = self.bindings[symbol]
            c_name = self.names.source(symbol.name)
            if isinstance(value, BufferSlots):
                value = value.element
            if isinstance(value, View):
                parameters.append(KernelParameter(c_name, "array", value.elem, symbol))
                for dim in value.dims:
                    extent = self.extents.get(dim.text)
                    if extent is not None:
                        parameters.append(extent)
            elif isinstance(value, Operand):
                kind = "dim" if symbol.origin == "dim" else "scalar"
                if value.expr.value is None:
                    parameters.append(KernelParameter(c_name, kind, value.type, symbol))
        for tensor_map in emitter.tma.maps.values():
            parameters.append(
                KernelParameter(
                    tensor_map.name,
                    "tensor_map",
                    tensor_map.element,
                    tensor_map.symbol,
                    box=tensor_map.box,
                    swizzle=tensor_map.swizzle,
                )
            )
        parameters.extend(self._scratch_parameters(emitter, parameters))
        order = {"array": 0, "scratch": 0, "tensor_map": 1, "extent": 2, "scalar": 3, "dim": 4}
        parameters.sort(key=lambda parameter: order[parameter.kind])
        if emitter.syncs_grid:
            parameters.append(KernelParameter(emitter.grid_barrier, "grid_barrier", "u32"))
        parameters.append(KernelParameter(emitter.status, "status", "u64"))
        return tuple(parameters)

    @staticmethod
    def _scratch_parameters(
        emitter: KernelEmitter, parameters: list[KernelParameter]
    ) -> list[KernelParameter]:
        """The global scratch of each local buffer sized at launch, its bytes per thread a term the host
        evaluates from the kernel's scalar parameters."""
        known = {p.name for p in parameters if p.kind in ("scalar", "dim", "extent")}
        scratch = []
        for name, size, node in emitter.local_scratch:
            missing = sorted(cexpr.names_in(size.term) - known) if size.term is not None else []
            if missing or size.term is None:
                uses = ", ".join(missing) if missing else f"values ({size.text})"
                raise LoweringError(
                    f"the size of this local buffer depends on {uses}, which the host cannot know "
                    "when it launches the kernel: a local buffer sized by the call's arguments is placed in "
                    "global memory sized at launch (make its extents depend on parameters only, or fix them "
                    "with a #define)",
                    node,
                )
            scratch.append(KernelParameter(name, "scratch", "u8", size=size.term))
        return scratch

    def _used_host_symbols(self, stmt: ast.Parallel) -> set[Symbol]:
        """Host symbols named in the kernel, with the names their shapes and shape declarations use."""
        used: set[Symbol] = set()
        pending = [self.info.symbol_of[id(n)] for n in names_in(stmt) if id(n) in self.info.symbol_of]
        while pending:
            symbol = pending.pop()
            if symbol in used or symbol not in self.bindings:
                continue
            used.add(symbol)
            declaration = symbol.declaration
            exprs: list[ast.Expr] = []
            if isinstance(declaration, ast.Param) and declaration.type.shape:
                exprs.extend(declaration.type.shape)
            elif isinstance(declaration, ast.BufferDecl):
                exprs.extend(declaration.shape)
            elif isinstance(declaration, ast.ShapeDecl | ast.TupleDecl):
                exprs.append(declaration.value)
            elif isinstance(declaration, ast.Assign) and symbol not in self.host_order:
                exprs.append(declaration.value)  # another name for a view: the kernel needs what it names
            for expr in exprs:
                pending.extend(
                    self.info.symbol_of[id(n)] for n in _names_in_expr(expr) if id(n) in self.info.symbol_of
                )
        return used

    def _c_parameter(self, parameter: KernelParameter, written: set[Symbol]) -> str:
        if parameter.kind == "status":
            return f"choreo::Status* {parameter.name}"
        if parameter.kind == "grid_barrier":
            return f"unsigned* {parameter.name}"
        if parameter.kind == "tensor_map":
            return f"const __grid_constant__ choreo::TensorMap {parameter.name}"
        if parameter.kind == "scratch":
            return f"unsigned char* {parameter.name}"
        c_type = elements.c_type(parameter.element)
        if parameter.kind == "array":
            constant = "" if parameter.symbol in written else "const "
            return f"{constant}{c_type}* {parameter.name}"
        return f"{c_type} {parameter.name}"


def kernel_limits(stmt: ast.Parallel, threads: int, specialized: bool) -> str:
    """`__launch_bounds__(threads[, blocks])`, or `__maxnreg__(n)` for `[[maxnreg(n)]]` (nvcc takes one of
    the two per kernel; the analysis warns when both are written). A warp-specialized kernel runs one
    block per SM, for the registers its warpgroups trade with setmaxnreg."""
    attributes = {attribute.name: attribute for attribute in stmt.attributes}
    registers = attributes.get("maxnreg")
    if registers is not None:
        if specialized:
            raise LoweringError(
                "[[maxnreg]] on a warp-specialized kernel: its warpgroups set their own registers with setmaxnreg",
                registers,
            )
        return f"__maxnreg__({constant(registers.args[0])})"
    bounds = attributes.get("launch_bounds")
    values = (
        [threads if _is_placeholder(arg) else constant(arg) for arg in bounds.args] if bounds else [threads]
    )
    if specialized:
        if len(values) == 2 and values[1] not in (0, 1):
            raise LoweringError(
                f"[[launch_bounds(..., {values[1]})]] on a warp-specialized kernel, which runs one block per SM "
                "(its warpgroups trade registers with setmaxnreg)",
                bounds or stmt,
            )
        values = [values[0], 1]
    return f"__launch_bounds__({', '.join(str(value) for value in values)})"


def _is_placeholder(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.Name) and expr.id == "_"


def _statements(body: ast.Stmt) -> tuple[ast.Stmt, ...]:
    return body.body if isinstance(body, ast.Block) else (body,)


def _names_in_expr(expr: ast.Expr) -> list[ast.Name]:
    return [node for node in ast.walk_expr(expr) if isinstance(node, ast.Name)]
