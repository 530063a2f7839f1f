"""Expressions: literals, arithmetic with C promotion, shapes and tuples, calls of built-ins."""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.builtins import ATOMIC_BUILTINS, BUILTINS, FUTURE_BUILTINS
from choreo_kernel.compiler.analysis.resolve.device import DeviceRules
from choreo_kernel.compiler.analysis.resolve.selection import SELECT, SelectionRules
from choreo_kernel.compiler.analysis.values import (
    ELEMENT_BYTES,
    FLOAT_TYPES,
    INT_TYPES,
    UNKNOWN,
    Accumulator,
    Bounded,
    BoundedTuple,
    Builtin,
    Data,
    Dim,
    Fragment,
    ITuple,
    Scalar,
    Shape,
    Unknown,
    Value,
    ceil_bound,
    fold,
    product,
    promote,
)
from choreo_kernel.compiler.diagnostics import abbreviated
from choreo_kernel.compiler.printer import expression
from choreo_kernel.compiler.semantics import cint
from choreo_kernel.compiler.semantics.math import MATH_FUNCTIONS, MathFunction

BOUND_OPERATORS = ("#-", "#+")


class ExpressionRules(DeviceRules, SelectionRules):
    """Expressions: literals, arithmetic with C promotion, shapes and tuples, calls of built-ins."""

    def _expr_Name(self, expr: ast.Name) -> Value:
        if expr.id == "_":
            return UNKNOWN
        symbol = self._lookup(expr)
        if symbol is None:
            return Builtin(expr.id) if expr.id in BUILTINS else UNKNOWN
        return symbol.value

    def _expr_IntLiteral(self, expr: ast.IntLiteral) -> Value:
        literal = cint.literal_type(expr.value, expr.unsigned, expr.long)
        if literal is None:
            kind = "unsigned" if expr.unsigned else "signed"
            bounds = cint.literal_range(expr.unsigned, expr.text.lower().startswith("0x"))
            self.error(
                f"{kind} integer literal '{abbreviated(expr.text or str(expr.value))}' out of range {bounds}: it does not fit "
                "in 64 bits",
                expr.span,
            )
            return UNKNOWN
        return Scalar(literal, expr.value)

    def _expr_FloatLiteral(self, expr: ast.FloatLiteral) -> Value:
        return Scalar("f32" if expr.single else "f64")

    def _expr_BoolLiteral(self, expr: ast.BoolLiteral) -> Value:
        return Scalar("bool", int(expr.value))

    def _expr_StringLiteral(self, expr: ast.StringLiteral) -> Value:
        self.error(
            "a string is not a value here: string variables are not supported; strings are only allowed in "
            "print statements and asserts",
            expr.span,
        )
        return UNKNOWN

    def _expr_Paren(self, expr: ast.Paren) -> Value:
        return self._expr(expr.inner)

    def _expr_AnyDim(self, expr: ast.AnyDim) -> Value:
        self.error("'?' (any size) is only allowed in parameter shapes", expr.span)
        return UNKNOWN

    def _expr_TypeSize(self, expr: ast.TypeSize) -> Value:
        return Scalar("s32", ELEMENT_BYTES.get(expr.type_name, 4))

    def _expr_Cast(self, expr: ast.Cast) -> Value:
        value = self._expr(expr.operand)
        if isinstance(value, (Accumulator, Fragment)):
            return self._converted(value, expr)  # resolve/fragments.py
        if not isinstance(value, (Scalar, Bounded, Unknown)):
            self.error(f"only scalars can be cast, got {value.describe()}", expr.operand.span)
        return Scalar(expr.type_name)

    def _expr_TupleLiteral(self, expr: ast.TupleLiteral) -> Value:
        return ITuple(self._shape_dims(expr.items))  # `{t, 5}` concatenates, as `[s, 6]` does

    def _expr_ListLiteral(self, expr: ast.ListLiteral) -> Value:
        return Shape(self._shape_dims(expr.items))

    def _expr_ElementCount(self, expr: ast.ElementCount) -> Value:
        value = self._expr(expr.operand)
        if isinstance(value, Shape):
            return Scalar("s32", product(value.dims))
        if isinstance(value, ITuple):  # the product of its items, as for the shape they would make
            return Scalar("s32", product(value.items))
        if isinstance(value, Data):
            return Scalar("s32", product(value.dims))
        if not isinstance(value, Unknown):
            self.error(f"'|x|' is the element count of a shape; this is {value.describe()}", expr.span)
        return Scalar("s32")

    def _expr_Ternary(self, expr: ast.Ternary) -> Value:
        self._condition(expr.condition)
        with self._guarded((expr.condition, True)):
            then = self._expr(expr.then)
        with self._guarded((expr.condition, False)):
            otherwise = self._expr(expr.otherwise)
        if isinstance(then, Scalar) and isinstance(otherwise, Scalar):
            return Scalar(promote(then.type, otherwise.type) or then.type)
        return then if not isinstance(then, Unknown) else otherwise

    def _expr_Unary(self, expr: ast.Unary) -> Value:
        value = self._expr(expr.operand)
        if expr.op == "#":
            if isinstance(value, Bounded):
                return Scalar("s32", value.bound)
            if isinstance(value, BoundedTuple):
                return Shape(value.bounds)
            if not isinstance(value, Unknown):
                self.error(f"'#' gives the bound of a bounded value; this is {value.describe()}", expr.span)
            return Scalar("s32")
        if expr.op == "&":
            self.error("taking an address ('&') is not supported", expr.span)
            return UNKNOWN
        if isinstance(value, Shape) and expr.op in "+-":
            return Shape(tuple(fold("*", -1, d) if expr.op == "-" else d for d in value.dims))
        if isinstance(value, Bounded):
            return Scalar("s32")
        if isinstance(value, Scalar):
            if expr.op == "!":
                return Scalar("bool")
            if expr.op == "~" and value.type in FLOAT_TYPES:
                self.error(f"'~' needs an integer operand, got {value.type}", expr.span)
            const = fold("*", -1, value.const) if expr.op == "-" and value.const is not None else None
            return Scalar(value.type, const if expr.op != "~" else None)
        if not isinstance(value, Unknown):
            self.error(f"'{expr.op}' cannot apply to {value.describe()}", expr.span)
        return UNKNOWN

    def _expr_IncDec(self, expr: ast.IncDec) -> Value:
        return self._incdec(expr)

    def _expr_Binary(self, expr: ast.Binary) -> Value:
        template_call = self._template_call(expr)
        if template_call is not None:
            self.error(template_call, expr.span)
            return UNKNOWN
        left = self._expr(expr.left)
        right = self._expr(expr.right)
        op = expr.op
        if op == "#":
            if isinstance(left, Bounded) and isinstance(right, Bounded):
                return Bounded(fold("*", left.bound, right.bound))
            for side, value in ((expr.left, left), (expr.right, right)):
                if not isinstance(value, (Bounded, Unknown)):
                    self.error(f"'#' composes two bounded values; this is {value.describe()}", side.span)
            return UNKNOWN
        if op in BOUND_OPERATORS:
            return self._bound_arithmetic(expr, left, right)
        if isinstance(left, (Shape, ITuple)) or isinstance(right, (Shape, ITuple)):
            return self._shape_arithmetic(expr, left, right)
        if isinstance(left, Unknown) or isinstance(right, Unknown):
            return UNKNOWN
        for side, value in ((expr.left, left), (expr.right, right)):
            if not isinstance(value, (Scalar, Bounded)):
                self.error(f"'{op}' cannot apply to {value.describe()}", side.span)
                return UNKNOWN
        left_type = left.type if isinstance(left, Scalar) else "s32"
        right_type = right.type if isinstance(right, Scalar) else "s32"
        if {left_type, right_type} == {"f16", "bf16"}:
            self.error(
                f"f16 and bf16 are mixed in one expression ({left_type} {op} {right_type}); cast one side first",
                expr.span,
            )
            return UNKNOWN
        if op in ("%", "<<", ">>", "&", "|", "^") and (left_type in FLOAT_TYPES or right_type in FLOAT_TYPES):
            self.error(f"'{op}' needs integer operands, got {left_type} and {right_type}", expr.span)
            return UNKNOWN
        if op in ("==", "!=", "<", ">", "<=", ">=", "&&", "||"):
            known = [side.const if isinstance(side, Scalar) else None for side in (left, right)]
            if all(isinstance(k, int) for k in known):  # folded, for `assert` at compile time
                return Scalar("bool", int(bool(cint.logical(op, *known))))  # type: ignore[arg-type]
            return Scalar("bool")
        if isinstance(left, Bounded) and isinstance(right, Scalar) and right_type in INT_TYPES:
            return left
        if isinstance(right, Bounded) and isinstance(left, Scalar) and left_type in INT_TYPES and op in "+*":
            return right
        result = promote(left_type, right_type) or left_type
        const = None
        left_const = left.const if isinstance(left, Scalar) else None
        right_const = right.const if isinstance(right, Scalar) else None
        if left_const is not None and right_const is not None and op in "+-*/%" and result in INT_TYPES:
            const = fold(op, left_const, right_const)
            if op in "/%" and right_const == 0:
                self.error("division by zero", expr.span)
        return Scalar(result, const)

    def _template_call(self, expr: ast.Binary) -> str | None:
        """`stage<2>(order)` reads as `(stage < 2) > (order)`: where `stage` names nothing, it was meant as a
        C++-style template call, which Choreo does not have (the removed `stage<N>` of pipelines, or a
        device function called without `call`). The problem, or None where `expr` is a comparison."""
        inner = expr.left
        if not (
            expr.op == ">"
            and isinstance(expr.right, ast.Paren)
            and isinstance(inner, ast.Binary)
            and inner.op == "<"
            and isinstance(inner.left, ast.Name)
            and self.scope.lookup(inner.left.id) is None
            and inner.left.id not in BUILTINS
        ):
            return None
        name, argument, operand = inner.left.id, expression(inner.right), expression(expr.right.inner)
        text = f"{name}<{argument}>({operand})"
        if name == "stage":
            return (
                f"'{text}' is not part of the language: a pipeline has no stage of its own (a future has no "
                f"stage); index a buffer array with the order modulo its size, '[{operand} % {argument}]', and "
                f"a cyclic event array with the order itself ('.at({operand})')"
            )
        return (
            f"'{text}' is not part of the language: a C++ template function of the device code is called "
            f"with 'call {text}' inside a parallel"
        )

    def _bound_arithmetic(self, expr: ast.Binary, left: Value, right: Value) -> Value:
        """`x #- k`, `x #+ k`: the value of `x` with its bound moved by k (Croqtile's bound arithmetic)."""
        if isinstance(left, Unknown) or isinstance(right, Unknown):
            return UNKNOWN
        if not isinstance(left, Bounded):
            self.error(
                f"'{expr.op}' changes the bound of a bounded value; this is {left.describe()}", expr.left.span
            )
            return UNKNOWN
        if not (isinstance(right, Scalar) and right.type in INT_TYPES):
            self.error(
                f"'{expr.op}' moves a bound by an integer; this is {right.describe()}", expr.right.span
            )
            return UNKNOWN
        bound = fold(expr.op[1], left.bound, self._dim_of(expr.right, right))
        if isinstance(bound, int) and bound <= 0:
            self.error(f"'{expression(expr)}' leaves a bound of {bound}; a bound must be positive", expr.span)
        return Bounded(bound)

    def _shape_arithmetic(self, expr: ast.Binary, left: Value, right: Value) -> Value:
        """Per-dimension arithmetic, typed as Croqtile types it: a shape with an ituple or an integer is
        a shape (`s + {2, 0}`, `s / 4`); two shapes only divide (`/`, `%`), into an ituple (the tiling
        factors of one by the other), since adding or multiplying the extents of two shapes means
        nothing; ituples with ituples or integers are ituples."""

        def items(value: Value) -> tuple[Dim, ...] | None:
            if isinstance(value, Shape):
                return value.dims
            if isinstance(value, ITuple):
                return value.items
            return None

        left_items, right_items = items(left), items(right)
        op = expr.op
        if op not in ("+", "-", "*", "/", "%"):
            self.error(f"'{op}' does not apply to shapes", expr.span)
            return UNKNOWN
        for side, value in ((expr.left, left), (expr.right, right)):
            if isinstance(value, Scalar) and value.type not in INT_TYPES:
                self.error(
                    f"in operation '{op}', a shape combines with integers; unable to apply it to "
                    f"{value.describe()} '{expression(side)}'",
                    side.span,
                )
                return UNKNOWN
        shapes = isinstance(left, Shape) and isinstance(right, Shape)
        if shapes and op in ("+", "-", "*"):
            self.error(
                f"in operation '{op}', unable to apply it to two shapes ({left.describe()} and "
                f"{right.describe()}): extents of two shapes do not add or multiply; change a shape by an "
                "ituple (s + {2, 0}) or an integer",
                expr.span,
            )
            return UNKNOWN
        if left_items is not None and right_items is not None:
            if len(left_items) != len(right_items):
                self.error(
                    f"in operation '{op}', the dimensions are inconsistent ({len(left_items)} vs. "
                    f"{len(right_items)}): per-dimension arithmetic needs operands of one rank",
                    expr.span,
                )
                return UNKNOWN
            dims = tuple(fold(op, a, b) for a, b in zip(left_items, right_items))
        elif left_items is not None:
            scalar = self._dim_of(expr.right, right)
            dims = tuple(fold(op, a, scalar) for a in left_items)
        else:
            assert right_items is not None
            scalar = self._dim_of(expr.left, left)
            dims = tuple(fold(op, scalar, b) for b in right_items)
        if shapes:
            return ITuple(dims)
        return Shape(dims) if isinstance(left, Shape) or isinstance(right, Shape) else ITuple(dims)

    def _expr_Call(self, expr: ast.Call) -> Value:
        callee = expr.callee
        if isinstance(callee, ast.Name) and self.scope.lookup(callee.id) is None and callee.id in BUILTINS:
            return self._select(expr) if callee.id == SELECT else self._builtin_call(callee.id, expr)
        target = self._expr(callee)
        if isinstance(target, (Shape, ITuple)):
            return self._dimension_of(target, expr.args, expr.span)
        if isinstance(target, BoundedTuple):  # index(k): element k, a bounded integer
            element = self._dimension_of(ITuple(target.bounds), expr.args, expr.span)
            bound = element.const if isinstance(element, Scalar) else None
            return Bounded("?" if bound is None else bound)
        if isinstance(target, Bounded):
            # j(k): the value k of a bounded variable's range, with its bound (a chunkat index);
            # j(-1) is #j - 1 (12.8).
            if len(expr.args) != 1:
                self.error("a range value takes one index: j(k)", expr.span)
            for arg in expr.args:
                self._range_index(arg, target.bound)
            return Bounded(target.bound)
        if isinstance(callee, ast.Name) and self.scope.lookup(callee.id) is None:
            for arg in expr.args:
                self._expr(arg)
            return UNKNOWN
        if not isinstance(target, Unknown):
            self.error(f"{target.describe()} cannot be called", callee.span)
        return UNKNOWN

    def _range_index(self, arg: ast.Expr, bound: Dim) -> None:
        value = self._int_expr(arg, "a range index")
        index = value.const if isinstance(value, Scalar) else None
        if isinstance(index, int) and isinstance(bound, int) and not -bound <= index < bound:
            self.error(f"range value {index} is out of range for a bound of {bound}", arg.span)

    def _builtin_call(self, name: str, expr: ast.Call) -> Value:
        if name in ATOMIC_BUILTINS:
            return self._atomic_call(name, expr)
        args = [self._expr(arg) for arg in expr.args]
        if name in FUTURE_BUILTINS:
            self.error(f"'{name}(...)' is a statement, not a value", expr.span)
            return UNKNOWN
        function = MATH_FUNCTIONS.get(name)
        arity = function.arity if function is not None else 2  # cdiv(a, b)
        if len(args) != arity:
            self.error(f"'{name}' takes {arity} argument(s), got {len(args)}", expr.span)
            return UNKNOWN
        if name == "cdiv":
            dims = [self._dim_of(arg, value) for arg, value in zip(expr.args, args)]
            return Scalar("s32", ceil_bound(*dims))
        assert function is not None
        for arg, value in zip(expr.args, args):
            if not isinstance(value, (Scalar, Bounded, Unknown)):
                self.error(f"'{name}' takes scalars; this is {value.describe()}", arg.span)
                return UNKNOWN
        types = [v.type if isinstance(v, Scalar) else "s32" for v in args if isinstance(v, (Scalar, Bounded))]
        if len(types) != len(args):
            return UNKNOWN
        if function.result == "arithmetic":
            return Scalar(types[0] if len(types) == 1 else promote(*types) or types[0])
        if function.result == "integer":
            return self._integer_builtin(function, expr, args, types)
        return Scalar("f64" if "f64" in types else "f32")

    def _integer_builtin(
        self, function: MathFunction, expr: ast.Call, args: list[Value], types: list[str]
    ) -> Value:
        """`__alignup(n, a)`, `__aligndown(n, a)`: folded when both are known, like any integer arithmetic."""
        for arg, elem in zip(expr.args, types):
            if elem not in INT_TYPES and elem != "bool":
                self.error(f"'{function.name}' takes integers, got {elem}", arg.span)
                return UNKNOWN
        consts = [value.const if isinstance(value, Scalar) else None for value in args]
        result = promote(*types) or "s32"
        if consts[1] == 0:
            self.error(f"'{function.name}' aligns to a multiple of 0", expr.args[1].span)
            return UNKNOWN
        if all(isinstance(const, int) for const in consts):
            return Scalar(result, function.reference(None, *consts))
        return Scalar(result)
