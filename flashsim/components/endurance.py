"""Drive endurance arithmetic: bytes written per drive against the datasheet rating.

An SSD's endurance is rated as drive writes per day (DWPD) sustained over a
warranty period (JEDEC JESD218 client/enterprise workloads; vendors also
state it as lifetime bytes written, PBW = capacity x DWPD x warranty days).
Given what a drive receives per day, this module answers how many drive
writes per day that is, what fraction of the rated lifetime writes a year of
it uses, and how many years the rating lasts at that rate.

The rating is a host-byte rating for the workload it names (random 4 KiB or
sequential): it already includes the drive's own write amplification for
that workload, so host bytes of the same kind of workload are compared with
it directly; ``write_amplification`` scales host bytes for a workload whose
amplification differs from the rated one.

Pure arithmetic, no state: systems keep per-drive byte counts
(:class:`~flashsim.components.ssd.SsdState`) and call these functions (VAST
in :mod:`flashsim.systems.vast.endurance`; reusable for any drive).  Days and
years are those of :mod:`flashsim.units` (1 year = 365 days, so a
``"5 years"`` warranty is 1,825 days).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flashsim.components.ssd import SsdSpec, SsdState

#: Seconds per day.
DAY_S = 86400.0
#: Days per year (flashsim.units: ``year = 365 * day``).
YEAR_DAYS = 365.0


def _check(name: str, value: float, *, positive: bool = False) -> float:
    """``value`` as a float; ``ValueError`` naming ``name`` unless finite and >= 0 (> 0)."""
    v = float(value)
    bad = not math.isfinite(v) or v < 0.0 or (positive and v == 0.0)
    if bad:
        expected = "a finite number > 0" if positive else "a finite number >= 0"
        raise ValueError(f"{name}(={value!r}) must be {expected}")
    return v


def daily_bytes(bytes_written_B: float, elapsed_s: float) -> float:
    """Bytes per day (B/day) of a drive that received ``bytes_written_B`` in ``elapsed_s`` s."""
    b = _check("bytes_written_B", bytes_written_B)
    t = _check("elapsed_s", elapsed_s, positive=True)
    return b / t * DAY_S


def drive_writes_per_day(bytes_per_day_B: float, capacity_B: float) -> float:
    """Drive writes per day (1/day): bytes written per day (B/day) over the capacity (B)."""
    daily = _check("bytes_per_day_B", bytes_per_day_B)
    return daily / _check("capacity_B", capacity_B, positive=True)


def rated_bytes_written(capacity_B: float, rated_dwpd: float, warranty_s: float) -> float:
    """Lifetime bytes written (B) a rating allows: ``capacity x DWPD x warranty days``.

    Parameters
    ----------
    capacity_B : float
        User capacity (B).
    rated_dwpd : float
        Rated drive writes per day (1/day).
    warranty_s : float
        Warranty period of the rating (s).
    """
    cap = _check("capacity_B", capacity_B, positive=True)
    dwpd = _check("rated_dwpd", rated_dwpd, positive=True)
    days = _check("warranty_s", warranty_s, positive=True) / DAY_S
    return cap * dwpd * days


def endurance_used_per_year(
    bytes_per_day_B: float, capacity_B: float, rated_dwpd: float, warranty_s: float
) -> float:
    """Fraction (1/year) of the rated lifetime writes one year at ``bytes_per_day_B`` uses."""
    daily = _check("bytes_per_day_B", bytes_per_day_B)
    return daily * YEAR_DAYS / rated_bytes_written(capacity_B, rated_dwpd, warranty_s)


def life_years(
    bytes_per_day_B: float, capacity_B: float, rated_dwpd: float, warranty_s: float
) -> float:
    """Years (yr) until the rated lifetime writes are used at ``bytes_per_day_B`` (inf at 0)."""
    used = endurance_used_per_year(bytes_per_day_B, capacity_B, rated_dwpd, warranty_s)
    return math.inf if used == 0.0 else 1.0 / used


@dataclass(frozen=True)
class DriveWear:
    """One drive's write load against its endurance rating.

    Attributes
    ----------
    bytes_per_day_B : float
        Bytes the drive's flash receives per day (B/day), after ``write_amplification``.
    dwpd : float
        Drive writes per day (1/day).
    rated_dwpd : float or None
        The datasheet rating (1/day); ``None`` when the drive file has none.
    warranty_years : float
        Period of the rating (yr).
    used_per_year : float
        Fraction of the rated lifetime writes used per year (NaN without a rating).
    life_years : float
        Years until the rating is used up at this rate (NaN without a rating,
        inf for a drive that receives nothing).
    """

    bytes_per_day_B: float
    dwpd: float
    rated_dwpd: float | None
    warranty_years: float
    used_per_year: float
    life_years: float


def drive_wear(
    spec: SsdSpec, bytes_per_day_B: float, write_amplification: float = 1.0
) -> DriveWear:
    """:class:`DriveWear` of a drive of datasheet ``spec`` receiving ``bytes_per_day_B`` B/day.

    Parameters
    ----------
    spec : SsdSpec
        The drive (``capacity``, ``endurance_dwpd``, ``warranty``).
    bytes_per_day_B : float
        Host bytes written per day (B/day).
    write_amplification : float
        Flash bytes per host byte beyond the rated workload's own (>= 1;
        1 for the workload the rating names).

    Raises
    ------
    ValueError
        For a negative or non-finite volume, or ``write_amplification < 1``.
    """
    wa = float(write_amplification)
    if not (math.isfinite(wa) and wa >= 1.0):
        raise ValueError(f"write_amplification(={write_amplification!r}) must be >= 1")
    daily = _check("bytes_per_day_B", bytes_per_day_B) * wa
    cap = float(spec.capacity)
    rated = spec.endurance_dwpd
    warranty = float(spec.warranty)
    if rated is None:
        used, life = math.nan, math.nan
    else:
        used = endurance_used_per_year(daily, cap, rated, warranty)
        life = life_years(daily, cap, rated, warranty)
    return DriveWear(
        bytes_per_day_B=daily,
        dwpd=drive_writes_per_day(daily, cap),
        rated_dwpd=rated,
        warranty_years=warranty / DAY_S / YEAR_DAYS,
        used_per_year=used,
        life_years=life,
    )


def bytes_written(states: Sequence[SsdState]) -> np.ndarray:
    """Host bytes written (B) of each drive state, as an array."""
    return np.array([s.bytes_written_B for s in states], dtype=float)


def catch_up(state: SsdState, counted_B: float) -> float:
    """Record the bytes a flow-fidelity counter gained since it was last read into ``state``.

    ``counted_B`` is the counter's running total of host bytes (B) written to
    the drive; the part beyond ``state.flow_bytes_B`` is recorded as written,
    so reading the same counter again records nothing.  Returns the bytes added.
    """
    total = _check("counted_B", counted_B)
    added = total - state.flow_bytes_B
    if added <= 0.0:
        return 0.0
    state.record_write(added)
    state.flow_bytes_B = total
    return added
