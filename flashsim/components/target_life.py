"""The life of a RAID target over a whole run: aging, failures, rebuild and TRIM.

:class:`TargetLife` is the :class:`~flashsim.components.target_state.StatefulTarget`
of a :class:`~flashsim.components.raid_target.RaidTarget` (a Lustre OST, SSDs
or HDDs).  It owns, for as long as the simulation lives:

* the drives' aging (:class:`~flashsim.components.drive_aging.DriveAging`,
  one representative drive per array, built when the model has an aging table
  and the drives are SSDs: the fluid FTL model in flow fidelity, the
  page-mapped micro-model in request fidelity).  Flow writes reach it through
  :meth:`RaidTarget.account_flow_writes` (the system's ``account_wear``),
  request writes as they are served, a fast-forward through :meth:`age`;
* failed drives (:class:`~flashsim.components.rebuild.DegradedState`, which the
  target's costs read) and the rebuild a failure starts at once under the
  model's rebuild policy.  Flow fidelity: the rebuild is background flows
  (:class:`~flashsim.components.rebuild.RebuildFlows`) sharing the drives with
  whatever runs, ``fill`` x drive capacity bytes per failed drive (block RAID
  rebuilds the whole drive: ``fill = 1``); its progress is published to the
  degraded state in :data:`REBUILD_STEPS` steps (the share of lost chunks
  already rebuilt, which flows started later see).  Request fidelity: the
  rebuild is a SimPy process that issues its chunk reads and writes through
  the drive queues in :data:`REQUEST_REBUILD_BATCHES` batches (each batch one
  visit per drive stage carrying the batch's busy time), paced so the
  rebuild holds the drives ``priority`` of the time (mdadm's
  ``speed_limit_min``): it does not speed up on idle drives as the flow
  fidelity's opportunistic share does, and a batch holds a drive's queue for
  its whole busy time (coarse: foreground requests wait behind it).  The
  rebuild's end makes the target healthy; a failure beyond the layout's
  tolerance marks the data lost and stops the rebuild;
* TRIM (``fstrim``): the dead space of each drive deallocated at the drive's
  ``trim_bandwidth`` as a flow on every drive's data path (flow fidelity) or
  one visit of each drive's data queue (request fidelity); garbage collection
  has the space back when it ends.

A fast-forward (:meth:`TargetLife.age`) of arrays with the same history
shares one representative FTL model through the system's :class:`AgingMemo`
(exact: equal parameters and equal writes and TRIMs give equal states).

Everything here works through the target's resources and queues; the system
kind only builds one life per target and hands it to the timeline.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Generator, Hashable
from typing import Any, Literal

import simpy

from flashsim.components.aging_spec import AgingSpec
from flashsim.components.drive_aging import DriveAging, build_drive_aging
from flashsim.components.raid_target import TRIM_OP_B, RaidTarget
from flashsim.components.rebuild import (
    ArrayGeometry,
    DegradedState,
    RebuildFlows,
    RebuildPolicy,
    rebuild_traffic,
)
from flashsim.components.ssd import SsdSpec, SsdState
from flashsim.components.target_state import TargetStatus, drive_failure_times
from flashsim.engine.simulation import Simulation

Fidelity = Literal["flow", "request"]

#: Steps in which a flow-fidelity rebuild publishes its progress to the degraded state
#: (the share of lost chunks already rebuilt; flows started later see it).
REBUILD_STEPS = 10

#: Batches a request-fidelity rebuild is issued in (each one visit per drive stage).
REQUEST_REBUILD_BATCHES = 1000

#: Most aged states an :class:`AgingMemo` keeps (the newest).
MEMO_ENTRIES = 16


class AgingMemo:
    """Aged FTL states of a system's arrays, shared by arrays with the same history.

    A fast-forward ages every target by the same bytes each day; arrays whose
    fluid models have the same parameters and the same writes and TRIMs since
    fresh (:attr:`DriveAging.history`) are in the same state, so one of them
    advances its model and the others copy the result (one representative per
    group of identical drives, exact).  The memo belongs to one built system.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[Hashable, float], tuple[Hashable, Any]] = {}

    def age(self, aging: DriveAging, per_drive_B: float) -> None:
        """``aging.record(per_drive_B)``, or a copy of an array that did so from the same state."""
        if aging.history is None or per_drive_B <= 0:
            aging.record(per_drive_B)
            return
        key = (aging.history, per_drive_B)
        hit = self._entries.get(key)
        if hit is not None:
            aging.adopt(*hit)
            return
        aging.record(per_drive_B)
        assert aging.history is not None
        self._entries[key] = (aging.history, copy.deepcopy(aging.model))
        while len(self._entries) > MEMO_ENTRIES:
            del self._entries[next(iter(self._entries))]


class TargetLife:
    """The state of one RAID target for the whole run (:class:`StatefulTarget`).

    Parameters
    ----------
    sim : Simulation
        The simulation (clock, flows, random streams).
    target : RaidTarget
        The target whose ``aging`` and ``degraded`` this life sets.
    fidelity : {"flow", "request"}
        How rebuilds and TRIMs load the drives, and the default FTL model.
    policy : RebuildPolicy
        Rebuild-rate policy (the model's ``oss.rebuild``).
    aging_spec : AgingSpec or None
        The file system's traffic as a drive sees it; ``None``: no aging model.
    rebuild_fill : float
        Share (0, 1] of each failed drive's capacity a rebuild reconstructs
        (dimensionless; block RAID: 1).
    memo : AgingMemo or None
        The system's shared aged states (fast-forwards of identical arrays).
    """

    def __init__(
        self,
        sim: Simulation,
        target: RaidTarget,
        fidelity: Fidelity,
        policy: RebuildPolicy,
        aging_spec: AgingSpec | None = None,
        rebuild_fill: float = 1.0,
        memo: AgingMemo | None = None,
    ) -> None:
        if not 0.0 < rebuild_fill <= 1.0:
            raise ValueError(f"fill: {rebuild_fill} must be in (0, 1]")
        self.sim = sim
        self.target = target
        self.name = target.name
        self.drives = target.n_drives
        self.fidelity: Fidelity = fidelity
        self.policy = policy
        self.aging_spec = aging_spec
        self.rebuild_fill = rebuild_fill
        self.memo = memo
        self.geometry = ArrayGeometry.of_raid(target.raid_spec, target.n_drives)
        self.data_lost = False
        self._rebuild: RebuildFlows | None = None
        self._rebuilt_B = 0.0  # bytes reconstructed by earlier (stopped) rebuild flows
        self._total_B = 0.0  # bytes to reconstruct for the drives down now
        self._generation = 0  # bumped whenever the rebuild is restarted or dropped
        self._trim: simpy.Event | None = None
        self._trim_flow: Any = None
        #: (aging, its version, the healthy status they give): :meth:`status`'s cache.
        self._status: tuple[DriveAging | None, int, TargetStatus] | None = None
        self.renew()

    # ............................................................ aging
    @property
    def aging(self) -> DriveAging | None:
        """The representative drive's aging model (``None`` without one)."""
        return self.target.aging

    def renew(
        self, fill: float | None = None, fidelity: Fidelity | None = None, label: str | None = None
    ) -> None:
        """Fresh drives' FTL state (the failures and rebuild are kept).

        Parameters
        ----------
        fill : float or None
            Fraction of the drives' written space holding cold data never
            deleted (default: the aging table's ``cold_fraction``).
        fidelity : {"flow", "request"} or None
            FTL model: fluid (flow) or micro-model (request); default the life's.
        label : str or None
            Name of the micro-model's random stream (``{label}.ftl``); default the target's.
        """
        spec = self.aging_spec
        drive = self.target.drive
        if spec is None or not isinstance(drive, SsdSpec):
            self.target.aging = None
            return
        n = self.target.n_drives
        written_fraction = (n - self.target.raid_spec.spares) / n
        self.target.aging = build_drive_aging(
            drive,
            spec,
            written_fraction,
            spec.cold_fraction if fill is None else fill,
            fidelity or self.fidelity,
            self.sim.rng(f"{label or self.name}.ftl"),
        )

    def require_aging(self, key: str) -> DriveAging:
        """The aging model, or ``ValueError("key: ...")`` naming why there is none."""
        aging = self.aging
        if aging is not None:
            return aging
        drive = self.target.drive
        if not isinstance(drive, SsdSpec):
            raise ValueError(
                f"{key}: {self.name}'s drives ({drive.name}) are not SSDs; they do not age"
            )
        raise ValueError(
            f"{key}: the model has no drive-aging table; add [oss.aging] (units_per_block, "
            "spread) to age targets"
        )

    def failure_times(self, afr: float) -> list[float]:
        """First failure time (s) of each drive at AFR ``afr``, from its own seeded stream."""
        return drive_failure_times(self.sim, self.name, self.drives, afr)

    def age(self, host_B: float) -> None:
        """Fast-forward: ``host_B`` user bytes written (and as many deleted) to the target.

        Each drive receives ``host_B`` x the RAID's full-stripe write weight /
        drives (parity included, declustered); a target without an aging model
        only counts the bytes in its drives' wear states.
        """
        if host_B < 0 or not math.isfinite(host_B):
            raise ValueError(f"daily_volume: {host_B} B must be a finite number >= 0")
        per_drive = host_B * self.target.drive_bytes_per_user_B()
        for state in self.target.states:
            state.record_write(per_drive)
        if self.aging is None:
            return
        if self.memo is not None:
            self.memo.age(self.aging, per_drive)
        else:
            self.aging.record(per_drive)

    # ........................................................... status
    def status(self) -> TargetStatus:
        """The target's state now.

        A healthy target's status is a function of its drives' aging state
        alone, so it is kept until that state changes (:attr:`DriveAging.version`):
        timeline recorders ask every target for it many times a simulated day.
        """
        aging = self.aging
        key = (aging, aging.version if aging is not None else 0)
        healthy = self.target.degraded is None and not self.data_lost
        cached = self._status
        if healthy and cached is not None and cached[0] is key[0] and cached[1] == key[1]:
            return cached[2]
        status = self._compute_status()
        if healthy:
            self._status = (key[0], key[1], status)
        return status

    def _compute_status(self) -> TargetStatus:
        """The target's state now, computed."""
        aging = self.aging
        wa = float(aging.write_amplification()) if aging is not None else 1.0
        scale = float(self.target.write_time_scale())
        state = self.target.degraded
        return TargetStatus(
            target=self.name,
            write_amplification=wa,
            write_loss=1.0 - 1.0 / scale,
            host_written_B=float(aging.model.host_written_B) if aging is not None else 0.0,
            dead_B=float(aging.dead_B()) if aging is not None else 0.0,
            failed_drives=tuple(state.failed) if state is not None else (),
            rebuild_progress=self.rebuild_progress(),
            data_lost=self.data_lost,
        )

    def rebuild_progress(self) -> float | None:
        """Share [0, 1] of the running rebuild done; ``None`` when none runs."""
        if self.target.degraded is None or self.data_lost or self._total_B <= 0:
            return None
        return min(1.0, self._done_B() / self._total_B)

    def _done_B(self) -> float:
        """Bytes reconstructed so far for the drives down now."""
        running = self._rebuild.moved_B() if self._rebuild is not None else 0.0
        return self._rebuilt_B + running

    # ......................................................... failures
    def fail_drive(self, drive: int) -> None:
        """Drive ``drive`` fails now: the target degrades and (re)starts its rebuild.

        Raises ``ValueError("drive: ...")`` for an index outside the array or a
        drive already down.
        """
        if not (isinstance(drive, int) and 0 <= drive < self.drives):
            raise ValueError(f"drive: {drive} is outside {self.name}'s drives 0..{self.drives - 1}")
        state = self.target.degraded
        if state is not None and drive in state.failed:
            raise ValueError(f"drive: drive {drive} of {self.name} is already down")
        self._stop_rebuild()
        if state is None:
            state = DegradedState(self.geometry, [], decode_Bps=self.policy.decode_bandwidth)
            self._rebuilt_B = self._total_B = 0.0
        state.failed.append(drive)
        self._total_B += self.rebuild_fill * float(self.target.drive.capacity)
        state.rebuilt_fraction = min(1.0, self._rebuilt_B / self._total_B)
        self.target.degraded = state
        if state.data_lost():
            self.data_lost = True  # stripes beyond repair: nothing left to rebuild them from
            self.sim.state_changed(f"{self.name}: drive {drive} failed, data lost")
            return
        self.sim.state_changed(f"{self.name}: drive {drive} failed")
        if not self.data_lost:
            self._start_rebuild()

    def replace_drive(self, drive: int) -> None:
        """A fresh drive replaces ``drive``: its wear state fresh, its failure cleared.

        The representative drive's FTL state stands for the whole array and is
        kept.  If other drives are still down their rebuild goes on.
        """
        if not (isinstance(drive, int) and 0 <= drive < self.drives):
            raise ValueError(f"drive: {drive} is outside {self.name}'s drives 0..{self.drives - 1}")
        old = self.target.states[drive]
        self.target.states[drive] = SsdState(old.capacity_B, flow_bytes_B=old.flow_bytes_B)
        state = self.target.degraded
        if state is None or drive not in state.failed:
            return
        self._stop_rebuild()
        state.failed.remove(drive)
        per_drive = self.rebuild_fill * float(self.target.drive.capacity)
        self._total_B = max(0.0, self._total_B - per_drive)
        self._rebuilt_B = min(self._rebuilt_B, self._total_B)
        if not state.failed:
            self._healthy()
            return
        self.data_lost = self.data_lost and state.data_lost()
        state.rebuilt_fraction = self._rebuilt_B / self._total_B if self._total_B else 1.0
        if not self.data_lost:
            self._start_rebuild()

    def rebuild_done(self) -> simpy.Event:
        """The event the running rebuild triggers when it ends (flow fidelity).

        An event that never triggers when no rebuild runs (or in request
        fidelity, whose rebuild is a process, not flows).
        """
        running = self._rebuild
        return running.done if running is not None else self.sim.env.event()

    def heal(self) -> None:
        """No drive down: stop any rebuild and clear the failures (the aging is kept).

        Study phases that define their own failures (``rebuild``,
        ``degraded-survey``) start from a healthy target this way.
        """
        self._stop_rebuild()
        self._healthy()

    def _stop_rebuild(self) -> None:
        """Stop the running rebuild (what it reconstructed counts) and its progress process."""
        self._generation += 1
        if self._rebuild is not None:
            self._rebuilt_B += self._rebuild.stop()
            self._rebuild = None

    def _healthy(self) -> None:
        """Every lost chunk rebuilt (into spare space or the replacement): no drive down."""
        self._generation += 1
        self._rebuild = None
        self._rebuilt_B = self._total_B = 0.0
        self.target.degraded = None
        self.data_lost = False

    def _start_rebuild(self) -> None:
        """Rebuild what is left of the drives down now, in the life's fidelity."""
        state = self.target.degraded
        assert state is not None
        left = self._total_B - self._rebuilt_B
        if left <= self._total_B * 1e-9:
            self._healthy()
            return
        path, alone = self.target.rebuild_path(rebuild_traffic(self.geometry, state.failed))
        env = self.sim.env
        if self.fidelity == "flow":
            self._rebuild = RebuildFlows(
                self.sim.flows,
                f"{self.name}.rebuild",
                path,
                left,
                alone,
                self.policy,
                self.geometry.chunk_B,
            )
            step = self._total_B / alone / self.policy.priority / REBUILD_STEPS
            env.process(self._follow_flows(self._generation, self._rebuild, step))
        else:
            env.process(self._request_rebuild(self._generation, left))

    def _follow_flows(
        self, generation: int, rebuild: RebuildFlows, step_s: float
    ) -> Generator[simpy.Event, Any, None]:
        """Publish a flow rebuild's progress every ``step_s`` s; at its end, a healthy target."""
        env = self.sim.env
        while generation == self._generation:
            yield env.any_of([rebuild.done, env.timeout(step_s)])
            if generation != self._generation:
                return
            state = self.target.degraded
            if state is not None and self._total_B > 0:
                state.rebuilt_fraction = min(1.0, self._done_B() / self._total_B)
            if rebuild.done.triggered:
                self._healthy()
                self.sim.state_changed(f"{self.name}: rebuilt")
                return

    def _request_rebuild(self, generation: int, left_B: float) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: the rebuild's chunk reads and writes through the drive queues.

        Each batch of ``left_B / REQUEST_REBUILD_BATCHES`` rebuilt bytes visits
        every drive's command queue (its busy time split over the command
        units) and data queue with what the batch costs there; after a batch
        the rebuild sleeps so it holds the drives ``priority`` of the time.
        """
        env = self.sim.env
        target = self.target
        drive = target.drive
        state = target.degraded
        assert state is not None
        traffic = rebuild_traffic(self.geometry, state.failed)
        chunk = self.geometry.chunk_B
        batch = max(chunk, left_B / REQUEST_REBUILD_BATCHES)
        servers = int(drive.servers)
        while left_B > 0 and generation == self._generation:
            b = min(batch, left_B)
            ops = b / chunk
            events: list[simpy.Event] = []
            for i in range(target.n_drives):
                r = float(traffic.read_per_B[i]) * ops
                w = float(traffic.write_per_B[i]) * ops
                if r == 0.0 and w == 0.0:
                    continue
                cmd = r * drive.cmd_s("read", chunk) + w * drive.cmd_s("write", chunk)
                xfer = r * drive.xfer_s("read", chunk) / target.speed("read", i)
                xfer += (
                    w
                    * drive.xfer_s("write", chunk)
                    * target.write_time_scale()
                    / target.speed("write", i)
                )
                events.extend(target.q_cmd[i].visit(cmd / servers) for _ in range(servers))
                if xfer > 0:
                    events.append(target.q_xfer[i].visit(xfer))
            start = env.now
            yield env.all_of(events)
            if generation != self._generation:
                return
            busy = env.now - start
            left_B -= b
            self._rebuilt_B += b
            state.rebuilt_fraction = min(1.0, self._rebuilt_B / self._total_B)
            if left_B > 0 and self.policy.priority < 1.0:
                yield env.timeout(busy * (1.0 / self.policy.priority - 1.0))
        if generation == self._generation:
            self._healthy()
            self.sim.state_changed(f"{self.name}: rebuilt")

    # ............................................................. TRIM
    def trim(self) -> simpy.Event:
        """Start a TRIM of the dead space; the event's value is the seconds it took.

        A TRIM already running is returned as is.  Raises ``ValueError("trim:
        ...")`` for drives without an aging model (HDDs, no aging table).
        """
        aging = self.require_aging("trim")
        if self._trim is not None and not self._trim.triggered:
            return self._trim
        env = self.sim.env
        done = env.event()
        self._trim = done
        dead = aging.dead_B()
        rate = self.target.trim_bandwidth_Bps()
        if dead <= 0.0 or not math.isfinite(rate):
            aging.trim()
            done.succeed(0.0)
            return done
        start = env.now
        if self.fidelity == "flow":
            flow = self.sim.flows.start_flow(
                dead,
                self.target.trim_path(),
                op_size_B=TRIM_OP_B,
                name=f"{self.name}.trim",
                cap_label="drive: TRIM deallocation rate",
            )
            self._trim_flow = flow

            def finish(_ev: simpy.Event) -> None:
                self._trim_flow = None
                if done.triggered:
                    return  # reset meanwhile
                aging.trim()
                done.succeed(env.now - start)

            flow.done.callbacks.append(finish)
        else:
            env.process(self._request_trim(done, aging, dead / rate, start))
        return done

    def _request_trim(
        self, done: simpy.Event, aging: DriveAging, busy_s: float, start: float
    ) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: one visit of every drive's data queue for ``busy_s`` s."""
        env = self.sim.env
        yield env.all_of([q.visit(busy_s) for q in self.target.q_xfer])
        if not done.triggered:
            aging.trim()
            done.succeed(env.now - start)

    # ............................................................ reset
    def reset(self) -> None:
        """Fresh drives, no failure, no rebuild, no TRIM running: the state at build time."""
        self.heal()
        if self._trim_flow is not None:
            self.sim.flows.cancel_flow(self._trim_flow)
            self._trim_flow = None
        if self._trim is not None and not self._trim.triggered:
            self._trim.succeed(math.nan)  # abandoned: waiters resume
        self._trim = None
        self.target.states = [
            SsdState(s.capacity_B, flow_bytes_B=s.flow_bytes_B) for s in self.target.states
        ]
        self.renew()
