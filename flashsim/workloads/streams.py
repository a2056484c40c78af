"""Closed-loop request streams (``workload = "streams"``) on any system kind.

``streams`` closed-loop streams each keep ``queue_depth`` requests of
``transfer_size`` bytes in flight.  The same phase drives both fidelities:

* flow: each stream is one flow of ``bytes_per_stream`` over the system's
  path, capped at ``q * t / L`` (``L`` the zero-load round trip);
* request: the streams' ``streams x queue_depth`` customers issue requests
  until the throughput's relative 95 % half-width is below
  ``target_rel_halfwidth`` (or ``max_requests`` complete).

How a system plugs in
---------------------
Its built system implements :class:`StreamsTarget` (three methods) and hands
``streams`` phases to :func:`run_streams`; its kind lists ``StreamsTarget``
in :attr:`~flashsim.systems.base.SystemKind.implements`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal, Protocol

import numpy as np
from pydantic import Field

from flashsim.config import Bytes, StrictModel
from flashsim.engine.closedloop import Request, run_closed_loop
from flashsim.engine.flows import Flow, Resource
from flashsim.engine.runlength import MIN_SAMPLES_FOR_BATCHES, RunLengthControl
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseDetails, PhaseResult

Fidelity = Literal["flow", "request"]


class StreamsPhase(StrictModel):
    """A phase of ``workload = "streams"``: closed-loop request streams.

    Flow fidelity moves ``bytes_per_stream`` per stream; request fidelity runs
    until the throughput's relative 95 % half-width is below
    ``target_rel_halfwidth`` (or ``max_requests`` complete).
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["streams"]
    operation: Literal["read", "write"] = Field(
        "read", description="Whether the streams read or write."
    )
    streams: Annotated[int, Field(ge=1)] = Field(description="Closed-loop request streams.")
    queue_depth: Annotated[int, Field(ge=1)] = Field(
        1, description="Requests each stream keeps in flight."
    )
    transfer_size: Bytes = Field(description="Bytes per request.")
    bytes_per_stream: Bytes = Field("1 GB", description="Flow fidelity: bytes each stream moves.")
    target_rel_halfwidth: Annotated[float, Field(gt=0.0)] = Field(
        0.01,
        description=(
            "Request fidelity: stop when the throughput's relative 95 % half-width is below this."
        ),
    )
    sample_interval_requests: Annotated[int, Field(ge=1)] = Field(
        200, description="Request fidelity: completions per throughput sample."
    )
    max_requests: Annotated[int, Field(ge=1)] = Field(
        2_000_000, description="Request fidelity: stop after this many completions regardless."
    )


class StreamsTarget(Protocol):
    """What a system provides so that :func:`run_streams` can drive it."""

    sim: Simulation

    def streams_path(self, phase: StreamsPhase) -> Sequence[tuple[Resource, float]]:
        """Flow fidelity: resources a stream crosses and bytes consumed there per user byte."""
        ...

    def streams_round_trip_s(self, phase: StreamsPhase) -> float:
        """Zero-load time (s) of one request of ``phase.transfer_size`` bytes."""
        ...

    def streams_requests(self, phase: StreamsPhase) -> Callable[[int], Request]:
        """Request fidelity: a maker of one request (a SimPy generator) per customer index."""
        ...


def run_streams(target: StreamsTarget, phase: StreamsPhase, fidelity: Fidelity) -> PhaseResult:
    """Run ``phase`` on ``target`` in ``fidelity`` and return its throughput."""
    if fidelity == "flow":
        return _run_flow(target, phase)
    return _run_request(target, phase)


@dataclass(frozen=True, kw_only=True)
class StreamsDetails(PhaseDetails):
    """``PhaseResult.extra`` of a ``streams`` phase in request fidelity.

    (In flow fidelity the phase carries no details.)

    Attributes
    ----------
    requests : int
        Requests completed by all streams.
    mean_response_s, p99_response_s : float
        Mean and 99th-percentile request latency, issue to completion (s).
    """

    requests: int
    mean_response_s: float
    p99_response_s: float


def _run_flow(target: StreamsTarget, phase: StreamsPhase) -> PhaseResult:
    sim = target.sim
    t = phase.transfer_size
    cap = phase.queue_depth * t / target.streams_round_trip_s(phase)
    path = list(target.streams_path(phase))
    start = sim.now
    flows: list[Flow] = [
        sim.flows.start_flow(
            phase.bytes_per_stream,
            path,
            rate_cap_Bps=cap,
            op_size_B=t,
            name=f"stream{i}",
            cap_label="concurrency: stream queue depth q*t/RTT",
        )
        for i in range(phase.streams)
    ]
    sim.run(sim.env.all_of([f.done for f in flows]))
    elapsed = sim.now - start
    total = phase.bytes_per_stream * phase.streams
    bw = total / elapsed
    return PhaseResult(
        fidelity="flow",
        name=phase.name,
        operation=phase.operation,
        bandwidth_Bps=bw,
        iops=bw / t,
        ranks=phase.streams,
        transfer_size_B=t,
        sim_time_s=elapsed,
        bytes_B=total,
    )


def _run_request(target: StreamsTarget, phase: StreamsPhase) -> PhaseResult:
    sim = target.sim
    t = phase.transfer_size
    request = target.streams_requests(phase)
    control = RunLengthControl(
        target_rel_halfwidth=phase.target_rel_halfwidth,
        min_samples=MIN_SAMPLES_FOR_BATCHES,
        max_samples=max(40, phase.max_requests // phase.sample_interval_requests),
    )
    start = sim.now
    customers = list(range(phase.streams * phase.queue_depth))
    loop = run_closed_loop(sim, request, customers, control, phase.sample_interval_requests)
    return PhaseResult(
        fidelity="request",
        name=phase.name,
        operation=phase.operation,
        bandwidth_Bps=loop.ops_per_s * t,
        iops=loop.ops_per_s,
        ranks=phase.streams,
        transfer_size_B=t,
        sim_time_s=sim.now - start,
        bytes_B=loop.requests * t,
        ci_rel_halfwidth=loop.rel_halfwidth,
        extra=StreamsDetails(
            requests=loop.requests,
            mean_response_s=float(loop.responses_s.mean()),
            p99_response_s=float(np.percentile(loop.responses_s, 99)),
        ),
    )
