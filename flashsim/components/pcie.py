"""PCIe links: generation x lanes, bandwidth per direction.

Per-lane signalling rates and line encodings are those of the PCI Express Base
Specifications: Gen1 2.5 GT/s and Gen2 5 GT/s with 8b/10b, Gen3 8 GT/s, Gen4
16 GT/s and Gen5 32 GT/s with 128b/130b.  A link is full duplex: each
direction has the whole bandwidth.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from flashsim.config import StrictModel

#: generation -> (transfer rate per lane in transfers/s, encoding efficiency).
PCIE_GENERATIONS: dict[int, tuple[float, float]] = {
    1: (2.5e9, 8 / 10),
    2: (5.0e9, 8 / 10),
    3: (8.0e9, 128 / 130),
    4: (16.0e9, 128 / 130),
    5: (32.0e9, 128 / 130),
}


class PcieLink(StrictModel):
    """A PCIe link of ``lanes`` lanes of generation ``generation``.

    Attributes
    ----------
    generation : int
        PCIe generation, 1..5.
    lanes : int
        Lane count (x1, x2, x4, x8, x16).
    """

    generation: Annotated[int, Field(ge=1, le=5)]
    lanes: Annotated[int, Field(ge=1, le=32)]

    @property
    def bandwidth_Bps(self) -> float:
        """Usable bandwidth in bytes/s in each direction (after line encoding)."""
        rate, encoding = PCIE_GENERATIONS[self.generation]
        return self.lanes * rate * encoding / 8.0

    def service_s(self, size_B: float) -> float:
        """Time (s) the link is busy moving ``size_B`` bytes in one direction."""
        return size_B / self.bandwidth_Bps
