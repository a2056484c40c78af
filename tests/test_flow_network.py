"""FlowNetwork: incremental re-solve equals a full solve; bytes are conserved."""

from __future__ import annotations

import math

import numpy as np
import pytest
import simpy
from flow_helpers import full_solution
from hypothesis import given, settings
from hypothesis import strategies as st

from flashsim.engine.flows import FlowNetwork
from flashsim.engine.instances import full_system_instance, load_into
from flashsim.engine.maxmin import solve_maxmin


class StateChanges:
    """An event triggered whenever the network's state may have changed since :meth:`clear`.

    Every start, completion and capacity change is followed by a re-solve at the same
    simulated instant, so a rate listener sees them all.
    """

    def __init__(self, env: simpy.Environment, net: FlowNetwork) -> None:
        self.env = env
        self.event = env.event()
        net.add_rate_listener(self.note)

    def note(self) -> None:
        if not self.event.triggered:
            self.event.succeed()

    def clear(self) -> None:
        if self.event.triggered:
            self.event = self.env.event()


def check_rates_on_grid(
    env: simpy.Environment, net: FlowNetwork, mismatches: list[float], interval_s: float
) -> list[float]:
    """Compare the incremental rates with a full solve at the multiples of ``interval_s``
    (simulated seconds), recording in ``mismatches`` the times they differ.

    A grid point at which nothing changed since the last comparison is skipped: rates are
    constant between re-solves, so it would repeat that comparison.  The checker waits for
    the next change instead of polling, so its work is bounded by the script's events, not
    by how long the script runs in simulated time (up to hours when small capacities meet
    many flows).  Returns the list of the times it compared, filled as the simulation runs.
    """
    changes = StateChanges(env, net)
    compared: list[float] = []

    def checker():
        while True:
            yield changes.event
            next_point = (math.floor(env.now / interval_s) + 1) * interval_s
            yield env.timeout(max(next_point - env.now, 0.0))
            if net.active_flows:
                compared.append(env.now)
                incremental = net.snapshot()["rates_Bps"]
                if not np.allclose(incremental, full_solution(net), rtol=1e-7, atol=1e-9):
                    mismatches.append(env.now)
            changes.clear()

    env.process(checker())
    return compared


def test_two_flows_finish_at_the_right_times() -> None:
    env = simpy.Environment()
    net = FlowNetwork(env)
    link = net.add_resource("link", capacity_Bps=10.0)
    a = net.start_flow(10.0, [(link, 1.0)], name="a")
    b = net.start_flow(30.0, [(link, 1.0)], name="b")
    env.run()
    # Shared 5 B/s each until a finishes at t=2; then b alone at 10 B/s for 20 B.
    assert a.end_s == pytest.approx(2.0)
    assert b.end_s == pytest.approx(4.0)


def test_ops_capacity_limits_small_requests() -> None:
    env = simpy.Environment()
    net = FlowNetwork(env)
    ssd = net.add_resource("ssd", capacity_Bps=3.2e9, capacity_ops=1e5)
    small = net.start_flow(4096.0 * 1e5, [(ssd, 1.0)], op_size_B=4096.0)
    net.solve_now()
    assert small.rate_Bps == pytest.approx(4096.0 * 1e5)
    with pytest.raises(ValueError, match="op_size_B"):
        net.start_flow(1.0, [(ssd, 1.0)])


def test_capacity_change_resolves_rates() -> None:
    env = simpy.Environment()
    net = FlowNetwork(env)
    link = net.add_resource("link", capacity_Bps=10.0)
    flow = net.start_flow(100.0, [(link, 1.0)])
    net.solve_now()
    assert flow.rate_Bps == pytest.approx(10.0)
    net.set_capacity(link, capacity_Bps=4.0)
    net.solve_now()
    assert flow.rate_Bps == pytest.approx(4.0)


def test_bad_arguments_name_the_value() -> None:
    env = simpy.Environment()
    net = FlowNetwork(env)
    link = net.add_resource("link", capacity_Bps=1.0)
    with pytest.raises(ValueError, match=r"size_B\(=-1"):
        net.start_flow(-1, [(link, 1.0)])
    with pytest.raises(ValueError, match=r"weight\(=0"):
        net.start_flow(1, [(link, 0.0)])
    with pytest.raises(ValueError, match="capacity_Bps"):
        net.add_resource("bad", capacity_Bps=-5.0)
    with pytest.raises(ValueError, match="already used"):
        net.add_resource("link", capacity_Bps=1.0)


def test_rate_checker_compares_after_each_change_not_every_grid_point() -> None:
    """A flow running for 10^6 simulated seconds costs the checker two comparisons, one
    after its start and one after the capacity change, not 3.4 million grid points."""
    env = simpy.Environment()
    net = FlowNetwork(env)
    link = net.add_resource("link", capacity_Bps=1.0)
    flow = net.start_flow(1e6, [(link, 1.0)])
    mismatches: list[float] = []
    compared = check_rates_on_grid(env, net, mismatches, interval_s=0.29)

    def change():
        yield env.timeout(10.0)
        net.set_capacity(link, capacity_Bps=2.0)

    env.process(change())
    env.run()
    assert flow.end_s == pytest.approx(10.0 + (1e6 - 10.0) / 2.0)
    assert compared == pytest.approx([0.29, 35 * 0.29])
    assert not mismatches


@st.composite
def scripts(draw: st.DrawFn):
    n_res = draw(st.integers(1, 8))
    caps = draw(st.lists(st.floats(1.0, 100.0), min_size=n_res, max_size=n_res))
    n_flows = draw(st.integers(1, 20))
    flows = []
    for _ in range(n_flows):
        path = draw(st.lists(st.integers(0, n_res - 1), min_size=1, max_size=4, unique=True))
        weights = [draw(st.floats(0.5, 3.0)) for _ in path]
        start = draw(st.floats(0.0, 5.0))
        size = draw(st.floats(1.0, 200.0))
        cap = draw(st.one_of(st.none(), st.floats(0.5, 50.0)))
        flows.append((start, size, list(zip(path, weights, strict=True)), cap))
    changes = draw(
        st.lists(
            st.tuples(st.floats(0.0, 6.0), st.integers(0, n_res - 1), st.floats(1.0, 100.0)),
            max_size=4,
        )
    )
    return caps, flows, changes


def run_script(caps, flows, changes, check_every_event: bool):
    env = simpy.Environment()
    net = FlowNetwork(env)
    res = [net.add_resource(f"r{i}", capacity_Bps=c) for i, c in enumerate(caps)]
    done = []
    mismatches = []

    def starter(start, size, path, cap):
        yield env.timeout(start)
        flow = net.start_flow(size, [(res[c], w) for c, w in path], rate_cap_Bps=cap)
        yield flow.done
        done.append((flow.end_s, size, path))

    def changer(t, r, c):
        yield env.timeout(t)
        net.set_capacity(res[r], capacity_Bps=c)

    for f in flows:
        env.process(starter(*f))
    for ch in changes:
        env.process(changer(*ch))
    if check_every_event:
        check_rates_on_grid(env, net, mismatches, interval_s=0.37)
    env.run()
    return net, res, done, mismatches


@settings(max_examples=120, deadline=None)
@given(scripts())
def test_incremental_rates_equal_full_solve_throughout(script) -> None:
    caps, flows, changes = script
    _net, _res, done, mismatches = run_script(caps, flows, changes, check_every_event=True)
    assert not mismatches
    assert len(done) == len(flows)


@settings(max_examples=120, deadline=None)
@given(scripts())
def test_bytes_are_conserved_at_completion(script) -> None:
    caps, flows, changes = script
    net, res, done, _ = run_script(caps, flows, changes, check_every_event=False)
    expected = np.zeros(len(res))
    for _end, size, path in done:
        for c, w in path:
            expected[c] += w * size
    moved = np.array([net.bytes_moved(r) for r in res])
    np.testing.assert_allclose(moved, expected, rtol=1e-7)


@settings(max_examples=40, deadline=None)
@given(scripts())
def test_same_script_gives_identical_results(script) -> None:
    caps, flows, changes = script
    _, _, a, _ = run_script(caps, flows, changes, check_every_event=False)
    _, _, b, _ = run_script(caps, flows, changes, check_every_event=False)
    assert a == b


def test_incremental_matches_full_on_a_large_instance() -> None:
    inst = full_system_instance(n_flows=6_000, n_clients=400, n_global_links=300, n_oss=40)
    net = FlowNetwork(simpy.Environment())
    res, flows = load_into(net, inst)
    net.solve_now()
    rng = np.random.default_rng(3)
    for _ in range(30):
        i = int(rng.integers(len(flows)))
        net.cancel_flow(flows[i])
        net.solve_now()
        np.testing.assert_allclose(net.snapshot()["rates_Bps"], full_solution(net), rtol=1e-7)
        flows[i] = net.start_flow(1e15, [(res[c], w) for c, w in inst.paths[i]])
        net.solve_now()
        np.testing.assert_allclose(net.snapshot()["rates_Bps"], full_solution(net), rtol=1e-7)
    # Every one of the 60 events was handled incrementally (class level or flow-level repair).
    assert net.stats["full_solves"] == 1
    assert net.stats["repairs"] + net.stats["class_events"] >= 60


def test_utilization_and_throughput_of_a_shared_resource() -> None:
    env = simpy.Environment()
    net = FlowNetwork(env)
    ssd = net.add_resource("ssd", capacity_Bps=10.0, capacity_ops=4.0)
    nic = net.add_resource("nic", capacity_Bps=100.0)
    net.start_flow(1e6, [(nic, 1.0), (ssd, 1.0)], op_size_B=2.0)  # 4 ops/s x 2 B = 8 B/s
    assert net.throughput_Bps(ssd) == pytest.approx(8.0)
    assert net.utilization(ssd) == pytest.approx(1.0)  # the ops constraint is the tight one
    assert net.utilization(nic) == pytest.approx(0.08)
    unlimited = net.add_resource("free")
    assert net.utilization(unlimited) == 0.0


# --------------------------------------------------------------------------------------
# Many flows sharing one or two bottlenecks: the class fast path against references.


@st.composite
def shared_scripts(draw: st.DrawFn):
    """Many flows over one or two shared links plus private edge links, some capped."""
    n_shared = draw(st.integers(1, 2))
    n_edge = draw(st.integers(2, 12))
    shared_caps = draw(st.lists(st.floats(20.0, 200.0), min_size=n_shared, max_size=n_shared))
    edge_caps = draw(st.lists(st.floats(2.0, 60.0), min_size=n_edge, max_size=n_edge))
    n_flows = draw(st.integers(20, 120))
    flows = []
    for _ in range(n_flows):
        shared = draw(st.sampled_from([[0], [1], [0, 1]][: 1 if n_shared == 1 else 3]))
        edges = draw(st.lists(st.integers(0, n_edge - 1), min_size=1, max_size=2, unique=True))
        path = [(s, draw(st.sampled_from([1.0, 1.0, 1.25, 2.0]))) for s in shared]
        path += [(n_shared + e, 1.0) for e in edges]
        start = draw(st.sampled_from([0.0, 0.0, 0.0, draw(st.floats(0.0, 8.0))]))
        size = float(draw(st.integers(1, 400)))
        cap = draw(st.one_of(st.none(), st.none(), st.floats(0.2, 10.0)))
        prio = draw(st.sampled_from([1.0, 1.0, 2.0, 0.5]))
        flows.append((start, size, path, cap, prio))
    changes = draw(
        st.lists(
            st.tuples(
                st.floats(0.0, 10.0),
                st.integers(0, n_shared + n_edge - 1),
                st.floats(5.0, 150.0),
            ),
            max_size=3,
        )
    )
    return shared_caps + edge_caps, flows, changes


def reference_completions(caps, flows, changes) -> list[float]:
    """Completion times by a full max-min solve at every event (no incremental state)."""
    caps = np.array(caps, dtype=float)
    n = len(flows)
    remaining = np.array([f[1] for f in flows], dtype=float)
    starts = np.array([f[0] for f in flows])
    end = np.full(n, np.nan)
    pending_changes = sorted(changes)
    now = 0.0
    while np.isnan(end).any():
        active = np.flatnonzero((starts <= now) & np.isnan(end))
        rates = np.zeros(n)
        if active.size:
            ef, ec, ew = [], [], []
            for local, i in enumerate(active):
                for c, w in flows[i][2]:
                    ef.append(local)
                    ec.append(c)
                    ew.append(w)
            prio = np.array([flows[i][4] for i in active])
            cap = np.array([np.inf if flows[i][3] is None else flows[i][3] for i in active])
            level = solve_maxmin(
                np.array(ef, dtype=np.int64),
                np.array(ec, dtype=np.int64),
                np.array(ew),
                caps,
                cap / prio,
                prio,
            )
            rates[active] = level * prio
        with np.errstate(divide="ignore"):
            ttc = np.where(rates > 0, remaining / np.where(rates > 0, rates, 1.0), np.inf)
        t_next = [now + float(ttc[active].min()) if active.size else np.inf]
        future = starts[starts > now]
        t_next.append(float(future.min()) if future.size else np.inf)
        t_next.append(pending_changes[0][0] if pending_changes else np.inf)
        t = min(t_next)
        remaining -= rates * (t - now)
        now = t
        done = active[remaining[active] <= 1e-9 * np.array([flows[i][1] for i in active])]
        end[done] = now
        while pending_changes and pending_changes[0][0] <= now:
            _, r, c = pending_changes.pop(0)
            caps[r] = c
    return end.tolist()


def run_shared(caps, flows, changes, check_rates: bool):
    env = simpy.Environment()
    net = FlowNetwork(env)
    res = [net.add_resource(f"r{i}", capacity_Bps=c) for i, c in enumerate(caps)]
    ends = [np.nan] * len(flows)
    mismatches = []

    def starter(i, start, size, path, cap, prio):
        if start > 0:
            yield env.timeout(start)
        flow = net.start_flow(size, [(res[c], w) for c, w in path], rate_cap_Bps=cap, priority=prio)
        yield flow.done
        ends[i] = flow.end_s

    for i, f in enumerate(flows):
        env.process(starter(i, *f))
    watch_changes_and_rates(env, net, res, changes, mismatches if check_rates else None)
    env.run()
    return net, ends, mismatches


def watch_changes_and_rates(env, net, res, changes, mismatches, interval_s=0.29) -> None:
    """Apply the capacity ``changes``; if ``mismatches`` is a list, compare the rates with a
    full solve on a grid of ``interval_s`` while flows run (:func:`check_rates_on_grid`),
    recording the times they differ."""

    def changer(t, r, c):
        yield env.timeout(t)
        net.set_capacity(res[r], capacity_Bps=c)

    for ch in changes:
        env.process(changer(*ch))
    if mismatches is not None:
        check_rates_on_grid(env, net, mismatches, interval_s)


@settings(max_examples=80, deadline=None)
@given(shared_scripts())
def test_shared_bottlenecks_rates_equal_full_solve_throughout(script) -> None:
    caps, flows, changes = script
    _net, ends, mismatches = run_shared(caps, flows, changes, check_rates=True)
    assert not mismatches
    assert not any(np.isnan(ends))


@settings(max_examples=80, deadline=None)
@given(shared_scripts())
def test_shared_bottlenecks_completion_times_equal_reference(script) -> None:
    caps, flows, changes = script
    net, ends, _ = run_shared(caps, flows, changes, check_rates=False)
    np.testing.assert_allclose(ends, reference_completions(caps, flows, changes), rtol=1e-7)
    # The shared bottleneck is handled at class level, not by re-solving every flow.
    assert net.stats["class_events"] > 0


def test_one_shared_bottleneck_costs_no_flow_level_solve_per_event() -> None:
    """1,000 flows on one backbone: each completion is a class event, not a re-solve."""
    env = simpy.Environment()
    net = FlowNetwork(env)
    backbone = net.add_resource("backbone", capacity_Bps=100.0)
    edges = [net.add_resource(f"edge{i}", capacity_Bps=100.0) for i in range(100)]
    flows = [
        net.start_flow(float(1 + i), [(edges[i % 100], 1.0), (backbone, 1.0)]) for i in range(1000)
    ]
    env.run()
    # All share 100 B/s: a flow of i+1 bytes ends once the total of min(size, s) moved.
    sizes = np.arange(1, 1001, dtype=float)
    expected = np.array([np.minimum(sizes, s).sum() / 100.0 for s in sizes])
    np.testing.assert_allclose([f.end_s for f in flows], expected, rtol=1e-9)
    assert net.stats["class_events"] >= 990
    assert net.stats["full_solves"] + net.stats["repairs"] <= 10


# --------------------------------------------------------------------------------------
# Shared segments (a stripe set stored once) behave exactly like expanded paths.


@st.composite
def segment_scripts(draw: st.DrawFn):
    n_res = draw(st.integers(3, 10))
    caps = draw(st.lists(st.floats(5.0, 100.0), min_size=n_res, max_size=n_res))
    ops_caps = draw(st.lists(st.floats(2.0, 60.0), min_size=n_res, max_size=n_res))
    n_segs = draw(st.integers(1, 3))
    segments = [
        [
            (r, draw(st.sampled_from([0.25, 0.5, 1.0, 1.25])))
            for r in draw(st.lists(st.integers(0, n_res - 1), min_size=1, max_size=6, unique=True))
        ]
        for _ in range(n_segs)
    ]
    flows = []
    for _ in range(draw(st.integers(5, 60))):
        own = draw(st.lists(st.integers(0, n_res - 1), max_size=2, unique=True))
        segs = draw(st.lists(st.integers(0, n_segs - 1), max_size=2, unique=True))
        if not own and not segs:
            own = [draw(st.integers(0, n_res - 1))]
        path = [(r, 1.0) for r in own] + [
            (n_res + g, draw(st.sampled_from([0.5, 1.0]))) for g in segs
        ]
        start = draw(st.sampled_from([0.0, 0.0, draw(st.floats(0.0, 6.0))]))
        size = float(draw(st.integers(1, 300)))
        cap = draw(st.one_of(st.none(), st.none(), st.floats(0.5, 20.0)))
        flows.append((start, size, path, cap))
    changes = draw(
        st.lists(
            st.tuples(st.floats(0.0, 8.0), st.integers(0, n_res - 1), st.floats(5.0, 100.0)),
            max_size=3,
        )
    )
    with_ops = draw(st.booleans())
    return caps, ops_caps if with_ops else None, segments, flows, changes


def run_segments(script, expand: bool):
    caps, ops_caps, segments, flows, changes = script
    n_res = len(caps)
    env = simpy.Environment()
    net = FlowNetwork(env)
    res = [
        net.add_resource(f"r{i}", capacity_Bps=c, capacity_ops=None if ops_caps is None else oc)
        for i, (c, oc) in enumerate(zip(caps, ops_caps or caps, strict=True))
    ]
    segs = [
        net.add_segment(f"s{g}", [(res[r], w) for r, w in seg]) for g, seg in enumerate(segments)
    ]
    ends = [np.nan] * len(flows)

    def path_of(path):
        out = []
        for e, w in path:
            if e < n_res:
                out.append((res[e], w))
            elif expand:
                out.extend((res[r], w * sw) for r, sw in segments[e - n_res])
            else:
                out.append((segs[e - n_res], w))
        return out

    def starter(i, start, size, path, cap):
        if start > 0:
            yield env.timeout(start)
        flow = net.start_flow(size, path_of(path), rate_cap_Bps=cap, op_size_B=2.0)
        yield flow.done
        ends[i] = flow.end_s

    for i, f in enumerate(flows):
        env.process(starter(i, *f))
    mismatches: list[float] = []
    watch_changes_and_rates(env, net, res, changes, mismatches, interval_s=0.31)
    env.run()
    return ends, [net.bytes_moved(r) for r in res], mismatches


@settings(max_examples=80, deadline=None)
@given(segment_scripts())
def test_segments_equal_expanded_paths(script) -> None:
    ends_seg, bytes_seg, mismatches = run_segments(script, expand=False)
    ends_exp, bytes_exp, mismatches_exp = run_segments(script, expand=True)
    assert not mismatches
    assert not mismatches_exp
    np.testing.assert_allclose(ends_seg, ends_exp, rtol=1e-9)
    np.testing.assert_allclose(bytes_seg, bytes_exp, rtol=1e-7, atol=1e-6)


def test_striping_over_a_segment_costs_one_entry_per_rank() -> None:
    """1,000 ranks over a 200-target stripe set: flow rows stay narrow."""
    env = simpy.Environment()
    net = FlowNetwork(env)
    targets = [net.add_resource(f"ost{i}", capacity_Bps=10.0) for i in range(200)]
    stripe = net.add_segment("stripe", [(t, 1 / 200) for t in targets])
    nics = [net.add_resource(f"nic{i}", capacity_Bps=1000.0) for i in range(10)]
    flows = [net.start_flow(1e3, [(nics[i % 10], 1.0), (stripe, 1.0)]) for i in range(1000)]
    env.run()
    # 200 x 10 B/s shared by 1,000 equal ranks of 1 kB: all end at 1e6 B / 2000 B/s.
    np.testing.assert_allclose([f.end_s for f in flows], 500.0, rtol=1e-9)
    assert net._path_con.shape[1] == 1  # one own entry per rank, the stripe set stored once
