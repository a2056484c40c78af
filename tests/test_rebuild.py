"""Degraded arrays and rebuild (components.rebuild, raid_target hooks, systems.lustre.rebuild)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flashsim.components.drive import load_drive
from flashsim.components.failures import failure_rate_per_s
from flashsim.components.pcie import PcieLink
from flashsim.components.raid import RaidSpec
from flashsim.components.raid_target import RaidTarget, build_target
from flashsim.components.rebuild import (
    ArrayGeometry,
    DegradedState,
    RebuildFlows,
    RebuildPolicy,
    check_priority,
    rebuild_time_s,
    rebuild_traffic,
)
from flashsim.config import ConfigError
from flashsim.engine.randomness import RandomStreams
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.scenario import load_scenario, run_loaded
from flashsim.systems.lustre.degraded import DegradedSurveyDetails
from flashsim.systems.lustre.rebuild import RebuildDetails
from tests.lustre_scenario import write_scenario

ROOT = Path(__file__).resolve().parent.parent
PM1733 = ROOT / "models/drives/samsung-pm1733-15.36TB.toml"
QLC = ROOT / "models/drives/intel-d5-p4326-15.36tb.toml"
MODEL = ROOT / "models/systems/perlmutter.toml"
GRIDRAID = RaidSpec(level="raid6", data=8, parity=2, spares=1, chunk="128 KiB")


def _target(sim: Simulation, raid: RaidSpec = GRIDRAID, drives: int = 12) -> RaidTarget:
    drive = load_drive(PM1733)
    return build_target(
        sim,
        "t",
        drive,
        drives,
        raid,
        raid_threads=1,
        stack_eff={"read": 1.0, "write": 1.0},
        drive_link=PcieLink(generation=4, lanes=2),
    )


def _run_rebuild(target: RaidTarget, sim: Simulation, failed: list[int], volume: float) -> float:
    geom = ArrayGeometry.of_raid(target.raid_spec, target.n_drives)
    path, alone = target.rebuild_path(rebuild_traffic(geom, failed))
    policy = RebuildPolicy.model_validate({"priority": 1.0})
    rebuild = RebuildFlows(sim.flows, "t.rebuild", path, volume, alone, policy, geom.chunk_B)
    sim.run(rebuild.done)
    return rebuild.end_s - rebuild.start_s


# ........................................................ rebuild time
def test_declustered_rebuild_time_matches_the_formula_in_flow_fidelity() -> None:
    """used * (k / read + 1 / write) / (n - 1): 8 reads and 1 write over 11 survivors."""
    sim = Simulation(seed=1)
    target = _target(sim)
    used = 4e11
    took = _run_rebuild(target, sim, [3], used)
    drive = target.drive
    read, write = drive.bandwidth_Bps("read"), drive.bandwidth_Bps("write")
    expected = used * (8 / read + 1 / write) / 11
    assert took == pytest.approx(expected, rel=1e-9)
    geom = ArrayGeometry.of_raid(GRIDRAID, 12)
    assert rebuild_time_s(geom, [3], used, read, write) == pytest.approx(expected, rel=1e-12)
    # Half the drive time doubles it.
    assert rebuild_time_s(geom, [3], used, read, write, 0.5) == pytest.approx(2 * expected)


def test_mirror_resync_is_bounded_by_one_drive() -> None:
    raid = RaidSpec(level="raid10", mirrors=2, chunk="128 KiB", declustered=False)
    sim = Simulation(seed=1)
    target = _target(sim, raid)
    used = 1e11
    took = _run_rebuild(target, sim, [4], used)
    read, write = target.drive.bandwidth_Bps("read"), target.drive.bandwidth_Bps("write")
    assert took == pytest.approx(max(used / read, used / write), rel=1e-9)
    traffic = rebuild_traffic(ArrayGeometry.of_raid(raid, 12), [4])
    assert traffic.read_per_B[5] == 1.0 and traffic.write_per_B[4] == 1.0
    assert traffic.read_per_B.sum() == 1.0


def test_erasure_coded_rebuild_spreads_over_every_survivor() -> None:
    """VAST-like 36+4 over 44 QLC drives (seed 002): 36 reads + 1 write per byte over 43."""
    geom = ArrayGeometry.erasure(36, 4, 44, chunk_B=1 << 20)
    traffic = rebuild_traffic(geom, [0])
    assert traffic.read_per_B[0] == 0.0 and traffic.write_per_B[0] == 0.0
    assert np.allclose(traffic.read_per_B[1:], 36 / 43)
    assert np.allclose(traffic.write_per_B[1:], 1 / 43)
    qlc = load_drive(QLC)
    used = float(qlc.capacity)
    t = rebuild_time_s(geom, [0], used, qlc.bandwidth_Bps("read"), qlc.bandwidth_Bps("write"))
    assert t == pytest.approx(used * (36 / 3.2e9 + 1 / 1.0e9) / 43)
    assert 4000 < t < 4800  # about 1.2 h for a full 15.36 TB QLC drive on idle drives
    assert not geom.data_lost([0, 1, 2, 3]) and geom.data_lost([0, 1, 2, 3, 4])


# ........................................................ degraded reads
def _degraded_read_counts(fidelity: str, reads: int = 8000) -> float:
    """Drive reads per 4 KiB user read with one of 12 drives lost (nothing rebuilt)."""
    sim = Simulation(seed=7)
    target = _target(sim)
    geom = ArrayGeometry.of_raid(GRIDRAID, 12)
    target.degraded = DegradedState(geom, [5])
    cost = target.cost("read", 4096.0, sequential=False)
    if fidelity == "flow":
        size = 4096.0 * reads
        flow = sim.flows.start_flow(size, target.path(cost), op_size_B=4096.0)
        sim.run(flow.done)
        moved = sum(sim.flows.bytes_moved(link) for link in target.link_up)
        return moved / size
    env = sim.env

    def one() -> Any:
        yield from target.visit(env, cost)

    for _ in range(reads):
        env.process(one())
    sim.run()
    return sum(len(q._arrivals) for q in target.q_xfer) / reads


def test_degraded_read_costs_k_chunk_reads_per_lost_chunk_in_both_fidelities() -> None:
    k, q = 8, 1 / 12
    expected = 1 - q + q * k  # a lost chunk's read becomes k reads of survivors
    flow = _degraded_read_counts("flow")
    request = _degraded_read_counts("request")
    assert flow == pytest.approx(expected, rel=1e-9)
    # Request fidelity draws which reads are lost: 8000 reads, sd of the mean 0.022.
    assert request == pytest.approx(expected, abs=0.08)
    assert (request - 1) / q == pytest.approx(k - 1, abs=1.0)


def test_degraded_array_skips_the_failed_drive_and_pays_decode_time() -> None:
    sim = Simulation(seed=1)
    target = _target(sim)
    healthy = target.cost("read", 4096.0, sequential=False)
    target.degraded = DegradedState(ArrayGeometry.of_raid(GRIDRAID, 12), [2], decode_Bps=2e10)
    degraded = target.cost("read", 4096.0, sequential=False)
    assert degraded.raid_s == pytest.approx(8 * 4096 / 12 / 2e10)
    assert healthy.raid_s == 0.0
    names = {res.name for res, _ in target.path(degraded)}
    assert not any(name.startswith("t.drive2.") for name in names)
    # A full-stripe read reads the parity chunk instead of the lost one: same count.
    big = target.cost("read", 4 * 2**20, sequential=True)
    assert big.stages[0].mean_count == big.stages[0].count
    # Half rebuilt: half the chunks are lost.
    target.degraded.rebuilt_fraction = 0.5
    assert target.degraded.lost == pytest.approx(1 / 24)


def test_mirror_reads_go_to_the_partner() -> None:
    raid = RaidSpec(level="raid10", mirrors=2, chunk="128 KiB", declustered=False)
    state = DegradedState(ArrayGeometry.of_raid(raid, 12), [6])
    shares = state.shares("read")
    assert shares[6] == 0.0 and shares[7] == pytest.approx(2 / 12)
    assert shares.sum() == pytest.approx(1.0)
    assert state.mean_factor("read", spread=False) == 1.0  # one read, on the partner
    assert state.mean_factor("write", spread=False) == pytest.approx(11 / 12)  # skipped


# ...................................................... policy and phases
def _phase(body: str, overrides: dict[str, str] | None = None, tmp: Path | None = None) -> Any:
    assert tmp is not None
    path = write_scenario(tmp, f"[[phases]]\n{body}", oss_count=None)
    return run_loaded(load_scenario(path, overrides or {})).phases[0]


REBUILD = """
name = "r"
workload = "rebuild"
operation = "write"
ost = 0
threads = 64
fill = 0.01
window = "2 s"
"""


def _details(result: PhaseResult) -> RebuildDetails:
    return result.details(RebuildDetails)


def test_priority_trades_foreground_bandwidth_for_rebuild_time(tmp_path: Path) -> None:
    runs = [
        _details(_phase(REBUILD + f"priority = {p}\n", tmp=tmp_path)) for p in (0.1, 0.3, 0.6, 0.9)
    ]
    fg = [r.foreground_during_Bps for r in runs]
    took = [r.rebuild_time_s for r in runs]
    assert all(a > b for a, b in itertools.pairwise(fg)), fg
    assert all(a > b for a, b in itertools.pairwise(took)), took
    for p, r in zip((0.1, 0.3, 0.6, 0.9), runs, strict=True):
        # Under full load the rebuild gets exactly its guaranteed share of the drives ...
        assert r.rebuild_time_s == pytest.approx(r.rebuild_alone_s / p, rel=1e-6)
        # ... and the foreground the rest of 11 drives' time.
        expected = r.foreground_before_Bps * 11 / 12 * (1 - p)
        assert r.foreground_during_Bps == pytest.approx(expected, rel=1e-3)
        assert r.foreground_after_Bps == pytest.approx(r.foreground_before_Bps)
        assert not r.data_lost


def test_a_late_failure_times_only_the_degraded_period(tmp_path: Path) -> None:
    """Healthy time before the failure counts neither in the rebuild time nor the bandwidth."""
    now = _details(_phase(REBUILD + 'failures = [{ drive = 0, at = "0 s" }]\n', tmp=tmp_path))
    late = _details(_phase(REBUILD + 'failures = [{ drive = 0, at = "60 s" }]\n', tmp=tmp_path))
    assert late.rebuild_time_s == pytest.approx(now.rebuild_time_s, rel=1e-6)
    assert late.foreground_during_Bps == pytest.approx(now.foreground_during_Bps, rel=1e-6)
    assert late.rebuild_rate_Bps == pytest.approx(now.rebuild_rate_Bps, rel=1e-6)


def test_idle_array_rebuilds_at_full_speed(tmp_path: Path) -> None:
    r = _details(_phase(REBUILD.replace("threads = 64", "threads = 0"), tmp=tmp_path))
    assert r.rebuild_time_s == pytest.approx(r.rebuild_alone_s, rel=1e-9)


@pytest.mark.parametrize(
    ("failures", "lost"),
    [
        ('[{ drive = 0, at = "0 s" }, { drive = 5, at = "5 s" }]', False),
        (
            '[{ drive = 0, at = "0 s" }, { drive = 5, at = "5 s" }, { drive = 9, at = "10 s" }]',
            True,
        ),
        # The third failure comes after the first two are rebuilt (~36 s): nothing lost.
        (
            '[{ drive = 0, at = "0 s" }, { drive = 5, at = "5 s" }, { drive = 9, at = "600 s" }]',
            False,
        ),
    ],
)
def test_data_lost_iff_failures_exceed_parity_before_rebuild_ends(
    tmp_path: Path, failures: str, lost: bool
) -> None:
    body = REBUILD.replace("threads = 64", "threads = 0") + f"failures = {failures}\n"
    r = _details(_phase(body, tmp=tmp_path))
    assert r.data_lost is lost
    if lost:
        assert r.lost_at_s == pytest.approx(10.0)
    else:
        assert r.rebuild_time_s > 0


def test_array_geometry_data_loss_rules() -> None:
    decl = ArrayGeometry.of_raid(GRIDRAID, 12)
    assert not decl.data_lost([0, 11]) and decl.data_lost([0, 5, 11])
    mirror = ArrayGeometry.of_raid(
        RaidSpec(level="raid10", mirrors=2, chunk="128 KiB", declustered=False), 12
    )
    assert not mirror.data_lost([0, 2, 4, 6, 8, 10])  # one of each pair
    assert mirror.data_lost([2, 3])  # both copies
    grouped = ArrayGeometry("grouped", 20, 8, 2)
    assert not grouped.data_lost([0, 1, 10, 11]) and grouped.data_lost([0, 1, 2])


# ............................................................ bad input
def test_bad_inputs_give_clear_errors(tmp_path: Path) -> None:
    geom = ArrayGeometry.of_raid(GRIDRAID, 12)
    with pytest.raises(ValueError, match=r"index\(=12\) is outside the array's drives 0..11"):
        DegradedState(geom, [12])
    with pytest.raises(ValueError, match="outside"):
        rebuild_traffic(geom, [-1])
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match=r"priority\(=.*\) must be in \(0, 1\]"):
            check_priority(bad)
    with pytest.raises(ValueError, match="priority"):
        RebuildPolicy.model_validate({"priority": 0.0})
    with pytest.raises(ConfigError, match=r"failures\.0\.drive.*outside the OST's drives 0..11"):
        _phase(REBUILD + 'failures = [{ drive = 12, at = "0 s" }]\n', tmp=tmp_path)
    with pytest.raises(ConfigError, match="priority"):
        _phase(REBUILD + "priority = 1.5\n", tmp=tmp_path)
    with pytest.raises(ConfigError, match=r"afrs\.0"):
        _phase('name = "d"\nworkload = "data-loss"\nafrs = [-0.01]\n', tmp=tmp_path)


def test_failures_drawn_from_an_afr_use_each_drives_own_stream(tmp_path: Path) -> None:
    body = REBUILD.replace("threads = 64", "threads = 0") + 'afr = 0.9\nhorizon = "100 days"\n'
    r = _details(_phase(body, tmp=tmp_path))
    streams = RandomStreams(1)
    lam = failure_rate_per_s(0.9)
    drawn = [
        streams.stream(f"perlmutter.oss0.ost0.drive{i}.failure").exponential(1 / lam)
        for i in range(12)
    ]
    expected = [i for i in np.argsort(drawn) if drawn[i] < 100 * 86400.0]
    assert r.failed_drives == [int(i) for i in expected]
    assert 2 <= len(expected) <= 10  # P(fail within 100 days) = 47 % per drive
    assert not r.data_lost  # each rebuild (154 GB, ~36 s) ends long before the next failure


SURVEY = """
name = "{name}"
workload = "degraded-survey"
operation = "{op}"
access = "sequential"
record_size = "1 MiB"
queue_depth = 16
osts = 20
degraded_fraction = 0.1
duration = "5 s"
"""


def test_degraded_survey_slows_only_the_rebuilding_osts(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    phases = "".join(
        "\n[[phases]]" + SURVEY.format(name=f"d-{op}", op=op) for op in ("write", "read")
    )
    path.write_text(f'name = "t"\nsystem = "{MODEL.as_posix()}"\nseed = 1\n{phases}')
    results = run_loaded(load_scenario(path, {})).phases
    sets = []
    for result in results:
        d = result.details(DegradedSurveyDetails)
        sets.append(d.degraded_osts)
        assert len(d.degraded_osts) == 2
        assert d.degraded_ost_median_Bps < d.healthy_ost_median_Bps
        per = np.array(d.per_ost_Bps)
        slow = per[d.degraded_osts]
        assert np.all(
            per[np.setdiff1d(np.arange(20), d.degraded_osts)] == pytest.approx(d.healthy_Bps / 20)
        )
        assert d.ratio == pytest.approx((18 + slow.sum() / (d.healthy_Bps / 20)) / 20)
        assert 0.9 < d.ratio < 1.0 and 0 < d.rebuild_progress < 0.01
        # The rebuild holds 30 % of the 11 survivors' time: a degraded OST keeps 0.7 x 11/12.
        assert slow == pytest.approx(d.healthy_Bps / 20 * 0.7 * 11 / 12, rel=1e-3)
    assert sets[0] == sets[1]  # the same OSTs are degraded in every phase of a run


# ............................................ the studies drive the target's life
def _write(tmp: Path, body: str) -> Path:
    return write_scenario(tmp, body, oss_count=None)


def _run(body: str, tmp: Path) -> Any:
    return run_loaded(load_scenario(_write(tmp, body), {}))


def test_a_rebuild_study_fails_the_drive_through_the_targets_life(tmp_path: Path) -> None:
    """Issue 17: the OST's own life degrades it and rebuilds, so the run's timeline sees it."""
    run = _run("[[phases]]" + REBUILD.replace("threads = 64", "threads = 0"), tmp_path)
    r = run.phases[0].details(RebuildDetails)
    rebuilding = [s for s in run.timeline if s.state["rebuilding_targets"] == [0]]
    assert rebuilding, "the life never published the study's rebuild"
    # The life's own progress, published while the study runs; healthy after it.
    assert all(s.time_s - run.phases[0].start_s <= r.rebuild_time_s + 2.0 for s in rebuilding)
    assert run.timeline[-1].state["degraded_targets"] == []


def test_a_rebuild_study_uses_its_policy_and_gives_the_targets_back(tmp_path: Path) -> None:
    """The study's priority and fill hold while it runs; the life's own afterwards."""
    loaded = load_scenario(_write(tmp_path, "[[phases]]" + REBUILD + "priority = 0.9\n"), {})
    system = loaded.system.kind.build(loaded.system.model, Simulation(1), "request")
    life = system.target(0)
    policy, fill = life.policy, life.rebuild_fill
    r = system.run_phase(loaded.phases[0]).details(RebuildDetails)
    assert r.rebuild_time_s == pytest.approx(r.rebuild_alone_s / 0.9, rel=1e-6)
    assert (life.policy, life.rebuild_fill, life.fidelity) == (policy, fill, "request")
    assert not life.status().degraded


def test_a_degraded_survey_rebuilds_through_the_targets_lives(tmp_path: Path) -> None:
    run = _run("[[phases]]" + SURVEY.format(name="d", op="write"), tmp_path)
    d = run.phases[0].details(DegradedSurveyDetails)
    seen = {tuple(s.state["rebuilding_targets"]) for s in run.timeline}
    assert tuple(d.degraded_osts) in seen
    assert run.timeline[-1].state["degraded_targets"] == []
