"""A degraded array: which drives are lost, what reads and writes cost, and the rebuild.

Written once for every redundant layout (:class:`ArrayGeometry`):

* ``declustered`` parity (GridRAID-like RAID6 ``k + p`` with distributed spare
  over ``n`` drives): every stripe with a chunk on a failed drive rebuilds it
  from ``k`` survivors spread over all ``n - f`` survivors and writes it into
  the distributed spare space of the survivors, so each survivor reads
  ``k / (n - f)`` and writes ``1 / (n - f)`` bytes per rebuilt byte and the
  rebuild takes ``used * (k / read_Bps + 1 / write_Bps) / (n - f)`` on idle
  drives (:func:`rebuild_time_s`);
* ``grouped`` parity (classic RAID6 in fixed groups of ``k + p`` drives): the
  ``k + p - 1`` survivors of the failed drive's group are read and the
  replacement drive in the failed slot is written, so its write bandwidth
  bounds the rebuild;
* ``mirror`` (RAID10): the partner drive is copied to the replacement, one
  drive's bandwidth bounds the resync;
* ``erasure`` (VAST-like ``k + m`` stripes over many drives): reconstructs as
  declustered parity does, into free space on every survivor.

Degraded operations (:class:`DegradedState`): a read of a chunk on a failed,
not yet rebuilt drive is reconstructed from ``k`` survivors (``k`` drive reads
of the same size, plus decode time on the RAID engine: ``k`` times the bytes
over the engine's decode bandwidth); a full-stripe read already reads the
stripe's other ``k - 1`` data chunks, so a lost chunk there costs one parity
read.  A mirror reads the partner.  A write whose chunk sits on a failed drive
is skipped (parity still updated) unless the layout has distributed spare
space, where it lands in the spare at the same cost.

Fidelity: degraded operation costs are the same expected drive operations in
both fidelities (flow weights from :meth:`DegradedState.mean_factor`; request
fidelity draws which chunks are lost and reconstructs them drive by drive).
The rebuild's own traffic is a background flow on the drives' resources
(:class:`RebuildFlows`), flow fidelity only: foreground flows share the drives
with it and both the foreground bandwidth during the rebuild and the rebuild
time come out of the max-min solve.

Rebuild-rate policy (:class:`RebuildPolicy`): the rebuild is guaranteed
``priority`` of the array's drive time when foreground I/O wants the rest
(mdadm's ``speed_limit_min``), and may take up to ``idle_fraction`` of what the
foreground leaves idle (``speed_limit_max``), optionally capped at ``max_rate``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt
import simpy
from pydantic import Field, model_validator

from flashsim.components.raid import RaidSpec
from flashsim.config import Bandwidth, StrictModel, field_error
from flashsim.engine.flows import Flow, FlowNetwork, Resource

Layout = Literal["declustered", "grouped", "mirror", "erasure"]
OpKind = Literal["read", "write"]
FloatArray = npt.NDArray[np.float64]

#: Max-min priority of the guaranteed part of a rebuild: far above any foreground flow's, so
#: it takes its guaranteed rate first (strict priority up to its cap).
GUARANTEED_PRIORITY = 1e6
#: Max-min priority of the opportunistic part: far below any foreground flow's, so it takes
#: only drive time the foreground leaves idle.
IDLE_PRIORITY = 1e-6


class RebuildPolicy(StrictModel):
    """How fast an array rebuilds against the foreground I/O it serves.

    Attributes
    ----------
    priority : float
        Share (0, 1] of the array's drive time the rebuild is guaranteed when
        foreground I/O wants all of it (dimensionless).
    idle_fraction : float
        Share [priority, 1] of the array's drive time the rebuild may take in
        all, using what the foreground leaves idle (dimensionless).
    max_rate : float or None
        Cap on the rebuild rate (bytes/s of reconstructed data), or ``None``.
    decode_bandwidth : float
        Survivor bytes/s the target's RAID engine decodes (all its threads).
    """

    priority: float = Field(
        0.3,
        description=(
            "Share (0, 1] of the array's drive time the rebuild is guaranteed under foreground "
            "load. ASSUMED default 30 %: Broadcom MegaRAID's default rebuild rate (storcli "
            "`set rebuildrate`)."
        ),
    )
    idle_fraction: float = Field(
        1.0,
        description=(
            "Share [priority, 1] of the drive time the rebuild may take in all, from what the "
            "foreground leaves idle (mdadm speed_limit_max as a fraction)."
        ),
    )
    max_rate: Bandwidth | None = Field(
        None, description="Cap on the rebuild rate, bytes/s of reconstructed data (none: no cap)."
    )
    decode_bandwidth: Bandwidth = Field(
        "20 GB/s",
        description=(
            "Survivor bytes/s the target's RAID engine decodes for reconstruction. ASSUMED: "
            "about one core's AVX2 RAID6 syndrome/XOR rate in the Linux raid6 library's "
            "boot-time benchmark on a Zen 2 server."
        ),
    )

    @model_validator(mode="after")
    def _fractions(self) -> RebuildPolicy:
        """``0 < priority <= idle_fraction <= 1``."""
        if not 0.0 < self.priority <= 1.0:
            raise field_error(
                "priority", "must be in (0, 1]: the share of drive time the rebuild is guaranteed"
            )
        if not self.priority <= self.idle_fraction <= 1.0:
            raise field_error(
                "idle_fraction", f"must lie between priority (={self.priority}) and 1"
            )
        return self


def check_priority(priority: float) -> None:
    """Raise ``ValueError`` unless ``0 < priority <= 1``."""
    if not (0.0 < priority <= 1.0):
        raise ValueError(
            f"rebuild priority(={priority}) must be in (0, 1]: the share of drive time the "
            "rebuild is guaranteed"
        )


@dataclass(frozen=True)
class ArrayGeometry:
    """Redundancy geometry of one array, for failures and rebuild.

    Attributes
    ----------
    layout : {"declustered", "grouped", "mirror", "erasure"}
    drives : int
        Drives in the array (``n``).
    data : int
        Data chunks per stripe (``k``; 1 for a mirror).
    redundancy : int
        Failures a stripe survives (parity chunks, or mirrors - 1).
    spares : int
        Distributed spare drives' worth of space (declustered layouts).
    chunk_B : float
        Bytes per chunk (the unit a rebuild reconstructs).
    """

    layout: Layout
    drives: int
    data: int
    redundancy: int
    spares: int = 0
    chunk_B: float = 128 * 1024.0

    def __post_init__(self) -> None:
        if self.drives < self.data + self.redundancy:
            raise ValueError(
                f"{self.layout} array: {self.drives} drives cannot hold a stripe of "
                f"{self.data} + {self.redundancy} chunks"
            )
        if self.data < 1 or self.redundancy < 0 or self.chunk_B <= 0:
            raise ValueError(
                f"{self.layout} array: data(={self.data}) must be >= 1, redundancy"
                f"(={self.redundancy}) >= 0 and chunk_B(={self.chunk_B}) > 0"
            )

    @classmethod
    def of_raid(cls, raid: RaidSpec, drives: int) -> ArrayGeometry:
        """The geometry of a :class:`~flashsim.components.raid.RaidSpec` over ``drives`` drives."""
        if raid.level == "raid6":
            layout: Layout = "declustered" if raid.declustered else "grouped"
            return cls(layout, drives, raid.data, raid.parity, raid.spares, float(raid.chunk))
        if raid.level == "raid10":
            return cls("mirror", drives, 1, raid.mirrors - 1, raid.spares, float(raid.chunk))
        return cls("declustered", drives, raid.data, 0, 0, float(raid.chunk))

    @classmethod
    def erasure(cls, data: int, parity: int, drives: int, chunk_B: float) -> ArrayGeometry:
        """VAST-like ``data + parity`` erasure-coded stripes spread over ``drives`` drives."""
        return cls("erasure", drives, data, parity, 0, chunk_B)

    @property
    def width(self) -> int:
        """Drives one stripe (or mirror set) touches."""
        return self.data + self.redundancy

    def check_drive(self, index: int) -> None:
        """Raise ``ValueError`` unless ``index`` names a drive of the array."""
        if not (isinstance(index, (int, np.integer)) and 0 <= index < self.drives):
            raise ValueError(
                f"failed drive index(={index}) is outside the array's drives 0..{self.drives - 1}"
            )

    def group(self, index: int) -> range:
        """Drives of the fixed group (mirror set, RAID group) of drive ``index``."""
        start = index // self.width * self.width
        return range(start, min(start + self.width, self.drives))

    def partner(self, index: int) -> int:
        """A mirror's surviving copy of drive ``index`` (the next drive of its set)."""
        g = self.group(index)
        return g.start + (index - g.start + 1) % len(g)

    def has_distributed_spare(self) -> bool:
        """Rebuilt and new chunks land in spare space on every survivor."""
        return self.layout == "erasure" or (self.layout == "declustered" and self.spares > 0)

    def reconstruct_reads(self, full_stripe: bool) -> int:
        """Drive reads that replace one read of a lost chunk.

        ``k`` for parity and erasure codes (1 when the read already covers the
        stripe's other data chunks: the parity chunk), 1 for a mirror (its partner).
        """
        if self.layout == "mirror":
            return 1
        return 1 if full_stripe else self.data

    def data_lost(self, failed: Sequence[int]) -> bool:
        """Whether drives ``failed`` (concurrently down) lose data.

        Declustered and erasure layouts spread every stripe over all drives, so
        any ``redundancy + 1`` failures lose some stripe; fixed groups lose
        data only when one group has more.
        """
        down = set(int(i) for i in failed)
        for i in down:
            self.check_drive(i)
        if self.layout in ("declustered", "erasure"):
            return len(down) > self.redundancy
        groups: dict[int, int] = {}
        for i in down:
            groups[i // self.width] = groups.get(i // self.width, 0) + 1
        return any(count > self.redundancy for count in groups.values())


@dataclass(frozen=True)
class RebuildTraffic:
    """Drive bytes one reconstructed byte costs, per drive of the array.

    Attributes
    ----------
    read_per_B, write_per_B : ndarray, shape (drives,)
        Bytes read from / written to each drive per rebuilt byte.
    """

    read_per_B: FloatArray
    write_per_B: FloatArray


def rebuild_traffic(geometry: ArrayGeometry, failed: Sequence[int]) -> RebuildTraffic:
    """Where the rebuild of drives ``failed`` reads and writes (per rebuilt byte).

    Declustered and erasure layouts read ``k`` bytes per rebuilt byte spread
    evenly over the survivors and write into spare space on the survivors
    (or into the replacement drive in the failed slot when there is no spare
    space); a fixed group reads ``k`` over its survivors and writes the
    replacement; a mirror copies its partner to the replacement.
    """
    if not failed:
        raise ValueError("rebuild_traffic: no failed drive to rebuild")
    n = geometry.drives
    down = sorted(set(int(i) for i in failed))
    for i in down:
        geometry.check_drive(i)
    read = np.zeros(n)
    write = np.zeros(n)
    alive = np.ones(n, dtype=bool)
    alive[down] = False
    share = 1.0 / len(down)  # each failed drive's part of a rebuilt byte
    for f in down:
        if geometry.layout in ("declustered", "erasure"):
            read[alive] += share * geometry.data / alive.sum()
            if geometry.has_distributed_spare():
                write[alive] += share / alive.sum()
            else:
                write[f] += share
            continue
        members = [d for d in geometry.group(f) if alive[d]]
        if geometry.layout == "mirror":
            read[geometry.partner(f) if alive[geometry.partner(f)] else members[0]] += share
        else:
            read[members] += share * geometry.data / len(members)
        write[f] += share
    return RebuildTraffic(read, write)


def rebuild_time_s(
    geometry: ArrayGeometry,
    failed: Sequence[int],
    used_B: float,
    read_Bps: float,
    write_Bps: float,
    fraction: float = 1.0,
) -> float:
    """Analytic rebuild time (s) of drives ``failed`` on drives given ``fraction`` of their time.

    Parameters
    ----------
    geometry : ArrayGeometry
    failed : sequence of int
        Failed drive indices.
    used_B : float
        Bytes each failed drive held (B).
    read_Bps, write_Bps : float
        Per-drive read and write bandwidth (bytes/s).
    fraction : float
        Share (0, 1] of each drive's time the rebuild gets.

    Declustered parity: ``used * (k / read_Bps + 1 / write_Bps) / (n - f)`` for one
    failure; the busiest drive's data time in general.
    """
    check_priority(fraction)
    if used_B < 0:
        raise ValueError(f"used_B(={used_B}) must be >= 0")
    traffic = rebuild_traffic(geometry, failed)
    volume = used_B * len(set(failed))
    busy = volume * (traffic.read_per_B / read_Bps + traffic.write_per_B / write_Bps)
    return float(busy.max()) / fraction


@dataclass
class DegradedState:
    """Failed drives of one array and how far their rebuild has come.

    Attributes
    ----------
    geometry : ArrayGeometry
    failed : list of int
        Failed drive indices (distinct).
    rebuilt_fraction : float
        Share [0, 1] of the lost chunks already rebuilt (those are read from
        where the rebuild put them).
    decode_Bps : float
        Survivor bytes/s the RAID engine decodes (the engine's time per lost chunk).
    """

    geometry: ArrayGeometry
    failed: list[int] = field(default_factory=list)
    rebuilt_fraction: float = 0.0
    decode_Bps: float = math.inf

    def __post_init__(self) -> None:
        for i in self.failed:
            self.geometry.check_drive(i)
        if len(set(self.failed)) != len(self.failed):
            raise ValueError(f"failed drives {self.failed} are not distinct")
        if not 0.0 <= self.rebuilt_fraction <= 1.0:
            raise ValueError(f"rebuilt_fraction(={self.rebuilt_fraction}) must be in [0, 1]")
        if not self.decode_Bps > 0:
            raise ValueError(f"decode_Bps(={self.decode_Bps}) must be > 0")

    @property
    def lost(self) -> float:
        """Probability that a chunk sits on a failed drive and is not rebuilt yet."""
        return len(self.failed) / self.geometry.drives * (1.0 - self.rebuilt_fraction)

    @property
    def survivors(self) -> list[int]:
        """Drives still serving I/O."""
        down = set(self.failed)
        return [i for i in range(self.geometry.drives) if i not in down]

    def data_lost(self) -> bool:
        """More failures than the layout tolerates (see :meth:`ArrayGeometry.data_lost`)."""
        return self.geometry.data_lost(self.failed)

    def stage_loss(self, op: OpKind, spread: bool) -> tuple[float, int]:
        """(probability an operation's chunk is lost, drive operations replacing it).

        Reads reconstruct (:meth:`ArrayGeometry.reconstruct_reads`); writes of a
        lost chunk are skipped, or cost the same in spare space.
        """
        if op == "read":
            return self.lost, self.geometry.reconstruct_reads(full_stripe=spread)
        if self.geometry.has_distributed_spare():
            return 0.0, 1
        return self.lost, 0

    def mean_factor(self, op: OpKind, spread: bool) -> float:
        """Expected drive operations per healthy one (``1 - q + q * replacement``)."""
        q, replace = self.stage_loss(op, spread)
        return 1.0 - q + q * replace

    def decode_s(self, op: OpKind, size_B: float, count: float) -> float:
        """Expected RAID-engine time (s) decoding ``count`` reads of ``size_B`` bytes."""
        if op != "read" or self.geometry.layout == "mirror":
            return 0.0
        return count * self.lost * self.geometry.data * size_B / self.decode_Bps

    def shares(self, op: OpKind) -> FloatArray:
        """Each drive's share of the array's drive operations (sums to 1).

        Survivors share evenly; a mirror's partner also takes the failed
        drive's reads.
        """
        n = self.geometry.drives
        out = np.zeros(n)
        alive = self.survivors
        if self.geometry.layout == "mirror" and op == "read":
            out[alive] = 1.0 / n
            for f in self.failed:
                p = self.geometry.partner(f)
                if p in alive:
                    out[p] += 1.0 / n
            out /= out.sum()
            return out
        out[alive] = 1.0 / len(alive)
        return out

    def replacement(self, drive: int, op: OpKind, spread: bool) -> list[int]:
        """Request fidelity: drives that serve an operation landing on a lost ``drive``.

        Returns the partner for a mirror read, ``k`` survivors for a parity
        read (1 for a full-stripe read), one survivor for a write into spare
        space, none for a skipped write; the caller draws the survivors.
        """
        _, count = self.stage_loss(op, spread)
        if self.geometry.layout == "mirror" and op == "read":
            return [self.geometry.partner(drive)]
        return [-1] * count  # -1: any survivor, drawn by the caller


class RebuildFlows:
    """A rebuild running as background flows on an array's drives (flow fidelity).

    Two flows along the same path carry the reconstructed bytes: a guaranteed
    one at strict priority capped at ``priority`` of the rate the rebuild
    reaches alone, and an opportunistic one at the lowest priority capped at
    ``idle_fraction - priority`` of it (and ``max_rate`` caps both together).
    The rebuild ends when they have moved ``volume_B`` between them; a rate
    listener predicts that moment exactly (rates are constant between solves).

    Parameters
    ----------
    network : FlowNetwork
    name : str
        Dotted name; flows are ``{name}.guaranteed`` and ``{name}.idle``.
    path : sequence of (Resource, float)
        Resources and weights per rebuilt byte (``op_size_B`` = ``chunk_B``).
    volume_B : float
        Bytes to reconstruct (> 0).
    alone_Bps : float
        Rate (bytes/s) the rebuild reaches on idle drives.
    policy : RebuildPolicy
    chunk_B : float
        Bytes per rebuild operation (one chunk).
    """

    def __init__(
        self,
        network: FlowNetwork,
        name: str,
        path: Sequence[tuple[Resource, float]],
        volume_B: float,
        alone_Bps: float,
        policy: RebuildPolicy,
        chunk_B: float,
    ) -> None:
        if not (volume_B > 0 and math.isfinite(volume_B)):
            raise ValueError(f"{name}: volume_B(={volume_B}) must be a finite number > 0")
        if not alone_Bps > 0:
            raise ValueError(f"{name}: alone_Bps(={alone_Bps}) must be > 0")
        self.network = network
        self.name = name
        self.volume_B = float(volume_B)
        self.start_s = float(network.env.now)
        self.end_s = math.nan
        self.done: simpy.Event = network.env.event()
        top = alone_Bps * policy.idle_fraction
        guaranteed = alone_Bps * policy.priority
        if policy.max_rate is not None:
            top = min(top, policy.max_rate)
            guaranteed = min(guaranteed, policy.max_rate)
        self.flows: list[Flow] = [
            network.start_flow(
                volume_B,
                path,
                rate_cap_Bps=guaranteed,
                op_size_B=chunk_B,
                priority=GUARANTEED_PRIORITY,
                name=f"{name}.guaranteed",
                cap_label="throttle: rebuild rate policy",
            )
        ]
        if top > guaranteed * (1 + 1e-9):
            self.flows.append(
                network.start_flow(
                    volume_B,
                    path,
                    rate_cap_Bps=top - guaranteed,
                    op_size_B=chunk_B,
                    priority=IDLE_PRIORITY,
                    name=f"{name}.idle",
                    cap_label="throttle: rebuild rate policy",
                )
            )
        self._token = 0
        network.add_rate_listener(self._on_rates)

    def moved_B(self) -> float:
        """Bytes reconstructed so far."""
        if not math.isnan(self.end_s):
            return self.volume_B
        return float(sum(f.size_B - f.remaining_B for f in self.flows))

    def progress(self) -> float:
        """Share [0, 1] of the rebuild done."""
        return min(self.moved_B() / self.volume_B, 1.0)

    def rate_Bps(self) -> float:
        """Current rebuild rate (bytes/s; 0 once done)."""
        if not math.isnan(self.end_s):
            return 0.0
        return float(sum(self.network.rate_now_Bps(f) for f in self.flows))

    def _on_rates(self) -> None:
        if not math.isnan(self.end_s):
            return
        left = self.volume_B - self.moved_B()
        if left <= self.volume_B * 1e-9:
            self.stop()  # a flow carried the last byte itself
            return
        self._token += 1
        rate = self.rate_Bps()
        if rate <= 0:
            return
        token = self._token
        timer = self.network.env.timeout(left / rate)
        timer.callbacks.append(lambda _ev: self._on_timer(token))

    def _on_timer(self, token: int) -> None:
        if token != self._token or not math.isnan(self.end_s):
            return
        if self.moved_B() < self.volume_B * (1 - 1e-9):
            self._on_rates()
            return
        self.stop()

    def stop(self) -> float:
        """End the rebuild now (done or abandoned); return the bytes reconstructed."""
        if not math.isnan(self.end_s):
            return self.volume_B
        moved = self.moved_B()
        for f in self.flows:
            if f.remaining_B > 0:  # still active (a finished flow has none left)
                self.network.cancel_flow(f)
        self.end_s = float(self.network.env.now)
        self._token += 1
        if moved >= self.volume_B * (1 - 1e-9):
            self.done.succeed(self)
        return moved
