"""The Spider block-io-ssu-degraded test on a Lustre system (seed 003 §6): ``degraded-survey``.

Every OST is driven at once while a tenth of them rebuild a failed drive; the
per-OST bandwidths and the system bandwidth against the same test healthy.
The failures and rebuilds are the OSTs' own (their
:class:`~flashsim.components.target_life.TargetLife` fails drive 0 and rebuilds
it under the study's policy, as a failure event does); the study adds the
foreground load (:mod:`flashsim.systems.lustre.rebuild`'s) and measures.  Its
failures are its own: the OSTs are healthy before and after.  Flow fidelity.
"""

from __future__ import annotations

import math
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from flashsim.config import Bytes, Seconds, StrictModel, UnitFraction
from flashsim.engine.randomness import RandomStreams
from flashsim.measure.results import PhaseDetails, PhaseResult
from flashsim.systems.lustre.core import LustreCore
from flashsim.systems.lustre.rebuild import (
    ForegroundLoad,
    OpKind,
    Priority,
    own_failures,
    rebuild_policy,
)


class DegradedSurveyPhase(StrictModel):
    """Spider's block-io-ssu-degraded test: all OSTs driven while some rebuild (seed 003 §6)."""

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["degraded-survey"]
    operation: OpKind = Field(description="Write or read test of every OST.")
    access: Literal["sequential", "random"] = Field(
        "sequential", description="Sequential (full-stripe writes) or random offsets."
    )
    record_size: Bytes = Field("1 MiB", description="Bytes per I/O (Spider: 4 KiB to 1 MiB).")
    queue_depth: Annotated[int, Field(ge=1)] = Field(
        16, description="I/Os in flight per OST (Spider: 4, 8 or 16)."
    )
    osts: Annotated[int, Field(ge=1)] | None = Field(
        None, description="OSTs tested, from OST 0 (default: all)."
    )
    degraded_fraction: UnitFraction = Field(
        0.1, description="Share of the tested OSTs with a failed drive in active rebuild."
    )
    priority: Priority | None = Field(
        None, description="Rebuild priority (0, 1]; default: the model's `oss.rebuild.priority`."
    )
    duration: Seconds = Field("30 s", description="Length of each test (Spider: 30 s).")


@dataclass(frozen=True, kw_only=True)
class DegradedSurveyDetails(PhaseDetails):
    """``PhaseResult.extra`` of a ``degraded-survey`` phase (bandwidths in bytes/s).

    Attributes
    ----------
    healthy_Bps, degraded_Bps : float
        System bandwidth of the test healthy and with the degraded OSTs.
    ratio : float
        ``degraded_Bps / healthy_Bps``.
    degraded_osts : list of int
        OSTs with a failed drive in rebuild.
    per_ost_Bps : list of float
        Each tested OST's bandwidth in the degraded test, by index.
    degraded_ost_median_Bps, healthy_ost_median_Bps : float
        Median OST bandwidth of the degraded and of the other OSTs, degraded test.
    ost_min_Bps, ost_p10_Bps, ost_max_Bps : float
        Spread of the per-OST bandwidths in the degraded test.
    rebuild_progress : float
        Mean share of the drive rebuilt during the test.
    """

    healthy_Bps: float
    degraded_Bps: float
    ratio: float
    degraded_osts: list[int]
    per_ost_Bps: list[float]
    degraded_ost_median_Bps: float
    healthy_ost_median_Bps: float
    ost_min_Bps: float
    ost_p10_Bps: float
    ost_max_Bps: float
    rebuild_progress: float

    def findings(self) -> list[str]:
        """System bandwidth degraded against healthy, and a degraded OST against a healthy one."""
        return [
            f"{len(self.degraded_osts)} OSTs rebuilding: system {self.degraded_Bps / 1e9:.1f} GB/s "
            f"vs {self.healthy_Bps / 1e9:.1f} GB/s healthy ({100 * self.ratio:.1f} %)",
            f"median OST {self.degraded_ost_median_Bps / 1e9:.3f} GB/s degraded, "
            f"{self.healthy_ost_median_Bps / 1e9:.3f} GB/s healthy",
        ]


def degraded_set(system: LustreCore, phase: DegradedSurveyPhase, n: int) -> list[int]:
    """OSTs of the survey that carry a failed drive: a seeded random ``degraded_fraction``.

    The same OSTs in every phase of a run (a fresh stream of the run's seed), and a
    larger fraction contains a smaller one.
    """
    count = round(phase.degraded_fraction * n)
    rng = RandomStreams(system.sim.seed).stream(f"{system.model.name}.degraded-survey")
    return sorted(int(i) for i in rng.permutation(n)[:count])


def _survey(
    system: LustreCore, phase: DegradedSurveyPhase, osts: list[int], degraded: list[int]
) -> tuple[list[float], float]:
    """Drive every OST for ``duration``; rebuild a drive of each ``degraded`` OST meanwhile.

    Returns the per-OST bandwidths (bytes/s) and the mean rebuild progress.
    """
    sim = system.sim
    policy = rebuild_policy(system, phase.priority)
    seq = phase.access == "sequential"
    fgs = [
        ForegroundLoad(system, i, phase.operation, phase.record_size, phase.queue_depth, seq)
        for i in osts
    ]
    with ExitStack() as stack:
        # Block RAID rebuilds the whole drive (fill 1), from the test's start to past its end.
        lives = [
            stack.enter_context(own_failures(system.raid_life(i, phase.workload), policy, 1.0))
            for i in degraded
        ]
        for life in lives:
            life.fail_drive(0)
        for fg in fgs:
            fg.start()
        sim.run(sim.now + phase.duration)
        for fg in fgs:
            fg.stop()
        progress = [life.rebuild_progress() or 0.0 for life in lives]
    return [fg.moved_B / phase.duration for fg in fgs], float(
        np.mean(progress)
    ) if progress else 0.0


def run_degraded_survey(system: LustreCore, phase: DegradedSurveyPhase) -> PhaseResult:
    """The test healthy, then with ``degraded_fraction`` of the OSTs rebuilding a drive."""
    n = phase.osts or system.n_osts
    osts = list(range(n))
    degraded = degraded_set(system, phase, n)
    start = system.sim.now
    healthy, _ = _survey(system, phase, osts, [])
    per_ost, progress = _survey(system, phase, osts, degraded)
    bw = np.array(per_ost)
    down = set(degraded)
    deg = (
        np.array([b for i, b in enumerate(per_ost) if i in down]) if down else np.array([math.nan])
    )
    ok = (
        np.array([b for i, b in enumerate(per_ost) if i not in down])
        if len(down) < n
        else np.array([math.nan])
    )
    healthy_bw = float(sum(healthy))
    system_bw = float(bw.sum())
    details = DegradedSurveyDetails(
        healthy_Bps=healthy_bw,
        degraded_Bps=system_bw,
        ratio=system_bw / healthy_bw,
        degraded_osts=degraded,
        per_ost_Bps=[float(b) for b in bw],
        degraded_ost_median_Bps=float(np.median(deg)),
        healthy_ost_median_Bps=float(np.median(ok)),
        ost_min_Bps=float(bw.min()),
        ost_p10_Bps=float(np.percentile(bw, 10)),
        ost_max_Bps=float(bw.max()),
        rebuild_progress=progress,
    )
    return PhaseResult(
        fidelity="flow",
        name=phase.name,
        operation=phase.operation,
        bandwidth_Bps=system_bw,
        iops=system_bw / phase.record_size,
        ranks=n * phase.queue_depth,
        transfer_size_B=phase.record_size,
        sim_time_s=system.sim.now - start,
        bytes_B=system_bw * phase.duration,
        extra=details,
    )
