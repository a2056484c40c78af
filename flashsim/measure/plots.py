"""Plots of a run over time: each phase's bandwidth and the system's state (matplotlib).

matplotlib is imported when a plot is drawn, never with :mod:`flashsim.cli`.
:func:`plot_timeline` draws a :class:`~flashsim.measure.results.RunResult`'s
``bandwidth`` (GB/s, a step per interval, one line per phase: the runs of a
repeated phase, ``checkpoint@7d``, on one line, with each run's mean as a
marker at its start, the probe's points over the run) and
its ``timeline`` (mean write amplification; drives down and targets
rebuilding; SCM fill in %), on two stacked panels sharing the time axis;
:func:`mark_windows` shades spans given in seconds (rebuild windows,
:func:`flashsim.measure.timeline.rebuild_windows`) in the axes' unit.  Time is shown in the
unit that suits the run's length (s, min, h or days).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from flashsim.measure.results import RunResult
from flashsim.workloads.production import FAST_FORWARD

if TYPE_CHECKING:  # matplotlib is imported when a plot is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Time units of the x axis: (seconds per unit, label), the first that fits twice wins.
TIME_UNITS: tuple[tuple[float, str], ...] = ((86400.0, "days"), (3600.0, "h"), (60.0, "min"))


#: Attribute of an axes drawn by :func:`plot_timeline`: its seconds per x unit.
_SCALE_ATTR = "_flashsim_time_scale"


def time_unit(span_s: float) -> tuple[float, str]:
    """The x-axis unit for a run of ``span_s`` simulated seconds: (seconds per unit, name)."""
    for scale, name in TIME_UNITS:
        if span_s >= 2 * scale:
            return scale, name
    return 1.0, "s"


def _span_s(result: RunResult) -> float:
    ends = [s.time_s for s in result.timeline] + [b.end_s for b in result.bandwidth]
    ends += [(p.start_s or 0.0) + p.sim_time_s for p in result.phases if p.start_s is not None]
    return max(ends, default=0.0)


def plot_timeline(result: RunResult, ax: Axes | Sequence[Axes] | None = None) -> Figure:
    """Draw a run's bandwidth per phase and its state over simulated time.

    Parameters
    ----------
    result : RunResult
        A run with ``bandwidth`` and/or ``timeline`` samples (phases with a
        ``start_s`` add their mean bandwidth as a marker).
    ax : Axes or pair of Axes, optional
        Where to draw: two axes (bandwidth, state); one axes (bandwidth on
        it, the state on a twin y axis); ``None`` (default): a new figure of
        two stacked panels sharing the time axis.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn on.
    """
    import matplotlib.pyplot as plt

    twin = False
    if ax is None:
        _, (ax_bw, ax_state) = plt.subplots(2, 1, sharex=True, figsize=(9.0, 6.0))
    elif isinstance(ax, Sequence):
        ax_bw, ax_state = ax[0], ax[1]
    else:
        ax_bw, ax_state, twin = ax, ax.twinx(), True
    fig = _figure(ax_bw)
    scale, unit = time_unit(_span_s(result))
    for a in (ax_bw, ax_state):
        setattr(a, _SCALE_ATTR, scale)
    _draw_bandwidth(ax_bw, result, scale)
    _draw_state(ax_state, result, scale, offset=twin)
    for a in {id(ax_bw): ax_bw, id(ax_state): ax_state}.values():
        a.set_xlabel(f"simulated time ({unit})")
    if ax is None:
        ax_bw.set_xlabel("")
        fig.tight_layout()
    return fig


def _figure(ax: Axes) -> Figure:
    """The figure ``ax`` is drawn in."""
    fig = ax.get_figure(root=True)
    if fig is None:
        raise ValueError("ax: an axes that belongs to no figure")
    return fig


def base_name(phase: str) -> str:
    """The name of a repeated phase's runs, ``checkpoint`` for ``checkpoint@7d``."""
    return phase.split("@", 1)[0]


def _draw_bandwidth(ax: Axes, result: RunResult, scale: float) -> None:
    """Bandwidth (GB/s): a step per interval, one line per phase (a repeated phase's runs
    on one line, NaN-separated); a repeated phase's mean per run as connected markers; a
    phase without intervals as a marker at its mean."""
    steps: dict[str, tuple[list[float], list[float]]] = {}
    for b in result.bandwidth:
        xs, ys = steps.setdefault(base_name(b.phase), ([], []))
        if xs and xs[-1] != b.start_s / scale:
            xs.append(float("nan"))
            ys.append(float("nan"))
        xs.extend([b.start_s / scale, b.end_s / scale])
        ys.extend([b.bandwidth_Bps / 1e9, b.bandwidth_Bps / 1e9])
    for name, (xs, ys) in steps.items():
        ax.plot(xs, ys, label=name, linewidth=1.2)
    timed = [
        p
        for p in result.phases
        if p.start_s is not None
        and math.isfinite(p.bandwidth_Bps)
        and p.bandwidth_Bps > 0
        and p.fidelity != FAST_FORWARD  # it simulated no transfer: no bandwidth to draw
    ]
    runs: dict[str, list[tuple[float, float]]] = {}
    for p in timed:
        runs.setdefault(base_name(p.name), []).append((p.start_s or 0.0, p.bandwidth_Bps))
    lone: list[tuple[float, float]] = []
    for name, points in runs.items():
        if len(points) > 1:
            ax.plot(
                [t / scale for t, _ in points],
                [bw / 1e9 for _, bw in points],
                linestyle=":",
                marker="o",
                markersize=3,
                label=f"{name}: mean of each run",
            )
        elif name not in steps:
            lone.extend(points)
    if lone:
        ax.plot(
            [t / scale for t, _ in lone],
            [bw / 1e9 for _, bw in lone],
            linestyle="none",
            marker="o",
            markersize=3,
            color="black",
            label="phase mean",
        )
    ax.set_ylabel("bandwidth (GB/s)")
    if steps or runs:
        ax.legend(loc="best", fontsize="small")


def _draw_state(ax: Axes, result: RunResult, scale: float, offset: bool = False) -> None:
    """Mean WA (left axis); drives down and targets rebuilding (a right axis, counts); SCM
    fill in % (a second right axis, 0-100, only for tiered targets).

    ``offset``: ``ax`` is itself a twin on the right, so the added right axes are moved
    further right to stay readable.
    """
    from matplotlib.ticker import MaxNLocator

    samples = result.timeline
    t = [s.time_s / scale for s in samples]
    wa = [s.state.get("mean_write_amplification", 1.0) for s in samples]
    (wa_line,) = ax.step(t, wa, where="post", color="tab:blue", label="mean write amplification")
    ax.set_ylabel("write amplification")
    shift = 0.12 if offset else 0.0
    counts = ax.twinx()
    if offset:
        counts.spines["right"].set_position(("axes", 1.0 + shift))
    lines = [wa_line]
    down = [float(s.state.get("failed_drives", 0)) for s in samples]
    rebuilding = [float(len(s.state.get("rebuilding_targets") or ())) for s in samples]
    lines += counts.step(t, down, where="post", color="tab:red", label="drives down")
    lines += counts.step(
        t, rebuilding, where="post", color="tab:orange", linestyle="--", label="targets rebuilding"
    )
    counts.set_ylabel("drives down, targets rebuilding")
    counts.set_ylim(bottom=0.0, top=max([*down, *rebuilding, 1.0]) * 1.1)
    counts.yaxis.set_major_locator(MaxNLocator(integer=True))
    fills = [s.state.get("buffer_fill") for s in samples]
    if any(f is not None for f in fills):
        fill_ax = ax.twinx()
        fill_ax.spines["right"].set_position(("axes", 1.12 + shift))
        pct = [100.0 * f if f is not None else float("nan") for f in fills]
        lines += fill_ax.step(t, pct, where="post", color="tab:green", label="SCM fill (%)")
        fill_ax.set_ylabel("SCM fill (%)")
        fill_ax.set_ylim(0.0, 100.0)
    ax.legend(lines, [str(line.get_label()) for line in lines], loc="best", fontsize="small")


def mark_windows(
    ax: Axes, spans_s: Iterable[tuple[float, float]], label: str, scale: float | None = None
) -> Figure:
    """Shade spans of simulated time on ``ax`` (rebuild windows, TRIM runs ...).

    Parameters
    ----------
    ax : Axes
        An axes drawn by :func:`plot_timeline` (or any whose x axis is time).
    spans_s : iterable of (float, float)
        ``(start, end)`` in simulated seconds, e.g.
        :func:`flashsim.measure.timeline.rebuild_windows`.
    label : str
        Legend label, given to the first span only.
    scale : float, optional
        Seconds per x-axis unit; ``None``: the unit :func:`plot_timeline`
        drew ``ax`` in (1 s for another axes).

    Returns
    -------
    matplotlib.figure.Figure
        The axes' figure.
    """
    per_unit = scale if scale is not None else float(getattr(ax, _SCALE_ATTR, 1.0))
    for i, (start, end) in enumerate(spans_s):
        ax.axvspan(
            start / per_unit,
            end / per_unit,
            alpha=0.2,
            color="tab:gray",
            label=label if i == 0 else None,
        )
    return _figure(ax)
