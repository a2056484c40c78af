"""Network fabric: schemas, routes, UGAL split, both fidelities and their agreement."""

from __future__ import annotations

import textwrap
import tomllib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from flashsim.components import fabric_spec
from flashsim.components.fabric import Fabric
from flashsim.components.fabric_spec import (
    DragonflySpec,
    FabricSpec,
    FatTreeSpec,
    SwitchFabricSpec,
)
from flashsim.components.placement import Placement, PlacementSpec
from flashsim.engine.simulation import Simulation
from flashsim.systems.vast.kind import FabricSpec as VastFabricSpec

GBps = 1e9
#: seed 000 §II-A: 4 x 200 Gb/s between a compute group and an I/O group.
COMPUTE_IO_Bps = 4 * 200e9 / 8
SPEC = TypeAdapter(FabricSpec)
#: seed 000 §II-A, as in the docstring example.
PERLMUTTER_LINKS = [
    {"between": ["compute", "io"], "links": 4, "bandwidth": "200 Gb/s"},
    {"between": ["io", "io"], "links": 6, "bandwidth": "200 Gb/s"},
    {"between": ["io", "service"], "links": 6, "bandwidth": "200 Gb/s"},
]


def perlmutter(**changes: Any) -> DragonflySpec:
    """The Perlmutter fabric of the module docstring of fabric_spec, with changes."""
    doc = fabric_spec.__doc__ or ""
    table = textwrap.dedent(doc[doc.index("    [fabric]") :])
    raw = tomllib.loads(table)["fabric"]
    raw.update(changes)
    spec = SPEC.validate_python(raw)
    assert isinstance(spec, DragonflySpec)
    return spec


def build(spec: Any, clients: int = 16, servers: int = 16) -> tuple[Simulation, Fabric]:
    """Clients in compute group 0, servers in I/O group 0, a login node in the service group."""
    sim = Simulation(seed=7)
    fabric = Fabric(sim, "pm.fabric", spec)
    for i in range(clients):
        fabric.attach(f"c{i}", "compute", 0)
    for i in range(servers):
        fabric.attach(f"s{i}", "io", 0)
    fabric.attach("login", "service")
    return sim, fabric


def max_utilisation(fabric: Fabric, demands: Mapping[tuple[str, str], float]) -> float:
    """Highest load / capacity over the bundles, for offered loads routed by ``path``."""
    load: dict[str, float] = {}
    cap: dict[str, float] = {}
    for (src, dst), rate in demands.items():
        for res, w in fabric.path(src, dst):
            load[res.name] = load.get(res.name, 0.0) + rate * w
            cap[res.name] = res.capacity_Bps or np.inf
    return max(load[n] / cap[n] for n in load)


def flow_saturation(fabric: Fabric, sim: Simulation, clients: int = 16) -> float:
    """Aggregate bytes/s of one greedy 1 GB flow per client to a server, run to completion."""
    flows = [sim.flows.start_flow(1e9, fabric.path(f"c{i}", f"s{i}")) for i in range(clients)]
    sim.run()
    return clients * 1e9 / max(f.end_s for f in flows)


# ---------------------------------------------------------------- schemas
def test_docstring_example_is_perlmutter() -> None:
    spec = perlmutter()
    assert spec.n_groups == 24 + 4 + 1
    fabric = Fabric(Simulation(), "pm.fabric", spec)
    assert fabric.group_names[:2] == ["compute0", "compute1"]
    assert fabric.group_names[23:] == ["compute23", "io0", "io1", "io2", "io3", "service0"]
    caps = fabric.topology.group_capacity
    assert sum(c or 0 for c in caps[:24]) == 1536 + 3072  # NERSC: GPU + CPU nodes
    assert fabric.latency_s(0, 24) == pytest.approx(2e-6)  # seed 000 §IV-B
    assert fabric.describe_note() == (
        "dragonfly: 29 groups (24 compute, 4 io, 1 service), ugal routing"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"groups": [{"role": "compute", "count": -1, "routers": 4}]}, "greater than or equal"),
        (
            {
                "global_links": [
                    {"between": ["compute", "storage"], "links": 4, "bandwidth": "1 GB/s"}
                ]
            },
            "role(='storage') has no groups",
        ),
        (
            {
                "global_links": [
                    {"between": ["compute", "io"], "links": 4, "bandwidth": "25 GB/s"},
                    {"between": ["io", "compute"], "links": 2, "bandwidth": "25 GB/s"},
                ]
            },
            "is given twice",
        ),
        (
            {"global_links": [{"between": ["compute", "io"], "links": 4, "bandwidth": "25 GB/s"}]},
            "unreachable",
        ),
        ({"routing": "shortest"}, "'minimal', 'valiant' or 'ugal'"),
        ({"intermediate_roles": ["gpu"]}, "intermediate_roles: role(='gpu')"),
        ({"ugal_threshold": 0}, "greater than 0"),
        (
            {"background": [{"between": ["compute", "gpu"], "rate_per_pair": "1 GB/s"}]},
            "background[0].between: role(='gpu') has no groups",
        ),
        (
            {"background": [{"between": ["io", "io"], "rate_per_pair": "1 GB/s", "groups": 5}]},
            "exceeds the 4 'io' group(s)",
        ),
        (
            {"background": [{"rate_per_pair": "1 GB/s", "first_group": 24}]},
            "first_group(=24) + groups(=None) exceeds the 24 'compute' group(s)",
        ),
        ({"background": [{"rate_per_pair": "-1 GB/s"}]}, "rate_per_pair"),
    ],
)
def test_bad_specs_are_refused_clearly(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        perlmutter(**change)
    assert message in str(info.value)


def test_unknown_topology_is_refused() -> None:
    with pytest.raises(ValidationError, match="'switch', 'fat-tree', 'dragonfly'"):
        SPEC.validate_python({"topology": "torus"})


def test_every_field_has_a_description() -> None:
    for model in (
        SwitchFabricSpec,
        FatTreeSpec,
        DragonflySpec,
        fabric_spec.GroupKind,
        fabric_spec.BackgroundJobSpec,
    ):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name}"
    for name, field in fabric_spec.GlobalLinks.model_fields.items():
        assert field.description, f"GlobalLinks.{name}"


# ---------------------------------------------------------- switch, fat tree
def test_switch_fabric_equals_the_vast_fabric() -> None:
    raw = {"switches": 2, "switch_bandwidth": "12.8 Tb/s", "latency": "1 us"}
    # The VAST kind's [fabric] is the shared schema (topology = "switch").
    vast = TypeAdapter(VastFabricSpec).validate_python({"topology": "switch", **raw})
    assert isinstance(vast, SwitchFabricSpec)
    spec = SPEC.validate_python({"topology": "switch", **raw})
    sim = Simulation()
    fabric = Fabric(sim, "vast.fabric", spec)
    fabric.attach("cnode0")
    fabric.attach("dnode0")
    path = fabric.path("cnode0", "dnode0")
    assert len(path) == 1 and path[0][1] == 1.0
    res = path[0][0]
    assert res.name == "vast.fabric"
    assert res.capacity_Bps == vast.switches * vast.switch_bandwidth
    assert fabric.path("dnode0", "cnode0", 0.5)[0] == (res, 0.5)
    assert fabric.latency_s("cnode0", "dnode0") == vast.latency
    assert fabric.resources() == [res]
    hops = fabric.request_hops("cnode0", "dnode0", 1e6, sim.rng("t"))
    assert hops[0][0].servers == 2 and hops[0][1] == pytest.approx(1e6 / 1.6e12)
    assert fabric.describe_bound_Bps(["cnode0"], ["dnode0"]) == res.capacity_Bps
    assert fabric.describe_note() == "switch fabric: 2 switches"


def test_fat_tree_crosses_uplinks_then_downlinks() -> None:
    spec = SPEC.validate_python(
        {
            "topology": "fat-tree",
            "leaves": 3,
            "nodes_per_leaf": 2,
            "uplinks_per_leaf": 2,
            "link_bandwidth": "100 Gb/s",
            "latency": "300 ns",
        }
    )
    fabric = Fabric(Simulation(), "ft", spec)
    assert [fabric.attach(f"n{i}") for i in range(6)] == [0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="full"):
        fabric.attach("n6")
    assert fabric.path("n0", "n1") == []
    path = fabric.path("n0", "n2")
    assert [(r.name, w) for r, w in path] == [("ft.leaf0.up", 1.0), ("ft.leaf1.down", 1.0)]
    assert path[0][0].capacity_Bps == pytest.approx(25e9)
    assert fabric.latency_s("n0", "n2") == pytest.approx(900e-9)
    assert fabric.latency_s("n0", "n1") == pytest.approx(300e-9)
    assert fabric.describe_bound_Bps(["n0", "n2"], ["n4"]) == pytest.approx(25e9)
    assert fabric.describe_bound_Bps(["n0"], ["n2", "n4"]) == pytest.approx(25e9)
    assert fabric.describe_bound_Bps(["n0"], ["n1"]) == np.inf


# ------------------------------------------------------------- dragonfly paths
def test_minimal_compute_to_io_crosses_one_global_link() -> None:
    _, fabric = build(perlmutter(routing="minimal"))
    path = fabric.path("c0", "s0")
    assert [(r.name, w) for r, w in path] == [("pm.fabric.compute0-io0", 1.0)]
    assert path[0][0].capacity_Bps == pytest.approx(COMPUTE_IO_Bps)
    assert fabric.path("c0", "c1") == []
    # No compute<->service links: through each I/O group, split evenly.
    path = fabric.path("c0", "login")
    assert len(path) == 8 and all(w == pytest.approx(0.25) for _, w in path)
    assert fabric.latency_s("c0", "login") == pytest.approx(4e-6)


def test_cross_visits_the_route_and_minimal_service_is_its_zero_load_time() -> None:
    """The request helpers every kind shares: a minimal route's service, crossed as queues."""
    sim, fabric = build(perlmutter(routing="minimal"))
    size = 1e6
    # Compute to I/O: one global-link bundle of 4 x 200 Gb/s links, one link per request.
    assert fabric.minimal_service_s("c0", "s0", size) == pytest.approx(size / 25e9)
    assert fabric.minimal_service_s("c0", "c1", size) == 0.0
    # No compute<->service links: two global hops through an I/O group.
    assert fabric.minimal_service_s("c0", "login", size) == pytest.approx(2 * size / 25e9)
    rng = sim.rng("t")
    done = [sim.env.process(fabric.cross("c0", "s0", size, rng)) for _ in range(5)]
    sim.env.run()
    assert all(p.processed for p in done)
    # Five requests on four links: the fifth waits for a link.
    assert sim.env.now == pytest.approx(2 * size / 25e9)


def test_valiant_splits_evenly_over_two_legs() -> None:
    _, fabric = build(perlmutter(routing="valiant"))
    path = dict((r.name, w) for r, w in fabric.path("c0", "s0", share=0.6))
    # Intermediates linked to both compute0 and io0: the three other I/O groups.
    assert sorted(path) == sorted(
        [f"pm.fabric.compute0-io{k}" for k in (1, 2, 3)]
        + [f"pm.fabric.io{k}-io0" for k in (1, 2, 3)]
    )
    assert all(w == pytest.approx(0.2) for w in path.values())
    assert fabric.latency_s("c0", "s0") == pytest.approx(4e-6)


def test_intermediate_roles_and_compute_links() -> None:
    cc = {"between": ["compute", "compute"], "links": 2, "bandwidth": "200 Gb/s"}
    links = [*PERLMUTTER_LINKS, cc]
    _, fabric = build(perlmutter(routing="valiant", global_links=links))
    assert len(fabric.path("c0", "s0")) == 2 * (23 + 3)
    _, fabric = build(
        perlmutter(routing="valiant", global_links=links, intermediate_roles=["compute"])
    )
    assert len(fabric.path("c0", "s0")) == 2 * 23
    assert len(fabric.group_path(0, 1)) == 2 * 22


def test_local_links_are_crossed_in_every_group() -> None:
    _, fabric = build(perlmutter(routing="minimal", local_link_bandwidth="200 Gb/s"))
    names = {r.name: (r.capacity_Bps, w) for r, w in fabric.path("c0", "s0")}
    assert names["pm.fabric.compute0.local"] == (32 * 31 / 2 * 25e9, 1.0)
    assert names["pm.fabric.io0.local"] == (16 * 15 / 2 * 25e9, 1.0)
    assert [r.name for r, _ in fabric.path("c0", "c1")] == ["pm.fabric.compute0.local"]


@settings(max_examples=40, deadline=None)
@given(
    a=st.integers(0, 28),
    b=st.integers(0, 28),
    routing=st.sampled_from(["minimal", "valiant", "ugal"]),
    demand=st.floats(0.0, 1e12),
    share=st.floats(0.01, 1.0),
)
def test_each_leg_carries_the_share(
    a: int, b: int, routing: str, demand: float, share: float
) -> None:
    _, fabric = build(perlmutter(routing=routing), clients=0, servers=0)
    fabric.plan({(a, b): demand})
    names = fabric.group_names
    path = fabric.group_path(a, b, share)
    out = sum(w for r, w in path if r.name.startswith(f"pm.fabric.{names[a]}-"))
    into = sum(w for r, w in path if r.name.endswith(f"-{names[b]}"))
    if a == b:
        assert path == []
    else:
        assert out == pytest.approx(share) and into == pytest.approx(share)
    assert 0.0 <= fabric.split(a, b) <= 1.0


# --------------------------------------------------------------------- UGAL
def test_ugal_is_minimal_at_low_load() -> None:
    _, fabric = build(perlmutter())
    fabric.plan({("c0", "s0"): 0.9 * COMPUTE_IO_Bps})
    assert fabric.split("c0", "s0") == 0.0
    assert [r.name for r, _ in fabric.path("c0", "s0")] == ["pm.fabric.compute0-io0"]
    assert fabric.latency_s("c0", "s0") == pytest.approx(2e-6)


def test_ugal_moves_share_off_overloaded_minimal_links() -> None:
    demand = {("c0", "s0"): 3 * COMPUTE_IO_Bps}
    utils = {}
    for routing in ("minimal", "valiant", "ugal"):
        _, fabric = build(perlmutter(routing=routing))
        fabric.plan(demand)
        utils[routing] = max_utilisation(fabric, demand)
    assert utils["minimal"] == pytest.approx(3.0)
    assert utils["ugal"] < utils["minimal"]
    assert utils["ugal"] <= utils["valiant"] + 1e-9
    assert utils["ugal"] == pytest.approx(1.0)  # just enough moved off the minimal link
    assert fabric.split("c0", "s0") == pytest.approx(2 / 3)
    assert 2e-6 < fabric.latency_s("c0", "s0") < 4e-6


def test_ugal_plan_over_the_whole_machine() -> None:
    fabric = Fabric(Simulation(), "pm.fabric", perlmutter())
    # Uniform overload of every compute->I/O bundle: detours only add load; stay minimal.
    fabric.plan({(c, io): 1.5 * COMPUTE_IO_Bps for c in range(24) for io in range(24, 28)})
    assert all(fabric.split(c, io) == 0.0 for c in range(24) for io in range(24, 28))
    # Every compute group writing 1.5x to io0: detours through io1..io3 until the
    # weighted excesses balance, h_min (u_min - 1) = threshold h_nm (u_nm - 1).
    demand = {(c, 24): 1.5 * COMPUTE_IO_Bps for c in range(24)}
    fabric.plan(demand)
    x = fabric.split(0, 24)
    assert all(fabric.split(c, 24) == pytest.approx(x, rel=1e-4) for c in range(24))
    u_min, u_nm = 1.5 * (1 - x), 24 * 1.5 * COMPUTE_IO_Bps * x / 3 / (6 * 25e9)
    assert 1 * (u_min - 1) == pytest.approx(2.0 * 2 * (u_nm - 1), abs=1e-4)
    assert x == pytest.approx(4.5 / 33.5, rel=1e-4)
    loads: dict[str, float] = {}
    for (a, b), rate in demand.items():
        for r, w in fabric.group_path(a, b):
            loads[r.name] = loads.get(r.name, 0.0) + rate * w
    util = max(loads[r.name] / (r.capacity_Bps or 1.0) for r in fabric.resources())
    assert util == pytest.approx(u_min, rel=1e-4) and util < 1.5


def test_ugal_detours_only_through_groups_with_room() -> None:
    cc = {"between": ["compute", "compute"], "links": 16, "bandwidth": "200 Gb/s"}
    fabric = Fabric(Simulation(), "pm.fabric", perlmutter(global_links=[*PERLMUTTER_LINKS, cc]))
    # A job in compute0 and compute1 writing 4x what its direct links carry to every I/O group.
    demand = {(c, io): 4 * COMPUTE_IO_Bps for c in (0, 1) for io in range(24, 28)}
    fabric.plan(demand)
    assert all(fabric.split(a, b) == pytest.approx(0.75) for a, b in demand)
    path = {r.name: w for r, w in fabric.group_path(0, 24)}
    assert path["pm.fabric.compute0-io0"] == pytest.approx(0.25)
    # Detours avoid the job's other group and its own hot links to the other I/O groups ...
    assert "pm.fabric.compute0-compute1" not in path
    assert "pm.fabric.compute0-io1" not in path
    # ... and spread over the 22 idle compute groups, none of their bundles overloaded.
    assert sum(1 for n in path if n.startswith("pm.fabric.compute0-compute")) == 22
    load: dict[str, float] = {}
    for (a, b), rate in demand.items():
        for r, w in fabric.group_path(a, b):
            load[r.name] = load.get(r.name, 0.0) + rate * w
    util = {r.name: load[r.name] / (r.capacity_Bps or 1.0) for r in fabric.resources()}
    assert max(util.values()) == pytest.approx(1.0)


# ------------------------------------------------ flow and request fidelity
def test_flow_saturation_and_bounds() -> None:
    clients = [f"c{i}" for i in range(16)]
    servers = [f"s{i}" for i in range(16)]
    rates, bounds = {}, {}
    for routing in ("minimal", "valiant", "ugal"):
        sim, fabric = build(perlmutter(routing=routing))
        fabric.plan({(c, s): 25e9 for c, s in zip(clients, servers, strict=True)})
        rates[routing] = flow_saturation(fabric, sim)
        bounds[routing] = fabric.describe_bound_Bps(clients, servers)
    assert rates["minimal"] == pytest.approx(4 * 25e9)
    assert rates["valiant"] == pytest.approx(3 * 4 * 25e9)  # via the 3 other I/O groups
    assert rates["ugal"] == pytest.approx(4 * 4 * 25e9)  # minimal + those 3
    for routing, rate in rates.items():
        assert bounds[routing] == pytest.approx(rate)


def _closed_loop(
    fabric: Fabric, sim: Simulation, size_B: float, depth: int, until_s: float
) -> float:
    """Aggregate bytes/s of 16 clients each keeping ``depth`` requests in flight."""
    rng = sim.rng("pm.fabric.routing")
    done = [0.0]
    warm_s = until_s / 5

    def rank(i: int) -> Any:
        while True:
            for queue, service_s in fabric.request_hops(f"c{i}", f"s{i}", size_B, rng):
                yield queue.visit(service_s)
            if sim.now > warm_s:
                done[0] += size_B

    for i in range(16):
        for _ in range(depth):
            sim.env.process(rank(i))
    sim.run(until=until_s)
    return done[0] / (until_s - warm_s)


@pytest.mark.parametrize(
    ("routing", "check"),
    [
        ("minimal", lambda r: r == pytest.approx(4 * 25e9, rel=0.05)),
        ("valiant", lambda r: r == pytest.approx(3 * 4 * 25e9, rel=0.05)),
        ("ugal", lambda r: r == pytest.approx(4 * 4 * 25e9, rel=0.05)),
    ],
)
def test_request_fidelity_saturates_like_flows(
    routing: str, check: Callable[[float], bool]
) -> None:
    sim, fabric = build(perlmutter(routing=routing))
    rate = _closed_loop(fabric, sim, 1 << 20, depth=8, until_s=2e-3)
    assert check(rate), rate


# ---------------------------------------------------------------- background
def test_background_shares_links_with_io() -> None:
    sim, fabric = build(perlmutter(routing="minimal"))
    io = sim.flows.start_flow(1e15, fabric.path("c0", "s0"))
    sim.flows.solve_now()
    assert io.rate_Bps == pytest.approx(COMPUTE_IO_Bps)
    # No compute<->compute links: compute traffic goes through the I/O groups.
    flows = fabric.background("compute", "compute", rate_Bps=24 * 23 * 10e9)
    assert len(flows) == 24 * 23
    sim.flows.solve_now()
    assert io.rate_Bps < COMPUTE_IO_Bps
    assert all(f.rate_Bps == pytest.approx(10e9) for f in flows if "compute0-" not in f.name)
    finite = fabric.background([0], [1], rate_Bps=1e9, volume_B=1e9)
    assert len(finite) == 1 and finite[0].size_B == 1e9


# --------------------------------------------------------- attach, placement
def test_attach_round_robin_and_capacity() -> None:
    fabric = Fabric(Simulation(), "pm.fabric", perlmutter())
    assert [fabric.attach(f"oss{i}", "io") for i in range(6)] == [24, 25, 26, 27, 24, 25]
    assert fabric.attach("login", "service") == 28
    assert fabric.attach("gpu0", "compute", group_index=3) == 3
    assert fabric.attach("oss6", "io", group_index=6) == 26  # index modulo the 4 I/O groups
    with pytest.raises(ValueError, match="already attached"):
        fabric.attach("gpu0", "compute")
    with pytest.raises(ValueError, match="has no groups"):
        fabric.attach("x", "storage")
    for i in range(127):
        fabric.attach(f"g{i}", "compute", group_index=0)
    fabric.attach("g127", "compute", group_index=0)
    with pytest.raises(ValueError, match="compute0 is full"):
        fabric.attach("g128", "compute", group_index=0)


def test_placement() -> None:
    """Client placement (components.placement): slots per group, in order, dealt or drawn."""
    caps: list[int | None] = [3, 3, 3]
    packed = Placement(PlacementSpec(policy="packed"), caps, np.random.default_rng(0))
    spread = Placement(PlacementSpec(policy="spread"), caps, np.random.default_rng(0))
    assert [packed.group_of(i) for i in range(7)] == [0, 0, 0, 1, 1, 1, 2]
    assert [spread.group_of(i) for i in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    draws = [
        [
            Placement(PlacementSpec(policy="random"), caps, np.random.default_rng(1)).group_of(i)
            for i in range(9)
        ]
        for _ in range(2)
    ]
    assert draws[0] == draws[1]
    assert sorted(draws[0].count(g) for g in range(3)) == [3, 3, 3]
    # Unequal groups: spread deals round robin until the small group is full.
    uneven = Placement(PlacementSpec(policy="spread"), [1, 3], np.random.default_rng(0))
    assert [uneven.group_of(i) for i in range(4)] == [0, 1, 1, 1]
    first_two = Placement(PlacementSpec(policy="spread", groups=2), caps, np.random.default_rng(0))
    assert first_two.capacity == 6 and {first_two.group_of(i) for i in range(6)} == {0, 1}
    with pytest.raises(ValueError, match="does not fit: the placement has 9 node slots"):
        packed.group_of(9)


# ------------------------------------------------------- background jobs (spec)
def background_job(**fields: Any) -> dict[str, Any]:
    """A background job table: compute0 -> io0 at 50 GB/s unless changed."""
    return {"between": ["compute", "io"], "rate_per_pair": "50 GB/s", "groups": 1, **fields}


def test_background_job_slows_io_on_a_shared_link() -> None:
    spec = perlmutter(routing="minimal", background=[background_job(name="other-io")])
    sim, fabric = build(spec)
    assert fabric.background_load_Bps() == {"pm.fabric.compute0-io0": pytest.approx(50e9)}
    io = sim.flows.start_flow(1e15, fabric.path("c0", "s0"))
    sim.flows.solve_now()
    # The job (1,024 streams) keeps its 50 GB/s; the I/O flow gets the rest of the bundle.
    assert io.rate_Bps == pytest.approx(COMPUTE_IO_Bps - 50e9)
    assert "background: 1 flows, 50 GB/s offered" in fabric.describe_note()
    # As one stream it would get only the max-min fair half of the bundle.
    one = perlmutter(
        routing="minimal", background=[background_job(streams=1, rate_per_pair="1 TB/s")]
    )
    sim, fabric = build(one)
    io = sim.flows.start_flow(1e15, fabric.path("c0", "s0"))
    sim.flows.solve_now()
    assert io.rate_Bps == pytest.approx(COMPUTE_IO_Bps / 2)


def test_background_pairs_span_and_volume() -> None:
    job = {"rate_per_pair": "10 GB/s", "groups": 3, "first_group": 2, "volume_per_pair": "1 GB"}
    links = [*PERLMUTTER_LINKS, {"between": ["compute"] * 2, "links": 16, "bandwidth": "25 GB/s"}]
    sim, fabric = build(perlmutter(routing="minimal", global_links=links, background=[job]))
    load = fabric.background_load_Bps()
    # compute2..4, every ordered pair: 6 flows, each on its direct compute-compute bundle.
    assert sorted(load) == sorted(
        f"pm.fabric.compute{a}-compute{b}" for a in (2, 3, 4) for b in (2, 3, 4) if a != b
    )
    assert all(v == pytest.approx(10e9) for v in load.values())
    sim.run(1.0)  # each pair's 1 GB at 10 GB/s is done after 0.1 s
    assert fabric.background_load_Bps() == {}


@pytest.mark.parametrize("routing", ["minimal", "ugal"])
def test_background_at_rate_zero_changes_nothing(routing: str) -> None:
    def run(**changes: Any) -> list[float]:
        sim, fabric = build(perlmutter(routing=routing, **changes))
        demand = {(f"c{i}", f"s{i}"): 40e9 for i in range(16)}
        fabric.plan(demand)
        flows = [sim.flows.start_flow(1e11, fabric.path(s, d)) for s, d in demand]
        sim.run()
        return [f.end_s for f in flows] + [fabric.split("c0", "s0")]

    reference = run()
    assert run(background=[]) == reference
    assert run(background=[background_job(rate_per_pair="0 GB/s"), {"rate_per_pair": "0 B/s"}]) == (
        reference
    )


def test_ugal_plans_io_around_background_load() -> None:
    # I/O demand the direct compute0 -> io0 bundle could carry alone.
    demand = {("c0", "s0"): 0.6 * COMPUTE_IO_Bps}
    _, quiet = build(perlmutter(routing="ugal"))
    quiet.plan(demand)
    assert quiet.split("c0", "s0") == 0.0
    busy_spec = perlmutter(routing="ugal", background=[background_job(rate_per_pair="80 GB/s")])
    _, busy = build(busy_spec)
    busy.plan(demand)
    x = busy.split("c0", "s0")
    # 60 GB/s on top of 80 GB/s: at least the 40 GB/s excess goes non-minimally.
    assert x >= 0.4 / 0.6 - 1e-6
    direct = busy.background_load_Bps()["pm.fabric.compute0-io0"]
    assert direct + (1 - x) * demand[("c0", "s0")] <= COMPUTE_IO_Bps * (1 + 1e-6)
    # The background job itself was routed minimally: its own load fits its link.
    assert direct == pytest.approx(80e9)


def test_overloaded_background_is_spread_by_ugal() -> None:
    job = background_job(rate_per_pair="200 GB/s")
    _, fabric = build(perlmutter(routing="ugal", background=[job]))
    load = fabric.background_load_Bps()
    assert load["pm.fabric.compute0-io0"] < 200e9
    assert sum(w for n, w in load.items() if n.endswith("-io0")) == pytest.approx(200e9)
    _, minimal = build(perlmutter(routing="minimal", background=[job]))
    assert minimal.background_load_Bps() == {"pm.fabric.compute0-io0": pytest.approx(200e9)}


def test_background_on_switch_and_fat_tree() -> None:
    switch = SPEC.validate_python(
        {
            "topology": "switch",
            "switches": 1,
            "switch_bandwidth": "100 GB/s",
            "background": [{"between": ["all", "all"], "rate_per_pair": "30 GB/s"}],
        }
    )
    fabric = Fabric(Simulation(), "sw", switch)
    assert fabric.background_load_Bps() == {"sw": pytest.approx(30e9)}
    raw_tree = {
        "topology": "fat-tree",
        "leaves": 3,
        "nodes_per_leaf": 2,
        "uplinks_per_leaf": 2,
        "link_bandwidth": "100 Gb/s",
    }
    tree = SPEC.validate_python(
        {
            **raw_tree,
            "background": [{"between": ["all", "all"], "rate_per_pair": "1 GB/s", "groups": 2}],
        }
    )
    fabric = Fabric(Simulation(), "ft", tree)
    assert fabric.background_load_Bps() == {
        name: pytest.approx(1e9)
        for name in ("ft.leaf0.up", "ft.leaf1.down", "ft.leaf1.up", "ft.leaf0.down")
    }
    with pytest.raises(ValidationError, match="role\\(='compute'\\) has no groups"):
        SPEC.validate_python({**raw_tree, "background": [{"rate_per_pair": "1 GB/s"}]})


def test_whatif_scenario_with_background_off_is_bit_identical() -> None:
    from pathlib import Path

    from flashsim.scenario import load_scenario, run_loaded

    path = Path(__file__).resolve().parent.parent / "scenarios/perlmutter/fabric-whatif.toml"
    small = {"phases.write.nodes": "16", "phases.read.nodes": "16"}

    def run(overrides: dict[str, str]) -> dict[str, Any]:
        out = run_loaded(load_scenario(path, {**small, **overrides})).to_dict()
        out.pop("wall_time_s")
        return out

    zero = run({})  # both jobs at rate 0
    assert run({"system.fabric.background": "[]"}) == zero
    busy = run(
        {
            "system.fabric.routing": '"minimal"',
            "system.fabric.background.other-io.rate_per_pair": '"95 GB/s"',
        }
    )
    assert busy["phases"][0]["bandwidth_Bps"] < zero["phases"][0]["bandwidth_Bps"]
