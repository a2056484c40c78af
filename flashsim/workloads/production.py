"""``workload = "production"``: fast-forward days of production on any system with targets.

Between the windows a scenario measures in detail, a file system's state
moves with the bytes it absorbs: drives age (garbage collection's write
amplification), TRIM runs on a schedule, drives fail at their annualised
failure rate and rebuild.  A ``production`` phase advances that state day by
day without simulating the transfers (the multi-resolution scheme of
``../shared/DESIGN.md`` §9): each day it

1. runs the simulation clock to the end of the day (``sim.run``), so the
   rebuilds, TRIMs and events on the clock run, and detailed phases that
   overlap (an IOR checkpoint probe) see the state of that moment;
2. writes ``daily_volume / targets`` user bytes (and deletes as many) to every
   target: ``target.age(bytes)``, the target's fluid FTL model;
3. starts ``fstrim`` on every target when the TRIM policy says
   (``trim_every``, at day boundaries; the TRIM is a load on the drives);
4. fails drives at the times drawn from their AFR (each drive's first
   failure from its own seeded stream, as
   :func:`flashsim.components.failures.failure_times` draws them); the target
   starts its rebuild at once, as flows on the same clock.

It works through the targets' interface only
(:class:`flashsim.components.target_state.StatefulTarget`), so every system
kind whose built system has targets runs it.  A drive that failed is not
drawn again within the phase (its replacement's first failure would come, at
an AFR of a few tenths of a per cent, years later).
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

import numpy as np
import simpy
from pydantic import Field, model_validator

from flashsim.config import Bytes, Seconds, StrictModel, UnitFraction, field_error
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseDetails, PhaseResult, cell
from flashsim.progress import current

DAY_S = 86_400.0
#: Interval (s) at which a rebuild's end is looked for (the rebuild windows' resolution).
REBUILD_POLL_S = 60.0


#: ``PhaseResult.fidelity`` of a fast-forward: no transfer simulated, the state advanced by
#: the components' fluid models (the rebuilds and TRIMs it starts run as flows meanwhile).
FAST_FORWARD = "fast-forward"


class ProductionPhase(StrictModel):
    """Days of production: aging, TRIM policy and drive failures, fast-forwarded.

    Attributes
    ----------
    days : int
        Days simulated.
    daily_volume : float
        User bytes the whole system absorbs (and deletes) per day, spread evenly
        over its targets.
    trim_every : float or None
        Seconds between TRIMs of every target (at day boundaries; ``None``: never).
    afr : float or None
        Annualised failure rate (fraction per year) of every drive; ``None``: no failures.
    fill : float or None
        Share of a failed drive's capacity its rebuild reconstructs (default:
        the target's, 1 for block RAID).
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["production"]
    days: Annotated[int, Field(ge=1, le=3650)] = Field(description="Days simulated.")
    daily_volume: Bytes = Field(
        description="User bytes the whole system absorbs per day, spread evenly over its targets."
    )
    trim_every: Seconds | None = Field(
        None, description="Time between TRIMs of every target (none: never trim)."
    )
    afr: Annotated[float, Field(ge=0.0, lt=1.0)] | None = Field(
        None,
        description=(
            "Annualised failure rate of every drive (fraction; 0.0044 is 0.44 %/year); "
            "none: no failures."
        ),
    )
    fill: UnitFraction | None = Field(
        None,
        description=(
            "Share of a failed drive's capacity its rebuild reconstructs (default: the "
            "target's; block RAID rebuilds the whole drive)."
        ),
    )

    @model_validator(mode="after")
    def _daily_resolution(self) -> ProductionPhase:
        """TRIMs start at day boundaries: no more than one a day."""
        if self.trim_every is not None and self.trim_every < DAY_S:
            raise field_error(
                "trim_every", "the fast-forward steps a day at a time; expected at least 1 day"
            )
        if self.fill is not None and self.fill <= 0.0:
            raise field_error("fill", "expected a share in (0, 1] of the drive's capacity")
        return self


class AgingTarget(Protocol):
    """What a production phase uses of one target (a :class:`StatefulTarget` with drives)."""

    name: str
    #: Drives in the target (failure draws).
    drives: int
    #: Share of a failed drive's capacity a rebuild reconstructs.
    rebuild_fill: float

    def status(self) -> Any:
        """The target's :class:`~flashsim.components.target_state.TargetStatus` now."""
        ...

    def failure_times(self, afr: float) -> Sequence[float]:
        """First failure time (s) of each drive at annualised failure rate ``afr``.

        :func:`flashsim.components.failures.failure_times` on the drives' own streams
        ``<name>.drive<k>.failure`` (as the ``rebuild`` phase names them).
        """
        ...

    def fail_drive(self, drive: int) -> None:
        """Drive ``drive`` fails now (the target degrades and rebuilds)."""
        ...

    def trim(self) -> simpy.Event:
        """Start a TRIM; the event's value is the seconds it took."""
        ...

    def age(self, host_B: float) -> None:
        """``host_B`` user bytes written and deleted, without simulating them."""
        ...


class ProductionTarget(Protocol):
    """What a built system provides so a production phase can fast-forward it."""

    sim: Simulation

    def target_count(self) -> int:
        """Targets in the system."""
        ...

    def target(self, index: int) -> Any:
        """Target ``index`` (an :class:`AgingTarget`), built on first use."""
        ...


@dataclass(frozen=True)
class RebuildWindow:
    """One rebuild of the run: target, failed drive, start and end (s, ``nan``: still running)."""

    target: int
    drive: int
    start_s: float
    end_s: float
    data_lost: bool = False


@dataclass(frozen=True, kw_only=True)
class ProductionDetails(PhaseDetails):
    """``PhaseResult.extra`` of a ``production`` phase (per-day lists, day 1 first).

    Attributes
    ----------
    targets : int
        Targets aged.
    per_target_daily_B : float
        User bytes written to each target a day.
    write_amplification, max_write_amplification : list of float
        Mean and largest write amplification over the targets at each day's end.
    write_loss : list of float
        Mean fraction of fresh write bandwidth lost to garbage collection at each day's end.
    trims : list of int
        TRIM runs that ended each day.
    drives_down : list of int
        Drives down (failed, not yet rebuilt) at each day's end.
    failures : list of tuple
        (time s, target, drive) of every drive failure.
    rebuild_windows : list of RebuildWindow
        Each failure's rebuild (to :data:`REBUILD_POLL_S` s).
    trim_duration_s : float
        Mean duration of a target's TRIM (s; NaN without one).
    data_lost_targets : list of int
        Targets that lost data.
    """

    targets: int
    per_target_daily_B: float
    write_amplification: list[float]
    max_write_amplification: list[float]
    write_loss: list[float]
    trims: list[int]
    drives_down: list[int]
    failures: list[tuple[float, int, int]]
    rebuild_windows: list[RebuildWindow]
    trim_duration_s: float
    data_lost_targets: list[int]

    def findings(self) -> list[str]:
        """Final WA and write loss, the TRIMs, the failures and their rebuilds."""
        days = len(self.write_amplification)
        lines = [
            f"{days} days of {self.per_target_daily_B * self.targets / 1e15:.3g} PB/day over "
            f"{self.targets} targets: write amplification {self.write_amplification[-1]:.2f} "
            f"(max {self.max_write_amplification[-1]:.2f}), write loss "
            f"{100 * self.write_loss[-1]:.1f} % at the end (worst day "
            f"{100 * max(self.write_loss):.1f} %)"
        ]
        if sum(self.trims):
            lines.append(
                f"{sum(self.trims)} target TRIMs of {self.trim_duration_s / 3600:.2f} h on average"
            )
        if self.failures:
            done = [w.end_s - w.start_s for w in self.rebuild_windows if math.isfinite(w.end_s)]
            mean_h = float(np.mean(done)) / 3600 if done else math.nan
            lines.append(
                f"{len(self.failures)} drive failure(s); rebuilds took {mean_h:.2f} h on average"
            )
        if self.data_lost_targets:
            lines.append(f"DATA LOST on targets {self.data_lost_targets}")
        return lines

    def columns(self) -> dict[str, str]:
        """Days, WA and write loss at the end, TRIMs, failures, rebuild hours."""
        done = [w.end_s - w.start_s for w in self.rebuild_windows if math.isfinite(w.end_s)]
        return {
            "days": str(len(self.write_amplification)),
            "targets": str(self.targets),
            "WA end": cell(self.write_amplification[-1], ".2f"),
            "loss end": cell(self.write_loss[-1], ".1%"),
            "TRIMs": str(sum(self.trims)),
            "failures": str(len(self.failures)),
            "rebuild h": cell(float(np.mean(done)) if done else math.nan, ".2f", 3600),
            "data lost": "yes" if self.data_lost_targets else "no",
        }


class _Run:
    """The clock-driven parts of one production phase: failures and rebuild windows."""

    def __init__(self, sim: Simulation, targets: Sequence[AgingTarget]) -> None:
        self.sim = sim
        self.targets = targets
        self.failures: list[tuple[float, int, int]] = []
        self.windows: list[RebuildWindow] = []
        self.trim_s: list[float] = []
        self.trims_today = 0

    def failing(self, at: list[tuple[float, int, int]]) -> Generator[simpy.Event, Any, None]:
        """Fail each (time, target, drive) of ``at`` (sorted) when its time comes."""
        env = self.sim.env
        for t, i, d in at:
            if t > env.now:
                yield env.timeout(t - env.now)
            target = self.targets[i]
            if d in target.status().failed_drives:
                continue
            target.fail_drive(d)
            self.failures.append((env.now, i, d))
            env.process(self.watch(i, d, env.now))

    def watch(self, i: int, drive: int, start: float) -> Generator[simpy.Event, Any, None]:
        """Record target ``i``'s rebuild window once it is healthy again (or lost data)."""
        env = self.sim.env
        while True:
            s = self.targets[i].status()
            if s.data_lost:
                self.windows.append(RebuildWindow(i, drive, start, math.nan, True))
                return
            if drive not in s.failed_drives:
                self.windows.append(RebuildWindow(i, drive, start, env.now))
                return
            yield env.timeout(REBUILD_POLL_S)

    def trimmed(self, event: simpy.Event) -> None:
        """A target's TRIM ended (``event.value`` seconds)."""
        if isinstance(event.value, float) and math.isfinite(event.value):
            self.trim_s.append(event.value)
            self.trims_today += 1


def run_production(system: ProductionTarget, phase: ProductionPhase) -> PhaseResult:
    """Fast-forward ``days`` days of ``daily_volume`` on every target of ``system``."""
    sim = system.sim
    n = system.target_count()
    if n <= 0:
        raise ValueError(f"workload: phase {phase.name!r}: this system has no storage targets")
    targets: list[AgingTarget] = [system.target(i) for i in range(n)]
    if phase.fill is not None:
        for t in targets:
            t.rebuild_fill = phase.fill
    start = sim.now
    end = start + phase.days * DAY_S
    run = _Run(sim, targets)
    if phase.afr:
        afr = phase.afr
        drawn = [
            (start + t, i, d)
            for i, target in enumerate(targets)
            for d, t in enumerate(target.failure_times(afr))
            if t < phase.days * DAY_S
        ]
        if drawn:
            sim.env.process(run.failing(sorted(drawn)))
    per_target = phase.daily_volume / n
    next_trim = start + (phase.trim_every if phase.trim_every is not None else math.inf)
    wa: list[float] = []
    wa_max: list[float] = []
    loss: list[float] = []
    trims: list[int] = []
    down: list[int] = []
    for day in current().task("days", total=phase.days, unit="day").over(range(phase.days)):
        t0 = start + day * DAY_S
        if day and t0 >= next_trim - 1e-6:
            for target in targets:
                target.trim().callbacks.append(run.trimmed)
            next_trim += phase.trim_every or math.inf
        for target in targets:
            target.age(per_target)
        run.trims_today = 0
        sim.run(t0 + DAY_S)
        statuses = [t.status() for t in targets]
        was = [s.write_amplification for s in statuses]
        wa.append(float(np.mean(was)))
        wa_max.append(float(np.max(was)))
        loss.append(float(np.mean([s.write_loss for s in statuses])))
        down.append(sum(len(s.failed_drives) for s in statuses))
        trims.append(run.trims_today)
    statuses = [t.status() for t in targets]
    details = ProductionDetails(
        targets=n,
        per_target_daily_B=per_target,
        write_amplification=wa,
        max_write_amplification=wa_max,
        write_loss=loss,
        trims=trims,
        drives_down=down,
        failures=run.failures,
        rebuild_windows=run.windows
        + [
            RebuildWindow(i, d, t, math.nan)
            for t, i, d in run.failures
            if not any(w.target == i and w.drive == d and w.start_s == t for w in run.windows)
        ],
        trim_duration_s=float(np.mean(run.trim_s)) if run.trim_s else math.nan,
        data_lost_targets=[i for i, s in enumerate(statuses) if s.data_lost],
    )
    return PhaseResult(
        name=phase.name,
        operation="write",
        bandwidth_Bps=phase.daily_volume / DAY_S,
        iops=0.0,
        ranks=0,
        transfer_size_B=0.0,
        sim_time_s=end - start,
        bytes_B=phase.daily_volume * phase.days,
        fidelity=FAST_FORWARD,
        extra=details,
    )
