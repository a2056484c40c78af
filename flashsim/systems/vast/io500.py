"""IO-500 on a ``vast`` system: the IOR phases through its IOR path, mdtest on its CNodes.

VAST's CNodes are stateless: every file-system operation is served by a
CNode from transactionally consistent structures in SCM (seed 002 §II-A), so
the metadata service is :class:`~flashsim.components.mds.MetadataService`
over ``cnode.count`` servers with the costs of ``[cnode.metadata]``, and the
shared SCM drives (written ``tier.scm_copies`` times, at the tier's SCM write
efficiency) are the device of creates and unlinks.  Clients spread their
NFS connections over every CNode (``nconnect`` and multipath), so an
operation reaches a CNode at random, whatever its directory.

Every NFS RPC costs the calibrated fixed round trip of a small RPC
(``cnode.op_latency`` plus the wire, :meth:`VastTopology.rtt_s`); the
per-operation costs of ``[cnode.metadata]`` are CNode time on top.  What each
mdtest item is (NFSv3 client semantics, ASSUMED as the seed does not give
the mount's version):

* create: one CREATE; an mdtest-hard file's 3,901 bytes are flushed by a
  WRITE at close (close-to-open consistency), one more round trip;
* stat: one GETATTR (after a LOOKUP the model folds into it);
* read (mdtest-hard-read): an open revalidation (GETATTR) and one READ of the
  file from SCM;
* delete: one REMOVE;
* find: READDIRPLUS returns each entry's attributes, so no separate stat.

Omitted: client attribute caching (a different node reads each file, mdtest
``-N 1``), VAST's similarity and data-reduction work on the tiny files, and
any serialization within one directory (no figure for VAST's element store).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flashsim.components.mds import MdDevice, MdItem, MetadataService
from flashsim.engine.closedloop import Request
from flashsim.measure.results import PhaseResult
from flashsim.systems.vast.model import VastModel, ssd
from flashsim.systems.vast.topology import VastTopology
from flashsim.workloads.io500 import Io500Phase, MdStep, check_ior_phases
from flashsim.workloads.ior import IorPhase

#: Bytes of the RPC that writes or reads one mdtest-hard file (3,901 bytes, one page).
HARD_FILE_RPC_B = 4096.0


class VastIo500(VastTopology):
    """The :class:`~flashsim.workloads.io500.Io500Target` methods of a VAST system."""

    _md_service: MetadataService | None = None

    def io500_ior(self, phase: IorPhase) -> PhaseResult:
        """An IOR phase of the benchmark, run as the system runs ``ior`` phases."""
        return self.run_phase(phase)

    def io500_md_rate(self, step: MdStep) -> float:
        """Items/s of ``step`` (analytic closed loop on the CNodes)."""
        service = self.md_service()
        item = self._md_item(step)
        return service.items_per_s(step.ranks, item, self._md_rtt_s(), service.servers, "random")

    def io500_md_request(self, step: MdStep) -> Callable[[int], Request]:
        """Request fidelity: one item of a rank through the CNode queues."""
        service = self.md_service()
        rng = self.sim.rng(f"{self.model.name}.cnode.md_routing")
        return service.requests(
            self.sim, self._md_item(step), self._md_rtt_s(), service.servers, "random", rng
        )

    def md_service(self) -> MetadataService:
        """The metadata service of the CNodes (built on first use)."""
        if self._md_service is None:
            self._md_service = build_md_service(self.model)
        return self._md_service

    def _md_rtt_s(self) -> float:
        """Fixed time (s) of one NFS metadata RPC: the calibrated op_latency and the wire."""
        return float(self.wire_s(0.0) + self.model.cnode.op_latency)

    def _md_item(self, step: MdStep) -> MdItem:
        shared = step.area == "hard"
        small = step.file_size_B > 0
        if step.kind == "write":
            extra = self.rtt_s(HARD_FILE_RPC_B, "write") if small else 0.0
            return MdItem((("create", 1.0),), extra_s=extra, shared_dir=shared)
        if step.kind == "stat":
            return MdItem((("stat", 1.0),), shared_dir=shared)
        if step.kind == "read":
            extra = self.rtt_s(HARD_FILE_RPC_B, "read", 1.0) if small else 0.0
            return MdItem((("open", 1.0),), extra_s=extra, shared_dir=shared)
        if step.kind == "delete":
            return MdItem((("unlink", 1.0),), shared_dir=shared)
        return MdItem((("readdir_entry", 1.0),), shared_dir=shared)


def build_md_service(model: VastModel) -> MetadataService:
    """The :class:`MetadataService` of ``model``'s CNodes (ValueError without costs)."""
    spec = model.cnode.metadata
    if spec is None:
        raise ValueError(
            "cnode.metadata: the model has no metadata service costs; add a "
            "[cnode.metadata] table to run mdtest/IO-500"
        )
    dn, tier = model.dnode, model.tier
    scm = ssd(dn.scm_drive, "dnode.scm_drive")
    device = MdDevice(
        drives=dn.count * dn.scm_drives,
        drive_write_Bps=scm.bandwidth_Bps("write") * tier.scm_write_efficiency,
        copies=float(tier.scm_copies),
        shared=True,
    )
    return MetadataService(spec, model.cnode.count, device, f"{model.name}.cnode")


def check_io500_phase(
    model: VastModel, phase: Io500Phase, check_ior: Callable[[Any], None]
) -> None:
    """An ``io500`` phase needs ``[cnode.metadata]``; its IOR phases are checked as IOR phases."""
    if model.cnode.metadata is None:
        raise ValueError(
            "workload: the model has no [cnode.metadata] table (the metadata service's costs); "
            "add one to run IO-500"
        )
    check_ior_phases(phase, check_ior)
