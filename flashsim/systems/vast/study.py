"""The PDSW 2021 VAST studies (seed 002) as phases of the ``vast`` kind.

* ``vast-grid`` (:func:`run_grid`) -- Figs 2 and 3: every ``(N, p, t)``
  written then read, five times, naively (read right after write) and aged
  (written, the SCM flushed with 8 TiB of throw-away data, then read), with
  the IOR arguments of Table I (``-F -C -e -D 45 -O stoneWallingWearOut=1``);
* ``vast-iops-grid`` (:func:`run_iops_grid`) -- Fig. 4: random 4 KiB writes
  (buffered and O_DIRECT) and reads of an aged dataset over the same ``N x p``;
* ``vast-size-sweep`` (:func:`run_size_sweep`) -- Fig. 5: random-read rate of
  64 processes against the size of a freshly generated dataset.

A study is a list of units (:mod:`flashsim.systems.vast.study_units`), each
on a fresh system seeded from the scenario's seed and the unit's name, so
its rows are the same whatever runs the units, in whatever order, on however
many workers.  An *executor* runs them: :func:`run_serial` (here, in order),
or :func:`flashsim.tasks.run_tasks` (Dask), which the kind passes when a
scenario runs the phase and :mod:`flashsim.studies.vast` for notebooks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flashsim import progress as status
from flashsim.measure.results import PhaseDetails, PhaseResult
from flashsim.systems.vast.model import VastModel
from flashsim.systems.vast.phases import VastGridPhase, VastIopsGridPhase, VastSizeSweepPhase
from flashsim.systems.vast.study_summary import summarize_grid, summarize_iops, summarize_sizes
from flashsim.systems.vast.study_units import (
    Progress,
    Rows,
    grid_unit,
    iops_unit,
    size_unit,
    unit_seed,
)

if TYPE_CHECKING:  # pandas is imported where a frame is built, not at start-up
    import pandas as pd

#: ``executor(func, arg_sets, progress)``: ``func(*args, tick)`` for each argument set, results
#: in argument-set order (:func:`run_serial`, or :func:`flashsim.tasks.run_tasks`).
Executor = Callable[
    [Callable[..., Any], Sequence[tuple[Any, ...]], Callable[[int], Any]], list[Any]
]

UnitFunc = Callable[..., Rows]


@dataclass(frozen=True)
class Unit:
    """One unit of a study: the tests that share one fresh system.

    Attributes
    ----------
    index : int
        Position of the unit's rows in the study's results.
    key : str
        Stable name of the unit (e.g. ``"vast-grid/aged/N8/p16"``); with the
        scenario's seed it seeds the unit's simulation (:func:`unit_seed`).
    cost : int
        Relative cost (processes x tests), used only to deal units over tasks.
    args : tuple
        The unit function's arguments after ``(model, phase, seed)``.
    """

    index: int
    key: str
    cost: int
    args: tuple[Any, ...]


def deal(units: list[Unit], workers: int) -> list[list[Unit]]:
    """Deal ``units`` over at most ``workers`` tasks, costliest first, round-robin."""
    order = sorted(units, key=lambda u: (-u.cost, u.index))
    n = max(1, min(workers, len(order)))
    return [order[i::n] for i in range(n)]


def _run_chunk(
    func: UnitFunc,
    model: VastModel,
    phase: Any,
    seed: int,
    units: list[Unit],
    tick: Progress,
) -> list[tuple[int, Rows]]:
    """Run ``units`` one after the other (one task); each unit's rows with its index."""
    return [(u.index, func(model, phase, unit_seed(seed, u.key), *u.args, tick)) for u in units]


def run_serial(
    func: Callable[..., Any],
    arg_sets: Sequence[tuple[Any, ...]],
    progress: Callable[[int], Any] = lambda k: None,
) -> list[Any]:
    """Run ``func(*args, progress)`` for each argument set here, in order (an :data:`Executor`)."""
    return [func(*args, progress) for args in arg_sets]


def run_units(
    func: UnitFunc,
    model: VastModel,
    phase: Any,
    seed: int,
    units: list[Unit],
    total_tests: int,
    executor: Executor = run_serial,
) -> pd.DataFrame:
    """Run every unit with ``executor``; one row per test, in unit order.

    The units are dealt over ``phase.workers`` argument sets of
    ``executor`` (:func:`run_serial` here; :func:`flashsim.tasks.run_tasks`
    for one Dask task each), which changes only how long the study takes:
    each unit seeds its own system from ``seed`` and its key.
    """
    import pandas as pd

    shown = status.current() if phase.progress else status.Progress(enabled=False)
    arg_sets = [(func, model, phase, seed, chunk) for chunk in deal(units, phase.workers)]
    with shown.task("tests", total=total_tests, unit="test") as tests:
        parts = executor(_run_chunk, arg_sets, tests.advance)
    done = sorted((pair for part in parts for pair in part), key=lambda pair: pair[0])
    return pd.DataFrame([row for _, rows in done for row in rows])


# ------------------------------------------------------------------ studies
def run_grid(
    model: VastModel, phase: VastGridPhase, seed: int = 0, executor: Executor = run_serial
) -> pd.DataFrame:
    """Run the bandwidth grid; one row per test (mode, op, N, p, x, t, rep, bandwidth).

    One unit per ``(mode, N, p)``, in that order (:func:`~.study_units.grid_unit`).
    """
    modes = ["naive", "aged"] if phase.mode == "both" else [phase.mode]
    keys = [(m, n, p) for m in modes for n in phase.nodes for p in phase.ranks_per_node]
    tests = 2 * len(phase.transfer_sizes)
    units = [
        Unit(i, f"vast-grid/{m}/N{n}/p{p}", n * p * tests, (m, n, p))
        for i, (m, n, p) in enumerate(keys)
    ]
    total = len(units) * tests * phase.repetitions
    return run_units(grid_unit, model, phase, seed, units, total, executor)


def run_iops_grid(
    model: VastModel, phase: VastIopsGridPhase, seed: int = 0, executor: Executor = run_serial
) -> pd.DataFrame:
    """Run Fig. 4's random I/O grid; one row per test (test, N, p, x, rep, iops).

    One unit per ``(N, p)`` (:func:`~.study_units.iops_unit`).
    """
    keys = [(n, p) for n in phase.nodes for p in phase.ranks_per_node]
    units = [Unit(i, f"vast-iops-grid/N{n}/p{p}", n * p, (n, p)) for i, (n, p) in enumerate(keys)]
    total = len(units) * 3 * phase.repetitions
    return run_units(iops_unit, model, phase, seed, units, total, executor)


def run_size_sweep(
    model: VastModel, phase: VastSizeSweepPhase, seed: int = 0, executor: Executor = run_serial
) -> pd.DataFrame:
    """Run Fig. 5's sweep; one row per test (size, SCM fraction, aged, rep, iops).

    One unit per size (:func:`~.study_units.size_unit`), each generated on a
    fresh system in the same steady state, and one more that reads the
    smallest dataset after aging it (the all-QLC reference).
    """
    jobs = [(s, False) for s in phase.sizes] + [(min(phase.sizes), True)]
    units = [
        Unit(i, f"vast-size-sweep/{size!r}/{'aged' if aged else 'fresh'}", 1, (size, aged))
        for i, (size, aged) in enumerate(jobs)
    ]
    total = len(units) * phase.repetitions
    return run_units(size_unit, model, phase, seed, units, total, executor)


# ------------------------------------------------------------ phase adapter
def _fidelity_summary(df: pd.DataFrame) -> str:
    """The fidelities a study's tests ran at, e.g. ``"flow"`` or ``"flow+request"``."""
    if "fidelity" not in df or not len(df):
        return "flow"
    return "+".join(sorted(str(f) for f in df["fidelity"].unique()))


@dataclass(frozen=True, kw_only=True)
class VastStudyDetails(PhaseDetails):
    """``PhaseResult.extra`` of a VAST study phase (grid, IOPS grid, size sweep).

    The summary's keys are built from the data (e.g. ``naive_read_GBps_x128``
    for the largest client count of the grid, ``write-buffered_xmax_over_prev``
    per test kind), so they are a mapping, not fields; ``--json`` and
    :meth:`to_dict` flatten them into ``extra`` beside ``tests``, ``rows`` and
    ``fidelity_by_test``, so validation records read them as ``extra.<key>``.

    Attributes
    ----------
    summary : dict of str to float
        The study's summary statistics (see
        :mod:`flashsim.systems.vast.study_summary`; units in the key names,
        e.g. ``_GBps``; flags as 0.0/1.0).
    tests : int
        Number of rows (tests and repetitions) the study ran.
    rows : list of dict
        Every row of the study's table (``df.to_dict(orient="records")``);
        the columns depend on the study.
    fidelity_by_test : dict of str to str or None
        Fidelity (or fidelities, ``"flow+request"``) each kind of test ran at;
        ``None`` (absent) when the table has no fidelity column or no rows.
    """

    summary: dict[str, float] = field(default_factory=dict)
    tests: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    fidelity_by_test: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The summary's keys, then ``tests``, ``rows`` and ``fidelity_by_test`` (if known)."""
        out: dict[str, Any] = dict(self.summary)
        out.update((k, v) for k, v in super().to_dict().items() if k != "summary")
        return out


def run_study_phase(
    model: VastModel,
    phase: Any,
    seed: int,
    fidelity: str = "flow",
    executor: Executor = run_serial,
) -> PhaseResult:
    """Run a grid/sweep phase and return its summary as a :class:`PhaseResult`.

    ``fidelity`` (the scenario's) applies unless the phase sets its own; the
    result's ``fidelity`` and ``extra.fidelity_by_test`` say what each kind
    of test actually ran at (buffered writes always run in flow fidelity).
    ``extra`` (:class:`VastStudyDetails`) holds the summary, ``tests`` and
    every row (``rows``); nothing in it depends on the wall clock, the
    executor or the number of workers.
    """
    if phase.fidelity is None:
        phase = phase.model_copy(update={"fidelity": fidelity})
    if isinstance(phase, VastGridPhase):
        df = run_grid(model, phase, seed, executor)
        summary = summarize_grid(df)
        value_key = f"naive_read_GBps_x{int(summary.get('x_max', 0))}"
        bandwidth = summary.get(value_key, math.nan) * 1e9
        op = "grid"
        iops = math.nan
    elif isinstance(phase, VastIopsGridPhase):
        df = run_iops_grid(model, phase, seed, executor)
        summary = summarize_iops(df)
        bandwidth = math.nan
        iops = summary.get(f"read_iops_x{int(df['x'].max())}", math.nan)
        op = "iops-grid"
    elif isinstance(phase, VastSizeSweepPhase):
        df = run_size_sweep(model, phase, seed, executor)
        summary = summarize_sizes(df)
        bandwidth = math.nan
        iops = float(df.loc[~df["aged"].astype(bool), "iops"].iloc[0]) if len(df) else math.nan
        op = "size-sweep"
    else:
        raise TypeError(f"not a VAST study phase: {type(phase).__name__}")
    kind = "op" if "op" in df else "test" if "test" in df else None
    by_test: dict[str, str] | None = None
    if "fidelity" in df and len(df):
        groups = df.groupby(kind)["fidelity"] if kind else [("read", df["fidelity"])]
        by_test = {str(k): "+".join(sorted(str(f) for f in g.unique())) for k, g in groups}
    extra = VastStudyDetails(
        summary=dict(summary),
        tests=len(df),
        rows=[{str(k): v for k, v in row.items()} for row in df.to_dict(orient="records")],
        fidelity_by_test=by_test,
    )
    return PhaseResult(
        name=phase.name,
        operation=op,
        bandwidth_Bps=bandwidth,
        iops=iops,
        ranks=int(df["x"].max()) if "x" in df else phase.nodes * phase.ranks_per_node,
        transfer_size_B=math.nan,
        sim_time_s=math.nan,
        bytes_B=math.nan,
        extra=extra,
        fidelity=_fidelity_summary(df),
    )
