"""A network fabric in both fidelities: flow resources and request queues per link bundle.

One :class:`Fabric` serves every system kind.  It is built from a
:data:`~flashsim.components.fabric_spec.FabricSpec` (switch, fat tree or
dragonfly; see :mod:`flashsim.components.fabric_spec` for the schemas and a
Perlmutter example) and holds the endpoints (client and server nodes) attached
to its groups.  Routes are computed at the group level
(:mod:`flashsim.components.routing`); each link bundle they cross (a dragonfly
global-link bundle from one group to another, a leaf's uplinks, a switch set)
is, lazily,

* in flow fidelity, one :class:`~flashsim.engine.flows.Resource` of ``links *
  link_bandwidth`` bytes/s; a transfer's path puts on it the fraction of the
  transfer's bytes routed across it (a split over routes gives fractional
  weights), and
* in request fidelity (:mod:`flashsim.components.fabric_request`), one
  :class:`LinkQueue` of ``links`` servers whose service time for a request of
  ``size_B`` bytes is ``size_B / link_bandwidth``, so its saturation
  throughput equals the resource's capacity: the two fidelities agree where a
  bundle binds.

Routing (dragonfly): minimal routes are the shortest group paths (split evenly
when there are several, e.g. compute to service through each I/O group);
Valiant routes go through one intermediate group with global links to both
ends, chosen uniformly (flow fidelity: an even split over all of them).  UGAL
chooses per request between a minimal and a random Valiant route by comparing
queue backlog x hops (Kim et al., ISCA 2008).  Flow fidelity, whose paths are
fixed when a flow starts, uses the split :meth:`Fabric.plan` computes from the
offered load (:func:`flashsim.components.routing_ugal.ugal_split`): all minimal
while the minimal bundles are not overloaded, then the excess over the
Valiant routes with spare capacity, then balancing hops x excess load with
the threshold's bias; pairs not planned route minimally.

Background traffic (:mod:`flashsim.components.fabric_background`): the
spec's ``background`` jobs
(:class:`~flashsim.components.fabric_spec.BackgroundJobSpec`) start when the
fabric is built, one flow per group pair capped at the job's
``rate_per_pair`` with the job's ``streams`` as priority, routed under the
fabric's routing (UGAL: the jobs' own offered load is planned first).
:meth:`Fabric.plan` then plans I/O on top of the offered load of the
background flows still running (:meth:`Fabric.background_load_Bps`).
Request fidelity's link queues do not see background flows.  A timeline
event starts and stops jobs by label while phases run
(:meth:`Fabric.start_background_jobs`, :meth:`Fabric.stop_background_jobs`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from flashsim.components.fabric_background import PLAN_ROUNDS, PLAN_TOL, BackgroundTraffic
from flashsim.components.fabric_request import LinkQueue, RequestRouting
from flashsim.components.fabric_spec import (
    BackgroundJobSpec,
    DragonflySpec,
    FabricSpec,
    FatTreeSpec,
    GroupId,
    Routing,
    SwitchFabricSpec,
    check_background,
)
from flashsim.components.routing import Route, build_topology, max_flow_bound, split_weights
from flashsim.components.routing_ugal import ugal_split
from flashsim.engine.flows import Flow, Resource
from flashsim.engine.maxmin import FloatArray
from flashsim.engine.simulation import Simulation

__all__ = ["Demands", "DragonflySpec", "Fabric", "FabricSpec", "FatTreeSpec", "SwitchFabricSpec"]

#: Offered load (bytes/s) per (source, destination): endpoint names, group names or ids.
Demands = (
    Mapping[tuple[str, str], float]
    | Mapping[tuple[int, int], float]
    | Mapping[tuple[str | int, str | int], float]
)


class Fabric(RequestRouting):
    """A network fabric inside a simulation.

    Parameters
    ----------
    sim : Simulation
        The simulation whose flow network and clock the fabric uses.
    name : str
        Dotted component name, e.g. ``perlmutter.fabric``; resources are named
        ``f"{name}.{group}-{group}"`` (dragonfly global links, e.g.
        ``perlmutter.fabric.compute3-io1``), ``f"{name}.{group}.local"``,
        ``f"{name}.leaf{i}.up"`` / ``.down`` (fat tree) and ``name`` itself
        (switch fabric).
    spec : SwitchFabricSpec or FatTreeSpec or DragonflySpec
        The fabric.

    Attributes
    ----------
    routing : {"minimal", "valiant", "ugal"}
        Routing policy (always ``"minimal"`` for switch and fat-tree fabrics).
    ugal_threshold : float
        UGAL's bias towards minimal routes (dimensionless).
    """

    def __init__(
        self, sim: Simulation, name: str, spec: SwitchFabricSpec | FatTreeSpec | DragonflySpec
    ) -> None:
        self.sim = sim
        self.name = name
        self.spec = spec
        self.topology = build_topology(name, spec)
        self.routing: Routing = "minimal"
        self.ugal_threshold = 1.0
        if isinstance(spec, DragonflySpec):
            self.routing = spec.routing
            self.ugal_threshold = float(spec.ugal_threshold)
        self._group_of: dict[str, GroupId] = {}
        self._members = [0] * self.topology.n_groups
        self._cursor: dict[str, int] = {}
        self._resources: dict[str, Resource] = {}
        self._queues: dict[str, LinkQueue] = {}
        self._hops: dict[Route, tuple[tuple[LinkQueue, float], ...]] = {}
        self._plan: dict[tuple[GroupId, GroupId], FloatArray] = {}
        self._background = BackgroundTraffic(sim, name)
        self._start_jobs(spec.background)

    # ----------------------------------------------------------------- groups
    @property
    def group_names(self) -> list[str]:
        """Name of each group by global id (``compute0``, ``io3``, ``leaf2``, ``all``)."""
        return list(self.topology.group_names)

    def groups_of(self, role: str) -> list[GroupId]:
        """Global ids of the groups of ``role``: all of them for ``"all"`` or a non-dragonfly."""
        roles = self.topology.group_roles
        if not isinstance(self.spec, DragonflySpec):
            return list(range(len(roles)))
        found = [g for g, r in enumerate(roles) if r == role or role == "all"]
        if not found:
            raise ValueError(f"{self.name}: role(={role!r}) has no groups ({sorted(set(roles))})")
        return found

    def describe_note(self) -> str:
        """One line naming the topology, its size and the routing, for ``describe``."""
        spec = self.spec
        if isinstance(spec, SwitchFabricSpec):
            note = f"switch fabric: {spec.switches} switches"
            if not spec.binding:
                note += " of unknown bandwidth (assumed never to bind: no resource built)"
        elif isinstance(spec, FatTreeSpec):
            note = (
                f"fat tree: {spec.leaves} leaves x {spec.uplinks_per_leaf} uplinks, "
                "minimal (ECMP) routing"
            )
        else:
            roles = self.topology.group_roles
            counts = ", ".join(f"{roles.count(r)} {r}" for r in dict.fromkeys(roles))
            note = f"dragonfly: {len(roles)} groups ({counts}), {self.routing} routing"
        return note + self._background.note()

    def bound_caveat(self) -> str:
        """What a bound from :meth:`describe_bound_Bps` leaves out, for ``describe`` notes.

        ``"; switch bandwidth unknown: assumed never to bind"`` for a switch
        fabric of ``switch_bandwidth = "unknown"`` (its bound is ``inf``); empty
        otherwise.
        """
        if isinstance(self.spec, SwitchFabricSpec) and not self.spec.binding:
            return "; switch bandwidth unknown: assumed never to bind"
        return ""

    def group_of(self, endpoint: str) -> GroupId:
        """The group an attached endpoint is in."""
        try:
            return self._group_of[endpoint]
        except KeyError:
            raise ValueError(f"{self.name}: endpoint(={endpoint!r}) is not attached") from None

    def attach(self, endpoint: str, role: str = "all", group_index: int | None = None) -> GroupId:
        """Put a named endpoint (a client or server node) in a group and return the group id.

        Parameters
        ----------
        endpoint : str
            Unique endpoint name, e.g. ``perlmutter.oss17``.
        role : str
            Role of the group (dragonfly); ignored by switch and fat-tree fabrics.
        group_index : int, optional
            Index of the group among the role's groups (a fat-tree leaf index),
            taken modulo their number (so a server index deals servers round
            robin); unset: the next group with room, round robin over the
            role's groups (a fat tree fills leaves in order).
        """
        if endpoint in self._group_of:
            raise ValueError(f"{self.name}: endpoint(={endpoint!r}) is already attached")
        dragonfly = isinstance(self.spec, DragonflySpec)
        candidates = self.groups_of(role if dragonfly else "all")
        cap = self.topology.group_capacity
        if group_index is not None:
            group = candidates[group_index % len(candidates)]
        else:
            start = self._cursor.get(role, 0) if dragonfly else 0
            order = [candidates[(start + i) % len(candidates)] for i in range(len(candidates))]
            free = [g for g in order if cap[g] is None or self._members[g] < (cap[g] or 0)]
            group = free[0] if free else order[0]
            self._cursor[role] = candidates.index(group) + 1
        limit = cap[group]
        if limit is not None and self._members[group] >= limit:
            raise ValueError(
                f"{self.name}: group {self.topology.group_names[group]} is full "
                f"({limit} endpoints); cannot attach {endpoint!r}"
            )
        self._members[group] += 1
        self._group_of[endpoint] = group
        return group

    def _group(self, key: str | int) -> GroupId:
        if isinstance(key, int):
            if not 0 <= key < self.topology.n_groups:
                raise ValueError(f"{self.name}: group(={key}) is not a group id")
            return key
        if key in self._group_of:
            return self._group_of[key]
        if key in self.topology.group_names:
            return self.topology.group_names.index(key)
        raise ValueError(f"{self.name}: {key!r} is neither an attached endpoint nor a group")

    # ----------------------------------------------------------------- routing
    def _routes(self, a: GroupId, b: GroupId) -> tuple[list[Route], list[Route]]:
        return self.topology.minimal(a, b), self.topology.nonminimal(a, b)

    def split(self, src: str | int, dst: str | int) -> float:
        """Fraction of traffic from ``src`` to ``dst`` sent non-minimally in flow fidelity."""
        a, b = self._group(src), self._group(dst)
        if not self.topology.nonminimal(a, b) or self.routing == "minimal":
            return 0.0
        if self.routing == "valiant":
            return 1.0
        planned = self._plan.get((a, b))
        return 0.0 if planned is None else float(1.0 - planned[0])

    def _nm_fractions(self, a: GroupId, b: GroupId) -> list[float] | None:
        """Shares of the non-minimal part on each Valiant route (``None``: evenly)."""
        planned = self._plan.get((a, b)) if self.routing == "ugal" else None
        if planned is None or not planned[1:].sum() > 0:
            return None
        return [float(f) for f in planned[1:] / planned[1:].sum()]

    def plan(self, demands_Bps: Demands) -> None:
        """Compute the UGAL split of each group pair from offered load; replaces any plan.

        Parameters
        ----------
        demands_Bps : mapping of (src, dst) to float
            Offered load in bytes/s per pair of endpoints (names) or groups
            (names or ids); endpoint pairs in the same group pair add up.
            Minimal and Valiant routing ignore the plan.  The load is planned
            on top of the background flows still running, at their offered
            rates (:meth:`background_load_Bps`).
        """
        by_pair: dict[tuple[GroupId, GroupId], float] = {}
        for (src, dst), rate in demands_Bps.items():
            if not rate >= 0:
                raise ValueError(f"{self.name}: demand(={rate}) from {src} to {dst} must be >= 0")
            key = (self._group(src), self._group(dst))
            by_pair[key] = by_pair.get(key, 0.0) + float(rate)
        self._plan = ugal_split(
            self.topology, by_pair, self.ugal_threshold, base_load_Bps=self.background_load_Bps()
        )

    # ------------------------------------------------------------ flow fidelity
    def _resource(self, bundle: str) -> Resource:
        res = self._resources.get(bundle)
        if res is None:
            res = self.sim.flows.add_resource(bundle, self.topology.bundles[bundle].capacity_Bps)
            self._resources[bundle] = res
        return res

    def group_path(
        self, a: str | int, b: str | int, share: float = 1.0
    ) -> list[tuple[Resource, float]]:
        """Flow-fidelity path of ``share`` of a transfer from group ``a`` to group ``b``."""
        ga, gb = self._group(a), self._group(b)
        mins, nms = self._routes(ga, gb)
        x = self.split(ga, gb)
        weights = split_weights(mins, nms, x, share, self._nm_fractions(ga, gb))
        return [(self._resource(n), w) for n, w in weights.items()]

    def path(self, src: str, dst: str, share: float = 1.0) -> list[tuple[Resource, float]]:
        """Flow-fidelity path of ``share`` of a transfer from endpoint ``src`` to ``dst``.

        Parameters
        ----------
        src, dst : str
            Attached endpoint names.
        share : float
            Fraction of the transfer's bytes this path carries (> 0), e.g.
            ``1/S`` for one of S stripe targets.

        Returns
        -------
        list of (Resource, float)
            The bundles crossed and the bytes on each per byte of the transfer;
            empty within a group when local links are not modelled.
        """
        if not share > 0:
            raise ValueError(f"{self.name}: share(={share}) must be > 0")
        return self.group_path(self.group_of(src), self.group_of(dst), share)

    def latency_s(self, src: str | int, dst: str | int) -> float:
        """Zero-load one-way latency (s): expected hops under the routing x hop latency."""
        a, b = self._group(src), self._group(dst)
        mins, nms = self._routes(a, b)
        x = self.split(a, b)
        hops = (1 - x) * np.mean([r.hops for r in mins])
        if nms:
            hops += x * np.mean([r.hops for r in nms])
        return float(hops * self.topology.hop_latency_s)

    def background(
        self,
        src: str | Sequence[int],
        dst: str | Sequence[int],
        rate_Bps: float,
        volume_B: float | None = None,
        streams: float = 1.0,
    ) -> list[Flow]:
        """Start background traffic between groups, sharing links with I/O.

        Parameters
        ----------
        src, dst : str or sequence of int
            A role (e.g. ``"compute"``) or global group ids.
        rate_Bps : float
            Aggregate offered rate in bytes/s, spread evenly over the group
            pairs whose route crosses at least one bundle (one rate-capped
            flow each).
        volume_B : float, optional
            Aggregate bytes to move; unset: flows run until cancelled
            (``sim.flows.cancel_flow``).
        streams : float
            Priority of each flow at a shared bottleneck (> 0): its max-min
            share is that of ``streams`` unit-weight flows.

        Returns
        -------
        list of Flow
            The flows started.
        """
        if not rate_Bps > 0:
            raise ValueError(f"{self.name}: rate_Bps(={rate_Bps}) must be > 0")
        srcs = self.groups_of(src) if isinstance(src, str) else [self._group(g) for g in src]
        dsts = self.groups_of(dst) if isinstance(dst, str) else [self._group(g) for g in dst]
        pairs = self._pairs(srcs, dsts)
        each = None if volume_B is None else volume_B / len(pairs)
        return [self._start(a, b, rate_Bps / len(pairs), each, streams) for a, b in pairs]

    def background_load_Bps(self) -> dict[str, float]:
        """Offered load (bytes/s) of the background flows still running, per bundle name."""
        return self._background.load_Bps()

    def _pairs(self, srcs: Sequence[GroupId], dsts: Sequence[GroupId]) -> list[tuple[int, int]]:
        """Ordered group pairs whose minimal route crosses at least one bundle."""
        return [(a, b) for a in srcs for b in dsts if any(r.bundles for r in self._routes(a, b)[0])]

    def _span(self, role: str, job: BackgroundJobSpec) -> list[GroupId]:
        groups = self.groups_of(role)
        end = None if job.groups is None else job.first_group + job.groups
        return groups[job.first_group : end]

    def _start_jobs(self, jobs: Sequence[BackgroundJobSpec], label: str | None = None) -> int:
        """Start background jobs; return the flows started.

        UGAL routes them by a plan of their own offered load on top of the
        background flows already running; the I/O plan in force before (set by
        :meth:`plan` for the flows a phase starts) is restored afterwards, so
        flows started later route as they would have.
        """
        started = [
            (job, self._pairs(self._span(job.between[0], job), self._span(job.between[1], job)))
            for job in jobs
            if job.rate_per_pair > 0
        ]
        if not any(pairs for _, pairs in started):
            return 0
        kept = self._plan
        if self.routing == "ugal":
            demand: dict[tuple[GroupId, GroupId], float] = {}
            for job, pairs in started:
                for pair in pairs:
                    demand[pair] = demand.get(pair, 0.0) + float(job.rate_per_pair)
            running = self.background_load_Bps()
            self._plan = ugal_split(
                self.topology,
                demand,
                self.ugal_threshold,
                rounds=PLAN_ROUNDS,
                tol=PLAN_TOL,
                base_load_Bps=running or None,
            )
        flows: list[Flow] = []
        for job, pairs in started:
            for a, b in pairs:
                flows.append(
                    self._start(
                        a, b, float(job.rate_per_pair), job.volume_per_pair, job.streams, job.name
                    )
                )
        self._plan = kept
        if label is not None:
            self._background.by_label.setdefault(label, []).extend(flows)
        return len(flows)

    # ---------------------------------------------------- background on a timeline
    def role_counts(self) -> dict[str, int]:
        """Groups of each role (``{"all": groups}`` for a switch or fat tree)."""
        if not isinstance(self.spec, DragonflySpec):
            return {"all": self.topology.n_groups}
        roles = self.topology.group_roles
        return {role: roles.count(role) for role in dict.fromkeys(roles)}

    def check_background_jobs(self, jobs: Sequence[BackgroundJobSpec]) -> None:
        """Refuse jobs naming a role the fabric lacks, or more groups than it has (ValueError)."""
        check_background(list(jobs), self.role_counts(), where="jobs")

    def start_background_jobs(self, label: str, jobs: Sequence[BackgroundJobSpec]) -> int:
        """Start background ``jobs`` now under ``label`` (a timeline event); return the flows.

        As the spec's ``background`` jobs at build time, routed under the
        fabric's routing (UGAL: planned on top of the background load running
        now), sharing the links with I/O from then on.
        """
        if label in self._background.by_label:
            raise ValueError(f"background: {label!r} is running already; stop it first")
        self.check_background_jobs(jobs)
        count = self._start_jobs(jobs, label)
        self._background.by_label.setdefault(label, [])
        return count

    def stop_background_jobs(self, label: str) -> int:
        """Stop the background traffic started under ``label``; return the flows it had."""
        if label not in self._background.by_label:
            running = ", ".join(repr(k) for k in self._background.by_label) or "none"
            raise ValueError(f"background: {label!r} is not running (running: {running})")
        return self._background.stop(label)

    def _start(
        self,
        a: GroupId,
        b: GroupId,
        rate_Bps: float,
        volume_B: float | None,
        streams: float,
        job: str | None = None,
    ) -> Flow:
        """One background flow from group ``a`` to group ``b``, recorded for :meth:`plan`."""
        names = self.topology.group_names
        label = f"{job}.{names[a]}-{names[b]}" if job else f"{names[a]}-{names[b]}"
        return self._background.start(self.group_path(a, b), rate_Bps, volume_B, streams, label)

    def resources(self) -> list[Resource]:
        """The flow resources built so far (for bottleneck reports)."""
        return list(self._resources.values())

    # ----------------------------------------------------------------- bounds
    def describe_bound_Bps(
        self, src_endpoints: Iterable[str | int], dst_endpoints: Iterable[str | int]
    ) -> float:
        """Theoretical bound (bytes/s) on aggregate bandwidth from one endpoint set to another.

        The maximum flow from the source groups to the destination groups over
        the routes the policy may use: minimal routes (minimal), Valiant routes
        (Valiant; minimal where a pair has none), both (UGAL).  ``inf`` when
        some pair crosses no bundle (same group, local links not modelled).
        """
        srcs = {self._group(e) for e in src_endpoints}
        dsts = {self._group(e) for e in dst_endpoints}
        routes: list[tuple[GroupId, GroupId, list[Route]]] = []
        for a in sorted(srcs):
            for b in sorted(dsts):
                mins, nms = self._routes(a, b)
                if self.routing == "minimal" or not nms:
                    use = mins
                else:
                    use = nms if self.routing == "valiant" else mins + nms
                routes.append((a, b, use))
        return max_flow_bound(self.topology, routes)
