"""The state a storage target keeps for a whole run, and the one interface events use.

A target (a Lustre OST's RAID array, a VAST DBox's SCM/QLC tier, a
burst-buffer drive group) *has* state that lives as long as the simulation:
its drives' FTL (write amplification from garbage collection), failed drives
and the rebuild that is running, the dead space a TRIM would deallocate, an
SCM write buffer's fill.  Workloads change it by writing (the bytes their
flows or requests actually move), events change it directly (a drive fails, a
TRIM runs), and a fast-forward over days advances it with the components'
fluid models.  Every system kind exposes its targets through
:class:`StatefulTarget`, so the timeline (:mod:`flashsim.timeline`) is
written once for every kind (desmod's component-owned state; SimGrid's
plugins that attach state to a resource; WRENCH's failures as events on the
workflow's clock: ``../shared/DESIGN.md`` §9).

In flow fidelity a flow's path (its weights on each resource) is fixed when
it starts, so a state change applies to flows started after it; the traffic
a state change causes (a rebuild, a TRIM) is itself a flow and loads the
drives at once.  In request fidelity every request reads the state when it
is served.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import simpy

from flashsim.components.failures import failure_times

if TYPE_CHECKING:
    from flashsim.engine.simulation import Simulation


@dataclass(frozen=True)
class TargetStatus:
    """One target's state at one simulated moment (JSON-able).

    Attributes
    ----------
    target : str
        Dotted name of the target, e.g. ``perlmutter.oss3.ost0``.
    write_amplification : float
        Current write amplification of the target's representative drive
        (NAND bytes programmed per host byte over the recent window; 1.0 for
        fresh drives or a target without an aging model).
    write_loss : float
        Fraction [0, 1) of the fresh streaming write bandwidth lost to garbage
        collection now: ``1 - 1 / write_time_scale``.
    host_written_B : float
        Host bytes written to each drive (the representative drive's) since
        the drives were fresh.
    dead_B : float
        Bytes per drive a TRIM would deallocate now (valid to the drive, free
        to the file system).
    failed_drives : tuple of int
        Drives down and not yet rebuilt, by index in the target's array.
    rebuild_progress : float or None
        Share [0, 1] of the running rebuild done; ``None`` when none runs.
    data_lost : bool
        Whether more drives failed than the layout tolerates.
    buffer_fill : float or None
        Fraction [0, 1] of an SCM write buffer holding data not yet migrated
        (tiered targets); ``None`` for a target without one.
    """

    target: str
    write_amplification: float = 1.0
    write_loss: float = 0.0
    host_written_B: float = 0.0
    dead_B: float = 0.0
    failed_drives: tuple[int, ...] = ()
    rebuild_progress: float | None = None
    data_lost: bool = False
    buffer_fill: float | None = None

    @property
    def degraded(self) -> bool:
        """Whether a drive is down (rebuilding or not)."""
        return bool(self.failed_drives)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        out = asdict(self)
        out["failed_drives"] = list(self.failed_drives)
        return out


def drive_failure_times(sim: Simulation, name: str, drives: int, afr: float) -> list[float]:
    """First failure time (s) of each drive of target ``name`` at AFR ``afr``.

    :func:`~flashsim.components.failures.failure_times` on drive ``k``'s own stream
    ``<name>.drive<k>.failure`` (as the ``rebuild`` phase names it).
    """
    return [
        float(t) for t in failure_times(lambda k: sim.rng(f"{name}.drive{k}.failure"), drives, afr)
    ]


@runtime_checkable
class StatefulTarget(Protocol):
    """What every system kind's targets offer the timeline, workloads and reports.

    Implementations: :class:`flashsim.components.target_life.TargetLife`
    (a RAID array of SSDs or HDDs, a Lustre OST) and the VAST tier's.
    Errors are ``ValueError("key: message")`` naming what was wrong (a drive
    index outside the array, TRIM on drives that cannot).
    """

    #: Dotted name, as in :attr:`TargetStatus.target`.
    name: str

    def status(self) -> TargetStatus:
        """The target's state now."""
        ...

    def fail_drive(self, drive: int) -> None:
        """Drive ``drive`` fails now.

        The target degrades (its operations reconstruct or skip the lost
        chunks) and starts rebuilding under its rebuild policy at once, as a
        background load sharing the drives with whatever runs; when the
        rebuild ends the target is healthy again.  A failure beyond the
        layout's tolerance marks the data lost (:attr:`TargetStatus.data_lost`).
        """
        ...

    def replace_drive(self, drive: int) -> None:
        """A fresh drive replaces ``drive`` (its FTL state fresh, its failure cleared)."""
        ...

    def trim(self) -> simpy.Event:
        """Start a TRIM of the file system's free space (``fstrim``).

        The drives deallocate their dead space at their TRIM rate as a
        background load; the returned event succeeds (with the seconds it
        took) when they are done, and garbage collection has the space back.
        """
        ...

    def age(self, host_B: float) -> None:
        """Fast-forward: ``host_B`` user bytes written (and as many deleted) to the target.

        Advances the drives' FTL state with its fluid model without
        simulating the transfers (:mod:`flashsim.workloads.production`).
        """
        ...

    def reset(self) -> None:
        """Fresh drives, no failure, no rebuild, empty buffer: the state at build time."""
        ...


@dataclass(frozen=True)
class SystemStatus:
    """A whole system's target state at one simulated moment (JSON-able).

    Targets never built (no workload touched them) are fresh and count as such.

    Attributes
    ----------
    time_s : float
        Simulated time (s).
    targets : int
        Targets in the system.
    mean_write_amplification, max_write_amplification : float
        Over every target.
    mean_write_loss : float
        Mean fraction of fresh write bandwidth lost to garbage collection.
    degraded_targets : tuple of int
        Indices of targets with a drive down.
    rebuilding_targets : tuple of int
        Indices of targets with a rebuild running.
    failed_drives : int
        Drives down over the system.
    data_lost_targets : tuple of int
        Indices of targets that lost data.
    buffer_fill : float or None
        Mean SCM buffer fill of tiered targets; ``None`` without tiers.
    """

    time_s: float
    targets: int
    mean_write_amplification: float = 1.0
    max_write_amplification: float = 1.0
    mean_write_loss: float = 0.0
    degraded_targets: tuple[int, ...] = ()
    rebuilding_targets: tuple[int, ...] = ()
    failed_drives: int = 0
    data_lost_targets: tuple[int, ...] = ()
    buffer_fill: float | None = None

    @classmethod
    def of(
        cls, time_s: float, targets: int, built: Sequence[tuple[int, TargetStatus]]
    ) -> SystemStatus:
        """Summarise the statuses of the ``built`` targets (index, status) of ``targets``."""
        if targets <= 0:
            return cls(time_s=time_s, targets=0)
        fresh = targets - len(built)
        was = [s.write_amplification for _, s in built]
        losses = [s.write_loss for _, s in built]
        fills = [s.buffer_fill for _, s in built if s.buffer_fill is not None]
        return cls(
            time_s=time_s,
            targets=targets,
            mean_write_amplification=(sum(was) + fresh) / targets,
            max_write_amplification=max([*was, 1.0]),
            mean_write_loss=sum(losses) / targets,
            degraded_targets=tuple(i for i, s in built if s.degraded),
            rebuilding_targets=tuple(i for i, s in built if s.rebuild_progress is not None),
            failed_drives=sum(len(s.failed_drives) for _, s in built),
            data_lost_targets=tuple(i for i, s in built if s.data_lost),
            buffer_fill=sum(fills) / len(fills) if fills else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (NaN-free)."""
        out = asdict(self)
        for key in ("degraded_targets", "rebuilding_targets", "data_lost_targets"):
            out[key] = list(out[key])
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}

    def summary(self) -> str:
        """One line an architect reads: WA, degraded and rebuilding targets, SCM fill."""
        parts = [
            f"WA mean {self.mean_write_amplification:.2f} (max {self.max_write_amplification:.2f})"
        ]
        parts.append(f"write loss {100 * self.mean_write_loss:.1f} %")
        if self.failed_drives:
            parts.append(
                f"{self.failed_drives} drive(s) down in {len(self.degraded_targets)} target(s), "
                f"{len(self.rebuilding_targets)} rebuilding"
            )
        if self.data_lost_targets:
            parts.append(f"DATA LOST on {len(self.data_lost_targets)} target(s)")
        if self.buffer_fill is not None:
            parts.append(f"SCM fill {100 * self.buffer_fill:.1f} %")
        return "; ".join(parts)
