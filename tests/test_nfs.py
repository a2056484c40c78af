"""The NFS-over-RDMA client: mount arithmetic and the write-back page cache in a system."""

from __future__ import annotations

import itertools

import pytest

from flashsim.components.nfs import (
    NfsClientModel,
    NfsClientSpec,
    closed_loop_reader_rpcs_per_s,
)
from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_system_model
from flashsim.studies.vast import _ior

MODEL = "models/systems/vast-pdsw21.toml"
GIB = 2**30


def client(**mount: object) -> NfsClientModel:
    spec = {
        "count": 1,
        "memory": "384 GiB",
        "nic": {"ports": 4, "port_bandwidth": "100 Gb/s"},
        "mount": {"copy_bandwidth": "3 GB/s", "syscall_overhead": "2 us", **mount},
    }
    return NfsClientModel(NfsClientSpec.model_validate(spec))


def test_dirty_thresholds_are_fractions_of_memory() -> None:
    c = client(dirty_background_ratio=0.1, dirty_ratio=0.2)
    assert c.dirty_background_B == pytest.approx(0.1 * 384 * GIB)
    assert c.dirty_limit_B == pytest.approx(0.2 * 384 * GIB)


def test_rpc_split_and_readahead() -> None:
    c = client(rsize="1 MiB", wsize="1 MiB", readahead_rpcs=15)
    assert c.rpcs_per_call(32 * 2**20, "write") == 32
    assert c.rpcs_per_call(4096, "read") == 1
    assert c.rpc_size_B(4096, "read") == 4096
    assert c.rpc_size_B(8 * 2**20, "write") == 2**20
    assert c.readahead_B() == 15 * 2**20
    # Read-ahead bound: 15 MiB in flight over a 10 ms round trip.
    assert c.buffered_read_rate_Bps(2**20, 10e-3) == pytest.approx(15 * 2**20 / 10e-3)
    # Copy bound with a fast round trip.
    assert c.buffered_read_rate_Bps(2**20, 1e-6) == pytest.approx(c.copy_rate_Bps(2**20))


def test_small_calls_pay_the_syscall_overhead() -> None:
    c = client()
    assert c.copy_rate_Bps(4096) == pytest.approx(4096 / (2e-6 + 4096 / 3e9))
    assert c.copy_rate_Bps(4096) < 0.5 * c.copy_rate_Bps(2**20)


def _exact_mva(customers: int, delay_s: float, drive_s: float, drives: int) -> float:
    """Exact single-class MVA: ``drives`` identical queues visited at random, plus a delay."""
    per_drive_s = drive_s / drives
    queue = 0.0
    x = 0.0
    for n in range(1, customers + 1):
        residence = per_drive_s * (1.0 + queue)
        x = n / (delay_s + drives * residence)
        queue = x * residence
    return x


def test_closed_loop_reader_is_exact_for_one_rpc_and_matches_exact_mva() -> None:
    # One RPC in flight, no contention: one round trip per RPC.
    one = closed_loop_reader_rpcs_per_s(1, 1, copy_s=1e-4, delay_s=5e-4, drive_s=4e-4, drives=12)
    assert one == pytest.approx(1.0 / 1e-3, rel=1e-9)
    # One reader with many RPCs and no copy stage is a single-class network: exact MVA.
    for slots in (4, 15, 60):
        approx = closed_loop_reader_rpcs_per_s(1, slots, 0.0, 8e-4, 4.2e-4, 12)
        assert approx == pytest.approx(_exact_mva(slots, 8e-4, 4.2e-4, 12), rel=0.03)


def test_closed_loop_readers_approach_the_drives_gradually_and_never_exceed_them() -> None:
    drive_s, drives = 2**20 / 2.5e9, 12
    capacity = drives / drive_s  # RPCs/s of the 12 drives
    readers = (1, 2, 4, 8, 16, 20, 32, 64, 128)
    totals = [
        r * closed_loop_reader_rpcs_per_s(r, 15, 2**20 / 1.5e9, 8e-4, drive_s, drives)
        for r in readers
    ]
    assert all(b > a for a, b in itertools.pairwise(totals))  # still rising at 128
    assert all(t < capacity for t in totals)
    assert totals[-1] > 0.99 * capacity
    # At 20 readers the copy-bound demand (20 x 1.5 GB/s) equals the drives' 30 GB/s:
    # a corner model would deliver all of it; the drives' queues deliver clearly less.
    assert pytest.approx(capacity, rel=0.05) == 20 * 1.5e9 / 2**20
    assert totals[readers.index(20)] < 0.95 * capacity
    # Without shared drives a reader is bound by its own copy (one server) or its window.
    alone = closed_loop_reader_rpcs_per_s(1, 15, 1e-3, 1e-4)
    assert alone == pytest.approx(1e3, rel=1e-3)
    with pytest.raises(ValueError, match="slots"):
        closed_loop_reader_rpcs_per_s(1, 0, 1e-3, 1e-4)
    with pytest.raises(ValueError, match="delay_s"):
        closed_loop_reader_rpcs_per_s(1, 1, 1e-3, float("nan"))


def test_loaded_read_rate_is_the_zero_load_rate_for_one_reader() -> None:
    c = client(readahead_rpcs=15, rsize="1 MiB")
    assert c.readahead_slots(4096) == 15 and c.readahead_slots(32 * 2**20) == 32
    # Copy-bound: 15 RPCs in flight over a 1 ms round trip far exceed 3 GB/s (the
    # approximate MVA is within 2 % of the corner there).
    rate = c.loaded_read_rate_Bps(2**20, 1, 1e-3)
    corner = c.buffered_read_rate_Bps(2**20, 1e-3)
    assert 0.98 * corner < rate <= corner


def test_multipath_uses_local_ports() -> None:
    assert client(local_ports=2, nconnect=32).nic_Bps("ingress") == pytest.approx(2 * 12.5e9)
    assert client(local_ports=0, nconnect=32).nic_Bps("egress") == pytest.approx(4 * 12.5e9)
    # One connection binds to one HCA.
    assert client(local_ports=4, nconnect=1).nic_Bps("egress") == pytest.approx(12.5e9)


def build(seed: int = 0):
    loaded = load_system_model(MODEL)
    sim = Simulation(seed)
    return sim, loaded.kind.build(loaded.model, sim, "flow")


def _monitor(sim, cache, times, out):  # type: ignore[no-untyped-def]
    """Record (time, level, in rate, out rate, draining) at the given offsets."""
    start = sim.now
    for t in times:
        yield sim.env.timeout(start + t - sim.now)
        check = cache.check()
        out.append((t, check.level_B, cache.in_rate_Bps, cache.out_rate_Bps, cache.draining))


def test_write_back_starts_at_background_ratio_and_blocks_at_dirty_ratio() -> None:
    sim, system = build()
    cache = system.caches[0]
    cm = system.client_model
    # One process at ~3 GB/s into an idle system: the write-back to the tier is faster, so the
    # cache fills to the background threshold (41 GB, ~14 s) and then holds there.
    samples: list[tuple[float, float, float, float, bool]] = []
    sim.env.process(_monitor(sim, cache, [5.0, 30.0], samples))
    system.run_phase(_ior("w", "write", 1, 1, 2**20, "a", fsync=False, segments=150_000))
    (_, lvl5, _, _, drain5), (_, lvl30, in30, out30, drain30) = samples
    assert not drain5 and lvl5 < cm.dirty_background_B
    assert drain30
    assert lvl30 == pytest.approx(cm.dirty_background_B, rel=1e-6)
    assert out30 == pytest.approx(in30, rel=1e-6)
    # Sixteen processes outrun the tier: the cache fills to the dirty ratio and the writers
    # slow to the write-back rate.
    samples = []
    sim.env.process(_monitor(sim, cache, [60.0], samples))
    system.run_phase(_ior("w16", "write", 1, 16, 2**20, "b", fsync=False, segments=60_000))
    ((_, lvl, rate_in, rate_out, _),) = samples
    assert lvl == pytest.approx(cm.dirty_limit_B, rel=1e-6)
    assert rate_in == pytest.approx(rate_out, rel=1e-3)
    assert rate_in < 16 * cm.copy_rate_Bps(2**20) / 2
    # fsync drains the cache completely.
    done = cache.flush()
    sim.run(done)
    assert cache.check().level_B == pytest.approx(0.0, abs=1.0)


def test_fsync_time_is_inside_the_write_phase() -> None:
    _, system = build()
    with_fsync = system.run_phase(_ior("w", "write", 1, 4, 2**20, "c", fsync=True, segments=20_000))
    _, system2 = build()
    without = system2.run_phase(_ior("w", "write", 1, 4, 2**20, "c", fsync=False, segments=20_000))
    assert with_fsync.bytes_B == without.bytes_B
    assert with_fsync.sim_time_s > without.sim_time_s
    assert with_fsync.bandwidth_Bps < without.bandwidth_Bps


def test_direct_io_bypasses_the_cache() -> None:
    _, system = build()
    res = system.run_phase(
        _ior("w", "write", 1, 1, 4096, "d", fsync=True, direct_io=True, segments=1000)
    )
    assert system.caches[0].check().ingested_B == 0.0
    # One synchronous 4 KiB write per round trip.
    expected = 4096 / (2e-6 + system.rtt_s(4096, "write"))
    assert res.bandwidth_Bps == pytest.approx(expected, rel=1e-6)


def test_nconnect_one_uses_one_port_and_one_cnode() -> None:
    """Without nconnect a client reaches one CNode over one HCA (12.5 GB/s)."""
    rates = {}
    for nconnect in (1, 32):
        # SCM reads at datasheet speed so that the client side, not SCM, is the limit.
        loaded = load_system_model(
            MODEL, {"client.mount.nconnect": str(nconnect), "tier.scm_read_efficiency": "1.0"}
        )
        sim = Simulation(0)
        system = loaded.kind.build(loaded.model, sim, "flow")
        system.prefill()
        assert len(system.client_cnodes(0)) == min(nconnect, 8)
        assert system.client_model.ports == min(nconnect, 4)
        system.run_phase(_ior("w", "write", 2, 16, 2**20, "d", fsync=True, segments=4000))
        # -C: node 0's ranks read node 1's files, over node 0's mount.
        res = system.run_phase(_ior("r", "read", 2, 16, 2**20, "d"))
        rates[nconnect] = res.bandwidth_Bps
    assert rates[1] == pytest.approx(2 * 12.5e9, rel=1e-6)  # one EDR port per client
    assert rates[32] > 1.15 * rates[1]
