"""Issue 17: the state a phase leaves is the state the next phase finds (Lustre targets)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_scenario, run_loaded
from flashsim.systems.lustre.aging import OstAgingDetails
from flashsim.systems.lustre.production import ProductionAgingDetails
from flashsim.workloads.production import ProductionDetails
from tests.lustre_scenario import write_scenario

IOR = """
[[phases]]
name = "NAME"
workload = "ior"
operation = "write"
nodes = 8
ranks_per_node = 4
transfer_size = "4 MiB"
block_size = "4 GiB"
layout = { stripe_count = 1, first_target = 0 }
"""


def _ior(name: str) -> str:
    return IOR.replace("NAME", name)


def _run(tmp_path: Path, phases: str) -> list[Any]:
    return run_loaded(load_scenario(write_scenario(tmp_path, phases))).phases


def test_an_ior_after_ost_aging_writes_at_the_aged_rate(tmp_path: Path) -> None:
    aging = '[[phases]]\nname = "age"\nworkload = "ost-aging"\nost = 0\nwritten = 8\nsteps = 16\n'
    fresh, aged, after = _run(tmp_path, _ior("fresh") + aging + _ior("after"))
    d = aged.details(OstAgingDetails)
    assert d.loss > 0.05
    # The IOR's own bytes age the drives a little further once accounted; the loss of the
    # study's last point holds to a few tenths of a per cent.
    assert after.bandwidth_Bps == pytest.approx(
        fresh.bandwidth_Bps * d.relative_write_bw[-1], rel=5e-3
    )


def test_an_ior_after_days_of_production_writes_at_the_aged_rate(tmp_path: Path) -> None:
    production = (
        '[[phases]]\nname = "prod"\nworkload = "production"\ndays = 60\ndaily_volume = "50 TB"\n'
    )
    fresh, prod, after = _run(tmp_path, _ior("fresh") + production + _ior("after"))
    loss = prod.details(ProductionDetails).write_loss[-1]
    assert loss > 0.05
    assert after.bandwidth_Bps == pytest.approx(fresh.bandwidth_Bps * (1 - loss), rel=5e-3)


def test_production_aging_leaves_its_osts_aged(tmp_path: Path) -> None:
    study = (
        '[[phases]]\nname = "months"\nworkload = "production-aging"\ndays = 60\n'
        'daily_volume = "50 TB"\n'
    )
    fresh, months, after = _run(tmp_path, _ior("fresh") + study + _ior("after"))
    d = months.details(ProductionAgingDetails)
    assert after.bandwidth_Bps < fresh.bandwidth_Bps * (1 - 0.05)
    assert after.bandwidth_Bps == pytest.approx(
        fresh.bandwidth_Bps * d.relative_write_bw[-1], rel=5e-3
    )


def test_a_study_starts_from_fresh_drives_whatever_ran_before(tmp_path: Path) -> None:
    """ost-aging is Fig. 8's experiment: it renews the OST it studies at its start."""
    aging = '[[phases]]\nname = "NAME"\nworkload = "ost-aging"\nost = 0\nwritten = 8\nsteps = 16\n'
    first, second = _run(tmp_path, aging.replace("NAME", "a") + aging.replace("NAME", "b"))
    a, b = first.details(OstAgingDetails), second.details(OstAgingDetails)
    assert b.relative_write_bw == pytest.approx(a.relative_write_bw, rel=1e-9)


def test_reset_state_gives_fresh_targets_to_the_next_phase(tmp_path: Path) -> None:
    loaded = load_scenario(write_scenario(tmp_path, _ior("w")))
    system = loaded.system.kind.build(loaded.system.model, Simulation(1), "flow")
    (ior,) = loaded.phases
    fresh = system.run_phase(ior).bandwidth_Bps
    system.target(0).age(1.5e15)
    system.target(0).rebuild_fill = 0.01
    system.target(0).fail_drive(2)
    assert system.status().degraded_targets == (0,)
    assert system.status().mean_write_loss > 0.05
    system.reset_state()
    status = system.status()
    assert status.degraded_targets == () and status.mean_write_amplification == 1.0
    assert system.run_phase(ior).bandwidth_Bps == pytest.approx(fresh, rel=1e-9)


def test_a_failed_drive_slows_the_next_ior_until_its_rebuild_ends(tmp_path: Path) -> None:
    loaded = load_scenario(write_scenario(tmp_path, _ior("w")))
    system = loaded.system.kind.build(loaded.system.model, Simulation(1), "flow")
    (ior,) = loaded.phases
    fresh = system.run_phase(ior).bandwidth_Bps
    life = system.target(0)
    life.fail_drive(7)  # a whole 15.36 TB drive: hours of rebuild, longer than the IOR
    degraded = system.run_phase(ior).bandwidth_Bps
    assert degraded < fresh * 0.9
    assert life.status().rebuild_progress is not None
    sim = system.sim
    sim.run(sim.now + 2 * 86_400.0)
    assert not life.status().degraded
    assert system.run_phase(ior).bandwidth_Bps == pytest.approx(fresh, rel=1e-6)


def test_a_rebuild_phase_leaves_a_healthy_target_its_life_agrees_with(tmp_path: Path) -> None:
    rebuild = (
        '[[phases]]\nname = "r"\nworkload = "rebuild"\noperation = "write"\nost = 0\n'
        'threads = 64\nfill = 0.01\nwindow = "2 s"\n'
    )
    loaded = load_scenario(write_scenario(tmp_path, rebuild))
    system = loaded.system.kind.build(loaded.system.model, Simulation(1), "flow")
    system.run_phase(loaded.phases[0])
    life = system.target(0)
    assert not life.status().degraded and life.status().rebuild_progress is None
    life.rebuild_fill = 0.01
    life.fail_drive(0)  # the life still works on the target the phase used
    assert life.status().failed_drives == (0,)


def test_a_rebuild_study_starts_from_a_healthy_target(tmp_path: Path) -> None:
    """A failure left by an earlier event does not run inside the study's own rebuild."""
    rebuild = (
        '[[phases]]\nname = "r"\nworkload = "rebuild"\noperation = "write"\nost = 0\n'
        'threads = 64\nfill = 0.01\nwindow = "2 s"\n'
    )
    loaded = load_scenario(write_scenario(tmp_path, rebuild))
    clean = loaded.system.kind.build(loaded.system.model, Simulation(1), "flow")
    expected = clean.run_phase(loaded.phases[0]).extra
    system = loaded.system.kind.build(loaded.system.model, Simulation(1), "flow")
    system.target(0).fail_drive(5)
    got = system.run_phase(loaded.phases[0]).extra
    assert got == expected
    assert not system.target(0).status().degraded
