"""Sweeps that survive: Dask workers, the results store, interrupts, --resume, clear errors."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
from click.testing import CliRunner

from flashsim.cli import main
from flashsim.sweep import (
    FAILED_DIR,
    SweepFailedError,
    read_store,
    run_sweep,
)

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios/examples/pipeline-streams.toml"
# Request fidelity draws random service times, so bit-identical results across processes
# and workers mean the seeding really is per point; each point takes about half a second.
REQUEST = {"fidelity": '"request"'}
STREAMS = ["1", "2", "3", "4", "5", "6", "7", "8"]
AXES = [("phases.iops.streams", STREAMS)]
VARY = "phases.iops.streams=" + ",".join(STREAMS)


def sweep_args(store: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "flashsim.cli",
        "sweep",
        str(SCENARIO),
        "--vary",
        VARY,
        "--set",
        'fidelity="request"',
        "--store",
        str(store),
        *extra,
    ]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The uninterrupted sweep, in this process (``jobs=1``)."""
    store = tmp_path_factory.mktemp("reference") / "sweep.parquet"
    return run_sweep(SCENARIO, AXES, REQUEST, jobs=1, store=store)


def point_files(store: Path) -> list[Path]:
    return sorted(store.glob("point-*.parquet"))


#: Waiting for an event polls for it: at most MAX_POLLS polls POLL_S apart.  The work
#: is bounded, not the time an event takes: a loaded machine only uses more polls.
POLL_S = 0.05
MAX_POLLS = 6000
#: Seconds after which a process that should end is taken as hung (never reached
#: by a working sweep, however loaded the machine; it only stops a hung test).
HANG_S = 600


def wait_for_first_point(proc: subprocess.Popen[str], store: Path) -> None:
    """Return once the sweep ``proc`` has stored its first finished point."""
    for _ in range(MAX_POLLS):
        if point_files(store):
            return
        if proc.poll() is not None:
            pytest.fail(f"the sweep ended before storing a point: {proc.communicate()[1]}")
        time.sleep(POLL_S)
    proc.kill()
    pytest.fail(f"no point stored after {MAX_POLLS} polls")


def assert_gone(procs: list[psutil.Process]) -> None:
    """Every process has exited (a zombie awaiting its reaper counts as exited)."""
    _, alive = psutil.wait_procs(procs, timeout=HANG_S)
    running = []
    for proc in alive:
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                running.append(proc)
        except psutil.NoSuchProcess:
            pass
    assert not running, f"orphaned processes: {running}"


@pytest.mark.parametrize(
    ("sig", "executor", "status"),
    [
        (signal.SIGINT, "dask", 130),
        pytest.param(signal.SIGTERM, "in-process", 143, marks=pytest.mark.slow),
    ],
    ids=["sigint-dask", "sigterm-in-process"],
)
def test_interrupted_sweep_resumes_bit_identical(
    tmp_path: Path, reference: pd.DataFrame, sig: signal.Signals, executor: str, status: int
) -> None:
    store = tmp_path / "sweep.parquet"
    jobs = "2" if executor == "dask" else "1"
    proc = subprocess.Popen(
        sweep_args(store, "--jobs", jobs, "--executor", executor),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # The event, not a time: SIGINT goes once the store holds a finished point.
    wait_for_first_point(proc, store)
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == status, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    match = re.search(r"after (\d+) of 8 points finished", lines[0])
    assert match, lines[0]
    done = int(match.group(1))
    assert 1 <= done < 8, lines[0]
    assert str(store) in lines[0] and "--resume" in lines[0]
    kept = {f.name: f.stat().st_mtime_ns for f in point_files(store)}
    assert len(kept) == done
    assert_gone(children)

    resumed = subprocess.run(
        sweep_args(store, "--jobs", "1", "--resume"), capture_output=True, text=True, timeout=HANG_S
    )
    assert resumed.returncode == 0, resumed.stderr
    # The finished points were kept, not run again; the others were added.
    assert {f.name: f.stat().st_mtime_ns for f in point_files(store) if f.name in kept} == kept
    assert len(point_files(store)) == 8
    pd.testing.assert_frame_equal(read_store(store), reference, check_exact=True)


def test_in_process_and_two_dask_workers_are_bit_identical(
    tmp_path: Path, reference: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    # auto, told that a cluster starts at no cost: point 0 runs here, points 1-7 on Dask.
    monkeypatch.setattr("flashsim.sweep.DASK_STARTUP_S", 0.0)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "two").mkdir()
    parallel = run_sweep(SCENARIO, AXES, REQUEST, jobs=2, store=tmp_path / "two" / "store")
    assert parallel.attrs["executor"] == "in-process+dask"
    assert reference.attrs["executor"] == "in-process"
    serial = reference
    pd.testing.assert_frame_equal(serial, parallel, check_exact=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two"]  # Dask left no files here
    assert serial["point"].tolist() == [i for i in range(8) for _ in range(2)]  # point order
    assert serial["ci_rel_halfwidth"].notna().all()  # random, so identity is not trivial
    for column in ("point_key", "scenario_path", "overrides", "seed", "flashsim_version"):
        assert column in serial.columns
    assert serial["scenario_path"].iloc[0] == str(SCENARIO)
    assert '"phases.iops.streams": "3"' in serial["overrides"].iloc[4]  # point 2
    pd.testing.assert_frame_equal(
        read_store(tmp_path / "two" / "store"), parallel, check_exact=True
    )


def test_max_wall_stops_cleanly_and_resume_finishes(
    tmp_path: Path, reference: pd.DataFrame
) -> None:
    store = tmp_path / "sweep.parquet"
    proc = subprocess.run(
        sweep_args(store, "--jobs", "1", "--max-wall", "1.5"),
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert proc.returncode == 4, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "wall-clock limit (1.5 s)" in lines[0], proc.stderr
    # Stopped early (not after the 8 points), and says how many it kept.
    kept = len(point_files(store))
    assert kept < 8 and f"after {kept} of 8 points finished" in lines[0]
    frame = run_sweep(SCENARIO, AXES, REQUEST, jobs=1, store=store, resume=True)
    pd.testing.assert_frame_equal(frame, reference, check_exact=True)


def test_a_failed_point_is_recorded_and_rerun_by_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flashsim.sweep as sweep_module

    real = sweep_module._run_point

    def crash_on_point_1(
        scenario: str, overrides: dict[str, str], index: int, values: dict[str, str]
    ) -> pd.DataFrame:
        if index == 1:
            raise RuntimeError("worker lost")
        return real(scenario, overrides, index, values)

    store = tmp_path / "sweep.parquet"
    axes = [("phases.iops.streams", ["1", "2", "4"])]
    monkeypatch.setattr(sweep_module, "_run_point", crash_on_point_1)
    with pytest.raises(SweepFailedError) as info:
        run_sweep(SCENARIO, axes, store=store)
    assert info.value.done == 2 and info.value.total == 3 and not info.value.user_error
    assert "point 1" in str(info.value) and "worker lost" in str(info.value)
    assert len(list((store / FAILED_DIR).glob("*.json"))) == 1
    monkeypatch.setattr(sweep_module, "_run_point", real)
    frame = run_sweep(SCENARIO, axes, store=store, resume=True)
    assert frame["point"].unique().tolist() == [0, 1, 2]
    assert not list((store / FAILED_DIR).glob("*.json"))


@pytest.mark.slow
def test_a_killed_dask_worker_fails_only_its_point(tmp_path: Path) -> None:
    store = tmp_path / "sweep.parquet"
    proc = subprocess.Popen(
        sweep_args(store, "--jobs", "2", "--executor", "dask"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_first_point(proc, store)
    workers = [
        p
        for p in psutil.Process(proc.pid).children(recursive=True)
        if "spawn_main" in " ".join(p.cmdline())
    ]
    assert len(workers) == 2
    workers[0].kill()
    _, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 1, err
    # (The multiprocessing resource tracker may add a warning about the killed worker.)
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "--resume" in lines[0], err
    assert "the worker running it died" in lines[0]
    assert "Traceback" not in err
    failed = list((store / FAILED_DIR).glob("*.json"))
    assert 1 <= len(failed) <= 2  # the point running on the killed worker (at most one more)
    assert len(point_files(store)) == 8 - len(failed)
    resumed = subprocess.run(
        sweep_args(store, "--jobs", "1", "--resume"), capture_output=True, text=True, timeout=HANG_S
    )
    assert resumed.returncode == 0, resumed.stderr
    assert len(point_files(store)) == 8


# ------------------------------------------------------------ clear errors, before any run
def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["sweep", str(SCENARIO), *args])
    assert "Traceback" not in result.stderr
    return result.exit_code, result.stderr


def assert_one_line(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_repeated_vary_key_is_refused(tmp_path: Path) -> None:
    code, err = invoke(
        "--vary",
        "phases.iops.streams=1,2",
        "--vary",
        "phases.iops.streams=4",
        "--store",
        str(tmp_path / "s"),
    )
    assert_one_line(code, err, "key '--vary' = 'phases.iops.streams'", "varied once")
    assert not (tmp_path / "s").exists()


def test_vary_key_also_set_is_refused(tmp_path: Path) -> None:
    code, err = invoke(
        "--vary", "phases.iops.streams=1,2", "--set", "phases.iops.streams=4", "--jobs", "1"
    )
    assert_one_line(code, err, "key '--vary' = 'phases.iops.streams'", "also given with --set")


@pytest.mark.parametrize(
    ("jobs", "needle"),
    [("0", "expected at least 1"), ("100000", "the cores available here")],
)
def test_bad_jobs_is_refused(tmp_path: Path, jobs: str, needle: str) -> None:
    code, err = invoke(
        "--vary", "phases.iops.streams=1,2", "--jobs", jobs, "--store", str(tmp_path / "s")
    )
    assert_one_line(code, err, f"key '--jobs' = {jobs}", needle)
    assert not (tmp_path / "s").exists()


def test_jobs_with_scheduler_is_refused() -> None:
    code, err = invoke(
        "--vary", "phases.iops.streams=1,2", "--jobs", "2", "--scheduler", "tcp://127.0.0.1:1"
    )
    assert_one_line(code, err, "key '--jobs' = 2", "omit --jobs")


def test_jobs_above_points_is_lowered_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("flashsim.sweep.available_cores", lambda: 64)
    code, err = invoke("--vary", "phases.iops.streams=4", "--jobs", "8", "--store", str(tmp_path))
    assert code == 0, err
    assert "warning: --jobs 8 is more than the 1 point(s); using 1" in err


def test_unwritable_store_is_refused_before_running(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, err = invoke("--vary", "phases.iops.streams=1,2", "--store", str(blocker / "store"))
    assert_one_line(code, err, "key '--store'", "a writable directory")


def test_foreign_or_finished_store_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    code, err = invoke("--vary", "phases.iops.streams=1", "--store", str(foreign))
    assert_one_line(code, err, "key '--store'", "or a flashsim sweep store (no _sweep.json")
    store = tmp_path / "store"
    assert invoke("--vary", "phases.iops.streams=1", "--store", str(store))[0] == 0
    code, err = invoke("--vary", "phases.iops.streams=1", "--store", str(store))
    assert_one_line(code, err, "already holds 1 finished point", "--resume")
    code, err = invoke("--vary", "phases.iops.streams=2", "--store", str(store), "--resume")
    assert_one_line(code, err, "holds another sweep", "axes")


def test_unwritable_csv_is_refused_before_running(tmp_path: Path) -> None:
    store = tmp_path / "store"
    csv = tmp_path / "missing" / "dir" / "out.csv"
    code, err = invoke(
        "--vary", "phases.iops.streams=1,2", "--store", str(store), "--csv", str(csv)
    )
    assert_one_line(code, err, "key '--csv' = '", "a writable file path (No such file")
    assert not store.exists()  # nothing ran
