"""A production mix on a system (``workload = "mix"``): many jobs, the bandwidth the servers see.

The jobs are drawn by :func:`flashsim.workloads.mix.generate_mix` from the
phase's :class:`~flashsim.workloads.mix.MixSpec` (with the scenario's seed),
placed on client nodes dealt round robin from ``first_node`` over the
``client_nodes`` the mix may use (jobs running at the same time get
different nodes unless the mix needs more than that), and run together by
:class:`~flashsim.workloads.replay.JobEngine`.  The result is what seed 003
§2 measured at Spider's controllers: the read and write bandwidth sampled
every ``interval`` (2 s there), its CDF (median, 90th and 99th percentiles,
peak; a long tail is peaks far above the median), and the read share and
request-size mix over requests, beside the spec's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from flashsim.config import Seconds, StrictModel
from flashsim.measure.results import PhaseDetails, PhaseResult
from flashsim.measure.series import bandwidth_series, cdf_summary
from flashsim.workloads.mix import MixSpec, generate_mix
from flashsim.workloads.replay import (
    FidelityOverride,
    JobEngine,
    JobTarget,
    JobTimes,
    MergeCalls,
    MergeGap,
    PlacedJob,
)

#: Key of a mix's random stream (with the scenario's seed).
MIX_STREAM = 0x3A1C

#: Request-size classes reported (upper bounds in bytes, labels): seed 003 §2's three peaks.
SIZE_BINS = (
    (16 * 1024, "<=16 KiB"),
    (512 * 1024 - 1, "16-512 KiB"),
    (512 * 1024, "512 KiB"),
    (1024 * 1024 - 1, "512 KiB-1 MiB"),
    (1024 * 1024, "1 MiB"),
    (float("inf"), ">1 MiB"),
)


class MixPhase(StrictModel):
    """A synthetic production mix (``workload = "mix"``)."""

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["mix"]
    mix: MixSpec = Field(description="The mix: arrivals, job sizes, request sizes, read share.")
    interval: Seconds = Field(
        "2 s",
        description="Bandwidth sampling interval; Spider's controllers were polled every 2 s "
        "(seed 003 §2).",
    )
    first_node: Annotated[int, Field(ge=0)] = Field(0, description="First client node.")
    client_nodes: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Client nodes the mix may use (default: every client slot)."
    )
    merge: MergeCalls = True
    merge_gap: MergeGap = "1 ms"
    fidelity: FidelityOverride = None


@dataclass(frozen=True, kw_only=True)
class MixDetails(PhaseDetails):
    """What the mix issued and what the servers carried (``--json`` ``extra``).

    The request mix (``read_fraction``, ``size_shares``) is counted over the
    application calls the generator drew, seed 003's mixture being applied to
    calls (the controllers counted block requests, after the Lustre client
    gathered calls into RPCs: a known difference of layer).  The bandwidth
    series is what crossed the servers: each transfer's bytes spread from its
    call's start to when its bytes had crossed them (write-back included;
    page-cache reads excluded).

    Attributes
    ----------
    jobs : int
        Jobs that ran.
    requests : int
        Read and write calls.
    read_fraction : float
        Share of calls issued that are reads (the spec asked ``read_fraction_asked``).
    read_fraction_asked : float
        The spec's read share of requests.
    size_shares : dict of str to float
        Share of calls issued per size class (:data:`SIZE_BINS`).
    interval_s : float
        Sampling interval (s).
    read, write : dict
        :func:`~flashsim.measure.series.cdf_summary` of the read and write
        bandwidth samples (bytes/s).
    read_series_Bps, write_series_Bps : list of float
        The samples, one per interval, for plots.
    job_slowest_s : float
        Longest job, from its arrival to its last call (s).
    """

    jobs: int
    requests: int
    read_fraction: float
    read_fraction_asked: float
    size_shares: dict[str, float]
    interval_s: float
    read: dict[str, Any]
    write: dict[str, Any]
    read_series_Bps: list[float] = field(default_factory=list)
    write_series_Bps: list[float] = field(default_factory=list)
    job_slowest_s: float = 0.0

    def findings(self) -> list[str]:
        """The CDF figures of seed 003 Fig. 3 and the request mix realised."""
        lines = [
            f"{self.jobs} jobs, {self.requests:,} requests: reads {self.read_fraction:.1%} of "
            f"requests (asked {self.read_fraction_asked:.1%}); sizes "
            + ", ".join(f"{k} {v:.1%}" for k, v in self.size_shares.items() if v > 0)
        ]
        for label, s in (("read", self.read), ("write", self.write)):
            lines.append(
                f"{label} bandwidth every {self.interval_s:g} s: median {s['p50'] / 1e9:.3g} GB/s, "
                f"p90 {s['p90'] / 1e9:.3g}, p99 {s['p99'] / 1e9:.3g}, peak {s['max'] / 1e9:.3g}, "
                f"mean {s['mean'] / 1e9:.3g} GB/s; idle {s['zero_fraction']:.0%} of intervals"
            )
        return lines


def place_mix(
    spec: MixSpec, seed: int, name: str, first_node: int, pool: int, start_s: float = 0.0
) -> list[PlacedJob]:
    """Draw a mix's jobs and deal them round robin over ``pool`` client nodes from ``first_node``.

    The draw depends only on the spec and the seed (the mix's own stream), so the
    same mix is the same jobs in a ``mix`` phase and in a ``jobs`` entry.
    """
    rng = np.random.default_rng([seed, MIX_STREAM])
    placed: list[PlacedJob] = []
    offset = 0
    for job in generate_mix(spec, rng, max_nodes=pool):
        placed.append(
            PlacedJob(
                name=f"{name}.{job.name}",
                trace=job.trace,
                first_node=first_node + offset,
                ranks_per_node=job.ranks_per_node,
                start_s=start_s + job.arrival_s,
            )
        )
        offset = (offset + job.nodes) % pool
    return placed


def run_mix(
    system: JobTarget, phase: MixPhase, fidelity: Literal["flow", "request"], seed: int
) -> PhaseResult:
    """Draw the mix, run its jobs together, and sample the bandwidth they made."""
    sim = system.sim
    pool = phase.client_nodes or system.job_client_nodes()
    placed = place_mix(phase.mix, seed, phase.name, phase.first_node, pool)
    engine = JobEngine(system, fidelity, "none", phase.merge, phase.merge_gap)
    start = sim.now
    times = engine.run(placed)
    details = _details(phase, times)
    moved = float(sum(t.transfers.size_B.sum() for t in times))
    span = sim.now - start
    calls = details.requests
    return PhaseResult(
        name=phase.name,
        operation="mix",
        bandwidth_Bps=moved / span if span > 0 else 0.0,
        iops=calls / span if span > 0 else 0.0,
        ranks=sum(t.job.trace.nprocs for t in times),
        transfer_size_B=moved / calls if calls else 0.0,
        sim_time_s=span,
        bytes_B=moved,
        extra=details,
        fidelity=fidelity,
    )


def _details(phase: MixPhase, times: list[JobTimes]) -> MixDetails:
    """Sample each direction's bandwidth over the window and count the requests."""
    window = float(phase.mix.duration)
    end = max(
        [
            window,
            *(float(np.nanmax(t.server_end_s)) for t in times if np.isfinite(t.server_end_s).any()),
        ]
    )
    series: dict[bool, np.ndarray[Any, np.dtype[np.float64]]] = {}
    for write in (False, True):
        # what crossed the servers: from the call's start to when its bytes had crossed
        # them (a buffered write's write-back included); page-cache reads moved nothing
        sel = [(t.transfers.write == write) & np.isfinite(t.server_end_s) for t in times]
        starts = [t.start_s[m] for t, m in zip(times, sel, strict=True)]
        ends = [t.server_end_s[m] for t, m in zip(times, sel, strict=True)]
        sizes = [t.transfers.size_B[m] for t, m in zip(times, sel, strict=True)]
        series[write] = bandwidth_series(
            np.concatenate(starts) if starts else np.zeros(0),
            np.concatenate(ends) if ends else np.zeros(0),
            np.concatenate(sizes) if sizes else np.zeros(0),
            phase.interval,
            0.0,
            end,
        )
    sizes_all = np.concatenate([t.job.trace.ops.size_B for t in times]) if times else np.zeros(0)
    writes_all = np.concatenate([t.job.trace.ops.write for t in times]) if times else np.zeros(0)
    n = int(sizes_all.size)
    shares: dict[str, float] = {}
    lower = -1.0
    for upper, label in SIZE_BINS:
        inside = (sizes_all > lower) & (sizes_all <= upper)
        shares[label] = float(inside.sum() / n) if n else 0.0
        lower = upper
    return MixDetails(
        jobs=len(times),
        requests=n,
        read_fraction=float((~writes_all.astype(bool)).sum() / n) if n else 0.0,
        read_fraction_asked=phase.mix.reads,
        size_shares=shares,
        interval_s=phase.interval,
        read=cdf_summary(series[False]),
        write=cdf_summary(series[True]),
        read_series_Bps=series[False].tolist(),
        write_series_Bps=series[True].tolist(),
        job_slowest_s=max((t.makespan_s for t in times), default=0.0),
    )
