"""A replayed call costs what its own path touches, not the size of the model (issue 20)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import simpy
from flow_helpers import full_solution

from flashsim.engine.flowclasses import FlowSpec
from flashsim.engine.flows import FlowNetwork
from flashsim.engine.flowstate import Factored
from flashsim.engine.maxmin import IntArray, solve_maxmin, solve_maxmin_factored
from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_system_model
from flashsim.workloads.replay import JobEngine, PlacedJob
from flashsim.workloads.trace import JobTrace, OpTable, TraceFile, records_frame

ROOT = Path(__file__).resolve().parents[1]
PERLMUTTER = ROOT / "models" / "systems" / "perlmutter.toml"


def random_reads(
    calls: int, stripes: int, size_B: float = 3.6e6, sequential: bool = False
) -> JobTrace:
    """One rank reading ``calls`` random blocks of a file striped over ``stripes`` OSTs.

    ``sequential``: each read starts where the last ended (the client reads ahead).
    """
    rng = np.random.default_rng(3)
    offset = np.floor(rng.uniform(0.0, 1e4, calls)) * size_B
    if sequential:
        offset = offset[0] + np.arange(calls) * size_B
    # sequential reads 3 ms apart: past the replay's merge gap, each is its own flow
    start = np.arange(calls) * (4e-3 if sequential else 2e-3)
    ops = OpTable(
        rank=np.zeros(calls, dtype=np.int64),
        file=np.zeros(calls, dtype=np.int64),
        record=np.zeros(calls, dtype=np.int64),
        write=np.zeros(calls, dtype=bool),
        offset_B=offset,
        size_B=np.full(calls, size_B),
        start_s=start,
        end_s=start + 1e-3,
    )
    rows = [{"module": "POSIX", "file": 0, "rank": 0, "reads": calls,
             "bytes_read": calls * size_B}]  # fmt: skip
    wide = TraceFile("data.npz", "lustre", stripes, 1048576.0, tuple(range(stripes)))
    runtime = float(start[-1] + (1e-3 if sequential else 0.0))
    trace = JobTrace(
        "dlio-like", "test", 1, runtime, (wide,), records_frame(rows), ops,
        **({"timing": "dxt"} if sequential else {}),
    )  # fmt: skip
    trace.check()
    return trace


class CountingNetwork(FlowNetwork):
    """A flow network that counts the constraints its events re-check."""

    def __init__(self, env: simpy.Environment) -> None:
        super().__init__(env)
        self.refreshed = 0
        self.built = 0
        self.level_solves = 0

    def _refresh_constraint(self, k: int) -> bool:
        self.refreshed += 1
        return super()._refresh_constraint(k)

    def _build_factored(self, slots: IntArray) -> Factored:
        self.built += 1
        return super()._build_factored(slots)

    def _flow_level_solve(self, new: list[int], full: bool) -> None:
        self.level_solves += 1
        super()._flow_level_solve(new, full)


class RepairingNetwork(CountingNetwork):
    """A counting network without the class paths for new bottlenecks: they are repaired."""

    def _lone_bottleneck(self, spec: FlowSpec) -> tuple[int, float] | None:
        return None

    def _new_bottlenecks(self, slots: list[int]) -> list[tuple[int, int, float]] | None:
        return None


def test_a_lone_read_forming_a_new_bottleneck_builds_its_entries_once_per_solve() -> None:
    # Sequential 4 MiB reads, as the DLIO logs read: the client's read-ahead cap exceeds
    # what its NIC carries, so every read forms a new bottleneck.  The class layer now
    # gives a lone flow its class from its own path (tests/test_engine_lone_flow.py);
    # without that, each takes the exact repair, which asks for the same flow's entries
    # (a 6,000-constraint stripe set) many times; they are built once per solve (before:
    # ten times).
    loaded = load_system_model(PERLMUTTER)
    sim = Simulation(0)
    sim.flows = RepairingNetwork(sim.env)
    system = loaded.kind.build(loaded.model, sim, "flow")
    calls = 12
    trace = random_reads(calls, 160, size_B=4194304.0, sequential=True)
    (times,) = JobEngine(system, "flow").run([PlacedJob("j", trace)])
    assert np.isfinite(times.end_s).all()
    net = sim.flows
    assert net.stats["full_solves"] == 0
    assert net.stats["repairs"] >= calls - 1  # the path this test is about
    assert net.level_solves >= calls - 1
    assert net.built <= 2 * net.level_solves


def test_segments_containing_a_constraint_see_a_segment_added_later() -> None:
    # The engine remembers which segments contain a set of constraints; a segment added
    # afterwards must still be found.
    env = simpy.Environment()
    net = FlowNetwork(env)
    res = [net.add_resource(f"r{i}", capacity_Bps=10.0) for i in range(3)]
    net.add_segment("first", [(res[0], 1.0), (res[1], 1.0)])
    cons = np.array(sorted(r._con_bytes for r in res), dtype=np.int64)
    assert len(net._segments_containing(cons)) == 1
    assert net._segments_containing(cons) == net._segments_containing(cons.copy())
    net.add_segment("second", [(res[2], 1.0)])
    assert len(net._segments_containing(cons)) == 2


def test_a_lone_flows_level_is_the_full_progressive_filling_result() -> None:
    # solve_maxmin_factored ends a lone flow's solve after its first round; the level must
    # be the flat solve's, bit for bit, with own entries, a segment and a repeated entry.
    rng = np.random.default_rng(5)
    for _ in range(50):
        cap = rng.uniform(1.0, 100.0, 6)
        own_con = np.array([0, 1, 1])
        own_coef = rng.uniform(0.5, 2.0, 3)
        seg_con = np.array([2, 3, 4, 1])
        seg_coef = rng.uniform(0.1, 1.0, 4)
        u = float(rng.uniform(0.2, 1.0))
        level_cap = np.array([float(rng.choice([np.inf, rng.uniform(1.0, 50.0)]))])
        priority = np.array([float(rng.uniform(0.5, 3.0))])
        got = solve_maxmin_factored(
            np.zeros(3, dtype=np.int64), own_con, own_coef,
            np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.array([u]),
            seg_con, seg_coef, np.array([0, 4]), cap, level_cap, priority,
        )  # fmt: skip
        flat = solve_maxmin(
            np.zeros(7, dtype=np.int64),
            np.concatenate([own_con, seg_con]),
            np.concatenate([own_coef, u * seg_coef]),
            cap,
            level_cap,
            priority,
        )
        assert got[0] == pytest.approx(flat[0], rel=1e-12)


def test_a_call_on_a_wide_stripe_set_rechecks_its_own_path_not_the_stripe_set() -> None:
    # A 1-rank DLIO-like replay: every read alone in the system, on a file striped over
    # 160 OSTs, so each flow's path holds a segment of thousands of constraints.
    loaded = load_system_model(PERLMUTTER)
    sim = Simulation(0)
    sim.flows = CountingNetwork(sim.env)
    system = loaded.kind.build(loaded.model, sim, "flow")
    calls = 30
    (times,) = JobEngine(system, "flow").run([PlacedJob("j", random_reads(calls, 160))])
    assert np.isfinite(times.end_s).all()
    net = sim.flows
    stripe = max(net.segments.values(), key=lambda g: g.size)
    assert stripe.size > 5000  # the stripe set spans the 160 OSTs' resources
    # No event of a lone flow re-solves the whole model ...
    assert net.stats["full_solves"] == 0
    # ... and each start or finish re-checks about its own entries (tens), not the
    # stripe set's thousands of constraints (before: ~6,240 per start).
    assert net.refreshed <= 2 * calls * 64


def test_a_segment_bound_catches_a_saturated_constraint_inside_the_segment() -> None:
    # Segment constraints nothing else loads are checked by the segment's bound: a
    # capacity cut inside the segment, or a second flow sharing one of them, must still
    # give the exact max-min rates.
    env = simpy.Environment()
    net = FlowNetwork(env)
    res = [net.add_resource(f"r{i}", capacity_Bps=c) for i, c in enumerate([30.0, 50.0, 70.0])]
    own = net.add_resource("own", capacity_Bps=1000.0)
    seg = net.add_segment("seg", [(r, 1.0) for r in res])
    a = net.start_flow(1e9, [(seg, 1.0), (own, 1.0)], rate_cap_Bps=20.0)
    assert net.rates_Bps([a]) == pytest.approx([20.0])
    net.set_capacity(res[2], capacity_Bps=5.0)  # a solo constraint of the segment
    assert net.rates_Bps([a]) == pytest.approx([5.0])
    b = net.start_flow(1e9, [(res[1], 1.0)], rate_cap_Bps=48.0)  # shares r1 with the segment
    net.set_capacity(res[2], capacity_Bps=100.0)
    got = net.rates_Bps([a, b])
    # the flat solve of the same two flows
    level = solve_maxmin(
        np.array([0, 0, 0, 0, 1]),
        np.array([0, 1, 2, 3, 1]),
        np.ones(5),
        np.array([30.0, 50.0, 100.0, 1000.0]),
        np.array([20.0, 48.0]),
        np.ones(2),
    )
    assert got == pytest.approx(level, rel=1e-9)
    assert got == pytest.approx([20.0, 30.0])


def test_a_rank_builds_the_access_of_each_kind_of_call_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The replay's per-call path: a rank's calls of one kind (file, direction, size)
    # share one access and stream, looked up once, not rebuilt per call.
    built: list[int] = []
    original = JobEngine._access

    def counting(self: JobEngine, times: Any, node: int, k: int) -> Any:
        built.append(k)
        return original(self, times, node, k)

    monkeypatch.setattr(JobEngine, "_access", counting)
    loaded = load_system_model(PERLMUTTER)
    sim = Simulation(0)
    system = loaded.kind.build(loaded.model, sim, "flow")
    calls = 20
    (times,) = JobEngine(system, "flow").run([PlacedJob("j", random_reads(calls, 16))])
    assert np.isfinite(times.end_s).all()
    assert len(times.transfers) == calls
    assert len(built) <= 2  # the job's first access (set-up) and the rank's one kind


# A Hypothesis example of tests/test_flow_network.py (shared bottlenecks, two capacity
# changes at t = 0): 13 resources, 59 flows (start s, bytes, [(resource, weight)],
# rate cap B/s or None, priority).
_REPAIR_CAPS_BPS = [
    194.03331523976306,
    32.0,
    2.00001,
    23.593840907451945,
    21.59016821445221,
    2.721692042758594,
    17.348645004695634,
    30.159290400514667,
    3.190005442299584,
    29.21741025793049,
    55.24860706583807,
    19.02128983005582,
    58.087174785445576,
]
_REPAIR_FLOWS: list[tuple[float, float, list[tuple[int, float]], float | None, float]] = [
    (0.0, 224.0, [(0, 1.0), (10, 1.0)], 7.066710878117413, 1.0),
    (0.0, 146.0, [(0, 2.0), (11, 1.0), (1, 1.0)], None, 1.0),
    (0.0, 269.0, [(0, 1.0), (2, 1.0), (9, 1.0)], None, 1.0),
    (0.0, 1.0, [(0, 1.0), (1, 1.0), (2, 1.0)], None, 1.0),
    (0.0, 4.0, [(0, 1.0), (1, 1.0), (2, 1.0)], None, 1.0),
    (0.0, 23.0, [(0, 1.0), (2, 1.0)], None, 0.5),
    (0.0, 97.0, [(0, 1.0), (4, 1.0), (9, 1.0)], None, 1.0),
    (4.727637657049379, 257.0, [(0, 1.0), (11, 1.0), (1, 1.0)], None, 1.0),
    (0.0, 371.0, [(0, 1.0), (7, 1.0), (8, 1.0)], None, 1.0),
    (0.0, 141.0, [(0, 1.0), (9, 1.0), (4, 1.0)], None, 1.0),
    (0.0, 35.0, [(0, 1.0), (1, 1.0)], None, 1.0),
    (0.0, 1.0, [(0, 1.0), (1, 1.0)], 3.071150660424484, 1.0),
    (0.0, 356.0, [(0, 1.0), (5, 1.0)], None, 1.0),
    (0.0, 365.0, [(0, 2.0), (3, 1.0), (2, 1.0)], None, 1.0),
    (0.0, 284.0, [(0, 1.0), (9, 1.0), (3, 1.0)], None, 1.0),
    (0.0, 107.0, [(0, 1.0), (12, 1.0)], 1.5881660793550887, 1.0),
    (3.103301409722138, 322.0, [(0, 2.0), (4, 1.0)], None, 1.0),
    (0.0, 94.0, [(0, 1.0), (7, 1.0), (3, 1.0)], None, 1.0),
    (0.0, 158.0, [(0, 1.25), (5, 1.0), (4, 1.0)], None, 1.0),
    (0.0, 213.0, [(0, 1.0), (5, 1.0)], None, 2.0),
    (0.0, 43.0, [(0, 1.0), (8, 1.0), (1, 1.0)], None, 1.0),
    (0.0, 114.0, [(0, 1.0), (11, 1.0), (7, 1.0)], None, 1.0),
    (0.0, 335.0, [(0, 1.0), (5, 1.0), (1, 1.0)], None, 1.0),
    (0.0, 209.0, [(0, 2.0), (3, 1.0), (7, 1.0)], None, 1.0),
    (0.0, 284.0, [(0, 2.0), (11, 1.0), (4, 1.0)], None, 0.5),
    (0.0, 163.0, [(0, 1.0), (8, 1.0)], None, 1.0),
    (0.0, 65.0, [(0, 1.0), (3, 1.0)], None, 1.0),
    (0.0, 232.0, [(0, 2.0), (10, 1.0)], None, 0.5),
    (0.0, 100.0, [(0, 1.0), (6, 1.0)], None, 1.0),
    (0.0, 37.0, [(0, 1.0), (1, 1.0)], None, 1.0),
    (0.0, 126.0, [(0, 1.0), (9, 1.0), (4, 1.0)], None, 1.0),
    (0.0, 130.0, [(0, 1.0), (2, 1.0), (11, 1.0)], None, 2.0),
    (0.0, 1.0, [(0, 1.0), (1, 1.0), (2, 1.0)], None, 1.0),
    (0.0, 7.0, [(0, 1.0), (1, 1.0)], None, 1.0),
    (7.0, 382.0, [(0, 2.0), (9, 1.0), (11, 1.0)], None, 1.0),
    (3.952742653974094, 226.0, [(0, 1.25), (1, 1.0)], None, 1.0),
    (0.0, 62.0, [(0, 1.0), (10, 1.0), (11, 1.0)], None, 1.0),
    (0.0, 171.0, [(0, 2.0), (7, 1.0), (9, 1.0)], None, 1.0),
    (0.0, 49.0, [(0, 1.0), (12, 1.0)], None, 1.0),
    (0.0, 73.0, [(0, 1.0), (8, 1.0), (10, 1.0)], None, 1.0),
    (0.0, 296.0, [(0, 1.25), (8, 1.0), (12, 1.0)], None, 1.0),
    (0.0, 147.0, [(0, 1.25), (3, 1.0)], 4.822351323495952, 1.0),
    (0.0, 233.0, [(0, 1.0), (10, 1.0)], None, 1.0),
    (0.0, 89.0, [(0, 1.0), (8, 1.0)], None, 1.0),
    (0.0, 180.0, [(0, 1.0), (8, 1.0), (1, 1.0)], None, 1.0),
    (1.8464455620206537, 399.0, [(0, 1.0), (9, 1.0)], None, 2.0),
    (0.0, 23.0, [(0, 2.0), (9, 1.0)], None, 1.0),
    (0.0, 256.0, [(0, 1.25), (2, 1.0)], None, 1.0),
    (0.0, 51.0, [(0, 1.0), (3, 1.0), (8, 1.0)], None, 1.0),
    (0.0, 144.0, [(0, 1.0), (10, 1.0), (9, 1.0)], None, 0.5),
    (0.0, 200.0, [(0, 1.0), (1, 1.0)], None, 1.0),
    (0.0, 213.0, [(0, 1.0), (1, 1.0)], 9.754541577906522, 1.0),
    (0.0, 228.0, [(0, 1.0), (2, 1.0)], 3.6145080508046554, 1.0),
    (0.0, 202.0, [(0, 1.0), (11, 1.0), (4, 1.0)], None, 0.5),
    (0.0, 128.0, [(0, 1.0), (5, 1.0), (4, 1.0)], None, 1.0),
    (0.0, 1.0, [(0, 1.0), (1, 1.0)], None, 1.0),
    (0.0, 143.0, [(0, 2.0), (2, 1.0)], None, 1.0),
    (0.0, 275.0, [(0, 1.25), (7, 1.0), (9, 1.0)], None, 2.0),
    (0.0, 209.0, [(0, 1.0), (8, 1.0)], None, 2.0),
]
# (time s, resource, new capacity B/s)
_REPAIR_CHANGES = [(0.0, 4, 27.198996445118347), (0.0, 2, 20.0)]


def test_a_repair_re_derives_thresholds_where_one_flow_rose_though_the_total_load_fell() -> None:
    """Rates equal a full solve after every re-solve, here at t = 26.59 s too.

    A repair at t = 26.33 s raises one bottleneck class's level (and so its load on
    resource 4, a constraint it crosses but is not bottlenecked on) while another class
    crossing resource 4 falls: the total load there falls.  The escrow thresholds of
    resource 4 were re-derived only where the total load rose, so the fallen class kept a
    threshold drawn on the old slack, and the next completion (a class event) let the two
    classes overcommit resource 4.
    """
    env = simpy.Environment()
    net = FlowNetwork(env)
    res = [net.add_resource(f"r{i}", capacity_Bps=c) for i, c in enumerate(_REPAIR_CAPS_BPS)]
    mismatches: list[float] = []

    def compare() -> None:
        if net.active_flows and not np.allclose(
            net.snapshot()["rates_Bps"], full_solution(net), rtol=1e-7, atol=1e-9
        ):
            mismatches.append(env.now)

    def starter(
        start_s: float,
        size_B: float,
        path: list[tuple[int, float]],
        cap_Bps: float | None,
        priority: float,
    ) -> Any:
        if start_s > 0:
            yield env.timeout(start_s)
        flow = net.start_flow(
            size_B, [(res[r], w) for r, w in path], rate_cap_Bps=cap_Bps, priority=priority
        )
        yield flow.done

    def changer(t_s: float, r: int, capacity_Bps: float) -> Any:
        yield env.timeout(t_s)
        net.set_capacity(res[r], capacity_Bps=capacity_Bps)

    for spec in _REPAIR_FLOWS:
        env.process(starter(*spec))
    for change in _REPAIR_CHANGES:
        env.process(changer(*change))
    net.add_rate_listener(compare)
    env.run()
    assert net.stats["repairs"] > 0  # the incremental path this test is about ran
    assert not mismatches
    assert not net.active_flows
