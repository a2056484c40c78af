"""A storage controller shared by several servers (e.g. a DDN S2A "couplet").

Every byte between the servers and the controller's RAID tiers crosses the
controller; reads and writes share its time.  It is one component in both
fidelities, from one set of parameters:

* flow fidelity: one time-based resource (one busy-second per second); an
  operation of ``size`` bytes weighs ``size / bandwidth(op)`` seconds on it;
* request fidelity: one FIFO server with that service time.

So both saturate at ``bandwidth(op)`` bytes/s.  The controller's bandwidth is
host-side (user) bytes: RAID parity is computed behind it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import simpy
from pydantic import Field

from flashsim.config import Bandwidth, StrictModel
from flashsim.engine.flows import Resource
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation

OpKind = Literal["read", "write"]


class ControllerSpec(StrictModel):
    """A RAID controller (or an active/active pair) shared by ``servers`` consecutive servers.

    Attributes
    ----------
    name : str
        Model name, for reports.
    servers : int
        Servers cabled to one controller; servers ``k * servers .. (k + 1) * servers - 1``
        share controller ``k``.
    read_bandwidth, write_bandwidth : float
        Host-side bytes/s the controller moves for reads and for writes.
    """

    name: str = Field("", description="Controller model, for reports.")
    servers: Annotated[int, Field(ge=1)] = Field(
        description=(
            "Servers sharing one controller: servers k*servers .. (k+1)*servers-1 "
            "sit behind controller k."
        )
    )
    read_bandwidth: Bandwidth = Field(
        description="Host-side bytes/s the controller delivers for reads (all its tiers)."
    )
    write_bandwidth: Bandwidth = Field(
        description="Host-side bytes/s the controller accepts for writes (all its tiers)."
    )

    def bandwidth_Bps(self, op: OpKind) -> float:
        """Bytes/s of ``op`` through one controller."""
        return float(self.read_bandwidth if op == "read" else self.write_bandwidth)

    def busy_s(self, op: OpKind, size_B: float) -> float:
        """Controller time (s) one ``op`` of ``size_B`` bytes holds it."""
        return size_B / self.bandwidth_Bps(op)

    def index_of(self, server: int) -> int:
        """Controller index of server ``server``."""
        return server // self.servers


@dataclass
class Controller:
    """One controller in a simulation: its flow resource and its request queue."""

    name: str
    spec: ControllerSpec
    resource: Resource
    queue: FifoQueue

    def path(self, op: OpKind, size_B: float, share: float = 1.0) -> list[tuple[Resource, float]]:
        """Flow path entry for ``share`` of a flow of ``size_B``-byte operations."""
        return [(self.resource, share * self.spec.busy_s(op, size_B))]

    def visit(self, op: OpKind, size_B: float) -> simpy.Timeout:
        """Request fidelity: one operation's pass through the controller."""
        return self.queue.visit(self.spec.busy_s(op, size_B))


def build_controller(sim: Simulation, name: str, spec: ControllerSpec) -> Controller:
    """Controller ``name`` (resource and queue ``{name}``) in ``sim``."""
    resource = sim.flows.add_resource(name, capacity_ops=1.0, kind="controller")
    queue = FifoQueue(sim.env, name, 1, kind="controller")
    return Controller(name=name, spec=spec, resource=resource, queue=queue)
