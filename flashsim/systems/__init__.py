"""System kinds: builders that assemble components from a model file.

Kinds are looked up by the ``kind`` key of a model file; modules are imported
only when their kind is used.

Two registries, one format (``"module:Class"`` of a :class:`SystemKind`):

* :data:`SYSTEM_KINDS`, the kinds shipped in ``flashsim/systems/<kind>/``;
* the entry points of group :data:`KIND_ENTRY_POINTS`, the kinds another
  installed package provides (its ``pyproject.toml``:
  ``[project.entry-points."flashsim.kinds"] toy = "toypkg.kind:ToyKind"``).
  A shipped kind wins over an entry point of the same name.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from importlib.metadata import entry_points
from types import MappingProxyType

from flashsim.systems.base import SystemKind

#: ``kind`` value -> "module:class" of its :class:`SystemKind` (the kinds flashsim ships).
SYSTEM_KINDS = MappingProxyType(
    {
        "pipeline": "flashsim.systems.pipeline.kind:PipelineKind",
        "lustre": "flashsim.systems.lustre.kind:LustreKind",
        "vast": "flashsim.systems.vast.kind:VastKind",
    }
)

#: Entry-point group in which an installed package registers a kind of its own.
KIND_ENTRY_POINTS = "flashsim.kinds"


def system_kinds() -> Mapping[str, str]:
    """Every known ``kind`` value -> "module:class": shipped kinds and installed plugins.

    Reads the installed packages' entry points on each call (a new mapping,
    nothing kept between calls).
    """
    found = {ep.name: ep.value for ep in entry_points(group=KIND_ENTRY_POINTS)}
    return MappingProxyType(found | dict(SYSTEM_KINDS))


def system_kind(kind: str) -> SystemKind:
    """Return the :class:`SystemKind` for a model file's ``kind``.

    Shipped kinds are found without reading the installed packages' entry points.

    Raises
    ------
    KeyError
        When no such kind exists.
    ValueError
        When a plugin's entry point cannot be imported or is no :class:`SystemKind`
        (the message names the entry point).
    """
    if kind in SYSTEM_KINDS:
        return _load(SYSTEM_KINDS[kind])
    target = system_kinds()[kind]
    try:
        return _load(target)
    except (ImportError, AttributeError, TypeError) as exc:
        raise ValueError(
            f"entry point {target!r} ({KIND_ENTRY_POINTS}) cannot be loaded: {exc}"
        ) from exc


def _load(target: str) -> SystemKind:
    module_name, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(cls, type) and issubclass(cls, SystemKind)):
        raise TypeError(f"{target} is not a SystemKind subclass")
    instance: SystemKind = cls()
    return instance
