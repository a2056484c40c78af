"""A lone flow forming a new bottleneck gets its class from its own path (issue 20).

A flow no class crosses (directly or through a segment in use) reaches the
least ``capacity / (coefficient x priority)`` over its path: the class layer
creates that bottleneck's class at once instead of handing the event to the
flow-level repair, so a read on a 6,000-constraint stripe set costs its own
path.  Rates, completion times and the per-bottleneck byte ledger must be those
of the repair path, which a subclass here keeps (:class:`RepairOnly`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
import simpy
from flow_helpers import RepairOnly, matches_full_solve, run_script
from hypothesis import given, settings
from hypothesis import strategies as st

from flashsim.engine.flows import FlowNetwork
from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_system_model
from flashsim.workloads.replay import JobEngine, JobTarget, PlacedJob
from flashsim.workloads.trace import JobTrace, OpTable, TraceFile, records_frame

ROOT = Path(__file__).resolve().parent.parent
PERLMUTTER = ROOT / "models" / "systems" / "perlmutter.toml"


def test_a_lone_flow_on_its_own_path_costs_no_repair() -> None:
    """A flow alone on a 30 B/s link under a 100 B/s NIC, with a 1,000 B/s cap: the link
    binds; the class comes from its path (no repair), and the next lone flow likewise."""
    net = FlowNetwork(simpy.Environment())
    nic = net.add_resource("nic", capacity_Bps=100.0)
    link = net.add_resource("link", capacity_Bps=30.0)
    flow = net.start_flow(60.0, [(nic, 1.0), (link, 2.0)], rate_cap_Bps=1000.0)
    assert net.rates_Bps([flow]) == pytest.approx([15.0])
    net.env.run(flow.done)
    assert flow.end_s == pytest.approx(4.0)
    again = net.start_flow(60.0, [(link, 1.0), (nic, 1.0)], priority=2.0)
    assert net.rates_Bps([again]) == pytest.approx([30.0])
    assert net.stats["repairs"] == 0 and net.stats["full_solves"] == 0
    assert matches_full_solve(net)


def test_a_lone_flow_on_a_segment_takes_the_segments_tightest_constraint() -> None:
    """A stripe set of four drives, one slower: the lone flow's rate is the slow drive's
    capacity over its coefficient, found from the segment, not by a repair."""
    net = FlowNetwork(simpy.Environment())
    drives = [net.add_resource(f"d{i}", capacity_Bps=c) for i, c in enumerate([8, 8, 2, 8])]
    nic = net.add_resource("nic", capacity_Bps=100.0)
    stripes = net.add_segment("stripes", [(d, 0.25) for d in drives])
    flow = net.start_flow(1e6, [(nic, 1.0), (stripes, 1.0)])
    assert net.rates_Bps([flow]) == pytest.approx([8.0])
    assert net.stats["repairs"] == 0
    assert matches_full_solve(net)
    # a capacity change inside the segment: the next lone flow sees it
    net.cancel_flow(flow)
    net.set_capacity(drives[2], capacity_Bps=16.0)
    flow = net.start_flow(1e6, [(nic, 1.0), (stripes, 1.0)])
    assert net.rates_Bps([flow]) == pytest.approx([32.0])
    assert matches_full_solve(net)


def test_a_flow_sharing_a_constraint_is_not_alone() -> None:
    """A second flow on the first one's link is not alone: it shares that class."""
    net = FlowNetwork(simpy.Environment())
    link = net.add_resource("link", capacity_Bps=30.0)
    other = net.add_resource("other", capacity_Bps=5.0)
    first = net.start_flow(1e6, [(link, 1.0)])
    net.solve_now()
    second = net.start_flow(1e6, [(other, 1.0), (link, 1.0)])
    assert net.rates_Bps([first, second]) == pytest.approx([25.0, 5.0])
    assert matches_full_solve(net)


@pytest.mark.parametrize(
    "script",
    [
        # two drives of a segment saturate together: the lower constraint index
        {"caps": [2.0, 2.0], "segs": [[(1, 0.5), (0, 0.5)], [(0, 1.0)]], "own": [], "uses": [0]},
        # two own entries saturate together: the first in path order
        {"caps": [3.0, 1.0, 2.0], "segs": [[(0, 1.0)], [(0, 1.0)]], "own": [(2, 2.0), (1, 1.0)],
         "uses": []},
        # an own entry and a segment's drive saturate together: the own entry
        {"caps": [2.0, 1.0], "segs": [[(0, 2.0)], [(0, 1.0)]], "own": [(1, 1.0)], "uses": [0]},
        # two segments each saturate: the first segment used
        {"caps": [2.0, 4.0], "segs": [[(0, 1.0)], [(1, 2.0)]], "own": [], "uses": [1, 0]},
    ],
)  # fmt: skip
def test_a_lone_flow_saturating_several_constraints_is_booked_as_the_repair_books_it(
    script: dict[str, Any],
) -> None:
    """Ties: the constraint a lone flow's bytes are booked under (what limited it) is
    the one the flow-level solution's bottleneck choice names."""
    flows = [(0.0, 1.0, script["own"], script["uses"], None, 1.0)]
    full = {"caps": script["caps"], "segs": script["segs"], "flows": flows}
    ends, ledger, exact = run_script(FlowNetwork(simpy.Environment()), full)
    ref_ends, ref_ledger, _ = run_script(RepairOnly(simpy.Environment()), full)
    assert exact
    assert ends == pytest.approx(ref_ends, rel=1e-12)
    assert ledger == pytest.approx(ref_ledger, rel=1e-12)


# ................................................ property: same as the repair path
@st.composite
def lone_scripts(draw: st.DrawFn) -> dict[str, Any]:
    """Resources, two segments (maybe overlapping each other and own paths), and flows
    started mostly one after another (so often alone), some at the same time."""
    n_res = draw(st.integers(2, 7))
    caps = draw(
        st.lists(st.sampled_from([1.0, 2.0, 4.0, 7.5, 10.0, 33.0]), min_size=n_res, max_size=n_res)
    )
    segs = [
        draw(
            st.lists(
                st.tuples(st.integers(0, n_res - 1), st.sampled_from([0.25, 0.5, 1.0])),
                min_size=1,
                max_size=4,
            )
        )
        for _ in range(2)
    ]
    flows = []
    for _ in range(draw(st.integers(1, 12))):
        own = draw(st.lists(st.integers(0, n_res - 1), max_size=3, unique=True))
        weights = [draw(st.sampled_from([0.5, 1.0, 2.0])) for _ in own]
        uses = draw(st.lists(st.integers(0, 1), max_size=2, unique=True))
        cap = draw(st.one_of(st.none(), st.sampled_from([0.5, 3.0, 9.0, 100.0])))
        if not own and not uses and cap is None:
            own, weights = [0], [1.0]
        flows.append(
            (
                draw(st.sampled_from([0.0, 1.0, 1.0, 5.0, 20.0])),  # gap after the previous
                draw(st.sampled_from([1.0, 10.0, 64.0])),  # bytes
                list(zip(own, weights, strict=True)),
                uses,
                cap,
                draw(st.sampled_from([1.0, 1.0, 2.0])),  # priority
            )
        )
    return {"caps": caps, "segs": segs, "flows": flows}


@settings(max_examples=150, deadline=None)
@given(lone_scripts())
def test_lone_flow_classes_give_the_repair_paths_rates_times_and_ledger(
    script: dict[str, Any],
) -> None:
    """After every re-solve the rates equal a full max-min solve; completion times equal
    those of the repair path, and so do the bytes moved under each bottleneck when flows
    start one at a time.  (Flows starting together are repaired together on the repair
    path; a flow saturating two constraints at its level may then be booked under
    either: both bind it.  The total is the same.)"""
    ends, ledger, exact = run_script(FlowNetwork(simpy.Environment()), script)
    ref_ends, ref_ledger, _ = run_script(RepairOnly(simpy.Environment()), script)
    assert exact
    np.testing.assert_allclose(ends, ref_ends, rtol=1e-9)
    assert sum(ledger.values()) == pytest.approx(sum(ref_ledger.values()), rel=1e-9, abs=1e-9)
    if all(gap > 0 for gap, *_ in script["flows"][1:]):
        assert ledger.keys() == ref_ledger.keys()
        for key, moved in ledger.items():
            assert moved == pytest.approx(ref_ledger[key], rel=1e-9, abs=1e-9)


# .............................................. the benchmark's case, a few calls
def _sequential_reads(calls: int) -> JobTrace:
    """One rank reading ``calls`` 4 MiB blocks in a row of a file over 160 OSTs, 4 ms apart."""
    size_B = 4194304.0
    start = np.arange(calls, dtype=np.float64) * 4e-3
    ops = OpTable(
        rank=np.zeros(calls, dtype=np.int64),
        file=np.zeros(calls, dtype=np.int64),
        record=np.zeros(calls, dtype=np.int64),
        write=np.zeros(calls, dtype=bool),
        offset_B=np.arange(calls, dtype=np.float64) * size_B,
        size_B=np.full(calls, size_B),
        start_s=start,
        end_s=start + 1e-3,
    )
    rows = [{"module": "POSIX", "file": 0, "rank": 0, "reads": calls,
             "bytes_read": calls * size_B}]  # fmt: skip
    wide = TraceFile("data.npz", "lustre", 160, 1048576.0, tuple(range(160)))
    trace = JobTrace(
        "dlio-like", "test", 1, float(start[-1] + 1e-3), (wide,), records_frame(rows), ops,
        timing="dxt",
    )  # fmt: skip
    trace.check()
    return trace


def test_sequential_reads_on_a_wide_stripe_set_take_no_repair_and_the_same_times() -> None:
    """The DLIO read-ahead case of ``replay_sequential_reads_3000_s``: the client's
    read-ahead cap exceeds its NIC, so each read forms a new bottleneck on its own path.
    No repair runs (before: one per read), and the replay's times are the repair path's."""
    loaded = load_system_model(PERLMUTTER)
    results = []
    for network in (FlowNetwork, RepairOnly):
        sim = Simulation(0)
        sim.flows = network(sim.env)
        system = cast(JobTarget, loaded.kind.build(loaded.model, sim, "flow"))
        (times,) = JobEngine(system, "flow").run([PlacedJob("j", _sequential_reads(12))])
        results.append((times.end_s.copy(), dict(sim.flows.stats)))
    (ends, stats), (ref_ends, ref_stats) = results
    assert ref_stats["repairs"] >= 11  # the reference takes the path replaced here
    assert stats["repairs"] == 0 and stats["full_solves"] == 0
    np.testing.assert_allclose(ends, ref_ends, rtol=1e-12)
