"""The calibratable parameters of a model schema: what ``flashsim calibrate`` may fit.

A model field is calibratable when its pydantic ``Field`` carries
``json_schema_extra=flashsim.config.calibratable(...)``: bounds in SI, the
tools whose measurements inform it and the docs/calibration.md section that
lists it.  :func:`calibratable_parameters` walks a kind's model type and lists
them by dotted key (``oss.nic.ingress_efficiency``), with the current value of
a loaded model.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel


@dataclass(frozen=True)
class Calibratable:
    """One calibratable parameter of a model schema.

    Attributes
    ----------
    key : str
        Dotted key in the model file, e.g. ``oss.rpc_cost``.
    low, high : float
        Bounds of a fit, in ``unit``.
    unit : str
        SI unit of the value: ``"s"``, ``"B/s"`` or ``""`` (a ratio).
    tools : tuple of str
        Tools whose measurements inform it (empty: none a reader produces).
    measured_by : str
        The measurement that constrains it, for messages.
    row : str
        The docs/calibration.md section whose table lists it.
    value : float or None
        Its value in a loaded model, in ``unit`` (``None`` when no model was
        given or the table holding it is absent, e.g. no ``[oss.aging]``).
    """

    key: str
    low: float
    high: float
    unit: str
    tools: tuple[str, ...]
    measured_by: str
    row: str
    value: float | None = None


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    """Model types a field holds directly (through ``Optional``, unions, ``Annotated``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType, Annotated):
        args = get_args(annotation)
        for arg in args[:1] if origin is Annotated else args:
            yield from _models_in(arg)


def _declaration(extra: object) -> dict[str, Any] | None:
    if isinstance(extra, dict):
        decl = extra.get("calibratable")
        if isinstance(decl, dict):
            return decl
    return None


def calibratable_parameters(
    model_type: type[BaseModel], model: BaseModel | None = None
) -> list[Calibratable]:
    """Every calibratable parameter of ``model_type``, in schema order.

    Parameters
    ----------
    model_type : type of BaseModel
        A kind's model schema (:attr:`flashsim.systems.base.SystemKind.model_type`).
    model : BaseModel, optional
        A loaded model of that type: fills :attr:`Calibratable.value`.

    Returns
    -------
    list of Calibratable
        One per dotted key; a shared sub-schema's field counts only at the
        paths its declaration's ``where`` names.
    """
    out: list[Calibratable] = []

    def walk(t: type[BaseModel], prefix: str, node: object, seen: frozenset[type]) -> None:
        for name, info in t.model_fields.items():
            key = f"{prefix}{name}"
            child = getattr(node, name, None) if node is not None else None
            decl = _declaration(info.json_schema_extra)
            if decl is not None and (not decl["where"] or prefix[:-1] in decl["where"]):
                out.append(
                    Calibratable(
                        key=key,
                        low=float(decl["low"]),
                        high=float(decl["high"]),
                        unit=str(decl["unit"]),
                        tools=tuple(decl["tools"]),
                        measured_by=str(decl["measured_by"]),
                        row=str(decl["row"]),
                        value=None if child is None else float(child),
                    )
                )
            for sub in _models_in(info.annotation):
                if sub not in seen:
                    walk(
                        sub,
                        key + ".",
                        child if isinstance(child, sub) else None,
                        seen | {sub},
                    )

    walk(model_type, "", model, frozenset({model_type}))
    return out
