"""Many jobs at once (``workload = "jobs"``): IOR jobs, Darshan replays and mixes together.

Each entry runs on its own client nodes (consecutive ranges in the order the
entries are listed, unless one names its ``first_node``) and starts at its
``start`` time.  An entry is an IOR job, a Darshan replay, or a production
mix (:mod:`flashsim.workloads.mix`: the jobs it draws, dealt over the mix's
own ``client_nodes``, counted together as one entry); all run in one simulation through
:class:`~flashsim.workloads.replay.JobEngine`, so they share the servers,
the fabric and the drives as the system's physics says.  An IOR job is the
calls IOR would make (:func:`ior_trace`: ``segments x block / transfer``
calls per rank, contiguous per rank and merged in flow fidelity), timed as
IOR does (its bytes over the time from its first rank's start to its
slowest rank's end, the write-back drain included with ``fsync``, IOR's
``-e``); stonewalling is not modelled for jobs run together (use an ``ior``
phase for that).

Interference: with ``alone = true`` (the default) each entry is also run by
itself, on a fresh copy of the system (same model and seed, nothing else
running), and its slowdown is its time together over its time alone (for a
mix: from its start to its last job's end).  The together run sees what
earlier phases left (aged drives, a filled SCM buffer, data placed); the fresh
copy does not, so put a ``jobs`` phase first, or read its slowdown with that
in mind.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import numpy as np
import simpy
from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from flashsim.config import Bytes, NonNegativeSeconds, StrictModel
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseDetails, PhaseResult
from flashsim.progress import current
from flashsim.workloads.darshan import DarshanPhase, load_trace, resolve_log
from flashsim.workloads.job_tally import tally_job
from flashsim.workloads.mix import MixSpec
from flashsim.workloads.mix_phase import MixPhase, place_mix
from flashsim.workloads.replay import (
    FidelityOverride,
    JobEngine,
    JobTarget,
    JobTimes,
    MergeCalls,
    MergeGap,
    PlacedJob,
    Speedup,
)
from flashsim.workloads.trace import JobTrace, OpTable, TraceFile, records_frame

#: Most calls an IOR job may expand to (each is a row of 8 numbers: ~64 B).
MAX_IOR_JOB_CALLS = 20_000_000


class IorJob(StrictModel):
    """An IOR job run beside others (``type = "ior"``): IOR's calls, no stonewall."""

    type: Literal["ior"]
    name: str = Field(description="Job name, unique in the phase.")
    operation: Literal["read", "write"] = Field(description="IOR `-w` or `-r`.")
    nodes: Annotated[int, Field(ge=1)] = Field(1, description="Client nodes of the job.")
    ranks_per_node: Annotated[int, Field(ge=1)] = Field(1, description="MPI ranks per node.")
    file_per_process: bool = Field(True, description="`-F`: a file per rank, else one shared.")
    access: Literal["sequential", "random"] = Field(
        "sequential", description="`-z`: random offsets within each block."
    )
    transfer_size: Bytes = Field("1 MiB", description="`-t`, bytes per call.")
    block_size: Bytes = Field("1 GiB", description="`-b`, bytes per rank per segment.")
    segments: Annotated[int, Field(ge=1)] = Field(1, description="`-s`.")
    direct_io: bool = Field(False, description="`--posix.odirect`.")
    fsync: bool = Field(
        False,
        description=(
            "`-e`: each rank flushes its write-back at the end, inside its time (the "
            "engine's write-back budget, Lustre; VAST's client cache is not flushed by it)."
        ),
    )
    stripe_count: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Lustre stripe count of its files (the model's default if unset)."
    )
    first_target: Annotated[int, Field(ge=0)] | None = Field(
        None,
        description=(
            "OST of every file's first stripe (`lfs setstripe -i`; the files then share "
            "those OSTs, one stripe unless stripe_count is set); unset: the system places "
            "each file."
        ),
    )
    start: NonNegativeSeconds = Field("0 s", description="When the job starts in the phase.")
    first_node: Annotated[int, Field(ge=0)] | None = Field(
        None, description="First client node (default: after the previous job's nodes)."
    )

    @model_validator(mode="after")
    def _sizes(self) -> IorJob:
        ratio = self.block_size / self.transfer_size
        if self.transfer_size <= 0 or ratio < 1 or abs(ratio - round(ratio)) > 1e-9:
            raise ValueError(
                f"block_size(={self.block_size:g} B) must be a positive multiple of "
                f"transfer_size(={self.transfer_size:g} B)"
            )
        calls = self.nodes * self.ranks_per_node * self.segments * round(ratio)
        if calls > MAX_IOR_JOB_CALLS:
            raise ValueError(
                f"the job makes {calls:,} calls; at most {MAX_IOR_JOB_CALLS:,} are allowed "
                "(raise transfer_size or lower block_size)"
            )
        return self


class DarshanJob(StrictModel):
    """A Darshan log replayed beside others (``type = "darshan"``)."""

    type: Literal["darshan"]
    name: str = Field(description="Job name, unique in the phase.")
    log: str = Field(description="The log: a path relative to the scenario, or `pydarshan:...`.")
    ranks_per_node: Annotated[int, Field(ge=1)] = Field(32, description="MPI ranks per node.")
    speedup: Speedup = Field("none", description="`none` or `io-only` (see the darshan phase).")
    start: NonNegativeSeconds = Field("0 s", description="When the job starts in the phase.")
    first_node: Annotated[int, Field(ge=0)] | None = Field(
        None, description="First client node (default: after the previous job's nodes)."
    )
    _trace: JobTrace | None = PrivateAttr(None)

    @field_validator("log")
    @classmethod
    def _exists(cls, value: str, info: ValidationInfo) -> str:
        """Resolve the log's path (relative to the scenario file) and check it exists."""
        return str(resolve_log(value, Path((info.context or {}).get("scenario_dir", "."))))

    def trace(self, seed: int) -> JobTrace:
        """The log read into a trace (once)."""
        if self._trace is None:
            self._trace = load_trace(Path(self.log), seed)
        return self._trace


class MixEntry(StrictModel):
    """A production mix run beside other jobs (``type = "mix"``): its jobs count as one."""

    type: Literal["mix"]
    name: str = Field(description="Name of the mix, unique in the phase.")
    mix: MixSpec = Field(description="The mix (see the `mix` phase).")
    client_nodes: Annotated[int, Field(ge=1)] = Field(
        description="Client nodes the mix's jobs are dealt over (its own, after first_node)."
    )
    start: NonNegativeSeconds = Field("0 s", description="When the mix's window starts.")
    first_node: Annotated[int, Field(ge=0)] | None = Field(
        None, description="First client node (default: after the previous job's nodes)."
    )


AnyJob = Annotated[Union[IorJob, DarshanJob, MixEntry], Field(discriminator="type")]  # noqa: UP007


class JobsPhase(StrictModel):
    """Several jobs at once on one system (``workload = "jobs"``)."""

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["jobs"]
    jobs: Annotated[list[AnyJob], Field(min_length=1)] = Field(
        description='The jobs, each a table with `type = "ior"`, `"darshan"` or `"mix"`.'
    )
    alone: bool = Field(
        True, description="Also run each job alone (fresh system) to measure its slowdown."
    )
    merge: MergeCalls = True
    merge_gap: MergeGap = "1 ms"
    fidelity: FidelityOverride = None

    @model_validator(mode="after")
    def _unique(self) -> JobsPhase:
        seen: set[str] = set()
        for job in self.jobs:
            if job.name in seen:
                raise ValueError(f"two jobs are named {job.name!r}; job names must be unique")
            seen.add(job.name)
        return self


def read_phase_traces(phase: Any, seed: int) -> None:
    """Read the logs a phase names now (so a bad log is a bad input, exit 2).

    Raises ``ValueError("key: message")`` with the key relative to the phase.
    """
    from flashsim.config import ConfigError

    logs: list[tuple[str, Any]] = []
    if isinstance(phase, DarshanPhase):
        logs.append(("log", phase))
    elif isinstance(phase, JobsPhase):
        logs.extend(
            (f"jobs.{i}.log", job)
            for i, job in enumerate(phase.jobs)
            if isinstance(job, DarshanJob)
        )
    for key, holder in logs:
        try:
            holder.trace(seed)
        except ConfigError as exc:
            raise ValueError(f"{key}: {exc.path}: {exc.expected}") from None
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None


def entry_nodes(entry: IorJob | DarshanJob | MixEntry) -> int:
    """Client nodes an entry occupies (a replay's log must have been read)."""
    if isinstance(entry, MixEntry):
        return entry.client_nodes
    if isinstance(entry, IorJob):
        return entry.nodes
    return -(-entry.trace(0).nprocs // entry.ranks_per_node)


def check_placement(phase: Any, client_nodes: int) -> None:
    """Refuse jobs that do not fit the system's client nodes or share nodes.

    Raises ``ValueError("key: message")`` with the key relative to the phase
    (``jobs.2.first_node``, ``first_node``, ``client_nodes``).
    """
    spans: list[tuple[str, int, int]] = []
    if isinstance(phase, JobsPhase):
        next_node = 0
        for i, entry in enumerate(phase.jobs):
            first = entry.first_node if entry.first_node is not None else next_node
            n = entry_nodes(entry)
            spans.append((f"jobs.{i}", first, first + n))
            next_node = max(next_node, first + n)
    elif isinstance(phase, DarshanPhase):
        n = -(-phase.trace(0).nprocs // phase.ranks_per_node)
        spans.append(("", phase.first_node, phase.first_node + n))
    elif isinstance(phase, MixPhase):
        n = phase.client_nodes or client_nodes - phase.first_node
        spans.append(("", phase.first_node, phase.first_node + max(n, 1)))
    for key, first, end in spans:
        if end > client_nodes:
            where = f"{key}.first_node" if key else "first_node"
            raise ValueError(
                f"{where}: nodes {first}..{end - 1} do not fit the system's {client_nodes:,} "
                "client nodes (lower ranks or raise ranks_per_node)"
            )
    ordered = sorted(spans, key=lambda span: span[1])
    for (key_a, _, end_a), (key_b, first_b, _) in pairwise(ordered):
        if first_b < end_a:
            raise ValueError(
                f"{key_b}.first_node: {first_b} is inside the nodes of {key_a} (..{end_a - 1}); "
                "each job runs on its own client nodes"
            )


def ior_trace(job: IorJob, seed: int = 0) -> JobTrace:
    """The calls of an IOR job: per rank ``segments x block/transfer`` calls of ``transfer`` bytes.

    File per process: rank ``r`` writes its file at ``s b + k t``; a shared
    file: at ``(s N + r) b + k t`` (IOR's segmented layout).  ``-z`` permutes
    each rank's calls within each block (seeded by the scenario's seed and the
    job's name, so the same scenario gives the same offsets).
    """
    n = job.nodes * job.ranks_per_node
    t = float(job.transfer_size)
    b = float(job.block_size)
    per_block = round(b / t)
    per_rank = job.segments * per_block
    rank = np.repeat(np.arange(n, dtype=np.int64), per_rank)
    seg = np.tile(np.repeat(np.arange(job.segments), per_block), n)
    k = np.tile(np.arange(per_block), n * job.segments)
    if job.access == "random":
        rng = np.random.default_rng([seed, hash_name(job.name)])
        keys = rng.random((n * job.segments, per_block))
        k = np.argsort(keys, axis=1).ravel()
    if job.file_per_process:
        file = rank.copy()
        offset = seg * b + k * t
    else:
        file = np.zeros(rank.size, dtype=np.int64)
        offset = (seg * n + rank) * b + k * t
    n_files = n if job.file_per_process else 1
    osts = None
    if job.first_target is not None:
        osts = tuple(job.first_target + k for k in range(job.stripe_count or 1))
    files = tuple(
        TraceFile(
            name=f"{job.name}.{i:08d}" if job.file_per_process else job.name,
            stripe_count=job.stripe_count,
            osts=osts,
        )
        for i in range(n_files)
    )
    write = job.operation == "write"
    rows = [
        {
            "module": "IOR",
            "file": r if job.file_per_process else 0,
            "rank": r,
            "reads": 0 if write else per_rank,
            "writes": per_rank if write else 0,
            "bytes_read": 0.0 if write else per_rank * t,
            "bytes_written": per_rank * t if write else 0.0,
            "io_time_s": float("nan"),
            "meta_time_s": float("nan"),
            "opens": 1,
        }
        for r in range(n)
    ]
    zeros = np.zeros(rank.size)
    ops = OpTable(
        rank=rank,
        file=file,
        record=rank.copy(),
        write=np.full(rank.size, write),
        offset_B=offset.astype(np.float64),
        size_B=np.full(rank.size, t),
        start_s=zeros,
        end_s=zeros,
    )
    return JobTrace(
        name=job.name,
        source="ior",
        nprocs=n,
        run_time_s=float("nan"),
        files=files,
        records=records_frame(rows),
        ops=ops,
        timing="generated",
        notes=("IOR's calls, back to back; no stonewall, fsync or write-back cache",),
    )


def hash_name(name: str) -> int:
    """A stable integer of a name (CRC-32): per-job seeds, and where a system places a file."""
    import zlib

    return zlib.crc32(name.encode())


@dataclass(frozen=True)
class JobOutcome:
    """One job of a ``jobs`` phase.

    Attributes
    ----------
    name, type : str
        The job and its kind (``ior``, ``darshan``).
    first_node, nodes, ranks : int
        Where it ran.
    start_s : float
        When it started in the phase (s).
    bytes_B : float
        Bytes it moved.
    calls : int
        Read and write calls it made.
    time_s : float
        From its start to its slowest rank's end, with the others (s).
    bandwidth_Bps : float
        Bytes over ``time_s`` (IOR's definition), bytes/s.
    alone_time_s, alone_bandwidth_Bps : float or None
        The same, run alone on a fresh system.
    slowdown : float or None
        ``time_s / alone_time_s``: what the other jobs cost it.
    conserved : bool
        Its calls and bytes match its source's counters.
    """

    name: str
    type: str
    first_node: int
    nodes: int
    ranks: int
    start_s: float
    bytes_B: float
    calls: int
    time_s: float
    bandwidth_Bps: float
    alone_time_s: float | None = None
    alone_bandwidth_Bps: float | None = None
    slowdown: float | None = None
    conserved: bool = True


@dataclass(frozen=True, kw_only=True)
class JobsDetails(PhaseDetails):
    """Per job, with and without the others (``--json`` ``extra``).

    Attributes
    ----------
    jobs : list of JobOutcome
        The jobs in the order listed.
    makespan_s : float
        From the phase's start to the last job's end (s).
    """

    jobs: list[JobOutcome] = field(default_factory=list)
    makespan_s: float = 0.0

    def findings(self) -> list[str]:
        """One line per job: bandwidth together and alone, and the slowdown."""
        lines = []
        for j in self.jobs:
            line = (
                f"{j.name} ({j.type}, {j.ranks} ranks on nodes {j.first_node}.."
                f"{j.first_node + j.nodes - 1}): {j.bytes_B / 1e9:.4g} GB in {j.time_s:.4g} s "
                f"= {j.bandwidth_Bps / 1e9:.4g} GB/s"
            )
            if j.slowdown is not None and j.alone_bandwidth_Bps is not None:
                line += (
                    f"; alone {j.alone_bandwidth_Bps / 1e9:.4g} GB/s, slowdown x{j.slowdown:.3g}"
                )
            lines.append(line)
        return lines


def place_jobs(phase: JobsPhase, seed: int) -> list[list[PlacedJob]]:
    """The phase's entries as traces on client nodes (consecutive ranges by default).

    An IOR job or a replay is one placed job; a mix is the jobs it draws, dealt
    round robin over its own ``client_nodes``.
    """
    placed: list[list[PlacedJob]] = []
    next_node = 0
    for entry in phase.jobs:
        first = entry.first_node if entry.first_node is not None else next_node
        if isinstance(entry, MixEntry):
            placed.append(place_mix(entry.mix, seed, entry.name, first, entry.client_nodes,
                                    entry.start))  # fmt: skip
            next_node = max(next_node, first + entry.client_nodes)
            continue
        if isinstance(entry, IorJob):
            trace = ior_trace(entry, seed)
            direct, fsync = entry.direct_io, entry.fsync
        else:
            trace = entry.trace(seed)
            direct, fsync = False, False
        pj = PlacedJob(
            name=entry.name,
            trace=trace,
            first_node=first,
            ranks_per_node=entry.ranks_per_node,
            start_s=entry.start,
            direct_io=direct,
            fsync=fsync,
        )
        next_node = max(next_node, first + pj.nodes)
        placed.append([pj])
    return placed


def _clock_of(target: JobTarget) -> Callable[[], float]:
    """The simulated time of ``target``'s simulation, in seconds (for a progress task)."""
    return lambda: target.sim.now


def run_jobs(
    system: JobTarget,
    phase: JobsPhase,
    fidelity: Literal["flow", "request"],
    seed: int,
    fresh: Callable[[], JobTarget],
) -> PhaseResult:
    """Run the entries together on ``system`` and, with ``alone``, each alone on ``fresh()``."""
    groups = place_jobs(phase, seed)
    engine = JobEngine(system, fidelity, "none", phase.merge, phase.merge_gap)
    start = system.sim.now
    parts = _RunningJobs(system.sim, phase, groups)
    shown = current()
    with shown.task("all jobs at once"):  # the phase's own task shows the simulated time
        flat = engine.run([job for group in groups for job in group], parts.done)
    parts.live = False
    together: list[list[JobTimes]] = []
    k = 0
    for group in groups:
        together.append(flat[k : k + len(group)])
        k += len(group)
    alone: list[list[JobTimes] | None] = [None] * len(groups)
    if phase.alone:
        for i, (entry, group) in enumerate(zip(phase.jobs, groups, strict=True)):
            target = fresh()
            label = f"alone {i + 1}/{len(groups)} {entry.name}"
            with shown.task(label, clock=_clock_of(target)):
                solo = JobEngine(target, fidelity, "none", phase.merge, phase.merge_gap)
                alone[i] = solo.run(group)
    outcomes = [
        _outcome(entry, group, times, solo)
        for entry, group, times, solo in zip(phase.jobs, groups, together, alone, strict=True)
    ]
    moved = sum(o.bytes_B for o in outcomes)
    calls = sum(o.calls for o in outcomes)
    span = max((o.start_s + o.time_s for o in outcomes), default=0.0)
    return PhaseResult(
        name=phase.name,
        operation="jobs",
        bandwidth_Bps=moved / span if span > 0 else 0.0,
        iops=calls / span if span > 0 else 0.0,
        ranks=sum(o.ranks for o in outcomes),
        transfer_size_B=moved / calls if calls else 0.0,
        sim_time_s=system.sim.now - start,
        bytes_B=moved,
        extra=JobsDetails(jobs=outcomes, makespan_s=span),
        fidelity=fidelity,
    )


class _RunningJobs:
    """Announces the parts of a jobs phase: the entries running together, at each start and end.

    Parameters
    ----------
    sim : Simulation
        The simulation the phase runs in.
    phase : JobsPhase
        The phase (its entries' names and start times, s).
    groups : list of list of PlacedJob
        The placed jobs of each entry, in the order ``JobEngine.run`` receives them flat.
    """

    def __init__(self, sim: Simulation, phase: JobsPhase, groups: list[list[PlacedJob]]) -> None:
        self.sim = sim
        self.names = [entry.name for entry in phase.jobs]
        self.left = [len(group) for group in groups]
        self.owner = [i for i, group in enumerate(groups) for _ in group]
        self.started = [False] * len(groups)
        self.live = True
        starts = sorted({float(entry.start) for entry in phase.jobs})
        for t in starts:
            entries = [i for i, e in enumerate(phase.jobs) if float(e.start) == t]
            if t <= 0.0:
                self._start(entries)
            else:
                sim.env.process(self._start_at(t, entries))

    def _announce(self) -> None:
        if self.live:
            running = [
                name
                for name, started, left in zip(self.names, self.started, self.left, strict=True)
                if started and left > 0
            ]
            self.sim.begin_part(" + ".join(running) if running else "no job running")

    def _start(self, entries: list[int]) -> None:
        for i in entries:
            self.started[i] = True
        self._announce()

    def _start_at(self, t: float, entries: list[int]) -> Generator[simpy.Event, Any, None]:
        yield self.sim.env.timeout(t)
        self._start(entries)

    def done(self, k: int) -> None:
        """Placed job ``k`` (flat index) has ended."""
        i = self.owner[k]
        self.left[i] -= 1
        if self.left[i] == 0:
            self._announce()


def _span_s(times: list[JobTimes], start_s: float) -> float:
    """From ``start_s`` to the last rank's end over ``times`` (s)."""
    ends = [t.makespan_s + t.job.start_s for t in times if len(t.transfers)]
    return max(ends, default=start_s) - start_s


def _outcome(
    entry: IorJob | DarshanJob | MixEntry,
    group: list[PlacedJob],
    times: list[JobTimes],
    solo: list[JobTimes] | None,
) -> JobOutcome:
    tallies = [tally_job(t) for t in times]
    moved = sum(x.total.bytes_read_B + x.total.bytes_written_B for x in tallies)
    calls = sum(x.total.reads + x.total.writes for x in tallies)
    start = float(entry.start)
    span = _span_s(times, start)
    solo_span = _span_s(solo, start) if solo is not None else None
    nodes = entry.client_nodes if isinstance(entry, MixEntry) else group[0].nodes
    return JobOutcome(
        name=entry.name,
        type=entry.type,
        first_node=min((j.first_node for j in group), default=0),
        nodes=nodes,
        ranks=sum(j.trace.nprocs for j in group),
        start_s=start,
        bytes_B=moved,
        calls=calls,
        time_s=span,
        bandwidth_Bps=moved / span if span > 0 else 0.0,
        alone_time_s=solo_span,
        alone_bandwidth_Bps=moved / solo_span if solo_span else None,
        slowdown=span / solo_span if solo_span else None,
        conserved=all(x.conserved for x in tallies),
    )
