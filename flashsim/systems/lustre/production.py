"""Months of production on an aging Lustre file system, and what TRIM policies buy back.

Seed 000 §V-B: Perlmutter scratch absorbs 2.2-2.9 PB of writes a day spread
over its OSTs, so each OST reaches the ~5-capacity aging watermark every
60-80 days; a TRIM restores it in hours.  The ``production-aging`` phase
writes a daily volume evenly over every OST, day after day, ages each OST's
representative drive with the fluid FTL model, runs ``fstrim`` on a schedule,
and measures each day the file system's streaming write capability: every
OST written at once by hypothetical writers (their rates read at an instant:
they load nothing and write nothing), with the OSTs that are trimming sharing
their drives with the TRIM (:func:`flashsim.systems.lustre.aging.write_rates_Bps`).  A day's
figure is the time average over the day (hours of TRIM at the lower rate).
Each OST's life runs the TRIM (a load on the drives' data paths at their
deallocate rate, on the clock, which runs through every day): the file
system's real load is a few per cent of its capability (2.2 PB/day is 0.3 %
of 7.8 TB/s), so the writers the capability measures are hypothetical, and
the capability during a TRIM is what a writer going flat out
would get meanwhile.  The drives age through the OSTs' lives as a
fast-forward ages them (:meth:`~flashsim.components.target_life.TargetLife.age`).
It always runs in flow fidelity: months cost seconds because each day is one
max-min solve and one fluid step per group of identical OSTs.  The study
starts from fresh drives on the OSTs it simulates and leaves them aged; the
kind-independent fast-forward of a system's state, with failures and without
the capability measurement, is :mod:`flashsim.workloads.production`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
import simpy
from pydantic import Field, model_validator

from flashsim.components.raid_target import RaidTarget
from flashsim.components.ssd import SsdSpec
from flashsim.config import Bandwidth, Bytes, Seconds, StrictModel, field_error
from flashsim.measure.results import PhaseDetails, PhaseResult, cell
from flashsim.progress import current
from flashsim.systems.lustre.aging import (
    ONSET_LOSS,
    age_ost,
    ost_capacity_B,
    taken_s,
    write_rates_Bps,
)
from flashsim.systems.lustre.core import LustreCore

DAY_S = 86_400.0


class ProductionAgingPhase(StrictModel):
    """Days of production writes over every OST, with a TRIM policy (seed 000 §V-B).

    Attributes
    ----------
    days : int
        Days simulated.
    daily_volume : float
        Bytes the whole file system absorbs per day, spread evenly over all OSTs.
    osts : int or None
        OSTs simulated (the first ``osts``; default all); each still takes a
        ``1 / (all OSTs)`` share of the volume.
    fill : float or None
        Fraction of the OST's drives holding cold data that is never deleted
        (default: the model's ``oss.aging.cold_fraction``).
    trim_every : float or None
        Seconds between ``fstrim`` runs on every OST (``None``: never).
    trim_rate : float or None
        Refused (``None`` only): the OSTs' own TRIM deallocates at the drives'
        rate, sharing their data paths with writers, and has no cap.
    record_size : float
        Bytes per write of the capability measurement.
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["production-aging"]
    days: Annotated[int, Field(ge=1, le=3650)] = Field(180, description="Days simulated.")
    daily_volume: Bytes = Field(
        description="Bytes the whole file system absorbs per day, spread evenly over all OSTs."
    )
    osts: Annotated[int, Field(ge=1)] | None = Field(
        None, description="OSTs simulated (the first N; default all)."
    )
    fill: Annotated[float, Field(ge=0.0, lt=1.0)] | None = Field(
        None,
        description=(
            "Fraction of the drives holding cold data never deleted "
            "(default: the model's `oss.aging.cold_fraction`)."
        ),
    )
    trim_every: Seconds | None = Field(
        None, description="Time between fstrim runs on every OST (none: never trim)."
    )
    trim_rate: Bandwidth | None = Field(
        None,
        description=(
            "Not supported: a TRIM is the OST's own load at the drives' deallocate rate, "
            "sharing their data paths with writers (no cap)."
        ),
    )
    record_size: Bytes = Field("4 MiB", description="Bytes per write of the measurement.")

    @model_validator(mode="after")
    def _daily_resolution(self) -> ProductionAgingPhase:
        """TRIMs are scheduled at day boundaries: no more than one a day; no TRIM cap."""
        if self.trim_rate is not None:
            raise field_error(
                "trim_rate",
                "a TRIM is the OST's own load at the drives' deallocate rate and has no cap; "
                "remove the key (or slow the drives' trim_bandwidth)",
            )
        if self.trim_every is not None and self.trim_every < DAY_S:
            raise field_error(
                "trim_every",
                "the study steps a day at a time; expected at least 1 day",
            )
        return self


@dataclass(frozen=True, kw_only=True)
class ProductionAgingDetails(PhaseDetails):
    """``PhaseResult.extra`` of a ``production-aging`` phase (per-day lists, day 1 first).

    Attributes
    ----------
    fresh_bandwidth_Bps : float
        Write capability (bytes/s) of the simulated OSTs when new.
    written_capacities : list of float
        OST capacities written to each OST by the end of each day.
    write_amplification : list of float
        Mean write amplification of the OSTs' drives at the end of each day.
    relative_write_bw : list of float
        Day-average write capability over the fresh one.
    trim_hours : list of float
        Mean hours per OST spent trimming each day.
    onset_day : float
        First day whose capability outside TRIM lost :data:`ONSET_LOSS` or
        more (NaN if none).
    mean_relative_write_bw, min_relative_write_bw : float
        Over all days.
    trims : int
        TRIM runs completed (one per OST per scheduled TRIM).
    trim_duration_h : float
        Mean duration (h) of a TRIM run on one OST (NaN without TRIM).
    flash_dwpd : float
        NAND writes per drive per day (host writes x write amplification) over
        the drive's capacity, averaged over the run.
    rated_dwpd : float or None
        The drive's rated endurance (datasheet).
    """

    fresh_bandwidth_Bps: float
    written_capacities: list[float]
    write_amplification: list[float]
    relative_write_bw: list[float]
    trim_hours: list[float]
    onset_day: float
    mean_relative_write_bw: float
    min_relative_write_bw: float
    trims: int
    trim_duration_h: float
    flash_dwpd: float
    rated_dwpd: float | None = None

    def findings(self) -> list[str]:
        """Onset, mean and worst day, the TRIMs and the NAND wear."""
        onset = "none" if math.isnan(self.onset_day) else f"day {self.onset_day:.0f}"
        days = len(self.relative_write_bw)
        lines = [
            f"{days} days: onset of aging {onset}; write capability "
            f"{self.fresh_bandwidth_Bps / 1e12:.2f} TB/s fresh, mean "
            f"{100 * self.mean_relative_write_bw:.1f} %, worst day "
            f"{100 * self.min_relative_write_bw:.1f} %",
        ]
        if self.trims:
            lines.append(f"{self.trims} OST TRIMs of {self.trim_duration_h:.2f} h each on average")
        rated = f" (rated {self.rated_dwpd:g})" if self.rated_dwpd is not None else ""
        lines.append(f"NAND writes {self.flash_dwpd:.3f} drive writes per day{rated}")
        return lines

    def columns(self) -> dict[str, str]:
        """Days aged, final WA, write capability (fresh, mean, worst), onset, TRIMs, wear."""
        onset = "-" if math.isnan(self.onset_day) else f"{self.onset_day:.0f}"
        wa = self.write_amplification
        return {
            "days": str(len(self.relative_write_bw)),
            "WA end": f"{wa[-1]:.2f}" if wa else "-",
            "fresh TB/s": cell(self.fresh_bandwidth_Bps, ".3f", 1e12),
            "mean bw": cell(self.mean_relative_write_bw, ".1%"),
            "worst day": cell(self.min_relative_write_bw, ".1%"),
            "onset day": onset,
            "TRIMs": str(self.trims),
            "NAND DWPD": cell(self.flash_dwpd, ".3f"),
        }


def run_production_aging(system: LustreCore, phase: ProductionAgingPhase) -> PhaseResult:
    """``days`` of ``daily_volume`` over every OST, trimming every ``trim_every``.

    Each OST's life ages its drives (:meth:`TargetLife.age`, shared by identical
    OSTs through the system's memo) and runs the TRIMs
    (:meth:`TargetLife.trim`, loads on the drives on the clock, which runs
    through every day); the study measures the write capability each day.
    """
    sim = system.sim
    n = phase.osts if phase.osts is not None else system.n_osts
    if n > system.n_osts:
        raise ValueError(f"phase {phase.name!r}: osts = {n} but the model has {system.n_osts}")
    # The study starts from fresh drives (its definition) and leaves them aged.
    osts: list[RaidTarget] = [
        age_ost(system, i, phase.fill, "flow", f"{system.ost(i)[1].name}.{phase.name}")
        for i in range(n)
    ]
    lives = [system.raid_life(i, phase.workload) for i in range(n)]
    rec = phase.record_size
    fresh = float(np.sum(write_rates_Bps(system, osts, rec, 0.0)))
    capacity = ost_capacity_B(system)
    per_ost_day = phase.daily_volume / system.n_osts
    trimming: dict[int, tuple[float, simpy.Event]] = {}  # OST -> (start s, the TRIM's end)
    next_trim = phase.trim_every if phase.trim_every is not None else math.inf
    rel: list[float] = []
    wa: list[float] = []
    trim_h: list[float] = []
    aged_rel: list[float] = []
    trim_runs: list[float] = []
    flash0 = [_flash_B(ost) for ost in osts]
    start = sim.now
    for day in current().task("days", total=phase.days, unit="day").over(range(phase.days)):
        t0 = start + day * DAY_S
        end = t0 + DAY_S
        if day * DAY_S >= next_trim:
            for i, life in enumerate(lives):
                trimming.setdefault(i, (t0, life.trim()))
            next_trim += phase.trim_every or math.inf
        for life in lives:
            life.age(per_ost_day)
        during = [0.0] * n
        busy = [0.0] * n
        if trimming:
            # What a writer going flat out would get while the TRIMs share the drives.
            during = write_rates_Bps(system, osts, rec, 0.0)
            ends = [ev for _, ev in trimming.values()]
            sim.run(sim.env.any_of([sim.env.all_of(ends), sim.env.timeout(end - sim.now)]))
            for i, (began, ev) in list(trimming.items()):
                finish = began + taken_s(ev) if ev.triggered else end
                busy[i] = max(0.0, min(finish, end) - max(began, t0))
                if ev.triggered:
                    trim_runs.append(taken_s(ev))
                    del trimming[i]
        after = write_rates_Bps(system, osts, rec, 0.0)
        day_bw = sum(
            (b * d + (DAY_S - b) * a) / DAY_S for b, d, a in zip(busy, during, after, strict=True)
        )
        rel.append(day_bw / fresh)
        aged_rel.append(float(np.sum(after)) / fresh)
        wa.append(float(np.mean([_wa(ost) for ost in osts])))
        trim_h.append(float(np.mean(busy)) / 3600.0)
        if sim.now < end:
            sim.run(end)
    flash = np.mean([_flash_B(o) - f0 for o, f0 in zip(osts, flash0, strict=True)])
    days = np.arange(1, phase.days + 1, dtype=float)
    loss = 1.0 - np.array(aged_rel)
    hit = np.nonzero(loss >= ONSET_LOSS)[0]
    onset = float(days[hit[0]]) if len(hit) else math.nan
    drive = osts[0].drive
    dwpd = float(flash) / float(drive.capacity) / phase.days
    return PhaseResult(
        name=phase.name,
        operation="write",
        bandwidth_Bps=float(np.mean(rel)) * fresh,
        iops=float(np.mean(rel)) * fresh / rec,
        ranks=n,
        transfer_size_B=rec,
        sim_time_s=phase.days * DAY_S,
        bytes_B=phase.days * per_ost_day * n,
        fidelity="flow",
        extra=ProductionAgingDetails(
            fresh_bandwidth_Bps=fresh,
            written_capacities=list(days * per_ost_day / capacity),
            write_amplification=wa,
            relative_write_bw=rel,
            trim_hours=trim_h,
            onset_day=onset,
            mean_relative_write_bw=float(np.mean(rel)),
            min_relative_write_bw=float(np.min(rel)),
            trims=len(trim_runs),
            trim_duration_h=float(np.mean(trim_runs)) / 3600.0 if trim_runs else math.nan,
            flash_dwpd=dwpd,
            rated_dwpd=drive.endurance_dwpd if isinstance(drive, SsdSpec) else None,
        ),
    )


def _wa(ost: RaidTarget) -> float:
    """Current write amplification of ``ost``'s drives."""
    assert ost.aging is not None
    return ost.aging.write_amplification()


def _flash_B(ost: RaidTarget) -> float:
    """NAND bytes the representative drive of ``ost`` has programmed."""
    assert ost.aging is not None
    return ost.aging.model.flash_written_B
