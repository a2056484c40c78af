"""Spider (seed 003): the model file, the `block-io` phase and the 1 MiB vs 4 MiB mechanism."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_config_cli import assert_clean_error

from flashsim.components.drive import load_drive
from flashsim.components.hdd import HddSpec, HddStream
from flashsim.components.raid import RaidSpec
from flashsim.scenario import load_scenario, load_system_model, run_loaded
from flashsim.systems.lustre.blockio import BlockIoDetails

MODEL = "models/systems/spider.toml"
SCENARIO = "scenarios/spider/block-io-rpc-size.toml"
MiB = 2.0**20

# Hand computation from the drive datasheet (Seagate Barracuda ES.2 ST31000340NS, the drive
# file) and the couplet of the model (seed 003 §4.1: 240 GB/s / 48 couplets, 28 tiers of 8+2).
SEEK_WRITE_S = 9.5e-3
HALF_TURN_S = 0.5 * 60.0 / 7200.0
MEDIA_BPS = 105e6
TIERS = 28
COUPLET_BPS = 5e9


def hand_random_write_eff(request_B: float) -> float:
    """Couplet efficiency of random full-stripe writes: each of a tier's 10 drives positions
    once per request and writes request / 8 contiguous bytes; the couplet caps the total."""
    drive_s = SEEK_WRITE_S + HALF_TURN_S + request_B / 8 / MEDIA_BPS
    drives_Bps = TIERS * request_B / drive_s
    return min(drives_Bps, COUPLET_BPS) / COUPLET_BPS


@pytest.fixture(scope="module")
def block_io() -> dict[str, BlockIoDetails]:
    loaded = load_scenario(SCENARIO)
    result = run_loaded(loaded)
    return {p.name: p.details(BlockIoDetails) for p in result.phases}


def test_model_loads_with_the_seed_counts() -> None:
    loaded = load_system_model(MODEL)
    model = loaded.model
    oss = model.oss
    assert oss.count * oss.targets_per_server == 1344  # 13,440 drives / 10 per tier
    assert oss.count * oss.targets_per_server * oss.drives_per_target == 13440  # §4.1
    assert oss.controller is not None and oss.count // oss.controller.servers == 48  # §4.1
    assert model.mds is not None and model.mds.count == 3  # §4.1
    desc = loaded.kind.describe(model)
    assert desc.derived["system_write_Bps_peak"] == pytest.approx(240e9)  # "over 240 GB/s"
    assert desc.bottlenecks["system write_Bps"] == "RAID controller (share)"
    assert desc.derived["usable_capacity_B"] == pytest.approx(13440 * 1e12 * 0.8)  # > 10 PB


def test_fixed_tier_writes_one_contiguous_run_per_drive() -> None:
    """8+2 fixed tier: a 4 MiB write is 512 KiB on each of 10 drives; declustered, 40 chunks."""
    fixed = RaidSpec(level="raid6", data=8, parity=2, chunk="128 KiB", declustered=False)
    (op,) = fixed.write_ops(4 * MiB)
    assert (op.op, op.size_B, op.count) == ("write", 512 * 1024, 10)
    (one,) = fixed.write_ops(MiB)
    assert (one.size_B, one.count) == (128 * 1024, 10)
    (read,) = fixed.read_ops(4 * MiB)
    assert (read.size_B, read.count) == (512 * 1024, 8)
    spread = RaidSpec(level="raid6", data=8, parity=2, chunk="128 KiB", declustered=True)
    (chunks,) = spread.write_ops(4 * MiB)
    assert (chunks.size_B, chunks.count) == (128 * 1024, 40)


def test_streaming_hdd_pays_no_positioning() -> None:
    spec = load_drive("models/drives/seagate-st31000340ns.toml")
    assert isinstance(spec, HddSpec)
    chunk = 128 * 1024
    assert HddStream(spec).cmd_s("write", chunk) == pytest.approx(chunk / MEDIA_BPS)
    positioned = SEEK_WRITE_S + HALF_TURN_S + chunk / MEDIA_BPS
    assert spec.cmd_s("write", chunk) == pytest.approx(positioned)


@pytest.mark.parametrize(
    ("phase", "request_B"), [("random-write-1m", MiB), ("random-write-4m", 4 * MiB)]
)
def test_random_write_efficiency_matches_the_hand_computation(
    block_io: dict[str, BlockIoDetails], phase: str, request_B: float
) -> None:
    got = block_io[phase]
    assert got.peak_Bps == pytest.approx(COUPLET_BPS)
    assert got.devices == TIERS
    assert got.drive_run_B == pytest.approx(request_B / 8)
    assert got.efficiency == pytest.approx(hand_random_write_eff(request_B), rel=1e-6)


def test_four_mib_requests_restore_the_efficiency_one_mib_loses(
    block_io: dict[str, BlockIoDetails],
) -> None:
    """Seed 003 §5: 35-40 % of peak at 1 MiB, above 80 % at 4 MiB."""
    assert 0.35 <= block_io["random-write-1m"].efficiency <= 0.40
    assert block_io["random-write-4m"].efficiency > 0.80
    assert block_io["sequential-write-1m"].efficiency == pytest.approx(1.0)


def test_request_fidelity_agrees_with_flow() -> None:
    """The same couplet test through the queues (controller, drives) in 2 s of simulated time."""
    loaded = load_scenario(
        SCENARIO,
        {
            "phases.random-write-1m.fidelity": '"request"',
            "phases.random-write-1m.duration": '"2 s"',
        },
    )
    loaded.phases[:] = [p for p in loaded.phases if p.name == "random-write-1m"]
    (result,) = run_loaded(loaded).phases
    assert result.fidelity == "request"
    eff = result.details(BlockIoDetails).efficiency
    assert eff == pytest.approx(hand_random_write_eff(MiB), rel=0.03)


# ------------------------------------------------------------------ bad input


def _run(tmp_path: Path, root: Path, phase_body: str) -> subprocess.CompletedProcess[str]:
    model = (root / MODEL).as_posix()
    path = tmp_path / "s.toml"
    path.write_text(
        f'name = "t"\nsystem = "{model}"\n[[phases]]\nname = "b"\nworkload = "block-io"\n'
        'operation = "write"\n' + phase_body
    )
    return subprocess.run(
        [sys.executable, "-m", "flashsim.cli", "run", str(path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("body", "needles"),
    [
        ('request_size = "0 B"\n', ("request_size",)),
        ("queue_depth = 0\n", ("queue_depth",)),
        ('access = "diagonal"\n', ("access", "diagonal")),
        ("server = 999\n", ("server", "999")),
        ("server = 190\nservers = 4\n", ("servers",)),
    ],
    ids=["size-0", "depth-0", "unknown-access", "no-such-server", "past-last-server"],
)
def test_bad_block_io_input_exits_2_with_one_line(
    tmp_path: Path, root: Path, body: str, needles: tuple[str, ...]
) -> None:
    assert_clean_error(_run(tmp_path, root, body), *needles)
