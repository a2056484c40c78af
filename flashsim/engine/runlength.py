"""Run-length control by the method of batch means.

A steady-state measurement stops when the relative 95 % confidence half-width
of its mean, estimated from batch means after a warm-up deletion, falls below a
target; the half-width is reported with the result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Estimate:
    """A steady-state mean with its confidence interval.

    Attributes
    ----------
    mean : float
        Point estimate.
    halfwidth : float
        Half-width of the confidence interval (same unit as ``mean``).
    n_batches : int
        Number of batches used.
    confidence : float
        Confidence level of the interval.
    """

    mean: float
    halfwidth: float
    n_batches: int
    confidence: float = 0.95

    @property
    def rel_halfwidth(self) -> float:
        """Half-width over mean (``inf`` when the mean is 0)."""
        return self.halfwidth / abs(self.mean) if self.mean != 0 else math.inf


def batch_means(samples: npt.ArrayLike, n_batches: int = 20, confidence: float = 0.95) -> Estimate:
    """Estimate the mean of a stationary series and its confidence half-width.

    Parameters
    ----------
    samples : array_like
        Observations in time order (e.g. per-interval throughputs).
    n_batches : int
        Number of equal batches (>= 2); trailing samples that do not fill a
        batch are dropped.
    confidence : float
        Two-sided confidence level, e.g. 0.95.
    """
    x = np.asarray(samples, dtype=np.float64)
    if n_batches < 2:
        raise ValueError(f"n_batches(={n_batches}) must be >= 2")
    size = x.size // n_batches
    if size == 0:
        return Estimate(float(x.mean()) if x.size else math.nan, math.inf, 0, confidence)
    means = x[: size * n_batches].reshape(n_batches, size).mean(axis=1)
    # Student's t quantile: special.stdtrit is what stats.t.ppf computes (bit-identical),
    # imported here, not at start-up: scipy.special costs ~0.2 s, scipy.stats ~0.5 s.
    from scipy import special

    t = float(special.stdtrit(n_batches - 1, 0.5 + confidence / 2.0))
    halfwidth = t * float(means.std(ddof=1)) / math.sqrt(n_batches)
    return Estimate(float(means.mean()), halfwidth, n_batches, confidence)


#: Fewest throughput samples before the stopping rule is tested: two per batch of the
#: default 20 batches, the least :meth:`RunLengthControl.estimate` can form batch means from.
MIN_SAMPLES_FOR_BATCHES = 40


@dataclass
class RunLengthControl:
    """Decides when a steady-state measurement has run long enough.

    Parameters
    ----------
    target_rel_halfwidth : float
        Stop once the relative confidence half-width is below this (e.g. 0.01).
    n_batches : int
        Batches for :func:`batch_means`.
    min_samples : int
        Samples required (after warm-up) before testing.
    max_samples : int
        Stop regardless after this many samples (the estimate then carries a
        wider interval).
    warmup_fraction : float
        Fraction of the leading samples deleted as warm-up.
    """

    target_rel_halfwidth: float = 0.01
    n_batches: int = 20
    min_samples: int = 200
    max_samples: int = 1_000_000
    warmup_fraction: float = 0.1

    def __post_init__(self) -> None:
        if not self.target_rel_halfwidth > 0:
            raise ValueError(f"target_rel_halfwidth(={self.target_rel_halfwidth}) must be > 0")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError(f"warmup_fraction(={self.warmup_fraction}) must be in [0, 1)")

    def estimate(self, samples: npt.ArrayLike) -> Estimate:
        """Batch-means estimate after deleting the warm-up."""
        x = np.asarray(samples, dtype=np.float64)
        return batch_means(x[int(self.warmup_fraction * x.size) :], self.n_batches)

    def done(self, samples: npt.ArrayLike) -> bool:
        """True once the target precision (or ``max_samples``) is reached."""
        x = np.asarray(samples, dtype=np.float64)
        if x.size >= self.max_samples:
            return True
        if x.size < self.min_samples:
            return False
        return self.estimate(x).rel_halfwidth < self.target_rel_halfwidth
