"""Server CPUs: cores times a per-operation cost, and the PCIe lanes they offer."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from flashsim.config import StrictModel


class CpuSpec(StrictModel):
    """A server's processor(s).

    Attributes
    ----------
    model : str
        Name, for reports.
    cores : int
        Cores that serve I/O requests in parallel.
    pcie_lanes : int
        PCIe lanes the socket(s) provide.
    pcie_generation : int
        Highest PCIe generation of those lanes.
    """

    model: str = ""
    cores: Annotated[int, Field(ge=1)]
    pcie_lanes: Annotated[int, Field(ge=0)] = 0
    pcie_generation: Annotated[int, Field(ge=1, le=5)] = 4

    def ops_per_s(self, cost_s: float) -> float:
        """Operations/s when every core spends ``cost_s`` seconds per operation."""
        return self.cores / cost_s if cost_s > 0 else float("inf")
