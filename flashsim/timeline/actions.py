"""What each ``[[events]]`` action does to a built system, and the checks made before a run.

Actions use only the :class:`~flashsim.components.target_state.StatefulTarget`
interface (``built.target(i)``) and the
:class:`~flashsim.systems.base.BuiltSystem` hooks (``reset_state``,
``start_background``, ``stop_background``, ``fail_server``,
``restore_server``), plus the simulation's flow network for ``set-capacity``,
so they are written once for every system kind.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Generator
from pathlib import Path
from typing import Any

import simpy

from flashsim.config import MISSING, ConfigError
from flashsim.engine.flows import Resource
from flashsim.systems.base import BuiltSystem
from flashsim.timeline.events import (
    BackgroundStart,
    BackgroundStop,
    EventSpec,
    FailDrive,
    FailServer,
    ReplaceDrive,
    Reset,
    RestoreServer,
    SetCapacity,
    TargetSet,
    Trim,
    TrimPolicy,
)


def _as_config_error(exc: ValueError, path: Path, index: int, event: EventSpec) -> ConfigError:
    """A ``ValueError("key: message")`` of a target or hook as an error on ``events.<i>.key``."""
    key, sep, message = str(exc).partition(": ")
    if not sep or " " in key:
        key, message = "action", str(exc)
    key = re.sub(r"\[(\d+)\]", r".\1", {"index": "target", "background": "name"}.get(key, key))
    value = getattr(event, key, MISSING)
    return ConfigError(str(path), f"events.{index}.{key}", value, message)


def target_indices(built: BuiltSystem, targets: TargetSet) -> list[int]:
    """The indices ``targets`` names (``"all"``: every target of the system)."""
    return list(range(built.target_count())) if targets == "all" else list(targets)


def check_events(events: list[EventSpec], built: BuiltSystem, path: Path) -> None:
    """Check the events against the built system, before any phase runs.

    Target indices must be within the system's targets, and background jobs
    must fit its fabric (roles and groups).  Drive indices are checked by the
    target when the event fires (the interface has no drive count), and
    resource globs then too (a component's resources are built on first use).
    """
    count = built.target_count()
    for i, event in enumerate(events):
        indices: list[int] = []
        key = "target"
        if isinstance(event, FailDrive | ReplaceDrive):
            indices = [event.target]
        elif isinstance(event, Trim | TrimPolicy):
            indices, key = target_indices(built, event.targets), "targets"
        if count == 0 and isinstance(event, FailDrive | ReplaceDrive | Trim | TrimPolicy):
            raise ConfigError(
                str(path), f"events.{i}.{key}", MISSING, "this system has no stateful targets"
            )
        bad = [t for t in indices if t >= count]
        if bad:
            raise ConfigError(
                str(path),
                f"events.{i}.{key}",
                bad[0],
                f"target index outside the system's {count} targets (0..{count - 1})",
            )
        if isinstance(event, FailServer | RestoreServer):
            servers = built.server_count()
            if event.server >= servers:
                raise ConfigError(
                    str(path),
                    f"events.{i}.server",
                    event.server,
                    f"server index outside the system's {servers} servers (0..{servers - 1})"
                    if servers
                    else "this system kind models no server failover",
                )
        if isinstance(event, BackgroundStart):
            try:
                built.check_background(event.jobs)
            except ValueError as exc:
                raise _as_config_error(exc, path, i, event) from None


def matching_resources(built: BuiltSystem, pattern: str) -> list[Resource]:
    """Flow resources whose names match the glob ``pattern``, in creation order."""
    return [
        r for name, r in built.sim.flows.resources.items() if fnmatch.fnmatchcase(name, pattern)
    ]


def set_capacity(built: BuiltSystem, event: SetCapacity) -> int:
    """Change the capacities of the resources ``event.resource`` matches; return how many."""
    found = matching_resources(built, event.resource)
    if not found:
        raise ValueError(
            f"resource: {event.resource!r} matches no flow resource built by then (components "
            "are built when a phase first uses them; e.g. "
            f"{', '.join(list(built.sim.flows.resources)[:3]) or 'none yet'})"
        )
    flows = built.sim.flows
    for res in found:
        if event.factor is not None:
            flows.set_capacity(
                res,
                None if res.capacity_Bps is None else res.capacity_Bps * event.factor,
                None if res.capacity_ops is None else res.capacity_ops * event.factor,
            )
        else:
            if res.capacity_Bps is None:
                raise ValueError(
                    f"resource: {res.name} has no bandwidth capacity to set (use factor)"
                )
            flows.set_capacity(res, capacity_Bps=event.capacity)
    return len(found)


def _trim_every(
    env: simpy.Environment, built: BuiltSystem, targets: list[int], every_s: float
) -> Generator[simpy.Event, Any, None]:
    """TRIM ``targets`` every ``every_s`` seconds, for the rest of the run."""
    while True:
        yield env.timeout(every_s)
        for t in targets:
            built.target(t).trim()


def apply(event: EventSpec, built: BuiltSystem, path: Path, index: int) -> None:
    """Do what ``event`` (``events.<index>`` of ``path``) says, now.

    Errors of the target or system (a drive index outside the array, TRIM on
    drives without it) become :class:`~flashsim.config.ConfigError` naming the key.
    """
    try:
        if isinstance(event, FailDrive):
            built.target(event.target).fail_drive(event.drive)
        elif isinstance(event, ReplaceDrive):
            built.target(event.target).replace_drive(event.drive)
        elif isinstance(event, Trim):
            for t in target_indices(built, event.targets):
                built.target(t).trim()
        elif isinstance(event, TrimPolicy):
            targets = target_indices(built, event.targets)
            built.sim.env.process(_trim_every(built.sim.env, built, targets, event.every))
        elif isinstance(event, BackgroundStart):
            built.start_background(event.name, event.jobs)
        elif isinstance(event, BackgroundStop):
            built.stop_background(event.name)
        elif isinstance(event, SetCapacity):
            set_capacity(built, event)
        elif isinstance(event, FailServer):
            built.fail_server(event.server)
        elif isinstance(event, RestoreServer):
            built.restore_server(event.server)
        elif isinstance(event, Reset):
            built.reset_state()
    except ValueError as exc:
        raise _as_config_error(exc, path, index, event) from None
