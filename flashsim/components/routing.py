"""Group-level structure and routes of a network fabric, the UGAL split and the fabric's bound.

A fabric is seen at the level of *groups* (a dragonfly group, a fat-tree leaf,
the single group of a switch fabric) joined by *bundles*: sets of ``links``
identical links of ``link_Bps`` bytes/s each, used in one direction (a
dragonfly global-link bundle from group ``a`` to group ``b``, a leaf's uplinks,
a group's local links, a switch set).  A bundle becomes one flow resource of
``links * link_Bps`` bytes/s and one request queue of ``links`` servers.

A :class:`Route` is a sequence of bundles from a source group to a destination
group.  Each topology gives the minimal routes between two groups (split
evenly) and the non-minimal (Valiant) routes, one per intermediate group (split
evenly).  :func:`ugal_split` computes the fraction of a group pair's traffic
that adaptive routing sends non-minimally, and :func:`max_flow_bound` the
largest aggregate rate a set of routes can carry.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
import numpy.typing as npt

from flashsim.components.fabric_spec import (
    DragonflySpec,
    FatTreeSpec,
    GroupId,
    SwitchFabricSpec,
)
from flashsim.engine.maxmin import FloatArray

#: Bisection steps of the per-pair UGAL balance before a final linear interpolation.
_BISECTION_STEPS = 20
#: Past sweeps the Anderson acceleration of :func:`ugal_split` combines.
_ANDERSON_DEPTH = 5


@dataclass(frozen=True)
class Bundle:
    """``links`` parallel links used in one direction.

    Attributes
    ----------
    name : str
        Dotted name, e.g. ``perlmutter.fabric.compute3-io1``.
    links : int
        Parallel links (request-fidelity servers).
    link_Bps : float
        Bandwidth of one link in bytes/s.
    """

    name: str
    links: int
    link_Bps: float

    @property
    def capacity_Bps(self) -> float:
        """Aggregate bandwidth in bytes/s."""
        return self.links * self.link_Bps


@dataclass(frozen=True)
class Route:
    """A path between two groups: the bundles crossed and its hop count.

    Attributes
    ----------
    bundles : tuple of str
        Bundle names in order.
    hops : int
        Hops counted for latency and for UGAL's comparison (global links of a
        dragonfly route, at least 1; switch hops of a fat tree).
    """

    bundles: tuple[str, ...]
    hops: int


class Topology:
    """Groups, bundles and routes of one fabric; subclasses fill in :meth:`_minimal`.

    Parameters
    ----------
    name : str
        Dotted name of the fabric; bundle names start with it.

    Attributes
    ----------
    group_names : list of str
        Name of each group, by global id.
    group_roles : list of str
        Role of each group (``"all"`` for switch and fat-tree fabrics).
    group_capacity : list of int or None
        Endpoints each group holds (``None``: no limit).
    bundles : dict of str to Bundle
        Every bundle a route has used so far.
    hop_latency_s : float
        Latency of one hop in seconds.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.group_names: list[str] = []
        self.group_roles: list[str] = []
        self.group_capacity: list[int | None] = []
        self.bundles: dict[str, Bundle] = {}
        self.hop_latency_s = 0.0
        self._min_cache: dict[tuple[GroupId, GroupId], list[Route]] = {}
        self._nm_cache: dict[tuple[GroupId, GroupId], list[Route]] = {}

    @property
    def n_groups(self) -> int:
        """Number of groups."""
        return len(self.group_names)

    def minimal(self, a: GroupId, b: GroupId) -> list[Route]:
        """The minimal routes from group ``a`` to group ``b`` (at least one)."""
        key = (a, b)
        if key not in self._min_cache:
            self._min_cache[key] = self._minimal(a, b)
        return self._min_cache[key]

    def nonminimal(self, a: GroupId, b: GroupId) -> list[Route]:
        """The Valiant routes from ``a`` to ``b``, one per intermediate group (may be empty).

        Routes that cross only bundles of the minimal routes (between groups
        with no direct link, the minimal routes already go through every
        intermediate) are left out.
        """
        key = (a, b)
        if key not in self._nm_cache:
            on_minimal = {n for r in self.minimal(a, b) for n in r.bundles}
            candidates = self._nonminimal(a, b) if a != b else []
            self._nm_cache[key] = [r for r in candidates if not set(r.bundles) <= on_minimal]
        return self._nm_cache[key]

    def _bundle(self, name: str, links: int, link_Bps: float) -> str:
        if name not in self.bundles:
            self.bundles[name] = Bundle(name, links, float(link_Bps))
        return name

    def _minimal(self, a: GroupId, b: GroupId) -> list[Route]:
        raise NotImplementedError

    def _nonminimal(self, a: GroupId, b: GroupId) -> list[Route]:
        return []


class SwitchTopology(Topology):
    """One group; every transfer crosses the switch set once."""

    def __init__(self, name: str, spec: SwitchFabricSpec) -> None:
        super().__init__(name)
        self.group_names = ["all"]
        self.group_roles = ["all"]
        self.group_capacity = [None]
        self.hop_latency_s = float(spec.latency)
        self._switch = self._bundle(name, spec.switches, spec.switch_bandwidth)

    def _minimal(self, a: GroupId, b: GroupId) -> list[Route]:
        return [Route((self._switch,), 1)]


class FatTreeTopology(Topology):
    """Leaves as groups; between leaves: source uplinks, then destination downlinks."""

    def __init__(self, name: str, spec: FatTreeSpec) -> None:
        super().__init__(name)
        self.spec = spec
        self.group_names = [f"leaf{i}" for i in range(spec.leaves)]
        self.group_roles = ["all"] * spec.leaves
        self.group_capacity = [spec.nodes_per_leaf] * spec.leaves
        self.hop_latency_s = float(spec.latency)

    def _minimal(self, a: GroupId, b: GroupId) -> list[Route]:
        if a == b:
            return [Route((), 1)]
        s = self.spec
        up = self._bundle(f"{self.name}.leaf{a}.up", s.uplinks_per_leaf, s.link_bandwidth)
        down = self._bundle(f"{self.name}.leaf{b}.down", s.uplinks_per_leaf, s.link_bandwidth)
        return [Route((up, down), 3)]


class DragonflyTopology(Topology):
    """Groups with roles joined by global-link bundles, on a networkx group graph.

    Attributes
    ----------
    graph : networkx.Graph
        Nodes are group ids; an edge is a global-link bundle pair with
        attributes ``links`` and ``bandwidth`` (bytes/s per link per direction).
    """

    def __init__(self, name: str, spec: DragonflySpec) -> None:
        super().__init__(name)
        self.spec = spec
        self.hop_latency_s = float(spec.hop_latency)
        per_role: dict[str, int] = {}
        self._routers: list[int] = []
        for kind in spec.groups:
            for _ in range(kind.count):
                index = per_role.get(kind.role, 0)
                per_role[kind.role] = index + 1
                self.group_names.append(f"{kind.role}{index}")
                self.group_roles.append(kind.role)
                self.group_capacity.append(kind.capacity)
                self._routers.append(kind.routers)
        self.graph: nx.Graph[int] = nx.Graph()
        self.graph.add_nodes_from(range(self.n_groups))
        for bundle in spec.global_links:
            r1, r2 = bundle.between
            for u in self.groups_of(r1):
                for v in self.groups_of(r2):
                    if u != v:
                        self.graph.add_edge(u, v, links=bundle.links, bandwidth=bundle.bandwidth)
        allowed = spec.intermediate_roles
        self._may_transit = [allowed is None or r in allowed for r in self.group_roles]

    def groups_of(self, role: str) -> list[GroupId]:
        """Global ids of the groups of ``role``, in order."""
        return [g for g, r in enumerate(self.group_roles) if r == role]

    def _global(self, a: GroupId, b: GroupId) -> str:
        edge = self.graph.edges[a, b]
        name = f"{self.name}.{self.group_names[a]}-{self.group_names[b]}"
        return self._bundle(name, int(edge["links"]), float(edge["bandwidth"]))

    def _local(self, g: GroupId) -> tuple[str, ...]:
        bw = self.spec.local_link_bandwidth
        if bw is None:
            return ()
        routers = self._routers[g]
        links = max(routers * (routers - 1) // 2, 1)
        return (self._bundle(f"{self.name}.{self.group_names[g]}.local", links, bw),)

    def _via(self, groups: list[GroupId]) -> Route:
        parts: list[str] = [*self._local(groups[0])]
        for u, v in itertools.pairwise(groups):
            parts += [self._global(u, v), *self._local(v)]
        return Route(tuple(parts), max(len(groups) - 1, 1))

    def _minimal(self, a: GroupId, b: GroupId) -> list[Route]:
        if a == b:
            return [self._via([a])]
        return [self._via(list(p)) for p in nx.all_shortest_paths(self.graph, a, b)]

    def _nonminimal(self, a: GroupId, b: GroupId) -> list[Route]:
        return [
            self._via([a, k, b])
            for k in range(self.n_groups)
            if k not in (a, b)
            and self._may_transit[k]
            and self.graph.has_edge(a, k)
            and self.graph.has_edge(k, b)
        ]


def split_weights(
    minimal: list[Route],
    nonminimal: list[Route],
    x: float,
    share: float,
    nm_fractions: Sequence[float] | None = None,
) -> dict[str, float]:
    """Bytes on each bundle per byte of a transfer, ``share`` of it split ``1-x : x``.

    The minimal part is spread evenly over ``minimal``; the non-minimal part
    over ``nonminimal`` in proportions ``nm_fractions`` (evenly when unset).
    All of it is minimal when there is no non-minimal route.
    """
    if not nonminimal:
        x = 0.0
    weights: dict[str, float] = {}
    if x < 1.0:
        each = share * (1.0 - x) / len(minimal)
        for route in minimal:
            for name in route.bundles:
                weights[name] = weights.get(name, 0.0) + each
    if x > 0.0:
        fractions = (
            [1.0 / len(nonminimal)] * len(nonminimal) if nm_fractions is None else nm_fractions
        )
        for route, fraction in zip(nonminimal, fractions, strict=True):
            if fraction > 0.0:
                for name in route.bundles:
                    weights[name] = weights.get(name, 0.0) + share * x * fraction
    return weights


@dataclass(frozen=True)
class _PairRoutes:
    """One group pair's routes over the bundles it crosses, for :func:`ugal_split`.

    ``carry[r, j]`` is the bytes on bundle ``idx[j]`` per byte sent on route
    ``r`` (route 0: the minimal routes, evenly; 1..K: the Valiant routes);
    ``costed`` leaves out bundles every route crosses (the ends' local links),
    which cannot steer the choice; ``scale[r]`` is hops (x threshold for
    Valiant routes).
    """

    demand: float
    idx: npt.NDArray[np.int64]
    carry: FloatArray
    costed: npt.NDArray[np.bool_]
    scale: FloatArray

    @classmethod
    def build(
        cls,
        demand: float,
        mins: list[Route],
        nms: list[Route],
        index: dict[str, int],
        threshold: float,
    ) -> _PairRoutes:
        rows = [split_weights(mins, [], 0.0, 1.0)] + [split_weights([], [r], 1.0, 1.0) for r in nms]
        names = sorted(set().union(*rows))
        carry = np.array([[row.get(n, 0.0) for n in names] for row in rows])
        used = carry > 0
        costed = used & ~used.all(axis=0)
        scale = np.array([mins[0].hops] + [threshold * r.hops for r in nms], dtype=float)
        idx = np.array([index[n] for n in names], dtype=np.int64)
        return cls(demand, idx, carry, costed, scale)

    def load(self, fractions: FloatArray) -> FloatArray:
        """Bytes/s this pair puts on its bundles when routes carry ``fractions`` of it."""
        load: FloatArray = self.demand * (fractions @ self.carry)
        return load

    def best_reply(self, base: FloatArray, cap: FloatArray) -> FloatArray:
        """Route fractions of the fluid UGAL rule against the other pairs' load ``base``."""

        # Fraction route r takes before its weighted excess reaches ``level``:
        # min over its costed bundles of alpha + beta * level, floored at 0.
        per_byte = self.demand * np.where(self.costed, self.carry, 1.0)
        alpha = np.where(self.costed, (cap - base) / per_byte, np.inf)
        beta = np.where(self.costed, cap / per_byte / self.scale[:, None], 0.0)

        def room(level: float) -> FloatArray:
            free: FloatArray = np.clip((alpha + beta * level).min(axis=1), 0.0, None)
            return free

        free = room(0.0)
        out = np.zeros(len(self.scale))
        if free[0] >= 1.0:
            out[0] = 1.0
            return out
        if free.sum() >= 1.0:
            out[0] = free[0]
            out[1:] = (1.0 - free[0]) * free[1:] / free[1:].sum()
            return out
        lo, hi = 0.0, 1.0
        while room(hi).sum() < 1.0:
            lo, hi = hi, 2.0 * hi
        for _ in range(_BISECTION_STEPS):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if room(mid).sum() < 1.0 else (lo, mid)
        # The total room is piecewise linear in the level: interpolate in the bracket.
        s_lo, s_hi = float(room(lo).sum()), float(room(hi).sum())
        level = lo + (hi - lo) * (1.0 - s_lo) / (s_hi - s_lo) if s_hi > s_lo else hi
        out = np.minimum(room(level), 1.0)
        reply: FloatArray = out / out.sum()
        return reply


def ugal_split(
    topology: Topology,
    demands_Bps: Mapping[tuple[GroupId, GroupId], float],
    threshold: float,
    rounds: int = 200,
    tol: float = 1e-6,
) -> dict[tuple[GroupId, GroupId], FloatArray]:
    """Route fractions per group pair at the fixed point of a fluid UGAL rule.

    A bundle's queue in the fluid picture grows at ``q(u) = max(u - 1, 0)``
    (its excess of offered load over capacity, relative to capacity): zero
    while the bundle is not overloaded, as a real queue stays near empty.  A
    route's cost is its hops times the ``q`` of its most loaded bundle, and
    a Valiant route's cost is also multiplied by ``threshold``.  As in UGAL
    (Kim et al., ISCA 2008: minimal unless ``q_min * H_min`` exceeds
    ``q_nonmin * H_nonmin``, here with a multiplicative bias), each pair
    sends all its traffic minimally while its minimal bundles are not
    overloaded; otherwise it fills them to capacity and spreads the rest over
    its Valiant routes in proportion to their spare capacity (a random
    intermediate whose queue is empty is accepted, a congested one refused);
    when that is not enough, it equalises the weighted excesses of all its
    routes.  Pairs reply in turn to the loads of all the others (Gauss-Seidel
    sweeps, Anderson-accelerated) until a sweep moves no fraction by ``tol``.

    Parameters
    ----------
    topology : Topology
        The fabric.
    demands_Bps : mapping of (int, int) to float
        Offered load in bytes/s per (source group, destination group).
    threshold : float
        UGAL bias towards minimal routes (> 0).
    rounds : int
        Most sweeps.
    tol : float
        Convergence tolerance on the fractions.

    Returns
    -------
    dict of (int, int) to numpy.ndarray
        For each pair with demand and Valiant routes, the fraction of its
        traffic on its minimal routes (element 0) and on each route of
        ``topology.nonminimal(a, b)`` (elements 1..K).
    """
    fixed: dict[str, float] = {}
    keys: list[tuple[GroupId, GroupId]] = []
    for (a, b), demand in demands_Bps.items():
        if not demand > 0 or a == b:
            continue
        if topology.nonminimal(a, b):
            keys.append((a, b))
        else:
            for name, w in split_weights(topology.minimal(a, b), [], 0.0, demand).items():
                fixed[name] = fixed.get(name, 0.0) + w
    index = {name: i for i, name in enumerate(topology.bundles)}
    cap = np.array([topology.bundles[n].capacity_Bps for n in index])
    fixed_load = np.zeros(len(index))
    for name, w in fixed.items():
        fixed_load[index[name]] += w
    pairs = [
        _PairRoutes.build(
            float(demands_Bps[k]), topology.minimal(*k), topology.nonminimal(*k), index, threshold
        )
        for k in keys
    ]
    bounds = np.cumsum([0] + [len(p.scale) for p in pairs])

    def sweep(x: FloatArray) -> FloatArray:
        """One Gauss-Seidel pass from fractions ``x``: each pair's best reply in turn."""
        load = fixed_load.copy()
        for p, lo, hi in zip(pairs, bounds[:-1], bounds[1:], strict=True):
            load[p.idx] += p.load(x[lo:hi])
        out = x.copy()
        for p, lo, hi in zip(pairs, bounds[:-1], bounds[1:], strict=True):
            base = load[p.idx] - p.load(out[lo:hi])
            out[lo:hi] = p.best_reply(base, cap[p.idx])
            load[p.idx] = base + p.load(out[lo:hi])
        return out

    def project(x: FloatArray) -> FloatArray:
        x = np.clip(x, 0.0, None)
        for lo, hi in itertools.pairwise(bounds):
            total = x[lo:hi].sum()
            x[lo:hi] = x[lo:hi] / total if total > 0 else np.eye(1, hi - lo)[0]
        return x

    # Anderson acceleration of the sweeps: pairs sharing detour bundles couple
    # strongly, and plain sweeps then take ~100 rounds.
    x = np.zeros(int(bounds[-1]))
    x[bounds[:-1]] = 1.0
    xs: list[FloatArray] = []
    gs: list[FloatArray] = []
    for _ in range(rounds):
        g = sweep(x)
        if not len(x) or float(np.abs(g - x).max()) < tol:
            x = g
            break
        xs, gs = [*xs[-_ANDERSON_DEPTH:], x], [*gs[-_ANDERSON_DEPTH:], g]
        if len(xs) > 1:
            f = np.array([gi - xi for gi, xi in zip(gs, xs, strict=True)]).T
            dg = np.diff(np.array(gs).T, axis=1)
            gamma = np.linalg.lstsq(np.diff(f, axis=1), f[:, -1], rcond=None)[0]
            g = g - dg @ gamma
        x = project(g)
    return {k: x[lo:hi].copy() for k, lo, hi in zip(keys, bounds[:-1], bounds[1:], strict=True)}


def max_flow_bound(
    topology: Topology, routes: Iterable[tuple[GroupId, GroupId, list[Route]]]
) -> float:
    """Largest aggregate rate (bytes/s) from the source groups to the destination groups.

    The maximum flow from a super source joined to every source group to a
    super sink joined from every destination group, over a graph in which each
    bundle is a node of its capacity and each route a chain of bundles.
    Routes sharing a bundle may be combined, so this is an upper bound on
    what a fixed split achieves; it is exact for one source and destination
    group.  ``inf`` when some route crosses no bundle.
    """
    graph: nx.DiGraph[object] = nx.DiGraph()
    any_route = False
    for a, b, rs in routes:
        graph.add_edge("source", ("src", a))
        graph.add_edge(("dst", b), "sink")
        for route in rs:
            any_route = True
            prev: object = ("src", a)
            for name in route.bundles:
                graph.add_edge(prev, ("in", name))
                graph.add_edge(
                    ("in", name), ("out", name), capacity=topology.bundles[name].capacity_Bps
                )
                prev = ("out", name)
            graph.add_edge(prev, ("dst", b))
    if not any_route:
        return 0.0
    try:
        value, _ = nx.maximum_flow(graph, "source", "sink")
    except nx.NetworkXUnbounded:
        return float("inf")
    return float(value)


def build_topology(name: str, spec: SwitchFabricSpec | FatTreeSpec | DragonflySpec) -> Topology:
    """The :class:`Topology` of a fabric spec, its bundle names starting with ``name``."""
    if isinstance(spec, SwitchFabricSpec):
        return SwitchTopology(name, spec)
    if isinstance(spec, FatTreeSpec):
        return FatTreeTopology(name, spec)
    return DragonflyTopology(name, spec)
