"""Device code as CUDA statements: a call or an atomic run for its effect, and inline assembly.

Each thread that runs the statement runs it; between levels (where the launch model runs a
statement once per instance of its level) the instance's leader does, and the instance meets at
its barrier after it, as after a store to shared memory, so that what the call wrote is seen.
Inline assembly is emitted as written, its operands replaced by their CUDA expressions and named
operands by their numbers.
"""

from __future__ import annotations

from collections.abc import Iterator

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.builtins import NAMED_OPERAND, is_atomic
from choreo_kernel.compiler.analysis.device_checks import own_expressions
from choreo_kernel.compiler.cuda.context import KernelContext


class DeviceStatements:
    """The device-code statements of one kernel."""

    def __init__(self, kernel: KernelContext) -> None:
        self.kernel = kernel

    def note_writes(self, body: ast.Stmt) -> None:
        """Data that device code may write is no `const` kernel parameter."""
        for target in device_writes(self.kernel, body):
            self.kernel.note_written(target)

    def effect(self, stmt: ast.ExprStmt) -> None:
        """`call f(x);`, `__atomic_add(c.at(i), 1);`: run for what it does, its value dropped."""
        self._once_per_execution(stmt, f"{self.kernel.expressions.integer(stmt.expr).text};")

    def asm(self, stmt: ast.Asm) -> None:
        """As written, but for named operands: nvcc numbers them only, so `%[dst]` becomes `%0`."""
        self.kernel.out.source(stmt)
        operands = [
            ", ".join(self._operand(operand) for operand in stmt.outputs),
            ", ".join(self._operand(operand) for operand in stmt.inputs),
            ", ".join(f'"{clobber}"' for clobber in stmt.clobbers),
        ]
        while operands and not operands[-1]:
            operands.pop()
        sections = "".join(f" : {section}" if section else " :" for section in operands)
        qualifier = " volatile" if stmt.volatile else ""
        numbers = {op.name: index for index, op in enumerate((*stmt.outputs, *stmt.inputs)) if op.name}
        template = NAMED_OPERAND.sub(lambda match: f"%{numbers[match.group(1)]}", stmt.template)
        self._once_per_execution(stmt, f'asm{qualifier}("{template}"{sections});')

    def _operand(self, operand: ast.AsmOperand) -> str:
        return f'"{operand.constraint}"({self.kernel.expressions.integer(operand.expr).text})'

    def _once_per_execution(self, stmt: ast.Stmt, text: str) -> None:
        kernel = self.kernel
        context = kernel.info.context_of[id(stmt)]
        if kernel.threads.launch.execution_unit(context) == 1:
            kernel.out.line(text)
            return
        group = kernel.threads.group(context)
        kernel.out.line(f"if ({group.leader.text}) {{ {text} }}  // once per {group.level} instance")
        barrier = group.barrier()
        if barrier is not None and not kernel._divergent(stmt):
            kernel.out.line(barrier)


def device_writes(kernel: KernelContext, body: ast.Stmt) -> Iterator[ast.Expr]:
    """What device code in `body` may write: the data a call is passed, atomics' elements, asm outputs."""
    for stmt in ast.walk_statements(body):
        if isinstance(stmt, ast.Asm):
            yield from (operand.expr for operand in stmt.outputs)
        for expr in own_expressions(stmt):
            for node in ast.walk_expr(expr):
                if isinstance(node, ast.DeviceCall):
                    call = kernel.info.device_calls.get(id(node))
                    if call is not None:
                        yield from (a for a, p in zip(node.args, call.arguments) if p.kind == "data")
                elif is_atomic(node):
                    assert isinstance(node, ast.Call)
                    yield from node.args[:1]
