"""The numbers of the PDSW'21 VAST figures, from a study's rows.

:func:`summarize_grid` (Figs 2, 3), :func:`summarize_iops` (Fig. 4) and
:func:`summarize_sizes` (Fig. 5) reduce a study's DataFrame to the scalars
the validation records compare (bandwidths in GB/s, rates in IOPS, ratios).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported by the callers that build the frames, not at start-up
    import pandas as pd


def summarize_grid(df: pd.DataFrame) -> dict[str, float]:
    """Fig. 2/3 numbers: per mode, operation and ``x = N p``, the mean and CV of bandwidth."""
    out: dict[str, float] = {}
    for (mode, op, x), g in df.groupby(["mode", "op", "x"]):
        bw = g["bandwidth_Bps"].to_numpy()
        out[f"{mode}_{op}_GBps_x{x}"] = float(bw.mean() / 1e9)
        out[f"{mode}_{op}_cv_x{x}"] = (
            float(bw.std(ddof=0)) / float(bw.mean()) if bw.mean() > 0 else math.nan
        )
        by_t = g.groupby("t")["bandwidth_Bps"].mean().to_numpy()
        out[f"{mode}_{op}_cv_t_x{x}"] = float(by_t.std(ddof=0) / by_t.mean())
    for mode in ("naive", "aged"):
        for op in ("write", "read"):
            cvs = [v for k, v in out.items() if k.startswith(f"{mode}_{op}_cv_x")]
            if cvs:
                out[f"{mode}_{op}_cv_max"] = float(max(cvs))
                out[f"{mode}_{op}_cv_mean"] = float(np.mean(cvs))
            cvt = [v for k, v in out.items() if k.startswith(f"{mode}_{op}_cv_t_x")]
            if cvt:
                out[f"{mode}_{op}_cv_t_max"] = float(max(cvt))
    xs = sorted(df["x"].unique())
    if xs:
        top = xs[-1]
        w = out.get(f"naive_write_GBps_x{top}")
        r = out.get(f"naive_read_GBps_x{top}")
        if w and r:
            out["naive_read_write_ratio_xmax"] = r / w
        if len(xs) >= 2:
            # Fig. 2's slope at the top: the mean at the largest x over the next smaller x.
            for mode in ("naive", "aged"):
                for op in ("write", "read"):
                    hi = out.get(f"{mode}_{op}_GBps_x{top}")
                    lo = out.get(f"{mode}_{op}_GBps_x{xs[-2]}")
                    if hi and lo:
                        out[f"{mode}_{op}_xmax_over_prev"] = hi / lo
        w_mid = out.get("naive_write_GBps_x32")
        if w and w_mid:
            out["naive_write_saturation_xmax_over_x32"] = w / w_mid
        for x in xs:
            a = out.get(f"aged_read_GBps_x{x}")
            n = out.get(f"naive_read_GBps_x{x}")
            if a and n:
                out[f"aged_over_naive_read_x{x}"] = a / n
        out["x_max"] = float(top)
    return out


def summarize_iops(df: pd.DataFrame) -> dict[str, float]:
    """Fig. 4 numbers: mean IOPS per test and x, N-vs-p spread, and scaling ratios."""
    out: dict[str, float] = {}
    for (test, x), g in df.groupby(["test", "x"]):
        out[f"{test}_iops_x{x}"] = float(g["iops"].mean())
        per_np = g.groupby(["N", "p"])["iops"].mean()
        if per_np.size > 1:
            out[f"{test}_np_spread_x{x}"] = float(per_np.max() / per_np.min())
    for test in df["test"].unique():
        spreads = [v for k, v in out.items() if k.startswith(f"{test}_np_spread_x")]
        if spreads:
            out[f"{test}_np_spread_max"] = float(max(spreads))
        xs = sorted(df.loc[df["test"] == test, "x"].unique())
        if len(xs) >= 2:
            top = xs[-1]
            half = xs[-2]
            out[f"{test}_xmax_over_prev"] = out[f"{test}_iops_x{top}"] / out[f"{test}_iops_x{half}"]
            if 16 in xs:
                out[f"{test}_xmax_over_x16"] = out[f"{test}_iops_x{top}"] / out[f"{test}_iops_x16"]
    return out


def summarize_sizes(df: pd.DataFrame) -> dict[str, float]:
    """Fig. 5 numbers: IOPS per size, and the fresh-smallest over the all-QLC rate."""
    out: dict[str, float] = {}
    fresh = df[~df["aged"].astype(bool)]
    means = fresh.groupby("size_B")["iops"].mean().sort_index()
    fractions = fresh.groupby("size_B")["scm_fraction"].mean().sort_index()
    for size, iops, frac in zip(
        means.index.to_numpy(dtype=float), means.to_numpy(), fractions.to_numpy(), strict=True
    ):
        out[f"iops_{size / 1e12:g}TB"] = float(iops)
        out[f"scm_fraction_{size / 1e12:g}TB"] = float(frac)
    aged = df[df["aged"].astype(bool)]
    if len(aged):
        out["iops_all_qlc"] = float(aged["iops"].mean())
        out["scm_fraction_aged"] = float(aged["scm_fraction"].mean())
        out["smallest_over_all_qlc"] = float(means.iloc[0]) / out["iops_all_qlc"]
    if means.size >= 2:
        out["smallest_over_largest"] = float(means.iloc[0] / means.iloc[-1])
        steps = np.diff(means.to_numpy())
        out["monotone_nonincreasing"] = float(bool(np.all(steps <= 1e-9 * means.max())))
    return out
