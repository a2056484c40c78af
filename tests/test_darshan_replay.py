"""Darshan replay end to end: every pydarshan example log replays and conserves its counters."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import darshan
import pytest
from cli_helpers import run_flashsim

from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_system_model
from flashsim.systems.lustre import Lustre
from flashsim.workloads.darshan import DarshanPhase, ReplayDetails, run_darshan

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(darshan.__file__).parent
LOGS = sorted(
    [*PACKAGE.glob("examples/**/*.darshan"), *PACKAGE.glob("tests/input/*.darshan")],
    key=lambda p: str(p),
)
PERLMUTTER = ROOT / "models" / "systems" / "perlmutter.toml"
CORI = ROOT / "models" / "systems" / "cori-scratch.toml"


def replay(
    log: Path, model: Path = PERLMUTTER, fidelity: str = "flow", **keys: object
) -> ReplayDetails:
    system = Lustre(load_system_model(model).model, Simulation(0), fidelity)  # type: ignore[arg-type]
    phase = DarshanPhase.model_validate(
        {"name": "r", "workload": "darshan", "log": str(log), **keys}
    )
    result = run_darshan(system, phase, fidelity, 0)  # type: ignore[arg-type]
    return result.details(ReplayDetails)


def test_pydarshan_ships_the_logs_we_test() -> None:
    names = {p.name for p in LOGS}
    assert {"example.darshan", "dxt.darshan", "ior_hdf5_example.darshan",
            "sample-dxt-simple.darshan", "noposix.darshan"} <= names  # fmt: skip
    assert len(LOGS) >= 15


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_example_log_replays_and_conserves_its_counters(log: Path) -> None:
    d = replay(log, speedup="io-only")
    assert d.conserved, d.mismatches
    trace = DarshanPhase.model_validate(
        {"name": "r", "workload": "darshan", "log": str(log)}
    ).trace(0)
    rec = trace.records
    assert d.total.reads == int(rec["reads"].sum())
    assert d.total.writes == int(rec["writes"].sum())
    assert d.total.bytes_read_B == float(rec["bytes_read"].sum())
    assert d.total.bytes_written_B == float(rec["bytes_written"].sum())
    assert sum(f.reads + f.writes for f in d.files) == d.total.reads + d.total.writes
    assert sum(r.bytes_read_B + r.bytes_written_B for r in d.ranks) == pytest.approx(
        d.total.bytes_read_B + d.total.bytes_written_B, rel=1e-12
    )


def test_a_dxt_log_replays_in_request_fidelity_too() -> None:
    log = PACKAGE / "tests" / "input" / "sample-dxt-simple.darshan"
    d = replay(log, fidelity="request")
    assert d.timing == "dxt"
    assert d.conserved
    direct = replay(log, fidelity="request", direct_io=True)  # every call waits for the server
    assert direct.conserved
    assert direct.total.sim_io_time_s > 0
    # buffered calls return once in the page cache: never slower than O_DIRECT's
    assert d.total.sim_io_time_s <= direct.total.sim_io_time_s


def test_think_time_is_kept_unless_io_only() -> None:
    log = PACKAGE / "examples" / "example_logs" / "dxt.darshan"
    kept = replay(log)
    dropped = replay(log, speedup="io-only")
    assert kept.conserved and dropped.conserved
    # the job computed for most of its 1469 s: keeping its gaps keeps its length
    assert kept.recorded_runtime_s is not None
    assert kept.sim_runtime_s > 0.5 * kept.recorded_runtime_s
    assert dropped.sim_runtime_s < 0.1 * kept.sim_runtime_s


def test_replay_cli_reports_files_ranks_and_the_job_beside_the_log() -> None:
    log = PACKAGE / "examples" / "example_logs" / "ior_hdf5_example.darshan"
    out = run_flashsim("replay", str(log), "--system", str(CORI), "--json", "--ranks-per-node", "4")
    assert out.returncode == 0, out.stderr
    extra = json.loads(out.stdout)["phases"][0]["extra"]
    assert extra["conserved"] is True
    assert extra["files"] and extra["ranks"]
    for key in ("reads", "writes", "bytes_read_B", "bytes_written_B", "sim_io_time_s",
                "recorded_io_time_s"):  # fmt: skip
        assert key in extra["total"]
        assert key in extra["files"][0]
        assert key in extra["ranks"][0]
    text = run_flashsim("replay", str(log), "--system", str(CORI), "--speedup", "io-only")
    assert text.returncode == 0, text.stderr
    assert "conserved: every counter record matches" in text.stdout
    assert "cumulative I/O time: simulated" in text.stdout


@pytest.mark.parametrize(
    "content",
    [b"", b"not a darshan log\n" * 10, bytes(range(256)) * 64],
    ids=["empty", "text", "random-bytes"],
)
def test_bad_logs_exit_2_with_one_line(tmp_path: Path, content: bytes) -> None:
    log = tmp_path / "bad.darshan"
    log.write_bytes(content)
    out = run_flashsim("replay", str(log), "--system", str(PERLMUTTER))
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert out.stderr.startswith("error: ") and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "bad.darshan" in out.stderr


def test_a_truncated_log_exits_2(tmp_path: Path) -> None:
    whole = (PACKAGE / "examples" / "example_logs" / "example.darshan").read_bytes()
    log = tmp_path / "truncated.darshan"
    log.write_bytes(whole[: len(whole) // 2])
    out = run_flashsim("replay", str(log), "--system", str(PERLMUTTER))
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_missing_log_or_model_exits_2(tmp_path: Path) -> None:
    out = run_flashsim("replay", str(tmp_path / "none.darshan"), "--system", str(PERLMUTTER))
    assert out.returncode == 2 and "no such Darshan log" in out.stderr
    log = PACKAGE / "examples" / "example_logs" / "dxt.darshan"
    out = run_flashsim("replay", str(log), "--system", str(tmp_path / "none.toml"))
    assert out.returncode == 2 and "no such model file" in out.stderr


def with_job_field(src: Path, dst: Path, offset: int, value: int) -> Path:
    """A copy of a 3.x log whose job record has the int64 at ``offset`` set to ``value``.

    The job record is the zlib stream after the header; it is re-compressed and
    the header's region map shifted by the change in its length, so the rest
    of the log reads as before (a hand-made garbage header, as pre-release
    3.41 logs have).
    """
    raw = src.read_bytes()
    assert raw[:4] in (b"3.10", b"3.20", b"3.21") and raw[16] == 0  # zlib, 16 modules
    map_at, n_regions = 24, 17
    header_B = map_at + 16 * n_regions + 4 * 16
    maps = list(struct.unpack_from(f"<{2 * n_regions}Q", raw, map_at))
    job_end = maps[0]  # the name region follows the job record
    job = bytearray(zlib.decompress(raw[header_B:job_end]))
    struct.pack_into("<q", job, offset, value)
    packed = zlib.compress(bytes(job))
    shift = len(packed) - (job_end - header_B)
    for i in range(0, len(maps), 2):
        if maps[i + 1] > 0 and maps[i] >= job_end:
            maps[i] += shift
    head = bytearray(raw[:header_B])
    struct.pack_into(f"<{len(maps)}Q", head, map_at, *maps)
    dst.write_bytes(bytes(head) + packed + raw[job_end:])
    return dst


#: Offsets (bytes) in a 3.00-3.21 job record: uid, start_time, end_time, nprocs, jobid.
NPROCS_AT, START_AT = 24, 8


@pytest.mark.parametrize(
    ("offset", "value", "expected"),
    [
        (NPROCS_AT, 4427712942739450219, "header field nprocs = 4427712942739450219 is "
         "impossible (expected 1..2147483647"),
        (NPROCS_AT, 0, "header field nprocs = 0 is impossible"),
        (START_AT, -5, "header field start_time_sec = -5 is impossible"),
        (START_AT, 1594155560, "header field end_time_sec = 1594155460 is impossible "
         "(expected >= start_time_sec = 1594155560)"),
    ],
)  # fmt: skip
def test_a_garbage_header_names_the_file_and_the_impossible_field(
    tmp_path: Path, offset: int, value: int, expected: str
) -> None:
    src = PACKAGE / "examples" / "example_logs" / "ior_hdf5_example.darshan"
    same = with_job_field(src, tmp_path / "same.darshan", NPROCS_AT, 4)
    assert replay(same, CORI).conserved  # the re-packing alone changes nothing
    log = with_job_field(src, tmp_path / "garbage.darshan", offset, value)
    out = run_flashsim("replay", str(log), "--system", str(CORI))
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert out.stderr == f"error: {log}: {expected}" + out.stderr.split(expected, 1)[1]
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_a_replay_reads_its_log_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from flashsim import cli
    from flashsim.workloads import darshan_log

    reads: list[Path] = []
    real = darshan_log.read_darshan

    def counting(path: str | Path, *args: Any, **kwargs: Any) -> Any:
        reads.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(darshan_log, "read_darshan", counting)
    log = PACKAGE / "examples" / "example_logs" / "ior_hdf5_example.darshan"
    out = CliRunner().invoke(cli.main, ["replay", str(log), "--system", str(CORI), "--json"])
    assert out.exit_code == 0, out.output
    assert reads == [log.resolve()]
