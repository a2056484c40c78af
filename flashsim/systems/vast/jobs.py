"""Jobs' calls on a ``vast`` system (:class:`~flashsim.workloads.replay.JobTarget`): NFS over RDMA.

Every file of a replayed or concurrent job is an NFS file on the VAST
system, so every call goes through the NFS client (write-back page cache,
read-ahead, ``O_DIRECT``, ``rsize``/``wsize`` RPCs spread over the CNodes by
``nconnect`` and multipath) and the SCM/QLC tier, exactly as IOR's calls do:
the path and caps of each kind of call come from
:meth:`~flashsim.systems.vast.streams.VastStreams.access_stream`, a request
from :meth:`~flashsim.systems.vast.request.VastRequests.rpc`.  A log's
striping hints, when it has them, do not apply (the servers, not the
client, spread NFS files over the DNodes).

Objects: one tier object per file (``job:<job name>/<file index>``).  Where
a read's bytes live, at the moment its kind of call is first issued in a run:

* what the tier holds of the file: in the SCM buffer or migrated to QLC
  (:meth:`ScmQlcTier.read_weights <flashsim.components.tier.ScmQlcTier.read_weights>`);
* bytes still dirty in a client's page cache (written moments ago, not yet
  written back) count as SCM-resident: the model has no clean page cache to
  serve them from, and NFS's close-to-open consistency flushes them to the
  servers before another open sees them, into the SCM buffer;
* a file of which neither holds a byte is data that existed before the job
  (an input it did not write): it is placed on QLC as aged, migrated data by
  :meth:`ScmQlcTier.place_aged <flashsim.components.tier.ScmQlcTier.place_aged>`,
  as most user data is (seed 004, "Most user data is 'aged'": VAST's SCM
  takes ~0.5 % of capacity, so data is old, on QLC, after ~2 hours at
  NERSC's write rate; seed 002 Sec. III-B).  It is incompressible (8 bits of
  entropy per byte, the tier's default: a trace does not say how its data
  compress) and spread as the migration spreads stripes.  A log does not
  give the file's size at that moment, so the aged extent is one stripe
  (``tier.stripe_size``, ASSUMED): only where it lives matters to reads of
  it, and if the job later writes the file its reads split between SCM and
  QLC in proportion to the bytes written and that stripe.  Rewrites are new
  bytes in SCM (the model keeps no per-offset map), so a file rewritten in
  place grows in the tier.

Simplifications (each a consequence of the :class:`JobTarget` protocol, which
gives a system one kind of call, not a rank):

* the closed loops of the rate caps (:meth:`direct_rate_Bps`,
  :meth:`sequential_read_rate_Bps`) count the job's ranks
  (``Access.job_ranks``) as the ranks sharing the SCM drives' queues, not
  those of other jobs (the drives are shared max-min by the flows);
* request fidelity: an RPC moves ``op_size_B`` bytes (``rsize``/``wsize``, or
  the call when smaller and random); the engine gathers smaller sequential
  calls into whole RPCs (read-ahead), but keeps only the RPCs a call waits
  for in flight, not a read-ahead window ahead of the calls; a
  sequential buffered read's copy is a delay per RPC of as many RPCs' copies
  as the call has in flight (the process copies them one after another; the
  protocol names no rank to give a copy queue to); buffered writes (the page
  cache is a flow-fidelity buffer) make a phase with them run in flow
  fidelity, as an ``ior`` phase does (:func:`job_fidelity`; the result says
  which fidelity ran);
* on a client fabric with adaptive routing (a hybrid model), jobs' routes are
  planned on the fabric's background load alone (``net.plan({})``): the
  protocol gives no offered load per job, as IOR's phase does;
* a job run ``alone`` runs on a fresh system: the tier holds none of the data
  earlier phases wrote, so a job reading such data reads it from SCM together
  and from QLC (as aged) alone.  Keep readers' data inside the phase (or make
  it old data) when comparing.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any, Literal

import numpy as np
import simpy

from flashsim.components.tier import ReadWeights
from flashsim.components.tier_drives import ReadPicks, read_picks
from flashsim.config import warn
from flashsim.engine.flows import Flow
from flashsim.engine.simulation import Simulation
from flashsim.systems.base import Fidelity
from flashsim.systems.vast.model import VastModel
from flashsim.systems.vast.streams import CapCache, VastStreams
from flashsim.workloads.darshan import DarshanPhase
from flashsim.workloads.ior import RankStream
from flashsim.workloads.jobs import DarshanJob, IorJob, JobsPhase
from flashsim.workloads.mix_phase import MixPhase
from flashsim.workloads.replay import Access, JobTargetDefaults

#: Prefix of a job file's tier object (IOR's objects are ``<dataset>#<version>/<rank>``).
JOB_OBJECT_PREFIX = "job:"


class VastJobs(VastStreams, JobTargetDefaults):
    """The job-replay protocol on a ``vast`` system."""

    def __init__(self, model: VastModel, sim: Simulation, fidelity: Fidelity) -> None:
        super().__init__(model, sim, fidelity)
        self._job_caps: CapCache = {}
        self._job_picks: dict[Access, ReadPicks] = {}

    def job_client_nodes(self) -> int:
        """The model's NFS client nodes (``client.count``)."""
        return len(self.caches)

    def job_begin(self) -> None:
        """Compute caps and read locations afresh: the tier's state moves between runs."""
        self._job_caps = {}
        self._job_picks = {}
        self.net.plan({})

    @staticmethod
    def job_object(access: Access) -> str:
        """The tier object of the file of ``access``."""
        return f"{JOB_OBJECT_PREFIX}{access.file_key}"

    def job_read_weights(self, obj: str) -> ReadWeights:
        """Where a read of ``obj`` goes now, per logical byte (see the module docstring).

        Bytes dirty in client page caches count as SCM; a file of which
        nothing is held anywhere is placed on QLC as aged data first.
        """
        tier = self.tier
        dirty = sum(cache.bytes_of(obj) for cache in self.caches)
        scm, qlc = tier.location(obj)
        if scm + qlc + dirty <= 0:
            tier.place_aged(obj, float(self.model.tier.stripe_size))
            return tier.read_weights(obj)
        if dirty <= 0:
            return tier.read_weights(obj)
        total = scm + qlc + dirty
        _, qlc_w, f_qlc = tier.read_weights(obj)
        held = scm + qlc
        return (scm + dirty) / total, qlc_w * (held / total), f_qlc * (held / total)

    def job_stream(self, access: Access) -> RankStream:
        """The NFS stream of one rank making calls of kind ``access`` (IOR's physics)."""
        where = None
        if not access.write:
            where = self.job_read_weights(self.job_object(access))
            self._job_picks[access] = read_picks(where)
        return self.access_stream(
            access.node,
            access.write,
            access.transfer_B,
            random=not access.sequential,
            direct_io=access.direct_io,
            sharers=max(1, access.job_ranks),
            where=where,
            migrating=self.migrating(),
            caps=self._job_caps,
        )

    def job_request(self, access: Access, stream: RankStream) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: one NFS RPC of a call of kind ``access``.

        Raises
        ------
        ValueError
            For a buffered write (the page cache exists in flow fidelity only;
            :func:`job_fidelity` moves such phases there).
        """
        if access.write and not access.direct_io:
            raise ValueError(
                "buffered writes need flow fidelity on a vast system (the page cache is a "
                "flow-fidelity buffer)"
            )
        size = stream.op_size_B  # the engine gathers smaller calls into whole RPCs
        obj = self.job_object(access)
        if access.write:
            return self.rpc(access.node, obj, size, None)
        copy = None
        if access.sequential and not access.direct_io:
            # The process copies the call's pages out one RPC after another: with the
            # engine's ``in_flight`` RPCs of the call running side by side, each waits for
            # ``in_flight`` copies, so the call's copies add up to ``call / copy rate``.
            ops = max(1, math.ceil(access.transfer_B / stream.op_size_B - 1e-9))
            in_flight = max(1, min(stream.concurrency, ops))
            copy_s = in_flight * size / self.client_model.copy_rate_Bps(access.transfer_B)
            copy = (None, copy_s)
        return self.rpc(access.node, obj, size, self._job_picks[access], copy)

    def job_flow_started(self, access: Access, flow: Flow) -> None:
        """Count a write's bytes into its node's page cache, or the SCM buffer (O_DIRECT)."""
        if access.write:
            self.count_write(flow, access.node, self.job_object(access), access.direct_io)


def job_fidelity(phase: Any, fidelity: Literal["flow", "request"], seed: int) -> Fidelity:
    """The fidelity a job phase runs at on a ``vast`` system.

    ``flow`` when ``fidelity`` is ``request`` but the phase makes buffered
    writes (the client page cache is a flow-fidelity buffer), else ``fidelity``.
    """
    if fidelity == "flow":
        return "flow"
    if buffered_writes(phase, seed):
        warn(
            f"phase {phase.name!r}: its buffered writes need the client page cache, a "
            "flow-fidelity buffer on a vast system; the phase runs in flow fidelity"
        )
        return "flow"
    return "request"


def buffered_writes(phase: Any, seed: int) -> bool:
    """Whether a ``darshan``, ``jobs`` or ``mix`` phase makes writes through the page cache."""
    if isinstance(phase, DarshanPhase):
        return not phase.direct_io and bool(np.any(phase.trace(seed).ops.write))
    if isinstance(phase, JobsPhase):
        for job in phase.jobs:
            if isinstance(job, IorJob):
                if job.operation == "write" and not job.direct_io:
                    return True
            elif isinstance(job, DarshanJob):
                if np.any(job.trace(seed).ops.write):
                    return True
            else:
                return True  # a mix's jobs write through the page cache
        return False
    return isinstance(phase, MixPhase)
