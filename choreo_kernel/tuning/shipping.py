"""A Python expression and the values it names, sent to worker processes that build each point themselves.

In the notebook, `%sweep ... -- gemm()` calls whatever `gemm` and the Choreo functions it
uses are in the namespace. A worker gets a copy of the values the expression names, pickled
together with cloudpickle (so a helper defined in the notebook comes with the globals it
uses, and an array it shares with the expression stays one array). Choreo objects never
travel as they are (a compiled module is only valid in the process that built it): each
travels as a stand-in, wherever it is referenced from. The swept program's functions and
module call the build of the point being measured; a function of another cell is compiled
again on the worker from that cell's source.
"""

from __future__ import annotations

import ast
import io
import pickle
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from choreo_kernel import module as choreo_module
from choreo_kernel.tuning.point import SweptSource


class ShippedExpression:
    """`bind` for `measure_point` on a worker: evaluates the expression among copies of its values.

    Picklable: a worker unpickles the values once, at its first point (copying arrays onto
    its own GPU), and reuses them for every point it measures; calling it with a point's
    build points the swept program's stand-ins at that build.
    """

    def __init__(
        self, expression: str, namespace: Mapping[str, object], stand_ins: Mapping[int, StandIn]
    ) -> None:
        """`stand_ins`: by `id()`, what each Choreo object of the notebook becomes on a worker."""
        self.expression = expression
        names = sorted(_names_read(expression) & namespace.keys())
        self._payload = _dumps({name: namespace[name] for name in names}, stand_ins)
        self._values: dict[str, Any] | None = None  # unpickled where it runs, never in the notebook
        self._module: choreo_module.Module | None = None

    def __call__(self, module: choreo_module.Module) -> Callable[[], Any]:
        if self._values is None:
            self._values = _Unpickler(io.BytesIO(self._payload), self).load()
        self._module = module
        code, values = compile(self.expression, "<expression>", "eval"), self._values
        return lambda: eval(code, values)

    def __getstate__(self) -> dict[str, object]:
        """The expression and the pickled values: a copy unpickles them again where it runs."""
        return {**self.__dict__, "_values": None, "_module": None}

    def point_module(self) -> choreo_module.Module:
        if self._module is None:
            raise RuntimeError("a swept Choreo function was called outside a point of the sweep")
        return self._module


class StandIn(ABC):
    """What a Choreo object of the notebook is on a worker (a pickle persistent id)."""

    @abstractmethod
    def resolve(self, shipped: ShippedExpression) -> object: ...


@dataclass(frozen=True)
class PointFunction(StandIn):
    """A function of the swept program: calls the build of the point being measured."""

    name: str

    def resolve(self, shipped: ShippedExpression) -> object:
        return _PointFunction(shipped, self.name)


@dataclass(frozen=True)
class PointModule(StandIn):
    """The swept program's module: the build of the point being measured."""

    def resolve(self, shipped: ShippedExpression) -> object:
        return _PointModule(shipped)


@dataclass(frozen=True)
class CellFunction(StandIn):
    """A function of another cell, built on the worker from that cell's source as the cell built it."""

    source: SweptSource
    name: str

    def resolve(self, shipped: ShippedExpression) -> object:
        return self.source.compile({}).function(self.name)


class _PointFunction:
    def __init__(self, shipped: ShippedExpression, name: str) -> None:
        self._shipped = shipped
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._shipped.point_module().function(self.__name__)(*args, **kwargs)


class _PointModule:
    def __init__(self, shipped: ShippedExpression) -> None:
        self._shipped = shipped

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._shipped.point_module(), name)


def _names_read(expression: str) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(expression, mode="eval")) if isinstance(node, ast.Name)}


def _dumps(values: dict[str, object], stand_ins: Mapping[int, StandIn]) -> bytes:
    """`values` pickled in one go (shared objects stay shared), Choreo objects as their stand-ins."""
    import cloudpickle

    class Pickler(cloudpickle.Pickler):
        def persistent_id(self, value: object) -> StandIn | None:
            stand_in = stand_ins.get(id(value))
            if stand_in is None and isinstance(value, choreo_module.Module):
                raise TypeError(
                    "it holds a Choreo module that is not one of the notebook's cells as they are now"
                )
            return stand_in

    def dumps(chosen: dict[str, object]) -> bytes:
        buffer = io.BytesIO()
        Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(chosen)
        return buffer.getvalue()

    try:
        return dumps(values)
    except Exception as error:
        for name, value in values.items():  # which value, for the message
            try:
                dumps({name: value})
            except Exception:
                raise ValueError(f"cannot send {name} to the Dask workers: {error}") from None
        raise ValueError(f"cannot send the expression's values to the Dask workers: {error}") from None


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, shipped: ShippedExpression) -> None:
        super().__init__(file)
        self._shipped = shipped

    def persistent_load(self, pid: StandIn) -> object:
        return pid.resolve(self._shipped)
