"""System kinds: builders that assemble components from a model file.

Kinds are looked up by the ``kind`` key of a model file; modules are imported
only when their kind is used.
"""

from __future__ import annotations

import importlib
from types import MappingProxyType

from flashsim.systems.base import SystemKind

#: ``kind`` value -> "module:class" of its :class:`SystemKind`.
SYSTEM_KINDS = MappingProxyType(
    {
        "pipeline": "flashsim.systems.pipeline.kind:PipelineKind",
        "lustre": "flashsim.systems.lustre.kind:LustreKind",
        "vast": "flashsim.systems.vast.kind:VastKind",
    }
)


def system_kind(kind: str) -> SystemKind:
    """Return the :class:`SystemKind` for a model file's ``kind``.

    Raises
    ------
    KeyError
        When no such kind exists.
    """
    target = SYSTEM_KINDS[kind]
    module_name, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    instance: SystemKind = cls()
    return instance
