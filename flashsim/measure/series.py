"""Bandwidth time series and their distribution, as a storage controller's poller sees them.

Seed 003 (§2) polls Spider's DDN controllers "at 2 second intervals" for
read and write bandwidth and plots the CDF of those samples (Fig. 3): long
heavy tails, the 99th percentile and the maximum far above the median.
:func:`bandwidth_series` turns simulated transfers into such a series (each
transfer's bytes spread uniformly over its ``[start, end)``, so an interval
gets exactly the bytes that crossed it) and :func:`cdf_summary` reduces it
to the figures the seed quotes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

#: Polling interval of Spider's DDN S2A9900 controllers (seed 003 §2), seconds.
DDN_POLL_INTERVAL_S = 2.0


def bandwidth_series(
    start_s: npt.ArrayLike,
    end_s: npt.ArrayLike,
    bytes_B: npt.ArrayLike,
    interval_s: float,
    t0_s: float,
    t1_s: float,
) -> npt.NDArray[np.float64]:
    """Bytes per second in each interval of ``[t0_s, t1_s)``.

    Parameters
    ----------
    start_s, end_s : array_like of float
        When each transfer started and ended (s); ``end_s >= start_s``.
    bytes_B : array_like of float
        Bytes each transfer moved (>= 0).  They are spread uniformly over
        ``[start, end)``; a transfer of zero length counts wholly in the
        interval holding its start.
    interval_s : float
        Sampling interval (s), e.g. :data:`DDN_POLL_INTERVAL_S`.
    t0_s, t1_s : float
        Window (s); intervals are ``[t0 + i*interval, t0 + (i+1)*interval)``,
        the last one cut at ``t1_s`` (its rate is over its own length).
        Bytes outside the window are not counted.

    Returns
    -------
    numpy.ndarray of float
        Bandwidth of each interval, bytes/s (``ceil((t1-t0)/interval)`` values).

    Raises
    ------
    ValueError
        Mismatched lengths, non-finite or negative values, ``end < start``,
        ``interval_s <= 0`` or ``t1_s <= t0_s``.
    """
    start = np.asarray(start_s, dtype=np.float64)
    end = np.asarray(end_s, dtype=np.float64)
    size = np.asarray(bytes_B, dtype=np.float64)
    if not (start.shape == end.shape == size.shape) or start.ndim != 1:
        raise ValueError(
            f"start_s, end_s, bytes_B: shapes {start.shape}, {end.shape}, {size.shape}; "
            "expected three 1-D arrays of one length"
        )
    if not (math.isfinite(interval_s) and interval_s > 0):
        raise ValueError(f"interval_s(={interval_s}) must be a finite number > 0")
    if not (math.isfinite(t0_s) and math.isfinite(t1_s) and t1_s > t0_s):
        raise ValueError(f"window [t0_s={t0_s}, t1_s={t1_s}) must be finite with t1_s > t0_s")
    for label, values in (("start_s", start), ("end_s", end), ("bytes_B", size)):
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{label}: values must be finite")
    if np.any(size < 0):
        raise ValueError("bytes_B: values must be >= 0")
    if np.any(end < start):
        raise ValueError("end_s: a transfer ends before it starts")
    n = math.ceil((t1_s - t0_s) / interval_s - 1e-9)
    edges = np.minimum(t0_s + interval_s * np.arange(n + 1, dtype=np.float64), t1_s) - t0_s
    widths = np.diff(edges)
    s, e = start - t0_s, end - t0_s
    total = edges[-1]
    per_interval = np.zeros(n)
    # Transfers with a duration: rate times overlap, clipped to the window.  A duration
    # below a femtosecond (relative) is instantaneous: its rate would overflow.
    lasting = (e - s) > 1e-15 * np.maximum(1.0, np.abs(s))
    span = lasting & (e > 0.0) & (s < total)
    rate = size[span] / (e[span] - s[span])
    lo, hi = np.maximum(s[span], 0.0), np.minimum(e[span], total)
    first = np.minimum((lo // interval_s).astype(np.int64), n - 1)
    last = np.minimum((hi // interval_s).astype(np.int64), n - 1)
    one = first == last
    per_interval += np.bincount(first[one], weights=rate[one] * (hi - lo)[one], minlength=n)
    many = ~one
    f, g, r = first[many], last[many], rate[many]
    per_interval += np.bincount(f, weights=r * (edges[f + 1] - lo[many]), minlength=n)
    per_interval += np.bincount(g, weights=r * (hi[many] - edges[g]), minlength=n)
    # Whole intervals strictly between: a difference array of rates, and of transfer counts
    # so that an interval no transfer covers stays exactly 0 (no cancellation residue).
    diff_rate = np.bincount(f + 1, weights=r, minlength=n + 1) - np.bincount(
        g, weights=r, minlength=n + 1
    )
    diff_count = np.bincount(f + 1, minlength=n + 1) - np.bincount(g, minlength=n + 1)
    covering = np.cumsum(diff_count)[:n] > 0
    per_interval += np.where(covering, np.cumsum(diff_rate)[:n], 0.0) * widths
    # Instantaneous transfers: all bytes in the interval holding the start.
    inst = ~lasting & (s >= 0.0) & (s < total)
    idx = np.minimum((s[inst] // interval_s).astype(np.int64), n - 1)
    per_interval += np.bincount(idx, weights=size[inst], minlength=n)
    result: npt.NDArray[np.float64] = np.maximum(per_interval, 0.0) / widths
    return result


def cdf_summary(samples: npt.ArrayLike) -> dict[str, Any]:
    """The figures seed 003 §2 reads off its bandwidth CDFs (Fig. 3).

    Parameters
    ----------
    samples : array_like of float
        Bandwidth samples (bytes/s), e.g. from :func:`bandwidth_series`.

    Returns
    -------
    dict
        ``n``; ``p50``, ``p90``, ``p99`` (linear-interpolated percentiles),
        ``max`` and ``mean`` in the samples' unit; ``peak_to_median``
        (``max / p50``: ``inf`` when the median is 0 and the maximum is not,
        ``nan`` when both are 0); ``peak_to_mean`` (``max / mean``, the
        seed's own comparison: peaks "in excess of 60GB/s" against average
        utilisation of 1.22 and 1.95 GB/s on widow2 and widow3, seed 003 §2;
        ``nan`` when the mean is 0); ``zero_fraction`` (share of samples
        equal to 0, idle intervals).

    Raises
    ------
    ValueError
        No samples, or a non-finite one.
    """
    x = np.asarray(samples, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("samples: empty; expected at least one bandwidth sample")
    if not np.all(np.isfinite(x)):
        raise ValueError("samples: values must be finite")
    p50, p90, p99 = (float(v) for v in np.percentile(x, [50.0, 90.0, 99.0]))
    peak = float(x.max())
    mean = float(x.mean())
    ratio = peak / p50 if p50 > 0 else (math.inf if peak > 0 else math.nan)
    return {
        "n": int(x.size),
        "p50": p50,
        "p90": p90,
        "p99": p99,
        "max": peak,
        "mean": mean,
        "peak_to_median": ratio,
        "peak_to_mean": peak / mean if mean > 0 else math.nan,
        "zero_fraction": float(np.mean(x == 0.0)),
    }
