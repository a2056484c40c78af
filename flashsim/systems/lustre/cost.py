"""What one Lustre server operation costs at each stage, for both fidelities.

:func:`op_cost` adds to a target's cost
(:meth:`~flashsim.components.target.StorageTarget.cost`: a RAID target's engine,
drive stages and PCIe links, or a tier's SCM and QLC) the server's RPC
handling, both NICs, the fabric latency and the client's per-call overhead,
and gives the zero-load round trip of one RPC, stage by stage as request
fidelity visits them.  Flow paths weight each
resource by these busy times, so a flow saturates where the queues saturate.
"""

from __future__ import annotations

from flashsim.systems.lustre.model import LustreModel
from flashsim.systems.lustre.nodes import OpCost, OpKind, OstNode, data_directions


def op_cost(
    model: LustreModel,
    ost: OstNode,
    op: OpKind,
    size_B: float,
    sequential: bool,
    ops_per_rpc: int = 1,
    fabric_s: float = 0.0,
    obj: str = "",
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
    obj : str
        The object (file) the operation touches on ``ost`` (what an
        object-aware target, a tier, costs by; ignored by a RAID target).
    """
    spec = model.oss
    target = ost.cost(op, size_B, sequential, obj)
    cpu_s = spec.rpc_cost / max(ops_per_rpc, 1)
    client = model.client
    c_dir, s_dir = data_directions(op)
    nic_s = size_B / client.nic.port_Bps(c_dir) + size_B / spec.nic.port_Bps(s_dir)
    wire = 2.0 * (fabric_s + client.nic.latency + spec.nic.latency)
    fixed = client.lustre.syscall_overhead / max(ops_per_rpc, 1) + wire + target.delay_s
    latency = fixed + nic_s + cpu_s + target.raid_s + target.drive_latency_s
    return OpCost(
        op=op,
        size_B=size_B,
        cpu_s=cpu_s,
        target=target,
        latency_s=latency,
        fixed_delay_s=fixed,
        nic_s=nic_s,
        wire_s=wire,
    )
