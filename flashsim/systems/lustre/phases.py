"""Lustre's server-side tests: ``obdfilter-survey`` (one OST alone) and LNet Self-Test.

Both run in flow fidelity: they measure a layer's bandwidth, which a flow
saturating that layer gives exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from flashsim.components.fabric_spec import DragonflySpec, FatTreeSpec, fabric_role
from flashsim.components.nic import Direction
from flashsim.config import Bytes, Seconds, StrictModel
from flashsim.engine.flows import Flow, Resource
from flashsim.measure.results import PhaseDetails, PhaseResult
from flashsim.systems.lustre.core import LustreCore
from flashsim.systems.lustre.cost import op_cost
from flashsim.systems.lustre.model import LustreModel

OpKind = Literal["read", "write"]


class ObdfilterPhase(StrictModel):
    """``obdfilter-survey`` on one OST: the target's stack alone, no client or network.

    Attributes
    ----------
    ost : int
        Target index.
    threads : int
        Concurrent threads (``thrhi``).
    objects : int
        Objects (``nobjhi``).
    record_size : float
        Bytes per I/O (``rszhi``).
    size : float
        Total bytes per OST (``size``).
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["obdfilter-survey"]
    operation: OpKind = Field(description="Write or read test of the target.")
    ost: Annotated[int, Field(ge=0)] = 0
    threads: Annotated[int, Field(ge=1)] = 1024
    objects: Annotated[int, Field(ge=1)] = 1
    record_size: Bytes = "4 MiB"
    size: Bytes = "512 MiB"


class LnetSelftestPhase(StrictModel):
    """LNet Self-Test: bulk transfers between ``sources`` servers and one sink OSS.

    ``read`` moves data out of the sink (its egress); ``write`` moves data into it.

    Attributes
    ----------
    sink : int
        OSS index under test.
    sources : int
        Peer servers driving it.
    concurrency : int
        Requests in flight per source.
    size : float
        Bytes per bulk request.
    duration : float
        Test length (s).
    cross_group : bool
        Whether the sources sit in another I/O group (traffic crosses global links).
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["lnet-selftest"]
    operation: OpKind = Field(
        description="`read` moves data out of the sink (egress), `write` into it."
    )
    sink: Annotated[int, Field(ge=0)] = 0
    sources: Annotated[int, Field(ge=1)] = 2
    concurrency: Annotated[int, Field(ge=1)] = 8
    size: Bytes = "1 MiB"
    duration: Seconds = "10 s"
    cross_group: bool = True


class LnetSurveyPhase(StrictModel):
    """LNet Self-Test of every OSS in turn as the sink, from the same source OSSes (seed 000 §IV-A).

    The seed "used the same two source OSSes to test each sink OSS", so the
    sinks in the sources' I/O group are reached locally and the others over the
    global links between I/O groups.  Each sink is tested alone, one after
    another; the result is the distribution of per-sink efficiencies, split
    into local and cross-group sinks.

    Attributes
    ----------
    sources : list of int or None
        Source OSS indices (default: the first two OSSes of the first I/O group).
    sinks : int or None
        Number of sinks tested, in index order, skipping the sources (default: all).
    concurrency : int
        Requests in flight per source.
    size : float
        Bytes per bulk request.
    duration : float
        Length (s) of each sink's test.
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["lnet-survey"]
    operation: OpKind = Field(
        description="`read` moves data out of each sink (egress), `write` into it."
    )
    sources: list[Annotated[int, Field(ge=0)]] | None = Field(
        None,
        description="Source OSS indices (default: the first two OSSes of the first I/O group).",
    )
    sinks: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Sinks tested, in index order, skipping the sources (default: all)."
    )
    concurrency: Annotated[int, Field(ge=1)] = Field(
        8, description="Requests in flight per source."
    )
    size: Bytes = Field("1 MiB", description="Bytes per bulk request.")
    duration: Seconds = Field("10 s", description="Length of each sink's test.")


@dataclass(frozen=True, kw_only=True)
class ObdfilterDetails(PhaseDetails):
    """``PhaseResult.extra`` of an ``obdfilter-survey`` phase.

    Attributes
    ----------
    efficiency : float
        Bandwidth over the OST's peak for the operation (dimensionless).
    peak_Bps : float
        That peak (bytes/s).
    ost : int
        Index of the OST surveyed.
    """

    efficiency: float
    peak_Bps: float
    ost: int


@dataclass(frozen=True, kw_only=True)
class LnetDetails(PhaseDetails):
    """``PhaseResult.extra`` of an ``lnet-selftest`` phase.

    Attributes
    ----------
    efficiency : float
        Bandwidth over the sink NIC's line rate (dimensionless).
    line_rate_Bps : float
        That line rate (bytes/s).
    lnet_over_ssd_peak : float
        Bandwidth over the sink server's SSD peak (all its OSTs; dimensionless).
    sink : int
        Index of the sink OSS.
    """

    efficiency: float
    line_rate_Bps: float
    lnet_over_ssd_peak: float
    sink: int


@dataclass(frozen=True, kw_only=True)
class LnetSurveyDetails(PhaseDetails):
    """``PhaseResult.extra`` of an ``lnet-survey`` phase.

    Attributes
    ----------
    efficiencies : dict of int to float
        Each sink's bandwidth over the NIC line rate, by sink OSS index
        (dimensionless; JSON keys are the indices as strings).
    sources : list of int
        The source OSSes.
    median_efficiency : float
        Median over all sinks.
    local_sinks, cross_group_sinks : int
        Number of sinks in a source's I/O group and in other groups.
    local_median, local_p10, local_p90 : float
        Median, 10th and 90th percentile efficiency of the local sinks (NaN
        when there are none).
    cross_group_median, cross_group_p10, cross_group_p90 : float
        The same over the cross-group sinks.
    """

    efficiencies: dict[int, float]
    sources: list[int]
    median_efficiency: float
    local_sinks: int
    local_median: float
    local_p10: float
    local_p90: float
    cross_group_sinks: int
    cross_group_median: float
    cross_group_p10: float
    cross_group_p90: float


def run_obdfilter(system: LustreCore, phase: ObdfilterPhase) -> PhaseResult:
    """``obdfilter-survey``: threads driving one OST directly (no client, network or RPC)."""
    sim = system.sim
    _, ost = system.ost(phase.ost)
    obj = f"obdfilter:{phase.name}"  # the survey's one object (`objects` is not modelled)
    cost = op_cost(system.model, ost, phase.operation, phase.record_size, sequential=True, obj=obj)
    records = max(1, int(phase.size // phase.record_size))
    threads = min(phase.threads, records)
    per_thread = records / threads * phase.record_size
    path = ost.path(cost.target)
    drive_latency = cost.latency_s - cost.fixed_delay_s - cost.cpu_s - cost.nic_s
    cap = phase.record_size / max(drive_latency, 1e-9)
    start = sim.now
    flows = [
        sim.flows.start_flow(
            per_thread,
            path,
            rate_cap_Bps=cap,
            op_size_B=phase.record_size,
            name=f"{phase.name}.t{i}",
            cap_label="latency: one record per drive latency per thread",
        )
        for i in range(threads)
    ]
    for flow in flows:
        ost.flow_started(cost.target, flow)
    sim.run(sim.env.all_of([f.done for f in flows]))
    elapsed = sim.now - start
    total = per_thread * threads
    bw = total / elapsed
    peak = system.ost_peak_Bps(phase.operation)
    return PhaseResult(
        fidelity="flow",
        name=phase.name,
        operation=phase.operation,
        bandwidth_Bps=bw,
        iops=bw / phase.record_size,
        ranks=threads,
        transfer_size_B=phase.record_size,
        sim_time_s=elapsed,
        bytes_B=total,
        extra=ObdfilterDetails(efficiency=bw / peak, peak_Bps=peak, ost=phase.ost),
    )


def server_groups(model: LustreModel) -> int:
    """I/O groups the OSSes are dealt over, round robin (:meth:`LustreCore.server_group`).

    Read from the model alone, so a phase can be checked before anything is built:
    the ``io`` groups of a dragonfly (all its groups when none has that role),
    the leaves of a fat tree, one group for a switch fabric.
    """
    fabric = model.fabric
    if isinstance(fabric, DragonflySpec):
        role = fabric_role(fabric, "io")
        return sum(g.count for g in fabric.groups if role == "all" or g.role == role)
    return fabric.leaves if isinstance(fabric, FatTreeSpec) else 1


def lnet_candidates(n_oss: int, groups: int, sink: int, cross_group: bool) -> list[int]:
    """The OSSes that may source an LNet test of ``sink``, in index order.

    Those in another I/O group than the sink (``cross_group``) or in the same
    one, OSS ``i`` sitting in group ``i % groups``.
    """
    return [i for i in range(n_oss) if i != sink and (i % groups != sink % groups) == cross_group]


def check_lnet_sources(model: LustreModel, phase: LnetSelftestPhase) -> None:
    """Refuse more ``sources`` than OSSes sit where the phase wants them (``ValueError``)."""
    groups = server_groups(model)
    found = len(lnet_candidates(model.oss.count, groups, phase.sink, phase.cross_group))
    if phase.sources > found:
        where = "another I/O group than" if phase.cross_group else "the I/O group of"
        other = "cross_group = false" if phase.cross_group else "cross_group = true"
        raise ValueError(
            f"sources: {phase.sources} source OSSes needed in {where} the sink (OSS "
            f"{phase.sink}), and the system has {found} there ({model.oss.count} OSSes dealt "
            f"round robin over {groups} I/O groups); set sources to at most {found}, or {other}"
        )


def lnet_sources(system: LustreCore, phase: LnetSelftestPhase) -> list[int]:
    """The source OSSes of an LNet test: the first ``sources`` servers in another I/O group
    than the sink (``cross_group``) or in the same one (:func:`check_lnet_sources` checked
    that there are enough)."""
    groups = server_groups(system.model)
    return lnet_candidates(system.model.oss.count, groups, phase.sink, phase.cross_group)[
        : phase.sources
    ]


def _lnet_transfer(
    system: LustreCore,
    sink_index: int,
    sources: list[int],
    op: OpKind,
    concurrency: int,
    size_B: float,
    duration_s: float,
    label: str,
) -> float:
    """Bytes/s one LNet test moves between ``sources`` and one sink for ``duration_s``.

    The transfers cross the sources' and the sink's NIC ports and the fabric
    between their I/O groups (global links when they sit in different groups);
    each source keeps ``concurrency`` requests of ``size_B`` bytes in flight.
    """
    sim = system.sim
    sink = system.server(sink_index)
    # write: sources send into the sink; read: the sink sends to the sources.
    sink_dir: Direction = "ingress" if op == "write" else "egress"
    src_dir: Direction = "egress" if op == "write" else "ingress"
    nic = system.model.oss.nic
    flows: list[Flow] = []
    start = sim.now
    huge = 1e18
    for k, src_index in enumerate(sources):
        src = system.server(src_index)
        a, b = (src.name, sink.name) if op == "write" else (sink.name, src.name)
        hop_s = system.fabric.latency_s(a, b)
        rtt = 2.0 * (hop_s + 2 * nic.latency) + 2 * size_B / nic.port_Bps(src_dir)
        cap = concurrency * size_B / rtt
        path: list[tuple[Resource, float]] = src.nic.path(src_dir)
        path += system.fabric.path(a, b)
        path += sink.nic.path(sink_dir)
        flows.append(
            sim.flows.start_flow(
                huge,
                path,
                rate_cap_Bps=cap,
                op_size_B=size_B,
                name=f"{label}.s{k}",
                cap_label="concurrency: LNet messages in flight per source",
            )
        )
    sim.run(sim.now + duration_s)
    total = sum(sim.flows.cancel_flow(f) for f in flows)
    return total / (sim.now - start)


def run_lnet(system: LustreCore, phase: LnetSelftestPhase) -> PhaseResult:
    """LNet Self-Test: ``sources`` peer servers move bulk data to or from one sink OSS."""
    start = system.sim.now
    bw = _lnet_transfer(
        system,
        phase.sink,
        lnet_sources(system, phase),
        phase.operation,
        phase.concurrency,
        phase.size,
        phase.duration,
        phase.name,
    )
    nic = system.model.oss.nic
    line = nic.line_rate_Bps()
    ssd = system.ost_peak_Bps(phase.operation) * system.model.oss.targets_per_server
    return PhaseResult(
        fidelity="flow",
        name=phase.name,
        operation=phase.operation,
        bandwidth_Bps=bw,
        iops=bw / phase.size,
        ranks=phase.sources,
        transfer_size_B=phase.size,
        sim_time_s=system.sim.now - start,
        bytes_B=bw * (system.sim.now - start),
        extra=LnetDetails(
            efficiency=bw / line,
            line_rate_Bps=line,
            lnet_over_ssd_peak=bw / ssd,
            sink=phase.sink,
        ),
    )


def survey_sources(system: LustreCore, phase: LnetSurveyPhase) -> list[int]:
    """The survey's source OSSes: as given, or the first two of the first I/O group."""
    if phase.sources is not None:
        return list(phase.sources)
    group0 = [i for i in range(system.model.oss.count) if system.server_group(i) == 0]
    return group0[:2]


def run_lnet_survey(system: LustreCore, phase: LnetSurveyPhase) -> PhaseResult:
    """Every sink in turn from the same sources; per-sink efficiency, local vs cross-group.

    ``bandwidth_Bps`` is the median sink's; ``extra`` (:class:`LnetSurveyDetails`)
    holds every sink's efficiency (``efficiencies``, by sink index) and, for the local and the
    cross-group sinks, the median and the 10th and 90th percentiles.
    """
    start = system.sim.now
    sources = survey_sources(system, phase)
    candidates = [i for i in range(system.model.oss.count) if i not in sources]
    sinks = candidates[: phase.sinks] if phase.sinks is not None else candidates
    line = system.model.oss.nic.line_rate_Bps()
    home = {system.server_group(i) for i in sources}
    eff: dict[int, float] = {}
    for sink in sinks:
        bw = _lnet_transfer(
            system,
            sink,
            sources,
            phase.operation,
            phase.concurrency,
            phase.size,
            phase.duration,
            f"{phase.name}.sink{sink}",
        )
        eff[sink] = bw / line
    values = np.array(list(eff.values()))
    median = float(np.median(values))
    stats: dict[str, tuple[int, float, float, float]] = {}
    for label, members in (
        ("local", [s for s in sinks if system.server_group(s) in home]),
        ("cross_group", [s for s in sinks if system.server_group(s) not in home]),
    ):
        got = np.array([eff[s] for s in members]) if members else np.array([math.nan])
        stats[label] = (
            len(members),
            float(np.median(got)),
            float(np.percentile(got, 10)),
            float(np.percentile(got, 90)),
        )
    extra = LnetSurveyDetails(
        efficiencies=eff,
        sources=sources,
        median_efficiency=median,
        local_sinks=stats["local"][0],
        local_median=stats["local"][1],
        local_p10=stats["local"][2],
        local_p90=stats["local"][3],
        cross_group_sinks=stats["cross_group"][0],
        cross_group_median=stats["cross_group"][1],
        cross_group_p10=stats["cross_group"][2],
        cross_group_p90=stats["cross_group"][3],
    )
    median_bw = median * line
    return PhaseResult(
        fidelity="flow",
        name=phase.name,
        operation=phase.operation,
        bandwidth_Bps=median_bw,
        iops=median_bw / phase.size,
        ranks=len(sources),
        transfer_size_B=phase.size,
        sim_time_s=system.sim.now - start,
        bytes_B=float(values.sum() * line * phase.duration),
        extra=extra,
    )
