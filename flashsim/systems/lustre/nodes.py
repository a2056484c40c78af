"""The parts of a Lustre system: targets, servers, clients and what one operation costs.

Each node is built on first use (a full Perlmutter has 274 servers and
thousands of clients; a one-OST test builds one of each), with its flow
resources and request-fidelity queues side by side under one dotted name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import simpy

from flashsim.components.nic import Direction, NicPorts, NicSpec
from flashsim.components.raid_controller import Controller
from flashsim.components.target import StorageTarget, TargetCost, TargetSpec
from flashsim.components.variability import component_factor
from flashsim.engine.flows import Resource
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation
from flashsim.systems.lustre.model import ServerSpec

OpKind = Literal["read", "write"]


@dataclass(frozen=True)
class OpCost:
    """What one server operation of ``size_B`` bytes costs, target and server together.

    ``cpu_s`` is the RPC handling per operation; ``target`` the RAID engine,
    drives and links; ``latency_s`` the zero-load round trip (s), of which
    ``fixed_delay_s`` holds no server and ``nic_s`` is the two NICs' time;
    ``wire_s`` is one wire round trip between client and server (s).
    """

    op: OpKind
    size_B: float
    cpu_s: float
    target: TargetCost
    latency_s: float
    fixed_delay_s: float
    nic_s: float
    wire_s: float = 0.0

    @property
    def raid_s(self) -> float:
        """RAID-engine time (s) of the operation."""
        return self.target.raid_s


#: A Lustre object storage target is any target component the model file chooses
#: (a RAID array, behind the server's engine or an external controller; an SCM->QLC tier).
OstNode = StorageTarget


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


def build_server(
    sim: Simulation,
    name: str,
    index: int,
    spec: ServerSpec,
    targets: TargetSpec,
    front: Controller | None = None,
) -> ServerNode:
    """OSS ``index`` named ``name``: NIC ports, CPU, and its targets (built by ``targets``).

    Each server, target and drive draws its factors (median 1) from its own
    seeded streams (:func:`~flashsim.components.variability.component_factor`,
    ``spec.variability``; the spreads of seed 000 Figs 4 and 5), so both
    fidelities see the same fleet.  ``front`` is the external controller the
    server's targets sit behind (``None``: the server's own RAID engine).
    """
    flows = sim.flows
    env = sim.env
    nic = NicPorts(sim, name, server_nic(sim, name, spec))
    cpu = flows.add_resource(f"{name}.cpu", capacity_ops=float(spec.cpu.cores))
    q_cpu = FifoQueue(env, f"{name}.cpu", spec.cpu.cores)
    osts = [
        targets.build(sim, f"{name}.ost{t}", spec.variability, front)
        for t in range(spec.targets_per_server)
    ]
    return ServerNode(name=name, index=index, spec=spec, nic=nic, cpu=cpu, q_cpu=q_cpu, osts=osts)


def server_nic(sim: Simulation, name: str, spec: ServerSpec) -> NicSpec:
    """Server ``name``'s adapters, with its drawn ingress/egress efficiency factors."""
    nic = spec.nic
    update = {
        f"{d}_efficiency": nic.efficiency(d)
        * component_factor(sim, name, spec.variability, f"nic_{d}", 1.0 / nic.efficiency(d))
        for d in ("ingress", "egress")
    }
    return nic.model_copy(update=update)


def build_client(sim: Simulation, name: str, nic_spec: NicSpec) -> ClientNode:
    """A compute node named ``name`` with its NIC ports."""
    return ClientNode(name=name, nic=NicPorts(sim, name, nic_spec))
