"""What limited each phase of a sweep point: the bottleneck columns of its rows.

A run names, per phase, the resources whose mean utilisation over the phase
reached :data:`flashsim.measure.bottlenecks.BOTTLENECK_UTILIZATION` (its
*bottlenecks*) and the most utilised resources whether or not they did
(:class:`flashsim.measure.results.PhaseResult`); the run report prints them.
A sweep puts the same facts in columns of each point's rows, so the table, CSV,
Parquet store and ``--json`` say why each point ran as fast as it did:

* ``bottleneck``, ``bottleneck_kind``, ``bottleneck_utilization``: the most
  utilised bottleneck (``"none"``, null, NaN when nothing reached the threshold);
* ``bottleneck_count`` and ``bottleneck_kinds`` (``"nic x274, fabric x2"``):
  every bottleneck, counted by kind;
* ``most_utilized``, ``most_utilized_kind``, ``most_utilized_utilization``: the
  resource closest to limiting, named even when none reached the threshold;
* ``held_by``: when nothing reached the threshold, the latency or concurrency
  bound that held the phase longest (``"concurrency: rank RPC window q*t/L"``,
  :func:`flashsim.measure.limits.held_by`), as the run report names it.

A phase that measured no resource (no flow or queue did any work) has null
names and NaN utilisations.  Utilisations are dimensionless (0..1).
:func:`format_table` is the text table of ``flashsim sweep``, with a
``limited by`` cell per row (:func:`limited_by`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import pandas as pd

from flashsim.measure.limits import held_by
from flashsim.measure.results import PhaseResult, ResourceLoad

__all__ = ["LIMIT_COLUMNS", "format_table", "limit_columns", "limited_by"]

#: The columns :func:`limit_columns` adds to each row, in order.
LIMIT_COLUMNS = (
    "bottleneck",
    "bottleneck_kind",
    "bottleneck_utilization",
    "bottleneck_count",
    "bottleneck_kinds",
    "most_utilized",
    "most_utilized_kind",
    "most_utilized_utilization",
    "held_by",
)


def _kinds(loads: Sequence[ResourceLoad]) -> str:
    """``"nic x274, fabric x2"``: the kinds of ``loads``, counted, in order of first appearance."""
    counts: dict[str, int] = {}
    for load in loads:
        counts[load.kind] = counts.get(load.kind, 0) + 1
    return ", ".join(f"{kind} x{n}" for kind, n in counts.items())


def limit_columns(phase: PhaseResult) -> dict[str, Any]:
    """The bottleneck columns of one phase's row (see the module docstring).

    Parameters
    ----------
    phase : PhaseResult
        A phase of a finished run, with its ``bottlenecks`` and ``most_utilized``.

    Returns
    -------
    dict
        :data:`LIMIT_COLUMNS` to values: names and kinds as ``str`` (``None``
        where there is none), utilisations as dimensionless floats (NaN where
        there is none), the count as ``int``.
    """
    measured = bool(phase.bottlenecks or phase.most_utilized)
    top = phase.bottlenecks[0] if phase.bottlenecks else None
    most = phase.most_utilized[0] if phase.most_utilized else top
    bound = None if top else held_by(phase)
    return {
        "bottleneck": top.name if top else ("none" if measured else None),
        "bottleneck_kind": top.kind if top else None,
        "bottleneck_utilization": top.utilization if top else math.nan,
        "bottleneck_count": len(phase.bottlenecks),
        "bottleneck_kinds": _kinds(phase.bottlenecks) if top else None,
        "most_utilized": most.name if most else None,
        "most_utilized_kind": most.kind if most else None,
        "most_utilized_utilization": most.utilization if most else math.nan,
        "held_by": bound[0] if bound else None,
    }


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def limited_by(row: Mapping[Hashable, Any]) -> str:
    """One cell for the text table: what limited a row's phase.

    ``"demo.ssd (ssd) 100.0%"`` for one bottleneck, ``"... +273 more: nic x274"``
    for many, ``"none; most utilised: demo.nic (nic) 45.0%"`` when nothing
    reached :data:`~flashsim.measure.bottlenecks.BOTTLENECK_UTILIZATION`, ``"-"``
    when nothing was measured (the run report's wording).

    Parameters
    ----------
    row : mapping
        A row holding :data:`LIMIT_COLUMNS` (as :func:`limit_columns` made them,
        or read back from the store).
    """
    name = row.get("bottleneck")
    if isinstance(name, str) and name != "none":
        text = f"{name} ({row['bottleneck_kind']}) {_pct(row['bottleneck_utilization'])}"
        count = int(row.get("bottleneck_count") or 1)
        if count > 1:
            text += f" +{count - 1} more: {row['bottleneck_kinds']}"
        return text
    most = row.get("most_utilized")
    if not isinstance(most, str):
        return "-"
    bound = row.get("held_by")
    held = f" saturated; held by {bound}" if isinstance(bound, str) else ""
    return (
        f"none{held}; most utilised: {most} ({row['most_utilized_kind']}) "
        f"{_pct(row['most_utilized_utilization'])}"
    )


def format_table(frame: pd.DataFrame, keys: Sequence[str]) -> str:
    """The text table of ``flashsim sweep``: swept keys, phase results and ``limited by``.

    Parameters
    ----------
    frame : pandas.DataFrame
        A sweep's rows (:func:`flashsim.sweep.run_sweep`).
    keys : sequence of str
        The swept keys, shown first.
    """
    cols = [*keys, "name", "bandwidth_GBps", "iops", "ci_rel_halfwidth"]
    header, *rows = str(frame[cols].to_string(index=False)).splitlines()
    cells = [limited_by(row) for row in frame.to_dict("records")]
    # Text reads best left-aligned: appended to the right of pandas' numeric table.
    lines = [f"{header} limited by"] + [
        f"{row} {cell}" for row, cell in zip(rows, cells, strict=True)
    ]
    return "\n".join(lines)
