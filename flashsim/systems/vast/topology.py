"""The components of a ``vast`` system and the flow paths between them.

Structure (seed 002 Fig. 1 and Appendix A): client nodes mount the system over
NFS/RDMA with ``nconnect`` and multipath, so every client spreads its RPCs over
all CNodes; stateless CNodes bridge the client network and an NVMe-oF fabric;
DNodes project bare SCM and QLC drives over that fabric.  The data path logic
(replication to SCM, stripe building, compression, erasure coding and
migration to QLC) is :class:`~flashsim.components.tier.ScmQlcTier`; the client
(write-back, read-ahead, O_DIRECT) is :mod:`flashsim.components.nfs`.

Every node's ports (client HCAs, CNode client and fabric ports, DNode ports)
are :class:`~flashsim.components.nic.NicPorts` and the networks the shared
fabric (:class:`~flashsim.systems.vast.network.VastNetwork`): a node's bytes
cross each of its ports with their share over the ports.  Flow-fidelity
paths, per user byte (``copies`` = SCM replicas, ``c`` = compressed
fraction, ``k+m`` = erasure-code geometry):

* buffered write: process -> client page cache (a
  :class:`~flashsim.components.fluid.FluidBuffer` per client) -> write-back
  flow: client HCAs (1) -> [client fabric, when the model has one: the
  bundles of the routes to the client's CNodes, 1/n_cnode each] -> CNode
  client ports (1/n_cnode each) -> CNode fabric ports (copies/n_cnode each)
  -> NVMe fabric (copies; :class:`~flashsim.systems.vast.network.VastNetwork`)
  -> DNode ports (by the SCM drives each DNode holds) -> SCM write buffer gate
  and SCM drives;
* O_DIRECT write: the same path without the page cache, capped per rank by
  its synchronous round trip;
* migration: SCM drives (1) -> DNode ports -> fabric (1 + c(k+m)/k) -> CNode
  fabric ports (in 1, out c(k+m)/k) -> DNode ports -> QLC drives;
* read: the drives where the object's bytes live now -> DNode ports ->
  NVMe fabric -> CNode fabric ports -> CNode client ports -> [client fabric]
  -> client HCAs, capped
  per rank by the round trip (random, O_DIRECT) or, for sequential buffered
  reads, by the closed loop of the rank's read-ahead RPCs through its own
  copy, the fixed round trip and the SCM drives' queues
  (:meth:`~flashsim.systems.vast.streams.VastStreams.sequential_read_rate_Bps`):
  per-process bound at low ``N x p``, approaching the SCM drives' bandwidth
  gradually at high ``N x p``.

The zero-load round trip of one RPC of ``s`` bytes is ``op_latency`` (client
NFS/RDMA stack, CNode metadata and transaction handling) + media latency
(by location) + ``s`` over each hop's port rate (store and forward) + the
fabrics' latencies (NVMe fabric out and back; client fabric, if any, to the
client's CNodes and back).  O_DIRECT and random ranks are capped by the
closed loop of that round trip and the SCM drives' queues
(:meth:`~flashsim.systems.vast.streams.VastStreams.direct_rate_Bps`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

from flashsim.components.fluid import DrainPath, FluidBuffer
from flashsim.components.nfs import NfsClientModel
from flashsim.components.ssd import SsdSpec, SsdState
from flashsim.components.tier import ReadWeights
from flashsim.components.tier_drives import TierDrives, build_tier_drives
from flashsim.engine.flows import Resource
from flashsim.engine.maxmin import FloatArray
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation
from flashsim.systems.base import BuiltSystem, Fidelity
from flashsim.systems.vast.model import VastModel, ssd
from flashsim.systems.vast.network import VastNetwork
from flashsim.workloads.ior import IorPhase


class VastTopology(BuiltSystem):
    """The components of a VAST-like system in a simulation, and the paths bytes take.

    The flow paths and zero-load round trips; :class:`~flashsim.systems.vast.kind.VastSystem`
    adds the IOR protocol and :class:`~flashsim.systems.vast.request.VastRequests`
    the request-fidelity queues.

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
        dn = model.dnode
        self.client_model = NfsClientModel(model.client)
        self.scm_spec: SsdSpec = ssd(dn.scm_drive, "dnode.scm_drive")
        self.qlc_spec: SsdSpec = ssd(dn.qlc_drive, "dnode.qlc_drive")

        # Every node's ports (NicPorts) and both fabrics.
        self.net = VastNetwork(model, sim)
        # The SCM and QLC drives of every DNode (components.tier_drives): resources, request
        # queues (named <system>.scm<i>, .qlc<i> over all DNodes) and wear states; request
        # fidelity counts SCM replicas as they land, TierDrives.sync_wear adds the flow
        # counters and the migration (issue 9).
        self.drives: TierDrives = build_tier_drives(
            sim,
            self.scm_spec,
            self.qlc_spec,
            [(f"{name}.dnode{d}", dn.scm_drives, dn.qlc_drives) for d in range(dn.count)],
            float(model.tier.read_chunk),
            drive_link=dn.drive_link,
            queue_prefix=name,
        )
        self.scm: list[Resource] = self.drives.scm
        self.qlc: list[Resource] = self.drives.qlc
        self.qlc_ops: list[Resource] = self.drives.qlc_ops
        self.scm_dnode: list[int] = self.drives.scm_group
        self.qlc_dnode: list[int] = self.drives.qlc_group
        self.scm_share = np.bincount(self.scm_dnode, minlength=dn.count) / len(self.scm)
        self.qlc_dnode_idx = np.asarray(self.qlc_dnode)
        self.qlc_share = np.bincount(self.qlc_dnode, minlength=dn.count) / len(self.qlc)
        self.tier = self.drives.build_tier(
            f"{name}.tier", model.tier, self._entropy_of, self._migration_extra
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
        self._entropy: dict[str, float] = {}
        self._versions: dict[str, int] = {}
        self._cur_read: list[tuple[float, FloatArray | None]] = []
        self._cur_objs: list[str] = []
        self._copy_queues: dict[int, FifoQueue] = {}

    # --------------------------------------------------------------- drives
    @property
    def scm_state(self) -> list[SsdState]:
        """Wear of each SCM drive (:attr:`TierDrives.scm_state`)."""
        return self.drives.scm_state

    @property
    def qlc_state(self) -> list[SsdState]:
        """Wear of each QLC drive (:attr:`TierDrives.qlc_state`)."""
        return self.drives.qlc_state

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
        n = self.model.cnode.count
        mount = self.model.client.mount
        k = max(1, min(mount.nconnect, mount.remote_ports, n))
        return [(client + i) % n for i in range(k)]

    def _fabric_out(self, copies: float, client: int) -> list[tuple[Resource, float]]:
        """CNode -> fabric -> DNode hops of ``copies`` bytes bound for the SCM drives."""
        return self.net.back_route(self.client_cnodes(client), copies * self.scm_share, True)

    def _writeback_path(self, client: int) -> Callable[[str], DrainPath]:
        """What a client's dirty pages cross on their way to SCM: a write's server path."""

        def path(_head: str) -> DrainPath:
            hops = self._write_server_path(client)
            return DrainPath(hops, op_size_B=self.client_model.mount.wsize, key=None)

        return path

    def _migration_extra(self, c: float) -> list[tuple[Resource, float]]:
        width = self.tier.stripe_width(c)
        out = c * width / (width - self.model.tier.ec_parity)
        return self.net.migration_route(self.scm_share, out * self.qlc_share)

    def _read_path(
        self, client: int, where: ReadWeights, size_B: float = 0.0
    ) -> tuple[list[tuple[Resource, float]], float]:
        """What a byte read by ``client`` in RPCs of ``size_B`` crosses, its data as ``where`` says.

        A degraded read's survivor strips cross the DNode ports and the NVMe
        fabric to the CNode that decodes them
        (:meth:`ScmQlcTier.degraded_reads <flashsim.components.tier.ScmQlcTier.degraded_reads>`).
        Returns the path and the expected CNode decode time (s) of one read
        (0 on a healthy pool).
        """
        f_scm, qlc_w, f_qlc = where
        reads, decode_s = self.tier.degraded_reads(qlc_w, size_B)
        drives = self.tier.drives_reading(f_scm, qlc_w, f_qlc, reads)
        per_dnode = np.zeros(self.model.dnode.count)
        per_dnode += f_scm * self.scm_share
        np.add.at(per_dnode, self.qlc_dnode_idx, reads)
        cnodes = self.client_cnodes(client)
        path = list(drives)
        path += self.net.back_route(cnodes, per_dnode, to_dnodes=False)
        path += self.net.front_route(client, cnodes, to_cnodes=False)
        return path, decode_s

    def _write_server_path(self, client: int) -> list[tuple[Resource, float]]:
        copies = float(self.model.tier.scm_copies)
        path = self.net.front_route(client, self.client_cnodes(client), to_cnodes=True)
        path += self._fabric_out(copies, client)
        path += self.tier.ingest_path()
        return path

    def migrating(self) -> bool:
        """Whether the SCM buffer sits at its hold level (:meth:`ScmQlcTier.migrating`)."""
        return self.tier.migrating()

    def wire_s(self, size_B: float, client: int = 0) -> float:
        """Store-and-forward time (s) of ``size_B`` bytes over one port of each hop.

        Plus the fabrics' latencies: the NVMe fabric out and back, and, with a
        client fabric, the round trip between ``client`` and its CNodes.
        """
        m = self.model
        ports = [
            m.client.nic.port_bandwidth,
            m.cnode.client_nic.port_bandwidth,
            m.cnode.fabric_nic.port_bandwidth,
            m.dnode.fabric_nic.port_bandwidth,
        ]
        fabrics = self.net.back_rtt_s()
        if self.net.front is not None:
            fabrics += self.net.front_rtt_s(client, self.client_cnodes(client))
        return float(sum(size_B / bw for bw in ports) + fabrics)

    def rtt_s(
        self,
        size_B: float,
        operation: str,
        scm_fraction: float = 1.0,
        client: int = 0,
        decode_s: float = 0.0,
    ) -> float:
        """Zero-load round trip (s) of one RPC of ``size_B`` bytes.

        Parameters
        ----------
        size_B : float
            RPC payload in bytes.
        operation : {"read", "write"}
            Direction.
        scm_fraction : float
            Fraction of reads served by SCM (the rest by QLC).
        client : int
            Client node (its client-fabric latency; all alike without one).
        decode_s : float
            Expected CNode decode time (s) of a read of QLC data, degraded reads
            reconstructing lost strips (:meth:`ScmQlcTier.degraded_reads
            <flashsim.components.tier.ScmQlcTier.degraded_reads>`; the survivors
            are read in parallel, so at zero load they add no media time).
        """
        m = self.model
        base = m.cnode.op_latency + self.wire_s(size_B, client) + self.drives.link_s(size_B)
        if operation == "write":
            scale = 1.0 / m.tier.scm_write_efficiency
            return float(base + self.media_s(self.scm_spec, "write", size_B, scale))
        scm = self.media_s(self.scm_spec, "read", size_B, 1.0 / m.tier.scm_read_efficiency)
        qlc = self.media_s(self.qlc_spec, "read", size_B) + m.dnode.qlc_read_overhead + decode_s
        return float(base + scm_fraction * scm + (1.0 - scm_fraction) * qlc)

    @staticmethod
    def media_s(
        spec: SsdSpec, op: Literal["read", "write"], size_B: float, scale: float = 1.0
    ) -> float:
        """Zero-load drive time (s): command, transfer (stretched by ``scale``), access latency.

        The same stages request fidelity queues at
        (:meth:`TierDrives.visit <flashsim.components.tier_drives.TierDrives.visit>`).
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
