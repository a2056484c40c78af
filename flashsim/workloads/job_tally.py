"""What a replayed job did, per file, per rank and in all, beside what its source recorded.

Counts come from the transfers the simulation actually completed
(:class:`~flashsim.workloads.replay.JobTimes`), grouped by the counter record
each call belongs to, so :attr:`JobTally.conserved` checks the engine as much
as the trace: every record's calls and bytes, replayed, equal its counters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported where a frame is built, not at start-up
    import pandas as pd

from flashsim.workloads.replay import JobTimes


@dataclass(frozen=True)
class IoTally:
    """Calls, bytes and I/O time of a part of a job (a file, a rank, the whole job).

    Attributes
    ----------
    reads, writes : int
        Read and write calls replayed.
    bytes_read_B, bytes_written_B : float
        Bytes replayed.
    sim_io_time_s : float
        Simulated time the calls took, summed over calls (s), as Darshan sums
        its ``F_READ_TIME + F_WRITE_TIME``.
    recorded_io_time_s : float or None
        The source's cumulative read + write time (s), ``None`` where it
        recorded none (or, per rank, for calls counted in a record shared by
        all ranks: those times are only in the job's total).
    """

    reads: int
    writes: int
    bytes_read_B: float
    bytes_written_B: float
    sim_io_time_s: float
    recorded_io_time_s: float | None


@dataclass(frozen=True)
class FileTally(IoTally):
    """One file's tally (``name`` as the source recorded it)."""

    name: str = ""


@dataclass(frozen=True)
class RankTally(IoTally):
    """One rank's tally."""

    rank: int = 0


@dataclass(frozen=True)
class ModuleTally(IoTally):
    """One replayed module's tally (``module``: ``"POSIX"``, ``"STDIO"`` ...)."""

    module: str = ""


@dataclass(frozen=True)
class JobTally:
    """A job's tally: in all, per file, per rank, and whether it conserved its counters.

    Attributes
    ----------
    total : IoTally
        The whole job.
    files : list of FileTally
        Per file, in the trace's file order (files without calls left out).
    ranks : list of RankTally
        Per rank with calls.
    modules : list of ModuleTally
        Per module of the records, in order of first appearance.
    conserved : bool
        Every counter record's calls and bytes equal what was replayed.
    mismatches : list of str
        The records that did not (empty when conserved).
    """

    total: IoTally
    files: list[FileTally]
    ranks: list[RankTally]
    conserved: bool
    mismatches: list[str]
    modules: list[ModuleTally] = field(default_factory=list)


def _recorded(times: pd.Series) -> float | None:
    """Sum of recorded times, ``None`` when none was recorded."""
    known = times.dropna()
    return float(known.sum()) if len(known) else None


def tally_job(times: JobTimes) -> JobTally:
    """Tally a job's run against its trace's counter records."""
    import pandas as pd

    trace = times.job.trace
    tr = times.transfers
    records = trace.records
    n = len(records)
    ran = np.isfinite(times.end_s)  # only transfers the simulation completed count
    w = tr.write & ran
    r = ~tr.write & ran
    dur = np.where(ran, times.end_s - times.start_s, 0.0)
    per_record = pd.DataFrame(
        {
            "reads": np.bincount(tr.record[r], weights=tr.calls[r], minlength=n),
            "writes": np.bincount(tr.record[w], weights=tr.calls[w], minlength=n),
            "bytes_read": np.bincount(tr.record[r], weights=tr.size_B[r], minlength=n),
            "bytes_written": np.bincount(tr.record[w], weights=tr.size_B[w], minlength=n),
            "sim_io_time_s": np.bincount(tr.record, weights=dur, minlength=n),
        },
        index=records.index,
    )
    mismatches = []
    for col in ("reads", "writes", "bytes_read", "bytes_written"):
        bad = per_record[col].to_numpy() != records[col].to_numpy(dtype=np.float64)
        for i in np.flatnonzero(bad)[:5]:
            row = records.iloc[i]
            mismatches.append(
                f"{row['module']} {trace.files[int(row['file'])].name} rank {int(row['rank'])}: "
                f"{col} replayed {per_record[col].iloc[i]:g}, counted {row[col]:g}"
            )
    merged = pd.concat([records[["module", "file", "rank", "io_time_s"]], per_record], axis=1)

    def row_tally(frame: pd.DataFrame) -> tuple[int, int, float, float, float, float | None]:
        return (
            int(frame["reads"].sum()),
            int(frame["writes"].sum()),
            float(frame["bytes_read"].sum()),
            float(frame["bytes_written"].sum()),
            float(frame["sim_io_time_s"].sum()),
            _recorded(frame["io_time_s"]),
        )

    files = [
        FileTally(*row_tally(group), name=trace.files[int(group["file"].iloc[0])].name)
        for _, group in merged.groupby("file", sort=True)
        if group[["reads", "writes"]].to_numpy().sum() > 0
    ]
    ranks = _rank_tallies(times, records)
    modules = [
        ModuleTally(*row_tally(group), module=str(name))
        for name, group in merged.groupby("module", sort=False)
    ]
    return JobTally(
        total=IoTally(*row_tally(merged)),
        files=files,
        ranks=ranks,
        conserved=not mismatches,
        mismatches=mismatches,
        modules=modules,
    )


def _rank_tallies(times: JobTimes, records: pd.DataFrame) -> list[RankTally]:
    """Per rank: what it replayed and the recorded time of the records of that rank alone."""
    tr = times.transfers
    nprocs = times.job.trace.nprocs
    ran = np.isfinite(times.end_s)
    w = tr.write & ran
    r = ~tr.write & ran
    dur = np.where(ran, times.end_s - times.start_s, 0.0)

    def count(mask: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.bincount(tr.rank[mask], weights=weights[mask], minlength=nprocs)

    reads = count(r, tr.calls.astype(np.float64))
    writes = count(w, tr.calls.astype(np.float64))
    b_read = count(r, tr.size_B)
    b_written = count(w, tr.size_B)
    sim = np.bincount(tr.rank, weights=dur, minlength=nprocs)
    own = records[(records["rank"] >= 0) & records["io_time_s"].notna()]
    recorded = own.groupby("rank")["io_time_s"].sum()
    out = []
    for rank in np.flatnonzero((reads + writes) > 0):
        rec = recorded.get(int(rank))
        out.append(
            RankTally(
                int(reads[rank]),
                int(writes[rank]),
                float(b_read[rank]),
                float(b_written[rank]),
                float(sim[rank]),
                None if rec is None or math.isnan(rec) else float(rec),
                rank=int(rank),
            )
        )
    return out
