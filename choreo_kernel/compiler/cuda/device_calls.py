"""Device function calls and atomics as CUDA expressions.

A call passes what the analysis decided (analysis/resolve/device.py): a scalar by value, data
as a pointer to its first element, a fragment or an accumulator as the calling thread's register
array (semantics/register_layout.py says which elements it holds), `nullptr`; its template arguments are integers, C types and
C++ names. Its result, where it is used, is cast to the type the analysis gave it. An atomic is
CUDA's atomicAdd ... atomicCAS on the element's address (a 64-bit signed add or bitwise operation on
the same bits as unsigned, an f16 add in the header), and yields the old value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.builtins import atomic_arity, register_action
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import CUDA_HALF_TYPES, DeviceArgument, TemplateValue
from choreo_kernel.compiler.cuda import cexpr, elements
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.views import (
    AccumulatorRegisters,
    Lowered,
    LoweringError,
    Operand,
    RowRegisters,
    View,
)

_ATOMIC_FUNCTIONS = {
    "__atomic_add": "atomicAdd",
    "__atomic_sub": "atomicSub",
    "__atomic_exch": "atomicExch",
    "__atomic_min": "atomicMin",
    "__atomic_max": "atomicMax",
    "__atomic_and": "atomicAnd",
    "__atomic_or": "atomicOr",
    "__atomic_xor": "atomicXor",
    "__atomic_cas": "atomicCAS",
}
# On 64-bit signed words CUDA has these only for unsigned ones, whose bits they change alike.
_UNSIGNED_WORD = ("__atomic_add", "__atomic_and", "__atomic_or", "__atomic_xor")


# CUDA's half types as device code names them: the translation unit includes their header then.
_HALF_NAMES = {
    "cuda_fp16.h": re.compile(r"\b(?:__half2?|half2?|__float2half\w*|__half2float)\b"),
    "cuda_bf16.h": re.compile(r"\b(?:__nv_bfloat162?|nv_bfloat162?|__float2bfloat16\w*|__bfloat162float)\b"),
}


def cuda_headers(infos: Iterable[FunctionInfo], device_code: Iterable[str]) -> list[str]:
    """CUDA's headers for the half types the device code uses: those of the f16 and bf16 data its calls
    pass (as __half*, __nv_bfloat16*), and those it names itself (its own #includes are not kept)."""
    passed = {
        CUDA_HALF_TYPES[argument.type][1]
        for info in infos
        for call in info.device_calls.values()
        for argument in call.arguments
        if argument.kind in ("data", "registers") and argument.type in CUDA_HALF_TYPES
    }
    texts = list(device_code)
    named = {header for header, names in _HALF_NAMES.items() if any(names.search(text) for text in texts)}
    return sorted(passed | named)


def template_text(values: tuple[TemplateValue, ...]) -> str:
    """`<float, 64, mylib::MODE>`: integers as numbers, element types as their C types, names verbatim."""
    texts = [
        elements.c_type(str(value.value)) if value.kind == "type" else str(value.value) for value in values
    ]
    return f"<{', '.join(texts)}>"


class DeviceCallExpressions:
    """The `_DeviceCall` case of the expression lowering, and the atomics among its built-ins."""

    info: FunctionInfo
    if TYPE_CHECKING:

        def operand(self, expr: ast.Expr) -> Operand: ...

        def view(self, expr: ast.Expr) -> View: ...

        def value(self, expr: ast.Expr) -> Lowered: ...

    def _DeviceCall(self, expr: ast.DeviceCall) -> Operand:
        action = register_action(expr.callee)
        if action is not None:  # Croqtile's croq::cuda::setreg_inc(N): the header's setmaxnreg wrapper
            count = self.info.register_counts[id(expr)]
            return Operand(cexpr.raw(f"choreo::setmaxnreg_{action}<{count}>()", pure=False), "s32")
        call = self.info.device_calls[id(expr)]
        template = template_text(call.template_args) if call.template_args is not None else ""
        args = [self._device_argument(arg, passed) for arg, passed in zip(expr.args, call.arguments)]
        text = f"{expr.callee}{template}({', '.join(arg.text for arg in args)})"
        # A row vector's 4 lanes of a quad hold the same rows: after the call they take its first lane's.
        shared = [
            self._register_name(arg)
            for arg, passed in zip(expr.args, call.arguments)
            if passed.kind == "registers" and passed.layout is not None and passed.layout.replicated
        ]
        if call.result is None:
            agreed = "".join(f", choreo::agree_quads({name})" for name in shared)
            return Operand(cexpr.raw(f"({text}{agreed})" if shared else text, pure=False), "s32")
        for name in shared:
            text = f"choreo::agreed({text}, {name})"
        if call.result in elements.NARROW_FLOATS:  # computed as a float, rounded into the narrow type
            widened = cexpr.raw(f"static_cast<float>({text})", pure=False)
            return Operand(elements.convert(widened, "f32", call.result), call.result)
        result = f"static_cast<{elements.c_type(call.result)}>({text})"
        return Operand(cexpr.raw(result, pure=False), call.result)

    def _device_argument(self, arg: ast.Expr, passed: DeviceArgument) -> CExpr:
        if isinstance(arg, ast.ForeignCast) and passed.cast is not None:  # `__to<"T">(x)`: ((T)(x))
            inner = self._device_argument(arg.operand, replace(passed, cast=None))
            return cexpr.raw(f"(({passed.cast})({inner.text}))")
        if passed.kind == "null":
            return cexpr.raw("nullptr")
        if passed.kind == "registers":  # the thread's register array, as its elements' type
            name = self._register_name(arg)
            if passed.type in CUDA_HALF_TYPES:  # two elements to a register, the first in the low half
                return cexpr.raw(f"reinterpret_cast<{CUDA_HALF_TYPES[passed.type][0]}*>({name})")
            return cexpr.raw(name)
        if passed.kind == "data" and passed.type in CUDA_HALF_TYPES:  # choreo::f16 holds a __half's bits
            return cexpr.raw(
                f"reinterpret_cast<{CUDA_HALF_TYPES[passed.type][0]}*>({self.view(arg).start.text})"
            )
        if passed.kind == "data":
            return self.view(arg).start
        value = self.operand(arg)
        return elements.convert(value.expr, value.type, passed.type)

    def _register_name(self, arg: ast.Expr) -> str:
        registers = self.value(arg)
        if not isinstance(registers, AccumulatorRegisters | RowRegisters):
            raise LoweringError(
                "a device function is passed the registers of a fragment or an accumulator", arg
            )
        return registers.name.text

    def _ForeignCast(self, expr: ast.ForeignCast) -> Operand:
        raise LoweringError("a foreign cast is lowered only as an argument of a device function call", expr)

    def _atomic(self, name: str, expr: ast.Call) -> Operand:
        if len(expr.args) != atomic_arity(name):
            raise LoweringError(f"'{name}' expects {atomic_arity(name)} arguments", expr)
        element = self.operand(expr.args[0])
        if element.storage is None:
            raise LoweringError(f"'{name}' needs one element of shared or global data", expr.args[0])
        operands = [self.operand(arg) for arg in expr.args[1:]]
        elem = element.type
        address = f"&({element.expr.text})"
        if elem == "f16":  # atom.add.noftz.f16, through the header: choreo::f16 is the half's bits
            value = elements.widen(operands[0].expr, operands[0].type)[0]
            return Operand(cexpr.raw(f"choreo::atomic_add({address}, {value.text})", pure=False), elem)
        function = _ATOMIC_FUNCTIONS[name]
        values = [elements.convert(operand.expr, operand.type, elem).text for operand in operands]
        if elem == "s64" and name in _UNSIGNED_WORD:
            word = "unsigned long long"
            args = [f"reinterpret_cast<{word}*>({address})", *(f"static_cast<{word}>({v})" for v in values)]
            text = f"static_cast<long long>({function}({', '.join(args)}))"
        else:
            c_type = elements.c_type(elem)
            text = f"{function}({', '.join([address, *(f'static_cast<{c_type}>({v})' for v in values)])})"
        return Operand(cexpr.raw(text, pure=False), elem)
