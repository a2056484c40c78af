"""Darshan replay (``workload = "darshan"``, ``flashsim replay``): one job's log run on a system.

The log is read by :mod:`flashsim.workloads.darshan_log` into a
:class:`~flashsim.workloads.trace.JobTrace` (DXT calls as recorded, or calls
drawn from the counters; its notes say which) and its ranks replayed by
:class:`~flashsim.workloads.replay.JobEngine` on client nodes
``first_node ..`` at ``ranks_per_node``.  The result reports, per file, per
rank and for the whole job, the calls and bytes replayed and the simulated
I/O time beside the log's own counters and recorded I/O time; conservation
(replayed calls and bytes equal every counter record) is checked on every
run and stated in the findings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, PrivateAttr, ValidationInfo, field_validator

from flashsim.config import StrictModel
from flashsim.measure.results import PhaseDetails, PhaseResult
from flashsim.workloads.job_tally import FileTally, IoTally, ModuleTally, RankTally, tally_job
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
from flashsim.workloads.trace import JobTrace, UnreplayedModule

#: Prefix of a ``log`` naming a file shipped with pydarshan (its example logs).
PYDARSHAN_PREFIX = "pydarshan:"
#: Files and ranks the text report lists (the most bytes, the most simulated I/O time);
#: ``--json`` lists them all.
LISTED = 5
#: Simulated over recorded I/O time below which the report says why it is so small.
SMALL_RATIO = 0.01


def resolve_log(text: str, base_dir: Path) -> Path:
    """The path of a ``log``: relative to ``base_dir``, or ``pydarshan:<path in the package>``.

    Raises
    ------
    ValueError
        When the file does not exist.
    """
    if text.startswith(PYDARSHAN_PREFIX):
        import darshan

        path = Path(darshan.__file__).parent / text[len(PYDARSHAN_PREFIX) :]
    else:
        path = base_dir / text
    if path.is_dir():
        raise ValueError(f"{path} is a directory; expected a Darshan log file")
    if not path.is_file():
        raise ValueError(f"no such log file {path}")
    return path.resolve()


def load_trace(path: Path, seed: int = 0) -> JobTrace:
    """Read a Darshan log (see :func:`flashsim.workloads.darshan_log.read_darshan`)."""
    import numpy as np

    from flashsim.workloads.darshan_log import read_darshan

    return read_darshan(path, rng=np.random.default_rng(seed))


class DarshanPhase(StrictModel):
    """Replay one Darshan log (``workload = "darshan"``)."""

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["darshan"]
    log: str = Field(
        description=(
            "The Darshan log: a path relative to the scenario file, or "
            "`pydarshan:<path>` for a log shipped with pydarshan, e.g. "
            "`pydarshan:examples/example_logs/example.darshan`."
        )
    )
    ranks_per_node: Annotated[int, Field(ge=1)] = Field(
        32,
        description=(
            "MPI ranks per client node (Darshan does not record it; 32 is a Cori "
            "Haswell node's cores, where most example logs ran)."
        ),
    )
    first_node: Annotated[int, Field(ge=0)] = Field(
        0, description="First client node of the job (jobs at once use different nodes)."
    )
    speedup: Speedup = Field(
        "none",
        description=(
            "`none`: keep the computation between each rank's calls as recorded; "
            "`io-only`: drop it (calls back to back)."
        ),
    )
    merge: MergeCalls = True
    merge_gap: MergeGap = "1 ms"
    direct_io: bool = Field(False, description="Calls bypass the client cache (O_DIRECT).")
    fidelity: FidelityOverride = None
    _trace: JobTrace | None = PrivateAttr(None)

    def trace(self, seed: int) -> JobTrace:
        """The log read into a trace (calls drawn from counters use ``seed``); read once."""
        if self._trace is None:
            self._trace = load_trace(Path(self.log), seed)
        return self._trace

    @field_validator("log")
    @classmethod
    def _exists(cls, value: str, info: ValidationInfo) -> str:
        """Resolve the log's path (relative to the scenario file) and check it exists."""
        base = Path((info.context or {}).get("scenario_dir", "."))
        return str(resolve_log(value, base))


@dataclass(frozen=True, kw_only=True)
class ReplayDetails(PhaseDetails):
    """What a replay measured, beside what the log recorded (``--json`` ``extra``).

    Attributes
    ----------
    log : str
        The log's path.
    job : str
        The executable the log names.
    nprocs : int
        Ranks.
    timing : str
        ``dxt`` (calls as recorded) or ``counters`` (calls drawn from counters).
    recorded_on : str
        Where the log says the job ran.
    speedup : str
        ``none`` or ``io-only``.
    transfers : int
        Transfers simulated (calls after merging).
    conserved : bool
        Replayed calls and bytes equal every counter record of the log.
    mismatches : list of str
        Records that were not conserved (empty when ``conserved``).
    total : IoTally
        The whole job: calls, bytes, simulated and recorded I/O time (s).
    sim_runtime_s : float
        From the job's start to its last call's end, simulated (s).
    recorded_runtime_s : float or None
        The job's run time as the log recorded it (s).
    io_time_ratio : float or None
        Simulated over recorded cumulative I/O time.
    files : list of FileTally
        Per file.
    ranks : list of RankTally
        Per rank.
    notes : list of str
        What is exact and what was drawn (the reader's notes).
    modules : list of ModuleTally
        Per replayed module (POSIX, STDIO): calls, bytes, simulated and
        recorded I/O time.
    not_replayed : list of UnreplayedModule
        The log's other modules with their own counts: above POSIX (their
        calls are the POSIX calls replayed) or not in the replay at all.
    writes_absorbed : int
        Write calls that returned at once into the client's write-back budget.
    bytes_absorbed_B : float
        Their bytes.
    reads_cached : int
        Read calls the client's page cache served.
    bytes_cached_B : float
        Their bytes.
    write_behind_B : float
        A rank's dirty-page budget (bytes; the largest of its kinds of write).
    slowest_rank : int or None
        The rank that finished last.
    slowest_compute_s, slowest_io_s : float
        Its time computing between calls and in its I/O calls (s).
    """

    log: str
    job: str
    nprocs: int
    timing: str
    recorded_on: str
    speedup: str
    transfers: int
    conserved: bool
    mismatches: list[str]
    total: IoTally
    sim_runtime_s: float
    recorded_runtime_s: float | None
    io_time_ratio: float | None
    files: list[FileTally] = field(default_factory=list)
    ranks: list[RankTally] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    modules: list[ModuleTally] = field(default_factory=list)
    not_replayed: list[UnreplayedModule] = field(default_factory=list)
    writes_absorbed: int = 0
    bytes_absorbed_B: float = 0.0
    reads_cached: int = 0
    bytes_cached_B: float = 0.0
    write_behind_B: float = 0.0
    slowest_rank: int | None = None
    slowest_compute_s: float = 0.0
    slowest_io_s: float = 0.0

    def findings(self) -> list[str]:
        """Conservation, what was not replayed, I/O and run time beside the log, files, ranks."""
        t = self.total
        replayed = "/".join(m.module for m in self.modules) or "POSIX/STDIO"
        lines = [
            f"{self.job or 'job'}: {self.nprocs} ranks, calls {self.timing}, "
            f"recorded on {self.recorded_on or 'unknown'}",
            f"replayed {t.reads:,} reads ({t.bytes_read_B / 1e9:.4g} GB) and {t.writes:,} "
            f"writes ({t.bytes_written_B / 1e9:.4g} GB) in {self.transfers:,} transfers; "
            + (
                f"conserved: every {replayed} counter record matches"
                if self.conserved
                else f"NOT conserved ({replayed} counter records)"
            ),
        ]
        lines.extend(self._not_replayed_lines())
        rec = t.recorded_io_time_s
        ratio = f" (x{self.io_time_ratio:.3g})" if self.io_time_ratio is not None else ""
        lines.append(
            f"cumulative I/O time: simulated {t.sim_io_time_s:.4g} s, recorded "
            + (f"{rec:.4g} s{ratio}" if rec is not None else "not in the log")
        )
        if self.io_time_ratio is not None and self.io_time_ratio < SMALL_RATIO:
            lines.append(self._why_small())
        run = self.recorded_runtime_s
        lines.append(
            f"run time: simulated {self.sim_runtime_s:.4g} s (speedup {self.speedup}), recorded "
            + (f"{run:.4g} s" if run is not None else "unknown")
        )
        if self.slowest_rank is not None:
            lines.append(
                f"what limited it: the last rank to finish (rank {self.slowest_rank}) spent "
                f"{self.slowest_compute_s:.4g} s computing between calls and "
                f"{self.slowest_io_s:.4g} s in I/O calls"
            )
        lines.extend(self._file_lines())
        lines.extend(self._rank_lines())
        lines.extend(self.mismatches[:3])
        return lines

    def _not_replayed_lines(self) -> list[str]:
        out = []
        missing = [u for u in self.not_replayed if not u.above_posix]
        if missing:
            out.append(
                "NOT replayed (not in the times below): "
                + "; ".join(
                    f"{u.module} {u.records:,} record(s), {u.reads + u.writes:,} calls, "
                    f"{(u.bytes_read_B + u.bytes_written_B) / 1e6:.4g} MB ({u.reason})"
                    for u in missing
                )
            )
        above = [u for u in self.not_replayed if u.above_posix and u.reads + u.writes > 0]
        if above:
            out.append(
                "above POSIX, replayed as its POSIX calls: "
                + ", ".join(f"{u.module} {u.reads + u.writes:,} calls" for u in above)
            )
        return out

    def _why_small(self) -> str:
        t = self.total
        parts = []
        if self.writes_absorbed:
            parts.append(
                f"{self.writes_absorbed:,} of {t.writes:,} writes "
                f"({self.bytes_absorbed_B / 1e9:.4g} GB) returned at once into the client's "
                f"write-back budget ({self.write_behind_B / 1e6:.4g} MB per rank): no rank "
                "got a budget ahead of the servers, so none waited"
            )
        if self.reads_cached:
            parts.append(
                f"{self.reads_cached:,} of {t.reads:,} reads "
                f"({self.bytes_cached_B / 1e9:.4g} GB) were served from the page cache"
            )
        if parts:
            parts.append("the model charges such calls no memory-copy or system-call time")
        else:
            parts.append("every call's round trip and bandwidth on this model are faster")
        return "why so small: " + "; ".join(parts)

    def _file_lines(self) -> list[str]:
        if not self.files:
            return []
        top = sorted(self.files, key=lambda f: -(f.bytes_read_B + f.bytes_written_B))
        out = [f"files (the {min(LISTED, len(top))} moving most bytes; --json lists all):"]
        for f in top[:LISTED]:
            name = f.name if len(f.name) <= 48 else "..." + f.name[-45:]
            out.append(f"  {name}: {_io_row(f)}")
        if len(top) > LISTED:
            out.append(f"  ... and {len(top) - LISTED:,} more")
        return out

    def _rank_lines(self) -> list[str]:
        if not self.ranks:
            return []
        top = sorted(self.ranks, key=lambda r: (-r.sim_io_time_s, r.rank))
        out = [f"ranks (the {min(LISTED, len(top))} with most simulated I/O time):"]
        out.extend(f"  rank {r.rank}: {_io_row(r)}" for r in top[:LISTED])
        if len(top) > LISTED:
            out.append(f"  ... and {len(top) - LISTED:,} more")
        return out


def _io_row(t: IoTally) -> str:
    rec = t.recorded_io_time_s
    return (
        f"{t.reads:,} reads, {t.writes:,} writes, "
        f"{(t.bytes_read_B + t.bytes_written_B) / 1e6:.4g} MB, I/O simulated "
        f"{t.sim_io_time_s:.4g} s, recorded " + (f"{rec:.4g} s" if rec is not None else "-")
    )


def _absorbed(times: JobTimes) -> tuple[int, float, int, float]:
    """Write calls (and bytes) that returned at once, read calls (and bytes) the cache served."""
    tr = times.transfers
    moving = (tr.size_B > 0) & np.isfinite(times.end_s)
    instant = moving & tr.write & ~tr.cached & (times.end_s - times.start_s <= 0)
    cached = moving & ~tr.write & tr.cached
    return (
        int(tr.calls[instant].sum()),
        float(tr.size_B[instant].sum()),
        int(tr.calls[cached].sum()),
        float(tr.size_B[cached].sum()),
    )


def _slowest(times: JobTimes) -> tuple[int | None, float, float]:
    """The rank that finished last, its computation between calls and its I/O time (s)."""
    ends = times.rank_end_s
    if not np.isfinite(ends).any():
        return None, 0.0, 0.0
    rank = int(np.nanargmax(ends))
    tr = times.transfers
    mine = (tr.rank == rank) & np.isfinite(times.end_s)
    return rank, float(tr.gap_s[mine].sum()), float(times.io_time_s[mine].sum())


def run_darshan(
    system: JobTarget, phase: DarshanPhase, fidelity: Literal["flow", "request"], seed: int
) -> PhaseResult:
    """Replay ``phase``'s log on ``system`` and tally it against the log."""
    path = Path(phase.log)
    trace = phase.trace(seed)
    job = PlacedJob(
        name=phase.name,
        trace=trace,
        first_node=phase.first_node,
        ranks_per_node=phase.ranks_per_node,
        direct_io=phase.direct_io,
    )
    engine = JobEngine(system, fidelity, phase.speedup, phase.merge, phase.merge_gap)
    start = system.sim.now
    (times,) = engine.run([job])
    tally = tally_job(times)
    absorbed, absorbed_B, cached, cached_B = _absorbed(times)
    slowest, compute_s, io_s = _slowest(times)
    total = tally.total
    moved = total.bytes_read_B + total.bytes_written_B
    span = times.makespan_s
    rec = total.recorded_io_time_s
    details = ReplayDetails(
        log=str(path),
        job=trace.name,
        nprocs=trace.nprocs,
        timing=trace.timing,
        recorded_on=trace.recorded_on,
        speedup=phase.speedup,
        transfers=len(times.transfers),
        conserved=tally.conserved,
        mismatches=tally.mismatches,
        total=total,
        sim_runtime_s=span,
        recorded_runtime_s=trace.run_time_s if math.isfinite(trace.run_time_s) else None,
        io_time_ratio=total.sim_io_time_s / rec if rec else None,
        files=tally.files,
        ranks=tally.ranks,
        notes=list(trace.notes),
        modules=tally.modules,
        not_replayed=list(trace.unreplayed),
        writes_absorbed=absorbed,
        bytes_absorbed_B=absorbed_B,
        reads_cached=cached,
        bytes_cached_B=cached_B,
        write_behind_B=engine.write_behind_B(),
        slowest_rank=slowest,
        slowest_compute_s=compute_s,
        slowest_io_s=io_s,
    )
    calls = total.reads + total.writes
    return PhaseResult(
        name=phase.name,
        operation=_operation(total),
        bandwidth_Bps=moved / span if span > 0 else 0.0,
        iops=calls / span if span > 0 else 0.0,
        ranks=trace.nprocs,
        transfer_size_B=moved / calls if calls else 0.0,
        sim_time_s=system.sim.now - start,
        bytes_B=moved,
        extra=details,
        fidelity=fidelity,
    )


def _operation(total: IoTally) -> str:
    if total.reads and total.writes:
        return "read+write"
    return "read" if total.reads else "write"


def darshan_phase_data(log: Path, speedup: str, **keys: Any) -> dict[str, Any]:
    """The phase table ``flashsim replay`` runs: one ``darshan`` phase of ``log``."""
    return {"name": "replay", "workload": "darshan", "log": str(log), "speedup": speedup, **keys}
