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

Cost.  A fast-forward takes tens of steps per drive and day, so a step is plain
float arithmetic on a list of ``m + 1`` levels, the thinning as the direct sum
``C(j, i) q^i (1-q)^(j-i)`` (the same numbers as the log-binomial matrix form up
to rounding: that form's ``exp`` of a sum of logs carries the larger error, a
few 1e-15 per step; over thousands of steps the two drift apart by ~1e-13);
``m = 2`` (the Perlmutter model) runs unrolled on local floats.  Only blocks of
more than :data:`SMALL_M` units use the matrix form, whose ``m^2`` work then
outweighs NumPy's per-call overhead.  :meth:`FluidFtl.__deepcopy__` copies the
state and shares the read-only tables, so a system's memo of aged states
(:class:`~flashsim.components.target_life.AgingMemo`) copies in microseconds.
"""

from __future__ import annotations

import math
import operator
from collections import deque
from typing import Any

import numpy as np

from flashsim.components.ftl import check_policy
from flashsim.components.ftl_traffic import check_allocation

#: Largest units per block whose thinning is summed in plain floats; larger blocks use the
#: array form (log-binomials, one matrix product), whose ``m^2`` work then outweighs
#: NumPy's per-call overhead.
SMALL_M = 8


def _thin_m2(
    x0: float, x1: float, x2: float, valid: float, half: float
) -> tuple[float, float, float]:
    """:meth:`FluidFtl._thin` for two units per block, on locals: the shares of blocks
    holding 0, 1 and 2 valid units once ``half`` of the ``valid`` units are overwritten."""
    if valid > 0.0:
        q = 1.0 - (valid if valid < half else half) / valid
        if q <= 0.0:
            return x0 + x1 + x2, 0.0, 0.0
        if q < 1.0:
            p = 1.0 - q
            return x0 + x1 * p + x2 * (p * p), x1 * q + x2 * 2.0 * q * p, x2 * (q * q)
    return x0, x1, x2


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
        self._x: list[float] = [0.0] * (m + 1)
        self._levels: tuple[float, ...] = tuple(float(j) for j in range(m + 1))
        #: C(j, i) for i <= j (plain floats; the small-block thinning only).
        self._binom: tuple[tuple[float, ...], ...] = (
            tuple(tuple(float(math.comb(j, i)) for i in range(j + 1)) for j in range(m + 1))
            if m <= SMALL_M
            else ()
        )
        self._lgc: np.ndarray | None = None
        self._i: np.ndarray | None = None
        self._jmi: np.ndarray | None = None
        if m > SMALL_M:
            lv = np.arange(m + 1, dtype=np.float64)
            j = lv[:, None]
            i = lv[None, :]
            from scipy.special import gammaln  # imported on use: SciPy is slow to import

            with np.errstate(invalid="ignore"):
                lg = gammaln(j + 1) - gammaln(i + 1) - gammaln(np.maximum(j - i, 0) + 1)
            self._lgc = _frozen(np.where(i <= j, lg, -np.inf))
            self._i = _frozen(np.broadcast_to(i, (m + 1, m + 1)))
            self._jmi = _frozen(np.where(i <= j, j - i, 0.0))
        self._step = step_fraction * self._dynamic
        self._window = window_fraction * self.logical_B / self.physical_B
        self._host = 0.0
        self._flash = 0.0
        self._hist: deque[tuple[float, float]] = deque([(0.0, 0.0)])
        #: Two units per block (the Perlmutter model): steps in :meth:`_steps_m2`, the same
        #: float operations as :meth:`_advance` in the same order, unrolled (equal results).
        self._unrolled = m == 2

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
        if h > 0.0 and self._unrolled:
            self._steps_m2(h)
            return
        while h > 0.0:
            d = min(h, self._step)
            self._advance(d)
            h -= d
            self._hist.append((self._host, self._flash))
            while len(self._hist) > 2 and self._hist[1][0] <= self._host - self._window:
                self._hist.popleft()

    def trim_dead(self) -> None:
        """TRIM every non-static logical unit (the file system discards its free space)."""
        x = self._x
        self._x = [x[0] + sum(x[1:])] + [0.0] * self.m
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
        return np.array(self._x, dtype=np.float64)

    def __deepcopy__(self, memo: dict[int, Any]) -> FluidFtl:
        """A copy of the state; the read-only tables are shared (microseconds, not a walk)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._x = list(self._x)
        new._hist = deque(self._hist)
        memo[id(self)] = new
        return new

    # -- internals --------------------------------------------------------------------

    def _valid(self) -> float:
        """Valid (dynamic) fraction of the NAND: ``sum_j x[j] j / m``."""
        total: float = sum(map(operator.mul, self._x, self._levels))
        return total / self.m

    def _thin(self, q: float) -> None:
        """Each valid unit survives with probability ``q``: ``x'[i] = sum_j x[j] B(j, q)[i]``."""
        if q >= 1.0:
            return
        x = self._x
        m = self.m
        if q <= 0.0:
            self._x = [sum(x)] + [0.0] * m
            return
        if self._lgc is None:
            p = 1.0 - q  # exact (q > 1/2 in practice): the share the overwrites hit
            qp = [1.0] * (m + 1)
            pp = [1.0] * (m + 1)
            for k in range(1, m + 1):
                qp[k] = qp[k - 1] * q
                pp[k] = pp[k - 1] * p
            out = [0.0] * (m + 1)
            binom = self._binom
            for j in range(m + 1):
                xj = x[j]
                if xj == 0.0:
                    continue
                row = binom[j]
                for i in range(j + 1):
                    out[i] += xj * row[i] * qp[i] * pp[j - i]
            self._x = out
            return
        assert self._i is not None and self._jmi is not None
        logp = self._lgc + self._i * math.log(q) + self._jmi * math.log1p(-q)
        self._x = (np.array(x, dtype=np.float64) @ np.exp(logp)).tolist()

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
        x = self._x
        m = self.m
        if room >= 0.0:
            self._free = room
        else:
            deficit = -room
            self._free = 0.0
            for j in range(m):
                xj = x[j]
                if xj <= 0.0:
                    continue
                gain = xj * (m - j) / m
                take = xj if gain <= deficit else deficit * m / (m - j)
                x[j] -= take
                moved += take * j / m
                deficit -= take * (m - j) / m
                if deficit <= 1e-15:
                    break
        x[m] += h + moved
        valid = self._valid()
        if valid > 0.0:
            self._thin(1.0 - min(0.5 * overwrite, valid) / valid)
        self._host += h
        self._flash += h + moved

    def _steps_m2(self, h: float) -> None:
        """:meth:`write`'s steps for ``m = 2``, unrolled on locals (bit-identical results).

        Every expression is :meth:`_advance`'s, :meth:`_thin`'s and :meth:`_valid`'s
        for ``m = 2`` in the same order (products by 1 and sums with 0 dropped: they
        are exact; ``min``/``max`` as the conditionals they are), so the state is the
        same to the last bit, ~5x faster.
        """
        x0, x1, x2 = self._x
        free = self._free
        host = self._host
        flash = self._flash
        hist = self._hist
        step = self._step
        window = self._window
        dyn = self._dynamic
        rate = self.spread * dyn
        high_water = self.allocation == "high-water"
        while h > 0.0:
            d = step if step < h else h  # min(h, step)
            # _advance(d)
            valid = (x1 + x2 * 2.0) / 2
            w = 1.0 - valid / dyn
            w = w if w > 0.0 else 0.0  # max(0.0, w)
            if high_water:
                w_next = w - d / rate
                w_next = w_next if w_next > 0.0 else 0.0
            else:
                w_next = w * math.exp(-d / rate)
            overwrite = d - dyn * (w - w_next)
            overwrite = overwrite if overwrite > 0.0 else 0.0
            half = 0.5 * overwrite
            x0, x1, x2 = _thin_m2(x0, x1, x2, valid, half)
            room = free - d
            moved = 0.0
            if room >= 0.0:
                free = room
            else:
                deficit = -room
                free = 0.0
                if x0 > 0.0:  # empty blocks: all their room, nothing to move
                    take = x0 if x0 <= deficit else deficit
                    x0 -= take
                    deficit -= take
                if deficit > 1e-15 and x1 > 0.0:  # half-valid blocks: half their room
                    take = x1 if x1 / 2 <= deficit else deficit * 2
                    x1 -= take
                    moved += take / 2
            x2 += d + moved
            x0, x1, x2 = _thin_m2(x0, x1, x2, (x1 + x2 * 2.0) / 2, half)
            host += d
            flash += d + moved
            # write()'s window bookkeeping
            h -= d
            hist.append((host, flash))
            while len(hist) > 2 and hist[1][0] <= host - window:
                hist.popleft()
        self._x = [x0, x1, x2]
        self._free = free
        self._host = host
        self._flash = flash


def _frozen(a: np.ndarray) -> np.ndarray:
    """``a``, read-only (tables that copies of a model share)."""
    a.flags.writeable = False
    return a


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
