"""lst stat reader: the Lustre manual's real output, server-group direction, sidecar, bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashsim.config import ConfigError
from flashsim.measurements.readers import detect_tool, lnet, read_file
from flashsim.measurements.record import MeasurementError
from flashsim.measurements.reproduce import Plan, plan
from tests.reader_helpers import assert_one_error

DATA = Path(__file__).parent / "data" / "measurements" / "lnet"
MIB = 2.0**20


def _interval(group: str, r_mib: float, w_mib: float, r_rate: int, w_rate: int) -> str:
    """One interval of one group, in lst.c's current format (%-8.0f RPC/s, %-8.2f MiB/s)."""
    return (
        f"[LNet Rates of {group}]\n"
        f"[R] Avg: {r_rate:<8.0f} RPC/s Min: {r_rate:<8.0f} RPC/s Max: {r_rate:<8.0f} RPC/s\n"
        f"[W] Avg: {w_rate:<8.0f} RPC/s Min: {w_rate:<8.0f} RPC/s Max: {w_rate:<8.0f} RPC/s\n"
        f"[LNet Bandwidth of {group}]\n"
        f"[R] Avg: {r_mib:<8.2f} MiB/s Min: {r_mib:<8.2f} MiB/s Max: {r_mib:<8.2f} MiB/s\n"
        f"[W] Avg: {w_mib:<8.2f} MiB/s Min: {w_mib:<8.2f} MiB/s Max: {w_mib:<8.2f} MiB/s\n"
    )


# A 1 MiB brw read from 2 clients to 1 server, two intervals of both groups.
READ_TEST = (
    "$ lst stat servers clients\n"
    + _interval("servers", 1.0, 5000.0, 10000, 10010)
    + _interval("clients", 2500.0, 0.5, 5005, 5000)
    + _interval("servers", 1.2, 5200.0, 10400, 10410)
    + _interval("clients", 2600.0, 0.6, 5205, 5200)
)


def test_manual_example_client_group() -> None:
    path = DATA / "manual-example.txt"
    assert detect_tool(path) == "lnet-selftest"
    bw, rate = read_file(path)
    # clients received more ([R] 40.49) than they sent: data out of the servers, a read
    assert bw.conditions.operation == "read"
    assert bw.quantity == "bandwidth" and bw.unit == "B/s"
    assert bw.value == pytest.approx(40.49e6)  # "MB/s": 1e6 B/s
    assert rate.quantity == "message_rate" and rate.value == pytest.approx(2215)
    assert bw.scope == "group clients"  # a source group: per client node
    assert bw.conditions.extra["direction"] == "R"
    assert bw.id == "manual-example:clients:group clients:read:bandwidth"
    assert bw.source == f"{path}:3"


def test_server_group_read_is_its_send_side_mean_of_intervals(tmp_path: Path) -> None:
    out = tmp_path / "read-1m.txt"
    out.write_text(READ_TEST)
    bw, rate = read_file(out)
    assert bw.conditions.extra["group"] == "servers" and bw.scope == ""
    assert bw.conditions.operation == "read" and bw.conditions.extra["direction"] == "W"
    assert bw.value == pytest.approx((5000.0 + 5200.0) / 2 * MIB)
    assert rate.value == pytest.approx((10010 + 10410) / 2)
    assert "2 lst stat interval" in bw.note


def test_sidecar_supplies_test_conditions_and_plan(tmp_path: Path) -> None:
    out = tmp_path / "read-1m.txt"
    out.write_text(READ_TEST)
    (tmp_path / "read-1m.txt.conditions.toml").write_text(
        '[conditions]\noperation = "read"\nsources = 2\nconcurrency = 8\n'
        'transfer_size = "1 MiB"\ntarget = 3\n'
    )
    bw, _ = read_file(out)
    c = bw.conditions
    assert (c.sources, c.concurrency, c.transfer_size_B, c.target) == (2, 8, 2**20, 3)
    p = plan(bw)
    assert isinstance(p, Plan)
    assert p.phases[0]["sink"] == 3 and p.phases[0]["operation"] == "read"


def test_sidecar_contradicting_the_data_is_an_error(tmp_path: Path) -> None:
    out = tmp_path / "read-1m.txt"
    out.write_text(READ_TEST)
    (tmp_path / "read-1m.txt.conditions.toml").write_text('[conditions]\noperation = "write"\n')
    with pytest.raises(ConfigError, match="read test"):
        read_file(out)


def test_sidecar_names_the_group(tmp_path: Path) -> None:
    out = tmp_path / "two.txt"
    out.write_text(
        _interval("oss1", 4000.0, 1.0, 8000, 8000) + _interval("c", 0.5, 2000.0, 4000, 4000)
    )
    with pytest.raises(MeasurementError, match="one sink group"):
        read_file(out)
    (tmp_path / "two.txt.conditions.toml").write_text('[conditions.extra]\ngroup = "oss1"\n')
    bw, _ = read_file(out)
    assert bw.conditions.operation == "write"  # oss1 received the data
    assert bw.value == pytest.approx(4000.0 * MIB)


@pytest.mark.parametrize(
    ("name", "line", "words"),
    [
        ("truncated.txt", 5, "truncated or malformed"),
        ("wrong-unit.txt", 2, "MiB/s"),
        ("no-header.txt", 1, "before any"),
        ("empty-block.txt", 4, "no [R]/[W] line"),
    ],
)
def test_bad_files_are_one_error_naming_file_and_line(name: str, line: int, words: str) -> None:
    assert_one_error(DATA / "bad" / name, "lnet-selftest", f"line {line}: ", words)


def test_sniff() -> None:
    assert lnet.sniff((DATA / "manual-example.txt").read_bytes())
    assert not lnet.sniff(b"ost  1 sz 1048576K rsz 1024 obj 1 thr 1 write 1.00 [ 1.00, 1.00]")


def test_sidecar_role_source_reads_the_mirror_direction(tmp_path: Path) -> None:
    out = tmp_path / "nodes.txt"
    out.write_text(_interval("nodes", 3000.0, 1.0, 6000, 6000))
    (tmp_path / "nodes.txt.conditions.toml").write_text('[conditions.extra]\nrole = "source"\n')
    bw, _ = read_file(out)
    # a source group that received the data ran a read test
    assert bw.conditions.operation == "read" and bw.conditions.extra["direction"] == "R"
    assert bw.scope == "group nodes"
    assert bw.value == pytest.approx(3000.0 * MIB)
