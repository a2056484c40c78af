"""A generic pipeline of stages (e.g. NIC -> CPU -> SSD) driven by request streams.

Each stage has ``servers`` identical servers, a bandwidth and/or an operation
rate, a latency (a pure delay that does not occupy a server) and a
service-time variability.  The same parameters drive both fidelities:

* flow: a stage is a resource with ``capacity_Bps = bandwidth`` and
  ``capacity_ops = ops_rate``; a stream with ``q`` requests of ``t`` bytes in
  flight is one flow capped at ``q * t / L``, ``L`` being the zero-load round
  trip through all stages;
* request: a stage is a FIFO queue with ``c`` servers whose mean service time
  for a request of ``t`` bytes is ``max(c * t / bandwidth, c / ops_rate)``, so
  its saturation throughput equals the flow capacity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import Field, model_validator

from flashsim.config import Bandwidth, NonNegativeSeconds, OpRate, StrictModel
from flashsim.engine.closedloop import Request, visit_all
from flashsim.engine.distributions import SampleBuffer, with_mean_and_cv
from flashsim.engine.flows import Resource
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.systems.base import (
    BuiltSystem,
    Description,
    Fidelity,
    KindModel,
    LayerPeak,
    SystemKind,
    bottleneck,
    check_size,
)
from flashsim.workloads.streams import StreamsPhase, StreamsTarget, run_streams

__all__ = ["Pipeline", "PipelineKind", "PipelineModel", "StageModel", "StreamsPhase"]


class StageModel(StrictModel):
    """One stage of a pipeline model file."""

    name: str = Field(description="Stage name, unique within the model (e.g. `nic`, `ssd`).")
    servers: Annotated[int, Field(ge=1)] = Field(
        1, description="Identical servers in the stage (request fidelity: queue servers)."
    )
    bandwidth: Bandwidth | None = Field(
        None, description="Bytes/s the stage moves at saturation (unset: no bandwidth limit)."
    )
    ops_rate: OpRate | None = Field(
        None, description="Operations/s the stage serves at saturation (unset: no limit)."
    )
    latency: NonNegativeSeconds = Field(
        "0 s", description="Pure delay per request that holds no server."
    )
    service_distribution: Literal["deterministic", "exponential", "lognormal", "gamma"] = Field(
        "exponential", description="Distribution of service times (request fidelity)."
    )
    service_cv: Annotated[float, Field(ge=0.0)] = Field(
        1.0, description="Coefficient of variation of service times (request fidelity)."
    )

    @model_validator(mode="after")
    def _has_capacity(self) -> StageModel:
        if self.bandwidth is None and self.ops_rate is None:
            raise ValueError(f"stage {self.name!r} needs a bandwidth or an ops_rate")
        return self

    def service_s(self, transfer_B: float) -> float:
        """Mean time (s) one server spends on a request of ``transfer_B`` bytes."""
        by_bytes = self.servers * transfer_B / self.bandwidth if self.bandwidth else 0.0
        by_ops = self.servers / self.ops_rate if self.ops_rate else 0.0
        return float(max(by_bytes, by_ops))


class PipelineModel(KindModel):
    """Model file of ``kind = "pipeline"``."""

    kind: Literal["pipeline"]
    stages: Annotated[list[StageModel], Field(min_length=1)]

    @model_validator(mode="after")
    def _unique_names(self) -> PipelineModel:
        names = [s.name for s in self.stages]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"stage names must be unique; repeated: {sorted(dup)}")
        return self


class Pipeline(BuiltSystem):
    """A pipeline assembled in a simulation."""

    def __init__(self, model: PipelineModel, sim: Simulation, fidelity: Fidelity) -> None:
        super().__init__(sim, fidelity)
        self.model = model
        self.resources: list[Resource] = []
        self.queues: list[FifoQueue] = []
        for stage in model.stages:
            name = f"{model.name}.{stage.name}"
            if fidelity == "flow":
                self.resources.append(sim.flows.add_resource(name, stage.bandwidth, stage.ops_rate))
            else:
                self.queues.append(FifoQueue(sim.env, name, stage.servers))

    def round_trip_s(self, transfer_B: float) -> float:
        """Zero-load time (s) for one request of ``transfer_B`` bytes through all stages."""
        return float(sum(s.latency + s.service_s(transfer_B) for s in self.model.stages))

    def run_phase(self, phase: StreamsPhase) -> PhaseResult:
        """Run a streams phase in this system's fidelity."""
        return run_streams(self, phase, self.fidelity)

    # ............................................................ StreamsTarget
    def streams_path(self, phase: StreamsPhase) -> list[tuple[Resource, float]]:
        """Every stage, one byte per user byte."""
        return [(r, 1.0) for r in self.resources]

    def streams_round_trip_s(self, phase: StreamsPhase) -> float:
        """Zero-load round trip of one request (:meth:`round_trip_s`)."""
        return self.round_trip_s(phase.transfer_size)

    def streams_requests(self, phase: StreamsPhase) -> Callable[[int], Request]:
        """Requests that visit every stage's queue with sampled service times."""
        t = phase.transfer_size
        stages = self.model.stages
        samplers = [
            SampleBuffer(
                with_mean_and_cv(s.service_distribution, s.service_s(t), s.service_cv),
                self.sim.rng(f"{self.model.name}.{s.name}.service"),
            )
            for s in stages
        ]
        plan = list(zip(self.queues, samplers, [s.latency for s in stages], strict=True))

        def request(_customer: int) -> Request:
            return visit_all([(queue, sampler.next(), latency) for queue, sampler, latency in plan])

        return request


class PipelineKind(SystemKind):
    """The ``pipeline`` system kind."""

    model_type = PipelineModel
    built_type = Pipeline
    implements = (StreamsTarget,)

    def check_phase(self, model: PipelineModel, phase: StreamsPhase) -> None:
        """Refuse phases whose streams (flow) or customers (request) would not fit in memory."""
        check_size(
            "streams",
            phase.streams * phase.queue_depth,
            len(model.stages),
            f"streams x queue_depth = {phase.streams:,} x {phase.queue_depth:,}",
        )

    def describe(self, model: PipelineModel) -> Description:
        layers = [
            LayerPeak(
                scope="pipeline",
                layer=s.name,
                count=s.servers,
                read_Bps=s.bandwidth,
                write_Bps=s.bandwidth,
                read_iops=s.ops_rate,
                write_iops=s.ops_rate,
                note=f"{s.servers} server(s), latency {s.latency * 1e6:g} us",
            )
            for s in model.stages
        ]
        return Description(
            system=model.name,
            kind=self.kind,
            components={"stages": len(model.stages)},
            layers=layers,
            bottlenecks={
                "bandwidth": bottleneck(layers, "pipeline", "read_Bps"),
                "iops": bottleneck(layers, "pipeline", "read_iops"),
            },
        )
