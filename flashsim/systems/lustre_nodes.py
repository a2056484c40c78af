"""The parts of a Lustre system: targets, servers, clients and what one operation costs.

Each node is built on first use (a full Perlmutter has 274 servers and
thousands of clients; a one-OST test builds one of each), with its flow
resources and request-fidelity queues side by side under one dotted name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import simpy

from flashsim.components.drive import Drive
from flashsim.components.nic import Direction, NicPorts, NicSpec
from flashsim.components.ssd import SsdState
from flashsim.engine.distributions import SampleBuffer, with_mean_and_cv
from flashsim.engine.flows import Resource
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation
from flashsim.systems.lustre_model import ServerSpec

OpKind = Literal["read", "write"]


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

    Busy times (s) are per operation; drive times are totals over all drives.
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

    def pick(self, count: int) -> list[int]:
        """``count`` distinct drives chosen uniformly (drawn in blocks from the OST's stream)."""
        out: list[int] = []
        while len(out) < count:
            if not self.picks:
                assert self.rng is not None
                self.picks = self.rng.integers(0, self.n_drives, 8192).tolist()
            d = self.picks.pop()
            if d not in out:
                out.append(d)
        return out


@dataclass
class ServerNode:
    """One OSS: NIC ports, CPU and its targets."""

    name: str
    index: int
    spec: ServerSpec
    nic: NicPorts
    cpu: Resource
    q_cpu: FifoQueue
    osts: list[OstNode]


@dataclass
class ClientNode:
    """One compute node: NIC ports, per-OST RPC windows."""

    name: str
    nic: NicPorts
    osc: dict[int, Resource] = field(default_factory=dict)
    slots: dict[int, simpy.Resource] = field(default_factory=dict)


def data_directions(op: OpKind) -> tuple[Direction, Direction]:
    """(client NIC direction, server NIC direction) of the data of ``op``."""
    return ("egress", "ingress") if op == "write" else ("ingress", "egress")


def build_server(sim: Simulation, name: str, index: int, spec: ServerSpec) -> ServerNode:
    """OSS ``index`` named ``name``: NIC ports, CPU, and its targets' RAID engines and drives.

    Each server draws a factor on its stack efficiency from
    ``{name}.variability`` (the per-OSS spread of Fig. 4 of seed 000): normal
    around the calibrated median, clipped so no server beats its drives'
    datasheet rate.
    """
    flows = sim.flows
    env = sim.env
    nic = NicPorts(sim, name, spec.nic)
    cpu = flows.add_resource(f"{name}.cpu", capacity_ops=float(spec.cpu.cores))
    q_cpu = FifoQueue(env, f"{name}.cpu", spec.cpu.cores)
    rng = sim.rng(f"{name}.variability")
    factor = 1.0
    if spec.efficiency_spread > 0:
        top = 1.0 / max(spec.stack_read_efficiency, spec.stack_write_efficiency)
        factor = float(np.clip(1.0 + spec.efficiency_spread * rng.normal(), 0.5, top))
    osts = [_build_ost(sim, f"{name}.ost{t}", spec, factor) for t in range(spec.targets_per_server)]
    return ServerNode(name=name, index=index, spec=spec, nic=nic, cpu=cpu, q_cpu=q_cpu, osts=osts)


def _build_ost(sim: Simulation, name: str, spec: ServerSpec, factor: float) -> OstNode:
    """One target: per drive a command stage, a data stage and PCIe links; a RAID engine."""
    flows = sim.flows
    env = sim.env
    drive: Drive = spec.drive
    ost = OstNode(
        name=name,
        drive=drive,
        n_drives=spec.drives_per_target,
        stack_eff={
            "read": spec.stack_read_efficiency * factor,
            "write": spec.stack_write_efficiency * factor,
        },
        states=[SsdState(drive.capacity) for _ in range(spec.drives_per_target)],
        rng=sim.rng(f"{name}.placement"),
    )
    if drive.service_cv > 0:
        # Unit-mean factor on drive command times (request fidelity tails).
        ost.variability = SampleBuffer(
            with_mean_and_cv("gamma", 1.0, drive.service_cv), sim.rng(f"{name}.service")
        )
    link_Bps = spec.drive_link.bandwidth_Bps if spec.drive_link is not None else None
    for i in range(spec.drives_per_target):
        dn = f"{name}.drive{i}"
        ost.cmd.append(flows.add_resource(f"{dn}.cmd", capacity_ops=float(drive.servers)))
        ost.xfer.append(flows.add_resource(f"{dn}.data", capacity_ops=1.0))
        if link_Bps is not None:
            ost.link_up.append(flows.add_resource(f"{dn}.pcie.up", link_Bps))
            ost.link_down.append(flows.add_resource(f"{dn}.pcie.down", link_Bps))
        ost.q_cmd.append(FifoQueue(env, f"{dn}.cmd", drive.servers))
        ost.q_xfer.append(FifoQueue(env, f"{dn}.data", 1))
    ost.raid = flows.add_resource(f"{name}.raid", capacity_ops=float(spec.raid_threads))
    ost.q_raid = FifoQueue(env, f"{name}.raid", spec.raid_threads)
    return ost


def build_client(sim: Simulation, name: str, nic_spec: NicSpec) -> ClientNode:
    """A compute node named ``name`` with its NIC ports."""
    return ClientNode(name=name, nic=NicPorts(sim, name, nic_spec))
