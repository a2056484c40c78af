"""Figs 2-5 of the PDSW'21 VAST study, drawn beside the numbers the seed states.

The published numbers are read from the validation records
(``validation/vast.toml``, by record id) rather than repeated here: one place
holds each number, its source and its tolerance.  Each ``plot_fig*`` draws
one figure of a study's DataFrame (:mod:`flashsim.studies.vast`) on a
Matplotlib ``Axes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from flashsim.config import load_toml

#: The VAST validation records, beside the package in a source checkout.
VALIDATION_FILE = Path(__file__).resolve().parents[2] / "validation" / "vast.toml"

#: Record ids of the published numbers the figures draw.
WRITE_SATURATION = "vast.write.saturation"  # GB/s, Fig. 2
NAIVE_READ_X128 = "vast.read.naive_above_25"  # GB/s, Fig. 2
SCM_READ = "vast.scm.read_bandwidth"  # GB/s, Sec. III-B
QLC_READ = "vast.qlc.read_bandwidth"  # GB/s, Sec. III-B
AGED_OVER_NAIVE_MIN = "vast.aged.faster_x32"  # ratio, Fig. 3
AGED_OVER_NAIVE_MAX = "vast.aged.not_double_x32"  # ratio, Fig. 3
RANDREAD_QLC_64 = "vast.fig4.randread_qlc_64"  # IOPS, Sec. IV-B
RANDREAD_SCM_OVER_QLC = "vast.fig5.scm_over_qlc"  # ratio, Fig. 5


def published_values(path: str | Path = VALIDATION_FILE) -> dict[str, float]:
    """The ``published`` value of every record of a validation file, by record id.

    Parameters
    ----------
    path : path
        A validation file (``[[record]]`` tables with ``id`` and ``published``).
    """
    data = load_toml(Path(path))
    return {str(r["id"]): float(r["published"]) for r in data.get("record", [])}


def _values(published: Mapping[str, float] | None) -> Mapping[str, float]:
    return published_values() if published is None else published


def plot_fig2(df: pd.DataFrame, ax: Any, published: Mapping[str, float] | None = None) -> None:
    """Fig. 2: naive mean bandwidth and CV against ``x = N p`` (published statements dashed).

    Parameters
    ----------
    df : pandas.DataFrame
        Rows of :func:`~flashsim.studies.vast.run_grid`.
    ax : matplotlib.axes.Axes
        Where to draw.
    published : mapping, optional
        Record id -> published value (default: :func:`published_values`).
    """
    pub = _values(published)
    naive = df[df["mode"] == "naive"]
    for op, color in (("write", "tab:red"), ("read", "tab:blue")):
        g = naive[naive["op"] == op].groupby("x")["bandwidth_Bps"]
        ax.plot(g.mean().index, g.mean() / 1e9, "o-", color=color, label=f"{op} (flashsim)")
    w, r, scm = pub[WRITE_SATURATION], pub[NAIVE_READ_X128], pub[SCM_READ]
    ax.axhline(w, color="tab:red", ls="--", lw=1, label=f"write saturation {w:g} GB/s (seed)")
    ax.axhline(r, color="tab:blue", ls="--", lw=1, label=f"read > {r:g} GB/s at x=128 (seed)")
    ax.axhline(scm, color="grey", ls=":", lw=1, label=f"12 SCM: {scm:g} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N x p")
    ax.set_ylabel("mean bandwidth (GB/s)")
    ax.set_title("Fig. 2: naive bandwidth")
    ax.legend(fontsize=7)
    twin = ax.twinx()
    for op, color in (("write", "tab:red"), ("read", "tab:blue")):
        g = naive[naive["op"] == op].groupby("x")["bandwidth_Bps"]
        twin.plot(g.mean().index, g.std(ddof=0) / g.mean(), "x:", color=color, alpha=0.6)
    twin.set_ylabel("CV (x markers)")
    twin.set_ylim(0, 1)


def plot_fig3(df: pd.DataFrame, ax: Any, published: Mapping[str, float] | None = None) -> None:
    """Fig. 3: naive vs aged read bandwidth with one-standard-deviation error bars.

    Parameters are those of :func:`plot_fig2`.
    """
    pub = _values(published)
    reads = df[df["op"] == "read"]
    for mode, color in (("naive", "tab:blue"), ("aged", "tab:green")):
        g = reads[reads["mode"] == mode].groupby("x")["bandwidth_Bps"]
        ax.errorbar(
            g.mean().index,
            g.mean() / 1e9,
            yerr=g.std(ddof=0) / 1e9,
            fmt="o-",
            color=color,
            capsize=3,
            label=f"{mode} (flashsim)",
        )
    naive32 = reads[(reads["mode"] == "naive") & (reads["x"] == 32)]["bandwidth_Bps"].mean()
    lo, hi = pub[AGED_OVER_NAIVE_MIN], pub[AGED_OVER_NAIVE_MAX]
    ax.vlines(
        [32],
        lo * naive32 / 1e9,
        hi * naive32 / 1e9,
        color="k",
        lw=3,
        label=f"seed: aged 'over 50%' above naive at x=32 ({lo:g}-{hi:g}x)",
    )
    qlc = pub[QLC_READ]
    ax.axhline(qlc, color="grey", ls=":", lw=1, label=f"44 QLC: {qlc:g} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N x p")
    ax.set_ylabel("read bandwidth (GB/s)")
    ax.set_title("Fig. 3: naive vs aged reads")
    ax.legend(fontsize=7)


def plot_fig4(df: pd.DataFrame, ax: Any, published: Mapping[str, float] | None = None) -> None:
    """Fig. 4: random 4 KiB IOPS against ``x = N p`` for each test.

    Parameters are those of :func:`plot_fig2`, with ``df`` from
    :func:`~flashsim.studies.vast.run_iops_grid`.
    """
    pub = _values(published)
    for test, color in (
        ("read", "tab:blue"),
        ("write-buffered", "tab:red"),
        ("write-direct", "tab:orange"),
    ):
        g = df[df["test"] == test].groupby("x")["iops"]
        ax.errorbar(
            g.mean().index,
            g.mean(),
            yerr=g.std(ddof=0),
            fmt="o-",
            color=color,
            capsize=3,
            label=f"{test} (flashsim)",
        )
    qlc64 = pub[RANDREAD_QLC_64]
    ax.plot([64], [qlc64], "k*", ms=10, label=f"seed: {qlc64 / 1e3:g} KIOPS read at 64 procs")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N x p")
    ax.set_ylabel("IOPS")
    ax.set_title("Fig. 4: random 4 KiB I/O")
    ax.legend(fontsize=7)


def plot_fig5(
    df: pd.DataFrame,
    ax: Any,
    published: Mapping[str, float] | None = None,
    scm_buffer_B: float | None = None,
) -> None:
    """Fig. 5: 64-process random-read rate against dataset size.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows of :func:`~flashsim.studies.vast.run_size_sweep`.
    ax : matplotlib.axes.Axes
        Where to draw.
    published : mapping, optional
        Record id -> published value (default: :func:`published_values`).
    scm_buffer_B : float, optional
        The SCM write buffer in bytes (the model's ``tier.write_buffer``),
        marked as a vertical line.
    """
    pub = _values(published)
    fresh = df[~df["aged"].astype(bool)]
    g = fresh.groupby("size_B")["iops"]
    ax.errorbar(
        g.mean().index / 1e12,
        g.mean() / 1e3,
        yerr=g.std(ddof=0) / 1e3,
        fmt="o-",
        capsize=3,
        label="fresh dataset (flashsim)",
    )
    qlc_k = pub[RANDREAD_QLC_64] / 1e3
    ratio = pub[RANDREAD_SCM_OVER_QLC]
    ax.axhline(qlc_k, color="k", ls="--", lw=1, label=f"seed: {qlc_k:g} KIOPS all on QLC")
    ax.axhline(ratio * qlc_k, color="k", ls=":", lw=1, label=f"seed: up to {ratio:g}x in SCM")
    if scm_buffer_B is not None:
        tb = scm_buffer_B / 1e12
        ax.axvline(tb, color="grey", ls=":", lw=1, label=f"{tb:g} TB SCM buffer")
    ax.set_xlabel("dataset size (TB)")
    ax.set_ylabel("KIOPS")
    ax.set_title("Fig. 5: random reads vs dataset size")
    ax.legend(fontsize=7)
