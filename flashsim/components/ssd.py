"""NVMe SSDs: bandwidth, IOPS, latency, internal parallelism and wear state.

Service model (both fidelities), two stages:

* command stage: ``parallelism`` internal units (flash channels/dies the
  controller drives concurrently); a command holds one unit for
  ``parallelism / iops`` seconds, so the units saturate at the datasheet's
  random IOPS;
* data stage: one data path that moves ``s`` bytes in ``s / bw`` seconds, so
  it saturates at the datasheet's sequential bandwidth.

The drive therefore saturates at ``min(iops, bw / s)`` operations/s.  A drive
file may leave the IOPS out (a bandwidth-only datasheet): the command stage is
then taken as never binding (``cmd_s = 0``), which holds for the large
sequential transfers a datasheet's bandwidth is measured with; a phase whose
operations are random, small or served at request fidelity refuses to run on
such a drive (:func:`flashsim.components.drive.check_drive_for_phase`).  A pure
access latency that holds nothing tops the zero-load latency up to the
datasheet value, which gives the queue-depth behaviour: at queue depth ``q``
the drive delivers about ``q / latency`` operations/s until a stage saturates.

State: bytes written and the valid fraction of the flash, with hooks for the
garbage-collection model of a later issue; the current write-amplification
factor scales write service times (1.0 for a fresh drive).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, PrivateAttr

from flashsim.config import (
    Bandwidth,
    Bytes,
    NonNegativeSeconds,
    OpRate,
    Seconds,
    StrictModel,
    UnitFraction,
)

OpKind = Literal["read", "write"]


class SsdSpec(StrictModel):
    """Datasheet of an SSD model (a ``kind = "ssd"`` drive file).

    Attributes
    ----------
    kind : "ssd"
    name : str
        Model name.
    capacity : float
        User capacity in bytes.
    read_bandwidth, write_bandwidth : float
        Sequential bandwidth in bytes/s.
    read_iops, write_iops : float or None
        Random 4 KiB operations/s at high queue depth; ``None`` (left out of
        the file): unknown, the command stage never binds, and phases that
        need it refuse to run.
    read_latency, write_latency : float
        Zero-load latency (s) of a 4 KiB access.
    parallelism : int
        Internal units served concurrently (>= 1).
    overprovisioning : float
        Spare flash as a fraction of user capacity: the NAND behind the drive is
        ``capacity * (1 + overprovisioning)`` bytes (for the aging model).
    flash_write_bandwidth : float or None
        Bytes/s the NAND can program behind the host link (``None``: the host
        ``write_bandwidth``).  Garbage collection's extra programs come out of it,
        so host writes slow only once ``write_amplification > flash / host``.
    trim_bandwidth : float or None
        Bytes/s of logical space the drive deallocates when trimmed.
    endurance_dwpd : float or None
        Rated drive writes per day over ``warranty`` (datasheet).
    warranty : float
        Warranty period (s) of the endurance rating.
    """

    kind: Literal["ssd"]
    name: str
    description: str = Field("", description="Free text, for reports.")
    #: The drive file the datasheet was read from (empty: given inline), for messages.
    _file: str = PrivateAttr("")
    capacity: Bytes
    read_bandwidth: Bandwidth
    write_bandwidth: Bandwidth
    read_iops: OpRate | None = None
    write_iops: OpRate | None = None
    read_latency: NonNegativeSeconds = "0 s"
    write_latency: NonNegativeSeconds = "0 s"
    parallelism: Annotated[int, Field(ge=1)] = 32
    overprovisioning: UnitFraction = 0.07
    flash_write_bandwidth: Bandwidth | None = Field(
        None,
        description=(
            "NAND program bandwidth behind the host link (default: `write_bandwidth`); "
            "garbage collection's copies come out of it."
        ),
    )
    trim_bandwidth: Bandwidth | None = Field(
        None, description="Logical bytes/s the drive deallocates when trimmed (TRIM/deallocate)."
    )
    endurance_dwpd: Annotated[float, Field(gt=0.0)] | None = Field(
        None, description="Rated drive writes per day over `warranty` (datasheet)."
    )
    warranty: Seconds = Field("5 years", description="Warranty period of the endurance rating.")
    service_cv: Annotated[float, Field(ge=0.0)] = Field(
        0.0,
        description=(
            "Coefficient of variation of command service times (request fidelity; "
            "0 = deterministic)."
        ),
    )

    @property
    def servers(self) -> int:
        """Units a request-fidelity queue models."""
        return self.parallelism

    def bandwidth_Bps(self, op: OpKind) -> float:
        """Sequential bytes/s for ``op``."""
        return float(self.read_bandwidth if op == "read" else self.write_bandwidth)

    def known_iops(self, op: OpKind) -> float | None:
        """Random 4 KiB operations/s for ``op`` as the drive file gives it (``None``: left out)."""
        value = self.read_iops if op == "read" else self.write_iops
        return None if value is None else float(value)

    def iops(self, op: OpKind) -> float:
        """Random operations/s for ``op``; ``inf`` when the file leaves it out (no command
        stage limit: :meth:`cmd_s` is 0)."""
        value = self.known_iops(op)
        return math.inf if value is None else value

    def cmd_s(self, op: OpKind, size_B: float) -> float:
        """Time (s) one internal unit is held per command: ``parallelism / iops`` (0 when the
        IOPS are unknown)."""
        return self.parallelism / self.iops(op)

    def xfer_s(self, op: OpKind, size_B: float) -> float:
        """Time (s) the drive's data path is held moving ``size_B`` bytes: ``size / bw``."""
        return size_B / self.bandwidth_Bps(op)

    def delay_s(self, op: OpKind, size_B: float) -> float:
        """Latency (s) holding nothing that tops the zero-load latency up to the datasheet's."""
        latency = self.read_latency if op == "read" else self.write_latency
        return float(max(0.0, latency - self.cmd_s(op, size_B) - self.xfer_s(op, size_B)))

    @property
    def raw_capacity_B(self) -> float:
        """Bytes of NAND behind the user capacity (``capacity * (1 + overprovisioning)``)."""
        return float(self.capacity) * (1.0 + self.overprovisioning)

    @property
    def flash_write_Bps(self) -> float:
        """NAND program bandwidth (bytes/s) behind the host link."""
        if self.flash_write_bandwidth is None:
            return float(self.write_bandwidth)
        return float(self.flash_write_bandwidth)

    @property
    def write_headroom(self) -> float:
        """NAND program bandwidth over host write bandwidth: the write amplification
        garbage collection can reach before host writes slow down (dimensionless)."""
        return self.flash_write_Bps / float(self.write_bandwidth)

    def random_iops_ceiling(self, op: OpKind, size_B: float) -> float:
        """Saturated operations/s for ``size_B``-byte operations: ``min(iops, bw / size)``
        (``bw / size`` when the IOPS are unknown: an upper bound)."""
        return min(self.iops(op), self.bandwidth_Bps(op) / size_B)


@dataclass
class SsdState:
    """Wear state of one drive; the aging model of a later issue updates it.

    Attributes
    ----------
    bytes_written_B : float
        Host bytes written so far.
    valid_fraction : float
        Fraction of the flash holding valid data (drives garbage collection).
    write_amplification : float
        Current flash bytes per host byte (1.0 while fresh).
    flow_bytes_B : float
        Bytes already accounted from flow-fidelity counters.
    """

    capacity_B: float
    bytes_written_B: float = 0.0
    valid_fraction: float = 0.0
    write_amplification: float = 1.0
    flow_bytes_B: float = 0.0

    def record_write(self, size_B: float) -> None:
        """Account ``size_B`` host bytes written (hook for the aging model)."""
        self.bytes_written_B += size_B
        self.valid_fraction = min(1.0, self.valid_fraction + size_B / self.capacity_B)

    def trim(self, size_B: float) -> None:
        """Account ``size_B`` bytes discarded by TRIM."""
        self.valid_fraction = max(0.0, self.valid_fraction - size_B / self.capacity_B)

    def write_time_scale(self) -> float:
        """Factor on write service times from the current write amplification."""
        return self.write_amplification
