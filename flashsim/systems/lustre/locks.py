"""Lustre extent locks on a shared file: writers on different clients take turns.

Lustre grants each client an extent lock on the part of an OST object it
writes (LDLM).  When ranks on several client nodes write one shared file in
calls that are not whole stripes (IO-500's ior-hard: 47,008 B interleaved),
consecutive writes to the same stripe object come from different clients,
so nearly every write must first take the lock from the client that holds
it: the server sends that client a blocking callback, the client flushes
its dirty pages under the lock and cancels it, and only then is the lock
granted to the new writer.  One object's lock is held by one client at a
time, so each object serialises these hand-offs.

A hand-off costs (all from the model, nothing fitted):

* the enqueue RPC from the new writer: a wire round trip and the server's
  per-RPC handling (``rpc_cost``);
* the holder's flush of its extent: one write operation of the call's size
  (its zero-load round trip, :class:`~flashsim.systems.lustre.nodes.OpCost`);
* the blocking callback and the cancel: another wire round trip and RPC.

A write finds the lock elsewhere with probability ``1 - 1/k`` when ranks of
``k`` client nodes write its stripe (the previous writer is any of them):
for IOR's layout from the block and transfer sizes
(:func:`ior_conflict_probability`; ior-hard's 47,008-byte records put about
22 ranks, so 2-3 nodes, in every 1 MiB stripe), for a trace from its calls'
offsets (:func:`flashsim.workloads.replay.write_conflicts`).  Writes of
whole, separate stripes (IOR's large blocks) do not conflict.  Flow
fidelity puts one resource per object of the file on each writer's path
(one busy holder per second of capacity) with that many seconds of hand-off
per byte; request fidelity queues each write at its object's lock.  Reads
(shared locks are compatible) pay nothing; lock expansion, lock-ahead and
group locks are not modelled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from flashsim.engine.flows import Resource, Segment
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation
from flashsim.systems.lustre.nodes import OpCost

#: Most stripes of one IOR segment examined for the conflict probability (the layout is
#: periodic, so evenly spaced stripes stand for the rest).
MAX_STRIPES_EXAMINED = 1_000_000


def ior_conflict_probability(
    nodes: int, ranks_per_node: int, block_B: float, stripe_B: float
) -> float:
    """Chance a write of IOR's shared file finds its stripe's lock on another node.

    Rank ``r`` writes ``[(s N + r) b, (s N + r + 1) b)`` of each segment ``s``
    (IOR's segmented layout), ranks placed by node.  A stripe written by
    ranks of ``k`` nodes hands its lock on with probability ``1 - 1/k`` per
    write (the previous writer is any of them); averaged over one segment's
    stripes (every stripe holds the same bytes, so the same writes).

    Parameters
    ----------
    nodes, ranks_per_node : int
        The job's placement.
    block_B : float
        IOR's ``-b``: each rank's contiguous bytes per segment.
    stripe_B : float
        Stripe size (bytes).
    """
    ranks = nodes * ranks_per_node
    if nodes < 2:
        return 0.0
    span_B = ranks * block_B
    stripes = max(1, math.ceil(span_B / stripe_B - 1e-9))
    j = np.linspace(0, stripes - 1, min(stripes, MAX_STRIPES_EXAMINED)).round()
    first_rank = np.floor(j * stripe_B / block_B)
    last_rank = np.minimum(np.floor(((j + 1) * stripe_B - 1) / block_B), ranks - 1)
    k = last_rank // ranks_per_node - first_rank // ranks_per_node + 1
    return float(np.mean(1.0 - 1.0 / np.maximum(k, 1.0)))


def handoff_s(cost: OpCost, rpc_cost_s: float) -> float:
    """Seconds one lock hand-off takes: two RPC exchanges and the holder's flush.

    Parameters
    ----------
    cost : OpCost
        The write operation (its ``latency_s`` is the flush; ``wire_s`` one
        wire round trip).
    rpc_cost_s : float
        Server CPU per RPC (s).
    """
    return cost.latency_s + 2.0 * (cost.wire_s + rpc_cost_s)


@dataclass
class ObjectLock:
    """The extent lock of one OST object of a shared file, in both fidelities."""

    resource: Resource
    queue: FifoQueue


class ExtentLocks:
    """The locks of shared files' objects, created on first use."""

    def __init__(self, sim: Simulation, prefix: str) -> None:
        self.sim = sim
        self.prefix = prefix
        self._locks: dict[tuple[str, int], ObjectLock] = {}
        self._segments: dict[tuple[str, tuple[int, ...], float], Segment] = {}

    def lock(self, file_key: str, target: int) -> ObjectLock:
        """The lock of ``file_key``'s object on OST ``target``."""
        key = (file_key, target)
        found = self._locks.get(key)
        if found is None:
            name = f"{self.prefix}.lock{len(self._locks)}.ost{target}"
            found = ObjectLock(
                resource=self.sim.flows.add_resource(name, capacity_ops=1.0, kind="extent lock"),
                queue=FifoQueue(self.sim.env, name, 1),
            )
            self._locks[key] = found
        return found

    def path(
        self, file_key: str, targets: tuple[int, ...], seconds_per_op: float
    ) -> list[tuple[Resource | Segment, float]]:
        """Path entries of a writer of ``file_key``: each object's lock, ``1/S`` of the calls.

        ``seconds_per_op`` is the lock time one server operation of the flow
        (``op_size_B`` bytes) costs; the locks are operation-rate resources.
        """
        share = seconds_per_op / len(targets)
        entries = [(self.lock(file_key, t).resource, share) for t in targets]
        if len(targets) == 1:
            return list(entries)
        key = (file_key, targets, share)
        segment = self._segments.get(key)
        if segment is None:
            segment = self.sim.flows.add_segment(
                f"{self.prefix}.locks{len(self._segments)}", entries
            )
            self._segments[key] = segment
        return [(segment, 1.0)]
