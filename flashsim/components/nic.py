"""Network adapters: ports, multi-rail striping and per-direction efficiency.

A node with ``ports`` ports of ``port_bandwidth`` stripes its traffic over
all of them (Lustre multi-rail), so each port carries ``1/ports`` of it.
``ingress_efficiency`` and ``egress_efficiency`` are the fractions of the line
rate the NIC and the network stack (e.g. LNet) deliver in each direction.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Literal

import simpy
from pydantic import Field

from flashsim.components.pcie import PcieLink
from flashsim.config import (
    Bandwidth,
    NonNegativeSeconds,
    StrictModel,
    UnitFraction,
    calibratable,
)
from flashsim.engine.flows import Resource
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation

Direction = Literal["ingress", "egress"]


class NicSpec(StrictModel):
    """A node's network adapters.

    Attributes
    ----------
    ports : int
        Ports (rails) used together, >= 1.
    port_bandwidth : float
        Line rate of one port in bytes/s per direction.
    ingress_efficiency, egress_efficiency : float
        Fraction of the line rate delivered into / out of the node (0..1].
    latency : float
        One-way latency (s) through the adapter.
    pcie : PcieLink or None
        The host link of one adapter (one adapter per port).
    """

    ports: Annotated[int, Field(ge=1)]
    port_bandwidth: Bandwidth
    ingress_efficiency: UnitFraction = Field(
        1.0,
        json_schema_extra=calibratable(
            0.3,
            1.0,
            "",
            ["lnet-selftest"],
            "an LNet Self-Test write (into the OSS) measurement",
            "Perlmutter scratch",
            where=["oss.nic"],
        ),
    )
    egress_efficiency: UnitFraction = Field(
        1.0,
        json_schema_extra=calibratable(
            0.3,
            1.0,
            "",
            ["lnet-selftest"],
            "an LNet Self-Test read (out of the OSS) measurement",
            "Perlmutter scratch",
            where=["oss.nic"],
        ),
    )
    latency: NonNegativeSeconds = "0 s"
    pcie: PcieLink | None = None

    def efficiency(self, direction: Direction) -> float:
        """Efficiency (fraction) in ``direction``."""
        return self.ingress_efficiency if direction == "ingress" else self.egress_efficiency

    def port_Bps(self, direction: Direction) -> float:
        """Deliverable bytes/s of one port in ``direction``."""
        return float(self.port_bandwidth * self.efficiency(direction))

    def node_Bps(self, direction: Direction) -> float:
        """Deliverable bytes/s of all ports together in ``direction``."""
        return self.ports * self.port_Bps(direction)

    def line_rate_Bps(self) -> float:
        """Nominal bytes/s of all ports (per direction, before efficiency)."""
        return float(self.ports * self.port_bandwidth)

    def service_s(self, size_B: float, direction: Direction) -> float:
        """Time (s) one port is busy with ``size_B`` bytes (all of it on that port)."""
        return size_B / self.port_Bps(direction)

    @property
    def pcie_lanes(self) -> int:
        """Host PCIe lanes used by all adapters."""
        return self.ports * self.pcie.lanes if self.pcie is not None else 0


class NicPorts:
    """A node's NIC ports in both fidelities: a flow resource and a queue per port and direction.

    Traffic is striped over the ports (multi-rail): a flow crosses every port
    with weight ``share / ports``; a request takes one port, in turn.  A
    node with two adapter sets (a VAST CNode: client ports and NVMe-fabric
    ports) names them apart with ``label``.

    Parameters
    ----------
    sim : Simulation
        The simulation the ports live in.
    name : str
        Dotted name of the node (ports are ``{name}.{label}{p}.{direction}``).
    spec : NicSpec
        The adapters.
    label : str
        Name of the node's port set, ``"nic"`` unless the node has several
        (``vast-pdsw21.cnode2.fabric_nic3.egress``).
    """

    def __init__(self, sim: Simulation, name: str, spec: NicSpec, label: str = "nic") -> None:
        self.name = name
        self.spec = spec
        directions: tuple[Direction, Direction] = ("ingress", "egress")
        self.flow: dict[Direction, list[Resource]] = {
            d: [
                sim.flows.add_resource(f"{name}.{label}{p}.{d}", spec.port_Bps(d))
                for p in range(spec.ports)
            ]
            for d in directions
        }
        self.queues: dict[Direction, list[FifoQueue]] = {
            d: [FifoQueue(sim.env, f"{name}.{label}{p}.{d}") for p in range(spec.ports)]
            for d in directions
        }
        self._turn = itertools.count()

    def path(self, direction: Direction, share: float = 1.0) -> list[tuple[Resource, float]]:
        """Flow path of ``share`` of a transfer through the ports in ``direction``."""
        return [(r, share / self.spec.ports) for r in self.flow[direction]]

    def service_s(self, direction: Direction, size_B: float) -> float:
        """Request fidelity: seconds one port is busy with ``size_B`` bytes in ``direction``."""
        return self.spec.service_s(size_B, direction)

    def visit(self, direction: Direction, size_B: float) -> simpy.Event:
        """Request fidelity: ``size_B`` bytes through the next port in ``direction``."""
        ports = self.queues[direction]
        queue = ports[next(self._turn) % len(ports)]
        return queue.visit(self.service_s(direction, size_B))
