"""The model file of ``kind = "vast"``: CNodes, DNodes, the NVMe fabric, clients and the tier.

Seed 002 Fig. 1 and Appendix A: client nodes mount the system over NFS/RDMA;
stateless CNodes bridge the client network and an NVMe-oF fabric; DNodes
project bare SCM and QLC drives over that fabric.  Both networks are the
shared fabric component (:data:`~flashsim.components.fabric_spec.FabricSpec`):
``[fabric]`` is the NVMe fabric between CNodes and DNodes (VAST's own
switches: ``topology = "switch"``), and the optional ``[client_fabric]`` is
the network between clients and CNodes (unset: clients reach the CNodes
directly over their HCAs; a dragonfly puts clients in the groups of
``client.placement.role`` and CNodes in its ``io`` groups).  Every value is
SI (bytes, seconds, bytes/s) once parsed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from flashsim.components.cpu import CpuSpec
from flashsim.components.drive import DriveField
from flashsim.components.fabric_spec import FabricSpec
from flashsim.components.mds import MetadataSpec
from flashsim.components.nfs import NfsClientSpec
from flashsim.components.nic import NicSpec
from flashsim.components.pcie import PcieLink
from flashsim.components.placement import PlacementSpec
from flashsim.components.ssd import SsdSpec
from flashsim.components.tier import TierSpec
from flashsim.config import Bytes, NonNegativeSeconds, StrictModel, calibratable


class CNodeSpec(StrictModel):
    """The CNodes (protocol and data-path servers).

    Attributes
    ----------
    count : int
        CNodes.
    cpu : CpuSpec
        Processors of one CNode.
    client_nic : NicSpec
        Ports to the client network.
    fabric_nic : NicSpec
        Ports to the NVMe fabric.
    op_latency : float
        Seconds a small RPC spends in the client NFS/RDMA stack and the CNode
        (metadata lookups and transactions in SCM), excluding media and wire.
    metadata : MetadataSpec or None
        Metadata costs of one CNode (mdtest, IO-500); ``None`` if not described.
    """

    count: Annotated[int, Field(ge=1)]
    cpu: CpuSpec
    client_nic: NicSpec
    fabric_nic: NicSpec
    op_latency: NonNegativeSeconds = Field(
        json_schema_extra=calibratable(
            1e-6,
            1e-2,
            "s",
            ["ior", "fio"],
            "a QD1 random 4 KiB read IOPS measurement of a small fresh dataset",
            "VAST test system",
        ),
    )
    metadata: MetadataSpec | None = Field(
        None,
        description=(
            "Service threads and per-operation CNode costs of metadata operations (create, "
            "open, stat, unlink, readdir) on top of op_latency, and the SCM bytes of a "
            "create/unlink (components.mds); mdtest and IO-500 need it."
        ),
    )


class DNodeSpec(StrictModel):
    """The DNodes (drive enclosures on the NVMe fabric).

    Attributes
    ----------
    count : int
        DNodes.
    cpu : CpuSpec or None
        Processors (they do little beyond NVMe-oF target work).
    fabric_nic : NicSpec
        Ports to the NVMe fabric.
    scm_drives, qlc_drives : int
        Drives per DNode.
    scm_drive, qlc_drive : SsdSpec
        Drive datasheets (a path relative to the model file, or a table).
    qlc_read_overhead : float
        Seconds a small read from QLC costs beyond the drive's datasheet
        latency (erasure-coded, compressed chunk reconstruction).
    drive_link : PcieLink or None
        Host PCIe link of every SCM and QLC drive (``None``: not modelled).
    """

    count: Annotated[int, Field(ge=1)]
    cpu: CpuSpec | None = None
    fabric_nic: NicSpec
    scm_drives: Annotated[int, Field(ge=1)]
    qlc_drives: Annotated[int, Field(ge=1)]
    scm_drive: DriveField
    qlc_drive: DriveField
    qlc_read_overhead: NonNegativeSeconds = Field(
        "0 s",
        json_schema_extra=calibratable(
            1e-6,
            1e-2,
            "s",
            ["ior", "fio"],
            "a random 4 KiB read IOPS measurement of a dataset on QLC",
            "VAST test system",
        ),
    )
    drive_link: PcieLink | None = Field(
        None,
        description=(
            "Host PCIe link of every SCM and QLC drive (e.g. {generation = 3, lanes = 4}); "
            "unset: not modelled (the drives' datasheet rates bind)."
        ),
    )


class TurnoverSpec(StrictModel):
    """A what-if for :meth:`VastKind.describe`: a system of another size and write load.

    Attributes
    ----------
    capacity : float
        Usable capacity of the hypothetical system in bytes.
    daily_writes : float
        Bytes written per day.
    """

    capacity: Bytes
    daily_writes: Bytes


class VastClientSpec(NfsClientSpec):
    """The NFS/RDMA client nodes, and where they sit on the client fabric.

    Attributes
    ----------
    placement : PlacementSpec
        Which groups of ``client_fabric`` the client nodes sit in (packed in
        ``compute`` groups by default); unused without a client fabric.
    """

    placement: PlacementSpec = Field(
        default_factory=lambda: PlacementSpec.model_validate({}),
        description="Which client-fabric groups the client nodes sit in (packed by default).",
    )


class VastModel(StrictModel):
    """Model file of ``kind = "vast"``."""

    kind: Literal["vast"]
    name: str = Field(description="System name, for reports.")
    description: str = Field("", description="Free text, for reports.")
    cnode: CNodeSpec
    dnode: DNodeSpec
    fabric: FabricSpec = Field(
        description='The NVMe fabric between CNodes and DNodes (topology = "switch" for VAST).'
    )
    client_fabric: FabricSpec | None = Field(
        None,
        description="The network between clients and CNodes (unset: clients reach the CNodes "
        "directly); on a dragonfly clients sit in `client.placement.role` groups, CNodes in `io`.",
    )
    client: VastClientSpec
    tier: TierSpec
    turnover: TurnoverSpec | None = None


def ssd(spec: Any, key: str) -> SsdSpec:
    """``spec`` as an :class:`SsdSpec`; a VAST drive must be an SSD.

    Raises
    ------
    ValueError
        ``"<key>: ..."`` for any other drive kind.
    """
    if not isinstance(spec, SsdSpec):
        raise ValueError(f"{key}: a VAST drive must be an SSD (kind = 'ssd')")
    return spec
