"""``workload = "production"``: the fast-forward of days of production (workloads.production)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flashsim.components.failures import failure_times
from flashsim.components.target_state import drive_failure_times
from flashsim.config import ConfigError
from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_scenario, run_loaded
from flashsim.systems.lustre.aging import ost_capacity_B
from flashsim.systems.lustre.cost import op_cost
from flashsim.workloads.production import DAY_S, ProductionDetails
from tests.lustre_scenario import ROOT, write_scenario


def _scenario(tmp_path: Path, phases: str, oss: int = 2) -> Path:
    return write_scenario(tmp_path, phases, oss_count=oss)


def _build(tmp_path: Path, phases: str, oss: int = 2) -> tuple[Any, list[Any]]:
    loaded = load_scenario(_scenario(tmp_path, phases, oss))
    built = loaded.system.kind.build(loaded.system.model, Simulation(1), "flow")
    return built, loaded.phases


PRODUCTION = """
[[phases]]
name = "prod"
workload = "production"
days = DAYS
daily_volume = "VOLUME"
"""


def _production(days: int, volume: str, extra: str = "") -> str:
    return PRODUCTION.replace("DAYS", str(days)).replace("VOLUME", volume) + extra


def test_fast_forward_and_a_detailed_run_reach_the_same_drive_state(tmp_path: Path) -> None:
    """Issue 17: the fluid fast-forward and flows writing the same bytes agree within 2 %."""
    days = 20  # 50 TB a day on each 135 TB OST: past the ~5-capacity onset
    fast, (phase,) = _build(tmp_path, _production(days, "100 TB"))
    n = fast.target_count()
    fast.run_phase(phase)
    fast_wa = [life.status().write_amplification for _, life in fast.built_targets()]

    slow, _ = _build(tmp_path, _production(days, "100 TB"))
    per_target = phase.daily_volume / n
    record = 4 * 2**20
    for _ in range(4 * days):  # four jobs a day, each writing a quarter of the day's bytes
        flows = []
        for i in range(n):
            _, ost = slow.ost(i)
            cost = op_cost(slow.model, ost, "write", record, sequential=True)
            path = ost.path(cost.target)
            flows.append(slow.sim.flows.start_flow(per_target / 4, path, op_size_B=record))
        slow.sim.run(slow.sim.env.all_of([f.done for f in flows]))
        slow.account_wear()  # the job's bytes, as the flows moved them
    slow_wa = [life.status().write_amplification for _, life in slow.built_targets()]
    assert len(slow_wa) == len(fast_wa) == n
    assert max(fast_wa) > 1.2, "the days reach the aging knee"
    for a, b in zip(fast_wa, slow_wa, strict=True):
        assert a == pytest.approx(b, rel=0.02)
    written = [life.status().host_written_B for _, life in slow.built_targets()]
    expected = days * per_target * 10 / 8 / 12  # RAID6 8+2 over 12 drives
    assert written == pytest.approx([expected] * n, rel=1e-6)


def test_production_ages_every_target_and_the_state_stays(tmp_path: Path) -> None:
    body = _production(60, "100 TB")
    result = run_loaded(load_scenario(_scenario(tmp_path, body))).phases[0]
    d = result.details(ProductionDetails)
    assert d.targets == 2 and len(d.write_amplification) == 60
    capacity_days = ost_capacity_B_of(tmp_path) / d.per_target_daily_B
    # The loss sets in after about five OST capacities (seed 000 Fig. 8), about 13.5 days here.
    onset = next(day for day, loss in enumerate(d.write_loss, 1) if loss >= 0.01)
    assert onset == pytest.approx(5 * capacity_days, rel=0.15)
    assert d.write_loss[-1] > 0.08
    assert d.failures == [] and sum(d.trims) == 0
    assert result.sim_time_s == 60 * DAY_S
    assert any("write amplification" in line for line in d.findings())
    assert set(d.columns()) >= {"days", "WA end", "loss end", "TRIMs", "failures"}


def ost_capacity_B_of(tmp_path: Path) -> float:
    system, _ = _build(tmp_path, _production(1, "1 TB"))
    return ost_capacity_B(system)


def test_a_weekly_trim_keeps_the_drives_young(tmp_path: Path) -> None:
    system, (never,) = _build(tmp_path, _production(40, "100 TB"))
    aged = system.run_phase(never).details(ProductionDetails)
    system, (weekly,) = _build(tmp_path, _production(40, "100 TB", 'trim_every = "7 days"\n'))
    trimmed = weekly_details = system.run_phase(weekly).details(ProductionDetails)
    assert sum(trimmed.trims) == 2 * 5  # days 7, 14, ..., 35 on both OSTs
    assert 0 < weekly_details.trim_duration_s < DAY_S
    assert max(trimmed.write_loss) < 0.01 < aged.write_loss[-1]
    assert trimmed.write_amplification[-1] < aged.write_amplification[-1]


def test_failures_are_drawn_per_drive_and_rebuild_on_the_clock(tmp_path: Path) -> None:
    # An AFR of 90 % over 60 days fails a few of the 24 drives; each rebuilds in hours.
    body = _production(60, "10 TB", "afr = 0.9\nfill = 0.05\n")
    system, (phase,) = _build(tmp_path, body)
    d = system.run_phase(phase).details(ProductionDetails)
    expected = sorted(
        (t, i, k)
        for i in range(2)
        for k, t in enumerate(
            failure_times(
                lambda k, i=i: Simulation(1).rng(f"{system.target(i).name}.drive{k}.failure"),
                12,
                0.9,
            )
        )
        if t < 60 * DAY_S
    )
    assert len(d.failures) == len(expected) >= 2
    for (t, i, k), (u, j, m) in zip(d.failures, expected, strict=True):
        assert (i, k) == (j, m) and t == pytest.approx(u)
    assert len(d.rebuild_windows) == len(d.failures)
    for w in d.rebuild_windows:
        assert 0 < w.end_s - w.start_s < DAY_S
    assert system.status().failed_drives == 0
    assert any("drive failure" in line for line in d.findings())


def test_the_targets_draw_failures_as_the_failures_component_does() -> None:
    def rng_of(i: int) -> np.random.Generator:
        return Simulation(3).rng(f"x.drive{i}.failure")

    ours = drive_failure_times(Simulation(3), "x", 5, 0.0044)
    theirs = failure_times(rng_of, 5, 0.0044)
    assert ours == pytest.approx(list(theirs), rel=1e-12)
    assert drive_failure_times(Simulation(3), "x", 2, 0.0) == [math.inf, math.inf]


def test_bad_production_keys_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="trim_every"):
        load_scenario(_scenario(tmp_path, _production(10, "1 PB", 'trim_every = "1 h"\n')))
    with pytest.raises(ConfigError, match="afr"):
        load_scenario(_scenario(tmp_path, _production(10, "1 PB", "afr = 1.5\n")))
    with pytest.raises(ConfigError, match="days"):
        load_scenario(_scenario(tmp_path, _production(0, "1 PB")))


def test_identical_targets_share_one_aged_state_exactly(tmp_path: Path) -> None:
    """The memo (one representative per group of identical arrays) changes no number."""
    body = _production(30, "100 TB", 'trim_every = "9 days"\n')
    shared, (phase,) = _build(tmp_path, body)
    alone, _ = _build(tmp_path, body)
    for i in range(alone.target_count()):
        alone.target(i).memo = None
    a = shared.run_phase(phase).details(ProductionDetails)
    b = alone.run_phase(phase).details(ProductionDetails)
    assert a.write_amplification == b.write_amplification
    assert a.write_loss == b.write_loss
    # A target whose history differs (one more write) leaves the group and ages on its own.
    shared.target(0).age(1e12)
    alone.target(0).age(1e12)
    shared.target(0).age(5e13)
    shared.target(1).age(5e13)
    alone.target(0).age(5e13)
    alone.target(1).age(5e13)
    for i in (0, 1):
        assert shared.target(i).status() == alone.target(i).status()
    assert shared.target(0).status() != shared.target(1).status()


def test_production_runs_on_hdd_targets_but_refuses_their_trim(tmp_path: Path) -> None:
    spider = (ROOT / "models" / "systems" / "spider.toml").as_posix()
    path = tmp_path / "spider.toml"
    head = f'name = "t"\nsystem = "{spider}"\nseed = 1\nfidelity = "flow"\n'
    path.write_text(head + _production(3, "100 TB", "afr = 0.5\n"))
    d = run_loaded(load_scenario(path)).phases[0].details(ProductionDetails)
    assert d.write_amplification == [1.0, 1.0, 1.0]  # HDDs: no garbage collection
    path.write_text(head + _production(3, "100 TB", 'trim_every = "1 day"\n'))
    expected = "phases.0.trim_every' = '1 day': the OSTs' drives do not age"
    with pytest.raises(ConfigError, match=re.escape(expected)):
        load_scenario(path)


def test_targets_with_diverged_histories_fast_forward_in_plain_float_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 17 deliverable 8: once checkpoint probes wrote different bytes to each OST the
    memo no longer shares states, and every target steps its own fluid model; Perlmutter's
    (two units per block) then takes the unrolled float steps, never the array form, and a
    healthy target's status is computed once per change of its drives' state."""
    from flashsim.components.ftl_fluid import FluidFtl
    from flashsim.components.target_life import TargetLife

    def refuse(*_args: object) -> None:
        raise AssertionError("a Perlmutter fluid step left the unrolled loop")

    monkeypatch.setattr(FluidFtl, "_advance", refuse)
    monkeypatch.setattr(FluidFtl, "_thin", refuse)
    computed = 0
    compute = TargetLife._compute_status

    def counting(self: TargetLife) -> Any:
        nonlocal computed
        computed += 1
        return compute(self)

    monkeypatch.setattr(TargetLife, "_compute_status", counting)
    system, (phase,) = _build(tmp_path, _production(20, "200 TB"), oss=4)  # 50 TB/OST/day
    lives = [system.target(i) for i in range(system.target_count())]
    for i, life in enumerate(lives):  # a probe's files: a different byte count on each OST
        aging = life.aging
        assert aging is not None
        aging.record(1e9 * (i + 1))
    d = system.run_phase(phase).details(ProductionDetails)
    assert max(d.max_write_amplification) > 1.2, "the days reach the aging knee"
    flash = [life.aging.model.flash_written_B for life in lives if life.aging is not None]
    assert len(set(flash)) == len(lives), "every history is its own (no shared state)"
    # One status per target and day (the phase's daily summary), none for repeated asks.
    assert computed <= len(lives) * (20 + 2)
    before = computed
    for _ in range(10):
        system.status()
    # Repeated asks compute nothing (the bound above alone holds with up to 2 spare per target).
    assert computed == before
