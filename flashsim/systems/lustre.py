"""A Lustre file system: OSS/OST servers, compute-node clients and the fabric.

Components and how they appear in each fidelity (one set of parameters):

================  =========================================  ===============================
component         flow fidelity (resource, capacity)          request fidelity (queue)
================  =========================================  ===============================
NIC port          bytes/s per direction (line x efficiency)  1 server, ``s / port_Bps``
global links      bytes/s per direction (links x bandwidth)  (pure latency)
OSS CPU           core-seconds/s = cores                     ``cores`` servers, RPC cost
RAID engine       thread-seconds/s = threads                 ``threads`` servers, RMW cost
drive command     unit-seconds/s = parallelism               ``parallelism`` servers
drive data path   seconds/s = 1                              1 server, ``s / bw / eff``
drive PCIe link   bytes/s per direction                      (pure latency)
client OSC        bytes/s = slots x op / L (RPCs in flight)  semaphore of ``slots``
================  =========================================  ===============================

A flow crossing a time-based resource (capacity in busy-seconds per second)
carries a weight equal to the busy time one operation costs there, so the
flow's saturation rate equals the queue's saturation throughput: the two
fidelities agree by construction wherever a capacity binds.  A rank's flow is
capped at ``q * op / L``, ``q`` operations in flight over the zero-load round
trip ``L``, which is exactly the round trip a request takes through the queues.

Phases: ``ior`` (:mod:`flashsim.workloads.ior`), ``obdfilter-survey`` (one OST
without clients or network) and ``lnet-selftest`` (one OSS's network alone).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
import simpy
from pydantic import Field

from flashsim.components.drive import Drive
from flashsim.components.nic import Direction, NicSpec
from flashsim.components.raid import DriveOp
from flashsim.components.ssd import SsdState
from flashsim.config import Bytes, Seconds, StrictModel
from flashsim.engine.distributions import SampleBuffer, with_mean_and_cv
from flashsim.engine.flows import Flow, Resource, Segment
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.systems.base import (
    BuiltSystem,
    Description,
    Fidelity,
    SystemKind,
)
from flashsim.systems.lustre_describe import check_model, check_phase, describe_model
from flashsim.systems.lustre_model import LustreModel, ServerSpec
from flashsim.workloads.ior import IorPhase, IorRunner, RankStream

OpKind = Literal["read", "write"]

#: Request fidelity: most server operations one rank keeps in flight (buffered
#: writes could otherwise ask for thousands; a few dozen saturate any server).
MAX_REQUEST_CONCURRENCY = 32


# ------------------------------------------------------------------- phases
class ObdfilterPhase(StrictModel):
    """``obdfilter-survey`` on one OST: the target's stack alone, no client or network.

    Attributes
    ----------
    ost : int
        Target index.
    threads : int
        Concurrent threads (``thrhi``).
    objects : int
        Objects (``nobjhi``).
    record_size : float
        Bytes per I/O (``rszhi``).
    size : float
        Total bytes per OST (``size``).
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["obdfilter-survey"]
    operation: OpKind = Field(description="Write or read test of the target.")
    ost: Annotated[int, Field(ge=0)] = 0
    threads: Annotated[int, Field(ge=1)] = 1024
    objects: Annotated[int, Field(ge=1)] = 1
    record_size: Bytes = "4 MiB"
    size: Bytes = "512 MiB"


class LnetSelftestPhase(StrictModel):
    """LNet Self-Test: bulk transfers between ``sources`` servers and one sink OSS.

    ``read`` moves data out of the sink (its egress); ``write`` moves data into it.

    Attributes
    ----------
    sink : int
        OSS index under test.
    sources : int
        Peer servers driving it.
    concurrency : int
        Requests in flight per source.
    size : float
        Bytes per bulk request.
    duration : float
        Test length (s).
    cross_group : bool
        Whether the sources sit in another I/O group (traffic crosses global links).
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["lnet-selftest"]
    operation: OpKind = Field(
        description="`read` moves data out of the sink (egress), `write` into it."
    )
    sink: Annotated[int, Field(ge=0)] = 0
    sources: Annotated[int, Field(ge=1)] = 2
    concurrency: Annotated[int, Field(ge=1)] = 8
    size: Bytes = "1 MiB"
    duration: Seconds = "10 s"
    cross_group: bool = True


LustrePhase = Annotated[
    IorPhase | ObdfilterPhase | LnetSelftestPhase, Field(discriminator="workload")
]


# ------------------------------------------------------------- cost model
@dataclass(frozen=True)
class DriveStage:
    """Drive operations done in parallel for one server operation.

    ``spread`` stages put ``count / drives`` of the operations on every drive
    (a large RPC over a declustered array); otherwise ``count`` distinct
    drives are chosen at random (a small read, or the chunks of an RMW).
    """

    op: OpKind
    size_B: float
    count: float
    spread: bool


@dataclass(frozen=True)
class OpCost:
    """What one server operation of ``size_B`` bytes costs on one OST.

    Busy times are per operation; drive times are totals over all drives.
    """

    op: OpKind
    size_B: float
    cpu_s: float
    raid_s: float
    stages: tuple[DriveStage, ...]
    drive_cmd_s: float
    drive_xfer_s: float
    pcie_up_B: float
    pcie_down_B: float
    latency_s: float
    fixed_delay_s: float
    nic_s: float


@dataclass
class OstNode:
    """One target: its drives (two stages each), PCIe links and RAID engine."""

    name: str
    drive: Drive
    n_drives: int
    stack_eff: dict[str, float]
    states: list[SsdState]
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


@dataclass
class ServerNode:
    """One OSS: NIC ports, CPU and its targets."""

    name: str
    index: int
    spec: ServerSpec
    nic: dict[str, list[Resource]]
    cpu: Resource
    q_nic: dict[str, list[FifoQueue]]
    q_cpu: FifoQueue
    osts: list[OstNode]
    group: int
    port_rr: itertools.count[int] = field(default_factory=itertools.count)


@dataclass
class ClientNode:
    """One compute node: NIC ports, per-OST RPC windows."""

    name: str
    nic: dict[str, list[Resource]]
    q_nic: dict[str, list[FifoQueue]]
    osc: dict[int, Resource] = field(default_factory=dict)
    slots: dict[int, simpy.Resource] = field(default_factory=dict)
    port_rr: itertools.count[int] = field(default_factory=itertools.count)


@dataclass
class RankContext:
    """Per-rank state of an IOR phase (request fidelity)."""

    node: ClientNode
    targets: list[int]
    cost: OpCost
    gated: bool
    counter: itertools.count[int] = field(default_factory=itertools.count)


def _dirs(op: OpKind) -> tuple[Direction, Direction]:
    """(client NIC direction, server NIC direction) of data for ``op``."""
    return ("egress", "ingress") if op == "write" else ("ingress", "egress")


# ------------------------------------------------------------------ system
class Lustre(BuiltSystem):
    """A Lustre system assembled in a simulation; servers and clients are built on first use.

    Attributes
    ----------
    share_stripe_sets : bool
        Store each stripe set's server paths (and each client's OSCs for it)
        once, as shared flow segments, so a rank striped over S targets costs
        O(1) instead of O(S).  ``False`` expands them into every rank's path:
        the same results, at ranks x targets cost (kept to test that).
    """

    share_stripe_sets: bool = True

    def __init__(self, model: LustreModel, sim: Simulation, fidelity: Fidelity) -> None:
        super().__init__(sim, fidelity)
        self.model = model
        self.servers: dict[int, ServerNode] = {}
        self.clients: dict[int, ClientNode] = {}
        self.fabric: dict[tuple[str, int], Resource] = {}
        self.ior = IorRunner(self, fidelity)
        self._ranks: list[RankContext] = []
        # Shared flow segments: stripe sets (server side) and each client's OSCs for them.
        self._stripe_segments: dict[tuple[Any, ...], Segment] = {}
        self._osc_segments: dict[tuple[str, tuple[int, ...]], Segment] = {}

    # ..................................................................... build
    @property
    def n_osts(self) -> int:
        """Object storage targets in the system."""
        return self.model.oss.count * self.model.oss.targets_per_server

    def server(self, index: int) -> ServerNode:
        """OSS ``index``, built on first use."""
        if index in self.servers:
            return self.servers[index]
        if not 0 <= index < self.model.oss.count:
            raise ValueError(f"OSS index {index} is outside 0..{self.model.oss.count - 1}")
        spec = self.model.oss
        flows = self.sim.flows
        env = self.sim.env
        name = f"{self.model.name}.oss{index}"
        nic, q_nic = self._nic_ports(name, spec.nic)
        cpu = flows.add_resource(f"{name}.cpu", capacity_ops=float(spec.cpu.cores))
        q_cpu = FifoQueue(env, f"{name}.cpu", spec.cpu.cores)
        rng = self.sim.rng(f"{name}.variability")
        factor = 1.0
        if spec.efficiency_spread > 0:
            # Per-OSS spread of the stack efficiency (Fig. 4): normal around the calibrated
            # median, never above the drives' datasheet rate.
            top = 1.0 / max(spec.stack_read_efficiency, spec.stack_write_efficiency)
            factor = float(np.clip(1.0 + spec.efficiency_spread * rng.normal(), 0.5, top))
        osts = []
        for t in range(spec.targets_per_server):
            ost_name = f"{name}.ost{t}"
            drive: Drive = spec.drive
            ost = OstNode(
                name=ost_name,
                drive=drive,
                n_drives=spec.drives_per_target,
                stack_eff={
                    "read": spec.stack_read_efficiency * factor,
                    "write": spec.stack_write_efficiency * factor,
                },
                states=[SsdState(drive.capacity) for _ in range(spec.drives_per_target)],
                rng=self.sim.rng(f"{ost_name}.placement"),
            )
            if drive.service_cv > 0:
                # Unit-mean factor on drive command times (request fidelity tails).
                ost.variability = SampleBuffer(
                    with_mean_and_cv("gamma", 1.0, drive.service_cv),
                    self.sim.rng(f"{ost_name}.service"),
                )
            link_Bps = spec.drive_link.bandwidth_Bps if spec.drive_link is not None else None
            for i in range(spec.drives_per_target):
                dn = f"{ost_name}.drive{i}"
                ost.cmd.append(flows.add_resource(f"{dn}.cmd", capacity_ops=float(drive.servers)))
                ost.xfer.append(flows.add_resource(f"{dn}.data", capacity_ops=1.0))
                if link_Bps is not None:
                    ost.link_up.append(flows.add_resource(f"{dn}.pcie.up", link_Bps))
                    ost.link_down.append(flows.add_resource(f"{dn}.pcie.down", link_Bps))
                ost.q_cmd.append(FifoQueue(env, f"{dn}.cmd", drive.servers))
                ost.q_xfer.append(FifoQueue(env, f"{dn}.data", 1))
            ost.raid = flows.add_resource(f"{ost_name}.raid", capacity_ops=float(spec.raid_threads))
            ost.q_raid = FifoQueue(env, f"{ost_name}.raid", spec.raid_threads)
            osts.append(ost)
        node = ServerNode(
            name=name,
            index=index,
            spec=spec,
            nic=nic,
            cpu=cpu,
            q_nic=q_nic,
            q_cpu=q_cpu,
            osts=osts,
            group=index % self.model.network.io_groups,
        )
        self.servers[index] = node
        return node

    def client(self, index: int) -> ClientNode:
        """Compute node ``index``, built on first use."""
        if index in self.clients:
            return self.clients[index]
        name = f"{self.model.name}.client{index}"
        nic, q_nic = self._nic_ports(name, self.model.client.nic)
        node = ClientNode(name=name, nic=nic, q_nic=q_nic)
        self.clients[index] = node
        return node

    def _nic_ports(
        self, name: str, spec: NicSpec
    ) -> tuple[dict[str, list[Resource]], dict[str, list[FifoQueue]]]:
        """Per-direction port resources (flow) and queues (request) of a node's NIC."""
        directions: tuple[Direction, Direction] = ("ingress", "egress")
        nic: dict[str, list[Resource]] = {
            d: [
                self.sim.flows.add_resource(f"{name}.nic{p}.{d}", spec.port_Bps(d))
                for p in range(spec.ports)
            ]
            for d in directions
        }
        q_nic: dict[str, list[FifoQueue]] = {
            d: [FifoQueue(self.sim.env, f"{name}.nic{p}.{d}") for p in range(spec.ports)]
            for d in directions
        }
        return nic, q_nic

    def fabric_link(self, direction: str, group: int, links: int) -> Resource:
        """Global links between the compute group and I/O group ``group`` in ``direction``."""
        key = (f"{direction}.{links}", group)
        if key not in self.fabric:
            net = self.model.network
            self.fabric[key] = self.sim.flows.add_resource(
                f"{self.model.name}.fabric.io{group}.{direction}.x{links}",
                links * net.global_link_bandwidth,
            )
        return self.fabric[key]

    def ost(self, index: int) -> tuple[ServerNode, OstNode]:
        """The server and target of OST ``index``."""
        per = self.model.oss.targets_per_server
        server = self.server(index // per)
        return server, server.osts[index % per]

    # ................................................................ costs
    def op_cost(
        self, ost: OstNode, op: OpKind, size_B: float, sequential: bool, ops_per_rpc: int = 1
    ) -> OpCost:
        """Busy times and zero-load round trip of one server operation on ``ost``.

        Parameters
        ----------
        ost : OstNode
            Target.
        op : {"read", "write"}
        size_B : float
            Bytes of the operation (an RPC, or one page of a many-page RPC).
        sequential : bool
            Part of a streaming access (full-stripe writes).
        ops_per_rpc : int
            Operations sharing one RPC (the RPC cost is split among them).
        """
        spec = self.model.oss
        raid = spec.raid
        drive = ost.drive
        eff = ost.stack_eff[op]
        stages: list[DriveStage] = []
        raid_s = 0.0
        if op == "read":
            ops: list[DriveOp] = raid.read_ops(size_B)
            big = size_B > raid.chunk
            stages = [DriveStage(o.op, o.size_B, o.count, big) for o in ops]
        else:
            full = sequential and size_B >= raid.stripe_data_B
            ops = raid.write_ops(size_B, aligned_full=full)
            if raid.is_sub_stripe(size_B) and not full:
                raid_s = spec.sub_stripe_write_cost
                stages = [DriveStage(o.op, o.size_B, o.count, False) for o in ops]
            else:
                stages = [DriveStage(o.op, o.size_B, o.count, True) for o in ops]
        cmd = sum(s.count * drive.cmd_s(s.op, s.size_B) for s in stages)
        # The stack efficiency of the user operation paces all its drive transfers
        # (the reads of a read-modify-write belong to a write).
        xfer = sum(s.count * drive.xfer_s(s.op, s.size_B) / eff for s in stages)
        up = sum(s.count * s.size_B for s in stages if s.op == "read")
        down = sum(s.count * s.size_B for s in stages if s.op == "write")
        cpu_s = spec.rpc_cost / max(ops_per_rpc, 1)
        # Zero-load round trip, stage by stage as request fidelity visits them.
        client = self.model.client
        net = self.model.network
        c_dir, s_dir = _dirs(op)
        nic_s = size_B / client.nic.port_Bps(c_dir) + size_B / spec.nic.port_Bps(s_dir)
        wire = 2.0 * (net.hop_latency + client.nic.latency + spec.nic.latency)
        link = spec.drive_link.bandwidth_Bps if spec.drive_link is not None else math.inf
        drive_lat = 0.0
        delay = 0.0
        for s in stages:
            per_visit = s.count / ost.n_drives if s.spread else 1.0
            c = per_visit * drive.cmd_s(s.op, s.size_B)
            x = per_visit * drive.xfer_s(s.op, s.size_B) / eff
            drive_lat += max(c, x)
            delay += drive.delay_s(s.op, s.size_B) + per_visit * s.size_B / link
        fixed = client.lustre.syscall_overhead / max(ops_per_rpc, 1) + wire + delay
        latency = fixed + nic_s + cpu_s + raid_s + drive_lat
        return OpCost(
            op=op,
            size_B=size_B,
            cpu_s=cpu_s,
            raid_s=raid_s,
            stages=tuple(stages),
            drive_cmd_s=cmd,
            drive_xfer_s=xfer,
            pcie_up_B=up,
            pcie_down_B=down,
            latency_s=latency,
            fixed_delay_s=fixed,
            nic_s=nic_s,
        )

    def server_path(
        self, server: ServerNode, ost: OstNode, cost: OpCost, share: float = 1.0
    ) -> list[tuple[Resource, float]]:
        """Flow path (resource, weight) through ``server`` and ``ost`` for ``share`` of a flow."""
        spec = server.spec
        _, s_dir = _dirs(cost.op)
        path: list[tuple[Resource, float]] = [
            (r, share / spec.nic.ports) for r in server.nic[s_dir]
        ]
        if cost.cpu_s > 0:
            path.append((server.cpu, share * cost.cpu_s))
        path.extend(self.ost_path(ost, cost, share))
        return path

    def ost_path(
        self, ost: OstNode, cost: OpCost, share: float = 1.0
    ) -> list[tuple[Resource, float]]:
        """Flow path (resource, weight) through the target's RAID engine, drives and links."""
        n = ost.n_drives
        path: list[tuple[Resource, float]] = []
        if cost.raid_s > 0 and ost.raid is not None:
            path.append((ost.raid, share * cost.raid_s))
        for i in range(n):
            if cost.drive_cmd_s > 0:
                path.append((ost.cmd[i], share * cost.drive_cmd_s / n))
            if cost.drive_xfer_s > 0:  # an HDD's transfer is part of its command time
                path.append((ost.xfer[i], share * cost.drive_xfer_s / n))
            if cost.pcie_up_B > 0 and ost.link_up:
                path.append((ost.link_up[i], share * cost.pcie_up_B / cost.size_B / n))
            if cost.pcie_down_B > 0 and ost.link_down:
                path.append((ost.link_down[i], share * cost.pcie_down_B / cost.size_B / n))
        return path

    # ................................................................ phases
    def run_phase(self, phase: Any) -> PhaseResult:
        """Run an ``ior``, ``obdfilter-survey`` or ``lnet-selftest`` phase.

        ``obdfilter-survey`` and ``lnet-selftest`` always run in flow fidelity.
        """
        if isinstance(phase, IorPhase):
            result = self.ior.run(phase)
        elif isinstance(phase, ObdfilterPhase):
            result = self._run_obdfilter(phase)
        elif isinstance(phase, LnetSelftestPhase):
            result = self._run_lnet(phase)
        else:
            raise TypeError(f"unsupported phase {phase!r}")
        self._account_wear()
        return result

    def _account_wear(self) -> None:
        """Add the bytes flows wrote to each drive (its PCIe down-link) to its wear state.

        Request fidelity records each write as it happens; flows are accounted here,
        once per phase, from the links' byte counters.
        """
        for server in self.servers.values():
            for ost in server.osts:
                for state, link in zip(ost.states, ost.link_down, strict=False):
                    total = self.sim.flows.bytes_moved(link)
                    state.record_write(total - state.flow_bytes_B)
                    state.flow_bytes_B = total

    def ost_peak_Bps(self, op: OpKind, targets: int = 1) -> float:
        """Nominal bandwidth (bytes/s) of ``targets`` OSTs (``ServerSpec.target_peak_Bps``)."""
        return targets * self.model.oss.target_peak_Bps(op)

    def ost_peak_iops(self, op: OpKind, targets: int = 1, size_B: float = 4096.0) -> float:
        """Nominal operations/s of ``targets`` OSTs (see :meth:`ServerSpec.target_peak_iops`)."""
        return targets * self.model.oss.target_peak_iops(op, size_B)

    def _run_obdfilter(self, phase: ObdfilterPhase) -> PhaseResult:
        sim = self.sim
        _, ost = self.ost(phase.ost)
        cost = self.op_cost(ost, phase.operation, phase.record_size, sequential=True)
        records = max(1, int(phase.size // phase.record_size))
        threads = min(phase.threads, records)
        per_thread = records / threads * phase.record_size
        # obdfilter drives the OSD directly: no client, network or RPC handling.
        path = self.ost_path(ost, cost)
        drive_latency = cost.latency_s - cost.fixed_delay_s - cost.cpu_s - cost.nic_s
        cap = phase.record_size / max(drive_latency, 1e-9)
        start = sim.now
        flows = [
            sim.flows.start_flow(
                per_thread,
                path,
                rate_cap_Bps=cap,
                op_size_B=phase.record_size,
                name=f"{phase.name}.t{i}",
            )
            for i in range(threads)
        ]
        sim.run(sim.env.all_of([f.done for f in flows]))
        elapsed = sim.now - start
        total = per_thread * threads
        bw = total / elapsed
        peak = self.ost_peak_Bps(phase.operation)
        return PhaseResult(
            name=phase.name,
            operation=phase.operation,
            bandwidth_Bps=bw,
            iops=bw / phase.record_size,
            ranks=threads,
            transfer_size_B=phase.record_size,
            sim_time_s=elapsed,
            bytes_B=total,
            extra={"efficiency": bw / peak, "peak_Bps": peak, "ost": phase.ost},
        )

    def _run_lnet(self, phase: LnetSelftestPhase) -> PhaseResult:
        sim = self.sim
        net = self.model.network
        sink = self.server(phase.sink)
        n_oss = self.model.oss.count
        others = [i for i in range(n_oss) if i != phase.sink][: phase.sources]
        if len(others) < phase.sources:
            raise ValueError(f"phase {phase.name!r}: needs {phase.sources} other OSSes")
        # write: sources send into the sink; read: the sink sends to the sources.
        sink_dir: Direction = "ingress" if phase.operation == "write" else "egress"
        src_dir: Direction = "egress" if phase.operation == "write" else "ingress"
        nic = self.model.oss.nic
        rtt = 2.0 * (net.hop_latency + 2 * nic.latency) + 2 * phase.size / nic.port_Bps(src_dir)
        cap = phase.concurrency * phase.size / rtt
        flows: list[Flow] = []
        start = sim.now
        huge = 1e18
        for k, src_index in enumerate(others):
            src = self.server(src_index)
            path: list[tuple[Resource, float]] = [(r, 1.0 / nic.ports) for r in src.nic[src_dir]]
            path += [(r, 1.0 / nic.ports) for r in sink.nic[sink_dir]]
            if phase.cross_group:
                path.append(
                    (self.fabric_link(f"io-io.{sink_dir}", sink.group, net.io_to_io_links), 1.0)
                )
            flows.append(
                sim.flows.start_flow(
                    huge, path, rate_cap_Bps=cap, op_size_B=phase.size, name=f"{phase.name}.s{k}"
                )
            )
        sim.run(sim.now + phase.duration)
        total = sum(sim.flows.cancel_flow(f) for f in flows)
        bw = total / (sim.now - start)
        line = nic.line_rate_Bps()
        ssd = self.ost_peak_Bps(phase.operation) * self.model.oss.targets_per_server
        return PhaseResult(
            name=phase.name,
            operation=phase.operation,
            bandwidth_Bps=bw,
            iops=bw / phase.size,
            ranks=phase.sources,
            transfer_size_B=phase.size,
            sim_time_s=sim.now - start,
            bytes_B=total,
            extra={
                "efficiency": bw / line,
                "line_rate_Bps": line,
                "lnet_over_ssd_peak": bw / ssd,
                "sink": phase.sink,
            },
        )

    # ............................................................ IOR protocol
    def _targets(self, phase: IorPhase, rank: int) -> list[int]:
        lc = self.model.client.lustre
        count = phase.layout.stripe_count or lc.stripe_count
        count = min(count, self.n_osts)
        if phase.layout.first_target is not None:
            first = phase.layout.first_target
        else:
            file_index = phase.file_of(rank) if phase.file_per_process else 0
            first = (file_index * count) % self.n_osts
        return [(first + k) % self.n_osts for k in range(count)]

    def ior_prepare(self, phase: IorPhase, repetition: int) -> None:
        """Build the clients and targets the phase touches.

        The OSS keeps no object data in DRAM unless ``read_cache`` is set, and
        client caches hold no data a later read can hit (``drop_caches`` and
        ``-C`` as the seed ran them), so nothing else needs resetting.
        """
        for node in range(phase.nodes):
            self.client(node)
        for r in range(phase.ranks):
            for t in self._targets(phase, r):
                self.ost(t)

    def ior_streams(self, phase: IorPhase) -> list[RankStream]:
        """Per-rank flow paths and caps; also prepares request-fidelity contexts."""
        lc = self.model.client.lustre
        op: OpKind = phase.operation
        sequential = phase.access == "sequential"
        write = op == "write"
        t = phase.transfer_size
        op_B = lc.server_op_B(t, sequential, phase.direct_io, write)
        per_rpc = lc.ops_per_rpc(t, sequential, phase.direct_io, write)
        rank_q = lc.rank_concurrency(t, sequential, phase.direct_io, write)
        slots = lc.rpcs_in_flight * per_rpc
        c_dir, _ = _dirs(op)
        cnic = self.model.client.nic
        streams: list[RankStream] = []
        self._ranks = []
        costs: dict[int, OpCost] = {}
        stripes: dict[tuple[int, ...], tuple[list[tuple[Resource | Segment, float]], float]] = {}
        oscs: dict[tuple[int, tuple[int, ...]], list[tuple[Resource | Segment, float]]] = {}
        op_key = (op, op_B, sequential, per_rpc)
        for r in range(phase.ranks):
            node_index = phase.node_of(r)
            node = self.client(node_index)
            targets = tuple(self._targets(phase, r))
            if targets not in stripes:
                stripes[targets] = self._stripe_path(targets, op_key, costs)
            server_side, latency = stripes[targets]
            if (node_index, targets) not in oscs:
                oscs[node_index, targets] = self._osc_path(node, targets, slots, op_B, costs)
            path: list[tuple[Resource | Segment, float]] = [
                (res, 1.0 / cnic.ports) for res in node.nic[c_dir]
            ]
            path.extend(server_side)
            path.extend(oscs[node_index, targets])
            conc = min(rank_q, MAX_REQUEST_CONCURRENCY)
            gated = phase.ranks_per_node * conc > slots
            self._ranks.append(
                RankContext(node=node, targets=list(targets), cost=costs[targets[0]], gated=gated)
            )
            streams.append(
                RankStream(
                    path=tuple(path),
                    op_size_B=op_B,
                    rate_cap_Bps=rank_q * op_B / latency,
                    concurrency=conc,
                    write_behind_B=lc.write_behind_B(phase.direct_io, phase.ranks_per_node)
                    if write
                    else 0.0,
                )
            )
        return streams

    def _stripe_path(
        self,
        targets: tuple[int, ...],
        op_key: tuple[OpKind, float, bool, int],
        costs: dict[int, OpCost],
    ) -> tuple[list[tuple[Resource | Segment, float]], float]:
        """Server side of a file striped over ``targets``, and its slowest round trip (s).

        Each target takes 1/S of the bytes.  A stripe set wider than one target
        is stored once as a shared segment, so a rank using it costs one entry
        whatever S is (DESIGN §2; ranks + targets, not ranks x targets).
        """
        op, op_B, sequential, per_rpc = op_key
        _, s_dir = _dirs(op)
        share = 1.0 / len(targets)
        entries: list[tuple[Resource, float]] = []
        latency = 0.0
        for tgt in targets:
            server, ost = self.ost(tgt)
            if tgt not in costs:
                costs[tgt] = self.op_cost(ost, op, op_B, sequential, per_rpc)
            cost = costs[tgt]
            latency = max(latency, cost.latency_s)
            entries.extend(self.server_path(server, ost, cost, share))
            link = self.fabric_link(
                f"c-io.{s_dir}", server.group, self.model.network.compute_to_io_links
            )
            entries.append((link, share))
        if len(targets) == 1 or not self.share_stripe_sets:
            return list(entries), latency
        key = (targets, *op_key)
        segment = self._stripe_segments.get(key)
        if segment is None:
            name = f"{self.model.name}.stripe{len(self._stripe_segments)}.{op}"
            segment = self.sim.flows.add_segment(name, entries)
            self._stripe_segments[key] = segment
        return [(segment, 1.0)], latency

    def _osc_path(
        self,
        node: ClientNode,
        targets: tuple[int, ...],
        rpc_slots: int,
        op_B: float,
        costs: dict[int, OpCost],
    ) -> list[tuple[Resource | Segment, float]]:
        """The client's OSC windows for ``targets``: ``rpc_slots`` operations of
        ``op_B`` bytes in flight per round trip (s) of each target's cost."""
        share = 1.0 / len(targets)
        for tgt in targets:
            window = rpc_slots * op_B / costs[tgt].latency_s
            if tgt not in node.osc:
                node.osc[tgt] = self.sim.flows.add_resource(f"{node.name}.osc{tgt}", window)
            else:
                self.sim.flows.set_capacity(node.osc[tgt], capacity_Bps=window)
            if tgt not in node.slots:
                node.slots[tgt] = simpy.Resource(self.sim.env, capacity=rpc_slots)
        entries = [(node.osc[tgt], share) for tgt in targets]
        if len(targets) == 1 or not self.share_stripe_sets:
            return list(entries)
        key = (node.name, targets)
        segment = self._osc_segments.get(key)
        if segment is None:
            name = f"{node.name}.oscs{len(self._osc_segments)}"
            segment = self.sim.flows.add_segment(name, entries)
            self._osc_segments[key] = segment
        return [(segment, 1.0)]

    def ior_request(
        self, phase: IorPhase, rank: int, stream: RankStream
    ) -> Generator[simpy.Event, Any, None]:
        """One server operation through the queues, from the rank's call to its completion."""
        ctx = self._ranks[rank]
        env = self.sim.env
        k = next(ctx.counter)
        tgt = ctx.targets[k % len(ctx.targets)]
        server, ost = self.ost(tgt)
        cost = ctx.cost
        slot = ctx.node.slots[tgt] if ctx.gated else None
        req = slot.request() if slot is not None else None
        if req is not None:
            yield req
        try:
            yield env.timeout(cost.fixed_delay_s)
            c_dir, s_dir = _dirs(cost.op)
            cports = ctx.node.q_nic[c_dir]
            cq = cports[next(ctx.node.port_rr) % len(cports)]
            yield cq.visit(cost.size_B / self.model.client.nic.port_Bps(c_dir))
            sports = server.q_nic[s_dir]
            sq = sports[next(server.port_rr) % len(sports)]
            yield sq.visit(cost.size_B / server.spec.nic.port_Bps(s_dir))
            if cost.cpu_s > 0:
                yield server.q_cpu.visit(cost.cpu_s)
            if cost.raid_s > 0 and ost.q_raid is not None:
                yield ost.q_raid.visit(cost.raid_s)
            yield from self._drive_stages(ost, cost)
        finally:
            if slot is not None and req is not None:
                slot.release(req)

    def _pick(self, ost: OstNode, count: int) -> list[int]:
        """``count`` distinct drives chosen uniformly (drawn in blocks from the OST's stream)."""
        out: list[int] = []
        while len(out) < count:
            if not ost.picks:
                assert ost.rng is not None
                ost.picks = ost.rng.integers(0, ost.n_drives, 8192).tolist()
            d = ost.picks.pop()
            if d not in out:
                out.append(d)
        return out

    def _drive_stages(self, ost: OstNode, cost: OpCost) -> Generator[simpy.Event, Any, None]:
        env = self.sim.env
        drive = ost.drive
        eff = ost.stack_eff[cost.op]
        for stage in cost.stages:
            if stage.spread:
                per = stage.count / ost.n_drives
                drives = list(range(ost.n_drives))
            else:
                per = 1.0
                drives = self._pick(ost, min(round(stage.count), ost.n_drives))
            cmd_s = per * drive.cmd_s(stage.op, stage.size_B)
            xfer_s = per * drive.xfer_s(stage.op, stage.size_B) / eff
            events: list[simpy.Event] = []
            for d in drives:
                factor = ost.variability.next() if ost.variability is not None else 1.0
                events.append(ost.q_cmd[d].visit(cmd_s * factor))
                events.append(ost.q_xfer[d].visit(xfer_s))
                if stage.op == "write":
                    ost.states[d].record_write(per * stage.size_B)
            if len(events) == 2:
                # Both visits start now; wait for the later one.
                yield events[0]
                if not events[1].triggered:
                    yield events[1]
            else:
                yield env.all_of(events)

    def ior_peaks(self, phase: IorPhase) -> dict[str, float]:
        """Datasheet peaks of the OSTs the phase uses (the seed's efficiency denominators)."""
        targets = {t for r in range(phase.ranks) for t in self._targets(phase, r)}
        n = len(targets)
        return {
            "bandwidth_Bps": self.ost_peak_Bps(phase.operation, n),
            "iops": self.ost_peak_iops(phase.operation, n, phase.transfer_size),
        }


# -------------------------------------------------------------------- kind
class LustreKind(SystemKind):
    """The ``lustre`` system kind."""

    kind = "lustre"
    model_type = LustreModel
    phase_type = LustrePhase
    built_type = Lustre

    def check(self, model: LustreModel) -> None:
        """Cross-field checks; raise ``ValueError("dotted.key: message")``."""
        check_model(model)

    def check_phase(self, model: LustreModel, phase: Any) -> None:
        """Indices in the model, stripes within the OSTs, size estimate (lustre_describe)."""
        check_phase(model, phase)

    def describe(self, model: LustreModel) -> Description:
        """Per-layer peaks of one OSS and of the system, and the bottlenecks."""
        return describe_model(model)
