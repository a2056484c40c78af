"""Where a Lustre system's clients and servers sit on its fabric, and what the fabric carries.

Servers sit in the fabric's ``io`` groups (dealt round robin), clients in the
groups of ``client.placement.role``; fabrics without roles (a switch, a fat
tree) take both in all their groups.
"""

from __future__ import annotations

from flashsim.components.fabric import Fabric
from flashsim.components.fabric_spec import DragonflySpec, FatTreeSpec, fabric_role
from flashsim.components.placement import UNLIMITED_SLOTS
from flashsim.engine.simulation import Simulation
from flashsim.systems.lustre.model import LustreModel


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
    io_groups = len(fabric.groups_of(fabric_role(model.fabric, "io")))
    for i, name in enumerate(servers):
        fabric.attach(name, "io", i % io_groups)
    groups = fabric.groups_of(fabric_role(model.fabric, placement.role))
    used = groups[: placement.groups] if placement.groups else groups
    clients = [f"client{k}" for k in range(len(used))]
    for name, k in zip(clients, range(len(used)), strict=True):
        fabric.attach(name, placement.role, k)
    write = fabric.describe_bound_Bps(clients, servers)
    read = fabric.describe_bound_Bps(servers, clients)
    note = (
        f"{fabric.routing} routing, clients in {len(used)} {placement.role} group(s), "
        f"servers in {io_groups} io group(s)"
    ) + fabric.bound_caveat()
    return write, read, note


def role_groups(model: LustreModel, role: str) -> int:
    """Groups of ``role`` in the model's fabric (every group when it has no roles)."""
    fabric = model.fabric
    if isinstance(fabric, DragonflySpec):
        return sum(g.count for g in fabric.groups if g.role == role)
    return fabric.leaves if isinstance(fabric, FatTreeSpec) else 1


def client_slots(model: LustreModel) -> int:
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
