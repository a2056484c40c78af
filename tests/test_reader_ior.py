"""The IOR reader on real IOR 4.1.0+dev output (tests/data/measurements/ior/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashsim.measurements.readers import detect_tool, ior, read_file
from flashsim.measurements.record import Measurement, MeasurementError
from flashsim.measurements.reproduce import Plan, evaluate, plan
from tests.reader_helpers import assert_one_error, by_id

DATA = Path(__file__).parent / "data" / "measurements" / "ior"
BAD = DATA / "bad"
PERLMUTTER = Path(__file__).parents[1] / "models" / "systems" / "perlmutter.toml"
MIB = 2.0**20  # IOR's MiB: MEBIBYTE (1 << 20) in src/iordef.h


def line_of(m: Measurement) -> str:
    """The text of the line a measurement's source names."""
    file, _, line = m.source.rpartition(":")
    return Path(file).read_text().splitlines()[int(line) - 1]


@pytest.mark.parametrize(
    "name", ["ior-fpp.txt", "ior-random.txt", "ior-stonewall.txt", "ior-summary.json"]
)
def test_every_fixture_is_sniffed_as_ior(name: str) -> None:
    assert detect_tool(DATA / name) == "ior"


def test_text_file_per_process_summary_and_iterations() -> None:
    ms = by_id(read_file(DATA / "ior-fpp.txt"))
    assert len(ms) == 12  # 2 operations x (summary + 2 iterations) x (bandwidth, iops)
    w = ms["ior-fpp:test0:write:bandwidth"]
    assert w.value == pytest.approx(2300.19 * MIB, rel=1e-12)  # Mean(MiB)
    assert w.unit == "B/s" and w.scope == "" and w.quantity == "bandwidth"
    assert w.source == f"{DATA / 'ior-fpp.txt'}:42"
    assert line_of(w).startswith("write        2566.16    2034.22    2300.19")
    assert "max 2566.16, min 2034.22, stddev 265.97 MiB/s" in w.note
    assert ms["ior-fpp:test0:write:iops"].value == pytest.approx(2300.19, rel=1e-12)
    assert ms["ior-fpp:test0:read:bandwidth"].value == pytest.approx(40536.26 * MIB, rel=1e-12)
    it0 = ms["ior-fpp:test0:iteration 0:write:bandwidth"]
    assert it0.value == pytest.approx(2566.16 * MIB, rel=1e-12)
    assert it0.scope == "iteration 0" and it0.source.endswith(":35")
    assert ms["ior-fpp:test0:iteration 0:write:iops"].value == pytest.approx(2590.48)
    it1 = ms["ior-fpp:test0:iteration 1:read:bandwidth"]
    assert it1.value == pytest.approx(28521 * MIB, rel=1e-12)
    assert it1.conditions.duration_s == pytest.approx(0.001122)
    assert ms["ior-fpp:test0:iteration 1:read:iops"].value == pytest.approx(28728)
    c = w.conditions
    assert c.tool == "ior" and c.tool_version == "4.1.0+dev"
    assert c.command_line == (
        "/tmp/ior-mior/src/ior -w -r -F -e -C -i 2 -t 1m -b 16m -o /tmp/ior-mior/run/fpp"
    )
    assert c.operation == "write" and c.access == "sequential"
    assert (c.tasks, c.nodes, c.segments) == (2, 1, 1)
    assert c.transfer_size_B == MIB and c.block_size_B == 16 * MIB
    assert c.file_per_process is True
    assert c.fsync is True  # -e: only the command line says so
    assert c.direct is False and c.stonewall_s is None
    assert c.duration_s == pytest.approx(0.01410)  # Mean(s)
    assert c.extra["repetitions"] == 2 and c.extra["reorder"] is True
    assert c.extra["task_per_node_offset"] == 1 and c.extra["api"] == "POSIX"
    assert ms["ior-fpp:test0:read:iops"].conditions.operation == "read"


def test_text_random_shared_file_odirect() -> None:
    ms = by_id(read_file(DATA / "ior-random.txt"))
    assert len(ms) == 8
    r = ms["ior-random:test0:read:iops"]
    assert r.value == pytest.approx(25930.47, rel=1e-12)
    assert r.unit == "1/s"
    assert ms["ior-random:test0:iteration 0:read:iops"].value == 25952
    assert ms["ior-random:test0:write:bandwidth"].value == pytest.approx(47.59 * MIB, rel=1e-12)
    c = r.conditions
    assert c.access == "random" and c.file_per_process is False
    assert c.direct is True  # --posix.odirect
    assert c.fsync is True
    assert c.transfer_size_B == 4096 and c.block_size_B == MIB
    assert c.extra["reorder"] is False and "task_per_node_offset" not in c.extra
    assert c.command_line is not None and "--posix.odirect" in c.command_line


def test_text_stonewall() -> None:
    ms = by_id(read_file(DATA / "ior-stonewall.txt"))
    assert len(ms) == 8  # the "stonewalling pairs accessed" lines are no rows
    w = ms["ior-stonewall:test0:write:bandwidth"]
    assert w.value == pytest.approx(8731.17 * MIB, rel=1e-12)
    assert ms["ior-stonewall:test0:iteration 0:read:bandwidth"].value == 34169 * MIB
    c = w.conditions
    assert c.stonewall_s == 2.0 and c.extra["stonewall_wear_out"] is True
    assert c.fsync is False and c.transfer_size_B == 65536 and c.block_size_B == 64 * MIB


def test_json_summary_every_test_and_iteration() -> None:
    ms = by_id(read_file(DATA / "ior-summary.json"))
    assert len(ms) == 12
    w = ms["ior-summary:test0:write:bandwidth"]
    assert w.value == pytest.approx(998.2882 * MIB, rel=1e-12)  # bwMeanMIB
    assert w.source.endswith("ior-summary.json:138")
    assert '"operation": "write"' in line_of(w)
    assert ms["ior-summary:test0:write:iops"].value == pytest.approx(3993.1527, rel=1e-12)
    assert ms["ior-summary:test0:read:iops"].value == pytest.approx(163951.7560, rel=1e-12)
    iters = {
        (m.scope, m.conditions.operation): m
        for m in ms.values()
        if m.quantity == "bandwidth" and m.scope
    }
    assert sorted(iters) == [
        ("iteration 0", "read"),
        ("iteration 0", "write"),
        ("iteration 1", "read"),
        ("iteration 1", "write"),
    ]
    assert iters["iteration 0", "write"].value == pytest.approx(1328.4675 * MIB, rel=1e-12)
    assert iters["iteration 1", "write"].value == pytest.approx(668.1089 * MIB, rel=1e-12)
    assert iters["iteration 1", "read"].value == pytest.approx(44442.9563 * MIB, rel=1e-12)
    assert iters["iteration 1", "read"].source.endswith(":120")
    assert '"access": "read"' in line_of(iters["iteration 1", "read"])
    it_iops = ms["ior-summary:test0:iteration 1:read:iops"]
    assert it_iops.value == pytest.approx(185127.9007, rel=1e-12)
    c = w.conditions
    assert c.tool_version == "4.1.0+dev"
    assert c.command_line is not None and c.command_line.endswith("-o /tmp/ior-mior/run/js")
    assert "-O summaryFormat=JSON" in c.command_line
    assert (c.tasks, c.nodes, c.segments) == (2, 1, 4)
    assert c.transfer_size_B == 256 * 1024 and c.block_size_B == MIB
    assert c.file_per_process is True and c.fsync is True and c.direct is False
    assert c.access == "sequential" and c.stonewall_s is None
    assert c.extra["repetitions"] == 2 and c.extra["reorder"] is True


@pytest.mark.parametrize(
    ("name", "line", "phrase"),
    [
        ("no-table.txt", 29, "results table"),
        ("cut-row.txt", 35, "results row of 11 columns"),
        ("nonnumeric-bw.txt", 38, "a number for bw(MiB/s)"),
        ("no-summary.txt", 38, "did not finish"),
        ("cut.json", 107, "valid JSON"),
    ],
)
def test_malformed_or_truncated_is_one_error_naming_file_and_line(
    name: str, line: int, phrase: str
) -> None:
    path = BAD / name
    assert detect_tool(path) == "ior"
    assert_one_error(path, None, f"line {line}: ", phrase)


def test_sniff_does_not_claim_fio_json() -> None:
    fio_json = BAD / "wrong-tool-fio.json"
    head = fio_json.read_bytes()[:65536]
    assert b'"fio version"' in head
    assert not ior.sniff(head)
    with pytest.raises(MeasurementError, match=r"line 1: an IOR JSON summary"):
        read_file(fio_json, tool="ior")


def test_sniff_claims_only_ior() -> None:
    assert ior.sniff(b"IOR-3.3.0: MPI Coordinated Test of Parallel I/O\n")
    assert not ior.sniff(b'{"jobs": [], "tests": []}')
    assert not ior.sniff(b"mdtest-4.1.0+dev was launched with 2 total task(s)\n")


def test_command_line_parser_follows_ior_option_rules() -> None:
    cl = ior.parse_command_line(
        "ior -wrFe -t1m -b=4m -s 3 -D 5 -O useO_DIRECT=1,randomOffset=1 -i2 -o /x/y"
    )
    v = cl.values
    assert v["write"] and v["read"] and v["file_per_process"] and v["fsync"]
    assert v["transfer_size_B"] == MIB and v["block_size_B"] == 4 * MIB
    assert v["segments"] == 3 and v["stonewall_s"] == 5.0 and v["repetitions"] == 2
    assert v["direct"] is True and v["random"] is True
    assert not cl.script
    assert ior.parse_command_line("ior -f tests.ior").script
    assert ior.parse_command_line("ior --posix.odirect").values["direct"] is True
    assert ior.ior_bytes("47008") == 47008 and ior.ior_bytes("2g") == 2.0**31


def test_plan_accepts_read_measurements_with_reorder_and_segments() -> None:
    ms = by_id(read_file(DATA / "ior-summary.json"))
    p = plan(ms["ior-summary:test0:read:bandwidth"])
    assert isinstance(p, Plan)
    dataset, measured = p.phases
    assert dataset["operation"] == "write" and measured["operation"] == "read"
    assert measured["segments"] == 4 and measured["ranks_per_node"] == 2
    assert measured["reorder_tasks"] is True and measured["task_per_node_offset"] == 1
    assert measured["fsync"] is True
    write = plan(ms["ior-summary:test0:iteration 1:write:iops"])
    assert isinstance(write, Plan) and "reorder_tasks" not in write.phases[-1]
    sw = plan(by_id(read_file(DATA / "ior-stonewall.txt"))["ior-stonewall:test0:write:bandwidth"])
    assert isinstance(sw, Plan)
    assert sw.phases[-1]["stonewall"] == "2.0 s" and sw.phases[-1]["wear_out"] is True
    rnd = plan(by_id(read_file(DATA / "ior-random.txt"))["ior-random:test0:read:iops"])
    assert isinstance(rnd, Plan)
    assert rnd.phases[-1]["direct_io"] is True and rnd.phases[-1]["access"] == "random"


def test_evaluate_reads_bandwidth_and_iops_of_one_shared_run() -> None:
    ms = by_id(read_file(DATA / "ior-random.txt"))
    bw, iops = ms["ior-random:test0:write:bandwidth"], ms["ior-random:test0:write:iops"]
    p_bw, p_iops = plan(bw), plan(iops)
    assert isinstance(p_bw, Plan) and isinstance(p_iops, Plan)
    assert p_bw.key() == p_iops.key()
    out = evaluate([bw, iops], PERLMUTTER)
    assert [o.status for o in out] != ["skip", "skip"]
    # IOR's ops are its bandwidth over the transfer size: the same run, another field.
    assert out[1].simulated == pytest.approx(out[0].simulated / 4096, rel=1e-9)


def test_text_two_tests_from_a_script() -> None:
    ms = by_id(read_file(DATA / "ior-script.txt"))
    assert len(ms) == 16
    t0 = ms["ior-script:test0:write:bandwidth"]
    t1 = ms["ior-script:test1:write:bandwidth"]
    assert t0.value == pytest.approx(1368.45 * MIB, rel=1e-12) and t0.source.endswith(":70")
    assert t1.value == pytest.approx(666.23 * MIB, rel=1e-12) and t1.source.endswith(":72")
    assert ms["ior-script:test1:iteration 0:read:iops"].value == 494356
    assert ms["ior-script:test1:iteration 0:read:iops"].source.endswith(":66")
    assert t0.conditions.file_per_process is True and t0.conditions.access == "sequential"
    assert t0.conditions.transfer_size_B == MIB
    assert t1.conditions.file_per_process is False and t1.conditions.access == "random"
    assert t1.conditions.transfer_size_B == 65536 and t1.conditions.block_size_B == 4 * MIB
    # The options come from the script (-f): an absent -e on the command line says nothing.
    assert t0.conditions.fsync is None and t0.conditions.direct is None
    assert t0.conditions.command_line == (
        "/tmp/ior-mior/src/ior -f /tmp/ior-mior/run/two-tests.ior"
    )


def test_json_non_numeric_bandwidth_names_its_line(tmp_path: Path) -> None:
    text = (DATA / "ior-summary.json").read_text()
    bad = tmp_path / "ior-bad.json"
    bad.write_text(text.replace('"bwMiB": 668.1089', '"bwMiB": "fast"', 1))
    with pytest.raises(MeasurementError) as info:
        read_file(bad)
    assert str(info.value).startswith(f"{bad}: line 107: a result: key 'bwMiB' to be a number")


def test_iteration_iops_says_it_excludes_open_and_close() -> None:
    ms = by_id(read_file(DATA / "ior-fpp.txt"))
    assert "wr/rd time" in ms["ior-fpp:test0:iteration 0:write:iops"].note
    assert ms["ior-fpp:test0:iteration 0:write:bandwidth"].note == ""
