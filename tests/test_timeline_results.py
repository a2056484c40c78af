"""Results over time: the state recorder, per-phase bandwidth series, their JSON, DataFrames
and text summary (issue 17, deliverable 6)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
import simpy

from flashsim.components.target_state import SystemStatus, TargetStatus
from flashsim.engine.simulation import Simulation
from flashsim.measure.report import LISTED_EVENTS, format_run_text, format_timeline, when
from flashsim.measure.results import (
    TIMELINE_STATE_COLUMNS,
    BandwidthSample,
    PhaseResult,
    RunResult,
    TimelineSample,
)
from flashsim.measure.timeline import (
    FLOWS,
    MAX_WINDOWS,
    PHASE_MEAN,
    BandwidthRecorder,
    RunTimeline,
    StateRecorder,
    rebuild_windows,
    same_state,
    status_from_dict,
)
from flashsim.scenario import load_system_model

ROOT = Path(__file__).resolve().parents[1]


class FakeSystem:
    """Four targets whose state a test sets: target 0's WA, a failed drive on target 1."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.wa = 1.0
        self.failed: tuple[int, ...] = ()
        self.rebuilding = False
        self.calls = 0

    def status(self) -> SystemStatus:
        self.calls += 1
        built = [
            (0, TargetStatus("t0", write_amplification=self.wa)),
            (
                1,
                TargetStatus(
                    "t1",
                    failed_drives=self.failed,
                    rebuild_progress=0.5 if self.rebuilding else None,
                ),
            ),
        ]
        return SystemStatus.of(self.sim.now, 4, built)


def _phase(name: str = "p", bandwidth: float = 100.0, iops: float = 1.0) -> PhaseResult:
    return PhaseResult(name, "write", bandwidth, iops, 1, 100.0, 10.0, 1000.0)


def _at(sim: Simulation, t: float, action: Any) -> None:
    def proc() -> Generator[simpy.Event, Any, None]:
        yield sim.env.timeout(t - sim.now)
        action()

    sim.env.process(proc())


# ------------------------------------------------------------------ state recorder
def test_state_recorder_marks_and_periodic_samples() -> None:
    sim = Simulation(0)
    system = FakeSystem(sim)
    rec = StateRecorder(sim, system.status, interval_s=2.0)
    rec.start()

    def fail() -> None:
        system.failed, system.rebuilding = (3,), True
        rec.mark("fail-drive t1", event=True)

    _at(sim, 5.0, fail)
    sim.run(9.0)
    system.wa = 2.0
    rec.mark("p: end")
    samples = rec.finish()
    marks = [(s.time_s, s.label, s.event) for s in samples if s.label]
    assert marks == [
        (0.0, "start", False),
        (5.0, "fail-drive t1", True),
        (9.0, "p: end", False),
        (9.0, "end", False),
    ]
    periodic = [s.time_s for s in samples if not s.label]
    assert periodic == [2.0, 4.0, 6.0, 8.0]
    # Each sample is the state then: the failure shows from 5 s, the WA from 9 s.
    by_time = {s.time_s: s.state for s in samples if s.label != "end"}
    assert by_time[4.0]["failed_drives"] == 0 and by_time[6.0]["failed_drives"] == 1
    assert by_time[6.0]["rebuilding_targets"] == [1]
    assert samples[-1].state["max_write_amplification"] == 2.0
    assert samples[0].state["mean_write_amplification"] == 1.0
    assert samples[-1].state["mean_write_amplification"] == pytest.approx((2.0 + 3) / 4)


def test_a_mark_on_a_periodic_tick_is_one_sample() -> None:
    """Whichever comes first at an instant, a mark and a periodic tick make one sample."""
    sim = Simulation(0)
    system = FakeSystem(sim)
    rec = StateRecorder(sim, system.status, interval_s=1.0)
    rec.start()
    _at(sim, 3.0, lambda: rec.mark("before"))
    sim.run(3.5)
    _at(sim, 4.0, lambda: rec.mark("after"))
    sim.run(5.5)
    samples = rec.finish()
    times = [s.time_s for s in samples]
    assert times == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 5.5]
    assert [s.label for s in samples if s.time_s in (3.0, 4.0)] == ["before", "after"]
    assert system.calls <= len(samples) + 2


def test_adaptive_period_bounds_the_samples_of_a_long_run() -> None:
    """A simulated year keeps max/2..max evenly spaced periodic samples, in bounded reads."""
    sim = Simulation(0)
    system = FakeSystem(sim)
    rec = StateRecorder(sim, system.status, max_samples=50)
    rec.start()
    year = 365 * 86400.0
    for day in range(1, 366):  # a fast-forward: the clock advanced day by day
        sim.run(day * 86400.0)
    samples = rec.finish()
    periodic = [s.time_s for s in samples if not s.label]
    assert 25 <= len(periodic) <= 50
    gaps = {round(b - a, 6) for a, b in itertools.pairwise(periodic)}
    assert gaps == {rec.interval_s}
    assert periodic[-1] > year - 2 * rec.interval_s
    # Reads: about max_samples per doubling of the period (2^25 s > a year from 1 s).
    assert system.calls <= 50 * 26 + 10


def test_sampler_never_keeps_the_run_alive() -> None:
    """Draining the environment ends within one period of the last real event, and a run
    until an event that never comes still fails as it does without a recorder."""
    sim = Simulation(0)
    system = FakeSystem(sim)
    rec = StateRecorder(sim, system.status, interval_s=1.0)
    rec.start()
    r = sim.flows.add_resource("t.r", capacity_Bps=100.0)
    sim.flows.start_flow(1000.0, [(r, 1.0)])
    sim.run()  # returns: the sampler goes dormant when it alone is left
    assert 10.0 <= sim.now <= 11.0
    with pytest.raises(RuntimeError, match="No scheduled events left"):
        sim.run(sim.env.event())
    # A mark wakes it, and the next flows are sampled again.
    rec.mark("again")
    flow = sim.flows.start_flow(500.0, [(r, 1.0)])
    t0 = sim.now
    sim.run(flow.done)
    after = [s.time_s for s in rec.samples if not s.label and s.time_s > t0]
    assert len(after) >= 4
    rec.finish()
    sim.run()
    assert not rec.running


def test_recorders_change_no_result() -> None:
    """Flows complete at exactly the same times with both recorders running."""

    def run(record: bool) -> list[float]:
        sim = Simulation(0)
        r = sim.flows.add_resource("t.r", capacity_Bps=100.0)
        s = sim.flows.add_resource("t.s", capacity_Bps=70.0)
        if record:
            StateRecorder(sim, FakeSystem(sim).status, interval_s=0.3).start()
            BandwidthRecorder(sim, "p").start()
        flows = []

        def starter() -> Generator[simpy.Event, Any, None]:
            for i in range(20):
                path = [(r, 1.0)] if i % 2 else [(r, 1.0), (s, 1.5)]
                flows.append(sim.flows.start_flow(100.0 + 13 * i, path))
                yield sim.env.timeout(0.7)

        sim.env.process(starter())
        sim.run(sim.env.timeout(200.0))
        return [f.end_s for f in flows]

    assert run(True) == run(False)


def test_state_recorder_rejects_bad_arguments() -> None:
    sim = Simulation(0)
    with pytest.raises(ValueError, match="interval_s"):
        StateRecorder(sim, FakeSystem(sim).status, interval_s=0.0)
    with pytest.raises(ValueError, match="max_samples"):
        StateRecorder(sim, FakeSystem(sim).status, max_samples=1)


def test_rebuild_windows_from_samples() -> None:
    def s(t: float, rebuilding: list[int]) -> TimelineSample:
        return TimelineSample(t, "", False, {"rebuilding_targets": rebuilding})

    samples = [s(0, []), s(1, [2]), s(2, [2, 3]), s(3, []), s(4, [1]), s(5, [1])]
    assert rebuild_windows(samples) == [(1, 3), (4, 5)]
    assert rebuild_windows([]) == []


def test_status_round_trips_through_its_dict() -> None:
    status = SystemStatus(
        time_s=3.0,
        targets=8,
        mean_write_amplification=1.5,
        max_write_amplification=2.5,
        mean_write_loss=0.2,
        degraded_targets=(1, 4),
        rebuilding_targets=(4,),
        failed_drives=2,
        data_lost_targets=(),
        buffer_fill=0.25,
    )
    assert status_from_dict(status.to_dict()) == status
    fields = [f.name for f in dataclasses.fields(SystemStatus) if f.name != "time_s"]
    assert list(TIMELINE_STATE_COLUMNS) == fields
    moved = dataclasses.replace(status, time_s=9.0).to_dict()
    assert same_state(status.to_dict(), moved)
    assert not same_state(status.to_dict(), dataclasses.replace(status, failed_drives=3).to_dict())


# ------------------------------------------------------------------ bandwidth
def test_bandwidth_per_interval_is_exact() -> None:
    """A capped flow alone (80 B/s), then two sharing a 100 B/s resource: each interval's
    bytes over its length, every byte counted once, IOPS by the phase's ops per byte."""
    sim = Simulation(0)
    r = sim.flows.add_resource("t.r", capacity_Bps=100.0)
    rec = BandwidthRecorder(sim, "p")
    rec.start()
    a = sim.flows.start_flow(500.0, [(r, 1.0)], rate_cap_Bps=80.0)
    flows = [a]
    _at(sim, 2.0, lambda: flows.append(sim.flows.start_flow(1000.0, [(r, 1.0)])))
    sim.run(5.0)
    sim.run(sim.env.all_of([f.done for f in flows]))
    samples = rec.finish(_phase(iops=0.5))  # 0.5 op/s per 100 B/s: one op per 200 B
    assert [(s.start_s, s.end_s) for s in samples] == [
        (0.0, 2.0),
        (2.0, 8.8),
        (8.8, pytest.approx(15.4)),
    ]
    assert [s.bandwidth_Bps for s in samples] == pytest.approx([80.0, 100.0, 100.0])
    assert [s.iops for s in samples] == pytest.approx([0.4, 0.5, 0.5])
    assert sum(s.bytes_B for s in samples) == pytest.approx(1500.0)
    assert {s.source for s in samples} == {FLOWS} and {s.phase for s in samples} == {"p"}


def test_bandwidth_windows_merge_exactly_beyond_their_cap() -> None:
    """Flows starting every 0.05 s for 100 s: the windows stay bounded, the bytes exact."""
    sim = Simulation(0)
    r = sim.flows.add_resource("t.r", capacity_Bps=1000.0)
    rec = BandwidthRecorder(sim, "p")
    rec.start()
    flows = []

    def starter() -> Generator[simpy.Event, Any, None]:
        for i in range(2000):
            flows.append(sim.flows.start_flow(20.0 + (i % 7), [(r, 1.0)], rate_cap_Bps=400.0))
            yield sim.env.timeout(0.05)

    sim.env.process(starter())
    sim.run(sim.env.timeout(100.0))
    sim.run(sim.env.all_of([f.done for f in flows]))
    samples = rec.finish(_phase())
    assert len(samples) <= MAX_WINDOWS + 2
    assert sum(s.bytes_B for s in samples) == pytest.approx(sum(f.size_B for f in flows))
    for a, b in itertools.pairwise(samples):
        assert a.end_s == b.start_s
    assert all(s.bandwidth_Bps <= 1000.0 * (1 + 1e-9) for s in samples)


def test_a_phase_without_flows_gets_its_mean() -> None:
    sim = Simulation(0)
    rec = BandwidthRecorder(sim, "iops")
    rec.start()
    sim.run(4.0)
    (only,) = rec.finish(_phase("iops", bandwidth=2e9, iops=5e5))
    assert only.source == PHASE_MEAN
    assert (only.start_s, only.end_s, only.bandwidth_Bps) == (0.0, 4.0, 2e9)
    assert only.iops == pytest.approx(5e5) and only.bytes_B == pytest.approx(8e9)
    # An analytic phase with no finite bandwidth gets no sample.
    rec = BandwidthRecorder(sim, "study")
    rec.start()
    sim.run(6.0)
    assert rec.finish(_phase("study", bandwidth=math.nan, iops=math.nan)) == []


# ------------------------------------------------------------------ results
def _result(timeline: list[TimelineSample], bandwidth: list[BandwidthSample]) -> RunResult:
    phase = dataclasses.replace(_phase(), start_s=0.0)
    return RunResult("s", "sys", 0, "flow", 0.1, [phase], timeline, bandwidth)


def _sample(t: float, label: str, event: bool = False, **state: Any) -> TimelineSample:
    base = SystemStatus(time_s=t, targets=4).to_dict()
    base.update(state)
    return TimelineSample(t, label, event, base)


def test_json_and_dataframes_carry_the_series() -> None:
    timeline = [
        _sample(0.0, "start"),
        _sample(5.0, "fail", True, failed_drives=1, degraded_targets=[1], buffer_fill=0.5),
        _sample(9.0, "end", mean_write_loss=math.nan),
    ]
    bandwidth = [
        BandwidthSample("p", 0.0, 2.0, 160.0, 80.0, 0.4, FLOWS),
        BandwidthSample("p", 2.0, 9.0, 700.0, 100.0, None, FLOWS),
    ]
    result = _result(timeline, bandwidth)
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert [s["label"] for s in data["timeline"]] == ["start", "fail", "end"]
    assert data["timeline"][1]["failed_drives"] == 1 and data["timeline"][1]["event"] is True
    assert data["timeline"][2]["mean_write_loss"] is None
    assert data["bandwidth"][1] == {
        "phase": "p",
        "start_s": 2.0,
        "end_s": 9.0,
        "bytes_B": 700.0,
        "bandwidth_Bps": 100.0,
        "iops": None,
        "source": FLOWS,
    }
    frame = result.timeline_dataframe()
    assert len(frame) == 3
    assert list(frame.columns) == ["time_s", "label", "event", *TIMELINE_STATE_COLUMNS]
    assert frame["failed_drives"].tolist() == [0, 1, 0]
    bw = result.bandwidth_dataframe()
    assert len(bw) == 2 and bw["bandwidth_Bps"].tolist() == [80.0, 100.0]
    empty = _result([], [])
    assert empty.to_dict()["timeline"] == [] and empty.to_dict()["bandwidth"] == []
    assert len(empty.timeline_dataframe()) == 0
    assert list(empty.bandwidth_dataframe().columns) == list(bw.columns)
    # The phase table's DataFrame is as before.
    assert len(result.to_dataframe()) == 1


def test_text_summary_only_when_the_state_changed_or_events_ran() -> None:
    plain = _result([], [])
    unchanged = _result([_sample(0.0, "start"), _sample(3.0, "p: end"), _sample(9.0, "end")], [])
    assert format_timeline(plain) == "" and format_timeline(unchanged) == ""
    assert format_run_text(unchanged) == format_run_text(plain)
    changed = _result(
        [
            _sample(0.0, "start"),
            _sample(5.0, "fail-drive ost3", True, failed_drives=1, degraded_targets=[3]),
            _sample(9.0, "p: end", failed_drives=1, degraded_targets=[3]),
            _sample(10.0, "end", mean_write_amplification=1.6, max_write_amplification=2.1),
        ],
        [],
    )
    text = format_run_text(changed)
    assert text.startswith(format_run_text(plain))
    block = format_timeline(changed).splitlines()
    assert block[0].startswith("timeline")
    assert len(block) == 4  # start, the event, end: phase marks are not listed
    assert "start" in block[1] and "WA mean 1.00" in block[1]
    assert "5 s" in block[2] and "fail-drive ost3" in block[2]
    assert "1 drive(s) down in 1 target(s), 0 rebuilding" in block[2]
    assert "10 s" in block[3] and "WA mean 1.60 (max 2.10)" in block[3]


def test_text_summary_lists_at_most_its_events() -> None:
    events = [_sample(float(i), f"trim {i}", True) for i in range(1, LISTED_EVENTS + 6)]
    end = _sample(100.0, "end")
    block = format_timeline(_result([_sample(0.0, "start"), *events, end], [])).splitlines()
    assert len(block) == 1 + 1 + LISTED_EVENTS + 1 + 1
    assert "+5 more events" in block[-2] and "end" in block[-1]


def test_when_picks_a_unit() -> None:
    assert when(0.0) == "0 s" and when(90.0) == "90 s"
    assert when(7200.0) == "2.00 h" and when(7 * 86400.0) == "7.00 d"
    assert when(300.0) == "5.00 min"


# ------------------------------------------------------------------ a real system
def test_recorders_on_a_real_lustre_system() -> None:
    """An IOR write on Perlmutter, built by hand: the series' bytes are the phase's, its mean
    bandwidth the phase's, and the state sampled from the built system all along."""
    from flashsim.workloads.ior import IorPhase

    loaded = load_system_model(ROOT / "models/systems/perlmutter.toml")
    sim = Simulation(1)
    system = loaded.kind.build(loaded.model, sim, "flow")
    state = StateRecorder(sim, system.status)
    state.start()
    phase = IorPhase.model_validate(
        {
            "name": "w",
            "workload": "ior",
            "operation": "write",
            "nodes": 4,
            "transfer_size": "64 MiB",
            "block_size": "64 GiB",  # 2.7 s at the 4 client NICs' 100 GB/s
            "fsync": True,
        }
    )
    state.mark("w: start")
    bw = BandwidthRecorder(sim, "w")
    bw.start()
    result = system.run_phase(phase)
    samples = bw.finish(result)
    state.mark("w: end")
    timeline = state.finish()
    assert samples and {s.source for s in samples} == {FLOWS}
    moved = sum(s.bytes_B for s in samples)
    assert moved == pytest.approx(result.bytes_B, rel=1e-9)
    span = samples[-1].end_s - samples[0].start_s
    assert span == pytest.approx(sim.now)
    assert max(s.bandwidth_Bps for s in samples) >= moved / span
    assert [s.label for s in timeline if s.label] == ["start", "w: start", "w: end", "end"]
    assert any(not s.label for s in timeline)  # periodic samples while the phase ran
    assert all(s.state["targets"] == system.target_count() for s in timeline)
    run = RunResult("x", "perlmutter", 1, "flow", 0.0, [result], timeline, samples)
    json.dumps(run.to_dict(), allow_nan=False)


# ------------------------------------------------------------------ as the runner drives it
def _run_like_the_runner(path: Path, event_at: float | None = None) -> tuple[RunResult, RunResult]:
    """Run a scenario's phases in order as ``scenario.run_loaded`` does, with a RunTimeline;
    return the result with the series and the same result without them."""
    from flashsim.scenario import load_scenario

    loaded = load_scenario(path)
    sim = Simulation(loaded.spec.seed)
    built = loaded.system.kind.build(loaded.system.model, sim, loaded.spec.fidelity)
    recorders = RunTimeline(sim, built.status)
    recorders.start()
    if event_at is not None:
        _at(sim, event_at, lambda: recorders.event("trim all"))
    phases = []
    for phase in loaded.phases:
        start_s = sim.now
        start_state = recorders.phase_start(phase.name)
        result = built.run_phase(phase)
        result = dataclasses.replace(result, start_s=start_s, start_state=start_state)
        recorders.phase_end(phase.name, result)
        phases.append(result)
    timeline, bandwidth = recorders.finish()
    run = RunResult(loaded.spec.name, "demo", 1, "flow", 0.0, phases, timeline, bandwidth)
    return run, dataclasses.replace(run, timeline=[], bandwidth=[])


def test_run_timeline_as_the_runner_drives_it() -> None:
    run, bare = _run_like_the_runner(ROOT / "scenarios/examples/pipeline-streams.toml")
    names = [p.name for p in run.phases]
    assert names == ["bandwidth", "iops"]
    labels = [s.label for s in run.timeline if s.label]
    assert labels == [
        "start",
        "bandwidth: start",
        "bandwidth: end",
        "iops: start",
        "iops: end",
        "end",
    ]
    assert run.phases[0].start_state == run.timeline[1].state
    for p in run.phases:
        own = [b for b in run.bandwidth if b.phase == p.name]
        assert own and own[0].start_s == p.start_s
        assert sum(b.bytes_B for b in own) == pytest.approx(p.bytes_B, rel=1e-9)
    # Nothing changed and no event: the text is as it was without the series.
    assert format_run_text(run) == format_run_text(bare)
    json.dumps(run.to_dict(), allow_nan=False)


def test_an_event_puts_the_timeline_in_the_text() -> None:
    run, bare = _run_like_the_runner(
        ROOT / "scenarios/examples/pipeline-streams.toml", event_at=0.5
    )
    (event,) = [s for s in run.timeline if s.event]
    assert (event.time_s, event.label) == (0.5, "trim all")
    text = format_run_text(run)
    assert text.startswith(format_run_text(bare))
    tail = text.split("timeline (simulated time; the system's state):\n")[1].splitlines()
    assert [line.split()[2] for line in tail] == ["start", "trim", "end"]


def test_run_timeline_refuses_a_phase_started_twice() -> None:
    sim = Simulation(0)
    recorders = RunTimeline(sim, FakeSystem(sim).status)
    recorders.start()
    recorders.phase_start("p")
    with pytest.raises(ValueError, match="'p' started twice"):
        recorders.phase_start("p")
    timeline, bandwidth = recorders.finish()  # a run stopped mid-phase
    assert bandwidth == [] and timeline[-1].label == "end"
