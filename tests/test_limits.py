"""What limited it, when: the flow network's limit ledger, per-part and per-window limiters,
study columns, fidelity named, and the IOR time the table and the IOR block agree on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flashsim.engine.flows import Flow
from flashsim.engine.simulation import Simulation
from flashsim.measure.limits import LimitRecorder
from flashsim.measure.report import format_run_ior_text, format_run_text
from flashsim.measure.results import IntervalLimit, PhaseResult, RunResult
from flashsim.scenario import load_scenario, run_loaded
from flashsim.systems.lustre.production import ProductionAgingDetails
from flashsim.systems.lustre.rebuild import RebuildDetails
from flashsim.workloads.ior import IorDetails, IorRepetition

DEMO = "scenarios/examples/pipeline-streams.toml"
WINDOW = "concurrency: window q*t/L"


@pytest.fixture
def root() -> Path:
    return Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ the ledger
def test_ledger_splits_bytes_between_a_bottleneck_and_a_cap() -> None:
    """A flow that moves at its cap, then at a bottleneck's share, is charged to each in turn."""
    sim = Simulation(0)
    net = sim.flows
    r = net.add_resource("t.r", capacity_Bps=100.0, kind="disk")
    # 0-2 s: alone at its 80 B/s cap (160 B); then a second flow makes r the bottleneck
    # (50 B/s each) until the first ends: 340 B more, at 8.8 s.
    net.start_flow(500.0, [(r, 1.0)], rate_cap_Bps=80.0, cap_label=WINDOW)

    def later() -> Any:
        yield sim.env.timeout(2.0)
        net.start_flow(1000.0, [(r, 1.0)])

    sim.env.process(later())
    sim.run(4.0)
    mid = net.limit_bytes()
    assert mid[WINDOW] == pytest.approx(160.0)
    con = r._con_bytes
    assert mid[con] == pytest.approx(200.0)  # 2 s x 100 B/s, both flows
    sim.run()
    done = net.limit_bytes()
    assert done[WINDOW] == pytest.approx(160.0)
    assert done[con] == pytest.approx(1500.0 - 160.0)
    assert sum(done.values()) == pytest.approx(1500.0)  # every byte charged once


def test_unlabelled_cap_is_a_rate_cap() -> None:
    sim = Simulation(0)
    net = sim.flows
    r = net.add_resource("t.r", capacity_Bps=100.0)
    net.start_flow(10.0, [(r, 1.0)], rate_cap_Bps=5.0)
    sim.run()
    assert net.limit_bytes() == pytest.approx({"rate cap": 10.0})


# ------------------------------------------------------------ interval limits
def test_composite_phase_reports_a_limiter_per_part() -> None:
    """Two parts, one bound by a resource and one by its own window: two limiters."""
    sim = Simulation(0)
    net = sim.flows
    disk = net.add_resource("t.disk", capacity_Bps=100.0, kind="disk")
    link = net.add_resource("t.link", capacity_Bps=1000.0, kind="link")
    recorder = LimitRecorder(sim)

    def phase() -> Any:
        sim.begin_part("load")
        yield net.start_flow(300.0, [(disk, 1.0)]).done  # 3 s at the disk's 100 B/s
        sim.begin_part("trickle")
        yield net.start_flow(40.0, [(link, 1.0)], rate_cap_Bps=20.0, cap_label=WINDOW).done

    sim.run(sim.env.process(phase()))
    intervals = recorder.finish()
    assert [(i.label, i.limiter, i.kind) for i in intervals] == [
        ("load", "t.disk", "disk"),
        ("trickle", WINDOW, "concurrency"),
    ]
    load, trickle = intervals
    assert (load.start_s, load.end_s) == pytest.approx((0.0, 3.0))
    assert (trickle.start_s, trickle.end_s) == pytest.approx((3.0, 5.0))
    assert load.utilization == pytest.approx(1.0)
    assert trickle.utilization is None
    assert load.share == pytest.approx(1.0) and trickle.share == pytest.approx(1.0)


def test_long_phase_reports_when_the_limit_changed() -> None:
    """Without parts, time windows find the resource-bound start and the cap-bound tail."""
    sim = Simulation(0)
    net = sim.flows
    disk = net.add_resource("t.disk", capacity_Bps=100.0, kind="disk")
    recorder = LimitRecorder(sim)
    # 0-~10.5 s: the disk is saturated (the big flow takes 95 B/s); then the small flow
    # trickles on alone at its 5 B/s cap until 30 s.
    net.start_flow(1000.0, [(disk, 1.0)])
    net.start_flow(150.0, [(disk, 1.0)], rate_cap_Bps=5.0, cap_label=WINDOW)
    sim.run()
    intervals = recorder.finish()
    assert [i.kind for i in intervals] == ["disk", "concurrency"]
    first, tail = intervals
    assert first.share == pytest.approx(1000.0 / (1000.0 + 5.0 * first.end_s), rel=1e-6)
    assert 10.0 < first.end_s <= 12.0  # found within a window of the change
    assert tail.end_s == pytest.approx(30.0)


def test_recorder_does_not_change_the_run() -> None:
    def run(record: bool) -> float:
        sim = Simulation(0)
        net = sim.flows
        r = net.add_resource("t.r", capacity_Bps=100.0)
        recorder = LimitRecorder(sim) if record else None
        flows = [net.start_flow(50.0 * (i + 1), [(r, 1.0)], rate_cap_Bps=30.0) for i in range(5)]
        sim.run()
        if recorder is not None:
            recorder.finish()
        return max(f.end_s for f in flows)

    assert run(True) == run(False)


def test_cap_bound_phase_names_its_cap_not_none(root: Path) -> None:
    """One stream at queue depth 1 saturates nothing: its window is named, in JSON and text."""
    loaded = load_scenario(
        root / DEMO, {"phases.bandwidth.streams": "1", "phases.bandwidth.queue_depth": "1"}
    )
    result = run_loaded(loaded)
    light = result.phases[0]
    assert light.bottlenecks == []
    assert [(i.limiter, i.kind) for i in light.intervals] == [
        ("concurrency: stream queue depth q*t/RTT", "concurrency")
    ]
    text = format_run_text(result)
    assert "none saturated; held by concurrency: stream queue depth q*t/RTT" in text
    assert "what limited it, when" in text
    record = result.to_dict()["phases"][0]["intervals"][0]
    assert set(record) == {"start_s", "end_s", "label", "limiter", "kind", "utilization", "share"}
    assert record["kind"] == "concurrency"
    frame = result.intervals_dataframe()
    assert list(frame["kind"])[: len(light.intervals)] == ["concurrency"]


def test_request_fidelity_below_saturation_is_a_closed_loop(root: Path) -> None:
    loaded = load_scenario(
        root / DEMO,
        {
            "fidelity": '"request"',
            "phases.bandwidth.streams": "1",
            "phases.bandwidth.queue_depth": "1",
        },
    )
    light = run_loaded(loaded).phases[0]
    assert light.fidelity == "request"
    assert [i.kind for i in light.intervals] == ["concurrency"]
    assert light.intervals[0].limiter.startswith("closed loop")


# ------------------------------------------------------------------ the table
def _phase(name: str, extra: Any, **kw: Any) -> PhaseResult:
    base: dict[str, Any] = {
        "name": name,
        "operation": "write",
        "bandwidth_Bps": 1e9,
        "iops": 1.8e6,
        "ranks": 0,
        "transfer_size_B": float("nan"),
        "sim_time_s": 15_552_000.0,
        "bytes_B": 0.0,
        "extra": extra,
        "fidelity": "flow",
    }
    base.update(kw)
    return PhaseResult(**base)


def test_study_phases_print_their_own_columns() -> None:
    aging = ProductionAgingDetails(
        fresh_bandwidth_Bps=2.5e12,
        written_capacities=[0.1, 0.2],
        write_amplification=[1.5, 2.25],
        relative_write_bw=[0.99, 0.9],
        trim_hours=[0.0, 1.0],
        onset_day=2.0,
        mean_relative_write_bw=0.945,
        min_relative_write_bw=0.9,
        trims=4,
        trim_duration_h=0.5,
        flash_dwpd=0.123,
    )
    rebuild = RebuildDetails(
        ost=0,
        priority=0.3,
        failed_drives=[1],
        rebuild_volume_B=3.2e12,
        rebuild_time_s=7200.0,
        rebuild_rate_Bps=4.4e8,
        rebuild_alone_s=3600.0,
        foreground_before_Bps=20e9,
        foreground_during_Bps=15e9,
        foreground_after_Bps=20e9,
        data_lost=False,
    )
    result = RunResult(
        "s",
        "p",
        1,
        "flow",
        0.0,
        [
            _phase("production-aging", aging, operation="production-aging"),
            _phase("rebuild-idle", rebuild, operation="rebuild", bandwidth_Bps=float("nan")),
        ],
    )
    text = format_run_text(result)
    table = text.split("\n\nfindings:")[0]
    for head in ("days", "WA end", "mean bw", "onset day", "NAND DWPD"):
        assert head in table
    for head in ("rebuild h", "alone h", "rebuild GB/s", "fg during GB/s", "data lost"):
        assert head in table
    # None of IOR's columns, nor the numbers that mean nothing for a study.
    for absent in ("sim s", "IOPS", "ranks", "15552000", "1800000", "nan"):
        assert absent not in table
    aging_row = next(line for line in table.splitlines() if line.startswith("production-aging"))
    assert aging_row.split()[2:5] == ["2", "2.25", "2.500"]
    assert aging_row.split()[-1] == "flow"
    rebuild_row = next(line for line in table.splitlines() if line.startswith("rebuild-idle"))
    assert rebuild_row.split()[4] == "2.00"  # rebuild h


def test_every_demo_phase_names_its_fidelity(root: Path) -> None:
    for fidelity in ("flow", "request"):
        loaded = load_scenario(root / DEMO, {"fidelity": f'"{fidelity}"'})
        result = run_loaded(loaded)
        assert [p.fidelity for p in result.phases] == [fidelity] * len(result.phases)
        assert all(p["fidelity"] == fidelity for p in result.to_dict()["phases"])
        assert f" {fidelity} " in format_run_text(result).splitlines()[3] + " "


def _ior_details(time_s: float, fidelity: str) -> IorDetails:
    return IorDetails(
        repetitions=[IorRepetition(1.18e8, 28797.2, time_s, 1.18e8 * time_s)],
        block_size_B=64 * 2**30,
        segments=1,
        file_per_process=True,
        tasks_per_node=8,
        nodes=8,
        stonewall_s=45.0,
        wear_out=False,
        fsync=False,
        direct_io=False,
        access="random",
        reorder_tasks=False,
        task_per_node_offset=1,
        fidelity=fidelity,
        bw_max_Bps=1.18e8,
        bw_min_Bps=1.18e8,
        t_max_s=time_s,
        b_max_B=1.0,
        simulated_s=0.349,
    )


def test_table_and_ior_block_give_one_time_for_request_fidelity_ior() -> None:
    """write-iops: a 0.349 s steady state applied to the 45 s -D window reads 45 s in both."""
    phase = PhaseResult(
        "write-iops",
        "write",
        1.18e8,
        28797.2,
        64,
        4096.0,
        0.349,
        1.18e8 * 45,
        ci_rel_halfwidth=0.0033,
        extra=_ior_details(45.0, "request"),
        fidelity="request",
    )
    result = RunResult("s", "p", 1, "flow", 0.0, [phase])
    text = format_run_text(result)
    header, row = text.splitlines()[2:4]
    end = header.index("time s") + len("time s")  # right-aligned, 9 wide
    assert row[end - 9 : end].strip() == "45.000"
    ior_text = format_run_ior_text(result).splitlines()
    ior_row = next(line for line in ior_text if line.startswith("write "))
    assert float(ior_row.split()[7]) == pytest.approx(45.0)  # total(s)
    assert "0.349 simulated s" in text


def test_interval_limit_is_plain_json() -> None:
    phase = _phase(
        "p",
        _ior_details(1.0, "flow"),
        intervals=[IntervalLimit(0.0, 1.0, "", "t.disk", "disk", 0.999, 1.0)],
    )
    assert phase.to_dict()["intervals"] == [
        {
            "start_s": 0.0,
            "end_s": 1.0,
            "label": "",
            "limiter": "t.disk",
            "kind": "disk",
            "utilization": 0.999,
            "share": 1.0,
        }
    ]


def test_ledger_charges_every_byte_once_through_rebuilds() -> None:
    """Random flows (caps, shared resources, segments, arrivals): each byte is charged once.

    The count of bytes is bounded (30 flows), not the time; the class structure changes
    (flows move between cap and bottleneck classes, rebuilds) many times over the run.
    """
    rng = np.random.default_rng(11)
    sim = Simulation(0)
    net = sim.flows
    res = [net.add_resource(f"t.r{i}", capacity_Bps=float(rng.uniform(50, 200))) for i in range(6)]
    seg = net.add_segment("t.stripe", [(res[i], 0.25) for i in range(4)])
    flows: list[Flow] = []

    def arrivals() -> Any:
        for k in range(30):
            yield sim.env.timeout(float(rng.exponential(0.5)))
            path: list[tuple[Any, float]] = [(res[int(rng.integers(6))], 1.0)]
            if k % 3 == 0:
                path.append((seg, 1.0))
            cap = float(rng.uniform(10, 120)) if k % 2 else None
            flows.append(
                net.start_flow(
                    float(rng.uniform(20, 400)), path, rate_cap_Bps=cap, cap_label=f"c: {k % 4}"
                )
            )

    sim.env.process(arrivals())
    sim.run(6.0)
    moved = sum(f.size_B - f.remaining_B for f in flows)
    assert sum(net.limit_bytes().values()) == pytest.approx(moved, rel=1e-9)
    sim.run()
    ledger = net.limit_bytes()
    assert sum(ledger.values()) == pytest.approx(sum(f.size_B for f in flows), rel=1e-9)
    assert {k for k in ledger if isinstance(k, str)} <= {f"c: {i}" for i in range(4)}
    assert any(isinstance(k, int) for k in ledger)


def test_jobs_phase_reports_the_jobs_running_together() -> None:
    """A jobs phase announces each entry's start and end: one part per set of running jobs."""
    from test_vast_jobs import ior_job, jobs_phase, system

    built = system("flow")
    phase = jobs_phase(
        ior_job("dump", "write", direct_io=True),
        ior_job(
            "lookup",
            "read",
            access="random",
            transfer_size="64 KiB",
            block_size="4 MiB",
            start="100 s",
        ),
        alone=False,
    )
    recorder = LimitRecorder(built.sim)
    built.run_phase(phase)
    intervals = recorder.finish()
    labels = [i.label for i in intervals]
    assert labels[0] == "dump" and labels[-1] == "lookup"
    assert "no job running" in labels
    idle = intervals[labels.index("no job running")]
    assert idle.kind == "idle" and idle.end_s == pytest.approx(100.0)
    # Four ranks saturate nothing: each part names the NFS client's window, not "none".
    assert {intervals[0].kind, intervals[-1].kind} == {"concurrency"}
    assert intervals[0].limiter == "concurrency: NFS RPCs in flight per call"


def test_ledger_counts_the_bytes_of_endless_flows() -> None:
    """A 1e30-byte flow (an endless background) is charged what it moved, not 1e30 - 1e30."""
    sim = Simulation(0)
    net = sim.flows
    r = net.add_resource("t.r", capacity_Bps=100.0)
    net.start_flow(1e30, [(r, 1.0)], rate_cap_Bps=10.0, cap_label="offered load: background")
    net.start_flow(1e30, [(r, 1.0)])
    sim.run(5.0)
    assert net.limit_bytes() == pytest.approx(
        {"offered load: background": 50.0, r._con_bytes: 450.0}
    )


def test_a_paced_workload_is_limited_by_its_offered_load() -> None:
    """Short transfers with long gaps: the disk they meet is idle most of the time."""
    sim = Simulation(0)
    net = sim.flows
    disk = net.add_resource("t.disk", capacity_Bps=100.0, kind="disk")
    recorder = LimitRecorder(sim)

    def paced() -> Any:
        for _ in range(4):
            yield net.start_flow(20.0, [(disk, 1.0)]).done  # 0.2 s at 100 B/s
            yield sim.env.timeout(5.0)

    sim.run(sim.env.process(paced()))
    intervals = recorder.finish()
    assert [i.kind for i in intervals] == ["offered load"]
    assert intervals[0].limiter.startswith("offered load: the workload's pace")
    assert intervals[0].utilization == pytest.approx(80.0 / 100.0 / 20.8)
