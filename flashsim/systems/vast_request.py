"""Request fidelity of a ``vast`` system: RPCs that queue at the drives holding their bytes.

Every RPC pays the fixed client + CNode time and the wire, then queues at a
drive's command units and data path (two :class:`~flashsim.engine.queues.FifoQueue`
per drive, made on first use); reads pick the drive by where the object's
bytes live now, writes queue at ``scm_copies`` SCM drives at once.  Drive
choices come from the simulation's seeded stream ``<system>.requests``.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Literal

import numpy as np
import simpy

from flashsim.components.ssd import SsdSpec
from flashsim.engine.maxmin import FloatArray
from flashsim.engine.queues import FifoQueue
from flashsim.systems.vast_topology import VastTopology
from flashsim.workloads.ior import IorPhase, RankStream


class VastRequests(VastTopology):
    """The request-fidelity half of :class:`~flashsim.systems.vast.VastSystem`."""

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
