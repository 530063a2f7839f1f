"""Device code: calls of C++ device functions, atomic built-ins and inline assembly.

What each argument of a `call` passes (a scalar by value, data as a pointer to its first
element) and what its template arguments are is decided here, once, for every backend. Where a
call, an atomic or an `__asm__` may stand, and which type a call's result takes, needs the whole
statement and the launch model: analysis/device_checks.py.
"""

from __future__ import annotations

from dataclasses import replace

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.builtins import (
    ATOMIC_TYPES,
    NAMED_OPERAND,
    REGISTER_COUNTS,
    atomic_arity,
    register_action,
)
from choreo_kernel.compiler.analysis.resolve.base import ResolverBase
from choreo_kernel.compiler.analysis.resolve.warp_mma import on_warp
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import (
    CUDA_HALF_TYPES,
    NARROW_FLOAT_TYPES,
    UNKNOWN,
    Accumulator,
    Bounded,
    BufferArray,
    Data,
    DeviceArgument,
    DeviceCallInfo,
    DeviceResult,
    Fragment,
    Future,
    Scalar,
    TemplateValue,
    Unknown,
    Value,
    shape_text,
)
from choreo_kernel.compiler.printer import expression
from choreo_kernel.compiler.semantics.launch import register_owner
from choreo_kernel.compiler.semantics.levels import Storage
from choreo_kernel.compiler.semantics.register_layout import RegisterLayout

NULL_POINTER = "nullptr"
REGISTER_ARGUMENT_TYPES = ("f32", "f16", "bf16")  # a thread's registers as float*, __half*, __nv_bfloat16*


def ordinal(position: int) -> str:
    """1st, 2nd, 3rd, 4th... for a 0-based argument position."""
    number = position + 1
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


class DeviceRules(ResolverBase):
    """Device function calls, atomics and inline assembly."""

    # ------------------------------------------------------------------ call

    def _expr_DeviceCall(self, expr: ast.DeviceCall) -> Value:
        if register_action(expr.callee) is not None:
            return self._register_call(expr)
        template = None
        if expr.template_args is not None:
            template = tuple(self._template_value(arg) for arg in expr.template_args)
        arguments = tuple(
            self._device_argument(expr.callee, position, arg) for position, arg in enumerate(expr.args)
        )
        self.info.device_calls[id(expr)] = DeviceCallInfo(template, arguments)
        return DeviceResult(expr.callee)

    def _register_call(self, expr: ast.DeviceCall) -> Value:
        """`call croq::cuda::setreg_inc(240)`: setmaxnreg with the count it names, recorded for the CUDA
        lowering (`FunctionInfo.register_counts`); the sim has no registers to set."""
        values = [self._expr(arg) for arg in expr.args]
        count = values[0].const if len(values) == 1 and isinstance(values[0], Scalar) else None
        if expr.template_args is None and isinstance(count, int) and count in REGISTER_COUNTS:
            self.info.register_counts[id(expr)] = count
        elif not any(isinstance(value, Unknown) for value in values):
            self.error(
                f"'{expression(expr)}' needs one register count known when compiling, a multiple of 8 from "
                f"24 to 256, as setmaxnreg takes it: 'call {expr.callee}(240)'",
                expr.span,
            )
        return DeviceResult(expr.callee)

    def _expr_ForeignCast(self, expr: ast.ForeignCast) -> Value:
        """A foreign cast is C++ in a device call's argument list (`_device_argument`), not a Choreo value."""
        self._expr(expr.operand)
        self.error(
            f"'{expression(expr)}' casts to the C++ type '{expr.c_type}', which has no meaning in Choreo: a "
            f"foreign cast may only be an argument of a device function call (call f({expression(expr)}))",
            expr.span,
        )
        return UNKNOWN

    def _template_value(self, arg: ast.TemplateArg) -> TemplateValue:
        if arg.expr is None:
            assert arg.text is not None
            return TemplateValue("type" if arg.is_type else "name", arg.text)
        if isinstance(arg.expr, ast.Name) and self.scope.lookup(arg.expr.id) is None:
            return TemplateValue("name", arg.expr.id)  # a constant of the C++ code
        value = self._expr(arg.expr)
        const = value.const if isinstance(value, Scalar) else None
        if isinstance(const, int):
            return TemplateValue("int", const)
        if not isinstance(value, Unknown):
            self.error(
                f"the template argument '{expression(arg.expr)}' is not known at compile time; template "
                "arguments are constants, bounds such as #p, element types or C++ names",
                arg.span,
            )
        return TemplateValue("int", 0)

    def _device_argument(self, callee: str, position: int, arg: ast.Expr) -> DeviceArgument:
        if isinstance(arg, ast.ForeignCast):  # passed as it would be, then cast in C++
            return replace(self._device_argument(callee, position, arg.operand), cast=arg.c_type)
        if isinstance(arg, ast.Name) and arg.id == NULL_POINTER and self.scope.lookup(arg.id) is None:
            return DeviceArgument("null")
        value = self._expr(arg)
        if isinstance(value, Scalar):  # narrow floats are passed widened, as C passes float to double
            return DeviceArgument("value", "f32" if value.type in NARROW_FLOAT_TYPES else value.type)
        if isinstance(value, Bounded):
            return DeviceArgument("value", "s32")
        if isinstance(value, Data) and (
            value.elem not in NARROW_FLOAT_TYPES or value.elem in CUDA_HALF_TYPES
        ):
            return DeviceArgument("data", value.elem)
        which = f"the {ordinal(position)} argument of '{callee}'"
        if isinstance(value, Accumulator) or (isinstance(value, Fragment) and value.registers):
            return self._register_argument(which, arg, value)
        if isinstance(value, Data):
            problem = (
                f"{which} is {value.elem} data, which device functions cannot take yet (f16 and bf16 data "
                f"can be passed, as CUDA's __half and __nv_bfloat16): pass f32 data"
            )
        elif isinstance(value, DeviceResult):
            problem = (
                f"the result of device function '{value.callee}' has no type as {which}: assign it to a "
                "typed mutable scalar first (mutable int r = call ...)"
            )
        elif isinstance(value, Future):
            problem = (
                f"{which}, of type {value.describe()}, cannot be passed to a device function; pass the data "
                f"it holds: '{expression(arg)}.data'"
            )
        elif not isinstance(value, Unknown):
            problem = (
                f"{which}, of type {value.describe()}, cannot be passed to a device function, which takes "
                "scalars and data (an element count is '|s|')"
            )
        else:
            return DeviceArgument("value", "s32")
        self.error(problem, arg.span)
        return DeviceArgument("value", "s32")

    def _register_argument(self, which: str, arg: ast.Expr, value: Accumulator | Fragment) -> DeviceArgument:
        """A fragment or an accumulator passes the calling thread's registers of it: a pointer to its
        elements in the layout semantics/register_layout.py names (who may call: device_checks.py)."""
        symbol = self._symbol_of_name(arg)
        fallback = DeviceArgument("value", "s32")
        if symbol is None:
            self.error(f"{which} passes a fragment's registers: name the fragment itself", arg.span)
            return fallback
        if isinstance(value, Fragment):
            elem, dims = value.data.elem, value.data.dims
            declaration = self.info.context_of.get(id(symbol.declaration))
            tile_rows = register_owner(declaration).tile_rows if declaration is not None else 64
        else:
            elem, dims = value.elem, symbol.accumulator_shape or ()
            tile_rows = 16 if on_warp(self.info.mma_owners.get(symbol)) else 64
        if elem not in REGISTER_ARGUMENT_TYPES:
            self.error(
                f"{which} is the registers of {elem} '{symbol.name}'; device functions take the registers of "
                f"{', '.join(REGISTER_ARGUMENT_TYPES)} fragments and accumulators",
                arg.span,
            )
            return fallback
        if not dims or not all(isinstance(d, int) for d in dims):
            self.error(
                f"{which} passes the registers of '{symbol.name}', whose shape is not known here (an accumulator "
                "takes it from its first MMA, which must come before the call)",
                arg.span,
            )
            return fallback
        if int(dims[0]) % tile_rows:
            self.error(
                f"{which} passes the registers of '{symbol.name}', a {shape_text(dims)} tile: a device function takes "
                f"a fragment or an accumulator of a multiple of {tile_rows} rows (an 8-row warp tile, mma.sync m8n8, "
                "has no register layout of its own)",
                arg.span,
            )
            return fallback
        layout = RegisterLayout(tuple(int(d) for d in dims), tile_rows)
        return DeviceArgument("registers", elem, layout=layout)

    # ------------------------------------------------------------------ atomics

    def _atomic_call(self, name: str, expr: ast.Call) -> Value:
        """`__atomic_add(counts.at(bin), 1)`: one element of shared or global data, its old value."""
        arity = atomic_arity(name)
        values = [self._expr(arg) for arg in expr.args]
        if len(values) != arity:
            self.error(f"'{name}' expects {arity} arguments but got {len(values)}", expr.span)
            return UNKNOWN
        target, operands = expr.args[0], zip(expr.args[1:], values[1:])
        for operand, value in operands:
            if not isinstance(value, (Scalar, Bounded, Unknown)):
                self.error(f"'{name}' takes scalar operands; this is {value.describe()}", operand.span)
        data = self._atomic_target(name, target, values[0])
        if data is None:
            return UNKNOWN
        if data.elem not in ATOMIC_TYPES[name]:
            self.hopper_rule(
                f"'{name}' is not supported on {data.elem} elements on CUDA; it takes "
                + ", ".join(ATOMIC_TYPES[name]),
                target.span,
            )
        return Scalar(data.elem)

    def _atomic_target(self, name: str, target: ast.Expr, value: Value) -> Data | None:
        """The data whose element `target` selects, or None (reported) when it is no such element."""
        if isinstance(value, Unknown):
            return None
        data = self._data_of_element(target) if isinstance(value, Scalar) else None
        if data is None:
            what = f"a scalar ('{expression(target)}')" if isinstance(value, Scalar) else value.describe()
            self.error(
                f"'{name}' is not supported on {what}: its first argument is one element of shared or "
                "global data, such as counts.at(i)",
                target.span,
            )
            return None
        if data.storage == Storage.LOCAL:
            self.error(
                f"'{name}' is not supported on local data ('{data.root}' belongs to one thread): use "
                "shared or global data",
                target.span,
            )
            return None
        return data

    def _data_of_element(self, target: ast.Expr) -> Data | None:
        """The data a fully indexed `x.at(i, j)` (or `x[i]`) selects an element of."""
        if isinstance(target, ast.Paren):
            return self._data_of_element(target.inner)
        if not (isinstance(target, ast.Method) and target.name == "at") and not isinstance(target, ast.Index):
            return None
        root = target.value
        while isinstance(root, ast.Method | ast.Member | ast.Index | ast.Paren):
            root = root.inner if isinstance(root, ast.Paren) else root.value
        symbol = self._symbol_of_name(root)
        if symbol is None:
            return None
        value = symbol.value
        if isinstance(value, BufferArray):
            return value.element
        if isinstance(value, Future):
            return symbol.future.destination if symbol.future is not None else None
        return value if isinstance(value, Data) else None

    # ------------------------------------------------------------------ inline assembly

    def _stmt_Asm(self, stmt: ast.Asm, context: Context) -> None:
        named = [operand.name for operand in (*stmt.outputs, *stmt.inputs) if operand.name is not None]
        for name in sorted({name for name in named if named.count(name) > 1}):
            self.error(f"two operands of this __asm__ are named '{name}'", stmt.span)
        for name in dict.fromkeys(NAMED_OPERAND.findall(stmt.template)):
            if name not in named:
                self.error(
                    f"the template of this __asm__ refers to '%[{name}]', but no operand is named '{name}'",
                    stmt.span,
                )
        for operand in stmt.inputs:
            value = self._expr(operand.expr)
            if not isinstance(value, (Scalar, Bounded, Unknown)):
                self.error(
                    f"an input of __asm__ is a scalar; '{expression(operand.expr)}' is {value.describe()}",
                    operand.expr.span,
                )
        for operand in stmt.outputs:
            self._asm_output(operand, context)

    def _asm_output(self, operand: ast.AsmOperand, context: Context) -> None:
        expr = operand.expr
        value = self._expr(expr)
        if isinstance(expr, ast.Name):
            symbol = self.info.symbol_of.get(id(expr))
            if symbol is not None and not symbol.mutable:
                self.error(f"the output '{expr.id}' of __asm__ is immutable; declare it 'mutable'", expr.span)
                return
            if symbol is not None:  # an output writes its scalar as an assignment does
                self._check_host_scalar_change(symbol, expr, context)
        elif isinstance(value, Scalar) and self._data_of_element(expr) is None:
            self.error(
                f"an output of __asm__ is a mutable scalar or one element of data; '{expression(expr)}' "
                "is a value",
                expr.span,
            )
            return
        if not isinstance(value, (Scalar, Unknown)) or isinstance(value, DeviceResult):
            self.error(
                f"an output of __asm__ is a mutable scalar or one element of data; '{expression(expr)}' "
                f"is {value.describe()}",
                expr.span,
            )
