"""The max-min solver: textbook answers and Hypothesis properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flashsim.engine.instances import full_system_instance
from flashsim.engine.maxmin import solve_maxmin


def solve(paths: list[list[tuple[int, float]]], caps: list[float], rate_caps=None, prio=None):
    entry_flow, entry_con, entry_coef = [], [], []
    for f, path in enumerate(paths):
        for c, w in path:
            entry_flow.append(f)
            entry_con.append(c)
            entry_coef.append(w)
    n = len(paths)
    level_cap = np.full(n, np.inf) if rate_caps is None else np.asarray(rate_caps, float)
    priority = np.ones(n) if prio is None else np.asarray(prio, float)
    level = solve_maxmin(
        np.asarray(entry_flow, np.int64),
        np.asarray(entry_con, np.int64),
        np.asarray(entry_coef, float),
        np.asarray(caps, float),
        level_cap / priority,
        priority,
    )
    return level * priority


def test_equal_share_of_one_link() -> None:
    assert solve([[(0, 1.0)]] * 4, [10.0]) == pytest.approx([2.5] * 4)


def test_bottleneck_leftover_goes_to_unconstrained_flow() -> None:
    # Bertsekas & Gallager style: f0,f1 share link0 (1); f1,f2 share link1 (10).
    rates = solve([[(0, 1.0)], [(0, 1.0), (1, 1.0)], [(1, 1.0)]], [1.0, 10.0])
    assert rates == pytest.approx([0.5, 0.5, 9.5])


def test_linear_network_textbook() -> None:
    # The classic "parking lot": a long flow across 3 links, one short flow per link.
    paths = [[(0, 1.0), (1, 1.0), (2, 1.0)], [(0, 1.0)], [(1, 1.0)], [(2, 1.0)]]
    assert solve(paths, [1.0, 1.0, 1.0]) == pytest.approx([0.5] * 4)
    # Make link 2 roomier: its short flow gets the rest.
    assert solve(paths, [1.0, 1.0, 3.0]) == pytest.approx([0.5, 0.5, 0.5, 2.5])


def test_raid_weight_consumes_more_of_the_drives() -> None:
    # RAID6 8+2: 10/8 bytes on the drives per user byte.
    assert solve([[(0, 1.25)]], [10.0]) == pytest.approx([8.0])


def test_rate_cap_frees_capacity_for_others() -> None:
    assert solve([[(0, 1.0)]] * 3, [10.0], rate_caps=[1.0, np.inf, np.inf]) == pytest.approx(
        [1.0, 4.5, 4.5]
    )


def test_priorities_share_proportionally() -> None:
    assert solve([[(0, 1.0)], [(0, 1.0)]], [8.0], prio=[1.0, 3.0]) == pytest.approx([2.0, 6.0])


def test_cap_only_flow() -> None:
    assert solve([[]], [], rate_caps=[7.0]) == pytest.approx([7.0])


@st.composite
def instances(draw: st.DrawFn):
    n_cons = draw(st.integers(1, 12))
    n_flows = draw(st.integers(1, 25))
    caps = draw(st.lists(st.floats(0.0, 100.0), min_size=n_cons, max_size=n_cons))
    paths = []
    for _ in range(n_flows):
        cons = draw(st.lists(st.integers(0, n_cons - 1), min_size=1, max_size=5, unique=True))
        paths.append([(c, draw(st.floats(0.1, 5.0))) for c in cons])
    rate_caps = [draw(st.one_of(st.just(np.inf), st.floats(0.01, 50.0))) for _ in range(n_flows)]
    prio = [draw(st.floats(0.25, 4.0)) for _ in range(n_flows)]
    return paths, caps, rate_caps, prio


def check_maxmin(paths, caps, rate_caps, prio, rates) -> None:
    """Feasible, and every flow at its cap or bottlenecked where it has the top level."""
    caps = np.asarray(caps)
    load = np.zeros(caps.size)
    for path, r in zip(paths, rates, strict=True):
        for c, w in path:
            load[c] += w * r
    assert np.all(load <= caps * (1 + 1e-9) + 1e-12), "a resource exceeds its capacity"
    levels = np.asarray(rates) / np.asarray(prio)
    for f, path in enumerate(paths):
        if rates[f] >= rate_caps[f] * (1 - 1e-9):
            continue
        ok = False
        for c, _w in path:
            saturated = load[c] >= caps[c] * (1 - 1e-9) - 1e-12
            others = [levels[g] for g, p in enumerate(paths) if any(cc == c for cc, _ in p)]
            if saturated and levels[f] >= max(others) * (1 - 1e-9) - 1e-12:
                ok = True
                break
        assert ok, f"flow {f} is neither capped nor bottlenecked"


@settings(max_examples=300, deadline=None)
@given(instances())
def test_solver_is_feasible_and_max_min_optimal(inst) -> None:
    paths, caps, rate_caps, prio = inst
    rates = solve(paths, caps, rate_caps, prio)
    assert np.all(np.isfinite(rates))
    assert np.all(rates >= 0)
    check_maxmin(paths, caps, rate_caps, prio, rates)


@settings(max_examples=50, deadline=None)
@given(instances())
def test_solver_is_deterministic(inst) -> None:
    paths, caps, rate_caps, prio = inst
    a = solve(paths, caps, rate_caps, prio)
    b = solve(paths, caps, rate_caps, prio)
    assert np.array_equal(a, b)


def test_optimality_check_rejects_a_wrong_allocation() -> None:
    # The property checker itself must be able to fail.
    paths = [[(0, 1.0)], [(0, 1.0), (1, 1.0)], [(1, 1.0)]]
    with pytest.raises(AssertionError):
        check_maxmin(paths, [1.0, 10.0], [np.inf] * 3, [1.0] * 3, [0.5, 0.5, 5.0])
    with pytest.raises(AssertionError):
        check_maxmin(paths, [1.0, 10.0], [np.inf] * 3, [1.0] * 3, [0.6, 0.5, 9.5])


def test_full_system_instance_is_feasible() -> None:
    inst = full_system_instance(n_flows=5_000, n_clients=300, n_global_links=200, n_oss=30)
    level = solve_maxmin(
        inst.entry_flow,
        inst.entry_con,
        inst.entry_coef,
        inst.capacity,
        inst.level_cap,
        inst.priority,
    )
    load = np.bincount(
        inst.entry_con,
        weights=inst.entry_coef * level[inst.entry_flow],
        minlength=inst.capacity.size,
    )
    assert np.all(load <= inst.capacity * (1 + 1e-9))
    capped = level >= inst.level_cap * (1 - 1e-9)
    saturated = load >= inst.capacity * (1 - 1e-9)
    crosses_saturated = np.zeros(level.size, bool)
    np.logical_or.at(crosses_saturated, inst.entry_flow, saturated[inst.entry_con])
    assert np.all(capped | crosses_saturated)


@st.composite
def factored_instances(draw: st.DrawFn):
    n_cons = draw(st.integers(1, 12))
    n_flows = draw(st.integers(1, 25))
    n_segs = draw(st.integers(1, 4))
    segs = [
        [
            (c, draw(st.floats(0.05, 2.0)))
            for c in draw(st.lists(st.integers(0, n_cons - 1), min_size=1, max_size=6, unique=True))
        ]
        for _ in range(n_segs)
    ]
    own, uses = [], []
    for f in range(n_flows):
        for c in draw(st.lists(st.integers(0, n_cons - 1), max_size=3, unique=True)):
            own.append((f, c, draw(st.floats(0.1, 3.0))))
        for g in draw(st.lists(st.integers(0, n_segs - 1), max_size=2, unique=True)):
            uses.append((f, g, draw(st.floats(0.2, 2.0))))
    capacity = np.array(draw(st.lists(st.floats(0.5, 100.0), min_size=n_cons, max_size=n_cons)))
    caps = [draw(st.one_of(st.just(np.inf), st.floats(0.1, 50.0))) for _ in range(n_flows)]
    prio = [draw(st.sampled_from([0.5, 1.0, 2.0])) for _ in range(n_flows)]
    return n_cons, segs, own, uses, capacity, np.array(caps), np.array(prio)


@settings(max_examples=300, deadline=None)
@given(factored_instances())
def test_factored_solve_equals_expanded_solve(inst) -> None:
    from flashsim.engine.maxmin import solve_maxmin_factored

    _n_cons, segs, own, uses, capacity, caps, prio = inst
    n_flows = caps.size
    # Expanded: each use copies the segment's entries into the flow, summed per constraint.
    expanded: dict[tuple[int, int], float] = {}
    for f, c, a in own:
        expanded[f, c] = expanded.get((f, c), 0.0) + a
    for f, g, u in uses:
        for c, s in segs[g]:
            expanded[f, c] = expanded.get((f, c), 0.0) + u * s
    keys = sorted(expanded)
    ref = solve_maxmin(
        np.array([k[0] for k in keys], dtype=np.int64),
        np.array([k[1] for k in keys], dtype=np.int64),
        np.array([expanded[k] for k in keys]),
        capacity,
        caps / prio,
        prio,
    )
    seg_con = np.array([c for seg in segs for c, _ in seg], dtype=np.int64)
    seg_coef = np.array([s for seg in segs for _, s in seg])
    seg_start = np.concatenate([[0], np.cumsum([len(seg) for seg in segs])]).astype(np.int64)
    got = solve_maxmin_factored(
        np.array([f for f, _, _ in own], dtype=np.int64),
        np.array([c for _, c, _ in own], dtype=np.int64),
        np.array([a for _, _, a in own]),
        np.array([f for f, _, _ in uses], dtype=np.int64),
        np.array([g for _, g, _ in uses], dtype=np.int64),
        np.array([u for _, _, u in uses]),
        seg_con,
        seg_coef,
        seg_start,
        capacity,
        caps / prio,
        prio,
    )
    assert got.shape == (n_flows,)
    np.testing.assert_allclose(got, ref, rtol=1e-9)
