"""Consistency checks and theoretical peaks of a ``lustre`` model (``flashsim describe``).

Nothing here runs a simulation: the peaks of each layer (drives raw and after
RAID, OST stack, PCIe, NIC, CPU operations) are computed from the model's
parameters so the bottleneck is visible before anything runs (the reasoning of
seed 000 Section IV-A).
"""

from __future__ import annotations

import math
from typing import Any

from flashsim.components.fabric import Fabric
from flashsim.components.fabric_spec import DragonflySpec, FabricSpec, FatTreeSpec
from flashsim.components.hdd import HddSpec
from flashsim.components.placement import UNLIMITED_SLOTS
from flashsim.components.ssd import SsdSpec
from flashsim.config import warn
from flashsim.engine.simulation import Simulation
from flashsim.systems.base import Description, LayerPeak, bottleneck, check_size
from flashsim.systems.lustre_model import LustreModel
from flashsim.workloads.ior import IorPhase


def check_model(model: LustreModel) -> None:
    """Cross-field checks; raise ``ValueError("dotted.key: message")``."""
    if model.oss.count < 1:
        raise ValueError("oss.count: a Lustre system needs at least one OSS")
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
        if isinstance(spec.drive, HddSpec) and spec.drive_link is not None:
            raise ValueError(
                f"{role}.drive: {spec.drive.name} is a hard disk (SAS/SATA); it cannot sit on "
                f"the PCIe drive_link of an NVMe model (remove {role}.drive_link or choose an "
                "NVMe drive file)"
            )
        if isinstance(spec.drive, SsdSpec):
            default_op = SsdSpec.model_fields["overprovisioning"].default
            if spec.drive.overprovisioning != default_op:
                warn(
                    f"{role}.drive.overprovisioning = {spec.drive.overprovisioning:g} is not "
                    "modelled yet (SSD aging is future work); it changes no result"
                )
        if spec.read_cache:
            raise ValueError(
                f"{role}.read_cache: a server DRAM read cache is not modelled yet "
                "(an all-flash OSS does not cache object data by default); set it to false"
            )
        need = spec.raid.min_drives()
        if spec.drives_per_target < need:
            raise ValueError(
                f"{role}.drives_per_target: {spec.drives_per_target} drives cannot hold a "
                f"{spec.raid.level} stripe of {spec.raid.stripe_drives} drives plus "
                f"{spec.raid.spares} spare(s) (needs >= {need})"
            )
        lanes_drives = spec.drives_per_target * spec.targets_per_server
        if spec.enclosure is not None:
            lanes_drives = max(lanes_drives, spec.enclosure.drives)
            per_encl = spec.enclosure.servers * spec.drives_per_target * spec.targets_per_server
            if per_encl > spec.enclosure.drives:
                raise ValueError(
                    f"{role}.enclosure.drives: {spec.enclosure.servers} servers x "
                    f"{spec.drives_per_target * spec.targets_per_server} drives need "
                    f"{per_encl} bays, the enclosure has {spec.enclosure.drives}"
                )
        link_lanes = spec.drive_link.lanes if spec.drive_link is not None else 0
        lanes = lanes_drives * link_lanes + spec.nic.pcie_lanes
        if spec.cpu.pcie_lanes and lanes > spec.cpu.pcie_lanes:
            raise ValueError(
                f"{role}.cpu.pcie_lanes: drives ({lanes_drives} x{link_lanes}) and "
                f"NICs ({spec.nic.pcie_lanes}) need {lanes} lanes, the CPU has "
                f"{spec.cpu.pcie_lanes}"
            )
        link_gen = spec.drive_link.generation if spec.drive_link is not None else 0
        if link_gen > spec.cpu.pcie_generation:
            raise ValueError(
                f"{role}.drive_link.generation: Gen{link_gen} exceeds the "
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


#: Lustre's default stripe size (``lfs setstripe -S``), the one the model's even spread of
#: RPCs over stripes stands for.
LUSTRE_STRIPE_B = 2.0**20


def _resources_per_target(model: LustreModel) -> int:
    """Flow-path entries one rank's stream adds per target it stripes over."""
    oss = model.oss
    per_drive = 2 + (2 if oss.drive_link is not None else 0)  # command, data, PCIe up/down
    return oss.nic.ports + 2 + oss.drives_per_target * per_drive + 2  # + CPU, RAID, fabric, OSC


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
    if workload == "obdfilter-survey":
        if phase.ost >= n_osts:
            raise ValueError(
                f"ost: OST {phase.ost} does not exist; the system has {n_osts} (0..{n_osts - 1})"
            )
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
            raise ValueError(
                f"sink: OSS {phase.sink} does not exist; the system has {count} (0..{count - 1})"
            )
        if phase.sources > count - 1:
            raise ValueError(
                f"sources: {phase.sources} source servers besides the sink need "
                f"{phase.sources + 1} OSSes; the system has {count}"
            )
        check_size("sources", count, 1, f"listing the {count:,} OSSes")
        groups = _role_groups(model, "io")
        if phase.cross_group and groups < 2:
            raise ValueError(
                "cross_group: the fabric has one I/O group, so no source sits in another; "
                "set cross_group = false"
            )
    elif isinstance(phase, IorPhase):
        slots = _client_slots(model)
        if phase.nodes > slots:
            placement = model.client.placement
            raise ValueError(
                f"nodes: {phase.nodes} client nodes do not fit the {slots:,} node slots of the "
                f"{placement.role} groups the placement may use"
            )
        layout = phase.layout
        stripes = layout.stripe_count or model.client.lustre.stripe_count
        if stripes > n_osts:
            raise ValueError(
                f"layout.stripe_count: {stripes} stripes need more OSTs than the {n_osts} "
                "the system has"
            )
        if layout.first_target is not None and layout.first_target >= n_osts:
            raise ValueError(
                f"layout.first_target: OST {layout.first_target} does not exist; the system "
                f"has {n_osts} (0..{n_osts - 1})"
            )
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


def describe_model(model: LustreModel) -> Description:
    """Per-layer peaks of one OSS and of the system, and the bottlenecks."""
    oss = model.oss
    drive = oss.drive
    n = oss.drives_per_target * oss.targets_per_server
    raid = oss.raid
    chunk = raid.chunk
    rpc = model.client.lustre.rpc_size
    page = 4096.0
    rmw = raid.write_ops(page)
    rmw_writes = sum(o.count for o in rmw if o.op == "write")
    # Drive time of one 4 KiB read-modify-write: each drive operation holds the
    # busier of its command units and its data path.
    drive_time_rmw = sum(
        o.count * max(drive.cmd_s(o.op, o.size_B) / drive.servers, drive.xfer_s(o.op, o.size_B))
        for o in rmw
    )
    layers: list[LayerPeak] = []

    def both(scope: str, scale: int) -> None:
        raw_r = n * drive.bandwidth_Bps("read") * scale
        raw_w = n * drive.bandwidth_Bps("write") * scale
        layers.append(
            LayerPeak(
                scope,
                "drives (raw)",
                n * scale,
                raw_r,
                raw_w,
                n * drive.random_iops_ceiling("read", page) * scale,
                n * drive.random_iops_ceiling("write", page) * scale,
                f"{n} x {drive.name} per OSS (datasheet)",
            )
        )
        layers.append(
            LayerPeak(
                scope,
                "drives after RAID",
                n * scale,
                raw_r,
                raw_w / raid.full_stripe_write_weight(),
                n * drive.random_iops_ceiling("read", page) * scale,
                n * scale / max(drive_time_rmw, 1e-30),
                f"{raid.level} {raid.data}+{raid.parity}+{raid.spares}: writes x"
                f"{raid.full_stripe_write_weight():.3g}, 4 KiB write = {rmw_writes:g} "
                f"chunk writes + reads of {chunk / 1024:g} KiB",
            )
        )
        layers.append(
            LayerPeak(
                scope,
                "OST stack (ldiskfs+RAID)",
                oss.targets_per_server * scale,
                raw_r * oss.stack_read_efficiency,
                raw_w / raid.full_stripe_write_weight() * oss.stack_write_efficiency,
                None,
                scale * oss.targets_per_server / oss.sub_stripe_write_cost * oss.raid_threads
                if oss.sub_stripe_write_cost > 0
                else None,
                "stack efficiencies (obdfilter) and RAID-engine RMW cost",
            )
        )
        link = oss.drive_link
        if link is not None:
            layers.append(
                LayerPeak(
                    scope,
                    f"PCIe drive links Gen{link.generation} x{link.lanes}",
                    n * scale,
                    n * link.bandwidth_Bps * scale,
                    n * link.bandwidth_Bps * scale,
                    note=f"{link.bandwidth_Bps / 1e9:.3g} GB/s per drive per direction",
                )
            )
        if oss.nic.pcie is not None:
            layers.append(
                LayerPeak(
                    scope,
                    f"PCIe NIC links Gen{oss.nic.pcie.generation} x{oss.nic.pcie.lanes}",
                    oss.nic.ports * scale,
                    oss.nic.ports * oss.nic.pcie.bandwidth_Bps * scale,
                    oss.nic.ports * oss.nic.pcie.bandwidth_Bps * scale,
                )
            )
        layers.append(
            LayerPeak(
                scope,
                "NIC",
                oss.nic.ports * scale,
                oss.nic.node_Bps("egress") * scale,
                oss.nic.node_Bps("ingress") * scale,
                note=f"{oss.nic.ports} x {oss.nic.port_bandwidth * 8 / 1e9:g} Gb/s, "
                f"egress eff {oss.nic.egress_efficiency:g}, "
                f"ingress eff {oss.nic.ingress_efficiency:g}",
            )
        )
        if oss.rpc_cost > 0:
            rpcs = oss.cpu.ops_per_s(oss.rpc_cost) * scale
            layers.append(
                LayerPeak(
                    scope,
                    "CPU (RPC handling)",
                    oss.cpu.cores * scale,
                    rpcs * rpc,
                    rpcs * rpc,
                    rpcs,
                    None,
                    f"{oss.cpu.cores} cores / {oss.rpc_cost * 1e6:.3g} us per RPC "
                    f"({rpc / 2**20:g} MiB RPCs for bandwidth)",
                )
            )

    both("one OSS", 1)
    both("system", oss.count)
    write_fabric, read_fabric, fabric_note = fabric_bounds(model)
    layers.append(
        LayerPeak(
            "system",
            "fabric (clients <-> servers)",
            1,
            read_fabric,
            write_fabric,
            note=fabric_note,
        )
    )
    bottlenecks = {}
    for scope in ("one OSS", "system"):
        for attr in ("read_Bps", "write_Bps", "read_iops", "write_iops"):
            bottlenecks[f"{scope} {attr}"] = bottleneck(layers, scope, attr)
    components = {
        "oss": oss.count,
        "osts": oss.count * oss.targets_per_server,
        "oss_drives": oss.count * n,
    }
    if model.mds is not None:
        components["mds"] = model.mds.count
        components["mdt_drives"] = (
            model.mds.count * model.mds.drives_per_target * model.mds.targets_per_server
        )
    one = [la for la in layers if la.scope == "one OSS"]

    def peak(attr: str) -> float:
        vals = [getattr(la, attr) for la in one if getattr(la, attr) is not None]
        return float(min(vals)) if vals else math.nan

    per_ost_read_iops = oss.drives_per_target * drive.random_iops_ceiling("read", page)
    derived = {
        "ost_drive_read_Bps": oss.target_peak_Bps("read"),
        "ost_drive_write_Bps": oss.target_peak_Bps("write"),
        "ost_random_read_iops_ceiling": per_ost_read_iops,
        "ost_random_read_iops_full_seek": oss.drives_per_target * drive.iops("read"),
        "oss_read_Bps_peak": peak("read_Bps"),
        "oss_write_Bps_peak": peak("write_Bps"),
        "oss_read_iops_peak": peak("read_iops"),
        "oss_write_iops_peak": peak("write_iops"),
        "system_read_Bps_peak": peak("read_Bps") * oss.count,
        "system_write_Bps_peak": peak("write_Bps") * oss.count,
        "usable_capacity_B": oss.count
        * n
        * drive.capacity
        * raid.usable_fraction(oss.drives_per_target),
    }
    return Description(
        system=model.name,
        kind="lustre",
        components=components,
        layers=layers,
        bottlenecks=bottlenecks,
        derived=derived,
    )


def fabric_bounds(model: LustreModel) -> tuple[float, float, str]:
    """Most bytes/s the fabric carries from clients to servers (writes) and back (reads).

    Clients fill every group their placement may use; servers sit in the
    ``io`` groups as the system builds them.  The bound is the fabric's
    max-flow between the two sets under its routing (minimal routing uses
    only direct global links).
    """
    sim = Simulation(seed=0)
    fabric = Fabric(sim, f"{model.name}.fabric", model.fabric)
    placement = model.client.placement
    servers = [f"oss{i}" for i in range(model.oss.count)]
    io_groups = len(fabric.groups_of(role_of(model.fabric, "io")))
    for i, name in enumerate(servers):
        fabric.attach(name, "io", i % io_groups)
    groups = fabric.groups_of(role_of(model.fabric, placement.role))
    used = groups[: placement.groups] if placement.groups else groups
    clients = [f"client{k}" for k in range(len(used))]
    for name, k in zip(clients, range(len(used)), strict=True):
        fabric.attach(name, placement.role, k)
    write = fabric.describe_bound_Bps(clients, servers)
    read = fabric.describe_bound_Bps(servers, clients)
    note = (
        f"{fabric.routing} routing, clients in {len(used)} {placement.role} group(s), "
        f"servers in {io_groups} io group(s)"
    )
    return write, read, note


def role_of(fabric: FabricSpec, role: str) -> str:
    """``role`` on a dragonfly; ``"all"`` on fabrics whose groups have no roles."""
    return role if isinstance(fabric, DragonflySpec) else "all"


def _role_groups(model: LustreModel, role: str) -> int:
    """Groups of ``role`` in the model's fabric (every group when it has no roles)."""
    fabric = model.fabric
    if isinstance(fabric, DragonflySpec):
        return sum(g.count for g in fabric.groups if g.role == role)
    return fabric.leaves if isinstance(fabric, FatTreeSpec) else 1


def _client_slots(model: LustreModel) -> int:
    """Client nodes the placement can put on the fabric."""
    placement = model.client.placement
    fabric = model.fabric
    if isinstance(fabric, DragonflySpec):
        caps = [
            g.capacity for g in fabric.groups if g.role == placement.role for _ in range(g.count)
        ]
    elif isinstance(fabric, FatTreeSpec):
        caps = [fabric.nodes_per_leaf] * fabric.leaves
    else:
        caps = [None]
    used = caps[: placement.groups] if placement.groups else caps
    return sum(UNLIMITED_SLOTS if c is None else c for c in used)
