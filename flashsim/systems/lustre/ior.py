"""IOR on Lustre: which targets each rank's file uses, its flow path, and its requests.

A rank's flow crosses its node's NIC ports, the fabric to each server, the
server side of its file's stripe set (stored once as a shared segment) and
its node's OSC windows for that stripe set.  Request fidelity visits the
same stages, one RPC at a time.
"""

from __future__ import annotations

import itertools
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import simpy

from flashsim.components.fabric_spec import fabric_role
from flashsim.components.target import StorageTarget, TargetCost
from flashsim.engine.flows import Flow, Resource, Segment
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation
from flashsim.systems.base import Fidelity
from flashsim.systems.lustre.core import LustreCore
from flashsim.systems.lustre.cost import op_cost
from flashsim.systems.lustre.locks import ExtentLocks, handoff_s, ior_conflict_probability
from flashsim.systems.lustre.model import LustreModel
from flashsim.systems.lustre.nodes import (
    ClientNode,
    OpCost,
    OpKind,
    ServerNode,
    data_directions,
)
from flashsim.workloads.ior import IorPhase, RankStream

#: Request fidelity: most server operations one rank keeps in flight (buffered
#: writes could otherwise ask for thousands; a few dozen saturate any server).
MAX_REQUEST_CONCURRENCY = 32

PathEntries = list[tuple[Resource | Segment, float]]

#: A target's cost within a kind of call: (OST index, object; "" for a target whose costs
#: do not depend on the object).
CostKey = tuple[int, str]


@dataclass
class RankContext:
    """Per-rank state of an IOR phase (request fidelity), and the targets its flows cross.

    ``cost`` is the first target's; an object-aware target's own cost (where
    the file's bytes live on it) is in ``costs``, by OST index.  ``crossed``
    holds each object-aware target a write flow of the rank crosses, with its
    cost and its share of the flow's bytes (:meth:`LustreIor.flows_started`).
    """

    node: ClientNode
    targets: list[int]
    cost: OpCost
    gated: bool
    costs: dict[int, OpCost] = field(default_factory=dict)
    crossed: tuple[tuple[StorageTarget, TargetCost, float], ...] = ()
    counter: itertools.count[int] = field(default_factory=itertools.count)
    #: Extent locks of the file's objects a write must take first (by target), and the
    #: expected hand-off time per byte written (s/B); empty when writes do not conflict.
    locks: dict[int, FifoQueue] = field(default_factory=dict)
    lock_s_per_B: float = 0.0


@dataclass
class PathCache:
    """Paths built for one batch of streams, keyed by what they depend on.

    Attributes
    ----------
    costs : dict
        Per kind of call (``op_key``): each target's :class:`OpCost`, by
        (target, object) (the object is empty for a target that is not
        object-aware: its cost is the same for every file).
    stripes, routes, oscs : dict
        Server side of a stripe set, its fabric route from a client group, and
        a client's OSC windows for it.
    aware : dict
        Per stripe set: which of its targets are object-aware, and the
        objects of a file on it when none is (all empty).
    crossed : dict
        Per stripe set, kind of call and objects: the targets a flow is
        announced to, with their costs and shares (:attr:`RankContext.crossed`).
    """

    costs: dict[tuple[Any, ...], dict[CostKey, OpCost]] = field(default_factory=dict)
    stripes: dict[tuple[Any, ...], tuple[PathEntries, float]] = field(default_factory=dict)
    routes: dict[tuple[Any, ...], PathEntries] = field(default_factory=dict)
    oscs: dict[tuple[Any, ...], PathEntries] = field(default_factory=dict)
    aware: dict[tuple[int, ...], tuple[tuple[bool, ...], tuple[str, ...] | None]] = field(
        default_factory=dict
    )
    crossed: dict[tuple[Any, ...], tuple[tuple[StorageTarget, TargetCost, float], ...]] = field(
        default_factory=dict
    )


class LustreIor(LustreCore):
    """The IOR protocol (:class:`~flashsim.workloads.ior.IorRunner`) on a Lustre system.

    Attributes
    ----------
    share_stripe_sets : bool
        Store each stripe set's server paths (and each client's OSCs for it)
        once, as shared flow segments, so a rank striped over S targets costs
        O(1) instead of O(S).  ``False`` expands them into every rank's path:
        the same results, at ranks x targets cost (kept to test that).
    """

    share_stripe_sets: bool = True

    def __init__(self, model: LustreModel, sim: Simulation, fidelity: Fidelity) -> None:
        super().__init__(model, sim, fidelity)
        self._ranks: list[RankContext] = []
        # Shared flow segments: stripe sets (server side) and each client's OSCs for them.
        self._stripe_segments: dict[tuple[Any, ...], Segment] = {}
        self._stripe_sets_made = 0  # segments made, for unique names after a _forget_stripe_sets
        self._osc_segments: dict[tuple[Any, ...], Segment] = {}
        self._route_segments: dict[tuple[Any, ...], Segment] = {}
        self._route_rng = sim.rng(f"{model.name}.routing")
        #: Files each IOR dataset was written as (file per process), by dataset name.
        self._dataset_files: dict[str, int] = {}
        self.locks = ExtentLocks(sim, f"{model.name}.ldlm")
        # A stripe set's segment holds its targets' costs and servers as they were when it
        # was made: a state change (a failure, a failover) or a new phase (drives aged by the
        # last one) makes new ones for the flows that start from then on.
        sim.add_state_listener(self._forget_stripe_sets)

    def _forget_stripe_sets(self, _label: str = "") -> None:
        """Make stripe-set segments anew from the targets' state now (running flows keep theirs)."""
        self._stripe_segments.clear()

    def _targets(self, phase: IorPhase, rank: int) -> list[int]:
        lc = self.model.client.lustre
        count = phase.layout.stripe_count or lc.stripe_count
        count = min(count, self.n_osts)
        if phase.layout.first_target is not None:
            first = phase.layout.first_target
        else:
            first = (self._file_index(phase, rank) * count) % self.n_osts
        return [(first + k) % self.n_osts for k in range(count)]

    def _file_index(self, phase: IorPhase, rank: int) -> int:
        """The file ``rank`` accesses (0 for a shared file).

        A read of a dataset written as fewer files than it has readers wraps
        round them, as the IOR runner wraps their sizes: the file and its
        targets are one a writer wrote.
        """
        if not phase.file_per_process:
            return 0
        index = phase.file_of(rank)
        written = self._dataset_files.get(phase.dataset or "")
        if phase.operation == "read" and written:
            index %= written
        return index

    def ior_prepare(self, phase: IorPhase, repetition: int) -> None:
        """Build the clients and targets the phase touches.

        The OSS keeps no object data in DRAM unless ``read_cache`` is set, and
        client caches hold no data a later read can hit (``drop_caches`` and
        ``-C`` as the seed ran them), so nothing else needs resetting.
        """
        self._forget_stripe_sets()
        if phase.operation == "write" and phase.dataset is not None and phase.file_per_process:
            self._dataset_files[phase.dataset] = phase.ranks
        for node in range(phase.first_node, phase.first_node + phase.nodes):
            self.client(node)
        for r in range(phase.ranks):
            for t in self._targets(phase, r):
                self.ost(t)

    def ior_streams(self, phase: IorPhase) -> list[RankStream]:
        """Per-rank flow paths and caps; also prepares request-fidelity contexts."""
        self.fabric.plan(self._offered(phase))
        cache = PathCache()
        streams: list[RankStream] = []
        self._ranks = []
        conflict = 0.0
        if phase.operation == "write" and not phase.file_per_process:
            conflict = ior_conflict_probability(
                phase.nodes,
                phase.ranks_per_node,
                phase.block_size,
                float(self.model.client.lustre.stripe_size),
            )
        for r in range(phase.ranks):
            obj = self.ior_object(phase, r)  # a shared file's object is the file itself
            stream, ctx = self.access_stream(
                phase.node_of(r),
                tuple(self._targets(phase, r)),
                phase.operation,
                phase.transfer_size,
                phase.access == "sequential",
                phase.direct_io,
                phase.ranks_per_node,
                cache,
                lock_file=None if phase.file_per_process else obj,
                write_conflict=conflict,
                obj=obj,
            )
            self._ranks.append(ctx)
            streams.append(stream)
        return streams

    def ior_object(self, phase: IorPhase, rank: int) -> str:
        """The file ``rank`` accesses, as the object its targets keep: the dataset (the
        phase's name without one) and, file per process, the file's rank."""
        dataset = f"ior:{phase.dataset or phase.name}"
        return f"{dataset}/{self._file_index(phase, rank)}" if phase.file_per_process else dataset

    def access_stream(
        self,
        node_index: int,
        targets: tuple[int, ...],
        op: OpKind,
        transfer_B: float,
        sequential: bool,
        direct_io: bool,
        ranks_per_node: int,
        cache: PathCache,
        lock_file: str | None = None,
        write_conflict: float = 0.0,
        obj: str = "",
    ) -> tuple[RankStream, RankContext]:
        """One rank's flow path, caps and request context for one kind of call.

        Parameters
        ----------
        node_index : int
            Client node of the rank.
        targets : tuple of int
            OSTs of the file's stripe set, in stripe order.
        op : {"read", "write"}
            Direction.
        transfer_B : float
            Bytes per application call (IOR's ``-t``).
        sequential, direct_io : bool
            Access pattern and ``O_DIRECT``.
        ranks_per_node : int
            Ranks sharing the node (they share its write-back cache).
        cache : PathCache
            Paths already built for the same kind of call (shared segments).
        lock_file : str or None
            Key of the file the rank writes, whose objects' extent locks its
            writes may have to take from another node
            (:mod:`flashsim.systems.lustre.locks`).
        write_conflict : float
            Chance a write finds its stripe's lock on another node (0 for a
            file only this node writes).
        obj : str
            The file the rank accesses: its object on each target (object-aware
            targets cost and cache their paths by it; others ignore it).
        """
        lc = self.model.client.lustre
        write = op == "write"
        t = transfer_B
        op_B = lc.server_op_B(t, sequential, direct_io, write)
        per_rpc = lc.ops_per_rpc(t, sequential, direct_io, write)
        rank_q = lc.rank_concurrency(t, sequential, direct_io, write)
        slots = lc.rpcs_in_flight * per_rpc
        c_dir, _ = data_directions(op)
        op_key = (op, op_B, sequential, per_rpc)
        node = self.client(node_index)
        group = self.fabric.group_of(node.name)
        costs = cache.costs.setdefault(op_key, {})
        objs = self._objects(targets, obj, cache)
        stripe_key = (targets, op_key, objs)
        if stripe_key not in cache.stripes:
            cache.stripes[stripe_key] = self._stripe_path(targets, op_key, costs, objs)
        server_side, latency = cache.stripes[stripe_key]
        route_key = (group, targets, op)
        if route_key not in cache.routes:
            cache.routes[route_key] = self._route(node, targets, op)
        osc_key = (node_index, targets, op_key, objs)
        if osc_key not in cache.oscs:
            cache.oscs[osc_key] = self._osc_path(node, targets, slots, op_B, costs, objs)
        path: PathEntries = list(node.nic.path(c_dir))
        path.extend(cache.routes[route_key])
        path.extend(server_side)
        path.extend(cache.oscs[osc_key])
        conc = min(rank_q, MAX_REQUEST_CONCURRENCY)
        gated = ranks_per_node * conc > slots
        crossed = cache.crossed.get(stripe_key)
        if crossed is None:
            # Only a write's bytes change a target's state, and a target that keeps state of
            # the bytes written keeps it by object (its costs depend on the object): a flow
            # is announced to those (a stripe over RAID OSTs announces nothing, O(1) a rank).
            share = 1.0 / len(targets)
            crossed = tuple(
                (self.ost(t)[1], costs[t, o].target, share)
                for t, o in zip(targets, objs, strict=True)
                if o and write
            )
            cache.crossed[stripe_key] = crossed
        ctx = RankContext(
            node=node,
            targets=list(targets),
            cost=costs[targets[0], objs[0]],
            gated=gated,
            costs={t: costs[t, o] for t, o in zip(targets, objs, strict=True) if o}
            if any(objs)
            else {},
            crossed=crossed,
        )
        if write and lock_file is not None and write_conflict > 0:
            # each call (of t bytes) waits for a hand-off with probability write_conflict
            per_call_s = handoff_s(ctx.cost, self.model.oss.rpc_cost) * write_conflict
            ctx.lock_s_per_B = per_call_s / t
            ctx.locks = {tgt: self.locks.lock(lock_file, tgt).queue for tgt in targets}
            path.extend(self.locks.path(lock_file, targets, ctx.lock_s_per_B * op_B))
        stream = RankStream(
            path=tuple(path),
            op_size_B=op_B,
            rate_cap_Bps=rank_q * op_B / latency,
            concurrency=conc,
            cap_label="concurrency: rank RPC window q*t/L",
            write_behind_B=lc.write_behind_B(direct_io, ranks_per_node) if write else 0.0,
        )
        return stream, ctx

    def _objects(self, targets: tuple[int, ...], obj: str, cache: PathCache) -> tuple[str, ...]:
        """The objects of file ``obj`` on ``targets``: ``obj`` on an object-aware target,
        empty on the others (whose costs and paths are then the same for every file)."""
        known = cache.aware.get(targets)
        if known is None:
            aware = tuple(self.ost(t)[1].object_aware for t in targets)
            known = (aware, None if any(aware) else ("",) * len(targets))
            cache.aware[targets] = known
        aware, blank = known
        if blank is not None:
            return blank
        return tuple(obj if a else "" for a in aware)

    def _offered(self, phase: IorPhase) -> dict[tuple[int, int], float]:
        """Offered load (bytes/s) per (source, destination) fabric group, for adaptive routing.

        A rank offers at most its node's NIC share, spread evenly over its
        file's targets; a target takes at most what its OST stack and its
        server's NIC share deliver, so a job that oversubscribes the storage
        does not push the excess onto non-minimal routes.
        """
        op = phase.operation
        c_dir, s_dir = data_directions(op)
        oss = self.model.oss
        nic_Bps = self.model.client.nic.node_Bps(c_dir) / phase.ranks_per_node
        eff = oss.stack_write_efficiency if op == "write" else oss.stack_read_efficiency
        target_Bps = min(
            self.ost_spec.peak_Bps(op) * eff, oss.nic.node_Bps(s_dir) / oss.targets_per_server
        )
        fabric = self.fabric
        io_groups = fabric.groups_of(fabric_role(self.model.fabric, "io"))
        per = oss.targets_per_server
        offered: dict[tuple[int, int], float] = {}  # (client group, target) -> bytes/s
        for r in range(phase.ranks):
            here = fabric.group_of(self.client(phase.node_of(r)).name)
            targets = self._targets(phase, r)
            share = nic_Bps / len(targets)
            for tgt in targets:
                offered[here, tgt] = offered.get((here, tgt), 0.0) + share
        by_target: dict[int, float] = {}
        for (_, tgt), rate in offered.items():
            by_target[tgt] = by_target.get(tgt, 0.0) + rate
        demand: dict[tuple[int, int], float] = {}
        for (here, tgt), rate in offered.items():
            there = io_groups[self.server_group(tgt // per)]
            key = (here, there) if op == "write" else (there, here)
            taken = rate * min(1.0, target_Bps / by_target[tgt])
            demand[key] = demand.get(key, 0.0) + taken
        return demand

    def _route(self, node: ClientNode, targets: tuple[int, ...], op: OpKind) -> PathEntries:
        """Fabric entries of a file striped over ``targets``, from or to ``node``.

        Each target takes 1/S of the bytes; targets in the same I/O group share
        one route, and a route of more than two links (an adaptive split over
        many groups) is stored once as a segment shared by every rank using it.
        """
        fabric = self.fabric
        share = 1.0 / len(targets)
        here = fabric.group_of(node.name)
        by_pair: dict[tuple[int, int], float] = {}
        for tgt in targets:
            server, _ = self.ost(tgt)
            there = fabric.group_of(server.name)
            pair = (here, there) if op == "write" else (there, here)
            by_pair[pair] = by_pair.get(pair, 0.0) + share
        out: PathEntries = []
        for (a, b), weight in by_pair.items():
            entries = fabric.group_path(a, b, 1.0)
            if len(entries) <= 2 or not self.share_stripe_sets:
                out.extend((res, w * weight) for res, w in entries)
                continue
            key = (a, b, tuple((res.name, w) for res, w in entries))
            segment = self._route_segments.get(key)
            if segment is None:
                name = f"{fabric.name}.route{len(self._route_segments)}"
                segment = self.sim.flows.add_segment(name, entries)
                self._route_segments[key] = segment
            out.append((segment, weight))
        return out

    def _stripe_path(
        self,
        targets: tuple[int, ...],
        op_key: tuple[OpKind, float, bool, int],
        costs: dict[CostKey, OpCost],
        objs: tuple[str, ...],
    ) -> tuple[PathEntries, float]:
        """Server side of a file striped over ``targets``, and its slowest round trip (s).

        ``objs[k]`` is the file's object on ``targets[k]`` (empty where the
        target's costs do not depend on it).  Each target takes 1/S of the
        bytes.  A stripe set wider than one target is stored once as a shared
        segment, so a rank using it costs one entry whatever S is (DESIGN §2;
        ranks + targets, not ranks x targets).
        """
        op, op_B, sequential, per_rpc = op_key
        share = 1.0 / len(targets)
        entries: list[tuple[Resource, float]] = []
        latency = 0.0
        for tgt, obj in zip(targets, objs, strict=True):
            server, ost = self.ost(tgt)
            if (tgt, obj) not in costs:
                fabric_s = self.fabric.latency_s(*self._endpoints_to(server.name, op))
                costs[tgt, obj] = op_cost(
                    self.model, ost, op, op_B, sequential, per_rpc, fabric_s, obj
                )
            cost = costs[tgt, obj]
            latency = max(latency, cost.latency_s)
            entries.extend(self.server_path(server, ost, cost, share))
        if len(targets) == 1 or not self.share_stripe_sets:
            return list(entries), latency
        key = (targets, *op_key, objs)
        segment = self._stripe_segments.get(key)
        if segment is None:
            name = f"{self.model.name}.stripe{self._stripe_sets_made}.{op}"
            self._stripe_sets_made += 1
            segment = self.sim.flows.add_segment(name, entries)
            self._stripe_segments[key] = segment
        return [(segment, 1.0)], latency

    def _endpoints_to(self, server: str, op: OpKind) -> tuple[str | int, str | int]:
        """A representative (source, destination) pair between the clients and ``server``:
        the group of the first client slot (no client node is built for it)."""
        role = fabric_role(self.model.fabric, self.model.client.placement.role)
        client = self.fabric.groups_of(role)[self.placement.group_of(0)]
        return (client, server) if op == "write" else (server, client)

    def _osc_path(
        self,
        node: ClientNode,
        targets: tuple[int, ...],
        rpc_slots: int,
        op_B: float,
        costs: dict[CostKey, OpCost],
        objs: tuple[str, ...],
    ) -> PathEntries:
        """The client's OSC windows for ``targets``: ``rpc_slots`` operations of
        ``op_B`` bytes in flight per round trip (s) of each target's cost.

        An OSC's capacity is its window of RPC slots (1.0: all busy), and a
        byte of this kind of call holds ``latency / (op_B * rpc_slots)`` of it
        for a second (Little's law), so one kind alone moves at most
        ``rpc_slots * op_B / latency`` bytes/s, and kinds of different sizes
        and round trips (a replay's small and large calls) share the window in
        proportion to the slots they hold: a small call's kind does not narrow
        the window of the large calls in flight beside it.
        """
        share = 1.0 / len(targets)
        entries: list[tuple[Resource, float]] = []
        for tgt, obj in zip(targets, objs, strict=True):
            if tgt not in node.osc:
                node.osc[tgt] = self.sim.flows.add_resource(f"{node.name}.osc{tgt}", 1.0)
            if tgt not in node.slots:
                node.slots[tgt] = simpy.Resource(self.sim.env, capacity=rpc_slots)
            held = costs[tgt, obj].latency_s / (rpc_slots * op_B)  # window held per byte/s
            entries.append((node.osc[tgt], share * held))
        if len(targets) == 1 or not self.share_stripe_sets:
            return list(entries)
        key = (node.name, targets, tuple(w for _, w in entries))
        segment = self._osc_segments.get(key)
        if segment is None:
            name = f"{node.name}.oscs{len(self._osc_segments)}"
            segment = self.sim.flows.add_segment(name, entries)
            self._osc_segments[key] = segment
        return [(segment, 1.0)]

    def ior_request(
        self, phase: IorPhase, rank: int, stream: RankStream
    ) -> Generator[simpy.Event, Any, None]:
        """One server operation through the queues, from the rank's call to its completion."""
        return self.context_request(self._ranks[rank])

    def context_request(self, ctx: RankContext) -> Generator[simpy.Event, Any, None]:
        """One server operation of a rank with context ``ctx`` (:meth:`access_stream`)."""
        env = self.sim.env
        k = next(ctx.counter)
        tgt = ctx.targets[k % len(ctx.targets)]
        server, ost = self.ost(tgt)
        cost = ctx.costs.get(tgt, ctx.cost)
        slot = ctx.node.slots[tgt] if ctx.gated else None
        req = slot.request() if slot is not None else None
        if req is not None:
            yield req
        if ctx.locks and cost.size_B > 0:
            # the hand-offs of the calls this operation carries
            yield ctx.locks[tgt].visit(ctx.lock_s_per_B * cost.size_B)
        try:
            yield env.timeout(cost.fixed_delay_s)
            if cost.op == "write":
                yield from self._request_network(ctx.node, server, cost)
            if cost.cpu_s > 0:
                yield server.q_cpu.visit(cost.cpu_s)
            yield from ost.visit(env, cost.target)
            if cost.op == "read":
                yield from self._request_network(ctx.node, server, cost)
        finally:
            if slot is not None and req is not None:
                slot.release(req)

    def _request_network(
        self, node: ClientNode, server: ServerNode, cost: OpCost
    ) -> Generator[simpy.Event, Any, None]:
        """The data of one operation through the sender's NIC, the fabric and the receiver's NIC.

        The route is chosen when the data reaches the fabric (adaptive routing
        sees the queues as they are then).
        """
        c_dir, s_dir = data_directions(cost.op)
        size = cost.size_B
        if cost.op == "write":
            yield node.nic.visit(c_dir, size)
            src, dst = node.name, server.name
        else:
            yield server.nic.visit(s_dir, size)
            src, dst = server.name, node.name
        yield from self.fabric.cross(src, dst, size, self._route_rng)
        if cost.op == "write":
            yield server.nic.visit(s_dir, size)
        else:
            yield node.nic.visit(c_dir, size)

    def ior_flow_started(self, phase: IorPhase, rank: int, label: str, flow: Flow) -> None:
        """Tell the targets a writing rank's flow crosses that it started (a tier counts
        the bytes into its buffer; see :attr:`RankContext.crossed`)."""
        self.flows_started(self._ranks[rank], flow)

    @staticmethod
    def flows_started(ctx: RankContext, flow: Flow) -> None:
        """``flow`` of a rank with context ``ctx`` started: the targets in ``ctx.crossed``
        are told (:meth:`StorageTarget.flow_started`)."""
        for target, cost, share in ctx.crossed:
            target.flow_started(cost, flow, share)

    def ior_peaks(self, phase: IorPhase) -> dict[str, float]:
        """Datasheet peaks of the OSTs the phase uses (the seed's efficiency denominators)."""
        targets = {t for r in range(phase.ranks) for t in self._targets(phase, r)}
        n = len(targets)
        return {
            "bandwidth_Bps": self.ost_peak_Bps(phase.operation, n),
            "iops": self.ost_peak_iops(phase.operation, n, phase.transfer_size),
        }
