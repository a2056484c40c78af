"""FlowNetwork: incremental re-solve equals a full solve; bytes are conserved."""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from flashsim.engine.flows import FlowNetwork
from flashsim.engine.instances import full_system_instance, load_into
from flashsim.engine.maxmin import solve_maxmin


def full_solution(net: FlowNetwork) -> np.ndarray:
    snap = net.snapshot()
    pc, coef = snap["path_con"], snap["path_coef"]
    mask = pc > 0
    flow = np.broadcast_to(np.arange(pc.shape[0])[:, None], pc.shape)[mask]
    level = solve_maxmin(
        flow.astype(np.int64),
        pc[mask],
        coef[mask],
        snap["con_capacity"],
        snap["level_caps"],
        snap["priorities"],
    )
    return level * snap["priorities"]


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

    def checker():
        while True:
            yield env.timeout(0.37)
            if net.active_flows:
                incremental = net.snapshot()["rates_Bps"]
                reference = full_solution(net)
                if not np.allclose(incremental, reference, rtol=1e-7, atol=1e-9):
                    mismatches.append(env.now)
            if not net.active_flows and env.now > 6.5:
                return

    for f in flows:
        env.process(starter(*f))
    for ch in changes:
        env.process(changer(*ch))
    if check_every_event:
        env.process(checker())
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
    assert net.stats["repairs"] >= 60


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
