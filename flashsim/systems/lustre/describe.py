"""Theoretical peaks of a ``lustre`` model, layer by layer (``flashsim describe``).

Nothing here runs a simulation: the peaks of each layer (drives raw and after
RAID, OST stack, PCIe, NIC, CPU operations) are computed from the model's
parameters so the bottleneck is visible before anything runs (the reasoning of
seed 000 Section IV-A).
"""

from __future__ import annotations

import math

from flashsim.components.drive_aging import steady_write_loss
from flashsim.components.pcie import PcieLink, link_Bps
from flashsim.components.raid import DriveOp
from flashsim.components.ssd import SsdSpec
from flashsim.components.tier_target import TierTargetSpec
from flashsim.systems.base import Description, LayerPeak, bottleneck
from flashsim.systems.lustre.fabric import fabric_bounds
from flashsim.systems.lustre.model import LustreModel, ServerSpec
from flashsim.units import format_quantity


def _op_note(ops: list[DriveOp]) -> str:
    """What one small write costs the drives, e.g. ``3 x 128 KiB write + 3 x 128 KiB read``."""
    parts = [f"{o.count:g} x {o.size_B / 1024:g} KiB {o.op}" for o in ops]
    return " + ".join(parts) if parts else "nothing"


#: Size of the small random I/O the IOPS rows are quoted at, B: a 4 KiB page (the
#: ``size_B`` default of the targets' ``peak_iops``).
PAGE_B = 4096.0


def _raid_layers(oss: ServerSpec, scope: str, scale: int) -> list[LayerPeak]:
    """Drive, RAID, OST-stack and drive-link rows of RAID OSTs (``scale`` OSSes)."""
    spec = oss.raid_target_spec()
    drive = spec.drive
    raid = spec.raid
    n = spec.drives * oss.targets_per_server
    rmw = raid.write_ops(PAGE_B)
    # Drive time of one 4 KiB read-modify-write: each drive operation holds the
    # busier of its command units and its data path.
    drive_time_rmw = sum(
        o.count * max(drive.cmd_s(o.op, o.size_B) / drive.servers, drive.xfer_s(o.op, o.size_B))
        for o in rmw
    )
    layers: list[LayerPeak] = []
    raw_r = n * drive.bandwidth_Bps("read") * scale
    raw_w = n * drive.bandwidth_Bps("write") * scale
    layers.append(
        LayerPeak(
            scope,
            "drives (raw)",
            n * scale,
            raw_r,
            raw_w,
            n * drive.random_iops_ceiling("read", PAGE_B) * scale,
            n * drive.random_iops_ceiling("write", PAGE_B) * scale,
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
            n * drive.random_iops_ceiling("read", PAGE_B) * scale,
            n * scale / max(drive_time_rmw, 1e-30),
            f"{raid.label(spec.drives)}: writes x"
            f"{raid.full_stripe_write_weight():.3g}, 4 KiB write = {_op_note(rmw)}",
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
            f"{oss.targets_per_server} x {spec.label()} per OSS: stack efficiencies "
            "(obdfilter) and RAID-engine RMW cost",
        )
    )
    layers.extend(_link_layers(oss.drive_link, scope, n * scale))
    return layers


def _link_layers(link: PcieLink | None, scope: str, drives: int) -> list[LayerPeak]:
    """The row of ``drives`` drives' PCIe links (none when the links are not modelled)."""
    if link is None:
        return []
    return [
        LayerPeak(
            scope,
            f"PCIe drive links Gen{link.generation} x{link.lanes}",
            drives,
            drives * link.bandwidth_Bps,
            drives * link.bandwidth_Bps,
            note=f"{link.bandwidth_Bps / 1e9:.3g} GB/s per drive per direction",
        )
    ]


def _tier_layers(oss: ServerSpec, tier: TierTargetSpec, scope: str, scale: int) -> list[LayerPeak]:
    """Rows of SCM->QLC tier OSTs (``scale`` OSSes): SCM ingest (with the buffer's size),
    tier read (QLC and SCM at once, with the migration's rate) and the drive links.

    The peaks are the target's own (:meth:`TierTargetSpec.peak_Bps`,
    :meth:`~TierTargetSpec.peak_iops`): writes at the SCM ingest rate until the
    buffer fills, reads from QLC.
    """
    per = oss.targets_per_server * scale
    qlc = tier.qlc
    k, m = tier.ec_data, tier.ec_parity
    # Each drive's PCIe link caps what it moves (components.pcie).
    migrate = (
        tier.qlc_drives * min(qlc.bandwidth_Bps("write"), link_Bps(tier.drive_link)) * k / (k + m)
    )
    layers = [
        LayerPeak(
            scope,
            "SCM ingest",
            per,
            None,
            per * tier.peak_Bps("write"),
            None,
            per * tier.peak_iops("write", PAGE_B),
            f"{oss.targets_per_server} x {tier.label()} per OSS: {tier.scm_copies} SCM "
            f"copies at write efficiency {tier.scm_write_efficiency:g}; write buffer "
            f"{format_quantity(float(tier.write_buffer), 'bytes')} per OST, migrating above "
            f"{tier.migrate_above:.0%}",
        ),
        LayerPeak(
            scope,
            "tier read (QLC + SCM)",
            per,
            per * tier.peak_Bps("read"),
            None,
            per * tier.peak_iops("read", PAGE_B),
            None,
            f"data of entropy {tier.data_entropy:g} bits/B from QLC (EC {k}+{m}) at "
            f"{format_quantity(per * tier.qlc_read_Bps(), 'bandwidth')}, buffered data from "
            f"SCM at {format_quantity(per * tier.scm_read_Bps(), 'bandwidth')}, both at once "
            "at most; writes "
            f"beyond the buffer migrate at <= {format_quantity(per * migrate, 'bandwidth')} "
            "of QLC (compressed)",
        ),
    ]
    layers.extend(_link_layers(tier.drive_link, scope, per * tier.drive_count()))
    return layers


def describe_model(model: LustreModel) -> Description:
    """Per-layer peaks of one OSS and of the system, and the bottlenecks."""
    oss = model.oss
    spec = oss.target_spec()
    n = spec.drive_count() * oss.targets_per_server
    rpc = model.client.lustre.rpc_size
    layers: list[LayerPeak] = []

    def both(scope: str, scale: int) -> None:
        if oss.tier is None:
            layers.extend(_raid_layers(oss, scope, scale))
        else:
            layers.extend(_tier_layers(oss, oss.tier, scope, scale))
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
        ctrl = oss.controller
        if ctrl is not None:
            # A controller shared by `ctrl.servers` OSSes: each OSS's even share.
            layers.append(
                LayerPeak(
                    scope,
                    "RAID controller (share)",
                    max(1, scale // ctrl.servers),
                    ctrl.bandwidth_Bps("read") / ctrl.servers * scale,
                    ctrl.bandwidth_Bps("write") / ctrl.servers * scale,
                    note=f"{ctrl.name or 'controller'} shared by {ctrl.servers} OSS: "
                    f"{ctrl.bandwidth_Bps('write') / 1e9:.3g} GB/s write, "
                    f"{ctrl.bandwidth_Bps('read') / 1e9:.3g} GB/s read each",
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
            model.mds.count * model.mds.target_spec().drive_count() * model.mds.targets_per_server
        )
    one = [la for la in layers if la.scope == "one OSS"]

    def peak(attr: str) -> float:
        vals = [getattr(la, attr) for la in one if getattr(la, attr) is not None]
        return float(min(vals)) if vals else math.nan

    derived = {
        "ost_drive_read_Bps": spec.peak_Bps("read"),
        "ost_drive_write_Bps": spec.peak_Bps("write"),
        "oss_read_Bps_peak": peak("read_Bps"),
        "oss_write_Bps_peak": peak("write_Bps"),
        "oss_read_iops_peak": peak("read_iops"),
        "oss_write_iops_peak": peak("write_iops"),
        "system_read_Bps_peak": peak("read_Bps") * oss.count,
        "system_write_Bps_peak": peak("write_Bps") * oss.count,
        "usable_capacity_B": oss.count * oss.targets_per_server * spec.usable_B(),
    }
    if oss.tier is not None:
        derived["ost_write_buffer_B"] = float(oss.tier.write_buffer)
    else:
        raid_spec = oss.raid_target_spec()
        drive = raid_spec.drive
        dpt = raid_spec.drives
        derived["ost_random_read_iops_ceiling"] = dpt * drive.random_iops_ceiling("read", PAGE_B)
        derived["ost_random_read_iops_full_seek"] = dpt * drive.iops("read")
        if oss.aging is not None and isinstance(drive, SsdSpec):
            written = (dpt - raid_spec.raid.spares) / dpt
            wa, loss = steady_write_loss(drive, oss.aging, written, oss.aging.cold_fraction)
            derived["aged_write_amplification"] = wa
            derived["aged_write_loss"] = loss
    return Description(
        system=model.name,
        kind="lustre",
        components=components,
        layers=layers,
        bottlenecks=bottlenecks,
        derived=derived,
    )
