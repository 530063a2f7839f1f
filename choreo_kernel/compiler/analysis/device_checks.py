"""Where device code may stand, and the type a device call's result takes.

Device function calls, atomics and inline assembly run on the GPU: only inside a parallel. Each
thread that runs the statement runs them; where a statement runs once per instance of a level
(between levels: parallels nested in its body make the threads), one thread of the instance
does, so their value would reach that thread alone: there they may only be whole statements.

C++ gives a call's result no Choreo type, so it takes the type of where it is used: the declared
type of `mutable int r = call f(x)`, the target's type in `r = call f(x)`, `bool` in a condition;
used anywhere else it is an error. The type is recorded in `FunctionInfo.device_calls`, which
every backend reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.builtins import is_atomic, register_action
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import BufferArray, Data, DeviceResult, Future, Scalar
from choreo_kernel.compiler.diagnostics import DiagnosticSink
from choreo_kernel.compiler.printer import expression
from choreo_kernel.compiler.semantics.launch import UnknownSize, register_owner

SIM_ASM = (
    "inline assembly (PTX) has no meaning on the sim, which runs on the CPU: give the sim an equivalent "
    "in Choreo, as in '#ifdef __CHOREO_SIM__ ... #else __asm__(...) #endif'"
)


def check_device_code(info: FunctionInfo, sink: DiagnosticSink, target: str) -> None:
    for stmt in ast.walk_statements(info.function.body):
        context = info.context_of.get(id(stmt))
        if context is None:
            continue
        if isinstance(stmt, ast.Asm):
            _place(info, sink, stmt, "inline assembly", context, whole=True)
            if target == "sim":
                sink.error(SIM_ASM, stmt.span)
        for expr in own_expressions(stmt):
            arguments = {id(arg) for arg in _device_call_arguments(expr)}
            for node in ast.walk_expr(expr):
                if isinstance(node, ast.DeviceCall) and register_action(node.callee) is not None:
                    _place_register_call(info, sink, stmt, node, context)
                elif isinstance(node, ast.DeviceCall):
                    # The resolver reports a call's result passed to another call (it has no type there).
                    whole = id(node) not in arguments and _typed_result(info, sink, stmt, node)
                    _place(info, sink, node, f"the call of '{node.callee}'", context, whole)
                    _check_register_arguments(info, sink, node, context)
                elif is_atomic(node):
                    assert isinstance(node, ast.Call) and isinstance(node.callee, ast.Name)
                    whole = isinstance(stmt, ast.ExprStmt) and stmt.expr is node
                    _place(info, sink, node, f"'{node.callee.id}'", context, whole)


def own_expressions(stmt: ast.Stmt) -> Iterator[ast.Expr]:
    """The expressions written in `stmt` itself, not in the statements nested in it."""
    pending: list[object] = [value for value in vars(stmt).values() if not isinstance(value, ast.Stmt)]
    while pending:
        value = pending.pop(0)
        if isinstance(value, ast.Expr):
            yield value
        elif isinstance(value, ast.Node) and not isinstance(value, ast.Stmt):
            pending.extend(vars(value).values())
        elif isinstance(value, tuple | list):
            pending.extend(item for item in value if not isinstance(item, ast.Stmt))


def _typed_result(info: FunctionInfo, sink: DiagnosticSink, stmt: ast.Stmt, call: ast.DeviceCall) -> bool:
    """Record the type the call's result takes where it stands; whether the call is the whole statement."""
    result: str | None = None
    if isinstance(stmt, ast.ExprStmt) and stmt.expr is call:
        return True
    if isinstance(stmt, ast.ScalarDecl) and stmt.init is call:
        if stmt.type_name is None:
            sink.error(
                f"the type of '{stmt.name}' cannot be deduced from a device function call; write it: "
                f"'mutable int {stmt.name} = call {call.callee}(...)'",
                stmt.name_span,
            )
        elif not stmt.mutable and not stmt.element_typed:
            sink.error(
                f"'{stmt.name}' holds the result of device function '{call.callee}', which is only known "
                f"when it runs: '{stmt.name}' must be annotated as mutable ('mutable {stmt.type_name} "
                f"{stmt.name} = ...')",
                stmt.name_span,
            )
        result = stmt.type_name
    elif isinstance(stmt, ast.Assign) and stmt.value is call:
        result = _target_type(info, stmt.target)
        if result is None:
            sink.error(
                "the result of a device function call takes the type of what it is assigned to, and "
                f"this target has none: declare it first ('mutable int r = call {call.callee}(...)')",
                stmt.target.span,
            )
    elif _condition_of(stmt) is call:
        result = "bool"
    else:
        sink.error(
            f"the result of device function '{call.callee}' has no type here; assign it to a typed "
            f"mutable scalar first ('mutable int r = call {call.callee}(...)') and use that",
            call.span,
        )
    if id(call) in info.device_calls:
        info.device_calls[id(call)] = replace(info.device_calls[id(call)], result=result)
    return False


def _device_call_arguments(expr: ast.Expr) -> Iterator[ast.Expr]:
    """The arguments of the device calls in `expr`, out of their parentheses."""
    for node in ast.walk_expr(expr):
        if isinstance(node, ast.DeviceCall):
            for arg in node.args:
                while isinstance(arg, ast.Paren):
                    arg = arg.inner
                yield arg


def _condition_of(stmt: ast.Stmt) -> ast.Expr | None:
    condition = stmt.condition if isinstance(stmt, ast.If | ast.While) else None
    while isinstance(condition, ast.Paren):
        condition = condition.inner
    return condition


def _target_type(info: FunctionInfo, target: ast.Expr) -> str | None:
    """The element type an assignment stores to, from the symbol its target starts at."""
    root = target
    while isinstance(root, ast.Method | ast.Member | ast.Index | ast.Paren):
        root = root.inner if isinstance(root, ast.Paren) else root.value
    symbol = info.symbol_of.get(id(root)) if isinstance(root, ast.Name) else None
    if symbol is None:
        return None
    value = symbol.value
    if isinstance(value, Scalar) and not isinstance(value, DeviceResult):
        return value.type if root is target else None
    if isinstance(value, BufferArray):
        return value.element.elem
    if isinstance(value, Future) and symbol.future is not None and symbol.future.destination is not None:
        return symbol.future.destination.elem
    return value.elem if isinstance(value, Data) and root is not target else None


def _place(
    info: FunctionInfo, sink: DiagnosticSink, node: ast.Node, what: str, context: Context, whole: bool
) -> None:
    """Device code runs inside a parallel; between levels only as a whole statement."""
    if not context.in_parallel:
        sink.error(
            f"{what} is device code: it must be inside a parallel (outside every parallel is host code, "
            "where device functions cannot be called)",
            node.span,
        )
        return
    if not whole and _between_levels(info, context):
        level = context.levels[-1].level
        sink.error(
            f"{what} runs once per {level} instance here, as its parallel holds parallels of its own, so "
            "its value would reach one thread only: use it as a statement, or move it into the "
            "innermost parallel",
            node.span,
        )


def _check_register_arguments(
    info: FunctionInfo, sink: DiagnosticSink, call: ast.DeviceCall, context: Context
) -> None:
    """A fragment's registers are passed by the threads that hold them, each its own: the call stands
    where a warpgroup or a warp holds fragments (launch.register_owner) and runs once per thread."""
    passed = info.device_calls.get(id(call))
    if passed is None or not context.in_parallel:
        return
    for arg, argument in zip(call.args, passed.arguments):
        if argument.kind != "registers":
            continue
        owner = register_owner(context)
        if owner.level is None or _between_levels(info, context):
            sink.error(
                f"'{expression(arg)}' passes each thread's registers of a fragment: call '{call.callee}' where "
                "its threads hold it, each thread running the call (inside the 'group-4' or 'group' scope, or "
                "a 'thread' scope of 128 or 32 threads)",
                arg.span,
            )


def _place_register_call(
    info: FunctionInfo, sink: DiagnosticSink, stmt: ast.Stmt, call: ast.DeviceCall, context: Context
) -> None:
    """setmaxnreg is `.sync.aligned`: every thread of the warpgroup runs it, as a statement of its own."""
    _place(info, sink, call, f"the call of '{call.callee}'", context, whole=True)
    problem = None
    if not (isinstance(stmt, ast.ExprStmt) and stmt.expr is call):
        problem = "it is a statement of its own, with no value"
    elif context.in_parallel and _between_levels(info, context):
        problem = (
            f"here it runs once per {context.levels[-1].level} instance, as its parallel holds parallels of "
            "its own: call it in the innermost parallel, where every thread runs it"
        )
    if problem is not None:
        sink.error(
            f"'{call.callee}' sets the registers of every thread of a warpgroup (setmaxnreg.sync.aligned): "
            + problem,
            call.span,
        )


def _between_levels(info: FunctionInfo, context: Context) -> bool:
    """Whether a statement runs once per instance of its level rather than once per thread."""
    launch = info.launches.of(context)
    if launch is None:
        return False
    try:
        return launch.execution_unit(context) > 1
    except UnknownSize:
        stmt, _ = launch.structure.owner[id(context.levels[-1].clause)]
        return launch.structure.nested[id(stmt)] is not None
