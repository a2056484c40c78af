"""The SCM and QLC drives under an SCM/QLC tier, built once for every owner.

A tier (:class:`~flashsim.components.tier.ScmQlcTier`) moves bytes over
drives; whoever holds the drives (a VAST system's DNodes, one tier target of a
Lustre OSS) builds them with :func:`build_tier_drives`, which gives a
:class:`TierDrives`:

* flow fidelity: one resource per drive whose capacity is the drive's read
  bandwidth (bytes/s; a written byte costs ``read_bw / write_bw`` of it, the
  drive time-shared between reads and writes), one read-operation resource
  per QLC drive (read IOPS x ``read_chunk``, bytes/s) and, when the owner
  models it, the host PCIe link of every drive (up and down, bytes/s each);
* request fidelity: two :class:`~flashsim.engine.queues.FifoQueue` per drive,
  its command units (``parallelism`` servers) and its data path (one), made on
  first use (:meth:`TierDrives.queues`), and the picks of which drive serves
  an operation (:func:`pick_replicas`, :func:`read_picks`, :func:`pick_read`);
* wear: one :class:`~flashsim.components.ssd.SsdState` per drive, brought up
  to date by :meth:`TierDrives.sync_wear` (request-fidelity SCM replicas are
  recorded as they land, :meth:`TierDrives.record_replica`).

The tier's life for the timeline (:class:`~flashsim.components.tier_life.TierLife`)
works on the same object.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
import simpy

from flashsim.components.endurance import catch_up
from flashsim.components.pcie import link_Bps as pcie_link_Bps
from flashsim.components.ssd import SsdSpec, SsdState
from flashsim.components.tier import ScmQlcTier, TierSpec
from flashsim.engine.flows import Resource
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation

if TYPE_CHECKING:
    from flashsim.components.pcie import PcieLink
    from flashsim.components.tier import ReadWeights

Medium = Literal["scm", "qlc"]
FloatArray = npt.NDArray[np.float64]
#: A drive's request-fidelity queues: (command units, data path).
DriveQueues = tuple[FifoQueue, FifoQueue]
#: Where request fidelity sends a read: the fraction in SCM and the cumulative
#: weights of the QLC drives (``None`` when nothing is on QLC).
ReadPicks = tuple[float, FloatArray | None]


@dataclass
class TierDrives:
    """The SCM and QLC drives of one tier: resources, request queues and wear states.

    Attributes
    ----------
    sim : Simulation
        The simulation (clock and queues).
    scm_spec, qlc_spec : SsdSpec
        Drive datasheets.
    scm, qlc : list of Resource
        One resource per drive, capacity its read bandwidth (bytes/s).
    qlc_ops : list of Resource
        One per QLC drive: read IOPS x ``read_chunk`` (bytes/s).
    scm_group, qlc_group : list of int
        The group (enclosure, DNode) each drive sits in, by drive index.
    scm_links, qlc_links : list of (Resource, Resource)
        Host PCIe link of each drive, (up, down); empty when not modelled.
    link_Bps : float
        Bandwidth of one link direction (bytes/s; ``inf`` without links).
    scm_state, qlc_state : list of SsdState
        Wear of each drive.
    scm_queue_names, qlc_queue_names : list of str
        Names of each drive's request queues (``<name>.cmd``, ``<name>.xfer``).
    request_user_B : float
        User bytes request fidelity wrote to SCM (each on ``scm_copies`` drives).
    """

    sim: Simulation
    scm_spec: SsdSpec
    qlc_spec: SsdSpec
    scm: list[Resource]
    qlc: list[Resource]
    qlc_ops: list[Resource]
    scm_group: list[int]
    qlc_group: list[int]
    scm_links: list[tuple[Resource, Resource]]
    qlc_links: list[tuple[Resource, Resource]]
    link_Bps: float
    scm_state: list[SsdState]
    qlc_state: list[SsdState]
    scm_queue_names: list[str]
    qlc_queue_names: list[str]
    request_user_B: float = 0.0
    _queues: dict[Medium, list[DriveQueues]] | None = field(default=None, repr=False)

    # ------------------------------------------------------------ costs
    def build_tier(
        self,
        name: str,
        spec: TierSpec,
        entropy_of: Callable[[str], float],
        migration_extra: Callable[[float], list[tuple[Resource, float]]] | None = None,
    ) -> ScmQlcTier:
        """The SCM/QLC tier ``name`` over these drives, their links and write costs."""
        return ScmQlcTier(
            self.sim,
            name,
            spec,
            self.scm,
            self.qlc,
            scm_write_cost=self.scm_write_cost,
            qlc_write_cost=self.qlc_write_cost,
            migration_extra=migration_extra,
            entropy_of=entropy_of,
            qlc_ops=self.qlc_ops,
            scm_links=self.scm_links,
            qlc_links=self.qlc_links,
        )

    @property
    def scm_write_cost(self) -> float:
        """SCM drive capacity a written byte consumes (read over write bandwidth)."""
        return float(self.scm_spec.read_bandwidth) / float(self.scm_spec.write_bandwidth)

    @property
    def qlc_write_cost(self) -> float:
        """QLC drive capacity a written byte consumes (read over write bandwidth)."""
        return float(self.qlc_spec.read_bandwidth) / float(self.qlc_spec.write_bandwidth)

    def link_s(self, size_B: float) -> float:
        """Time (s) ``size_B`` bytes take over one drive's host link (0 without links)."""
        return size_B / self.link_Bps if self.scm_links else 0.0

    # ----------------------------------------------------------- request
    def queues(self) -> dict[Medium, list[DriveQueues]]:
        """Request-fidelity queues of the drives, (command units, data path), made on first use."""
        if self._queues is None:
            env = self.sim.env

            def drive(label: str, spec: SsdSpec) -> DriveQueues:
                return (
                    FifoQueue(env, f"{label}.cmd", spec.servers),
                    FifoQueue(env, f"{label}.xfer", 1),
                )

            self._queues = {
                "scm": [drive(n, self.scm_spec) for n in self.scm_queue_names],
                "qlc": [drive(n, self.qlc_spec) for n in self.qlc_queue_names],
            }
        return self._queues

    def visit(
        self,
        medium: Medium,
        index: int,
        op: Literal["read", "write"],
        size_B: float,
        scale: float = 1.0,
        extra_delay_s: float = 0.0,
    ) -> Generator[simpy.Event, Any, None]:
        """One operation at a drive: command stage, data stage, then the access latency.

        ``scale`` (>= 1) stretches the data stage (the SCM write efficiency);
        the transfer over the drive's host link (:meth:`link_s`) and
        ``extra_delay_s`` (s, a read overhead) hold nothing.
        """
        spec = self.scm_spec if medium == "scm" else self.qlc_spec
        cmd, xfer = self.queues()[medium][index]
        yield cmd.visit(spec.cmd_s(op, size_B))
        delay = spec.delay_s(op, size_B) + extra_delay_s + self.link_s(size_B)
        yield xfer.visit(spec.xfer_s(op, size_B) * scale, delay)

    def migration_read(self, index: int, size_B: float) -> Generator[simpy.Event, Any, None]:
        """The SCM side of migrating ``size_B`` bytes: a datasheet-rate read at SCM ``index``."""
        _, xfer = self.queues()["scm"][index]
        yield xfer.visit(self.scm_spec.xfer_s("read", size_B))

    def record_replica(self, index: int, size_B: float, copies: int) -> None:
        """A request-fidelity replica of ``size_B`` bytes landed on SCM drive ``index``."""
        self.scm_state[index].record_write(size_B)
        self.request_user_B += size_B / copies

    def write_replica(
        self, index: int, size_B: float, scale: float, copies: int
    ) -> Generator[simpy.Event, Any, None]:
        """One of ``copies`` SCM replicas of a write: into drive ``index`` (its data path
        stretched by ``scale``), then counted as wear."""
        yield from self.visit("scm", index, "write", size_B, scale)
        self.record_replica(index, size_B, copies)

    def commit_write(
        self, tier: ScmQlcTier, obj: str, size_B: float, rng: np.random.Generator
    ) -> None:
        """An acknowledged write's bytes enter ``tier``'s SCM buffer as ``obj``'s (a later read
        sees them); at the hold level every new byte is migrated too: one SCM read of it
        (flow fidelity's migration path), queued at a drive but not awaited."""
        if tier.migrating():
            self.sim.env.process(self.migration_read(pick_scm(tier, rng), size_B))
        tier.buffer.add_bytes(obj, size_B)

    # -------------------------------------------------------------- wear
    def sync_wear(self, tier: ScmQlcTier) -> None:
        """Bring every drive's :class:`~flashsim.components.ssd.SsdState` up to now.

        SCM: user bytes that entered the write buffer through flows (ingest
        flows, client write-back) land ``scm_copies`` times, evenly over the
        SCM drives; request-fidelity replicas were already counted as they
        landed (:attr:`request_user_B` of the buffer's ingest is theirs).
        QLC: the physical bytes the migration wrote to each drive
        (``tier.qlc_phys_written_B``, both fidelities: migration is a flow).
        Flow-written SCM bytes are spread over every SCM drive alike, also
        while one is out of service: an approximation of a failed SCM drive's
        wear until it is replaced.
        """
        copies = tier.spec.scm_copies
        flow_user_B = max(0.0, tier.buffer.ingested_now_B() - self.request_user_B)
        each = copies * flow_user_B / len(self.scm_state)
        for state in self.scm_state:
            catch_up(state, each)
        for state, done in zip(self.qlc_state, tier.qlc_phys_written_B, strict=True):
            catch_up(state, float(done))


def build_tier_drives(
    sim: Simulation,
    scm_spec: SsdSpec,
    qlc_spec: SsdSpec,
    groups: Sequence[tuple[str, int, int]],
    read_chunk_B: float,
    drive_link: PcieLink | None = None,
    queue_prefix: str | None = None,
) -> TierDrives:
    """The drives of a tier, group by group (an enclosure, a DNode, one target).

    Parameters
    ----------
    sim : Simulation
        Owns the flow network and the clock.
    scm_spec, qlc_spec : SsdSpec
        Drive datasheets.
    groups : sequence of (str, int, int)
        ``(prefix, scm drives, qlc drives)`` per group: its drives are the
        resources ``<prefix>.scm<j>``, ``<prefix>.qlc<j>`` and
        ``<prefix>.qlc<j>.ops`` (``j`` counted within the group), with
        ``<drive>.pcie.up`` and ``<drive>.pcie.down`` when ``drive_link`` is
        given; resources are created group by group, SCM then QLC.
    read_chunk_B : float
        Logical bytes compressed together (bytes): the QLC read-operation unit.
    drive_link : PcieLink or None
        Host PCIe link of every drive (``None``: not modelled).
    queue_prefix : str or None
        Request queues are ``<queue_prefix>.scm<i>`` and ``.qlc<i>`` with
        ``i`` the drive's index over all groups; ``None``: the drive's
        resource name.
    """
    flows = sim.flows
    link_Bps = pcie_link_Bps(drive_link)
    drives = TierDrives(
        sim=sim,
        scm_spec=scm_spec,
        qlc_spec=qlc_spec,
        scm=[],
        qlc=[],
        qlc_ops=[],
        scm_group=[],
        qlc_group=[],
        scm_links=[],
        qlc_links=[],
        link_Bps=link_Bps,
        scm_state=[],
        qlc_state=[],
        scm_queue_names=[],
        qlc_queue_names=[],
    )

    def link(name: str) -> tuple[Resource, Resource]:
        return (
            flows.add_resource(f"{name}.pcie.up", link_Bps),
            flows.add_resource(f"{name}.pcie.down", link_Bps),
        )

    for g, (prefix, n_scm, n_qlc) in enumerate(groups):
        for j in range(n_scm):
            name = f"{prefix}.scm{j}"
            drives.scm.append(flows.add_resource(name, scm_spec.read_bandwidth))
            if drive_link is not None:
                drives.scm_links.append(link(name))
            drives.scm_group.append(g)
            drives.scm_queue_names.append(
                name if queue_prefix is None else f"{queue_prefix}.scm{len(drives.scm) - 1}"
            )
        for j in range(n_qlc):
            name = f"{prefix}.qlc{j}"
            drives.qlc.append(flows.add_resource(name, qlc_spec.read_bandwidth))
            read_iops = qlc_spec.known_iops("read")
            if read_iops is not None:  # a drive file without IOPS: no operation-rate limit
                drives.qlc_ops.append(flows.add_resource(f"{name}.ops", read_iops * read_chunk_B))
            if drive_link is not None:
                drives.qlc_links.append(link(name))
            drives.qlc_group.append(g)
            drives.qlc_queue_names.append(
                name if queue_prefix is None else f"{queue_prefix}.qlc{len(drives.qlc) - 1}"
            )
    drives.scm_state = [SsdState(float(scm_spec.capacity)) for _ in drives.scm]
    drives.qlc_state = [SsdState(float(qlc_spec.capacity)) for _ in drives.qlc]
    return drives


# ------------------------------------------------------------ request picks
def pick_replicas(tier: ScmQlcTier, rng: np.random.Generator) -> list[int]:
    """SCM drives (in service, distinct) a write's ``scm_copies`` replicas land on."""
    live = tier.scm_in_service  # a failed SCM drive takes no new replica
    copies = tier.spec.scm_copies
    return [int(live[i]) for i in rng.choice(len(live), size=min(copies, len(live)), replace=False)]


def pick_scm(tier: ScmQlcTier, rng: np.random.Generator) -> int:
    """An SCM drive in service, uniformly (a read of buffered bytes, a migration read)."""
    live = tier.scm_in_service
    return int(live[int(rng.integers(len(live)))])


def read_picks(where: ReadWeights) -> ReadPicks:
    """Fraction of a read's bytes in SCM and the cumulative QLC-drive weights of its reads.

    Computed once per repetition (or kind of call) so request fidelity draws
    a drive per read with one uniform number (``None`` when nothing is on QLC).
    """
    f_scm, qlc_w, _ = where
    total = qlc_w.sum()
    if total <= 0:
        return f_scm, None
    cdf = np.cumsum(qlc_w / total)
    cdf /= cdf[-1]
    return f_scm, cdf


@dataclass(frozen=True)
class ReadPick:
    """The drives request fidelity reads one operation from (:func:`pick_read`).

    Attributes
    ----------
    medium : {"scm", "qlc"}
        Where the bytes are read.
    drives : list of int
        Drive indices in the medium, read in parallel.
    decode_s : float
        Decode time (s) of a reconstructed read (0 otherwise).
    degraded : bool
        Whether the read reconstructs a lost strip (or reads it where the
        rebuild wrote it) instead of reading its drive.
    """

    medium: Medium
    drives: list[int]
    decode_s: float = 0.0
    degraded: bool = False


def pick_read(
    tier: ScmQlcTier, picks: ReadPicks, size_B: float, rng: np.random.Generator
) -> ReadPick:
    """Request fidelity: where one read of ``size_B`` bytes goes, drawn by ``picks``.

    SCM with the probability of the bytes there (a drive in service,
    uniformly), else a QLC drive by its share of the object's stripes; a
    drive whose strips are lost is read from its survivors
    (:meth:`ScmQlcTier.reconstruct <flashsim.components.tier.ScmQlcTier.reconstruct>`).
    """
    f_scm, qlc_cdf = picks
    if rng.random() < f_scm or qlc_cdf is None:
        return ReadPick("scm", [pick_scm(tier, rng)])
    # As rng.choice(p=...) draws it: one uniform against the cumulative weights.
    index = int(qlc_cdf.searchsorted(rng.random(), side="right"))
    if tier.qlc_lost:
        weights = np.diff(qlc_cdf, prepend=0.0)
        read, decode_s = tier.reconstruct(index, size_B, weights, rng)
        if read != [index] or decode_s > 0:
            return ReadPick("qlc", read, decode_s, degraded=True)
    return ReadPick("qlc", [index])
