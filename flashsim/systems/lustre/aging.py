"""SSD aging of Lustre OSTs: write bandwidth against bytes written and deleted, and TRIM.

Seed 000 §V-B (Fig. 8): an OST whose files are written and deleted without
TRIM loses about 10 % of its write bandwidth once about five OST capacities
have been written, quickly, and a TRIM of the file system's free space
restores it in hours.  The ``ost-aging`` phase reproduces that experiment on
one OST: it writes and deletes in steps through the OST's life
(:meth:`~flashsim.components.target_life.TargetLife.age`, the drives' FTL
model: a fluid model in flow fidelity, the page-mapped micro-model in request
fidelity; see :mod:`flashsim.components.drive_aging`), trims through it
(:meth:`~flashsim.components.target_life.TargetLife.trim`, a load on the
drives on the clock), and measures the OST's streaming write bandwidth after
each step the way obdfilter-survey does (threads writing 4 MiB records
straight to the target), in the phase's fidelity.  The experiment
starts from fresh drives: the phase renews the OST it studies at its start
(its :class:`~flashsim.components.target_life.TargetLife`) and leaves it aged
for the phases that follow.

The operational study over months of production is
:mod:`flashsim.systems.lustre.production`.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
import simpy
from pydantic import Field, model_validator

from flashsim.components.raid_target import RaidTarget
from flashsim.components.ssd import SsdSpec
from flashsim.config import Bytes, Seconds, StrictModel, field_error
from flashsim.engine.flows import Flow
from flashsim.measure.results import PhaseDetails, PhaseResult
from flashsim.progress import current
from flashsim.systems.base import Fidelity
from flashsim.systems.lustre.core import LustreCore
from flashsim.systems.lustre.cost import op_cost
from flashsim.systems.lustre.nodes import OstNode

#: Loss of write bandwidth (fraction) that marks the onset of aging.
ONSET_LOSS = 0.01

#: Simulated time (s) a flow-fidelity measurement runs (its rates are constant meanwhile).
MEASURE_WINDOW_S = 1.0


class OstAgingPhase(StrictModel):
    """Write and delete files on one OST without TRIM, measuring its write bandwidth (Fig. 8).

    Attributes
    ----------
    ost : int
        Target index.
    written : float
        OST capacities written (and deleted) over the phase.
    steps : int
        Measurements, evenly spaced in bytes written.
    fill : float or None
        Fraction of the OST's drives holding cold data that is never deleted
        (default: the model's ``oss.aging.cold_fraction``).
    trim_at : float or None
        OST capacities written after which the file system's free space is
        trimmed (``fstrim``); ``None``: never.
    record_size : float
        Bytes per write of the bandwidth measurement (obdfilter-survey ``rsz``).
    threads : int
        Writers of the bandwidth measurement.
    duration : float
        Simulated length (s) of each request-fidelity measurement.
    fidelity : {"flow", "request"} or None
        Override the scenario's fidelity: ``flow`` ages a fluid FTL model and
        measures with flows, ``request`` a page-mapped micro-model and queues.
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["ost-aging"]
    ost: Annotated[int, Field(ge=0)] = Field(0, description="Target index.")
    written: Annotated[float, Field(gt=0.0, le=1000.0)] = Field(
        description="OST capacities written and deleted over the phase."
    )
    steps: Annotated[int, Field(ge=2, le=10_000)] = Field(
        64, description="Bandwidth measurements, evenly spaced in bytes written."
    )
    fill: Annotated[float, Field(ge=0.0, lt=1.0)] | None = Field(
        None,
        description=(
            "Fraction of the drives holding cold data never deleted "
            "(default: the model's `oss.aging.cold_fraction`)."
        ),
    )
    trim_at: Annotated[float, Field(gt=0.0)] | None = Field(
        None,
        description="OST capacities written after which free space is trimmed (none: never).",
    )
    record_size: Bytes = Field("4 MiB", description="Bytes per write of the measurement.")
    threads: Annotated[int, Field(ge=1)] = Field(
        64, description="Writers of the bandwidth measurement."
    )
    duration: Seconds = Field(
        "0.2 s", description="Simulated length of each request-fidelity measurement."
    )
    fidelity: Fidelity | None = Field(
        None,
        description=(
            "Override the scenario's fidelity (flow: fluid FTL model; request: "
            "page-mapped micro-model and queues)."
        ),
    )

    @model_validator(mode="after")
    def _trim_within_the_run(self) -> OstAgingPhase:
        """A TRIM needs an OST capacity written after it to measure the recovery."""
        if self.trim_at is not None and self.trim_at + 1.0 > self.written:
            raise field_error(
                "trim_at",
                f"must leave at least one OST write after the TRIM to measure the recovery "
                f"(written = {self.written:g})",
            )
        return self


@dataclass(frozen=True, kw_only=True)
class OstAgingDetails(PhaseDetails):
    """``PhaseResult.extra`` of an ``ost-aging`` phase.

    Attributes
    ----------
    ost_capacity_B : float
        User capacity (bytes) of the OST: one "full OST write".
    written_capacities : list of float
        OST capacities written at each measurement.
    relative_write_bw : list of float
        Write bandwidth over the fresh OST's at each measurement.
    write_amplification : list of float
        The representative drive's write amplification at each measurement.
    loss : float
        Plateau loss of write bandwidth (fraction): the mean over the last
        quarter of the measurements before any TRIM.
    onset_capacities, onset_B : float
        Capacities (and bytes) written when the loss first reaches
        :data:`ONSET_LOSS` (linear interpolation; NaN if it never does).
    transition_capacities : float
        Capacities written between 10 % and 90 % of the plateau loss (NaN
        without a loss).
    trim_duration_s : float or None
        Time (s) the TRIM took (every drive deallocating its dead space at its
        ``trim_bandwidth``); ``None`` without TRIM.
    recovered : float or None
        Mean relative write bandwidth over the first OST capacity written
        after the TRIM (the measurements in ``(trim, trim + 1]``).
    """

    ost_capacity_B: float
    written_capacities: list[float]
    relative_write_bw: list[float]
    write_amplification: list[float]
    loss: float
    onset_capacities: float
    onset_B: float
    transition_capacities: float
    trim_duration_s: float | None = None
    recovered: float | None = None

    def findings(self) -> list[str]:
        """Loss, onset, transition and the TRIM, as an architect reads Fig. 8."""
        tb = self.ost_capacity_B / 1e12
        written = self.written_capacities[-1]
        lines = [
            f"aged write bandwidth loss {100 * self.loss:.1f} % "
            f"(write amplification up to {max(self.write_amplification):.2f})",
        ]
        if math.isnan(self.onset_capacities):
            lines.append(f"no onset within {written:g} OST writes (one OST = {tb:.1f} TB)")
        else:
            lines.append(
                f"onset after {self.onset_capacities:.2f} OST writes "
                f"({self.onset_B / 1e12:.0f} TB; one OST = {tb:.1f} TB), 10-90 % of the loss "
                f"within {self.transition_capacities:.2f} OST writes"
            )
        if self.trim_duration_s is not None and self.recovered is not None:
            lines.append(
                f"TRIM took {self.trim_duration_s / 3600:.1f} h and restored "
                f"{100 * self.recovered:.1f} % of the fresh write bandwidth"
            )
        return lines

    def columns(self) -> dict[str, str]:
        """OST writes, bandwidth loss, WA, onset and transition, the TRIM."""
        onset = self.onset_capacities
        return {
            "OST writes": f"{self.written_capacities[-1]:g}" if self.written_capacities else "-",
            "bw loss": f"{100 * self.loss:.1f}%",
            "WA max": f"{max(self.write_amplification):.2f}" if self.write_amplification else "-",
            "onset OST writes": "-" if math.isnan(onset) else f"{onset:.2f}",
            "10-90% OST writes": "-"
            if math.isnan(self.transition_capacities)
            else f"{self.transition_capacities:.2f}",
            "TRIM h": "-" if self.trim_duration_s is None else f"{self.trim_duration_s / 3600:.1f}",
            "recovered": "-" if self.recovered is None else f"{100 * self.recovered:.1f}%",
        }


def ost_capacity_B(system: LustreCore) -> float:
    """User bytes of one OST: its drives' capacity after parity and distributed spares."""
    return system.ost_spec.usable_B()


def age_ost(
    system: LustreCore, index: int, fill: float | None, fidelity: Fidelity, label: str
) -> RaidTarget:
    """Give OST ``index`` fresh drives with an FTL model in ``fidelity``; return the OST.

    The OST's life (:class:`~flashsim.components.target_life.TargetLife`)
    keeps the state afterwards: the drives stay aged for the phases that
    follow.  ``fill`` of the drives' written space holds cold data (``None``:
    the model's ``oss.aging.cold_fraction``).
    """
    spec = system.model.oss
    if spec.aging is None:
        raise ValueError(
            "oss.aging: the model has no drive-aging table; add [oss.aging] (units_per_block, "
            "spread) to age OSTs"
        )
    life = system.raid_life(index, "aging")
    if not isinstance(life.target.drive, SsdSpec):
        raise ValueError(f"oss.drive: {life.target.drive.name} is not an SSD; only SSDs age here")
    life.renew(fill, fidelity, label)
    return life.target


def write_rates_Bps(
    system: LustreCore,
    osts: Sequence[OstNode],
    record_B: float,
    window_s: float = MEASURE_WINDOW_S,
) -> list[float]:
    """Flow fidelity: the streaming write bandwidth of each OST, all measured at once.

    One saturating writer per OST crosses the target's RAID engine, drives and
    links (obdfilter-survey's path), sharing them with whatever else runs on
    the clock then (a TRIM the OST's life is running holds each drive's data
    path ``1 / trim_bandwidth`` s per byte).  The writers run ``window_s``
    seconds of simulated time (0: the rates are read and the writers removed
    at once, a hypothetical measurement that loads nothing).  Returns the
    writers' rates (bytes/s).
    """
    sim = system.sim
    flows: list[Flow] = []
    for i, ost in enumerate(osts):
        cost = op_cost(system.model, ost, "write", record_B, sequential=True)
        flows.append(
            sim.flows.start_flow(1e30, ost.path(cost.target), op_size_B=record_B, name=f"w{i}")
        )
    sim.flows.solve_now()
    rates = [float(r) for r in sim.flows.rates_Bps(flows)]
    if window_s > 0:
        # Run the constant rates for a moment so the phase's bottleneck report, which
        # reads the resources' usage over simulated time, sees what the measurement loaded.
        sim.run(sim.now + window_s)
    for f in flows:
        sim.flows.cancel_flow(f)
    return rates


def request_write_rate_Bps(
    system: LustreCore, ost: OstNode, record_B: float, threads: int, duration_s: float
) -> float:
    """Request fidelity: bytes/s ``threads`` writers push through ``ost`` for ``duration_s``."""
    sim = system.sim
    env = sim.env
    cost = op_cost(system.model, ost, "write", record_B, sequential=True)
    done = [0]
    end = sim.now + duration_s

    def writer() -> Generator[simpy.Event, Any, None]:
        while env.now < end:
            yield from ost.visit(env, cost.target)
            if env.now <= end:
                done[0] += 1

    start = sim.now
    writers = [env.process(writer()) for _ in range(threads)]
    # Writers in service at the end finish (uncounted) so no process outlives the phase.
    sim.run(env.all_of(writers))
    return done[0] * record_B / (end - start)


def taken_s(trim: simpy.Event) -> float:
    """Seconds a TRIM took: the value of the event :meth:`TargetLife.trim` returned."""
    value = trim.value
    assert isinstance(value, float | int), value
    return float(value)


def _interp_crossing(x: np.ndarray, y: np.ndarray, level: float) -> float:
    """First ``x`` where ``y`` reaches ``level`` (linear interpolation), NaN if never."""
    above = np.nonzero(y >= level)[0]
    if len(above) == 0:
        return math.nan
    k = int(above[0])
    if k == 0:
        return float(x[0])
    x0, x1, y0, y1 = x[k - 1], x[k], y[k - 1], y[k]
    return float(x0 + (level - y0) * (x1 - x0) / (y1 - y0)) if y1 != y0 else float(x1)


def loss_summary(written: np.ndarray, loss: np.ndarray) -> tuple[float, float, float]:
    """(plateau loss, onset in capacities, 10 %-90 % transition width in capacities)."""
    tail = loss[-max(1, len(loss) // 4) :]
    plateau = float(np.mean(tail))
    onset = _interp_crossing(written, loss, ONSET_LOSS)
    if plateau < ONSET_LOSS:
        return plateau, onset, math.nan
    lo = _interp_crossing(written, loss, 0.1 * plateau)
    hi = _interp_crossing(written, loss, 0.9 * plateau)
    return plateau, onset, hi - lo


def run_ost_aging(system: LustreCore, phase: OstAgingPhase, fidelity: Fidelity) -> PhaseResult:
    """Fig. 8: write and delete ``written`` OST capacities on one OST, measuring as it ages.

    The OST's life ages the drives (:meth:`TargetLife.age`, as a fast-forward
    does) and runs the TRIM (:meth:`TargetLife.trim`, a load on the drives on
    the clock); the study measures the write bandwidth after each step.
    """
    sim = system.sim
    _, ost = system.ost(phase.ost)
    # Fig. 8 starts from fresh drives: the phase renews the OST it studies and leaves it aged.
    age_ost(system, phase.ost, phase.fill, fidelity, f"{ost.name}.{phase.name}")
    life = system.raid_life(phase.ost, phase.workload)
    capacity = ost_capacity_B(system)
    start = sim.now

    def measure() -> float:
        if fidelity == "flow":
            return write_rates_Bps(system, [ost], phase.record_size)[0]
        return request_write_rate_Bps(system, ost, phase.record_size, phase.threads, phase.duration)

    fresh = measure()
    step = phase.written / phase.steps
    xs: list[float] = [0.0]
    rel: list[float] = [1.0]
    wa: list[float] = [life.status().write_amplification]
    trim_s: float | None = None
    trimmed_at = math.inf
    steps = current().task("steps", total=phase.steps, unit="step")
    for k in steps.over(range(1, phase.steps + 1)):
        life.age(step * capacity)
        xs.append(k * step)
        rel.append(measure() / fresh)
        wa.append(life.status().write_amplification)
        if phase.trim_at is not None and trim_s is None and xs[-1] >= phase.trim_at:
            done = life.trim()
            sim.run(done)
            trim_s = taken_s(done)
            trimmed_at = xs[-1]
    after = [r for x, r in zip(xs, rel, strict=True) if trimmed_at < x <= trimmed_at + 1.0]
    recovered = float(np.mean(after)) if after else None
    before = np.array(xs), 1.0 - np.array(rel)
    if phase.trim_at is not None:
        keep = before[0] <= phase.trim_at
        before = before[0][keep], before[1][keep]
    plateau, onset, transition = loss_summary(*before)
    final = rel[-1] * fresh
    return PhaseResult(
        name=phase.name,
        operation="write",
        bandwidth_Bps=final,
        iops=final / phase.record_size,
        ranks=phase.threads,
        transfer_size_B=phase.record_size,
        sim_time_s=sim.now - start,
        bytes_B=phase.written * capacity,
        fidelity=fidelity,
        extra=OstAgingDetails(
            ost_capacity_B=capacity,
            written_capacities=xs,
            relative_write_bw=rel,
            write_amplification=wa,
            loss=plateau,
            onset_capacities=onset,
            onset_B=onset * capacity,
            transition_capacities=transition,
            trim_duration_s=trim_s,
            recovered=recovered,
        ),
    )
