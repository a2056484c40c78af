"""The built ``vast`` system: the IOR protocol over its topology, and the SCM prefill.

:class:`VastSystem` drives :class:`~flashsim.workloads.ior.IorRunner` over the
paths of :class:`~flashsim.systems.vast_topology.VastTopology` (flow fidelity)
and the drive queues of :class:`~flashsim.systems.vast_request.VastRequests`
(request fidelity).  Study phases, whose tests each need a fresh system, are
handed to the runner the kind gives it (:mod:`flashsim.systems.vast_study`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import simpy

from flashsim.engine.flows import Flow
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.systems.base import Fidelity
from flashsim.systems.vast_endurance import VastEndurancePhase, run_endurance
from flashsim.systems.vast_model import VastModel
from flashsim.systems.vast_phases import (
    VastGridPhase,
    VastIopsGridPhase,
    VastIorPhase,
    VastSizeSweepPhase,
    buffered_write,
)
from flashsim.systems.vast_queues import closed_loop_rpcs_per_s
from flashsim.systems.vast_rebuild import VastRebuildPhase, run_vast_rebuild
from flashsim.systems.vast_request import VastRequests
from flashsim.units import MIB
from flashsim.workloads.ior import IorDetails, IorPhase, IorRunner, RankStream

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


class VastSystem(VastRequests):
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
        its tests on a fresh system); :class:`~flashsim.systems.vast.VastKind`
        passes :func:`~flashsim.systems.vast_study.run_study_phase`.
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

    # ------------------------------------------------------- IOR protocol
    def ior_prepare(self, phase: IorPhase, repetition: int) -> None:
        """New file versions for a write repetition; nothing to drop for reads."""
        if phase.nodes > len(self.caches):
            raise ValueError(
                f"phase {phase.name!r}: nodes(={phase.nodes}) exceeds the model's "
                f"{len(self.caches)} clients"
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
        cm = self.client_model
        t = phase.transfer_size
        streams: list[RankStream] = []
        read_caps: dict[tuple[float, float, int, float], float] = {}
        direct_caps: dict[tuple[float, float], float] = {}
        migrating = self.migrating()
        self.net.plan(self._offered(phase))
        for r in range(phase.ranks):
            node = phase.node_of(r)
            obj = self._cur_objs[r]
            if phase.operation == "write":
                if phase.direct_io:
                    rpc = cm.rpc_size_B(t, "write")
                    key_w = (1.0, self.wire_s(0.0, node))
                    if key_w not in direct_caps:
                        direct_caps[key_w] = self.direct_rate_Bps(
                            t, "write", phase.ranks, 1.0, node, migrating
                        )
                    cap = direct_caps[key_w]
                    path = self._write_server_path(node)
                    streams.append(RankStream(tuple(path), rpc, cap, cm.rpcs_per_call(t, "write")))
                else:
                    path = list(self.caches[node].ingest_path())
                    streams.append(RankStream(tuple(path), t, cm.copy_rate_Bps(t)))
            else:
                committed = self.tier.committed_B(obj)
                if committed <= 0:
                    raise ValueError(
                        f"phase {phase.name!r}: rank {r} reads {obj!r}, which holds no "
                        "committed data (a reader sees only completed writes)"
                    )
                f_scm, _, _ = self.tier.read_weights(obj)
                path = self._read_path(node, obj)
                if phase.access == "random" or phase.direct_io:
                    rpc = cm.rpc_size_B(t, "read")
                    key_r = (round(f_scm, 9), self.wire_s(0.0, node))
                    if key_r not in direct_caps:
                        direct_caps[key_r] = self.direct_rate_Bps(
                            t, "read", phase.ranks, f_scm, node
                        )
                    cap = direct_caps[key_r]
                    conc = cm.rpcs_per_call(t, "read")
                    streams.append(RankStream(tuple(path), rpc, cap, conc))
                else:
                    net_s = self.wire_s(0.0, node)
                    key = (float(t), round(f_scm, 9), phase.ranks, net_s)
                    seq_cap = read_caps.get(key)
                    if seq_cap is None:
                        seq_cap = self.sequential_read_rate_Bps(t, phase.ranks, f_scm, node)
                        read_caps[key] = seq_cap
                    slots = cm.readahead_slots(t)
                    streams.append(RankStream(tuple(path), cm.mount.rsize, seq_cap, slots))
        return streams

    def direct_rate_Bps(
        self,
        transfer_B: float,
        operation: str,
        ranks: int,
        scm_fraction: float,
        client: int = 0,
        migrating: bool = False,
    ) -> float:
        """Rate of one of ``ranks`` synchronous (O_DIRECT or random) ranks, with the SCM queues.

        Each rank keeps ``rpcs_per_call`` RPCs in flight; an RPC crosses the
        fixed round trip and the data stage of the SCM drives it uses, which
        all ranks share (:func:`~flashsim.systems.vast_queues.closed_loop_rpcs_per_s`:
        the closed loop request fidelity runs, deterministic service).  A write holds ``scm_copies``
        drives at once (modelled as ``n_scm / copies`` drive sets) and, while
        the buffer migrates, each written byte is also read once from SCM
        (shared by the set).  Reads of data on QLC (40-drive stripes) keep the
        zero-load round trip (:meth:`NfsClientModel.direct_rate_Bps`).
        """
        cm = self.client_model
        tier = self.model.tier
        op = "write" if operation == "write" else "read"
        rpc = cm.rpc_size_B(transfer_B, op)
        conc = cm.rpcs_per_call(transfer_B, op)
        rtt = self.rtt_s(rpc, op, scm_fraction, client)
        if op == "write":
            on_path = self.scm_spec.xfer_s("write", rpc) / tier.scm_write_efficiency
            drive_s = on_path
            if migrating:
                drive_s += self.scm_spec.xfer_s("read", rpc) / tier.scm_copies
            drives = max(1, len(self.scm) // tier.scm_copies)
        else:
            on_path = scm_fraction * self.scm_spec.xfer_s("read", rpc) / tier.scm_read_efficiency
            drive_s = on_path
            drives = len(self.scm)
        if drive_s <= 0:
            return cm.direct_rate_Bps(transfer_B, rtt)
        delay_s = cm.mount.syscall_overhead + rtt - on_path
        per_s = closed_loop_rpcs_per_s(ranks, conc, delay_s, drive_s, drives)
        return float(per_s * transfer_B / conc)

    def sequential_read_rate_Bps(
        self, transfer_B: float, readers: int, scm_fraction: float, client: int = 0
    ) -> float:
        """Rate of one of ``readers`` sequential buffered readers (IOR ``-F``) of this system.

        Each reader keeps its read-ahead window of ``rsize`` RPCs in flight;
        an RPC of data still in SCM is served whole by one of the SCM drives
        (its datasheet transfer time stretched by ``scm_read_efficiency``),
        so with few drives the drives' queues set how close the readers get
        to the SCM's bandwidth (:meth:`NfsClientModel.loaded_read_rate_Bps`).
        Data on QLC is erasure-coded over a 40-drive stripe: its media time
        is part of the fixed round trip (the network's max-min sharing still
        caps the QLC drives and every port).
        """
        cm = self.client_model
        rsize = float(cm.mount.rsize)
        scale = 1.0 / self.model.tier.scm_read_efficiency
        drive_s = scm_fraction * self.scm_spec.xfer_s("read", rsize) * scale
        delay_s = self.rtt_s(rsize, "read", scm_fraction, client) - drive_s
        return cm.loaded_read_rate_Bps(transfer_B, readers, delay_s, drive_s, len(self.scm))

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
        if phase.operation != "write":
            return
        obj = self._cur_objs[rank]
        if phase.direct_io:
            self.tier.buffer.add_ingest(flow, obj)
        else:
            self.caches[phase.node_of(rank)].add_ingest(flow, obj)

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
        if isinstance(phase, VastEndurancePhase):
            return run_endurance(self, phase)
        if isinstance(phase, VastRebuildPhase):
            return run_vast_rebuild(self, phase)
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
