"""Darshan logs read into a :class:`~flashsim.workloads.trace.JobTrace`: calls as traced, or drawn.

A Darshan log (read with pydarshan, the ``darshan`` package) holds one job's
I/O as *counter records*, one per (module, file, rank), and optionally DXT
traces, one row per call.  :func:`read_darshan` turns it into the calls a
replay runs.

What is replayed
----------------
Only the POSIX and STDIO modules: they are disjoint data paths (a ``fwrite``
is counted by STDIO, not by POSIX).  MPI-IO, HDF5 (H5F/H5D) and PnetCDF sit
*above* POSIX: their calls reach the file system as POSIX calls, already
counted, so their counters are left out of the replayed calls (the trace's
notes say how many calls and bytes they recorded).  DFS/DAOS (no POSIX file
system) are not replayed at all.  Every module with I/O counters that is not
replayed is in ``JobTrace.unreplayed`` with its own records, calls, bytes and
recorded time (:func:`unreplayed_modules`), so a report can say what it left
out.  LUSTRE (striping only, used for placement), HEATMAP, APMPI/APXC and DXT
carry no calls of their own.  ``JobTrace.records`` has one row per POSIX and
STDIO counter record, with the log's own counters; a file shared by all
ranks is one record with rank -1, as the log keeps it.

With DXT (``DXT_POSIX``): exact
-------------------------------
Every traced POSIX call is one operation with its rank, file, offset, size,
and start and end time (seconds since the job started) exactly as recorded,
in each rank's order.  A call is counted in the POSIX record of its (file,
rank), or the file's rank -1 record.  DXT keeps a bounded buffer per rank, so
a log may trace fewer calls than its counters count; the missing calls of
each record are then *drawn from the counters* (below) and placed after that
record's last traced call.  STDIO has no DXT trace and is always drawn.

Counters only: what is exact
----------------------------
For every record and each direction (read, write):

* the number of calls (``POSIX_READS``/``POSIX_WRITES``,
  ``STDIO_READS``/``STDIO_WRITES``) and their bytes (``*_BYTES_READ``,
  ``*_BYTES_WRITTEN``), to the call and the byte;
* the POSIX access-size histogram (``POSIX_SIZE_READ_*``/``SIZE_WRITE_*``):
  each bucket holds exactly the log's number of calls.  When a log's
  histogram cannot hold its byte count (never in pydarshan's example logs)
  the sizes fall back to an equal split, and the notes say so;
* ``POSIX_SEQ_*`` and ``POSIX_CONSEC_*``: counting the drawn calls of each
  rank in issue order with Darshan's own rule (a call is *sequential* when its
  offset lies beyond the last byte of the rank's previous call on the file,
  *consecutive* when it starts at the byte right after it; the first call
  compares with byte 0) gives the log's counts, except in a corner the notes
  count (zero-byte calls that must be followed by a re-read);
* time: each rank's first call of a record starts at the record's
  ``F_READ_START_TIMESTAMP``/``F_WRITE_START_TIMESTAMP`` and (with two or
  more calls) its last call ends at the ``*_END_TIMESTAMP``; the calls'
  durations sum to ``F_READ_TIME``/``F_WRITE_TIME`` (a rank -1 record's time
  is the sum over its ranks, shared in proportion to the calls' weights).  A
  rank whose share does not fit between the timestamps is scaled down to fit
  (counted in the notes).  Negative recorded times (a Darshan bug seen in old
  logs) count as unknown: NaN in ``records``, zero busy time in the calls; a
  record direction without timestamps is spread over the whole run (noted).

Counters only: what is drawn (seeded ``numpy.random.Generator``)
----------------------------------------------------------------
* sizes inside a histogram bucket: the record's four most common access sizes
  (``POSIX_ACCESS1..4_ACCESS``/``_COUNT``, which Darshan counts over reads and
  writes together, reads served first) are used as they are, capped by the
  bucket's count; the other calls of a bucket share its remaining bytes
  equally (sizes differ by at most 1 B) at the same relative position inside
  every bucket; STDIO (no histogram) splits its bytes equally;
* the order of the sizes (a random permutation per record);
* a rank -1 record's calls are dealt to the job's ``nprocs`` ranks: rank ``q``
  gets calls ``j`` with ``j * nprocs // n == q`` of the permuted list (counts
  differ by at most one); non-sequential calls go first to the ranks' first
  calls (the lowest ranks holding calls start at offset 0), the rest and the
  consecutive calls are shared in proportion to each rank's calls;
* offsets: a non-sequential call (after the first) re-reads the previous
  call's offset; a consecutive call starts at the previous call's end; another
  sequential call skips a gap drawn from the record's common strides
  (``POSIX_STRIDE1..4_STRIDE``/``_COUNT``, weighted by count), or ASSUMED one
  mean call size when the log has none.  The kinds are in random order.  A
  rank of a shared file whose first call is sequential starts past the
  regions of the ranks before it, or at ``q`` mean call sizes when the
  record's strides show interleaving (a stride of at least ``nprocs - 1``
  mean call sizes).  STDIO keeps no offsets: a rank's calls are ASSUMED
  contiguous from offset 0 (a stream);
* durations: call ``i`` gets ``busy * w_i / sum(w)`` with ASSUMED weight
  ``w_i = size_i + mean size`` (half per-call, half per-byte for a mean-size
  call); the idle time between a rank's calls is split by uniform spacings
  (exponential weights).  The calls of different records of a rank are not
  interleaved by anything the log records, so they may overlap in time.

Bad input
---------
A job header with an impossible field (:func:`check_job_header`: ``nprocs``
outside 1 .. 2^31 - 1, negative times, an end before the start; pre-release
3.41 logs decode to such garbage) raises :class:`DarshanLogError` naming the
field and its value.  A missing, empty, truncated, corrupt or unsupported file raises
:class:`DarshanLogError` (a ``ValueError``) with one line naming the file and
what is wrong.  pydarshan's C library aborts or crashes the interpreter on
some truncated logs (measured: a 1,000-byte prefix of ``dxt.darshan``
segfaults, a 5,000-byte prefix trips an assertion), and silently returns
fewer records on others, so the header and region map are checked first
(every region must lie inside the file) and the log is parsed in a forked
child process (measured: 165 ms against 50 ms in-process for the 2,048-rank
``sample-badost`` log, 36 against 12 ms for ``dxt.darshan``) whose
crash, hang (``timeout_s``) or library error message becomes that one line
(measured on 30 copies of ``dxt.darshan`` with 8 bytes flipped after the
header: 20 give the library's inflate error, 2 crash it with SIGSEGV, 8 still
read into a consistent trace).
"""

from __future__ import annotations

import datetime
import math
import os
import pickle
import re
import select
import signal
import struct
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from flashsim.workloads.trace import (
    BoolArray,
    FloatArray,
    IntArray,
    JobTrace,
    OpTable,
    TraceFile,
    UnreplayedModule,
    records_frame,
)

#: Modules whose calls are replayed (disjoint data paths).
REPLAYED_MODULES = ("POSIX", "STDIO")
#: Modules whose calls become POSIX calls (counted there, not replayed twice).
ABOVE_POSIX = ("MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR")

#: Inclusive upper bound (bytes) of each Darshan access-size bucket, ``_0_100`` .. ``_100M_1G``;
#: the last bucket, ``_1G_PLUS``, is open.  Source: darshan-runtime/lib/darshan-common.h,
#: ``DARSHAN_BUCKET_INC`` (``value < 101`` -> bucket 0, ``< 1025`` -> 1, ... ``< 1073741825`` -> 8).
BUCKET_UPPER_B = np.array(
    [100, 1024, 10240, 102400, 1048576, 4194304, 10485760, 104857600, 1073741824], dtype=np.int64
)
#: Inclusive lower bound (bytes) of each of the ten buckets.
BUCKET_LOWER_B = np.concatenate([[0], BUCKET_UPPER_B + 1]).astype(np.int64)
_BUCKETS = (
    *("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M"),
    *("1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS"),
)

#: Log format versions darshan-util 3.5 (pydarshan 3.5.0) reads; source:
#: darshan-util/darshan-logutils.c ``darshan_log_get_header``.
SUPPORTED_VERSIONS = ("3.00", "3.10", "3.20", "3.21", "3.41")
#: Most ranks a log's ``nprocs`` may claim: an MPI communicator's size is a C ``int``.
MAX_NPROCS = 2**31 - 1
#: ``DARSHAN_MAGIC_NR`` (include/darshan-log-format.h).
_MAGIC = 6567223

# Categories of a drawn call, by how Darshan counts it against the rank's previous call.
_FIRST_AT_ZERO, _FIRST_CONSEC, _FIRST_GAP, _REREAD, _CONSEC, _GAP = range(6)


class DarshanLogError(ValueError):
    """A Darshan log that cannot be read; ``str()`` is one line naming the file."""


# ------------------------------------------------------------------ public API
def read_darshan(
    path: str | Path,
    rng: np.random.Generator | None = None,
    *,
    timeout_s: float = 600.0,
) -> JobTrace:
    """Read a Darshan log into a :class:`JobTrace` (see the module docstring for what is exact).

    Parameters
    ----------
    path : str or Path
        The ``.darshan`` file.
    rng : numpy.random.Generator, optional
        Draws what the counters leave open; default ``numpy.random.default_rng(0)``.
    timeout_s : float
        Seconds (wall clock) the parser may take before the log is declared hung.

    Raises
    ------
    DarshanLogError
        The file is missing, empty, truncated, corrupt or of an unsupported version.
    """
    path = Path(path)
    rng = np.random.default_rng(0) if rng is None else rng
    check_header(path)
    raw = _parse_guarded(path, timeout_s)
    try:
        trace = _build_trace(path, raw, rng)
        trace.check()
    except DarshanLogError:
        raise
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise DarshanLogError(f"{path}: inconsistent log contents ({exc})") from None
    return trace


@dataclass(frozen=True)
class ModelMatch:
    """The flashsim model closest to where a log was recorded.

    Attributes
    ----------
    model : str or None
        A file name in ``models/systems/`` (``"cori-scratch.toml"`` ...), ``None``
        when no model is close (a laptop or node-local file system).
    reason : str
        One line saying why.
    """

    model: str | None
    reason: str


def model_match(trace: JobTrace) -> ModelMatch:
    """The model of ``models/systems/`` closest to where ``trace`` was recorded, with a reason.

    Rules (ASSUMED, from the sites' published mount points): Cori's scratch
    (``/global/cscratch1``) and Edison's (``/scratch1..3`` on a Cray, same era
    of HDD Lustre) map to ``cori-scratch.toml``; a DataWarp mount to
    ``cori-datawarp.toml``; Perlmutter's ``/pscratch`` to ``perlmutter.toml``;
    any other Lustre to ``perlmutter.toml`` from 2021 on (all-flash era) and
    ``cori-scratch.toml`` before; NFS to ``vast-pdsw21.toml`` (VAST is served
    over NFS); anything else (ext4, xfs, tmpfs ...) to ``None``.
    """
    text = trace.recorded_on
    if not text.startswith("/"):
        return ModelMatch(None, "the log has no mount table: where it ran is unknown")
    mount, _, rest = text.partition(" ")
    fstype = rest.split(" ", 1)[0]
    year_match = re.search(r"\b(19|20)\d\d\b", text)
    year = int(year_match.group(0)) if year_match else 0
    if "datawarp" in text.lower() or "/var/opt/cray/dws" in mount:
        return ModelMatch("cori-datawarp.toml", f"{mount} is a Cray DataWarp burst buffer")
    if mount.startswith("/pscratch") or "Perlmutter" in text:
        return ModelMatch("perlmutter.toml", f"{mount} is Perlmutter's all-flash Lustre scratch")
    if "Cori" in text:
        return ModelMatch("cori-scratch.toml", f"{mount} is Cori's HDD Lustre scratch ({year})")
    if "Edison" in text:
        return ModelMatch(
            "cori-scratch.toml",
            f"{mount} is Edison's HDD Lustre scratch ({year}); Cori scratch is its era's model",
        )
    if fstype == "lustre":
        if year >= 2021:
            return ModelMatch("perlmutter.toml", f"{mount} is Lustre recorded in {year}")
        return ModelMatch("cori-scratch.toml", f"{mount} is Lustre recorded in {year or '?'}")
    if fstype.startswith("nfs"):
        return ModelMatch("vast-pdsw21.toml", f"{mount} is NFS, the VAST client protocol")
    return ModelMatch(None, f"{mount} is {fstype or 'an unknown file system'}, not a model")


def closest_model(trace: JobTrace) -> str | None:
    """File name of the model closest to where ``trace`` was recorded (see :func:`model_match`)."""
    return model_match(trace).model


def sequential_counts(trace: JobTrace) -> pd.DataFrame:
    """Darshan's SEQ and CONSEC counts of the trace's calls, per record.

    Counted per (record, rank, direction) in issue order as Darshan does: a
    call is sequential when its offset exceeds the last byte of the previous
    call (``offset + size - 1``; 0 before the first call), consecutive when it
    equals that byte plus one.

    Returns
    -------
    pandas.DataFrame
        Columns ``seq_reads``, ``consec_reads``, ``seq_writes``,
        ``consec_writes``, indexed like :attr:`JobTrace.records`.
    """
    ops = trace.ops
    n_rec = len(trace.records)
    order = np.lexsort((np.arange(len(ops)), ops.write, ops.rank, ops.record))
    rec, rank, wr = ops.record[order], ops.rank[order], ops.write[order]
    off, size = ops.offset_B[order], ops.size_B[order]
    new = np.ones(len(ops), dtype=bool)
    new[1:] = (rec[1:] != rec[:-1]) | (rank[1:] != rank[:-1]) | (wr[1:] != wr[:-1])
    last = np.zeros(len(ops))
    last[1:] = off[:-1] + size[:-1] - 1.0
    last[new] = 0.0
    seq, consec = off > last, off == last + 1.0
    out = {}
    for name, mask in (("reads", ~wr), ("writes", wr)):
        out[f"seq_{name}"] = np.bincount(rec[mask & seq], minlength=n_rec)
        out[f"consec_{name}"] = np.bincount(rec[mask & consec], minlength=n_rec)
    return pd.DataFrame(out, index=trace.records.index)


# ------------------------------------------------------------------ guarded parsing
def check_header(path: Path) -> None:
    """Raise :class:`DarshanLogError` unless ``path`` starts with a readable Darshan header.

    Checks the version string, the magic number, the compression type and
    that every region the header maps (job, names, modules) lies inside the
    file, which is what a truncated copy fails.
    """
    if not path.exists():
        raise DarshanLogError(f"{path}: no such file")
    if not path.is_file():
        raise DarshanLogError(f"{path}: not a regular file")
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(1328)
    except OSError as exc:
        raise DarshanLogError(f"{path}: cannot be read ({exc.strerror})") from None
    if size == 0:
        raise DarshanLogError(f"{path}: empty file, not a Darshan log")
    version = head[:8].split(b"\0", 1)[0]
    if not re.fullmatch(rb"\d\.\d\d", version):
        raise DarshanLogError(f"{path}: not a Darshan log (no format version at its start)")
    text = version.decode()
    if text not in SUPPORTED_VERSIONS:
        raise DarshanLogError(
            f"{path}: Darshan log format {text} is not supported "
            f"(pydarshan reads {', '.join(SUPPORTED_VERSIONS)})"
        )
    new = text >= "3.41"
    n_mods = 64 if new else 16
    map_at = 32 if new else 24
    header_size = map_at + 16 * (n_mods + 1) + 4 * n_mods
    if size < header_size:
        raise DarshanLogError(
            f"{path}: truncated ({size} B, shorter than its {header_size} B header)"
        )
    endian = next((e for e in "<>" if struct.unpack_from(e + "q", head, 8)[0] == _MAGIC), "")
    if not endian:
        raise DarshanLogError(f"{path}: not a Darshan log (bad magic number)")
    if head[16] > 2:
        raise DarshanLogError(f"{path}: corrupt header (compression type {head[16]})")
    maps = struct.unpack_from(f"{endian}{2 * (n_mods + 1)}Q", head, map_at)
    name_off = maps[0]
    regions = [(maps[2 * i], maps[2 * i + 1]) for i in range(n_mods + 1) if maps[2 * i + 1] > 0]
    need = max([header_size] + [off + length for off, length in regions])
    if any(off < header_size for off, _ in regions) or (0 < name_off <= header_size):
        raise DarshanLogError(f"{path}: corrupt header (a region overlaps the header)")
    if need > size:
        raise DarshanLogError(f"{path}: truncated ({size} B of the {need} B its header maps)")


def _parse_guarded(path: Path, timeout_s: float) -> dict[str, Any]:
    """:func:`_extract` in a forked child, so a crash or hang of the C library is an error."""
    import logging

    import darshan.backend.cffi_backend  # noqa: F401  (imported before the fork, not in the child)

    logging.getLogger("darshan").setLevel(logging.ERROR)
    if not hasattr(os, "fork"):  # pragma: no cover - Windows: header checked, parse in-process
        return _extract(str(path))
    read_fd, write_fd = os.pipe()
    err_fd, err_name = tempfile.mkstemp(prefix="flashsim-darshan-", suffix=".err")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (coverage does not follow os.fork)
        try:
            os.close(read_fd)
            os.dup2(err_fd, 2)
            try:
                payload: tuple[str, Any] = ("ok", _extract(str(path)))
            except BaseException as exc:  # every failure goes back as text
                payload = ("error", f"{type(exc).__name__}: {exc}")
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view) :]
        finally:
            os._exit(0)
    os.close(write_fd)
    os.close(err_fd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise DarshanLogError(
                    f"{path}: pydarshan did not finish reading it in {timeout_s:g} s (hung?)"
                )
            ready, _, _ = select.select([read_fd], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(read_fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(read_fd)
        errors = Path(err_name).read_text(errors="replace")
        os.unlink(err_name)
    first_error = next((ln.strip() for ln in errors.splitlines() if "rror" in ln), "")
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status)).name
        detail = f": {first_error}" if first_error else ""
        raise DarshanLogError(f"{path}: corrupt log, the Darshan library crashed ({sig}){detail}")
    if not chunks:
        raise DarshanLogError(f"{path}: corrupt log, the Darshan reader returned nothing")
    kind, value = pickle.loads(b"".join(chunks))
    if kind != "ok":
        raise DarshanLogError(f"{path}: corrupt log ({first_error or value})")
    if first_error:
        raise DarshanLogError(f"{path}: corrupt log ({first_error})")
    return dict(value)


def _extract(path: str) -> dict[str, Any]:
    """Everything the trace needs from the log, as plain Python and NumPy values."""
    import darshan

    report = darshan.DarshanReport(path, read_all=True)
    job = report.metadata["job"]
    out: dict[str, Any] = {
        "job": {k: job[k] for k in ("start_time_sec", "end_time_sec", "nprocs", "jobid")},
        "run_time": float(job["run_time"]),
        "log_ver": job.get("log_ver", ""),
        "job_metadata": dict(job.get("metadata", {})),
        "exe": report.metadata.get("exe", ""),
        "mounts": [(str(a), str(b)) for a, b in report.mounts],
        "modules": {k: bool(v.get("partial_flag", False)) for k, v in report.modules.items()},
        "names": {int(k): str(v) for k, v in report.name_records.items()},
        "counters": {},
        "lustre": [],
        "dxt": [],
    }
    from darshan.backend import cffi_backend as backend

    for mod, recs in report.records.items():
        if mod in ("DXT_POSIX", "DXT_MPIIO", "LUSTRE", "HEATMAP", "APMPI", "APXC"):
            continue
        items = list(recs)  # pydarshan wraps each record; r[key] reads its fields
        if not items or not isinstance(items[0]["counters"], np.ndarray):
            continue
        out["counters"][mod] = {
            "id": np.array([r["id"] for r in items], dtype=np.uint64),
            "rank": np.array([r["rank"] for r in items], dtype=np.int64),
            "counters": np.vstack([r["counters"] for r in items]).astype(np.int64),
            "fcounters": np.vstack([r["fcounters"] for r in items]).astype(np.float64),
            "names": list(backend.counter_names(mod)),
            "fnames": list(backend.fcounter_names(mod)),
        }
    for rec in report.records.get("LUSTRE", []):
        comps = rec["components"] or []
        if not comps:
            continue
        first = comps[0]
        cnames = backend.counter_names("LUSTRE_COMP")
        cdict = dict(zip(cnames, first["counters"], strict=False))
        osts = tuple(int(x) for x in first["ost_ids"])
        stripe_size = int(cdict.get("LUSTRE_COMP_STRIPE_SIZE", -1))
        count = int(cdict.get("LUSTRE_COMP_STRIPE_COUNT", -1))
        out["lustre"].append((int(rec["id"]), stripe_size, count, osts, len(comps)))
    for rec in report.records.get("DXT_POSIX", []):
        segs = []
        for key in ("read_segments", "write_segments"):
            seg = rec[key]
            segs.append(
                np.array(
                    [(s["offset"], s["length"], s["start_time"], s["end_time"]) for s in seg],
                    dtype=np.float64,
                ).reshape(-1, 4)
            )
        out["dxt"].append((int(rec["id"]), int(rec["rank"]), str(rec["hostname"]), *segs))
    return out


# ------------------------------------------------------------------ trace building
@dataclass
class _Module:
    """One module's counter records as arrays (rows = records kept in the trace)."""

    name: str
    ids: np.ndarray[Any, np.dtype[np.uint64]]
    rank: IntArray
    c: IntArray
    f: FloatArray
    cnames: list[str]
    fnames: list[str]

    def col(self, name: str) -> IntArray:
        """An integer counter (zeros when this module version lacks it)."""
        if name not in self.cnames:
            return np.zeros(len(self.ids), dtype=np.int64)
        return self.c[:, self.cnames.index(name)]

    def fcol(self, name: str) -> FloatArray:
        """A float counter (NaN when missing or negative: unknown)."""
        if name not in self.fnames:
            return np.full(len(self.ids), math.nan)
        values = self.f[:, self.fnames.index(name)].astype(np.float64)
        return np.where(values < 0, math.nan, values)


def _module(raw: dict[str, Any], name: str) -> _Module | None:
    data = raw["counters"].get(name)
    if data is None:
        return None
    return _Module(
        name,
        data["id"],
        data["rank"],
        data["counters"],
        data["fcounters"],
        list(data["names"]),
        list(data["fnames"]),
    )


def _filesystem(name: str, mounts: Sequence[tuple[str, str]]) -> tuple[str, str]:
    """(mount point, type) of the longest mount point that is a path prefix of ``name``."""
    best = ("", "")
    if not name.startswith("/"):
        return best
    for point, fstype in mounts:
        prefix = point.rstrip("/") + "/"
        if (name == point or name.startswith(prefix) or point == "/") and len(point) > len(best[0]):
            best = (point, fstype)
    return best


def check_job_header(path: Path, job: dict[str, Any]) -> None:
    """Raise :class:`DarshanLogError` naming the first impossible field of a log's job header.

    A header pydarshan decodes with the wrong layout (pre-release 3.41 logs
    carry the final version string over an older job record) yields garbage
    such as ``nprocs = 4427712942739450219``; the fields checked are
    ``nprocs`` (1 .. :data:`MAX_NPROCS`) and the start and end times (seconds
    since 1970, not negative, the end not before the start).
    """
    nprocs = int(job["nprocs"])
    if not 1 <= nprocs <= MAX_NPROCS:
        raise DarshanLogError(
            f"{path}: header field nprocs = {nprocs} is impossible "
            f"(expected 1..{MAX_NPROCS}, the ranks an MPI communicator can hold)"
        )
    start, end = int(job["start_time_sec"]), int(job["end_time_sec"])
    for key, value in (("start_time_sec", start), ("end_time_sec", end)):
        if value < 0:
            raise DarshanLogError(
                f"{path}: header field {key} = {value} is impossible "
                "(expected seconds since 1970, >= 0)"
            )
    if end < start:
        raise DarshanLogError(
            f"{path}: header field end_time_sec = {end} is impossible "
            f"(expected >= start_time_sec = {start})"
        )


def _build_trace(path: Path, raw: dict[str, Any], rng: np.random.Generator) -> JobTrace:
    check_job_header(path, raw["job"])
    nprocs = int(raw["job"]["nprocs"])
    notes: list[str] = []
    names: dict[int, str] = raw["names"]
    mounts: list[tuple[str, str]] = raw["mounts"]
    mods = {m: _module(raw, m) for m in REPLAYED_MODULES}
    present = [m for m in REPLAYED_MODULES if mods[m] is not None]

    # files, in order of first appearance
    file_index: dict[int, int] = {}
    for m in present:
        mod = mods[m]
        assert mod is not None
        for rid in mod.ids.tolist():
            file_index.setdefault(int(rid), len(file_index))
    lustre = {rid: (size, count, osts, comps) for rid, size, count, osts, comps in raw["lustre"]}
    files = []
    multi_comp = 0
    for rid in file_index:
        name = names.get(rid, f"<record {rid:x}>")
        _, fstype = _filesystem(name, mounts)
        stripe = lustre.get(rid)
        if stripe is not None and stripe[1] > 0:
            multi_comp += stripe[3] > 1
            files.append(
                TraceFile(
                    name,
                    fstype,
                    stripe_count=int(stripe[1]),
                    stripe_size_B=float(stripe[0]) if stripe[0] > 0 else None,
                    osts=tuple(stripe[2]) or None,
                )
            )
        else:
            files.append(TraceFile(name, fstype))
    if multi_comp:
        notes.append(
            f"{multi_comp} file(s) have a progressive (multi-component) Lustre layout; "
            "only the first component's striping is kept"
        )

    # counter records and the per-direction call groups to draw
    rows: list[dict[str, Any]] = []
    specs: list[_Spec] = []
    for m in present:
        mod = mods[m]
        assert mod is not None
        base = len(rows)
        rows.extend(_record_rows(mod, file_index))
        specs.extend(_specs(mod, base, file_index, nprocs, float(raw["run_time"])))
    records = records_frame(rows)
    bad_rank = records["rank"].to_numpy() >= nprocs
    if bad_rank.any():
        raise DarshanLogError(
            f"{path}: corrupt log (a record of rank {int(records['rank'][bad_rank].max())} "
            f"in a job of {nprocs} ranks)"
        )
    if (records["rank"] < 0).any():
        notes.append(
            "a rank -1 record is a file shared by all ranks: its io_time_s and meta_time_s "
            "are sums over the ranks (Darshan's shared-file reduction), not wall time"
        )
    negative = 0
    for m in present:
        mod = mods[m]
        assert mod is not None
        negative += sum(int(np.sum(mod.col(k) < 0)) for k in _data_cols(m))
    if negative:
        notes.append(f"{negative} negative call/byte counter(s) in the log were read as 0")

    # DXT where present, then the rest from counters
    traced, specs, dxt_notes = _apply_dxt(raw, mods.get("POSIX"), records, specs, nprocs)
    notes.extend(dxt_notes)
    drawn, stats = _synthesise(specs, rng)
    ops = OpTable.concat([traced, drawn])
    n_traced, n_drawn = len(traced), len(drawn)
    timing = "dxt" if n_traced else "counters"
    if n_traced:
        notes.insert(0, f"{n_traced} POSIX calls as traced by DXT; {n_drawn} drawn from counters")
    elif n_drawn:
        notes.insert(0, f"{n_drawn} calls drawn from counters (no DXT trace)")
    notes.extend(stats.notes())
    unreplayed = unreplayed_modules(raw)
    notes.extend(_unreplayed_notes(unreplayed))
    if not present:
        notes.append("the log has no POSIX or STDIO records: nothing to replay")
    partial = [k for k, v in raw["modules"].items() if v]
    if partial:
        notes.append(
            f"Darshan ran out of record memory in {', '.join(partial)}: the log "
            "(and this trace) misses some files"
        )
    notes.append(
        "offsets, sizes inside histogram buckets, call order and idle gaps are drawn; "
        "counts, bytes, histograms, SEQ/CONSEC counts and timestamps are the log's "
        "(see flashsim.workloads.darshan_log)"
        if n_drawn
        else "every call as traced"
    )
    exe = str(raw["exe"]).strip()
    name = Path(exe.split(" ", 1)[0]).name if exe else path.stem
    return JobTrace(
        name=name or path.stem,
        source=str(path),
        nprocs=nprocs,
        run_time_s=float(raw["run_time"]),
        files=tuple(files),
        records=records,
        ops=ops,
        timing=timing,
        notes=tuple(notes),
        recorded_on=_recorded_on(raw, files, records),
        unreplayed=unreplayed,
        command_line=exe,
    )


def _data_cols(module: str) -> tuple[str, ...]:
    p = module
    return (f"{p}_READS", f"{p}_WRITES", f"{p}_BYTES_READ", f"{p}_BYTES_WRITTEN")


def _record_rows(mod: _Module, file_index: dict[int, int]) -> list[dict[str, Any]]:
    p = mod.name
    reads, writes, br, bw = (np.maximum(mod.col(k), 0) for k in _data_cols(p))
    io = mod.fcol(f"{p}_F_READ_TIME") + mod.fcol(f"{p}_F_WRITE_TIME")
    opens = np.maximum(mod.col(f"{p}_OPENS"), 0)
    if p == "STDIO":
        opens = opens + np.maximum(mod.col("STDIO_FDOPENS"), 0)
    meta = mod.fcol(f"{p}_F_META_TIME")
    return [
        {
            "module": p,
            "file": file_index[int(rid)],
            "rank": int(rank),
            "reads": int(reads[i]),
            "writes": int(writes[i]),
            "bytes_read": float(br[i]),
            "bytes_written": float(bw[i]),
            "io_time_s": float(io[i]),
            "meta_time_s": float(meta[i]),
            "opens": int(opens[i]),
        }
        for i, (rid, rank) in enumerate(zip(mod.ids.tolist(), mod.rank.tolist(), strict=True))
    ]


@dataclass
class _Spec:
    """Calls of one (record, direction) to draw, with everything the counters say about them."""

    record: int
    file: int
    write: bool
    n: int
    bytes: int
    hist: IntArray | None  # ten bucket counts, None for no histogram
    seq: int
    consec: int
    strides: list[tuple[int, int]]  # (stride, count), nonzero strides only
    access: list[tuple[int, int]]  # (size, count) common access sizes
    t0: float
    t1: float
    busy_s: float
    rank: int  # -1: dealt to ranks 0 .. ranks-1
    ranks: int
    stream: bool  # STDIO: contiguous from 0
    timed: bool = True  # False: the log has no timestamps, t0..t1 is the whole run


def _specs(
    mod: _Module, base: int, file_index: dict[int, int], nprocs: int, run_time: float
) -> list[_Spec]:
    p = mod.name
    out: list[_Spec] = []
    posix = p == "POSIX"
    strides = [
        (mod.col(f"POSIX_STRIDE{k}_STRIDE"), mod.col(f"POSIX_STRIDE{k}_COUNT")) for k in range(1, 5)
    ]
    access = [
        (mod.col(f"POSIX_ACCESS{k}_ACCESS"), mod.col(f"POSIX_ACCESS{k}_COUNT")) for k in range(1, 5)
    ]
    for direction, (calls, nbytes) in (
        ("READ", (f"{p}_READS", f"{p}_BYTES_READ")),
        ("WRITE", (f"{p}_WRITES", f"{p}_BYTES_WRITTEN")),
    ):
        n_all = np.maximum(mod.col(calls), 0)
        b_all = np.maximum(mod.col(nbytes), 0)
        verb = "READS" if direction == "READ" else "WRITES"
        hist_all = np.stack([mod.col(f"POSIX_SIZE_{direction}_{b}") for b in _BUCKETS], axis=1)
        seq_all = mod.col(f"POSIX_SEQ_{verb}")
        con_all = mod.col(f"POSIX_CONSEC_{verb}")
        t0 = mod.fcol(f"{p}_F_{direction}_START_TIMESTAMP")
        t1 = mod.fcol(f"{p}_F_{direction}_END_TIMESTAMP")
        busy = mod.fcol(f"{p}_F_{direction}_TIME")
        for i in np.flatnonzero(n_all > 0).tolist():
            n = int(n_all[i])
            rank = int(mod.rank[i])
            ranks = nprocs if rank < 0 else 1
            if posix:
                hist: IntArray | None = hist_all[i].astype(np.int64)
                seq, consec = int(seq_all[i]), int(con_all[i])
                st = [(int(s[i]), int(c[i])) for s, c in strides if s[i] > 0 and c[i] > 0]
                ac = [(int(s[i]), int(c[i])) for s, c in access if s[i] >= 0 and c[i] > 0]
            else:  # STDIO: no histogram, offsets as a stream from 0 per rank
                hist, st, ac = None, [], []
                seq = consec = n - min(n, ranks)
            start, end = float(t0[i]), float(t1[i])
            timed = math.isfinite(start) and math.isfinite(end) and end > 0 and start <= end
            if not timed:  # no timestamps: the whole run
                start, end = 0.0, max(run_time, 0.0)
            out.append(
                _Spec(
                    record=base + i,
                    file=file_index[int(mod.ids[i])],
                    write=direction == "WRITE",
                    n=n,
                    bytes=int(b_all[i]),
                    hist=hist,
                    seq=seq,
                    consec=consec,
                    strides=st,
                    access=ac,
                    t0=start,
                    t1=end,
                    busy_s=float(busy[i]) if math.isfinite(busy[i]) else 0.0,
                    rank=rank,
                    ranks=ranks,
                    stream=not posix,
                    timed=timed,
                )
            )
    return out


#: Call counters of modules whose calls are not ``<PREFIX>_READS``/``_WRITES`` alone (read
#: counters, write counters).  MPI-IO's four kinds are disjoint; a DFS call counts in
#: ``DFS_READS`` or ``DFS_READXS`` and, when asynchronous, in ``DFS_NB_READS`` too, so the
#: latter is left out (darshan-runtime/lib/darshan-dfs.c, ``DFS_RECORD_READ``); DAOS counts
#: object, array and key-value calls apart (darshan-runtime/lib/darshan-daos.c).
_CALL_COUNTERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "MPI-IO": (
        ("MPIIO_INDEP_READS", "MPIIO_COLL_READS", "MPIIO_SPLIT_READS", "MPIIO_NB_READS"),
        ("MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES", "MPIIO_SPLIT_WRITES", "MPIIO_NB_WRITES"),
    ),
    "PNETCDF_VAR": (
        ("PNETCDF_VAR_INDEP_READS", "PNETCDF_VAR_COLL_READS", "PNETCDF_VAR_NB_READS"),
        ("PNETCDF_VAR_INDEP_WRITES", "PNETCDF_VAR_COLL_WRITES", "PNETCDF_VAR_NB_WRITES"),
    ),
    "DFS": (("DFS_READS", "DFS_READXS"), ("DFS_WRITES", "DFS_WRITEXS")),
    "DAOS": (
        ("DAOS_OBJ_FETCHES", "DAOS_ARRAY_READS", "DAOS_KV_GETS"),
        ("DAOS_OBJ_UPDATES", "DAOS_ARRAY_WRITES", "DAOS_KV_PUTS"),
    ),
}
#: Why a module's calls are not replayed (modules not listed: no model replays them).
_WHY_NOT: dict[str, str] = {
    "DFS": "DAOS file system calls: no flashsim model serves DAOS",
    "DAOS": "DAOS object calls (under DFS): no flashsim model serves DAOS",
}


def unreplayed_modules(raw: dict[str, Any]) -> tuple[UnreplayedModule, ...]:
    """Every module of a log with counters that is not replayed, with its own counts.

    Modules above POSIX (:data:`ABOVE_POSIX`) are counted again as the POSIX
    calls replayed; any other (DFS, DAOS, ...) is not in the replay at all.
    """
    out = []
    for m, data in raw["counters"].items():
        if m in REPLAYED_MODULES:
            continue
        names, c = list(data["names"]), np.asarray(data["counters"])
        fnames, f = list(data["fnames"]), np.asarray(data["fcounters"])
        pre = "MPIIO" if m == "MPI-IO" else m
        read_cols, write_cols = _CALL_COUNTERS.get(m, ((f"{pre}_READS",), (f"{pre}_WRITES",)))

        def total(cols: Sequence[str], names: list[str] = names, c: IntArray = c) -> int:
            idx = [names.index(k) for k in cols if k in names]
            return int(np.maximum(c[:, idx], 0).sum()) if idx else 0

        times = [fnames.index(k) for k in (f"{pre}_F_READ_TIME", f"{pre}_F_WRITE_TIME")
                 if k in fnames]  # fmt: skip
        known = f[:, times][f[:, times] >= 0] if times else np.zeros(0)
        above = m in ABOVE_POSIX
        out.append(
            UnreplayedModule(
                module=m,
                records=len(c),
                reads=total(read_cols),
                writes=total(write_cols),
                bytes_read_B=float(total((f"{pre}_BYTES_READ",))),
                bytes_written_B=float(total((f"{pre}_BYTES_WRITTEN",))),
                recorded_io_time_s=float(known.sum()) if known.size else None,
                above_posix=above,
                reason=(
                    "its calls reach the file system as the POSIX calls replayed"
                    if above
                    else _WHY_NOT.get(m, "flashsim replays POSIX and STDIO calls only")
                ),
            )
        )
    return tuple(out)


def _unreplayed_notes(modules: Sequence[UnreplayedModule]) -> list[str]:
    return [
        f"{u.module}: {u.records} record(s), {u.reads + u.writes} calls, "
        f"{u.bytes_read_B + u.bytes_written_B:.0f} B not replayed ({u.reason})"
        for u in modules
    ]


def _recorded_on(raw: dict[str, Any], files: Sequence[TraceFile], records: pd.DataFrame) -> str:
    """``"<mount> <type> (<site>, host <h>, <date>)"`` for the mount holding most bytes."""
    mounts: list[tuple[str, str]] = raw["mounts"]
    weight: dict[tuple[str, str], float] = {}
    moved = np.bincount(
        records["file"].to_numpy(dtype=np.int64),
        weights=(records["bytes_read"] + records["bytes_written"]).to_numpy(),
        minlength=len(files),
    )
    for fi, nbytes in enumerate(moved.tolist()):
        key = _filesystem(files[fi].name, mounts)
        if key[0]:
            weight[key] = weight.get(key, 0.0) + nbytes + 1e-9  # ties: most files
    mount, fstype = max(weight, key=lambda k: weight[k]) if weight else ("", "")
    text = " ".join([raw["exe"], mount, *[f.name for f in files[:50]]])
    site = ""
    for pattern, label in _SITES:
        if re.search(pattern, text):
            site = label
            break
    hosts = sorted({h for _, _, h, *_ in raw["dxt"] if h})
    start = int(raw["job"]["start_time_sec"])
    parts = [site] if site else []
    if hosts:
        parts.append(f"host {hosts[0]}" + (f" +{len(hosts) - 1}" if len(hosts) > 1 else ""))
    if start > 0:
        parts.append(datetime.datetime.fromtimestamp(start, datetime.UTC).strftime("%Y-%m-%d"))
    where = f"{mount} {fstype}".strip() or "unknown file system"
    return f"{where} ({', '.join(parts)})" if parts else where


#: Site names recognised in a log's mount points, file names and executable path (ASSUMED,
#: from the sites' documented mount points; first match wins).
_SITES = (
    (r"/var/opt/cray/dws", "Cray DataWarp"),
    (r"/pscratch\b", "NERSC Perlmutter"),
    (r"/global/cscratch1\b", "NERSC Cori"),
    (r"edison|/scratch[123]/scratchdirs", "NERSC Edison"),
    (r"/gpfs/alpine|/gpfs/orion|/lustre/orion", "OLCF"),
    (r"/lus/(grand|eagle|theta)|/gpfs/mira", "ALCF"),
    (r"/global/(project|homes|u[12]|common|cfs)\b", "NERSC"),
)


# ------------------------------------------------------------------ DXT
def _apply_dxt(
    raw: dict[str, Any],
    posix: _Module | None,
    records: pd.DataFrame,
    specs: list[_Spec],
    nprocs: int,
) -> tuple[OpTable, list[_Spec], list[str]]:
    """Traced calls, the specs still to draw (untraced records and DXT's missing calls), notes."""
    if posix is None or not raw["dxt"]:
        return OpTable.empty(), specs, []
    notes: list[str] = []
    where: dict[tuple[int, int], int] = {}
    rec_mod = records["module"].to_numpy()
    rec_rank = records["rank"].to_numpy()
    rec_file = records["file"].to_numpy()
    pos = np.flatnonzero(rec_mod == "POSIX")
    for k, i in enumerate(pos.tolist()):
        where[(int(posix.ids[k]), int(rec_rank[i]))] = i
    parts: dict[str, list[FloatArray]] = {"seg": [], "rank": [], "rec": [], "w": []}
    orphans = 0
    for rid, dxt_rank, _host, reads, writes in raw["dxt"]:
        row = where.get((rid, dxt_rank), where.get((rid, -1)))
        if row is None or not 0 <= dxt_rank < nprocs:
            orphans += len(reads) + len(writes)
            continue
        for segs, is_write in ((reads, 0.0), (writes, 1.0)):
            if len(segs):
                parts["seg"].append(segs)
                parts["rank"].append(np.full(len(segs), float(dxt_rank)))
                parts["rec"].append(np.full(len(segs), float(row)))
                parts["w"].append(np.full(len(segs), is_write))
    if orphans:
        notes.append(f"{orphans} DXT calls on files without a POSIX record were dropped")
    if not parts["seg"]:
        return OpTable.empty(), specs, notes
    seg = np.vstack(parts["seg"])
    rank = np.concatenate(parts["rank"]).astype(np.int64)
    rec = np.concatenate(parts["rec"]).astype(np.int64)
    write = np.concatenate(parts["w"]).astype(bool)
    start = np.maximum(seg[:, 2], 0.0)
    end = np.maximum(seg[:, 3], start)
    order = np.lexsort((end, start, write, rec))
    seg, start, end = seg[order], start[order], end[order]
    rank, rec, write = rank[order], rec[order], write[order]

    keep = np.ones(len(rec), dtype=bool)
    rest: list[_Spec] = []
    dropped = refill = redrawn = untraced = 0
    key = rec * 2 + write
    for spec in specs:
        k = spec.record * 2 + int(spec.write)
        idx = np.arange(np.searchsorted(key, k, "left"), np.searchsorted(key, k, "right"))
        if spec.stream or not len(idx):
            untraced += not spec.stream
            rest.append(spec)
            continue
        if len(idx) > spec.n:  # more traced than counted: keep the first n
            keep[idx[spec.n :]] = False
            dropped += len(idx) - spec.n
            idx = idx[: spec.n]
        traced_bytes = int(seg[idx, 1].sum())
        missing, missing_b = spec.n - len(idx), spec.bytes - traced_bytes
        if (missing == 0 and missing_b != 0) or missing_b < 0:
            keep[idx] = False  # trace disagrees with the counters: draw it all
            redrawn += 1
            rest.append(spec)
            continue
        if missing == 0:
            continue
        refill += missing
        rest.append(_residual(spec, seg[idx], rank[idx], start[idx], end[idx], missing, missing_b))
    if untraced:
        notes.append(
            f"{untraced} POSIX record direction(s) without a DXT trace drawn from counters"
        )
    if dropped:
        notes.append(f"{dropped} DXT calls beyond their record's counters were dropped")
    if redrawn:
        notes.append(
            f"{redrawn} record direction(s) whose DXT bytes disagree with the counters: "
            "drawn instead"
        )
    if refill:
        notes.append(
            f"DXT traced fewer calls than the counters count (its buffers truncate): "
            f"{refill} missing calls drawn from the counters after the traced ones"
        )
    ops = OpTable(
        rank=rank[keep],
        file=rec_file[rec[keep]].astype(np.int64),
        record=rec[keep],
        write=write[keep],
        offset_B=np.maximum(seg[keep, 0], 0.0),
        size_B=np.maximum(seg[keep, 1], 0.0),
        start_s=start[keep],
        end_s=end[keep],
    )
    return ops, rest, notes


def _residual(
    spec: _Spec,
    seg: FloatArray,
    rank: IntArray,
    start: FloatArray,
    end: FloatArray,
    missing: int,
    missing_b: int,
) -> _Spec:
    """The spec of a record's calls that DXT did not trace."""
    hist = None
    if spec.hist is not None:
        sizes = seg[:, 1].astype(np.int64)
        traced = np.bincount(np.searchsorted(BUCKET_UPPER_B, sizes, side="left"), minlength=10)
        left = spec.hist - traced[:10]
        hist = left if np.all(left >= 0) else None
    order = np.lexsort((start, rank))
    off, size, rk = seg[order, 0], seg[order, 1], rank[order]
    last = np.zeros(len(off))
    last[1:] = off[:-1] + size[:-1] - 1
    last[np.r_[True, rk[1:] != rk[:-1]]] = 0
    seq = int(np.sum(off > last))
    consec = int(np.sum(off == last + 1))
    new_seq = min(max(spec.seq - seq, 0), missing)
    new_consec = min(max(spec.consec - consec, 0), new_seq)
    t0 = float(end.max()) if len(end) else spec.t0
    busy = max(spec.busy_s - float(np.sum(end - start)), 0.0)
    return _Spec(
        **{
            **spec.__dict__,
            "n": missing,
            "bytes": missing_b,
            "hist": hist,
            "seq": new_seq,
            "consec": new_consec,
            "t0": t0,
            "t1": max(spec.t1, t0),
            "busy_s": busy,
        }
    )


# ------------------------------------------------------------------ drawing calls
@dataclass
class _Stats:
    hist_fallback: int = 0
    seq_inexact: int = 0
    squeezed: int = 0
    untimed: int = 0

    def notes(self) -> list[str]:
        out = []
        if self.hist_fallback:
            out.append(
                f"{self.hist_fallback} record direction(s) whose size histogram cannot hold "
                "their bytes: sizes split equally instead"
            )
        if self.seq_inexact:
            out.append(
                f"{self.seq_inexact} rank sequence(s) with zero-byte calls: SEQ counts inexact"
            )
        if self.untimed:
            out.append(
                f"{self.untimed} record direction(s) without timestamps in the log: "
                "their calls are spread over the whole run"
            )
        if self.squeezed:
            out.append(
                f"{self.squeezed} rank sequence(s) whose recorded I/O time exceeds their "
                "first-start..last-end window (Darshan adds fsync time to F_WRITE_TIME): "
                "durations scaled to fit"
            )
        return out


def _split(total: IntArray, caps: IntArray, group: IntArray, n_groups: int) -> IntArray:
    """Integers ``<= caps`` summing to ``total[group]`` per group, in proportion to ``caps``.

    Requires ``total <= sum(caps)`` per group.  Largest-remainder style: floors
    first, then one more to the group's first members that still have room.
    """
    capsum = np.bincount(group, weights=caps, minlength=n_groups).astype(np.int64)
    parts = (total[group] * caps) // np.maximum(capsum[group], 1)  # exact integer floors
    rem = total - np.bincount(group, weights=parts, minlength=n_groups).astype(np.int64)
    room = (parts < caps).astype(np.int64)
    # rank of each member among its group's members with room (group is sorted)
    csum = np.cumsum(room)
    first = np.searchsorted(group, np.arange(n_groups))
    before = np.where(first > 0, csum[np.maximum(first - 1, 0)], 0)
    order_in_group = csum - before[group] - room
    parts += (room.astype(bool) & (order_in_group < rem[group])).astype(np.int64)
    return parts


def _draw_sizes(specs: list[_Spec], stats: _Stats) -> list[IntArray]:
    """Sizes of each spec's calls (bytes), histogram order; exact counts, bytes and buckets."""
    out: list[IntArray] = []
    used: dict[tuple[int, int], int] = {}  # (record, access size) -> count used by reads
    for spec in specs:
        n, total = spec.n, spec.bytes
        hist = spec.hist
        if hist is not None and (hist.sum() != n or np.any(hist < 0)):
            hist = None
        groups: list[tuple[int, int]] = []  # (count, bytes) of equal-size groups
        if hist is not None:
            fixed = _common_sizes(spec, hist, used)
            for sizes in (fixed, []):
                left = hist.copy()
                rest_b = total
                for size, count in sizes:
                    left[_bucket(size)] -= count
                    rest_b -= size * count
                plan = _bucket_totals(left, rest_b)
                if plan is not None:
                    for size, count in sizes:
                        used[(spec.record, size)] = used.get((spec.record, size), 0) + count
                    groups = [(count, size * count) for size, count in sizes]
                    groups += [(int(c), int(b)) for c, b in zip(left, plan, strict=True) if c > 0]
                    break
            else:
                hist = None
        if hist is None:
            if spec.hist is not None:
                stats.hist_fallback += 1
            groups = [(n, total)]
        sizes_out = [
            np.full(count, b // count, dtype=np.int64) + (np.arange(count) < b % count)
            for count, b in groups
            if count > 0
        ]
        out.append(np.concatenate(sizes_out) if sizes_out else np.zeros(0, dtype=np.int64))
    return out


def _bucket(size: int) -> int:
    return int(np.searchsorted(BUCKET_UPPER_B, size, side="left"))


def _common_sizes(
    spec: _Spec, hist: IntArray, used: dict[tuple[int, int], int]
) -> list[tuple[int, int]]:
    """Common access sizes this direction may use, capped by what reads took and by buckets."""
    left = hist.copy()
    out = []
    for size, count in spec.access:
        k = _bucket(size)
        take = min(count - used.get((spec.record, size), 0), int(left[k]))
        if take > 0:
            out.append((size, take))
            left[k] -= take
    return out


def _bucket_totals(counts: IntArray, total: int) -> IntArray | None:
    """Bytes per bucket for ``counts`` calls summing to ``total``, or None if impossible.

    Every bucket sits at the same relative position ``t`` between its bounds
    (``t`` solves the byte total); integer remainders go to buckets with room.
    A zero-byte call is avoided when the total allows (lower bound 1 B).
    """
    if total < 0 or np.any(counts < 0):
        return None
    lo = BUCKET_LOWER_B.copy()
    if total >= int(np.sum(counts * np.maximum(lo, 1))):
        lo[0] = 1
    hi = np.append(BUCKET_UPPER_B, 0).astype(np.int64)
    top = int(counts[-1])
    hi[-1] = max(int(lo[-1]), -(-total // top) if top else 0)
    low, high = int(np.sum(counts * lo)), int(np.sum(counts * hi))
    if not low <= total <= high:
        return None
    t = (total - low) / (high - low) if high > low else 0.0
    plan = counts * lo + np.floor(t * (counts * (hi - lo)).astype(np.float64)).astype(np.int64)
    plan = np.clip(plan, counts * lo, counts * hi)
    deficit = total - int(plan.sum())
    for k in range(len(plan)):
        if deficit > 0:
            add = min(deficit, int(counts[k] * hi[k] - plan[k]))
            plan[k] += add
            deficit -= add
        elif deficit < 0:
            sub = min(-deficit, int(plan[k] - counts[k] * lo[k]))
            plan[k] -= sub
            deficit += sub
    return plan if deficit == 0 else None


def _synthesise(specs: list[_Spec], rng: np.random.Generator) -> tuple[OpTable, _Stats]:
    """Draw the calls of every spec (see the module docstring); vectorised over all calls."""
    stats = _Stats()
    specs = [s for s in specs if s.n > 0]
    if not specs:
        return OpTable.empty(), stats
    m = len(specs)
    stats.untimed = sum(not s.timed for s in specs)
    sizes_list = _draw_sizes(specs, stats)
    n_i = np.array([s.n for s in specs], dtype=np.int64)
    item = np.repeat(np.arange(m), n_i)
    size = np.concatenate(sizes_list).astype(np.int64)
    # random order of sizes inside each item
    size = size[np.argsort(item + rng.random(len(size)), kind="stable")]
    first_call = np.concatenate([[0], np.cumsum(n_i)[:-1]])
    j = np.arange(len(size)) - first_call[item]
    ranks_i = np.array([s.ranks for s in specs], dtype=np.int64)
    q = (j * ranks_i[item]) // n_i[item]  # rank slot inside the item
    # chunks: (item, q) runs
    new_chunk = np.ones(len(size), dtype=bool)
    new_chunk[1:] = (item[1:] != item[:-1]) | (q[1:] != q[:-1])
    chunk = np.cumsum(new_chunk) - 1
    n_chunks = int(chunk[-1]) + 1
    c_item = item[new_chunk]
    c_n = np.bincount(chunk, minlength=n_chunks).astype(np.int64)
    c_start = np.flatnonzero(new_chunk)
    p = np.arange(len(size)) - c_start[chunk]  # position inside the chunk
    m_i = np.bincount(c_item, minlength=m).astype(np.int64)  # chunks per item
    c_idx = np.arange(n_chunks) - np.searchsorted(c_item, c_item)  # chunk index inside its item

    # how many of each kind per chunk
    seq_i = np.clip([s.seq for s in specs], 0, n_i).astype(np.int64)
    con_i = np.clip([s.consec for s in specs], 0, seq_i).astype(np.int64)
    nb_i = n_i - seq_i
    f_i = np.minimum(nb_i, m_i)
    c_f = (c_idx < f_i[c_item]).astype(np.int64)  # first call at offset 0
    c_o = _split(nb_i - f_i, c_n - 1, c_item, m)  # re-reads
    c_s = c_n - c_f - c_o  # sequential calls
    cap = np.where(c_f == 1, c_s, np.maximum(c_s - 1, 0))
    need_more = con_i > np.bincount(c_item, weights=cap, minlength=m)
    cap = np.where(need_more[c_item], c_s, cap)
    c_c = _split(con_i, cap, c_item, m)
    first_kind = np.where(c_f == 1, _FIRST_AT_ZERO, np.where(c_c == c_s, _FIRST_CONSEC, _FIRST_GAP))
    c_c_rest = c_c - (first_kind == _FIRST_CONSEC)
    # kinds of the later calls, in random order
    later = p > 0
    order = np.argsort(chunk + np.where(later, 0.5 * rng.random(len(size)), 0.75), kind="stable")
    r = np.empty(len(size), dtype=np.int64)
    r[order] = np.arange(len(size)) - c_start[chunk[order]]  # rank among the later calls
    kind = np.where(
        r < c_o[chunk], _REREAD, np.where(r < c_o[chunk] + c_c_rest[chunk], _CONSEC, _GAP)
    )
    kind[~later] = first_kind[chunk[~later]]
    kind, size = _repair_zero_rereads(kind, size, chunk, c_start, c_n, stats)

    gap = _draw_gaps(specs, item, (kind == _GAP) | (kind == _FIRST_GAP), rng)

    # offsets: segmented cumulative sum of increments
    prev_size = np.zeros(len(size), dtype=np.int64)
    prev_size[1:] = size[:-1]
    inc = np.select(
        [
            kind == _FIRST_AT_ZERO,
            kind == _FIRST_CONSEC,
            kind == _FIRST_GAP,
            kind == _REREAD,
            kind == _CONSEC,
        ],
        [0, 1, 1 + gap, 0, prev_size],
        default=prev_size + gap,
    ).astype(np.int64)
    stream = np.array([s.stream for s in specs])
    inc = np.where(stream[item] & later, prev_size, inc)
    inc = np.where(stream[item] & ~later, 0, inc)
    offset = _segmented_cumsum(inc, c_start, chunk)
    offset = offset + _rank_bases(
        specs, item, chunk, c_item, c_idx, c_start, c_n, kind, offset, size
    )

    # times
    start, end = _times(specs, item, chunk, c_start, c_n, size, rng, stats)

    own_rank = np.array([s.rank for s in specs], dtype=np.int64)[item]
    ranks = np.where(own_rank < 0, q, own_rank)
    ops = OpTable(
        rank=ranks.astype(np.int64),
        file=np.array([s.file for s in specs], dtype=np.int64)[item],
        record=np.array([s.record for s in specs], dtype=np.int64)[item],
        write=np.array([s.write for s in specs], dtype=bool)[item],
        offset_B=offset.astype(np.float64),
        size_B=size.astype(np.float64),
        start_s=start,
        end_s=end,
    )
    return ops, stats


def _draw_gaps(
    specs: list[_Spec], item: IntArray, wanted: BoolArray, rng: np.random.Generator
) -> IntArray:
    """Gap (bytes) before each sequential non-consecutive call: a common stride, weighted."""
    m = len(specs)
    vals = np.zeros((m, 4), dtype=np.int64)
    weights = np.zeros((m, 4))
    for i, s in enumerate(specs):
        if s.strides:
            for k, (v, c) in enumerate(s.strides[:4]):
                vals[i, k], weights[i, k] = v, c
        else:  # ASSUMED: one mean call size
            vals[i, 0], weights[i, 0] = max(1, round(s.bytes / s.n)), 1.0
    cum = np.cumsum(weights, axis=1)
    gap = np.zeros(len(item), dtype=np.int64)
    sel = np.flatnonzero(wanted)
    it = item[sel]
    u = rng.random(len(sel)) * cum[it, -1]
    k = np.minimum((u[:, None] >= cum[it]).sum(axis=1), 3)
    gap[sel] = vals[it, k]
    return np.maximum(gap, 1)


def _segmented_cumsum(inc: IntArray, c_start: IntArray, chunk: IntArray) -> IntArray:
    total = np.cumsum(inc)
    base = total[c_start] - inc[c_start]
    return total - base[chunk]


def _repair_zero_rereads(
    kind: IntArray, size: IntArray, chunk: IntArray, c_start: IntArray, c_n: IntArray, stats: _Stats
) -> tuple[IntArray, IntArray]:
    """Re-reads must follow a call of at least 1 B; move zero-byte calls last where needed."""
    prev_zero = np.zeros(len(size), dtype=bool)
    prev_zero[1:] = size[:-1] == 0
    bad = (kind == _REREAD) & prev_zero
    if not bad.any():
        return kind, size
    kind, size = kind.copy(), size.copy()
    for c in np.unique(chunk[bad]).tolist():
        lo, hi = int(c_start[c]), int(c_start[c] + c_n[c])
        s = size[lo:hi]
        size[lo:hi] = np.concatenate([s[s > 0], s[s == 0]])
        later = kind[lo + 1 : hi]
        kind[lo + 1 : hi] = np.sort(later, kind="stable")  # re-reads (3) before consec/gap
        z = size[lo:hi] == 0
        if np.any((kind[lo + 1 : hi] == _REREAD) & z[:-1]):
            stats.seq_inexact += 1
    return kind, size


def _rank_bases(
    specs: list[_Spec],
    item: IntArray,
    chunk: IntArray,
    c_item: IntArray,
    c_idx: IntArray,
    c_start: IntArray,
    c_n: IntArray,
    kind: IntArray,
    offset: IntArray,
    size: IntArray,
) -> IntArray:
    """Shift of each call so that shared-file ranks starting mid-file do not all start together.

    A rank of a shared record whose first call is sequential (not at offset 0)
    starts at ``2 + q * mean size`` when the record's strides show interleaving
    (a stride of at least ``ranks - 1`` mean sizes), else right after the
    regions of the ranks before it.  Other chunks keep their offsets.
    """
    first = c_start
    last = c_start + c_n - 1
    extent = offset[last] + size[last] - offset[first]  # bytes spanned by the chunk
    shift = np.zeros(len(c_item), dtype=np.int64)
    bounds = np.searchsorted(c_item, np.arange(len(specs) + 1))
    for i, s in enumerate(specs):
        if s.ranks <= 1:
            continue
        sel = np.arange(bounds[i], bounds[i + 1])
        mid = kind[first[sel]] == _FIRST_GAP
        if not mid.any():
            continue
        mean = max(1, round(s.bytes / s.n))
        interleaved = any(v >= (len(sel) - 1) * mean for v, _ in s.strides)
        if interleaved:
            base = c_idx[sel] * mean
        else:
            base = np.concatenate([[0], np.cumsum(extent[sel])[:-1]])
        # first call at 2 + base (offset >= 2: sequential, not consecutive, for Darshan)
        shift[sel] = np.where(mid, 2 + base - offset[first[sel]], 0)
    return shift[chunk]


def _times(
    specs: list[_Spec],
    item: IntArray,
    chunk: IntArray,
    c_start: IntArray,
    c_n: IntArray,
    size: IntArray,
    rng: np.random.Generator,
    stats: _Stats,
) -> tuple[FloatArray, FloatArray]:
    """Start and end of each call: busy time by weight, idle time by uniform spacings."""
    m = len(specs)
    n_chunks = len(c_start)
    busy_i = np.array([max(s.busy_s, 0.0) for s in specs])
    mean_i = np.array([s.bytes / s.n for s in specs])
    t0_i = np.array([s.t0 for s in specs])
    t1_i = np.array([s.t1 for s in specs])
    w = size.astype(np.float64) + mean_i[item]
    w = np.where((np.bincount(item, weights=w, minlength=m) > 0)[item], w, 1.0)  # all 0 B
    dur = busy_i[item] * w / np.bincount(item, weights=w, minlength=m)[item]
    c_item = item[c_start]
    window = np.maximum(t1_i - t0_i, 0.0)[c_item]
    c_busy: FloatArray = np.bincount(chunk, weights=dur, minlength=n_chunks).astype(np.float64)
    over = c_busy > window * (1 + 1e-12)
    stats.squeezed += int(np.sum(over & (c_busy > 0)))
    scale = np.ones(n_chunks)
    scale[over] = window[over] / c_busy[over]  # over implies c_busy > window >= 0
    dur = dur * scale[chunk]
    c_busy = c_busy * scale
    idle = np.maximum(window - c_busy, 0.0)
    e = rng.exponential(1.0, len(size))
    later = np.ones(len(size), dtype=bool)
    later[c_start] = False
    e[~later] = 0.0
    e_sum = np.bincount(chunk, weights=e, minlength=n_chunks)
    pre_gap = np.where(
        e_sum[chunk] > 0, idle[chunk] * e / np.where(e_sum[chunk] > 0, e_sum[chunk], 1), 0.0
    )
    # start = t0 + (steps of the chunk's earlier calls) + own gap: monotone under rounding
    before = np.concatenate([[0.0], np.cumsum(pre_gap + dur)[:-1]])
    start = t0_i[item] + ((before - before[c_start][chunk]) + pre_gap)
    end = np.maximum(np.minimum(start + dur, np.maximum(t1_i[item], t0_i[item])), start)
    return start, end


__all__ = [
    "ABOVE_POSIX",
    "BUCKET_LOWER_B",
    "BUCKET_UPPER_B",
    "MAX_NPROCS",
    "REPLAYED_MODULES",
    "SUPPORTED_VERSIONS",
    "DarshanLogError",
    "ModelMatch",
    "check_header",
    "check_job_header",
    "closest_model",
    "model_match",
    "read_darshan",
    "sequential_counts",
    "unreplayed_modules",
]
