"""Group-level structure and routes of a network fabric, and the fabric's bound.

A fabric is seen at the level of *groups* (a dragonfly group, a fat-tree leaf,
the single group of a switch fabric) joined by *bundles*: sets of ``links``
identical links of ``link_Bps`` bytes/s each, used in one direction (a
dragonfly global-link bundle from group ``a`` to group ``b``, a leaf's uplinks,
a group's local links, a switch set).  A bundle becomes one flow resource of
``links * link_Bps`` bytes/s and one request queue of ``links`` servers.

A :class:`Route` is a sequence of bundles from a source group to a destination
group.  Each topology gives the minimal routes between two groups (split
evenly) and the non-minimal (Valiant) routes, one per intermediate group (split
evenly).  :func:`max_flow_bound` gives the largest aggregate rate a set of
routes can carry; :func:`flashsim.components.routing_ugal.ugal_split` the
fraction of a group pair's traffic that adaptive routing sends non-minimally.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flashsim.components.fabric_spec import (
    DragonflySpec,
    FatTreeSpec,
    GroupId,
    SwitchFabricSpec,
)

if TYPE_CHECKING:  # networkx is imported where a graph is built, not at start-up
    import networkx as nx


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
        # Bandwidth "unknown": no bundle, so a transfer crosses no resource (one hop of latency).
        self._switch: tuple[str, ...] = ()
        if spec.switch_bandwidth != "unknown":
            self._switch = (self._bundle(name, spec.switches, spec.switch_bandwidth),)

    def _minimal(self, a: GroupId, b: GroupId) -> list[Route]:
        return [Route(self._switch, 1)]


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
        import networkx as nx

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
        import networkx as nx

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
    import networkx as nx

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
