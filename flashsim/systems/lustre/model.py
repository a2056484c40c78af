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
from flashsim.components.raid_target_spec import RaidTargetSpec
from flashsim.components.rebuild import RebuildPolicy
from flashsim.components.target import TargetSpec
from flashsim.components.tier_target import TierTargetSpec
from flashsim.components.variability import VariabilitySpec, spread_shorthand
from flashsim.config import (
    NonNegativeSeconds,
    StrictModel,
    UnitFraction,
    calibratable,
    field_error,
)
from flashsim.systems.base import KindModel

#: The keys of a RAID target (a server class's flat keys) that ``tier`` replaces.
RAID_TARGET_KEYS = ("drive", "drives_per_target", "raid")


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
    drives_per_target : int or None
        Drives in one target's RAID array (absent with ``tier``).
    drive : SsdSpec or HddSpec or None
        Drive datasheet (a path to a drive file; absent with ``tier``).
    drive_link : PcieLink or None
        Host PCIe link of each drive (``None`` for drives behind a SAS fabric).
    raid : RaidSpec or None
        Layout of a target (absent with ``tier``).
    tier : TierTargetSpec or None
        The targets are SCM write buffers over compressed QLC
        (:mod:`flashsim.components.tier_target`) instead of RAID arrays;
        ``drive``, ``drives_per_target`` and ``raid`` must then be absent.
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
    drives_per_target: Annotated[int, Field(ge=1)] | None = None
    drive: DriveField | None = None
    calibrated_with: str | None = Field(
        None,
        description="Name of the drive (its file's `name`) the calibrated stack parameters "
        "were fitted on; a model with another `drive` warns that they carry over unchanged "
        "(docs/calibration.md says which hold). Unset: no check; checked for `oss`, whose "
        "values Perlmutter's fit.",
    )
    drive_link: PcieLink | None = None
    raid: RaidSpec | None = None
    tier: TierTargetSpec | None = Field(
        None,
        description=(
            "The targets are an SCM write buffer over compressed, erasure-coded QLC "
            "(components.tier_target) instead of RAID arrays; `drive`, `drives_per_target` "
            "and `raid` must then be absent."
        ),
    )
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

    @model_validator(mode="after")
    def _one_target_type(self) -> ServerSpec:
        """Either ``tier`` or the RAID keys (``drive``, ``drives_per_target``, ``raid``)."""
        given = [k for k in RAID_TARGET_KEYS if getattr(self, k) is not None]
        if self.tier is not None:
            if given:
                raise field_error(
                    given[0],
                    f"the targets are a tier (the `tier` table), which names its own drives; "
                    f"remove {', '.join(given)} or the `tier` table",
                )
            return self
        missing = [k for k in RAID_TARGET_KEYS if getattr(self, k) is None]
        if missing:
            raise field_error(
                missing[0],
                f"{', '.join(missing)} missing: RAID targets need {', '.join(RAID_TARGET_KEYS)} "
                "(or a `tier` table, an SCM->QLC tier, instead of all three)",
            )
        return self

    def target_spec(self) -> TargetSpec:
        """The target type of this server class: the ``tier`` table, or the RAID view of
        the flat keys (:class:`RaidTargetSpec`, a new one per call: a built system keeps one).
        """
        if self.tier is not None:
            return self.tier
        return self.raid_target_spec()

    @property
    def target_drive_link(self) -> PcieLink | None:
        """The host link of each of the targets' drives (the tier's, or the RAID drives')."""
        return self.drive_link if self.tier is None else self.tier.drive_link

    def raid_only_error(self, workload: str) -> ValueError:
        """The input error of a study of RAID arrays (phase ``workload``) on targets of
        another type."""
        return ValueError(
            f"workload: phase {workload!r} needs RAID OSTs; this model's OSTs are "
            f"{self.target_spec().label()} (oss.tier)"
        )

    def raid_target_spec(self) -> RaidTargetSpec:
        """The RAID target the flat keys describe; ``ValueError("tier: ...")`` with a tier."""
        if self.tier is not None or self.drive is None or self.raid is None:
            raise ValueError(
                "tier: this server class's targets are an SCM->QLC tier (the `tier` table), "
                "not RAID arrays"
            )
        assert self.drives_per_target is not None
        return RaidTargetSpec(
            drive=self.drive,
            drives=self.drives_per_target,
            raid=self.raid,
            drive_link=self.drive_link,
            raid_threads=self.raid_threads,
            stack_read_efficiency=self.stack_read_efficiency,
            stack_write_efficiency=self.stack_write_efficiency,
            sub_stripe_write_cost=self.sub_stripe_write_cost,
            rebuild=self.rebuild,
            aging=self.aging,
        )


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
