"""New flows forming a bottleneck among other flows get their classes from a sub-solve (issue 17).

A flow that starts where no class's bottleneck lies, but whose path other
classes load (a client NIC its rank shares with three others, a fabric segment
in use), used to join a class at its cap, fail the class checks and take the
flow-level repair: in the year study's weekly checkpoint probe, with fleet
variability on, every OST's write-behind drain did (274 repairs a probe).  The
class layer now solves such flows exactly among themselves on the capacity the
classes leave them and creates their bottleneck classes, checked like any class
(a created class as one whose level fell).  Rates, completion times and the
per-bottleneck byte ledger must be those of the repair path, which a subclass
here keeps (:class:`RepairOnly`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import simpy
from flow_helpers import RepairOnly, matches_full_solve, run_script
from hypothesis import given, settings
from hypothesis import strategies as st

from flashsim.engine.flows import Flow, FlowNetwork
from flashsim.scenario import run_loaded, scenario_from_data

ROOT = Path(__file__).resolve().parent.parent
PERLMUTTER = ROOT / "models" / "systems" / "perlmutter.toml"


def _drain_case(net: FlowNetwork) -> tuple[list[Flow], list[Flow]]:
    """Two NICs each carrying a flow to its own slow drive; at t = 1 s two flows start
    together, one from each NIC, on a free fast drive (the probe's drain, in small)."""
    env = net.env
    n0 = net.add_resource("nic0", capacity_Bps=25.0)
    n1 = net.add_resource("nic1", capacity_Bps=25.0)
    d0 = net.add_resource("d0", capacity_Bps=6.0)
    d1 = net.add_resource("d1", capacity_Bps=8.0)
    d2 = net.add_resource("d2", capacity_Bps=30.0)
    first = [
        net.start_flow(600.0, [(n0, 1.0), (d0, 1.0)], rate_cap_Bps=100.0),
        net.start_flow(800.0, [(n1, 1.0), (d1, 1.0)], rate_cap_Bps=100.0),
    ]
    later: list[Flow] = []

    def drain() -> Any:
        yield env.timeout(1.0)
        later.append(net.start_flow(45.0, [(n0, 1.0), (d2, 1.0)], rate_cap_Bps=100.0))
        later.append(net.start_flow(30.0, [(n1, 1.0), (d2, 1.0)], rate_cap_Bps=100.0))

    env.process(drain())
    return first, later


def test_flows_starting_together_on_a_free_drive_behind_busy_nics_take_no_repair() -> None:
    """Residual NIC capacity 19 and 17 B/s, a 30 B/s drive: the two share the drive at
    15 B/s each (its class, from the sub-solve), the NIC flows keep 6 and 8 B/s."""
    net = FlowNetwork(simpy.Environment())
    first, later = _drain_case(net)
    net.env.run(1.0 + 1e-9)
    assert net.rates_Bps(first + later) == pytest.approx([6.0, 8.0, 15.0, 15.0])
    assert matches_full_solve(net)
    assert net.stats["repairs"] == 0 and net.stats["full_solves"] == 0
    ref = RepairOnly(simpy.Environment())
    ref_first, ref_later = _drain_case(ref)
    ref.env.run(0.5)
    before = ref.stats["repairs"]
    ref.env.run(1.0 + 1e-9)
    ref.solve_now()
    assert ref.stats["repairs"] == before + 1  # the path replaced here
    net.env.run()
    ref.env.run()
    ends = [f.end_s for f in first + later]
    assert ends == pytest.approx([f.end_s for f in ref_first + ref_later], rel=1e-12)
    # 30 B at 15 B/s; then the other's last 15 B at nic0's 19 B/s left
    assert later[1].end_s == pytest.approx(3.0)
    assert later[0].end_s == pytest.approx(3.0 + 15.0 / 19.0)
    assert net.limit_bytes() == pytest.approx(ref.limit_bytes(), rel=1e-12)


def test_a_new_bottleneck_below_a_class_crossing_it_is_repaired() -> None:
    """A class at 10 B/s (its drive) crosses a 12 B/s link; a new flow on that link alone
    would get the 2 B/s left, below the class: not max-min, so the repair runs and both
    share the link at 6 B/s."""
    net = FlowNetwork(simpy.Environment())
    link = net.add_resource("link", capacity_Bps=12.0)
    drive = net.add_resource("drive", capacity_Bps=10.0)
    nic = net.add_resource("nic", capacity_Bps=100.0)
    old = net.start_flow(1e6, [(drive, 1.0), (link, 1.0), (nic, 1.0)])
    net.solve_now()
    new = net.start_flow(1e6, [(link, 1.0), (nic, 1.0)])
    assert net.rates_Bps([old, new]) == pytest.approx([6.0, 6.0])
    assert net.stats["repairs"] == 1
    assert matches_full_solve(net)


# ................................................ property: same as the repair path
@st.composite
def batch_scripts(draw: st.DrawFn) -> dict[str, Any]:
    """A few shared resources, two segments, and flows starting in batches (several at
    one instant), most with finite caps: new bottlenecks form among busy flows."""
    n_res = draw(st.integers(2, 6))
    caps = draw(
        st.lists(st.sampled_from([1.0, 2.0, 4.0, 7.5, 10.0, 33.0]), min_size=n_res, max_size=n_res)
    )
    segs = [
        draw(
            st.lists(
                st.tuples(st.integers(0, n_res - 1), st.sampled_from([0.25, 0.5, 1.0])),
                min_size=1,
                max_size=3,
            )
        )
        for _ in range(2)
    ]
    flows = []
    for _ in range(draw(st.integers(2, 14))):
        own = draw(st.lists(st.integers(0, n_res - 1), min_size=1, max_size=3, unique=True))
        weights = [draw(st.sampled_from([0.5, 1.0, 2.0])) for _ in own]
        uses = draw(st.lists(st.integers(0, 1), max_size=2, unique=True))
        flows.append(
            (
                draw(st.sampled_from([0.0, 0.0, 0.0, 0.5, 3.0])),  # gap after the previous
                draw(st.sampled_from([1.0, 10.0, 64.0])),  # bytes
                list(zip(own, weights, strict=True)),
                uses,
                draw(st.sampled_from([None, 0.5, 3.0, 9.0, 100.0, 100.0])),  # rate cap
                draw(st.sampled_from([1.0, 1.0, 2.0])),  # priority
            )
        )
    return {"caps": caps, "segs": segs, "flows": flows}


@settings(max_examples=200, deadline=None)
@given(batch_scripts())
def test_new_bottleneck_classes_give_the_repair_paths_rates_and_times(
    script: dict[str, Any],
) -> None:
    """After every re-solve the rates equal a full max-min solve; completion times and
    the bytes booked under the limits equal those of the repair path."""
    ends, ledger, exact = run_script(FlowNetwork(simpy.Environment()), script)
    ref_ends, ref_ledger, _ = run_script(RepairOnly(simpy.Environment()), script)
    booked, ref_booked = sum(ledger.values()), sum(ref_ledger.values())
    assert exact
    np.testing.assert_allclose(ends, ref_ends, rtol=1e-9)
    assert booked == pytest.approx(ref_booked, rel=1e-9, abs=1e-9)


# .......................................................... the probe, in small
def _probe(nodes: int) -> dict[str, Any]:
    return {
        "name": "probe",
        "system": str(PERLMUTTER),
        "seed": 1,
        "fidelity": "flow",
        "system_set": {"oss.variability.enabled": True},
        "phases": [
            {
                "name": "checkpoint",
                "workload": "ior",
                "operation": "write",
                "nodes": nodes,
                "ranks_per_node": 4,
                "file_per_process": True,
                "transfer_size": "64 MiB",
                "block_size": "2 GiB",
                "fsync": True,
                "layout": {"stripe_count": 1, "stripe_size": "1 MiB"},
            }
        ],
    }


def test_the_checkpoint_probe_with_variability_takes_no_repair_and_the_same_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The year study's probe with 2 GiB files: every drive differs, so each OST's drain
    flows start on a free OST behind busy client NICs.  No flow-level repair runs
    (before: one per OST, 274), and the bandwidth and time are the repair path's."""
    solves: list[bool] = []
    original = FlowNetwork._flow_level_solve

    def counted(self: FlowNetwork, new: list[int], full: bool) -> None:
        solves.append(full)
        original(self, new, full)

    monkeypatch.setattr(FlowNetwork, "_flow_level_solve", counted)
    path = ROOT / "scenarios" / "probe.toml"  # anchors messages only
    fast = run_loaded(scenario_from_data(_probe(512), path)).phases[0]
    fast_solves = list(solves)
    solves.clear()
    monkeypatch.setattr(FlowNetwork, "_new_bottlenecks", RepairOnly._new_bottlenecks)
    ref = run_loaded(scenario_from_data(_probe(512), path)).phases[0]
    assert fast_solves and all(fast_solves)  # full solves only (a start of every rank)
    assert solves.count(False) >= 200  # the reference repairs the drains
    assert fast.bandwidth_Bps == pytest.approx(ref.bandwidth_Bps, rel=1e-12)
    assert fast.sim_time_s == pytest.approx(ref.sim_time_s, rel=1e-12)
