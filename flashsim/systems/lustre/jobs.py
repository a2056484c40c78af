"""Jobs' calls on Lustre (:class:`~flashsim.workloads.replay.JobTarget`): the IOR paths per call.

A file's stripe set comes from the trace when it recorded one (Darshan's
LUSTRE module: the OST indices, taken modulo this system's OST count), else
the model's default stripe count starting at an OST chosen by a hash of the
file's key (Lustre's allocator spreads first stripes; a hash makes the
choice deterministic and independent of the order files are opened).  The
path, caps and request context of each kind of call are built by
:meth:`~flashsim.systems.lustre.ior.LustreIor.access_stream`, the method
IOR's streams come from.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

from flashsim.engine.flows import Flow
from flashsim.engine.simulation import Simulation
from flashsim.systems.base import Fidelity
from flashsim.systems.lustre.fabric import client_slots
from flashsim.systems.lustre.ior import LustreIor, PathCache, RankContext
from flashsim.systems.lustre.model import LustreModel
from flashsim.workloads.ior import RankStream
from flashsim.workloads.jobs import hash_name
from flashsim.workloads.replay import Access, JobTargetDefaults


class LustreJobs(LustreIor, JobTargetDefaults):
    """The job-replay protocol on a Lustre system."""

    def __init__(self, model: LustreModel, sim: Simulation, fidelity: Fidelity) -> None:
        super().__init__(model, sim, fidelity)
        self._job_paths = PathCache()
        self._job_contexts: dict[Access, RankContext] = {}

    def job_client_nodes(self) -> int:
        """Client node slots of the groups the placement may use."""
        return client_slots(self.model)

    def job_begin(self) -> None:
        """Build paths afresh: drives may have aged or failed since the last run."""
        self._job_paths = PathCache()
        self._job_contexts = {}

    def file_targets(self, access: Access) -> tuple[int, ...]:
        """OSTs of the file of ``access``, in stripe order."""
        n = self.n_osts
        f = access.file
        if f.osts:
            return tuple(dict.fromkeys(o % n for o in f.osts))
        count = min(f.stripe_count or self.model.client.lustre.stripe_count, n)
        first = hash_name(access.file_key) % n
        return tuple((first + k) % n for k in range(count))

    def job_stream(self, access: Access) -> RankStream:
        """The IOR stream of one rank making calls of kind ``access``."""
        targets = self.file_targets(access)
        for t in targets:
            self.ost(t)
        stream, ctx = self.access_stream(
            access.node,
            targets,
            "write" if access.write else "read",
            access.transfer_B,
            access.sequential,
            access.direct_io,
            access.ranks_on_node,
            self._job_paths,
            lock_file=access.file_key,
            write_conflict=access.write_conflict,
            obj=access.file_key,
        )
        self._job_contexts[access] = ctx
        return stream

    def job_flow_started(self, access: Access, flow: Flow) -> None:
        """Tell each target a call's flow crosses that it started (a tier counts the bytes)."""
        ctx = self._job_contexts.get(access)
        if ctx is not None:
            self.flows_started(ctx, flow)

    def job_request(self, access: Access, stream: RankStream) -> Generator[simpy.Event, Any, None]:
        """One server operation of a call of kind ``access`` (IOR's request path)."""
        return self.context_request(self._job_contexts[access])
