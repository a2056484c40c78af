"""Flow and request fidelity agree on the same pipeline."""

from __future__ import annotations

import pytest

from flashsim.scenario import run_scenario

SCENARIO = "scenarios/examples/pipeline-streams.toml"


@pytest.mark.parametrize("seed", [1, 2])
def test_saturated_pipeline_throughput_agrees(root, seed: int) -> None:
    flow = run_scenario(root / SCENARIO, {"fidelity": '"flow"', "seed": str(seed)})
    request = run_scenario(root / SCENARIO, {"fidelity": '"request"', "seed": str(seed)})
    for f, r in zip(flow.phases, request.phases, strict=True):
        assert r.ci_rel_halfwidth is not None and r.ci_rel_halfwidth < 0.01
        assert r.bandwidth_Bps == pytest.approx(f.bandwidth_Bps, rel=0.03), f.name


def test_latency_bound_streams_agree(root) -> None:
    # One request in flight per stream, deterministic service: no stage saturates,
    # so both fidelities must give streams * t / round_trip.
    overrides = {
        "phases.bandwidth.queue_depth": "1",
        "phases.bandwidth.streams": "2",
        "system.stages.nic.service_distribution": '"deterministic"',
        "system.stages.cpu.service_distribution": '"deterministic"',
        "system.stages.ssd.service_distribution": '"deterministic"',
    }
    flow = run_scenario(root / SCENARIO, {**overrides, "fidelity": '"flow"'})
    request = run_scenario(root / SCENARIO, {**overrides, "fidelity": '"request"'})
    f, r = flow.phases[0], request.phases[0]
    t = 1024 * 1024
    round_trip = 2e-6 + t / 25e9 + 1e-6 + 16 / 1.6e6 + 80e-6 + max(8 * t / 3.2e9, 8 / 8e5)
    assert f.bandwidth_Bps == pytest.approx(2 * t / round_trip, rel=1e-9)
    assert r.bandwidth_Bps == pytest.approx(f.bandwidth_Bps, rel=0.03)


def test_more_ssd_bandwidth_never_lowers_throughput(root) -> None:
    previous = 0.0
    for bw in ("1 GB/s", "2 GB/s", "3.2 GB/s", "6 GB/s"):
        result = run_scenario(root / SCENARIO, {"system.stages.ssd.bandwidth": bw})
        assert result.phases[0].bandwidth_Bps >= previous
        previous = result.phases[0].bandwidth_Bps
