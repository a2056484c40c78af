"""Parameter sweeps: run a scenario over the cross product of overrides.

Points are independent runs.  ``jobs=1`` runs them one after the other in this
process, with no cluster at all; otherwise they go to Dask (``dask.distributed``):
a ``LocalCluster`` of ``jobs`` single-threaded worker processes, or any running
scheduler given by its address (``scheduler=``), such as a Slurm cluster started
with dask-jobqueue (see ``docs/sweeps.md``).

Each finished point is written at once to a *results store*: a directory of one
Parquet file per point (``point-<index>-<key>.parquet``) beside a manifest
(``_sweep.json``), so an interrupted sweep keeps every finished point and
``resume=True`` runs only the points whose key is missing.  :func:`read_store`
(or ``pandas.read_parquet(store)``) gives one row per point and phase, in point
order, with a column per swept key; results are identical whatever the number
of workers.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import signal
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pandas as pd

from flashsim.config import MISSING, ConfigError
from flashsim.executors import DASK_STARTUP_S as DASK_STARTUP_S
from flashsim.executors import EXECUTORS as EXECUTORS
from flashsim.progress import Task, open_progress
from flashsim.scenario import load_scenario, run_loaded
from flashsim.sweep_limits import LIMIT_COLUMNS, limit_columns
from flashsim.tasks import dask_client

# Re-exported: the Dask executor moved to flashsim.tasks (below the system kinds).
from flashsim.tasks import dask_setup as dask_setup
from flashsim.tasks import run_tasks as run_tasks
from flashsim.units import UnitError

#: The store's manifest (scenario, overrides, axes, hashes); pyarrow skips ``_`` names.
MANIFEST = "_sweep.json"
#: Sub-directory of the store holding one JSON record per failed point.
FAILED_DIR = "_failed"
#: Exit status of a sweep stopped by its wall-clock limit (as ``run --max-wall``).
EXIT_MAX_WALL = 4
_POINT_FILE = re.compile(r"^point-(\d{6,})-([0-9a-f]{16})\.parquet$")


def sweep_points(axes: Sequence[tuple[str, Sequence[str]]]) -> list[dict[str, str]]:
    """The cross product of ``(key, values)`` axes as override dicts."""
    keys = [key for key, _ in axes]
    return [
        dict(zip(keys, combo, strict=True))
        for combo in itertools.product(*[values for _, values in axes])
    ]


def check_axes(
    axes: Sequence[tuple[str, Sequence[str]]], overrides: Mapping[str, str] = {}
) -> None:
    """Refuse a key swept twice, swept and also set, or swept over no value.

    Raises
    ------
    ConfigError
        Naming the ``--vary`` key and what to write instead.
    """
    seen: set[str] = set()
    for key, values in axes:
        if key in seen:
            raise ConfigError(
                "command line",
                "--vary",
                key,
                "each key may be varied once; give all its values in one --vary KEY=V1,V2,...",
            )
        if key in overrides:
            raise ConfigError(
                "command line",
                "--vary",
                key,
                "this key is also given with --set; a swept key takes its values from --vary only",
            )
        if not values:
            raise ConfigError("command line", "--vary", key, "expected at least one value")
        seen.add(key)


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def local_workers(jobs: int | None, n_points: int, scheduler: str | None = None) -> int:
    """The number of local worker processes for ``jobs`` (``None``: one per core).

    ``jobs`` above the cores is refused (more single-threaded simulations than
    cores only slow each other down); above the number of points it is lowered
    to that number (extra workers would sit idle).  With ``scheduler`` the
    remote cluster's workers run the points and ``jobs`` must not be given.

    Raises
    ------
    ConfigError
        For ``jobs`` below 1, above the cores, or given with ``scheduler``.
    """
    cores = available_cores()
    if scheduler is not None:
        if jobs is not None:
            raise ConfigError(
                "command line",
                "--jobs",
                jobs,
                "--jobs sizes the local cluster; with --scheduler the cluster's own workers "
                "run the points (omit --jobs)",
            )
        return 0
    if jobs is None:
        return max(1, min(cores, n_points))
    if jobs < 1:
        raise ConfigError("command line", "--jobs", jobs, "expected at least 1")
    if jobs > cores:
        raise ConfigError(
            "command line",
            "--jobs",
            jobs,
            f"at most {cores}, the cores available here (use --scheduler for a larger cluster)",
        )
    return max(1, min(jobs, n_points))


def check_writable_file(path: str | Path, option: str) -> None:
    """Refuse an output file that cannot be written, before anything runs.

    Raises
    ------
    ConfigError
        Naming the option, the path and the operating system's reason.
    """
    p = Path(path)
    if p.is_dir():
        raise ConfigError("command line", option, str(p), "a file path, not a directory")
    existed = p.exists()
    try:
        with p.open("a"):
            pass
    except OSError as exc:
        raise ConfigError(
            "command line", option, str(p), f"a writable file path ({exc.strerror})"
        ) from None
    if not existed:
        p.unlink(missing_ok=True)


# ------------------------------------------------------------------- points
@dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep.

    Attributes
    ----------
    index : int
        Position in the cross product (row order of the results).
    key : str
        16 hex digits identifying the point's full override set; ``resume``
        skips a point whose key is already in the store.
    values : dict of str to str
        The swept keys and this point's values.
    """

    index: int
    key: str
    values: dict[str, str]


def point_key(overrides: Mapping[str, str]) -> str:
    """Stable 16-hex-digit key of a full override set (base ``--set`` plus point values)."""
    text = json.dumps(dict(overrides), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def make_points(
    axes: Sequence[tuple[str, Sequence[str]]], overrides: Mapping[str, str] = {}
) -> list[SweepPoint]:
    """The sweep's points in cross-product order, with their keys."""
    return [
        SweepPoint(i, point_key({**overrides, **values}), values)
        for i, values in enumerate(sweep_points(axes))
    ]


def _run_point(
    scenario: str, overrides: dict[str, str], index: int, values: dict[str, str]
) -> pd.DataFrame:
    """Run one point (in this process or on a Dask worker); one row per phase."""
    full = {**overrides, **values}
    result = run_loaded(load_scenario(scenario, full))
    frame = result.to_dataframe()
    limits = pd.DataFrame([limit_columns(phase) for phase in result.phases], columns=LIMIT_COLUMNS)
    for column in LIMIT_COLUMNS:  # what limited each phase (flashsim.sweep_limits)
        frame[column] = limits[column].to_numpy()
    for key, value in values.items():
        frame[key] = value
    frame.insert(0, "point", index)
    frame.insert(1, "point_key", point_key(full))
    frame["scenario_path"] = scenario
    frame["overrides"] = json.dumps(full, sort_keys=True)
    frame["flashsim_version"] = _version()
    return frame


def _version() -> str:
    from importlib.metadata import version

    return version("flashsim")


def _validate_points(
    scenario: Path, overrides: Mapping[str, str], axes: Sequence[tuple[str, Sequence[str]]]
) -> Path:
    """Load the scenario once per swept value so a bad key or value fails before any run.

    Returns the resolved model file of the first point (for the store manifest).
    """
    first = {key: values[0] for key, values in axes}
    loaded = load_scenario(scenario, {**overrides, **first})
    for key, values in axes:
        for value in values[1:]:
            load_scenario(scenario, {**overrides, **first, key: value})
    return (loaded.path.parent / loaded.spec.system).resolve()


# -------------------------------------------------------------------- store
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cache_dir() -> Path:
    """The user cache directory for flashsim: ``$XDG_CACHE_HOME/flashsim`` or ``~/.cache/flashsim``.

    An ``XDG_CACHE_HOME`` that is not an absolute path is ignored, as the XDG
    Base Directory specification asks.  Never the current directory.

    Raises
    ------
    ConfigError
        When neither ``XDG_CACHE_HOME`` nor a home directory is known (name a
        store with ``--store``).
    """
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "flashsim"
    try:
        home = Path.home()
    except RuntimeError:
        home = Path()
    if not home.is_absolute():
        raise ConfigError(
            "command line",
            "--store",
            MISSING,
            "a store directory: there is no home directory or XDG_CACHE_HOME for the default "
            "one (~/.cache/flashsim/sweeps); give --store PATH",
        )
    return home / ".cache" / "flashsim"


def default_store(
    scenario: str | Path,
    axes: Sequence[tuple[str, Sequence[str]]],
    overrides: Mapping[str, str] = {},
) -> Path:
    """The store of a sweep when none is given: ``<cache>/sweeps/<stem>-<hash>.parquet``.

    ``<cache>`` is the user's cache directory (:func:`cache_dir`,
    ``~/.cache/flashsim``), never the current directory, so a sweep run in a
    checkout leaves it clean.  The hash covers the scenario's absolute path, the
    ``--set`` overrides and the ``--vary`` axes, so the same command finds the
    same store (and ``--resume`` works without naming it).
    """
    p = Path(scenario)
    spec = json.dumps(
        {"scenario": str(p.resolve()), "overrides": dict(overrides), "axes": list(axes)},
        sort_keys=True,
    )
    digest = hashlib.sha256(spec.encode()).hexdigest()[:10]
    return cache_dir() / "sweeps" / f"{p.stem}-{digest}.parquet"


class _Store:
    """A directory of one Parquet file per finished point, a manifest and failure records."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def point_file(self, point: SweepPoint) -> Path:
        return self.path / f"point-{point.index:06d}-{point.key}.parquet"

    def failed_file(self, point: SweepPoint) -> Path:
        return self.path / FAILED_DIR / f"point-{point.index:06d}-{point.key}.json"

    def point_files(self) -> list[Path]:
        if not self.path.is_dir():
            return []
        return sorted(f for f in self.path.iterdir() if _POINT_FILE.match(f.name))

    def done_keys(self) -> set[str]:
        keys = set()
        for f in self.point_files():
            match = _POINT_FILE.match(f.name)
            assert match is not None
            keys.add(match.group(2))
        return keys

    def prepare(self, manifest: dict[str, Any], resume: bool, overwrite: bool) -> set[str]:
        """Create or check the store; return the keys of the points already in it."""
        where = str(self.path)
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError("command line", "--store", where, "a directory, not a file")
        own = (self.path / MANIFEST).is_file()
        if self.path.is_dir() and not own and any(self.path.iterdir()):
            raise ConfigError(
                "command line",
                "--store",
                where,
                f"an empty or new directory, or a flashsim sweep store (no {MANIFEST} here)",
            )
        done = self.done_keys()
        if own and resume:
            old = json.loads((self.path / MANIFEST).read_text())
            changed = [
                name
                for name in ("scenario_sha256", "model_sha256", "overrides", "axes")
                if old.get(name) != manifest[name]
            ]
            if changed:
                raise ConfigError(
                    "command line",
                    "--store",
                    where,
                    "the store holds another sweep (" + ", ".join(changed) + " differ); "
                    "give another --store, or drop --resume to start over in a new one",
                )
        elif own and done and not overwrite:
            raise ConfigError(
                "command line",
                "--store",
                where,
                f"a new store: this one already holds {len(done)} finished point(s); "
                "pass --resume to run only the missing ones, or choose another --store",
            )
        elif own and not resume:
            for f in self.point_files():
                f.unlink()
            if (self.path / FAILED_DIR).is_dir():
                for f in (self.path / FAILED_DIR).glob("point-*.json"):
                    f.unlink()
            done = set()
        try:
            (self.path / FAILED_DIR).mkdir(parents=True, exist_ok=True)
            probe = self.path / f".probe-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
            self._write_atomic(self.path / MANIFEST, json.dumps(manifest, indent=2).encode())
        except OSError as exc:
            raise ConfigError(
                "command line", "--store", where, f"a writable directory ({exc.strerror})"
            ) from None
        return done

    def _write_atomic(self, target: Path, data: bytes) -> None:
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)

    def write(self, point: SweepPoint, frame: pd.DataFrame) -> None:
        target = self.point_file(point)
        tmp = target.with_name(f".{target.name}.tmp")
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, target)
        self.failed_file(point).unlink(missing_ok=True)

    def write_failure(self, point: SweepPoint, message: str) -> None:
        record = {"point": point.index, "key": point.key, "values": point.values, "error": message}
        self._write_atomic(self.failed_file(point), json.dumps(record, indent=2).encode())


def read_store(store: str | Path) -> pd.DataFrame:
    """The rows of every finished point of a store, in point order (empty if none)."""
    files = _Store(Path(store)).point_files()
    if not files:
        return pd.DataFrame()
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


# ------------------------------------------------------- stopping and failing
class SweepStoppedError(Exception):
    """A sweep stopped before every point ran (a signal or its wall-clock limit).

    Attributes
    ----------
    reason : str
        ``"interrupted by SIGINT"``, ``"reached its wall-clock limit (10 s)"``.
    exit_status : int
        128 + the signal number, or :data:`EXIT_MAX_WALL`.
    done, total : int
        Points in the store and points of the sweep.
    store : Path or None
        The store (``None``: a temporary one, now gone).
    """

    def __init__(
        self, reason: str, exit_status: int, done: int, total: int, store: Path | None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.exit_status = exit_status
        self.done = done
        self.total = total
        self.store = store

    def __str__(self) -> str:
        text = f"sweep {self.reason} after {self.done} of {self.total} points finished"
        if self.store is None:
            return text
        if self.done == 0:
            return f"{text}; run the same command with --resume to run them (store {self.store})"
        return (
            f"{text}; they are kept in {self.store}; run the same command with --resume "
            f"to run the other {self.total - self.done}"
        )


@dataclass(frozen=True)
class PointFailure:
    """A point that raised (or whose worker died): its error as one line."""

    point: SweepPoint
    message: str
    user_error: bool


class SweepFailedError(Exception):
    """Some points failed; every other point finished and is in the store.

    Attributes
    ----------
    failures : list of PointFailure
    done, total : int
    store : Path or None
    """

    def __init__(
        self, failures: list[PointFailure], done: int, total: int, store: Path | None
    ) -> None:
        super().__init__(failures[0].message)
        self.failures = failures
        self.done = done
        self.total = total
        self.store = store

    @property
    def user_error(self) -> bool:
        """Whether every failure is a bad value (exit 2) rather than a crash (exit 1)."""
        return all(f.user_error for f in self.failures)

    def __str__(self) -> str:
        first = self.failures[0]
        values = ", ".join(f"{k}={v}" for k, v in first.point.values.items())
        text = (
            f"{len(self.failures)} of {self.total} sweep points failed "
            f"(first: point {first.point.index}, {values}: {first.message})"
        )
        if self.store is not None:
            text += (
                f"; {self.done} finished points are in {self.store}, errors in "
                f"{self.store / FAILED_DIR}; fix and rerun with --resume"
            )
        return text


class _Stop(BaseException):
    """Raised from a signal handler; a BaseException so no ``except Exception`` eats it."""

    def __init__(self, reason: str, exit_status: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.exit_status = exit_status


class _Guard:
    """Turns SIGINT/SIGTERM/SIGALRM into one :class:`_Stop`, never inside a store write."""

    def __init__(self, max_wall_s: float | None) -> None:
        self.max_wall_s = max_wall_s
        self.deadline = None if max_wall_s is None else time.monotonic() + max_wall_s
        self.pending: _Stop | None = None
        self.raised = False
        self.depth = 0

    def wall_stop(self) -> _Stop:
        return _Stop(f"reached its wall-clock limit ({self.max_wall_s:g} s)", EXIT_MAX_WALL)

    def handler(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGALRM:
            stop = self.wall_stop()
        else:
            stop = _Stop(f"interrupted by {signal.Signals(signum).name}", 128 + signum)
        self.trip(stop)

    def trip(self, stop: _Stop) -> None:
        if self.pending is None:
            self.pending = stop
        if self.depth == 0 and not self.raised:
            self.raised = True
            raise self.pending

    def check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.trip(self.wall_stop())

    @contextmanager
    def critical(self) -> Iterator[None]:
        """A section no signal interrupts (a store write); a signal raises at its end."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
        if self.depth == 0 and self.pending is not None and not self.raised:
            self.raised = True
            raise self.pending


@contextmanager
def _signals(guard: _Guard) -> Iterator[None]:
    """Install the guard's handlers (main thread only) and the wall-clock alarm."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    names = [signal.SIGINT, signal.SIGTERM]
    if guard.max_wall_s is not None:
        names.append(signal.SIGALRM)
    # A signal ignored by whoever started us (``nohup``, a background job) stays ignored.
    names = [sig for sig in names if signal.getsignal(sig) is not signal.SIG_IGN]
    old: dict[signal.Signals, Any] = {}
    try:
        for sig in names:
            old[sig] = signal.signal(sig, guard.handler)
        if guard.max_wall_s is not None:
            # The alarm may fire at once (``--max-wall 1e-9``): the _Stop it raises leaves
            # through this ``try`` (restoring the handlers) to the caller's ``except _Stop``.
            signal.setitimer(signal.ITIMER_REAL, guard.max_wall_s)
        yield
    finally:
        if guard.max_wall_s is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in old.items():
            signal.signal(sig, handler)


# ---------------------------------------------------------------- executors
def _failure(point: SweepPoint, exc: BaseException) -> PointFailure:
    if isinstance(exc, (ConfigError, UnitError)):
        return PointFailure(point, str(exc), True)
    name = type(exc).__name__
    if name == "KilledWorker":  # dask.distributed: every worker that ran it died
        return PointFailure(point, "the worker running it died (KilledWorker)", False)
    return PointFailure(point, f"{name}: {exc}" if str(exc) else name, False)


class _Points:
    """A sweep's points on the shared status line: done, running and failed.

    Wraps the ``"sweep"`` task of :mod:`flashsim.progress` (its count is the
    points done, its note ``"2 running, 1 failed"``), so a sweep reads like
    ``run`` and ``validate`` on a terminal and prints nothing elsewhere.
    """

    def __init__(self, task: Task) -> None:
        self.task = task
        self.failed = 0

    def update(self, done: int, running: int) -> None:
        """Count ``done`` more points finished, ``running`` now running."""
        self.task.note = f"{running} running, {self.failed} failed"
        self.task.advance(done)


def _run_in_process(
    scenario: str,
    overrides: dict[str, str],
    todo: list[SweepPoint],
    store: _Store,
    guard: _Guard,
    bar: _Points,
) -> list[PointFailure]:
    failures: list[PointFailure] = []
    for point in todo:
        guard.check_deadline()
        bar.update(0, 1)
        try:
            frame = _run_point(scenario, overrides, point.index, point.values)
        except Exception as exc:  # a failed point is recorded; the sweep goes on
            failure = _failure(point, exc)
            failures.append(failure)
            bar.failed += 1
            with guard.critical():
                store.write_failure(point, failure.message)
        else:
            with guard.critical():
                store.write(point, frame)
        bar.update(1, 0)
    return failures


def _run_on_dask(
    scenario: str,
    overrides: dict[str, str],
    todo: list[SweepPoint],
    store: _Store,
    guard: _Guard,
    bar: _Points,
    workers: int,
    scheduler: str | None,
) -> list[PointFailure]:
    from dask.distributed import as_completed

    failures: list[PointFailure] = []
    token = uuid.uuid4().hex[:8]
    with ExitStack() as stack:
        with guard.critical():  # a signal during start-up stops us once the cluster is up
            client = stack.enter_context(dask_client(workers, scheduler))
        pending = {}
        for point in todo:
            future = client.submit(
                _run_point,
                scenario,
                overrides,
                point.index,
                point.values,
                key=f"flashsim-point-{point.index}-{point.key}-{token}",
            )
            pending[future.key] = (future, point)
        bar.update(0, min(len(pending), sum(client.nthreads().values())))
        try:
            futures = [f for f, _ in pending.values()]
            for future in as_completed(futures):  # type: ignore[no-untyped-call]
                _, point = pending.pop(future.key)
                if future.status == "finished":
                    frame = future.result()
                    with guard.critical():
                        store.write(point, frame)
                else:
                    failure = _failure(point, future.exception())
                    failures.append(failure)
                    bar.failed += 1
                    with guard.critical():
                        store.write_failure(point, failure.message)
                future.release()
                running = min(len(pending), sum(client.nthreads().values()))
                bar.update(1, running)
                guard.check_deadline()
        finally:
            if pending:
                with suppress(BaseException):
                    client.cancel([f for f, _ in pending.values()], force=True)
    return failures


# ------------------------------------------------------------ which executor
def check_executor(executor: str, jobs: int | None, scheduler: str | None) -> None:
    """Refuse an unknown executor, or one that contradicts ``--jobs``/``--scheduler``.

    Raises
    ------
    ConfigError
        Naming ``--executor`` and what to give instead.
    """
    if executor not in EXECUTORS:
        raise ConfigError("command line", "--executor", executor, "one of " + ", ".join(EXECUTORS))
    if executor == "in-process" and scheduler is not None:
        raise ConfigError(
            "command line",
            "--executor",
            executor,
            "auto or dask with --scheduler (the scheduler's workers run the points)",
        )
    if executor == "in-process" and jobs is not None and jobs > 1:
        raise ConfigError(
            "command line",
            "--jobs",
            jobs,
            "1 or no --jobs with --executor in-process (it runs one point at a time here)",
        )


def dask_pays(
    point_wall_s: Sequence[float],
    remaining: int,
    workers: int,
    startup_s: float = DASK_STARTUP_S,
) -> bool:
    """Whether a new local Dask cluster would finish the remaining points sooner than this process.

    Parameters
    ----------
    point_wall_s : sequence of float
        Wall-clock seconds of the points this process ran so far (their median
        is the estimate of a point's cost; with none, nothing is known and the
        answer is no).
    remaining : int
        Points still to run.
    workers : int
        Worker processes the cluster would have.
    startup_s : float
        Wall-clock seconds the cluster takes to start (:data:`DASK_STARTUP_S`).

    Returns
    -------
    bool
        ``startup_s + ceil(remaining / workers) x cost < remaining x cost``.
    """
    if workers <= 1 or remaining <= 1 or not point_wall_s:
        return False
    cost_s = statistics.median(point_wall_s)
    return startup_s + math.ceil(remaining / workers) * cost_s < remaining * cost_s


def _run_auto(
    scenario: str,
    overrides: dict[str, str],
    todo: list[SweepPoint],
    store: _Store,
    guard: _Guard,
    bar: _Points,
    workers: int,
    ran: list[str],
) -> list[PointFailure]:
    """Run points here, one at a time, until a local cluster would finish the rest sooner."""
    failures: list[PointFailure] = []
    times: list[float] = []
    for done, point in enumerate(todo):
        if dask_pays(times, len(todo) - done, workers, DASK_STARTUP_S):
            ran.append("dask")
            return failures + _run_on_dask(
                scenario, overrides, todo[done:], store, guard, bar, workers, None
            )
        started = time.perf_counter()
        failures += _run_in_process(scenario, overrides, [point], store, guard, bar)
        times.append(time.perf_counter() - started)
    return failures


def ran_where(frame: pd.DataFrame) -> str:
    """Where a sweep's points ran, from ``frame.attrs["executor"]``: ``"run in this process"``."""
    ran = {
        "in-process": "run in this process",
        "dask": "run on Dask",
        "in-process+dask": "run in this process, then on Dask",
        "none": "every point was already in it",
    }
    return ran.get(str(frame.attrs.get("executor", "")), "run")


# --------------------------------------------------------------------- sweep
def run_sweep(
    scenario: str | Path,
    axes: Sequence[tuple[str, Sequence[str]]],
    overrides: Mapping[str, str] = {},
    jobs: int = 1,
    progress: bool = False,
    *,
    store: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    scheduler: str | None = None,
    max_wall_s: float | None = None,
    executor: str = "auto",
) -> pd.DataFrame:
    """Run ``scenario`` at every point of ``axes`` and stack the results.

    Parameters
    ----------
    scenario : path
        Scenario file.
    axes : sequence of (str, sequence of str)
        Dotted override keys and the values to take (unit strings allowed);
        each key once.
    overrides : mapping
        Overrides applied at every point.
    jobs : int
        Worker processes of a local Dask cluster (never more than there are
        points); 1 runs every point in this process unless ``executor`` is
        ``"dask"``.  Ignored with ``scheduler``.
    progress : bool
        Show the points done, running and failed on the status line of
        :mod:`flashsim.progress` (standard error, when it is a terminal;
        inside an active progress, there whatever this says).
    store : path, optional
        Results store directory (see :func:`read_store`); ``None`` uses a
        temporary one, removed on return.
    resume : bool
        Keep the points already in ``store`` and run only the missing ones.
    overwrite : bool
        Without ``resume``, empty an existing store of this kind instead of
        refusing it.
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``) to run on.
    max_wall_s : float, optional
        Wall-clock limit in seconds; the sweep stops cleanly when it is reached.
    executor : {"auto", "in-process", "dask"}
        ``"auto"`` runs points in this process, one after the other, and moves
        the remaining ones to a local Dask cluster of ``jobs`` workers once
        their measured cost says it pays (:func:`dask_pays`; a few small points
        never start one); ``"in-process"`` never starts a cluster; ``"dask"``
        runs every point on one.  ``scheduler`` always runs on Dask.  The
        results are the same, bit for bit, whichever runs them.

    Returns
    -------
    pandas.DataFrame
        One row per point and phase, in point order: ``point`` (index),
        ``point_key``, the phase
        results, ``scenario``, ``seed``, what limited the phase
        (:data:`flashsim.sweep_limits.LIMIT_COLUMNS`: ``bottleneck``,
        ``bottleneck_kind``, ``bottleneck_utilization``, ...), a column per
        swept key, then ``scenario_path``, ``overrides`` (JSON) and
        ``flashsim_version``.  ``frame.attrs["executor"]`` says where the
        points ran: ``"in-process"``, ``"dask"`` or ``"in-process+dask"``
        (``"none"`` when every point was already in the store).

    Raises
    ------
    ConfigError
        A repeated or bad key or value, or an unusable store (before any run).
    SweepStoppedError
        On SIGINT/SIGTERM or ``max_wall_s``: finished points stay in the store.
    SweepFailedError
        When some points failed; the others are in the store.
    """
    path = Path(scenario)
    base = dict(overrides)
    check_axes(axes, base)
    check_executor(executor, None, scheduler)  # (``jobs`` is unused in this process)
    points = make_points(axes, base)
    model = _validate_points(path, base, axes)
    if max_wall_s is not None and not max_wall_s > 0:
        raise ConfigError("command line", "--max-wall", max_wall_s, "expected seconds > 0")
    manifest = {
        "flashsim_version": _version(),
        "scenario": str(path.resolve()),
        "scenario_sha256": _sha256(path),
        "model": str(model),
        "model_sha256": _sha256(model),
        "overrides": base,
        "axes": [[key, list(values)] for key, values in axes],
        "points": len(points),
    }
    run = _Run(jobs, progress, scheduler, max_wall_s, executor)
    if store is None:
        with tempfile.TemporaryDirectory(prefix="flashsim-sweep-") as tmp:
            return _sweep_into(
                path, base, points, _Store(Path(tmp)), manifest, False, True, run, keep=False
            )
    return _sweep_into(
        path, base, points, _Store(Path(store)), manifest, resume, overwrite, run, keep=True
    )


@dataclass(frozen=True)
class _Run:
    """How to run a sweep's points (the arguments of :func:`run_sweep` of that name)."""

    jobs: int
    progress: bool
    scheduler: str | None
    max_wall_s: float | None
    executor: str


def _sweep_into(
    path: Path,
    base: dict[str, str],
    points: list[SweepPoint],
    store: _Store,
    manifest: dict[str, Any],
    resume: bool,
    overwrite: bool,
    run: _Run,
    keep: bool,
) -> pd.DataFrame:
    done = store.prepare(manifest, resume, overwrite)
    todo = [p for p in points if p.key not in done]
    scenario = str(path.resolve())
    guard = _Guard(run.max_wall_s)
    failures: list[PointFailure] = []
    workers = min(run.jobs, len(todo))
    ran: list[str] = []
    kept = store.path if keep else None
    try:
        # The signal handlers are installed inside this ``try``: a limit that fires at once
        # (``--max-wall 1e-9``) stops the sweep like any other.
        with (
            open_progress(run.progress) as progress,
            progress.task(
                "sweep", total=len(points), unit="point", done=len(points) - len(todo)
            ) as task,
            _signals(guard),
        ):
            bar = _Points(task)
            if not todo:
                pass
            elif run.scheduler is not None or run.executor == "dask":
                ran.append("dask")
                failures = _run_on_dask(
                    scenario, base, todo, store, guard, bar, max(workers, 1), run.scheduler
                )
            elif run.executor == "in-process" or workers <= 1:
                ran.append("in-process")
                failures = _run_in_process(scenario, base, todo, store, guard, bar)
            else:
                ran.append("in-process")
                failures = _run_auto(scenario, base, todo, store, guard, bar, workers, ran)
    except _Stop as stop:
        finished = len(store.done_keys() & {p.key for p in points})
        raise SweepStoppedError(
            stop.reason, stop.exit_status, finished, len(points), kept
        ) from None
    if failures:
        finished = len(store.done_keys() & {p.key for p in points})
        raise SweepFailedError(failures, finished, len(points), kept)
    frame = read_store(store.path)
    frame.attrs["executor"] = "+".join(ran) or "none"
    return frame
