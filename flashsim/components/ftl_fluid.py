"""A fluid (mean-field) model of a page-mapped FTL under the spread traffic.

The same drive and traffic as :class:`flashsim.components.ftl.PageFtl` driven by
:class:`flashsim.components.ftl_traffic.SpreadTraffic`, in the many-blocks limit
(Van Houdt, "A mean field model for a class of garbage collection algorithms in
flash-based solid state drives", SIGMETRICS 2013): the state is the fraction of
the NAND in closed blocks holding ``j`` valid units, ``x[j]`` for ``j = 0..m``,
plus the free pool, the blocks of static (cold, never rewritten) data and the
valid fraction of the non-static logical space.  Everything is a fraction of
the NAND; host bytes advance it.

One step of ``h`` host bytes (at most ``step_fraction`` of the non-static
logical space):

1. Traffic.  A write picks a fresh uniform LPN with probability ``1/spread``,
   else a valid one; so the never-written/trimmed fraction ``w`` of the
   non-static space decays as ``w' = w exp(-h / (spread D))`` (``D`` its size;
   with ``high-water`` allocation it falls linearly, ``w' = max(0, w - h / (spread D))``),
   ``D (w - w')`` of the ``h`` bytes land on invalid LPNs and the rest overwrite
   valid ones, uniformly among the valid units.
2. Invalidation.  Each valid unit survives the overwrites with probability
   ``q = 1 - I / V`` (``I`` bytes overwritten, ``V`` valid bytes), so the block
   distribution is binomially thinned: ``x'[i] = sum_j x[j] C(j, i) q^i (1-q)^(j-i)``.
   Half the overwrites are applied before step 3 and half after it (Strang
   splitting): the steady-state WA is then within 0.5 % of the closed form of
   :func:`flashsim.components.ftl_analytic.greedy_wa_mean_field` at the default
   step (a one-sided split was 8 % low at spare factor 0.07).
3. Garbage collection (greedy).  The free pool absorbs writes until it is
   empty; beyond that, blocks are cleaned from the lowest level up until the
   room they free (``(m - j) / m`` of a block each) covers the write; their
   ``j / m`` valid share is relocated.  Host and relocated bytes fill new blocks
   at level ``m``.

The static part (``static_fraction`` of the logical space) is written first,
sequentially, into blocks that stay full and are never cleaned.  ``trim_dead``
invalidates every non-static unit (all dynamic blocks drop to level 0, ``w = 1``).
Cost-benefit GC needs block ages, which this state does not carry: only
``policy = "greedy"`` is modelled.

The reported write amplification is flash over host bytes across the last
``window_fraction`` of the logical space written (the same window the micro
model's adapter uses), so both fidelities report comparable numbers; the window
does not reach back past the last ``trim_dead`` (1.0 right after one).
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from flashsim.components.ftl import check_policy
from flashsim.components.ftl_traffic import check_allocation


class FluidFtl:
    """Mean-field FTL of one drive (see the module docstring).

    Parameters
    ----------
    logical_B : float
        Logical (user) capacity in bytes, > 0.
    op : float
        Over-provisioning ``(NAND - logical) / logical``, dimensionless, > 0.
    units_per_block : int
        Units per erase block ``m`` >= 1.
    spread : float
        Spread of the traffic (>= 1; 1 is uniform random overwrite).
    static_fraction : float
        Fraction of the logical space holding static data, in [0, 1).
    policy : str
        GC victim policy; only ``"greedy"`` is modelled.
    allocation : {"uniform", "high-water"}
        Where fresh writes land (see :class:`flashsim.components.ftl_traffic.SpreadTraffic`).
    step_fraction : float
        Largest integration step, as a fraction of the non-static logical space.
    window_fraction : float
        Window of :meth:`write_amplification`, as a fraction of the logical space.
    """

    def __init__(
        self,
        logical_B: float,
        op: float,
        units_per_block: int,
        spread: float = 1.0,
        static_fraction: float = 0.0,
        policy: str = "greedy",
        allocation: str = "uniform",
        step_fraction: float = 1.0 / 256.0,
        window_fraction: float = 1.0 / 32.0,
    ) -> None:
        check_args(logical_B, op, units_per_block, spread, static_fraction)
        if check_policy(policy) != "greedy":
            raise ValueError(f"policy(={policy!r}): the fluid model has only 'greedy'")
        if not 0.0 < step_fraction <= 1.0:
            raise ValueError(f"step_fraction(={step_fraction}) must be in (0, 1]")
        if not window_fraction > 0.0:
            raise ValueError(f"window_fraction(={window_fraction}) must be > 0")
        m = int(units_per_block)
        self.m = m
        self.logical_B = float(logical_B)
        self.physical_B = self.logical_B * (1.0 + op)
        self.spread = float(spread)
        self.policy = policy
        self.allocation = check_allocation(allocation)
        # Fractions of the NAND.
        self._static_total = static_fraction / (1.0 + op)
        self._dynamic = (1.0 - static_fraction) / (1.0 + op)
        self._static = 0.0
        self._free = 1.0
        self._x = np.zeros(m + 1)
        self._levels = np.arange(m + 1, dtype=np.float64)
        j = self._levels[:, None]
        i = self._levels[None, :]
        from scipy.special import gammaln  # imported on use: SciPy is slow to import

        with np.errstate(invalid="ignore"):
            lg = gammaln(j + 1) - gammaln(i + 1) - gammaln(np.maximum(j - i, 0) + 1)
        self._lgc = np.where(i <= j, lg, -np.inf)
        self._i = np.broadcast_to(i, (m + 1, m + 1))
        self._jmi = np.where(i <= j, j - i, 0.0)
        self._step = step_fraction * self._dynamic
        self._window = window_fraction * self.logical_B / self.physical_B
        self._host = 0.0
        self._flash = 0.0
        self._hist: deque[tuple[float, float]] = deque([(0.0, 0.0)])

    # -- AgingModel -----------------------------------------------------------------

    def write(self, host_B: float) -> None:
        """Advance by ``host_B`` bytes of host writes."""
        if not host_B >= 0.0:
            raise ValueError(f"host_B(={host_B}) must be >= 0")
        h = host_B / self.physical_B
        if self._static < self._static_total and h > 0.0:
            s = min(h, self._static_total - self._static)
            self._static += s
            self._free -= s
            self._host += s
            self._flash += s
            h -= s
        while h > 0.0:
            d = min(h, self._step)
            self._advance(d)
            h -= d
            self._hist.append((self._host, self._flash))
            while len(self._hist) > 2 and self._hist[1][0] <= self._host - self._window:
                self._hist.popleft()

    def trim_dead(self) -> None:
        """TRIM every non-static logical unit (the file system discards its free space)."""
        self._x[0] += float(self._x[1:].sum())
        self._x[1:] = 0.0
        self._hist = deque([(self._host, self._flash)])

    def write_amplification(self) -> float:
        """Flash bytes per host byte over the last window (1.0 before any write)."""
        h0, f0 = self._hist[0]
        dh = self._host - h0
        return (self._flash - f0) / dh if dh > 0.0 else 1.0

    @property
    def host_written_B(self) -> float:
        """Host bytes written so far."""
        return self._host * self.physical_B

    @property
    def flash_written_B(self) -> float:
        """NAND bytes programmed so far (host + GC relocations)."""
        return self._flash * self.physical_B

    @property
    def valid_fraction(self) -> float:
        """FTL-valid logical bytes / logical bytes."""
        return (self._static + self._valid()) * self.physical_B / self.logical_B

    def level_fractions(self) -> np.ndarray:
        """Fraction of the NAND in closed dynamic blocks with ``j`` valid units (a copy)."""
        return self._x.copy()

    # -- internals --------------------------------------------------------------------

    def _valid(self) -> float:
        return float(self._x @ self._levels) / self.m

    def _thin(self, q: float) -> None:
        if q >= 1.0:
            return
        if q <= 0.0:
            self._x[0] = float(self._x.sum())
            self._x[1:] = 0.0
            return
        logp = self._lgc + self._i * math.log(q) + self._jmi * math.log1p(-q)
        self._x = self._x @ np.exp(logp)

    def _advance(self, h: float) -> None:
        valid = self._valid()
        w = max(0.0, 1.0 - valid / self._dynamic)
        if self.allocation == "high-water":
            w_next = max(0.0, w - h / (self.spread * self._dynamic))
        else:
            w_next = w * math.exp(-h / (self.spread * self._dynamic))
        overwrite = max(0.0, h - self._dynamic * (w - w_next))
        if valid > 0.0:
            self._thin(1.0 - min(0.5 * overwrite, valid) / valid)
        room = self._free - h
        moved = 0.0
        if room >= 0.0:
            self._free = room
        else:
            deficit = -room
            self._free = 0.0
            m = self.m
            for j in range(m):
                xj = self._x[j]
                if xj <= 0.0:
                    continue
                gain = xj * (m - j) / m
                take = xj if gain <= deficit else deficit * m / (m - j)
                self._x[j] -= take
                moved += take * j / m
                deficit -= take * (m - j) / m
                if deficit <= 1e-15:
                    break
        self._x[self.m] += h + moved
        valid = self._valid()
        if valid > 0.0:
            self._thin(1.0 - min(0.5 * overwrite, valid) / valid)
        self._host += h
        self._flash += h + moved


def check_args(
    logical_B: float,
    op: float,
    units_per_block: int,
    spread: float,
    static_fraction: float,
) -> None:
    """ValueError naming the first bad argument of an aging model."""
    if not logical_B > 0.0:
        raise ValueError(f"logical_B(={logical_B}) must be > 0 bytes")
    if not op > 0.0:
        raise ValueError(f"op(={op}) must be > 0 (spare NAND / logical space)")
    if int(units_per_block) != units_per_block or units_per_block < 1:
        raise ValueError(f"units_per_block(={units_per_block}) must be an integer >= 1")
    if not spread >= 1.0:
        raise ValueError(f"spread(={spread}) must be >= 1")
    if not 0.0 <= static_fraction < 1.0:
        raise ValueError(f"static_fraction(={static_fraction}) must be in [0, 1)")
