"""Aging of the drives of an array: garbage collection's write amplification slows host writes.

A drive's NAND programs ``flash_write_bandwidth`` bytes/s behind a host link
that passes ``write_bandwidth``; garbage collection copies valid data out of
the erase blocks it reclaims, so each host byte costs ``WA`` NAND programs.
A host write then moves at ``min(write_bandwidth, flash_write_bandwidth / WA)``:
nothing is lost while ``WA`` stays under the headroom ``flash / host``, and the
loss grows as ``1 - headroom / WA`` beyond it.

The write amplification comes from an FTL model of one representative drive
of the array (every drive of a declustered array sees the same traffic, a
``1 / drives`` share of it): the mean-field fluid model in flow fidelity, the
page-mapped micro-model in request fidelity, behind one interface
(:mod:`flashsim.components.ftl_api`).  The host traffic a file system sends
each drive is described by :class:`~flashsim.components.aging_spec.AgingSpec`.

TRIM (``fstrim``) discards the space the file system holds no live data in;
the drive deallocates it at ``trim_bandwidth`` (logical bytes/s) and garbage
collection has free space again.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from flashsim.components.aging_spec import AgingSpec
from flashsim.components.ftl_analytic import greedy_wa_mean_field
from flashsim.components.ftl_api import AgingModel, fluid_model, micro_model
from flashsim.components.ssd import SsdSpec


@dataclass
class DriveAging:
    """The aging state of an array's drives, through one representative drive.

    Attributes
    ----------
    drive : SsdSpec
        Drive datasheet.
    model : AgingModel
        FTL model of the representative drive (fluid or micro).
    logical_B : float
        Bytes of each drive's logical space the array writes (its distributed
        spare space is never written and acts as extra over-provisioning).
    fill : float
        Fraction of that space holding live data (never deleted, never trimmed).
    """

    drive: SsdSpec
    model: AgingModel
    logical_B: float
    fill: float = 0.0
    #: Fingerprint of the model's parameters and of every write and TRIM since it was fresh
    #: (a hash chain), or ``None`` for a model whose state is not a function of them alone
    #: (the micro-model draws its traffic).  Equal histories mean equal states.
    history: Hashable | None = None
    #: Changes of state so far (every write, TRIM and adoption bumps it): readers that
    #: derive numbers from the state (a target's status) recompute only when it moved.
    version: int = field(default=0, compare=False)

    def record(self, host_B: float) -> None:
        """Account ``host_B`` bytes written to each drive of the array."""
        if host_B > 0:
            self.model.write(host_B)
            self.version += 1
            if self.history is not None:
                self.history = hash((self.history, "write", host_B))

    def adopt(self, history: Hashable, model: AgingModel) -> None:
        """Take the state of an array with the same ``history`` (a copy of its ``model``)."""
        self.model = copy.deepcopy(model)
        self.history = history
        self.version += 1

    def write_amplification(self) -> float:
        """Current write amplification of the representative drive."""
        return self.model.write_amplification()

    def write_time_scale(self) -> float:
        """Factor on host write transfer times: ``max(1, WA * host / flash)``."""
        return max(1.0, self.model.write_amplification() / self.drive.write_headroom)

    def dead_B(self) -> float:
        """Bytes per drive a TRIM deallocates: valid to the drive, dead to the file system."""
        return max(0.0, (self.model.valid_fraction - self.fill) * self.logical_B)

    def trim(self) -> float:
        """TRIM every dead byte; returns the bytes per drive deallocated."""
        dead = self.dead_B()
        self.model.trim_dead()
        self.version += 1
        if self.history is not None:
            self.history = hash((self.history, "trim"))
        return dead


def build_drive_aging(
    drive: SsdSpec,
    spec: AgingSpec,
    written_fraction: float,
    fill: float,
    fidelity: Literal["flow", "request"],
    rng: np.random.Generator,
) -> DriveAging:
    """A fresh representative drive of an array, in the fidelity's FTL model.

    Parameters
    ----------
    drive : SsdSpec
        Drive datasheet (capacity, over-provisioning).
    spec : AgingSpec
        The file system's traffic as a drive sees it.
    written_fraction : float
        Fraction of each drive's logical space the array writes (the rest is
        distributed spare).
    fill : float
        Fraction of that space holding live data the run never deletes.
    fidelity : {"flow", "request"}
        ``flow``: mean-field fluid model; ``request``: scaled page-mapped micro-model.
    rng : numpy.random.Generator
        Stream of the micro-model's traffic.
    """
    if not 0.0 < written_fraction <= 1.0:
        raise ValueError(f"written_fraction(={written_fraction}) must be in (0, 1]")
    logical = float(drive.capacity) * written_fraction
    op = drive.raw_capacity_B / logical - 1.0
    args = (logical, op, spec.units_per_block, spec.spread, fill)
    model: AgingModel
    if fidelity == "flow":
        model = fluid_model(
            *args, spec.gc_policy, allocation=spec.allocation, window_fraction=spec.wa_window
        )
    else:
        model = micro_model(
            *args,
            spec.gc_policy,
            spec.micro_blocks,
            rng,
            gc_batch=max(8, spec.micro_blocks // 1024),
            allocation=spec.allocation,
            window_fraction=spec.wa_window,
        )
    history = (
        hash(
            (
                "fluid",
                drive.name,
                drive.write_headroom,
                *args,
                spec.gc_policy,
                spec.allocation,
                spec.wa_window,
            )
        )
        if fidelity == "flow"
        else None
    )
    return DriveAging(drive=drive, model=model, logical_B=logical, fill=fill, history=history)


def steady_write_loss(
    drive: SsdSpec, spec: AgingSpec, written_fraction: float, fill: float
) -> tuple[float, float]:
    """(write amplification, loss of host write bandwidth) once fully aged without TRIM.

    Every churned logical unit then holds data the drive counts as valid; the
    cold ``fill`` sits in full blocks GC never picks, so the churned space has
    the whole spare flash to itself: spare factor ``(NAND - logical) / (NAND -
    cold)``.  Greedy GC's mean-field steady state
    (:func:`~flashsim.components.ftl_analytic.greedy_wa_mean_field`, which the
    fluid model converges to) gives the write amplification; the loss is
    ``1 - headroom / WA`` beyond the NAND headroom.
    """
    logical = float(drive.capacity) * written_fraction
    nand = drive.raw_capacity_B
    spare = (nand - logical) / (nand - fill * logical)
    wa = greedy_wa_mean_field(spare, spec.units_per_block)
    return wa, max(0.0, 1.0 - drive.write_headroom / wa)
