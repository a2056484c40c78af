"""How one rank's calls cross a ``vast`` system in flow fidelity: path, rate cap, RPC size.

One piece of physics for every workload: :meth:`VastStreams.access_stream`
builds the :class:`~flashsim.workloads.ior.RankStream` of one kind of call
(client node, object, direction, call size, random or sequential, O_DIRECT
or buffered), and both IOR (:meth:`VastSystem.ior_streams
<flashsim.systems.vast.system.VastSystem.ior_streams>`) and the job engine
(:mod:`flashsim.systems.vast.jobs`) call it.  What each kind of call is:

* buffered write: into the client's page cache (a
  :class:`~flashsim.components.fluid.FluidBuffer`), at the process's copy
  rate; write-back to SCM follows from the cache's own drain;
* O_DIRECT write: the server write path (client HCAs to the SCM drives),
  capped by the closed loop of the rank's RPCs at the SCM drives
  (:meth:`VastStreams.direct_rate_Bps`);
* random or O_DIRECT read: from where the bytes live now, capped the same way;
* sequential buffered read: from where the bytes live now, capped by the
  read-ahead closed loop (:meth:`VastStreams.sequential_read_rate_Bps`).
"""

from __future__ import annotations

from flashsim.components.tier import ReadWeights
from flashsim.engine.flows import Flow
from flashsim.systems.vast.queues import closed_loop_rpcs_per_s
from flashsim.systems.vast.request import VastRequests
from flashsim.workloads.ior import RankStream

#: Rate caps already computed for one set of streams, by their arguments.
CapCache = dict[tuple[object, ...], float]


class VastStreams(VastRequests):
    """Flow-fidelity streams of a ``vast`` system (the per-call physics IOR and jobs share)."""

    def access_stream(
        self,
        node: int,
        write: bool,
        transfer_B: float,
        random: bool,
        direct_io: bool,
        sharers: int,
        where: ReadWeights | None = None,
        migrating: bool = False,
        caps: CapCache | None = None,
    ) -> RankStream:
        """The stream of one rank making calls of one kind.

        Parameters
        ----------
        node : int
            Client node of the rank.
        write : bool
            Direction.
        transfer_B : float
            Bytes per application call (IOR's ``-t``).
        random : bool
            Calls at random offsets (no read-ahead: each read is synchronous).
        direct_io : bool
            ``O_DIRECT`` (no page cache).
        sharers : int
            Ranks whose RPCs share the SCM drives' queues (the closed loops of
            :meth:`direct_rate_Bps` and :meth:`sequential_read_rate_Bps`).
        where : tuple, optional
            For a read: where its bytes live (:meth:`ScmQlcTier.read_weights
            <flashsim.components.tier.ScmQlcTier.read_weights>`); required for reads.
        migrating : bool
            Whether the SCM buffer sits at its hold level (O_DIRECT writes
            then also pay the migration's SCM read).
        caps : dict, optional
            Rate caps computed for earlier streams of the same set, reused by argument.
        """
        cm = self.client_model
        t = transfer_B
        cache = caps if caps is not None else {}
        net_s = self.wire_s(0.0, node)
        key: tuple[object, ...]
        if write:
            if not direct_io:
                path = self.caches[node].ingest_path()
                return RankStream(
                    tuple(path), t, cm.copy_rate_Bps(t), cap_label="latency: client page copy"
                )
            key = ("direct-write", float(t), sharers, net_s, migrating)
            if key not in cache:
                cache[key] = self.direct_rate_Bps(t, "write", sharers, 1.0, node, migrating)
            path = self._write_server_path(node)
            return RankStream(
                tuple(path),
                cm.rpc_size_B(t, "write"),
                cache[key],
                cm.rpcs_per_call(t, "write"),
                cap_label="concurrency: NFS RPCs in flight per call",
            )
        if where is None:
            raise ValueError("access_stream: a read needs where its bytes live (where=...)")
        f_scm = where[0]
        synchronous = random or direct_io
        rpc = float(cm.rpc_size_B(t, "read") if synchronous else cm.mount.rsize)
        # A degraded read's lost strips are decoded on the CNode: its round trip grows.
        path, decode = self._read_path(node, where, rpc)
        if synchronous:
            key = ("direct-read", float(t), round(f_scm, 9), sharers, net_s, decode)
            if key not in cache:
                cache[key] = self.direct_rate_Bps(t, "read", sharers, f_scm, node, decode_s=decode)
            conc = cm.rpcs_per_call(t, "read")
            return RankStream(
                tuple(path),
                cm.rpc_size_B(t, "read"),
                cache[key],
                conc,
                cap_label="concurrency: NFS RPCs in flight per call",
            )
        key = ("sequential-read", float(t), round(f_scm, 9), sharers, net_s, decode)
        if key not in cache:
            cache[key] = self.sequential_read_rate_Bps(t, sharers, f_scm, node, decode)
        slots = cm.readahead_slots(t)
        return RankStream(
            tuple(path),
            cm.mount.rsize,
            cache[key],
            slots,
            cap_label="concurrency: NFS read-ahead RPC slots",
        )

    def count_write(self, flow: Flow, node: int, obj: str, direct_io: bool) -> None:
        """Count a write flow's bytes as ``obj``'s: in ``node``'s page cache, or SCM if O_DIRECT."""
        if direct_io:
            self.tier.buffer.add_ingest(flow, obj)
        else:
            self.caches[node].add_ingest(flow, obj)

    def direct_rate_Bps(
        self,
        transfer_B: float,
        operation: str,
        ranks: int,
        scm_fraction: float,
        client: int = 0,
        migrating: bool = False,
        decode_s: float = 0.0,
    ) -> float:
        """Rate of one of ``ranks`` synchronous (O_DIRECT or random) ranks, with the SCM queues.

        Each rank keeps ``rpcs_per_call`` RPCs in flight; an RPC crosses the
        fixed round trip and the data stage of the SCM drives it uses, which
        all ranks share (:func:`~flashsim.systems.vast.queues.closed_loop_rpcs_per_s`:
        the closed loop request fidelity runs, deterministic service).  A write holds ``scm_copies``
        drives at once (modelled as ``n_scm / copies`` drive sets) and, while
        the buffer migrates, each written byte is also read once from SCM
        (shared by the set).  Reads of data on QLC (40-drive stripes) keep the
        zero-load round trip (:meth:`NfsClientModel.direct_rate_Bps`), plus
        ``decode_s`` (s), a degraded read's expected CNode decode time.
        """
        cm = self.client_model
        tier = self.model.tier
        op = "write" if operation == "write" else "read"
        rpc = cm.rpc_size_B(transfer_B, op)
        conc = cm.rpcs_per_call(transfer_B, op)
        rtt = self.rtt_s(rpc, op, scm_fraction, client, decode_s)
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
        self,
        transfer_B: float,
        readers: int,
        scm_fraction: float,
        client: int = 0,
        decode_s: float = 0.0,
    ) -> float:
        """Rate of one of ``readers`` sequential buffered readers (IOR ``-F``) of this system.

        Each reader keeps its read-ahead window of ``rsize`` RPCs in flight;
        an RPC of data still in SCM is served whole by one of the SCM drives
        (its datasheet transfer time stretched by ``scm_read_efficiency``),
        so with few drives the drives' queues set how close the readers get
        to the SCM's bandwidth (:meth:`NfsClientModel.loaded_read_rate_Bps`).
        Data on QLC is erasure-coded over a 40-drive stripe: its media time
        is part of the fixed round trip (the network's max-min sharing still
        caps the QLC drives and every port); ``decode_s`` (s) is a degraded
        read's expected CNode decode time per RPC, part of it too.
        """
        cm = self.client_model
        rsize = float(cm.mount.rsize)
        scale = 1.0 / self.model.tier.scm_read_efficiency
        drive_s = scm_fraction * self.scm_spec.xfer_s("read", rsize) * scale
        delay_s = self.rtt_s(rsize, "read", scm_fraction, client, decode_s) - drive_s
        return cm.loaded_read_rate_Bps(transfer_B, readers, delay_s, drive_s, len(self.scm))
