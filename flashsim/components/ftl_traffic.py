"""Host write streams for the FTL models: logical unit numbers (LPNs) to write.

Three generators, each drawing the next ``n`` LPNs of its stream against the
FTL's current logical-to-physical map (``l2p``, ``-1`` where a logical unit holds
no valid data):

* :class:`UniformTraffic` -- uniform random overwrite of the whole logical space;
* :class:`SequentialTraffic` -- sequential writes that wrap around;
* :class:`SpreadTraffic` -- how a file system's allocations reach a drive.  A
  ``static`` fraction of the logical space (the first LPNs) holds cold live data,
  written once sequentially at the start and never overwritten.  Every later unit
  write, with probability ``1 / spread``, picks an LPN uniformly over the
  non-static space; otherwise it picks uniformly among the non-static LPNs the
  FTL currently holds valid (space the file system freed without TRIM and reuses,
  which the drive still counts as live).  ``spread = 1`` is uniform random
  overwrite; the never-written fraction of the non-static space decays as
  ``exp(-k / spread)`` after ``k`` host writes per non-static logical unit.
  With ``allocation = "high-water"`` a fresh write takes instead the next LPN
  holding no data in LPN order (a file system extending into unused space at a
  steady pace): the never-written fraction then falls linearly, by
  ``1 / spread`` per unit written, and reaches 0 after ``spread`` writes of the
  non-static space.

Draws within one call see the map as it was at the call, so callers keep ``n``
below :meth:`max_batch` for the stream to follow the FTL's state closely.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

#: Below this valid fraction, sampling among valid LPNs lists them instead of
#: drawing and rejecting (cost per draw bounded by 1 / this).
_REJECT_MIN_FRACTION = 0.125


class Traffic(Protocol):
    """A stream of logical unit numbers to write."""

    def draw(self, n: int, l2p: np.ndarray) -> np.ndarray:
        """The next ``n`` LPNs (int64), given the FTL's map ``l2p``."""
        ...

    def max_batch(self, valid_units: int) -> int:
        """Largest ``n`` one :meth:`draw` should serve, given the FTL's valid unit count."""
        ...


#: Where the spread traffic's fresh writes land (see :class:`SpreadTraffic`).
ALLOCATIONS = ("uniform", "high-water")


def _check_logical(logical_units: int) -> int:
    if int(logical_units) != logical_units or logical_units < 1:
        raise ValueError(f"logical_units(={logical_units}) must be an integer >= 1")
    return int(logical_units)


class UniformTraffic:
    """Uniform random overwrite of ``logical_units`` LPNs.

    Parameters
    ----------
    logical_units : int
        Size of the logical space, in units.
    rng : numpy.random.Generator
        Source of the draws.
    """

    def __init__(self, logical_units: int, rng: np.random.Generator) -> None:
        self.logical_units = _check_logical(logical_units)
        self._rng = rng

    def draw(self, n: int, l2p: np.ndarray) -> np.ndarray:
        return self._rng.integers(0, self.logical_units, size=n, dtype=np.int64)

    def max_batch(self, valid_units: int) -> int:
        return 1 << 20


class SequentialTraffic:
    """Sequential writes over ``logical_units`` LPNs, wrapping at the end.

    Parameters
    ----------
    logical_units : int
        Size of the logical space, in units.
    """

    def __init__(self, logical_units: int) -> None:
        self.logical_units = _check_logical(logical_units)
        self._next = 0

    def draw(self, n: int, l2p: np.ndarray) -> np.ndarray:
        lpns = (self._next + np.arange(n, dtype=np.int64)) % self.logical_units
        self._next = (self._next + n) % self.logical_units
        return lpns

    def max_batch(self, valid_units: int) -> int:
        return 1 << 20


def check_allocation(allocation: str) -> str:
    """The allocation name, or ValueError naming it."""
    if allocation not in ALLOCATIONS:
        raise ValueError(f"allocation(={allocation!r}) must be one of {', '.join(ALLOCATIONS)}")
    return allocation


class SpreadTraffic:
    """The file-system allocation stream with a static part (see the module docstring).

    Parameters
    ----------
    logical_units : int
        Size of the logical space, in units.
    spread : float
        >= 1; a write picks a fresh uniform LPN with probability ``1 / spread``,
        otherwise reuses a currently valid non-static LPN.
    static_fraction : float
        Fraction of the logical space, in [0, 1), holding cold data written once
        at the start (LPNs ``0 .. static_units - 1``).
    rng : numpy.random.Generator
        Source of the draws.
    allocation : {"uniform", "high-water"}
        Where a fresh write lands: a uniform non-static LPN, or (``high-water``)
        the next LPN the drive holds no data for, in LPN order, wrapping: a file
        system that extends into never-used space at a steady pace, so the
        never-written fraction falls linearly (by ``1 / spread`` per unit
        written) instead of exponentially.
    """

    def __init__(
        self,
        logical_units: int,
        spread: float,
        static_fraction: float,
        rng: np.random.Generator,
        allocation: str = "uniform",
    ) -> None:
        self.logical_units = _check_logical(logical_units)
        if not spread >= 1.0:
            raise ValueError(f"spread(={spread}) must be >= 1")
        if not 0.0 <= static_fraction < 1.0:
            raise ValueError(f"static_fraction(={static_fraction}) must be in [0, 1)")
        self.spread = float(spread)
        self.static_fraction = float(static_fraction)
        self.static_units = round(static_fraction * self.logical_units)
        if self.static_units >= self.logical_units:
            raise ValueError(
                f"static_fraction(={static_fraction}) leaves no non-static logical unit"
            )
        self._rng = rng
        self._static_written = 0
        self.allocation = check_allocation(allocation)
        self._mark = self.static_units

    @property
    def dynamic_units(self) -> int:
        """Size of the non-static logical space, in units."""
        return self.logical_units - self.static_units

    def max_batch(self, valid_units: int) -> int:
        if self._static_written < self.static_units:
            return self.static_units - self._static_written
        if self.spread == 1.0:
            return 1 << 20
        return max(256, (valid_units - self.static_units) // 16)

    def draw(self, n: int, l2p: np.ndarray) -> np.ndarray:
        parts: list[np.ndarray] = []
        if self._static_written < self.static_units:
            k = min(n, self.static_units - self._static_written)
            parts.append(self._static_written + np.arange(k, dtype=np.int64))
            self._static_written += k
            n -= k
        if n > 0:
            parts.append(self._dynamic(n, l2p))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _uniform(self, n: int) -> np.ndarray:
        return self._rng.integers(self.static_units, self.logical_units, size=n, dtype=np.int64)

    def _dynamic(self, n: int, l2p: np.ndarray) -> np.ndarray:
        lpns = self._uniform(n)
        if self.spread == 1.0 and self.allocation == "uniform":
            return lpns
        fresh = self._rng.random(n) < 1.0 / self.spread
        reuse = np.flatnonzero(~fresh)
        if reuse.size:
            picked = self._among_valid(reuse.size, l2p)
            if picked is not None:
                lpns[reuse] = picked
        if self.allocation == "high-water":
            new = np.flatnonzero(fresh)
            if new.size:
                found = self._next_unused(new.size, l2p)
                lpns[new[: found.size]] = found
        return lpns

    def _next_unused(self, n: int, l2p: np.ndarray) -> np.ndarray:
        """Up to ``n`` LPNs holding no data, in order from the mark on (wrapping).

        Fewer when fewer exist: the other fresh writes keep their uniform draw
        (overwrites, once every LPN holds data).
        """
        start = self.static_units
        found = np.flatnonzero(l2p[self._mark :] < 0)[:n] + self._mark
        if found.size < n:
            head = np.flatnonzero(l2p[start : self._mark] < 0)[: n - found.size] + start
            found = np.concatenate((found, head))
        if found.size:
            last = int(found[-1]) + 1
            self._mark = last if last < self.logical_units else start
        return found

    def _among_valid(self, n: int, l2p: np.ndarray) -> np.ndarray | None:
        """``n`` LPNs uniform among the valid non-static ones (None if there are none)."""
        dyn = l2p[self.static_units :]
        valid = int(np.count_nonzero(dyn >= 0)) if dyn.size < 4096 else None
        if valid is None:
            sample = dyn[self._rng.integers(0, dyn.size, size=1024)]
            fraction = float(np.count_nonzero(sample >= 0)) / sample.size
        else:
            fraction = valid / dyn.size
        if fraction >= _REJECT_MIN_FRACTION:
            out = np.empty(0, dtype=np.int64)
            while out.size < n:
                cand = self._uniform(int((n - out.size) / fraction * 1.2) + 16)
                out = np.concatenate((out, cand[l2p[cand] >= 0]))
            return out[:n]
        listed = np.flatnonzero(dyn >= 0)
        if listed.size == 0:
            return None
        return self.static_units + listed[self._rng.integers(0, listed.size, size=n)]
