"""A replayed call costs what its own path touches, not the size of the model (issue 20)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import simpy

from flashsim.engine.flows import FlowNetwork
from flashsim.engine.maxmin import solve_maxmin
from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_system_model
from flashsim.workloads.replay import JobEngine, PlacedJob
from flashsim.workloads.trace import JobTrace, OpTable, TraceFile, records_frame

ROOT = Path(__file__).resolve().parents[1]
PERLMUTTER = ROOT / "models" / "systems" / "perlmutter.toml"


def random_reads(calls: int, stripes: int, size_B: float = 3.6e6) -> JobTrace:
    """One rank reading ``calls`` random blocks of a file striped over ``stripes`` OSTs."""
    rng = np.random.default_rng(3)
    offset = np.floor(rng.uniform(0.0, 1e4, calls)) * size_B
    start = np.arange(calls) * 2e-3
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
    trace = JobTrace("dlio-like", "test", 1, float(start[-1]), (wide,), records_frame(rows), ops)
    trace.check()
    return trace


class CountingNetwork(FlowNetwork):
    """A flow network that counts the constraints its events re-check."""

    def __init__(self, env: simpy.Environment) -> None:
        super().__init__(env)
        self.refreshed = 0

    def _refresh_constraint(self, k: int) -> bool:
        self.refreshed += 1
        return super()._refresh_constraint(k)


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
