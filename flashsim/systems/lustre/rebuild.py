"""Lustre phases of failed drives: ``rebuild``, and what the others share.

The Spider-style ``degraded-survey`` is :mod:`flashsim.systems.lustre.degraded`,
the ``data-loss`` study :mod:`flashsim.systems.lustre.data_loss`; this module
holds the rebuild policy, the foreground load and the study context they use,
and the checks of all three.

The failures, the degraded costs and the rebuild are the OST's own
(:class:`~flashsim.components.target_life.TargetLife`: ``fail_drive`` degrades
the target and starts its rebuild as background flows under the policy, the
life publishes the rebuild's progress and makes the target healthy at its
end), the same code paths a failure event of a scenario's timeline takes.  A
study only adds its foreground load and measures:

* ``rebuild``: drives of one OST fail while an obdfilter-survey-like load runs
  on it; the rebuild shares the drives with the load under the server's
  rebuild policy (``oss.rebuild``, or the phase's ``priority``).  Reports the
  rebuild time and the foreground bandwidth before, during and after, and
  whether a further failure lost data first.
* ``degraded-survey``: the Spider block-io-ssu-degraded test (seed 003 §6):
  every OST driven at once while a tenth of them rebuild a failed drive; the
  per-OST bandwidths and the system bandwidth against the same test healthy.
* ``data-loss``: the probability per year that a third concurrent failure in
  one RAID6 array loses data, against the rebuild priority (and AFR), by
  Monte Carlo (:func:`~flashsim.components.failures.simulate_data_loss`)
  beside the exact Markov chain; the rebuild time of each priority comes from
  the OST's drives (:meth:`~flashsim.components.raid_target.RaidTarget.rebuild_path`)
  under full foreground load.

The ``rebuild`` and ``degraded-survey`` studies define their own failures:
they start from a healthy OST (its aging kept) and leave it healthy
(:func:`own_failures`).  All run in flow fidelity (degraded foreground costs
are the same in request fidelity, see :mod:`flashsim.components.rebuild`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from flashsim.components.raid_target import RaidTarget
from flashsim.components.rebuild import ArrayGeometry, RebuildPolicy, rebuild_traffic
from flashsim.components.target_life import REBUILD_STEPS as LIFE_REBUILD_STEPS
from flashsim.components.target_life import TargetLife
from flashsim.components.target_state import drive_failure_times
from flashsim.config import Bytes, NonNegativeSeconds, Seconds, StrictModel, UnitFraction
from flashsim.engine.flows import Flow
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseDetails, PhaseResult, cell
from flashsim.systems.base import no_such
from flashsim.systems.lustre.core import LustreCore
from flashsim.systems.lustre.cost import op_cost

OpKind = Literal["read", "write"]
#: Bytes of a foreground flow that runs until cancelled.
ENDLESS_B = 1e18
#: Foreground flows are restarted this many times during a rebuild, so their
#: degraded-read costs follow the rebuilt fraction: at the steps the target's life
#: publishes its rebuild's progress in (components.target_life).
REBUILD_STEPS = LIFE_REBUILD_STEPS


Priority = Annotated[float, Field(gt=0.0, le=1.0)]


class DriveFailure(StrictModel):
    """One drive failure of a ``rebuild`` phase."""

    drive: Annotated[int, Field(ge=0)] = Field(description="Drive index in the OST's array.")
    at: NonNegativeSeconds = Field(
        "0 s", description="Time after the healthy measurement window at which the drive fails."
    )


class RebuildPhase(StrictModel):
    """Drives of one OST fail under a foreground load; the rebuild shares the drives."""

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["rebuild"]
    operation: OpKind = Field(description="Foreground load: obdfilter-survey write or read.")
    ost: Annotated[int, Field(ge=0)] = Field(0, description="OST whose drives fail.")
    failures: list[DriveFailure] | None = Field(
        None,
        description=(
            "Drives that fail, and when (after the healthy window); default: drive 0 at once, "
            "or none when `afr` draws them."
        ),
    )
    fill: UnitFraction = Field(
        1.0,
        description=(
            "Share of each failed drive's capacity the rebuild reconstructs (block RAID "
            "rebuilds the whole drive: 1)."
        ),
    )
    priority: Priority | None = Field(
        None, description="Rebuild priority (0, 1]; default: the model's `oss.rebuild.priority`."
    )
    threads: Annotated[int, Field(ge=0)] = Field(
        64, description="Foreground threads (0: no foreground load, the rebuild alone)."
    )
    record_size: Bytes = Field("4 MiB", description="Bytes per foreground I/O.")
    access: Literal["sequential", "random"] = Field(
        "sequential", description="Foreground offsets: sequential (full-stripe writes) or random."
    )
    window: Seconds = Field("10 s", description="Healthy window before and after the rebuild.")
    afr: float | None = Field(
        None,
        description=(
            "Also fail drives at times drawn from this annualised failure rate (fraction; each "
            "drive's exponential lifetime from its own seeded stream), if within `horizon`."
        ),
    )
    horizon: Seconds = Field("1 day", description="Window (after the healthy one) of `afr` draws.")


@dataclass(frozen=True, kw_only=True)
class RebuildDetails(PhaseDetails):
    """``PhaseResult.extra`` of a ``rebuild`` phase.

    Attributes
    ----------
    ost : int
    priority : float
        Rebuild priority used (dimensionless).
    failed_drives : list of int
    rebuild_volume_B : float
        Bytes reconstructed (or to reconstruct, if data was lost).
    rebuild_time_s : float
        Time (s) with a drive down: from each failure to the end of its rebuild,
        healthy gaps between failures excluded (NaN if data was lost).  A
        rebuild into distributed spare space restores full redundancy here; the
        spare space is assumed free again (the failed drive replaced and copied
        back) before the next failure.
    rebuild_rate_Bps : float
        Mean rebuild rate (bytes/s of reconstructed data).
    rebuild_alone_s : float
        Analytic rebuild time of the failed drives on idle drives (s).
    foreground_before_Bps, foreground_during_Bps, foreground_after_Bps : float
        Foreground bandwidth healthy, during the rebuild, and after it (bytes/s).
    data_lost : bool
        A failure beyond the parity came before the rebuild ended.
    lost_at_s : float or None
        Time (s) after the first failure at which data was lost.
    """

    ost: int
    priority: float
    failed_drives: list[int]
    rebuild_volume_B: float
    rebuild_time_s: float
    rebuild_rate_Bps: float
    rebuild_alone_s: float
    foreground_before_Bps: float
    foreground_during_Bps: float
    foreground_after_Bps: float
    data_lost: bool
    lost_at_s: float | None = None

    def findings(self) -> list[str]:
        """Rebuild time against the foreground bandwidth it leaves, and any data loss."""
        lines = [
            f"rebuild of {self.rebuild_volume_B / 1e12:.2f} TB at priority {self.priority:g}: "
            f"{self.rebuild_time_s / 3600:.2f} h ({self.rebuild_alone_s / 3600:.2f} h on idle "
            "drives)",
            f"foreground {self.foreground_before_Bps / 1e9:.2f} GB/s before, "
            f"{self.foreground_during_Bps / 1e9:.2f} during, "
            f"{self.foreground_after_Bps / 1e9:.2f} after",
        ]
        if self.data_lost:
            lines.append(f"DATA LOST at {self.lost_at_s or 0.0:.0f} s: failures exceeded parity")
        return lines

    def columns(self) -> dict[str, str]:
        """Rebuild volume, time (and alone), rate, foreground before/during/after, loss."""
        return {
            "priority": f"{self.priority:g}",
            "rebuild TB": cell(self.rebuild_volume_B, ".2f", 1e12),
            "rebuild h": cell(self.rebuild_time_s, ".2f", 3600),
            "alone h": cell(self.rebuild_alone_s, ".2f", 3600),
            "rebuild GB/s": cell(self.rebuild_rate_Bps, ".3f", 1e9),
            "fg before GB/s": cell(self.foreground_before_Bps, ".2f", 1e9),
            "fg during GB/s": cell(self.foreground_during_Bps, ".2f", 1e9),
            "fg after GB/s": cell(self.foreground_after_Bps, ".2f", 1e9),
            "data lost": "yes" if self.data_lost else "no",
        }


# ............................................................... helpers
def rebuild_policy(system: LustreCore, priority: float | None) -> RebuildPolicy:
    """The server's rebuild policy, with the phase's priority if it gives one."""
    base = system.model.oss.rebuild
    if priority is None:
        return base
    return base.model_copy(
        update={"priority": priority, "idle_fraction": max(priority, base.idle_fraction)}
    )


def geometry_of(system: LustreCore) -> ArrayGeometry:
    """The redundancy geometry of the system's OSTs."""
    spec = system.model.oss.raid_target_spec()
    return ArrayGeometry.of_raid(spec.raid, spec.drives)


@contextmanager
def own_failures(life: TargetLife, policy: RebuildPolicy, fill: float) -> Iterator[TargetLife]:
    """A study whose failures are its own: ``life`` healthy at its start and at its end.

    Meanwhile the life rebuilds under the study's ``policy`` and ``fill``, in
    flow fidelity (the studies' foreground loads are flows); its aging is
    kept, and its policy, fill and fidelity are restored afterwards.
    """
    saved = (life.policy, life.rebuild_fill, life.fidelity)
    life.heal()
    life.policy, life.rebuild_fill, life.fidelity = policy, fill, "flow"
    try:
        yield life
    finally:
        life.heal()
        life.policy, life.rebuild_fill, life.fidelity = saved


def settle(sim: Simulation) -> None:
    """Let what a state change started now take its first step (no simulated time passes).

    After :meth:`TargetLife.fail_drive` the life's rebuild process schedules
    its first progress step; a study that waits for that step afterwards is
    then woken after the life has published it.
    """
    sim.run(sim.env.timeout(0.0))


class ForegroundLoad:
    """``threads`` obdfilter-like streams on one OST, restartable when its costs change."""

    def __init__(
        self, system: LustreCore, index: int, op: OpKind, size_B: float, threads: int, seq: bool
    ) -> None:
        self.system = system
        self.index = index
        self.op = op
        self.size_B = size_B
        self.threads = threads
        self.seq = seq
        self.flows: list[Flow] = []
        self.moved_B = 0.0

    def start(self) -> None:
        """Start the streams with the OST's current (healthy or degraded) costs."""
        if not self.threads:
            return
        system = self.system
        _, ost = system.ost(self.index)
        cost = op_cost(system.model, ost, self.op, self.size_B, sequential=self.seq)
        path = ost.path(cost.target)
        # One I/O in flight per thread: its zero-load time in the target (RAID engine,
        # drive stages and media latency) bounds it.
        target = cost.target
        latency = target.raid_s + target.drive_latency_s + target.delay_s
        cap = self.size_B / max(latency, 1e-9)
        self.flows = [
            system.sim.flows.start_flow(
                ENDLESS_B,
                path,
                rate_cap_Bps=cap,
                op_size_B=self.size_B,
                name=f"ost{self.index}.fg{i}",
                cap_label="latency: one foreground op per drive latency",
            )
            for i in range(self.threads)
        ]

    def stop(self) -> None:
        """Cancel the streams, adding what they moved to :attr:`moved_B`."""
        for f in self.flows:
            self.moved_B += self.system.sim.flows.cancel_flow(f)
        self.flows = []

    def moved_now_B(self) -> float:
        """Bytes moved so far, the running streams' progress included."""
        return self.moved_B + sum(f.size_B - f.remaining_B for f in self.flows)

    def restart(self) -> None:
        """Stop and start again (new costs)."""
        self.stop()
        self.start()

    def measure(self, duration_s: float) -> float:
        """Run ``duration_s`` and return the bandwidth (bytes/s) over it."""
        sim = self.system.sim
        self.stop()
        before = self.moved_B
        self.start()
        sim.run(sim.now + duration_s)
        self.stop()
        self.start()
        return (self.moved_B - before) / duration_s


def alone_rebuild_s(system: LustreCore, ost: RaidTarget, failed: list[int], fill: float) -> float:
    """Rebuild time (s) of ``failed`` on ``ost``'s otherwise idle drives (flow resources)."""
    geom = geometry_of(system)
    _, alone = ost.rebuild_path(rebuild_traffic(geom, failed))
    return len(failed) * fill * float(ost.drive.capacity) / alone


def drive_failures(system: LustreCore, phase: RebuildPhase) -> list[DriveFailure]:
    """The phase's failures, given and drawn from its AFR, in time order (drives checked)."""
    _, ost = system.raid_ost(phase.ost, phase.workload)
    geom = geometry_of(system)
    if phase.failures is not None:
        failures = list(phase.failures)
    else:
        failures = [] if phase.afr is not None else [DriveFailure(drive=0, at="0 s")]
    if phase.afr is not None:
        drawn = drive_failure_times(system.sim, ost.name, geom.drives, phase.afr)
        failures += [
            DriveFailure(drive=i, at=f"{t} s") for i, t in enumerate(drawn) if t < phase.horizon
        ]
    for f in failures:
        geom.check_drive(f.drive)
    return sorted(failures, key=lambda f: f.at)


# ............................................................... rebuild
def run_rebuild(system: LustreCore, phase: RebuildPhase) -> PhaseResult:
    """Fail drives of one OST under load; foreground before, during and after its rebuild.

    The OST's life fails the drives and runs their rebuild (as every failure
    event does); the study adds its foreground load, restarted whenever the
    life publishes a step of the rebuild's progress (a flow's costs are fixed
    when it starts), and measures.
    """
    sim = system.sim
    _, ost = system.raid_ost(phase.ost, phase.workload)
    policy = rebuild_policy(system, phase.priority)
    events = drive_failures(system, phase)
    seq = phase.access == "sequential"
    fg = ForegroundLoad(system, phase.ost, phase.operation, phase.record_size, phase.threads, seq)
    per_drive = phase.fill * float(ost.drive.capacity)
    with own_failures(system.raid_life(phase.ost, phase.workload), policy, phase.fill) as life:
        fg.start()
        before = fg.measure(phase.window) if phase.threads else 0.0
        t0 = sim.now
        lost_at: float | None = None
        pending = list(events)
        every: list[int] = []  # every drive that failed
        volume = 0.0  # bytes reconstructed or to reconstruct, over all rebuilds
        degraded_s = 0.0  # time with a drive down (rebuild running); healthy gaps excluded
        degraded_B = 0.0  # foreground bytes moved meanwhile
        was_down = False
        while True:
            while pending and pending[0].at <= sim.now - t0 + 1e-9:
                failure = pending.pop(0)
                if failure.drive in life.status().failed_drives:
                    continue
                life.fail_drive(failure.drive)
                every.append(failure.drive)
                volume += per_drive
                settle(sim)
            down = life.status()
            if down.data_lost:
                lost_at = sim.now - t0 - events[0].at
                break
            if not down.failed_drives:
                if was_down:
                    fg.restart()  # rebuilt: healthy costs again
                    was_down = False
                if not pending:
                    break
                sim.run(t0 + pending[0].at)
                continue
            was_down = True
            fg.restart()  # the costs of the life's state now (failed drives, rebuilt share)
            # Run to the next failure, the life's next progress step, or the rebuild's end.
            step = alone_rebuild_s(system, ost, list(down.failed_drives), phase.fill)
            delay = step / policy.priority / REBUILD_STEPS
            if pending:
                delay = min(delay, t0 + pending[0].at - sim.now)
            seg_s, seg_B = sim.now, fg.moved_now_B()
            sim.run(sim.env.any_of([life.rebuild_done(), sim.env.timeout(delay)]))
            degraded_s += sim.now - seg_s
            degraded_B += fg.moved_now_B() - seg_B
        fg.stop()
    during = degraded_B / degraded_s if degraded_s > 0 else math.nan
    fg.start()
    after = fg.measure(phase.window) if phase.threads and lost_at is None else math.nan
    fg.stop()
    lost = lost_at is not None
    rebuild_time = math.nan if lost else degraded_s
    first = [events[0].drive] if events else [0]
    details = RebuildDetails(
        ost=phase.ost,
        priority=policy.priority,
        failed_drives=every,
        rebuild_volume_B=volume,
        rebuild_time_s=rebuild_time,
        rebuild_rate_Bps=volume / rebuild_time if not lost else math.nan,
        rebuild_alone_s=alone_rebuild_s(system, ost, first, phase.fill),
        foreground_before_Bps=before,
        foreground_during_Bps=during,
        foreground_after_Bps=after,
        data_lost=lost,
        lost_at_s=lost_at,
    )
    return PhaseResult(
        fidelity="flow",
        name=phase.name,
        operation=phase.operation,
        bandwidth_Bps=during if phase.threads else 0.0,
        iops=during / phase.record_size if phase.threads else 0.0,
        ranks=phase.threads,
        transfer_size_B=phase.record_size,
        sim_time_s=sim.now - t0,
        bytes_B=fg.moved_B,
        extra=details,
    )


def check_rebuild_phase(n_osts: int, drives: int, phase: Any) -> None:
    """Indices within the system; raise ``ValueError("key: message")``."""
    workload = getattr(phase, "workload", "")
    if workload == "rebuild":
        if phase.ost >= n_osts:
            raise no_such("ost", "OST", phase.ost, n_osts)
        for i, f in enumerate(phase.failures or []):
            if f.drive >= drives:
                raise ValueError(
                    f"failures.{i}.drive: drive {f.drive} is outside the OST's drives "
                    f"0..{drives - 1}"
                )
        if phase.afr is not None and not 0.0 <= phase.afr < 1.0:
            raise ValueError(
                f"afr: {phase.afr} is not an annualised failure rate in [0, 1) "
                "(0.0044 is 0.44 %/year)"
            )
    elif workload == "degraded-survey":
        if phase.osts is not None and phase.osts > n_osts:
            raise ValueError(f"osts: {phase.osts} OSTs tested, the system has {n_osts}")
    elif workload == "data-loss":
        for i, afr in enumerate(phase.afrs):
            if not 0.0 <= afr < 1.0:
                raise ValueError(
                    f"afrs.{i}: {afr} is not an annualised failure rate in [0, 1) "
                    "(0.0044 is 0.44 %/year)"
                )
        if not phase.priorities or not phase.afrs:
            raise ValueError("priorities: a data-loss phase needs at least one priority and AFR")


#: ``workload`` values of the phases of this module.
REBUILD_WORKLOADS = ("rebuild", "degraded-survey", "data-loss")
