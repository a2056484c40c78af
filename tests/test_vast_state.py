"""Issue 17: a VAST system's SCM/QLC pool keeps its state for the whole run (vast_target)."""

from __future__ import annotations

import json
from collections.abc import Generator
from typing import Any

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from flashsim.components.target_state import StatefulTarget, SystemStatus
from flashsim.components.tier import BULK_STRIPES, ScmQlcTier, TierSpec
from flashsim.components.tier_life import PRODUCTION_OBJECT
from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_system_model, run_scenario
from flashsim.systems.vast.endurance import VastEndurancePhase
from flashsim.systems.vast.kind import VastSystem
from flashsim.systems.vast.rebuild import VastRebuildPhase
from flashsim.systems.vast.study_units import ior_phase as _ior
from flashsim.workloads.jobs import JobsPhase

MODEL = "models/systems/vast-pdsw21.toml"
GIB = 2**30
#: A small SCM buffer, so that a test's writes migrate to QLC.
SMALL_BUFFER = {"tier.write_buffer": "200 GB"}
#: Front end and DNode ports wide enough that reads of QLC data are bound by the 44 QLC
#: drives (140.8 GB/s), and drives holding little data (a rebuild of seconds).
DRIVE_BOUND = {
    "cnode.count": "16",
    "client.count": "16",
    "dnode.fabric_nic.ports": "8",
    "tier.drive_fill": "0.002",
}


def build(overrides: dict[str, str] | None = None) -> VastSystem:
    loaded = load_system_model(MODEL, overrides or {})
    system = loaded.kind.build(loaded.model, Simulation(0), "flow")
    assert isinstance(system, VastSystem)
    return system


def write(system: VastSystem, name: str, gib_per_rank: int, nodes: int = 8, ppn: int = 16) -> Any:
    """An O_DIRECT IOR write of ``nodes x ppn`` ranks of ``gib_per_rank`` GiB each."""
    return system.run_phase(
        _ior(
            name,
            "write",
            nodes,
            ppn,
            2**20,
            name,
            block_size_B=2**20,
            segments=1024 * gib_per_rank,
            direct_io=True,
        )
    )


def read(system: VastSystem, dataset: str, gib_per_rank: int, nodes: int = 8, ppn: int = 16) -> Any:
    return system.run_phase(
        _ior(
            f"{dataset}-read",
            "read",
            nodes,
            ppn,
            2**20,
            dataset,
            block_size_B=2**20,
            segments=1024 * gib_per_rank,
        )
    )


# ------------------------------------------------------------------ the one target
def test_the_pool_is_the_one_target_and_its_status_is_json() -> None:
    system = build()
    assert system.target_count() == 1
    pool = system.target(0)
    assert isinstance(pool, StatefulTarget)
    assert pool.name == "vast-pdsw21.tier"
    assert system.built_targets() == [(0, pool)]
    with pytest.raises(ValueError, match=r"^target: index 1"):
        system.target(1)
    fresh = system.status()
    assert fresh.targets == 1 and fresh.buffer_fill == 0.0 and fresh.failed_drives == 0
    write(system, "d", 1)
    pool.fail_drive(3)
    status = system.status()
    text = json.dumps(status.to_dict())
    back = json.loads(text)
    assert back["targets"] == 1 and back["degraded_targets"] == [0]
    assert back["rebuilding_targets"] == [0] and back["failed_drives"] == 1
    assert back["buffer_fill"] == pytest.approx(128 * GIB / 3e12, rel=1e-6)
    one = json.loads(json.dumps(pool.status().to_dict()))
    assert one["failed_drives"] == [3] and 0.0 <= one["rebuild_progress"] < 1.0
    line = status.summary()
    assert "1 drive(s) down in 1 target(s), 1 rebuilding" in line
    assert "SCM fill 4.6 %" in line and "WA mean 1.00" in line


# ------------------------------------------------------------------ state across phases
def test_scm_fill_and_qlc_wear_a_write_leaves_are_in_the_next_phase() -> None:
    system = build(SMALL_BUFFER)
    assert system.status().buffer_fill == 0.0
    write(system, "small", 1)  # 128 GiB: below the 180 GB hold level, all in SCM
    after = system.status()
    assert after.buffer_fill == pytest.approx(128 * GIB / 200e9, rel=1e-6)
    assert system.pool.status().host_written_B == 0.0  # nothing migrated yet
    # The next phase finds it: a read of it is served from SCM, and the status is unchanged.
    obj = system.object_name("small", 0)
    assert system.tier.location(obj) == pytest.approx((GIB, 0.0))
    read(system, "small", 1)
    assert system.status().buffer_fill == pytest.approx(after.buffer_fill, rel=1e-9)
    # A bigger write fills the buffer to its hold level and migrates the rest, wearing QLC.
    write(system, "big", 4)
    pool = system.pool.status()
    assert pool.buffer_fill == pytest.approx(0.9, rel=1e-4)
    migrated = system.tier.migrated_B
    assert migrated == pytest.approx((128 + 512) * GIB - 180e9, rel=1e-4)
    # Incompressible 36+4 stripes over 44 drives: 40/36 bytes per migrated byte, spread evenly.
    assert pool.host_written_B == pytest.approx(migrated * 40 / 36 / 44, rel=1e-3)
    assert system.tier.location(obj)[1] > 0  # the oldest data left SCM first


def test_the_write_amplification_of_qlc_is_one_and_trim_is_a_no_op() -> None:
    system = build(SMALL_BUFFER)
    write(system, "big", 4)
    status = system.pool.status()
    assert status.write_amplification == 1.0 and status.write_loss == 0.0
    event = system.pool.trim()
    assert isinstance(event, simpy.Event) and event.triggered and event.value == 0.0
    assert system.pool.status() == status


# ------------------------------------------------------------------ failures and rebuild
def fail_at(
    env: simpy.Environment, system: VastSystem, at_s: float, drive: int
) -> Generator[simpy.Event, Any, None]:
    yield env.timeout(at_s)
    system.pool.fail_drive(drive)


def aged_system() -> VastSystem:
    """1 TiB of data written and migrated to QLC (flushed), on a drive-bound system."""
    system = build(DRIVE_BOUND)
    write(system, "d", 8, nodes=16, ppn=8)
    system.sim.run(system.tier.buffer.flush())
    return system


def test_a_failure_during_a_read_slows_it_and_the_rebuild_ends_later_than_idle() -> None:
    healthy = aged_system()
    base = read(healthy, "d", 8, nodes=16, ppn=8)
    assert base.bandwidth_Bps == pytest.approx(44 * 3.2e9, rel=1e-3)  # the QLC drives bind

    loaded = aged_system()
    loaded.sim.env.process(fail_at(loaded.sim.env, loaded, 1.0, 0))
    degraded = read(loaded, "d", 8, nodes=16, ppn=8)
    assert degraded.bandwidth_Bps < 0.9 * base.bandwidth_Bps
    rebuild = loaded.pool.rebuild_of(0)
    assert rebuild is not None  # still running when the read ended
    loaded.sim.run(rebuild.done)
    under_load_s = rebuild.end_s - rebuild.start_s

    idle = aged_system()
    idle.pool.fail_drive(0)
    alone = idle.pool.rebuild_of(0)
    assert alone is not None
    idle.sim.run(alone.done)
    idle_s = alone.end_s - alone.start_s
    # 0.2 % of a 15.36 TB drive rebuilt from 36 survivors' reads, one write, over 43 drives.
    volume = 0.002 * 15.36e12
    assert idle_s == pytest.approx(volume * (36 / 3.2e9 + 1 / 1.0e9) / 43, rel=1e-6)
    assert under_load_s > 1.5 * idle_s
    # Rebuilt: the pool is healthy again; the drive stays out of service until replaced.
    for system in (loaded, idle):
        status = system.pool.status()
        assert status.failed_drives == () and status.rebuild_progress is None
        assert system.tier.qlc_out == {0}


def test_reads_started_after_a_failure_avoid_the_failed_drive() -> None:
    system = aged_system()
    system.pool.fail_drive(5)
    rebuild = system.pool.rebuild_of(5)
    assert rebuild is not None
    system.sim.run(rebuild.done)
    obj = system.object_name("d", 0)
    _, weights, _ = system.tier.read_weights(obj)
    assert weights[5] == 0.0
    # The lost strips are read from the survivors instead (one parity strip per lost strip).
    assert weights.sum() == pytest.approx(1.0, rel=1e-9)
    # 43 drives in service: a read after the rebuild gets 43 drives' bandwidth.
    after = read(system, "d", 8, nodes=16, ppn=8)
    assert after.bandwidth_Bps == pytest.approx(43 * 3.2e9, rel=1e-3)


def test_failures_beyond_the_parity_lose_data_and_bad_drives_are_refused() -> None:
    system = build()
    pool = system.pool
    for drive in range(4):
        pool.fail_drive(drive)
    assert not pool.status().data_lost
    pool.fail_drive(4)  # a fifth QLC drive down before any rebuild ended: EC 36+4 loses data
    status = pool.status()
    assert status.data_lost and len(status.failed_drives) == 5
    assert system.status().data_lost_targets == (0,)
    assert "DATA LOST on 1 target(s)" in system.status().summary()
    with pytest.raises(ValueError, match=r"^drive: 56 is not a drive"):
        pool.fail_drive(56)
    with pytest.raises(ValueError, match=r"^drive: QLC drive 2 .* already down"):
        pool.fail_drive(2)


def test_an_scm_failure_rebuilds_its_replicas_and_new_writes_avoid_it() -> None:
    system = build()
    write(system, "d", 1)
    level = system.tier.buffer.check().level_B
    scm_drive = 44 + 2  # pool indices: 44 QLC drives, then the 12 SCM drives
    system.pool.fail_drive(scm_drive)
    rebuild = system.pool.rebuild_of(scm_drive)
    assert rebuild is not None
    assert rebuild.volume_B == pytest.approx(2 * level / 12, rel=1e-12)
    ingest = {r.name for r, _ in system.tier.ingest_path()}
    assert system.scm[2].name not in ingest and system.scm[3].name in ingest
    system.sim.run(rebuild.done)
    assert system.pool.status().failed_drives == ()
    # A second SCM failure while the first is rebuilt loses buffered data (2 replicas).
    system.pool.fail_drive(44 + 4)
    system.pool.fail_drive(44 + 5)
    assert system.pool.status().data_lost


def test_replace_gives_a_fresh_drive_back_to_service() -> None:
    system = build(SMALL_BUFFER)
    write(system, "big", 4)
    system.pool.fail_drive(7)
    rebuild = system.pool.rebuild_of(7)
    assert rebuild is not None
    system.sim.run(rebuild.done)
    system.pool.replace_drive(7)
    assert system.tier.qlc_out == set()
    assert system.pool.status().failed_drives == ()
    assert system.tier.qlc_phys_written_B[7] == 0.0
    assert system.qlc_state[7].bytes_written_B == 0.0
    assert system.qlc_state[8].bytes_written_B > 0.0


# ------------------------------------------------------------------ reset
def test_reset_restores_fresh_drives_and_an_empty_buffer() -> None:
    system = build(SMALL_BUFFER)
    fresh = system.status()
    write(system, "big", 4)
    system.pool.fail_drive(1)
    system.pool.fail_drive(44)
    assert system.status() != fresh
    system.reset_state()
    status = system.pool.status()
    assert status.failed_drives == () and status.rebuild_progress is None
    assert status.buffer_fill == 0.0 and status.host_written_B == 0.0
    assert not status.data_lost
    assert system.tier.qlc_out == set() and system.tier.scm_out == set()
    assert all(s.bytes_written_B == 0.0 for s in system.scm_state + system.qlc_state)
    assert system.status() == SystemStatus.of(system.sim.now, 1, [(0, status)])
    # The files stay readable (on QLC, as data older than the fresh state) ...
    obj = system.object_name("big", 0)
    assert system.tier.location(obj) == pytest.approx((0.0, 4 * GIB))
    # ... and new writes wear every drive again from zero, the replaced ones included.
    write(system, "again", 4)
    assert system.pool.status().host_written_B > 0  # brings the wear states up to now
    assert system.tier.qlc_phys_written_B[1] > 0 and system.scm_state[0].bytes_written_B > 0


# ------------------------------------------------------------------ fast-forward
def test_age_reaches_the_state_of_a_detailed_write_of_the_same_bytes() -> None:
    detailed = build(SMALL_BUFFER)
    w = write(detailed, "d", 8)
    forward = build(SMALL_BUFFER)
    forward.pool.age(w.bytes_B)
    a, b = detailed.pool.status(), forward.pool.status()
    assert b.buffer_fill == pytest.approx(a.buffer_fill, rel=0.02)
    assert b.host_written_B == pytest.approx(a.host_written_B, rel=0.02)
    np.testing.assert_allclose(
        forward.tier.qlc_phys_written_B, detailed.tier.qlc_phys_written_B, rtol=0.02
    )
    assert forward.sim.now == 0.0  # nothing simulated


def test_age_migrates_what_earlier_phases_left_in_scm_first() -> None:
    system = build(SMALL_BUFFER)
    write(system, "ckpt", 1)
    obj = system.object_name("ckpt", 0)
    system.pool.age(200e9)
    assert system.tier.location(obj) == pytest.approx((0.0, GIB))
    assert system.tier.buffer.bytes_of(PRODUCTION_OBJECT) == pytest.approx(180e9, rel=1e-9)
    with pytest.raises(ValueError, match=r"^host_B"):
        system.pool.age(-1.0)


def test_a_year_of_production_wears_qlc_by_the_write_path_in_bulk() -> None:
    """365 days x 2.2 PB: stripes placed in bulk give the wear of stripe-by-stripe placement."""
    bulk = build()
    for _ in range(365):
        bulk.pool.age(2.2e15)
    migrated = 365 * 2.2e15 - 0.9 * 3e12
    assert bulk.tier.migrated_B == pytest.approx(migrated, rel=1e-12)
    per_drive = migrated * 40 / 36 / 44
    np.testing.assert_allclose(bulk.tier.qlc_phys_written_B, per_drive, rtol=1e-4)
    # The same bytes in pieces just under the bulk threshold, placed stripe by stripe.
    steps = build()
    piece = (BULK_STRIPES - 1) * 4e9
    steps.pool.age(0.9 * 3e12)  # the buffer at its hold level: what follows migrates
    steps.pool.age(40 * piece)
    one = build()
    one.pool.age(0.9 * 3e12)
    for _ in range(40):
        one.pool.age(piece)
    np.testing.assert_allclose(
        steps.tier.qlc_phys_written_B, one.tier.qlc_phys_written_B, rtol=1e-9
    )


# ------------------------------------------------------------------ study phases keep state
def test_vast_rebuild_leaves_its_state_and_runs_again_on_a_fresh_drive() -> None:
    system = build()
    phase = VastRebuildPhase.model_validate(
        {"name": "rb", "workload": "vast-rebuild", "load": "idle", "used": 0.001}
    )
    first = system.run_phase(phase)
    assert system.tier.qlc_out == {0}  # rebuilt onto the survivors, not replaced
    assert system.pool.status().failed_drives == ()
    second = system.run_phase(phase.model_copy(update={"name": "rb2"}))
    assert second.sim_time_s == pytest.approx(first.sim_time_s, rel=1e-12)
    assert system.tier.qlc_out == {0}


def test_vast_endurance_leaves_the_wear_it_measured() -> None:
    system = build()
    phase = VastEndurancePhase.model_validate(
        {
            "name": "e",
            "workload": "vast-endurance",
            "daily_writes": "2.2 PB/day",
            "sample": "64 GiB",
        }
    )
    system.run_phase(phase)
    status = system.pool.status()
    assert status.host_written_B == pytest.approx(64 * GIB * 40 / 36 / 44, rel=1e-3)
    system.run_phase(phase.model_copy(update={"name": "e2"}))
    assert system.pool.status().host_written_B == pytest.approx(
        2 * 64 * GIB * 40 / 36 / 44, rel=1e-3
    )


def test_request_fidelity_replicas_avoid_a_failed_scm_drive() -> None:
    loaded = load_system_model(MODEL)
    system = loaded.kind.build(loaded.model, Simulation(0), "request")
    assert isinstance(system, VastSystem)
    system.pool.fail_drive(44 + 0)  # SCM drive 0 (the buffer is empty: nothing to rebuild)
    assert system.pool.status().failed_drives == ()
    common = {"block_size_B": 2**20, "segments": 64, "fidelity": "request", "direct_io": True}
    system.run_phase(_ior("w", "write", 1, 4, 2**20, "d", **common))
    assert system.scm_state[0].bytes_written_B == 0.0
    assert sum(s.bytes_written_B for s in system.scm_state) == pytest.approx(2 * 4 * 64 * 2**20)


def test_a_rebuilt_drive_that_fails_again_is_its_replacement_failing() -> None:
    """As the production phase's AFR draws may: the slot's drive fails, and is rebuilt again."""
    system = build()
    pool = system.pool
    assert pool.drives == 56 and pool.rebuild_fill == 1.0
    pool.rebuild_fill = 0.001  # a production phase's `fill`
    pool.fail_drive(9)
    first = pool.rebuild_of(9)
    assert first is not None and first.volume_B == pytest.approx(0.001 * 15.36e12)
    system.sim.run(first.done)
    pool.fail_drive(9)
    again = pool.rebuild_of(9)
    assert again is not None and again is not first
    assert pool.status().failed_drives == (9,) and system.tier.qlc_out == {9}
    system.reset_state()
    assert pool.rebuild_fill == 1.0 and pool.status().failed_drives == ()


def test_vast_rebuild_starts_from_a_healthy_pool() -> None:
    system = build()
    system.pool.fail_drive(0)  # an earlier failure, still rebuilding (a full drive: hours)
    system.pool.fail_drive(44 + 1)
    # A while later (a rebuild stopped at the very instant it started trips the engine's
    # slot-reuse bug that the crash branch of issue 17 fixes in engine/flows.py).
    system.sim.run(system.sim.now + 1.0)
    phase = VastRebuildPhase.model_validate(
        {"name": "rb", "workload": "vast-rebuild", "load": "idle", "used": 0.001}
    )
    healed = system.run_phase(phase)
    fresh = build().run_phase(phase)
    assert healed.sim_time_s == pytest.approx(fresh.sim_time_s, rel=1e-12)
    assert system.tier.scm_out == set() and system.tier.qlc_out == {0}


def test_a_jobs_phase_leaves_its_scm_fill_and_wear_to_the_next_phase() -> None:
    system = build(SMALL_BUFFER)
    job = {
        "type": "ior",
        "name": "ckpt",
        "operation": "write",
        "nodes": 8,
        "ranks_per_node": 8,
        "block_size": "4 GiB",
        "direct_io": True,
    }
    phase = JobsPhase.model_validate(
        {"name": "jobs", "workload": "jobs", "alone": False, "jobs": [job]}
    )
    system.run_phase(phase)
    status = system.pool.status()
    assert status.buffer_fill == pytest.approx(0.9, rel=1e-4)  # 256 GiB into a 200 GB buffer
    assert status.host_written_B == pytest.approx((256 * GIB - 180e9) * 40 / 36 / 44, rel=1e-3)
    # The next phase starts there: a small write only tops the held level up, migrating as much.
    write(system, "next", 1)
    assert system.pool.status().host_written_B == pytest.approx(
        (384 * GIB - 180e9) * 40 / 36 / 44, rel=1e-3
    )


# ------------------------------------------------------------------ degraded reads
MIB_B = 2**20


def tiny_tier(stripe: str = "4 MiB") -> ScmQlcTier:
    """2 SCM and 6 QLC drives, EC 4+1: one stripe of 4 MiB logical is 4 data strips of 1 MiB."""
    sim = Simulation(0)
    scm = [sim.flows.add_resource(f"scm{i}", 2.5e9) for i in range(2)]
    qlc = [sim.flows.add_resource(f"qlc{i}", 3.2e9) for i in range(6)]
    spec = TierSpec.model_validate(
        {"write_buffer": "1 GB", "stripe_size": stripe, "ec_data": 4, "ec_parity": 1}
    )
    return ScmQlcTier(sim, "t", spec, scm, qlc, scm_write_cost=1.25, qlc_write_cost=3.2)


def test_a_lost_strip_is_read_from_k_survivors_until_the_rebuild_recreates_it() -> None:
    tier = tiny_tier()
    tier.place_aged("old", 60 * MIB_B)  # incompressible, rotated: 1/6 of its strips per drive
    _, healthy, _ = tier.read_weights("old")
    np.testing.assert_allclose(healthy, 1 / 6)
    assert tier.degraded_state() is None
    assert tier.degraded_reads(healthy, MIB_B) == (healthy, 0.0)
    tier.take_out("qlc", 2)
    _, stored, _ = tier.read_weights("old")
    np.testing.assert_allclose(stored, 1 / 6)  # the lost strips still count where they were
    state = tier.degraded_state()
    assert state is not None and state.failed == [2] and state.rebuilt_fraction == 0.0
    # A 1 MiB read (within one strip): a lost strip (1/6 of the reads) costs k = 4 reads of
    # the same size from the 5 survivors: 5/6 + 4/6 = 1.5 drive reads per read.
    reads, decode_s = tier.degraded_reads(stored, MIB_B)
    assert reads[2] == 0.0
    np.testing.assert_allclose(np.delete(reads, 2), 1 / 6 + (1 / 6) * 4 / 5, rtol=1e-12)
    assert reads.sum() == pytest.approx(1.5, rel=1e-12)
    assert reads.sum() == pytest.approx(state.mean_factor("read", spread=False), rel=1e-12)
    # ... and its decode on the CNode: 4 MiB of survivors at 20 GB/s, for 1 read in 6.
    assert decode_s == pytest.approx(4 * MIB_B / 20e9 / 6, rel=1e-12)
    # A full-stripe read (4 MiB: the stripe's 4 data strips) reads one parity strip per lost
    # strip: as many drive reads as healthy, the lost drive's share on the survivors.
    full, _ = tier.degraded_reads(stored, 4 * MIB_B)
    assert full.sum() == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(np.delete(full, 2), 1 / 6 + (1 / 6) / 5, rtol=1e-12)
    # The penalty falls as the rebuild re-creates the strips (read once where it wrote them).
    totals = []
    for progress in (0.0, 0.25, 0.5, 1.0):
        tier.rebuild_progress = lambda p=progress: p
        totals.append(tier.degraded_reads(stored, MIB_B)[0].sum())
    np.testing.assert_allclose(totals, [1.5, 1 + 0.75 * 0.5, 1 + 0.5 * 0.5, 1.0], rtol=1e-12)
    # The rebuild ends: the strips live on the survivors, read once, evenly.
    tier.rebuilt(2)
    assert tier.degraded_state() is None
    _, after, _ = tier.read_weights("old")
    assert after[2] == 0.0 and after.sum() == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(np.delete(after, 2), 1 / 5, rtol=1e-12)
    assert tier.degraded_reads(after, MIB_B)[0] is after


def test_a_failed_scm_drives_buffered_bytes_are_read_from_their_other_replica() -> None:
    tier = tiny_tier()
    tier.buffer.add_bytes("new", 10 * MIB_B)
    tier.take_out("scm", 0)
    path = tier.read_path("new", MIB_B)
    assert [r.name for r, _ in path] == ["scm1"]  # no QLC read, no reconstruction
    assert path[0][1] == pytest.approx(1.0)
    assert tier.degraded_state() is None


def test_request_fidelity_draws_the_survivors_that_reconstruct_a_lost_strip() -> None:
    tier = tiny_tier()
    tier.place_aged("old", 60 * MIB_B)
    tier.take_out("qlc", 2)
    _, stored, _ = tier.read_weights("old")
    rng = np.random.default_rng(1)
    assert tier.reconstruct(4, MIB_B, stored, rng) == ([4], 0.0)  # a healthy drive's strip
    drives, decode_s = tier.reconstruct(2, MIB_B, stored, rng)
    assert len(drives) == 4 == len(set(drives)) and 2 not in drives
    assert decode_s == pytest.approx(4 * MIB_B / 20e9, rel=1e-12)
    full, _ = tier.reconstruct(2, 4 * MIB_B, stored, rng)
    assert len(full) == 1 and full != [2]  # a full-stripe read: one parity strip
    tier.rebuild_progress = lambda: 1.0
    rebuilt, decode_s = tier.reconstruct(2, MIB_B, stored, rng)
    assert len(rebuilt) == 1 and rebuilt != [2] and decode_s == 0.0


#: Drive-bound reads (DRIVE_BOUND) and a rebuild of 2 % of a drive, which outlasts them.
SLOW_REBUILD = {**DRIVE_BOUND, "tier.drive_fill": "0.02"}


def degraded_read_Bps(progress: float) -> float:
    """A drive-bound read of aged data, started with 1 of 44 QLC drives down at ``progress``.

    Under load the rebuild keeps its guaranteed 30 % of the drives; the read gets the other
    70 % of the 43 survivors (3.2 GB/s each) and pays per logical byte 43/44 healthy reads,
    plus for the 1/44 lost: 36 reads (1 MiB RPCs in 111 MB strips) for what is not rebuilt
    yet, and 1 read where the rebuild wrote it for the rest.
    """
    per_B = 43 / 44 + (1 / 44) * ((1 - progress) * 36 + progress * 1)
    return 0.7 * 43 * 3.2e9 / per_B


def test_a_read_while_a_qlc_drive_rebuilds_pays_the_reconstruction_less_as_it_progresses() -> None:
    system = build(SLOW_REBUILD)
    write(system, "d", 8, nodes=16, ppn=8)
    system.sim.run(system.tier.buffer.flush())
    for rank in range(16 * 8):  # as aged files, each spread evenly over the 44 drives
        obj = system.object_name("d", rank)
        system.tier.forget(obj)
        system.tier.place_aged(obj, 8 * GIB)
    system.pool.fail_drive(0)
    degraded = read(system, "d", 8, nodes=16, ppn=8)
    assert degraded.bandwidth_Bps == pytest.approx(degraded_read_Bps(0.0), rel=1e-3)
    assert degraded.bandwidth_Bps < 0.6 * 0.7 * 43 * 3.2e9  # the old even spread: 96.3 GB/s
    # Half rebuilt (idle drives: the whole rebuild rate), the next read pays less.
    rebuild = system.pool.rebuild_of(0)
    assert rebuild is not None
    left_B = 0.5 * rebuild.volume_B - rebuild.moved_B()
    system.sim.run(system.sim.now + left_B / rebuild.rate_Bps())
    progress = system.pool.qlc_rebuilt_fraction()
    assert progress == pytest.approx(0.5, rel=1e-6)
    half = read(system, "d", 8, nodes=16, ppn=8)
    assert half.bandwidth_Bps == pytest.approx(degraded_read_Bps(progress), rel=1e-3)
    assert half.bandwidth_Bps > 1.2 * degraded.bandwidth_Bps
    system.sim.run(rebuild.done)
    assert system.tier.degraded_state() is None
    after = read(system, "d", 8, nodes=16, ppn=8)
    assert after.bandwidth_Bps == pytest.approx(43 * 3.2e9, rel=1e-3)


def test_request_fidelity_reads_visit_the_reconstructing_drives() -> None:
    loaded = load_system_model(MODEL)
    system = loaded.kind.build(loaded.model, Simulation(0), "request")
    assert isinstance(system, VastSystem)
    common = {"block_size_B": 2**20, "segments": 512, "fidelity": "request", "direct_io": True}
    system.run_phase(_ior("w", "write", 1, 4, 2**20, "d", **common))
    system.tier.drain_all()  # the dataset on QLC: 2 GiB, in the first stripe (drives 0-39)
    system.pool.fail_drive(3)  # a full drive: its rebuild takes hours, the read milliseconds
    system.run_phase(_ior("r", "read", 1, 4, 2**20, "d", **common))
    visits = [cmd.visits for cmd, _ in system.drives.queues()["qlc"]]
    assert visits[3] == 0
    reads = 4 * 512
    extra = sum(visits) - reads  # each reconstructed read: 36 survivors instead of 1 drive
    assert extra > 0 and extra % 35 == 0
    # About 1 read in 40 is reconstructed (a strip of drive 3 in the 40-drive stripe).
    assert 0.5 * reads / 40 < extra / 35 < 1.5 * reads / 40


DAY = "scenarios/vast/day-with-rebuild.toml"


@pytest.mark.parametrize("ranks_per_node", [4, 8])
def test_the_day_with_rebuild_reads_pay_the_degraded_read_once_the_drives_bind(
    ranks_per_node: int,
) -> None:
    """32 ranks stay concurrency-bound; 64 are held to what the rebuild leaves the survivors."""
    sets = {
        f"phases.{p}.ranks_per_node": str(ranks_per_node)
        for p in ("write", "read-aged", "read-aged-rebuilding")
    }
    phases = {p.name: p for p in run_scenario(DAY, sets).phases}
    healthy = phases["read-aged"].bandwidth_Bps
    rebuilding = phases["read-aged-rebuilding"].bandwidth_Bps
    # The drives could give the degraded read ~53.6 GB/s: 70 % of the 43 survivors, ~1.8 drive
    # reads per byte (the job's data sits in migrated stripes: not exactly 1/44 per drive).
    bound = degraded_read_Bps(0.0)
    if ranks_per_node == 4:
        assert healthy < 0.9 * bound
        # Only the CNode decode latency in the read-ahead loop shows.
        assert 0.999 * healthy < rebuilding < healthy
    else:
        assert healthy > 1.5 * bound
        assert rebuilding == pytest.approx(bound, rel=0.02)


def test_a_qlc_drive_replaced_before_its_rebuild_ended_takes_new_stripes_after_it() -> None:
    tier = tiny_tier()
    tier.place_aged("old", 60 * MIB_B)
    tier.take_out("qlc", 2)
    tier.put_back("qlc", 2)  # a fresh drive in the slot; the lost strips are not rebuilt yet
    assert tier.qlc_out == set() and 2 not in tier.qlc_in_service
    tier.place_aged("mid", 60 * MIB_B)
    assert tier.read_weights("mid")[1][2] == 0.0
    _, stored, _ = tier.read_weights("old")
    assert tier.degraded_reads(stored, MIB_B)[0].sum() == pytest.approx(1.5, rel=1e-12)
    tier.rebuilt(2)
    assert 2 in tier.qlc_in_service
    tier.place_aged("new", 60 * MIB_B)
    assert tier.read_weights("new")[1][2] == pytest.approx(1 / 6, rel=1e-12)
    np.testing.assert_allclose(tier.read_weights("old")[1], [0.2, 0.2, 0.0, 0.2, 0.2, 0.2])


@settings(max_examples=60, deadline=None)
@given(
    # A drive's share is none or at least 1e-6 of an object (a share of 5e-324 B/B would make
    # the decode time underflow to zero: not a layout a file system makes).
    weights=st.lists(st.just(0.0) | st.floats(1e-6, 1.0), min_size=6, max_size=6).filter(
        lambda w: sum(w) > 0.1
    ),
    failed=st.integers(0, 5),
    progress=st.floats(0.0, 1.0),
    full=st.booleans(),
)
def test_degraded_reads_cost_the_lost_share_times_its_reconstruction(
    weights: list[float], failed: int, progress: float, full: bool
) -> None:
    """Any layout: the failed drive is never read; its share costs (1-r) R + r reads, R = k or 1."""
    tier = tiny_tier()
    tier.take_out("qlc", failed)
    tier.rebuild_progress = lambda: progress
    w = np.asarray(weights)
    reads, decode_s = tier.degraded_reads(w, 4 * MIB_B if full else MIB_B)
    assert reads[failed] == 0.0
    assert np.all(np.delete(reads, failed) >= np.delete(w, failed))
    per_lost = (1 - progress) * (1 if full else 4) + progress
    expect = w.sum() - w[failed] + w[failed] * per_lost
    assert reads.sum() == pytest.approx(expect, rel=1e-9, abs=1e-12)
    assert decode_s >= 0.0 and (decode_s > 0) == (w[failed] > 0 and progress < 1)


def test_drive_links_carry_the_tier_bytes_and_bind_when_slow() -> None:
    """dnode.drive_link: every SCM/QLC drive's PCIe link in both paths and the round trip."""
    from flashsim.components.pcie import PcieLink
    from flashsim.workloads.ior import IorPhase

    plain = load_system_model(MODEL)
    # PCIe 1.0 x1: 0.25 GB/s a direction, far below a P4800X's 2 GB/s writes.
    slow = load_system_model(
        MODEL, {"dnode.drive_link.generation": "1", "dnode.drive_link.lanes": "1"}
    )
    base = plain.kind.build(plain.model, Simulation(0), "flow")
    system = slow.kind.build(slow.model, Simulation(0), "flow")
    assert isinstance(base, VastSystem) and isinstance(system, VastSystem)
    name = slow.model.name
    assert f"{name}.dnode0.scm0.pcie.down" in system.sim.flows.resources
    assert f"{name}.dnode0.qlc0.pcie.up" in system.sim.flows.resources
    assert f"{name}.dnode0.scm0.pcie.up" not in base.sim.flows.resources
    # 0.25 GB/s encoded, less the protocol overhead (components.pcie: 256 / 276).
    link_Bps = PcieLink(generation=1, lanes=1).bandwidth_Bps
    link_s = 2**20 / link_Bps
    for op in ("read", "write"):
        assert system.rtt_s(2**20, op) == pytest.approx(base.rtt_s(2**20, op) + link_s)
    phase = IorPhase.model_validate(
        {
            "name": "w",
            "workload": "ior",
            "operation": "write",
            "nodes": 2,
            "ranks_per_node": 8,
            "transfer_size": "1 MiB",
            "block_size": "1 GiB",
            "direct_io": True,
            "stonewall": "5 s",
        }
    )
    w = system.run_phase(phase)
    # 12 SCM drives' links, 2 replicas a byte: 12 x 0.23 GB/s / 2 = 1.4 GB/s.
    peak = 12 * link_Bps / 2
    assert 0.9 * peak < w.bandwidth_Bps <= peak * (1 + 1e-6)
