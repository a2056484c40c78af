"""Issue 17's compositions through scenario files: events and timing keys on real Lustre targets.

Each test writes a small scenario (Perlmutter with one OSS: one 12-drive RAID6 OST) and runs it
the way ``flashsim run`` does, so the timeline, the targets' state and the workloads meet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flashsim.config import ConfigError
from flashsim.scenario import load_scenario, run_loaded
from flashsim.workloads.production import ProductionDetails
from tests.lustre_scenario import ROOT, write_scenario

#: An IOR write that keeps the one OST busy for ~10 s of simulated time.
IOR = """
[[phases]]
name = "NAME"
workload = "ior"
operation = "write"
nodes = 8
ranks_per_node = 4
transfer_size = "4 MiB"
block_size = "8 GiB"
layout = { stripe_count = 1, first_target = 0 }
"""

#: 60 days at 50 TB/day on the one OST: past the aging onset (~5 OST capacities).
PRODUCTION = """
[[phases]]
name = "prod"
workload = "production"
days = 60
daily_volume = "50 TB"
"""


def _ior(name: str, extra: str = "") -> str:
    return IOR.replace("NAME", name) + extra


def _run(tmp_path: Path, body: str) -> Any:
    return run_loaded(load_scenario(write_scenario(tmp_path, body)))


def test_a_drive_failure_event_during_an_ior_phase_slows_it(tmp_path: Path) -> None:
    healthy = _run(tmp_path, _ior("write")).phases[0]
    fail = '[[events]]\nat = "1 s"\naction = "fail-drive"\ntarget = 0\ndrive = 3\n'
    result = _run(tmp_path, _ior("write") + fail)
    degraded = result.phases[0]
    # The rebuild (30 % of the drives' time guaranteed) shares the drives with the write.
    assert degraded.bandwidth_Bps < 0.9 * healthy.bandwidth_Bps
    # The event is on the run's timeline, with the drive down from then on.
    marks = {s.label: s for s in result.timeline}
    assert marks["events.0: fail-drive"].state["failed_drives"] == 1
    assert marks["events.0: fail-drive"].time_s == pytest.approx(1.0)
    # The target says so itself (any failure, a production phase's drawn ones too), and when
    # its rebuild ends.
    assert marks["perlmutter.oss0.ost0: drive 3 failed"].event
    rebuilt = [s for s in result.timeline if s.label == "perlmutter.oss0.ost0: rebuilt"]
    assert len(rebuilt) <= 1 and all(s.state["failed_drives"] == 0 for s in rebuilt)


def test_a_rebuild_under_a_checkpoint_ends_later_than_on_idle_drives(tmp_path: Path) -> None:
    """The same failure, once with IOR writes running and once on idle drives (a probe later).

    The rebuild reconstructs a whole 15.36 TB drive; the phase after it sees the target healthy
    again only once the rebuild is done, so the time the drive was down is read from the
    state the timeline sampled.
    """
    fail = '[[events]]\nat = "0 s"\naction = "fail-drive"\ntarget = 0\ndrive = 3\n'
    idle_probe = _ior("probe", '\nstart = "3 h"\n')

    def down_s(result: Any) -> float:
        samples = [(s.time_s, s.state["failed_drives"]) for s in result.timeline]
        up = [t for t, down in samples if t > 0 and down == 0]
        assert up, "the rebuild never finished within the run"
        return min(up)

    idle = _run(tmp_path, idle_probe + fail)
    loaded = _run(
        tmp_path, _ior("load", '\nrepeat = { count = 40, every = "1 s" }\n') + idle_probe + fail
    )
    assert down_s(loaded) > down_s(idle)


def test_a_trim_event_restores_the_write_bandwidth(tmp_path: Path) -> None:
    trim = '[[events]]\nrelative_to = "prod"\nedge = "end"\naction = "trim"\ntargets = "all"\n'
    # The TRIM takes each drive's dead bytes over its TRIM rate (hours): the write after it
    # starts once it is done.
    body = _ior("fresh") + PRODUCTION + _ior("aged") + _ior("trimmed", '\nstart = "70 days"\n')
    fresh, prod, aged, trimmed = _run(tmp_path, body + trim).phases
    loss = prod.details(ProductionDetails).write_loss[-1]
    assert loss > 0.05
    assert aged.bandwidth_Bps < (1 - 0.5 * loss) * fresh.bandwidth_Bps
    assert trimmed.bandwidth_Bps == pytest.approx(fresh.bandwidth_Bps, rel=2e-3)


def test_reset_on_a_phase_gives_fresh_drives(tmp_path: Path) -> None:
    fresh, _prod, aged, reset = _run(
        tmp_path, _ior("fresh") + PRODUCTION + _ior("aged") + _ior("reset", "\nreset = true\n")
    ).phases
    assert aged.bandwidth_Bps < 0.95 * fresh.bandwidth_Bps
    assert reset.bandwidth_Bps == pytest.approx(fresh.bandwidth_Bps, rel=1e-9)
    assert reset.start_state is not None and reset.start_state["mean_write_amplification"] == 1.0
    assert aged.start_state is not None and aged.start_state["mean_write_amplification"] > 1.1


def test_the_fast_forward_example_tells_its_story() -> None:
    """The fast-forward example: fresh, aged past the onset, TRIMmed, aged again."""
    result = run_loaded(load_scenario(ROOT / "scenarios/examples/timeline-fast-forward.toml"))
    probe = {p.name: p.bandwidth_Bps for p in result.phases if p.name.startswith("probe@")}
    assert len(probe) == 12
    prod = next(p for p in result.phases if p.name == "production")
    loss = prod.details(ProductionDetails).write_loss
    # Day 5 (250 TB written, under the ~665 TB onset) is fresh; by day 15 the drives lost the
    # plateau's ~10 %, and the probe with them.
    assert loss[4] < 0.01 and loss[14] > 0.05
    assert probe["probe@15d"] == pytest.approx(probe["probe@5d"] * (1 - loss[14]), rel=5e-3)
    # The TRIM on day 100 gives the space back: day 105 writes as fresh; by day 115 aged again.
    assert probe["probe@105d"] == pytest.approx(probe["probe@5d"], rel=1e-3)
    assert probe["probe@115d"] < 0.95 * probe["probe@5d"]
    labels = [s.label for s in result.timeline]
    assert "events.0: fail-drive" in labels and "events.1: trim" in labels
    # The fast-forward simulates no transfer: it has no bandwidth series (the probes' bytes
    # moving meanwhile are theirs), and it says how it ran.
    assert prod.fidelity == "fast-forward"
    series = {s.phase for s in result.bandwidth}
    assert "production" not in series and "probe@5d" in series


def test_a_caller_may_run_some_phases_alone(tmp_path: Path) -> None:
    """``dataclasses.replace(loaded, phases=[...])`` runs just those (notebooks, benchmarks)."""
    import dataclasses

    path = write_scenario(
        tmp_path,
        _ior("first") + _ior("second", '\nafter = "first"\n') + _ior("late", '\nstart = "1 h"\n'),
    )
    loaded = load_scenario(path)
    alone = [p for p in loaded.phases if p.name in ("second", "late")]
    result = run_loaded(dataclasses.replace(loaded, phases=alone))
    assert [p.name for p in result.phases] == ["second", "late"]
    assert result.phases[0].start_s == 0.0
    assert result.phases[1].start_s == pytest.approx(3600.0)


def test_overlapping_ior_jobs_on_their_own_nodes_share_only_the_storage(tmp_path: Path) -> None:
    """``first_node`` gives two jobs at once their own client nodes (and NICs)."""
    one = _ior("one")
    two = _ior("two", '\nstart = "0 s"\nfirst_node = 8\n')
    shared = _ior("two", '\nstart = "0 s"\n')
    apart = {p.name: p for p in _run(tmp_path, one + two).phases}
    same = {p.name: p for p in _run(tmp_path, one + shared).phases}
    # Both are bound by the one OST's drives either way; on the same nodes they also queue
    # behind each other's client NICs, never faster than on their own.
    assert apart["one"].bandwidth_Bps >= same["one"].bandwidth_Bps * (1 - 1e-9)
    assert apart["two"].start_s == 0.0
    loaded = load_scenario(tmp_path / "s.toml")
    second = next(p for p in loaded.phases if p.name == "two")
    assert [second.node_of(r) for r in (0, 3, 4, 31)] == [0, 0, 1, 7]
    (tmp_path / "s.toml").write_text(
        (tmp_path / "s.toml").read_text() + _ior("far", "\nfirst_node = 100000\n")
    )
    with pytest.raises(ConfigError, match="first_node"):
        load_scenario(tmp_path / "s.toml")
    moved = load_scenario(tmp_path / "s.toml", {"phases.far.first_node": "8"})
    far = next(p for p in moved.phases if p.name == "far")
    assert [far.node_of(r) for r in (0, 31)] == [8, 15]
