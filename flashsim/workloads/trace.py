"""The I/O operations of one job, rank by rank: what a replay runs and a generator draws.

A :class:`JobTrace` is the common currency of every non-IOR workload: a
Darshan log (:mod:`flashsim.workloads.darshan_log`), a synthetic production
mix (:mod:`flashsim.workloads.mix`) and an IOR job run beside others
(:mod:`flashsim.workloads.jobs`) are each turned into one, and
:mod:`flashsim.workloads.replay` runs it on any system that implements
:class:`~flashsim.workloads.replay.JobTarget`.

The operations are a columnar table (:class:`OpTable`, NumPy arrays of one
row per read or write call) ordered by rank and then by issue time.  Each
row names the counter record it was derived from (:attr:`OpTable.record`),
one row of :attr:`JobTrace.records` per (module, file, rank) as the log
keeps them, so that conservation (replayed bytes and calls equal the
counters) is a group-by, not a promise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pandas is imported where a frame is built, not at start-up
    import pandas as pd

IntArray = np.ndarray[Any, np.dtype[np.int64]]
FloatArray = np.ndarray[Any, np.dtype[np.float64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]

#: Columns of :attr:`JobTrace.records`, one row per counter record of the source.
RECORD_COLUMNS = (
    "module",  # str: "POSIX", "STDIO", "MIX", "IOR" ...
    "file",  # int: index into JobTrace.files
    "rank",  # int: the rank the record belongs to, -1 for a record shared by all ranks
    "reads",  # int: read calls the source counted
    "writes",  # int: write calls the source counted
    "bytes_read",  # float: bytes
    "bytes_written",  # float: bytes
    "io_time_s",  # float: the source's cumulative read + write time (s), NaN if unknown
    "meta_time_s",  # float: the source's cumulative metadata time (s), NaN if unknown
    "opens",  # int: open calls (metadata; not replayed as data)
)


@dataclass(frozen=True)
class TraceFile:
    """One file a job touches.

    Attributes
    ----------
    name : str
        The path as the source recorded it (or a generated name).
    filesystem : str
        Mount type of the file as the source recorded it (``"lustre"``,
        ``"nfs"``, ...), ``""`` when unknown.
    stripe_count : int or None
        Lustre stripe count from the source (Darshan's LUSTRE module), ``None``
        to use the model's default layout.
    stripe_size_B : float or None
        Lustre stripe size in bytes, ``None`` for the model's default.
    osts : tuple of int or None
        OST indices holding the stripes, in stripe order, as the source
        recorded them; a system maps them onto its own OSTs (modulo its
        count), ``None`` to let the system place the file.
    """

    name: str
    filesystem: str = ""
    stripe_count: int | None = None
    stripe_size_B: float | None = None
    osts: tuple[int, ...] | None = None


@dataclass(frozen=True)
class UnreplayedModule:
    """A module of the source whose calls are not replayed, with what it counted.

    Attributes
    ----------
    module : str
        Darshan module name (``"DFS"``, ``"MPI-IO"`` ...).
    records : int
        Its counter records.
    reads, writes : int
        Read and write calls it counted.
    bytes_read_B, bytes_written_B : float
        Bytes it counted.
    recorded_io_time_s : float or None
        Its cumulative read + write time (s), ``None`` when it records none.
    above_posix : bool
        Its calls reach the file system as POSIX calls, which are replayed
        (MPI-IO, HDF5, PnetCDF): counted twice in the log, replayed once.
        ``False``: its I/O is not in the replay at all (DFS, DAOS ...).
    reason : str
        Why it is not replayed, one phrase.
    """

    module: str
    records: int
    reads: int
    writes: int
    bytes_read_B: float
    bytes_written_B: float
    recorded_io_time_s: float | None
    above_posix: bool
    reason: str


@dataclass(frozen=True)
class OpTable:
    """Read and write calls, one row each, ordered by (rank, start).

    Attributes
    ----------
    rank : numpy.ndarray of int
        The rank that issues the call (0 .. nprocs-1).
    file : numpy.ndarray of int
        Index into :attr:`JobTrace.files`.
    record : numpy.ndarray of int
        Row of :attr:`JobTrace.records` the call is counted in.
    write : numpy.ndarray of bool
        ``True`` for a write, ``False`` for a read.
    offset_B : numpy.ndarray of float
        File offset in bytes.
    size_B : numpy.ndarray of float
        Bytes of the call (>= 0).
    start_s, end_s : numpy.ndarray of float
        When the call started and ended, seconds since the job started, as
        recorded (DXT) or drawn (counters, generators); ``end_s >= start_s``.
        Replay keeps each rank's order and the gaps between its calls
        (``start[i] - end[i-1]``: computation), not the absolute times.
    """

    rank: IntArray
    file: IntArray
    record: IntArray
    write: BoolArray
    offset_B: FloatArray
    size_B: FloatArray
    start_s: FloatArray
    end_s: FloatArray

    def __len__(self) -> int:
        return int(self.rank.size)

    @staticmethod
    def empty() -> OpTable:
        """A table with no calls."""
        i = np.zeros(0, dtype=np.int64)
        f = np.zeros(0, dtype=np.float64)
        return OpTable(i, i, i, np.zeros(0, dtype=bool), f, f, f, f)

    @staticmethod
    def concat(tables: list[OpTable]) -> OpTable:
        """Rows of ``tables`` in order, re-sorted by (rank, start, end)."""
        if not tables:
            return OpTable.empty()
        cols = {
            name: np.concatenate([getattr(t, name) for t in tables])
            for name in OpTable.__dataclass_fields__
        }
        order = np.lexsort((cols["end_s"], cols["start_s"], cols["rank"]))
        return OpTable(**{k: v[order] for k, v in cols.items()})

    def check(self, nprocs: int, n_files: int, n_records: int) -> None:
        """Raise ``ValueError`` naming the first inconsistency of the table."""
        n = len(self)
        for name in OpTable.__dataclass_fields__:
            if getattr(self, name).shape != (n,):
                raise ValueError(f"ops.{name}: {getattr(self, name).shape} rows, expected ({n},)")
        if n == 0:
            return
        if self.rank.min() < 0 or self.rank.max() >= nprocs:
            raise ValueError(f"ops.rank: ranks must lie in 0..{nprocs - 1}")
        if self.file.min() < 0 or self.file.max() >= n_files:
            raise ValueError(f"ops.file: file indices must lie in 0..{n_files - 1}")
        if self.record.min() < 0 or self.record.max() >= n_records:
            raise ValueError(f"ops.record: record indices must lie in 0..{n_records - 1}")
        for name in ("offset_B", "size_B", "start_s", "end_s"):
            values = getattr(self, name)
            if not np.all(np.isfinite(values)) or values.min() < 0:
                raise ValueError(f"ops.{name}: values must be finite and >= 0")
        if np.any(self.end_s < self.start_s):
            raise ValueError("ops.end_s: a call ends before it starts")
        same = self.rank[1:] == self.rank[:-1]
        if np.any(np.diff(self.rank) < 0) or np.any(same & (self.start_s[1:] < self.start_s[:-1])):
            raise ValueError("ops: calls must be ordered by rank, then by start time")


@dataclass(frozen=True)
class JobTrace:
    """One job's I/O: its files, its counter records and its calls.

    Attributes
    ----------
    name : str
        Job name (the executable, or the generator's job name).
    source : str
        Where it came from: a log's path, ``"mix"``, ``"ior"``.
    nprocs : int
        Ranks of the job.
    run_time_s : float
        Wall time of the job as recorded (s), NaN if unknown.
    files : tuple of TraceFile
        Files the job touches.
    records : pandas.DataFrame
        One row per counter record, columns :data:`RECORD_COLUMNS`.
    ops : OpTable
        The calls to replay.
    timing : str
        How the calls' times were obtained: ``"dxt"`` (recorded per call),
        ``"counters"`` (drawn from counters, see the reader), ``"generated"``.
    notes : tuple of str
        What is exact and what is drawn, for the report.
    recorded_on : str
        Where the source says the job ran (host, file system), ``""`` if unknown.
    unreplayed : tuple of UnreplayedModule
        Modules of the source whose calls are not in :attr:`ops` (and not in
        :attr:`records`), with their own counts.
    command_line : str
        The job's command line as the source recorded it (a Darshan log's
        ``exe`` line), ``""`` if unknown.
    """

    name: str
    source: str
    nprocs: int
    run_time_s: float
    files: tuple[TraceFile, ...]
    records: pd.DataFrame
    ops: OpTable
    timing: str = "generated"
    notes: tuple[str, ...] = field(default_factory=tuple)
    recorded_on: str = ""
    unreplayed: tuple[UnreplayedModule, ...] = ()
    command_line: str = ""

    def check(self) -> None:
        """Raise ``ValueError`` naming the first inconsistency (ranks, files, records, order)."""
        if self.nprocs < 1:
            raise ValueError(f"nprocs: {self.nprocs}; expected at least 1")
        missing = [c for c in RECORD_COLUMNS if c not in self.records.columns]
        if missing:
            raise ValueError(f"records: missing columns {', '.join(missing)}")
        self.ops.check(self.nprocs, len(self.files), len(self.records))

    def replayed_counts(self) -> pd.DataFrame:
        """Calls and bytes of :attr:`ops` per record, in the columns of :attr:`records`.

        Equal to ``records[["reads", "writes", "bytes_read", "bytes_written"]]``
        when the trace conserves its source (tested for every example log).
        """
        import pandas as pd

        ops = self.ops
        n = len(self.records)
        w = ops.write
        return pd.DataFrame(
            {
                "reads": np.bincount(ops.record[~w], minlength=n).astype(np.int64),
                "writes": np.bincount(ops.record[w], minlength=n).astype(np.int64),
                "bytes_read": np.bincount(ops.record[~w], weights=ops.size_B[~w], minlength=n),
                "bytes_written": np.bincount(ops.record[w], weights=ops.size_B[w], minlength=n),
            },
            index=self.records.index,
        )


def records_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A :attr:`JobTrace.records` frame from dicts keyed by :data:`RECORD_COLUMNS`.

    Missing numeric columns default to 0 (counts) or NaN (times).
    """
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(RECORD_COLUMNS))
    for col in ("reads", "writes", "opens", "file", "rank"):
        frame[col] = frame[col].fillna(0).astype(np.int64)
    for col in ("bytes_read", "bytes_written"):
        frame[col] = frame[col].fillna(0.0).astype(np.float64)
    for col in ("io_time_s", "meta_time_s"):
        frame[col] = frame[col].astype(np.float64)
    frame["module"] = frame["module"].astype(str)
    return frame.reset_index(drop=True)
