"""The timeline plot helper draws a run's bandwidth per phase and its state (Agg backend)."""

from __future__ import annotations

import dataclasses
import math

import matplotlib
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from flashsim.components.target_state import SystemStatus
from flashsim.measure.plots import mark_windows, plot_timeline, time_unit
from flashsim.measure.results import (
    BandwidthSample,
    PhaseResult,
    RunResult,
    TimelineSample,
)
from flashsim.measure.timeline import rebuild_windows

DAY = 86400.0


def _sample(t: float, **state: object) -> TimelineSample:
    base = SystemStatus(time_s=t, targets=8).to_dict()
    base.update(state)
    return TimelineSample(t, "", False, base)


def _result(scm: bool) -> RunResult:
    """Ten days: two checkpoint probes, a rebuild on days 3-5, WA rising."""
    fill = {"buffer_fill": 0.4} if scm else {}
    timeline = [
        _sample(0.0, **fill),
        _sample(3 * DAY, failed_drives=1, rebuilding_targets=[2], degraded_targets=[2], **fill),
        _sample(5 * DAY, mean_write_amplification=1.8, **fill),
        _sample(10 * DAY, mean_write_amplification=2.4, **fill),
    ]
    phases = [
        dataclasses.replace(
            PhaseResult(f"checkpoint@{d}d", "write", bw, 1.0, 1, 1.0, 60.0, bw * 60),
            start_s=d * DAY,
        )
        for d, bw in ((1, 5e12), (8, 3e12))
    ]
    phases.append(
        dataclasses.replace(
            PhaseResult("production", "write", float("nan"), 0.0, 0, 0.0, 10 * DAY, 0.0),
            start_s=0.0,
        )
    )
    bandwidth = [
        BandwidthSample(
            p.name, p.start_s or 0.0, (p.start_s or 0.0) + 60, 1.0, p.bandwidth_Bps, None, "flows"
        )
        for p in phases[:2]
    ]
    return RunResult("year", "perlmutter", 0, "flow", 1.0, phases, timeline, bandwidth)


def _xs(line: Line2D) -> list[float]:
    return [float(v) for v in np.asarray(line.get_xdata(), dtype=float)]


def _ys(line: Line2D) -> list[float]:
    return [float(v) for v in np.asarray(line.get_ydata(), dtype=float)]


def _labels(ax: object) -> set[str]:
    _handles, labels = ax.get_legend_handles_labels()  # type: ignore[attr-defined]
    return set(labels)


def test_plot_timeline_draws_bandwidth_and_state_with_units() -> None:
    result = _result(scm=True)
    fig = plot_timeline(result)
    try:
        ax_bw, ax_state = fig.axes[0], fig.axes[1]
        assert ax_bw.get_ylabel() == "bandwidth (GB/s)"
        assert _labels(ax_bw) == {"checkpoint", "checkpoint: mean of each run"}
        assert ax_state.get_xlabel() == "simulated time (days)"
        assert ax_state.get_ylabel() == "write amplification"
        counts, fill = fig.axes[2], fig.axes[3]  # the state panel's twins
        assert counts.get_ylabel() == "drives down, targets rebuilding"
        assert fill.get_ylabel() == "SCM fill (%)" and fill.get_ylim() == (0.0, 100.0)
        (pct,) = fill.get_lines()
        assert _ys(pct) == pytest.approx([40.0] * 4)
        legend = ax_state.get_legend()
        assert legend is not None
        names = [t.get_text() for t in legend.get_texts()]
        assert names == [
            "mean write amplification",
            "drives down",
            "targets rebuilding",
            "SCM fill (%)",
        ]
        # The probe's line is at its bandwidth in GB/s, at its day.
        (probe,) = [line for line in ax_bw.get_lines() if line.get_label() == "checkpoint"]
        y = _ys(probe)
        assert y[:2] == pytest.approx([5000.0, 5000.0]) and math.isnan(y[2])
        assert y[3:] == pytest.approx([3000.0, 3000.0])  # the runs, not joined
        assert _xs(probe)[3] == pytest.approx(8.0)
        (means,) = [
            line for line in ax_bw.get_lines() if "mean of each run" in str(line.get_label())
        ]
        assert _xs(means) == pytest.approx([1.0, 8.0])
        assert _ys(means) == pytest.approx([5000.0, 3000.0])
        wa = next(line for line in ax_state.get_lines() if "write amp" in str(line.get_label()))
        assert _ys(wa) == pytest.approx([1.0, 1.0, 1.8, 2.4])
        # Rebuild windows shade the state panel in its unit (days).
        spans = rebuild_windows(result.timeline)
        assert spans == [(3 * DAY, 5 * DAY)]
        assert mark_windows(ax_state, spans, "rebuild") is fig
        (patch,) = [p for p in ax_state.patches if p.get_label() == "rebuild"]
        x0, x1 = patch.get_x(), patch.get_x() + patch.get_width()  # type: ignore[attr-defined]
        assert (x0, x1) == pytest.approx((3.0, 5.0))
    finally:
        plt.close(fig)


def test_plot_timeline_on_one_given_axes_and_without_scm() -> None:
    fig, ax = plt.subplots()
    try:
        assert plot_timeline(_result(scm=False), ax=ax) is fig
        assert ax.get_ylabel() == "bandwidth (GB/s)"
        labels = [a.get_ylabel() for a in fig.axes]
        assert "write amplification" in labels
        assert "drives down, targets rebuilding" in labels
        assert "SCM fill (%)" not in labels  # no SCM fill without tiers
    finally:
        plt.close(fig)


def test_time_unit_suits_the_run() -> None:
    assert time_unit(30.0) == (1.0, "s")
    assert time_unit(600.0) == (60.0, "min")
    assert time_unit(5 * 3600.0) == (3600.0, "h")
    assert time_unit(365 * DAY) == (DAY, "days")


def test_a_phase_without_intervals_is_a_marker_at_its_mean() -> None:
    phase = dataclasses.replace(
        PhaseResult("iops", "read", 2e9, 5e5, 8, 4096.0, 4.0, 8e9), start_s=30.0
    )
    result = RunResult("s", "sys", 0, "request", 0.1, [phase], [_sample(0.0), _sample(40.0)], [])
    fig = plot_timeline(result)
    try:
        (mark,) = fig.axes[0].get_lines()
        assert mark.get_label() == "phase mean"
        assert (_xs(mark), _ys(mark)) == ([30.0], [2.0])
        assert fig.axes[1].get_xlabel() == "simulated time (s)"
    finally:
        plt.close(fig)
