"""What ``flashsim describe`` says about a ``vast`` model, and the checks before a run.

:func:`describe_model` gives the theoretical peak of each layer (client HCAs,
CNode ports and DNode ports, each node's ports in parallel as the built
system's ``NicPorts`` carry them; SCM and QLC drives) and the derived numbers
the seed states (aggregate drive bandwidths, usable QLC, buffer turnover);
:func:`check_model` and :func:`check_phase` refuse what the model cannot
run, before anything is built.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from flashsim.components.fabric_spec import SwitchFabricSpec
from flashsim.components.nfs import NfsClientModel
from flashsim.components.nic import NicSpec
from flashsim.config import warn
from flashsim.engine.simulation import Simulation
from flashsim.systems.base import Description, LayerPeak, bottleneck, check_size, no_such
from flashsim.systems.vast.io500 import check_io500_phase
from flashsim.systems.vast.model import VastModel, ssd
from flashsim.systems.vast.network import VastNetwork
from flashsim.systems.vast.phases import buffered_write
from flashsim.workloads.io500 import Io500Phase
from flashsim.workloads.ior import FileLayout, IorPhase
from flashsim.workloads.jobs import check_placement


def check_model(model: VastModel) -> None:
    """Cross-field checks of a model file; raise ``ValueError("key: message")``."""
    ssd(model.dnode.scm_drive, "dnode.scm_drive")
    ssd(model.dnode.qlc_drive, "dnode.qlc_drive")
    n_qlc = model.dnode.count * model.dnode.qlc_drives
    if model.tier.ec_data + model.tier.ec_parity > n_qlc:
        raise ValueError(
            f"tier.ec_data: ec_data + ec_parity must not exceed the {n_qlc} QLC drives"
        )


def check_phase(model: VastModel, phase: Any) -> None:
    """Client nodes within ``client.count``; ranks within :func:`check_size` (h1, issue 11).

    A ``vast-rebuild`` phase's failed drive must be one of the QLC drives.
    """
    if isinstance(phase, Io500Phase):
        check_io500_phase(model, phase, lambda ior: check_phase(model, ior))
    check_placement(phase, model.client.count)
    if getattr(phase, "workload", "") == "vast-rebuild":
        qlc = model.dnode.count * model.dnode.qlc_drives
        if phase.drive >= qlc:
            raise no_such("drive", "QLC drive", phase.drive, qlc)
    nodes, per_node = getattr(phase, "nodes", None), getattr(phase, "ranks_per_node", 1)
    most = max(nodes, default=0) if isinstance(nodes, list) else nodes
    if isinstance(most, int) and most > model.client.count:
        raise ValueError(
            f"nodes: {most} client nodes; the model has {model.client.count} (client.count)"
        )
    first = getattr(phase, "first_node", 0)
    if isinstance(most, int) and isinstance(first, int) and first + most > model.client.count:
        raise ValueError(
            f"first_node: nodes {first}..{first + most - 1}; the model has "
            f"{model.client.count} client nodes (client.count)"
        )
    ppn = max(per_node, default=1) if isinstance(per_node, list) else per_node
    if isinstance(most, int) and isinstance(ppn, int):
        check_size("ranks_per_node", most * ppn, 16, f"nodes x ranks_per_node = {most} x {ppn}")
    if isinstance(phase, IorPhase):
        if phase.layout != FileLayout():
            warn(
                f"phase {phase.name!r}: layout (striping) is not modelled on a vast "
                "system: NFS files are spread over the DNodes by the servers, not the client"
            )
        if not phase.drop_caches:
            warn(
                f"phase {phase.name!r}: drop_caches = false is not modelled: the client "
                "page cache holds only write-back data, so reads always go to the servers"
            )
    if buffered_write(phase) and getattr(phase, "fidelity", None) == "request":
        raise ValueError(
            "fidelity: buffered writes run in flow fidelity only on a vast system (the client "
            "page cache is a flow-fidelity buffer); expected 'flow', or direct_io = true"
        )


def describe_model(model: VastModel) -> Description:
    """Component counts, per-layer peaks, bottlenecks and derived numbers of ``model``.

    The ``system`` scope holds true upper bounds on what a run can reach:
    every port layer, the fabrics (max-flow bounds between the endpoints as
    the system places them, :meth:`Fabric.describe_bound_Bps`) and the drives
    as the tier uses them -- reads from wherever the data lives (SCM at
    ``scm_read_efficiency`` plus QLC), writes into SCM before migration runs
    (``scm_copies`` replicas at ``scm_write_efficiency``).  The ``tier`` scope
    gives each medium alone, with the sustained write rate once migration
    follows ingest; ``bottlenecks`` names the system bound's layer for
    ``read``/``write`` and, for data in SCM, on QLC, or written with
    migration running, the layer that binds then.
    """
    cn, dn, cl = model.cnode, model.dnode, model.client
    scm = ssd(dn.scm_drive, "dnode.scm_drive")
    qlc = ssd(dn.qlc_drive, "dnode.qlc_drive")
    tier = model.tier
    n_scm = dn.count * dn.scm_drives
    n_qlc = dn.count * dn.qlc_drives
    copies = tier.scm_copies
    k, m = tier.ec_data, tier.ec_parity
    cm = NfsClientModel(cl)
    scm_write = n_scm * scm.write_bandwidth * tier.scm_write_efficiency / copies
    # Sustained ingest with migration following it: each user byte costs
    # copies writes + 1 migration read on SCM (drive time-shared).
    per_byte = copies * scm.read_bandwidth / (scm.write_bandwidth * tier.scm_write_efficiency) + 1.0
    scm_sustained = n_scm * scm.read_bandwidth / per_byte
    scm_read = n_scm * scm.read_bandwidth * tier.scm_read_efficiency
    qlc_read = n_qlc * qlc.read_bandwidth
    net = VastNetwork(model, Simulation(seed=0))
    layers = [
        LayerPeak(
            "system",
            "client HCAs",
            cl.count,
            cl.count * cm.nic_Bps("ingress"),
            cl.count * cm.nic_Bps("egress"),
            note=f"{cm.ports} x {cl.nic.port_bandwidth * 8 / 1e9:g} Gb/s per client",
        ),
        *_client_fabric(model, net),
        LayerPeak(
            "system",
            "CNode client ports",
            cn.count,
            cn.count * cn.client_nic.node_Bps("egress"),
            cn.count * cn.client_nic.node_Bps("ingress"),
            note=_ports_note(cn.client_nic, "CNode"),
        ),
        LayerPeak(
            "system",
            "CNode fabric ports",
            cn.count,
            cn.count * cn.fabric_nic.node_Bps("ingress"),
            cn.count * cn.fabric_nic.node_Bps("egress") / copies,
            note=f"{_ports_note(cn.fabric_nic, 'CNode')}; writes cross {copies}x (replicas)",
        ),
        LayerPeak(
            "system",
            "NVMe fabric",
            1,
            net.back.describe_bound_Bps(net.dnodes, net.cnodes),
            net.back.describe_bound_Bps(net.cnodes, net.dnodes) / copies,
            note=f"{net.back.describe_note()}; writes cross {copies}x (replicas)",
        ),
        LayerPeak(
            "system",
            "DNode fabric ports",
            dn.count,
            dn.count * dn.fabric_nic.node_Bps("egress"),
            dn.count * dn.fabric_nic.node_Bps("ingress") / copies,
            note=_ports_note(dn.fabric_nic, "DNode"),
        ),
        LayerPeak(
            "system",
            "drives (SCM + QLC)",
            n_scm + n_qlc,
            scm_read + qlc_read,
            scm_write,
            note="reads from wherever the data lives; writes into SCM before migration runs",
        ),
        LayerPeak(
            "tier",
            "SCM drives",
            n_scm,
            scm_read,
            scm_sustained,
            note=f"reads at {tier.scm_read_efficiency:g} of datasheet; writes: {copies} "
            f"replicas at {tier.scm_write_efficiency:g} of datasheet, +1 migration read",
        ),
        LayerPeak(
            "tier",
            "QLC drives",
            n_qlc,
            qlc_read,
            n_qlc * qlc.write_bandwidth * k / (k + m),
            note="reads of aged data; migration",
        ),
    ]
    ports = [layer for layer in layers if layer.scope == "system"][:-1]  # all but the drives
    scm_alone, qlc_alone = (replace(layer, scope="system") for layer in layers[-2:])
    qlc_raw = n_qlc * qlc.capacity
    qlc_usable = qlc_raw * k / (k + m)
    ratio = tier.write_buffer / qlc_usable
    derived: dict[str, float] = {
        "scm_read_GBps": n_scm * scm.read_bandwidth / 1e9,
        "qlc_read_GBps": n_qlc * qlc.read_bandwidth / 1e9,
        "qlc_usable_TB": qlc_usable / 1e12,
        "scm_write_GBps_no_migration": scm_write / 1e9,
        "scm_write_GBps_sustained": scm_sustained / 1e9,
        "buffer_to_qlc_ratio": ratio,
        "qlc_per_buffer": 1.0 / ratio,
    }
    if model.turnover is not None:
        buffer_B = model.turnover.capacity * ratio
        rate = model.turnover.daily_writes / 86400.0
        derived["turnover_buffer_TB"] = buffer_B / 1e12
        derived["turnover_minutes"] = buffer_B / rate / 60.0
    switches: dict[str, int] = {}
    if isinstance(model.fabric, SwitchFabricSpec):
        switches["fabric_switches"] = model.fabric.switches
    return Description(
        system=model.name,
        kind="vast",
        components={
            "clients": cl.count,
            "cnodes": cn.count,
            "dnodes": dn.count,
            "scm_drives": n_scm,
            "qlc_drives": n_qlc,
            **(
                {"fabric_switches": model.fabric.switches}
                if isinstance(model.fabric, SwitchFabricSpec)
                else {}
            ),
        },
        layers=layers,
        bottlenecks={
            "read": bottleneck(layers, "system", "read_Bps"),
            "write": bottleneck(layers, "system", "write_Bps"),
            "read (data in SCM)": bottleneck([*ports, scm_alone], "system", "read_Bps"),
            "read (data on QLC)": bottleneck([*ports, qlc_alone], "system", "read_Bps"),
            "write (migration running)": bottleneck([*ports, scm_alone], "system", "write_Bps"),
        },
        derived=derived,
    )


def _ports_note(nic: NicSpec, node: str) -> str:
    """``"4 x 50 Gb/s per CNode"``: a node's port set (its ``NicPorts``, run in parallel)."""
    return f"{nic.ports} x {nic.port_bandwidth * 8 / 1e9:g} Gb/s per {node}"


def _client_fabric(model: VastModel, net: VastNetwork) -> list[LayerPeak]:
    """The client fabric's max-flow bounds between the model's clients and the CNodes."""
    if net.front is None:
        return []
    placement = model.client.placement
    groups = {net.front.group_of(c) for c in net.clients}
    note = (
        f"{net.front.describe_note()}; {len(net.clients)} clients in {len(groups)} "
        f"{placement.role} group(s) ({placement.policy}), CNodes in io groups"
    )
    return [
        LayerPeak(
            "system",
            "client fabric",
            len(groups),
            net.front.describe_bound_Bps(net.cnodes, net.clients),
            net.front.describe_bound_Bps(net.clients, net.cnodes),
            note=note,
        )
    ]
