"""The networks of a ``vast`` system: the nodes' ports, the NVMe fabric and the client fabric.

Every node's adapters are the shared :class:`~flashsim.components.nic.NicPorts`
(a flow resource and a request queue per port and direction), as every
kind's servers and clients have:

* a client's HCAs: the ``client.mount`` uses ``localports`` of ``client.nic``
  (:attr:`NfsClientModel.ports <flashsim.components.nfs.NfsClientModel.ports>`),
  ports ``<name>.client3.nic0.egress``;
* a CNode's two port sets, ``cnode.client_nic`` towards the clients
  (``<name>.cnode2.client_nic0.ingress``) and ``cnode.fabric_nic`` on the NVMe
  fabric (``<name>.cnode2.fabric_nic3.egress``);
* a DNode's ``dnode.fabric_nic`` (``<name>.dnode1.fabric_nic0.egress``).

A flow crosses every port of a node with its share over the ports (multi-rail:
the ports in parallel are the node's aggregate); a request takes one port, in
turn, and queues there.  The networks are the shared
:class:`~flashsim.components.fabric.Fabric`:

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

Flow fidelity crosses the ports and :meth:`Fabric.path` (with the UGAL split
of :meth:`VastNetwork.plan` on a dragonfly): :meth:`VastNetwork.front_route`
and :meth:`VastNetwork.back_route`.  Request fidelity crosses the sender's
port, :meth:`Fabric.cross` (the route chosen when the data reaches the
fabric) and the receiver's port: :meth:`VastNetwork.send_front` and
:meth:`VastNetwork.send_back`.  Which CNodes a client uses and where replicas
go are the kind's (:mod:`flashsim.systems.vast.topology`).  Everything here is
SI: bytes, seconds, bytes/s.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from typing import Any

import numpy as np
import simpy

from flashsim.components.fabric import Demands, Fabric
from flashsim.components.fabric_spec import fabric_role
from flashsim.components.nfs import NfsClientModel
from flashsim.components.nic import Direction, NicPorts
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


def spread(nics: Iterable[NicPorts], direction: Direction, total: float) -> PathEntries:
    """Flow entries of ``total`` bytes per user byte spread evenly over the nodes of ``nics``."""
    nodes = list(nics)
    if not nodes or not total > 0:
        return []
    share = total / len(nodes)
    return [e for nic in nodes for e in nic.path(direction, share)]


def weighted(
    nics: Sequence[NicPorts], direction: Direction, weights: Sequence[float] | FloatArray
) -> PathEntries:
    """Flow entries of ``weights[i]`` bytes per user byte through node ``i``'s ports."""
    return [
        e
        for nic, w in zip(nics, weights, strict=True)
        if w > 0
        for e in nic.path(direction, float(w))
    ]


class VastNetwork:
    """The ports, the NVMe fabric and the client fabric of one ``vast`` system.

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
    client_nics, cnode_client_nics, cnode_fabric_nics, dnode_nics : list of NicPorts
        The ports of each client (the mount's HCAs), each CNode towards the
        clients and on the NVMe fabric, and each DNode, by node index.
    front_nic, back_nic : dict of str to NicPorts
        The ports of an endpoint on the client side (clients, CNodes) and on
        the NVMe fabric (CNodes, DNodes).
    """

    def __init__(self, model: VastModel, sim: Simulation) -> None:
        name = model.name
        self.sim = sim
        self.cnodes = [f"{name}.cnode{i}" for i in range(model.cnode.count)]
        self.dnodes = [f"{name}.dnode{d}" for d in range(model.dnode.count)]
        self.clients = [f"{name}.client{k}" for k in range(model.client.count)]
        cn, dn = model.cnode, model.dnode
        mount_nic = model.client.nic.model_copy(
            update={"ports": NfsClientModel(model.client).ports}
        )
        self.client_nics = [NicPorts(sim, ep, mount_nic) for ep in self.clients]
        self.cnode_client_nics = [
            NicPorts(sim, ep, cn.client_nic, "client_nic") for ep in self.cnodes
        ]
        self.cnode_fabric_nics = [
            NicPorts(sim, ep, cn.fabric_nic, "fabric_nic") for ep in self.cnodes
        ]
        self.dnode_nics = [NicPorts(sim, ep, dn.fabric_nic, "fabric_nic") for ep in self.dnodes]
        self.front_nic = {nic.name: nic for nic in [*self.client_nics, *self.cnode_client_nics]}
        self.back_nic = {nic.name: nic for nic in [*self.cnode_fabric_nics, *self.dnode_nics]}
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
        self._front_ports: dict[
            tuple[int, tuple[int, ...], bool], tuple[tuple[Entry, ...], tuple[Entry, ...]]
        ] = {}
        # The NVMe fabric routes statically (no plan): its entries depend on the arguments only.
        self._route_cache: dict[tuple[tuple[int, ...], bool, bytes], tuple[Entry, ...]] = {}
        self._migration_cache: dict[tuple[bytes, bytes], tuple[Entry, ...]] = {}
        self._front_rtt: dict[tuple[int, tuple[int, ...]], float] = {}
        self._per_byte: dict[tuple[str, str, str], float] = {}
        self._back_rtt_s = self.back.latency_s(
            self.cnodes[0], self.dnodes[0]
        ) + self.back.latency_s(self.dnodes[0], self.cnodes[0])

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

    def front_route(self, client: int, cnodes: Sequence[int], to_cnodes: bool) -> PathEntries:
        """Flow entries of a client's bytes to ``cnodes`` (evenly), or back: ports and fabric.

        To the CNodes: the client's HCAs (egress), the client fabric (if any),
        the CNodes' client ports (ingress, ``1/len(cnodes)`` each); back, the
        reverse.
        """
        key = (client, tuple(cnodes), to_cnodes)
        ports = self._front_ports.get(key)
        if ports is None:
            out: Direction = "egress" if to_cnodes else "ingress"
            back: Direction = "ingress" if to_cnodes else "egress"
            hca = tuple(self.client_nics[client].path(out))
            cn = tuple(spread((self.cnode_client_nics[c] for c in cnodes), back, 1.0))
            ports = self._front_ports[key] = (hca, cn)
        hca, cn = ports
        fabric = self.front_path(client, cnodes, to_cnodes)
        return [*hca, *fabric, *cn] if to_cnodes else [*cn, *fabric, *hca]

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
        fabric is one group: one entry weighing ``sum(dnode_weights)``).  Not kept:
        :meth:`back_route`, its one caller, keeps what it builds.
        """
        weights = np.asarray(dnode_weights, dtype=float)
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
        return entries

    def back_route(
        self, cnodes: Sequence[int], dnode_weights: Sequence[float] | FloatArray, to_dnodes: bool
    ) -> PathEntries:
        """Flow entries of bytes between ``cnodes`` (evenly) and the DNodes: ports and fabric.

        To the DNodes: the CNodes' fabric ports (egress, ``sum(dnode_weights) /
        len(cnodes)`` each), the NVMe fabric (:meth:`back_path`), DNode ``d``'s
        ports (ingress, ``dnode_weights[d]``); from the DNodes, the reverse.
        Empty when no bytes move.
        """
        weights = np.asarray(dnode_weights, dtype=float)
        key = (tuple(cnodes), to_dnodes, weights.tobytes())
        cached = self._route_cache.get(key)
        if cached is not None:
            return list(cached)
        if len(self._route_cache) >= _BACK_CACHE_SIZE:
            self._route_cache.clear()
        total = float(weights.sum())
        if not total > 0:
            return []
        out: Direction = "egress" if to_dnodes else "ingress"
        back: Direction = "ingress" if to_dnodes else "egress"
        cn = spread((self.cnode_fabric_nics[c] for c in cnodes), out, total)
        dn = weighted(self.dnode_nics, back, weights)
        fabric = self.back_path(cnodes, weights, to_dnodes)
        entries = cn + fabric + dn if to_dnodes else dn + fabric + cn
        self._route_cache[key] = tuple(entries)
        return entries

    def migration_route(self, from_dnodes: FloatArray, to_dnodes: FloatArray) -> PathEntries:
        """Flow entries of bytes read from the DNodes into every CNode and written back out.

        :meth:`back_route` from the DNodes (``from_dnodes[d]`` bytes per
        migrated byte) and to them (``to_dnodes[d]``), through all CNodes
        evenly, a resource crossed both ways counted once with both weights
        (a switch fabric is one resource).  Kept per pair of weight vectors
        (migration runs at a few compressed fractions).
        """
        key = (from_dnodes.tobytes(), to_dnodes.tobytes())
        cached = self._migration_cache.get(key)
        if cached is None:
            if len(self._migration_cache) >= _BACK_CACHE_SIZE:
                self._migration_cache.clear()
            everyone = range(len(self.cnodes))
            cached = self._migration_cache[key] = tuple(
                merge(
                    self.back_route(everyone, from_dnodes, to_dnodes=False)
                    + self.back_route(everyone, to_dnodes, to_dnodes=True)
                )
            )
        return list(cached)

    def back_rtt_s(self) -> float:
        """Zero-load NVMe-fabric round trip (s): a traversal out and one back.

        Fixed once built: the NVMe fabric routes without a plan.
        """
        return self._back_rtt_s

    def resources(self) -> list[Resource]:
        """Flow resources of both fabrics built so far (the ports are the nodes')."""
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
        adds only its waiting (and the extra bundles of a non-minimal route);
        :meth:`Fabric.minimal_service_s
        <flashsim.components.fabric_request.RequestRouting.minimal_service_s>`,
        kept per endpoint pair.
        """
        key = (fabric.name, src, dst)
        per_byte = self._per_byte.get(key)
        if per_byte is None:
            per_byte = self._per_byte[key] = fabric.minimal_service_s(src, dst, 1.0)
        return size_B * per_byte

    def front_service_s(self, src: str, dst: str, size_B: float) -> float:
        """Zero-load service (s) of ``size_B`` bytes from ``src`` to ``dst`` on the client side.

        One port of each end (:meth:`NicPorts.service_s
        <flashsim.components.nic.NicPorts.service_s>`) and the client
        fabric's minimal route, if there is one: what :meth:`send_front` adds
        at zero load, which request fidelity takes out of the fixed wire time.
        """
        s = self.front_nic[src].service_s("egress", size_B)
        s += self.front_nic[dst].service_s("ingress", size_B)
        if self.front is not None:
            s += self.minimal_service_s(self.front, src, dst, size_B)
        return s

    def back_service_s(self, src: str, dst: str, size_B: float) -> float:
        """Zero-load service (s) of ``size_B`` bytes from ``src`` to ``dst`` on the NVMe fabric.

        One fabric port of each end and the fabric's minimal route: what
        :meth:`send_back` adds at zero load.
        """
        s = self.back_nic[src].service_s("egress", size_B)
        s += self.back_nic[dst].service_s("ingress", size_B)
        return s + self.minimal_service_s(self.back, src, dst, size_B)

    def send_front(
        self, src: str, dst: str, size_B: float, rng: np.random.Generator
    ) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: ``size_B`` bytes between a client and a CNode, either way.

        Out of a port of ``src``, across the client fabric (if any; route
        chosen now), into a port of ``dst``; each port a queue.
        """
        yield self.front_nic[src].visit("egress", size_B)
        if self.front is not None:
            yield from self.front.cross(src, dst, size_B, rng)
        yield self.front_nic[dst].visit("ingress", size_B)

    def send_back(
        self, src: str, dst: str, size_B: float, rng: np.random.Generator
    ) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: ``size_B`` bytes between a CNode and a DNode, either way.

        Out of a fabric port of ``src``, across the NVMe fabric (route chosen
        now), into a fabric port of ``dst``; each port a queue.
        """
        yield self.back_nic[src].visit("egress", size_B)
        yield from self.back.cross(src, dst, size_B, rng)
        yield self.back_nic[dst].visit("ingress", size_B)
