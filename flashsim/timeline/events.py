"""``[[events]]`` of a scenario: what changes the system's state, and when.

Each event has an optional ``name`` (unique among events), a time and an
``action``.  The time is either ``at = "10 s"`` (on the run's clock) or
``relative_to = "<phase or event name>"`` with ``edge = "start" | "end"``
(default ``"start"``; a phase that repeats: its first run's start, its last
run's end; an event has one instant, its firing) and ``offset = "30 s"``
(default 0).  The actions:

``fail-drive`` (``target``, ``drive``)
    The drive fails; the target degrades and rebuilds under its policy.
``replace-drive`` (``target``, ``drive``)
    A fresh drive replaces it.
``trim`` (``targets`` = a list of indices or ``"all"``)
    TRIM on those targets (a background load until it is done).
``trim-policy`` (``every = "7 days"``, ``targets``)
    TRIM on those targets every ``every`` from the event on.
``background-start`` (``name``, ``jobs``: tables as the model's ``fabric.background``)
    Fabric background traffic starts, under the label ``name``.
``background-stop`` (``name``)
    The background traffic started under ``name`` stops (the one event name
    that may repeat another's).
``set-capacity`` (``resource``: a glob over flow-resource names; ``factor`` or ``capacity``)
    The matching resources' capacities are multiplied by ``factor`` (bandwidth
    and operation rate alike), or their bandwidth set to ``capacity`` (bytes/s).
``reset``
    Every target gets fresh state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from flashsim.components.fabric_spec import BackgroundJobSpec
from flashsim.config import (
    Bandwidth,
    ConfigError,
    NonNegativeSeconds,
    Seconds,
    StrictModel,
    field_error,
    validate,
)

#: Which targets a ``trim`` or ``trim-policy`` event acts on.
TargetSet = Literal["all"] | Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]


class EventTime(StrictModel):
    """The name and time keys every event has (see the module docstring)."""

    name: Annotated[str, Field(min_length=1)] | None = Field(
        None, description="Unique label; other events may be relative_to it."
    )
    at: NonNegativeSeconds | None = Field(
        None, description="Simulated time of the event (s, from the run's start)."
    )
    relative_to: Annotated[str, Field(min_length=1)] | None = Field(
        None, description="Name of the phase or event the time is counted from."
    )
    edge: Literal["start", "end"] = Field(
        "start", description="Which edge of the phase relative_to names."
    )
    offset: NonNegativeSeconds = Field("0 s", description="Time after that edge (s).")

    @model_validator(mode="after")
    def _one_time(self) -> EventTime:
        if "action" not in type(self).model_fields:
            return self  # the keys alone, not an event (an action's schema checks its time)
        if (self.at is None) == (self.relative_to is None):
            raise field_error("at", "give exactly one of at (a time) and relative_to (a name)")
        if self.at is not None and ("offset" in self.model_fields_set):
            raise field_error("offset", "offset goes with relative_to; with at, add it to at")
        return self


class FailDrive(EventTime):
    """``action = "fail-drive"``: a drive of a target fails."""

    action: Literal["fail-drive"]
    target: Annotated[int, Field(ge=0)] = Field(description="Target index.")
    drive: Annotated[int, Field(ge=0)] = Field(description="Drive index in the target.")


class ReplaceDrive(EventTime):
    """``action = "replace-drive"``: a fresh drive replaces one of a target."""

    action: Literal["replace-drive"]
    target: Annotated[int, Field(ge=0)] = Field(description="Target index.")
    drive: Annotated[int, Field(ge=0)] = Field(description="Drive index in the target.")


class Trim(EventTime):
    """``action = "trim"``: TRIM on some targets."""

    action: Literal["trim"]
    targets: TargetSet = Field("all", description='Target indices, or "all".')


class TrimPolicy(EventTime):
    """``action = "trim-policy"``: TRIM on some targets periodically."""

    action: Literal["trim-policy"]
    every: Seconds = Field(description="Time between two TRIMs (s); the first is one period on.")
    targets: TargetSet = Field("all", description='Target indices, or "all".')


class BackgroundStart(EventTime):
    """``action = "background-start"``: fabric background traffic starts."""

    action: Literal["background-start"]
    name: Annotated[str, Field(min_length=1)] = Field(  # type: ignore[assignment]
        description="Label of the traffic (background-stop names it again) and of the event."
    )
    jobs: Annotated[list[BackgroundJobSpec], Field(min_length=1)] = Field(
        description="Jobs, as the model's fabric.background tables."
    )


class BackgroundStop(EventTime):
    """``action = "background-stop"``: the background traffic of a label stops."""

    action: Literal["background-stop"]
    name: Annotated[str, Field(min_length=1)] = Field(  # type: ignore[assignment]
        description="Label given at background-start."
    )


class SetCapacity(EventTime):
    """``action = "set-capacity"``: a throttled link, a slow drive."""

    action: Literal["set-capacity"]
    resource: Annotated[str, Field(min_length=1)] = Field(
        description="Glob over flow-resource names, e.g. 'perlmutter.oss3.nic*'."
    )
    factor: Annotated[float, Field(ge=0)] | None = Field(
        None, description="Multiplies the resources' capacities (bandwidth and operations)."
    )
    capacity: Bandwidth | None = Field(
        None,
        description="New bandwidth capacity (bytes/s) of byte-rate resources (NIC ports, links, "
        "PCIe); time-based ones (a drive's data path, a CPU) take a factor.",
    )

    @model_validator(mode="after")
    def _one_change(self) -> SetCapacity:
        if (self.factor is None) == (self.capacity is None):
            raise field_error("factor", "give exactly one of factor and capacity")
        return self


class FailServer(EventTime):
    """``action = "fail-server"``: a server fails; its high-availability partner takes over.

    A Lustre OSS's targets are then served by the partner OSS (the drives are
    dual-ported: seed 000 §II-B), through its NIC ports and CPU, until a
    ``restore-server``.  Flows already running keep their paths.
    """

    action: Literal["fail-server"]
    server: Annotated[int, Field(ge=0)] = Field(description="Server index (a Lustre OSS).")


class RestoreServer(EventTime):
    """``action = "restore-server"``: a failed server serves its own targets again."""

    action: Literal["restore-server"]
    server: Annotated[int, Field(ge=0)] = Field(description="Server index (a Lustre OSS).")


class Reset(EventTime):
    """``action = "reset"``: every target gets fresh state."""

    action: Literal["reset"]


EventSpec = Annotated[
    FailDrive
    | ReplaceDrive
    | Trim
    | TrimPolicy
    | BackgroundStart
    | BackgroundStop
    | SetCapacity
    | FailServer
    | RestoreServer
    | Reset,
    Field(discriminator="action"),
]


def load_events(raw: list[Any], path: Path, phase_names: list[str]) -> list[EventSpec]:
    """Validate the ``[[events]]`` tables (or check validated ones) and the names they use.

    Event names are unique, except that a ``background-stop`` repeats the
    ``name`` (the traffic's label) of its ``background-start``; ``relative_to``
    such a name means the start.  Errors are :class:`~flashsim.config.ConfigError`
    naming ``events.<i>.<key>``.
    """
    events: list[EventSpec] = []
    for i, table in enumerate(raw):
        if isinstance(table, EventTime):
            events.append(table)  # type: ignore[arg-type]
        else:
            events.append(validate(EventSpec, table, path, key_prefix=f"events.{i}"))
    seen: dict[str, int] = {}
    for i, event in enumerate(events):
        if event.name is None:
            continue
        if isinstance(event, BackgroundStop):
            if not isinstance(events[seen.get(event.name, i)], BackgroundStart):
                raise ConfigError(
                    str(path),
                    f"events.{i}.name",
                    event.name,
                    "no earlier background-start event names this traffic",
                )
            continue
        if event.name in seen:
            raise ConfigError(
                str(path),
                f"events.{i}.name",
                event.name,
                f"events.{seen[event.name]} has the same name; event names must be unique",
            )
        if event.name in phase_names:
            raise ConfigError(
                str(path), f"events.{i}.name", event.name, "a phase has this name; use another"
            )
        seen[event.name] = i
    for i, event in enumerate(events):
        ref = event.relative_to
        if ref is None:
            continue
        if ref not in seen and ref not in phase_names:
            known = ", ".join(repr(n) for n in [*phase_names, *seen]) or "none"
            raise ConfigError(
                str(path),
                f"events.{i}.relative_to",
                ref,
                f"no phase or event has this name ({known})",
            )
        chain = [i]
        at: str | None = ref
        while at is not None and at in seen:
            j = seen[at]
            if j in chain:
                raise ConfigError(
                    str(path),
                    f"events.{i}.relative_to",
                    ref,
                    "the events are relative to each other in a cycle",
                )
            chain.append(j)
            at = events[j].relative_to
    return events
