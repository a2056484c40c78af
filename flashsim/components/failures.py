"""Drive failures: injection at a time or from an annualised failure rate, and data loss.

* Rates: an annualised failure rate (AFR) is turned into an exponential
  lifetime rate ``lambda = -ln(1 - AFR) / year``; a datasheet MTBF into an AFR
  by ``AFR = 1 - exp(-8760 h / MTBF)`` (the convention of drive datasheets:
  8,760 power-on hours a year; a 2,000,000 h MTBF is an AFR of 0.44 %,
  Seagate Pulsar.2 product manual §6, "MTBF 2,000,000 hours, AFR 0.44 %").
* Injection (:func:`failure_times`): each drive's first failure drawn from its
  own seeded stream, so adding a drive never changes another's lifetime.
* Data loss: a group of ``width`` drives that survives ``tolerance`` concurrent
  failures (RAID6: 2; a declustered array is one group of all its drives)
  loses data when ``tolerance + 1`` of its drives are down at once, a drive
  being down from its failure until its rebuild ends.
  :func:`simulate_data_loss` is a vectorised Monte Carlo of system-years
  (each drive slot an alternating renewal process: exponential up time,
  fixed or exponential rebuild); :func:`markov_loss_probability` and
  :func:`markov_mttdl` solve the birth-death Markov chain of one group
  exactly, and :func:`mttdl_raid6_chen` is the closed form of Chen, Lee,
  Gibson, Katz and Patterson, "RAID: High-performance, reliable secondary
  storage", ACM Computing Surveys 26(2), 1994, §3.4 (P+Q redundancy):
  ``MTTDL = MTTF**3 / (N (G - 1) (G - 2) MTTR**2)``, the chain's limit for
  ``MTTR << MTTF`` with one repair at a time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

#: Power-on hours a year of the AFR/MTBF convention (Seagate Pulsar.2 manual §6: "8760
#: power-on-hours per year").
HOURS_PER_YEAR = 8760.0
YEAR_S = HOURS_PER_YEAR * 3600.0
#: Samsung PM1733: MTBF 2,000,000 h (Samsung PM1733/PM1735 product brief, "Reliability (MTBF):
#: 2 million hours"; not in the seeds), i.e. AFR 0.437 %.
PM1733_MTBF_H = 2.0e6
#: Spider (seed 003 §3.1.1): "an average of 4 disk failures per month" over "13,440 1 terabyte
#: SATA drives" (§4): an observed HDD AFR of 48 / 13,440 = 0.357 %.
SPIDER_FAILURES_PER_MONTH = 4.0
SPIDER_DRIVES = 13440
#: Largest number of drive-slot floats one Monte Carlo batch holds.
BATCH_FLOATS = 4_000_000

Repair = Literal["fixed", "exponential"]


def afr_from_mtbf(mtbf_h: float) -> float:
    """Annualised failure rate (fraction) of a drive with MTBF ``mtbf_h`` hours."""
    if not mtbf_h > 0:
        raise ValueError(f"mtbf_h(={mtbf_h}) must be > 0 hours")
    return 1.0 - math.exp(-HOURS_PER_YEAR / mtbf_h)


def check_afr(afr: float) -> None:
    """Raise ``ValueError`` unless ``0 <= afr < 1``."""
    if not (0.0 <= afr < 1.0):
        raise ValueError(
            f"afr(={afr}) must be an annualised failure rate in [0, 1) (0.0044 is 0.44 %/year)"
        )


def failure_rate_per_s(afr: float) -> float:
    """Exponential failure rate (1/s) of a drive with annualised failure rate ``afr``."""
    check_afr(afr)
    return -math.log1p(-afr) / YEAR_S


def spider_afr() -> float:
    """Spider's observed disk AFR (seed 003): 4 failures a month over 13,440 drives."""
    return 12.0 * SPIDER_FAILURES_PER_MONTH / SPIDER_DRIVES


def failure_times(
    rng_of: Callable[[int], np.random.Generator], drives: int, afr: float
) -> FloatArray:
    """First failure time (s) of each of ``drives`` drives, exponential at rate ``afr``.

    Parameters
    ----------
    rng_of : callable
        ``rng_of(i)`` is drive ``i``'s own stream, e.g.
        ``lambda i: sim.rng(f"{name}.drive{i}.failure")``.
    drives : int
        Number of drives.
    afr : float
        Annualised failure rate (fraction per year).
    """
    rate = failure_rate_per_s(afr)
    if drives < 0:
        raise ValueError(f"drives(={drives}) must be >= 0")
    if rate == 0.0:
        return np.full(drives, np.inf)
    return np.array([rng_of(i).exponential(1.0 / rate) for i in range(drives)])


# ------------------------------------------------------------------ Markov chain
def _generator(width: int, tolerance: int, lam: float, mu: float, parallel: bool) -> FloatArray:
    """Generator matrix of the transient states 0..tolerance (failed drives) of one group."""
    _check_chain(width, tolerance, lam, mu)
    size = tolerance + 1
    q = np.zeros((size, size))
    for k in range(size):
        fail = (width - k) * lam
        if k + 1 < size:
            q[k, k + 1] = fail
        repair = (k * mu if parallel else mu) if k > 0 else 0.0
        if k > 0:
            q[k, k - 1] = repair
        q[k, k] = -(fail + repair)
    return q


def _check_chain(width: int, tolerance: int, lam: float, mu: float) -> None:
    if not 0 <= tolerance < width:
        raise ValueError(f"tolerance(={tolerance}) must be in [0, width(={width}))")
    if not (lam > 0 and mu > 0):
        raise ValueError(f"failure rate(={lam}) and repair rate(={mu}) must be > 0")


def markov_mttdl(
    width: int, tolerance: int, lam: float, mu: float, parallel_repair: bool = True
) -> float:
    """Mean time (s) to data loss of one group from all drives up (exact, birth-death chain).

    Parameters
    ----------
    width : int
        Drives in the group (all of a declustered array).
    tolerance : int
        Concurrent failures survived (RAID6: 2).
    lam : float
        Failure rate of one drive (1/s).
    mu : float
        Repair rate of one rebuild (1/s; 1 / mean rebuild time).
    parallel_repair : bool
        Each failed drive rebuilds independently (``k mu`` from ``k`` down), as
        the Monte Carlo does; else one at a time (``mu``), as Chen et al. assume.
    """
    _check_chain(width, tolerance, lam, mu)
    # Expected time to go from k to k + 1 failed drives: T_k = (1 + d_k T_{k-1}) / b_k with
    # b_k = (width - k) lam, d_k the repair rate (a stable recurrence, no ill-conditioned solve).
    step = 0.0
    total = 0.0
    for k in range(tolerance + 1):
        repair = (k * mu if parallel_repair else mu) if k > 0 else 0.0
        step = (1.0 + repair * step) / ((width - k) * lam)
        total += step
    return total


def markov_loss_probability(
    width: int,
    tolerance: int,
    lam: float,
    mu: float,
    horizon_s: float,
    groups: int = 1,
    parallel_repair: bool = True,
) -> float:
    """Probability that any of ``groups`` independent groups loses data within ``horizon_s``.

    Exact for the exponential model: ``1 - (1 - P_group)**groups`` with
    ``P_group = expm(Q T)[0, lost]`` of the chain with its absorbing state.
    """
    q = _generator(width, tolerance, lam, mu, parallel_repair)
    size = tolerance + 2  # the transient states and the absorbing one (data lost)
    full = np.zeros((size, size))
    full[:-1, :-1] = q
    full[tolerance, tolerance + 1] = (width - tolerance) * lam
    # The absorption probability itself, not 1 - survival (no cancellation when it is tiny).
    from scipy import linalg  # imported on use: SciPy costs ~1 s of start-up

    p_group = min(max(float(linalg.expm(full * horizon_s)[0, -1]), 0.0), 1.0)
    return float(-np.expm1(groups * np.log1p(-p_group))) if p_group < 1 else 1.0


def mttdl_raid6_chen(drives_total: int, group: int, mttf_s: float, mttr_s: float) -> float:
    """MTTDL (s) of P+Q (RAID6) arrays, Chen et al. 1994 §3.4: ``MTTF^3 / (N (G-1)(G-2) MTTR^2)``.

    Parameters
    ----------
    drives_total : int
        Drives in all groups (``N``).
    group : int
        Drives per parity group (``G``, >= 3).
    mttf_s, mttr_s : float
        Mean time to failure of a drive and mean time to repair (s).
    """
    if group < 3 or drives_total < group:
        raise ValueError(f"group(={group}) must be >= 3 and <= drives_total(={drives_total})")
    return mttf_s**3 / (drives_total * (group - 1) * (group - 2) * mttr_s**2)


# ------------------------------------------------------------------ Monte Carlo
@dataclass(frozen=True)
class DataLossEstimate:
    """A Monte Carlo estimate of the probability of data loss in a horizon.

    Attributes
    ----------
    probability : float
        Fraction of simulated system-horizons that lost data.
    ci_low, ci_high : float
        95 % Clopper-Pearson interval of that probability.
    trials : int
        Simulated system-horizons.
    losses : int
        Of them, how many lost data.
    failures_per_trial : float
        Mean drive failures per simulated horizon (all drives of the system).
    """

    probability: float
    ci_low: float
    ci_high: float
    trials: int
    losses: int
    failures_per_trial: float


def _rounds(lam_T: float, slots: int) -> int:
    """Failures per slot to simulate so that more is improbable (< 1e-9 overall)."""
    from scipy import stats

    tail = 1e-9 / max(slots, 1)
    return int(stats.poisson.isf(tail, lam_T)) + 2


def simulate_data_loss(
    rng: np.random.Generator,
    groups: int,
    width: int,
    tolerance: int,
    afr: float,
    rebuild_s: float,
    trials: int,
    horizon_s: float = YEAR_S,
    repair: Repair = "fixed",
) -> DataLossEstimate:
    """Monte Carlo of data loss in ``trials`` system-horizons of ``groups`` groups.

    Each drive slot alternates an exponential up time (rate from ``afr``) and a
    rebuild of ``rebuild_s`` (fixed, or exponential with that mean), after
    which it is healthy again.  A group loses data when ``tolerance + 1`` of
    its slots are down at once.  Only groups in which at least ``tolerance +
    1`` slots fail within the horizon can lose data; their number is drawn
    (binomial) for all groups at once and only those are simulated in full,
    so 10^5 system-years of 274 arrays take a second.

    Parameters
    ----------
    rng : numpy.random.Generator
    groups : int
        Independent groups in the system (274 declustered OSTs).
    width : int
        Drives per group.
    tolerance : int
        Concurrent failures a group survives.
    afr : float
        Annualised failure rate per drive (fraction).
    rebuild_s : float
        Time (s) a failed drive stays down (detection plus rebuild).
    trials : int
        System-horizons simulated.
    horizon_s : float
        Length (s) of one simulated horizon (a year by default).
    repair : {"fixed", "exponential"}
        Distribution of the rebuild time.
    """
    lam = failure_rate_per_s(afr)
    if not 0 <= tolerance < width:
        raise ValueError(f"tolerance(={tolerance}) must be in [0, width(={width}))")
    if groups < 1 or trials < 1:
        raise ValueError(f"groups(={groups}) and trials(={trials}) must be >= 1")
    if not (rebuild_s > 0 and math.isfinite(rebuild_s)):
        raise ValueError(f"rebuild_s(={rebuild_s}) must be a finite time > 0 s")
    if repair not in ("fixed", "exponential"):
        raise ValueError(f"repair(={repair!r}) must be 'fixed' or 'exponential'")
    if lam == 0.0:
        hi = 1.0 - 0.05 ** (1.0 / trials)
        return DataLossEstimate(0.0, 0.0, hi, trials, 0, 0.0)
    p_first = -math.expm1(-lam * horizon_s)  # a slot fails at least once in the horizon
    rounds = _rounds(lam * horizon_s, groups * width)
    lost = np.zeros(trials, dtype=bool)
    failures = 0
    batch = max(1, BATCH_FLOATS // (groups + 1))
    for start in range(0, trials, batch):
        b = min(batch, trials - start)
        hit = rng.binomial(width, p_first, size=(b, groups))
        cand = np.argwhere(hit > tolerance)
        if cand.size:
            m = hit[cand[:, 0], cand[:, 1]]
            lost_groups, n_fail = _simulate_groups(
                rng, m, width, tolerance, lam, rebuild_s, horizon_s, repair, rounds
            )
            np.logical_or.at(lost, start + cand[lost_groups, 0], True)
            failures += int(n_fail)
        # Groups with too few failing slots to lose data still count their failures
        # (first failures; repeats of one slot are rare where loss is impossible).
        failures += int(hit[hit <= tolerance].sum())
    losses = int(lost.sum())
    lo, hi = _clopper_pearson(losses, trials)
    return DataLossEstimate(losses / trials, lo, hi, trials, losses, failures / trials)


def _simulate_groups(
    rng: np.random.Generator,
    m: npt.NDArray[np.int64],
    width: int,
    tolerance: int,
    lam: float,
    rebuild_s: float,
    horizon_s: float,
    repair: Repair,
    rounds: int,
) -> tuple[npt.NDArray[np.bool_], int]:
    """Which of the candidate groups (``m[g]`` slots failing at least once) lose data.

    Returns the loss flags and the failures simulated.
    """
    g = m.size
    gid = np.repeat(np.arange(g), m)  # the group of each failing slot
    slots = gid.size
    # First failure conditioned to fall inside the horizon (inverse CDF of a truncated exp).
    u = rng.random(slots)
    first = -np.log1p(-u * -math.expm1(-lam * horizon_s)) / lam
    ups = rng.exponential(1.0 / lam, size=(slots, rounds - 1))
    if repair == "fixed":
        downs = np.full((slots, rounds), rebuild_s)
    else:
        downs = rng.exponential(rebuild_s, size=(slots, rounds))
    starts = np.empty((slots, rounds))
    starts[:, 0] = first
    for k in range(1, rounds):
        starts[:, k] = starts[:, k - 1] + downs[:, k - 1] + ups[:, k - 1]
    if np.any(starts[:, -1] + downs[:, -1] < horizon_s):
        raise RuntimeError("simulate_data_loss: too few failure rounds per slot simulated")
    valid = starts < horizon_s
    s = starts[valid]
    e = (starts + downs)[valid]
    owner = np.broadcast_to(gid[:, None], starts.shape)[valid]
    # Sweep each group's failures (+1) and rebuild ends (-1) in time order, ends first at
    # a tie; every group's sum is 0, so one running sum over all groups is each one's level.
    n = s.size
    times = np.concatenate([s, e])
    groups = np.concatenate([owner, owner])
    is_start = np.concatenate([np.ones(n, dtype=np.int8), np.zeros(n, dtype=np.int8)])
    order = np.lexsort((is_start, times, groups))
    level = np.cumsum(np.where(is_start[order] == 1, 1, -1))
    peak = np.zeros(g, dtype=np.int64)
    np.maximum.at(peak, groups[order], level)
    return peak > tolerance, int(n)


def _clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial confidence interval of ``k`` successes in ``n`` trials."""
    from scipy import stats

    alpha = 1.0 - level
    lo = float(stats.beta.ppf(alpha / 2, k, n - k + 1)) if k > 0 else 0.0
    hi = float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k)) if k < n else 1.0
    return lo, hi
