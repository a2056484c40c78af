"""An IOR-like workload that runs on any system kind.

The phase model :class:`IorPhase` mirrors IOR 3.3's options (``-t``, ``-b``,
``-s``, ``-D``, ``-O stoneWallingWearOut=1``, ``-e``, ``-C``/``-Q``, ``-z``,
``-F``, ``--posix.odirect``, ``-i``) and :class:`IorRunner` computes bandwidth
and IOPS the way IOR does: the bytes all ranks moved over the time of the
slowest rank (``aggFileSizeForBW / (max end - min start)``), IOPS being that
over the transfer size.  With stonewalling and wear-out (seed 000, Methods):
every rank writes ``B_max``, the most any rank had written when the deadline
passed, and the bandwidth is ``N_ranks * B_max / t_max`` where ``t_max`` is the
slowest rank's write + fsync time; open, create and close are not timed.

How a system plugs in
---------------------
A system's :class:`~flashsim.systems.base.BuiltSystem` implements the
:class:`IorTarget` protocol (inheriting :class:`IorTargetDefaults` for the
optional hooks), hands ``ior`` phases to an :class:`IorRunner` it owns (the
runner keeps state such as written datasets between phases), and its kind
lists ``IorTarget`` in :attr:`~flashsim.systems.base.SystemKind.implements`::

    class MySystem(BuiltSystem, IorTargetDefaults):
        def __init__(...):
            ...
            self.ior = IorRunner(self)

        def run_phase(self, phase):
            if isinstance(phase, IorPhase):
                return self.ior.run(phase)

The protocol's methods:

* :meth:`IorTarget.ior_prepare` is called before every repetition (drop
  client caches, create client-side components for ``phase.nodes``, choose
  file layouts ...);
* :meth:`IorTarget.ior_streams` returns one :class:`RankStream` per rank: the
  flow path (resources and weights), the per-rank rate cap ``q*t/L``, the
  bytes per server operation, the request-fidelity concurrency and the
  write-behind the client cache allows (0 for O_DIRECT or reads).  Limits
  shared by several ranks (e.g. RPCs in flight per client node) are
  resources on the path;
* :meth:`IorTarget.ior_request` is a SimPy generator that performs one
  operation of ``stream.op_size_B`` bytes for a rank in request fidelity,
  from issue to completion as the application sees it;
* :meth:`IorTarget.ior_peaks` returns nominal device peaks
  (``{"bandwidth_Bps": ..., "iops": ...}``) against which efficiencies are
  reported, or an empty dict;
* hooks with no-op defaults in :class:`IorTargetDefaults`:
  :meth:`IorTarget.ior_flow_started` is called for every flow a rank starts
  in flow fidelity, and :meth:`IorTarget.ior_fsync` may return a SimPy event
  that a writing rank waits for (inside its timed window) when
  ``phase.fsync`` is set; a system that models its client page cache as its
  own buffer uses these and returns ``write_behind_B = 0``.

Flow fidelity moves each rank's data as one flow (the write-behind part as a
second flow after the application's last write, timed only when ``fsync`` or
the data must reach the server).  Request fidelity runs closed-loop operations
until the relative 95 % confidence half-width of the throughput (batch means,
:class:`~flashsim.engine.runlength.RunLengthControl`) is below
``target_rel_halfwidth``; the steady-state rate is then applied to the whole
stonewall window (or to the data volume) rather than simulating every 4 KiB
request of a 300 s run.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

import numpy as np
import simpy
from pydantic import Field, model_validator

from flashsim.config import Bytes, NonNegativeSeconds, StrictModel
from flashsim.engine.closedloop import Request, run_closed_loop
from flashsim.engine.flows import Flow, Resource, Segment
from flashsim.engine.runlength import MIN_SAMPLES_FOR_BATCHES, RunLengthControl
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseDetails, PhaseResult

Operation = Literal["read", "write"]
Fidelity = Literal["flow", "request"]


class FileLayout(StrictModel):
    """File-layout hints (``lfs setstripe``-like); systems without striping ignore them.

    Attributes
    ----------
    stripe_count : int or None
        Targets (OSTs) a file is striped over; ``None`` for the system default.
    stripe_size : float or None
        Bytes per stripe unit; ``None`` for the system default.
    first_target : int or None
        Index of the target holding the first stripe (``lfs setstripe -i``);
        with ``stripe_count = 1`` every file lands on this one target.
    """

    stripe_count: Annotated[int, Field(ge=1)] | None = None
    stripe_size: Bytes | None = None
    first_target: Annotated[int, Field(ge=0)] | None = None


class IorPhase(StrictModel):
    """One IOR test (``workload = "ior"``): a write or a read, repeated ``-i`` times.

    Attributes
    ----------
    name : str
        Phase name.
    operation : {"write", "read"}
        IOR ``-w`` or ``-r``.
    nodes, ranks_per_node : int
        Client nodes and MPI ranks per node (``N = nodes * ranks_per_node``).
    first_node : int
        Index of the job's first client node: its ranks run on nodes
        ``first_node .. first_node + nodes - 1`` (phases that overlap in time on
        a timeline take their own nodes this way).
    file_per_process : bool
        ``-F``: one file per rank; otherwise one shared file (segmented).
    access : {"sequential", "random"}
        ``-z``: random, aligned, non-repeating offsets within each block.
    transfer_size : float
        ``-t``, bytes per I/O call.
    block_size : float
        ``-b``, bytes per rank per segment (a multiple of ``transfer_size``).
    segments : int
        ``-s``.
    stonewall : float
        ``-D`` in seconds; 0 disables stonewalling.
    wear_out : bool
        ``-O stoneWallingWearOut=1``: after the deadline every rank continues
        until it has moved as much as the rank that moved most.
    fsync : bool
        ``-e``: fsync after the write phase, inside the timed window.
    reorder_tasks : bool
        ``-C``: a rank reads the file written by the rank ``task_per_node_offset``
        nodes away (defeats the client page cache).
    task_per_node_offset : int
        ``-Q``.
    direct_io : bool
        ``--posix.odirect``; otherwise I/O is buffered through the page cache.
    repetitions : int
        ``-i``.
    dataset : str or None
        A write names the files it leaves behind (``-k``); a read reads the
        files of that dataset (their per-rank sizes bound each rank's reads).
    drop_caches : bool
        Flush client caches before each repetition, as the seed did after
        generating its read datasets.
    layout : FileLayout
        Striping hints for the files.
    fidelity : {"flow", "request"} or None
        Override the scenario's fidelity for this phase (IOPS phases use
        request fidelity to get a steady-state confidence interval).
    target_rel_halfwidth : float
        Request fidelity: stop when the throughput's relative 95 % half-width
        is below this.
    sample_interval_requests : int
        Request fidelity: completions per throughput sample.
    max_requests : int
        Request fidelity: stop after this many completions regardless.
    """

    name: str
    workload: Literal["ior"]
    operation: Operation
    nodes: Annotated[int, Field(ge=1)] = 1
    ranks_per_node: Annotated[int, Field(ge=1)] = 1
    file_per_process: bool = True
    access: Literal["sequential", "random"] = "sequential"
    transfer_size: Bytes = "256 KiB"
    block_size: Bytes = "1 MiB"
    segments: Annotated[int, Field(ge=1)] = 1
    stonewall: NonNegativeSeconds = "0 s"
    wear_out: bool = False
    fsync: bool = False
    reorder_tasks: bool = False
    task_per_node_offset: Annotated[int, Field(ge=1)] = 1
    first_node: Annotated[int, Field(ge=0)] = 0
    direct_io: bool = False
    repetitions: Annotated[int, Field(ge=1)] = 1
    dataset: str | None = None
    drop_caches: bool = True
    layout: FileLayout = FileLayout()
    fidelity: Fidelity | None = None
    target_rel_halfwidth: Annotated[float, Field(gt=0.0)] = 0.01
    sample_interval_requests: Annotated[int, Field(ge=1)] = 500
    max_requests: Annotated[int, Field(ge=1)] = 2_000_000

    @model_validator(mode="after")
    def _consistent(self) -> IorPhase:
        ratio = self.block_size / self.transfer_size
        if abs(ratio - round(ratio)) > 1e-9 or ratio < 1:
            raise ValueError(
                f"block_size(={self.block_size:g} B) must be a multiple of "
                f"transfer_size(={self.transfer_size:g} B)"
            )
        if self.wear_out and self.stonewall <= 0:
            raise ValueError("wear_out needs stonewall > 0")
        return self

    @property
    def ranks(self) -> int:
        """Number of MPI ranks."""
        return self.nodes * self.ranks_per_node

    @property
    def bytes_per_rank_B(self) -> float:
        """Bytes a rank moves without stonewalling (``b * s``)."""
        return float(self.block_size * self.segments)

    def node_of(self, rank: int) -> int:
        """Client node of ``rank``: placed by node from ``first_node``, as ``srun`` does."""
        return self.first_node + rank // self.ranks_per_node

    def file_of(self, rank: int) -> int:
        """The rank whose file ``rank`` accesses (``-C`` shifts by whole nodes)."""
        if not self.reorder_tasks:
            return rank
        return (rank + self.task_per_node_offset * self.ranks_per_node) % self.ranks


@dataclass(frozen=True)
class RankStream:
    """How one rank's I/O crosses a system, in both fidelities.

    Attributes
    ----------
    path : tuple of (Resource or Segment, float)
        Flow fidelity: resources and shared segments (a stripe set) crossed,
        and bytes (or, for operation-rate resources, operation weights)
        consumed there per user byte.
    op_size_B : float
        Bytes per server operation (an RPC, or a page for small random I/O).
    rate_cap_Bps : float or None
        Flow fidelity: the rank's own rate cap in bytes/s, ``q * t / L``.
    concurrency : int
        Request fidelity: operations the rank keeps in flight.
    write_behind_B : float
        Bytes the client cache lets the application run ahead of the server
        (0 for reads and O_DIRECT).
    cap_label : str
        What ``rate_cap_Bps`` stands for, ``"<kind>: <what>"``, named in the
        report of what limited each interval (:mod:`flashsim.measure.limits`).
    """

    path: tuple[tuple[Resource | Segment, float], ...]
    op_size_B: float
    rate_cap_Bps: float | None = None
    concurrency: int = 1
    write_behind_B: float = 0.0
    cap_label: str = "concurrency: rank window q*t/L"


class IorTarget(Protocol):
    """What a system provides so that :class:`IorRunner` can drive it."""

    sim: Simulation

    def ior_prepare(self, phase: IorPhase, repetition: int) -> None:
        """Get ready for one repetition (client components, caches, layouts)."""
        ...

    def ior_streams(self, phase: IorPhase) -> list[RankStream]:
        """One :class:`RankStream` per rank of ``phase`` (``phase.ranks`` of them)."""
        ...

    def ior_request(
        self, phase: IorPhase, rank: int, stream: RankStream
    ) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: perform one operation of ``stream.op_size_B`` bytes."""
        ...

    def ior_peaks(self, phase: IorPhase) -> dict[str, float]:
        """Nominal device peaks (``bandwidth_Bps``, ``iops``) for efficiencies, or ``{}``."""
        ...

    def ior_flow_started(self, phase: IorPhase, rank: int, label: str, flow: Flow) -> None:
        """Flow fidelity: ``rank`` started ``flow`` (``label``: ``app``, ``app2``, ``drain``)."""
        ...

    def ior_fsync(self, phase: IorPhase, rank: int) -> simpy.Event | None:
        """An event a writing rank waits for when ``phase.fsync`` is set, or ``None``."""
        ...


class IorTargetDefaults:
    """No-op defaults of the optional :class:`IorTarget` hooks; systems inherit it."""

    def ior_flow_started(self, phase: IorPhase, rank: int, label: str, flow: Flow) -> None:
        """Do nothing: the system keeps no per-byte state of its own."""
        return None

    def ior_fsync(self, phase: IorPhase, rank: int) -> simpy.Event | None:
        """Nothing to wait for: data reaches the server inside the flows."""
        return None


@dataclass(frozen=True)
class RepetitionResult:
    """What one repetition measured, as IOR reports it.

    Attributes
    ----------
    transfer_size_B : float
        ``-t`` in bytes.
    rank_bytes_B : numpy.ndarray
        Bytes moved by each rank.
    rank_times_s : numpy.ndarray
        Each rank's time (s), including fsync when requested.
    ci_rel_halfwidth : float or None
        Request fidelity: relative 95 % half-width of the steady-state rate.
    """

    transfer_size_B: float
    rank_bytes_B: np.ndarray[Any, np.dtype[np.float64]]
    rank_times_s: np.ndarray[Any, np.dtype[np.float64]]
    ci_rel_halfwidth: float | None = None
    simulated_s: float = math.nan
    mean_response_s: float = math.nan
    p99_response_s: float = math.nan

    @property
    def bytes_B(self) -> float:
        """``aggFileSizeForBW``: bytes moved by all ranks."""
        return float(self.rank_bytes_B.sum())

    @property
    def time_s(self) -> float:
        """Time of the slowest rank (s), open/close excluded."""
        return float(self.rank_times_s.max())

    @property
    def bandwidth_Bps(self) -> float:
        """IOR bandwidth: bytes over the slowest rank's time (bytes/s)."""
        return ior_bandwidth(self.rank_bytes_B, self.rank_times_s)

    @property
    def iops(self) -> float:
        """IOR operations/s: bandwidth over the transfer size."""
        return self.bandwidth_Bps / self.transfer_size_B

    def summary(self) -> IorRepetition:
        """The ``IorDetails.repetitions`` element."""
        return IorRepetition(
            bandwidth_Bps=self.bandwidth_Bps,
            iops=self.iops,
            time_s=self.time_s,
            bytes_B=self.bytes_B,
        )


@dataclass(frozen=True)
class IorRepetition:
    """One repetition's results in :class:`IorDetails` (``extra.repetitions[i]``).

    Attributes
    ----------
    bandwidth_Bps : float
        IOR bandwidth of the repetition (bytes/s).
    iops : float
        Operations/s (bandwidth over the transfer size).
    time_s : float
        Time of the slowest rank (s).
    bytes_B : float
        Bytes moved by all ranks.
    """

    bandwidth_Bps: float
    iops: float
    time_s: float
    bytes_B: float


@dataclass(frozen=True, kw_only=True)
class IorDetails(PhaseDetails):
    """``PhaseResult.extra`` of an ``ior`` phase: its options and per-repetition results.

    Attributes
    ----------
    repetitions : list of IorRepetition
        Each repetition's bandwidth, IOPS, time and bytes.
    block_size_B, segments, file_per_process, tasks_per_node, nodes, stonewall_s,
    wear_out, fsync, direct_io, access, reorder_tasks, task_per_node_offset
        The phase's IOR options (``-b`` in bytes, ``-s``, ``-F``, ranks per
        node, nodes, ``-D`` in seconds, wear-out, ``-e``, O_DIRECT,
        ``"sequential"``/``"random"``, ``-C``, ``-Q``).
    fidelity : str
        The fidelity the phase ran at (``"flow"`` or ``"request"``).
    bw_max_Bps, bw_min_Bps : float
        Highest and lowest repetition bandwidth (bytes/s).
    t_max_s : float
        Slowest rank's time in the best repetition (s).
    b_max_B : float
        Most bytes any rank moved in the best repetition.
    simulated_s : float
        Simulated seconds of all repetitions' measurement windows (request
        fidelity; NaN in flow fidelity).
    mean_response_s, p99_response_s : float or None
        Request fidelity: mean and 99th-percentile per-operation latency
        (issue to completion, s) in steady state of the last repetition;
        ``None`` (absent) in flow fidelity.
    bandwidth_efficiency, iops_efficiency : float or None
        Mean bandwidth (IOPS) over the system's peak for the phase
        (dimensionless); ``None`` (absent) when the system states no peak.
    """

    repetitions: list[IorRepetition]
    block_size_B: float
    segments: int
    file_per_process: bool
    tasks_per_node: int
    nodes: int
    stonewall_s: float
    wear_out: bool
    fsync: bool
    direct_io: bool
    access: str
    reorder_tasks: bool
    task_per_node_offset: int
    fidelity: str
    bw_max_Bps: float
    bw_min_Bps: float
    t_max_s: float
    b_max_B: float
    simulated_s: float
    mean_response_s: float | None = None
    p99_response_s: float | None = None
    bandwidth_efficiency: float | None = None
    iops_efficiency: float | None = None


# ------------------------------------------------------------- IOR arithmetic
def stonewall_bytes(
    moved_B: Sequence[float] | np.ndarray[Any, np.dtype[np.float64]],
    transfer_B: float,
    limit_B: Sequence[float] | np.ndarray[Any, np.dtype[np.float64]],
    wear_out: bool,
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Bytes each rank moves in total when the stonewall deadline passes.

    A rank that is inside a transfer when the deadline passes finishes it
    (IOR checks the deadline between transfers), so its count is rounded up
    to whole transfers, never beyond its ``limit_B``.  With wear-out every
    rank then continues to ``B_max``, the largest count.

    Parameters
    ----------
    moved_B : array_like
        Bytes each rank had issued at the deadline.
    transfer_B : float
        Transfer size ``-t`` in bytes.
    limit_B : array_like
        Most bytes each rank can move (``b * s``, or its file size for reads).
    wear_out : bool
        Apply ``stoneWallingWearOut``.
    """
    moved = np.asarray(moved_B, dtype=np.float64)
    limit = np.asarray(limit_B, dtype=np.float64)
    whole = np.ceil(moved / transfer_B - 1e-9) * transfer_B
    counts = np.minimum(np.maximum(whole, 0.0), limit)
    return wear_out_bytes(counts, limit) if wear_out else counts


def wear_out_bytes(
    counts_B: np.ndarray[Any, np.dtype[np.float64]],
    limit_B: np.ndarray[Any, np.dtype[np.float64]],
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """``stoneWallingWearOut``: every rank continues to ``B_max``, within its own limit (bytes)."""
    worn: np.ndarray[Any, np.dtype[np.float64]] = np.minimum(
        np.full_like(counts_B, counts_B.max()), limit_B
    )
    return worn


def ior_bandwidth(
    rank_bytes_B: Sequence[float] | np.ndarray[Any, np.dtype[np.float64]],
    rank_times_s: Sequence[float] | np.ndarray[Any, np.dtype[np.float64]],
) -> float:
    """IOR's bandwidth: the sum of bytes over the slowest rank's time (bytes/s).

    With wear-out every rank moved ``B_max``, so this is ``N * B_max / t_max``.
    """
    t_max = float(np.max(rank_times_s))
    return float(np.sum(rank_bytes_B)) / t_max if t_max > 0 else math.nan


# ------------------------------------------------------------------- runner
class IorRunner:
    """Runs :class:`IorPhase` phases on a system implementing :class:`IorTarget`.

    Parameters
    ----------
    system : IorTarget
        The built system.
    default_fidelity : {"flow", "request"}
        The scenario's fidelity, used when a phase does not override it.

    Attributes
    ----------
    datasets : dict of str to numpy.ndarray
        Per-rank file sizes (bytes) of the datasets written so far.
    """

    def __init__(self, system: IorTarget, default_fidelity: Fidelity = "flow") -> None:
        self.system = system
        self.default_fidelity: Fidelity = default_fidelity
        self.datasets: dict[str, np.ndarray[Any, np.dtype[np.float64]]] = {}

    # .................................................................. public
    def run(self, phase: IorPhase) -> PhaseResult:
        """Run all repetitions of ``phase`` and return IOR's numbers."""
        fidelity = phase.fidelity or self.default_fidelity
        reps: list[RepetitionResult] = []
        sim = self.system.sim
        start = sim.now
        for rep in range(phase.repetitions):
            self.system.ior_prepare(phase, rep)
            limits = self._limits(phase)
            if fidelity == "flow":
                reps.append(self._run_flow(phase, limits))
            else:
                reps.append(self._run_request(phase, limits))
        if phase.operation == "write" and phase.dataset is not None:
            self.datasets[phase.dataset] = reps[-1].rank_bytes_B.copy()
        return self._result(phase, reps, sim.now - start, fidelity)

    # ................................................................ helpers
    def _limits(self, phase: IorPhase) -> np.ndarray[Any, np.dtype[np.float64]]:
        """Most bytes each rank can move in this phase."""
        full = np.full(phase.ranks, phase.bytes_per_rank_B)
        if phase.operation == "read" and phase.dataset is not None:
            sizes = self.datasets.get(phase.dataset)
            if sizes is None:
                raise ValueError(
                    f"phase {phase.name!r}: dataset {phase.dataset!r} was not written "
                    "by an earlier phase"
                )
            files = np.array([sizes[phase.file_of(r) % sizes.size] for r in range(phase.ranks)])
            t = float(phase.transfer_size)
            limited: np.ndarray[Any, np.dtype[np.float64]] = np.minimum(
                full, np.floor(files / t + 1e-9) * t
            )
            return limited
        return full

    def _run_flow(
        self, phase: IorPhase, limits: np.ndarray[Any, np.dtype[np.float64]]
    ) -> RepetitionResult:
        sim = self.system.sim
        env = sim.env
        streams = self.system.ior_streams(phase)
        n = phase.ranks
        t0 = sim.now
        ahead = np.array([s.write_behind_B if phase.operation == "write" else 0.0 for s in streams])
        ahead = np.minimum(ahead, limits)
        app_B = limits - ahead  # server-side bytes before the application's last write
        rank_end = np.full(n, math.nan)
        drain_flows: list[Flow] = []
        timed_drain = phase.operation == "write" and (phase.fsync or phase.direct_io)

        def start(i: int, size: float, label: str) -> Flow | None:
            if size <= limits[i] * 1e-12:
                return None
            s = streams[i]
            flow = sim.flows.start_flow(
                size,
                s.path,
                rate_cap_Bps=s.rate_cap_Bps,
                op_size_B=s.op_size_B,
                name=f"{phase.name}.r{i}.{label}",
                cap_label=s.cap_label,
            )
            # Systems whose state follows each byte (a client page cache, a tiered
            # store) are told of every flow a rank starts.
            self.system.ior_flow_started(phase, i, label, flow)
            return flow

        flows: list[Flow | None] = [start(i, app_B[i], "app") for i in range(n)]
        pending = [f.done for f in flows if f is not None]
        counts = limits.copy()
        if phase.stonewall > 0 and pending:
            deadline = env.timeout(phase.stonewall)
            sim.run(env.any_of([env.all_of(pending), deadline]))
            if not all(ev.triggered for ev in pending):
                moved = np.array(
                    [
                        app_B[i] if f is None or f.done.triggered else f.size_B - f.remaining_B
                        for i, f in enumerate(flows)
                    ]
                )
                issued = np.minimum(moved + ahead, limits)
                done_early = np.array([f is None or f.done.triggered for f in flows])
                counts = np.where(
                    done_early,
                    limits,
                    stonewall_bytes(issued, phase.transfer_size, limits, False),
                )
                if phase.wear_out:
                    counts = wear_out_bytes(counts, limits)
                for i, f in enumerate(flows):
                    if f is None or f.done.triggered:
                        continue
                    already = sim.flows.cancel_flow(f)
                    rest_ahead = min(ahead[i], counts[i] - already)
                    ahead[i] = max(rest_ahead, 0.0)
                    flows[i] = start(i, counts[i] - already - ahead[i], "app2")
                pending = [f.done for f in flows if f is not None]

        def rank_proc(i: int) -> Generator[simpy.Event, Any, None]:
            f = flows[i]
            if f is not None and not f.done.triggered:
                yield f.done
            rank_end[i] = env.now
            drain = start(i, ahead[i], "drain")
            if drain is not None:
                drain_flows.append(drain)
                yield drain.done
                if timed_drain:
                    rank_end[i] = env.now
            if phase.operation == "write" and phase.fsync:
                synced = self.system.ior_fsync(phase, i)
                if synced is not None:
                    yield synced
                    rank_end[i] = env.now

        procs = [env.process(rank_proc(i)) for i in range(n)]
        sim.run(env.all_of(procs))
        return RepetitionResult(
            transfer_size_B=phase.transfer_size,
            rank_bytes_B=counts,
            rank_times_s=rank_end - t0,
            simulated_s=sim.now - t0,
        )

    def _run_request(
        self, phase: IorPhase, limits: np.ndarray[Any, np.dtype[np.float64]]
    ) -> RepetitionResult:
        sim = self.system.sim
        env = sim.env
        streams = self.system.ior_streams(phase)
        n = phase.ranks
        t0 = sim.now
        interval = phase.sample_interval_requests
        control = RunLengthControl(
            target_rel_halfwidth=phase.target_rel_halfwidth,
            min_samples=MIN_SAMPLES_FOR_BATCHES,
            max_samples=max(40, phase.max_requests // interval),
        )
        ops_left = [int(limits[i] // streams[i].op_size_B) for i in range(n)]
        deadline = t0 + phase.stonewall if phase.stonewall > 0 else math.inf

        def keep_going(i: int) -> bool:
            if ops_left[i] <= 0 or env.now >= deadline:
                return False
            ops_left[i] -= 1
            return True

        def request(i: int) -> Request:
            return self.system.ior_request(phase, i, streams[i])

        customers = [i for i in range(n) for _ in range(max(1, streams[i].concurrency))]
        loop = run_closed_loop(
            sim, request, customers, control, interval, keep_going=keep_going, drain=True
        )
        simulated = loop.elapsed_s
        op_B = float(np.mean([s.op_size_B for s in streams]))
        rate_ops = loop.ops_per_s
        ci = loop.rel_halfwidth
        rate_Bps = rate_ops * op_B
        total_limit = float(limits.sum())
        window = phase.stonewall if phase.stonewall > 0 else total_limit / rate_Bps
        window = min(window, total_limit / rate_Bps)
        moved = rate_Bps * window
        counts = np.full(n, moved / n)
        if phase.wear_out:
            counts = wear_out_bytes(counts, limits)
        steady = loop.responses_s
        return RepetitionResult(
            mean_response_s=float(steady.mean()) if steady.size else math.nan,
            p99_response_s=float(np.percentile(steady, 99)) if steady.size else math.nan,
            transfer_size_B=phase.transfer_size,
            rank_bytes_B=counts,
            rank_times_s=np.full(n, float(counts.sum()) / rate_Bps),
            ci_rel_halfwidth=ci,
            simulated_s=simulated,
        )

    def _result(
        self, phase: IorPhase, reps: list[RepetitionResult], sim_time_s: float, fidelity: str
    ) -> PhaseResult:
        bws = [r.bandwidth_Bps for r in reps]
        best = int(np.argmax(bws))
        mean_bw = float(np.mean(bws))
        mean_iops = float(np.mean([r.iops for r in reps]))
        cis = [r.ci_rel_halfwidth for r in reps if r.ci_rel_halfwidth is not None]
        # Request fidelity: per-operation latency (issue to completion) in steady state.
        timed = math.isfinite(reps[-1].mean_response_s)
        peaks = self.system.ior_peaks(phase)
        peak_bw = peaks.get("bandwidth_Bps")
        peak_iops = peaks.get("iops")
        extra = IorDetails(
            repetitions=[r.summary() for r in reps],
            block_size_B=phase.block_size,
            segments=phase.segments,
            file_per_process=phase.file_per_process,
            tasks_per_node=phase.ranks_per_node,
            nodes=phase.nodes,
            stonewall_s=phase.stonewall,
            wear_out=phase.wear_out,
            fsync=phase.fsync,
            direct_io=phase.direct_io,
            access=phase.access,
            reorder_tasks=phase.reorder_tasks,
            task_per_node_offset=phase.task_per_node_offset,
            fidelity=fidelity,
            bw_max_Bps=max(bws),
            bw_min_Bps=min(bws),
            t_max_s=reps[best].time_s,
            b_max_B=float(reps[best].rank_bytes_B.max()),
            simulated_s=float(sum(r.simulated_s for r in reps)),
            mean_response_s=reps[-1].mean_response_s if timed else None,
            p99_response_s=reps[-1].p99_response_s if timed else None,
            bandwidth_efficiency=mean_bw / peak_bw if peak_bw else None,
            iops_efficiency=mean_iops / peak_iops
            if peak_iops and math.isfinite(peak_iops)
            else None,
        )
        return PhaseResult(
            name=phase.name,
            operation=phase.operation,
            bandwidth_Bps=mean_bw,
            iops=mean_iops,
            ranks=phase.ranks,
            transfer_size_B=phase.transfer_size,
            sim_time_s=sim_time_s,
            bytes_B=float(sum(r.bytes_B for r in reps)),
            ci_rel_halfwidth=max(cis) if cis else None,
            extra=extra,
            fidelity=fidelity,
        )
