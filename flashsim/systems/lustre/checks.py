"""Cross-field checks of a ``lustre`` model and of the phases run on it.

Each failure raises ``ValueError("dotted.key: message")``, which the scenario
loader turns into one error line naming the file, key and value.
"""

from __future__ import annotations

import math
from typing import Any

from flashsim.components.drive import check_calibrated_drive, check_drive_for_phase
from flashsim.components.fabric_spec import DragonflySpec
from flashsim.components.hdd import HddSpec
from flashsim.components.ssd import SsdSpec
from flashsim.config import warn
from flashsim.systems.base import check_size, no_such
from flashsim.systems.lustre.blockio import check_block_io_phase
from flashsim.systems.lustre.fabric import client_slots, role_groups
from flashsim.systems.lustre.fleet import FLEET_WORKLOADS, check_fleet_phase
from flashsim.systems.lustre.io500 import check_io500_phase
from flashsim.systems.lustre.model import LustreModel
from flashsim.systems.lustre.phases import check_lnet_sources
from flashsim.systems.lustre.rebuild import REBUILD_WORKLOADS, check_rebuild_phase
from flashsim.workloads.ior import IorPhase
from flashsim.workloads.jobs import check_placement


def check_model(model: LustreModel) -> None:
    """Cross-field checks; raise ``ValueError("dotted.key: message")``."""
    if model.oss.count < 1:
        raise ValueError("oss.count: a Lustre system needs at least one OSS")
    oss = model.oss
    check_tier_keys(model)
    if oss.tier is None and oss.aging is not None and isinstance(oss.drive, SsdSpec):
        raid = oss.raid_target_spec()
        n = raid.drives
        written = float(oss.drive.capacity) * (n - raid.raid.spares) / n
        if oss.drive.raw_capacity_B <= written:
            raise ValueError(
                f"oss.drive.overprovisioning: {oss.drive.overprovisioning:g} leaves the drives no "
                "spare flash beyond the space the array writes; SSD aging ([oss.aging]) needs "
                "some (> 0, or distributed spares in oss.raid)"
            )
    if isinstance(model.fabric, DragonflySpec):
        roles = sorted({g.role for g in model.fabric.groups})
        for key, role in (
            ("fabric.groups", "io"),
            ("client.placement.role", model.client.placement.role),
        ):
            if role not in roles:
                raise ValueError(
                    f"{key}: the dragonfly has no {role!r} groups (roles: {', '.join(roles)}); "
                    "servers sit in `io` groups and clients in the placement's role"
                )
    nics = [("client.nic", model.client.nic)]
    for role, spec in (("oss", model.oss), ("mds", model.mds)):
        if spec is None:
            continue
        nics.append((f"{role}.nic", spec.nic))
        for name in ("stack_read_efficiency", "stack_write_efficiency"):
            if getattr(spec, name) <= 0:
                raise ValueError(
                    f"{role}.{name}: an efficiency of 0 delivers no bandwidth; expected a "
                    "fraction in (0, 1]"
                )
        if spec.tier is None and isinstance(spec.drive, HddSpec) and spec.drive_link is not None:
            raise ValueError(
                f"{role}.drive: {spec.drive.name} is a hard disk (SAS/SATA); it cannot sit on "
                f"the PCIe drive_link of an NVMe model (remove {role}.drive_link or choose an "
                "NVMe drive file)"
            )
        if spec.read_cache:
            raise ValueError(
                f"{role}.read_cache: a server DRAM read cache is not modelled yet "
                "(an all-flash OSS does not cache object data by default); set it to false"
            )
        if spec.raid is not None and spec.drives_per_target is not None:
            need = spec.raid.min_drives()
            if spec.drives_per_target < need:
                raise ValueError(
                    f"{role}.drives_per_target: {spec.drives_per_target} drives cannot hold a "
                    f"{spec.raid.level} stripe of {spec.raid.stripe_drives} drives plus "
                    f"{spec.raid.spares} spare(s) (needs >= {need})"
                )
        per_target = spec.target_spec().drive_count()
        lanes_drives = per_target * spec.targets_per_server
        if spec.enclosure is not None:
            lanes_drives = max(lanes_drives, spec.enclosure.drives)
            per_encl = spec.enclosure.servers * per_target * spec.targets_per_server
            if per_encl > spec.enclosure.drives:
                raise ValueError(
                    f"{role}.enclosure.drives: {spec.enclosure.servers} servers x "
                    f"{per_target * spec.targets_per_server} drives need "
                    f"{per_encl} bays, the enclosure has {spec.enclosure.drives}"
                )
        drive_link = spec.target_drive_link
        link_lanes = drive_link.lanes if drive_link is not None else 0
        lanes = lanes_drives * link_lanes + spec.nic.pcie_lanes
        if spec.cpu.pcie_lanes and lanes > spec.cpu.pcie_lanes:
            raise ValueError(
                f"{role}.cpu.pcie_lanes: drives ({lanes_drives} x{link_lanes}) and "
                f"NICs ({spec.nic.pcie_lanes}) need {lanes} lanes, the CPU has "
                f"{spec.cpu.pcie_lanes}"
            )
        link_gen = drive_link.generation if drive_link is not None else 0
        if link_gen > spec.cpu.pcie_generation:
            key = "drive_link" if spec.tier is None else "tier.drive_link"
            raise ValueError(
                f"{role}.{key}.generation: Gen{link_gen} exceeds the "
                f"CPU's Gen{spec.cpu.pcie_generation}"
            )
    for key, nic in nics:
        for direction in ("ingress", "egress"):
            if nic.efficiency(direction) <= 0:  # type: ignore[arg-type]
                raise ValueError(
                    f"{key}.{direction}_efficiency: an efficiency of 0 delivers no bandwidth; "
                    "expected a fraction in (0, 1]"
                )
    total = model.oss.count * model.oss.targets_per_server
    if model.client.lustre.stripe_count > max(total, 1):
        raise ValueError(
            f"client.lustre.stripe_count: {model.client.lustre.stripe_count} stripes need "
            f"more OSTs than the {total} the system has"
        )
    if model.client.lustre.stripe_size != LUSTRE_STRIPE_B:
        warn(
            f"client.lustre.stripe_size = {model.client.lustre.stripe_size:g} B is not "
            "modelled: RPCs are spread evenly over a file's stripes whatever the stripe size"
        )
    if oss.drive is not None:  # a RAID target's drive (a tier names its own)
        check_calibrated_drive(oss.drive, oss.calibrated_with, "oss")  # after every error


#: Phases that study a RAID array's drives (aging, rebuild, degraded reads, data loss, block
#: I/O to the array): a model whose OSTs are a tier gets one error line naming the phase.
RAID_ONLY_WORKLOADS = (
    "ost-aging",
    "production-aging",
    "rebuild",
    "degraded-survey",
    "data-loss",
    "block-io",
)

#: Keys of a server class that mean nothing when its targets are a tier (``tier``), and
#: what to do instead.
TIER_IGNORES = {
    "drive_link": "give the tier's own tier.drive_link",
    "controller": "an external RAID controller sits in front of RAID arrays only",
    "raid_threads": "a tier has no RAID engine",
    "sub_stripe_write_cost": "a tier has no RAID engine",
    "stack_read_efficiency": "give tier.scm_read_efficiency",
    "stack_write_efficiency": "give tier.scm_write_efficiency",
    "rebuild": "give tier.rebuild",
    "aging": "a tier's aged data is a phase's (aged) choice, not drive aging",
}


def check_tier_keys(model: LustreModel) -> None:
    """A server class with ``tier`` targets gives no RAID-target key."""
    for role, spec in (("oss", model.oss), ("mds", model.mds)):
        if spec is None or spec.tier is None:
            continue
        given = sorted(spec.model_fields_set & TIER_IGNORES.keys())
        if given:
            key = given[0]
            raise ValueError(
                f"{role}.{key}: means nothing for tier targets ({role}.tier): "
                f"{TIER_IGNORES[key]}; remove {role}.{key}"
            )


#: Lustre's default stripe size (``lfs setstripe -S``), the one the model's even spread of
#: RPCs over stripes stands for.
LUSTRE_STRIPE_B = 2.0**20


def _resources_per_target(model: LustreModel) -> int:
    """Flow-path entries one rank's stream adds per target it stripes over."""
    oss = model.oss
    link = oss.target_drive_link
    per_drive = 2 + (2 if link is not None else 0)  # command, data, PCIe up/down
    drives = oss.target_spec().drive_count()
    return oss.nic.ports + 2 + drives * per_drive + 2  # + CPU, RAID, fabric, OSC


def check_phase(model: LustreModel, phase: Any) -> None:
    """Check a phase against the model; raise ``ValueError("key: message")``.

    Indices (``ost``, ``sink``, ``layout.first_target``) must name targets or
    servers that exist, a layout cannot stripe over more OSTs than the system
    has, and the run's size is estimated up front (:func:`check_size`): an IOR
    phase creates ``ranks`` flows of ``client ports + (server ports + CPU + RAID
    + drives x 4 + fabric + OSC)`` path entries on one stripe; wider stripe sets
    are stored once each (and each client's OSCs for them once more), so a rank
    adds two entries.
    """
    n_osts = model.oss.count * model.oss.targets_per_server
    workload = getattr(phase, "workload", "")
    if model.oss.tier is not None and workload in RAID_ONLY_WORKLOADS:
        raise model.oss.raid_only_error(workload)
    check_placement(phase, client_slots(model))
    for i, job in enumerate(getattr(phase, "jobs", []) if workload == "jobs" else []):
        first = getattr(job, "first_target", None)
        if first is not None and first >= n_osts:
            raise no_such(f"jobs.{i}.first_target", "OST", first, n_osts)
    if workload in FLEET_WORKLOADS:
        check_fleet_phase(n_osts, phase)
    elif workload in ("ost-aging", "production-aging"):
        check_aging_phase(model, n_osts, phase)
    elif workload == "production" and phase.trim_every is not None:
        if model.oss.aging is None or not isinstance(model.oss.drive, SsdSpec):
            raise ValueError(
                "trim_every: the OSTs' drives do not age here (TRIM needs SSDs and an "
                "[oss.aging] table in the model); leave trim_every out"
            )
    elif workload == "block-io":
        check_block_io_phase(model, phase)
    elif workload == "io500":
        check_io500_phase(model, phase, lambda ior: check_phase(model, ior))
    elif workload == "obdfilter-survey":
        if phase.ost >= n_osts:
            raise no_such("ost", "OST", phase.ost, n_osts)
        if phase.objects != 1:
            warn(
                f"phase {phase.name!r}: objects = {phase.objects} is not modelled: the survey "
                "drives the target's stack as one object"
            )
        records = max(1, int(phase.size // phase.record_size))
        check_size(
            "threads",
            min(phase.threads, records),
            _resources_per_target(model),
            f"min(threads, size / record_size) = min({phase.threads}, {records})",
        )
    elif workload == "lnet-selftest":
        count = model.oss.count
        if phase.sink >= count:
            raise no_such("sink", "OSS", phase.sink, count)
        if phase.sources > count - 1:
            raise ValueError(
                f"sources: {phase.sources} source servers besides the sink need "
                f"{phase.sources + 1} OSSes; the system has {count}"
            )
        check_size("sources", count, 1, f"listing the {count:,} OSSes")
        groups = role_groups(model, "io")
        if phase.cross_group and groups < 2:
            raise ValueError(
                "cross_group: the fabric has one I/O group, so no source sits in another; "
                "set cross_group = false"
            )
        check_lnet_sources(model, phase)
    elif workload == "lnet-survey":
        count = model.oss.count
        for i, src in enumerate(phase.sources or []):
            if src >= count:
                raise no_such(f"sources.{i}", "OSS", src, count)
        if count < 2:
            raise ValueError("sources: an LNet survey needs at least two OSSes")
        check_size("sinks", count, 1, f"testing the {count:,} OSSes in turn")
    elif workload in REBUILD_WORKLOADS:
        check_rebuild_phase(n_osts, model.oss.target_spec().drive_count(), phase)
    elif isinstance(phase, IorPhase):
        if model.oss.drive is not None:
            check_drive_for_phase(model.oss.drive, phase)
        slots = client_slots(model)
        if phase.nodes > slots:
            placement = model.client.placement
            raise ValueError(
                f"nodes: {phase.nodes} client nodes do not fit the {slots:,} node slots of the "
                f"{placement.role} groups the placement may use"
            )
        if phase.first_node + phase.nodes > slots:
            raise ValueError(
                f"first_node: nodes {phase.first_node}..{phase.first_node + phase.nodes - 1} "
                f"do not fit the {slots:,} node slots of the {model.client.placement.role} "
                "groups the placement may use"
            )
        layout = phase.layout
        stripes = layout.stripe_count or model.client.lustre.stripe_count
        if stripes > n_osts:
            raise ValueError(
                f"layout.stripe_count: {stripes} stripes need more OSTs than the {n_osts} "
                "the system has"
            )
        if layout.first_target is not None and layout.first_target >= n_osts:
            raise no_such("layout.first_target", "OST", layout.first_target, n_osts)
        per_target = _resources_per_target(model)
        if stripes == 1:
            per_rank = model.client.nic.ports + per_target
            how = "each over 1 stripe"
        else:
            # A stripe set is stored once as a shared flow segment, and each client's
            # OSCs for it once more; a rank's own path is its ports plus the two.
            if layout.first_target is not None or not phase.file_per_process:
                sets = 1
            else:  # file i starts at (i x stripes) mod n_osts
                sets = min(phase.ranks, n_osts // math.gcd(stripes, n_osts))
            shared = sets * stripes * per_target
            shared += phase.nodes * min(phase.ranks_per_node, sets) * stripes
            per_rank = model.client.nic.ports + 2 + math.ceil(shared / max(phase.ranks, 1))
            how = f"each over {stripes} stripes (at most {sets:,} stripe sets, stored once)"
        check_size(
            "nodes",
            phase.ranks,
            per_rank,
            f"nodes x ranks_per_node = {phase.nodes:,} x {phase.ranks_per_node:,} ranks, {how}",
        )
        if layout.stripe_size is not None and layout.stripe_size != LUSTRE_STRIPE_B:
            warn(
                f"phase {phase.name!r}: layout.stripe_size = {layout.stripe_size:g} B is not "
                "modelled: RPCs are spread evenly over a file's stripes whatever the stripe size"
            )
        if not phase.drop_caches:
            warn(
                f"phase {phase.name!r}: drop_caches = false is not modelled: Lustre client "
                "caches never hold data a later read can hit, so reads always go to the OSTs"
            )


def check_aging_phase(model: LustreModel, n_osts: int, phase: Any) -> None:
    """An aging phase needs SSDs with an ``[oss.aging]`` table and OSTs that exist."""
    if model.oss.aging is None:
        raise ValueError(
            "workload: the model has no [oss.aging] table (how the file system's writes reach "
            "each drive's FTL); add one with units_per_block and spread to age its OSTs"
        )
    drive = model.oss.raid_target_spec().drive
    if not isinstance(drive, SsdSpec):
        raise ValueError(f"workload: {drive.name} is not an SSD; only SSDs age here")
    if phase.workload == "ost-aging" and phase.ost >= n_osts:
        raise no_such("ost", "OST", phase.ost, n_osts)
    if phase.workload == "production-aging" and phase.osts is not None and phase.osts > n_osts:
        raise ValueError(f"osts: {phase.osts} OSTs asked for; the system has {n_osts}")
