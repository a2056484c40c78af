"""``kind = "vast"``: a VAST-like disaggregated SCM/QLC system with NFS-over-RDMA clients.

Structure (seed 002 Fig. 1 and Appendix A): client nodes mount the system over
NFS/RDMA with ``nconnect`` and multipath, so every client spreads its RPCs over
all CNodes; stateless CNodes bridge the client network and an NVMe-oF fabric;
DNodes project bare SCM and QLC drives over that fabric.  The data path logic
(replication to SCM, stripe building, compression, erasure coding and
migration to QLC) is :class:`~flashsim.components.tier.ScmQlcTier`; the client
(write-back, read-ahead, O_DIRECT) is :mod:`flashsim.components.nfs`.

Flow-fidelity paths, per user byte (``copies`` = SCM replicas, ``c`` =
compressed fraction, ``k+m`` = erasure-code geometry):

* buffered write: process -> client page cache (a
  :class:`~flashsim.components.fluid.FluidBuffer` per client) -> write-back
  flow: client HCAs (1) -> CNode client ports (1/n_cnode each) -> CNode fabric
  ports (copies/n_cnode each) -> fabric switches (copies) -> DNode ports (by
  the SCM drives each DNode holds) -> SCM write buffer gate and SCM drives;
* O_DIRECT write: the same path without the page cache, capped per rank by
  its synchronous round trip;
* migration: SCM drives (1) -> DNode ports -> fabric (1 + c(k+m)/k) -> CNode
  fabric ports (in 1, out c(k+m)/k) -> DNode ports -> QLC drives;
* read: the drives where the object's bytes live now -> DNode ports ->
  fabric -> CNode fabric ports -> CNode client ports -> client HCAs, capped
  per rank by the round trip (random, O_DIRECT) or, for sequential buffered
  reads, by the closed loop of the rank's read-ahead RPCs through its own
  copy, the fixed round trip and the SCM drives' queues
  (:meth:`VastSystem.sequential_read_rate_Bps`): per-process bound at low
  ``N x p``, approaching the SCM drives' bandwidth gradually at high ``N x p``.

The zero-load round trip of one RPC of ``s`` bytes is ``op_latency`` (client
NFS/RDMA stack, CNode metadata and transaction handling) + media latency
(by location) + ``s`` over each hop's port rate (store and forward).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Annotated, Any, Literal

import numpy as np
import simpy
from pydantic import Field

from flashsim.components.cpu import CpuSpec
from flashsim.components.drive import DriveField
from flashsim.components.fluid import DrainPath, FluidBuffer, split_evenly
from flashsim.components.nfs import NfsClientModel, NfsClientSpec
from flashsim.components.nic import NicSpec
from flashsim.components.ssd import SsdSpec
from flashsim.components.tier import ScmQlcTier, TierSpec
from flashsim.config import Bandwidth, Bytes, NonNegativeSeconds, StrictModel, warn
from flashsim.engine.flows import Flow, Resource
from flashsim.engine.maxmin import FloatArray
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.studies.vast import (
    VastGridPhase,
    VastIopsGridPhase,
    VastSizeSweepPhase,
    run_study_phase,
)
from flashsim.systems.base import (
    BuiltSystem,
    Description,
    Fidelity,
    LayerPeak,
    SystemKind,
    bottleneck,
    check_size,
)
from flashsim.units import MIB
from flashsim.workloads.ior import FileLayout, IorPhase, IorRunner, RankStream


# ===================================================================== schema
class CNodeSpec(StrictModel):
    """The CNodes (protocol and data-path servers).

    Attributes
    ----------
    count : int
        CNodes.
    cpu : CpuSpec
        Processors of one CNode.
    client_nic : NicSpec
        Ports to the client network.
    fabric_nic : NicSpec
        Ports to the NVMe fabric.
    op_latency : float
        Seconds a small RPC spends in the client NFS/RDMA stack and the CNode
        (metadata lookups and transactions in SCM), excluding media and wire.
    """

    count: Annotated[int, Field(ge=1)]
    cpu: CpuSpec
    client_nic: NicSpec
    fabric_nic: NicSpec
    op_latency: NonNegativeSeconds


class DNodeSpec(StrictModel):
    """The DNodes (drive enclosures on the NVMe fabric).

    Attributes
    ----------
    count : int
        DNodes.
    cpu : CpuSpec or None
        Processors (they do little beyond NVMe-oF target work).
    fabric_nic : NicSpec
        Ports to the NVMe fabric.
    scm_drives, qlc_drives : int
        Drives per DNode.
    scm_drive, qlc_drive : SsdSpec
        Drive datasheets (a path relative to the model file, or a table).
    qlc_read_overhead : float
        Seconds a small read from QLC costs beyond the drive's datasheet
        latency (erasure-coded, compressed chunk reconstruction).
    """

    count: Annotated[int, Field(ge=1)]
    cpu: CpuSpec | None = None
    fabric_nic: NicSpec
    scm_drives: Annotated[int, Field(ge=1)]
    qlc_drives: Annotated[int, Field(ge=1)]
    scm_drive: DriveField
    qlc_drive: DriveField
    qlc_read_overhead: NonNegativeSeconds = "0 s"


class FabricSpec(StrictModel):
    """The NVMe fabric between CNodes and DNodes.

    Attributes
    ----------
    switches : int
        Switches (traffic is spread over them).
    switch_bandwidth : float
        Switching capacity of one switch in bytes/s.
    latency : float
        Seconds per traversal.
    """

    switches: Annotated[int, Field(ge=1)]
    switch_bandwidth: Bandwidth
    latency: NonNegativeSeconds = "0 s"


class TurnoverSpec(StrictModel):
    """A what-if for :meth:`VastKind.describe`: a system of another size and write load.

    Attributes
    ----------
    capacity : float
        Usable capacity of the hypothetical system in bytes.
    daily_writes : float
        Bytes written per day.
    """

    capacity: Bytes
    daily_writes: Bytes


class VastModel(StrictModel):
    """Model file of ``kind = "vast"``."""

    kind: Literal["vast"]
    name: str = Field(description="System name, for reports.")
    description: str = Field("", description="Free text, for reports.")
    cnode: CNodeSpec
    dnode: DNodeSpec
    fabric: FabricSpec
    client: NfsClientSpec
    tier: TierSpec
    turnover: TurnoverSpec | None = None


class VastIorPhase(IorPhase):
    """An IOR phase on a VAST system, with the entropy of the data it writes.

    Attributes
    ----------
    data_entropy : float
        Bits of entropy per byte of the written data (8 = random,
        incompressible, as ``ior-incompress``; IOR's default pattern is far
        lower).
    delete_after : bool
        Delete the files after the phase (the seed's pre-read flush wrote and
        deleted 1 TiB eight times).
    """

    data_entropy: Annotated[float, Field(ge=0.0, le=8.0)] = 8.0
    delete_after: bool = False


VastPhase = Annotated[
    VastIorPhase | VastGridPhase | VastIopsGridPhase | VastSizeSweepPhase,
    Field(discriminator="workload"),
]


# ==================================================================== system
class VastSystem(BuiltSystem):
    """A VAST-like system assembled in a simulation.

    Parameters
    ----------
    model : VastModel
        The model file.
    sim : Simulation
        The simulation.
    fidelity : {"flow", "request"}
        Default fidelity of IOR phases.
    """

    def __init__(self, model: VastModel, sim: Simulation, fidelity: Fidelity) -> None:
        super().__init__(sim, fidelity)
        self.model = model
        name = model.name
        flows = sim.flows
        cn, dn = model.cnode, model.dnode
        self.client_model = NfsClientModel(model.client)
        self.scm_spec: SsdSpec = _ssd(dn.scm_drive, "dnode.scm_drive")
        self.qlc_spec: SsdSpec = _ssd(dn.qlc_drive, "dnode.qlc_drive")

        def ports(node: str, count: int, label: str, capacity_Bps: float) -> list[Resource]:
            return [
                flows.add_resource(f"{name}.{node}{i}.{label}", capacity_Bps) for i in range(count)
            ]

        n_clients = model.client.count
        self.client_tx = ports("client", n_clients, "tx", self.client_model.nic_Bps("egress"))
        self.client_rx = ports("client", n_clients, "rx", self.client_model.nic_Bps("ingress"))
        self.cnode_rx = ports("cnode", cn.count, "client_rx", cn.client_nic.node_Bps("ingress"))
        self.cnode_tx = ports("cnode", cn.count, "client_tx", cn.client_nic.node_Bps("egress"))
        self.cnode_ftx = ports("cnode", cn.count, "fabric_tx", cn.fabric_nic.node_Bps("egress"))
        self.cnode_frx = ports("cnode", cn.count, "fabric_rx", cn.fabric_nic.node_Bps("ingress"))
        self.switch = flows.add_resource(
            f"{name}.fabric", model.fabric.switches * model.fabric.switch_bandwidth
        )
        self.dnode_rx = ports("dnode", dn.count, "fabric_rx", dn.fabric_nic.node_Bps("ingress"))
        self.dnode_tx = ports("dnode", dn.count, "fabric_tx", dn.fabric_nic.node_Bps("egress"))
        self.scm: list[Resource] = []
        self.qlc: list[Resource] = []
        self.qlc_ops: list[Resource] = []
        self.scm_dnode: list[int] = []
        self.qlc_dnode: list[int] = []
        for d in range(dn.count):
            for j in range(dn.scm_drives):
                self.scm.append(
                    flows.add_resource(f"{name}.dnode{d}.scm{j}", self.scm_spec.read_bandwidth)
                )
                self.scm_dnode.append(d)
            for j in range(dn.qlc_drives):
                self.qlc.append(
                    flows.add_resource(f"{name}.dnode{d}.qlc{j}", self.qlc_spec.read_bandwidth)
                )
                self.qlc_ops.append(
                    flows.add_resource(
                        f"{name}.dnode{d}.qlc{j}.ops",
                        self.qlc_spec.read_iops * model.tier.read_chunk,
                    )
                )
                self.qlc_dnode.append(d)
        self._scm_share = np.bincount(self.scm_dnode, minlength=dn.count) / len(self.scm)
        self._qlc_dnode_idx = np.asarray(self.qlc_dnode)
        self._qlc_share = np.bincount(self.qlc_dnode, minlength=dn.count) / len(self.qlc)
        self.tier = ScmQlcTier(
            sim,
            f"{name}.tier",
            model.tier,
            self.scm,
            self.qlc,
            scm_write_cost=self.scm_spec.read_bandwidth / self.scm_spec.write_bandwidth,
            qlc_write_cost=self.qlc_spec.read_bandwidth / self.qlc_spec.write_bandwidth,
            migration_extra=self._migration_extra,
            entropy_of=self._entropy_of,
            qlc_ops=self.qlc_ops,
        )
        # Client page caches drain into the tier.
        self.caches: list[FluidBuffer] = []
        for i in range(model.client.count):
            cache = FluidBuffer(
                sim,
                f"{name}.client{i}.dirty",
                capacity_B=self.client_model.dirty_limit_B,
                drain_start_B=self.client_model.dirty_background_B,
                drain_path=self._writeback_path(i),
            )
            self.tier.buffer.add_upstream(cache)
            self.caches.append(cache)
        self.ior = IorRunner(self, fidelity)
        self._entropy: dict[str, float] = {}
        self._versions: dict[str, int] = {}
        self._cur_read: list[tuple[float, FloatArray | None]] = []
        self._queues: dict[str, list[tuple[FifoQueue, FifoQueue]]] | None = None
        self._cur_objs: list[str] = []
        self._copy_queues: dict[int, FifoQueue] = {}

    # ------------------------------------------------------------- helpers
    def _entropy_of(self, obj: str) -> float:
        return self._entropy.get(obj.split("/", 1)[0], 8.0)

    def client_cnodes(self, client: int) -> list[int]:
        """CNodes a client's connections reach (multipath over virtual IPs, no locality).

        ``nconnect`` connections go round-robin to the ``remote_ports`` virtual
        IPs, which the CNodes serve in turn, so a client reaches
        ``min(nconnect, remote_ports, n_cnodes)`` CNodes; clients start at
        different CNodes.
        """
        n = len(self.cnode_rx)
        mount = self.model.client.mount
        k = max(1, min(mount.nconnect, mount.remote_ports, n))
        return [(client + i) % n for i in range(k)]

    def _fabric_out(self, copies: float, client: int) -> list[tuple[Resource, float]]:
        """CNode -> fabric -> DNode hops of ``copies`` bytes bound for the SCM drives."""
        path = split_evenly([self.cnode_ftx[i] for i in self.client_cnodes(client)], copies)
        path.append((self.switch, copies))
        path += [
            (r, copies * float(s)) for r, s in zip(self.dnode_rx, self._scm_share, strict=True) if s
        ]
        return path

    def _writeback_path(self, client: int) -> Callable[[str], DrainPath]:
        """What a client's dirty pages cross on their way to SCM: a write's server path."""

        def path(_head: str) -> DrainPath:
            hops = self._write_server_path(client)
            return DrainPath(hops, op_size_B=self.client_model.mount.wsize, key=None)

        return path

    def _migration_extra(self, c: float) -> list[tuple[Resource, float]]:
        width = self.tier.stripe_width(c)
        out = c * width / (width - self.model.tier.ec_parity)
        path: list[tuple[Resource, float]] = [
            (r, float(s)) for r, s in zip(self.dnode_tx, self._scm_share, strict=True) if s
        ]
        path.append((self.switch, 1.0 + out))
        path += split_evenly(self.cnode_frx, 1.0)
        path += split_evenly(self.cnode_ftx, out)
        path += [
            (r, out * float(s)) for r, s in zip(self.dnode_rx, self._qlc_share, strict=True) if s
        ]
        return path

    def _read_path(self, client: int, obj: str) -> list[tuple[Resource, float]]:
        drives = self.tier.read_path(obj)
        f_scm, qlc_w, _ = self.tier.read_weights(obj)
        per_dnode = np.zeros(len(self.dnode_tx))
        per_dnode += f_scm * self._scm_share
        np.add.at(per_dnode, self._qlc_dnode_idx, qlc_w)
        phys = float(per_dnode.sum())
        path = list(drives)
        path += [(r, float(w)) for r, w in zip(self.dnode_tx, per_dnode, strict=True) if w > 0]
        if phys > 0:
            path.append((self.switch, phys))
            cnodes = self.client_cnodes(client)
            path += split_evenly([self.cnode_frx[i] for i in cnodes], phys)
        path += split_evenly([self.cnode_tx[i] for i in self.client_cnodes(client)], 1.0)
        path.append((self.client_rx[client], 1.0))
        return path

    def _write_server_path(self, client: int) -> list[tuple[Resource, float]]:
        copies = float(self.model.tier.scm_copies)
        path = [(self.client_tx[client], 1.0)]
        path += split_evenly([self.cnode_rx[i] for i in self.client_cnodes(client)], 1.0)
        path += self._fabric_out(copies, client)
        path += self.tier.ingest_path()
        return path

    def wire_s(self, size_B: float) -> float:
        """Store-and-forward time (s) of ``size_B`` bytes over one port of each hop."""
        m = self.model
        ports = [
            m.client.nic.port_bandwidth,
            m.cnode.client_nic.port_bandwidth,
            m.cnode.fabric_nic.port_bandwidth,
            m.dnode.fabric_nic.port_bandwidth,
        ]
        return float(sum(size_B / bw for bw in ports) + 2 * m.fabric.latency)

    def rtt_s(self, size_B: float, operation: str, scm_fraction: float = 1.0) -> float:
        """Zero-load round trip (s) of one RPC of ``size_B`` bytes.

        Parameters
        ----------
        size_B : float
            RPC payload in bytes.
        operation : {"read", "write"}
            Direction.
        scm_fraction : float
            Fraction of reads served by SCM (the rest by QLC).
        """
        m = self.model
        base = m.cnode.op_latency + self.wire_s(size_B)
        if operation == "write":
            scale = 1.0 / m.tier.scm_write_efficiency
            return float(base + self.media_s(self.scm_spec, "write", size_B, scale))
        scm = self.media_s(self.scm_spec, "read", size_B, 1.0 / m.tier.scm_read_efficiency)
        qlc = self.media_s(self.qlc_spec, "read", size_B) + m.dnode.qlc_read_overhead
        return float(base + scm_fraction * scm + (1.0 - scm_fraction) * qlc)

    @staticmethod
    def media_s(
        spec: SsdSpec, op: Literal["read", "write"], size_B: float, scale: float = 1.0
    ) -> float:
        """Zero-load drive time (s): command, transfer (stretched by ``scale``), access latency.

        The same stages request fidelity queues at (:meth:`_visit`).
        """
        return float(
            spec.cmd_s(op, size_B) + spec.xfer_s(op, size_B) * scale + spec.delay_s(op, size_B)
        )

    # ------------------------------------------------------------ objects
    def _dataset(self, phase: IorPhase) -> str:
        return phase.dataset or phase.name

    def object_name(self, dataset: str, rank_file: int) -> str:
        """The object (file) of rank ``rank_file`` in the current version of ``dataset``."""
        return f"{dataset}#{self._versions.get(dataset, 0)}/{rank_file}"

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
        read_caps: dict[tuple[float, float, int], float] = {}
        for r in range(phase.ranks):
            node = phase.node_of(r)
            obj = self._cur_objs[r]
            if phase.operation == "write":
                if phase.direct_io:
                    rpc = cm.rpc_size_B(t, "write")
                    cap = cm.direct_rate_Bps(t, self.rtt_s(rpc, "write"))
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
                    cap = cm.direct_rate_Bps(t, self.rtt_s(rpc, "read", f_scm))
                    conc = cm.rpcs_per_call(t, "read")
                    streams.append(RankStream(tuple(path), rpc, cap, conc))
                else:
                    key = (float(t), round(f_scm, 9), phase.ranks)
                    seq_cap = read_caps.get(key)
                    if seq_cap is None:
                        seq_cap = self.sequential_read_rate_Bps(t, phase.ranks, f_scm)
                        read_caps[key] = seq_cap
                    slots = cm.readahead_slots(t)
                    streams.append(RankStream(tuple(path), cm.mount.rsize, seq_cap, slots))
        return streams

    def sequential_read_rate_Bps(
        self, transfer_B: float, readers: int, scm_fraction: float
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
        delay_s = self.rtt_s(rsize, "read", scm_fraction) - drive_s
        return cm.loaded_read_rate_Bps(transfer_B, readers, delay_s, drive_s, len(self.scm))

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

    def ior_request(
        self, phase: IorPhase, rank: int, stream: RankStream
    ) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: one RPC of ``stream.op_size_B`` bytes (O_DIRECT, random or read-ahead).

        The RPC pays the fixed client + CNode time and the wire, then queues at
        a drive chosen by where the object's bytes live (an SCM drive, or a
        QLC drive by its share of the object's stripes, plus the QLC read
        overhead); a write queues at ``scm_copies`` SCM drives at once.
        A sequential buffered read also passes the rank's copy stage (one
        server per rank: the process copying the pages out) before its
        read-ahead slot is reused.  Buffered writes (the page cache) exist in
        flow fidelity only; an acknowledged O_DIRECT write commits its bytes
        to the SCM buffer.
        """
        if phase.operation == "write" and not phase.direct_io:
            raise ValueError(
                f"phase {phase.name!r}: buffered writes need flow fidelity on a vast system "
                "(the page cache is a flow-fidelity buffer); use direct_io or fidelity = 'flow'"
            )
        env = self.sim.env
        size = stream.op_size_B
        rng = self.sim.rng(f"{self.model.name}.requests")
        buffered_read = (
            phase.operation == "read" and phase.access != "random" and not phase.direct_io
        )
        # A buffered reader's calls are paid in its copy stage, not per RPC.
        syscall = 0.0 if buffered_read else self.model.client.mount.syscall_overhead
        fixed = syscall + self.model.cnode.op_latency + self.wire_s(size)
        yield env.timeout(fixed)
        queues = self._drive_queues()
        if phase.operation == "write":
            copies = self.model.tier.scm_copies
            picks = rng.choice(len(self.scm), size=copies, replace=False)
            scale = 1.0 / self.model.tier.scm_write_efficiency
            visits = [
                env.process(self._visit(queues["scm"][int(i)], self.scm_spec, "write", size, scale))
                for i in picks
            ]
            yield env.all_of(visits)
            # Acknowledged: the bytes are committed to the SCM buffer (a later read sees them).
            self.tier.buffer.add_bytes(self._cur_objs[rank], size)
            return
        f_scm, qlc_cdf = self._cur_read[rank]
        if rng.random() < f_scm or qlc_cdf is None:
            drive = queues["scm"][int(rng.integers(len(self.scm)))]
            scale = 1.0 / self.model.tier.scm_read_efficiency
            yield from self._visit(drive, self.scm_spec, "read", size, scale)
        else:
            # As rng.choice(p=...) draws it: one uniform against the cumulative weights.
            index = int(qlc_cdf.searchsorted(rng.random(), side="right"))
            yield from self._visit(
                queues["qlc"][index],
                self.qlc_spec,
                "read",
                size,
                extra_delay_s=self.model.dnode.qlc_read_overhead,
            )
        if buffered_read:
            # The read-ahead slot is free again once the process has copied the pages out.
            copy = self._copy_queues.get(rank)
            if copy is None:
                copy = self._copy_queues[rank] = FifoQueue(
                    env, f"{self.model.name}.rank{rank}.copy", 1
                )
            yield copy.visit(size / self.client_model.copy_rate_Bps(phase.transfer_size))

    def _read_picks(self, obj: str) -> tuple[float, FloatArray | None]:
        """Fraction of ``obj`` in SCM and the cumulative QLC-drive weights of its reads.

        Computed once per repetition so request fidelity draws a drive per
        read with one uniform number (``None`` when nothing is on QLC).
        """
        f_scm, qlc_w, _ = self.tier.read_weights(obj)
        total = qlc_w.sum()
        if total <= 0:
            return f_scm, None
        cdf = np.cumsum(qlc_w / total)
        cdf /= cdf[-1]
        return f_scm, cdf

    def _visit(
        self,
        drive: tuple[FifoQueue, FifoQueue],
        spec: SsdSpec,
        op: Literal["read", "write"],
        size_B: float,
        scale: float = 1.0,
        extra_delay_s: float = 0.0,
    ) -> Generator[simpy.Event, Any, None]:
        """One operation at a drive: command stage, data stage, then the access latency.

        ``scale`` (>= 1) stretches the data stage (the SCM write efficiency).
        """
        cmd, xfer = drive
        yield cmd.visit(spec.cmd_s(op, size_B))
        yield xfer.visit(spec.xfer_s(op, size_B) * scale, spec.delay_s(op, size_B) + extra_delay_s)

    def _drive_queues(self) -> dict[str, list[tuple[FifoQueue, FifoQueue]]]:
        """Request-fidelity queues of the drives, (command units, data path), made on first use."""
        if self._queues is None:
            env, name = self.sim.env, self.model.name

            def drive(label: str, spec: SsdSpec) -> tuple[FifoQueue, FifoQueue]:
                return (
                    FifoQueue(env, f"{name}.{label}.cmd", spec.servers),
                    FifoQueue(env, f"{name}.{label}.xfer", 1),
                )

            self._queues = {
                "scm": [drive(f"scm{i}", self.scm_spec) for i in range(len(self.scm))],
                "qlc": [drive(f"qlc{i}", self.qlc_spec) for i in range(len(self.qlc))],
            }
        return self._queues

    def ior_peaks(self, phase: IorPhase) -> dict[str, float]:
        """No nominal peaks are reported for efficiencies."""
        return {}

    # ------------------------------------------------------------- phases
    def run_phase(self, phase: Any) -> PhaseResult:
        """Run an ``ior`` or ``vast-grid`` phase."""
        if isinstance(phase, VastGridPhase | VastIopsGridPhase | VastSizeSweepPhase):
            return run_study_phase(self.model, phase, self.sim.seed, self.fidelity)
        if _buffered_write(phase) and (phase.fidelity or self.fidelity) == "request":
            # The page cache exists in flow fidelity only: this phase runs (and says it ran) there.
            phase = phase.model_copy(update={"fidelity": "flow"})
        result = self.ior.run(phase)
        if isinstance(phase, VastIorPhase) and phase.delete_after:
            dataset = self._dataset(phase)
            for r in range(phase.ranks):
                self.tier.forget(self.object_name(dataset, r))
        result.extra["tier_scm_B"] = self.tier.check().scm_B
        result.extra["tier_migrated_B"] = self.tier.migrated_B
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


def _buffered_write(phase: Any) -> bool:
    """Whether ``phase`` is an IOR write through the client page cache."""
    return isinstance(phase, IorPhase) and phase.operation == "write" and not phase.direct_io


def _ssd(spec: Any, key: str) -> SsdSpec:
    if not isinstance(spec, SsdSpec):
        raise ValueError(f"{key}: a VAST drive must be an SSD (kind = 'ssd')")
    return spec


# ====================================================================== kind
class VastKind(SystemKind):
    """The ``vast`` system kind."""

    kind = "vast"
    model_type = VastModel
    phase_type = VastPhase
    built_type = VastSystem

    def check(self, model: VastModel) -> None:
        _ssd(model.dnode.scm_drive, "dnode.scm_drive")
        _ssd(model.dnode.qlc_drive, "dnode.qlc_drive")
        n_qlc = model.dnode.count * model.dnode.qlc_drives
        if model.tier.ec_data + model.tier.ec_parity > n_qlc:
            raise ValueError(
                f"tier.ec_data: ec_data + ec_parity must not exceed the {n_qlc} QLC drives"
            )

    def check_phase(self, model: VastModel, phase: Any) -> None:
        """Client nodes within ``client.count``; ranks within :func:`check_size` (h1, issue 11)."""
        nodes, per_node = getattr(phase, "nodes", None), getattr(phase, "ranks_per_node", 1)
        most = max(nodes, default=0) if isinstance(nodes, list) else nodes
        if isinstance(most, int) and most > model.client.count:
            raise ValueError(
                f"nodes: {most} client nodes; the model has {model.client.count} (client.count)"
            )
        ppn = max(per_node, default=1) if isinstance(per_node, list) else per_node
        if isinstance(most, int) and isinstance(ppn, int):
            check_size("ranks_per_node", most * ppn, 16, f"nodes x ranks_per_node = {most} x {ppn}")
        if isinstance(phase, IorPhase):
            if phase.layout != FileLayout():
                warn(
                    f"phase {phase.name!r}: layout (Lustre striping) is not modelled on a vast "
                    "system: NFS files are spread over the DNodes by the servers, not the client"
                )
            if not phase.drop_caches:
                warn(
                    f"phase {phase.name!r}: drop_caches = false is not modelled: the client "
                    "page cache holds only write-back data, so reads always go to the servers"
                )
        if _buffered_write(phase) and getattr(phase, "fidelity", None) == "request":
            raise ValueError(
                "fidelity: buffered writes run in flow fidelity only on a vast system (the client "
                "page cache is a flow-fidelity buffer); expected 'flow', or direct_io = true"
            )

    def describe(self, model: VastModel) -> Description:
        cn, dn, cl = model.cnode, model.dnode, model.client
        scm = _ssd(dn.scm_drive, "dnode.scm_drive")
        qlc = _ssd(dn.qlc_drive, "dnode.qlc_drive")
        tier = model.tier
        n_scm = dn.count * dn.scm_drives
        n_qlc = dn.count * dn.qlc_drives
        copies = tier.scm_copies
        k, m = tier.ec_data, tier.ec_parity
        cm = NfsClientModel(cl)
        scm_write = n_scm * scm.write_bandwidth * tier.scm_write_efficiency / copies
        # Sustained ingest with migration following it: each user byte costs
        # copies writes + 1 migration read on SCM (drive time-shared).
        per_byte = (
            copies * scm.read_bandwidth / (scm.write_bandwidth * tier.scm_write_efficiency) + 1.0
        )
        scm_sustained = n_scm * scm.read_bandwidth / per_byte
        layers = [
            LayerPeak(
                "system",
                "client HCAs",
                cl.count,
                cl.count * cm.nic_Bps("ingress"),
                cl.count * cm.nic_Bps("egress"),
                note=f"{cm.ports} x EDR per client",
            ),
            LayerPeak(
                "system",
                "CNode client ports",
                cn.count,
                cn.count * cn.client_nic.node_Bps("egress"),
                cn.count * cn.client_nic.node_Bps("ingress"),
            ),
            LayerPeak(
                "system",
                "CNode fabric ports",
                cn.count,
                cn.count * cn.fabric_nic.node_Bps("ingress"),
                cn.count * cn.fabric_nic.node_Bps("egress") / copies,
                note=f"writes cross {copies}x (replicas)",
            ),
            LayerPeak(
                "system",
                "DNode fabric ports",
                dn.count,
                dn.count * dn.fabric_nic.node_Bps("egress"),
                dn.count * dn.fabric_nic.node_Bps("ingress") / copies,
            ),
            LayerPeak(
                "system",
                "SCM drives",
                n_scm,
                n_scm * scm.read_bandwidth * tier.scm_read_efficiency,
                scm_sustained,
                note=f"reads at {tier.scm_read_efficiency:g} of datasheet; writes: {copies} "
                f"replicas at {tier.scm_write_efficiency:g} of datasheet, +1 migration read",
            ),
            LayerPeak(
                "system",
                "QLC drives",
                n_qlc,
                n_qlc * qlc.read_bandwidth,
                n_qlc * qlc.write_bandwidth * k / (k + m),
                note="reads of aged data; migration",
            ),
        ]
        qlc_raw = n_qlc * qlc.capacity
        qlc_usable = qlc_raw * k / (k + m)
        ratio = tier.write_buffer / qlc_usable
        derived: dict[str, float] = {
            "scm_read_GBps": n_scm * scm.read_bandwidth / 1e9,
            "qlc_read_GBps": n_qlc * qlc.read_bandwidth / 1e9,
            "qlc_usable_TB": qlc_usable / 1e12,
            "scm_write_GBps_no_migration": scm_write / 1e9,
            "scm_write_GBps_sustained": scm_sustained / 1e9,
            "buffer_to_qlc_ratio": ratio,
            "qlc_per_buffer": 1.0 / ratio,
        }
        if model.turnover is not None:
            buffer_B = model.turnover.capacity * ratio
            rate = model.turnover.daily_writes / 86400.0
            derived["turnover_buffer_TB"] = buffer_B / 1e12
            derived["turnover_minutes"] = buffer_B / rate / 60.0
        return Description(
            system=model.name,
            kind=self.kind,
            components={
                "clients": cl.count,
                "cnodes": cn.count,
                "dnodes": dn.count,
                "scm_drives": n_scm,
                "qlc_drives": n_qlc,
                "fabric_switches": model.fabric.switches,
            },
            layers=layers,
            bottlenecks={
                "read": bottleneck(layers, "system", "read_Bps"),
                "write": bottleneck(layers, "system", "write_Bps"),
            },
            derived=derived,
        )
