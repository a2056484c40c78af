"""A measurement's conditions as a scenario on a system model: run it and compare.

:func:`plan` turns one :class:`~flashsim.measurements.record.Measurement` into a
:class:`Plan` (the phases of a scenario, which phase's which field gives the
simulated value, and the factor to the measurement's unit) or a :class:`Skip`
naming what the model cannot reproduce.  :func:`evaluate` runs the plans on a
model (with overrides, which is how :mod:`flashsim.measurements.calibrate` moves
parameters), each distinct plan once, and returns one
:class:`~flashsim.measurements.outcome.Outcome` per measurement.

Each plan runs as its own scenario on a fresh system: one measurement's
conditions never leak into another's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flashsim.config import ConfigError
from flashsim.errors import MISSING
from flashsim.measure.results import RunResult
from flashsim.measurements.outcome import Outcome, outcome_of, skipped
from flashsim.measurements.record import Measurement
from flashsim.progress import current
from flashsim.scenario import LoadedModel, load_system_model, run_loaded, scenario_from_data

#: Relative tolerance of a measurement that names none and gets no ``--tolerance``.
DEFAULT_TOLERANCE = 0.10

#: Phase-result field and factor to SI per quantity (bandwidth_GBps is 1e9 B/s).
FIELDS: Mapping[str, tuple[str, float]] = {
    "bandwidth": ("bandwidth_GBps", 1e9),
    "iops": ("iops", 1.0),
}


@dataclass(frozen=True)
class Plan:
    """How to reproduce one measurement.

    Attributes
    ----------
    phases : tuple of dict
        The scenario's ``[[phases]]`` tables (TOML-like: unit strings or SI
        numbers), run in order on one fresh system.
    phase : str
        Name of the phase whose result is the simulated value.
    field : str
        Dotted field of that phase's result (``bandwidth_GBps``, ``iops``,
        ``extra.<name>``).
    scale : float
        Factor from the field to the measurement's unit.
    fidelity : str
        The scenario's default fidelity.
    """

    phases: tuple[dict[str, Any], ...]
    phase: str
    field: str
    scale: float
    fidelity: str = "flow"

    def key(self) -> str:
        """A canonical text of the plan's scenario (equal plans run once)."""
        return json.dumps([self.phases, self.fidelity], sort_keys=True, default=str)


@dataclass(frozen=True)
class Skip:
    """A measurement the model cannot reproduce, and why."""

    reason: str


def as_bytes(value_B: float | None) -> str:
    """An SI byte count as the unit string a scenario file takes (``None``: a caller bug)."""
    assert value_B is not None, "a planner used a condition it did not check"
    return f"{value_B!r} B"


def as_seconds(value_s: float) -> str:
    """An SI time as the unit string a scenario file takes."""
    return f"{value_s!r} s"


def _need(m: Measurement, *names: str) -> Skip | None:
    """A skip naming the unrecorded conditions as the sidecar spells them (``block_size``).

    :class:`Conditions` fields carry their SI unit (``block_size_B``,
    ``duration_s``); the sidecar keys do not
    (:func:`flashsim.measurements.readers.apply_sidecar`).
    """
    missing = [n for n in names if getattr(m.conditions, n) is None]
    if missing:
        keys = [n.removesuffix("_B").removesuffix("_s") for n in missing]
        return Skip(f"the output does not record {', '.join(keys)} (add a sidecar file)")
    return None


def _field(m: Measurement) -> tuple[str, float] | Skip:
    if m.quantity not in FIELDS:
        return Skip(
            f"the model does not reproduce {m.quantity!r} measurements of {m.conditions.tool}"
        )
    if m.unit not in ("B/s", "1/s"):
        return Skip(f"unit {m.unit!r} is not the SI unit of {m.quantity}")
    field, to_si = FIELDS[m.quantity]
    return field, to_si


def _needed_field(m: Measurement, *names: str) -> tuple[str, float] | Skip:
    """The result field of ``m``'s quantity, once every condition in ``names`` is recorded."""
    return _need(m, *names) or _field(m)


def plan_obdfilter(m: Measurement) -> Plan | Skip:
    """obdfilter-survey on one OST: the Lustre ``obdfilter-survey`` phase.

    The OST is the measurement's ``target`` (a sidecar's), else OST 0.  A
    line that drove several OSTs at once (``extra.ost_count`` > 1: its
    bandwidth is their sum) is skipped: the phase drives one OST, and summing
    one OST's value would hide which OST is slow.
    """
    field = _needed_field(m, "operation", "threads", "objects", "transfer_size_B")
    if isinstance(field, Skip):
        return field
    c = m.conditions
    osts = c.extra.get("ost_count", 1)
    if isinstance(osts, (int, float)) and not isinstance(osts, bool) and osts > 1:
        return Skip(
            f"an aggregate over {osts:g} OSTs run at once: the model reproduces one OST's "
            "obdfilter-survey (run the survey per OST, or give each OST its own file)"
        )
    phase: dict[str, Any] = {
        "name": "measured",
        "workload": "obdfilter-survey",
        "operation": c.operation,
        "ost": c.target or 0,
        "threads": c.threads,
        "objects": c.objects,
        "record_size": as_bytes(c.transfer_size_B),
    }
    if c.size_B is not None:
        phase["size"] = as_bytes(c.size_B)
    return Plan((phase,), "measured", field[0], field[1])


def plan_lnet(m: Measurement) -> Plan | Skip:
    """LNet Self-Test into or out of one OSS: the Lustre ``lnet-selftest`` phase."""
    field = _needed_field(m, "operation", "sources", "concurrency", "transfer_size_B")
    if isinstance(field, Skip):
        return field
    c = m.conditions
    phase: dict[str, Any] = {
        "name": "measured",
        "workload": "lnet-selftest",
        "operation": c.operation,
        "sink": c.target or 0,
        "sources": c.sources,
        "concurrency": c.concurrency,
        "size": as_bytes(c.transfer_size_B),
        "cross_group": bool(c.extra.get("cross_group", False)),
    }
    if c.duration_s:
        phase["duration"] = as_seconds(c.duration_s)
    return Plan((phase,), "measured", field[0], field[1])


#: ``Conditions.extra`` keys an IOR reader fills: ``-i`` repetitions, ``-C``/``-Z``
#: reorder (any one set) and ``-Q`` its offset in nodes (the first spelling found).
#: ``-O stoneWallingWearOut=1`` is ``extra.stonewall_wear_out``.
IOR_REPETITIONS = ("repetitions", "reps")
IOR_REORDER = ("reorder_tasks", "reorder", "reord", "reorder_random")
IOR_REORDER_OFFSET = ("task_per_node_offset", "reorder_offset", "reordoff")

#: Largest transfer of the write that lays out a read's files (a multiple of the
#: read's transfer that divides its block): big enough to cost few events, small
#: enough that a stonewalled write stops near its deadline.
DATASET_TRANSFER_MAX_B = 64 * 2**20

#: A stonewalled read reads files written for this many times its ``-D`` (with
#: wear-out, so every file has the same size), as seed 000 §III did (90 s of
#: writes for 45 s of reads).
DATASET_STONEWALL_FACTOR = 2.0

#: Small random transfers (at most this, B) run in request fidelity, with this
#: relative 95 % half-width of the steady-state rate.
SMALL_RANDOM_B = 64 * 1024
SMALL_RANDOM_HALFWIDTH = 0.005


def _extra(m: Measurement, names: Sequence[str]) -> Any:
    """The first of ``names`` the measurement's ``extra`` holds, or ``None``."""
    for name in names:
        if name in m.conditions.extra:
            return m.conditions.extra[name]
    return None


def _positive_int(m: Measurement, names: Sequence[str], default: int) -> int | Skip:
    raw = _extra(m, names)
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw < 1 or raw != int(raw):
        return Skip(f"extra.{names[0]} = {raw!r} is not a positive whole number")
    return int(raw)


def dataset_transfer_B(transfer_B: float, block_B: float) -> float:
    """Transfer size of the write that lays out a read's files, B.

    The read's transfer doubled while it still divides ``block_B`` and stays at
    most :data:`DATASET_TRANSFER_MAX_B`.
    """
    size = transfer_B
    while size * 2 <= DATASET_TRANSFER_MAX_B and _divides(size * 2, block_B):
        size *= 2
    return size


def _divides(part: float, whole: float) -> bool:
    ratio = whole / part
    return ratio >= 1 and abs(ratio - round(ratio)) <= 1e-9


def _iteration(m: Measurement) -> int | None:
    """The 0-based IOR iteration a measurement of scope ``iteration N`` is of."""
    head, _, number = m.scope.partition(" ")
    if head == "iteration" and number.isdigit():
        return int(number)
    return None


def plan_ior(m: Measurement, system: LoadedModel | None = None) -> Plan | Skip:
    """An IOR test: an ``ior`` phase (a read is preceded by the write of its files).

    A read reads files that exist: a write of the same files (same ranks,
    nodes, block and segments, stripe layout) runs first, whole, or, when the
    read was stonewalled (``-D``), stonewalled for
    :data:`DATASET_STONEWALL_FACTOR` times as long with wear-out, so each
    rank's file bounds its reads as on the real system; client caches are
    dropped before the read.  ``-C`` (reorder) and ``-Q``, ``-i``
    (repetitions) and segments come from the conditions; small random
    transfers (at most :data:`SMALL_RANDOM_B`) run in request fidelity.  A
    measurement of scope ``iteration N`` is compared with that repetition.
    The model's kind may add phases around them
    (:meth:`~flashsim.systems.base.SystemKind.ior_reproduction`: on a ``vast``
    model, the SCM buffer at its hold level and an aged dataset).
    """
    field = _needed_field(m, "operation", "tasks", "nodes", "transfer_size_B", "block_size_B")
    if isinstance(field, Skip):
        return field
    c = m.conditions
    assert c.tasks is not None and c.nodes is not None
    assert c.transfer_size_B is not None and c.block_size_B is not None
    if c.tasks % c.nodes:
        return Skip(f"{c.tasks} tasks do not spread evenly over {c.nodes} nodes")
    if not _divides(c.transfer_size_B, c.block_size_B):
        return Skip(
            f"block size {c.block_size_B:g} B is not a multiple of the transfer size "
            f"{c.transfer_size_B:g} B"
        )
    repetitions = _positive_int(m, IOR_REPETITIONS, 1)
    offset = _positive_int(m, IOR_REORDER_OFFSET, 1)
    for got in (repetitions, offset):
        if isinstance(got, Skip):
            return got
    assert isinstance(repetitions, int) and isinstance(offset, int)
    iteration = _iteration(m)
    if iteration is not None and iteration >= repetitions:
        return Skip(f"iteration {iteration} of a test of {repetitions} repetitions")
    small_random = c.access == "random" and c.transfer_size_B <= SMALL_RANDOM_B
    layout = {
        k: v
        for k, v in (
            ("stripe_count", c.stripe_count),
            ("stripe_size", None if c.stripe_size_B is None else as_bytes(c.stripe_size_B)),
            ("first_target", c.first_target),
        )
        if v is not None
    }
    common: dict[str, Any] = {
        "workload": "ior",
        "nodes": c.nodes,
        "ranks_per_node": c.tasks // c.nodes,
        "file_per_process": bool(c.file_per_process),
        "block_size": as_bytes(c.block_size_B),
        "segments": c.segments or 1,
        "layout": layout,
    }
    measured: dict[str, Any] = {
        **common,
        "name": "measured",
        "operation": c.operation,
        "access": c.access or "sequential",
        "transfer_size": as_bytes(c.transfer_size_B),
        "fsync": bool(c.fsync),
        "direct_io": bool(c.direct),
    }
    if repetitions > 1:
        measured["repetitions"] = repetitions
    if c.stonewall_s:
        measured["stonewall"] = as_seconds(c.stonewall_s)
        if c.extra.get("stonewall_wear_out"):
            measured["wear_out"] = True
    if small_random:
        measured.update(fidelity="request", target_rel_halfwidth=SMALL_RANDOM_HALFWIDTH)
    phases: list[dict[str, Any]] = []
    if c.operation == "read":
        dataset: dict[str, Any] = {
            **common,
            "name": "dataset",
            "operation": "write",
            "transfer_size": as_bytes(dataset_transfer_B(c.transfer_size_B, c.block_size_B)),
            "fsync": True,
            "dataset": "measured-files",
        }
        if c.stonewall_s:
            dataset["stonewall"] = as_seconds(DATASET_STONEWALL_FACTOR * c.stonewall_s)
            dataset["wear_out"] = True
        phases.append(dataset)
        measured.update(dataset="measured-files", drop_caches=True)
        # IOR -C (-Q) reorders reads only; -Z (random reorder) defeats the client
        # cache the same way and is run as -C
        if any(bool(c.extra.get(k)) for k in IOR_REORDER):
            measured.update(reorder_tasks=True, task_per_node_offset=offset)
    phases.append(measured)
    if system is not None:
        by_kind = system.kind.ior_reproduction(system.model, m.conditions, phases)
        if isinstance(by_kind, str):
            return Skip(by_kind)
        phases = by_kind
    name, scale = field
    if iteration is not None:
        name = f"extra.repetitions.{iteration}.{name.replace('_GBps', '_Bps')}"
        scale = 1.0 if name.endswith("_Bps") else scale
    return Plan(tuple(phases), "measured", name, scale)


#: Why a fio measurement is not reproduced on a system model.
FIO_REASON = "a drive-level measurement: `flashsim calibrate` turns fio output into a drive file"


def plan_fio(m: Measurement) -> Skip:
    """fio measures one drive (or file system client), not a model's system: skipped."""
    return Skip(FIO_REASON)


def plan_darshan(m: Measurement) -> Plan | Skip:
    """A Darshan log's cumulative I/O time: a ``darshan`` replay phase of the same log.

    The replay simulates every POSIX and STDIO call of the log and sums the
    calls' times as Darshan sums ``F_READ_TIME + F_WRITE_TIME``
    (``total.sim_io_time_s``), which reproduces the reader's
    ``io_time_cumulative``.  The slowest rank's, a rank's and a file's
    ``io_time`` include metadata time and per-rank shares the replay's scalar
    results do not give, so they are skipped.  Ranks per node come from
    ``nodes`` (a sidecar) when given, else the phase's default.
    """
    if m.quantity != "io_time_cumulative" or m.scope:
        return Skip(
            "a Darshan replay reproduces the job's cumulative read+write time "
            "(io_time_cumulative), not the slowest rank's, a rank's or a file's io_time"
        )
    log = m.conditions.extra.get("log")
    if not isinstance(log, str):
        return Skip("the measurement does not name its Darshan log (extra.log)")
    c = m.conditions
    phase: dict[str, Any] = {
        "name": "measured",
        "workload": "darshan",
        "log": log,
        "speedup": "none",
    }
    if c.nodes and c.tasks:
        phase["ranks_per_node"] = -(-c.tasks // c.nodes)
    return Plan((phase,), "measured", "extra.total.sim_io_time_s", 1.0)


#: IO-500 phases the ``io500`` workload runs (flashsim/workloads/io500.py ``ORDER``);
#: the optional ones only in extended mode.
IO500_PHASES: Mapping[str, bool] = {
    "ior-easy-write": False,
    "mdtest-easy-write": False,
    "ior-hard-write": False,
    "mdtest-hard-write": False,
    "find": False,
    "ior-easy-read": False,
    "mdtest-easy-stat": False,
    "ior-hard-read": False,
    "mdtest-hard-stat": False,
    "mdtest-easy-delete": False,
    "mdtest-hard-read": False,
    "mdtest-hard-delete": False,
    "ior-rnd4K-easy-read": False,
    "ior-rnd4K-write": True,
    "ior-rnd4K-read": True,
    "ior-rnd1MB-write": True,
    "ior-rnd1MB-read": True,
}

#: io500 reader's run-wide option (``extra``) -> ``io500`` phase key, as unit strings.
IO500_OPTIONS: Mapping[str, tuple[str, Callable[[Any], Any]]] = {
    "io500_ior_easy_transfer_size_B": ("ior_easy_transfer_size", as_bytes),
    "io500_ior_easy_block_size_B": ("ior_easy_block_size", as_bytes),
    "io500_ior_easy_file_per_process": ("ior_easy_file_per_process", bool),
    "io500_ior_hard_segments": ("ior_hard_segments", int),
    "io500_mdtest_easy_files_per_proc": ("mdtest_easy_files_per_proc", int),
    "io500_mdtest_hard_files_per_proc": ("mdtest_hard_files_per_proc", int),
    "io500_find_nproc": ("find_ranks", int),
    "io500_stonewall_s": ("stonewall", as_seconds),
}


def plan_io500(m: Measurement) -> Plan | Skip:
    """An IO-500 phase's bandwidth/ops, or a score: one whole ``io500`` run.

    Every measurement of one IO-500 run gives the same scenario (the run's
    options, from the reader's ``extra.io500_*``), so :func:`evaluate` runs it
    once.  The value is the named phase's score (GiB/s x 2**30 to B/s, kIOPS x
    1000 to 1/s) or the ``[SCORE ]``/``[SCOREX]`` line's; a model whose kind
    does not implement ``io500`` refuses the scenario (a skip with its message).
    """
    missing = _need(m, "tasks", "nodes")
    if missing:
        return missing
    c = m.conditions
    assert c.tasks is not None and c.nodes is not None
    if c.tasks % c.nodes:
        return Skip(f"{c.tasks} tasks do not spread evenly over {c.nodes} nodes")
    api = c.extra.get("io500_api")
    if api is not None and str(api).upper() not in ("POSIX", "MPIIO"):
        return Skip(f"the model's io500 workload runs POSIX/MPI-IO clients, not the {api} API")
    operation = c.operation or ""
    extended = c.extra.get("io500_mode") == "extended"
    if operation in ("score", "scorex"):
        fields = {
            "score": ("total_score", 1.0),
            "score_bw": ("bandwidth_GiBps", 2.0**30),
            "score_md": ("iops_kiops", 1000.0),
        }
        if m.quantity not in fields:
            return Skip(f"the model does not reproduce {m.quantity!r} of an IO-500 run")
        name, scale = fields[m.quantity]
        if operation == "scorex":
            name, extended = f"extended_{name}", True
        field = f"extra.{name}"
    elif operation in IO500_PHASES:
        expected = "bandwidth" if operation.startswith("ior") else "ops"
        if m.quantity != expected:
            return Skip(f"the model gives {operation}'s {expected}, not {m.quantity!r}")
        field = f"extra.phases.{operation}.score"
        scale = 2.0**30 if expected == "bandwidth" else 1000.0
        extended = extended or IO500_PHASES[operation]
    else:
        return Skip(
            f"the model's io500 workload does not run the {operation!r} phase "
            f"(it runs: {', '.join(IO500_PHASES)})"
        )
    phase: dict[str, Any] = {
        "name": "measured",
        "workload": "io500",
        "nodes": c.nodes,
        "ranks_per_node": c.tasks // c.nodes,
        "mode": "extended" if extended else "standard",
    }
    for key, (option, convert) in IO500_OPTIONS.items():
        if key in c.extra:
            phase[option] = convert(c.extra[key])
    return Plan((phase,), "measured", field, scale)


#: Tool -> planner.  Tools without an entry are skipped with the reason.
PLANNERS: Mapping[str, Callable[[Measurement], Plan | Skip]] = {
    "obdfilter-survey": plan_obdfilter,
    "lnet-selftest": plan_lnet,
    "ior": plan_ior,
    "darshan": plan_darshan,
    "io500": plan_io500,
    "fio": plan_fio,
}


def plan(m: Measurement, system: LoadedModel | None = None) -> Plan | Skip:
    """How to reproduce ``m`` on a model, or why it cannot be.

    ``system`` is the loaded model: an IOR plan gets the phases its kind adds
    (:meth:`~flashsim.systems.base.SystemKind.ior_reproduction`); the other
    planners do not depend on it.
    """
    if m.conditions.tool == "ior":
        return plan_ior(m, system)
    planner = PLANNERS.get(m.conditions.tool)
    if planner is None:
        return Skip(f"no reproduction of {m.conditions.tool} measurements")
    return planner(m)


def _value(result: RunResult, phase: str, field: str) -> float:
    """A dotted field of a phase's result (:meth:`RunResult.field`), NaN if absent."""
    try:
        node = result.field(phase, field)
    except KeyError:
        return math.nan
    return math.nan if node is None else float(node)


def no_value_reason(field: str) -> str:
    """Why a run that completed gives no value to compare (a skip's reason)."""
    return (
        f"the model's run gives no finite {field}: nothing was timed (e.g. a buffered "
        "write the client page cache absorbs whole; add fsync or a larger block)"
    )


def evaluate(
    measurements: Sequence[Measurement],
    system: Path,
    overrides: Mapping[str, object] | None = None,
    tolerance: float | None = None,
    seed: int = 1,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Reproduce each measurement on the model and compare.

    Parameters
    ----------
    measurements : sequence of Measurement
        What to reproduce.
    system : Path
        The model file.
    overrides : mapping of str to object, optional
        Model keys to change (dotted, as in a scenario's ``system_set``; SI
        numbers or unit strings).
    tolerance : float, optional
        Relative tolerance for every measurement (else its own, else
        :data:`DEFAULT_TOLERANCE`).
    seed : int
        Seed of every scenario.
    on_outcome : callable, optional
        Called with each outcome as it is known.

    Returns
    -------
    list of Outcome
        In the order of ``measurements``; a measurement whose plan the model
        refuses (an unknown workload for its kind, an OST index beyond the
        model) is skipped with the model's message as the reason.
    """
    if not system.is_file():
        raise ConfigError(str(system), "", MISSING, "no such model file")
    # a bad model or override is the user's error (exit 2), not a skip of every measurement
    loaded = load_system_model(system, dict(overrides or {}))
    anchor = system.resolve().parent / "(check)"
    shown = current()  # the command's progress line (flashsim.progress), if any
    runs: dict[str, Any] = {}  # plan key -> RunResult or Skip (plans differing in field share)
    out: list[Outcome] = []
    for m in measurements:
        if tolerance is not None:
            tol = tolerance
        else:
            tol = m.tolerance if m.tolerance is not None else DEFAULT_TOLERANCE
        p = plan(m, loaded)
        if isinstance(p, Skip):
            outcome = skipped(m, p.reason, tol)
        else:
            key = p.key()
            if key not in runs:
                data = {
                    "name": f"check-{m.id}",
                    "system": str(system.resolve()),
                    "seed": seed,
                    "fidelity": p.fidelity,
                    "system_set": dict(overrides or {}),
                    "phases": [dict(ph) for ph in p.phases],
                }
                try:
                    scenario = scenario_from_data(data, anchor)
                except ConfigError as exc:
                    runs[key] = Skip(f"the model cannot run it: {exc.expected} ({exc.key})")
                else:
                    with shown.task(m.id):
                        runs[key] = run_loaded(scenario)
            # Plans that differ only in the field read (a test's bandwidth and
            # its IOPS, the summary and an iteration) share one run, not one value.
            run = runs[key]
            if isinstance(run, Skip):
                outcome = skipped(m, run.reason, tol)
            else:
                value = _value(run, p.phase, p.field)
                outcome = (
                    outcome_of(m, value * p.scale, tol)
                    if math.isfinite(value)
                    else skipped(m, no_value_reason(p.field), tol)
                )
        out.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return out
