"""The built ``vast`` system: the IOR protocol over its topology, and the SCM prefill.

:class:`VastSystem` drives :class:`~flashsim.workloads.ior.IorRunner` over the
paths of :class:`~flashsim.systems.vast.topology.VastTopology` (flow fidelity)
and the drive queues of :class:`~flashsim.systems.vast.request.VastRequests`
(request fidelity), each rank's stream built by
:meth:`~flashsim.systems.vast.streams.VastStreams.access_stream`, the method
the job phases (``darshan``, ``jobs``, ``mix``: :mod:`flashsim.systems.vast.jobs`)
build theirs with.  Study phases, whose tests each need a fresh system, are
handed to the runner the kind gives it (:mod:`flashsim.systems.vast.study`).
The system's one stateful target is its shared SCM/QLC pool
(:class:`~flashsim.systems.vast.target.VastPool`): its state (SCM fill, wear,
failed drives, rebuilds) lives for the whole run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import simpy

from flashsim.components.target_state import StatefulTarget
from flashsim.engine.flows import Flow
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.systems.base import Fidelity
from flashsim.systems.vast.endurance import VastEndurancePhase, run_endurance
from flashsim.systems.vast.io500 import VastIo500
from flashsim.systems.vast.jobs import VastJobs, job_fidelity
from flashsim.systems.vast.model import VastModel
from flashsim.systems.vast.phases import (
    VastGridPhase,
    VastIopsGridPhase,
    VastIorPhase,
    VastSizeSweepPhase,
    buffered_write,
)
from flashsim.systems.vast.rebuild import VastRebuildPhase, run_vast_rebuild
from flashsim.systems.vast.streams import CapCache
from flashsim.systems.vast.target import VastPool
from flashsim.units import MIB
from flashsim.workloads.darshan import DarshanPhase, run_darshan
from flashsim.workloads.io500 import Io500Phase, run_io500
from flashsim.workloads.ior import IorDetails, IorPhase, IorRunner, RankStream
from flashsim.workloads.jobs import JobsPhase, run_jobs
from flashsim.workloads.mix_phase import MixPhase, run_mix
from flashsim.workloads.production import ProductionPhase, run_production

#: ``runner(model, phase, seed, fidelity)``: a study phase's summary as one phase result.
StudyRunner = Callable[[VastModel, Any, int, str], PhaseResult]


@dataclass(frozen=True, kw_only=True)
class VastIorDetails(IorDetails):
    """``PhaseResult.extra`` of an ``ior`` phase on VAST: IOR's details plus the tier's state.

    Attributes
    ----------
    tier_scm_B : float
        Bytes held in the SCM write buffer when the phase ended.
    tier_migrated_B : float
        Bytes migrated from SCM to QLC since the system was built.
    """

    tier_scm_B: float
    tier_migrated_B: float

    @classmethod
    def of(cls, ior: IorDetails, *, tier_scm_B: float, tier_migrated_B: float) -> VastIorDetails:
        """``ior``'s fields with the tier's state added."""
        own = {f.name: getattr(ior, f.name) for f in fields(IorDetails)}
        return cls(**own, tier_scm_B=tier_scm_B, tier_migrated_B=tier_migrated_B)


class VastSystem(VastJobs, VastIo500):
    """A VAST-like system assembled in a simulation, running IOR phases.

    Parameters
    ----------
    model : VastModel
        The model file.
    sim : Simulation
        The simulation.
    fidelity : {"flow", "request"}
        Default fidelity of IOR phases.
    studies : callable, optional
        ``studies(model, phase, seed, fidelity)`` runs a study phase (each of
        its tests on a fresh system); :class:`~flashsim.systems.vast.kind.VastKind`
        passes :func:`~flashsim.systems.vast.study.run_study_phase`.
    """

    def __init__(
        self,
        model: VastModel,
        sim: Simulation,
        fidelity: Fidelity,
        studies: StudyRunner | None = None,
    ) -> None:
        super().__init__(model, sim, fidelity)
        self.ior = IorRunner(self, fidelity)
        self.studies = studies
        #: The shared SCM/QLC pool, the system's one stateful target (target.py).
        self.pool = VastPool(self)

    # ------------------------------------------------------- target state
    def target_count(self) -> int:
        """One target: the shared SCM/QLC pool (:mod:`flashsim.systems.vast.target`)."""
        return 1

    def target(self, index: int) -> StatefulTarget:
        """The pool (index 0); ``ValueError("target: ...")`` for any other index."""
        if index != 0:
            raise ValueError(
                f"target: index {index}: a vast system has one target, its shared SCM/QLC "
                "pool (index 0)"
            )
        return self.pool

    def built_targets(self) -> list[tuple[int, StatefulTarget]]:
        """The pool, built with the system."""
        return [(0, self.pool)]

    # ------------------------------------------------------- IOR protocol
    def ior_prepare(self, phase: IorPhase, repetition: int) -> None:
        """New file versions for a write repetition; nothing to drop for reads."""
        if phase.first_node + phase.nodes > len(self.caches):
            raise ValueError(
                f"phase {phase.name!r}: nodes(={phase.nodes}) from first_node "
                f"{phase.first_node} exceeds the model's {len(self.caches)} clients"
            )
        dataset = self._dataset(phase)
        if phase.operation == "write":
            old = self._versions.get(dataset)
            if old is not None:
                for r in range(phase.ranks):
                    self.tier.forget(f"{dataset}#{old}/{r}")
            self._versions[dataset] = (old or 0) + 1
            entropy = getattr(phase, "data_entropy", 8.0)
            self._entropy[f"{dataset}#{self._versions[dataset]}"] = entropy
            self._cur_objs = [self.object_name(dataset, r) for r in range(phase.ranks)]
        else:
            self._cur_objs = [
                self.object_name(dataset, phase.file_of(r)) for r in range(phase.ranks)
            ]
            self._cur_read = [self._read_picks(obj) for obj in self._cur_objs]
            self._copy_queues = {}

    def ior_streams(self, phase: IorPhase) -> list[RankStream]:
        """One stream per rank: where its bytes go and its own rate cap."""
        streams: list[RankStream] = []
        caps: CapCache = {}
        migrating = self.migrating()
        self.net.plan(self._offered(phase))
        for r in range(phase.ranks):
            obj = self._cur_objs[r]
            where = None
            if phase.operation == "read":
                if self.tier.committed_B(obj) <= 0:
                    raise ValueError(
                        f"phase {phase.name!r}: rank {r} reads {obj!r}, which holds no "
                        "committed data (a reader sees only completed writes)"
                    )
                where = self.tier.read_weights(obj)
            stream = self.access_stream(
                phase.node_of(r),
                phase.operation == "write",
                phase.transfer_size,
                random=phase.access == "random",
                direct_io=phase.direct_io,
                sharers=phase.ranks,
                where=where,
                migrating=migrating,
                caps=caps,
            )
            streams.append(stream)
        return streams

    def _offered(self, phase: IorPhase) -> dict[tuple[str, str], float]:
        """Offered load (bytes/s) per (client, CNode) endpoint pair, for adaptive routing.

        Each node in use offers its mount's HCA rate in the data's direction,
        spread evenly over the CNodes its connections reach.
        """
        if self.net.front is None:
            return {}
        write = phase.operation == "write"
        rate = self.client_model.nic_Bps("egress" if write else "ingress")
        demand: dict[tuple[str, str], float] = {}
        for node in sorted({phase.node_of(r) for r in range(phase.ranks)}):
            cnodes = self.client_cnodes(node)
            me = self.net.clients[node]
            for c in cnodes:
                cn = self.net.cnodes[c]
                key = (me, cn) if write else (cn, me)
                demand[key] = demand.get(key, 0.0) + rate / len(cnodes)
        return demand

    def ior_flow_started(self, phase: IorPhase, rank: int, label: str, flow: Flow) -> None:
        """Count a writing rank's bytes into its client cache (or the tier for O_DIRECT)."""
        if phase.operation == "write":
            self.count_write(flow, phase.node_of(rank), self._cur_objs[rank], phase.direct_io)

    def ior_fsync(self, phase: IorPhase, rank: int) -> simpy.Event | None:
        """``fsync``: wait until the rank's client cache is written back."""
        if phase.direct_io:
            return None
        return self.caches[phase.node_of(rank)].flush()

    def ior_peaks(self, phase: IorPhase) -> dict[str, float]:
        """No nominal peaks are reported for efficiencies."""
        return {}

    # ------------------------------------------------------------- phases
    def run_phase(self, phase: Any) -> PhaseResult:
        """Run an ``ior`` phase here, or a study phase through :attr:`studies`.

        Raises
        ------
        ValueError
            For a study phase when the system was built without ``studies``.
        """
        if isinstance(phase, Io500Phase):
            return run_io500(self, phase, self.fidelity)
        if isinstance(phase, DarshanPhase | JobsPhase | MixPhase):
            fidelity = job_fidelity(phase, phase.fidelity or self.fidelity, self.sim.seed)
            if isinstance(phase, DarshanPhase):
                return run_darshan(self, phase, fidelity, self.sim.seed)
            if isinstance(phase, MixPhase):
                return run_mix(self, phase, fidelity, self.sim.seed)
            return run_jobs(self, phase, fidelity, self.sim.seed, self._fresh)
        if isinstance(phase, ProductionPhase):
            return run_production(self, phase)
        if isinstance(phase, VastEndurancePhase):
            return run_endurance(self, phase)
        if isinstance(phase, VastRebuildPhase):
            return run_vast_rebuild(self, phase, self.pool)
        if isinstance(phase, VastGridPhase | VastIopsGridPhase | VastSizeSweepPhase):
            if self.studies is None:
                raise ValueError(
                    f"phase {phase.name!r}: workload {phase.workload!r} is a study (each test "
                    "on a fresh system); build the system with VastKind().build to run it"
                )
            return self.studies(self.model, phase, self.sim.seed, self.fidelity)
        if buffered_write(phase) and (phase.fidelity or self.fidelity) == "request":
            # The page cache exists in flow fidelity only: this phase runs (and says it ran) there.
            phase = phase.model_copy(update={"fidelity": "flow"})
        result = self.ior.run(phase)
        if isinstance(phase, VastIorPhase) and phase.delete_after:
            dataset = self._dataset(phase)
            for r in range(phase.ranks):
                self.tier.forget(self.object_name(dataset, r))
        result.extra = VastIorDetails.of(
            result.details(IorDetails),
            tier_scm_B=self.tier.check().scm_B,
            tier_migrated_B=self.tier.migrated_B,
        )
        return result

    def _fresh(self) -> VastSystem:
        """A new system of the same model and seed, for a job run alone."""
        return VastSystem(self.model, Simulation(self.sim.seed), self.fidelity, self.studies)

    def prefill(self, fraction: float = 1.0) -> None:
        """Write ``fraction`` of the SCM hold level of throw-away data (steady state).

        The seed's grid ran on a system that had long been written to, so
        its SCM buffer sat at the migration watermark.
        """
        tier = self.tier
        size = fraction * tier.buffer.drain_start_B
        if size <= 0:
            return
        flow = self.sim.flows.start_flow(
            size, self._write_server_path(0), name="prefill", op_size_B=MIB
        )
        tier.buffer.add_ingest(flow, "prefill#0/0")
        self.sim.run(flow.done)
        tier.forget("prefill#0/0")
