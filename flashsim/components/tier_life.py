"""The life of an SCM/QLC tier over a whole run: fill, wear, failures, rebuild, fast-forward.

:class:`TierLife` is the :class:`~flashsim.components.target_state.StatefulTarget`
of one :class:`~flashsim.components.tier.ScmQlcTier` over its drives
(:class:`~flashsim.components.tier_drives.TierDrives`): a VAST system's one
shared tier (``<system>.tier``, :mod:`flashsim.systems.vast.target`) or one
tier target of a Lustre OSS (:class:`~flashsim.components.tier_target.TierTarget`).
Drive indices: ``0 .. q-1`` are the QLC drives (as the ``vast-rebuild``
phase's ``drive``), ``q .. q+s-1`` the SCM drives, ``q`` QLC and ``s`` SCM
drives in the order of :class:`~flashsim.components.tier_drives.TierDrives`.
It owns, for as long as the simulation lives:

* SCM fill and what has migrated: the tier's buffer and object locations
  (:class:`~flashsim.components.tier.ScmQlcTier`), moved by the flows of
  every phase and by :meth:`TierLife.age`, which fast-forwards the buffer's
  fluid policy over bytes no flow simulates (the level held at
  ``migrate_above``, the rest migrated and striped to QLC, wearing it);
* wear: the bytes each drive received (``scm_state``/``qlc_state``,
  :meth:`TierDrives.sync_wear <flashsim.components.tier_drives.TierDrives.sync_wear>`).
  The QLC drives receive whole strips, the large sequential writes of their
  endurance rating, so the model gives them no garbage-collection
  amplification: ``write_amplification`` is 1 and ``write_loss`` 0 (the
  ``vast-endurance`` phase's ``qlc_write_amplification`` is a what-if of
  that study only), and there is no dead space to TRIM;
* failures: a failed drive leaves service at once (new writes, stripes and
  reads avoid it: :meth:`ScmQlcTier.take_out <flashsim.components.tier.ScmQlcTier.take_out>`)
  and its rebuild starts under ``tier.rebuild`` as background flows on the
  surviving drives (:class:`~flashsim.components.rebuild.RebuildFlows`,
  erasure layout: each survivor reads ``k / (n - f)`` and writes
  ``1 / (n - f)`` per rebuilt byte, over its PCIe links too when the drives
  have them).  Until it ends, reads of a failed QLC drive's strips are
  degraded: reconstructed from ``ec_data`` survivors, less as the rebuild
  progresses (:meth:`TierLife.qlc_rebuilt_fraction`,
  :meth:`ScmQlcTier.degraded_reads <flashsim.components.tier.ScmQlcTier.degraded_reads>`);
  a failed SCM drive's replicas are read from their other copy.  A QLC
  drive's rebuild reconstructs ``tier.drive_fill`` of its capacity from
  ``ec_data`` survivors; an SCM drive's, the replicas of the buffered bytes
  it held, copied from their other replica.  When the rebuild ends the tier
  is healthy (full redundancy); the drive stays out of service until
  :meth:`TierLife.replace_drive` puts a fresh one in its slot.  More QLC
  drives down at once than ``ec_parity`` (SCM: than ``scm_copies - 1``) lose
  data.

The rebuild is a flow in both fidelities: in request fidelity reads visit the
survivors that reconstruct a lost strip but do not queue behind the rebuild
(as for Lustre, :mod:`flashsim.components.rebuild`).
"""

from __future__ import annotations

import math
from typing import Literal

import simpy

from flashsim.components.rebuild import (
    ArrayGeometry,
    RebuildFlows,
    RebuildPolicy,
    rebuild_traffic,
)
from flashsim.components.ssd import SsdState
from flashsim.components.target_state import TargetStatus, drive_failure_times
from flashsim.components.tier import ScmQlcTier, TierSpec
from flashsim.components.tier_drives import TierDrives
from flashsim.engine.flows import Resource
from flashsim.engine.simulation import Simulation
from flashsim.units import MIB

Medium = Literal["scm", "qlc"]

#: Bytes one rebuild operation reconstructs (as the ``vast-rebuild`` phase).
REBUILD_CHUNK_B = MIB
#: Tier object the fast-forward's production bytes belong to (incompressible: the
#: tier's default entropy, as a trace's data; seed 002 Sec. III-B "only modestly compressible").
PRODUCTION_OBJECT = "fast-forward:production"


class TierLife:
    """The state of one SCM/QLC tier for the whole run: a :class:`StatefulTarget`.

    Parameters
    ----------
    name : str
        Dotted name of the target (its status, failure streams and rebuilds).
    tier : ScmQlcTier
        The tier whose buffer, locations and service this life moves (its
        simulation and its parameters, ``tier.spec``: rebuild policy,
        ``drive_fill``, geometry, are the life's).
    drives : TierDrives
        The tier's drives, their resources and wear states.
    """

    def __init__(self, name: str, tier: ScmQlcTier, drives: TierDrives) -> None:
        self.sim: Simulation = tier.sim
        self.name = name
        self.spec: TierSpec = tier.spec
        spec = tier.spec
        self.tier = tier
        self.tier_drives = drives
        #: Share of a failed QLC drive's capacity its rebuild reconstructs (``tier.drive_fill``;
        #: a production phase's ``fill`` sets it).
        self.rebuild_fill = float(spec.drive_fill)
        #: Drives whose data is not rebuilt yet -> their running rebuild.
        self._pending: dict[int, RebuildFlows] = {}
        self._data_lost = False
        tier.rebuild_progress = self.qlc_rebuilt_fraction

    # ------------------------------------------------------------ indices
    @property
    def drives(self) -> int:
        """QLC then SCM drives of the tier."""
        return len(self.tier_drives.qlc) + len(self.tier_drives.scm)

    def _split(self, drive: int) -> tuple[Medium, int]:
        """``(medium, index in the medium)`` of tier drive ``drive``.

        Raises ``ValueError("drive: ...")`` outside the tier.
        """
        q, s = len(self.tier_drives.qlc), len(self.tier_drives.scm)
        if isinstance(drive, bool) or not isinstance(drive, int) or not 0 <= drive < q + s:
            raise ValueError(
                f"drive: {drive!r} is not a drive of {self.name} (0..{q - 1} are its QLC "
                f"drives, {q}..{q + s - 1} its SCM drives)"
            )
        return ("qlc", drive) if drive < q else ("scm", drive - q)

    def _out(self, medium: Medium) -> set[int]:
        tier = self.tier
        return tier.qlc_out if medium == "qlc" else tier.scm_out

    # ------------------------------------------------------------- status
    def status(self) -> TargetStatus:
        """The tier now: QLC wear (mean drive in service), SCM fill, failures, rebuild."""
        tier = self.tier
        self.tier_drives.sync_wear(tier)
        live = tier.qlc_in_service
        written = [self.tier_drives.qlc_state[int(i)].bytes_written_B for i in live]
        running = [r for r in self._pending.values() if math.isnan(r.end_s)]
        progress = None
        if running:
            progress = sum(r.moved_B() for r in running) / sum(r.volume_B for r in running)
        buf = tier.buffer
        return TargetStatus(
            target=self.name,
            write_amplification=1.0,
            write_loss=0.0,
            host_written_B=sum(written) / len(written) if written else 0.0,
            dead_B=0.0,
            failed_drives=tuple(sorted(self._pending)),
            rebuild_progress=progress,
            data_lost=self._data_lost,
            buffer_fill=buf.level_now_B() / buf.capacity_B,
        )

    # ----------------------------------------------------------- failures
    def fail_drive(self, drive: int) -> None:
        """Drive ``drive`` fails now: out of service, its rebuild starts at once.

        A drive rebuilt but not replaced that fails again is taken as replaced
        first (the drive in its slot fails), as a healthy Lustre target's
        drive would.  Raises ``ValueError("drive: ...")`` for a drive outside
        the tier or down and not yet rebuilt.
        """
        medium, index = self._split(drive)
        if drive in self._pending:
            raise ValueError(
                f"drive: {medium.upper()} drive {drive} of {self.name} is already down "
                "(its rebuild has not ended)"
            )
        if index in self._out(medium):
            self.replace_drive(drive)
        spec, tier = self.spec, self.tier
        if medium == "qlc":
            volume = self.rebuild_fill * float(self.tier_drives.qlc_spec.capacity)
        else:
            # The replicas of the buffered bytes it held (spread evenly over the drives in
            # service), each copied from its other replica.
            live = tier.scm_in_service.size
            volume = spec.scm_copies * tier.buffer.level_now_B() / live
        tier.take_out(medium, index)
        self.start_rebuild(drive, volume, spec.rebuild)
        lost = ", data lost" if self._data_lost else ""
        self.sim.state_changed(f"{self.name}: {medium.upper()} drive {drive} failed{lost}")

    def start_rebuild(
        self, drive: int, volume_B: float, policy: RebuildPolicy, name: str | None = None
    ) -> RebuildFlows | None:
        """Record ``drive`` (already out of service) as down and rebuild ``volume_B`` of it.

        The rebuild's flows read and write the surviving drives of its medium
        (every drive out of service excluded); the drive counts in
        :attr:`TargetStatus.failed_drives` until they are done.  Returns the
        rebuild (``None`` when the drive held nothing: healthy at once).
        """
        medium, _ = self._split(drive)
        down_now = [d for d in self._pending if self._split(d)[0] == medium]
        path, alone, redundancy = self.rebuild_path(drive)
        if len({*down_now, drive}) > redundancy:
            self._data_lost = True
        if not volume_B > 0 or not path:
            self._pending.pop(drive, None)
            if medium == "qlc" and path:  # it held nothing: whole at once
                self.tier.rebuilt(drive)
            return None
        rebuild = RebuildFlows(
            self.sim.flows,
            name or f"{self.name}.rebuild{drive}",
            path,
            volume_B,
            alone,
            policy,
            REBUILD_CHUNK_B,
        )
        self._pending[drive] = rebuild
        rebuild.done.callbacks.append(lambda _ev: self._rebuilt(drive, rebuild))
        return rebuild

    def rebuild_path(self, drive: int) -> tuple[list[tuple[Resource, float]], float, int]:
        """Where rebuilding ``drive`` now reads and writes, its rate alone, and the redundancy.

        Returns the flow path per rebuilt byte over the drives in service of
        ``drive``'s medium (read ``k / (n - f)`` and write ``1 / (n - f)`` each,
        a written byte costing ``read / write`` bandwidth of a drive, and its
        PCIe links the bytes read up and written down when the drives have
        them), the rate (bytes/s) it reaches on idle drives, and how many
        drives of the medium may be down at once without losing data.  The
        path is empty when no drive of the medium survives.
        """
        medium, index = self._split(drive)
        spec, own = self.spec, self.tier_drives
        out = sorted(self._out(medium) | {index})
        if medium == "qlc":
            drives: list[Resource] = own.qlc
            links = own.qlc_links
            geometry = ArrayGeometry.erasure(
                spec.ec_data, spec.ec_parity, len(drives), REBUILD_CHUNK_B
            )
            write_cost = own.qlc_write_cost
            read_Bps = float(own.qlc_spec.read_bandwidth)
        else:
            drives = own.scm
            links = own.scm_links
            geometry = ArrayGeometry.erasure(1, spec.scm_copies - 1, len(drives), REBUILD_CHUNK_B)
            write_cost = self.tier.scm_write_cost
            read_Bps = float(own.scm_spec.read_bandwidth)
        if len(out) >= len(drives):
            return [], 0.0, geometry.redundancy
        traffic = rebuild_traffic(geometry, out)
        pairs = list(enumerate(zip(traffic.read_per_B, traffic.write_per_B, strict=True)))
        path = [(drives[i], float(r + w * write_cost)) for i, (r, w) in pairs if r + w > 0]
        alone = read_Bps / max(w for _, w in path)
        if links:
            hops = [(links[i][0], float(r)) for i, (r, _) in pairs if r > 0]
            hops += [(links[i][1], float(w)) for i, (_, w) in pairs if w > 0]
            alone = min(alone, own.link_Bps / max(w for _, w in hops))
            path += hops
        return path, alone, geometry.redundancy

    def qlc_rebuilt_fraction(self) -> float:
        """Share [0, 1] of the failed QLC drives' strips their running rebuilds re-created.

        The degraded reads' ``rebuilt_fraction`` (:meth:`ScmQlcTier.degraded_state
        <flashsim.components.tier.ScmQlcTier.degraded_state>`), as one Lustre
        target's rebuild progress over every drive it has down.
        """
        q = len(self.tier_drives.qlc)
        running = [r for d, r in self._pending.items() if d < q]
        volume = sum(r.volume_B for r in running)
        return min(1.0, sum(r.moved_B() for r in running) / volume) if volume > 0 else 0.0

    def rebuilding(self, drive: int) -> bool:
        """Whether ``drive``'s data is still being rebuilt."""
        return drive in self._pending

    def rebuild_of(self, drive: int) -> RebuildFlows | None:
        """The rebuild of ``drive`` running now (its ``done`` event ends it), or ``None``."""
        return self._pending.get(drive)

    def _rebuilt(self, drive: int, rebuild: RebuildFlows) -> None:
        """A rebuild ended: the drive's data is whole again (the drive stays out of service)."""
        if self._pending.get(drive) is rebuild:
            del self._pending[drive]
            if drive < len(self.tier_drives.qlc):
                self.tier.rebuilt(drive)
            self.sim.state_changed(f"{self.name}: drive {drive} rebuilt")

    def replace_drive(self, drive: int) -> None:
        """A fresh drive takes ``drive``'s slot: in service again, with no wear.

        A rebuild still running goes on (VAST rebuilds into the survivors'
        free space, not into the replacement) and the drive counts as failed
        until it ends; a replaced QLC drive takes new stripes from then on.
        Replacing a drive in service gives it a fresh one too.
        """
        medium, index = self._split(drive)
        own = self.tier_drives
        own.sync_wear(self.tier)
        self.tier.put_back(medium, index)
        states = own.qlc_state if medium == "qlc" else own.scm_state
        old = states[index]
        fresh = SsdState(old.capacity_B)
        # QLC counters restart with the tier's (zeroed by put_back); SCM's are shared.
        fresh.flow_bytes_B = 0.0 if medium == "qlc" else old.flow_bytes_B
        states[index] = fresh

    def heal(self) -> None:
        """Every drive in service and none down: stop the rebuilds, replace the drives out.

        Wear and the SCM buffer are kept.  The ``vast-rebuild`` study starts
        from a healthy tier this way (as Lustre's ``rebuild`` does).
        """
        for rebuild in self._pending.values():
            rebuild.stop()
        self._pending.clear()
        tier = self.tier
        for index in sorted(tier.qlc_lost):  # a complete tier: every strip whole
            tier.rebuilt(index)
        self._data_lost = False
        q = len(self.tier_drives.qlc)
        for index in sorted(tier.qlc_out):
            self.replace_drive(index)
        for index in sorted(tier.scm_out):
            self.replace_drive(q + index)

    # ------------------------------------------------------- TRIM, aging
    def trim(self) -> simpy.Event:
        """No TRIM in the model: VAST's QLC receives whole strips, so there is no dead space.

        Returns an event already succeeded with 0.0 s.
        """
        event = self.sim.env.event()
        event.succeed(0.0)
        return event

    def failure_times(self, afr: float) -> list[float]:
        """First failure time (s) of each drive at AFR ``afr``, from its own seeded stream."""
        return drive_failure_times(self.sim, self.name, self.drives, afr)

    def age(self, host_B: float) -> None:
        """Fast-forward: ``host_B`` user bytes written to the tier over time no flow simulates.

        The SCM buffer's fluid policy integrated at once
        (:meth:`ScmQlcTier.fast_forward <flashsim.components.tier.ScmQlcTier.fast_forward>`):
        the buffer ends at its hold level (or below, for less), what it held
        before migrates first, and the rest is striped to the QLC drives in
        service as incompressible data, wearing them as a simulated migration
        does; the SCM drives get ``scm_copies`` writes per byte.
        """
        if not (host_B >= 0 and math.isfinite(host_B)):
            raise ValueError(f"host_B: {host_B!r} must be a finite number of bytes >= 0")
        self.tier.fast_forward(PRODUCTION_OBJECT, float(host_B))

    def reset(self) -> None:
        """Fresh drives, every drive in service, no rebuild, an empty SCM buffer.

        Running rebuilds stop; what the buffer held migrates to QLC at once
        (the files the run wrote stay readable, as data older than the fresh
        state); every drive's wear restarts from zero.
        """
        own, tier = self.tier_drives, self.tier
        self.heal()
        self.rebuild_fill = float(self.spec.drive_fill)
        tier.drain_all()
        own.sync_wear(tier)
        tier.qlc_phys_written_B[:] = 0.0
        for i, old in enumerate(own.scm_state):
            fresh = SsdState(old.capacity_B)
            fresh.flow_bytes_B = old.flow_bytes_B
            own.scm_state[i] = fresh
        for i, old in enumerate(own.qlc_state):
            own.qlc_state[i] = SsdState(old.capacity_B)
