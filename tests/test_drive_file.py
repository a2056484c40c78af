"""A drive file from fio measurements alone (flashsim.measurements.drive_file)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from flashsim.components.drive import load_drive
from flashsim.components.ssd import SsdSpec
from flashsim.errors import ConfigError
from flashsim.measurements.drive_file import drive_model_from_fio
from flashsim.measurements.readers import read_measurements
from flashsim.measurements.record import Measurement

DATA = Path(__file__).parent / "data" / "measurements" / "fio"


def _read(*names: str) -> list[Measurement]:
    return read_measurements([DATA / n for n in names])


ALL = tuple(sorted(p.name for p in DATA.glob("*.json")))


def _load(text: str, tmp_path: Path) -> SsdSpec:
    path = tmp_path / "measured.toml"
    path.write_text(text)
    spec = load_drive(path)
    assert isinstance(spec, SsdSpec)
    return spec


def _line(text: str, key: str) -> str:
    (line,) = [li for li in text.splitlines() if li.startswith(f"{key} = ")]
    return line


def test_drive_file_from_every_fixture_loads_with_the_drive_schema(tmp_path: Path) -> None:
    ms = _read(*ALL)
    text = drive_model_from_fio(ms, 'CI "vda"')
    spec = _load(text, tmp_path)
    by_id = {m.id: m for m in ms}
    assert spec.name == 'CI "vda"'
    # sequential: the largest transfer (1 MiB), then the highest bandwidth
    assert spec.read_bandwidth == pytest.approx(1371695840, rel=1e-12)
    assert spec.write_bandwidth == pytest.approx(3427129955, rel=1e-12)
    # random 4 KiB: the highest IOPS
    assert spec.read_iops == pytest.approx(63520.958084, rel=1e-12)
    assert spec.write_iops == pytest.approx(39201.3993, rel=1e-12)
    # zero-load latency: the queue-depth-1 jobs' lat_ns means
    assert spec.read_latency == pytest.approx(84234.723356e-9, rel=1e-12)
    assert spec.write_latency == pytest.approx(59572.845544e-9, rel=1e-12)
    # Little's law: 63520.96 /s x 84.23 us = 5.35
    assert spec.parallelism == 5
    assert spec.capacity == 64 * 2**20
    cited = {
        "read_bandwidth": "seqread-1m:seqread:read:bandwidth",
        "write_bandwidth": "seqwrite-psync-note:seqwrite-psync:write:bandwidth",
        "read_iops": "group-2jobs:group:read:iops",
        "write_iops": "randwrite-4k-qd32:randwrite:write:iops",
        "read_latency": "qd1-4k:qd1-randread:read:latency_mean",
        "write_latency": "qd1-4k:qd1-randwrite:write:latency_mean",
    }
    for key, mid in cited.items():
        assert _line(text, key).endswith(f"# {mid} ({by_id[mid].source})"), key
    assert "ASSUMED lower bound" in _line(text, "capacity")
    assert "trim_bandwidth: left out" in text


def test_without_queue_depth_one_jobs_the_latency_says_which_job(tmp_path: Path) -> None:
    names = (
        "seqread-1m.json",
        "seqwrite-1m.json",
        "randread-4k-qd32.json",
        "randwrite-4k-qd32.json",
    )
    text = drive_model_from_fio(_read(*names), "no qd1")
    spec = _load(text, tmp_path)
    assert spec.read_latency == pytest.approx(713456.06727e-9, rel=1e-12)
    assert "randread-4k-qd32:randread:read:latency_mean" in _line(text, "read_latency")
    assert re.search(r"NOT zero-load \(no queue-depth-1 random read job; 32 I/Os in flight\)", text)


def test_given_capacity_is_written_as_given(tmp_path: Path) -> None:
    text = drive_model_from_fio(_read(*ALL), "x", capacity="3.84 TB")
    assert _load(text, tmp_path).capacity == 3.84e12
    with pytest.raises(ConfigError, match="capacity"):
        drive_model_from_fio(_read(*ALL), "x", capacity="lots")


@pytest.mark.parametrize(
    ("left_out", "key"),
    [
        (("seqread-1m.json", "seqread-1m-jsonplus.json"), "read_bandwidth"),
        (("seqwrite-1m.json", "seqwrite-psync-note.json"), "write_bandwidth"),
        (("randwrite-4k-qd32.json", "qd1-4k.json", "randrw-4k.json"), "write_iops"),
    ],
)
def test_measurements_that_cannot_make_a_drive_file_name_what_is_missing(
    left_out: tuple[str, ...], key: str
) -> None:
    ms = _read(*(n for n in ALL if n not in left_out))
    with pytest.raises(ConfigError) as info:
        drive_model_from_fio(ms, "incomplete")
    assert info.value.key == key
    assert "fio --rw=" in str(info.value)


def test_other_tools_measurements_are_ignored(tmp_path: Path) -> None:
    ms = _read(*ALL)
    other = dataclasses.replace(
        ms[0],
        id="ior:test0:read:bandwidth",
        value=1.0,
        conditions=dataclasses.replace(ms[0].conditions, tool="ior", transfer_size_B=2**30),
    )
    assert _load(drive_model_from_fio([other, *ms], "x"), tmp_path).read_bandwidth > 1e9
