"""Plots of a run over time: each phase's bandwidth and the system's state (matplotlib).

matplotlib is imported when a plot is drawn, never with :mod:`flashsim.cli`.
:func:`plot_timeline` draws a :class:`~flashsim.measure.results.RunResult`'s
``bandwidth`` (GB/s per phase, a step per interval, and each phase's own
mean as a marker at its start: a repeated probe's points over the run) and
its ``timeline`` (mean write amplification; drives down and targets
rebuilding; SCM fill in %), on two stacked panels sharing the time axis;
:func:`mark_windows` shades spans given in seconds (rebuild windows,
:func:`flashsim.measure.timeline.rebuild_windows`) in the axes' unit.  Time is shown in the
unit that suits the run's length (s, min, h or days).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from flashsim.measure.results import RunResult

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


def _draw_bandwidth(ax: Axes, result: RunResult, scale: float) -> None:
    """Each phase's bandwidth (GB/s): a step per interval, its mean as a marker."""
    phases: dict[str, list[tuple[float, float, float]]] = {}
    for b in result.bandwidth:
        phases.setdefault(b.phase, []).append((b.start_s, b.end_s, b.bandwidth_Bps))
    for name, rows in phases.items():
        xs: list[float] = []
        ys: list[float] = []
        for start, end, rate in rows:
            xs.extend([start / scale, end / scale])
            ys.extend([rate / 1e9, rate / 1e9])
        ax.plot(xs, ys, label=name, linewidth=1.2)
    means = [(p.start_s, p.bandwidth_Bps) for p in result.phases if p.start_s is not None]
    if means and len(phases) != len(result.phases):
        ax.plot(
            [t / scale for t, _ in means],
            [bw / 1e9 for _, bw in means],
            linestyle="none",
            marker="o",
            markersize=3,
            color="black",
            label="phase mean",
        )
    ax.set_ylabel("bandwidth (GB/s)")
    if phases or means:
        ax.legend(loc="best", fontsize="small")


def _draw_state(ax: Axes, result: RunResult, scale: float, offset: bool = False) -> None:
    """Mean WA (left axis); drives down, rebuilding targets and SCM fill % (right axis).

    ``offset``: ``ax`` is itself a twin on the right, so the counts' axis is moved
    further right to stay readable.
    """
    samples = result.timeline
    t = [s.time_s / scale for s in samples]
    wa = [s.state.get("mean_write_amplification", 1.0) for s in samples]
    (wa_line,) = ax.step(t, wa, where="post", color="tab:blue", label="mean write amplification")
    ax.set_ylabel("write amplification")
    right = ax.twinx()
    if offset:
        right.spines["right"].set_position(("axes", 1.12))
    lines = [wa_line]
    down = [float(s.state.get("failed_drives", 0)) for s in samples]
    rebuilding = [float(len(s.state.get("rebuilding_targets") or ())) for s in samples]
    lines += right.step(t, down, where="post", color="tab:red", label="drives down")
    lines += right.step(
        t, rebuilding, where="post", color="tab:orange", linestyle="--", label="targets rebuilding"
    )
    label = "drives down, targets rebuilding"
    fills = [s.state.get("buffer_fill") for s in samples]
    if any(f is not None for f in fills):
        pct = [100.0 * f if f is not None else float("nan") for f in fills]
        lines += right.step(t, pct, where="post", color="tab:green", label="SCM fill (%)")
        label += ", SCM fill (%)"
    right.set_ylabel(label)
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
