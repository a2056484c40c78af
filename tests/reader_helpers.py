"""What the readers' tests share: measurements keyed by id; one error naming the file and where."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from flashsim.measurements.readers import read_file
from flashsim.measurements.record import Measurement, MeasurementError


def assert_one_error(path: Path, tool: str | None, where: str, *phrases: str) -> str:
    """Reading ``path`` (with ``tool``'s reader, or sniffed) fails with one line.

    The message starts with ``<path>: <where>`` (e.g. ``line 12``), holds every
    phrase, and has no line break; it is returned for further checks.
    """
    with pytest.raises(MeasurementError) as info:
        read_file(path, tool=tool)
    text = str(info.value)
    assert text.startswith(f"{path}: {where}"), text
    for phrase in phrases:
        assert phrase in text, text
    assert "\n" not in text
    return text


def by_id(measurements: Sequence[Measurement]) -> dict[str, Measurement]:
    """``measurements`` keyed by id; the ids must be unique (as within one file)."""
    out = {m.id: m for m in measurements}
    assert len(out) == len(measurements), "ids are unique within a file"
    return out
