"""Darshan reader: recorded I/O time per job, rank and file; bad logs.

On pydarshan's real logs (other sites') and on two logs produced here: IOR under a
darshan-runtime 3.4.7 built from source (tests/data/measurements/darshan/README.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

darshan = pytest.importorskip("darshan")

from flashsim.measurements.readers import darshan as reader  # noqa: E402
from flashsim.measurements.readers import detect_tool, read_file  # noqa: E402
from flashsim.measurements.record import MeasurementError  # noqa: E402
from flashsim.measurements.reproduce import Plan, Skip, plan  # noqa: E402
from flashsim.scenario import run_loaded, scenario_from_data  # noqa: E402
from flashsim.workloads.darshan_log import read_darshan  # noqa: E402

PKG = Path(darshan.__file__).parent
IOR = PKG / "examples/example_logs/ior_hdf5_example.darshan"  # 4 ranks, one shared file, DXT
DXT = PKG / "tests/input/sample-dxt-simple.darshan"  # 16 ranks, per-rank files
VPIC = PKG / "examples/example_logs/example.darshan"  # 2,048 ranks, one shared file
MODEL = Path(__file__).parents[1] / "models" / "systems" / "cori-scratch.toml"
BAD = Path(__file__).parent / "data" / "measurements" / "darshan" / "bad"


def _rank_times(path: Path) -> tuple[np.ndarray, float]:
    """Each rank's own read+write+meta time and each rank's share of shared files (s)."""
    trace = read_darshan(path)
    rec = trace.records
    t = np.nan_to_num(rec["io_time_s"].to_numpy(float)) + np.nan_to_num(
        rec["meta_time_s"].to_numpy(float)
    )
    rank = rec["rank"].to_numpy(int)
    own = np.bincount(rank[rank >= 0], weights=t[rank >= 0], minlength=trace.nprocs)
    return own, float(t[rank < 0].sum()) / trace.nprocs


@pytest.mark.parametrize("path", [IOR, DXT, VPIC])
def test_job_rank_and_file_io_time(path: Path) -> None:
    assert detect_tool(path) == "darshan"
    ms = read_file(path)
    job, cumulative, *scoped = ms
    assert cumulative.quantity == "io_time_cumulative" and cumulative.scope == ""
    assert cumulative.value == pytest.approx(
        np.nansum(read_darshan(path).records["io_time_s"].to_numpy(float))
    )
    own, share = _rank_times(path)
    assert job.quantity == "io_time" and job.unit == "s" and job.scope == ""
    assert job.value == pytest.approx((own + share).max())
    ranks = [m for m in scoped if m.scope.startswith("rank ")]
    files = [m for m in scoped if m.scope.startswith("file ")]
    assert len(ranks) + len(files) == len(scoped)
    for m in ranks:
        assert m.value == pytest.approx(own[int(m.scope.split()[1])] + share)
    trace = read_darshan(path)
    assert len(files) == min(len(trace.files), reader.MAX_SCOPED)
    file_total = sum(m.value for m in files)
    assert file_total == pytest.approx(job.conditions.extra["cumulative_io_time_s"])
    assert job.conditions.extra["bytes_written"] == pytest.approx(
        trace.records["bytes_written"].sum()
    )
    assert len({m.id for m in ms}) == len(ms)
    assert all(m.conditions.tasks == trace.nprocs for m in ms)


def test_conditions_from_the_log() -> None:
    job = read_file(IOR)[0]
    c = job.conditions
    assert (c.tool, c.tool_version, c.tasks) == ("darshan", "3.21", 4)
    assert c.command_line is not None and c.command_line.split()[:3] == [
        "/global/u2/s/ssnyder/software/ior/build/src/ior",
        "-a",
        "HDF5",
    ]
    assert c.duration_s is not None and c.duration_s > 0
    assert job.id == "ior_hdf5_example:ior:io:io_time"
    assert "mean rank's share" in job.note  # the log has a file shared by all ranks


def test_per_rank_and_per_file_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MAX_SCOPED", 3)
    ms = read_file(DXT)
    assert sum(m.scope.startswith("rank ") for m in ms) == 3
    assert sum(m.scope.startswith("file ") for m in ms) == 3
    assert "kept for the 3 slowest of 16 ranks" in ms[0].note
    assert "kept for the 3 slowest of 18 files" in ms[0].note
    # the kept ranks are the slowest ones
    own, share = _rank_times(DXT)
    kept = sorted(m.value for m in ms if m.scope.startswith("rank "))
    assert kept == pytest.approx(sorted(own + share)[-3:])


def test_replay_reproduces_the_cumulative_io_time() -> None:
    job, cumulative, rank0, *_ = read_file(IOR)
    for m in (job, rank0):
        skip = plan(m)
        assert isinstance(skip, Skip) and "io_time_cumulative" in skip.reason
    p = plan(cumulative)
    assert isinstance(p, Plan) and p.field == "extra.total.sim_io_time_s"
    assert p.phases[0]["workload"] == "darshan" and Path(p.phases[0]["log"]) == IOR.resolve()
    # the replay's recorded total is this very measurement (the 4-rank log replays in < 1 s)
    data = {
        "name": "check",
        "system": str(MODEL),
        "seed": 1,
        "fidelity": p.fidelity,
        "phases": [dict(ph) for ph in p.phases],
    }
    result = run_loaded(scenario_from_data(data, MODEL.parent))
    total = result.phases[0].to_dict()["extra"]["total"]
    assert total["recorded_io_time_s"] == pytest.approx(cumulative.value)
    assert total["sim_io_time_s"] >= 0.0


def test_sidecar_nodes_set_ranks_per_node(tmp_path: Path) -> None:
    log = tmp_path / "ior.darshan"
    log.write_bytes(IOR.read_bytes())
    (tmp_path / "ior.darshan.conditions.toml").write_text("[conditions]\nnodes = 2\n")
    cumulative = read_file(log)[1]
    p = plan(cumulative)
    assert isinstance(p, Plan) and p.phases[0]["ranks_per_node"] == 2


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("empty.darshan", "empty file"),
        ("bad-magic.darshan", "bad magic"),
        ("truncated-header.darshan", "truncated"),
        ("truncated-body.darshan", "truncated"),
    ],
)
def test_bad_logs_are_one_error_naming_the_file(name: str, words: str) -> None:
    path = BAD / name
    with pytest.raises(MeasurementError) as info:
        read_file(path, tool="darshan")
    text = str(info.value)
    assert text.startswith(f"{path}: ") and words in text
    assert "\n" not in text and text.count(str(path)) == 1


def test_sniff() -> None:
    assert reader.sniff(IOR.read_bytes()[:65536])
    assert not reader.sniff((BAD / "bad-magic.darshan").read_bytes())
    assert not reader.sniff(b"")
    assert not reader.sniff(b"[LNet Rates of servers]\n")


# --- real logs produced here (tests/data/measurements/darshan/README.md says how) -------------

HERE = Path(__file__).parent / "data" / "measurements" / "darshan"
SEQ = HERE / "ior-fpp-seq.darshan"  # IOR -w -r -F -e -t 1m -b 8m, 2 ranks
RAND = HERE / "ior-fpp-rand4k.darshan"  # IOR -w -r -F -e -z -t 4k -b 1m, 2 ranks
MiB = 2**20

#: IOR's command line, as Darshan's ``exe`` line records it.
EXE = {
    SEQ: "/tmp/ior-mior/src/ior -w -r -F -e -t 1m -b 8m -o /tmp/dar-run/testfile",
    RAND: "/tmp/ior-mior/src/ior -w -r -F -e -z -t 4k -b 1m -o /tmp/dar-run/testfile",
}

#: Bytes per rank IOR moved each way (its ``-b``, one segment, file per process).
BLOCK_B = {SEQ: 8 * MiB, RAND: 1 * MiB}

#: Bytes rank 0 wrote to ``<STDOUT>`` (IOR's report), ``STDIO_BYTES_WRITTEN``.
STDOUT_B = {SEQ: 2225, RAND: 2228}

#: ``darshan-parser`` 3.4.7's counters of each log (it prints 6 decimals), s:
#: (file, rank) -> (F_READ_TIME, F_WRITE_TIME, F_META_TIME).
PARSER = {
    SEQ: {
        ("/tmp/dar-run/testfile.00000000", 0): (0.000335, 0.013036, 0.000095),
        ("/tmp/dar-run/testfile.00000001", 1): (0.000293, 0.012974, 0.000175),
        ("<STDOUT>", 0): (0.000000, 0.000141, 0.000000),
    },
    RAND: {
        ("/tmp/dar-run/testfile.00000000", 0): (0.000177, 0.002842, 0.000227),
        ("/tmp/dar-run/testfile.00000001", 1): (0.000145, 0.002793, 0.000182),
        ("<STDOUT>", 0): (0.000000, 0.000106, 0.000000),
    },
}

#: ``darshan-parser``'s ``# run time:`` line (``%.4lf``), s.
RUN_TIME = {SEQ: 0.0225, RAND: 0.0068}


def _printed(value: float, terms: int = 1, decimals: int = 6) -> dict[str, float]:
    """Approx arguments for a sum of ``terms`` values darshan-parser printed rounded.

    ``darshan-parser`` prints counters with ``%.6f`` and the run time with ``%.4lf``
    (darshan-util/darshan-parser.c), so each printed value is within half a unit of
    its last digit of the log's.
    """
    return {"expected": value, "abs": 0.5 * 10.0**-decimals * terms, "rel": 0.0}


def _counters(path: Path) -> dict[tuple[str, int], tuple[float, float, float]]:
    """The log's exact (read, write, meta) times per (file, rank), via pydarshan (s)."""
    report = darshan.DarshanReport(str(path), read_all=True)
    out: dict[tuple[str, int], tuple[float, float, float]] = {}
    for module in ("POSIX", "STDIO"):
        fc = report.records[module].to_df()["fcounters"]
        for row in fc.to_dict("records"):
            name = report.name_records[row["id"]]
            out[(name, int(row["rank"]))] = (
                float(row[f"{module}_F_READ_TIME"]),
                float(row[f"{module}_F_WRITE_TIME"]),
                float(row[f"{module}_F_META_TIME"]),
            )
    return out


@pytest.mark.parametrize("path", [SEQ, RAND])
def test_real_log_conditions(path: Path) -> None:
    assert detect_tool(path) == "darshan"
    ms = read_file(path)
    assert [m.id for m in ms] == [
        f"{path.stem}:ior:io:io_time",
        f"{path.stem}:ior:io:io_time_cumulative",
        f"{path.stem}:ior:rank 0:io:io_time",
        f"{path.stem}:ior:rank 1:io:io_time",
        f"{path.stem}:ior:file /tmp/dar-run/testfile.00000000:io:io_time",
        f"{path.stem}:ior:file /tmp/dar-run/testfile.00000001:io:io_time",
        f"{path.stem}:ior:file <STDOUT>:io:io_time",
    ]
    for m in ms:
        c = m.conditions
        assert (c.tool, c.tool_version, c.tasks) == ("darshan", "3.41", 2)
        assert c.command_line == EXE[path]
        assert c.duration_s == pytest.approx(**_printed(RUN_TIME[path], decimals=4))
        assert m.unit == "s" and m.source == str(path)
    report = darshan.DarshanReport(str(path), read_all=False)
    assert ms[0].conditions.duration_s == report.metadata["job"]["run_time"]
    assert report.metadata["job"]["nprocs"] == 2


@pytest.mark.parametrize("path", [SEQ, RAND])
def test_real_log_bytes_are_what_ior_moved(path: Path) -> None:
    job, cumulative, rank0, rank1, file0, file1, stdout = read_file(path)
    block = BLOCK_B[path]
    # 2 ranks x -b each way; rank 0 also wrote IOR's report to stdout
    assert job.conditions.extra["bytes_read"] == 2 * block
    assert job.conditions.extra["bytes_written"] == 2 * block + STDOUT_B[path]
    assert job.conditions.extra["files"] == 3
    assert rank0.conditions.extra == {"bytes_read": block, "bytes_written": block + STDOUT_B[path]}
    assert rank1.conditions.extra == {"bytes_read": block, "bytes_written": block}
    for m in (file0, file1):
        assert m.conditions.extra == {"bytes_read": block, "bytes_written": block}
    assert stdout.conditions.extra == {"bytes_read": 0.0, "bytes_written": STDOUT_B[path]}
    assert cumulative.conditions.extra == {"log": str(path.resolve())}


@pytest.mark.parametrize("path", [SEQ, RAND])
def test_real_log_times_are_darshan_parsers(path: Path) -> None:
    job, cumulative, rank0, rank1, file0, file1, stdout = read_file(path)
    p = PARSER[path]
    f0, f1, out = (
        p[("/tmp/dar-run/testfile.00000000", 0)],
        p[("/tmp/dar-run/testfile.00000001", 1)],
        p[("<STDOUT>", 0)],
    )
    # per file: read + write + meta of its one record
    assert file0.value == pytest.approx(**_printed(sum(f0), 3))
    assert file1.value == pytest.approx(**_printed(sum(f1), 3))
    assert stdout.value == pytest.approx(**_printed(sum(out), 3))
    # per rank: its own records (no shared file here, so no shares)
    assert rank0.value == pytest.approx(**_printed(sum(f0) + sum(out), 6))
    assert rank1.value == pytest.approx(**_printed(sum(f1), 3))
    assert "shared" not in rank0.note
    # job: the slowest rank (rank 0 in both runs)
    assert job.value == rank0.value and job.conditions.extra["slowest_rank"] == 0
    assert job.conditions.extra["cumulative_io_time_s"] == pytest.approx(
        **_printed(sum(f0) + sum(f1) + sum(out), 9)
    )
    # cumulative: read + write only, every record
    assert cumulative.value == pytest.approx(**_printed(f0[0] + f0[1] + f1[0] + f1[1] + out[1], 5))


@pytest.mark.parametrize("path", [SEQ, RAND])
def test_real_log_times_are_the_logs_counters_exactly(path: Path) -> None:
    counters = _counters(path)
    assert set(counters) == set(PARSER[path])
    for key, printed in PARSER[path].items():  # darshan-parser printed these very counters
        assert counters[key] == pytest.approx(printed, abs=5e-7, rel=0.0)
    job, cumulative, rank0, rank1, file0, file1, stdout = read_file(path)
    f0 = counters[("/tmp/dar-run/testfile.00000000", 0)]
    f1 = counters[("/tmp/dar-run/testfile.00000001", 1)]
    out = counters[("<STDOUT>", 0)]
    exact = {"rel": 1e-12, "abs": 0.0}  # float sums in another order
    assert file0.value == pytest.approx(sum(f0), **exact)
    assert file1.value == pytest.approx(sum(f1), **exact)
    assert stdout.value == pytest.approx(sum(out), **exact)
    assert rank0.value == pytest.approx(sum(f0) + sum(out), **exact)
    assert rank1.value == pytest.approx(sum(f1), **exact)
    assert cumulative.value == pytest.approx(f0[0] + f0[1] + f1[0] + f1[1] + out[1], **exact)
    assert job.value == max(rank0.value, rank1.value)


def test_check_replays_the_real_log() -> None:
    from click.testing import CliRunner

    from flashsim.cli import main

    result = CliRunner().invoke(
        main, ["check", str(SEQ), "--system", str(MODEL)], catch_exceptions=False
    )
    assert result.exit_code in (0, 1), result.output  # pass or fail: the log is of this container
    rows = {
        cells[0]: cells
        for line in result.output.splitlines()
        if line.startswith("| ior-fpp-seq:")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert len(rows) == 7
    row = rows["ior-fpp-seq:ior:io:io_time_cumulative"]
    header = next(line for line in result.output.splitlines() if line.startswith("| id "))
    cols = [c.strip() for c in header.strip("|").split("|")]
    cell = dict(zip(cols, row, strict=True))
    assert cell["quantity"] == "io_time_cumulative"
    assert (cell["measured"], cell["unit"]) == ("26.78", "ms")  # darshan-parser: 0.026779 s
    assert cell["simulated"] != "-" and cell["ok"] in ("pass", "FAIL")  # replayed, not skipped
    # the other rows are skipped with the reason, not dropped
    for key, cells in rows.items():
        if key != "ior-fpp-seq:ior:io:io_time_cumulative":
            assert dict(zip(cols, cells, strict=True))["ok"].startswith("skip: ")
