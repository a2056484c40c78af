"""Progress on a terminal (flashsim.progress) and the header's whole-command wall time.

A status line is drawn on standard error only when it is a terminal and the
output is for people (not --json); it never changes a simulated result.
Terminals are faked by a stream whose ``isatty()`` is true, or are real
pseudo-terminals (``pty``) for the command line.  Redraws are made
synchronous with ``interval_s = 0`` (``FLASHSIM_PROGRESS_INTERVAL=0``) so
that what is drawn does not depend on how fast the machine is.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from flashsim.measure.report import format_run_text
from flashsim.progress import Progress, current, format_sim_time, open_progress
from flashsim.scenario import load_scenario, load_system_model, run_loaded
from flashsim.wallclock import process_wall_s

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "scenarios" / "examples" / "pipeline-streams.toml"
IMPORTED_AT = time.perf_counter()


class FakeTerminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_a_terminal_shows_nested_tasks_counts_and_simulated_time() -> None:
    stream = FakeTerminal()
    with (
        Progress(stream, interval_s=0.0) as progress,
        progress.task("demo", total=2, unit="phase") as run,
    ):
        with progress.task("write", clock=lambda: 35.0):
            line = progress.line()
        run.advance()
        with current().task("days", total=180, unit="day") as days:
            days.advance(45)
            assert current() is progress
            nested = progress.line()
    assert line == "demo 0/2 phase › write sim 35 s"
    assert nested == "demo 1/2 phase › days 45/180 day"
    drawn = stream.getvalue()
    assert "demo 0/2 phase › write sim 35 s" in drawn
    assert "days 45/180 day" in drawn
    assert drawn.endswith("\r"), "the line is cleared when the progress ends"


@pytest.mark.parametrize(
    ("stream", "enabled"),
    [(io.StringIO(), True), (FakeTerminal(), False)],
    ids=["not-a-terminal", "json-on-a-terminal"],
)
def test_nothing_is_printed_off_a_terminal_or_for_machines(stream: Any, enabled: bool) -> None:
    with Progress(stream, enabled=enabled, interval_s=0.0) as progress:
        assert not progress.active
        for _ in current().task("days", total=3, unit="day").over(range(3)):
            pass
    assert stream.getvalue() == ""


def test_without_an_active_progress_tasks_are_silent_and_cheap() -> None:
    quiet = current()
    assert not quiet.active
    assert list(quiet.task("days", total=2).over(range(2))) == [0, 1]
    with open_progress(enabled=True) as outer, open_progress(enabled=True) as inner:
        assert inner is outer  # a run inside a command's progress reports there


def test_the_line_is_redrawn_from_a_thread_while_the_simulation_runs() -> None:
    stream = FakeTerminal()
    read = threading.Event()

    def clock() -> float:  # read by the drawing thread, not by the caller
        read.set()
        return 12.5

    with Progress(stream, interval_s=0.01) as progress, progress.task("phase", clock=clock):
        assert read.wait(timeout=120), "the drawing thread never read the clock"
    assert "phase sim 12.5 s" in stream.getvalue()


def test_simulated_times_read_in_their_unit() -> None:
    assert format_sim_time(35.25) == "35.2 s"
    assert format_sim_time(600.0) == "10 min"
    assert format_sim_time(3 * 3600.0) == "3 h"
    assert format_sim_time(180 * 86400.0) == "180 d"


def _result_without_wall(progress: Progress | None) -> dict[str, Any]:
    loaded = load_scenario(DEMO)
    if progress is None:
        out = run_loaded(loaded).to_dict()
    else:
        with progress:
            out = run_loaded(loaded, progress=True).to_dict()
    out.pop("wall_time_s")
    return out


def test_progress_changes_no_simulated_result() -> None:
    drawn_every_change, drawn_by_thread = FakeTerminal(), FakeTerminal()
    plain = _result_without_wall(None)
    assert _result_without_wall(Progress(drawn_every_change, interval_s=0.0)) == plain
    assert _result_without_wall(Progress(drawn_by_thread, interval_s=0.001)) == plain
    text = drawn_every_change.getvalue()
    assert "pipeline-streams: building pipeline-demo.toml" in text
    assert "pipeline-streams 0/2 phase › bandwidth" in text
    assert "pipeline-streams 1/2 phase › iops" in text


def test_production_aging_counts_its_days(monkeypatch: pytest.MonkeyPatch) -> None:
    from flashsim.systems.lustre import production as lustre_production

    seen: list[str] = []
    stream = FakeTerminal()
    progress = Progress(stream, interval_s=0.0)
    real = lustre_production.write_rates_Bps

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(progress.line())
        return real(*args, **kwargs)

    monkeypatch.setattr(lustre_production, "write_rates_Bps", spy)
    loaded = load_scenario(
        ROOT / "scenarios" / "perlmutter" / "trim-policy.toml",
        {"phases.0.days": "3", "phases.0.osts": "2", "phases.1.days": "1",
         "phases.1.osts": "1", "phases.2.days": "1", "phases.2.osts": "1"},
    )  # fmt: skip
    with progress:
        run_loaded(loaded, progress=True)
    days = [line for line in seen if re.search(r"› no-trim( sim [^›]+)? › days 2/3 day$", line)]
    assert days, seen


# ------------------------------------------------------------------ the command line
def _in_a_pty(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run ``python -m flashsim.cli ARGS`` with stderr on a pseudo-terminal; (rc, stdout, tty)."""
    master, slave = os.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the terminal's last writer closed it
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "flashsim.cli", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=slave,
            text=True,
            env={**os.environ, **(env or {})},
            timeout=600,
            check=False,
        )
    finally:
        os.close(slave)
        reader.join(timeout=60)
        os.close(master)
    return proc.returncode, proc.stdout, b"".join(chunks).decode("utf-8", "replace")


def test_run_on_a_terminal_shows_its_phases_and_json_shows_nothing() -> None:
    now = {"FLASHSIM_PROGRESS_INTERVAL": "0 s"}
    rc, out, tty = _in_a_pty(["run", str(DEMO)], now)
    assert rc == 0, tty
    assert "pipeline-streams 0/2 phase › bandwidth" in tty
    assert "pipeline-streams 1/2 phase › iops" in tty
    assert "phase › " not in out, "progress goes to stderr only"
    rc, out, tty = _in_a_pty(["run", str(DEMO), "--json"], now)
    assert rc == 0, tty
    assert tty == ""
    assert out.lstrip().startswith("{")


def test_validate_on_a_terminal_counts_records() -> None:
    now = {"FLASHSIM_PROGRESS_INTERVAL": "0 s"}
    rc, out, tty = _in_a_pty(["validate", "--only", "vast.scm.read_bandwidth"], now)
    assert rc == 0, tty
    assert "validate 1/1 record" in tty
    assert "1 passed, 0 failed" in out


def test_a_bad_interval_is_one_error_line() -> None:
    rc, _, tty = _in_a_pty(["run", str(DEMO)], {"FLASHSIM_PROGRESS_INTERVAL": "fast"})
    lines = [line for line in tty.splitlines() if line.strip()]
    assert rc == 2, tty
    assert len(lines) == 1 and lines[0].startswith("error: "), tty
    assert "FLASHSIM_PROGRESS_INTERVAL" in lines[0] and "'fast'" in lines[0]


# ------------------------------------------------------------------ wall time
def test_process_wall_time_counts_from_the_start_of_the_process() -> None:
    age_s = process_wall_s()
    assert age_s is not None
    assert age_s >= time.perf_counter() - IMPORTED_AT  # the process started before this module


def test_the_header_says_what_its_wall_time_covers() -> None:
    result = run_loaded(load_scenario(DEMO))
    whole = format_run_text(result, process_wall_s=12.345).splitlines()[0]
    assert f"wall: 12.35 s (whole command; run {result.wall_time_s:.2f} s)" in whole
    run_only = format_run_text(result).splitlines()[0]
    assert f"wall: {result.wall_time_s:.2f} s (run only)" in run_only


def test_run_piped_prints_no_progress_and_its_header_wall_includes_start_up() -> None:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "flashsim.cli", "run", str(DEMO)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "FLASHSIM_PROGRESS_INTERVAL": "0 s"},
        timeout=600,
        check=False,
    )
    outer_s = time.perf_counter() - started
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # stderr is a pipe: no status line
    header = proc.stdout.splitlines()[0]
    match = re.search(r"wall: ([\d.]+) s \(whole command; run ([\d.]+) s\)", header)
    assert match is not None, header
    whole_s, run_s = float(match[1]), float(match[2])
    assert whole_s <= outer_s + 0.02  # 10 ms ticks of the process start
    assert whole_s > run_s  # start-up (interpreter, imports, model load) is counted


def test_validate_shows_the_record_whose_scenario_runs(tmp_path: Path) -> None:
    from flashsim.validation import load_records, run_records

    (tmp_path / "demo.toml").write_text(
        f"""[[record]]
id = "demo.bandwidth"
source = "a test"
quantity = "bandwidth"
unit = "GB/s"
published = 1.0
tolerance = 1000.0
role = "prediction"
scenario = "{DEMO.as_posix()}"
phase = "bandwidth"
field = "bandwidth_GBps"
"""
    )
    stream = FakeTerminal()
    with (
        Progress(stream, interval_s=0.0) as progress,
        progress.task("validate", total=1, unit="record") as done,
    ):
        run_records(load_records(tmp_path), on_record=lambda _result: done.advance())
    assert "validate 0/1 record › demo.bandwidth › pipeline-streams 0/2 phase" in stream.getvalue()


def test_a_sweep_can_count_its_points_with_a_note() -> None:
    # the API flashsim/sweep.py uses: points resumed, finished, running and failed
    stream = FakeTerminal()
    with (
        Progress(stream, interval_s=0.0) as progress,
        progress.task("sweep", total=6, unit="point", done=2) as points,
    ):
        points.advance()
        points.note = "2 running, 1 failed"
        assert progress.line() == "sweep 3/6 point (2 running, 1 failed)"


def test_a_vast_size_sweep_counts_its_tests_and_changes_no_row() -> None:
    from flashsim.systems.vast import study as vast_study
    from flashsim.systems.vast.kind import VastSizeSweepPhase

    model = load_system_model(ROOT / "models" / "systems" / "vast-pdsw21.toml").model
    spec = {"name": "s", "workload": "vast-size-sweep", "sizes": ["0.25 TB"], "nodes": 1,
            "ranks_per_node": 2, "repetitions": 1, "stonewall": "1 s", "workers": 1}  # fmt: skip
    plain = vast_study.run_size_sweep(
        model, VastSizeSweepPhase.model_validate({**spec, "progress": False}), seed=1
    )
    stream = FakeTerminal()
    with Progress(stream, interval_s=0.0):
        shown = vast_study.run_size_sweep(model, VastSizeSweepPhase.model_validate(spec), seed=1)
    assert shown.equals(plain)
    assert "tests 0/2 test" in stream.getvalue() and "tests 1/2 test" in stream.getvalue()


def test_a_jobs_phase_shows_its_runs_together_then_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from flashsim.engine.simulation import Simulation
    from flashsim.systems.vast.kind import VastKind
    from flashsim.workloads import jobs as jobs_module
    from flashsim.workloads.jobs import JobsPhase

    model = load_system_model(ROOT / "models" / "systems" / "vast-pdsw21.toml").model
    job = {"type": "ior", "nodes": 1, "ranks_per_node": 2, "transfer_size": "1 MiB",
           "block_size": "16 MiB"}  # fmt: skip
    phase = JobsPhase.model_validate(
        {"name": "p", "workload": "jobs", "alone": True, "jobs": [
            {**job, "name": "w", "operation": "write"},
            {**job, "name": "r", "operation": "read"}]}
    )  # fmt: skip
    progress = Progress(FakeTerminal(), interval_s=0.0)
    seen: list[str] = []
    real = jobs_module.JobEngine.run

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(progress.line())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(jobs_module.JobEngine, "run", spy)
    with progress:
        VastKind().build(model, Simulation(3), "flow").run_phase(phase)
    assert seen == ["all jobs at once", "alone 1/2 w", "alone 2/2 r"]


def test_a_sweep_counts_its_points_on_the_shared_line(tmp_path: Path) -> None:
    # flashsim/sweep.py draws on flashsim.progress (no bar of its own): its points,
    # their running and failed counts, and each point's own phases nested inside.
    from flashsim.sweep import run_sweep

    axes = [("phases.iops.streams", ["1", "2"])]
    seen: list[str] = []
    stream = FakeTerminal()
    with Progress(stream=stream, interval_s=0.0) as progress:
        original = progress.refresh

        def spy() -> None:
            seen.append(progress.line())
            original()

        progress.refresh = spy  # type: ignore[method-assign]
        run_sweep(DEMO, axes, store=tmp_path / "s", executor="in-process", progress=True)
    assert "sweep 0/2 point" in seen
    assert "sweep 0/2 point (1 running, 0 failed)" in seen
    assert "sweep 1/2 point (0 running, 0 failed)" in seen
    assert "sweep 2/2 point (0 running, 0 failed)" in seen
    assert any(line.startswith("sweep 0/2 point (1 running, 0 failed) › ") for line in seen)
    assert "sweep 2/2 point" in stream.getvalue()


def test_sweep_on_a_terminal_reads_like_run_and_json_draws_nothing(tmp_path: Path) -> None:
    now = {"FLASHSIM_PROGRESS_INTERVAL": "0 s"}
    vary = ["--vary", "phases.iops.streams=1,2", "--executor", "in-process"]
    rc, out, tty = _in_a_pty(["sweep", str(DEMO), *vary, "--store", str(tmp_path / "a")], now)
    assert rc == 0, tty
    assert "sweep 1/2 point (0 running, 0 failed)" in tty
    assert "sweep 0/2 point (1 running, 0 failed) › pipeline-streams" in tty
    rc, out, tty = _in_a_pty(
        ["sweep", str(DEMO), *vary, "--store", str(tmp_path / "b"), "--json"], now
    )
    assert rc == 0, tty
    assert "/2 point" not in tty and "running" not in tty  # only the closing 'sweep:' line
    assert tty.strip().startswith("sweep: 2 point(s) in the store"), tty
    assert out.lstrip().startswith("[")
