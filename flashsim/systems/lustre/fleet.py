"""A fleet that is not uniform: obdfilter-survey of every OST, stripe risk, IOR stragglers.

Seed 000 §IV-A (Figs 4, 5) and §V-A (Fig. 7): obdfilter-survey over the 273
OSTs gives a distribution, not one number; eighteen OSTs wrote at <= 90 % of
the peak observed bandwidth, so a file striped over 1, 4 or 16 OSTs lands on at
least one of them with probability about 6.6 %, 24 % and 67 %; and a
bulk-synchronous writer, whose slowest OST sets the time, pays for it.

Three phases, all in flow fidelity, all built on :func:`fleet_bandwidths`,
which runs the existing ``obdfilter-survey`` code path
(:func:`~flashsim.systems.lustre.phases.run_obdfilter`) on each OST in turn:

* ``obdfilter-fleet``: the per-OST efficiencies, median, p10/p90 and the OSTs
  at <= ``threshold`` of the peak observed bandwidth;
* ``stripe-risk``: the probability that a file striped over ``k`` OSTs touches
  a slow OST, by Monte Carlo over random stripe placements (distinct OSTs from
  a seeded stream, as Lustre's allocator spreads a file's stripes) and exactly
  (hypergeometric), and Fig. 7's curves: P(slowest of ``k`` <= x * peak);
* ``ior-stragglers``: the bandwidth of a bulk-synchronous job striped over
  ``k`` OSTs against ``k``, over many random placements, from the slowest-OST
  model (``k * min`` of the placement's OST bandwidths), checked against the
  flow engine's IOR path on a few placements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field

from flashsim.config import Bytes, StrictModel
from flashsim.measure.results import PhaseDetails, PhaseResult
from flashsim.systems.lustre.core import LustreCore
from flashsim.systems.lustre.phases import ObdfilterPhase, run_obdfilter
from flashsim.workloads.ior import FileLayout, IorPhase, IorRunner

OpKind = Literal["read", "write"]
FloatArray = npt.NDArray[np.float64]

#: Files per block of the Monte Carlo placement (bounds its memory to ~20 MB).
_BLOCK = 8192


class FleetSurvey(StrictModel):
    """Which OSTs a fleet phase surveys and how obdfilter-survey drives each one.

    Attributes
    ----------
    osts : int or None
        Survey the first ``osts`` OSTs (default: all).
    exclude : list of int
        OST indices left out (e.g. in maintenance).
    threshold : float
        An OST is slow when its bandwidth is <= ``threshold`` times the peak
        observed bandwidth of the fleet (dimensionless).
    threads, record_size, size
        obdfilter-survey's ``thrhi``, ``rszhi`` (bytes) and ``size`` (bytes per OST).
    """

    osts: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Survey the first `osts` OSTs (default: all)."
    )
    exclude: list[Annotated[int, Field(ge=0)]] | None = Field(
        None, description="OST indices left out (e.g. in maintenance; default: none)."
    )
    threshold: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        0.9, description="Slow: bandwidth <= threshold x peak observed (seed 000 §V-A: 90 %)."
    )
    threads: Annotated[int, Field(ge=1)] = Field(
        1024, description="obdfilter-survey threads per OST (`thrhi`)."
    )
    record_size: Bytes = Field("4 MiB", description="obdfilter-survey bytes per I/O (`rszhi`).")
    size: Bytes = Field("512 MiB", description="obdfilter-survey bytes per OST (`size`).")


class ObdfilterFleetPhase(FleetSurvey):
    """``obdfilter-survey`` of every OST (or the first ``osts``): the distribution (Fig. 4)."""

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["obdfilter-fleet"] = Field(description="Phase kind.")
    operation: OpKind = Field(description="Write or read test of each target.")


class StripeRiskPhase(FleetSurvey):
    """The chance that a file striped over ``k`` OSTs touches a slow OST (seed 000 Fig. 7).

    Attributes
    ----------
    widths : list of int
        Stripe counts ``k``.
    files : int
        Files placed at random per width (Monte Carlo).
    fractions : list of float
        Fractions of the peak observed bandwidth at which Fig. 7's curves are given.
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["stripe-risk"] = Field(description="Phase kind.")
    operation: OpKind = Field("write", description="Which bandwidth defines slow OSTs.")
    widths: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [1, 4, 16], description="Stripe counts k."
    )
    files: Annotated[int, Field(ge=1)] = Field(
        200_000, description="Files placed at random per stripe count (Monte Carlo)."
    )
    fractions: list[Annotated[float, Field(gt=0.0, le=1.0)]] = Field(
        default_factory=lambda: [round(0.80 + 0.01 * i, 2) for i in range(21)],
        description="Fractions of peak at which the CDF curves of Fig. 7 are given.",
    )


class IorStragglersPhase(FleetSurvey):
    """Bulk-synchronous IOR bandwidth against stripe width over random placements.

    Each job writes (or reads) ``k`` stripes in lockstep (IOR stonewalling with
    wear-out: every rank moves the same bytes), so its time is the slowest
    OST's: ``k * min`` of its OSTs' bandwidths.  ``flow_checks`` placements
    per width up to ``flow_check_max_width`` also run through the flow
    engine's IOR path (file per process, every file striped over the same
    ``k`` consecutive OSTs from a random first OST).

    Attributes
    ----------
    widths : list of int
        Stripe counts ``k``.
    placements : int
        Random placements per width for the slowest-OST model.
    flow_checks : int
        Placements per width run through the flow engine (0: none).
    flow_check_max_width : int
        Widest stripe run through the flow engine (clients must not bind).
    nodes_per_target : int
        Client nodes per OST of the checked jobs.
    ranks_per_node : int
        Ranks per node of the checked jobs.
    transfer_size, block_size : float
        IOR ``-t`` and ``-b`` (bytes) of the checked jobs.
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["ior-stragglers"] = Field(description="Phase kind.")
    operation: OpKind = Field(description="Write or read job.")
    widths: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [1, 2, 4, 8, 16, 32], description="Stripe counts k."
    )
    placements: Annotated[int, Field(ge=1)] = Field(
        20_000, description="Random placements per stripe count (slowest-OST model)."
    )
    flow_checks: Annotated[int, Field(ge=0)] = Field(
        2, description="Placements per stripe count also run through the flow engine's IOR."
    )
    flow_check_max_width: Annotated[int, Field(ge=1)] = Field(
        8, description="Widest stripe run through the flow engine."
    )
    nodes_per_target: Annotated[int, Field(ge=1)] = Field(
        2, description="Client nodes per OST in the flow-checked jobs."
    )
    ranks_per_node: Annotated[int, Field(ge=1)] = Field(
        4, description="Ranks per node in the flow-checked jobs."
    )
    transfer_size: Bytes = Field("64 MiB", description="IOR -t of the flow-checked jobs.")
    block_size: Bytes = Field("4 GiB", description="IOR -b of the flow-checked jobs.")


@dataclass(frozen=True, kw_only=True)
class FleetDetails(PhaseDetails):
    """``PhaseResult.extra`` of an ``obdfilter-fleet`` phase.

    Attributes
    ----------
    efficiencies : dict of int to float
        Each OST's bandwidth over its datasheet peak, by OST index (dimensionless).
    count : int
        OSTs surveyed.
    median, p10, p90, min, max : float
        Statistics of the efficiencies (``max`` is the peak observed).
    threshold : float
        Slow: <= ``threshold`` x the peak observed bandwidth.
    slow_count : int
        OSTs at or below it.
    slow_fraction : float
        ``slow_count / count``.
    slow_osts : list of int
        Their indices.
    """

    efficiencies: dict[int, float]
    count: int
    median: float
    p10: float
    p90: float
    min: float
    max: float
    threshold: float
    slow_count: int
    slow_fraction: float
    slow_osts: list[int]

    def findings(self) -> list[str]:
        """The distribution of Fig. 4 in one line, and the slow OSTs."""
        return [
            f"{self.count} OSTs: efficiency median {100 * self.median:.1f} %, p10-p90 "
            f"{100 * self.p10:.1f}-{100 * self.p90:.1f} %, min {100 * self.min:.1f} %",
            f"{self.slow_count} OSTs ({100 * self.slow_fraction:.1f} %) at <= "
            f"{100 * self.threshold:.0f} % of the peak observed",
        ]


@dataclass(frozen=True, kw_only=True)
class WidthRisk:
    """P(a file of stripe count ``k`` touches a slow OST), three ways.

    Attributes
    ----------
    k : int
        Stripe count.
    monte_carlo : float
        Fraction of ``files`` random placements (distinct OSTs) that touch one.
    hypergeometric : float
        Exact: ``1 - C(n - m, k) / C(n, k)`` for ``m`` slow OSTs of ``n``.
    with_replacement : float
        ``1 - (1 - m / n) ** k``, the seed's arithmetic.
    cdf : list of float
        P(slowest of ``k`` distinct OSTs <= x * peak) at each of the phase's ``fractions``.
    """

    k: int
    monte_carlo: float
    hypergeometric: float
    with_replacement: float
    cdf: list[float]


@dataclass(frozen=True, kw_only=True)
class StripeRiskDetails(PhaseDetails):
    """``PhaseResult.extra`` of a ``stripe-risk`` phase.

    Attributes
    ----------
    count, slow_count : int
        OSTs surveyed and slow ones.
    slow_fraction : float
        ``slow_count / count``.
    files : int
        Random placements per width.
    fractions : list of float
        Abscissae of the CDF curves (fractions of the peak observed bandwidth).
    by_width : dict of str to WidthRisk
        Results by stripe count (JSON keys are the counts as strings).
    """

    count: int
    slow_count: int
    slow_fraction: float
    files: int
    fractions: list[float]
    by_width: dict[str, WidthRisk]

    def findings(self) -> list[str]:
        """P(a file touches a slow OST) by stripe count, Monte Carlo and exact."""
        head = f"{self.slow_count} slow OSTs of {self.count}; P(file touches one):"
        return [head] + [
            f"  {w.k:>4} OSTs: {100 * w.monte_carlo:.1f} % Monte Carlo over {self.files} files, "
            f"{100 * w.hypergeometric:.1f} % exact"
            for w in self.by_width.values()
        ]


@dataclass(frozen=True, kw_only=True)
class FlowCheck:
    """One placement run through the flow engine's IOR path.

    Attributes
    ----------
    targets : list of int
        The OSTs of every file.
    flow_Bps : float
        IOR bandwidth from the flow engine (bytes/s).
    model_Bps : float
        Slowest-OST model: ``k * min`` of the OSTs' obdfilter bandwidths (bytes/s).
    ratio : float
        ``flow_Bps / model_Bps``.
    """

    targets: list[int]
    flow_Bps: float
    model_Bps: float
    ratio: float


@dataclass(frozen=True, kw_only=True)
class WidthStragglers:
    """Bandwidth distribution of jobs of stripe count ``k`` over random placements.

    Attributes
    ----------
    k : int
        Stripe count.
    median_Bps, p10_Bps, p90_Bps, min_Bps : float
        Job bandwidth statistics (bytes/s; slowest-OST model).
    per_ost_median, per_ost_p10 : float
        Job bandwidth over ``k`` x the peak observed OST bandwidth
        (dimensionless): what each OST delivers to the job.
    straggled : float
        Fraction of jobs at <= ``threshold`` of ``k`` x the peak observed.
    flow_checks : list of FlowCheck
        Placements also run through the flow engine.
    """

    k: int
    median_Bps: float
    p10_Bps: float
    p90_Bps: float
    min_Bps: float
    per_ost_median: float
    per_ost_p10: float
    straggled: float
    flow_checks: list[FlowCheck]


@dataclass(frozen=True, kw_only=True)
class StragglersDetails(PhaseDetails):
    """``PhaseResult.extra`` of an ``ior-stragglers`` phase.

    Attributes
    ----------
    placements : int
        Random placements per width.
    by_width : dict of str to WidthStragglers
        Results by stripe count (JSON keys are the counts as strings).
    flow_ratio_spread : float
        ``(max - min) / mean`` of the flow checks' ``flow / model`` ratios
        (dimensionless; NaN without checks): small when the slowest OST sets
        the flow engine's time as it does the model's.
    """

    placements: int
    by_width: dict[str, WidthStragglers]
    flow_ratio_spread: float

    def findings(self) -> list[str]:
        """Job bandwidth against stripe count: median, p10 and the share that straggles."""
        return [
            f"{w.k:>4} OSTs: median {w.median_Bps / 1e9:.1f} GB/s, p10 {w.p10_Bps / 1e9:.1f} GB/s, "
            f"{100 * w.per_ost_median:.1f} % of peak per OST, {100 * w.straggled:.1f} % of "
            "jobs straggle"
            for w in self.by_width.values()
        ]


# ------------------------------------------------------------------ survey
def _bytes(value_B: float) -> str:
    """A byte count as the unit string a phase schema reads back exactly."""
    return f"{value_B:.0f} B"


def fleet_osts(system: LustreCore, spec: FleetSurvey) -> list[int]:
    """The OST indices ``spec`` surveys, in order."""
    n = system.n_osts if spec.osts is None else spec.osts
    if n > system.n_osts:
        raise ValueError(f"osts(={n}) exceeds the system's {system.n_osts} OSTs")
    skip = set(spec.exclude or [])
    osts = [i for i in range(n) if i not in skip]
    if not osts:
        raise ValueError("the survey excludes every OST")
    return osts


def fleet_bandwidths(system: LustreCore, spec: FleetSurvey, name: str, op: OpKind) -> FloatArray:
    """obdfilter-survey bandwidth (bytes/s) of each OST of :func:`fleet_osts`, in order.

    A survey with the same settings is run once per built system and reused by
    the later fleet phases (the OSTs' state does not change between them: the
    aging and rebuild phases restore healthy, fresh drives when they end).
    """
    osts = tuple(fleet_osts(system, spec))
    key = (op, osts, spec.threads, float(spec.record_size), float(spec.size))
    cached = system.survey_cache.get(key)
    if cached is not None:
        return cached.copy()
    out = []
    for ost in osts:
        phase = ObdfilterPhase(
            name=f"{name}.ost{ost}",
            workload="obdfilter-survey",
            operation=op,
            ost=ost,
            threads=spec.threads,
            record_size=_bytes(spec.record_size),
            size=_bytes(spec.size),
        )
        out.append(run_obdfilter(system, phase).bandwidth_Bps)
    system.survey_cache[key] = np.asarray(out, dtype=float)
    return system.survey_cache[key].copy()


def _result(
    phase: FleetSurvey, name: str, op: OpKind, bw: float, elapsed: float, extra: PhaseDetails
) -> PhaseResult:
    return PhaseResult(
        fidelity="flow",
        name=name,
        operation=op,
        bandwidth_Bps=bw,
        iops=bw / phase.record_size,
        ranks=1,
        transfer_size_B=phase.record_size,
        sim_time_s=elapsed,
        bytes_B=0.0,
        extra=extra,
    )


def run_obdfilter_fleet(system: LustreCore, phase: ObdfilterFleetPhase) -> PhaseResult:
    """Survey each OST in turn; ``bandwidth_Bps`` is the median OST's."""
    start = system.sim.now
    osts = fleet_osts(system, phase)
    bw = fleet_bandwidths(system, phase, phase.name, phase.operation)
    eff = bw / system.ost_peak_Bps(phase.operation)
    slow = eff <= phase.threshold * eff.max()
    extra = FleetDetails(
        efficiencies={o: float(e) for o, e in zip(osts, eff, strict=True)},
        count=len(osts),
        median=float(np.median(eff)),
        p10=float(np.percentile(eff, 10)),
        p90=float(np.percentile(eff, 90)),
        min=float(eff.min()),
        max=float(eff.max()),
        threshold=phase.threshold,
        slow_count=int(slow.sum()),
        slow_fraction=float(slow.mean()),
        slow_osts=[o for o, s in zip(osts, slow, strict=True) if s],
    )
    elapsed = system.sim.now - start
    return _result(phase, phase.name, phase.operation, float(np.median(bw)), elapsed, extra)


# ------------------------------------------------------------- stripe risk
def random_placements(rng: np.random.Generator, n: int, k: int, files: int) -> npt.NDArray[np.intp]:
    """``files`` x ``k`` indices: each row ``k`` distinct OSTs of ``n``, uniformly at random."""
    if k > n:
        raise ValueError(f"stripe count k(={k}) exceeds the {n} OSTs surveyed")
    rows = []
    for start in range(0, files, _BLOCK):
        m = min(_BLOCK, files - start)
        keys = rng.random((m, n))
        rows.append(np.argpartition(keys, k - 1, axis=1)[:, :k] if k < n else np.argsort(keys))
    return np.concatenate(rows)


def p_touch_slow(n: int, slow: int, k: int) -> float:
    """Exact P(``k`` distinct OSTs drawn from ``n`` include one of ``slow``): hypergeometric."""
    if k > n:
        raise ValueError(f"stripe count k(={k}) exceeds the {n} OSTs")
    return 1.0 - math.comb(n - slow, k) / math.comb(n, k)


def run_stripe_risk(system: LustreCore, phase: StripeRiskPhase) -> PhaseResult:
    """Survey the fleet, then the risk of each stripe count by Monte Carlo and exactly."""
    start = system.sim.now
    bw = fleet_bandwidths(system, phase, phase.name, phase.operation)
    n = len(bw)
    peak = float(bw.max())
    slow = bw <= phase.threshold * peak
    m = int(slow.sum())
    rng = system.sim.rng(f"{phase.name}.placement")
    by_width: dict[str, WidthRisk] = {}
    for k in phase.widths:
        picks = random_placements(rng, n, k, phase.files)
        mc = float(slow[picks].any(axis=1).mean())
        cdf = [p_touch_slow(n, int((bw <= x * peak).sum()), k) for x in phase.fractions]
        by_width[str(k)] = WidthRisk(
            k=k,
            monte_carlo=mc,
            hypergeometric=p_touch_slow(n, m, k),
            with_replacement=1.0 - (1.0 - m / n) ** k,
            cdf=cdf,
        )
    extra = StripeRiskDetails(
        count=n,
        slow_count=m,
        slow_fraction=m / n,
        files=phase.files,
        fractions=list(phase.fractions),
        by_width=by_width,
    )
    return _result(phase, phase.name, phase.operation, peak, system.sim.now - start, extra)


# ---------------------------------------------------------- IOR stragglers
def _flow_check(
    system: LustreCore,
    runner: IorRunner,
    phase: IorStragglersPhase,
    first: int,
    k: int,
    osts: list[int],
    bw: FloatArray,
) -> FlowCheck:
    """Run one bulk-synchronous IOR job over OSTs ``first .. first + k - 1`` in flow fidelity."""
    n_all = system.n_osts
    targets = [(first + j) % n_all for j in range(k)]
    index = {o: i for i, o in enumerate(osts)}
    job = IorPhase(
        name=f"{phase.name}.k{k}.first{first}",
        workload="ior",
        operation=phase.operation,
        nodes=k * phase.nodes_per_target,
        ranks_per_node=phase.ranks_per_node,
        transfer_size=_bytes(phase.transfer_size),
        block_size=_bytes(phase.block_size),
        fsync=phase.operation == "write",
        layout=FileLayout(stripe_count=k, first_target=first),
        fidelity="flow",
    )
    flow = runner.run(job).bandwidth_Bps
    model = k * float(min(bw[index[t]] for t in targets))
    return FlowCheck(targets=targets, flow_Bps=flow, model_Bps=model, ratio=flow / model)


def run_ior_stragglers(
    system: LustreCore, runner: IorRunner, phase: IorStragglersPhase
) -> PhaseResult:
    """Job bandwidth against stripe width: the slowest-OST model over random placements.

    A few placements per width (consecutive OSTs, all surveyed) also run through
    ``runner`` (the system's IOR runner) in flow fidelity; ``flow_ratio_spread``
    says how well ``k * min`` predicts the flow engine.
    """
    start = system.sim.now
    osts = fleet_osts(system, phase)
    bw = fleet_bandwidths(system, phase, phase.name, phase.operation)
    n = len(bw)
    peak = float(bw.max())
    rng = system.sim.rng(f"{phase.name}.placement")
    check_rng = system.sim.rng(f"{phase.name}.flow-check")
    surveyed = set(osts)
    by_width: dict[str, WidthStragglers] = {}
    ratios: list[float] = []
    for k in phase.widths:
        picks = random_placements(rng, n, k, phase.placements)
        job = k * bw[picks].min(axis=1)
        checks: list[FlowCheck] = []
        if k <= phase.flow_check_max_width:
            firsts = [
                f
                for f in range(system.n_osts)
                if all((f + j) % system.n_osts in surveyed for j in range(k))
            ]
            for first in check_rng.choice(
                firsts, size=min(phase.flow_checks, len(firsts)), replace=False
            ):
                checks.append(_flow_check(system, runner, phase, int(first), k, osts, bw))
        ratios += [c.ratio for c in checks]
        per_ost = job / (k * peak)
        by_width[str(k)] = WidthStragglers(
            k=k,
            median_Bps=float(np.median(job)),
            p10_Bps=float(np.percentile(job, 10)),
            p90_Bps=float(np.percentile(job, 90)),
            min_Bps=float(job.min()),
            per_ost_median=float(np.median(per_ost)),
            per_ost_p10=float(np.percentile(per_ost, 10)),
            straggled=float((per_ost <= phase.threshold).mean()),
            flow_checks=checks,
        )
    spread = (max(ratios) - min(ratios)) / float(np.mean(ratios)) if ratios else math.nan
    extra = StragglersDetails(
        placements=phase.placements, by_width=by_width, flow_ratio_spread=spread
    )
    widest = by_width[str(phase.widths[-1])]
    return _result(
        phase, phase.name, phase.operation, widest.median_Bps, system.sim.now - start, extra
    )


FLEET_WORKLOADS = ("obdfilter-fleet", "stripe-risk", "ior-stragglers")


def check_fleet_phase(n_osts: int, phase: FleetSurvey) -> None:
    """Check a fleet phase against a system of ``n_osts`` OSTs; raise ``ValueError("key: ...")``."""
    n = n_osts if phase.osts is None else phase.osts
    if n > n_osts:
        raise ValueError(f"osts: {n} OSTs surveyed, but the system has {n_osts}")
    exclude = phase.exclude or []
    outside = [i for i in exclude if i >= n]
    if outside:
        raise ValueError(f"exclude: OST {outside[0]} is not among the {n} OSTs surveyed")
    surveyed = n - len(set(exclude))
    if surveyed < 1:
        raise ValueError("exclude: the survey leaves no OST")
    widths: list[int] = list(getattr(phase, "widths", []))
    if widths and max(widths) > surveyed:
        raise ValueError(
            f"widths: a stripe over {max(widths)} distinct OSTs needs that many; "
            f"the survey has {surveyed}"
        )
