"""A failed QLC drive of a VAST system: the erasure-coded rebuild against foreground reads.

VAST erasure-codes every QLC stripe ``ec_data + ec_parity`` and spreads the
stripes over all the QLC drives, so when one fails its chunks are rebuilt from
``ec_data`` surviving chunks each, read from every survivor, and written into
free space on every survivor (:mod:`flashsim.components.rebuild`,
``ArrayGeometry.erasure``).  The ``vast-rebuild`` phase runs that rebuild as
background flows on the QLC drive resources (each drive's capacity is its read
bandwidth, a written byte costs ``read / write`` bandwidth of it, as the
tier's migration does), with a rebuild-rate policy, while a saturating read of
aged data (spread evenly over every QLC drive, read in ``rsize`` RPCs: the
failed drive's strips are degraded reads, reconstructed from ``ec_data``
survivors each, :meth:`ScmQlcTier.degraded_reads
<flashsim.components.tier.ScmQlcTier.degraded_reads>`) runs or not, and
reports the rebuild time and the foreground read bandwidth before and at the
start of the rebuild (the reader's path is fixed when it starts, as every
flow's: the penalty it pays is that of a rebuild not yet begun).  The failure
and the rebuild are the pool's own
(:class:`~flashsim.systems.vast.target.VastPool`): the phase leaves them in
the system's state (the drive rebuilt onto the survivors, out of service until
replaced), and every ``vast-rebuild`` starts by healing the pool (running
rebuilds stop, drives out of service are replaced).  Flow fidelity only; the
NVMe fabric and the CNodes' decode are not on the rebuild's path (the drives
bound it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

import numpy as np
from pydantic import Field

from flashsim.components.rebuild import RebuildPolicy
from flashsim.components.tier_life import REBUILD_CHUNK_B
from flashsim.config import StrictModel, UnitFraction
from flashsim.engine.flows import Flow, Resource
from flashsim.measure.results import PhaseDetails, PhaseResult, cell

if TYPE_CHECKING:
    from flashsim.systems.vast.target import VastPool
    from flashsim.systems.vast.topology import VastTopology


class VastRebuildPhase(StrictModel):
    """One QLC drive fails; its erasure-coded chunks are rebuilt on the survivors.

    Attributes
    ----------
    drive : int
        Index of the failed QLC drive (over all DNodes).
    used : float
        Share of the failed drive holding data to rebuild.
    priority : float
        Share (0, 1] of each drive's time the rebuild is guaranteed under load.
    load : {"read", "idle"}
        A saturating read of aged data during the rebuild, or none.
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["vast-rebuild"]
    drive: Annotated[int, Field(ge=0)] = Field(0, description="Index of the failed QLC drive.")
    used: UnitFraction = Field(1.0, description="Share of the failed drive holding data.")
    priority: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        RebuildPolicy.model_fields["priority"].default,
        description=(
            "Share of each drive's time the rebuild is guaranteed under load (ASSUMED default "
            "0.3, RebuildPolicy's: Broadcom MegaRAID's default rebuild rate)."
        ),
    )
    load: Literal["read", "idle"] = Field(
        "read", description="A saturating read of aged data during the rebuild, or none."
    )


@dataclass(frozen=True, kw_only=True)
class VastRebuildDetails(PhaseDetails):
    """``PhaseResult.extra`` of a ``vast-rebuild`` phase.

    Attributes
    ----------
    ec_data, ec_parity, drives : int
        Erasure-code geometry and the QLC drives the stripes spread over.
    rebuild_volume_B : float
        Bytes reconstructed.
    rebuild_time_s, rebuild_alone_s : float
        Rebuild time (s) under the phase's load, and on idle drives.
    read_before_Bps, read_during_Bps : float
        Foreground read bandwidth (bytes/s) healthy and while rebuilding, as
        the rebuild starts (degraded reads, nothing rebuilt yet; NaN without load).
    """

    ec_data: int
    ec_parity: int
    drives: int
    rebuild_volume_B: float
    rebuild_time_s: float
    rebuild_alone_s: float
    read_before_Bps: float
    read_during_Bps: float

    def findings(self) -> list[str]:
        """Rebuild time and what the readers keep."""
        lines = [
            f"EC {self.ec_data}+{self.ec_parity} over {self.drives} QLC drives: "
            f"{self.rebuild_volume_B / 1e12:.2f} TB rebuilt in {self.rebuild_time_s / 3600:.2f} h "
            f"({self.rebuild_alone_s / 3600:.2f} h on idle drives)"
        ]
        if not math.isnan(self.read_during_Bps):
            lines.append(
                f"aged reads {self.read_before_Bps / 1e9:.1f} GB/s healthy, "
                f"{self.read_during_Bps / 1e9:.1f} GB/s while rebuilding"
            )
        return lines

    def columns(self) -> dict[str, str]:
        """EC geometry, volume, rebuild time (and alone), aged reads before and during."""
        return {
            "EC": f"{self.ec_data}+{self.ec_parity}",
            "drives": str(self.drives),
            "rebuilt TB": cell(self.rebuild_volume_B, ".2f", 1e12),
            "rebuild h": cell(self.rebuild_time_s, ".2f", 3600),
            "alone h": cell(self.rebuild_alone_s, ".2f", 3600),
            "read before GB/s": cell(self.read_before_Bps, ".1f", 1e9),
            "read during GB/s": cell(self.read_during_Bps, ".1f", 1e9),
        }


def run_vast_rebuild(system: VastTopology, phase: VastRebuildPhase, pool: VastPool) -> PhaseResult:
    """Fail QLC drive ``phase.drive`` of ``pool`` and rebuild it under the phase's load.

    The study fails one drive of a complete, healthy pool, so it starts by
    healing the pool (:meth:`~flashsim.systems.vast.target.VastPool.heal`:
    running rebuilds stop, drives out of service are replaced by fresh ones);
    wear and the SCM buffer are kept.  The failure
    and its rebuild go through the pool (:class:`~flashsim.systems.vast.target.VastPool`)
    with the phase's ``used`` and ``priority``, and the state stays at the end:
    the drive's data rebuilt on the survivors, the drive out of service until
    replaced.
    """
    qlc = system.qlc
    if phase.drive >= len(qlc):
        raise ValueError(
            f"phase {phase.name!r}: drive {phase.drive} does not exist; the system has "
            f"{len(qlc)} QLC drives (0..{len(qlc) - 1})"
        )
    pool.heal()
    tier = system.model.tier
    spec = system.qlc_spec
    volume = phase.used * float(spec.capacity)
    if not volume > 0:
        raise ValueError(f"phase {phase.name!r}: used(={phase.used}) leaves nothing to rebuild")
    sim = system.sim
    before = during = math.nan
    if phase.load == "read":
        before = _read_rate(system, [qlc[int(i)] for i in system.tier.qlc_in_service])
    start = sim.now
    system.tier.take_out("qlc", phase.drive)
    _, alone, _ = pool.rebuild_path(phase.drive)
    reader: Flow | None = None
    if phase.load == "read":
        # Aged data spread evenly over every QLC drive, read in rsize RPCs: the failed
        # drive's strips reconstructed from ec_data survivors each (degraded reads).
        layout = np.full(len(qlc), 1.0 / len(qlc))
        reads, _ = system.tier.degraded_reads(layout, float(system.model.client.mount.rsize))
        reader = sim.flows.start_flow(
            1e30,
            [(q, float(w)) for q, w in zip(qlc, reads, strict=True) if w > 0],
            name=f"{phase.name}.reads",
        )
    policy = RebuildPolicy.model_validate({"priority": phase.priority, "idle_fraction": 1.0})
    rebuild = pool.start_rebuild(phase.drive, volume, policy, name=f"{phase.name}.rebuild")
    if rebuild is None:
        raise ValueError(f"phase {phase.name!r}: no surviving QLC drive to rebuild onto")
    if reader is not None:
        sim.flows.solve_now()
        during = sim.flows.rate_now_Bps(reader)
    sim.run(rebuild.done)
    elapsed = sim.now - start
    if reader is not None:
        sim.flows.cancel_flow(reader)
    return PhaseResult(
        name=phase.name,
        operation="read",
        bandwidth_Bps=0.0 if math.isnan(during) else during,
        iops=0.0,
        ranks=0,
        transfer_size_B=REBUILD_CHUNK_B,
        sim_time_s=elapsed,
        bytes_B=volume,
        fidelity="flow",
        extra=VastRebuildDetails(
            ec_data=tier.ec_data,
            ec_parity=tier.ec_parity,
            drives=len(qlc),
            rebuild_volume_B=volume,
            rebuild_time_s=elapsed,
            rebuild_alone_s=volume / alone,
            read_before_Bps=before,
            read_during_Bps=during,
        ),
    )


def _read_rate(system: VastTopology, drives: list[Resource]) -> float:
    """Bytes/s a saturating read spread evenly over ``drives`` gets now."""
    flow = system.sim.flows.start_flow(1e30, [(q, 1.0 / len(drives)) for q in drives])
    system.sim.flows.solve_now()
    rate = system.sim.flows.rate_now_Bps(flow)
    system.sim.flows.cancel_flow(flow)
    return rate
