"""A RAID target: drives behind a RAID engine, in both fidelities.

Each drive has a command stage (``parallelism`` units: controller and flash
channels) and a data stage (one transfer at a time), and, for NVMe drives, a
PCIe link per direction; the target has a RAID engine (threads that run
read-modify-writes).  One server operation on the target costs drive
operations given by the RAID geometry (:class:`~flashsim.components.raid.RaidSpec`):

* flow fidelity: a flow crossing the target carries, on each resource, the
  busy time (or bytes) one operation costs there, per byte of the operation
  (:meth:`RaidTarget.path`), so a flow saturates where the queues do;
* request fidelity: the same stages as queue visits, drive by drive
  (:meth:`RaidTarget.visit`).

A system wires targets to its servers (a Lustre OST, a burst-buffer drive
group); the target never knows which.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import simpy

from flashsim.components.drive import Drive
from flashsim.components.endurance import catch_up
from flashsim.components.pcie import PcieLink
from flashsim.components.pcie import link_Bps as pcie_link_Bps
from flashsim.components.raid import DriveOp, RaidSpec
from flashsim.components.raid_controller import Controller
from flashsim.components.rebuild import DegradedState, RebuildTraffic
from flashsim.components.ssd import SsdSpec, SsdState
from flashsim.components.target import DriveStage, OpKind, PathEntries, TargetCost
from flashsim.engine.distributions import SampleBuffer, with_mean_and_cv
from flashsim.engine.flows import Flow, Resource
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation

if TYPE_CHECKING:
    from flashsim.components.drive_aging import DriveAging

#: Bytes per deallocate command of a TRIM flow (its unit on the drives' time-based data paths).
TRIM_OP_B = 2.0**20


@dataclass
class RaidTarget:
    """One target: its drives (two stages each), PCIe links and RAID engine.

    A :class:`~flashsim.components.target.StorageTarget`: its costs do not
    depend on the object an operation touches.
    """

    #: Costs do not depend on the object (:attr:`StorageTarget.object_aware`).
    object_aware: ClassVar[bool] = False

    name: str
    drive: Drive
    n_drives: int
    stack_eff: dict[str, float]
    states: list[SsdState]
    raid_spec: RaidSpec
    sub_stripe_write_s: float = 0.0
    link_Bps: float = math.inf
    cmd: list[Resource] = field(default_factory=list)
    xfer: list[Resource] = field(default_factory=list)
    link_up: list[Resource] = field(default_factory=list)
    link_down: list[Resource] = field(default_factory=list)
    raid: Resource | None = None
    q_cmd: list[FifoQueue] = field(default_factory=list)
    q_xfer: list[FifoQueue] = field(default_factory=list)
    q_raid: FifoQueue | None = None
    picks: list[int] = field(default_factory=list)
    rng: np.random.Generator | None = None
    variability: SampleBuffer | None = None
    degraded: DegradedState | None = None
    aging: DriveAging | None = None
    drive_speed: dict[str, list[float]] = field(default_factory=dict)
    #: External RAID controller in front of the target, shared with other targets (a DDN
    #: couplet; components.raid_controller); every operation crosses it first.
    controller: Controller | None = None

    def speed(self, op: str, i: int) -> float:
        """Factor (median 1) on drive ``i``'s ``op`` data rate (components.variability)."""
        speeds = self.drive_speed.get(op)
        return speeds[i] if speeds else 1.0

    def write_time_scale(self) -> float:
        """Factor on the drives' host write transfer times from garbage collection (1 if fresh)."""
        return 1.0 if self.aging is None else self.aging.write_time_scale()

    def stage_xfer_s(self, stage: DriveStage, per: float, eff: float) -> float:
        """Data-path time (s) of ``per`` drive operations of ``stage`` on one drive.

        ``eff``, the stack efficiency of the user operation, paces the transfer
        (the reads of a read-modify-write belong to a write), and an aged
        drive's writes wait for garbage collection's copies.
        """
        xfer = per * self.drive.xfer_s(stage.op, stage.size_B) / eff
        return xfer * self.write_time_scale() if stage.op == "write" else xfer

    # ............................................................... cost
    def cost(self, op: OpKind, size_B: float, sequential: bool, obj: str = "") -> TargetCost:
        """What one ``op`` of ``size_B`` bytes costs this target (any object ``obj``).

        A streaming write of at least a full stripe writes whole stripes; a
        smaller write is a read-modify-write that also holds the RAID engine
        for ``sub_stripe_write_s``.  The stack efficiency of the user
        operation paces all its drive transfers (the reads of a
        read-modify-write belong to a write).
        """
        raid = self.raid_spec
        drive = self.drive
        eff = self.stack_eff[op]
        raid_s = 0.0
        if op == "read":
            ops: list[DriveOp] = raid.read_ops(size_B)
            big = size_B > raid.chunk
            stages = [DriveStage(o.op, o.size_B, o.count, big) for o in ops]
        else:
            full = sequential and size_B >= raid.stripe_data_B
            ops = raid.write_ops(size_B, aligned_full=full)
            small = raid.is_sub_stripe(size_B) and not full
            if small:
                raid_s = self.sub_stripe_write_s
            stages = [DriveStage(o.op, o.size_B, o.count, not small) for o in ops]
        live = self.n_drives
        if self.degraded is not None:
            stages, raid_s, live = self._degrade(stages, raid_s)
        cmd = sum(s.mean_count * drive.cmd_s(s.op, s.size_B) for s in stages)
        xfer = sum(self.stage_xfer_s(s, s.mean_count, eff) for s in stages)
        up = sum(s.mean_count * s.size_B for s in stages if s.op == "read")
        down = sum(s.mean_count * s.size_B for s in stages if s.op == "write")
        busy = 0.0
        delay = 0.0
        for s in stages:
            per_visit = s.mean_count / live if s.spread else 1.0
            c = per_visit * drive.cmd_s(s.op, s.size_B)
            x = self.stage_xfer_s(s, per_visit, eff)
            busy += max(c, x)
            delay += drive.delay_s(s.op, s.size_B) + per_visit * s.size_B / self.link_Bps
        return TargetCost(
            op=op,
            size_B=size_B,
            raid_s=raid_s,
            stages=tuple(stages),
            drive_cmd_s=cmd,
            drive_xfer_s=xfer,
            pcie_up_B=up,
            pcie_down_B=down,
            drive_latency_s=busy,
            delay_s=delay,
        )

    # ............................................................... flow
    def path(self, cost: TargetCost, share: float = 1.0) -> PathEntries:
        """Flow path (resource, weight): controller (if any), RAID engine, drives and links."""
        n = self.n_drives
        path: list[tuple[Resource, float]] = []
        if self.controller is not None:
            path.extend(self.controller.path(cost.op, cost.size_B, share))
        if cost.raid_s > 0 and self.raid is not None:
            path.append((self.raid, share * cost.raid_s))
        # A degraded array spreads its work over the survivors (components.rebuild).
        shares = None if self.degraded is None else self.degraded.shares(cost.op)
        for i in range(self.n_drives):
            if shares is not None:
                if shares[i] == 0.0:
                    continue
                n = 1.0 / shares[i]
            if cost.drive_cmd_s > 0:
                path.append((self.cmd[i], share * cost.drive_cmd_s / n))
            if cost.drive_xfer_s > 0:  # an HDD's transfer is part of its command time
                xfer_w = share * cost.drive_xfer_s / n / self.speed(cost.op, i)
                path.append((self.xfer[i], xfer_w))
            if cost.pcie_up_B > 0 and self.link_up:
                path.append((self.link_up[i], share * cost.pcie_up_B / cost.size_B / n))
            if cost.pcie_down_B > 0 and self.link_down:
                path.append((self.link_down[i], share * cost.pcie_down_B / cost.size_B / n))
        return path

    # ............................................................ degraded
    def _degrade(
        self, stages: list[DriveStage], raid_s: float
    ) -> tuple[list[DriveStage], float, int]:
        """Stages of a degraded array: lost chunks reconstructed or skipped, decode time added.

        Returns the stages, the RAID-engine time and the drives still serving.
        """
        state = self.degraded
        assert state is not None
        out = []
        for s in stages:
            lost, replace = state.stage_loss(s.op, s.spread)
            out.append(DriveStage(s.op, s.size_B, s.count, s.spread, lost, replace))
            raid_s += state.decode_s(s.op, s.size_B, s.count)
        return out, raid_s, len(state.survivors)

    def _degraded_visits(self, stage: DriveStage) -> list[tuple[int, float]]:
        """Request fidelity: (drive, operations) of one stage on a degraded array.

        A spread stage puts its expected operations on the survivors by their
        shares; a small one picks its drives, and each pick on a lost chunk is
        replaced by the survivors that reconstruct it (drawn distinct where they can be).
        """
        state = self.degraded
        assert state is not None and self.rng is not None
        if stage.spread:
            shares = state.shares(stage.op)
            return [(d, stage.mean_count * float(w)) for d, w in enumerate(shares) if w > 0]
        picked = self.pick(min(round(stage.count), self.n_drives))
        failed = set(state.failed)
        chosen = [d for d in picked if d not in failed]
        for d in picked:
            if d not in failed:
                continue
            if self.rng.random() < state.rebuilt_fraction:
                serve = [-1]  # already rebuilt: one operation where the rebuild put it
            else:
                serve = state.replacement(d, stage.op, stage.spread)
            for r in serve:
                if r < 0:
                    free = [s for s in state.survivors if s not in chosen] or state.survivors
                    r = int(free[int(self.rng.integers(len(free)))])
                chosen.append(r)
        return [(d, 1.0) for d in chosen]

    def rebuild_path(self, traffic: RebuildTraffic) -> tuple[list[tuple[Resource, float]], float]:
        """Flow path of a rebuild (weights per rebuilt byte, ``op_size_B = chunk``) and its
        rate (bytes/s) on otherwise idle drives.

        Each drive's command and data stages carry the busy time of the chunk
        reads and writes one rebuilt chunk costs there, its PCIe links the
        bytes; the rebuild runs below the file system, so no stack efficiency applies.
        """
        chunk = float(self.raid_spec.chunk)
        drive = self.drive
        path: list[tuple[Resource, float]] = []
        need = 0.0  # the busiest constraint's capacity-seconds per rebuilt byte
        for i in range(self.n_drives):
            r = float(traffic.read_per_B[i])
            w = float(traffic.write_per_B[i])
            if r == 0.0 and w == 0.0:
                continue
            cmd = r * drive.cmd_s("read", chunk) + w * drive.cmd_s("write", chunk)
            xfer = r * drive.xfer_s("read", chunk) / self.speed("read", i)
            xfer += (
                w * drive.xfer_s("write", chunk) * self.write_time_scale() / self.speed("write", i)
            )
            path.append((self.cmd[i], cmd))
            need = max(need, cmd / chunk / drive.servers)
            if xfer > 0:
                path.append((self.xfer[i], xfer))
                need = max(need, xfer / chunk)
            for links, per_B in ((self.link_up, r), (self.link_down, w)):
                if links and per_B > 0:
                    path.append((links[i], per_B))
                    need = max(need, per_B / self.link_Bps)
        return path, 1.0 / need

    # ............................................................... TRIM
    def trim_bandwidth_Bps(self) -> float:
        """Bytes/s each drive deallocates (``inf`` when the datasheet gives no rate)."""
        drive = self.drive
        if not isinstance(drive, SsdSpec) or drive.trim_bandwidth is None:
            return math.inf
        return float(drive.trim_bandwidth)

    def trim_path(self) -> list[tuple[Resource, float]]:
        """Flow path of a TRIM: every drive's data path, ``TRIM_OP_B / trim_bandwidth`` s per op.

        A byte of the flow deallocates one byte on every drive; the flow's
        operations are :data:`TRIM_OP_B` bytes.
        """
        return [(x, TRIM_OP_B / self.trim_bandwidth_Bps()) for x in self.xfer]

    def drive_bytes_per_user_B(self) -> float:
        """Bytes each drive receives per user byte written (parity included, declustered)."""
        return self.raid_spec.full_stripe_write_weight() / self.n_drives

    # ............................................................ request
    def pick(self, count: int) -> list[int]:
        """``count`` distinct drives chosen uniformly (drawn in blocks from the target's stream)."""
        out: list[int] = []
        while len(out) < count:
            if not self.picks:
                assert self.rng is not None
                self.picks = self.rng.integers(0, self.n_drives, 8192).tolist()
            d = self.picks.pop()
            if d not in out:
                out.append(d)
        return out

    def visit(self, env: simpy.Environment, cost: TargetCost) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: the controller (if any), the RAID engine, then the drive stages.

        A spread stage visits every drive with ``count / drives`` of its work; a
        small one visits ``count`` distinct drives picked at random.  Each drive
        visit takes its command and data stages at once and ends with the later.
        """
        if self.controller is not None:
            yield self.controller.visit(cost.op, cost.size_B)
        if cost.raid_s > 0 and self.q_raid is not None:
            yield self.q_raid.visit(cost.raid_s)
        drive = self.drive
        eff = self.stack_eff[cost.op]
        for stage in cost.stages:
            if self.degraded is not None:
                yield from self._visit_degraded(env, stage, cost.op, eff)
                continue
            if stage.spread:
                per = stage.count / self.n_drives
                drives = list(range(self.n_drives))
            else:
                per = 1.0
                drives = self.pick(min(round(stage.count), self.n_drives))
            cmd_s = per * drive.cmd_s(stage.op, stage.size_B)
            xfer_s = self.stage_xfer_s(stage, per, eff)
            events: list[simpy.Event] = []
            for d in drives:
                factor = self.variability.next() if self.variability is not None else 1.0
                events.append(self.q_cmd[d].visit(cmd_s * factor))
                events.append(self.q_xfer[d].visit(xfer_s / self.speed(cost.op, d)))
                if stage.op == "write":
                    self.states[d].record_write(per * stage.size_B)
            if stage.op == "write" and self.aging is not None:
                # The representative drive takes the array's mean share.
                self.aging.record(per * stage.size_B * len(drives) / self.n_drives)
            if len(events) == 2:
                # Both visits start now; wait for the later one.
                yield events[0]
                if not events[1].triggered:
                    yield events[1]
            else:
                yield env.all_of(events)

    def _visit_degraded(
        self, env: simpy.Environment, stage: DriveStage, op: OpKind, eff: float
    ) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: one stage on a degraded array (:meth:`_degraded_visits`)."""
        drive = self.drive
        events: list[simpy.Event] = []
        written = 0.0
        for d, per in self._degraded_visits(stage):
            factor = self.variability.next() if self.variability is not None else 1.0
            events.append(self.q_cmd[d].visit(per * drive.cmd_s(stage.op, stage.size_B) * factor))
            events.append(
                self.q_xfer[d].visit(self.stage_xfer_s(stage, per, eff) / self.speed(op, d))
            )
            if stage.op == "write":
                self.states[d].record_write(per * stage.size_B)
                written += per * stage.size_B
        if written and self.aging is not None:
            self.aging.record(written / self.n_drives)
        if events:
            yield env.all_of(events)

    def flow_started(self, cost: TargetCost, flow: Flow, share: float = 1.0) -> None:
        """Nothing: a RAID target's wear follows its drives' counters (:meth:`account_wear`)."""

    def account_wear(self, bytes_moved: Callable[[Resource], float]) -> None:
        """Add the bytes flows wrote to each drive (its PCIe down-link's counter) to its wear."""
        self.account_flow_writes([bytes_moved(link) for link in self.link_down])

    def account_flow_writes(self, flows_bytes: list[float]) -> None:
        """Add the bytes flows wrote to each drive since the last call to its wear state.

        ``flows_bytes[i]`` is the cumulative byte count of drive ``i``'s PCIe
        down-link (request fidelity records each write as it happens).
        """
        added = sum(
            catch_up(state, total) for state, total in zip(self.states, flows_bytes, strict=False)
        )
        if self.aging is not None and self.states:
            self.aging.record(added / len(self.states))


def build_target(
    sim: Simulation,
    name: str,
    drive: Drive,
    n_drives: int,
    raid: RaidSpec,
    raid_threads: int,
    stack_eff: dict[str, float],
    sub_stripe_write_s: float = 0.0,
    drive_link: PcieLink | None = None,
) -> RaidTarget:
    """A target named ``name``: per drive a command stage, a data stage and PCIe links.

    Parameters
    ----------
    sim : Simulation
        The simulation.
    name : str
        Dotted name (drives are ``{name}.drive{i}``, the engine ``{name}.raid``).
    drive : Drive
        Drive datasheet.
    n_drives : int
        Drives in the target.
    raid : RaidSpec
        RAID geometry.
    raid_threads : int
        Threads of the RAID engine (read-modify-writes in parallel).
    stack_eff : dict
        Fraction of the drives' bandwidth the software stack delivers, by operation.
    sub_stripe_write_s : float
        RAID-engine time (s) of one read-modify-write.
    drive_link : PcieLink or None
        Each drive's host link (``None`` behind a SAS fabric).
    """
    flows = sim.flows
    env = sim.env
    link_Bps = pcie_link_Bps(drive_link)
    target = RaidTarget(
        name=name,
        drive=drive,
        n_drives=n_drives,
        stack_eff=dict(stack_eff),
        states=[SsdState(drive.capacity) for _ in range(n_drives)],
        raid_spec=raid,
        sub_stripe_write_s=sub_stripe_write_s,
        link_Bps=link_Bps,
        rng=sim.rng(f"{name}.placement"),
    )
    if drive.service_cv > 0:
        # Unit-mean factor on drive command times (request fidelity tails).
        target.variability = SampleBuffer(
            with_mean_and_cv("gamma", 1.0, drive.service_cv), sim.rng(f"{name}.service")
        )
    for i in range(n_drives):
        dn = f"{name}.drive{i}"
        target.cmd.append(flows.add_resource(f"{dn}.cmd", capacity_ops=float(drive.servers)))
        target.xfer.append(flows.add_resource(f"{dn}.data", capacity_ops=1.0))
        if drive_link is not None:
            target.link_up.append(flows.add_resource(f"{dn}.pcie.up", link_Bps))
            target.link_down.append(flows.add_resource(f"{dn}.pcie.down", link_Bps))
        target.q_cmd.append(FifoQueue(env, f"{dn}.cmd", drive.servers))
        target.q_xfer.append(FifoQueue(env, f"{dn}.data", 1))
    target.raid = flows.add_resource(f"{name}.raid", capacity_ops=float(raid_threads))
    target.q_raid = FifoQueue(env, f"{name}.raid", raid_threads)
    return target
