"""A Lustre system assembled in a simulation: its servers, clients and fabric, built on use.

Components and how they appear in each fidelity (one set of parameters):

================  =========================================  ===============================
component         flow fidelity (resource, capacity)          request fidelity (queue)
================  =========================================  ===============================
NIC port          bytes/s per direction (line x efficiency)  1 server, ``s / port_Bps``
fabric links      bytes/s per direction (links x bandwidth)  ``links`` servers, ``s / link``
OSS CPU           core-seconds/s = cores                     ``cores`` servers, RPC cost
RAID engine       thread-seconds/s = threads                 ``threads`` servers, RMW cost
drive command     unit-seconds/s = parallelism               ``parallelism`` servers
drive data path   seconds/s = 1                              1 server, ``s / bw / eff``
drive PCIe link   bytes/s per direction                      (pure latency)
client OSC        bytes/s = slots x op / L (RPCs in flight)  semaphore of ``slots``
================  =========================================  ===============================

A flow crossing a time-based resource (capacity in busy-seconds per second)
carries a weight equal to the busy time one operation costs there, so the
flow's saturation rate equals the queue's saturation throughput: the two
fidelities agree by construction wherever a capacity binds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from flashsim.components.fabric import Fabric
from flashsim.components.fabric_spec import fabric_role
from flashsim.components.placement import Placement
from flashsim.components.raid_controller import Controller, build_controller
from flashsim.components.raid_target import RaidTarget
from flashsim.components.target import TargetSpec
from flashsim.components.target_life import TargetLife
from flashsim.components.target_state import StatefulTarget
from flashsim.engine.flows import Resource
from flashsim.engine.simulation import Simulation
from flashsim.systems.base import BuiltSystem, Fidelity, no_such
from flashsim.systems.lustre.model import LustreModel
from flashsim.systems.lustre.nodes import (
    ClientNode,
    OpCost,
    OpKind,
    OstNode,
    ServerNode,
    build_client,
    build_server,
    data_directions,
)


class LustreCore(BuiltSystem):
    """Servers, targets, clients and the fabric of a Lustre system, built on first use.

    Parameters
    ----------
    model : LustreModel
        The model file.
    sim : Simulation
        The simulation.
    fidelity : {"flow", "request"}
        Default fidelity of IOR phases.
    """

    def __init__(self, model: LustreModel, sim: Simulation, fidelity: Fidelity) -> None:
        super().__init__(sim, fidelity)
        self.model = model
        self.servers: dict[int, ServerNode] = {}
        self.clients: dict[int, ClientNode] = {}
        #: obdfilter-survey bandwidths of a fleet survey, by its settings (fleet.py).
        self.survey_cache: dict[tuple[Any, ...], NDArray[np.float64]] = {}
        #: Failed OSSes and the partner serving their targets (``fail-server`` events).
        self.failed_over: dict[int, int] = {}
        #: External RAID controllers (``oss.controller``), built on first use, by index.
        self.controllers: dict[int, Controller] = {}
        #: The OSTs' target type (``oss.target_spec()``), one per built system: it builds
        #: every OST and its life (the lives of identical RAID OSTs share its aging memo).
        self.ost_spec: TargetSpec = model.oss.target_spec()
        #: Each built OST's life (aging, failures, rebuild, TRIM), by OST index.
        self.lives: dict[int, StatefulTarget] = {}
        self.fabric = Fabric(sim, f"{model.name}.fabric", model.fabric)
        self._io_groups = len(self.fabric.groups_of(fabric_role(model.fabric, "io")))
        spec = model.client.placement
        capacities = [
            self.fabric.topology.group_capacity[g]
            for g in self.fabric.groups_of(fabric_role(model.fabric, spec.role))
        ]
        self.placement = Placement(spec, capacities, sim.rng(f"{model.name}.placement"))

    @property
    def n_osts(self) -> int:
        """Object storage targets in the system."""
        return self.model.oss.count * self.model.oss.targets_per_server

    def server(self, index: int) -> ServerNode:
        """OSS ``index``, built on first use and attached to its I/O group."""
        if index in self.servers:
            return self.servers[index]
        if not 0 <= index < self.model.oss.count:
            raise ValueError(f"OSS index {index} is outside 0..{self.model.oss.count - 1}")
        name = f"{self.model.name}.oss{index}"
        node = build_server(
            self.sim, name, index, self.model.oss, self.ost_spec, self.controller_of(index)
        )
        per = self.model.oss.targets_per_server
        for t, ost in enumerate(node.osts):
            self.lives[index * per + t] = self.ost_spec.build_life(self.sim, ost, self.fidelity)
        self.fabric.attach(name, fabric_role(self.model.fabric, "io"), self.server_group(index))
        self.servers[index] = node
        return node

    def controller_of(self, server: int) -> Controller | None:
        """The external RAID controller OSS ``server`` sits behind (``None`` without one)."""
        spec = self.model.oss.controller
        if spec is None:
            return None
        k = spec.index_of(server)
        if k not in self.controllers:
            name = f"{self.model.name}.controller{k}"
            self.controllers[k] = build_controller(self.sim, name, spec)
        return self.controllers[k]

    def server_group(self, index: int) -> int:
        """I/O group (index among the ``io`` groups) of OSS ``index``: dealt round robin."""
        return index % self._io_groups

    def client(self, index: int) -> ClientNode:
        """Compute node ``index``, built on first use and attached to its compute group."""
        if index in self.clients:
            return self.clients[index]
        name = f"{self.model.name}.client{index}"
        node = build_client(self.sim, name, self.model.client.nic)
        self.fabric.attach(name, self.model.client.placement.role, self.placement.group_of(index))
        self.clients[index] = node
        return node

    def ost(self, index: int) -> tuple[ServerNode, OstNode]:
        """The server serving OST ``index`` now (its own OSS, or the partner it failed over to)
        and the target."""
        per = self.model.oss.targets_per_server
        home = index // per
        target = self.server(home).osts[index % per]
        return self.server(self.failed_over.get(home, home)), target

    # ......................................................... failover
    def server_count(self) -> int:
        """OSSes in the system."""
        return self.model.oss.count

    def partner(self, index: int) -> int:
        """The high-availability partner of OSS ``index``: OSSes ``2k`` and ``2k + 1`` share
        their dual-ported drives (seed 000 §II-B: each drive "dual-ported", attached to its
        active OSS; the pairing by index is ASSUMED)."""
        other = index ^ 1
        if other >= self.model.oss.count:
            raise ValueError(f"server: OSS {index} has no partner ({self.model.oss.count} OSSes)")
        return other

    def fail_server(self, index: int) -> None:
        """OSS ``index`` fails: its partner serves its targets through its own NIC and CPU.

        Flows started from now on take the partner's path; flows already
        running keep theirs (a flow's path is fixed when it starts).
        """
        if not 0 <= index < self.model.oss.count:
            raise ValueError(f"server: OSS {index} is outside 0..{self.model.oss.count - 1}")
        if index in self.failed_over:
            raise ValueError(f"server: OSS {index} has failed already")
        partner = self.partner(index)
        if partner in self.failed_over:
            raise ValueError(
                f"server: OSS {index}'s partner OSS {partner} has failed too: its targets "
                "would have no server"
            )
        self.failed_over[index] = partner
        self.sim.state_changed(f"{self.model.name}.oss{index}: failed over to oss{partner}")

    def restore_server(self, index: int) -> None:
        """OSS ``index`` serves its own targets again."""
        if self.failed_over.pop(index, None) is None:
            raise ValueError(f"server: OSS {index} has not failed")
        self.sim.state_changed(f"{self.model.name}.oss{index}: restored")

    # ...................................................... target state
    def target_count(self) -> int:
        """OSTs in the system."""
        return self.n_osts

    def target(self, index: int) -> StatefulTarget:
        """OST ``index``'s life (its server built on first use); ``ValueError("target: ...")``."""
        if not (isinstance(index, int) and 0 <= index < self.n_osts):
            raise no_such("target", "OST", index, self.n_osts)
        self.ost(index)
        return self.lives[index]

    def raid_ost(self, index: int, what: str) -> tuple[ServerNode, RaidTarget]:
        """:meth:`ost` for a study of RAID arrays (``what``: the phase), or one
        ``ValueError("workload: ...")`` when the model's OSTs are another target type."""
        server, ost = self.ost(index)
        if not isinstance(ost, RaidTarget):
            raise self.model.oss.raid_only_error(what)
        return server, ost

    def raid_life(self, index: int, what: str) -> TargetLife:
        """:meth:`target` for a study of RAID arrays (``what``: the phase), or one
        ``ValueError("workload: ...")`` when the model's OSTs are another target type."""
        life = self.target(index)
        if not isinstance(life, TargetLife):
            raise self.model.oss.raid_only_error(what)
        return life

    def built_targets(self) -> list[tuple[int, StatefulTarget]]:
        """The OSTs built so far (index, life), in index order; the others are fresh."""
        return [(i, self.lives[i]) for i in sorted(self.lives)]

    def server_path(
        self, server: ServerNode, ost: OstNode, cost: OpCost, share: float = 1.0
    ) -> list[tuple[Resource, float]]:
        """Flow path (resource, weight) through ``server`` and ``ost`` for ``share`` of a flow."""
        _, s_dir = data_directions(cost.op)
        path = server.nic.path(s_dir, share)
        if cost.cpu_s > 0:
            path.append((server.cpu, share * cost.cpu_s))
        path.extend(ost.path(cost.target, share))
        return path

    def account_wear(self) -> None:
        """Add the bytes flows wrote to each drive (its PCIe down-link) to its wear state.

        Request fidelity records each write as it happens; flows are accounted here,
        once per phase, from the links' byte counters.
        """
        moved = self.sim.flows.bytes_moved
        for server in self.servers.values():
            for ost in server.osts:
                ost.account_wear(moved)

    def ost_peak_Bps(self, op: OpKind, targets: int = 1) -> float:
        """Nominal bandwidth (bytes/s) of ``targets`` OSTs (:meth:`TargetSpec.peak_Bps`)."""
        return targets * self.ost_spec.peak_Bps(op)

    def ost_peak_iops(self, op: OpKind, targets: int = 1, size_B: float = 4096.0) -> float:
        """Nominal operations/s of ``targets`` OSTs (:meth:`TargetSpec.peak_iops`)."""
        return targets * self.ost_spec.peak_iops(op, size_B)
