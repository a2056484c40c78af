"""Darshan logs: the recorded I/O time per job, rank and file.

The log is read once, by :func:`flashsim.workloads.darshan_log.read_darshan`
(the replay's reader, with its header checks and guarded parser); its
``records`` table has one row per POSIX and STDIO counter record with the log's
cumulative read + write time (``io_time_s``: ``*_F_READ_TIME + *_F_WRITE_TIME``)
and metadata time (``meta_time_s``: ``*_F_META_TIME``).

Which "I/O time" (Darshan's ``darshan-parser --perf`` has two estimates):

* per **rank** (scope ``"rank N"``): read + write + metadata time of the rank's
  own records, plus for each file shared by all ranks (a rank -1 record, whose
  times Darshan reduced to sums over the ranks) the mean rank's share, its
  time / ``nprocs``;
* per **job** (scope ``""``): the slowest rank's such time, as Darshan's
  "I/O time by slowest rank" estimate does; for shared files Darshan uses the
  slowest rank's time (``*_F_SLOWEST_RANK_TIME``), which the trace reader does
  not keep, so the mean rank's share stands in for it (the note says so);
* per **file** (scope ``"file <path>"``): the cumulative read + write +
  metadata time of every record of the file (summed over ranks);
* ``io_time_cumulative`` (job): the read + write time summed over every record
  and rank, Darshan's cumulative counters, which is what ``flashsim replay``
  of the log simulates (``total.sim_io_time_s``) and so what
  :func:`flashsim.measurements.reproduce.plan_darshan` reproduces.

Only the 64 ranks and 64 files with the largest times are kept (the job's note
says how many were left out).  Bytes read and written are in ``extra``;
conditions: ``tasks`` (``nprocs``), ``tool_version`` (the log format, e.g.
``3.41``), ``command_line`` (the job's ``exe`` line), ``duration_s`` (run time).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from flashsim.measurements.record import Conditions, Measurement, MeasurementError, Scalar

TOOL = "darshan"

#: Most ranks and files given their own measurement.
MAX_SCOPED = 64

#: ``DARSHAN_MAGIC_NR`` (darshan include/darshan-log-format.h), little and big endian.
_MAGIC = 6567223


def sniff(head: bytes) -> bool:
    """A Darshan log: a ``d.dd`` format version, then the magic number at byte 8."""
    if len(head) < 16 or not re.fullmatch(rb"\d\.\d\d", head[:8].split(b"\0", 1)[0]):
        return False
    return _MAGIC in (int.from_bytes(head[8:16], "little"), int.from_bytes(head[8:16], "big"))


def read(path: Path) -> list[Measurement]:
    """The job's, its ranks' and its files' recorded I/O time."""
    from flashsim.workloads.darshan_log import DarshanLogError, read_darshan

    try:
        trace = read_darshan(path)
    except DarshanLogError as exc:
        text = str(exc)
        prefix = f"{path}: "
        raise MeasurementError(
            str(path), "", None, text[len(prefix) :] if text.startswith(prefix) else text
        ) from None
    with path.open("rb") as log:  # its first 8 bytes, not the whole (maybe large) log again
        version = log.read(8).split(b"\0", 1)[0].decode("ascii", "replace")
    rec = trace.records
    nprocs = trace.nprocs
    io_s = rec["io_time_s"].to_numpy(float)  # read+write time; NaN: unknown
    time_s = np.nan_to_num(io_s) + np.nan_to_num(rec["meta_time_s"].to_numpy(float))
    unknown = int(np.isnan(io_s).sum())
    ranks = rec["rank"].to_numpy(int)
    files = rec["file"].to_numpy(int)
    bytes_r = rec["bytes_read"].to_numpy(float)
    bytes_w = rec["bytes_written"].to_numpy(float)
    shared = ranks < 0
    shared_share_s = float(time_s[shared].sum()) / nprocs
    own_s = np.bincount(ranks[~shared], weights=time_s[~shared], minlength=nprocs)
    own_r = np.bincount(ranks[~shared], weights=bytes_r[~shared], minlength=nprocs)
    own_w = np.bincount(ranks[~shared], weights=bytes_w[~shared], minlength=nprocs)
    rank_s = own_s + shared_share_s
    job = trace.name or path.stem
    base = Conditions(
        tool=TOOL,
        tool_version=version,
        command_line=trace.command_line or None,
        tasks=nprocs,
        duration_s=None if math.isnan(trace.run_time_s) else trace.run_time_s,
    )

    def measurement(
        scope: str,
        value: float,
        extra: dict[str, Scalar],
        note: str,
        quantity: str = "io_time",
    ) -> Measurement:
        parts = [path.stem, job] + ([scope] if scope else []) + ["io", quantity]
        return Measurement(
            id=":".join(parts),
            quantity=quantity,
            value=float(value),
            unit="s",
            conditions=replace(base, extra=extra),
            source=str(path),
            scope=scope,
            note=note,
        )

    slowest = int(np.argmax(rank_s)) if len(rank_s) else 0
    with_io = np.flatnonzero((own_s > 0) | (own_r > 0) | (own_w > 0))
    keep_ranks = sorted(with_io[np.argsort(-rank_s[with_io], kind="stable")][:MAX_SCOPED])
    file_s = np.bincount(files, weights=time_s, minlength=len(trace.files))
    file_r = np.bincount(files, weights=bytes_r, minlength=len(trace.files))
    file_w = np.bincount(files, weights=bytes_w, minlength=len(trace.files))
    keep_files = sorted(np.argsort(-file_s, kind="stable")[:MAX_SCOPED].tolist())
    notes = [
        f"slowest rank {slowest}: read+write+meta time of its own records"
        + (
            ", plus the mean rank's share (time / nprocs) of each shared file"
            if shared.any()
            else ""
        )
        + " (POSIX and STDIO)"
    ]
    if unknown:
        notes.append(f"{unknown} record(s) with an unknown (negative) time counted as 0 s")
    if len(with_io) > MAX_SCOPED:
        notes.append(f"per-rank times kept for the {MAX_SCOPED} slowest of {len(with_io)} ranks")
    if len(trace.files) > MAX_SCOPED:
        notes.append(
            f"per-file times kept for the {MAX_SCOPED} slowest of {len(trace.files)} files"
        )
    out = [
        measurement(
            "",
            rank_s[slowest] if len(rank_s) else 0.0,
            {
                "bytes_read": float(bytes_r.sum()),
                "bytes_written": float(bytes_w.sum()),
                "slowest_rank": slowest,
                "cumulative_io_time_s": float(time_s.sum()),
                "files": len(trace.files),
            },
            "; ".join(notes),
        ),
        measurement(
            "",
            float(np.nan_to_num(io_s).sum()),
            {"log": str(path.resolve())},
            "read+write time summed over every POSIX and STDIO record and rank, "
            "as Darshan counts it (*_F_READ_TIME + *_F_WRITE_TIME): what a replay "
            "of the log reproduces",
            quantity="io_time_cumulative",
        ),
    ]
    for r in keep_ranks:
        out.append(
            measurement(
                f"rank {int(r)}",
                rank_s[r],
                {"bytes_read": float(own_r[r]), "bytes_written": float(own_w[r])},
                "own records' read+write+meta time"
                + (" plus the mean share of shared files" if shared.any() else ""),
            )
        )
    for f in keep_files:
        out.append(
            measurement(
                f"file {trace.files[f].name}",
                file_s[f],
                {"bytes_read": float(file_r[f]), "bytes_written": float(file_w[f])},
                "read+write+meta time summed over the file's records (all ranks)",
            )
        )
    return out
