"""One interface, in bytes, over the two FTL aging fidelities.

:class:`AgingModel` is what a drive or an OST needs from an aging model: advance
by host bytes, TRIM the dead data, read the current write amplification and the
byte counters.  Two factories build one:

* :func:`fluid_model` -- :class:`flashsim.components.ftl_fluid.FluidFtl`, the
  mean-field model (microseconds per day of writes);
* :func:`micro_model` -- :class:`MicroAgingModel`, a *scaled* drive: a
  :class:`flashsim.components.ftl.PageFtl` of ``blocks`` erase blocks standing
  for the whole NAND, fed by :class:`flashsim.components.ftl_traffic.SpreadTraffic`.
  Its unit is ``logical_B * (1 + op) / (blocks * m)`` bytes, so its
  dimensionless behaviour (WA against drive writes) does not depend on the
  scale.  The GC free pool the micro model keeps in hand (``reserve_blocks``
  plus half of ``gc_batch`` on average, plus the open block) is added on top of
  ``blocks`` so that the data-holding NAND is ``blocks * m`` units, the drive's
  stated over-provisioning (ASSUMED: a drive's stated spare excludes the few
  blocks its controller keeps erased).

Both report :meth:`AgingModel.write_amplification` as flash bytes per host byte
over the last ``window_fraction`` of the logical space written, not reaching back
past the last :meth:`AgingModel.trim_dead` (1.0 right after one).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from flashsim.components.ftl import PageFtl, check_policy
from flashsim.components.ftl_fluid import FluidFtl, check_args
from flashsim.components.ftl_traffic import SpreadTraffic

#: Window of the reported write amplification, as a fraction of the logical space.
WINDOW_FRACTION = 1.0 / 32.0


@runtime_checkable
class AgingModel(Protocol):
    """An SSD aging model driven by host bytes."""

    def write(self, host_B: float) -> None:
        """Advance by ``host_B`` bytes of host writes."""
        ...

    def trim_dead(self) -> None:
        """TRIM all space not holding live (static) data."""
        ...

    def write_amplification(self) -> float:
        """Current (windowed) flash bytes per host byte, >= 1."""
        ...

    @property
    def host_written_B(self) -> float:
        """Host bytes written so far."""
        ...

    @property
    def flash_written_B(self) -> float:
        """NAND bytes programmed so far."""
        ...

    @property
    def valid_fraction(self) -> float:
        """FTL-valid logical bytes / logical bytes."""
        ...


class MicroAgingModel:
    """A :class:`PageFtl` and its traffic behind the byte interface.

    Parameters
    ----------
    ftl : PageFtl
        The scaled drive.
    traffic : SpreadTraffic
        Its write stream.
    unit_B : float
        Bytes one unit stands for.
    window_fraction : float
        Window of :meth:`write_amplification`, as a fraction of the logical space.
    """

    def __init__(
        self,
        ftl: PageFtl,
        traffic: SpreadTraffic,
        unit_B: float,
        window_fraction: float = WINDOW_FRACTION,
    ) -> None:
        self.ftl = ftl
        self.traffic = traffic
        self.unit_B = float(unit_B)
        self._window_units = max(1, int(window_fraction * ftl.logical_units))
        self._carry_B = 0.0
        self._trimmed_at = 0

    def write(self, host_B: float) -> None:
        if not host_B >= 0.0:
            raise ValueError(f"host_B(={host_B}) must be >= 0")
        total = self._carry_B + host_B
        units = int(total // self.unit_B)
        self._carry_B = total - units * self.unit_B
        while units > 0:
            n = min(units, self.traffic.max_batch(self.ftl.valid_units))
            self.ftl.write(self.traffic.draw(n, self.ftl.l2p))
            units -= n

    def trim_dead(self) -> None:
        start = self.traffic.static_units
        live = np.flatnonzero(self.ftl.l2p[start:] >= 0) + start
        self.ftl.trim(live)
        self._trimmed_at = self.ftl.host_units

    def write_amplification(self) -> float:
        return self.ftl.windowed_write_amplification(self._window_units, self._trimmed_at)

    @property
    def host_written_B(self) -> float:
        return self.ftl.host_units * self.unit_B

    @property
    def flash_written_B(self) -> float:
        return self.ftl.flash_units * self.unit_B

    @property
    def valid_fraction(self) -> float:
        return self.ftl.valid_fraction


def fluid_model(
    logical_B: float,
    op: float,
    units_per_block: int,
    spread: float,
    static_fraction: float,
    policy: str = "greedy",
    allocation: str = "uniform",
    window_fraction: float = WINDOW_FRACTION,
) -> FluidFtl:
    """The mean-field aging model of one drive.

    Parameters
    ----------
    logical_B : float
        Logical capacity in bytes.
    op : float
        Over-provisioning ``(NAND - logical) / logical``, dimensionless.
    units_per_block : int
        Units per erase block ``m``.
    spread : float
        Spread of the traffic (>= 1).
    static_fraction : float
        Fraction of the logical space holding static data, in [0, 1).
    policy : str
        GC victim policy (``"greedy"`` only).
    allocation : {"uniform", "high-water"}
        Where fresh writes land (see :class:`flashsim.components.ftl_traffic.SpreadTraffic`).
    window_fraction : float
        Window of the reported write amplification, as a fraction of the logical space.
    """
    return FluidFtl(
        logical_B,
        op,
        units_per_block,
        spread,
        static_fraction,
        policy,
        allocation=allocation,
        window_fraction=window_fraction,
    )


def micro_model(
    logical_B: float,
    op: float,
    units_per_block: int,
    spread: float,
    static_fraction: float,
    policy: str,
    blocks: int,
    rng: np.random.Generator,
    gc_batch: int | None = None,
    allocation: str = "uniform",
    window_fraction: float = WINDOW_FRACTION,
) -> MicroAgingModel:
    """The page-mapped micro-model of one drive, scaled to ``blocks`` erase blocks.

    Parameters
    ----------
    logical_B, op, units_per_block, spread, static_fraction, policy, allocation, window_fraction
        As :func:`fluid_model`; ``policy`` may also be ``"cost-benefit"``.
    blocks : int
        Data-holding erase blocks standing for the drive's NAND (>= 4).
    rng : numpy.random.Generator
        Source of the traffic's draws.
    gc_batch : int or None
        Blocks GC frees at a time (see :class:`PageFtl`); ``None``: about 512
        units' worth (``max(8, 512 // m)``), at most ``blocks / 32``.
    """
    check_args(logical_B, op, units_per_block, spread, static_fraction)
    check_policy(policy)
    if int(blocks) != blocks or blocks < 4:
        raise ValueError(f"blocks(={blocks}) must be an integer >= 4")
    m = int(units_per_block)
    if gc_batch is None:
        gc_batch = max(1, min(max(8, 512 // m), int(blocks) // 32))
    unit_B = logical_B * (1.0 + op) / (blocks * m)
    logical_units = round(blocks * m / (1.0 + op))
    reserve = 1
    extra = reserve + gc_batch // 2 + 1
    ftl = PageFtl(blocks + extra, m, logical_units, policy, reserve, gc_batch)
    traffic = SpreadTraffic(logical_units, spread, static_fraction, rng, allocation)
    return MicroAgingModel(ftl, traffic, unit_B, window_fraction)
