"""A drive file may give bandwidth only: IOPS are asked for only by a phase that needs them."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from flashsim.components.drive import check_drive_for_phase, drive_use, load_drive
from flashsim.components.ssd import SsdSpec
from flashsim.config import ConfigError
from flashsim.scenario import load_system_model, run_scenario
from flashsim.workloads.ior import IorDetails
from tests.cli_helpers import ROOT, run_flashsim
from tests.lustre_scenario import write_scenario

PM1733 = ROOT / "models/drives/samsung-pm1733-15.36TB.toml"


def _bandwidth_only(tmp_path: Path) -> Path:
    """The PM1733's drive file without read_iops / write_iops."""
    text = PM1733.read_text()
    text = re.sub(r"(?m)^(read|write)_iops\s*=.*$", "", text)
    path = tmp_path / "bw-only.toml"
    path.write_text(text)
    return path


def _ior(name: str, operation: str, access: str, transfer: str, extra: str = "") -> str:
    return (
        f'[[phases]]\nname = "{name}"\nworkload = "ior"\noperation = "{operation}"\n'
        f'access = "{access}"\nnodes = 4\nranks_per_node = 8\ntransfer_size = "{transfer}"\n'
        f'block_size = "64 MiB"\n{extra}\n'
    )


def _scenario(tmp_path: Path, drive: Path, body: str) -> Path:
    path = write_scenario(tmp_path, body)
    text = path.read_text().replace(
        '"oss.count" = 1\n', f'"oss.count" = 1\n"oss.drive" = "{drive.as_posix()}"\n'
    )
    path.write_text(text)
    return path


def test_a_drive_file_without_iops_loads_and_its_command_stage_never_binds(tmp_path: Path) -> None:
    drive = load_drive(_bandwidth_only(tmp_path))
    assert isinstance(drive, SsdSpec)
    assert drive.known_iops("read") is None and drive.known_iops("write") is None
    assert math.isinf(drive.iops("read"))
    assert drive.cmd_s("write", 131072.0) == 0.0
    assert drive.random_iops_ceiling("read", 4096.0) == pytest.approx(3.5e9 / 4096)
    assert drive._file == str(tmp_path / "bw-only.toml")


def test_a_bandwidth_study_runs_on_it_and_gets_the_datasheet_drives_numbers(
    tmp_path: Path,
) -> None:
    """Large sequential IOR: the command stage does not bind with the IOPS either."""
    body = _ior("w", "write", "sequential", "1 MiB", "fsync = true") + _ior(
        "r", "read", "sequential", "1 MiB"
    )
    without = run_scenario(_scenario(tmp_path, _bandwidth_only(tmp_path), body))
    full = run_scenario(_scenario(tmp_path, PM1733, body))
    for a, b in zip(without.phases, full.phases, strict=True):
        assert a.bandwidth_Bps == pytest.approx(b.bandwidth_Bps, rel=1e-9)
        assert a.bandwidth_Bps > 0
    details = without.phases[0].extra
    assert isinstance(details, IorDetails)
    assert details.iops_efficiency is None  # no IOPS to compare with


@pytest.mark.parametrize(
    ("phase", "needs"),
    [
        (
            _ior("rr", "read", "random", "4 KiB"),
            "read_iops is needed by phase 'rr' (random 4 KiB reads)",
        ),
        (
            _ior("sw", "write", "sequential", "16 KiB"),
            "write_iops is needed by phase 'sw' (16 KiB writes, below the 128 KiB",
        ),
        (
            _ior("qr", "read", "sequential", "1 MiB", 'fidelity = "request"'),
            "read_iops is needed by phase 'qr' (1024 KiB reads at request fidelity)",
        ),
    ],
)
def test_a_phase_that_needs_the_iops_says_so_in_one_line(
    tmp_path: Path, phase: str, needs: str
) -> None:
    drive = _bandwidth_only(tmp_path)
    proc = run_flashsim("run", str(_scenario(tmp_path, drive, phase)))
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"error: drive 'Samsung PM1733 15.36TB' ({drive}): {needs}")
    assert lines[0].endswith("; add it to the drive file")


def test_the_check_passes_a_drive_with_iops_and_a_bandwidth_phase() -> None:
    class Phase:
        name = "p"
        operation = "read"
        access = "random"
        transfer_size = 4096.0
        fidelity = None

    assert drive_use(Phase()) == ("read", "random 4 KiB reads")
    check_drive_for_phase(load_drive(PM1733), Phase())  # has read_iops: no error
    Phase.access, Phase.transfer_size = "sequential", 2.0**20
    assert drive_use(Phase()) is None


def test_an_inline_drive_is_named_as_inline(tmp_path: Path) -> None:
    class Phase:
        name = "rr"
        operation = "read"
        access = "random"
        transfer_size = 4096.0

    drive = SsdSpec.model_validate(
        {
            "kind": "ssd",
            "name": "X",
            "capacity": "1 TB",
            "read_bandwidth": "1 GB/s",
            "write_bandwidth": "1 GB/s",
        }
    )
    inline = r"drive .X. \(given in the model: inline, or edited by --set\)"
    with pytest.raises(ConfigError, match=inline):
        check_drive_for_phase(drive, Phase())


def test_describe_works_on_a_bandwidth_only_drive(tmp_path: Path) -> None:
    drive = _bandwidth_only(tmp_path)
    model = ROOT / "models/systems/perlmutter.toml"
    loaded = load_system_model(model, {"oss.drive": drive.as_posix()})
    layers = loaded.kind.describe(loaded.model).layers
    raw = next(la for la in layers if la.layer == "drives (raw)" and la.scope == "one OSS")
    assert raw.read_Bps == pytest.approx(12 * 3.5e9)
    proc = run_flashsim("describe", str(model), "--json", "--set", f"oss.drive={drive}")
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)
