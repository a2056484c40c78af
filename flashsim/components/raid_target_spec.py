"""The RAID target type as a model-file component (:class:`RaidTargetSpec`).

A RAID target is drives of one datasheet behind a RAID engine (the server's
own, or an external controller in front of it): Perlmutter's OSTs (RAID6 of
NVMe SSDs), an HDD array, Spider's tiers behind a DDN couplet.  The spec is a
:class:`~flashsim.components.target.TargetSpec`: it builds each target
(:class:`~flashsim.components.raid_target.RaidTarget`, with its drawn
variability factors), each target's life
(:class:`~flashsim.components.target_life.TargetLife`) and gives the
datasheet peaks and labels ``describe`` prints.

A kind makes one spec per built system (``ServerSpec.target_spec()`` for
Lustre) and builds every target of the server class through it: the spec owns
the :class:`~flashsim.components.target_life.AgingMemo` its targets' lives
share (a fast-forward of identical arrays advances one representative FTL
model), so the memo lives exactly as long as the built system.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flashsim.components.aging_spec import AgingSpec
from flashsim.components.drive import DriveSpec
from flashsim.components.pcie import PcieLink
from flashsim.components.raid import RaidSpec
from flashsim.components.raid_controller import Controller
from flashsim.components.raid_target import RaidTarget, build_target
from flashsim.components.rebuild import RebuildPolicy
from flashsim.components.target import Fidelity, OpKind, StorageTarget
from flashsim.components.target_life import AgingMemo, TargetLife
from flashsim.components.variability import VariabilitySpec, component_factor
from flashsim.engine.simulation import Simulation


def _default_policy() -> RebuildPolicy:
    """The model's default rebuild policy (``RebuildPolicy`` with every default)."""
    return RebuildPolicy.model_validate({})


@dataclass(eq=False)
class RaidTargetSpec:
    """Drives behind a RAID engine, as one target type (a :class:`TargetSpec`).

    Attributes
    ----------
    drive : SsdSpec or HddSpec
        Datasheet of every drive.
    drives : int
        Drives in one target's array.
    raid : RaidSpec
        Layout of the array.
    drive_link : PcieLink or None
        Host PCIe link of each drive (``None``: behind a SAS fabric).
    raid_threads : int
        RAID-engine threads per target (read-modify-writes in parallel).
    stack_read_efficiency, stack_write_efficiency : float
        Fraction (0, 1] of the drives' post-parity bandwidth the target's
        software stack delivers to streaming I/O (dimensionless).
    sub_stripe_write_cost : float
        RAID-engine time (s) of one sub-stripe (read-modify-write) write.
    rebuild : RebuildPolicy
        How the target rebuilds a failed drive against foreground I/O.
    aging : AgingSpec or None
        How the file system's writes reach each SSD's FTL (``None``: fresh drives).
    memo : AgingMemo
        Aged states the lives of this spec's targets share (one per built system).
    """

    drive: DriveSpec
    drives: int
    raid: RaidSpec
    drive_link: PcieLink | None = None
    raid_threads: int = 1
    stack_read_efficiency: float = 1.0
    stack_write_efficiency: float = 1.0
    sub_stripe_write_cost: float = 0.0
    rebuild: RebuildPolicy = field(default_factory=_default_policy)
    aging: AgingSpec | None = None
    memo: AgingMemo = field(default_factory=AgingMemo)

    # ................................................................ build
    def build(
        self,
        sim: Simulation,
        name: str,
        variability: VariabilitySpec,
        front: Controller | None = None,
    ) -> RaidTarget:
        """Target ``name``: its drives behind a RAID engine (and ``front``, if any).

        The target's stack efficiencies carry its drawn factors (clipped so no
        target beats its drives' datasheet rate) and each drive its data-rate
        factors, each from its own seeded stream (``variability``; the spreads
        of seed 000 Figs 4 and 5), so both fidelities see the same fleet.

        Parameters
        ----------
        sim : Simulation
            The simulation.
        name : str
            Dotted name of the target (drives are ``{name}.drive{i}``).
        variability : VariabilitySpec
            Distributions of the per-component factors.
        front : Controller or None
            External RAID controller every operation crosses first (shared
            with other servers' targets); ``None``: the server's own RAID engine.
        """
        eff = {
            op: e * component_factor(sim, name, variability, f"target_{op}", 1.0 / e)
            for op, e in (
                ("read", self.stack_read_efficiency),
                ("write", self.stack_write_efficiency),
            )
        }
        target = build_target(
            sim,
            name,
            self.drive,
            self.drives,
            self.raid,
            self.raid_threads,
            eff,
            sub_stripe_write_s=self.sub_stripe_write_cost,
            drive_link=self.drive_link,
        )
        for op in ("read", "write"):
            if variability.spread(f"drive_{op}") is not None:
                target.drive_speed[op] = [
                    component_factor(sim, f"{name}.drive{i}", variability, f"drive_{op}")
                    for i in range(self.drives)
                ]
        target.controller = front
        return target

    def build_life(self, sim: Simulation, target: StorageTarget, fidelity: Fidelity) -> TargetLife:
        """The life of ``target`` (built by :meth:`build`): aging, failures, rebuild, TRIM.

        Lives of this spec's targets share its :attr:`memo`.
        """
        if not isinstance(target, RaidTarget):
            raise TypeError(f"{target.name} is not a RAID target; build it with this spec")
        return TargetLife(
            sim, target, fidelity, self.rebuild, aging_spec=self.aging, memo=self.memo
        )

    # ................................................................ peaks
    def peak_Bps(self, op: OpKind) -> float:
        """Datasheet bandwidth (bytes/s) of one target's drives, after parity for writes.

        The denominator of the seed's bandwidth efficiencies (seed 000 §IV-A).
        """
        raw = self.drives * self.drive.bandwidth_Bps(op)
        return raw / self.raid.full_stripe_write_weight() if op == "write" else raw

    def peak_iops(self, op: OpKind, size_B: float = 4096.0) -> float:
        """Datasheet operations/s of one target's drives over the RAID write penalty.

        The denominator of the seed's IOPS efficiencies (seed 000 Table I).
        """
        raw = self.drives * self.drive.iops(op)
        if op == "write":
            writes = sum(o.count for o in self.raid.write_ops(size_B) if o.op == "write")
            raw /= max(writes, 1.0)
        return raw

    def drive_count(self) -> int:
        """Drives in one target."""
        return self.drives

    def usable_B(self) -> float:
        """User bytes (B) one target stores: its drives after parity and distributed spares."""
        return self.drives * float(self.drive.capacity) * self.raid.usable_fraction(self.drives)

    def label(self) -> str:
        """What the target is, e.g. ``raid6 8+2 of 10x Samsung PM1733`` (:meth:`RaidSpec.label`)."""
        return f"{self.raid.label(self.drives)} of {self.drives}x {self.drive.name}"
