"""A flow cancelled before its first solve frees a slot the next start reuses (issue 17).

The flow network queues started flows until the next solve.  A flow started
and cancelled at the same simulated time (a restartable load stopping streams
it has just started) frees its slot before any solve; the next start reuses
that slot.  The queue then listed the slot twice, the class fast path joined
the flow twice (its weight counted twice: rates too low, and too low again
after it left), and when the fast path rolled back it took the flow out twice:
``KeyError: -1`` in ``FlowClass`` bookkeeping, the internal error of a
``rebuild`` phase with compute-to-compute fabric background traffic.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import simpy
from flow_helpers import full_solution
from hypothesis import given, settings
from hypothesis import strategies as st

from flashsim.engine.flows import FlowNetwork, Resource
from flashsim.scenario import load_scenario, run_loaded
from flashsim.systems.lustre.rebuild import RebuildDetails

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models/systems/perlmutter.toml"


def _assert_exact(net: FlowNetwork) -> None:
    net.solve_now()
    np.testing.assert_allclose(net.snapshot()["rates_Bps"], full_solution(net), rtol=1e-9)


def test_a_reused_slot_is_joined_once_and_leaves_no_weight_behind() -> None:
    """One running flow; a second starts and is cancelled before the solve; a third
    reuses its slot.  Two flows share the 100 B/s link (50 each, not 33.3), and once
    the third leaves the first has the whole link (not 50: no weight left behind)."""
    net = FlowNetwork(simpy.Environment())
    link = net.add_resource("link", capacity_Bps=100.0)
    first = net.start_flow(1e9, [(link, 1.0)], name="first")
    net.solve_now()
    cancelled = net.start_flow(1e9, [(link, 1.0)], name="cancelled")
    slot = cancelled._slot
    assert net.cancel_flow(cancelled) == 0.0
    third = net.start_flow(1e9, [(link, 1.0)], name="third")
    assert third._slot == slot  # the freed slot is reused before any solve
    _assert_exact(net)
    assert first.rate_Bps == third.rate_Bps == 50.0
    net.cancel_flow(third)
    _assert_exact(net)
    assert first.rate_Bps == 100.0


def test_a_reused_slot_survives_the_fast_path_rolling_back() -> None:
    """The reported crash's mechanism: the reused slot's flow also crosses a second,
    slower resource, so the class fast path fails and undoes its joins; it took the
    flow out of its class twice (``KeyError: -1``).  Now the repair gives 60 + 40."""
    net = FlowNetwork(simpy.Environment())
    link = net.add_resource("link", capacity_Bps=100.0)
    slow = net.add_resource("slow", capacity_Bps=40.0)
    first = net.start_flow(1e9, [(link, 1.0)], name="first")
    net.solve_now()
    net.cancel_flow(net.start_flow(1e9, [(link, 1.0), (slow, 1.0)], name="cancelled"))
    second = net.start_flow(1e9, [(link, 1.0), (slow, 1.0)], name="second")
    _assert_exact(net)
    assert (first.rate_Bps, second.rate_Bps) == (60.0, 40.0)


def test_a_reused_slot_on_a_segment_is_joined_once() -> None:
    """The same through a shared segment (a stripe set): one user's weight on it."""
    net = FlowNetwork(simpy.Environment())
    drives = [net.add_resource(f"d{i}", capacity_Bps=10.0) for i in range(4)]
    stripes = net.add_segment("stripes", [(d, 0.25) for d in drives])
    first = net.start_flow(1e9, [(stripes, 1.0)], name="first")
    net.solve_now()
    net.cancel_flow(net.start_flow(1e9, [(stripes, 1.0)], name="cancelled"))
    second = net.start_flow(1e9, [(stripes, 1.0)], name="second")
    _assert_exact(net)
    assert first.rate_Bps == second.rate_Bps == 20.0
    net.cancel_flow(second)
    _assert_exact(net)
    assert first.rate_Bps == 40.0


@st.composite
def restart_scripts(draw: st.DrawFn) -> tuple[list[float], list[list[tuple[str, int, int]]]]:
    """Capacities, then rounds of same-time operations, each round solved at its end.

    An operation is ``("start", path id, cap id)`` or ``("cancel", index, 0)`` of the
    ``index``-th live flow (modulo their number), so flows are often cancelled in the
    round they started, their slots reused by the next start of the round.
    """
    caps = draw(st.lists(st.floats(1.0, 100.0), min_size=1, max_size=5))
    op = st.one_of(
        st.tuples(st.just("start"), st.integers(0, 30), st.integers(0, 3)),
        st.tuples(st.just("cancel"), st.integers(0, 30), st.just(0)),
    )
    rounds = draw(st.lists(st.lists(op, min_size=1, max_size=8), min_size=1, max_size=6))
    return caps, rounds


@settings(max_examples=80, deadline=None)
@given(restart_scripts())
def test_same_time_start_cancel_restart_rates_equal_full_solve(
    script: tuple[list[float], list[list[tuple[str, int, int]]]],
) -> None:
    """Starts and cancels at one simulated time, in any order, then a solve: the
    incremental rates equal a from-scratch max-min solve after every round, and the
    flows still running all complete."""
    caps, rounds = script
    env = simpy.Environment()
    net = FlowNetwork(env)
    res = [net.add_resource(f"r{i}", capacity_Bps=c) for i, c in enumerate(caps)]
    # Each resource alone, each pair of neighbours (weights 1 and 0.5), and all of them.
    paths: list[list[tuple[Resource, float]]] = [[(r, 1.0)] for r in res]
    if len(res) > 1:
        paths += [[(r, 1.0), (res[(j + 1) % len(res)], 0.5)] for j, r in enumerate(res)]
    paths.append([(r, 1.0 + 0.25 * j) for j, r in enumerate(res)])
    live = []
    for ops in rounds:
        for kind, a, b in ops:
            if kind == "start":
                cap = (None, 5.0, 20.0, 50.0)[b]
                live.append(net.start_flow(50.0 + a, paths[a % len(paths)], rate_cap_Bps=cap))
            elif live:
                net.cancel_flow(live.pop(a % len(live)))
        _assert_exact(net)
        env.run(env.now + 0.25)
        live = [f for f in live if np.isnan(f.end_s)]
    env.run()
    assert all(f.done.triggered for f in live)
    assert net.active_flows == 0


def test_rebuild_with_compute_fabric_background_runs_as_without_it(tmp_path: Path) -> None:
    """The reported case (issue 17): a ``rebuild`` phase on OST 3 with an all-to-all
    between compute groups crashed with ``KeyError: -1``.  That traffic shares no
    resource with the OST, so the phase's figures equal those of the same phase
    without it."""
    phase = (
        '[[phases]]\nname = "rb"\nworkload = "rebuild"\noperation = "write"\nost = 3\n'
        'window = "10 s"\n'
    )
    background = (
        '[system_set]\n"fabric.background" = \'\'\'[{ name = "alltoall", '
        'between = ["compute", "compute"], rate_per_pair = "100 GB/s" }]\'\'\'\n\n'
    )
    head = f'name = "t"\nsystem = "{MODEL.as_posix()}"\nseed = 1\nfidelity = "flow"\n\n'
    details: list[RebuildDetails] = []
    for extra in (background, ""):
        path = tmp_path / f"s{len(details)}.toml"
        path.write_text(head + extra + phase)
        details.append(run_loaded(load_scenario(path, {})).phases[0].details(RebuildDetails))
    with_bg, without = details
    assert with_bg.foreground_before_Bps > 0.0
    assert not with_bg.data_lost
    for name in (
        "foreground_before_Bps",
        "foreground_during_Bps",
        "foreground_after_Bps",
        "rebuild_time_s",
    ):
        np.testing.assert_allclose(getattr(with_bg, name), getattr(without, name), rtol=1e-9)
