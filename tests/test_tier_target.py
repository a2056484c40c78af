"""An SCM write buffer over QLC as one server target (components.tier_target), both fidelities."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from flashsim.components.target import StorageTarget
from flashsim.components.target_state import StatefulTarget
from flashsim.components.tier_life import TierLife
from flashsim.components.tier_target import TierRead, TierTarget, TierTargetSpec
from flashsim.components.variability import VariabilitySpec
from flashsim.config import ConfigError, validate
from flashsim.engine.flows import Flow, Resource
from flashsim.engine.simulation import Simulation
from tests.cli_helpers import ROOT

GB = 1e9
MODELS = ROOT / "models"

SCM = {
    "kind": "ssd",
    "name": "scm",
    "capacity": "400 GB",
    "read_bandwidth": "2.5 GB/s",
    "write_bandwidth": "2 GB/s",
    "read_iops": "550 kIOPS",
    "write_iops": "500 kIOPS",
    "read_latency": "10 us",
    "write_latency": "10 us",
    "parallelism": 7,
}
QLC = {
    "kind": "ssd",
    "name": "qlc",
    "capacity": "15 TB",
    "read_bandwidth": "3.2 GB/s",
    "write_bandwidth": "1 GB/s",
    "read_iops": "427 kIOPS",
    "write_iops": "36 kIOPS",
    "read_latency": "115 us",
    "write_latency": "20 us",
}
HDD = {
    "kind": "hdd",
    "name": "disk",
    "capacity": "4 TB",
    "rpm": 7200,
    "average_seek_read": "8 ms",
    "average_seek_write": "9 ms",
    "sustained_transfer": "200 MB/s",
}


def table(**over: Any) -> dict[str, Any]:
    """A tier target of 4 SCM and 12 QLC drives, 8+2, a 40 GB buffer migrating above half."""
    data: dict[str, Any] = {
        "scm_drive": SCM,
        "scm_drives": 4,
        "qlc_drive": QLC,
        "qlc_drives": 12,
        "write_buffer": "40 GB",
        "migrate_above": 0.5,
        "stripe_size": "1 GB",
        "ec_data": 8,
        "ec_parity": 2,
    }
    data.update(over)
    return data


def spec_of(**over: Any) -> TierTargetSpec:
    return TierTargetSpec.model_validate(table(**over))


def build(sim: Simulation, name: str = "sys.oss0.ost0", **over: Any) -> TierTarget:
    target = spec_of(**over).build(sim, name, VariabilitySpec.model_validate({}))
    assert isinstance(target, TierTarget)
    return target


def write_flow(sim: Simulation, target: TierTarget, size_B: float, obj: str, cap: float) -> Flow:
    """A write flow through ``target`` as a kind starts it: cost, path, flow_started."""
    cost = target.cost("write", 2**20, True, obj=obj)
    flow = sim.flows.start_flow(size_B, target.path(cost), rate_cap_Bps=cap, name=obj)
    target.flow_started(cost, flow)
    return flow


def weights(path: list[tuple[Resource, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for r, w in path:
        out[r.name] = out.get(r.name, 0.0) + w
    return out


# ------------------------------------------------------------------ the spec
def test_spec_peaks_capacity_and_label() -> None:
    spec = spec_of(scm_write_efficiency=0.8)
    # 4 SCM drives x 2 GB/s x 0.8 / 2 replicas: the ingest until the buffer fills.
    assert spec.peak_Bps("write") == pytest.approx(4 * 2 * GB * 0.8 / 2)
    # Incompressible data read from all 12 QLC drives (rotate) at 3.2 GB/s, and buffered
    # data from the 4 SCM drives at 2.5 GB/s at the same time.
    assert spec.qlc_read_Bps() == pytest.approx(12 * 3.2 * GB)
    assert spec.scm_read_Bps() == pytest.approx(4 * 2.5 * GB)
    assert spec.peak_Bps("read") == pytest.approx(12 * 3.2 * GB + 4 * 2.5 * GB)
    assert spec.peak_iops("read", 4096) == pytest.approx(12 * 427e3 + 4 * 550e3)
    # Each write lands twice; 4 KiB at 0.8 x 2 GB/s (390 k/s) binds before 500 kIOPS.
    assert spec.peak_iops("write", 4096) == pytest.approx(4 * min(500e3, 1.6 * GB / 4096) / 2)
    assert spec.drive_count() == 16
    assert spec.usable_B() == pytest.approx(12 * 15e12 * 8 / 10)
    assert spec.label() == "tier 4x scm over 12x qlc ec 8+2"


def test_spec_peaks_follow_links_and_compression() -> None:
    # A PCIe 3 x1 link (0.985 GB/s encoded, 256/276 of it after the protocol) binds every drive.
    linked = spec_of(drive_link={"generation": 3, "lanes": 1})
    link = 8e9 * 128 / 130 / 8 * 256 / 276
    assert linked.peak_Bps("write") == pytest.approx(4 * link / 2)
    assert linked.peak_Bps("read") == pytest.approx(12 * link + 4 * link)
    # Data of 2 bits/byte compresses to 1/4: four logical bytes per byte read.
    assert spec_of(data_entropy=2.0).qlc_read_Bps() == pytest.approx(4 * 12 * 3.2 * GB)
    # Packed placement: such data lives on ceil(8/4) + 2 = 4 drives only.
    packed = spec_of(data_entropy=2.0, placement="packed")
    assert packed.qlc_read_Bps() == pytest.approx(4 * 4 * 3.2 * GB)


@pytest.mark.parametrize(
    ("over", "key", "says"),
    [
        ({"ec_data": 10, "ec_parity": 4}, "ec_data", "exceeds the 12 QLC drives"),
        ({"scm_copies": 5}, "scm_copies", "at least as many SCM drives"),
        ({"qlc_drive": HDD}, "qlc_drive", "must be SSDs"),
        ({"scm_drive": HDD}, "scm_drive", "must be SSDs"),
    ],
)
def test_spec_errors_name_the_key(over: dict[str, Any], key: str, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        spec_of(**over)
    with pytest.raises(ConfigError) as err:
        validate(TierTargetSpec, {"tier": table(**over)}["tier"], "m.toml", key_prefix="oss.tier")
    assert err.value.key == f"oss.tier.{key}"
    assert says in str(err.value) and "\n" not in str(err.value)


def test_spec_reads_drive_files_relative_to_the_model() -> None:
    data = table(
        scm_drive="drives/intel-optane-p4800x-1.5tb.toml",
        qlc_drive="drives/intel-d5-p4326-15.36tb.toml",
    )
    spec = validate(TierTargetSpec, data, "m.toml", context={"model_dir": MODELS})
    assert spec.label().startswith("tier 4x Intel Optane SSD DC P4800X 1.5TB over 12x")


# ---------------------------------------------------------------- the target
def test_target_resources_and_interface() -> None:
    sim = Simulation(seed=1)
    target = build(sim, drive_link={"generation": 4, "lanes": 4})
    assert isinstance(target, StorageTarget)
    assert target.object_aware
    names = set(sim.flows.resources)
    for want in (
        "sys.oss0.ost0.scm3",
        "sys.oss0.ost0.qlc11",
        "sys.oss0.ost0.qlc11.ops",
        "sys.oss0.ost0.scm0.pcie.up",
        "sys.oss0.ost0.scm0.pcie.down",
        "sys.oss0.ost0.qlc0.pcie.down",
    ):
        assert want in names
    assert target.tier.name == "sys.oss0.ost0.tier"
    # Without a link, no link resources.
    other = build(sim, name="sys.oss0.ost1")
    assert not other.drives.scm_links
    assert "sys.oss0.ost1.scm0.pcie.up" not in sim.flows.resources


def test_write_path_is_the_ingest_scaled_by_share() -> None:
    sim = Simulation(seed=1)
    target = build(sim, drive_link={"generation": 4, "lanes": 4})
    cost = target.cost("write", 2**20, True, obj="f")
    assert cost.obj == "f" and cost.op == "write"
    scm = target.drives.scm_spec
    # Zero-load: one SCM write, command then data stage; the access latency holds nothing.
    assert cost.drive_latency_s == pytest.approx(
        scm.cmd_s("write", 2**20) + scm.xfer_s("write", 2**20)
    )
    assert cost.delay_s == pytest.approx(
        scm.delay_s("write", 2**20) + 2**20 / target.drives.link_Bps
    )
    full = weights(target.path(cost))
    half = weights(target.path(cost, share=0.5))
    assert full["sys.oss0.ost0.tier.scm_buffer.gate"] == 1.0
    # 2 replicas over 4 SCM drives, each byte written costs read/write = 1.25 of a drive.
    assert full["sys.oss0.ost0.scm0"] == pytest.approx(2 * 1.25 / 4)
    assert full["sys.oss0.ost0.scm0.pcie.down"] == pytest.approx(2 / 4)
    assert not any(k.startswith("sys.oss0.ost0.qlc") for k in full)
    for key, w in full.items():
        assert half[key] == pytest.approx(0.5 * w)


def test_flow_write_then_read_from_where_the_bytes_live() -> None:
    sim = Simulation(seed=1)
    target = build(sim)
    flow = write_flow(sim, target, 10 * GB, "small", 2 * GB)
    sim.run(flow.done)
    # 10 GB sit below the 20 GB hold level: all in SCM, a read goes to the SCM drives.
    assert target.tier.location("small") == pytest.approx((10 * GB, 0.0))
    cost = target.cost("read", 2**20, True, obj="small")
    assert isinstance(cost.detail, TierRead)
    path = weights(target.path(cost))
    assert set(path) == {f"sys.oss0.ost0.scm{i}" for i in range(4)}
    assert sum(path.values()) == pytest.approx(1.0)
    # A big write migrates: its reads split between SCM and QLC by where the bytes are.
    big = write_flow(sim, target, 60 * GB, "big", 4 * GB)
    sim.run(big.done)
    scm_B, qlc_B = target.tier.location("big")
    assert qlc_B > 0 and scm_B > 0
    cost = target.cost("read", 2**20, True, obj="big")
    path = weights(target.path(cost))
    on_scm = sum(w for k, w in path.items() if ".scm" in k)
    on_qlc = sum(w for k, w in path.items() if ".qlc" in k and not k.endswith(".ops"))
    assert on_scm == pytest.approx(scm_B / (scm_B + qlc_B))
    assert on_qlc == pytest.approx(qlc_B / (scm_B + qlc_B))  # incompressible: c = 1
    # Conservation: what was ingested is in SCM or migrated, nowhere else.
    check = target.tier.check()
    assert check.ingested_B == pytest.approx(70 * GB, rel=1e-9)
    assert check.ingested_B == pytest.approx(check.scm_B + check.migrated_B, rel=1e-12)
    # The oldest bytes left first: all of "small", then the start of "big".
    assert target.tier.location("small") == pytest.approx((0.0, 10 * GB))
    assert check.migrated_B == pytest.approx(10 * GB + qlc_B, rel=1e-9)


def test_a_flow_striped_over_two_targets_fills_each_by_its_share() -> None:
    sim = Simulation(seed=1)
    a, b = build(sim, name="s.ost0"), build(sim, name="s.ost1")
    ca, cb = (t.cost("write", 2**20, True, obj="f") for t in (a, b))
    flow = sim.flows.start_flow(8 * GB, a.path(ca, 0.5) + b.path(cb, 0.5), name="f")
    a.flow_started(ca, flow, 0.5)
    b.flow_started(cb, flow, 0.5)
    sim.run(flow.done)
    for t in (a, b):
        assert t.tier.check().ingested_B == pytest.approx(4 * GB, rel=1e-9)
        assert t.tier.location("f")[0] == pytest.approx(4 * GB, rel=1e-9)


def test_a_never_written_object_is_read_as_aged_data_on_qlc() -> None:
    sim = Simulation(seed=1)
    target = build(sim)
    cost = target.cost("read", 2**20, False, obj="old")
    assert target.tier.aged_B == pytest.approx(target.aged_size_B()) == pytest.approx(GB)
    assert target.tier.location("old") == pytest.approx((0.0, GB))
    path = weights(target.path(cost))
    assert not any(".scm" in k for k in path)
    # Spread over all 12 drives (rotate), physical = logical (incompressible).
    qlc = [path[f"sys.oss0.ost0.qlc{j}"] for j in range(12)]
    assert qlc == pytest.approx([1 / 12] * 12)
    qlc_spec = target.drives.qlc_spec
    assert cost.drive_latency_s == pytest.approx(
        qlc_spec.cmd_s("read", 2**20) + qlc_spec.xfer_s("read", 2**20)
    )
    # A second read places nothing more; conservation holds (aged is not ingested).
    target.cost("read", 2**20, False, obj="old")
    check = target.tier.check()
    assert check.aged_B == pytest.approx(GB) and check.ingested_B == 0.0
    assert check.qlc_objects_B == pytest.approx(check.migrated_B + check.aged_B)


def test_a_failed_qlc_drive_degrades_reads_until_rebuilt() -> None:
    sim = Simulation(seed=1)
    target = build(sim, rebuild={"priority": 0.3}, drive_fill=0.001)
    life = target.spec.build_life(sim, target, "flow")
    assert isinstance(life, TierLife) and isinstance(life, StatefulTarget)
    assert life.name == "sys.oss0.ost0"
    healthy = target.cost("read", 2**20, False, obj="old")
    life.fail_drive(3)  # QLC drive 3
    assert life.status().failed_drives == (3,)
    degraded = target.cost("read", 2**20, False, obj="old")
    assert isinstance(degraded.detail, TierRead)
    before, after = weights(target.path(healthy)), weights(target.path(degraded))
    assert "sys.oss0.ost0.qlc3" not in after
    # The lost strip's 1/12 is read as 8 strips from the survivors, and decoded.
    survivors = sum(w for k, w in after.items() if ".qlc" in k and not k.endswith(".ops"))
    assert survivors == pytest.approx(11 / 12 + 8 / 12)
    assert degraded.detail.decode_s > 0 and healthy.detail.decode_s == 0.0
    assert degraded.drive_latency_s > healthy.drive_latency_s
    assert sum(before.values()) < sum(after.values())
    # The rebuild (15 GB at a 0.3 share of idle drives) ends; reads are whole again.
    sim.run(until=600.0)
    assert life.status().failed_drives == ()
    again = weights(target.path(target.cost("read", 2**20, False, obj="old")))
    assert sum(w for k, w in again.items() if ".qlc" in k and not k.endswith(".ops")) == (
        pytest.approx(1.0)
    )


def test_account_wear_counts_replicas_and_migration() -> None:
    sim = Simulation(seed=1)
    target = build(sim)
    flow = write_flow(sim, target, 60 * GB, "w", 4 * GB)
    sim.run(flow.done)
    target.account_wear(lambda _r: 0.0)
    scm = [s.bytes_written_B for s in target.drives.scm_state]
    assert scm == pytest.approx([2 * 60 * GB / 4] * 4)  # 2 replicas over 4 drives
    qlc = sum(s.bytes_written_B for s in target.drives.qlc_state)
    # Migrated bytes land with parity: (8 + 2) / 8 physical per logical byte.
    assert qlc == pytest.approx(target.tier.migrated_B * 10 / 8, rel=1e-9)


# --------------------------------------------------------------- request
def run_op(sim: Simulation, target: TierTarget, op: str, obj: str, size_B: float) -> float:
    """One request-fidelity operation; returns its time (s)."""
    cost = target.cost(op, size_B, False, obj=obj)  # type: ignore[arg-type]
    start = sim.now
    done = sim.env.process(target.visit(sim.env, cost))
    sim.run(done)
    return sim.now - start


def busy(sim: Simulation, prefix: str) -> float:
    return sum(q.busy_time_s for q in sim.env.queues if q.name.startswith(prefix))


def test_request_write_then_read_where_the_bytes_are() -> None:
    sim = Simulation(seed=3)
    target = build(sim)
    scm = target.drives.scm_spec
    took = run_op(sim, target, "write", "r", 2**20)
    # Zero load: the cost's latency and delay exactly.
    cost = target.cost("write", 2**20, False, obj="r")
    assert took == pytest.approx(cost.drive_latency_s + cost.delay_s)
    assert target.tier.location("r") == (2**20, 0.0)
    # Two replicas on two distinct SCM drives, counted as wear.
    written = [s.bytes_written_B for s in target.drives.scm_state]
    assert sorted(written) == [0.0, 0.0, 2**20, 2**20]
    assert target.drives.request_user_B == 2**20
    target.account_wear(lambda _r: 0.0)  # flows wrote nothing more
    assert sum(s.bytes_written_B for s in target.drives.scm_state) == 2 * 2**20
    # A read of it visits one SCM drive, none of the QLC drives.
    qlc_before = busy(sim, "sys.oss0.ost0.qlc")
    scm_before = busy(sim, "sys.oss0.ost0.scm")
    took = run_op(sim, target, "read", "r", 2**20)
    assert busy(sim, "sys.oss0.ost0.qlc") == qlc_before
    assert busy(sim, "sys.oss0.ost0.scm") == pytest.approx(
        scm_before + scm.cmd_s("read", 2**20) + scm.xfer_s("read", 2**20)
    )
    assert took == pytest.approx(
        scm.cmd_s("read", 2**20) + scm.xfer_s("read", 2**20) + scm.delay_s("read", 2**20)
    )


def test_request_reads_of_aged_data_go_to_qlc_and_reconstruct_when_degraded() -> None:
    sim = Simulation(seed=5)
    target = build(sim, drive_fill=0.5)
    life = target.spec.build_life(sim, target, "request")
    for _ in range(40):
        run_op(sim, target, "read", "old", 2**20)
    assert busy(sim, "sys.oss0.ost0.scm") == 0.0
    visits = [
        q
        for q in sim.env.queues
        if q.name.startswith("sys.oss0.ost0.qlc") and q.name.endswith(".xfer")
    ]
    assert sum(q.busy_time_s > 0 for q in visits) >= 10  # spread over the drives
    healthy = sum(q.busy_time_s for q in visits)
    life.fail_drive(0)
    for _ in range(40):
        run_op(sim, target, "read", "old", 2**20)
    qlc0 = next(q for q in visits if q.name == "sys.oss0.ost0.qlc0.xfer")
    busy0 = qlc0.busy_time_s
    degraded = sum(q.busy_time_s for q in visits) - healthy
    # Reads of drive 0's strips cost 8 survivor reads each: more drive time than healthy.
    assert degraded > healthy
    run_op(sim, target, "read", "old", 2**20)
    assert qlc0.busy_time_s == busy0  # the failed drive is never read


def test_request_writes_migrate_and_conserve_bytes() -> None:
    sim = Simulation(seed=2)
    target = build(sim, write_buffer="64 MiB", stripe_size="8 MiB")
    for i in range(80):
        run_op(sim, target, "write", f"o{i % 3}", 2**20)
    sim.run(until=sim.now + 5.0)
    check = target.tier.check()
    assert check.ingested_B == 80 * 2**20
    assert check.migrated_B > 0
    assert check.ingested_B == pytest.approx(check.scm_B + check.migrated_B, rel=1e-12)
    # The object's bytes are where the tier says: a read splits by them.
    cost = target.cost("read", 2**20, False, obj="o0")
    f_scm, qlc_w, f_qlc = cost.detail.where
    scm_B, qlc_B = target.tier.location("o0")
    assert f_scm == pytest.approx(scm_B / (scm_B + qlc_B))
    assert f_qlc == pytest.approx(qlc_B / (scm_B + qlc_B))
    assert float(np.sum(qlc_w)) == pytest.approx(f_qlc)


def test_life_fast_forward_and_reset() -> None:
    sim = Simulation(seed=1)
    target = build(sim)
    life = target.spec.build_life(sim, target, "flow")
    life.age(100 * GB)
    status = life.status()
    assert status.buffer_fill == pytest.approx(0.5)  # held at migrate_above
    assert status.host_written_B > 0
    assert target.tier.migrated_B == pytest.approx(80 * GB)
    life.reset()
    assert life.status().buffer_fill == 0.0
    assert all(s.bytes_written_B == 0.0 for s in target.drives.qlc_state)
    with pytest.raises(ValueError, match=r"^drive: 16 is not a drive"):
        life.fail_drive(16)


def test_links_carry_migration_and_rebuild_bytes() -> None:
    sim = Simulation(seed=1)
    # A PCIe 3 x1 link (0.985 GB/s) is slower than every drive.
    target = build(sim, drive_link={"generation": 3, "lanes": 1})
    link = target.drives.link_Bps
    flow = write_flow(sim, target, 40 * GB, "w", 1 * GB)
    sim.run(flow.done)
    sim.run(until=sim.now + 60.0)
    # Migration read every SCM byte once up its link and wrote (8+2)/8 of it down QLC links.
    usage = sim.flows.usage()
    moved = dict(zip((r.name for r in usage.resources), usage.work[:, 0], strict=True))
    scm_up = sum(moved[f"sys.oss0.ost0.scm{i}.pcie.up"] for i in range(4))
    qlc_down = sum(moved[f"sys.oss0.ost0.qlc{j}.pcie.down"] for j in range(12))
    assert scm_up == pytest.approx(target.tier.migrated_B, rel=1e-6)
    assert qlc_down == pytest.approx(target.tier.migrated_B * 10 / 8, rel=1e-6)
    life = target.spec.build_life(sim, target, "flow")
    assert isinstance(life, TierLife)
    path, alone, redundancy = life.rebuild_path(0)
    names = {r.name for r, _ in path}
    assert "sys.oss0.ost0.qlc1.pcie.up" in names and "sys.oss0.ost0.qlc1.pcie.down" in names
    # Each survivor reads 8/11 of a rebuilt byte up its link: the link binds the rebuild.
    assert alone == pytest.approx(link / (8 / 11))
    assert redundancy == 2


def test_a_failed_scm_drive_takes_no_replica() -> None:
    sim = Simulation(seed=4)
    target = build(sim)
    life = target.spec.build_life(sim, target, "request")
    life.fail_drive(12)  # SCM drive 0 (QLC drives come first)
    for i in range(30):
        run_op(sim, target, "write", f"o{i}", 2**20)
    assert target.drives.scm_state[0].bytes_written_B == 0.0
    assert sum(s.bytes_written_B for s in target.drives.scm_state) == 2 * 30 * 2**20
    # Flow writes too: the ingest path avoids it.
    cost = target.cost("write", 2**20, True, obj="f")
    assert "sys.oss0.ost0.scm0" not in weights(target.path(cost))


def test_vast_builds_its_drives_and_pool_from_the_same_parts() -> None:
    from flashsim.components.tier_drives import TierDrives
    from flashsim.scenario import load_system_model
    from flashsim.systems.vast.system import VastSystem

    loaded = load_system_model("models/systems/vast-pdsw21.toml")
    sim = Simulation(0)
    system = loaded.kind.build(loaded.model, sim, "flow")
    assert isinstance(system, VastSystem)
    assert isinstance(system.drives, TierDrives)
    assert system.tier.scm is not None and system.drives.scm == system.tier.scm
    assert isinstance(system.pool, TierLife) and system.pool.tier_drives is system.drives
    # Names stay the system's: resources per DNode, request queues over all DNodes.
    assert system.drives.scm[0].name == f"{loaded.model.name}.dnode0.scm0"
    assert system.drives.scm_queue_names[-1] == f"{loaded.model.name}.scm{len(system.scm) - 1}"


@settings(max_examples=15, deadline=None)
@given(
    writes=st.lists(
        st.tuples(st.floats(0.5, 30.0), st.sampled_from([0.25, 0.5, 1.0]), st.integers(0, 2)),
        min_size=1,
        max_size=5,
    )
)
def test_ingested_equals_scm_plus_migrated_for_any_writes(
    writes: list[tuple[float, float, int]],
) -> None:
    """Flows carrying any share of their bytes into a target: every byte in SCM or migrated."""
    sim = Simulation(seed=1)
    target = build(sim)
    total = 0.0
    for size_gb, share, obj in writes:
        cost = target.cost("write", 2**20, True, obj=f"o{obj}")
        flow = sim.flows.start_flow(size_gb * GB, target.path(cost, share), rate_cap_Bps=2 * GB)
        target.flow_started(cost, flow, share)
        total += share * size_gb * GB
    sim.run(until=200.0)
    check = target.tier.check()
    assert check.ingested_B == pytest.approx(total, rel=1e-9)
    assert check.ingested_B == pytest.approx(check.scm_B + check.migrated_B, rel=1e-12)
    held = sum(sum(target.tier.location(f"o{i}")) for i in range(3))
    assert held == pytest.approx(total, rel=1e-9)


def test_both_fidelities_reach_the_write_peak() -> None:
    """Saturated writes: a flow and 16 request writers both get ``peak_Bps("write")``."""
    spec = spec_of()
    peak = spec.peak_Bps("write")  # 4 SCM x 2 GB/s / 2 replicas
    sim = Simulation(seed=1)
    target = build(sim)
    cost = target.cost("write", 2**20, True, obj="f")
    flow = sim.flows.start_flow(8 * GB, target.path(cost), name="f")
    target.flow_started(cost, flow)
    sim.run(until=1.0)  # below the hold level: no migration yet
    assert flow.rate_Bps == pytest.approx(peak, rel=1e-9)

    sim = Simulation(seed=1)
    target = build(sim)
    ops = 200

    def writer(w: int) -> Any:
        for _ in range(ops):
            yield from target.visit(sim.env, target.cost("write", 2**20, True, obj=f"w{w}"))

    done = sim.env.all_of([sim.env.process(writer(w)) for w in range(16)])
    sim.run(done)
    rate = 16 * ops * 2**20 / sim.now
    assert 0.9 * peak <= rate <= peak * (1 + 1e-9)
