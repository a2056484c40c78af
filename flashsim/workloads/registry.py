"""The workloads every system kind may run, each registered once.

A workload is a ``workload`` value of a scenario phase, the pydantic model of
such a phase, and the :class:`typing.Protocol` a built system implements so
that the workload's runner can drive it.  A system kind lists the protocols
its built system implements (:attr:`~flashsim.systems.base.SystemKind.implements`);
its phase schema is then the discriminated union of every workload registered
here whose protocol it implements, plus the phases only that kind runs
(:func:`phase_union`).

To add a workload: write ``flashsim/workloads/<name>.py`` with its phase model
(``workload: Literal["<name>"]``), its protocol and its runner, and add one
:class:`Workload` line to :data:`WORKLOADS`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, Field

from flashsim.workloads.darshan import DarshanPhase
from flashsim.workloads.io500 import Io500Phase, Io500Target
from flashsim.workloads.ior import IorPhase, IorTarget
from flashsim.workloads.jobs import JobsPhase
from flashsim.workloads.mix_phase import MixPhase
from flashsim.workloads.production import ProductionPhase, ProductionTarget
from flashsim.workloads.replay import JobTarget
from flashsim.workloads.streams import StreamsPhase, StreamsTarget

#: The key of a phase table that names its workload (the union's discriminator).
TAG = "workload"


@dataclass(frozen=True)
class Workload:
    """One workload: its ``workload`` value, phase model and system protocol.

    Attributes
    ----------
    name : str
        The ``workload`` value of its phases.
    phase : type of pydantic.BaseModel
        Schema of one phase; its ``workload`` field is ``Literal[name]``.
    target : type
        The :class:`typing.Protocol` a built system implements to run it.
    """

    name: str
    phase: type[BaseModel]
    target: type[Any]

    def __post_init__(self) -> None:
        tag = workload_tag(self.phase)
        if tag != self.name:
            raise TypeError(
                f"workload {self.name!r}: {self.phase.__name__}.{TAG} must be "
                f"Literal[{self.name!r}], not {tag!r}"
            )


def workload_tag(phase: type[BaseModel]) -> str | None:
    """The single ``workload`` literal of a phase model (``None`` if it has none)."""
    field = phase.model_fields.get(TAG)
    if field is None or get_origin(field.annotation) is not Literal:
        return None
    values = get_args(field.annotation)
    return str(values[0]) if len(values) == 1 else None


#: ``workload`` value -> :class:`Workload`, for every system kind.
WORKLOADS: Mapping[str, Workload] = MappingProxyType(
    {
        w.name: w
        for w in (
            Workload("ior", IorPhase, IorTarget),
            Workload("streams", StreamsPhase, StreamsTarget),
            Workload("io500", Io500Phase, Io500Target),
            Workload("darshan", DarshanPhase, JobTarget),
            Workload("jobs", JobsPhase, JobTarget),
            Workload("mix", MixPhase, JobTarget),
            Workload("production", ProductionPhase, ProductionTarget),
        )
    }
)


def protocol_methods(protocol: type[Any]) -> list[str]:
    """Names of the methods a protocol declares (its data members are not listed)."""
    names: dict[str, None] = {}
    for klass in reversed(protocol.__mro__):
        if klass is object or klass.__module__ == "typing":
            continue  # object, typing.Protocol, typing.Generic
        for name, value in vars(klass).items():
            if not name.startswith("_") and callable(value):
                names[name] = None
    return list(names)


def accepted(implements: Iterable[type[Any]]) -> list[Workload]:
    """The registered workloads whose protocol is in ``implements``, in registration order."""
    wanted = set(implements)
    return [w for w in WORKLOADS.values() if w.target in wanted]


def phase_union(
    owner: str, implements: Iterable[type[Any]], own_phases: Iterable[type[BaseModel]] = ()
) -> Any:
    """The phase schema of a system kind.

    Parameters
    ----------
    owner : str
        The kind, for error messages.
    implements : iterable of type
        Workload protocols the kind's built system implements.
    own_phases : iterable of pydantic model types
        Phases only this kind runs, each with its own ``workload`` literal; a
        subclass of a registered phase model with the same ``workload`` value
        replaces that model for this kind (e.g. IOR with VAST-only keys).

    Returns
    -------
    type or typing.Annotated
        The one phase model, or a union discriminated by ``workload``.

    Raises
    ------
    TypeError
        For a protocol no workload uses, a phase without a single ``workload``
        literal, two phases with the same value, or a replacement that does
        not extend the registered model of a workload the kind implements.
    """
    implements = tuple(implements)
    known = {w.target for w in WORKLOADS.values()}
    for proto in implements:
        if proto not in known:
            raise TypeError(f"kind {owner!r}: no registered workload uses {proto.__name__}")
    members: dict[str, type[BaseModel]] = {w.name: w.phase for w in accepted(implements)}
    mine: set[str] = set()
    for phase in own_phases:
        tag = workload_tag(phase)
        if tag is None:
            raise TypeError(f"kind {owner!r}: {phase.__name__} needs {TAG}: Literal['<name>']")
        if tag in mine:
            raise TypeError(f"kind {owner!r}: two phase models for {TAG} = {tag!r}")
        mine.add(tag)
        shared = WORKLOADS.get(tag)
        if shared is not None:
            if tag not in members:
                raise TypeError(
                    f"kind {owner!r}: {phase.__name__} replaces workload {tag!r}; "
                    f"list {shared.target.__name__} in implements"
                )
            if not issubclass(phase, shared.phase):
                raise TypeError(
                    f"kind {owner!r}: {phase.__name__} replaces workload {tag!r} and must "
                    f"extend {shared.phase.__name__}"
                )
        members[tag] = phase
    if not members:
        raise TypeError(f"kind {owner!r} runs no workload")
    models = tuple(members.values())
    if len(models) == 1:
        return models[0]
    return Annotated[Union[models], Field(discriminator=TAG)]  # noqa: UP007 - built at runtime
