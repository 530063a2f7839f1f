"""Expressions, evaluated once for all the threads of a frame.

An expression's value is uniform, or an array with one entry per active thread.  Where
only some threads would evaluate a sub-expression (a branch of `?:`, the right side of
`&&` and `||`), it is evaluated for those threads alone, so a guard such as
`t < n && x.at(t) > 0` protects the threads it excludes, as in C.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.builtins import ATOMIC_BUILTINS, BUILTINS
from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES, INT_TYPES
from choreo_kernel.compiler.printer import expression
from choreo_kernel.compiler.semantics import cint
from choreo_kernel.runtime.dtypes import numpy_dtype
from choreo_kernel.runtime.sim import arith
from choreo_kernel.runtime.sim.calls import DeviceEvaluation
from choreo_kernel.runtime.sim.device_library import DeviceLibrary
from choreo_kernel.runtime.sim.errors import SimError
from choreo_kernel.runtime.sim.events import EventArray, EventTarget
from choreo_kernel.runtime.sim.frames import Frame, read
from choreo_kernel.runtime.sim.operations import AccumulatorSlots, Fragment, Operation
from choreo_kernel.runtime.sim.registers import NO_ELEMENTS, RegisterElement, is_register
from choreo_kernel.runtime.sim.values import BoundedTuple, Buffer, IntTuple, Slots, TupleOf, reshaped_slots
from choreo_kernel.runtime.sim.views import Bounded, Element, Tiling, View, Window

_SHAPE_OPS = ("+", "-", "*", "/", "%")


def plain(value: Any) -> Any:
    """A number without its bound."""
    return value.value if isinstance(value, Bounded) else value


def _is_integer(value: Any) -> bool:
    try:
        return arith.element_type(value) in INT_TYPES
    except SimError:
        return False


class Evaluator(DeviceEvaluation):
    """Evaluates expressions in a frame; one handler per kind of expression node."""

    # Each kind of expression and its handler (tests/test_passes.py checks that every kind is here).
    HANDLERS: ClassVar[dict[type[ast.Expr], str]] = {
        ast.Name: "_name",
        ast.IntLiteral: "_int",
        ast.FloatLiteral: "_float",
        ast.BoolLiteral: "_bool",
        ast.StringLiteral: "_string",
        ast.Paren: "_paren",
        ast.Binary: "_binary",
        ast.Unary: "_unary",
        ast.IncDec: "_incdec",
        ast.Ternary: "_ternary",
        ast.Call: "_call",
        ast.Member: "_member",
        ast.Method: "_method",
        ast.Index: "_index",
        ast.TupleLiteral: "_tuple",
        ast.ListLiteral: "_tuple",
        ast.ElementCount: "_element_count",
        ast.TypeSize: "_type_size",
        ast.Cast: "_cast",
        ast.AnyDim: "_any_dim",
        ast.DeviceCall: "_device_call",
        ast.ForeignCast: "_foreign_cast",
    }

    def __init__(
        self,
        device: DeviceLibrary | None = None,
        ceil_chunks: dict[int, tuple[int | None, ...]] | None = None,
    ) -> None:
        self.device = device  # the program's device code, built for the CPU (when it calls any)
        self.ceil_chunks = ceil_chunks or {}  # the chunkats that cut tiles of a cdiv's t (FunctionInfo)
        self._handlers = {kind: getattr(self, name) for kind, name in self.HANDLERS.items()}

    # ------------------------------------------------------------ entry points

    def raw(self, expr: ast.Expr, frame: Frame) -> Any:
        """What `expr` denotes: a number, a view, an element (not loaded), an event, a future..."""
        return self._handlers[type(expr)](expr, frame)

    def value(self, expr: ast.Expr, frame: Frame) -> Any:
        """The value of `expr`, with a selected element loaded."""
        result = self.raw(expr, frame)
        return result.load() if isinstance(result, Element) else result

    def element(self, expr: ast.Expr, frame: Frame) -> Element:
        """The element an assignment writes."""
        result = self.raw(expr, frame)
        if not isinstance(result, Element):
            raise SimError("an assignment needs one element: index every dimension with .at")
        return result

    def view(self, expr: ast.Expr, frame: Frame) -> View:
        return self.as_view(self.raw(expr, frame), frame)

    def truth(self, expr: ast.Expr, frame: Frame) -> Any:
        """C truthiness of `expr`: a bool, or a bool per active thread."""
        return arith.truth(plain(self.value(expr, frame)))

    def selected(self, condition: ast.Expr, frame: Frame) -> np.ndarray:
        """The threads of `frame` for which `condition` holds."""
        holds = self.truth(condition, frame)
        if isinstance(holds, np.ndarray):
            return frame.lanes[holds]
        return frame.lanes if holds else frame.lanes[:0]

    def uniform_int(self, expr: ast.Expr, frame: Frame) -> int:
        return _uniform(self.value(expr, frame))

    def ints(self, items: tuple[ast.Expr, ...], frame: Frame) -> list[int]:
        """Integers of a shape or count list; shapes inside it (`[s, 6]`) are spliced in."""
        result: list[int] = []
        for item in items:
            value = self.value(item, frame)
            if isinstance(value, IntTuple):
                result.extend(value.items)
            elif isinstance(value, BoundedTuple):  # the values of a bounded ituple's elements
                result.extend(_uniform(element) for element in value.items)
            else:
                result.append(_uniform(value))
        return result

    def extents(self, expr: ast.Expr, frame: Frame) -> list[int]:
        """The counts of `by N`, `by [A, B]`, `in [A, B]` or `in shape`."""
        return self.ints(expr.items if isinstance(expr, ast.ListLiteral) else (expr,), frame)

    @staticmethod
    def as_view(value: Any, frame: Frame) -> View:
        """Spanned data as a view: a buffer, a view, a data future's destination."""
        if isinstance(value, View):
            return value
        if isinstance(value, Buffer):
            return value.view(frame.lanes)
        if isinstance(value, Operation):
            return value.data(frame.lanes)
        if isinstance(value, Tiling):
            return value.first()
        if isinstance(value, Window):
            return value.view.window(value.extents, [0] * len(value.extents), value.strides)
        raise SimError(f"expected spanned data, got {type(value).__name__.lower()}")

    # ------------------------------------------------------------- handlers

    @staticmethod
    def _int(expr: ast.IntLiteral, frame: Frame) -> Any:
        literal = cint.literal_type(expr.value, expr.unsigned, expr.long)
        if literal == "s32":
            return expr.value  # a Python int is a C int here
        return numpy_dtype(literal or "s64").type(expr.value)

    @staticmethod
    def _float(expr: ast.FloatLiteral, frame: Frame) -> Any:
        return np.float32(expr.value) if expr.single else np.float64(expr.value)

    @staticmethod
    def _bool(expr: ast.BoolLiteral, frame: Frame) -> Any:
        return expr.value

    @staticmethod
    def _string(expr: ast.StringLiteral, frame: Frame) -> Any:
        raise SimError("a string is only a value in a print statement")

    @staticmethod
    def _any_dim(expr: ast.AnyDim, frame: Frame) -> Any:
        raise SimError("'?' (any size) is only allowed in parameter shapes")

    @staticmethod
    def _type_size(expr: ast.TypeSize, frame: Frame) -> Any:
        return ELEMENT_BYTES[expr.type_name]

    def _paren(self, expr: ast.Paren, frame: Frame) -> Any:
        return self.raw(expr.inner, frame)

    def _tuple(self, expr: ast.TupleLiteral | ast.ListLiteral, frame: Frame) -> Any:
        return IntTuple(tuple(self.ints(expr.items, frame)))

    def _cast(self, expr: ast.Cast, frame: Frame) -> Any:
        return arith.convert(plain(self.value(expr.operand, frame)), expr.type_name)

    def _name(self, expr: ast.Name, frame: Frame) -> Any:
        stored = frame.scope.owner(expr.id).names[expr.id]
        if isinstance(stored, TupleOf):  # a bounded ituple: its elements' current values
            return BoundedTuple(
                tuple(read(frame.scope.owner(name).names[name], frame.lanes) for name in stored.elements)
            )
        return read(stored, frame.lanes)

    def _binary(self, expr: ast.Binary, frame: Frame) -> Any:
        op = expr.op
        if op in ("&&", "||"):
            return self._logical(expr, frame)
        left, right = self.value(expr.left, frame), self.value(expr.right, frame)
        if op == "#":
            if not (isinstance(left, Bounded) and isinstance(right, Bounded)):
                raise SimError("'#' composes two bounded values")
            composed = arith.binary("+", arith.binary("*", left.value, right.bound), right.value)
            return Bounded(composed, left.bound * right.bound)
        if op in ("#-", "#+"):  # x #- k: the value of x with its bound moved by k
            if not isinstance(left, Bounded):
                raise SimError(f"'{op}' changes the bound of a bounded value")
            return Bounded(left.value, int(arith.binary(op[1], left.bound, _uniform(right))))
        if isinstance(left, IntTuple) or isinstance(right, IntTuple):
            return _shape_arithmetic(op, left, right)
        result = arith.binary(op, plain(left), plain(right))
        if op in arith.COMPARISONS:
            return result
        # Arithmetic with an integer keeps the bound of the bounded operand (language.md 3.4).
        if isinstance(left, Bounded) and not isinstance(right, Bounded) and _is_integer(right):
            return Bounded(result, left.bound)
        if isinstance(right, Bounded) and not isinstance(left, Bounded) and _is_integer(left) and op in "+*":
            return Bounded(result, right.bound)
        return result

    def _logical(self, expr: ast.Binary, frame: Frame) -> Any:
        left = self.truth(expr.left, frame)
        if not isinstance(left, np.ndarray):
            decided = not left if expr.op == "&&" else left
            return left if decided else self.truth(expr.right, frame)
        result = left.copy()
        undecided = left if expr.op == "&&" else ~left  # where the right side decides
        if undecided.any():
            result[undecided] = self.truth(expr.right, frame.narrow(frame.lanes[undecided]))
        return result

    def _ternary(self, expr: ast.Ternary, frame: Frame) -> Any:
        condition = self.truth(expr.condition, frame)
        if not isinstance(condition, np.ndarray):
            return self.value(expr.then if condition else expr.otherwise, frame)
        branches = [
            (mask, plain(self.value(branch, frame.narrow(frame.lanes[mask]))))
            for mask, branch in ((condition, expr.then), (~condition, expr.otherwise))
            if mask.any()
        ]
        elem = arith.promote(*(arith.element_type(value) for _, value in branches))
        result = np.empty(len(frame.lanes), dtype=numpy_dtype(elem))
        for mask, value in branches:
            result[mask] = value
        return result

    def _unary(self, expr: ast.Unary, frame: Frame) -> Any:
        value = self.value(expr.operand, frame)
        if expr.op == "#" and not isinstance(value, BoundedTuple):
            if not isinstance(value, Bounded):
                raise SimError("'#' gives the bound of a bounded value")
            return value.bound
        if isinstance(value, BoundedTuple) and expr.op == "#":
            return IntTuple(tuple(item.bound for item in value.items))
        if isinstance(value, IntTuple) and expr.op in "+-":
            return IntTuple(tuple(-item if expr.op == "-" else item for item in value.items))
        if expr.op == "&":
            raise SimError("taking an address ('&') is not supported")
        return arith.unary(expr.op, plain(value))

    def _incdec(self, expr: ast.IncDec, frame: Frame) -> Any:
        target = expr.operand
        step = "+" if expr.op == "++" else "-"
        if isinstance(target, ast.Name):
            old = plain(self.value(target, frame))
            new = arith.binary(step, old, 1)
            frame.store(target.id, new)
        else:
            element = self.element(target, frame)
            old = element.load()
            new = arith.binary(step, old, 1)
            element.store(new)
        return new if expr.prefix else old

    def _call(self, expr: ast.Call, frame: Frame) -> Any:
        callee = expr.callee
        if isinstance(callee, ast.Name) and callee.id in BUILTINS and frame.scope.find(callee.id) is None:
            if callee.id == "select":
                return self._select(expr, frame)
            if callee.id in ("swap", "rotate"):
                raise SimError(f"'{callee.id}(...)' is a statement, not a value")
            if callee.id in ATOMIC_BUILTINS:
                return self._atomic(callee.id, expr, frame)
            return arith.builtin(callee.id, [plain(self.value(arg, frame)) for arg in expr.args])
        target = self.value(callee, frame)
        (index,) = (self.uniform_int(arg, frame) for arg in expr.args)
        if isinstance(target, IntTuple):
            return target.item(index)
        if isinstance(target, BoundedTuple):  # index(k): element k
            if not -len(target.items) <= index < len(target.items):
                raise SimError(f"element {index} is out of range for a bounded ituple of {len(target.items)}")
            return target.items[index]
        if isinstance(target, Bounded):  # j(k): a value of a bounded variable's range; j(-1) is #j - 1
            return Bounded(index if index >= 0 else target.bound + index, target.bound)
        raise SimError(f"a {type(target).__name__.lower()} cannot be called")

    def _select(self, expr: ast.Call, frame: Frame) -> Any:
        """`select(k, a, b, ...)`: the k-th value (a future stands for its data), k checked when it runs."""
        factor, *operands = expr.args
        try:
            index = self.uniform_int(factor, frame)
        except SimError:
            raise SimError(
                f"the select factor '{expression(factor)}' differs between the threads that run it; the sim "
                "selects one buffer for all of them: make it the same in every thread"
            ) from None
        if not 0 <= index < len(operands):
            raise SimError(
                f"the select factor '{expression(factor)}' is {index}, not in bound [0, {len(operands)})"
            )
        chosen = self.raw(operands[index], frame)
        return chosen.data(frame.lanes) if isinstance(chosen, Operation) else chosen

    def _member(self, expr: ast.Member, frame: Frame) -> Any:
        base = self.raw(expr.value, frame)
        if expr.name == "data":
            if not isinstance(base, Operation):
                return self.as_view(base, frame)  # spanned data's `.data` is itself
            return base.data(frame.lanes)
        if expr.name == "span":
            return IntTuple(_span(base, frame))
        raise SimError(f"no member '.{expr.name}' here")

    def _method(self, expr: ast.Method, frame: Frame) -> Any:
        base = self.raw(expr.value, frame)
        name, args = expr.name, expr.args
        if isinstance(base, EventArray):
            return self._ring(base, name, args, frame)
        if name == "span":
            (index,) = (self.uniform_int(arg, frame) for arg in args)
            return IntTuple(_span(base, frame)).item(index)
        if name == "span_as" and (isinstance(base, Slots) or (isinstance(base, Buffer) and base.slots)):
            return reshaped_slots(base, tuple(self.ints(args, frame)), frame.lanes)
        if isinstance(base, Tiling):
            if name == "step":
                return Tiling(base.view, base.extents, self.ints(args, frame), base.tail)
            if name == "at":
                return base.view.tile(base.extents, base.steps, self._indices(args, frame))
        if isinstance(base, Window) and name == "from":
            return base.view.window(base.extents, self._indices(args, frame), base.strides)
        if name == "at" and is_register(base):  # an element of a fragment, inside an apply (fragments.py)
            return RegisterElement(NO_ELEMENTS, 0, base, tuple(self._indices(args, frame)))
        view = self.as_view(base, frame)
        if name in ("at", "data"):
            return view.at(self._indices(args, frame))
        if name == "chunkat":
            return view.chunkat(self._chunk_indices(args, frame), self.ceil_chunks.get(id(expr)))
        if name == "modspan":  # the tail that whole tiles leave (resolve/views.py)
            sizes = self.ints(args, frame)
            if any(size <= 0 for size in sizes):
                raise SimError(f"the tile extents of a modspan must be positive, got {sizes}")
            tail = [dim // size for dim, size in zip(view.shape, sizes)]
            return Tiling(view, [dim % size for dim, size in zip(view.shape, sizes)], sizes, tail)
        if name in ("subspan", "chunk"):
            extents = self._extents(args, view, frame)
            if name == "chunk":
                extents = [size // count for size, count in zip(view.shape, extents)]
            return Tiling(view, extents, extents)
        if name == "view":
            strides = self.ints(expr.strides, frame) if expr.strides else None
            return Window(view, self._extents(args, view, frame), strides)
        if name == "span_as":
            return view.reshape(tuple(self.ints(args, frame)))
        if name == "sqz":
            return view.squeezed()
        raise SimError(f"spanned data has no method '.{name}'")

    def _extents(self, args: tuple[ast.Expr, ...], view: View, frame: Frame) -> list[int]:
        """Extents of a tile or window, tuples spliced in; `_` keeps the view's dimension whole."""
        extents: list[int | None] = []
        for arg in args:
            extents.extend([None] if _is_whole(arg, frame) else self.ints((arg,), frame))
        dims = (*view.shape, *[0] * len(extents))
        return [dim if extent is None else extent for extent, dim in zip(extents, dims)]

    def _ring(self, event: EventArray, name: str, args: tuple[ast.Expr, ...], frame: Frame) -> EventTarget:
        """`e.at(order)`: slot order % N, generation order / N (events.md)."""
        if name != "at" or len(args) != 1 or len(event.dims) != 1:
            raise SimError(
                f"'{event.name}.{name}(...)': a ring is a one-dimensional event array used with .at"
            )
        order = self.uniform_int(args[0], frame)
        size = len(event.slots)
        return EventTarget(event, order % size, order // size)

    def _chunk_indices(self, args: tuple[ast.Expr, ...], frame: Frame) -> list[Bounded | None]:
        """chunkat's indices, a bounded ituple spliced in; None for `_` (a whole dimension)."""
        indices: list[Bounded | None] = []
        for arg in args:
            if isinstance(arg, ast.Name) and arg.id == "_" and frame.scope.find("_") is None:
                indices.append(None)
                continue
            for value in _spliced(self.value(arg, frame)):
                if not isinstance(value, Bounded):
                    raise SimError(
                        "a chunkat index must be a bounded value (a parallel, foreach or with variable)"
                    )
                indices.append(Bounded(arith.as_index(value.value), value.bound))
        return indices

    def _indices(self, args: tuple[ast.Expr, ...], frame: Frame) -> list[Any]:
        """An index or offset list, tuples spliced in."""
        return [arith.as_index(plain(value)) for arg in args for value in _spliced(self.value(arg, frame))]

    def _index(self, expr: ast.Index, frame: Frame) -> Any:
        indices, root = list(expr.indices), expr.value
        while isinstance(root, ast.Index):  # e[i][j] on a 2-D event array
            indices, root = [*root.indices, *indices], root.value
        if isinstance(root, ast.Name):
            event = self.raw(root, frame)
            if isinstance(event, EventArray):
                return EventTarget(event, event.slot_at([self.uniform_int(i, frame) for i in indices]), None)
        base = self.raw(expr.value, frame)
        if isinstance(base, AccumulatorSlots):  # `mc[0][i]`: one of an array's accumulators
            return base.at([self.uniform_int(i, frame) for i in expr.indices])
        if (isinstance(base, Buffer) and base.slots) or isinstance(base, Slots):
            return base.slot(self._indices(expr.indices, frame), frame.lanes)
        if isinstance(base, IntTuple):
            return IntTuple(tuple(self._derived(base, item, frame) for item in expr.indices))
        return self.as_view(base, frame).at(self._indices(expr.indices, frame))

    def derived_from_span(self, expr: ast.Index, frame: Frame) -> IntTuple:
        """`c : x [(0), 1]` on data `x`: the shape derived from `x.span` (FunctionInfo.spans_derived)."""
        shape = IntTuple(_span(self.raw(expr.value, frame), frame))
        return IntTuple(tuple(self._derived(shape, item, frame) for item in expr.indices))

    def _derived(self, shape: IntTuple, item: ast.Expr, frame: Frame) -> int:
        """In `s[(0) / 2, (1)]`, `(i)` names dimension i of `s`."""
        if isinstance(item, ast.Paren) and isinstance(item.inner, ast.IntLiteral):
            return shape.item(item.inner.value)
        if isinstance(item, ast.Binary) and item.op in _SHAPE_OPS:
            left, right = self._derived(shape, item.left, frame), self._derived(shape, item.right, frame)
            return int(arith.binary(item.op, left, right))
        return self.uniform_int(item, frame)

    @staticmethod
    def _foreign_cast(expr: ast.ForeignCast, frame: Frame) -> Any:
        raise SimError("a foreign cast is only an argument of a device function call")  # the analysis says so

    def _element_count(self, expr: ast.ElementCount, frame: Frame) -> int:
        value = self.raw(expr.operand, frame)
        return math.prod(value.items if isinstance(value, IntTuple) else _span(value, frame))


def _is_whole(expr: ast.Expr, frame: Frame) -> bool:
    """`_` in `chunkat`, `subspan` or `view`: the whole dimension."""
    return isinstance(expr, ast.Name) and expr.id == "_" and frame.scope.find("_") is None


def _spliced(value: Any) -> tuple[Any, ...]:
    """The entries a value makes in an index list: each element of a tuple, or the value itself."""
    if isinstance(value, BoundedTuple):
        return value.items
    if isinstance(value, IntTuple):
        return value.items
    return (value,)


def _span(value: Any, frame: Frame) -> tuple[int, ...]:
    if isinstance(value, IntTuple):
        return value.items
    if isinstance(value, Fragment):
        return tuple(value.tile.shape)
    if isinstance(value, Tiling):
        return tuple(value.extents)
    return Evaluator.as_view(value, frame).shape


def _uniform(value: Any) -> int:
    """An integer that every active thread agrees on (a count, an extent, a loop bound)."""
    value = plain(value)
    if isinstance(value, np.ndarray):
        if value.size == 0 or not (value == value.flat[0]).all():
            raise SimError("this value must be the same in every thread (it is a count, extent or order)")
        value = value.flat[0]
    return int(arith.as_index(value))


def _shape_arithmetic(op: str, left: Any, right: Any) -> IntTuple:
    """Per-dimension arithmetic on shapes: `s / 4`, `s / {2, 4}`, `s + 1`."""
    if op not in _SHAPE_OPS:
        raise SimError(f"'{op}' does not apply to shapes")
    count = len(left.items if isinstance(left, IntTuple) else right.items)
    lefts = left.items if isinstance(left, IntTuple) else (_uniform(left),) * count
    rights = right.items if isinstance(right, IntTuple) else (_uniform(right),) * count
    if len(lefts) != len(rights):
        raise SimError(f"'{op}' on shapes of ranks {len(lefts)} and {len(rights)}")
    return IntTuple(tuple(int(arith.binary(op, a, b)) for a, b in zip(lefts, rights)))
