"""Throughput probes see what the flows move."""

from __future__ import annotations

import pytest

from flashsim.engine.probes import ThroughputProbe
from flashsim.engine.simulation import Simulation


def test_probe_reports_the_shared_then_solo_rates() -> None:
    sim = Simulation(0)
    link = sim.flows.add_resource("link", capacity_Bps=10.0)
    other = sim.flows.add_resource("other", capacity_Bps=100.0)
    probe = ThroughputProbe(sim.flows, [link, other], interval_s=1.0)
    a = sim.flows.start_flow(10.0, [(link, 1.0)])
    b = sim.flows.start_flow(30.0, [(link, 1.0), (other, 2.0)])
    sim.run(sim.env.all_of([a.done, b.done]))
    probe.stop()
    sim.run()
    frame = probe.to_dataframe()
    on_link = frame[frame.resource == "link"].throughput_Bps.tolist()
    on_other = frame[frame.resource == "other"].throughput_Bps.tolist()
    assert on_link == pytest.approx([10.0, 10.0, 10.0, 10.0])
    # b alone crosses "other" with weight 2: 5 B/s shared, then 10 B/s solo.
    assert on_other == pytest.approx([10.0, 10.0, 20.0, 20.0])
    assert sum(on_other) == pytest.approx(2 * 30.0)


def test_probe_interval_must_be_positive() -> None:
    sim = Simulation(0)
    with pytest.raises(ValueError, match="interval_s"):
        ThroughputProbe(sim.flows, [], 0.0)
