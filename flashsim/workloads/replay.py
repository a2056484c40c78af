"""Run jobs' calls on a system: every rank in order, with its think time, in either fidelity.

The engine under Darshan replay (:mod:`flashsim.workloads.darshan`), many
jobs at once (:mod:`flashsim.workloads.jobs`) and production mixes
(:mod:`flashsim.workloads.mix_phase`).  A job is a
:class:`~flashsim.workloads.trace.JobTrace` placed on client nodes
(:class:`PlacedJob`); each of its ranks issues its calls in order, waiting
before each the computation the trace recorded between it and the previous
call (``speedup = "none"``) or not at all (``"io-only"``).  In request
fidelity a rank is a SimPy process; in flow fidelity it is a state machine
of callbacks that takes the same steps at the same points of the event
order without a process, and a call woken by its own think time with nothing
else due starts and waits for its flow without an event of its own
(:meth:`~flashsim.engine.flows.FlowNetwork.nothing_else_due`): a
500k-call replay's per-call cost.

How a call crosses the system is the system's own IOR physics: a system
implements :class:`JobTarget`, whose :meth:`JobTarget.job_stream` returns
the :class:`~flashsim.workloads.ior.RankStream` (flow path, the rank's rate
cap ``q t / L``, server operation size) of one *kind* of call
(:class:`Access`: node, file, direction, call size, sequential or not) — on
Lustre the same method IOR's streams are built with.  So a call of ``t``
bytes that the client keeps ``q`` operations of round trip ``L`` in flight
for takes ``t / min(q t / L, fair share)``: a small synchronous call costs
its round trip, a large one its share of the bottleneck.

Flow fidelity moves each call as a flow.  With ``merge`` (the default) a
rank's consecutive calls to the same counter record, in the same
direction, each starting where the previous ended and separated by at most
``merge_gap_s`` of computation, move as one flow (their small gaps are
waited before it, so no computation is lost): a checkpoint of 10^4
contiguous 1 MiB writes costs one flow, not 10^4.  Request fidelity runs
every call's server operations of ``op_size_B`` through the system's queues
(:meth:`JobTarget.job_request`), ``concurrency`` at a time; calls smaller
than a server operation are gathered as the client gathers buffered
sequential I/O (a write waits when an operation has filled, a read when
the read-ahead has run out).

Client caches: a read of regions the rank's node alone wrote earlier in the
job is served from its page cache (:func:`cached_reads`: no server I/O);
a buffered write returns once its bytes fit in the rank's share of the
client's dirty-page budget (the stream's ``write_behind_B``), a larger one
once all but that budget has reached the servers (IOR's write-behind; flow
fidelity), or once a whole server operation has filled (request fidelity),
and the rest drains in the background: a rank's time ends with its last
call, as Lustre's ``close()`` does not flush (its write-back still loads the
servers until it has drained, and the run lasts until then).  A stdio call
(Darshan's STDIO module) is buffered in user space: its size class is at
least the stdio buffer (:data:`DEFAULT_STRIPE_B`).

A rank's client side (its node, NIC and the OSC windows of its first call's
file) is built when the run starts, not at its first call, so that a
resource's utilisation is measured over the whole run (a 151 B job whose
NIC appeared at its only call would have saturated it for nanoseconds).

What is not modelled: metadata calls (open, stat, close) take no simulated
time here; a call's time starts when its rank issues it, whatever the other
ranks do (no MPI collectives); read-ahead across calls in flow fidelity
beyond what the rank's rate cap carries.
"""

from __future__ import annotations

import gc
import math
from collections import deque
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from functools import cached_property, partial
from typing import Annotated, Any, Literal, Protocol

import numpy as np
import simpy
from pydantic import Field
from simpy.events import Initialize

from flashsim.config import NonNegativeSeconds
from flashsim.engine.flows import Flow
from flashsim.engine.simulation import Simulation
from flashsim.workloads.ior import RankStream
from flashsim.workloads.trace import BoolArray, FloatArray, IntArray, JobTrace, TraceFile

Speedup = Literal["none", "io-only"]

#: Phase keys every workload run by the engine takes (``darshan``, ``jobs``, ``mix``).
MergeCalls = Annotated[
    bool, Field(description="Flow fidelity: move a rank's contiguous calls as one transfer.")
]
MergeGap = Annotated[
    NonNegativeSeconds,
    Field(description="Most computation between two recorded calls that are still merged."),
]
FidelityOverride = Annotated[
    Literal["flow", "request"] | None,
    Field(description="Override the scenario's fidelity for this phase."),
]

#: Call sizes are grouped into classes 2^(1/4) apart (19 %) to share paths and caps.
CLASSES_PER_OCTAVE = 4

#: During a run, the cyclic collector's youngest generation is collected after this many
#: new objects (CPython's default is 700), see :func:`_heap_frozen`.
YOUNG_OBJECTS = 20000

#: A file's stripe size when the trace does not record it: Lustre's default, 1 MiB.  It is
#: the region whose writes from different nodes share a lock (:func:`write_conflicts`), and
#: the buffer a stdio stream fills before it writes: glibc sizes it by ``st_blksize``, which
#: Lustre reports as the stripe size (ASSUMED for files on other file systems too).
DEFAULT_STRIPE_B = 1024.0 * 1024.0


@dataclass(frozen=True)
class Access:
    """One kind of call of one rank: everything its path and caps depend on.

    Attributes
    ----------
    node : int
        Client node index (system-wide).
    ranks_on_node : int
        Ranks of the job on that node (they share its client).
    file_key : str
        The file, unique in the run (job name and file index): placement is a
        function of it.
    file : TraceFile
        Its layout hints (Lustre striping) and file system.
    write : bool
        Direction.
    transfer_B : float
        Bytes per call (the size class's representative), bytes.
    sequential : bool
        The call starts where the rank's previous call on the file ended.
    direct_io : bool
        ``O_DIRECT`` (no client cache).
    job_ranks : int
        Ranks of the job (they share the servers' queues).
    write_conflict : float
        Chance that a write of the job to this file lands in a region
        (:data:`DEFAULT_STRIPE_B`, or the file's recorded stripe size) that the
        job also writes from another client node, weighted as ``1 - 1/k`` for
        ``k`` writing nodes (:func:`write_conflicts`): what a file system
        with byte-range locks charges hand-offs for.
    """

    node: int
    ranks_on_node: int
    file_key: str
    file: TraceFile
    write: bool
    transfer_B: float
    sequential: bool
    direct_io: bool = False
    job_ranks: int = 1
    write_conflict: float = 0.0

    @cached_property
    def _hash(self) -> int:
        # The hash dataclass would compute (of the fields in order), once: a replay looks
        # an access up on every call, and the file's layout makes it dear to rehash.
        return hash(tuple(getattr(self, f.name) for f in fields(self)))

    def __hash__(self) -> int:
        return self._hash


class JobTarget(Protocol):
    """What a system provides so that jobs' calls can run on it."""

    sim: Simulation

    def job_client_nodes(self) -> int:
        """Client nodes jobs may be placed on."""
        ...

    def job_begin(self) -> None:
        """Forget paths built for earlier runs (the system's state may have changed)."""
        ...

    def job_stream(self, access: Access) -> RankStream:
        """The flow path, rate cap and server operation size of one kind of call."""
        ...

    def job_request(self, access: Access, stream: RankStream) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: one server operation of ``stream.op_size_B`` bytes."""
        ...

    def job_flow_started(self, access: Access, flow: Flow) -> None:
        """Flow fidelity: a call of kind ``access`` started ``flow`` (state that follows bytes)."""
        ...


class JobTargetDefaults:
    """No-op defaults of the optional :class:`JobTarget` hooks."""

    def job_begin(self) -> None:
        """Nothing to forget."""
        return None

    def job_flow_started(self, access: Access, flow: Flow) -> None:
        """Do nothing: the system keeps no per-byte state of its own."""
        return None


@dataclass(frozen=True)
class PlacedJob:
    """A job on client nodes, starting at a time.

    Attributes
    ----------
    name : str
        Job name, unique in the phase.
    trace : JobTrace
        Its calls.
    first_node : int
        First client node; rank ``r`` runs on ``first_node + r // ranks_per_node``
        (modulo the system's client nodes).
    ranks_per_node : int
        Ranks per client node.
    start_s : float
        Seconds after the phase starts at which the job starts.
    direct_io : bool
        Calls bypass the client cache.
    fsync : bool
        Each rank ends by flushing its write-back (IOR's ``-e``): its time
        includes the drain.
    """

    name: str
    trace: JobTrace
    first_node: int = 0
    ranks_per_node: int = 1
    start_s: float = 0.0
    direct_io: bool = False
    fsync: bool = False

    @property
    def nodes(self) -> int:
        """Client nodes the job occupies."""
        return -(-self.trace.nprocs // self.ranks_per_node)

    def node_of(self, rank: int, client_nodes: int) -> int:
        """Client node of ``rank``."""
        return int(self.nodes_of(np.array([rank]), client_nodes)[0])

    def nodes_of(self, ranks: IntArray, client_nodes: int) -> IntArray:
        """Client node of each of ``ranks``."""
        nodes: IntArray = (self.first_node + ranks // self.ranks_per_node) % client_nodes
        return nodes


@dataclass(frozen=True)
class Transfers:
    """A job's calls grouped into the transfers the simulation moves, ordered by rank.

    Attributes
    ----------
    rank, file, record : numpy.ndarray of int
        Per transfer, as in :class:`~flashsim.workloads.trace.OpTable`.
    write, sequential : numpy.ndarray of bool
        Direction; whether the first call continues the rank's previous call on the file.
    size_B : numpy.ndarray of float
        Bytes moved (sum of the calls').
    calls : numpy.ndarray of int
        Calls merged into the transfer.
    gap_s : numpy.ndarray of float
        Computation (s) the rank does before issuing it.
    cached : numpy.ndarray of bool
        Reads served from the client's page cache (no server I/O, no time).
    """

    rank: IntArray
    file: IntArray
    record: IntArray
    write: BoolArray
    sequential: BoolArray
    size_B: FloatArray
    calls: IntArray
    gap_s: FloatArray
    cached: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def __len__(self) -> int:
        return int(self.rank.size)


def group_calls(
    trace: JobTrace,
    merge: bool,
    merge_gap_s: float,
    speedup: Speedup,
    cached: BoolArray | None = None,
) -> Transfers:
    """Group a trace's calls into transfers (see the module docstring).

    Parameters
    ----------
    trace : JobTrace
        The job.
    merge : bool
        Merge contiguous calls (flow fidelity).
    merge_gap_s : float
        Most computation between two calls that are still merged, seconds;
        calls whose times were drawn rather than recorded (``trace.timing``
        is not ``"dxt"``) merge whatever their gaps.
    speedup : {"none", "io-only"}
        ``io-only`` drops all computation between calls.
    cached : numpy.ndarray of bool, optional
        Per call, a read the client's page cache serves (:func:`cached_reads`).
    """
    ops = trace.ops
    n = len(ops)
    hit = np.zeros(n, dtype=bool) if cached is None else cached
    if n == 0:
        i0 = np.zeros(0, dtype=np.int64)
        f0 = np.zeros(0)
        b0 = np.zeros(0, dtype=bool)
        return Transfers(i0, i0, i0, b0, b0, f0, i0, f0, b0)
    new_rank = np.ones(n, dtype=bool)
    new_rank[1:] = ops.rank[1:] != ops.rank[:-1]
    prev_end = np.empty(n)
    prev_end[0] = 0.0
    prev_end[1:] = ops.end_s[:-1]
    prev_end[new_rank] = 0.0  # a rank's first call waits from the job's start
    gap = np.maximum(ops.start_s - prev_end, 0.0)
    if speedup == "io-only":
        gap[:] = 0.0
    sequential = _sequential(ops.rank, ops.file, ops.offset_B, ops.size_B)
    if trace.timing != "dxt":
        # drawn calls' gaps are not measurements: a run merges whatever its gaps (they are
        # all waited before it, so the rank's computation time is kept)
        merge_gap_s = math.inf
    if merge:
        same = np.zeros(n, dtype=bool)
        same[1:] = (
            ~new_rank[1:]
            & (ops.record[1:] == ops.record[:-1])
            & (ops.write[1:] == ops.write[:-1])
            & (ops.offset_B[1:] == ops.offset_B[:-1] + ops.size_B[:-1])
            & (gap[1:] <= merge_gap_s)
            & (hit[1:] == hit[:-1])
        )
    else:
        same = np.zeros(n, dtype=bool)
    starts = np.flatnonzero(~same)
    group = np.cumsum(~same) - 1
    size: FloatArray = np.bincount(group, weights=ops.size_B).astype(np.float64)
    calls = np.bincount(group).astype(np.int64)
    waited: FloatArray = np.bincount(group, weights=gap).astype(
        np.float64
    )  # merged gaps are waited before the transfer
    return Transfers(
        rank=ops.rank[starts],
        file=ops.file[starts],
        record=ops.record[starts],
        write=ops.write[starts],
        sequential=sequential[starts],
        size_B=size,
        calls=calls,
        gap_s=waited,
        cached=hit[starts],
    )


def cached_reads(job: PlacedJob, client_nodes: int) -> BoolArray:
    """Per call of ``job``, whether it is a read the client's page cache serves.

    A read hits when the node that issues it wrote the regions it reads
    (first and last; :data:`DEFAULT_STRIPE_B`, or the file's stripe size)
    earlier in the job, and no other node of the job wrote them (another
    node's write would have taken the lock and invalidated the pages).  The
    cache's capacity is not limited: a node keeps what it wrote.
    """
    ops = job.trace.ops
    n = len(ops)
    out = np.zeros(n, dtype=bool)
    w = ops.write
    reads = ~w & (ops.size_B > 0)
    if not w.any() or not reads.any():
        return out
    region_B = region_sizes_B(job.trace.files)
    node = job.nodes_of(ops.rank, client_nodes)
    scale = float(2**40)

    def key(offset: FloatArray) -> FloatArray:
        out_key = ops.file * scale + np.floor(offset / region_B[ops.file])
        return np.asarray(out_key, dtype=np.float64)

    first = key(ops.offset_B)
    last = key(ops.offset_B + np.maximum(ops.size_B - 1, 0))
    wk = np.concatenate([first[w], last[w]])
    wn = np.concatenate([node[w], node[w]])
    ws = np.concatenate([ops.start_s[w], ops.start_s[w]])
    keys, inv = np.unique(wk, return_inverse=True)
    inv = inv.ravel()
    lo_node = np.full(keys.size, np.iinfo(np.int64).max)
    hi_node = np.full(keys.size, -1)
    first_write = np.full(keys.size, np.inf)
    np.minimum.at(lo_node, inv, wn)
    np.maximum.at(hi_node, inv, wn)
    np.minimum.at(first_write, inv, ws)

    def served(k: FloatArray) -> BoolArray:
        at = np.clip(np.searchsorted(keys, k), 0, keys.size - 1)
        mine = node[reads]
        hit: BoolArray = (
            (keys[at] == k)
            & (lo_node[at] == mine)
            & (hi_node[at] == mine)
            & (first_write[at] < ops.start_s[reads])
        )
        return hit

    out[reads] = served(first[reads]) & served(last[reads])
    return out


def _sequential(rank: IntArray, file: IntArray, offset: FloatArray, size: FloatArray) -> BoolArray:
    """Whether each call starts where the same rank's previous call on the same file ended.

    A rank's first call on a file is sequential when it starts at offset 0.
    """
    n = rank.size
    order = np.lexsort((np.arange(n), file, rank))  # stable: by rank, file, then issue order
    r, f, o, s = rank[order], file[order], offset[order], size[order]
    seq = np.empty(n, dtype=bool)
    first = np.ones(n, dtype=bool)
    first[1:] = (r[1:] != r[:-1]) | (f[1:] != f[:-1])
    seq[first] = o[first] == 0
    rest = ~first
    rest_idx = np.flatnonzero(rest)
    seq[rest_idx] = o[rest_idx] == o[rest_idx - 1] + s[rest_idx - 1]
    out = np.empty(n, dtype=bool)
    out[order] = seq
    return out


def size_class_B(size_B: float) -> float:
    """The representative call size of ``size_B``'s class (at least 1 byte)."""
    if size_B <= 1.0:
        return 1.0
    k = round(math.log2(size_B) * CLASSES_PER_OCTAVE)
    return float(2.0 ** (k / CLASSES_PER_OCTAVE))


@dataclass
class JobTimes:
    """What one job's run measured, per transfer (seconds of simulated time).

    Attributes
    ----------
    job : PlacedJob
        The job.
    transfers : Transfers
        Its transfers.
    start_s, end_s : numpy.ndarray of float
        When each transfer was issued and when its call returned, seconds since the
        phase started.
    server_end_s : numpy.ndarray of float
        When its bytes had crossed the servers (after a buffered write's
        write-back; NaN for reads the page cache served), seconds.
    rank_end_s : numpy.ndarray of float
        When each rank finished its last call (NaN for a rank without calls).
    write_conflict : numpy.ndarray of float
        Per file of the trace, :attr:`Access.write_conflict`.
    stdio : numpy.ndarray of bool
        Per counter record, whether it counts stdio (``STDIO``) calls.
    """

    job: PlacedJob
    transfers: Transfers
    start_s: FloatArray
    end_s: FloatArray
    rank_end_s: FloatArray
    server_end_s: FloatArray = field(default_factory=lambda: np.zeros(0))
    write_conflict: FloatArray = field(default_factory=lambda: np.zeros(0))
    stdio: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    @property
    def io_time_s(self) -> FloatArray:
        """Per transfer, the time its calls took (end - start), seconds."""
        return self.end_s - self.start_s

    @property
    def makespan_s(self) -> float:
        """From the job's start to its last rank's last call, seconds."""
        ends = self.rank_end_s[np.isfinite(self.rank_end_s)]
        return float(ends.max() - self.job.start_s) if ends.size else 0.0


class JobEngine:
    """Runs placed jobs together on one system, in one simulation.

    Parameters
    ----------
    system : JobTarget
        The built system.
    fidelity : {"flow", "request"}
        ``flow``: calls (or merged runs of them) as flows; ``request``: every
        server operation through the queues.
    speedup : {"none", "io-only"}
        Keep the computation between calls, or drop it.
    merge : bool
        Flow fidelity: merge contiguous calls (ignored in request fidelity).
    merge_gap_s : float
        Most computation between merged calls, seconds.
    """

    def __init__(
        self,
        system: JobTarget,
        fidelity: Literal["flow", "request"],
        speedup: Speedup = "none",
        merge: bool = True,
        merge_gap_s: float = 1e-3,
    ) -> None:
        self.system = system
        self.fidelity = fidelity
        self.speedup: Speedup = speedup
        self.merge = merge and fidelity == "flow"
        self.merge_gap_s = merge_gap_s
        self._streams: dict[Access, RankStream] = {}
        # One object per distinct access, so that the maps a system keys by it (its stream,
        # its context) find it by identity on every call, not by the fields' __eq__.
        self._accesses: dict[Access, Access] = {}

    def run(
        self, jobs: list[PlacedJob], on_done: Callable[[int], None] | None = None
    ) -> list[JobTimes]:
        """Run ``jobs`` together from the simulation's present time; return their times.

        ``on_done(i)`` is called when every rank of ``jobs[i]`` has ended (for reports of
        what limited each interval; it must not change the run).
        """
        with _heap_frozen():
            return self._run(jobs, on_done)

    def _run(self, jobs: list[PlacedJob], on_done: Callable[[int], None] | None) -> list[JobTimes]:
        """:meth:`run`, with the heap that existed before it frozen."""
        sim = self.system.sim
        env = sim.env
        t0 = sim.now
        client_nodes = self.system.job_client_nodes()
        self.system.job_begin()
        self._streams = {}
        self._accesses = {}
        outcomes: list[JobTimes] = []
        procs: list[simpy.Event] = []
        for index, job in enumerate(jobs):
            first_proc = len(procs)
            transfers = group_calls(
                job.trace,
                self.merge,
                self.merge_gap_s,
                self.speedup,
                cached_reads(job, client_nodes),
            )
            m = len(transfers)
            times = JobTimes(
                job=job,
                transfers=transfers,
                start_s=np.full(m, math.nan),
                end_s=np.full(m, math.nan),
                rank_end_s=np.full(job.trace.nprocs, math.nan),
                server_end_s=np.full(m, math.nan),
                write_conflict=write_conflicts(job, client_nodes),
                stdio=(job.trace.records["module"] == "STDIO").to_numpy(dtype=bool),
            )
            outcomes.append(times)
            bounds = np.searchsorted(transfers.rank, np.arange(job.trace.nprocs + 1))
            moving = (transfers.size_B > 0) & ~transfers.cached
            for rank in range(job.trace.nprocs):
                lo, hi = int(bounds[rank]), int(bounds[rank + 1])
                if hi > lo:
                    node = job.node_of(rank, client_nodes)
                    first = lo + int(np.argmax(moving[lo:hi]))
                    if moving[first]:
                        # the rank's client side (node, NIC, OSC) exists from the start, not
                        # from its first call: its utilisation is over the whole run
                        self._stream(self._access(times, node, first))
                    if self.fidelity == "request":
                        procs.append(env.process(self._request_rank(times, rank, node, lo, hi, t0)))
                    else:
                        procs.append(_FlowRank(self, times, rank, node, lo, hi, t0).done)
            if on_done is not None and len(procs) > first_proc:
                env.process(_when_done(env, procs[first_proc:], index, on_done))
        if procs:
            sim.run(env.all_of(procs))
        return outcomes

    def write_behind_B(self) -> float:
        """The largest dirty-page budget (bytes) a rank's buffered writes had in the last run.

        0 when no call was a buffered write.
        """
        return max((s.write_behind_B for a, s in self._streams.items() if a.write), default=0.0)

    def _access(self, times: JobTimes, node: int, k: int) -> Access:
        """The access of transfer ``k`` from ``node``: one object per distinct access in a
        run (``_accesses``)."""
        job = times.job
        tr = times.transfers
        calls = max(int(tr.calls[k]), 1)
        f = int(tr.file[k])
        call_B = float(tr.size_B[k]) / calls
        if times.stdio[int(tr.record[k])]:
            # stdio buffers a stream's calls in user space and writes (or reads) whole
            # buffers of st_blksize, which Lustre reports as the stripe size
            call_B = max(call_B, float(region_sizes_B(job.trace.files[f : f + 1])[0]))
        access = Access(
            node=node,
            ranks_on_node=min(job.ranks_per_node, job.trace.nprocs),
            file_key=f"{job.name}/{f}",
            file=job.trace.files[f],
            write=bool(tr.write[k]),
            transfer_B=size_class_B(call_B),
            sequential=bool(tr.sequential[k]),
            direct_io=job.direct_io,
            job_ranks=job.trace.nprocs,
            write_conflict=float(times.write_conflict[f]),
        )
        return self._accesses.setdefault(access, access)

    def _stream(self, access: Access) -> RankStream:
        stream = self._streams.get(access)
        if stream is None:
            stream = self.system.job_stream(access)
            self._streams[access] = stream
        return stream

    def _calls_of(self, times: JobTimes, lo: int, hi: int) -> _RankCalls:
        """What a rank's calls ``lo .. hi-1`` need per call, as Python scalars (read once)."""
        tr = times.transfers
        size_B = tr.size_B[lo:hi].tolist()
        kinds = list(
            zip(
                tr.file[lo:hi].tolist(),
                tr.record[lo:hi].tolist(),
                tr.write[lo:hi].tolist(),
                tr.sequential[lo:hi].tolist(),
                tr.calls[lo:hi].tolist(),
                size_B,
                strict=True,
            )
        )
        return tr.gap_s[lo:hi].tolist(), size_B, tr.cached[lo:hi].tolist(), kinds

    def _kind(
        self,
        times: JobTimes,
        node: int,
        k: int,
        kind: tuple[Any, ...],
        paths: dict[tuple[Any, ...], tuple[Access, RankStream]],
    ) -> tuple[Access, RankStream]:
        """The access and stream of transfer ``k`` (``kind``: its :meth:`_calls_of` entry)."""
        found = paths.get(kind)
        if found is None:
            access = self._access(times, node, k)
            found = paths[kind] = (access, self._stream(access))
        return found

    def _request_rank(
        self, times: JobTimes, rank: int, node: int, lo: int, hi: int, t0: float
    ) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: one rank's calls, each as its server operations."""
        env = self.system.sim.env
        #: Per kind of call whose server operations are larger than the calls (buffered
        #: sequential I/O): bytes written but not yet sent (write-back), or read ahead but
        #: not yet consumed (read-ahead).
        cache_B: dict[Access, float] = {}
        gap_s, size_B, cached, kinds = self._calls_of(times, lo, hi)
        paths: dict[tuple[Any, ...], tuple[Access, RankStream]] = {}
        if times.job.start_s > 0:
            yield env.timeout(times.job.start_s)
        for k in range(lo, hi):
            i = k - lo
            if gap_s[i] > 0:
                yield env.timeout(gap_s[i])
            times.start_s[k] = env.now - t0
            size = size_B[i]
            if size > 0 and not cached[i]:
                access, stream = self._kind(times, node, k, kinds[i], paths)
                ops = self._operations(access, stream, size, cache_B)
                if ops:
                    yield from self._requests(access, stream, ops)
            times.end_s[k] = env.now - t0
            times.server_end_s[k] = times.end_s[k]
        # the rank's time ends with its last call (close() does not flush a Lustre client's
        # cache) unless the job fsyncs
        if not times.job.fsync:
            times.rank_end_s[rank] = env.now - t0
        for access, pending in cache_B.items():
            if access.write and pending > 0:  # the last partial write-back operation
                yield from self._requests(access, self._stream(access), 1)
        if times.job.fsync:
            times.rank_end_s[rank] = env.now - t0

    def _start(
        self,
        times: JobTimes,
        rank: int,
        k: int,
        t0: float,
        access: Access,
        stream: RankStream,
        size_B: float,
        at_once: bool = False,
        lazy_done: bool = False,
    ) -> Flow:
        """Start ``size_B`` bytes of transfer ``k`` as a flow on ``stream``'s path.

        ``at_once``: solve it now, after the system's hook, rather than by the
        network's zero-delay event (see :meth:`FlowNetwork.nothing_else_due`);
        ``lazy_done``: the caller waits by :meth:`FlowNetwork.when_done`.
        """
        flows = self.system.sim.flows
        flow = flows.start_flow(
            size_B,
            stream.path,
            rate_cap_Bps=stream.rate_cap_Bps,
            op_size_B=stream.op_size_B,
            cap_label=stream.cap_label,
            name=f"{times.job.name}.r{rank}.{k}",
            defer=not at_once,
            lazy_done=lazy_done,
        )
        self.system.job_flow_started(access, flow)
        if at_once:
            flows.solve_now()
        return flow

    @staticmethod
    def _operations(
        access: Access, stream: RankStream, size_B: float, cache_B: dict[Access, float]
    ) -> int:
        """Server operations a call of ``size_B`` bytes waits for (request fidelity).

        Calls at least as large as the server operation send their own
        (``ceil(size / op_size)``); smaller ones are gathered as the client
        does for buffered sequential I/O: a write waits only when a whole
        operation has filled, a read only when the read-ahead has run out.
        """
        op_B = stream.op_size_B
        if size_B >= op_B * (1 - 1e-12):
            return max(1, math.ceil(size_B / op_B - 1e-9))
        have = cache_B.get(access, 0.0)
        if access.write:
            have += size_B
            ops = int(have // op_B)
            cache_B[access] = have - ops * op_B
            return ops
        ops = max(0, math.ceil((size_B - have) / op_B - 1e-9))
        cache_B[access] = have + ops * op_B - size_B
        return ops

    def _requests(
        self, access: Access, stream: RankStream, ops: int
    ) -> Generator[simpy.Event, Any, None]:
        """``ops`` server operations, ``concurrency`` of them in flight."""
        env = self.system.sim.env
        width = max(1, min(stream.concurrency, ops))
        left = [ops]

        def worker() -> Generator[simpy.Event, Any, None]:
            while left[0] > 0:
                left[0] -= 1
                yield from self.system.job_request(access, stream)

        yield env.all_of([env.process(worker()) for _ in range(width)])


#: Per call of a rank: computation before it (s), bytes, page-cache hit, and its kind key.
_RankCalls = tuple[list[float], list[float], list[bool], list[tuple[Any, ...]]]

# _FlowRank's stages: wait the computation before call i; issue it; wait for the dirty
# budget (a buffered write); wait for the head of its bytes; after the last call.
_GAP, _ISSUE, _DRAIN, _HEAD, _LAST = range(5)


class _FlowRank:
    """Flow fidelity: one rank's calls, as SimPy callbacks rather than a process.

    It takes the steps a process running the calls would take (see the module
    docstring: think time, write-back, the rank's end), at the same points of
    the event order: it starts on an urgent initialisation event as a process
    does, waits by adding itself to the callbacks of the event it waits for,
    and ends by triggering :attr:`done` as a process triggers itself.  So a
    run is event for event the same, but a call resumes no generator and no
    :class:`simpy.Process` (a 500k-call replay's per-call cost).

    Parameters
    ----------
    engine : JobEngine
        The engine (system, streams).
    times : JobTimes
        The job's times, written per transfer.
    rank, node : int
        The rank, and its client node.
    lo, hi : int
        Its transfers, ``lo .. hi-1``.
    t0 : float
        Simulated time the phase started, seconds.
    """

    __slots__ = (
        "access",
        "behind_B",
        "budget_B",
        "cached",
        "dirty",
        "dirty_B",
        "done",
        "engine",
        "env",
        "flows",
        "gap_s",
        "i",
        "kinds",
        "last_found",
        "last_kind",
        "lo",
        "n",
        "node",
        "paths",
        "rank",
        "size_B",
        "sizes_B",
        "stage",
        "stream",
        "t0",
        "timed",
        "times",
        "waited_B",
    )

    def __init__(
        self, engine: JobEngine, times: JobTimes, rank: int, node: int, lo: int, hi: int, t0: float
    ) -> None:
        env = engine.system.sim.env
        self.engine = engine
        self.env = env
        self.flows = engine.system.sim.flows
        self.times = times
        self.rank = rank
        self.node = node
        self.lo = lo
        self.n = hi - lo
        self.t0 = t0
        self.gap_s, self.sizes_B, self.cached, self.kinds = engine._calls_of(times, lo, hi)
        self.paths: dict[tuple[Any, ...], tuple[Access, RankStream]] = {}
        # The kind of the last call issued and its access and stream (as found in paths).
        self.last_kind: tuple[Any, ...] | None = None
        self.last_found: tuple[Access, RankStream] | None = None
        #: Buffered writes still draining to the servers (write-back), oldest first, and
        #: their bytes.
        self.dirty: deque[tuple[Flow, float]] = deque()
        self.dirty_B = 0.0
        self.i = 0
        self.stage = _GAP
        # The call being issued: its access, stream, bytes, dirty budget and the part of
        # them left behind to drain; the bytes of the write-back flow waited for.
        self.access: Access | None = None
        self.stream: RankStream | None = None
        self.size_B = 0.0
        self.budget_B = 0.0
        self.behind_B = 0.0
        self.waited_B = 0.0
        #: Running from a timeout of its own (see _timed).
        self.timed = False
        #: Triggered when the rank has ended, as its process would be.
        self.done = simpy.Event(env)
        Initialize(env, self)  # type: ignore[arg-type]  # calls self._resume, urgently

    def _resume(self, _event: simpy.Event) -> None:
        """Start: wait for the job's start, then issue the calls."""
        start_s = self.times.job.start_s
        if start_s > 0:
            self.env.timeout(start_s).callbacks.append(self._timed)
            return
        self._run(_event)

    def _timed(self, event: simpy.Event) -> None:
        """Woken by a timeout of its own (a think time, the job's start): its only callback."""
        self.timed = True
        self._run(event)
        self.timed = False

    def _run(self, _event: simpy.Event | None) -> None:
        """Go on from the present stage until something must be waited for."""
        env = self.env
        times = self.times
        t0 = self.t0
        while True:
            stage = self.stage
            if stage == _GAP:
                i = self.i
                if i == self.n:
                    self._last()
                    return
                self.stage = _ISSUE
                gap = self.gap_s[i]
                if gap > 0:
                    simpy.Timeout(env, gap).callbacks.append(self._timed)  # as env.timeout(gap)
                    return
                continue
            i = self.i
            k = self.lo + i
            if stage == _ISSUE:
                times.start_s[k] = env.now - t0
                size = self.sizes_B[i]
                if not (size > 0 and not self.cached[i]):
                    times.end_s[k] = env.now - t0
                    self.i = i + 1
                    self.stage = _GAP
                    continue
                kind = self.kinds[i]
                found = self.last_found
                if found is None or kind != self.last_kind:  # (an equal kind: paths' entry)
                    found = self.engine._kind(times, self.node, k, kind, self.paths)
                    self.last_kind = kind
                    self.last_found = found
                access, stream = found
                self.access = access
                self.stream = stream
                self.size_B = size
                if not access.write:
                    # A read, as the steps below take it: no dirty budget (so nothing left
                    # behind, min(size, 0.0)), no write-back to wait for; all its bytes are
                    # the head.
                    self.budget_B = 0.0
                    self.behind_B = 0.0
                    self._start_head(k, access, stream, size)
                    return
                # write-back: a write waits only until its bytes fit in the dirty budget
                # (a read does not wait for the rank's write-back; it never gets here)
                self.budget_B = stream.write_behind_B
                self.stage = stage = _DRAIN
            elif stage == _DRAIN:  # woken by the oldest write-back's end
                self.dirty_B -= self.waited_B
            elif stage == _HEAD:  # woken by the head's end
                # its bytes have crossed the servers now (as _mark_server_end)
                times.server_end_s[k] = env.now - t0
            held_access, held_stream = self.access, self.stream
            assert held_access is not None and held_stream is not None
            access, stream = held_access, held_stream  # (typed Access, RankStream above)
            size = self.size_B
            if stage == _DRAIN:  # (a write's: reads start their head at _ISSUE)
                dirty = self.dirty
                while dirty and self.dirty_B + size > self.budget_B:
                    oldest, its_B = dirty.popleft()
                    if not oldest.done.triggered:
                        self.waited_B = its_B
                        oldest.done.callbacks.append(self._run)
                        return
                    self.dirty_B -= its_B
                # a write larger than the budget returns once all but the budget's worth
                # has reached the servers (IOR's write-behind); the rest drains
                self.behind_B = behind = min(size, self.budget_B)
                if size > behind:
                    self._start_head(k, access, stream, size - behind)
                    return
            behind = self.behind_B
            if behind > 0:
                tail = self.engine._start(times, self.rank, k, t0, access, stream, behind)
                tail.done.callbacks.append(partial(_mark_server_end, times, k, t0))
                self.dirty.append((tail, behind))
                self.dirty_B += behind
            times.end_s[k] = env.now - t0
            self.i = i + 1
            self.stage = _GAP

    def _start_head(self, k: int, access: Access, stream: RankStream, size_B: float) -> None:
        """Start the head (``size_B`` bytes, B) of transfer ``k`` and wait for its end.

        Woken by its own timeout, with nothing else due now, the rank's start is
        this instant's only change: solved at once (one event fewer).
        """
        at_once = self.timed and self.flows.nothing_else_due()
        head = self.engine._start(
            self.times, self.rank, k, self.t0, access, stream, size_B, at_once, True
        )
        self.stage = _HEAD
        self.flows.when_done(head, self._head_ended)

    def _head_ended(self, _flow: Flow) -> None:
        """The head of the call's bytes has crossed the servers."""
        if self.behind_B > 0:
            self._run(None)  # a tail to start
            return
        # Nothing left behind (a read): the call ends, and the next is issued or waited
        # for, as _run's steps from _HEAD to _GAP would take them.
        i = self.i
        k = self.lo + i
        times = self.times
        times.server_end_s[k] = times.end_s[k] = self.env.now - self.t0
        i += 1
        self.i = i
        if i == self.n:
            self.stage = _GAP
            self._last()
            return
        self.stage = _ISSUE
        gap = self.gap_s[i]
        if gap > 0:
            simpy.Timeout(self.env, gap).callbacks.append(self._timed)  # as env.timeout(gap)
            return
        self._run(None)

    def _last(self) -> None:
        """After the last call: the rank's end, once its write-back has drained if it fsyncs.

        The rank's time ends with its last call (close() does not flush a Lustre
        client's cache) unless the job fsyncs; write-back still drains, loading
        the servers, before the rank is done.
        """
        times = self.times
        if self.stage != _LAST:
            self.stage = _LAST
            if not times.job.fsync:
                times.rank_end_s[self.rank] = self.env.now - self.t0
        dirty = self.dirty
        while dirty:
            flow, _ = dirty.popleft()
            if not flow.done.triggered:
                flow.done.callbacks.append(self._drained)
                return
        if times.job.fsync:
            times.rank_end_s[self.rank] = self.env.now - self.t0
        self.done.succeed()

    def _drained(self, _event: simpy.Event) -> None:
        """A write-back flow the rank's end waited for has ended."""
        self._last()


@contextmanager
def _heap_frozen() -> Iterator[None]:
    """Keep the garbage collector's full scans off what existed before a run.

    A replay makes a few objects per call (a flow, its events, heap entries), so
    the cyclic collector runs often, and every so many runs it scans its oldest
    generation whole: the model's ~10^5 long-lived objects (resources, paths,
    classes) each time, 5-6 % of a 500k-call replay's CPU.  Frozen
    (:func:`gc.freeze`), they are left out of the scans until the run ends
    (:func:`gc.unfreeze` makes them collectable again), and the youngest
    generation is collected every :data:`YOUNG_OBJECTS` objects rather than 700
    (most of a call's objects are freed before a collection sees them); the run
    is unchanged.
    """
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_OBJECTS), middle, old)
    try:
        yield
    finally:
        gc.set_threshold(young, middle, old)
        gc.unfreeze()


def _mark_server_end(times: JobTimes, k: int, t0: float, event: simpy.Event) -> None:
    """Flow callback: transfer ``k``'s bytes have crossed the servers."""
    times.server_end_s[k] = float(event.env.now) - t0


def region_sizes_B(files: tuple[TraceFile, ...]) -> FloatArray:
    """Per file, the region whose writes share a lock (bytes): its stripe, or DEFAULT_STRIPE_B."""
    sizes: FloatArray = np.array([f.stripe_size_B or DEFAULT_STRIPE_B for f in files], dtype=float)
    return sizes


def write_conflicts(job: PlacedJob, client_nodes: int) -> FloatArray:
    """Per file of ``job``'s trace, the chance a write finds its region written from elsewhere.

    Each write call's region is ``offset // stripe`` (the file's recorded
    stripe size, else :data:`DEFAULT_STRIPE_B`); a region written by ranks of
    ``k`` client nodes counts ``1 - 1/k`` per write (the previous writer is
    any of them); the file's value is the mean over its writes.
    """
    ops = job.trace.ops
    files = job.trace.files
    out = np.zeros(len(files))
    w = ops.write
    if not w.any():
        return out
    region_B = region_sizes_B(files)
    file = ops.file[w]
    region = np.floor(ops.offset_B[w] / region_B[file]).astype(np.int64)
    node = job.nodes_of(ops.rank[w], client_nodes)
    # (file, region) and (region, node) pairs as single int64 keys: np.unique over 1-D keys
    # is ~25x faster than over stacked rows (axis=1), the same result
    if (int(region.max()) + 1) * len(files) >= 2**62:
        region = np.unique(region, return_inverse=True)[1].ravel()
    key = file.astype(np.int64) * (int(region.max()) + 1) + region
    _, key_id = np.unique(key, return_inverse=True)
    key_id = key_id.ravel()
    # return_counts keeps np.unique on its sort path (NumPy 2.4 hashes 1-D keys without it,
    # 100x slower on millions of writes)
    pairs, _ = np.unique(key_id * client_nodes + node, return_counts=True)
    nodes_per_key = np.bincount(pairs // client_nodes, minlength=int(key_id.max()) + 1)
    conflict = 1.0 - 1.0 / nodes_per_key[key_id]
    total = np.bincount(file, weights=conflict, minlength=len(files))
    calls = np.bincount(file, minlength=len(files))
    np.divide(total, calls, out=out, where=calls > 0)
    return out


def _when_done(
    env: simpy.Environment, procs: list[simpy.Event], index: int, on_done: Callable[[int], None]
) -> Generator[simpy.Event, Any, None]:
    """Call ``on_done(index)`` once every process of ``procs`` has ended."""
    yield env.all_of(procs)
    on_done(index)
