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

from flashsim.components.nic import Direction, NicPorts, NicSpec
from flashsim.components.raid_target import RaidTarget, TargetCost, build_target
from flashsim.engine.flows import Resource
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation
from flashsim.systems.lustre_model import ServerSpec

OpKind = Literal["read", "write"]


@dataclass(frozen=True)
class OpCost:
    """What one server operation of ``size_B`` bytes costs, target and server together.

    ``cpu_s`` is the RPC handling per operation; ``target`` the RAID engine,
    drives and links; ``latency_s`` the zero-load round trip (s), of which
    ``fixed_delay_s`` holds no server and ``nic_s`` is the two NICs' time.
    """

    op: OpKind
    size_B: float
    cpu_s: float
    target: TargetCost
    latency_s: float
    fixed_delay_s: float
    nic_s: float

    @property
    def raid_s(self) -> float:
        """RAID-engine time (s) of the operation."""
        return self.target.raid_s


#: A Lustre object storage target is a RAID target.
OstNode = RaidTarget


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
    """One target of ``spec``: its drives behind a RAID engine (a :class:`RaidTarget`)."""
    return build_target(
        sim,
        name,
        spec.drive,
        spec.drives_per_target,
        spec.raid,
        spec.raid_threads,
        {
            "read": spec.stack_read_efficiency * factor,
            "write": spec.stack_write_efficiency * factor,
        },
        sub_stripe_write_s=spec.sub_stripe_write_cost,
        drive_link=spec.drive_link,
    )


def build_client(sim: Simulation, name: str, nic_spec: NicSpec) -> ClientNode:
    """A compute node named ``name`` with its NIC ports."""
    return ClientNode(name=name, nic=NicPorts(sim, name, nic_spec))
