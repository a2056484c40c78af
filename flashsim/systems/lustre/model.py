"""Model-file schema of ``kind = "lustre"`` systems (OSS/MDS servers, clients, fabric).

Every number comes from the model file; the file cites its sources.  Drive
datasheets live in their own files (``models/drives/*.toml``) and are named
relative to the system file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from flashsim.components.aging_spec import AgingSpec
from flashsim.components.cpu import CpuSpec
from flashsim.components.drive import DriveField
from flashsim.components.fabric import FabricSpec
from flashsim.components.lustre_client import LustreClientSpec
from flashsim.components.mds import MetadataSpec
from flashsim.components.nic import NicSpec
from flashsim.components.pcie import PcieLink
from flashsim.components.placement import PlacementSpec, placement_field
from flashsim.components.raid import RaidSpec
from flashsim.components.raid_controller import ControllerSpec
from flashsim.components.rebuild import RebuildPolicy
from flashsim.components.variability import VariabilitySpec, spread_shorthand
from flashsim.config import (
    NonNegativeSeconds,
    StrictModel,
    UnitFraction,
    calibratable,
)
from flashsim.systems.base import KindModel


class EnclosureSpec(StrictModel):
    """An enclosure of servers sharing dual-ported drives (e.g. ClusterStor E1000).

    Attributes
    ----------
    servers : int
        Servers per enclosure (an active/active failover pair is 2).
    drives : int
        Drive bays; every server is cabled to every drive.
    """

    name: str = Field("", description="Enclosure model, for reports.")
    servers: Annotated[int, Field(ge=1)] = 1
    drives: Annotated[int, Field(ge=1)]


class ServerSpec(StrictModel):
    """A class of storage server (OSS or MDS) and the targets it hosts.

    Attributes
    ----------
    count : int
        Servers of this class in the system.
    targets_per_server : int
        OSTs/MDTs per server in normal operation.
    drives_per_target : int
        Drives in one target's RAID array.
    drive : SsdSpec or HddSpec
        Drive datasheet (a path to a drive file).
    drive_link : PcieLink or None
        Host PCIe link of each drive (``None`` for drives behind a SAS fabric).
    raid : RaidSpec
        Layout of a target.
    cpu : CpuSpec
        Server processor.
    nic : NicSpec
        Server network adapters.
    enclosure : EnclosureSpec or None
        Enclosure the server sits in (for PCIe-lane and drive-bay checks).
    controller : ControllerSpec or None
        External RAID controller the server's targets sit behind, shared with
        ``controller.servers - 1`` other servers (a DDN couplet); ``None`` when
        the server runs its own RAID.
    read_cache : bool
        Whether the server caches object data in DRAM; only ``false`` is
        modelled so far (an all-flash OSS does not cache by default).
    rpc_cost : float
        CPU time (s) per Lustre RPC (request handling, bulk setup).
    sub_stripe_write_cost : float
        RAID-engine time (s) per sub-stripe write (read-modify-write handling).
    raid_threads : int
        RAID-engine threads per target that run the read-modify-write state machine.
    stack_read_efficiency, stack_write_efficiency : float
        Fraction of the drives' (post-parity) bandwidth the target's software
        stack (ldiskfs + RAID) delivers to streaming I/O.
    variability : VariabilitySpec
        Per-component factors (median 1) on the target, drive and NIC
        efficiencies (:mod:`flashsim.components.variability`).  The former
        ``efficiency_spread = s`` is read as enabled ``target_write`` and
        ``target_read`` normal spreads of relative standard deviation ``s``.
    """

    count: Annotated[int, Field(ge=0)]
    targets_per_server: Annotated[int, Field(ge=1)] = 1
    drives_per_target: Annotated[int, Field(ge=1)]
    drive: DriveField
    calibrated_with: str | None = Field(
        None,
        description="Name of the drive (its file's `name`) the calibrated stack parameters "
        "were fitted on; a model with another `drive` warns that they carry over unchanged "
        "(docs/calibration.md says which hold). Unset: no check; checked for `oss`, whose "
        "values Perlmutter's fit.",
    )
    drive_link: PcieLink | None = None
    raid: RaidSpec
    cpu: CpuSpec
    nic: NicSpec
    enclosure: EnclosureSpec | None = None
    controller: ControllerSpec | None = Field(
        None,
        description=(
            "External RAID controller shared by `controller.servers` consecutive servers "
            "(e.g. a DDN S2A couplet); every operation on their targets crosses it, so its "
            "bandwidth caps them together; `describe` shows each server's share."
        ),
    )
    read_cache: bool = False
    rpc_cost: NonNegativeSeconds = Field(
        "0 s",
        json_schema_extra=calibratable(
            1e-6,
            1e-3,
            "s",
            ["ior"],
            "an IOR random 4 KiB read IOPS measurement on one OST",
            "Perlmutter scratch",
            where=["oss"],
        ),
    )
    sub_stripe_write_cost: NonNegativeSeconds = Field(
        "0 s",
        json_schema_extra=calibratable(
            1e-6,
            1e-3,
            "s",
            ["ior"],
            "an IOR random 4 KiB write IOPS measurement (with fsync) on one OST",
            "Perlmutter scratch",
            where=["oss"],
        ),
    )
    raid_threads: Annotated[int, Field(ge=1)] = 1
    stack_read_efficiency: UnitFraction = Field(
        1.0,
        json_schema_extra=calibratable(
            0.3,
            1.0,
            "",
            ["obdfilter-survey"],
            "an obdfilter-survey read measurement",
            "Perlmutter scratch",
            where=["oss"],
        ),
    )
    stack_write_efficiency: UnitFraction = Field(
        1.0,
        json_schema_extra=calibratable(
            0.3,
            1.0,
            "",
            ["obdfilter-survey"],
            "an obdfilter-survey write measurement",
            "Perlmutter scratch",
            where=["oss"],
        ),
    )
    variability: VariabilitySpec = Field(
        default_factory=lambda: VariabilitySpec.model_validate({}),
        description=(
            "Per-component performance factors (median 1) on target, drive and NIC "
            "efficiencies; `efficiency_spread = s` is shorthand for normal target spreads."
        ),
    )
    rebuild: RebuildPolicy = Field(
        default_factory=lambda: RebuildPolicy.model_validate({}),
        description=(
            "How a target rebuilds a failed drive against its foreground I/O "
            "(components.rebuild): guaranteed priority share, idle share, rate cap, decode rate."
        ),
    )
    aging: AgingSpec | None = Field(
        None,
        description=(
            "How the target's file system writes reach each drive's FTL (SSD aging: "
            "garbage collection, TRIM); `None` keeps drives fresh."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _efficiency_spread(cls, data: Any) -> Any:
        """Read the former ``efficiency_spread = s`` as normal target spreads of ``s``."""
        if isinstance(data, Mapping) and "efficiency_spread" in data:
            return spread_shorthand(dict(data), "efficiency_spread")
        return data

    def target_peak_Bps(self, op: Literal["read", "write"]) -> float:
        """Datasheet bandwidth (bytes/s) of one target's drives, after parity for writes.

        The denominator of the seed's bandwidth efficiencies (seed 000 §IV-A).
        """
        raw = self.drives_per_target * self.drive.bandwidth_Bps(op)
        return raw / self.raid.full_stripe_write_weight() if op == "write" else raw

    def target_peak_iops(self, op: Literal["read", "write"], size_B: float = 4096.0) -> float:
        """Datasheet operations/s of one target's drives over the RAID write penalty.

        The denominator of the seed's IOPS efficiencies (seed 000 Table I).
        """
        raw = self.drives_per_target * self.drive.iops(op)
        if op == "write":
            writes = sum(o.count for o in self.raid.write_ops(size_B) if o.op == "write")
            raw /= max(writes, 1.0)
        return raw


class MdsSpec(ServerSpec):
    """A class of metadata server (MDS): a server whose targets are MDTs, and its service costs.

    Attributes
    ----------
    metadata : MetadataSpec or None
        Service threads and per-operation costs of one MDS; ``None`` when the
        model does not describe its metadata path (mdtest and IO-500 need it).
    """

    metadata: MetadataSpec | None = Field(
        None,
        description=(
            "Service threads, directory-lock width and per-operation costs of one MDS "
            "(create, open, close, stat, unlink, readdir), and the MDT bytes of a create/unlink."
        ),
    )


class ClientSpec(StrictModel):
    """Compute nodes as Lustre clients.

    Attributes
    ----------
    nic : NicSpec
        A compute node's network adapters.
    lustre : LustreClientSpec
        Client tunables.
    placement : PlacementSpec
        Which fabric groups the client nodes sit in (packed by default).
    """

    nic: NicSpec
    lustre: LustreClientSpec = LustreClientSpec()
    placement: PlacementSpec = placement_field(
        "Which fabric groups the client nodes sit in (packed by default)."
    )


class LustreModel(KindModel):
    """Model file of ``kind = "lustre"``."""

    kind: Literal["lustre"]
    oss: ServerSpec
    mds: MdsSpec | None = Field(
        None,
        description=(
            "Metadata servers and their MDTs; `[mds.metadata]` holds the per-operation costs "
            "mdtest and IO-500 need (components.mds)."
        ),
    )
    client: ClientSpec
    fabric: FabricSpec = Field(
        description=(
            "The network between clients and servers: a single switch, a fat tree or a "
            "dragonfly (components.fabric); clients sit in `client.placement.role` groups, "
            "servers in `io` groups."
        )
    )
