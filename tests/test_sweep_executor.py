"""A few small points run in this process; Dask only where it pays (issue 20, items 5 and 8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flashsim.cli import main
from flashsim.sweep import DASK_STARTUP_S, dask_pays, run_sweep

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios/examples/pipeline-streams.toml"
AXES = [("phases.iops.streams", ["1", "2", "3"])]
VARY = ["--vary", "phases.iops.streams=1,2,3"]


def test_dask_pays_only_for_enough_work() -> None:
    assert not dask_pays([], 100, 2)  # nothing measured yet
    assert not dask_pays([60.0], 100, 1)  # one worker cannot beat this process
    assert not dask_pays([60.0], 1, 8)  # one point left
    assert not dask_pays([0.5, 0.5], 6, 2)  # 3 s of points against the start-up
    assert dask_pays([1.0], 100, 2)  # 100 s here against start-up + 50 s
    # The median, so one slow first point (imports, caches) does not decide alone.
    assert not dask_pays([30.0, 0.2, 0.2], 10, 2)
    cost = 1.0
    remaining = int(2 * DASK_STARTUP_S / cost) + 2
    assert dask_pays([cost], remaining, 2) and not dask_pays([cost], remaining, 2, 1e9)


def no_cluster(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a Dask cluster was started")


def test_a_few_small_points_run_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("flashsim.sweep.dask_client", no_cluster)
    monkeypatch.setattr("flashsim.sweep.available_cores", lambda: 2)
    frame = run_sweep(SCENARIO, AXES, jobs=2, store=tmp_path / "api")
    assert frame.attrs["executor"] == "in-process" and len(frame) == 6
    # The command line's default (a worker per core) too.
    result = CliRunner().invoke(
        main, ["sweep", str(SCENARIO), *VARY, "--store", str(tmp_path / "cli")]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.strip().endswith("(run in this process)"), result.stderr


def test_executor_dask_is_forced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, str | None]] = []

    def refuse(workers: int, scheduler: str | None = None) -> Any:
        calls.append((workers, scheduler))
        raise RuntimeError("no cluster in this test")

    monkeypatch.setattr("flashsim.sweep.dask_client", refuse)
    with pytest.raises(RuntimeError, match="no cluster"):
        run_sweep(SCENARIO, AXES, jobs=2, store=tmp_path / "s", executor="dask")
    assert calls == [(2, None)]
    assert not list((tmp_path / "s").glob("point-*"))  # no point ran here


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--executor", "in-process", "--jobs", "2"], "key '--jobs' = 2: 1 or no --jobs"),
        (
            ["--executor", "in-process", "--scheduler", "tcp://127.0.0.1:1"],
            "key '--executor' = 'in-process': auto or dask with --scheduler",
        ),
    ],
)
def test_contradicting_executor_options_are_refused(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    result = CliRunner().invoke(
        main, ["sweep", str(SCENARIO), *VARY, "--store", str(tmp_path / "s"), *args]
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], lines
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("executor", ["in-process", "dask"])
def test_max_wall_that_fires_at_once_stops_cleanly(tmp_path: Path, executor: str) -> None:
    """``sweep --max-wall 1e-9`` ended in a ``flashsim.sweep._Stop`` traceback (item 8)."""
    store = tmp_path / "s"
    args = ["sweep", str(SCENARIO), *VARY, "--store", str(store), "--max-wall", "1e-9"]
    result = CliRunner().invoke(main, [*args, "--executor", executor])
    assert result.exit_code == 4, (result.output, result.exception)
    assert "Traceback" not in result.output and "_Stop" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("stopped: sweep reached its wall-clock limit (1e-09 s) after ")
    kept = len(list(store.glob("point-*.parquet")))
    assert f"after {kept} of 3 points finished" in lines[0] and "--resume" in lines[0]


def test_the_executor_help_is_made_from_the_executors_and_their_start_up() -> None:
    from flashsim.executors import executor_help
    from flashsim.sweep import EXECUTORS

    text = executor_help()
    assert all(f"{name}: " in text for name in EXECUTORS)
    assert f"~{DASK_STARTUP_S:g} s start-up" in text
    assert "~35 s start-up" in executor_help(35.0)
    shown = " ".join(CliRunner().invoke(main, ["sweep", "--help"]).output.split())
    assert f"~{DASK_STARTUP_S:g} s" in shown and "Where the points run. auto: in this" in shown
