"""SSD aging of Lustre OSTs (seed 000 §V-B): Fig. 8 in both fidelities, TRIM, production months."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flashsim.components.drive import load_drive
from flashsim.components.drive_aging import DriveAging
from flashsim.components.ssd import SsdSpec
from flashsim.config import ConfigError
from flashsim.scenario import LoadedScenario, load_scenario, run_loaded
from flashsim.systems.lustre.aging import OstAgingDetails
from flashsim.systems.lustre.production import ProductionAgingDetails
from tests.lustre_scenario import write_scenario

ROOT = Path(__file__).resolve().parent.parent
AGING = ROOT / "scenarios" / "perlmutter" / "aging.toml"
TRIM = ROOT / "scenarios" / "perlmutter" / "trim-policy.toml"
PM1733 = ROOT / "models" / "drives" / "samsung-pm1733-15.36TB.toml"


def only(loaded: LoadedScenario, *names: str) -> LoadedScenario:
    """The scenario with only the named phases."""
    loaded.phases = [p for p in loaded.phases if p.name in names]
    # What the runner runs: the kept phases, one after the other in file order.
    kept = [t for t in loaded.timed if t.name in names]
    loaded.timed = [replace(t, index=i) for i, t in enumerate(kept)]
    return loaded


def fig8(overrides: dict[str, str] | None = None, drive: dict[str, Any] | None = None) -> Any:
    """The ``fig8`` phase's details, with scenario overrides and datasheet changes."""
    loaded = only(load_scenario(AGING, overrides or {}), "fig8")
    if drive:
        model = loaded.system.model
        oss = model.oss.model_copy(update={"drive": model.oss.drive.model_copy(update=drive)})
        loaded.system.model = model.model_copy(update={"oss": oss})
    return run_loaded(loaded).phases[0].details(OstAgingDetails)


@dataclass
class StubModel:
    """An aging model whose write amplification the test sets."""

    wa: float
    valid_fraction: float = 0.5
    host_written_B: float = 0.0
    flash_written_B: float = 0.0

    def write(self, host_B: float) -> None:
        self.host_written_B += host_B

    def trim_dead(self) -> None:
        self.wa = 1.0

    def write_amplification(self) -> float:
        return self.wa


def test_garbage_collection_costs_host_writes_only_beyond_the_nand_headroom() -> None:
    drive = load_drive(PM1733)
    assert isinstance(drive, SsdSpec)
    headroom = 3.8 / 3.2  # PM1733: NAND program rate behind the host write rate
    aging = DriveAging(drive=drive, model=StubModel(1.15), logical_B=1e12)
    assert aging.write_time_scale() == 1.0
    aging.model = StubModel(1.32)
    assert aging.write_time_scale() == pytest.approx(1.32 / headroom)
    aging.model = StubModel(1.32, valid_fraction=0.9)
    aging.fill = 0.25
    assert aging.dead_B() == pytest.approx(0.65e12)


def test_fig8_loses_about_ten_percent_quickly_and_trim_restores_it() -> None:
    d = fig8()
    x = np.array(d.written_capacities)
    rel = np.array(d.relative_write_bw)
    assert rel[x < 4.0].min() == 1.0, "no loss long before the onset"
    assert 0.08 < d.loss < 0.12
    assert 4.5 < d.onset_capacities < 5.5
    assert d.transition_capacities < 1.0
    assert d.recovered is not None and d.recovered >= 0.99
    assert d.trim_duration_s is not None and 3600 < d.trim_duration_s < 24 * 3600
    # After the TRIM at 10 OST writes the drives are like new: the next onset comes as late,
    # less the cold data written once at the start (it stays, and is not trimmed).
    cold = load_scenario(AGING).system.model.oss.aging.cold_fraction
    after = (x > 10.0) & (rel < 0.99)
    assert after.any()
    assert x[after][0] - 10.0 == pytest.approx(d.onset_capacities - cold, abs=0.1)


def test_flow_and_request_fidelity_age_alike() -> None:
    """Fluid FTL + flows against the page-mapped micro-model + queues, point by point."""
    over = {"phases.fig8.written": "8", "phases.fig8.steps": "32", "phases.fig8.trim_at": "7"}
    loaded = only(load_scenario(AGING, over), "fig8", "fig8-request")
    flow, request = (p.details(OstAgingDetails) for p in run_loaded(loaded).phases)
    assert flow.written_capacities == request.written_capacities[: len(flow.written_capacities)]
    assert request.onset_capacities == pytest.approx(flow.onset_capacities, abs=0.3)
    assert request.loss == pytest.approx(flow.loss, abs=0.025)
    for x, a, b in zip(
        flow.written_capacities, flow.relative_write_bw, request.relative_write_bw, strict=False
    ):
        if abs(x - flow.onset_capacities) > 0.3 and x <= 7.0:
            assert b == pytest.approx(a, rel=0.05), x


def test_more_spare_flash_ages_less_and_no_headroom_ages_more() -> None:
    base = fig8({"phases.fig8.trim_at": "15", "phases.fig8.steps": "80"})
    roomy = fig8(
        {"phases.fig8.trim_at": "15", "phases.fig8.steps": "80"}, {"overprovisioning": 0.3}
    )
    tight = fig8(
        {"phases.fig8.trim_at": "15", "phases.fig8.steps": "80"},
        {"flash_write_bandwidth": 3.2e9},
    )
    assert roomy.loss < base.loss - 0.03
    assert tight.loss > base.loss + 0.05
    assert tight.onset_capacities < base.onset_capacities


def production(names: tuple[str, ...], **sets: str) -> list[ProductionAgingDetails]:
    over = {f"phases.{n}.{k}": v for n in names for k, v in sets.items()}
    loaded = only(load_scenario(TRIM, over), *names)
    return [p.details(ProductionAgingDetails) for p in run_loaded(loaded).phases]


def test_onset_day_falls_as_the_daily_volume_rises() -> None:
    slow, fast = production(("no-trim", "weekly-trim"), osts="2", days="110")
    assert 75 <= slow.onset_day <= 90
    assert math.isnan(fast.onset_day), "weekly TRIM never lets the drives age"
    loaded = only(
        load_scenario(
            TRIM,
            {
                "phases.no-trim.osts": "2",
                "phases.no-trim.days": "110",
                "phases.no-trim.daily_volume": "2.9 PB",
            },
        ),
        "no-trim",
    )
    heavy = run_loaded(loaded).phases[0].details(ProductionAgingDetails)
    # Same watermark, reached 2.9 / 2.2 times sooner (to a day).
    assert heavy.onset_day == pytest.approx(slow.onset_day * 2.2 / 2.9, abs=1.5)


def test_trim_policies_trade_trim_time_against_aging() -> None:
    none, monthly, weekly = production(
        ("no-trim", "monthly-trim", "weekly-trim"), osts="2", days="120"
    )
    assert none.trims == 0 and monthly.trims == 2 * 3 and weekly.trims == 2 * 17
    assert monthly.mean_relative_write_bw > none.mean_relative_write_bw + 0.02
    # A TRIM costs write capability while it runs: the days with one dip below 1.
    dips = [r for r, h in zip(monthly.relative_write_bw, monthly.trim_hours, strict=True) if h]
    assert dips and max(dips) < 1.0
    assert sum(weekly.trim_hours) < sum(monthly.trim_hours) * 1.5
    assert weekly.trim_duration_h < monthly.trim_duration_h
    # NAND wear: aged drives write more flash per host byte.
    assert none.flash_dwpd > monthly.flash_dwpd
    assert none.rated_dwpd == 1.0


def test_a_drive_datasheet_key_can_be_set_from_the_command_line() -> None:
    """`--set system.oss.drive.KEY` edits a copy of the drive file the model names."""
    loaded = load_scenario(AGING, {"system.oss.drive.overprovisioning": "0.3"})
    assert loaded.system.model.oss.drive.overprovisioning == 0.3
    assert loaded.system.model.mds.drive.overprovisioning == pytest.approx(0.1453)


def test_describe_names_the_aged_loss_the_simulation_reaches() -> None:
    """`describe`'s closed-form steady state (greedy mean field) against the fluid run."""
    loaded = load_scenario(AGING)
    derived = loaded.system.kind.describe(loaded.system.model).derived
    simulated = fig8()
    assert derived["aged_write_loss"] == pytest.approx(simulated.loss, abs=0.005)
    plateau = [
        wa
        for x, wa in zip(simulated.written_capacities, simulated.write_amplification, strict=True)
        if 7.5 <= x <= 10.0  # settled, before the TRIM
    ]
    assert derived["aged_write_amplification"] == pytest.approx(np.mean(plateau), rel=0.01)


def test_an_aging_phase_leaves_its_drives_aged_for_the_next_phase(tmp_path: Path) -> None:
    """Issue 17: the study starts from fresh drives and its aged state carries over."""
    scenario = tmp_path / "s.toml"
    model = (ROOT / "models" / "systems" / "perlmutter.toml").as_posix()
    survey = 'workload = "obdfilter-survey"\noperation = "write"\nost = 0\n'
    scenario.write_text(
        f'name = "t"\nsystem = "{model}"\nseed = 1\nfidelity = "flow"\n\n'
        f'[[phases]]\nname = "before"\n{survey}\n'
        '[[phases]]\nname = "age"\nworkload = "ost-aging"\nost = 0\nwritten = 8\nsteps = 16\n\n'
        f'[[phases]]\nname = "after"\n{survey}'
    )
    before, aged, after = run_loaded(load_scenario(scenario)).phases
    d = aged.details(OstAgingDetails)
    assert d.loss > 0.05
    assert after.bandwidth_Bps < before.bandwidth_Bps * (1 - 0.05)
    # The phases' own measurement writes (a few seconds at the survey's rate) also age the
    # drives once accounted at the phase's end, a little beyond the study's last point.
    assert after.bandwidth_Bps == pytest.approx(
        before.bandwidth_Bps * d.relative_write_bw[-1], rel=5e-3
    )


def test_recovery_is_measured_after_the_trim_not_assumed() -> None:
    """`recovered` averages the measurements of the OST write after the TRIM."""
    d = fig8({"phases.fig8.trim_at": "10", "phases.fig8.written": "11.5"})
    x = np.array(d.written_capacities)
    rel = np.array(d.relative_write_bw)
    trimmed = x[x >= 10.0][0]  # the TRIM runs after the first measurement past trim_at
    window = rel[(x > trimmed) & (x <= trimmed + 1.0)]
    assert len(window) >= 10
    assert d.recovered == pytest.approx(float(np.mean(window)))
    assert d.recovered >= 0.99


def _scenario(tmp_path: Path, phases: str) -> Path:
    return write_scenario(tmp_path, phases, oss_count=None)


def test_the_fig8_trim_runs_on_the_clock_as_the_osts_own_load(tmp_path: Path) -> None:
    """Issue 17: the TRIM is the OST life's (a load on the drives), not the phase's arithmetic."""
    study = (
        '[[phases]]\nname = "age"\nworkload = "ost-aging"\nost = 0\nwritten = 8\nsteps = 16\n'
        "trim_at = 6\n"
    )
    run = run_loaded(load_scenario(_scenario(tmp_path, study)))
    result = run.phases[0]
    d = result.details(OstAgingDetails)
    assert d.trim_duration_s is not None and d.trim_duration_s > 3600
    # Sixteen 1 s measurements and the TRIM's hours, all on the simulation clock.
    assert result.sim_time_s == pytest.approx(d.trim_duration_s + 17.0, rel=1e-9)
    assert d.recovered is not None and d.recovered >= 0.99


def test_production_aging_runs_its_days_and_trims_on_the_clock(tmp_path: Path) -> None:
    """The next phase starts when the study's days are over; the TRIMs were the lives' own."""
    body = (
        '[[phases]]\nname = "months"\nworkload = "production-aging"\ndays = 40\nosts = 2\n'
        'daily_volume = "2.2 PB"\ntrim_every = "30 days"\n\n'
        '[[phases]]\nname = "after"\nworkload = "obdfilter-survey"\noperation = "write"\nost = 0\n'
    )
    run = run_loaded(load_scenario(_scenario(tmp_path, body)))
    months, after = run.phases
    d = months.details(ProductionAgingDetails)
    assert after.start_s >= 40 * 86_400.0
    assert d.trims == 2
    day = next(i for i, h in enumerate(d.trim_hours) if h)
    assert day == 30
    # The TRIM of each OST: its dead bytes at its drives' deallocate rate (the capability's
    # writers are hypothetical and load nothing), as the day's hours say.
    assert d.trim_hours[day] == pytest.approx(d.trim_duration_h, rel=1e-9)
    assert 0.1 < d.trim_duration_h < 24.0  # hours, not days (seed 000 §V-B)


def test_production_aging_refuses_a_trim_rate_it_cannot_apply(tmp_path: Path) -> None:
    body = (
        '[[phases]]\nname = "m"\nworkload = "production-aging"\ndays = 2\n'
        'daily_volume = "2.2 PB"\ntrim_rate = "1 GB/s"\n'
    )
    with pytest.raises(ConfigError, match=r"trim_rate.*a TRIM is the OST's own load"):
        load_scenario(_scenario(tmp_path, body))
