"""Hard disk drives: seek, rotation and media transfer.

An access costs an average seek, half a revolution and the transfer at the
sustained media rate; the drive is one server.  With deep command queues the
drive reorders requests and hides most of the seek, so the random-IOPS
*ceiling* is one access per ``rotational latency + transfer`` (the estimate
seed 000 uses for Cori's ST4000NM0034 drives, footnote 3).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PrivateAttr

from flashsim.config import Bandwidth, Bytes, Seconds, StrictModel

OpKind = Literal["read", "write"]


class HddSpec(StrictModel):
    """Datasheet of a hard disk (a ``kind = "hdd"`` drive file).

    Attributes
    ----------
    kind : "hdd"
    name : str
        Model name.
    capacity : float
        Bytes.
    rpm : float
        Spindle speed in revolutions per minute.
    average_seek_read, average_seek_write : float
        Average seek times (s).
    sustained_transfer : float
        Sustained media rate (bytes/s), the outer-zone maximum.
    """

    kind: Literal["hdd"]
    name: str
    description: str = Field("", description="Free text, for reports.")
    #: The drive file the datasheet was read from (empty: given inline), for messages.
    _file: str = PrivateAttr("")
    capacity: Bytes
    rpm: float
    average_seek_read: Seconds
    average_seek_write: Seconds
    sustained_transfer: Bandwidth
    service_cv: float = Field(
        0.0,
        description=(
            "Coefficient of variation of service times (request fidelity; 0 = deterministic)."
        ),
    )

    @property
    def servers(self) -> int:
        """An HDD serves one request at a time."""
        return 1

    @property
    def rotational_latency_s(self) -> float:
        """Average rotational latency (s): half a revolution."""
        return 0.5 * 60.0 / self.rpm

    def bandwidth_Bps(self, op: OpKind) -> float:
        """Sequential bytes/s (the sustained media rate)."""
        return float(self.sustained_transfer)

    def seek_s(self, op: OpKind) -> float:
        """Average seek (s) for ``op``."""
        return float(self.average_seek_read if op == "read" else self.average_seek_write)

    def access_s(self, op: OpKind, size_B: float) -> float:
        """Time (s) of one random access: seek + half a revolution + transfer."""
        return float(self.seek_s(op) + self.rotational_latency_s + size_B / self.sustained_transfer)

    def cmd_s(self, op: OpKind, size_B: float) -> float:
        """Time (s) the actuator is held by one random access (the only stage)."""
        return self.access_s(op, size_B)

    def xfer_s(self, op: OpKind, size_B: float) -> float:
        """No separate data stage: the transfer is part of the access."""
        return 0.0

    def delay_s(self, op: OpKind, size_B: float) -> float:
        """HDDs have no latency outside service."""
        return 0.0

    def iops(self, op: OpKind) -> float:
        """Random 4 KiB operations/s with full seeks."""
        return 1.0 / self.access_s(op, 4096.0)

    def random_iops_ceiling(self, op: OpKind, size_B: float) -> float:
        """Operations/s when command queueing hides the seek: ``1 / (rotation + transfer)``."""
        return float(1.0 / (self.rotational_latency_s + size_B / self.sustained_transfer))


class HddStream:
    """An HDD serving contiguous streams: the head stays on track between accesses.

    A sequential stream over a fixed RAID tier reaches each drive as one
    contiguous run, so an access costs only its transfer at the sustained
    media rate (no seek, no rotational latency).  Implements the drive
    protocol of :mod:`flashsim.components.drive` around an :class:`HddSpec`.

    Parameters
    ----------
    spec : HddSpec
        The drive's datasheet.
    """

    def __init__(self, spec: HddSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.capacity = float(spec.capacity)
        self.service_cv = spec.service_cv

    @property
    def servers(self) -> int:
        """One actuator."""
        return 1

    def bandwidth_Bps(self, op: OpKind) -> float:
        """Sequential bytes/s (the sustained media rate)."""
        return self.spec.bandwidth_Bps(op)

    def iops(self, op: OpKind) -> float:
        """Contiguous 4 KiB operations/s at the media rate."""
        return float(self.spec.sustained_transfer) / 4096.0

    def cmd_s(self, op: OpKind, size_B: float) -> float:
        """Time (s) the actuator is held: the transfer only."""
        return size_B / float(self.spec.sustained_transfer)

    def xfer_s(self, op: OpKind, size_B: float) -> float:
        """No separate data stage: the transfer is part of the access."""
        return 0.0

    def delay_s(self, op: OpKind, size_B: float) -> float:
        """No latency outside service."""
        return 0.0

    def random_iops_ceiling(self, op: OpKind, size_B: float) -> float:
        """Operations/s of ``size_B``-byte contiguous accesses."""
        return 1.0 / self.cmd_s(op, size_B)
