"""The networks of a ``vast`` system: the NVMe fabric and the optional client fabric.

Both are the shared :class:`~flashsim.components.fabric.Fabric`:

* the **NVMe fabric** (``[fabric]``, CNodes <-> DNodes): VAST's own switches
  (``topology = "switch"``: one resource of ``switches * switch_bandwidth``
  bytes/s and ``latency`` per traversal, as the first release's private
  switch resource); CNodes and DNodes sit in its ``io`` groups (every group
  on a fabric without roles);
* the **client fabric** (``[client_fabric]``, clients <-> CNodes), optional:
  unset, clients reach the CNodes directly over their HCAs (seed 002 Fig. 1);
  set, client ``k`` sits in the group :class:`~flashsim.components.placement.Placement`
  gives it among the groups of ``client.placement.role``, and CNode ``i`` in
  ``io`` group ``i`` modulo their number.

Flow fidelity crosses :meth:`Fabric.path` (with the UGAL split of
:meth:`VastNetwork.plan` on a dragonfly); request fidelity crosses
:meth:`Fabric.request_hops`, the route chosen when the data reaches the fabric.
Everything here is SI: bytes, seconds, bytes/s.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from typing import Any

import numpy as np
import simpy

from flashsim.components.fabric import Demands, Fabric
from flashsim.components.fabric_spec import fabric_role
from flashsim.components.placement import Placement
from flashsim.engine.flows import Resource
from flashsim.engine.maxmin import FloatArray
from flashsim.engine.simulation import Simulation
from flashsim.systems.vast.model import VastModel

Entry = tuple[Resource, float]
PathEntries = list[Entry]
#: Distinct NVMe-fabric paths kept (reads of aged data have per-object weights).
_BACK_CACHE_SIZE = 4096


def merge(entries: Iterable[tuple[Resource, float]]) -> PathEntries:
    """Path entries with the weights of a resource listed twice added up, in first-seen order."""
    weights: dict[Resource, float] = {}
    for res, w in entries:
        weights[res] = weights.get(res, 0.0) + w
    return list(weights.items())


class VastNetwork:
    """The NVMe fabric and the client fabric of one ``vast`` system, with its endpoints.

    Parameters
    ----------
    model : VastModel
        The model file.
    sim : Simulation
        The simulation (flow network, clock and the ``<name>.placement`` stream).

    Attributes
    ----------
    back : Fabric
        The NVMe fabric between CNodes and DNodes.
    front : Fabric or None
        The client fabric, or ``None`` when clients reach the CNodes directly.
    cnodes, dnodes, clients : list of str
        Endpoint names (``<name>.cnode3``, ``<name>.dnode1``, ``<name>.client17``).
    """

    def __init__(self, model: VastModel, sim: Simulation) -> None:
        name = model.name
        self.sim = sim
        self.cnodes = [f"{name}.cnode{i}" for i in range(model.cnode.count)]
        self.dnodes = [f"{name}.dnode{d}" for d in range(model.dnode.count)]
        self.clients = [f"{name}.client{k}" for k in range(model.client.count)]
        self.back = Fabric(sim, f"{name}.fabric", model.fabric)
        io = fabric_role(model.fabric, "io")
        for i, endpoint in enumerate(self.cnodes):
            self.back.attach(endpoint, io, i)
        for d, endpoint in enumerate(self.dnodes):
            self.back.attach(endpoint, io, d)
        self.front: Fabric | None = None
        if model.client_fabric is not None:
            front = Fabric(sim, f"{name}.client_fabric", model.client_fabric)
            io = fabric_role(model.client_fabric, "io")
            for i, endpoint in enumerate(self.cnodes):
                front.attach(endpoint, io, i)
            spec = model.client.placement
            role = fabric_role(model.client_fabric, spec.role)
            caps = [front.topology.group_capacity[g] for g in front.groups_of(role)]
            placement = Placement(spec, caps, sim.rng(f"{name}.placement"))
            for k, endpoint in enumerate(self.clients):
                front.attach(endpoint, role, placement.group_of(k))
            self.front = front
        self._front_cache: dict[tuple[int, tuple[int, ...], bool], PathEntries] = {}
        self._front_rtt: dict[tuple[int, tuple[int, ...]], float] = {}
        self._per_byte: dict[tuple[str, str, str], float] = {}
        self._back_rtt_s = self.back.latency_s(
            self.cnodes[0], self.dnodes[0]
        ) + self.back.latency_s(self.dnodes[0], self.cnodes[0])
        # The NVMe fabric routes statically (no plan): its entries depend on the arguments only.
        self._back_cache: dict[tuple[tuple[int, ...], bool, bytes], tuple[Entry, ...]] = {}

    # ------------------------------------------------------------- client side
    def plan(self, demands_Bps: Demands) -> None:
        """UGAL split of the client fabric from offered load (endpoint pairs, bytes/s)."""
        if self.front is None:
            return
        self.front.plan(demands_Bps)
        self._front_cache.clear()
        self._front_rtt.clear()

    def front_path(self, client: int, cnodes: Sequence[int], to_cnodes: bool) -> PathEntries:
        """Client-fabric entries of a client's bytes spread evenly over ``cnodes`` (or back)."""
        if self.front is None:
            return []
        key = (client, tuple(cnodes), to_cnodes)
        cached = self._front_cache.get(key)
        if cached is None:
            share = 1.0 / len(cnodes)
            me = self.clients[client]
            pairs = [(me, self.cnodes[c]) if to_cnodes else (self.cnodes[c], me) for c in cnodes]
            cached = merge(e for src, dst in pairs for e in self.front.path(src, dst, share))
            self._front_cache[key] = cached
        return cached

    def front_rtt_s(self, client: int, cnodes: Sequence[int]) -> float:
        """Zero-load client-fabric round trip (s), averaged over the client's CNodes."""
        if self.front is None:
            return 0.0
        key = (client, tuple(cnodes))
        rtt = self._front_rtt.get(key)
        if rtt is None:
            me = self.clients[client]
            legs = [
                self.front.latency_s(me, self.cnodes[c]) + self.front.latency_s(self.cnodes[c], me)
                for c in cnodes
            ]
            rtt = self._front_rtt[key] = float(np.mean(legs))
        return rtt

    # ------------------------------------------------------------- NVMe fabric
    def back_path(
        self, cnodes: Sequence[int], dnode_weights: Sequence[float] | FloatArray, to_dnodes: bool
    ) -> PathEntries:
        """NVMe-fabric entries of bytes between ``cnodes`` (evenly) and the DNodes.

        ``dnode_weights[d]`` is the bytes per user byte to or from DNode ``d``;
        pairs in the same group pair share one route computation (a switch
        fabric is one group: one entry weighing ``sum(dnode_weights)``).
        """
        weights = np.asarray(dnode_weights, dtype=float)
        key = (tuple(cnodes), to_dnodes, weights.tobytes())
        cached = self._back_cache.get(key)
        if cached is not None:
            return list(cached)
        if len(self._back_cache) >= _BACK_CACHE_SIZE:
            self._back_cache.clear()
        by_group: dict[tuple[int, int], float] = {}
        groups_c: dict[int, int] = {}
        for c in cnodes:
            g = self.back.group_of(self.cnodes[c])
            groups_c[g] = groups_c.get(g, 0) + 1
        groups_d: dict[int, list[int]] = {}
        for d, w in enumerate(weights):
            if w > 0:
                groups_d.setdefault(self.back.group_of(self.dnodes[d]), []).append(d)
        for gc, n_c in groups_c.items():
            for gd, members in groups_d.items():
                whole = len(members) == len(weights)
                total = float(weights.sum() if whole else weights[members].sum())
                pair = (gc, gd) if to_dnodes else (gd, gc)
                by_group[pair] = by_group.get(pair, 0.0) + n_c / len(cnodes) * total
        entries = merge(
            e
            for (a, b), share in by_group.items()
            if share > 0
            for e in self.back.group_path(a, b, share)
        )
        self._back_cache[key] = tuple(entries)
        return entries

    def back_rtt_s(self) -> float:
        """Zero-load NVMe-fabric round trip (s): a traversal out and one back.

        Fixed once built: the NVMe fabric routes without a plan.
        """
        return self._back_rtt_s

    def resources(self) -> list[Resource]:
        """Flow resources of both fabrics built so far."""
        found = self.back.resources()
        if self.front is not None:
            found += self.front.resources()
        return found

    # --------------------------------------------------------- request fidelity
    def minimal_service_s(self, fabric: Fabric, src: str, dst: str, size_B: float) -> float:
        """Service time (s) of ``size_B`` bytes at the bundle queues of a minimal route.

        Request fidelity takes it out of the fixed wire time (the ports'
        store-and-forward time already counts the bytes' serialisation), so
        both fidelities have the same zero-load round trip and a fabric queue
        adds only its waiting (and the extra bundles of a non-minimal route).
        """
        key = (fabric.name, src, dst)
        per_byte = self._per_byte.get(key)
        if per_byte is None:
            topo = fabric.topology
            route = topo.minimal(fabric.group_of(src), fabric.group_of(dst))[0]
            per_byte = sum(1.0 / topo.bundles[n].link_Bps for n in route.bundles)
            self._per_byte[key] = per_byte
        return size_B * per_byte

    def cross(
        self, fabric: Fabric, src: str, dst: str, size_B: float, rng: np.random.Generator
    ) -> Generator[simpy.Event, Any, None]:
        """Visit the bundle queues of a route chosen now (when the data reaches the fabric)."""
        for queue, service_s in fabric.request_hops(src, dst, size_B, rng):
            yield queue.visit(service_s)
