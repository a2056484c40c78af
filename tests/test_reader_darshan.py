"""Darshan reader: recorded I/O time per job, rank and file from pydarshan's real logs; bad logs."""

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
