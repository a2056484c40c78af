"""The SCM/QLC tier and its fluid write buffer: accounting, visibility, back-pressure, placement."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from flashsim.components.fluid import DrainPath, FluidBuffer
from flashsim.components.tier import ScmQlcTier, TierSpec, compressed_fraction
from flashsim.engine.simulation import Simulation

GB = 1e9


def make_tier(
    sim: Simulation,
    buffer_B: float = 100 * GB,
    migrate_above: float = 0.5,
    qlc_write_Bps: float = 1 * GB,
    n_qlc: int = 12,
    ec: tuple[int, int] = (8, 2),
    stripe_B: float = 4 * GB,
    placement: str = "rotate",
    entropy: float = 8.0,
) -> ScmQlcTier:
    """A tier of 4 SCM drives (2.5 GB/s read, 2 GB/s write) and ``n_qlc`` QLC drives."""
    scm = [sim.flows.add_resource(f"scm{i}", 2.5 * GB) for i in range(4)]
    qlc = [sim.flows.add_resource(f"qlc{i}", 3.2 * GB) for i in range(n_qlc)]
    # Read operations: 427k IOPS of 32 KiB chunks per drive.
    ops = [sim.flows.add_resource(f"qlc{i}.ops", 427e3 * 32768) for i in range(n_qlc)]
    spec = TierSpec.model_validate(
        {
            "write_buffer": f"{buffer_B} B",
            "migrate_above": migrate_above,
            "stripe_size": f"{stripe_B} B",
            "ec_data": ec[0],
            "ec_parity": ec[1],
            "placement": placement,
        }
    )
    return ScmQlcTier(
        sim,
        "t",
        spec,
        scm,
        qlc,
        scm_write_cost=2.5 / 2.0,
        qlc_write_cost=3.2 * GB / qlc_write_Bps,
        entropy_of=lambda _obj: entropy,
        qlc_ops=ops,
    )


def write(sim: Simulation, tier: ScmQlcTier, size_B: float, obj: str, cap_Bps: float):
    """Start a writer of ``size_B`` bytes at most ``cap_Bps`` into the tier."""
    flow = sim.flows.start_flow(size_B, tier.ingest_path(), rate_cap_Bps=cap_Bps, name=obj)
    tier.buffer.add_ingest(flow, obj)
    return flow


def test_bytes_written_equal_scm_plus_migrated_at_every_checkpoint() -> None:
    sim = Simulation(0)
    tier = make_tier(sim, buffer_B=50 * GB, migrate_above=0.4)
    flows = [write(sim, tier, 80 * GB, f"f{i}", 2 * GB) for i in range(3)]
    flows.append(write(sim, tier, 30 * GB, "late", 1 * GB))
    checked = 0
    for t in np.linspace(0.5, 60.0, 40):
        sim.run(until=float(t))
        check = tier.check()
        written = sum(f.size_B - f.remaining_B for f in flows)
        assert check.ingested_B == pytest.approx(written, rel=1e-9)
        assert check.ingested_B == pytest.approx(check.scm_B + check.migrated_B, rel=1e-12)
        # Per object: what it wrote is in SCM or in QLC, nowhere else.
        for f, name in zip(flows, ["f0", "f1", "f2", "late"], strict=True):
            scm, qlc = tier.location(name)
            assert scm + qlc == pytest.approx(f.size_B - f.remaining_B, rel=1e-9, abs=1.0)
        assert check.qlc_objects_B == pytest.approx(check.migrated_B, rel=1e-9)
        checked += 1
    assert tier.migrated_B > 50 * GB  # migration really ran
    assert checked == 40


def test_reader_never_sees_data_before_its_write_completed() -> None:
    sim = Simulation(0)
    tier = make_tier(sim)
    assert tier.committed_B("a") == 0.0
    flow = write(sim, tier, 20 * GB, "a", 1 * GB)
    for t in (1.0, 5.0, 12.5, 19.9):
        sim.run(until=t)
        moved = flow.size_B - flow.remaining_B
        # What a reader can see is exactly what the tier has acknowledged so far.
        assert tier.committed_B("a") == pytest.approx(moved, rel=1e-9)
        assert tier.committed_B("a") < flow.size_B
    sim.run(flow.done)
    assert tier.committed_B("a") == pytest.approx(20 * GB, rel=1e-9)


def test_buffered_reader_sees_only_written_back_data() -> None:
    """A file still in the writer's client cache is not visible to other clients."""
    from flashsim.scenario import load_system_model
    from flashsim.studies.vast import _ior

    loaded = load_system_model("models/systems/vast-pdsw21.toml")
    sim = Simulation(0)
    system = loaded.kind.build(loaded.model, sim, "flow")
    phase = _ior("w", "write", 1, 1, 2**20, "d", fsync=False, segments=20_000)
    system.ior.run(phase)  # no fsync: the last dirty pages stay in the client cache
    obj = system.object_name("d", 0)
    cached = system.caches[0].bytes_of(obj)
    assert cached > 0
    committed = system.tier.committed_B(obj)
    assert committed == pytest.approx(20_000 * 2**20 - cached, rel=1e-9)
    read = _ior("r", "read", 1, 1, 2**20, "never-written")
    system.ior.datasets["never-written"] = np.array([2**20])
    with pytest.raises(ValueError, match="holds no committed data"):
        system.ior.run(read)


def test_full_buffer_slows_writers_to_the_migration_rate() -> None:
    sim = Simulation(0)
    # 12 QLC drives of 0.25 GB/s writes, 8+2: migration runs at 12*0.25*8/10 = 2.4 GB/s.
    tier = make_tier(sim, buffer_B=40 * GB, migrate_above=0.5, qlc_write_Bps=0.25 * GB)
    flows = [write(sim, tier, 400 * GB, f"w{i}", 1.5 * GB) for i in range(2)]
    sim.run(until=5.0)
    early = sum(f.rate_Bps for f in flows)
    assert early == pytest.approx(3 * GB, rel=1e-6)  # the buffer absorbs the burst
    sim.run(until=60.0)
    level = tier.check().scm_B
    assert level == pytest.approx(40 * GB, rel=1e-6)  # full
    migration = 12 * 0.25 * GB * 8 / 10
    assert sum(f.rate_Bps for f in flows) == pytest.approx(migration, rel=1e-3)
    assert tier.buffer.out_rate_Bps == pytest.approx(migration, rel=1e-3)
    # Bytes are still conserved while back-pressured.
    check = tier.check()
    assert check.ingested_B == pytest.approx(check.scm_B + check.migrated_B, rel=1e-12)


def test_migration_holds_the_newest_data_in_scm() -> None:
    sim = Simulation(0)
    tier = make_tier(sim, buffer_B=100 * GB, migrate_above=0.5)
    old = write(sim, tier, 60 * GB, "old", 2 * GB)
    sim.run(old.done)
    new = write(sim, tier, 40 * GB, "new", 2 * GB)
    sim.run(new.done)
    sim.run(until=sim.now + 10)
    assert tier.check().scm_B == pytest.approx(50 * GB, rel=1e-6)
    assert tier.location("new")[0] == pytest.approx(40 * GB, rel=1e-6)  # newest stays
    assert tier.location("old")[0] == pytest.approx(10 * GB, rel=1e-6)
    assert tier.location("old")[1] == pytest.approx(50 * GB, rel=1e-6)
    f_scm, _, f_qlc = tier.read_weights("old")
    assert f_scm == pytest.approx(1 / 6) and f_qlc == pytest.approx(5 / 6)


@pytest.mark.parametrize("placement", ["rotate", "packed"])
def test_incompressible_stripes_span_all_drives_of_a_stripe(placement: str) -> None:
    sim = Simulation(0)
    tier = make_tier(sim, buffer_B=20 * GB, migrate_above=0.0, stripe_B=2 * GB, placement=placement)
    flow = write(sim, tier, 30 * GB, "rand", 5 * GB)
    sim.run(flow.done)
    sim.run(until=sim.now + 60)
    assert tier.migrated_B == pytest.approx(30 * GB, rel=1e-9)
    assert tier.stripe_log
    for _start, width, c in tier.stripe_log:
        assert c == 1.0
        assert width == 8 + 2
    loc = tier.qlc_objects["rand"]
    used = np.flatnonzero(loc.phys_read_B > 0)
    # Each full-width stripe puts data on all of its 10 drives.
    assert used.size >= 10
    if placement == "packed":
        assert used.size == 10


def test_compressible_data_packs_into_fewer_drives() -> None:
    sim = Simulation(0)
    tier = make_tier(
        sim, buffer_B=20 * GB, migrate_above=0.0, stripe_B=2 * GB, placement="packed", entropy=2.0
    )
    flow = write(sim, tier, 10 * GB, "text", 5 * GB)
    sim.run(flow.done)
    sim.run(until=sim.now + 60)
    c = compressed_fraction(2.0, tier.spec.min_compressed_fraction)
    assert c == pytest.approx(0.25)
    widths = {w for _s, w, _c in tier.stripe_log}
    assert widths == {math.ceil(8 * 0.25) + 2}
    loc = tier.qlc_objects["text"]
    assert np.count_nonzero(loc.phys_read_B) == 4
    # A logical byte read costs c physical bytes, spread over the narrow stripe.
    _, weights, _ = tier.read_weights("text")
    assert weights.sum() == pytest.approx(0.25, rel=1e-9)
    # Physical QLC bytes written include parity: c * w / (w - m) per logical byte, the
    # narrow stripe keeping its 2 parity strips for 2 data strips.
    assert tier.qlc_phys_written_B.sum() == pytest.approx(10 * GB * 0.25 * 4 / 2, rel=1e-9)


def test_compressible_data_in_packed_narrow_stripes_reads_slower() -> None:
    """Few drives serve many small compressed chunks: drive operations, not bytes, bind."""
    rates = {}
    for entropy in (8.0, 0.4):
        sim = Simulation(0)
        tier = make_tier(
            sim,
            buffer_B=20 * GB,
            migrate_above=0.0,
            stripe_B=2 * GB,
            placement="packed",
            n_qlc=44,
            ec=(36, 4),
            entropy=entropy,
        )
        flow = write(sim, tier, 8 * GB, "f", 5 * GB)
        sim.run(flow.done)
        sim.run(until=sim.now + 60)
        scm, qlc = tier.location("f")
        assert scm < 1.0 and qlc == pytest.approx(8 * GB)
        reader = sim.flows.start_flow(8 * GB, tier.read_path("f"), name="r")
        sim.run(reader.done)
        rates[entropy] = 8 * GB / (reader.end_s - reader.start_s)
    # Incompressible: 40 drives (36+4) at 3.2 GB/s each, 1/40 of every logical byte each.
    assert rates[8.0] == pytest.approx(40 * 3.2 * GB, rel=1e-6)
    # Entropy 0.4 bit/byte -> c = 0.05 -> 2 data + 4 parity strips on 6 drives; each logical
    # byte costs 1/6 of a 32 KiB chunk operation on each: 6 x 427k x 32 KiB.
    assert rates[0.4] == pytest.approx(6 * 427e3 * 32768, rel=1e-6)
    assert rates[0.4] < 0.7 * rates[8.0]


def test_fluid_buffer_conserves_bytes_and_follows_ingest() -> None:
    sim = Simulation(0)
    src = sim.flows.add_resource("src", 1 * GB)
    sink = sim.flows.add_resource("sink", 2 * GB)
    buf = FluidBuffer(sim, "b", 100 * GB, 50 * GB, lambda _o: DrainPath([(sink, 1.0)]))
    flow = sim.flows.start_flow(100 * GB, [(src, 1.0), *buf.ingest_path()], name="w")
    buf.add_ingest(flow, "x")
    sim.run(until=40.0)
    assert buf.check().level_B == pytest.approx(40 * GB)
    assert not buf.draining
    sim.run(until=80.0)
    # At the hold level the drain follows the 1 GB/s ingest exactly.
    assert buf.check().level_B == pytest.approx(50 * GB, rel=1e-9)
    assert buf.out_rate_Bps == pytest.approx(1 * GB, rel=1e-6)
    done = buf.flush()
    sim.run(done)
    check = buf.check()
    assert check.level_B == pytest.approx(0.0, abs=1.0)
    assert check.drained_B == pytest.approx(100 * GB, rel=1e-9)
    # From t=80: drain at 2 GB/s against 1 GB/s ingest until t=100 (50 -> 30 GB), then 15 s.
    assert sim.now == pytest.approx(115.0, rel=1e-6)


def test_fluid_buffer_takes_bytes_outside_flows_and_leaves_no_residue() -> None:
    """Request-fidelity writes add bytes directly; a drained object leaves no rounding residue."""
    sim = Simulation(0)
    sink = sim.flows.add_resource("sink", 2 * GB)
    buf = FluidBuffer(sim, "b", 100 * GB, 50 * GB, lambda _o: DrainPath([(sink, 1.0)]))
    a = (GB / 3, 2 * GB / 3, GB / 7)  # three pieces of "a" whose sum rounds differently
    for obj, b in (("a", a[0]), ("b", GB), ("a", a[1]), ("b", GB), ("a", a[2])):
        buf.add_bytes(obj, b)
    assert buf.bytes_of("a") == pytest.approx(sum(a))
    assert buf.check().ingested_B == pytest.approx(sum(a) + 2 * GB)
    assert not buf.draining  # below the hold level: nothing to migrate yet
    sim.run(buf.flush())
    assert buf.bytes_of("a") == 0.0 and buf.bytes_of("b") == 0.0
    assert buf.check().per_object_B == {}
    # Above the hold level the drain starts at once and takes the excess.
    buf.add_bytes("c", 60 * GB)
    assert buf.draining
    sim.run(until=sim.now + 10.0)
    assert buf.check().level_B == pytest.approx(50 * GB, rel=1e-9)
    with pytest.raises(ValueError, match="bytes"):
        buf.add_bytes("d", -1.0)


def test_fluid_buffer_rejects_bad_parameters() -> None:
    sim = Simulation(0)
    with pytest.raises(ValueError, match="capacity_B"):
        FluidBuffer(sim, "b", 0.0, 0.0, lambda _o: DrainPath([]))
    with pytest.raises(ValueError, match="drain_start_B"):
        FluidBuffer(sim, "c", 1.0, 2.0, lambda _o: DrainPath([]))
    with pytest.raises(ValueError, match="entropy"):
        compressed_fraction(9.0, 0.05)


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.floats(1.0, 80.0), min_size=1, max_size=4),
    caps=st.lists(st.floats(0.2, 3.0), min_size=4, max_size=4),
    buffer_gb=st.floats(5.0, 60.0),
    hold=st.floats(0.0, 1.0),
    qlc_gb=st.floats(0.1, 2.0),
)
# A write far larger than the buffer, drained slowly: finishes only after ~380 s.
@example(sizes=[46.0], caps=[3.0, 1.0, 1.0, 1.0], buffer_gb=5.0, hold=0.0, qlc_gb=0.109375)
def test_property_bytes_are_conserved_and_buffer_never_overflows(
    sizes: list[float], caps: list[float], buffer_gb: float, hold: float, qlc_gb: float
) -> None:
    sim = Simulation(0)
    tier = make_tier(sim, buffer_B=buffer_gb * GB, migrate_above=hold, qlc_write_Bps=qlc_gb * GB)
    flows = [write(sim, tier, s * GB, f"o{i}", caps[i] * GB) for i, s in enumerate(sizes)]
    # Long enough for every write: the writers' own rate, and the QLC drain for what the
    # buffer cannot hold (46 GB into a 5 GB buffer draining at 0.11 GB/s takes ~380 s).
    overflow = max(0.0, sum(sizes) - buffer_gb)
    horizon = 2 * (sum(sizes) / min(caps[: len(sizes)]) + overflow / qlc_gb) + 10
    for t in np.linspace(horizon / 20, horizon, 20):
        sim.run(until=float(t))
        check = tier.check()
        written = sum(f.size_B - f.remaining_B for f in flows)
        assert check.ingested_B == pytest.approx(written, rel=1e-9, abs=1.0)
        assert check.ingested_B == pytest.approx(check.scm_B + check.migrated_B, rel=1e-9)
        assert check.scm_B <= buffer_gb * GB * (1 + 1e-6) + 1.0
    assert all(f.done.triggered for f in flows)
