"""An SCM write buffer over compressed, erasure-coded QLC as one server target.

The target type of a Lustre hot pool, or of any server that exports a tier
as one target: its own SCM and QLC drives (with their PCIe links), an
:class:`~flashsim.components.tier.ScmQlcTier` over them (the write buffer,
the migration compressed by the data's entropy, the QLC erasure code, the
location of every object's bytes, data older than the run), and the tier's
life for the timeline (failures and rebuild of SCM or QLC drives, the
buffer's fill, the fast-forward).  It implements
:class:`~flashsim.components.target.StorageTarget`, so a system kind wires it
as it wires a RAID target.

The model-file table is :class:`TierTargetSpec`: the ``[tier]`` keys of a
VAST model (:class:`~flashsim.components.tier.TierSpec`) plus the drives one
target holds.

One target, ``<target>``, holds ``scm_drives`` SCM and ``qlc_drives`` QLC
drives (:func:`~flashsim.components.tier_drives.build_tier_drives`: resources
``<target>.scm<i>``, ``<target>.qlc<j>``, ``<target>.qlc<j>.ops`` and, with a
``drive_link``, ``<drive>.pcie.up``/``.down``; request queues
``<drive>.cmd``/``.xfer``) and a tier named ``<target>.tier`` over them.

Costs (:meth:`TierTarget.cost`), per operation of ``s`` bytes:

* write: the ingest path, the buffer's gate and ``scm_copies`` SCM replicas
  spread over the SCM drives in service (flow fidelity:
  :meth:`ScmQlcTier.ingest_path <flashsim.components.tier.ScmQlcTier.ingest_path>`
  scaled by the flow's share; request fidelity: the replicas queue at
  ``scm_copies`` distinct SCM drives drawn from ``<target>.requests`` at
  once, then the bytes are committed to the buffer).  Zero-load: one SCM
  write of ``s`` bytes, its data stage stretched by ``1 / scm_write_efficiency``
  (the server is held for its command then its data stage, as the request
  queues serve them one after the other; the drive's access latency and the
  link transfer hold none);
* read: where the object's bytes live now (:meth:`ScmQlcTier.read_weights
  <flashsim.components.tier.ScmQlcTier.read_weights>`): the SCM share from the
  SCM drives in service at ``scm_read_efficiency``, the QLC share from the
  drives holding its strips, a failed drive's strips reconstructed from
  survivors (degraded reads, decode time held on the server).  An object the
  target has never held is data older than the run: it is placed on QLC first
  (:meth:`ScmQlcTier.place_aged <flashsim.components.tier.ScmQlcTier.place_aged>`)
  as one stripe (``stripe_size``, ASSUMED as VAST's jobs do,
  :mod:`flashsim.systems.vast.jobs`): a read of it needs only where it lives,
  and a later write of the object splits its reads between SCM and QLC in
  proportion to the bytes written and that stripe.

The cost is taken when the kind asks (``cost``), so a flow's path is where
the object's bytes were when it started (flow fidelity fixes paths at start).

Per-component variability (``VariabilitySpec``) draws no factors on a tier
target's drives: the tier's efficiencies are calibrated per tier, not per
drive (``scm_write_efficiency``, ``scm_read_efficiency``).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import simpy
from pydantic import Field, model_validator

from flashsim.components.drive import DriveField
from flashsim.components.pcie import PcieLink
from flashsim.components.pcie import link_Bps as pcie_link_Bps
from flashsim.components.ssd import SsdSpec
from flashsim.components.target import OpKind, PathEntries, StorageTarget, TargetCost
from flashsim.components.tier import ReadWeights, TierSpec, compressed_fraction
from flashsim.components.tier_drives import (
    ReadPicks,
    TierDrives,
    build_tier_drives,
    pick_read,
    pick_replicas,
    read_picks,
)
from flashsim.components.tier_life import TierLife
from flashsim.config import field_error
from flashsim.engine.flows import Flow, Resource
from flashsim.engine.simulation import Simulation

if TYPE_CHECKING:
    from flashsim.components.raid_controller import Controller
    from flashsim.components.target import Fidelity
    from flashsim.components.variability import VariabilitySpec


class TierTargetSpec(TierSpec):
    """One tier target: an SCM write buffer over QLC, the drives it holds and its tier policy.

    Attributes
    ----------
    scm_drive, qlc_drive : SsdSpec
        Drive datasheets (a path relative to the model file, or a table);
        both must be SSDs.
    scm_drives, qlc_drives : int
        Drives of each medium in one target.  ``ec_data + ec_parity`` must
        not exceed ``qlc_drives`` and ``scm_copies`` not ``scm_drives``.
    drive_link : PcieLink or None
        Host PCIe link of each drive (``None``: not modelled).
    data_entropy : float
        Entropy (bits per byte, 0..8) of data whose entropy the workload does
        not give: what the migration compresses it to (8: incompressible).
    """

    scm_drive: DriveField
    scm_drives: Annotated[int, Field(ge=1)]
    qlc_drive: DriveField
    qlc_drives: Annotated[int, Field(ge=1)]
    drive_link: PcieLink | None = None
    data_entropy: Annotated[float, Field(ge=0.0, le=8.0)] = 8.0

    @model_validator(mode="after")
    def _drives_hold_the_layout(self) -> TierTargetSpec:
        """SSDs on both media, the erasure code within the QLC drives, replicas within SCM."""
        for key in ("scm_drive", "qlc_drive"):
            if not isinstance(getattr(self, key), SsdSpec):
                raise field_error(key, "a tier's drives must be SSDs (kind = 'ssd')")
        if self.ec_data + self.ec_parity > self.qlc_drives:
            raise field_error(
                "ec_data",
                f"ec_data + ec_parity (= {self.ec_data} + {self.ec_parity}) exceeds the "
                f"{self.qlc_drives} QLC drives of a target (qlc_drives)",
            )
        if self.scm_copies > self.scm_drives:
            raise field_error(
                "scm_copies",
                f"{self.scm_copies} replicas need at least as many SCM drives per target "
                f"(scm_drives = {self.scm_drives})",
            )
        return self

    # ------------------------------------------------------------- drives
    @property
    def scm(self) -> SsdSpec:
        """The SCM drive's datasheet."""
        assert isinstance(self.scm_drive, SsdSpec)
        return self.scm_drive

    @property
    def qlc(self) -> SsdSpec:
        """The QLC drive's datasheet."""
        assert isinstance(self.qlc_drive, SsdSpec)
        return self.qlc_drive

    def _link_Bps(self) -> float:
        return pcie_link_Bps(self.drive_link)

    def _scm_write_each_Bps(self) -> float:
        """Bytes/s one SCM drive writes at ``scm_write_efficiency``, held to its link."""
        return min(float(self.scm.write_bandwidth) * self.scm_write_efficiency, self._link_Bps())

    def _scm_read_each_Bps(self) -> float:
        """Bytes/s one SCM drive reads at ``scm_read_efficiency``, held to its link."""
        return min(float(self.scm.read_bandwidth) * self.scm_read_efficiency, self._link_Bps())

    def _qlc_read_each_Bps(self) -> float:
        """Physical bytes/s one QLC drive reads, held to its link."""
        return min(float(self.qlc.read_bandwidth), self._link_Bps())

    def _compressed(self) -> float:
        """Compressed over logical size of data of ``data_entropy``."""
        return compressed_fraction(self.data_entropy, self.min_compressed_fraction)

    def _read_drives(self) -> int:
        """QLC drives a read of ``data_entropy`` data spreads over (all with ``rotate``)."""
        if self.placement == "rotate":
            return self.qlc_drives
        return self.stripe_width(self._compressed())

    # --------------------------------------------------------- TargetSpec
    def build(
        self,
        sim: Simulation,
        name: str,
        variability: VariabilitySpec,
        front: Controller | None = None,
    ) -> TierTarget:
        """A target named ``name``: its drives, their links and queues, and the tier over them.

        ``variability`` draws no factors on a tier (see the module docstring); a
        tier sits behind no external RAID controller (``front``: ``ValueError``).
        """
        if front is not None:
            raise ValueError(f"{name}: a tier target cannot sit behind a RAID controller")
        drives = build_tier_drives(
            sim,
            self.scm,
            self.qlc,
            [(name, self.scm_drives, self.qlc_drives)],
            float(self.read_chunk),
            self.drive_link,
        )
        return TierTarget(sim, name, self, drives)

    def build_life(self, sim: Simulation, target: StorageTarget, fidelity: Fidelity) -> TierLife:
        """The tier's life (:class:`~flashsim.components.tier_life.TierLife`) for the timeline.

        Rebuilds are flows in both fidelities, so ``fidelity`` changes nothing.
        """
        if not isinstance(target, TierTarget):
            raise TypeError(f"{target.name}: a tier's life needs a TierTarget")
        return TierLife(target.name, target.tier, target.drives)

    def peak_Bps(self, op: OpKind) -> float:
        """Bandwidth (bytes/s) of one target: datasheet rates x the tier's
        ``scm_*_efficiency`` (calibratable, :class:`~flashsim.components.tier.TierSpec`).

        ``write``: the sustained ingest until the buffer fills, every SCM
        drive writing at ``scm_write_efficiency`` of its datasheet rate (or
        its link's), divided by ``scm_copies`` replicas; once the buffer is
        full, writers get the migration's rate instead.  ``read``: reading
        QLC, the drives the data spreads over at their read bandwidth (or
        their links'), ``data_entropy`` data compressed to ``c`` giving
        ``1 / c`` logical bytes per byte read, capped by their read
        operations (read IOPS x ``read_chunk`` logical bytes each), PLUS the
        SCM drives reading buffered data at ``scm_read_efficiency``: a read of
        data partly still in the buffer keeps both media busy at once, so
        their sum is what no read can beat (:meth:`qlc_read_Bps`,
        :meth:`scm_read_Bps` each medium alone).
        """
        if op == "write":
            return self.scm_drives * self._scm_write_each_Bps() / self.scm_copies
        return self.qlc_read_Bps() + self.scm_read_Bps()

    def qlc_read_Bps(self) -> float:
        """Logical bytes/s one target reads of data on QLC (see :meth:`peak_Bps`)."""
        n = self._read_drives()
        bw = n * self._qlc_read_each_Bps() / self._compressed()
        ops = n * self.qlc.iops("read") * float(self.read_chunk)
        return min(bw, ops)

    def scm_read_Bps(self) -> float:
        """Bytes/s one target reads of data still in its SCM buffer (links included)."""
        return self.scm_drives * self._scm_read_each_Bps()

    def peak_iops(self, op: OpKind, size_B: float = 4096.0) -> float:
        """Datasheet operations/s of one target for ``size_B`` operations.

        ``write``: each lands on ``scm_copies`` SCM drives (random IOPS or
        bandwidth over size, at ``scm_write_efficiency``); ``read``: one QLC
        operation of ``c * size_B`` physical bytes on the drives the data
        spreads over, plus the SCM drives' reads of buffered data at once.
        """
        if op == "write":
            each = min(self.scm.iops("write"), self._scm_write_each_Bps() / size_B)
            return self.scm_drives * each / self.scm_copies
        qlc, scm = self.qlc, self.scm
        phys = self._compressed() * size_B
        each = min(qlc.iops("read"), self._qlc_read_each_Bps() / phys)
        # Reads of buffered data at the same time, on the SCM drives (as peak_Bps).
        scm_each = min(
            scm.iops("read") * self.scm_read_efficiency, self._scm_read_each_Bps() / size_B
        )
        return self._read_drives() * each + self.scm_drives * scm_each

    def drive_count(self) -> int:
        """SCM and QLC drives of one target."""
        return self.scm_drives + self.qlc_drives

    def usable_B(self) -> float:
        """User bytes one target stores: QLC capacity x ``ec_data / (ec_data + ec_parity)``.

        Before compression (the SCM buffer holds data on its way, not more of it).
        """
        k, m = self.ec_data, self.ec_parity
        return self.qlc_drives * float(self.qlc.capacity) * k / (k + m)

    def label(self) -> str:
        """``tier 2x <SCM> over 12x <QLC> ec 8+2``."""
        return (
            f"tier {self.scm_drives}x {self.scm.name} over {self.qlc_drives}x {self.qlc.name} "
            f"ec {self.ec_data}+{self.ec_parity}"
        )


@dataclass(frozen=True)
class TierRead:
    """A tier read's :attr:`TargetCost.detail`: where the object's bytes live, at cost time.

    Attributes
    ----------
    where : ReadWeights
        :meth:`ScmQlcTier.read_weights <flashsim.components.tier.ScmQlcTier.read_weights>`.
    path : list of (Resource, float)
        Drive resources per logical byte (degraded reads included).
    picks : ReadPicks
        Request fidelity's draw of a drive (:func:`~flashsim.components.tier_drives.read_picks`).
    decode_s : float
        Expected decode time (s) of one read (degraded reads).
    """

    where: ReadWeights
    path: PathEntries
    picks: ReadPicks
    decode_s: float


class TierTarget:
    """An SCM write buffer over compressed, erasure-coded QLC as one :class:`StorageTarget`.

    Parameters
    ----------
    sim : Simulation
        The simulation.
    name : str
        Dotted target name (``perlmutter.oss3.ost0``).
    spec : TierTargetSpec
        The target's table.
    drives : TierDrives
        Its SCM and QLC drives (:func:`~flashsim.components.tier_drives.build_tier_drives`).
    """

    #: Reads go where the object's bytes live now: costs depend on the object.
    object_aware: ClassVar[bool] = True

    def __init__(
        self, sim: Simulation, name: str, spec: TierTargetSpec, drives: TierDrives
    ) -> None:
        self.sim = sim
        self.name = name
        self.spec = spec
        self.drives = drives
        #: Entropy (bits per byte) of objects whose data the workload describes.
        self.entropy: dict[str, float] = {}
        self.tier = drives.build_tier(f"{name}.tier", spec, self._entropy_of)
        self.rng = sim.rng(f"{name}.requests")

    def _entropy_of(self, obj: str) -> float:
        return self.entropy.get(obj, self.spec.data_entropy)

    def set_entropy(self, obj: str, bits_per_byte: float) -> None:
        """The data of ``obj`` has ``bits_per_byte`` of entropy (0..8): how it compresses."""
        if not 0.0 <= bits_per_byte <= 8.0:
            raise ValueError(
                f"{self.name}: entropy of {obj!r} (={bits_per_byte}) must be in [0, 8]"
            )
        self.entropy[obj] = bits_per_byte

    def aged_size_B(self) -> float:
        """Logical bytes an object read before any write is placed as (one stripe, ASSUMED)."""
        return float(self.spec.stripe_size)

    # ------------------------------------------------------------------ cost
    def cost(self, op: OpKind, size_B: float, sequential: bool, obj: str = "") -> TargetCost:
        """What one ``op`` of ``size_B`` bytes of ``obj`` costs now (module docstring).

        A read of an object the target does not hold places it on QLC as aged
        data first (:meth:`aged_size_B`).
        """
        own, spec = self.drives, self.spec
        link_s = own.link_s(size_B)
        if op == "write":
            scm = own.scm_spec
            xfer = scm.xfer_s("write", size_B) / spec.scm_write_efficiency
            busy = scm.cmd_s("write", size_B) + xfer
            delay = scm.delay_s("write", size_B) + link_s
            return _tier_cost(op, size_B, obj, busy, delay, (0.0, spec.scm_copies * size_B))
        tier = self.tier
        if tier.committed_B(obj) <= 0:
            tier.place_aged(obj, self.aged_size_B())
        where = tier.read_weights(obj)
        f_scm, qlc_w, f_qlc = where
        reads, decode_s = tier.degraded_reads(qlc_w, size_B)
        path = tier.drives_reading(f_scm, qlc_w, f_qlc, reads)
        scm, qlc = own.scm_spec, own.qlc_spec
        scm_busy = scm.cmd_s("read", size_B) + scm.xfer_s("read", size_B) / spec.scm_read_efficiency
        qlc_busy = qlc.cmd_s("read", size_B) + qlc.xfer_s("read", size_B)
        busy = f_scm * scm_busy + f_qlc * qlc_busy + decode_s
        delay = f_scm * scm.delay_s("read", size_B) + f_qlc * qlc.delay_s("read", size_B) + link_s
        links = (size_B * (f_scm + float(reads.sum())), 0.0)
        detail = TierRead(where, path, read_picks(where), decode_s)
        return _tier_cost(op, size_B, obj, busy, delay, links, detail)

    # ------------------------------------------------------------------ flow
    def path(self, cost: TargetCost, share: float = 1.0) -> PathEntries:
        """Flow path per byte of a flow carrying ``share`` of its bytes through this target.

        A write: the ingest path (gate, SCM replicas and their links) now; a
        read: the drives where the object's bytes lived at cost time.
        """
        if cost.op == "write":
            return self.tier.ingest_path(share)
        detail: TierRead = cost.detail
        return [(r, share * w) for r, w in detail.path]

    def flow_started(self, cost: TargetCost, flow: Flow, share: float = 1.0) -> None:
        """A write flow's ``share`` of bytes fills the buffer as ``cost.obj``'s as it moves."""
        if cost.op == "write":
            self.tier.buffer.add_ingest(flow, cost.obj, share)

    def account_wear(self, bytes_moved: Callable[[Resource], float]) -> None:
        """Bring the drives' wear up to now from the tier's own counters (``bytes_moved`` unused).

        The buffer counts the bytes it took in (SCM replicas) and the
        migration the physical bytes each QLC drive received
        (:meth:`TierDrives.sync_wear <flashsim.components.tier_drives.TierDrives.sync_wear>`).
        """
        self.drives.sync_wear(self.tier)

    # --------------------------------------------------------------- request
    def visit(self, env: simpy.Environment, cost: TargetCost) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: the target's part of one operation (module docstring).

        A write queues at ``scm_copies`` SCM drives at once (command units,
        then the data path stretched by ``1 / scm_write_efficiency``), counts
        the replicas as wear and commits the bytes to the buffer; at the hold
        level it also queues one migration read of them at an SCM drive (not
        awaited), as the drain's SCM read.  A read queues at the drive its
        bytes are drawn on (:func:`~flashsim.components.tier_drives.pick_read`),
        or at the survivors that reconstruct it, then decodes.
        """
        own, spec, tier = self.drives, self.spec, self.tier
        size = cost.size_B
        if cost.op == "write":
            scale = 1.0 / spec.scm_write_efficiency
            picked = pick_replicas(tier, self.rng)
            copies = spec.scm_copies
            yield env.all_of(
                [env.process(own.write_replica(i, size, scale, copies)) for i in picked]
            )
            own.commit_write(tier, cost.obj, size, self.rng)
            return
        detail: TierRead = cost.detail
        pick = pick_read(tier, detail.picks, size, self.rng)
        scale = 1.0 / spec.scm_read_efficiency if pick.medium == "scm" else 1.0
        if len(pick.drives) == 1:
            yield from own.visit(pick.medium, pick.drives[0], "read", size, scale)
        else:
            yield env.all_of(
                [env.process(own.visit(pick.medium, d, "read", size, scale)) for d in pick.drives]
            )
        if pick.decode_s > 0:
            yield env.timeout(pick.decode_s)


def _tier_cost(
    op: OpKind,
    size_B: float,
    obj: str,
    busy_s: float,
    delay_s: float,
    pcie_B: tuple[float, float],
    detail: TierRead | None = None,
) -> TargetCost:
    """A tier's :class:`TargetCost`: no RAID stages, ``pcie_B`` = bytes (up, down) over links."""
    return TargetCost(
        op=op,
        size_B=size_B,
        raid_s=0.0,
        stages=(),
        drive_cmd_s=0.0,
        drive_xfer_s=0.0,
        pcie_up_B=pcie_B[0],
        pcie_down_B=pcie_B[1],
        drive_latency_s=busy_s,
        delay_s=delay_s,
        obj=obj,
        detail=detail,
    )


__all__ = ["TierRead", "TierTarget", "TierTargetSpec"]
