"""Request fidelity of a ``vast`` system: RPCs that queue at the ports, fabrics and drives.

Every RPC pays the fixed client + CNode time and the wire, crosses a port of
its client, the client fabric (when the model has one) and a client port of
one of its client's CNodes, then a fabric port of the CNode, the NVMe fabric
and a port of the DNode of each drive it visits (each port a queue,
:class:`~flashsim.components.nic.NicPorts`; the fabrics' bundle queues, route
chosen when the data reaches them: :meth:`Fabric.request_hops`; see
:meth:`VastNetwork.send_front <flashsim.systems.vast.network.VastNetwork.send_front>`),
and queues at a drive's command units and data path (two
:class:`~flashsim.engine.queues.FifoQueue` per drive, made on first use);
reads pick the drive by where the object's bytes live now and return the same
way, writes queue at ``scm_copies`` SCM drives at once.  The ports' and
fabrics' service at zero load is part of the wire time, so both fidelities
have the same zero-load round trip.  Drive choices come from the seeded stream
``<system>.requests``, CNode and route choices from ``<system>.routing``.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from flashsim.components.tier_drives import (
    Medium,
    ReadPicks,
    pick_read,
    pick_replicas,
    read_picks,
)
from flashsim.engine.queues import FifoQueue
from flashsim.systems.vast.topology import VastTopology
from flashsim.workloads.ior import IorPhase, RankStream

__all__ = ["VastRequests"]


class VastRequests(VastTopology):
    """The request-fidelity half of :class:`~flashsim.systems.vast.kind.VastSystem`."""

    def ior_request(
        self, phase: IorPhase, rank: int, stream: RankStream
    ) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: one RPC of ``stream.op_size_B`` bytes (O_DIRECT, random or read-ahead).

        The RPC pays the fixed client + CNode time and the wire (less the
        fabrics' zero-load service), crosses the client fabric (if any) to one
        of its client's CNodes and the NVMe fabric to each drive's DNode, and
        queues at a drive chosen by where the object's bytes live (an SCM
        drive, or a QLC drive by its share of the object's stripes, plus the
        QLC read overhead); a write queues at ``scm_copies`` SCM drives at
        once and, with the buffer at its hold level, adds one migration read
        of its bytes at an SCM drive (not awaited).
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
        write = phase.operation == "write"
        size = stream.op_size_B
        copy: tuple[FifoQueue | None, float] | None = None
        if not write and phase.access != "random" and not phase.direct_io:
            queue = self._copy_queues.get(rank)
            if queue is None:
                queue = self._copy_queues[rank] = FifoQueue(
                    self.sim.env, f"{self.model.name}.rank{rank}.copy", 1
                )
            copy = (queue, size / self.client_model.copy_rate_Bps(phase.transfer_size))
        picks = None if write else self._cur_read[rank]
        yield from self.rpc(phase.node_of(rank), self._cur_objs[rank], size, picks, copy)

    def rpc(
        self,
        node: int,
        obj: str,
        size_B: float,
        picks: ReadPicks | None,
        copy: tuple[FifoQueue | None, float] | None = None,
    ) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: one RPC of ``size_B`` bytes from client ``node`` on ``obj``.

        The path and queues of :meth:`ior_request`, for any caller (IOR, jobs).

        Parameters
        ----------
        node : int
            Client node.
        obj : str
            The object (file) read or written.
        size_B : float
            RPC payload in bytes.
        picks : tuple or None
            ``None`` for a write (O_DIRECT: committed to the SCM buffer when
            acknowledged); for a read, where its bytes live
            (:func:`~flashsim.components.tier_drives.read_picks`).
        copy : tuple or None
            A sequential buffered read's copy stage: the reader's copy queue
            (one server; ``None``: a plain delay) and the seconds the process
            takes to copy the RPC's pages out, after which its read-ahead slot
            is free; ``None`` for a synchronous RPC (which pays the syscall).
        """
        env = self.sim.env
        size = size_B
        rng = self.sim.rng(f"{self.model.name}.requests")
        route_rng = self.sim.rng(f"{self.model.name}.routing")
        net = self.net
        cnodes = self.client_cnodes(node)
        cnode = cnodes[int(route_rng.integers(len(cnodes)))] if len(cnodes) > 1 else cnodes[0]
        client_ep, cnode_ep = net.clients[node], net.cnodes[cnode]
        # A buffered reader's calls are paid in its copy stage, not per RPC.
        syscall = 0.0 if copy is not None else self.model.client.mount.syscall_overhead
        fixed = syscall + self.model.cnode.op_latency + self.wire_s(size, node)
        if picks is None:
            drives = pick_replicas(self.tier, rng)  # a failed SCM drive takes no new replica
            dnodes = [net.dnodes[self.scm_dnode[i]] for i in drives]
            queued = max(net.back_service_s(cnode_ep, d, size) for d in dnodes)
            queued += net.front_service_s(client_ep, cnode_ep, size)
            yield env.timeout(max(0.0, fixed - queued))
            yield from net.send_front(client_ep, cnode_ep, size, route_rng)
            scale = 1.0 / self.model.tier.scm_write_efficiency
            visits = [
                env.process(self._replica(cnode_ep, d, i, size, scale, route_rng))
                for i, d in zip(drives, dnodes, strict=True)
            ]
            yield env.all_of(visits)
            self.drives.commit_write(self.tier, obj, size, rng)
            return
        pick = pick_read(self.tier, picks, size, rng)
        if pick.degraded:
            # A strip on a failed drive not rebuilt yet: its survivors, read in parallel.
            yield from self._degraded_read(
                cnode_ep, client_ep, fixed, pick.drives, pick.decode_s, size, route_rng
            )
            yield from self._copy_out(copy)
            return
        medium: Medium = pick.medium
        index = pick.drives[0]
        if medium == "scm":
            dnode = self.scm_dnode[index]
            scale, extra = 1.0 / self.model.tier.scm_read_efficiency, 0.0
        else:
            dnode = self.qlc_dnode[index]
            scale, extra = 1.0, self.model.dnode.qlc_read_overhead
        dnode_ep = net.dnodes[dnode]
        queued = net.back_service_s(dnode_ep, cnode_ep, size)
        queued += net.front_service_s(cnode_ep, client_ep, size)
        yield env.timeout(max(0.0, fixed - queued))
        yield from self.drives.visit(medium, index, "read", size, scale, extra_delay_s=extra)
        yield from net.send_back(dnode_ep, cnode_ep, size, route_rng)
        yield from net.send_front(cnode_ep, client_ep, size, route_rng)
        yield from self._copy_out(copy)

    def _copy_out(
        self, copy: tuple[FifoQueue | None, float] | None
    ) -> Generator[simpy.Event, Any, None]:
        """The read-ahead slot is free again once the process has copied the pages out."""
        if copy is None:
            return
        queue, copy_s = copy
        if queue is None:
            yield self.sim.env.timeout(copy_s)
        else:
            yield queue.visit(copy_s)

    def _degraded_read(
        self,
        cnode_ep: str,
        client_ep: str,
        fixed_s: float,
        drives: list[int],
        decode_s: float,
        size_B: float,
        route_rng: np.random.Generator,
    ) -> Generator[simpy.Event, Any, None]:
        """A read whose strip is reconstructed: ``drives`` read in parallel, decoded, returned.

        Each survivor read queues at its QLC drive and crosses the NVMe fabric
        to the CNode (``size_B`` bytes each); the CNode decodes for
        ``decode_s`` seconds once all have arrived, then the RPC returns as a
        healthy read does.
        """
        env, net = self.sim.env, self.net
        queued = max(
            net.back_service_s(net.dnodes[self.qlc_dnode[d]], cnode_ep, size_B) for d in drives
        )
        queued += net.front_service_s(cnode_ep, client_ep, size_B)
        yield env.timeout(max(0.0, fixed_s - queued))
        extra = self.model.dnode.qlc_read_overhead

        def survivor(d: int) -> Generator[simpy.Event, Any, None]:
            yield from self.drives.visit("qlc", d, "read", size_B, extra_delay_s=extra)
            dnode_ep = net.dnodes[self.qlc_dnode[d]]
            yield from net.send_back(dnode_ep, cnode_ep, size_B, route_rng)

        yield env.all_of([env.process(survivor(d)) for d in drives])
        if decode_s > 0:
            yield env.timeout(decode_s)
        yield from net.send_front(cnode_ep, client_ep, size_B, route_rng)

    def _replica(
        self,
        cnode: str,
        dnode: str,
        drive: int,
        size_B: float,
        scale: float,
        rng: np.random.Generator,
    ) -> Generator[simpy.Event, Any, None]:
        """One SCM replica of a write: across the NVMe fabric, into SCM drive ``drive``, as wear."""
        yield from self.net.send_back(cnode, dnode, size_B, rng)
        yield from self.drives.write_replica(drive, size_B, scale, self.model.tier.scm_copies)

    def _read_picks(self, obj: str) -> ReadPicks:
        """:func:`~flashsim.components.tier_drives.read_picks` of where ``obj``'s bytes live now."""
        return read_picks(self.tier.read_weights(obj))
