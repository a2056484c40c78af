"""What one Lustre server operation costs at each stage, for both fidelities.

:func:`op_cost` turns a target's RAID geometry and drive datasheet into the
busy time of every stage (CPU, RAID engine, drive command and data stages,
PCIe links) and the zero-load round trip of one RPC, stage by stage as
request fidelity visits them.  Flow paths weight each resource by these busy
times, so a flow saturates where the queues saturate.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import simpy

from flashsim.components.raid import DriveOp
from flashsim.engine.flows import Resource
from flashsim.systems.lustre_model import LustreModel
from flashsim.systems.lustre_nodes import DriveStage, OpCost, OpKind, OstNode, data_directions


def op_cost(
    model: LustreModel,
    ost: OstNode,
    op: OpKind,
    size_B: float,
    sequential: bool,
    ops_per_rpc: int = 1,
    fabric_s: float = 0.0,
) -> OpCost:
    """Busy times and zero-load round trip of one server operation on ``ost``.

    Parameters
    ----------
    model : LustreModel
        The system.
    ost : OstNode
        Target.
    op : {"read", "write"}
    size_B : float
        Bytes of the operation (an RPC, or one page of a many-page RPC).
    sequential : bool
        Part of a streaming access (full-stripe writes).
    ops_per_rpc : int
        Operations sharing one RPC (the RPC cost is split among them).
    fabric_s : float
        One-way latency (s) of the fabric between the client and the server.
    """
    spec = model.oss
    raid = spec.raid
    drive = ost.drive
    eff = ost.stack_eff[op]
    stages: list[DriveStage] = []
    raid_s = 0.0
    if op == "read":
        ops: list[DriveOp] = raid.read_ops(size_B)
        big = size_B > raid.chunk
        stages = [DriveStage(o.op, o.size_B, o.count, big) for o in ops]
    else:
        full = sequential and size_B >= raid.stripe_data_B
        ops = raid.write_ops(size_B, aligned_full=full)
        if raid.is_sub_stripe(size_B) and not full:
            raid_s = spec.sub_stripe_write_cost
            stages = [DriveStage(o.op, o.size_B, o.count, False) for o in ops]
        else:
            stages = [DriveStage(o.op, o.size_B, o.count, True) for o in ops]
    cmd = sum(s.count * drive.cmd_s(s.op, s.size_B) for s in stages)
    # The stack efficiency of the user operation paces all its drive transfers
    # (the reads of a read-modify-write belong to a write).
    xfer = sum(s.count * drive.xfer_s(s.op, s.size_B) / eff for s in stages)
    up = sum(s.count * s.size_B for s in stages if s.op == "read")
    down = sum(s.count * s.size_B for s in stages if s.op == "write")
    cpu_s = spec.rpc_cost / max(ops_per_rpc, 1)
    # Zero-load round trip, stage by stage as request fidelity visits them.
    client = model.client
    c_dir, s_dir = data_directions(op)
    nic_s = size_B / client.nic.port_Bps(c_dir) + size_B / spec.nic.port_Bps(s_dir)
    wire = 2.0 * (fabric_s + client.nic.latency + spec.nic.latency)
    link = spec.drive_link.bandwidth_Bps if spec.drive_link is not None else math.inf
    drive_lat = 0.0
    delay = 0.0
    for s in stages:
        per_visit = s.count / ost.n_drives if s.spread else 1.0
        c = per_visit * drive.cmd_s(s.op, s.size_B)
        x = per_visit * drive.xfer_s(s.op, s.size_B) / eff
        drive_lat += max(c, x)
        delay += drive.delay_s(s.op, s.size_B) + per_visit * s.size_B / link
    fixed = client.lustre.syscall_overhead / max(ops_per_rpc, 1) + wire + delay
    latency = fixed + nic_s + cpu_s + raid_s + drive_lat
    return OpCost(
        op=op,
        size_B=size_B,
        cpu_s=cpu_s,
        raid_s=raid_s,
        stages=tuple(stages),
        drive_cmd_s=cmd,
        drive_xfer_s=xfer,
        pcie_up_B=up,
        pcie_down_B=down,
        latency_s=latency,
        fixed_delay_s=fixed,
        nic_s=nic_s,
    )


def ost_path(ost: OstNode, cost: OpCost, share: float = 1.0) -> list[tuple[Resource, float]]:
    """Flow path (resource, weight) through a target's RAID engine, drives and links."""
    n = ost.n_drives
    path: list[tuple[Resource, float]] = []
    if cost.raid_s > 0 and ost.raid is not None:
        path.append((ost.raid, share * cost.raid_s))
    for i in range(n):
        if cost.drive_cmd_s > 0:
            path.append((ost.cmd[i], share * cost.drive_cmd_s / n))
        if cost.drive_xfer_s > 0:  # an HDD's transfer is part of its command time
            path.append((ost.xfer[i], share * cost.drive_xfer_s / n))
        if cost.pcie_up_B > 0 and ost.link_up:
            path.append((ost.link_up[i], share * cost.pcie_up_B / cost.size_B / n))
        if cost.pcie_down_B > 0 and ost.link_down:
            path.append((ost.link_down[i], share * cost.pcie_down_B / cost.size_B / n))
    return path


def visit_drives(
    env: simpy.Environment, ost: OstNode, cost: OpCost
) -> Generator[simpy.Event, Any, None]:
    """Request fidelity: one operation's drive stages on ``ost``, stage after stage.

    A spread stage visits every drive with ``count / drives`` of its work; a
    small one visits ``count`` distinct drives picked at random.  Each drive
    visit takes its command and data stages at once and ends with the later.
    """
    drive = ost.drive
    eff = ost.stack_eff[cost.op]
    for stage in cost.stages:
        if stage.spread:
            per = stage.count / ost.n_drives
            drives = list(range(ost.n_drives))
        else:
            per = 1.0
            drives = ost.pick(min(round(stage.count), ost.n_drives))
        cmd_s = per * drive.cmd_s(stage.op, stage.size_B)
        xfer_s = per * drive.xfer_s(stage.op, stage.size_B) / eff
        events: list[simpy.Event] = []
        for d in drives:
            factor = ost.variability.next() if ost.variability is not None else 1.0
            events.append(ost.q_cmd[d].visit(cmd_s * factor))
            events.append(ost.q_xfer[d].visit(xfer_s))
            if stage.op == "write":
                ost.states[d].record_write(per * stage.size_B)
        if len(events) == 2:
            # Both visits start now; wait for the later one.
            yield events[0]
            if not events[1].triggered:
                yield events[1]
        else:
            yield env.all_of(events)
