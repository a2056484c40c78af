"""Network-fabric schemas: a switch, a two-level fat tree, a dragonfly; and node placement.

A model file describes its fabric with one ``[fabric]`` table whose
``topology`` key selects the schema (:data:`FabricSpec`).  The runtime
:class:`flashsim.components.fabric.Fabric` builds resources (flow fidelity) and
queues (request fidelity) from it.

Background traffic (other jobs) is part of the fabric: each ``background`` job
(:class:`BackgroundJobSpec`) starts one rate-capped flow per (source group,
destination group) pair when the fabric is built, so every system kind using
the fabric meets it; e.g. a job spanning compute groups 16 to 23 (of 24) that
sends 100 GB/s from each of them to each other one::

    background = [
      { between = ["compute", "compute"], rate_per_pair = "100 GB/s", first_group = 16 },
    ]

Perlmutter (the reference dragonfly) as a model-file table::

    [fabric]
    topology = "dragonfly"
    routing = "ugal"
    hop_latency = "2 us"   # seed 000 §IV-B: one global-link traversal, 2 us [10]
    groups = [
      # NERSC, "Perlmutter Architecture" (docs.nersc.gov/systems/perlmutter/architecture):
      # one dragonfly group per cabinet; 1,536 GPU nodes at 128 per cabinet (8 chassis x
      # 4 switch blades = 32 switches) and 3,072 CPU nodes at 256 per cabinet (8 chassis x
      # 2 switch blades = 16 switches), as in models/systems/perlmutter.toml.
      { role = "compute", count = 12, routers = 32, nodes_per_router = 4 },
      { role = "compute", count = 12, routers = 16, nodes_per_router = 16 },
      # seed 000 §II-A: four I/O groups of 4 racks x 4 Slingshot switches.
      { role = "io", count = 4, routers = 16 },
      # seed 000 §II-A: one service group; its router count is ASSUMED.
      { role = "service", count = 1, routers = 16 },
    ]
    global_links = [
      # seed 000 §II-A: each I/O group is directly connected to each compute group
      # via 4x200 Gb/s, to each other I/O group and to the service group via 6x200 Gb/s.
      { between = ["compute", "io"], links = 4, bandwidth = "200 Gb/s" },
      { between = ["io", "io"], links = 6, bandwidth = "200 Gb/s" },
      { between = ["io", "service"], links = 6, bandwidth = "200 Gb/s" },
      # compute<->compute links are not in the seed: ASSUMED, set in the model file.
      # { between = ["compute", "compute"], links = ..., bandwidth = "200 Gb/s" },
    ]

"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from flashsim.config import Bandwidth, Bytes, NonNegativeBandwidth, NonNegativeSeconds, StrictModel

if TYPE_CHECKING:  # networkx is imported where a graph is built, not at start-up
    import networkx as nx

#: A group's global id (index into :attr:`Fabric.group_names`).
GroupId = int
#: Dragonfly routing policies: minimal, Valiant (random intermediate group), UGAL.
Routing = Literal["minimal", "valiant", "ugal"]


#: Share weight of a background flow when unset: it counts as this many I/O streams.
DEFAULT_BACKGROUND_STREAMS = 1024


class BackgroundJobSpec(StrictModel):
    """Background traffic: a job moving data from the groups of one role to those of another.

    The job sends ``rate_per_pair`` bytes/s from each source group to each
    destination group it spans (ordered pairs, so the same role twice gives both
    directions of every pair; a group with itself only where traffic inside a
    group crosses a modelled bundle: a switch, dragonfly local links), one
    rate-capped flow per pair,
    routed like any traffic under the fabric's routing (UGAL: the job's own
    offered load is planned first, and later I/O is planned on top of it).
    At a congested link each flow gets the max-min share of ``streams``
    unit-weight flows (``streams`` is its priority), so a job of many node
    pairs is not squeezed to the share of one I/O rank.
    """

    name: Annotated[str, Field(min_length=1)] | None = Field(
        None,
        description="Label of the job, in its flows' names; --set addresses it "
        "(fabric.background.NAME.rate_per_pair).",
    )
    between: tuple[str, str] = Field(
        ("compute", "compute"),
        description='Source and destination roles, e.g. ["compute", "compute"] or '
        '["compute", "io"] (other jobs\' writes); "all" on switch and fat-tree fabrics.',
    )
    rate_per_pair: NonNegativeBandwidth = Field(
        description="Offered rate from each source group to each destination group, bytes/s "
        '(e.g. "50 GB/s"); 0 starts nothing. The total is rate_per_pair x the number of pairs.'
    )
    groups: Annotated[int, Field(ge=1)] | None = Field(
        None,
        description="Groups of each role the job spans, counted from first_group "
        "(unset: all the role's groups from first_group on).",
    )
    first_group: Annotated[int, Field(ge=0)] = Field(
        0, description="Index among each role's groups of the first group the job spans."
    )
    volume_per_pair: Bytes | None = Field(
        None,
        description="Bytes each pair moves before its flow ends; unset: it runs for the whole "
        "simulation.",
    )
    streams: Annotated[float, Field(gt=0)] = Field(
        DEFAULT_BACKGROUND_STREAMS,
        description="Streams one pair's flow stands for at a congested link (its max-min "
        "priority; an I/O rank's flow counts 1).",
    )


def check_background(
    jobs: list[BackgroundJobSpec], counts: dict[str, int], where: str = "background"
) -> None:
    """Raise ``ValueError`` when a job names a role with no groups or spans groups it lacks.

    Parameters
    ----------
    jobs : list of BackgroundJobSpec
        The jobs.
    counts : dict of str to int
        Groups of each role.
    where : str
        Key named in messages.
    """
    for i, job in enumerate(jobs):
        for role in job.between:
            if role not in counts:
                raise ValueError(
                    f"{where}[{i}].between: role(={role!r}) has no groups "
                    f"(roles with groups: {', '.join(sorted(counts))})"
                )
            last = job.first_group + (job.groups or 1)
            if last > counts[role]:
                raise ValueError(
                    f"{where}[{i}]: first_group(={job.first_group}) + groups(={job.groups}) "
                    f"exceeds the {counts[role]} {role!r} group(s)"
                )


class SwitchFabricSpec(StrictModel):
    """A set of switches that traffic is spread over (one aggregate resource).

    Any fabric crossed once by every transfer: a storage system's own
    back-end switches (a VAST NVMe-oF fabric, a burst buffer's), or a compute
    network summarised by its aggregate capacity.  It is one resource of
    ``switches * switch_bandwidth`` bytes/s and ``latency`` per traversal.

    Where the capacity is not known, ``switch_bandwidth = "unknown"`` builds
    no resource: the fabric is assumed never to bind (traffic pays only its
    ``latency``), and ``describe`` says so, rather than a bandwidth invented
    to stay out of the way.
    """

    topology: Literal["switch"] = Field(description='Fabric kind: "switch".')
    switches: Annotated[int, Field(ge=1)] = Field(
        description="Switches traffic is spread over (>= 1)."
    )
    switch_bandwidth: Bandwidth | Literal["unknown"] = Field(
        description='Switching capacity of one switch, bytes/s (e.g. "12.8 Tb/s"); "unknown" '
        "builds no bandwidth resource: the fabric is assumed never to bind (describe says so)."
    )
    latency: NonNegativeSeconds = Field("0 s", description="Seconds per traversal of the fabric.")
    background: list[BackgroundJobSpec] = Field(
        [],
        description="Background traffic jobs sharing the fabric (other jobs' traffic), started "
        "when the fabric is built; empty for none.",
    )

    @model_validator(mode="after")
    def _check_background(self) -> SwitchFabricSpec:
        check_background(self.background, {"all": 1})
        return self

    @property
    def binding(self) -> bool:
        """Whether the switches are a bandwidth resource (``False``: bandwidth unknown)."""
        return self.switch_bandwidth != "unknown"


class FatTreeSpec(StrictModel):
    """A two-level fat tree: leaves with nodes below and uplinks to a non-blocking spine.

    Traffic between leaves crosses the source leaf's uplinks and the destination
    leaf's downlinks, spread evenly (ECMP) over the ``uplinks_per_leaf`` links;
    traffic within a leaf crosses only the leaf switch, which is non-blocking.
    """

    topology: Literal["fat-tree"] = Field(description='Fabric kind: "fat-tree".')
    leaves: Annotated[int, Field(ge=1)] = Field(description="Leaf switches (>= 1).")
    nodes_per_leaf: Annotated[int, Field(ge=1)] = Field(
        description="Endpoints attached to one leaf (>= 1); endpoints fill leaves in order."
    )
    uplinks_per_leaf: Annotated[int, Field(ge=1)] = Field(
        description="Links from one leaf to the spine (>= 1), each used in both directions."
    )
    link_bandwidth: Bandwidth = Field(description="Bandwidth of one link per direction, bytes/s.")
    latency: NonNegativeSeconds = Field(
        "0 s", description="Seconds per switch hop (1 within a leaf, 3 leaf-spine-leaf)."
    )
    background: list[BackgroundJobSpec] = Field(
        [],
        description="Background traffic jobs sharing the fabric (other jobs' traffic), started "
        "when the fabric is built; empty for none.",
    )

    @model_validator(mode="after")
    def _check_background(self) -> FatTreeSpec:
        check_background(self.background, {"all": self.leaves})
        return self


class GroupKind(StrictModel):
    """``count`` dragonfly groups of one role and size."""

    role: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z_]+$")] = Field(
        description='Role of these groups, e.g. "compute", "io", "service" (letters and _ only).'
    )
    count: Annotated[int, Field(ge=1)] = Field(description="Groups of this kind (>= 1).")
    routers: Annotated[int, Field(ge=1)] = Field(
        description="Routers (switches) in one group (>= 1), connected all-to-all."
    )
    nodes_per_router: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Endpoints per router (>= 1); unset for no capacity limit."
    )

    @property
    def capacity(self) -> int | None:
        """Endpoints one group holds, or ``None`` for no limit."""
        return None if self.nodes_per_router is None else self.routers * self.nodes_per_router


class GlobalLinks(StrictModel):
    """The global links between every group of one role and every group of another."""

    between: tuple[str, str] = Field(
        description='The two roles linked, e.g. ["compute", "io"]; the same role twice links '
        "every pair of its groups."
    )
    links: Annotated[int, Field(ge=1)] = Field(
        description="Global links between each pair of groups (>= 1)."
    )
    bandwidth: Bandwidth = Field(description="Bandwidth of one global link per direction, bytes/s.")


class DragonflySpec(StrictModel):
    """A dragonfly of groups with roles (compute, I/O, service) joined by global links.

    Local (intra-group) links are modelled only when ``local_link_bandwidth`` is
    set: each group then has one aggregate local resource of ``routers *
    (routers - 1) / 2`` links (every router pair joined once) of that bandwidth,
    crossed once by each byte that enters, leaves or transits the group.  This
    counts every local link once at its per-direction rate, i.e. half the
    all-to-all group's directed capacity: an even spread over all routers would
    reach twice that, traffic concentrated on the routers holding the global
    links less.  Unset, local links are not modelled: an all-to-all group has
    far more local than global bandwidth, so it is rarely the I/O bottleneck.
    """

    topology: Literal["dragonfly"] = Field(description='Fabric kind: "dragonfly".')
    groups: Annotated[list[GroupKind], Field(min_length=1)] = Field(
        description="Group kinds; global group ids follow this order."
    )
    global_links: list[GlobalLinks] = Field(
        description="Global link bundles per pair of roles (links and bandwidth per group pair)."
    )
    local_link_bandwidth: Bandwidth | None = Field(
        None,
        description="Bandwidth of one local (intra-group) link per direction, bytes/s; "
        "unset to leave local links out.",
    )
    hop_latency: NonNegativeSeconds = Field(
        "2 us",
        description="Seconds per global-link traversal, including the local hops around it; "
        "an intra-group path counts one (seed 000 §IV-B: 2 us).",
    )
    routing: Routing = Field(
        "ugal", description='Routing policy: "minimal", "valiant" or "ugal" (adaptive).'
    )
    ugal_threshold: Annotated[float, Field(gt=0)] = Field(
        2.0,
        description="UGAL bias towards minimal paths: non-minimal when "
        "queue_min x hops_min > threshold x queue_nonmin x hops_nonmin.",
    )
    intermediate_roles: list[str] | None = Field(
        None,
        description="Roles whose groups may be Valiant/UGAL intermediates (unset: all roles); "
        "an intermediate must have global links to both ends.",
    )
    background: list[BackgroundJobSpec] = Field(
        [],
        description="Background traffic jobs sharing the fabric (other jobs' traffic), started "
        "when the fabric is built; empty for none.",
    )

    @model_validator(mode="after")
    def _check_roles(self) -> DragonflySpec:
        roles = sorted({g.role for g in self.groups})
        known = ", ".join(roles)
        seen: set[frozenset[str]] = set()
        for i, bundle in enumerate(self.global_links):
            for role in bundle.between:
                if role not in roles:
                    raise ValueError(
                        f"global_links[{i}].between: role(={role!r}) has no groups "
                        f"(roles with groups: {known})"
                    )
            key = frozenset(bundle.between)
            if key in seen:
                raise ValueError(
                    f"global_links[{i}].between: {list(bundle.between)} is given twice"
                )
            seen.add(key)
        for role in self.intermediate_roles or []:
            if role not in roles:
                raise ValueError(
                    f"intermediate_roles: role(={role!r}) has no groups "
                    f"(roles with groups: {known})"
                )
        import networkx as nx

        role_graph: nx.Graph[str] = nx.Graph()
        role_graph.add_nodes_from(roles)
        role_graph.add_edges_from(b.between for b in self.global_links)
        counts = {r: sum(g.count for g in self.groups if g.role == r) for r in roles}
        lone = len(roles) == 1 and counts[roles[0]] > 1 and not role_graph.has_edge(*roles * 2)
        if lone or not nx.is_connected(role_graph):
            raise ValueError(
                "global_links leave some groups unreachable from others "
                f"(roles: {known}; links between: {[list(b.between) for b in self.global_links]})"
            )
        check_background(self.background, counts)
        return self

    @property
    def n_groups(self) -> int:
        """Number of groups."""
        return sum(g.count for g in self.groups)


#: A fabric of any topology; the ``topology`` key selects the schema.
FabricSpec = Annotated[
    SwitchFabricSpec | FatTreeSpec | DragonflySpec,
    Field(discriminator="topology", description="The network fabric and its routing."),
]


def fabric_role(spec: FabricSpec, role: str) -> str:
    """``role`` on a dragonfly that has groups of it; ``"all"`` otherwise (switch, fat tree).

    What to pass as the role to :meth:`Fabric.attach` and :meth:`Fabric.groups_of`
    for endpoints a system puts in ``role`` groups.
    """
    if isinstance(spec, DragonflySpec) and any(g.role == role for g in spec.groups):
        return role
    return "all"
