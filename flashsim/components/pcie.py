"""PCIe links: generation x lanes, bandwidth per direction.

Per-lane signalling rates and line encodings are those of the PCI Express Base
Specifications: Gen1 2.5 GT/s and Gen2 5 GT/s with 8b/10b, Gen3 8 GT/s, Gen4
16 GT/s and Gen5 32 GT/s with 128b/130b.  A link is full duplex: each
direction has the whole bandwidth.

Protocol overhead.  Data crosses a link in transaction-layer packets (TLPs):
each carries at most the maximum payload size (MPS) of data behind 20 bytes of
framing, sequence number, a 3-doubleword header and LCRC.  With the 256-byte
MPS of server platforms, at most 256 / (256 + 20) = 92.8 % of the encoded rate
is data: Intel, AN 456 "PCI Express High Performance Reference Design",
§1.1.2 "Throughput for Posted Writes" (a 256-byte payload behind a 3-DW
header, five doublewords of overhead in all: 256 / (256 + 20), about 92 %);
the same accounting as Xilinx WP350, "Understanding Performance of PCI
Express Systems".  The link-layer packets
(ACKs, flow-control updates) of a one-way stream travel the other way and are
not charged.  A drive datasheet measured through such a link agrees: the
PM1733's 3.5 GB/s read on Gen3 x4 (seed 000 §IV-A, footnote 1) is 88.9 % of
the encoded 3.94 GB/s, within the 92.8 %.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import Field, model_validator

from flashsim.config import StrictModel, UnitFraction, field_error

#: generation -> (transfer rate per lane in transfers/s, encoding efficiency).
PCIE_GENERATIONS: dict[int, tuple[float, float]] = {
    1: (2.5e9, 8 / 10),
    2: (5.0e9, 8 / 10),
    3: (8.0e9, 128 / 130),
    4: (16.0e9, 128 / 130),
    5: (32.0e9, 128 / 130),
}

#: Data fraction of the encoded rate: a 256-byte max payload behind 20 bytes of TLP overhead
#: (Intel AN 456 §1.1.2; Xilinx WP350); see the module docstring.
PCIE_PROTOCOL_EFFICIENCY = 256 / (256 + 20)


class PcieLink(StrictModel):
    """A PCIe link of ``lanes`` lanes of generation ``generation``.

    Attributes
    ----------
    generation : int
        PCIe generation, 1..5.
    lanes : int
        Lane count (x1, x2, x4, x8, x16).
    protocol_efficiency : float
        Fraction (0, 1] of the encoded rate that carries data (TLP framing,
        headers and LCRC take the rest): 256 / 276 = 0.928 for the 256-byte
        max payload of server platforms; 128 / 148 = 0.865 for a 128-byte one.
    """

    generation: Annotated[int, Field(ge=1, le=5)]
    lanes: Annotated[int, Field(ge=1, le=32)]
    protocol_efficiency: UnitFraction = Field(
        default=PCIE_PROTOCOL_EFFICIENCY,
        description="Fraction of the encoded rate that carries data after TLP framing, header "
        "and LCRC: 256/(256+20) = 0.928 for a 256-byte max payload (Intel AN 456 §1.1.2, "
        "Xilinx WP350); 128/148 = 0.865 for 128 bytes.",
    )

    @model_validator(mode="after")
    def _some_data(self) -> PcieLink:
        """A link that carries no data is a typo, not a model."""
        if self.protocol_efficiency <= 0:
            raise field_error(
                "protocol_efficiency", "a link carrying no data; expected a fraction in (0, 1]"
            )
        return self

    @property
    def line_Bps(self) -> float:
        """Bytes/s in each direction after line encoding, before protocol overhead."""
        rate, encoding = PCIE_GENERATIONS[self.generation]
        return self.lanes * rate * encoding / 8.0

    @property
    def bandwidth_Bps(self) -> float:
        """Usable bandwidth in bytes/s in each direction (after encoding and TLP overhead)."""
        return self.line_Bps * self.protocol_efficiency

    def service_s(self, size_B: float) -> float:
        """Time (s) the link is busy moving ``size_B`` bytes in one direction."""
        return size_B / self.bandwidth_Bps


def link_Bps(link: PcieLink | None) -> float:
    """Bytes/s of one direction of a drive's host ``link``; ``inf`` when there is none.

    ``None`` is a link not modelled (a drive behind a SAS fabric, a tier
    without ``drive_link``): it never binds.
    """
    return link.bandwidth_Bps if link is not None else math.inf
