"""RAID layouts: what one user operation costs the drives.

* ``raid6`` (declustered, GridRAID-like): stripes of ``data`` + ``parity``
  chunks of ``chunk`` bytes spread evenly over all drives of the array, with
  ``spares`` drives' worth of distributed spare space.  A full-stripe write
  puts ``(data + parity) / data`` bytes on the drives per user byte; a
  sub-stripe write reads and rewrites every chunk it touches plus all parity
  chunks (read-modify-write), or, when cheaper, reads the untouched chunks and
  writes the touched ones and the parity (reconstruct-write).  Reads cost the
  user bytes only (parity is not checked on reads).
* ``raid10``: ``mirrors`` copies; writes cost ``mirrors`` times the bytes.
* ``none``: striping without protection.

Declustering spreads every stripe's load over all ``drives`` drives, so each
drive sees ``1 / drives`` of the operations.  A ``raid6`` array that is not
declustered is one fixed tier of ``data + parity`` drives (e.g. a DDN S2A
8+2 tier): a request of several full stripes is one contiguous run of
``stripes x chunk`` bytes on each drive, so a hard disk positions once per
request rather than once per chunk (seed 003 §5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from flashsim.config import Bytes, StrictModel, field_error, warn

OpKind = Literal["read", "write"]


@dataclass(frozen=True)
class DriveOp:
    """Drive operations one user operation causes.

    Attributes
    ----------
    op : {"read", "write"}
    size_B : float
        Bytes per drive operation.
    count : float
        Drive operations per user operation (may be fractional for averages).
    """

    op: OpKind
    size_B: float
    count: float


class RaidSpec(StrictModel):
    """A RAID layout of a target (OST or MDT).

    Attributes
    ----------
    level : {"raid6", "raid10", "none"}
    data : int
        Data chunks per stripe (raid6), or stripe width (none).
    parity : int
        Parity chunks per stripe (raid6).
    spares : int
        Distributed spare drives' worth of space.
    mirrors : int
        Copies (raid10).
    chunk : float
        Bytes per chunk (the RAID block).
    declustered : bool
        Stripes rotate over all drives (GridRAID) rather than fixed groups.
    """

    level: Literal["raid6", "raid10", "none"] = Field(
        description="`raid6` (parity), `raid10` (mirrors) or `none` (striping only)."
    )
    data: Annotated[int, Field(ge=1)] = 8
    parity: Annotated[int, Field(ge=0)] = 2
    spares: Annotated[int, Field(ge=0)] = 0
    mirrors: Annotated[int, Field(ge=1)] = 2
    chunk: Bytes = "128 KiB"
    declustered: bool = True

    @model_validator(mode="after")
    def _keys_of_level(self) -> RaidSpec:
        """Refuse keys meaningless for ``level`` (``raid10`` with ``parity = 2``); warn for none."""
        given = self.model_fields_set
        meaningless = {
            "raid6": [("mirrors", self.mirrors != 1)],
            "raid10": [("data", "data" in given), ("parity", self.parity != 0)],
            "none": [("parity", self.parity != 0), ("mirrors", self.mirrors != 1)],
        }[self.level]
        for key, used in meaningless:
            if key in given and used and self.level == "none":
                # Left over when a what-if switches a table to no protection: ignored, said once.
                warn(f"raid.{key} = {getattr(self, key)} is ignored by level 'none'")
            elif key in given and used:
                raise field_error(
                    key,
                    f"means nothing for level {self.level!r}; remove it "
                    "(raid6 uses data and parity, raid10 mirrors, none data)",
                )
        return self

    @property
    def stripe_drives(self) -> int:
        """Drives one stripe touches."""
        if self.level == "raid6":
            return self.data + self.parity
        if self.level == "raid10":
            return self.mirrors
        return self.data

    def label(self, drives: int | None = None) -> str:
        """What the layout is, for ``describe``: ``raid6 8+2 +1 spare``, ``raid10 6x2 mirrors``,
        ``raid0 x4``.

        Parameters
        ----------
        drives : int or None
            Drives in the target; a ``raid10`` array is ``drives / mirrors`` mirror
            sets of ``mirrors`` drives (without it, the label names the copies only).
        """
        spare = f" +{self.spares} spare" if self.spares else ""
        if self.level == "raid6":
            return f"raid6 {self.data}+{self.parity}{spare}"
        if self.level == "raid10":
            if drives is None:
                return f"raid10 {self.mirrors}-way mirrors{spare}"
            sets = (drives - self.spares) // self.mirrors
            return f"raid10 {sets}x{self.mirrors} mirrors{spare}"
        return f"raid0 x{self.data} (no protection)"

    def min_drives(self) -> int:
        """Fewest drives the layout needs (a stripe plus its spares)."""
        return self.stripe_drives + self.spares

    @property
    def stripe_data_B(self) -> float:
        """User bytes in a full stripe."""
        if self.level == "raid10":
            return float(self.chunk)
        return float(self.data * self.chunk)

    def usable_fraction(self, drives: int) -> float:
        """User capacity over raw capacity of ``drives`` drives."""
        if self.level == "raid6":
            return (drives - self.spares) / drives * self.data / (self.data + self.parity)
        if self.level == "raid10":
            return (drives - self.spares) / drives / self.mirrors
        return 1.0

    def full_stripe_write_weight(self) -> float:
        """Drive bytes per user byte of large (full-stripe) writes."""
        if self.level == "raid6":
            return (self.data + self.parity) / self.data
        if self.level == "raid10":
            return float(self.mirrors)
        return 1.0

    def write_ops(self, size_B: float, aligned_full: bool = False) -> list[DriveOp]:
        """Drive operations for one user write of ``size_B`` bytes.

        Parameters
        ----------
        size_B : float
            User bytes written.
        aligned_full : bool
            The write covers whole stripes (a large streaming write); then it
            pays only the parity bandwidth.
        """
        if self.level == "none":
            return [DriveOp("write", min(size_B, self.chunk), math.ceil(size_B / self.chunk))]
        if self.level == "raid10":
            pieces = math.ceil(size_B / self.chunk)
            return [DriveOp("write", min(size_B, self.chunk), self.mirrors * pieces)]
        stripe = self.stripe_data_B
        if aligned_full or size_B >= stripe:
            stripes = size_B / stripe
            if not self.declustered:
                # Fixed tiers: consecutive stripes sit at consecutive offsets of the same
                # drives, so one write of several stripes is one contiguous run per drive.
                return [DriveOp("write", stripes * self.chunk, float(self.data + self.parity))]
            return [DriveOp("write", self.chunk, stripes * (self.data + self.parity))]
        touched = math.ceil(size_B / self.chunk)
        rmw = 2 * (touched + self.parity)  # read + write touched and parity chunks
        reconstruct = (self.data - touched) + touched + self.parity
        reads = touched + self.parity if rmw <= reconstruct else self.data - touched
        writes = touched + self.parity
        return [DriveOp("read", self.chunk, reads), DriveOp("write", self.chunk, writes)]

    def read_ops(self, size_B: float) -> list[DriveOp]:
        """Drive operations for one user read of ``size_B`` bytes (no parity reads)."""
        if size_B <= self.chunk:
            return [DriveOp("read", size_B, 1.0)]
        if self.level == "raid6" and not self.declustered and size_B >= self.stripe_data_B:
            # Fixed tiers: each data drive reads one contiguous run (see write_ops).
            return [DriveOp("read", size_B / self.data, float(self.data))]
        return [DriveOp("read", self.chunk, size_B / self.chunk)]

    def is_sub_stripe(self, size_B: float) -> bool:
        """Whether a write of ``size_B`` bytes needs read-modify-write."""
        return self.level == "raid6" and size_B < self.stripe_data_B
