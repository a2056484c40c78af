"""Drive wear of a ``vast`` system: SCM endurance and QLC wear from migration (issue 9).

Write path (seed 002 Sec. II; slides 004 "VAST write path in a nutshell") and
what each step writes, per user byte:

* SCM: the CNode replicates every write synchronously to ``scm_copies`` (2)
  Optane drives -- ``scm_copies`` bytes spread over all SCM drives (flow
  fidelity spreads them evenly; request fidelity picks the drives of each
  RPC at random, uniformly); nothing else in the modelled write path writes
  to SCM (migration only reads it back);
* QLC: full stripes are compressed to a fraction ``c`` of their logical size
  and erasure-coded ``k + m``; a stripe compressed to ``c`` keeps the strip
  size and spans ``k' = ceil(c k)`` data strips plus ``m`` parity
  (:class:`~flashsim.components.tier.ScmQlcTier`), so migration writes
  ``c (k' + m) / k'`` bytes per user byte -- ``(k + m) / k`` for
  incompressible data, slightly more than ``c (k + m) / k`` for compressible
  data because narrower stripes carry the same parity -- spread over all QLC
  drives (``placement = "rotate"``) or over the first ``k' + m``
  (``"packed"``).  The QLC drives receive whole strips, the large sequential
  writes of their sequential endurance rating, so their own amplification
  beyond that rating is 1 unless ``qlc_write_amplification`` says otherwise.

The ``vast-endurance`` phase (:class:`VastEndurancePhase`) reports, for a
daily write volume: per-drive SCM and QLC bytes per day, drive writes per
day against the datasheet rating, the fraction of it used per year and the
projected drive life (:mod:`flashsim.components.endurance`), and the SCM
buffer's turnover time.  The headline numbers are ANALYTIC (the steady write
path above, scaled to the daily volume); the phase then CHECKS them with a
simulated sample: it writes ``sample`` user bytes (O_DIRECT, the phase's
fidelity), migrates them all to QLC, and measures the bytes each drive
received (:func:`sync_wear`: request-fidelity replica visits and flow
counters of the SCM ingest and the migration), reported as ``sim_*``.

State (issue 17): the phase runs on the system's state and leaves it there.
The sample's bytes stay on the drives' wear (the pool's ``host_written_B``,
:mod:`flashsim.systems.vast.target`), the sample's data on QLC, and the SCM
buffer empty, as its final migration leaves it; nothing is reset.  Per-drive
bytes are differences, so earlier wear does not change the phase's numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from flashsim.components.endurance import (
    DAY_S,
    DriveWear,
    bytes_written,
    drive_wear,
)
from flashsim.components.tier import compressed_fraction
from flashsim.config import Bandwidth, Bytes, StrictModel, field_error
from flashsim.measure.results import PhaseDetails, PhaseResult, cell
from flashsim.systems.vast.phases import VastIorPhase
from flashsim.units import format_quantity

if TYPE_CHECKING:
    from flashsim.systems.vast.topology import VastTopology


class VastEndurancePhase(StrictModel):
    """Drive wear at a daily write volume (``workload = "vast-endurance"``).

    Attributes
    ----------
    daily_writes : float
        User bytes written per day, as a rate (bytes/s; ``"2.2 PB/day"``).
    compression : float
        Logical over stored size of the written data (>= 1; 1 is incompressible).
    qlc_write_amplification : float
        Flash bytes per byte a QLC drive receives, beyond its sequential rating (>= 1).
    sample : float
        User bytes (B) the simulated check writes and migrates.
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["vast-endurance"]
    daily_writes: Bandwidth = Field(
        description='User bytes written per day, as a rate (e.g. "2.2 PB/day").'
    )
    compression: Annotated[float, Field(ge=1.0)] = Field(
        1.0,
        description="Logical over stored size of the written data (>= 1; 1 = incompressible, "
        "as seed 002's ior-incompress); capped by tier.min_compressed_fraction.",
    )
    qlc_write_amplification: Annotated[float, Field(ge=1.0)] = Field(
        1.0,
        description="Flash bytes per byte a QLC drive receives beyond the workload of its "
        "sequential endurance rating (1: VAST writes whole strips).",
    )
    sample: Bytes = Field(
        "64 GiB", description="User bytes the simulated check writes (O_DIRECT) and migrates."
    )
    nodes: Annotated[int, Field(ge=1)] = Field(1, description="Client nodes writing the sample.")
    ranks_per_node: Annotated[int, Field(ge=1)] = Field(
        8, description="Processes per node writing the sample (file per process)."
    )
    transfer_size: Bytes = Field("1 MiB", description="Bytes per write call of the sample.")
    fidelity: Literal["flow", "request"] | None = Field(
        None, description="Fidelity of the simulated sample (default: the scenario's)."
    )

    @model_validator(mode="after")
    def _sample_holds_a_write_per_rank(self) -> VastEndurancePhase:
        """The sample must give every rank at least one write call."""
        least = self.transfer_size * self.nodes * self.ranks_per_node
        if self.sample < least:
            raise field_error(
                "sample",
                f"must hold at least one {format_quantity(self.transfer_size, 'bytes')} write "
                f"per rank ({format_quantity(least, 'bytes')} for {self.nodes} x "
                f"{self.ranks_per_node} ranks)",
            )
        return self


# ------------------------------------------------------------------ wear state
def sync_wear(system: VastTopology) -> None:
    """Bring every drive's :class:`~flashsim.components.ssd.SsdState` up to now.

    :meth:`TierDrives.sync_wear <flashsim.components.tier_drives.TierDrives.sync_wear>`
    of the system's drives and tier: SCM replicas of flow-written bytes
    evenly over the SCM drives (request-fidelity replicas were counted as
    they landed), QLC the physical bytes the migration wrote to each drive.
    """
    system.drives.sync_wear(system.tier)


# ------------------------------------------------------------------ write path
@dataclass(frozen=True)
class WritePath:
    """Bytes each medium receives per user byte written, and how they spread.

    Attributes
    ----------
    compressed_fraction : float
        Stored over logical size of the data.
    stripe_width : int
        QLC drives a stripe of that data spans (``k' + m``).
    scm_per_user : float
        SCM bytes written per user byte (all drives together).
    qlc_per_user : float
        QLC bytes written per user byte (all drives together).
    scm_busiest_share, qlc_busiest_share : float
        Share of those bytes the busiest drive receives in steady state.
    """

    compressed_fraction: float
    stripe_width: int
    scm_per_user: float
    qlc_per_user: float
    scm_busiest_share: float
    qlc_busiest_share: float


def write_path(system: VastTopology, compression: float, qlc_wa: float = 1.0) -> WritePath:
    """The steady write path of ``system`` for data of compression ratio ``compression``.

    Raises
    ------
    ValueError
        For ``compression < 1`` or ``qlc_wa < 1``.
    """
    if not (math.isfinite(compression) and compression >= 1.0):
        raise ValueError(f"compression(={compression!r}) must be a ratio >= 1")
    if not (math.isfinite(qlc_wa) and qlc_wa >= 1.0):
        raise ValueError(f"qlc_write_amplification(={qlc_wa!r}) must be >= 1")
    spec = system.model.tier
    c = compressed_fraction(8.0 / compression, spec.min_compressed_fraction)
    width = system.tier.stripe_width(c)
    data = width - spec.ec_parity
    busiest = 1.0 / len(system.qlc) if spec.placement == "rotate" else 1.0 / width
    return WritePath(
        compressed_fraction=c,
        stripe_width=width,
        scm_per_user=float(spec.scm_copies),
        qlc_per_user=c * width / data * qlc_wa,
        scm_busiest_share=1.0 / len(system.scm),
        qlc_busiest_share=busiest,
    )


# ------------------------------------------------------------------ simulated
@dataclass(frozen=True)
class WearSample:
    """What the simulated sample moved (bytes, logical unless named physical).

    Attributes
    ----------
    user_B : float
        User bytes that entered the SCM buffer.
    migrated_B : float
        User bytes migrated to QLC.
    scm_B, qlc_B : numpy.ndarray
        Bytes each SCM / QLC drive received (physical).
    sim_time_s : float
        Simulated seconds of the sample (writes and migration).
    fidelity : str
        Fidelity the writes ran at.
    """

    user_B: float
    migrated_B: float
    scm_B: np.ndarray
    qlc_B: np.ndarray
    sim_time_s: float
    fidelity: str

    @property
    def scm_per_user(self) -> float:
        """SCM bytes per user byte written."""
        return float(self.scm_B.sum()) / self.user_B if self.user_B > 0 else math.nan

    @property
    def qlc_per_user(self) -> float:
        """QLC bytes per user byte migrated."""
        return float(self.qlc_B.sum()) / self.migrated_B if self.migrated_B > 0 else math.nan


def simulate_sample(system: VastTopology, phase: VastEndurancePhase) -> WearSample:
    """Write ``phase.sample`` user bytes, migrate them all, and measure every drive's bytes.

    The writes are an O_DIRECT IOR phase (file per process, ``transfer_size``
    calls) at the phase's fidelity, of data whose entropy gives the phase's
    compression; then the SCM buffer is flushed to QLC.  Per-drive bytes are
    the differences of the drives' wear states (:func:`sync_wear`).  Data an
    earlier phase left in SCM is migrated before the sample, and the sample
    leaves the buffer empty (all its data on QLC).
    """
    ranks = phase.nodes * phase.ranks_per_node
    t = float(phase.transfer_size)
    calls = max(1, math.ceil(phase.sample / ranks / t))
    fidelity = phase.fidelity or system.fidelity
    ior = VastIorPhase(
        name=f"{phase.name}.sample",
        workload="ior",
        operation="write",
        nodes=phase.nodes,
        ranks_per_node=phase.ranks_per_node,
        transfer_size=f"{t!r} B",
        block_size=f"{t * calls!r} B",
        direct_io=True,
        dataset=f"{phase.name}.sample",
        data_entropy=8.0 / phase.compression,
        fidelity=fidelity,
    )
    tier = system.tier
    # Migrate what earlier phases left in SCM first, so that the window holds the sample only.
    system.sim.run(tier.buffer.flush())
    sync_wear(system)
    scm0, qlc0 = bytes_written(system.scm_state), bytes_written(system.qlc_state)
    user0, migrated0, start_s = tier.buffer.check().ingested_B, tier.migrated_B, system.sim.now
    system.run_phase(ior)
    system.sim.run(tier.buffer.flush())
    sync_wear(system)
    return WearSample(
        user_B=tier.buffer.check().ingested_B - user0,
        migrated_B=tier.migrated_B - migrated0,
        scm_B=bytes_written(system.scm_state) - scm0,
        qlc_B=bytes_written(system.qlc_state) - qlc0,
        sim_time_s=system.sim.now - start_s,
        fidelity=fidelity,
    )


# ------------------------------------------------------------------ the phase
@dataclass(frozen=True, kw_only=True)
class VastEnduranceDetails(PhaseDetails):
    """``PhaseResult.extra`` of a ``vast-endurance`` phase.

    Unprefixed wear fields are ANALYTIC (steady write path scaled to the
    daily volume); ``sim_*`` fields come from the simulated sample, scaled
    to the same daily volume.  TB = 1e12 B.

    Attributes
    ----------
    daily_writes_PB : float
        User writes per day (PB/day).
    compression : float
        Compression ratio asked for; ``compressed_fraction`` is what the tier
        stores per logical byte.
    stripe_width : int
        QLC drives a stripe spans (``k' + m``).
    scm_per_user, qlc_per_user : float
        Bytes written to each medium per user byte.
    write_buffer_TB, turnover_minutes : float
        SCM write buffer (user bytes) and the time the daily volume takes to
        write it once (min).
    scm_sustained_write_GBps, load_fraction : float
        User write rate (GB/s) the SCM drives sustain with migration following
        the ingest (``scm_copies`` replica writes plus one migration read of
        every byte), and the daily volume's share of it (> 1: the system
        cannot absorb that volume).
    scm_TB_per_drive_day, qlc_TB_per_drive_day : float
        Bytes per day the busiest drive of each medium receives (TB/day).
    scm_dwpd, qlc_dwpd : float
        Its drive writes per day; ``*_rated_dwpd`` the datasheet rating.
    scm_used_per_year, qlc_used_per_year : float
        Fraction of the rated lifetime writes used per year.
    scm_life_years, qlc_life_years : float
        Years until the rating is used up.
    sim_* : float
        The same from the sample; ``sim_*_dwpd`` is the mean drive,
        ``sim_*_dwpd_max`` the busiest; ``sim_max_rel_diff`` the largest
        relative difference between the sample's and the analytic bytes per
        user byte of the two media.
    """

    daily_writes_PB: float
    compression: float
    compressed_fraction: float
    ec_data: int
    ec_parity: int
    stripe_width: int
    scm_drives: int
    qlc_drives: int
    scm_per_user: float
    qlc_per_user: float
    write_buffer_TB: float
    turnover_minutes: float
    scm_sustained_write_GBps: float
    load_fraction: float
    scm_TB_per_drive_day: float
    scm_dwpd: float
    scm_rated_dwpd: float | None
    scm_used_per_year: float
    scm_life_years: float
    qlc_TB_per_drive_day: float
    qlc_dwpd: float
    qlc_rated_dwpd: float | None
    qlc_used_per_year: float
    qlc_life_years: float
    sim_fidelity: str
    sim_user_TB: float
    sim_scm_per_user: float
    sim_qlc_per_user: float
    sim_scm_dwpd: float
    sim_scm_dwpd_max: float
    sim_qlc_dwpd: float
    sim_qlc_dwpd_max: float
    sim_max_rel_diff: float

    def findings(self) -> list[str]:
        """Drive writes per day of each medium against its rating, and the buffer's turnover."""

        def rated(value: float | None) -> str:
            return f" (rated {value:g})" if value is not None else ""

        return [
            f"{self.daily_writes_PB:g} PB/day: SCM {self.scm_dwpd:.2f} DWPD"
            f"{rated(self.scm_rated_dwpd)}, life {self.scm_life_years:.0f} years; QLC "
            f"{self.qlc_dwpd:.3f} DWPD{rated(self.qlc_rated_dwpd)}, life "
            f"{self.qlc_life_years:.0f} years",
            f"SCM buffer of {self.write_buffer_TB:.0f} TB turns over every "
            f"{self.turnover_minutes:.0f} min; the volume is {100 * self.load_fraction:.1f} % of "
            "the sustained SCM write rate",
        ]

    def columns(self) -> dict[str, str]:
        """Drive writes per day of SCM and QLC against their rating, and their life."""
        return {
            "SCM DWPD": cell(self.scm_dwpd, ".3g"),
            "SCM rated": cell(self.scm_rated_dwpd, "g"),
            "SCM life y": cell(self.scm_life_years, ".3g"),
            "QLC DWPD": cell(self.qlc_dwpd, ".3g"),
            "QLC rated": cell(self.qlc_rated_dwpd, "g"),
            "QLC life y": cell(self.qlc_life_years, ".3g"),
            "turnover min": cell(self.turnover_minutes, ".3g"),
        }


def _sim_dwpd(per_drive_B: float, user_B: float, daily_B: float, capacity_B: float) -> float:
    """Drive writes per day of a drive that got ``per_drive_B`` for ``user_B`` user bytes."""
    if user_B <= 0:
        return math.nan
    return float(per_drive_B) * daily_B / user_B / capacity_B


def run_endurance(system: VastTopology, phase: VastEndurancePhase) -> PhaseResult:
    """Run a ``vast-endurance`` phase on ``system`` (see the module docstring)."""
    model = system.model
    daily_B = float(phase.daily_writes) * DAY_S
    path = write_path(system, phase.compression, phase.qlc_write_amplification)
    scm: DriveWear = drive_wear(
        system.scm_spec, daily_B * path.scm_per_user * path.scm_busiest_share
    )
    qlc: DriveWear = drive_wear(
        system.qlc_spec, daily_B * path.qlc_per_user * path.qlc_busiest_share
    )
    # Drive time per user byte on SCM: the replica writes and one migration read
    # (ScmQlcTier: a written byte costs scm_write_cost of a drive's read-bandwidth capacity).
    per_byte = model.tier.scm_copies * system.tier.scm_write_cost + 1.0
    sustained_Bps = len(system.scm) * float(system.scm_spec.read_bandwidth) / per_byte
    sample = simulate_sample(system, phase)
    wa = phase.qlc_write_amplification
    scm_cap, qlc_cap = float(system.scm_spec.capacity), float(system.qlc_spec.capacity)
    sim_scm_per_user = sample.scm_per_user
    sim_qlc_per_user = sample.qlc_per_user * wa
    diffs = [
        abs(sim_scm_per_user / path.scm_per_user - 1.0),
        abs(sim_qlc_per_user / path.qlc_per_user - 1.0),
    ]
    extra = VastEnduranceDetails(
        daily_writes_PB=daily_B / 1e15,
        compression=phase.compression,
        compressed_fraction=path.compressed_fraction,
        ec_data=model.tier.ec_data,
        ec_parity=model.tier.ec_parity,
        stripe_width=path.stripe_width,
        scm_drives=len(system.scm),
        qlc_drives=len(system.qlc),
        scm_per_user=path.scm_per_user,
        qlc_per_user=path.qlc_per_user,
        write_buffer_TB=float(model.tier.write_buffer) / 1e12,
        turnover_minutes=float(model.tier.write_buffer) / float(phase.daily_writes) / 60.0,
        scm_sustained_write_GBps=sustained_Bps / 1e9,
        load_fraction=float(phase.daily_writes) / sustained_Bps,
        scm_TB_per_drive_day=scm.bytes_per_day_B / 1e12,
        scm_dwpd=scm.dwpd,
        scm_rated_dwpd=scm.rated_dwpd,
        scm_used_per_year=scm.used_per_year,
        scm_life_years=scm.life_years,
        qlc_TB_per_drive_day=qlc.bytes_per_day_B / 1e12,
        qlc_dwpd=qlc.dwpd,
        qlc_rated_dwpd=qlc.rated_dwpd,
        qlc_used_per_year=qlc.used_per_year,
        qlc_life_years=qlc.life_years,
        sim_fidelity=sample.fidelity,
        sim_user_TB=sample.user_B / 1e12,
        sim_scm_per_user=sim_scm_per_user,
        sim_qlc_per_user=sim_qlc_per_user,
        sim_scm_dwpd=_sim_dwpd(sample.scm_B.mean(), sample.user_B, daily_B, scm_cap),
        sim_scm_dwpd_max=_sim_dwpd(sample.scm_B.max(), sample.user_B, daily_B, scm_cap),
        sim_qlc_dwpd=_sim_dwpd(sample.qlc_B.mean() * wa, sample.migrated_B, daily_B, qlc_cap),
        sim_qlc_dwpd_max=_sim_dwpd(sample.qlc_B.max() * wa, sample.migrated_B, daily_B, qlc_cap),
        sim_max_rel_diff=float(max(diffs)),
    )
    return PhaseResult(
        name=phase.name,
        operation="endurance",
        bandwidth_Bps=float(phase.daily_writes),
        iops=math.nan,
        ranks=phase.nodes * phase.ranks_per_node,
        transfer_size_B=float(phase.transfer_size),
        sim_time_s=sample.sim_time_s,
        bytes_B=sample.user_B,
        extra=extra,
        fidelity=sample.fidelity,
    )
