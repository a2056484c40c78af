"""A VAST-like SCM/QLC tier: a replicated SCM write buffer that migrates stripes to QLC.

Write path (seed 002 Sec. II; slides 004 "VAST write path in a nutshell"):

1. a client write lands on any CNode (no locality);
2. the CNode replicates it synchronously to ``scm_copies`` (2) SCM drives and
   appends it to a multi-GB stripe;
3. asynchronously, full stripes are compressed (by the data's entropy),
   erasure-coded ``ec_data + ec_parity`` and migrated to QLC by the CNodes
   (a stripe compressed to ``c`` keeps the strip size and shrinks to
   ``ceil(c * ec_data)`` data strips plus ``ec_parity``).

In flow fidelity the SCM space reserved for incoming writes is a
:class:`~flashsim.components.fluid.FluidBuffer`: ingest flows cross its gate
and the SCM drives (``scm_copies`` writes per user byte); the migration is its
drain flow (one SCM read per user byte, ``c * w / (w - m)`` QLC writes, ``c``
the compressed fraction, ``w`` the stripe width and ``m`` its parity strips).
Migration starts when the buffer holds ``migrate_above`` of its capacity and
then follows the ingest (the newest data stays in SCM); a full buffer
back-pressures writers to the migration rate.

Every byte of every object (file) has a location that changes with time: in
the SCM buffer (in arrival order), or in QLC stripes whose drives depend on
the compressed width.  Data that existed before the simulation (a file a
replayed job reads but never wrote) is placed on QLC by :meth:`ScmQlcTier.place_aged`,
as the migration would have left it long ago.  Reads are served from where the data lives now
(:meth:`ScmQlcTier.read_weights`).  An incompressible stripe spans all
``ec_data + ec_parity`` drives of its stripe; a stripe compressed to ``c``
spans ``ceil(c * ec_data) + ec_parity`` drives.

Drive resources carry their read bandwidth as capacity; a written byte costs
``read_bw / write_bw`` of it (the drive is time-shared between reads and
writes), divided by ``scm_write_efficiency`` on SCM.

State for the whole run (issue 17): a drive may be taken out of service
(:meth:`ScmQlcTier.take_out`: it failed) and put back
(:meth:`ScmQlcTier.put_back`: a fresh drive replaced it).  New bytes then
avoid it: writes replicate over the SCM drives in service, the migration reads
them and opens stripes on the QLC drives in service, and the bytes a failed
QLC drive held are read from the survivors.  A degraded read is the erasure
code's (:class:`~flashsim.components.rebuild.DegradedState`, written once for
every layout): until the rebuild re-creates a strip that sat on a failed QLC
drive, a read of it is reconstructed from ``ec_data`` surviving strips of its
stripe (``k`` drive reads of the same size, one parity read when the read
covers the whole stripe, :meth:`ArrayGeometry.reconstruct_reads
<flashsim.components.rebuild.ArrayGeometry.reconstruct_reads>`) and decoded on
the CNode; the share the rebuild has re-created (its ``rebuilt_fraction``) is
read once, where the rebuild wrote it (the survivors' free space).  Reads of a
failed SCM drive's buffered bytes go to their other replica (no
reconstruction).  With every drive in service the tier behaves exactly as
before.  :meth:`ScmQlcTier.fast_forward` advances the buffer and the QLC wear
over bytes that no flow simulates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field

from flashsim.components.fluid import BufferCheck, DrainPath, FluidBuffer, Pieces
from flashsim.components.rebuild import (
    ArrayGeometry,
    DegradedState,
    RebuildPolicy,
    rebuild_traffic,
)
from flashsim.config import Bytes, StrictModel, UnitFraction, calibratable
from flashsim.engine.flows import Resource
from flashsim.engine.simulation import Simulation

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: Whole stripes of one piece above which the migration places them in bulk (fast-forward).
BULK_STRIPES = 1024
#: Where a read goes per logical byte (:meth:`ScmQlcTier.read_weights`): the
#: fraction in SCM, physical bytes per QLC drive, the fraction in QLC.
ReadWeights = tuple[float, FloatArray, float]


class TierSpec(StrictModel):
    """Parameters of the SCM/QLC tier (the ``[tier]`` table of a model file).

    Attributes
    ----------
    write_buffer : float
        SCM space reserved for incoming writes, in user bytes.
    migrate_above : float
        Fraction of ``write_buffer`` at which migration to QLC starts and is held.
    scm_copies : int
        Synchronous replicas of each incoming write on SCM.
    stripe_size : float
        Logical bytes per stripe (bytes).
    ec_data, ec_parity : int
        Erasure-code geometry of a QLC stripe (data and parity strips).
    placement : {"rotate", "packed"}
        Where successive QLC stripes start: after the previous one, or always
        on the first drive (narrow stripes then share a few drives).
    min_compressed_fraction : float
        Smallest compressed size over logical size any data reaches.
    scm_write_efficiency : float
        Fraction of the SCM datasheet write bandwidth the write path sustains.
    scm_read_efficiency : float
        Fraction of the SCM datasheet read bandwidth that client reads of
        buffered data get through the CNode / NVMe-oF read path (a read of
        SCM data costs ``1 / scm_read_efficiency`` of drive time per byte).
    read_chunk : float
        Logical bytes compressed together (bytes): a read of QLC data fetches
        whole compressed chunks, one drive operation of ``c * read_chunk``
        physical bytes each, so highly compressible data costs a drive
        operation per few physical bytes.
    rebuild : RebuildPolicy
        How a failed drive's data is rebuilt against the foreground I/O
        (guaranteed share of drive time, idle share, rate cap).
    drive_fill : float
        Share of each QLC drive's capacity holding data: what the rebuild of
        a failed QLC drive reconstructs.
    """

    write_buffer: Bytes
    migrate_above: UnitFraction = 0.9
    scm_copies: Annotated[int, Field(ge=1)] = 2
    stripe_size: Bytes = "4 GB"
    ec_data: Annotated[int, Field(ge=1)] = 36
    ec_parity: Annotated[int, Field(ge=0)] = 4
    placement: Literal["rotate", "packed"] = "rotate"
    min_compressed_fraction: Annotated[float, Field(gt=0.0, le=1.0)] = 0.05
    scm_write_efficiency: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        1.0,
        json_schema_extra=calibratable(
            0.01,
            1.0,
            "",
            ["ior"],
            "an IOR sequential write bandwidth measurement (with fsync)",
            "VAST test system",
            where=["tier"],
        ),
    )
    scm_read_efficiency: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        1.0,
        json_schema_extra=calibratable(
            0.01,
            1.0,
            "",
            ["ior"],
            "an IOR sequential read bandwidth measurement of fresh data",
            "VAST test system",
            where=["tier"],
        ),
    )
    read_chunk: Bytes = "32 KiB"
    rebuild: RebuildPolicy = Field(
        default_factory=lambda: RebuildPolicy.model_validate({}),
        description=(
            "How a failed SCM or QLC drive is rebuilt against the foreground I/O "
            "(components.rebuild): guaranteed priority share (ASSUMED default 0.3, as the "
            "vast-rebuild phase's), idle share, rate cap; decode_bandwidth is what one CNode "
            "core decodes of a degraded read's survivor bytes (its latency; the drives bound "
            "the rebuild itself)."
        ),
    )
    drive_fill: UnitFraction = Field(
        1.0,
        description=(
            "Share of each QLC drive's capacity holding data, which the rebuild of a failed "
            "QLC drive reconstructs (ASSUMED 1: a full pool, as the vast-rebuild phase's `used`)."
        ),
    )

    def stripe_width(self, c: float) -> int:
        """QLC drives a stripe compressed to fraction ``c`` spans (data + parity strips)."""
        data = min(self.ec_data, max(1, math.ceil(self.ec_data * c - 1e-9)))
        return data + self.ec_parity


def compressed_fraction(entropy_bits_per_byte: float, floor: float) -> float:
    """Compressed size over logical size for data of the given entropy.

    An ideal entropy coder stores ``H`` bits per byte, so the fraction is
    ``H / 8``, never below ``floor`` (container and index overheads).

    Parameters
    ----------
    entropy_bits_per_byte : float
        Shannon entropy of the data in bits per byte (0..8; 8 is random data).
    floor : float
        Smallest fraction (0 < floor <= 1).
    """
    if not 0.0 <= entropy_bits_per_byte <= 8.0:
        raise ValueError(f"entropy_bits_per_byte(={entropy_bits_per_byte}) must be in [0, 8]")
    return float(min(1.0, max(floor, entropy_bits_per_byte / 8.0)))


@dataclass
class QlcLocation:
    """Where an object's migrated bytes live.

    Attributes
    ----------
    logical_B : float
        Logical (user) bytes of the object on QLC.
    phys_read_B : numpy.ndarray
        Physical bytes per QLC drive that reading all of them touches.
    lost_B : numpy.ndarray or None
        Physical bytes per QLC drive that sat on a failed drive whose rebuild
        has not ended (``None``: none); they are not in :attr:`phys_read_B`.
    """

    logical_B: float
    phys_read_B: FloatArray
    lost_B: FloatArray | None = None


@dataclass
class TierCheck:
    """Totals of :meth:`ScmQlcTier.check` (bytes, logical).

    Until an object is forgotten, ``qlc_objects_B == migrated_B + aged_B``:
    what is on QLC was migrated during the run or placed there as data older
    than the run.
    """

    ingested_B: float
    scm_B: float
    migrated_B: float
    qlc_objects_B: float
    buffer: BufferCheck = field(repr=False)
    aged_B: float = 0.0


class ScmQlcTier:
    """The SCM write buffer, its migration to QLC and the location of every byte.

    Parameters
    ----------
    sim : Simulation
        Owns the flow network.
    name : str
        Dotted component name.
    spec : TierSpec
        Tier parameters.
    scm : sequence of Resource
        SCM drives (capacity: read bandwidth in bytes/s).
    qlc : sequence of Resource
        QLC drives (capacity: read bandwidth in bytes/s).
    scm_write_cost : float
        Drive capacity consumed per byte written to SCM (read_bw / write_bw),
        before ``scm_write_efficiency``.
    qlc_write_cost : float
        Drive capacity consumed per byte written to QLC (read_bw / write_bw).
    migration_extra : callable, optional
        ``migration_extra(c)``: further resources a migrated user byte crosses
        (CNode CPU, fabric) when it compresses to ``c``.
    entropy_of : callable, optional
        ``entropy_of(obj)``: the entropy in bits per byte of an object's data
        (default 8, incompressible).
    migration_priority : float
        Share weight of the migration flow where it meets writers (SCM
        drives, fabric): the CNodes give migration precedence so that it can
        keep pace with the ingest (it is capped at the ingest rate while the
        buffer sits at its watermark).
    qlc_ops : sequence of Resource, optional
        One per QLC drive: its read-operation capacity expressed as chunk
        bytes per second (read IOPS x ``read_chunk``); a logical byte read
        from an object compressed to ``c`` costs ``w / c`` of it on a drive
        holding ``w`` physical bytes per logical byte.  This is what makes
        compressible data, packed into few drives, read slower.
    scm_links, qlc_links : sequence of (Resource, Resource), optional
        One per SCM / QLC drive: its host PCIe link, (up, down) (capacity in
        bytes/s each; components.pcie).  A byte a drive reads crosses its up
        link, a byte it writes its down link (``None``: links not modelled).
    """

    def __init__(
        self,
        sim: Simulation,
        name: str,
        spec: TierSpec,
        scm: Sequence[Resource],
        qlc: Sequence[Resource],
        scm_write_cost: float,
        qlc_write_cost: float,
        migration_extra: Callable[[float], list[tuple[Resource, float]]] | None = None,
        entropy_of: Callable[[str], float] | None = None,
        migration_priority: float = 1000.0,
        qlc_ops: Sequence[Resource] | None = None,
        scm_links: Sequence[tuple[Resource, Resource]] | None = None,
        qlc_links: Sequence[tuple[Resource, Resource]] | None = None,
    ) -> None:
        if not scm or not qlc:
            raise ValueError(f"{name}: needs at least one SCM and one QLC drive")
        if spec.ec_data + spec.ec_parity > len(qlc):
            raise ValueError(
                f"{name}: ec_data + ec_parity (={spec.ec_data + spec.ec_parity}) "
                f"exceeds the {len(qlc)} QLC drives"
            )
        self.sim = sim
        self.name = name
        self.spec = spec
        self.scm = list(scm)
        self.qlc = list(qlc)
        self.qlc_ops = list(qlc_ops) if qlc_ops is not None else []
        if self.qlc_ops and len(self.qlc_ops) != len(self.qlc):
            raise ValueError(f"{name}: qlc_ops needs one resource per QLC drive")
        self.scm_links = list(scm_links) if scm_links is not None else []
        self.qlc_links = list(qlc_links) if qlc_links is not None else []
        if self.scm_links and len(self.scm_links) != len(self.scm):
            raise ValueError(f"{name}: scm_links needs one (up, down) pair per SCM drive")
        if self.qlc_links and len(self.qlc_links) != len(self.qlc):
            raise ValueError(f"{name}: qlc_links needs one (up, down) pair per QLC drive")
        self.scm_write_cost = scm_write_cost / spec.scm_write_efficiency
        self.qlc_write_cost = qlc_write_cost
        self._migration_extra = migration_extra or (lambda _c: [])
        self._entropy_of = entropy_of or (lambda _obj: 8.0)
        self.qlc_objects: dict[str, QlcLocation] = {}
        self.migrated_B = 0.0
        #: Logical bytes placed on QLC as data older than the run (:meth:`place_aged`).
        self.aged_B = 0.0
        self.qlc_phys_written_B = np.zeros(len(self.qlc))
        self._stripe_fill_B = 0.0
        self._stripe_c = 1.0
        self._stripe_drives: IntArray = np.arange(spec.ec_data + spec.ec_parity, dtype=np.int64)
        self._stripes = 0
        #: Position (in :attr:`qlc_in_service`) where the next rotated stripe starts.
        self._next_pos = 0
        #: Drive sets of completed and open stripes: (first drive, width, compressed fraction).
        #: Stripes a fast-forward places in bulk (:data:`BULK_STRIPES`) are counted, not logged.
        self.stripe_log: list[tuple[int, int, float]] = []
        #: Drives out of service (failed, rebuilt or not, and not yet replaced), by index.
        self.scm_out: set[int] = set()
        self.qlc_out: set[int] = set()
        self._scm_in = np.arange(len(self.scm), dtype=np.int64)
        self._qlc_in = np.arange(len(self.qlc), dtype=np.int64)
        self._service_version = 0
        #: QLC drives out of service whose strips the rebuild has not re-created yet.
        self.qlc_lost: set[int] = set()
        #: Share [0, 1] of the lost strips the running rebuilds have re-created so far
        #: (the owner of the rebuilds sets it: :class:`~flashsim.components.tier_life.TierLife`).
        self.rebuild_progress: Callable[[], float] = lambda: 0.0
        self.geometry = ArrayGeometry.erasure(
            spec.ec_data, spec.ec_parity, len(self.qlc), float(spec.read_chunk)
        )
        self.buffer = FluidBuffer(
            sim,
            f"{name}.scm_buffer",
            capacity_B=spec.write_buffer,
            drain_start_B=spec.migrate_above * spec.write_buffer,
            drain_path=self._migration_path,
            on_drained=self._on_migrated,
            drain_priority=migration_priority,
        )

    # ---------------------------------------------------------------- service
    @property
    def scm_in_service(self) -> IntArray:
        """Indices of the SCM drives in service."""
        return self._scm_in

    @property
    def qlc_in_service(self) -> IntArray:
        """Indices of the QLC drives in service."""
        return self._qlc_in

    def take_out(self, medium: Literal["scm", "qlc"], drive: int) -> None:
        """Drive ``drive`` of ``medium`` fails: new bytes avoid it from now on.

        The strips a failed QLC drive held are lost until :meth:`rebuilt` says
        its rebuild has re-created them: reads of them are reconstructed from
        the survivors (:meth:`degraded_reads`).  Flows started before keep
        their paths (flow fidelity); the migration's drain restarts on its new
        path at the next re-solve.
        """
        out, count = (
            (self.scm_out, len(self.scm)) if medium == "scm" else (self.qlc_out, len(self.qlc))
        )
        if not 0 <= drive < count:
            raise ValueError(f"{self.name}: {medium} drive {drive} does not exist (0..{count - 1})")
        if drive in out:
            return
        out.add(drive)
        self._update_service()
        if medium == "qlc":
            self.qlc_lost.add(drive)
            for loc in self.qlc_objects.values():
                lost = float(loc.phys_read_B[drive])
                if lost > 0:
                    if loc.lost_B is None:
                        loc.lost_B = np.zeros(len(self.qlc))
                    loc.lost_B[drive] += lost
                    loc.phys_read_B[drive] = 0.0

    def rebuilt(self, drive: int) -> None:
        """The rebuild of QLC drive ``drive`` ended: its strips live on the survivors now.

        Each object's strips that sat on it are read once from where the
        rebuild wrote them (the free space of the QLC drives in service,
        evenly: :func:`~flashsim.components.rebuild.rebuild_traffic`'s writes).
        """
        if drive not in self.qlc_lost:
            return
        self.qlc_lost.discard(drive)
        if drive not in self.qlc_out:  # replaced meanwhile: it takes new stripes from now on
            self._update_service()
        dest = self._rebuild_destinations([drive])
        for loc in self.qlc_objects.values():
            if loc.lost_B is None or not loc.lost_B[drive] > 0:
                continue
            loc.phys_read_B += float(loc.lost_B[drive]) * dest
            loc.lost_B[drive] = 0.0
            if not loc.lost_B.any():
                loc.lost_B = None

    def _rebuild_destinations(self, failed: Sequence[int]) -> FloatArray:
        """Share of a rebuilt strip each QLC drive received (the rebuild's writes; sums to 1)."""
        down = sorted(set(failed) | self._qlc_down())
        if len(down) >= len(self.qlc):
            return np.full(len(self.qlc), 1.0 / len(self.qlc))
        write = rebuild_traffic(self.geometry, down).write_per_B
        return np.asarray(write / write.sum(), dtype=np.float64)

    def degraded_state(self) -> DegradedState | None:
        """The erasure-coded QLC pool's failed, not yet rebuilt drives (``None``: none).

        One :class:`~flashsim.components.rebuild.DegradedState` over every QLC
        drive, its ``rebuilt_fraction`` the running rebuilds' progress
        (:attr:`rebuild_progress`) and its decode rate the CNode's
        (``tier.rebuild.decode_bandwidth``).
        """
        if not self.qlc_lost:
            return None
        progress = min(1.0, max(0.0, float(self.rebuild_progress())))
        return DegradedState(
            self.geometry,
            sorted(self.qlc_lost),
            rebuilt_fraction=progress,
            decode_Bps=float(self.spec.rebuild.decode_bandwidth),
        )

    def migrating(self) -> bool:
        """Whether the SCM buffer sits at its hold level, so every new byte is migrated too
        (its level as of the buffer's last sync)."""
        buf = self.buffer
        return bool(buf.level_B >= buf.drain_start_B * (1.0 - 1e-6))

    def full_stripe(self, size_B: float) -> bool:
        """Whether one read of ``size_B`` logical bytes covers a whole stripe's data."""
        return size_B >= float(self.spec.stripe_size)

    def degraded_reads(self, qlc_w: FloatArray, size_B: float) -> tuple[FloatArray, float]:
        """Expected QLC drive reads of a read laid out as ``qlc_w``, and its decode time.

        Parameters
        ----------
        qlc_w : numpy.ndarray
            Physical bytes per QLC drive per logical byte where the data lives
            (:meth:`read_weights`: lost strips still on their failed drive).
        size_B : float
            Logical bytes one read (RPC) fetches: a read covering a whole
            stripe reconstructs a lost strip from one parity strip, a smaller
            one from ``ec_data`` strips (:meth:`DegradedState.stage_loss
            <flashsim.components.rebuild.DegradedState.stage_loss>`).

        Returns
        -------
        reads : numpy.ndarray
            Physical bytes read from each QLC drive per logical byte: a lost
            strip's share ``q`` (not rebuilt yet: ``1 - rebuilt_fraction``)
            costs ``k`` reads of the same size on the survivors holding the
            object's other strips (in proportion to its bytes there), the
            rebuilt share one read where the rebuild wrote it; healthy
            drives' weights unchanged.  Equal to ``qlc_w`` on a healthy pool.
        decode_s : float
            Expected CNode decode time (s) of one read of ``size_B`` bytes of
            the data: its lost share times ``k * size_B`` survivor bytes over
            ``decode_bandwidth`` (one core's rate).
        """
        state = self.degraded_state()
        failed = [] if state is None else [f for f in state.failed if qlc_w[f] > 0]
        if state is None or not failed:
            return qlc_w, 0.0
        out = qlc_w.copy()
        lost = float(out[failed].sum())
        out[failed] = 0.0
        survivors = self._survivors(out)
        survivors /= survivors.sum()
        unrebuilt = 1.0 - state.rebuilt_fraction
        _, replace = state.stage_loss("read", self.full_stripe(size_B))
        out += lost * unrebuilt * replace * survivors
        out += lost * state.rebuilt_fraction * self._rebuild_destinations(failed)
        total = float(qlc_w.sum())
        decode_s = 0.0
        if total > 0:
            q = lost / total * unrebuilt  # share of the QLC bytes read that is reconstructed
            decode_s = q * state.geometry.data * size_B / state.decode_Bps
        return out, decode_s

    def reconstruct(
        self, drive: int, size_B: float, weights: FloatArray, rng: np.random.Generator
    ) -> tuple[list[int], float]:
        """Request fidelity: the QLC drives a read of ``size_B`` bytes on ``drive`` visits.

        Returns the drives and the CNode decode time (s).  ``[drive]`` (no
        decode) when its strips are whole; when ``drive`` failed and its
        rebuild has not re-created the strip (drawn against the
        ``rebuilt_fraction``), the ``k`` survivors (one for a full-stripe read)
        holding the object's other strips, drawn distinct by ``weights`` (the
        object's layout), and ``k * size_B / decode_bandwidth`` of decode
        (:meth:`DegradedState.decode_s <flashsim.components.rebuild.DegradedState.decode_s>`
        of a lost read); a re-created strip is read once where the rebuild
        wrote it (a drive in service, drawn).
        """
        state = self.degraded_state()
        if state is None or drive not in state.failed:
            return [drive], 0.0
        if rng.random() < state.rebuilt_fraction:
            dest = np.cumsum(self._rebuild_destinations([drive]))
            pick = int(np.searchsorted(dest, rng.random() * dest[-1], side="right"))
            return [min(pick, len(self.qlc) - 1)], 0.0
        count = len(state.replacement(drive, "read", self.full_stripe(size_B)))
        decode_s = state.geometry.data * size_B / state.decode_Bps
        p = self._survivors(weights)
        live = np.flatnonzero(p > 0)
        # fewer drives hold the stripe than it needs: some are read twice
        picks = rng.choice(live, size=count, replace=live.size < count, p=p[live] / p[live].sum())
        return [int(i) for i in picks], decode_s

    def _survivors(self, weights: FloatArray) -> FloatArray:
        """``weights`` (a copy) on the QLC drives in service only, unnormalised.

        When nothing of it is stored on a drive in service, the stripe's drives
        in service, equally (1 each).
        """
        p = np.asarray(weights, dtype=np.float64).copy()
        p[sorted(self._qlc_down())] = 0.0
        if not p.sum() > 0:
            p = np.zeros(len(self.qlc))
            p[self._qlc_in] = 1.0
        return p

    def put_back(self, medium: Literal["scm", "qlc"], drive: int) -> None:
        """A fresh, empty drive replaces ``drive`` of ``medium``: new bytes may use it again.

        Strips it held that are not rebuilt yet stay lost until :meth:`rebuilt`
        (the rebuild goes on into the survivors' free space); until then a QLC
        drive takes no new stripe.
        """
        out = self.scm_out if medium == "scm" else self.qlc_out
        if drive in out:
            out.discard(drive)
            self._update_service()
        if medium == "qlc":
            self.qlc_phys_written_B[drive] = 0.0

    def _qlc_down(self) -> set[int]:
        """QLC drives taking no new stripe: out, or replaced before their rebuild ended."""
        return self.qlc_out | self.qlc_lost

    def _update_service(self) -> None:
        """Recompute the drives in service (all of a medium if none is left: data is lost).

        A QLC drive replaced while its strips are still being rebuilt takes new
        stripes once the rebuild has ended (:meth:`rebuilt`).
        """
        scm = [i for i in range(len(self.scm)) if i not in self.scm_out]
        down = self._qlc_down()
        qlc = [i for i in range(len(self.qlc)) if i not in down]
        self._scm_in = np.array(scm or range(len(self.scm)), dtype=np.int64)
        self._qlc_in = np.array(qlc or range(len(self.qlc)), dtype=np.int64)
        self._service_version += 1

    def _scm_live(self) -> list[Resource]:
        return [self.scm[i] for i in self._scm_in] if self.scm_out else self.scm

    def _scm_links_live(self) -> list[tuple[Resource, Resource]]:
        """PCIe links (up, down) of the SCM drives in service (none when not modelled)."""
        if not self.scm_links:
            return []
        return [self.scm_links[i] for i in self._scm_in] if self.scm_out else self.scm_links

    # ---------------------------------------------------------------- geometry
    def compressed_fraction(self, obj: str) -> float:
        """Compressed over logical size of ``obj``'s data."""
        return compressed_fraction(self._entropy_of(obj), self.spec.min_compressed_fraction)

    def stripe_width(self, c: float) -> int:
        """QLC drives a stripe compressed to fraction ``c`` spans (see TierSpec.stripe_width)."""
        return self.spec.stripe_width(c)

    def _drive_set(self, pos: int, width: int) -> IntArray:
        """Drives of a stripe of ``width`` starting at position ``pos`` of the drives in service."""
        live = self._qlc_in
        return live[(pos + np.arange(width, dtype=np.int64)) % max(live.size, 1)]

    def _mean_drive_weights(self, c: float) -> FloatArray:
        """Share of a stripe's physical bytes each QLC drive gets, averaged over placements."""
        n = len(self.qlc)
        live = self._qlc_in
        width = self.stripe_width(c)
        if self.spec.placement == "rotate":
            if not self._qlc_down():
                return np.full(n, 1.0 / n)
            weights = np.zeros(n)
            weights[live] = 1.0 / max(live.size, 1)
            return weights
        weights = np.zeros(n)
        drives = self._drive_set(0, width)
        weights[drives] = 1.0 / drives.size
        return weights

    # ------------------------------------------------------------------ paths
    def ingest_path(self, share: float = 1.0) -> list[tuple[Resource, float]]:
        """Tier resources crossed by one user byte written (gate, SCM replicas, their links).

        ``share``: the part of a flow's bytes that comes to this tier (a flow
        striped over several tiers; :meth:`FluidBuffer.add_ingest
        <flashsim.components.fluid.FluidBuffer.add_ingest>` with the same share).
        """
        live = self._scm_live()
        each = share * self.spec.scm_copies * self.scm_write_cost / len(live)
        path = [*self.buffer.ingest_path(share), *((r, each) for r in live)]
        links = self._scm_links_live()
        if links:
            down = share * self.spec.scm_copies / len(links)
            path += [(link, down) for _, link in links]
        return path

    def _migration_path(self, head: str) -> DrainPath:
        c = self.compressed_fraction(head)
        width = self.stripe_width(c)
        live = self._scm_live()
        path: list[tuple[Resource, float]] = [(r, 1.0 / len(live)) for r in live]
        phys = c * width / (width - self.spec.ec_parity)  # physical QLC bytes per logical byte
        per_byte_qlc = phys * self.qlc_write_cost
        weights = self._mean_drive_weights(c)
        path += [(r, per_byte_qlc * w) for r, w in zip(self.qlc, weights, strict=True) if w > 0]
        links = self._scm_links_live()
        if links:
            path += [(up, 1.0 / len(links)) for up, _ in links]
        if self.qlc_links:
            path += [
                (down, phys * w)
                for (_, down), w in zip(self.qlc_links, weights, strict=True)
                if w > 0
            ]
        path += self._migration_extra(c)
        key: tuple[float, ...] = (round(c, 9),)
        if self._service_version:
            key = (*key, float(self._service_version))
        return DrainPath(path, key=key)

    # ---------------------------------------------------------------- location
    def _on_migrated(self, pieces: Pieces) -> None:
        m = self.spec.ec_parity
        stripe_B = self.spec.stripe_size
        for obj, b in pieces:
            left = b
            while left > 0:
                if self._stripe_fill_B <= 0:
                    if left >= BULK_STRIPES * stripe_B:
                        left -= self._migrate_bulk(obj, int(left // stripe_B))
                        continue
                    self._open_stripe(obj)
                room = stripe_B - self._stripe_fill_B
                take = min(left, room)
                c = self._stripe_c
                drives = self._stripe_drives
                width = drives.size
                loc = self._location_of(obj)
                loc.logical_B += take
                loc.phys_read_B[drives] += take * c / width
                self.qlc_phys_written_B[drives] += take * c / (width - m)
                self.migrated_B += take
                self._stripe_fill_B += take
                left -= take
                if self._stripe_fill_B >= stripe_B * (1.0 - 1e-12):
                    self._stripe_fill_B = 0.0

    def _location_of(self, obj: str) -> QlcLocation:
        loc = self.qlc_objects.get(obj)
        if loc is None:
            loc = QlcLocation(0.0, np.zeros(len(self.qlc)))
            self.qlc_objects[obj] = loc
        return loc

    def _migrate_bulk(self, obj: str, stripes: int) -> float:
        """Place ``stripes`` whole stripes of ``obj`` at once, as one by one would; returns bytes.

        Rotated stripes of width ``w`` over the ``n`` drives in service cover
        ``stripes * w`` strips from the next start position: every drive gets
        ``stripes * w // n`` of them and the first ``stripes * w % n`` after
        the start one more.  Packed stripes all land on the first ``w`` drives.
        """
        c = self.compressed_fraction(obj)
        width = self.stripe_width(c)
        live = self._qlc_in
        n = max(live.size, 1)
        counts = np.zeros(len(self.qlc))
        if self.spec.placement == "rotate":
            total = stripes * width
            pos = self._next_pos % n
            extra = ((np.arange(n) - pos) % n) < total % n
            counts[live] = total // n + extra
            self._next_pos = (pos + total) % n
        else:
            counts[self._drive_set(0, width)] = stripes
        size_B = stripes * float(self.spec.stripe_size)
        strip_B = float(self.spec.stripe_size) * c
        loc = self._location_of(obj)
        loc.logical_B += size_B
        loc.phys_read_B += counts * strip_B / width
        self.qlc_phys_written_B += counts * strip_B / (width - self.spec.ec_parity)
        self.migrated_B += size_B
        self._stripes += stripes
        self._stripe_c = c
        return size_B

    def _open_stripe(self, obj: str) -> None:
        c = self.compressed_fraction(obj)
        width = self.stripe_width(c)
        n = max(self._qlc_in.size, 1)
        pos = self._next_pos % n if self.spec.placement == "rotate" and self._stripes > 0 else 0
        self._stripe_c = c
        self._stripe_drives = self._drive_set(pos, width)
        self._next_pos = (pos + width) % n
        self._stripes += 1
        self.stripe_log.append((int(self._stripe_drives[0]), width, c))

    # -------------------------------------------------------------- fast-forward
    def fast_forward(self, obj: str, size_B: float) -> float:
        """``size_B`` user bytes of ``obj`` written over time no flow simulates (fluid model).

        The buffer's own policy, integrated over that time: the bytes arrive,
        the migration brings the level to ``migrate_above`` of the buffer (it
        stays lower if the bytes do not reach it), and everything above it
        migrates to QLC in arrival order (what earlier phases left in SCM
        first), compressed by
        ``obj``'s entropy, striped and wearing the drives as a simulated
        migration does.  Returns the bytes migrated.
        """
        if not (size_B >= 0 and math.isfinite(size_B)):
            raise ValueError(f"{self.name}: size_B(={size_B}) must be a finite number >= 0")
        buf = self.buffer
        level = buf.level_now_B()
        over = max(0.0, level + size_B - buf.drain_start_B)
        # The oldest bytes leave first: those held now, then the oldest of the new ones.
        moved = buf.drain_now(min(over, level)) if over > 0 else 0.0
        if size_B > 0:
            buf.add_bytes(obj, size_B)
        if over > moved:
            moved += buf.drain_now(over - moved)
        return moved

    def drain_all(self) -> float:
        """Migrate everything the buffer holds to QLC at once (a reset); returns the bytes."""
        return self.buffer.drain_now(self.buffer.level_now_B())

    def location(self, obj: str) -> tuple[float, float]:
        """Logical bytes of ``obj`` in SCM and in QLC now."""
        scm = self.buffer.bytes_of(obj)
        loc = self.qlc_objects.get(obj)
        return scm, (loc.logical_B if loc is not None else 0.0)

    def committed_B(self, obj: str) -> float:
        """Bytes of ``obj`` the tier holds (acknowledged writes): what a reader can see."""
        scm, qlc = self.location(obj)
        return scm + qlc

    def read_weights(self, obj: str) -> ReadWeights:
        """Where a read of ``obj`` goes, per logical byte.

        Returns
        -------
        scm_fraction : float
            Fraction of the object's bytes in SCM.
        qlc_weights : numpy.ndarray
            Physical bytes stored on each QLC drive per logical byte read: a
            failed drive's strips that are not rebuilt yet count on it (a read
            of them is reconstructed: :meth:`drive_path`, :meth:`degraded_reads`).
        qlc_fraction : float
            Fraction of the object's bytes in QLC.
        """
        scm, qlc = self.location(obj)
        total = scm + qlc
        if total <= 0:
            return 0.0, np.zeros(len(self.qlc)), 0.0
        loc = self.qlc_objects.get(obj)
        if loc is None:
            return scm / total, np.zeros(len(self.qlc)), qlc / total
        stored = loc.phys_read_B if loc.lost_B is None else loc.phys_read_B + loc.lost_B
        return scm / total, stored / total, qlc / total

    def place_aged(self, obj: str, size_B: float) -> None:
        """Put ``size_B`` logical bytes of ``obj`` on QLC as data written before the run.

        The bytes sit where the migration leaves data over many stripes:
        compressed by the object's entropy and spread as
        :meth:`_mean_drive_weights` says (every QLC drive alike with
        ``rotate`` placement, the first stripe's drives with ``packed``).  They
        were written before the run, so they add neither to :attr:`migrated_B`
        nor to the drives' wear (:attr:`qlc_phys_written_B`), only to
        :attr:`aged_B`.

        Parameters
        ----------
        obj : str
            The object (file).
        size_B : float
            Logical bytes (> 0).
        """
        if not (size_B > 0 and math.isfinite(size_B)):
            raise ValueError(f"{self.name}: aged size_B(={size_B}) must be a finite number > 0")
        c = self.compressed_fraction(obj)
        loc = self._location_of(obj)
        loc.logical_B += size_B
        loc.phys_read_B += size_B * c * self._mean_drive_weights(c)
        self.aged_B += size_B

    def read_path(self, obj: str, size_B: float = 0.0) -> list[tuple[Resource, float]]:
        """Drive resources a logical byte read of ``obj`` crosses, by where it lives now.

        ``size_B``: logical bytes per read (a degraded read of a whole stripe
        is reconstructed from fewer strips; :meth:`degraded_reads`).
        """
        return self.drive_path(*self.read_weights(obj), size_B=size_B)

    def drive_path(
        self, f_scm: float, qlc_w: FloatArray, f_qlc: float, size_B: float = 0.0
    ) -> list[tuple[Resource, float]]:
        """Drive resources a logical byte read crosses, given :meth:`read_weights`.

        Buffered bytes are read from the SCM drives in service (a failed
        drive's replica from its other copy); QLC bytes from their drives, a
        failed drive's strips reconstructed (:meth:`degraded_reads` with
        reads of ``size_B`` logical bytes).
        """
        reads, _ = self.degraded_reads(qlc_w, size_B)
        return self.drives_reading(f_scm, qlc_w, f_qlc, reads)

    def drives_reading(
        self, f_scm: float, qlc_w: FloatArray, f_qlc: float, reads: FloatArray
    ) -> list[tuple[Resource, float]]:
        """:meth:`drive_path` given the QLC drive reads :meth:`degraded_reads` gave for ``qlc_w``.

        For a caller that needs those reads (or the decode time) too: one
        :meth:`degraded_reads` serves both.
        """
        path: list[tuple[Resource, float]] = []
        if f_scm > 0:
            live = self._scm_live()
            weight = f_scm / len(live) / self.spec.scm_read_efficiency
            path += [(r, weight) for r in live]
            links = self._scm_links_live()
            path += [(up, f_scm / len(links)) for up, _ in links]
        path += [(r, float(w)) for r, w in zip(self.qlc, reads, strict=True) if w > 0]
        if self.qlc_ops and f_qlc > 0:
            c = float(qlc_w.sum()) / f_qlc  # physical bytes per logical byte on QLC
            path += [(r, float(w) / c) for r, w in zip(self.qlc_ops, reads, strict=True) if w > 0]
        if self.qlc_links:
            path += [
                (up, float(w)) for (up, _), w in zip(self.qlc_links, reads, strict=True) if w > 0
            ]
        return path

    def forget(self, obj: str) -> None:
        """Drop ``obj``'s QLC location (file deleted); its SCM bytes migrate as garbage."""
        self.qlc_objects.pop(obj, None)

    def check(self) -> TierCheck:
        """Exact accounting now: ingested = in SCM + migrated (logical bytes)."""
        buf = self.buffer.check()
        return TierCheck(
            ingested_B=buf.ingested_B,
            scm_B=buf.level_B,
            migrated_B=self.migrated_B,
            qlc_objects_B=sum(loc.logical_B for loc in self.qlc_objects.values()),
            buffer=buf,
            aged_B=self.aged_B,
        )
