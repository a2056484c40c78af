"""A Lustre OST's life over a run (components.target_life): aging, failures, rebuild, TRIM.

Issue 17: state lives in the components for the whole run, and changes to it (a
drive failure, a TRIM, days of writes) act on whatever runs next.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flashsim.components.target_life import TargetLife
from flashsim.components.target_state import StatefulTarget
from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_scenario
from flashsim.systems.lustre.aging import ost_capacity_B, request_write_rate_Bps
from flashsim.systems.lustre.rebuild import ForegroundLoad, alone_rebuild_s

ROOT = Path(__file__).resolve().parent.parent
MODEL = (ROOT / "models" / "systems" / "perlmutter.toml").as_posix()

#: One OSS (one OST of 12 PM1733s) of Perlmutter, and an IOR write on it that the drives bind.
SCENARIO = f"""
name = "t"
system = "{MODEL}"
seed = 1
fidelity = "FIDELITY"

[system_set]
"oss.count" = 1

[[phases]]
name = "w"
workload = "ior"
operation = "write"
nodes = 8
ranks_per_node = 4
transfer_size = "4 MiB"
block_size = "4 GiB"
layout = {{ stripe_count = 1, first_target = 0 }}
"""


def _system(tmp_path: Path, fidelity: str = "flow") -> tuple[Any, Any]:
    """A built one-OST system and its IOR write phase."""
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.replace("FIDELITY", fidelity))
    loaded = load_scenario(path)
    built = loaded.system.kind.build(loaded.system.model, Simulation(1), fidelity)
    return built, loaded.phases[0]


def test_lustre_osts_are_stateful_targets(tmp_path: Path) -> None:
    system, _ = _system(tmp_path)
    assert system.target_count() == 1
    assert system.built_targets() == []
    life = system.target(0)
    assert isinstance(life, TargetLife)
    assert isinstance(life, StatefulTarget)
    assert system.built_targets() == [(0, life)]
    assert life.status().write_amplification == 1.0
    with pytest.raises(ValueError, match="target: OST 1 does not exist"):
        system.target(1)


def test_aged_state_lowers_the_next_ior_write_by_the_aged_loss_and_reset_restores_it(
    tmp_path: Path,
) -> None:
    system, ior = _system(tmp_path)
    fresh = system.run_phase(ior).bandwidth_Bps
    life = system.target(0)
    life.age(8 * ost_capacity_B(system))  # well past the ~5-capacity onset (seed 000 Fig. 8)
    aged = life.status()
    assert aged.write_amplification > 1.25 and aged.write_loss > 0.05
    slow = system.run_phase(ior).bandwidth_Bps
    assert slow == pytest.approx(fresh * (1 - aged.write_loss), rel=1e-6)
    system.reset_state()
    assert system.status().mean_write_amplification == 1.0
    assert system.run_phase(ior).bandwidth_Bps == pytest.approx(fresh, rel=1e-9)


def test_ior_writes_age_the_drives_they_reach(tmp_path: Path) -> None:
    """Flow writes are accounted (account_wear) into the life's aging model."""
    system, ior = _system(tmp_path)
    system.run_phase(ior)
    written = system.target(0).status().host_written_B
    # 32 ranks x 4 GiB through RAID6 8+2 over 12 drives: 10/8/12 of it on each drive.
    assert written == pytest.approx(32 * 4 * 2**30 * 10 / 8 / 12, rel=1e-6)


def test_trim_restores_the_write_bandwidth(tmp_path: Path) -> None:
    system, ior = _system(tmp_path)
    fresh = system.run_phase(ior).bandwidth_Bps
    life = system.target(0)
    life.age(8 * ost_capacity_B(system))
    dead = life.status().dead_B
    assert dead > 0
    done = life.trim()
    system.sim.run(done)
    # Each drive deallocates its dead space at its TRIM rate, alone on idle drives.
    assert done.value == pytest.approx(dead / life.target.trim_bandwidth_Bps(), rel=1e-6)
    after = life.status()
    assert after.write_amplification == 1.0 and after.dead_B == 0.0
    assert system.run_phase(ior).bandwidth_Bps == pytest.approx(fresh, rel=1e-3)


def _rebuild_s(system: Any, life: TargetLife, limit_s: float) -> float:
    """Simulated seconds until ``life`` is healthy again (stepping at most ``limit_s``)."""
    sim = system.sim
    t0 = sim.now
    for _ in range(10_000):
        if not life.status().degraded:
            return sim.now - t0
        sim.run(sim.now + limit_s / 10_000)
    raise AssertionError("the rebuild did not end")


def test_a_failure_under_load_slows_it_and_rebuilds_later_than_on_idle_drives(
    tmp_path: Path,
) -> None:
    idle_system, _ = _system(tmp_path)
    idle = idle_system.target(0)
    idle.rebuild_fill = 0.01
    idle.fail_drive(3)
    assert idle.status().rebuild_progress == 0.0
    alone = alone_rebuild_s(idle_system, idle.target, [3], 0.01)
    idle_s = _rebuild_s(idle_system, idle, 10 * alone)
    # On idle drives the rebuild takes the whole drive time (idle_fraction = 1) ...
    assert idle_s == pytest.approx(alone, rel=0.02)
    assert idle.status().failed_drives == ()

    system, _ = _system(tmp_path)
    life = system.target(0)
    life.rebuild_fill = 0.01
    load = ForegroundLoad(system, 0, "write", 4 * 2**20, 64, True)
    load.start()
    before = load.measure(2.0)
    life.fail_drive(3)
    load.restart()  # flows started after the failure see the degraded costs
    moved, t0 = load.moved_now_B(), system.sim.now
    loaded_s = _rebuild_s(system, life, 10 * alone)
    during = (load.moved_now_B() - moved) / (system.sim.now - t0)
    load.stop()
    policy = system.model.oss.rebuild
    # ... and under full load its guaranteed share: alone / priority (to the poll's step).
    assert loaded_s == pytest.approx(alone / policy.priority, rel=0.02)
    assert loaded_s > 2 * idle_s
    assert during < before * (1 - policy.priority) * 1.01
    assert not life.status().degraded


def test_progress_is_published_and_failures_beyond_parity_lose_data(tmp_path: Path) -> None:
    system, _ = _system(tmp_path)
    life = system.target(0)
    life.rebuild_fill = 0.01
    life.fail_drive(0)
    alone = alone_rebuild_s(system, life.target, [0], 0.01)
    system.sim.run(system.sim.now + alone / 2)
    half = life.status().rebuild_progress
    assert half is not None and 0.3 < half < 0.7
    assert life.target.degraded is not None and life.target.degraded.rebuilt_fraction > 0.3
    life.fail_drive(5)
    life.fail_drive(9)  # RAID6: a third concurrent failure
    s = life.status()
    assert s.data_lost and s.failed_drives == (0, 5, 9)
    assert system.status().data_lost_targets == (0,)
    with pytest.raises(ValueError, match=r"drive: drive 5 .* is already down"):
        life.fail_drive(5)
    with pytest.raises(ValueError, match="drive: 12 is outside"):
        life.fail_drive(12)
    life.reset()
    assert not life.status().degraded and not life.status().data_lost


def test_a_replaced_drive_clears_its_failure(tmp_path: Path) -> None:
    system, _ = _system(tmp_path)
    life = system.target(0)
    life.rebuild_fill = 0.01
    life.fail_drive(1)
    life.fail_drive(2)
    life.replace_drive(1)
    assert life.status().failed_drives == (2,)
    life.replace_drive(2)
    assert not life.status().degraded and life.status().rebuild_progress is None


def test_request_fidelity_carries_aging_and_rebuilds_through_the_queues(tmp_path: Path) -> None:
    system, _ = _system(tmp_path, "request")
    life = system.target(0)
    ost = life.target
    rate = request_write_rate_Bps(system, ost, 4 * 2**20, 64, 0.05)
    life.age(8 * ost_capacity_B(system))
    loss = life.status().write_loss
    assert loss > 0.05
    aged = request_write_rate_Bps(system, ost, 4 * 2**20, 64, 0.05)
    assert aged == pytest.approx(rate * (1 - loss), rel=0.03)
    life.reset()
    assert request_write_rate_Bps(system, ost, 4 * 2**20, 64, 0.05) == pytest.approx(rate, rel=0.03)
    # A rebuild paced at its priority on idle drives: alone / priority.
    life.rebuild_fill = 0.001
    life.fail_drive(4)
    alone = alone_rebuild_s(system, ost, [4], 0.001)
    took = _rebuild_s(system, life, 10 * alone)
    assert took == pytest.approx(alone / system.model.oss.rebuild.priority, rel=0.05)


def test_a_healthy_status_is_kept_until_the_drives_state_changes(tmp_path: Path) -> None:
    """Timeline recorders ask every target's status many times a day: a healthy target's is
    computed once per change of its drives' state (write, TRIM, reset), and always current."""
    system, ior = _system(tmp_path)
    life = system.target(0)
    fresh = life.status()
    assert life.status() is fresh  # nothing changed: the same object, no work
    life.age(6 * ost_capacity_B(system))
    aged = life.status()
    assert aged is not fresh and aged.write_amplification > 1.0
    assert aged == life._compute_status() and life.status() is aged
    system.run_phase(ior)  # flow writes reach the model (account_wear)
    after_ior = life.status()
    assert after_ior.host_written_B > aged.host_written_B
    assert after_ior == life._compute_status()
    life.fail_drive(3)  # degraded: computed every time (the rebuild's progress moves)
    degraded = life.status()
    assert degraded.failed_drives == (3,) and degraded is not life.status()
    life.heal()
    assert life.status() == after_ior
    system.sim.run(life.trim())
    trimmed = life.status()
    assert trimmed.dead_B == 0.0 and trimmed == life._compute_status()
    life.reset()
    assert life.status() == fresh
