"""Network adapters: ports, multi-rail striping and per-direction efficiency.

A node with ``ports`` ports of ``port_bandwidth`` stripes its traffic over
all of them (Lustre multi-rail), so each port carries ``1/ports`` of it.
``ingress_efficiency`` and ``egress_efficiency`` are the fractions of the line
rate the NIC and the network stack (e.g. LNet) deliver in each direction.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from flashsim.components.pcie import PcieLink
from flashsim.config import Bandwidth, NonNegativeSeconds, StrictModel, UnitFraction

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
    ingress_efficiency: UnitFraction = 1.0
    egress_efficiency: UnitFraction = 1.0
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
