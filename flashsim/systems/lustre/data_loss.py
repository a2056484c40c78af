"""The probability that a Lustre system loses data in a year: the ``data-loss`` phase.

A third concurrent failure in one RAID6 array before its rebuild ends loses
data.  Against the rebuild priority (and AFR), by Monte Carlo
(:func:`~flashsim.components.failures.simulate_data_loss`) beside the exact
Markov chain; the rebuild time of each priority comes from the OST's drives
(:meth:`~flashsim.components.raid_target.RaidTarget.rebuild_path`) under full
foreground load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from flashsim.components.failures import (
    PM1733_MTBF_H,
    YEAR_S,
    afr_from_mtbf,
    check_afr,
    failure_rate_per_s,
    markov_loss_probability,
    markov_mttdl,
    simulate_data_loss,
)
from flashsim.config import NonNegativeSeconds, StrictModel, UnitFraction
from flashsim.measure.results import PhaseDetails, PhaseResult
from flashsim.systems.lustre.core import LustreCore
from flashsim.systems.lustre.rebuild import Priority, alone_rebuild_s, geometry_of, rebuild_policy

#: Rebuild-priority values of the ``data-loss`` phase when none are given.
DEFAULT_PRIORITIES = (0.05, 0.1, 0.3, 1.0)


class DataLossPhase(StrictModel):
    """Probability of data loss per year against rebuild priority, for the whole system."""

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["data-loss"]
    priorities: list[Priority] = Field(
        default_factory=lambda: list(DEFAULT_PRIORITIES),
        description="Rebuild priorities (0, 1]; each gives a rebuild time under full load.",
    )
    afrs: list[float] = Field(
        default_factory=lambda: [afr_from_mtbf(PM1733_MTBF_H)],
        description=(
            "Annualised failure rates per drive (fractions); default the PM1733's 2,000,000 h "
            "MTBF, 0.437 %/year (failures.PM1733_MTBF_H; not in the seeds)."
        ),
    )
    fill: UnitFraction = Field(1.0, description="Share of a failed drive the rebuild rebuilds.")
    detection: NonNegativeSeconds = Field(
        "5 min",
        description="Time from a failure to the rebuild's start. ASSUMED (no seed gives it).",
    )
    load: Literal["full", "idle"] = Field(
        "full",
        description=(
            "Rebuild under full foreground load (the guaranteed priority share) or on idle "
            "drives (the policy's idle fraction)."
        ),
    )
    trials: Annotated[int, Field(ge=1)] = Field(
        100_000, description="Simulated system-years per point."
    )
    repair: Literal["fixed", "exponential"] = Field(
        "fixed", description="Rebuild-time distribution in the Monte Carlo."
    )


@dataclass(frozen=True)
class DataLossPoint:
    """One (AFR, priority) point of a ``data-loss`` phase.

    Attributes
    ----------
    afr : float
        Annualised failure rate per drive.
    priority : float
        Rebuild priority.
    rebuild_s : float
        Time a failed drive stays down: detection plus rebuild (s).
    probability : float
        Monte Carlo probability of data loss per system-year.
    ci_low, ci_high : float
        Its 95 % Clopper-Pearson interval.
    markov_probability : float
        The exact Markov-chain probability per system-year (exponential rebuild).
    mttdl_years : float
        Markov mean time to data loss of the system (years).
    failures_per_year : float
        Mean drive failures per system-year in the Monte Carlo.
    """

    afr: float
    priority: float
    rebuild_s: float
    probability: float
    ci_low: float
    ci_high: float
    markov_probability: float
    mttdl_years: float
    failures_per_year: float


@dataclass(frozen=True, kw_only=True)
class DataLossDetails(PhaseDetails):
    """``PhaseResult.extra`` of a ``data-loss`` phase.

    Attributes
    ----------
    arrays : int
        Independent groups in the system.
    width, tolerance : int
        Drives per group and failures a group survives.
    rebuild_alone_s : float
        Rebuild time of one failed drive on idle drives (s).
    points : list of DataLossPoint
    """

    arrays: int
    width: int
    tolerance: int
    rebuild_alone_s: float
    points: list[DataLossPoint]

    def findings(self) -> list[str]:
        """Data-loss probability per year at each AFR and rebuild priority."""
        return [
            f"AFR {100 * p.afr:.3g} %, priority {p.priority:g} "
            f"(rebuild {p.rebuild_s / 3600:.2f} h): "
            f"P(loss)/year {p.probability:.3g} Monte Carlo [{p.ci_low:.2g}, {p.ci_high:.2g}], "
            f"{p.markov_probability:.3g} Markov"
            for p in self.points
        ]

    def columns(self) -> dict[str, str]:
        """Arrays, geometry, rebuild time alone, the points and the worst loss probability."""
        worst = max((p.probability for p in self.points), default=math.nan)
        return {
            "arrays": str(self.arrays),
            "width": str(self.width),
            "tolerance": str(self.tolerance),
            "rebuild alone h": f"{self.rebuild_alone_s / 3600:.2f}",
            "points": str(len(self.points)),
            "max P(loss)/yr": "-" if math.isnan(worst) else f"{worst:.3g}",
        }


def run_data_loss(system: LustreCore, phase: DataLossPhase) -> PhaseResult:
    """Data-loss probability per system-year against rebuild priority and AFR."""
    _, ost = system.raid_ost(0, phase.workload)
    geom = geometry_of(system)
    alone = alone_rebuild_s(system, ost, [0], phase.fill)
    if geom.layout in ("declustered", "erasure"):
        width, per_target = geom.drives, 1
    else:
        width, per_target = geom.width, geom.drives // geom.width
    groups = system.n_osts * per_target
    rng = system.sim.rng(f"{system.model.name}.{phase.name}.montecarlo")
    points = []
    for afr in phase.afrs:
        check_afr(afr)
        for priority in phase.priorities:
            share = (
                priority if phase.load == "full" else rebuild_policy(system, priority).idle_fraction
            )
            down_s = phase.detection + alone / share
            est = simulate_data_loss(
                rng, groups, width, geom.redundancy, afr, down_s, phase.trials, repair=phase.repair
            )
            lam = failure_rate_per_s(afr)
            if lam > 0:
                markov = markov_loss_probability(
                    width, geom.redundancy, lam, 1.0 / down_s, YEAR_S, groups
                )
                mttdl = markov_mttdl(width, geom.redundancy, lam, 1.0 / down_s) / groups / YEAR_S
            else:
                markov, mttdl = 0.0, math.inf
            points.append(
                DataLossPoint(
                    afr=afr,
                    priority=priority,
                    rebuild_s=down_s,
                    probability=est.probability,
                    ci_low=est.ci_low,
                    ci_high=est.ci_high,
                    markov_probability=markov,
                    mttdl_years=mttdl,
                    failures_per_year=est.failures_per_trial,
                )
            )
    return PhaseResult(
        fidelity="monte-carlo",
        name=phase.name,
        operation="data-loss",
        bandwidth_Bps=0.0,
        iops=0.0,
        ranks=groups,
        transfer_size_B=0.0,
        sim_time_s=0.0,
        bytes_B=0.0,
        extra=DataLossDetails(
            arrays=groups,
            width=width,
            tolerance=geom.redundancy,
            rebuild_alone_s=alone,
            points=points,
        ),
    )
