"""A storage target as a component: what a server exports, chosen in the model file.

A server (a Lustre OSS or MDS, a burst-buffer node) exports *targets*; what a
target is made of is the model file's choice, not the system kind's:

* a RAID array of SSDs or HDDs behind the server's own RAID engine
  (:class:`~flashsim.components.raid_target.RaidTarget`; Perlmutter's OSTs);
* the same behind an external controller shared with other servers (a DDN
  couplet: the target's ``controller``; Spider);
* an SCM write buffer that migrates compressed, erasure-coded stripes into
  QLC (:class:`~flashsim.components.tier_target.TierTarget`; a Lustre hot
  pool, a VAST DBox as one OST).

A system kind wires a target into its paths through :class:`StorageTarget`
only, for both fidelities, and hands its state to the timeline through the
life the target's spec builds (:class:`TargetSpec.build_life`, a
:class:`~flashsim.components.target_state.StatefulTarget`).  The kind never
asks which type of target it holds.

Objects.  Where a RAID target's cost depends only on the operation (read or
write, size, sequential), a tier's depends on the *object* too: a read goes
where that object's bytes live now (SCM or QLC, and which QLC drives), a
write's migration on how well its data compresses.  So :meth:`StorageTarget.cost`
takes the object, a target says whether it uses it (:attr:`StorageTarget.object_aware`:
a kind that caches paths by operation keys them by object too), and a flow
that writes to a target is announced to it (:meth:`StorageTarget.flow_started`)
so that the target can account the bytes as they move (a tier's buffer fills
with them; a RAID target ignores it).  An object is named by the kind, once
per (file, target): ``"<file>"`` is enough, since each target keeps its own.

Flow fidelity: :meth:`StorageTarget.path` gives the target's resources and
weights per byte of a flow carrying ``share`` of its bytes through the
target.  Request fidelity: :meth:`StorageTarget.visit` is the target's part of
one operation's service.  The zero-load latency of the target's part is in the
cost (:attr:`TargetCost.drive_latency_s` holds servers, :attr:`TargetCost.delay_s`
holds none), so a kind's round trip adds it once for any target.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import simpy

from flashsim.engine.flows import Flow, Resource

if TYPE_CHECKING:
    from flashsim.components.raid_controller import Controller
    from flashsim.components.target_state import StatefulTarget
    from flashsim.components.variability import VariabilitySpec
    from flashsim.engine.simulation import Simulation

OpKind = Literal["read", "write"]
Fidelity = Literal["flow", "request"]
PathEntries = list[tuple[Resource, float]]


@dataclass(frozen=True)
class DriveStage:
    """Drive operations done in parallel for one server operation (a RAID target's).

    ``spread`` stages put ``count / drives`` of the operations on every drive
    (a large RPC over a declustered array); otherwise ``count`` distinct
    drives are chosen at random (a small read, or the chunks of an RMW).
    """

    op: OpKind
    size_B: float
    count: float
    spread: bool
    #: Degraded array (components.rebuild): probability an operation's chunk is lost, and
    #: the drive operations that replace a lost one (k reads to reconstruct, 0 skipped writes).
    lost: float = 0.0
    replace: int = 1

    @property
    def mean_count(self) -> float:
        """Expected drive operations: ``count`` with lost chunks replaced."""
        if self.lost == 0.0:
            return self.count
        return self.count * (1.0 - self.lost + self.lost * self.replace)


@dataclass(frozen=True)
class TargetCost:
    """What one operation of ``size_B`` bytes costs a target (busy times in s, bytes in B).

    Every target fills ``op``, ``size_B``, ``drive_latency_s`` (the zero-load
    time the target's stages hold a server, one after another) and
    ``delay_s`` (the time on top that holds none: media access latency, PCIe
    transfer); ``obj`` is the object the operation touches (empty for a
    target that is not :attr:`StorageTarget.object_aware`).  The other fields
    are a RAID target's: its engine time, drive stages and totals over all
    drives (zero for other targets, which keep what they need in ``detail``).
    """

    op: OpKind
    size_B: float
    raid_s: float
    stages: tuple[DriveStage, ...]
    drive_cmd_s: float
    drive_xfer_s: float
    pcie_up_B: float
    pcie_down_B: float
    drive_latency_s: float
    delay_s: float
    obj: str = ""
    #: Target-specific detail of the cost (e.g. a tier's read weights), opaque to the kind.
    detail: Any = None


@runtime_checkable
class StorageTarget(Protocol):
    """What a system kind may ask of any target it wires (both fidelities).

    Implementations: :class:`~flashsim.components.raid_target.RaidTarget`
    (SSD or HDD RAID, with or without an external controller) and
    :class:`~flashsim.components.tier_target.TierTarget` (SCM write buffer
    over compressed QLC).
    """

    #: Dotted name (``perlmutter.oss3.ost0``); its resources are named under it.
    name: str

    @property
    def object_aware(self) -> bool:
        """Whether :meth:`cost` and :meth:`path` depend on the object (a tier: where its
        bytes live); a kind that caches a target's paths by operation must key them by
        object too.  A class attribute is enough."""
        ...

    def cost(self, op: OpKind, size_B: float, sequential: bool, obj: str = "") -> TargetCost:
        """What one ``op`` of ``size_B`` bytes of object ``obj`` costs the target now."""
        ...

    def path(self, cost: TargetCost, share: float = 1.0) -> PathEntries:
        """Flow fidelity: resources and weights per byte of a flow carrying ``share`` of its
        bytes through this target with operations costing ``cost``."""
        ...

    def flow_started(self, cost: TargetCost, flow: Flow, share: float = 1.0) -> None:
        """A flow whose path includes :meth:`path` (``cost``, ``share``) has started.

        A target that keeps state of the bytes written (a tier's buffer) counts
        them as they move; others do nothing.
        """
        ...

    def visit(self, env: simpy.Environment, cost: TargetCost) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: the target's part of serving one operation of ``cost``."""
        ...

    def account_wear(self, bytes_moved: Callable[[Resource], float]) -> None:
        """Flow fidelity: bring the drives' wear up to the bytes flows moved so far.

        ``bytes_moved(resource)`` is a resource's cumulative byte count
        (:meth:`FlowNetwork.bytes_moved <flashsim.engine.flows.FlowNetwork.bytes_moved>`).
        Request fidelity records each write as it is served.
        """
        ...


class TargetSpec(Protocol):
    """A target type as a model-file component: builds targets and their lives, gives peaks.

    A kind's server spec holds one (``oss.target_spec()`` for Lustre); the
    kind builds every target through it and reports its peaks in
    ``describe`` without knowing its type.
    """

    def build(
        self,
        sim: Simulation,
        name: str,
        variability: VariabilitySpec,
        front: Controller | None = None,
    ) -> StorageTarget:
        """A target named ``name`` with its resources and queues, its factors drawn from
        ``variability`` (seeded per component).

        ``front`` is an external controller every operation on the target
        crosses first, shared with other servers' targets (a DDN couplet: the
        server class's ``controller``, which the kind builds once per group of
        servers); a type that cannot sit behind one raises ``ValueError``.
        """
        ...

    def build_life(
        self, sim: Simulation, target: StorageTarget, fidelity: Fidelity
    ) -> StatefulTarget:
        """The state ``target`` keeps for a whole run (aging, failures, rebuild, TRIM, fill)."""
        ...

    def peak_Bps(self, op: OpKind) -> float:
        """Datasheet bandwidth (bytes/s) of one target, after redundancy for writes."""
        ...

    def peak_iops(self, op: OpKind, size_B: float = 4096.0) -> float:
        """Datasheet operations/s of one target for ``size_B`` operations."""
        ...

    def drive_count(self) -> int:
        """Drives in one target (all media)."""
        ...

    def usable_B(self) -> float:
        """User bytes one target stores (after redundancy, before compression)."""
        ...

    def label(self) -> str:
        """What the target is, for ``describe`` (``raid6 8+2 of 10x Samsung PM1733``)."""
        ...
