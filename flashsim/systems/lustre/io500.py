"""IO-500 on a ``lustre`` system: the IOR phases through its IOR path, mdtest on its MDSs.

The metadata service is :class:`~flashsim.components.mds.MetadataService`
over the model's ``[mds]`` servers, with the costs of ``[mds.metadata]`` and
each MDS's MDT (``drives_per_target`` drives, written ``raid`` mirror copies)
as the device of creates and unlinks.

What each mdtest item costs here (Lustre client semantics):

* create (mdtest-easy/-hard write): an intent open with ``O_CREAT`` and a
  close, two MDS RPCs; the 3,901 bytes of a hard file go to the client page
  cache and are written back asynchronously (not timed: mdtest's ``-Y`` sync
  at the end of the phase is omitted);
* stat: one getattr RPC (the glimpse of the file size from the OSTs is
  omitted: the files are empty or tiny);
* read (mdtest-hard-read): open, one small read RPC to an OST at its
  zero-load round trip (the OSTs are far from busy at metadata rates), close;
* delete: one unlink RPC (the OST objects are destroyed asynchronously);
* find: one stat per entry and a readdir RPC per ``readdir_entries_per_rpc``
  entries (pfind needs the size and mtime of every file).

Placement (DNE): each rank's mdtest-easy directory sits on one MDT, dealt
round robin (DNE1 remote directories or round-robin mkdir); the shared
mdtest-hard directory is on one MDT unless the phase stripes it over
``mdtest_hard_dir_stripe_count`` MDTs (DNE2), whose entries are then spread by
name hash.  find's processes steal work, so their stats reach the MDTs of
the area they scan at random.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flashsim.components.fabric_spec import fabric_role
from flashsim.components.mds import MdDevice, MdItem, MetadataService, Routing
from flashsim.engine.closedloop import Request
from flashsim.measure.results import PhaseResult
from flashsim.systems.lustre.core import LustreCore
from flashsim.systems.lustre.cost import op_cost
from flashsim.systems.lustre.model import LustreModel
from flashsim.workloads.io500 import MdStep, check_ior_phases
from flashsim.workloads.ior import IorPhase, IorRunner

#: Bytes of the OST read RPC of one mdtest-hard file (3,901 bytes, one page).
HARD_READ_RPC_B = 4096.0


class LustreIo500(LustreCore):
    """The :class:`~flashsim.workloads.io500.Io500Target` methods of a Lustre system."""

    ior: IorRunner
    _mds_service: MetadataService | None = None

    # ------------------------------------------------------------- protocol
    def io500_ior(self, phase: IorPhase) -> PhaseResult:
        """An IOR phase of the benchmark, run by the system's IOR runner."""
        return self.ior.run(phase)

    def io500_md_rate(self, step: MdStep) -> float:
        """Items/s of ``step`` (analytic closed loop on the MDSs)."""
        service = self.mds_service()
        item, servers, routing = self._md_plan(step)
        return service.items_per_s(step.ranks, item, self._mds_round_trip_s(), servers, routing)

    def io500_md_request(self, step: MdStep) -> Callable[[int], Request]:
        """Request fidelity: one item of a rank through the MDS queues."""
        service = self.mds_service()
        item, servers, routing = self._md_plan(step)
        rng = self.sim.rng(f"{self.model.name}.mds.routing")
        return service.requests(self.sim, item, self._mds_round_trip_s(), servers, routing, rng)

    # -------------------------------------------------------------- helpers
    def mds_service(self) -> MetadataService:
        """The metadata service of the model's MDSs (built on first use)."""
        if self._mds_service is None:
            self._mds_service = build_mds_service(self.model)
        return self._mds_service

    def _mds_round_trip_s(self) -> float:
        """Zero-load wire time (s) of one MDS RPC: fabric, NICs both ways, client syscall."""
        model = self.model
        mds = model.mds
        assert mds is not None  # checked before the run (check_io500_phase)
        fabric_s = self.fabric.latency_s(*self._md_groups())
        wire = 2.0 * (fabric_s + model.client.nic.latency + mds.nic.latency)
        return float(wire + model.client.lustre.syscall_overhead)

    def _md_groups(self) -> tuple[int, int]:
        """Fabric groups of the first client slot and of the first I/O group (the MDSs')."""
        model = self.model
        role = fabric_role(model.fabric, model.client.placement.role)
        client = self.fabric.groups_of(role)[self.placement.group_of(0)]
        return client, self.fabric.groups_of(fabric_role(model.fabric, "io"))[0]

    def _hard_read_s(self) -> float:
        """Zero-load round trip (s) of the small OST read of one mdtest-hard file."""
        _, ost = self.ost(0)
        client, io = self._md_groups()
        fabric_s = self.fabric.latency_s(client, io)
        cost = op_cost(self.model, ost, "read", HARD_READ_RPC_B, False, 1, fabric_s)
        return float(cost.latency_s)

    def _md_plan(self, step: MdStep) -> tuple[MdItem, int, Routing]:
        """The item of ``step``, the MDSs it uses and how ranks reach them."""
        count = self.mds_service().servers
        shared = step.area == "hard"
        servers = min(step.dir_stripe_count if shared else step.directories, count)
        routing: Routing = "random" if shared or step.kind == "find" else "fixed"
        if step.kind == "write":
            item = MdItem((("create", 1.0), ("close", 1.0)), shared_dir=shared)
        elif step.kind == "stat":
            item = MdItem((("stat", 1.0),), shared_dir=shared)
        elif step.kind == "read":
            extra = self._hard_read_s() if step.file_size_B > 0 else 0.0
            item = MdItem((("open", 1.0), ("close", 1.0)), extra_s=extra, shared_dir=shared)
        elif step.kind == "delete":
            item = MdItem((("unlink", 1.0),), shared_dir=shared)
        else:
            item = MdItem((("readdir_entry", 1.0), ("stat", 1.0)), shared_dir=shared)
        return item, servers, routing


def build_mds_service(model: LustreModel) -> MetadataService:
    """The :class:`MetadataService` of ``model``'s ``[mds]`` (ValueError without one)."""
    mds = model.mds
    if mds is None or mds.metadata is None:
        raise ValueError(
            "mds.metadata: the model has no metadata service costs; add an [mds] table with "
            "an [mds.metadata] table to run mdtest/IO-500"
        )
    if mds.tier is not None:
        # An MDT on a tier: metadata updates land in its SCM buffer, each on `scm_copies`
        # SCM drives at the tier's write efficiency (as VAST's metadata on SCM).
        tier = mds.tier
        device = MdDevice(
            drives=tier.scm_drives * mds.targets_per_server,
            drive_write_Bps=tier.scm.bandwidth_Bps("write") * tier.scm_write_efficiency,
            copies=float(tier.scm_copies),
        )
    else:
        mdt = mds.raid_target_spec()
        device = MdDevice(
            drives=mdt.drives * mds.targets_per_server,
            drive_write_Bps=mdt.drive.bandwidth_Bps("write"),
            copies=mdt.raid.full_stripe_write_weight(),
        )
    return MetadataService(mds.metadata, mds.count, device, f"{model.name}.mds")


def check_io500_phase(model: LustreModel, phase: Any, check_ior: Callable[[Any], None]) -> None:
    """An ``io500`` phase needs ``[mds.metadata]``; its IOR phases are checked as IOR phases.

    Raises ``ValueError("key: message")``; ``check_ior`` checks one derived
    :class:`IorPhase` (the kind's IOR check).
    """
    if model.mds is None or model.mds.metadata is None:
        raise ValueError(
            "workload: the model has no [mds.metadata] table (the metadata service's costs); "
            "add one to run IO-500"
        )
    mds = model.mds
    assert mds is not None
    if phase.mdtest_hard_dir_stripe_count > mds.count:
        raise ValueError(
            f"mdtest_hard_dir_stripe_count: {phase.mdtest_hard_dir_stripe_count} MDTs; the "
            f"system has {mds.count} MDSs"
        )
    check_ior_phases(phase, check_ior)
