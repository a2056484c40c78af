"""The timeline on a real Lustre system (Perlmutter): same numbers in sequence, overlap, events.

Each scenario here is a one-OST IOR write of a few simulated seconds (flow
fidelity, well under a second of work each).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from flashsim.components.fabric import Fabric
from flashsim.components.fabric_spec import BackgroundJobSpec
from flashsim.config import validate
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import RunResult
from flashsim.scenario import LoadedScenario, load_scenario, run_loaded
from flashsim.timeline.events import load_events
from tests.cli_helpers import ROOT, run_flashsim

EVENTS = ROOT / "scenarios" / "examples" / "timeline-events.toml"
OVERLAP = ROOT / "scenarios" / "examples" / "timeline-overlap.toml"


def with_events(base: LoadedScenario, events: list[dict[str, Any]]) -> RunResult:
    """Run ``base`` with ``events`` instead of its own."""
    loaded = load_events(events, base.path, [t.name for t in base.timed])
    return run_loaded(dataclasses.replace(base, events=loaded))


def bandwidths(result: RunResult) -> dict[str, float]:
    return {p.name: p.bandwidth_Bps for p in result.phases}


def test_sequential_scenario_gives_the_numbers_of_phases_run_by_hand() -> None:
    """Table I's scenario (validation records) through the timeline = run_phase in a loop."""
    loaded = load_scenario(ROOT / "scenarios" / "perlmutter" / "ior-table1.toml")
    result = run_loaded(loaded)
    sim = Simulation(loaded.spec.seed)
    built = loaded.system.kind.build(loaded.system.model, sim, loaded.spec.fidelity)
    by_hand = [built.run_phase(phase) for phase in loaded.phases]
    assert [p.name for p in result.phases] == [p.name for p in by_hand]
    for got, want in zip(result.phases, by_hand, strict=True):
        assert got.bandwidth_Bps == want.bandwidth_Bps
        assert got.iops == want.iops
        assert got.sim_time_s == want.sim_time_s
    assert [p.start_s for p in result.phases] == sorted(p.start_s or 0.0 for p in result.phases)


def test_overlapping_ior_phases_share_the_ost_and_both_slow_down() -> None:
    together = bandwidths(run_loaded(load_scenario(OVERLAP)))
    apart = bandwidths(run_loaded(load_scenario(OVERLAP, {"phases.together.start": '"100 s"'})))
    assert together["alone"] < 0.8 * apart["alone"]
    assert together["together"] < 0.8 * apart["together"]
    # Apart, the two identical writes run at one rate; the probes are untouched.
    assert apart["alone"] == pytest.approx(apart["together"], rel=1e-9)
    assert together["probe@30s"] == apart["probe@30s"]


def test_probe_runs_are_named_by_their_start() -> None:
    result = run_loaded(load_scenario(OVERLAP))
    probes = [p for p in result.phases if p.name.startswith("probe@")]
    assert [p.name for p in probes] == ["probe@30s", "probe@50s", "probe@70s"]
    assert [p.start_s for p in probes] == [30.0, 50.0, 70.0]


def test_halving_the_oss_nic_mid_phase_lowers_the_phase_bandwidth() -> None:
    base = load_scenario(EVENTS)
    fresh = bandwidths(with_events(base, []))
    throttle = {"at": "1 s", "action": "set-capacity", "resource": "perlmutter.oss0.nic*"}
    halved = bandwidths(with_events(base, [{**throttle, "factor": 0.5}]))
    assert halved["write"] < 0.9 * fresh["write"]
    assert halved["write-again"] < 0.9 * fresh["write-again"]  # it stays halved
    restored = bandwidths(
        with_events(
            base,
            [
                {**throttle, "factor": 0.5},
                {**throttle, "at": "2 s", "factor": 2.0},
            ],
        )
    )
    assert halved["write"] < restored["write"] < fresh["write"]
    assert restored["write-again"] == pytest.approx(fresh["write-again"], rel=1e-9)


def test_background_traffic_slows_a_phase_until_stopped() -> None:
    base = load_scenario(EVENTS)
    fresh = bandwidths(with_events(base, []))
    job = {"between": ["compute", "io"], "rate_per_pair": "200 GB/s", "streams": 64}
    busy = bandwidths(
        with_events(
            base,
            [
                {"name": "bg", "at": "1 s", "action": "background-start", "jobs": [job]},
                {"name": "bg", "relative_to": "write", "edge": "end", "action": "background-stop"},
            ],
        )
    )
    assert busy["write"] < 0.8 * fresh["write"]
    assert busy["write-again"] == pytest.approx(fresh["write-again"], rel=1e-9)


def test_the_timeline_examples_run() -> None:
    for path in (EVENTS, OVERLAP):
        done = run_flashsim("run", str(path.relative_to(ROOT)))
        assert done.returncode == 0, done.stderr
        assert "never fired" not in done.stderr


def _fabric() -> tuple[Simulation, Fabric]:
    from flashsim.scenario import load_system_model

    model = load_system_model(ROOT / "models" / "systems" / "perlmutter.toml").model
    sim = Simulation(0)
    return sim, Fabric(sim, "pm.fabric", model.fabric)


def test_fabric_starts_and_stops_background_jobs_by_label() -> None:
    sim, fabric = _fabric()
    job = validate(
        BackgroundJobSpec, {"between": ["compute", "io"], "rate_per_pair": "1 GB/s"}, "t"
    )
    assert fabric.background_load_Bps() == {}
    started = fabric.start_background_jobs("bg", [job])
    assert started > 0 and sim.flows.active_flows == started
    assert fabric.background_load_Bps()
    with pytest.raises(ValueError, match="running already"):
        fabric.start_background_jobs("bg", [job])
    sim.run(1.0)
    assert fabric.stop_background_jobs("bg") == started
    sim.run(2.0)
    assert sim.flows.active_flows == 0
    assert fabric.background_load_Bps() == {}
    with pytest.raises(ValueError, match="not running"):
        fabric.stop_background_jobs("bg")


def test_fabric_background_start_keeps_the_io_plan() -> None:
    """A job started mid-run is planned on its own; the I/O plan in force is kept."""
    _, fabric = _fabric()
    fabric.attach("c0", "compute", 0)
    fabric.attach("s0", "io", 0)
    fabric.plan({("c0", "s0"): 5e12})
    before = fabric.split("c0", "s0")
    job = validate(
        BackgroundJobSpec, {"between": ["compute", "compute"], "rate_per_pair": "5 GB/s"}, "t"
    )
    fabric.start_background_jobs("bg", [job])
    assert fabric.split("c0", "s0") == before
