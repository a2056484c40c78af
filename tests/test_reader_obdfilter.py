"""obdfilter-survey reader: the lustre-iokit README's real line, sidecar target, bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashsim.measurements.readers import darshan as darshan_reader
from flashsim.measurements.readers import detect_tool, obdfilter, read_file
from flashsim.measurements.readers import lnet as lnet_reader
from flashsim.measurements.reproduce import Plan, plan
from tests.reader_helpers import assert_one_error

DATA = Path(__file__).parent / "data" / "measurements" / "obdfilter"
MIB = 2.0**20

# Three tests on one OST, as the current script prints them (rsz without K, SHORT range).
ONE_OST = (
    "Fri Nov 27 04:50:00 UTC 2026 Obdfilter-survey for case=disk from oss1\n"
    "ost  1 sz  1048576K rsz 1024 obj    2 thr   16 write 1500.25 [ 700.00, 800.00] "
    "rewrite 1400.50 [ 690.00, 790.00] read 2100.75             SHORT \n"
    "ost  1 sz  1048576K rsz 1024 obj    2 thr 2048 Too much buffer space\n"
    "ost  1 sz  1048576K rsz 4096K obj    1 thr    4 write  900.00 [ 200.00, 240.00] \n"
)


def test_readme_line_is_total_mib_per_s_over_8_osts() -> None:
    path = DATA / "readme-example.summary"
    assert detect_tool(path) == "obdfilter-survey"
    (m,) = read_file(path)
    assert m.quantity == "bandwidth" and m.unit == "B/s"
    assert m.value == pytest.approx(613.54 * MIB)
    c = m.conditions
    assert c.tool == "obdfilter-survey" and c.operation == "write"
    assert (c.threads, c.objects) == (1, 1)  # 8 threads and 8 objects over 8 OSTs
    assert c.transfer_size_B == 1024 * 1024
    assert c.size_B == pytest.approx(67108864 * 1024 / 8)
    assert c.extra["ost_count"] == 8
    assert c.extra["threads_total"] == 8
    assert c.extra["ost_min_1s_Bps"] == pytest.approx(64 * MIB)
    assert c.extra["ost_max_1s_Bps"] == pytest.approx(82 * MIB)
    assert c.target is None and m.scope == ""
    assert m.source == f"{path}:1"
    assert "aggregate over 8 OSTs" in m.note


def test_one_ost_tests_with_sidecar_target(tmp_path: Path) -> None:
    out = tmp_path / "ost12.summary"
    out.write_text(ONE_OST)
    (tmp_path / "ost12.summary.conditions.toml").write_text("[conditions]\ntarget = 12\n")
    ms = read_file(out)
    assert [m.conditions.extra["test"] for m in ms] == ["write", "rewrite", "read", "write"]
    assert [m.conditions.operation for m in ms] == ["write", "write", "read", "write"]
    assert all(m.scope == "ost 12" and m.conditions.target == 12 for m in ms)
    assert len({m.id for m in ms}) == 4
    assert ms[0].id == "ost12:obj2-thr16-rsz1024K:ost 12:write:bandwidth"
    assert ms[2].value == pytest.approx(2100.75 * MIB)
    assert ms[2].conditions.extra["ost_range"] == "SHORT" and "SHORT" in ms[2].note
    assert ms[3].conditions.transfer_size_B == 4096 * 1024  # newer scripts print "4096K"
    assert [m.source for m in ms] == [f"{out}:2"] * 3 + [f"{out}:4"]
    # the reproduction plan takes the OST and the per-OST parameters
    p = plan(ms[0])
    assert isinstance(p, Plan)
    (phase,) = p.phases
    assert (phase["ost"], phase["threads"], phase["objects"]) == (12, 16, 2)


def test_without_sidecar_the_ost_is_unknown(tmp_path: Path) -> None:
    out = tmp_path / "run.summary"
    out.write_text(ONE_OST)
    ms = read_file(out)
    assert all(m.scope == "" and m.conditions.target is None for m in ms)


@pytest.mark.parametrize(
    ("name", "line", "words"),
    [
        ("truncated.summary", 2, "truncated"),
        ("not-a-number.summary", 2, "<MiB/s>"),
        ("no-test.summary", 2, "no test result"),
        ("bad-header.summary", 2, "ost N sz"),
    ],
)
def test_bad_files_are_one_error_naming_file_and_line(name: str, line: int, words: str) -> None:
    assert_one_error(DATA / "bad" / name, "obdfilter-survey", f"line {line}: ", words)


def test_sniff_is_specific() -> None:
    assert obdfilter.sniff((DATA / "readme-example.summary").read_bytes())
    lnet = (DATA.parent / "lnet" / "manual-example.txt").read_bytes()
    assert not obdfilter.sniff(lnet)
    assert not lnet_reader.sniff((DATA / "readme-example.summary").read_bytes())
    assert not darshan_reader.sniff((DATA / "readme-example.summary").read_bytes())
    assert not obdfilter.sniff(b'{"fio version": "fio-3.33", "jobs": []}')


def test_a_test_without_bandwidth_is_left_out(tmp_path: Path) -> None:
    out = tmp_path / "short.summary"
    out.write_text(
        "ost  1 sz  1048576K rsz 1024 obj    1 thr    1 write ERROR ERROR "
        "read  300.00 [ 100.00, 200.00] \n"
    )
    (m,) = read_file(out)
    assert m.conditions.operation == "read" and m.value == pytest.approx(300.0 * MIB)
