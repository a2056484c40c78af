"""Component arithmetic: RAID costs, PCIe rates, SSD and HDD saturation."""

from __future__ import annotations

import pytest

from flashsim.components.hdd import HddSpec
from flashsim.components.lustre_client import LustreClientSpec
from flashsim.components.pcie import PcieLink
from flashsim.components.raid import RaidSpec
from flashsim.components.ssd import SsdSpec, SsdState

KIB = 1024.0


def gridraid() -> RaidSpec:
    return RaidSpec(level="raid6", data=8, parity=2, spares=1, chunk="128 KiB")


def test_full_stripe_write_pays_parity_weight() -> None:
    raid = gridraid()
    assert raid.full_stripe_write_weight() == pytest.approx(10 / 8)
    ops = raid.write_ops(4 * 2**20, aligned_full=True)
    written = sum(o.count * o.size_B for o in ops if o.op == "write")
    assert written == pytest.approx(4 * 2**20 * 10 / 8)
    assert not [o for o in ops if o.op == "read"]


def test_sub_stripe_write_is_read_modify_write_of_chunk_and_both_parities() -> None:
    raid = gridraid()
    ops = {o.op: o for o in raid.write_ops(4 * KIB)}
    assert ops["read"].count == 3 and ops["read"].size_B == 128 * KIB
    assert ops["write"].count == 3 and ops["write"].size_B == 128 * KIB
    assert raid.is_sub_stripe(4 * KIB)
    assert not raid.is_sub_stripe(1 * 2**20)


def test_reconstruct_write_chosen_when_cheaper() -> None:
    raid = gridraid()
    ops = {o.op: o for o in raid.write_ops(7 * 128 * KIB)}  # 7 of 8 chunks touched
    assert ops["read"].count == 1  # read the one untouched chunk, not 9
    assert ops["write"].count == 9


def test_reads_pay_no_parity() -> None:
    raid = gridraid()
    small = raid.read_ops(4 * KIB)
    assert len(small) == 1 and small[0].count == 1 and small[0].size_B == 4 * KIB
    big = raid.read_ops(4 * 2**20)
    assert sum(o.count * o.size_B for o in big) == pytest.approx(4 * 2**20)


def test_raid10_and_none() -> None:
    r10 = RaidSpec(level="raid10", mirrors=2, chunk="128 KiB")
    assert r10.full_stripe_write_weight() == 2.0
    assert r10.usable_fraction(12) == pytest.approx(0.5)
    none = RaidSpec(level="none", data=4, parity=0, chunk="128 KiB")
    assert none.full_stripe_write_weight() == 1.0
    assert none.usable_fraction(4) == 1.0


def test_gridraid_capacity_and_minimum_drives() -> None:
    raid = gridraid()
    assert raid.min_drives() == 11
    assert raid.usable_fraction(12) == pytest.approx(11 / 12 * 0.8)


def test_pcie_gen4_x2_equals_gen3_x4() -> None:
    gen4x2 = PcieLink(generation=4, lanes=2).line_Bps
    gen3x4 = PcieLink(generation=3, lanes=4).line_Bps
    assert gen4x2 == pytest.approx(2 * 16e9 * 128 / 130 / 8)
    assert gen4x2 == pytest.approx(gen3x4)
    usable = PcieLink(generation=4, lanes=2).bandwidth_Bps
    assert usable == pytest.approx(PcieLink(generation=3, lanes=4).bandwidth_Bps)


def pm1733() -> SsdSpec:
    return SsdSpec(
        kind="ssd",
        name="t",
        capacity="15.36 TB",
        read_bandwidth="3.5 GB/s",
        write_bandwidth="3.2 GB/s",
        read_iops="800 kIOPS",
        write_iops="135 kIOPS",
        read_latency="90 us",
        write_latency="30 us",
        parallelism=4,
    )


def test_ssd_saturates_at_min_of_iops_and_bandwidth() -> None:
    ssd = pm1733()
    assert ssd.random_iops_ceiling("read", 4 * KIB) == pytest.approx(800e3)
    assert ssd.random_iops_ceiling("read", 1 * 2**20) == pytest.approx(3.5e9 / 2**20)
    # Command stage: parallelism units, each held parallelism / iops.
    assert ssd.servers / ssd.cmd_s("read", 4 * KIB) == pytest.approx(800e3)
    assert 1.0 / ssd.xfer_s("write", 2**20) == pytest.approx(3.2e9 / 2**20)


def test_ssd_zero_load_latency_is_datasheet_latency() -> None:
    ssd = pm1733()
    total = ssd.cmd_s("read", 4096) + ssd.xfer_s("read", 4096) + ssd.delay_s("read", 4096)
    assert total == pytest.approx(90e-6)


def test_ssd_state_hooks() -> None:
    state = SsdState(capacity_B=1e12)
    state.record_write(5e11)
    assert state.bytes_written_B == 5e11 and state.valid_fraction == pytest.approx(0.5)
    state.trim(2.5e11)
    assert state.valid_fraction == pytest.approx(0.25)
    assert state.write_time_scale() == 1.0


def test_hdd_ceiling_is_seed_estimate() -> None:
    hdd = HddSpec(
        kind="hdd",
        name="t",
        capacity="4 TB",
        rpm=7200.0,
        average_seek_read="8.5 ms",
        average_seek_write="9.5 ms",
        sustained_transfer="175 MB/s",
    )
    assert hdd.rotational_latency_s == pytest.approx(4.1667e-3, rel=1e-3)
    ceiling = hdd.random_iops_ceiling("read", 4096)
    assert 235 < ceiling < 241  # seed 000 footnote 3: ~240 IOPS per drive
    assert hdd.iops("read") < ceiling  # full seeks cost more


def test_lustre_client_rpc_formation() -> None:
    lc = LustreClientSpec()
    assert lc.rpc_size == 4 * 2**20 and lc.rpcs_in_flight == 8
    assert lc.server_op_B(2**20, sequential=True, direct_io=False, write=False) == 4 * 2**20
    assert lc.server_op_B(4096, sequential=False, direct_io=False, write=True) == 4096
    assert lc.ops_per_rpc(4096, sequential=False, direct_io=False, write=True) == 1024
    assert lc.ops_per_rpc(4096, sequential=False, direct_io=False, write=False) == 1
    assert lc.rank_concurrency(4096, sequential=False, direct_io=False, write=False) == 1
    assert lc.write_behind_B(direct_io=True, ranks_on_node=4) == 0.0
