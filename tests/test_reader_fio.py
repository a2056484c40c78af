"""The fio reader on real fio 3.33 output (tests/data/measurements/fio/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flashsim.measurements.readers import detect_tool, fio, read_file, read_measurements
from flashsim.measurements.record import MeasurementError
from tests.reader_helpers import assert_one_error, by_id

DATA = Path(__file__).parent / "data" / "measurements" / "fio"
BAD = DATA / "bad"
MiB = 2**20


# (file, job:direction, bw_bytes, iops, lat_ns mean, line of the job object): from the files.
FIXTURES = [
    ("seqread-1m.json", "seqread:read", 1371695840, 1308.151093, 12183701.814210, 7),
    ("seqwrite-1m.json", "seqwrite:write", 3094501455, 2951.146560, None, 7),
    ("randread-4k-qd32.json", "randread:read", 183548675, 44811.688312, None, 7),
    ("randwrite-4k-qd32.json", "randwrite:write", 160568931, 39201.399300, None, 7),
    ("qd1-4k.json", "qd1-randread:read", 48458074, 11830.584708, 84234.723356, 15),
    ("qd1-4k.json", "qd1-randwrite:write", 68477505, 16718.140930, 59572.845544, 259),
    ("group-2jobs.json", "group:read", 260181844, 63520.958084, 251383.564621, 7),
    ("randrw-4k.json", "randrw:read", 110203268, 26905.094905, None, 7),
    ("randrw-4k.json", "randrw:write", 110133706, 26888.111888, None, 7),
    ("seqread-1m-jsonplus.json", "seqread-plus:read", 1253278087, 1195.219124, 3343019.506667, 7),
    ("seqwrite-psync-note.json", "seqwrite-psync:write", 3427129955, 3268.365817, None, 8),
    ("clones-2jobs.json", "clones.0:read", 120654001, 29456.543457, None, 7),
    ("clones-2jobs.json", "clones.1:read", 132802877, 32422.577423, None, 259),
]


@pytest.mark.parametrize(("name", "job", "bw", "iops", "lat_ns", "line"), FIXTURES)
def test_every_fixture_gives_fios_numbers_in_si(
    name: str, job: str, bw: int, iops: float, lat_ns: float | None, line: int
) -> None:
    path = DATA / name
    ms = by_id(fio.read(path))
    stem = path.stem
    bandwidth = ms[f"{stem}:{job}:bandwidth"]
    assert (bandwidth.value, bandwidth.unit, bandwidth.quantity) == (float(bw), "B/s", "bandwidth")
    assert bandwidth.source == f"{path}:{line}"
    assert (ms[f"{stem}:{job}:iops"].value, ms[f"{stem}:{job}:iops"].unit) == (iops, "1/s")
    latency = ms[f"{stem}:{job}:latency_mean"]
    assert latency.unit == "s"
    if lat_ns is not None:
        assert latency.value == pytest.approx(lat_ns / 1e9, rel=1e-12)
    assert bandwidth.conditions.tool == "fio"
    assert bandwidth.conditions.tool_version == "fio-3.33"
    assert bandwidth.conditions.command_line is None
    assert detect_tool(path) == "fio"


def test_directions_without_io_give_nothing() -> None:
    ids = set(by_id(fio.read(DATA / "seqread-1m.json")))
    assert all(":seqread:read:" in i for i in ids)
    assert len(ids) == 3 + 17  # bandwidth, iops, mean, and fio's 17 default percentiles
    rw = {m.conditions.operation for m in fio.read(DATA / "randrw-4k.json")}
    assert rw == {"read", "write"}


def test_completion_latency_percentiles_in_seconds() -> None:
    ms = by_id(fio.read(DATA / "seqread-1m.json"))
    p = "seqread-1m:seqread:read:latency_p"
    # clat_ns percentiles of the file (lines 47-63)
    assert ms[p + "1"].value == pytest.approx(11075584e-9, rel=1e-12)
    assert ms[p + "50"].value == pytest.approx(11862016e-9, rel=1e-12)
    assert ms[p + "99"].value == pytest.approx(17432576e-9, rel=1e-12)
    assert ms[p + "99.5"].value == pytest.approx(17956864e-9, rel=1e-12)
    assert ms[p + "99.9"].value == pytest.approx(20578304e-9, rel=1e-12)
    assert ms[p + "99.9"].quantity == "latency_p99.9"
    assert ms[p + "99.9"].conditions.extra["percentiles_of"] == "clat"
    plus = by_id(fio.read(DATA / "seqread-1m-jsonplus.json"))
    q = "seqread-1m-jsonplus:seqread-plus:read:latency_p"
    assert plus[q + "99.99"].value == pytest.approx(38535168e-9, rel=1e-12)
    assert plus[q + "50"].value == pytest.approx(2670592e-9, rel=1e-12)


def test_conditions_of_a_sequential_libaio_job() -> None:
    c = by_id(fio.read(DATA / "seqread-1m.json"))["seqread-1m:seqread:read:bandwidth"].conditions
    assert (c.operation, c.access) == ("read", "sequential")
    assert c.transfer_size_B == 1 * MiB
    assert c.queue_depth == 16
    assert c.tasks == 1
    assert c.direct is True
    assert c.fsync is False
    assert c.block_size_B == 64 * MiB
    assert c.size_B == 64 * MiB
    assert c.duration_s == pytest.approx(2.012)  # read.runtime 2012 ms
    assert c.file_per_process is False  # one filename shared
    assert c.extra["ioengine"] == "libaio"
    assert c.extra["rw"] == "read"
    assert c.extra["io_bytes"] == 2759852032


def test_global_options_apply_to_every_job() -> None:
    ms = by_id(fio.read(DATA / "qd1-4k.json"))
    read = ms["qd1-4k:qd1-randread:read:iops"].conditions
    write = ms["qd1-4k:qd1-randwrite:write:iops"].conditions
    for c in (read, write):
        assert c.extra["ioengine"] == "psync"  # from "global options"
        assert c.transfer_size_B == 4096
        assert c.queue_depth == 1
        assert c.access == "random"
    assert (read.operation, write.operation) == ("read", "write")


def test_group_reporting_sums_numjobs_tasks() -> None:
    c = by_id(fio.read(DATA / "group-2jobs.json"))["group-2jobs:group:read:iops"].conditions
    assert c.tasks == 2
    assert c.queue_depth == 8
    assert c.size_B == 2 * 64 * MiB
    assert c.duration_s == pytest.approx(2.004)


def test_clones_without_group_reporting_are_one_task_each() -> None:
    ms = by_id(fio.read(DATA / "clones-2jobs.json"))
    assert ms["clones-2jobs:clones.0:read:iops"].conditions.tasks == 1
    assert ms["clones-2jobs:clones.1:read:iops"].conditions.tasks == 1


def test_note_before_the_json_is_skipped_and_sync_engine_caps_queue_depth() -> None:
    path = DATA / "seqwrite-psync-note.json"
    assert path.read_text().startswith("note: both iodepth")
    m = by_id(fio.read(path))["seqwrite-psync-note:seqwrite-psync:write:bandwidth"]
    assert m.source == f"{path}:8"
    assert m.conditions.queue_depth == 1  # fio: "queue depth will be capped at 1"
    assert m.conditions.extra["iodepth"] == "2"


def test_read_measurements_reads_every_fixture_with_unique_ids() -> None:
    paths = sorted(DATA.glob("*.json"))
    ms = read_measurements(paths)
    assert len({m.id for m in ms}) == len(ms)
    assert {m.conditions.tool for m in ms} == {"fio"}


def test_sidecar_fills_what_fio_does_not_record(tmp_path: Path) -> None:
    path = tmp_path / "seqread-1m.json"
    path.write_bytes((DATA / "seqread-1m.json").read_bytes())
    (tmp_path / "seqread-1m.json.conditions.toml").write_text(
        'tolerance = 0.1\n[conditions]\nnodes = 1\nstripe_count = 4\nstripe_size = "1 MiB"\n'
    )
    m = read_file(path)[0]
    assert (m.conditions.nodes, m.conditions.stripe_count, m.tolerance) == (1, 4, 0.1)


@pytest.mark.parametrize(
    ("text", "kb_base", "expected"),
    [
        ("4k", 1024, 4096.0),
        ("4K", 1024, 4096.0),
        ("4KB", 1024, 4096.0),
        ("4KiB", 1024, 4000.0),  # fio's compatibility mode: IEC suffix means base 10
        ("64M", 1024, 64.0 * MiB),
        ("4k", 1000, 4000.0),
        ("4KiB", 1000, 4096.0),
        ("512", 1024, 512.0),
        ("10%", 1024, None),
    ],
)
def test_fio_sizes(text: str, kb_base: int, expected: float | None) -> None:
    assert fio.fio_size(text, kb_base) == expected


# ------------------------------------------------------------------ errors
BAD_CASES = [
    ("truncated.json", "line 115", "truncated"),
    ("malformed.json", "line 5", "malformed JSON: Expecting ',' delimiter"),
    ("not-fio.json", "line 1", 'not fio output: expected a JSON object with a "fio version"'),
    ("missing-key.json", "line 7", "jobs[0].read.bw_bytes: missing"),
    ("job-error.json", "line 7", "jobs[0].error: fio reports this job failed (error 5)"),
    ("no-json.txt", "line 1", "no JSON object"),
]


@pytest.mark.parametrize(("name", "where", "says"), BAD_CASES)
def test_a_bad_file_is_one_error_naming_file_and_line(name: str, where: str, says: str) -> None:
    assert_one_error(BAD / name, "fio", f"{where}: ", says)


def test_bad_fixtures_are_hand_written_error_cases_only() -> None:
    assert len(list(BAD.iterdir())) >= 3


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut=st.integers(min_value=0, max_value=6586))
def test_any_truncation_is_a_measurement_error(
    tmp_path_factory: pytest.TempPathFactory, cut: int
) -> None:
    text = (DATA / "randread-4k-qd32.json").read_text()
    assert len(text) == 6588
    path = tmp_path_factory.mktemp("cut") / "cut.json"
    path.write_text(text[:cut])
    with pytest.raises(MeasurementError) as info:
        fio.read(path)
    assert str(info.value).startswith(f"{path}: line ")


# ------------------------------------------------------------------ sniffing
IOR_JSON_HEAD = b"""{
"Version": "4.0.0",
"Began": "Fri Nov 27 04:50:00 2026",
"Command line": "ior -a POSIX -t 1m -b 16m -O summaryFormat=JSON",
"Machine": "Linux ci",
"tests": [
"""


def test_sniff_claims_fio_only() -> None:
    for path in DATA.glob("*.json"):
        assert fio.sniff(path.read_bytes()[:65536])
    assert not fio.sniff(IOR_JSON_HEAD)
    assert not fio.sniff((BAD / "not-fio.json").read_bytes())
    assert not fio.sniff(b"fio: failed parsing rw=randredd\n")


def test_sniff_does_not_claim_a_darshan_log() -> None:
    darshan = pytest.importorskip("darshan")
    logs = sorted((Path(darshan.__file__).parent / "examples").glob("**/*.darshan"))
    assert logs, "pydarshan ships example logs"
    for log in logs:
        with log.open("rb") as handle:
            assert not fio.sniff(handle.read(65536)), log


# ------------------------------------------------------------------ variants of real output
def test_status_interval_reports_the_last_object_is_read(tmp_path: Path) -> None:
    interim = (DATA / "group-2jobs.json").read_text()
    final = (DATA / "seqread-1m.json").read_text()
    path = tmp_path / "interval.json"
    path.write_text(interim + final)
    ms = fio.read(path)
    assert {m.id.split(":")[1] for m in ms} == {"seqread"}
    assert ms[0].value == 1371695840.0
    assert ms[0].source == f"{path}:{interim.count(chr(10)) + 7}"


def test_disable_lat_takes_the_completion_latency_mean(tmp_path: Path) -> None:
    text = (DATA / "seqread-1m.json").read_text()
    lat = text.index('"lat_ns"')
    emptied = text[:lat] + text[lat:].replace('"N" : 2632', '"N" : 0', 1)
    path = tmp_path / "nolat.json"
    path.write_text(emptied)
    m = by_id(fio.read(path))["nolat:seqread:read:latency_mean"]
    assert m.value == pytest.approx(12126729.606763e-9, rel=1e-12)  # clat_ns mean
    assert m.conditions.extra["latency_mean_of"] == "clat"
    real = by_id(fio.read(DATA / "seqread-1m.json"))["seqread-1m:seqread:read:latency_mean"]
    assert real.conditions.extra["latency_mean_of"] == "lat"


def test_bssplit_gives_no_single_transfer_size(tmp_path: Path) -> None:
    text = (DATA / "seqread-1m.json").read_text()
    path = tmp_path / "split.json"
    path.write_text(
        text.replace('"bs" : "1M",', '"bs" : "1M",\n        "bssplit" : "4k/50:1M/50",', 1)
    )
    m = fio.read(path)[0]
    assert m.conditions.transfer_size_B is None
    assert m.conditions.extra["bssplit"] == "4k/50:1M/50"


def test_unified_rw_reporting_gives_the_mixed_direction(tmp_path: Path) -> None:
    text = (DATA / "randrw-4k.json").read_text()
    path = tmp_path / "mixed.json"
    # unified_rw_reporting=1: one "mixed" object instead of "read" and "write"
    head, rest = text.split('      "read" : {', 1)
    path.write_text(head + '      "mixed" : {' + rest.split('      "write" : {', 1)[1])
    ms = by_id(fio.read(path))
    m = ms["mixed:randrw:mixed:bandwidth"]
    assert m.value == 110133706.0  # the object's bw_bytes (the write object of the real file)
    assert m.conditions.operation == "mixed"
    assert m.conditions.transfer_size_B == 4096
