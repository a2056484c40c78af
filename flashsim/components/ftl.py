"""A page-mapped flash translation layer (FTL) micro-model, vectorised with NumPy.

The drive's NAND is ``blocks`` erase blocks of ``units_per_block`` (``m``) units;
a *unit* is the smallest piece the host writes and invalidates together (a 4 KiB
page for random 4K overwrite, a run of pages for streaming writes).  The host
sees ``logical_units`` logical units (LPNs).  Every write goes out of place to
the write frontier (the open block, then the next free blocks in order, host
writes and garbage-collection relocations alike) and invalidates the LPN's
previous copy; TRIM invalidates without writing.

Garbage collection keeps ``reserve_blocks`` erased blocks in hand.  When a write
would take the free pool below the reserve, it cleans victims -- the closed
blocks the policy ranks first -- until the pool has gained ``gc_batch`` blocks
net of the relocated valid units, which go back to the frontier:

* ``"greedy"``: fewest valid units first;
* ``"cost-benefit"`` (Rosenblum & Ousterhout, LFS, SOSP 1991; Kawaguchi et al.,
  USENIX 1995): largest ``age * (1 - u) / (2 u)`` first, ``u`` the block's valid
  fraction and ``age`` the host unit writes since the block was closed.

Host writes are processed in chunks between GC events: each chunk maps a run of
LPNs onto consecutive frontier units with array operations (a unit written twice
within a chunk keeps its last copy), so the model runs at millions of unit writes
per second.  Cleaning ``gc_batch`` blocks at a time instead of one is what makes
the chunks long; the free pool it holds (about ``reserve_blocks + gc_batch / 2``
blocks on average, plus the open block) stores no data, which callers count when
they compare with an analytic model (see
:func:`flashsim.components.ftl_api.micro_model`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Literal

import numpy as np

GcPolicy = Literal["greedy", "cost-benefit"]
GC_POLICIES: tuple[str, ...] = ("greedy", "cost-benefit")


def check_policy(policy: str) -> str:
    """``policy`` if it names a GC victim policy, else ValueError."""
    if policy not in GC_POLICIES:
        raise ValueError(f"policy(={policy!r}) must be one of {', '.join(GC_POLICIES)}")
    return policy


class PageFtl:
    """Page-mapped FTL with greedy or cost-benefit garbage collection.

    Parameters
    ----------
    blocks : int
        Erase blocks of NAND (>= ``reserve_blocks + gc_batch + 2``).
    units_per_block : int
        Units per erase block, ``m`` >= 1.
    logical_units : int
        Logical units the host addresses, >= 1; at most
        ``(blocks - reserve_blocks - gc_batch - 1) * m``.
    policy : {"greedy", "cost-benefit"}
        GC victim policy.
    reserve_blocks : int
        Free blocks below which GC runs (>= 1).
    gc_batch : int
        Free blocks GC gains (net of relocations) each time it runs (>= 1).

    Attributes
    ----------
    host_units, flash_units, erases : int
        Host unit writes, flash unit programs (host + relocations), block erases.
    """

    def __init__(
        self,
        blocks: int,
        units_per_block: int,
        logical_units: int,
        policy: str = "greedy",
        reserve_blocks: int = 1,
        gc_batch: int = 8,
    ) -> None:
        for name, value, low in (
            ("units_per_block", units_per_block, 1),
            ("logical_units", logical_units, 1),
            ("reserve_blocks", reserve_blocks, 1),
            ("gc_batch", gc_batch, 1),
        ):
            if int(value) != value or value < low:
                raise ValueError(f"{name}(={value}) must be an integer >= {low}")
        if int(blocks) != blocks or blocks < reserve_blocks + gc_batch + 2:
            raise ValueError(
                f"blocks(={blocks}) must be an integer >= reserve_blocks + gc_batch + 2"
                f" (={reserve_blocks + gc_batch + 2})"
            )
        m = int(units_per_block)
        most = (int(blocks) - reserve_blocks - gc_batch - 1) * m
        if logical_units > most:
            raise ValueError(
                f"logical_units(={logical_units}) must be <= {most}: GC needs"
                f" reserve_blocks + gc_batch + 1 blocks of the {blocks} spare"
            )
        self.blocks = int(blocks)
        self.units_per_block = m
        self.logical_units = int(logical_units)
        self.policy = check_policy(policy)
        self.reserve_blocks = int(reserve_blocks)
        self.gc_batch = int(gc_batch)
        self.l2p = np.full(self.logical_units, -1, dtype=np.int64)
        self._p2l = np.full(self.blocks * m, -1, dtype=np.int64)
        self._valid = np.zeros(self.blocks, dtype=np.int64)
        self._closed = np.zeros(self.blocks, dtype=bool)
        self._closed_at = np.zeros(self.blocks, dtype=np.float64)
        self._open = 0
        self._wp = 0
        self._free = np.arange(1, self.blocks, dtype=np.int64)
        self._offsets = np.arange(m, dtype=np.int64)
        self.host_units = 0
        self.flash_units = 0
        self.erases = 0
        self.valid_units = 0
        self._hist_host: list[int] = [0]
        self._hist_flash: list[int] = [0]

    # -- host interface -------------------------------------------------------------

    def write(self, lpns: np.ndarray) -> None:
        """Write the logical units ``lpns`` (int array, in order)."""
        lpns = np.asarray(lpns, dtype=np.int64)
        if lpns.size and (lpns.min() < 0 or lpns.max() >= self.logical_units):
            raise ValueError(f"lpns must be in [0, {self.logical_units})")
        m = self.units_per_block
        i, n = 0, lpns.size
        while i < n:
            room = (m - self._wp) + (self._free.size - self.reserve_blocks) * m
            if room <= 0:
                self._collect()
                continue
            k = min(room, n - i)
            self._program(lpns[i : i + k], host=True)
            self.host_units += k
            i += k
        self._hist_host.append(self.host_units)
        self._hist_flash.append(self.flash_units)

    def trim(self, lpns: np.ndarray) -> None:
        """Invalidate the logical units ``lpns`` (TRIM / deallocate)."""
        lpns = np.unique(np.asarray(lpns, dtype=np.int64))
        if lpns.size and (lpns[0] < 0 or lpns[-1] >= self.logical_units):
            raise ValueError(f"lpns must be in [0, {self.logical_units})")
        old = self.l2p[lpns]
        old = old[old >= 0]
        self._p2l[old] = -1
        np.subtract.at(self._valid, old // self.units_per_block, 1)
        self.l2p[lpns] = -1
        self.valid_units -= int(old.size)

    # -- results ----------------------------------------------------------------------

    def write_amplification(self) -> float:
        """Cumulative flash unit programs per host unit write (1.0 before any write)."""
        return self.flash_units / self.host_units if self.host_units else 1.0

    def windowed_write_amplification(self, window_units: int, since_units: int = 0) -> float:
        """Flash programs per host write over (about) the last ``window_units`` host writes.

        The window starts at the last :meth:`write` call that ended at least
        ``window_units`` host writes ago (or at the start), but not before the
        end of the call that had written ``since_units`` host units (1.0 if no
        write followed it).
        """
        if self.host_units == 0:
            return 1.0
        j = max(
            0,
            bisect_right(self._hist_host, self.host_units - window_units) - 1,
            bisect_left(self._hist_host, since_units),
        )
        if j >= len(self._hist_host):
            return 1.0
        dh = self.host_units - self._hist_host[j]
        if dh <= 0:
            return 1.0
        return (self.flash_units - self._hist_flash[j]) / dh

    @property
    def valid_fraction(self) -> float:
        """Valid logical units / logical units."""
        return self.valid_units / self.logical_units

    def block_valid_counts(self) -> np.ndarray:
        """Valid units in each block (a copy)."""
        return self._valid.copy()

    # -- internals --------------------------------------------------------------------

    def _program(self, lpns: np.ndarray, host: bool) -> None:
        """Write ``lpns`` to the frontier; the caller has made room for them."""
        m = self.units_per_block
        k = lpns.size
        if k == 0:
            return
        end = self._wp + k
        new = (end - 1) // m
        seq = np.concatenate(([self._open], self._free[:new]))
        self._free = self._free[new:]
        pos = self._wp + np.arange(k, dtype=np.int64)
        ppn = seq[pos // m] * m + pos % m
        if host:
            order = np.argsort(lpns, kind="stable")
            sl = lpns[order]
            last = np.ones(k, dtype=bool)
            last[:-1] = sl[:-1] != sl[1:]
            keep = order[last]
            lpns, ppn = lpns[keep], ppn[keep]
            old = self.l2p[lpns]
            stale = old[old >= 0]
            self._p2l[stale] = -1
            np.subtract.at(self._valid, stale // m, 1)
            self.valid_units += int(lpns.size - stale.size)
        self._p2l[ppn] = lpns
        self.l2p[lpns] = ppn
        np.add.at(self._valid, ppn // m, 1)
        full = seq[:new]
        self._closed[full] = True
        self._closed_at[full] = self.host_units
        self._open = int(seq[new])
        self._wp = end - new * m
        self.flash_units += k

    def _victims(self) -> np.ndarray:
        """Blocks to clean so that the free pool gains ``gc_batch`` blocks net."""
        m = self.units_per_block
        cand = np.flatnonzero(self._closed)
        cand = cand[cand != self._open]
        valid = self._valid[cand]
        if self.policy == "greedy":
            key = valid.astype(np.float64)
        else:
            u = valid / m
            age = self.host_units - self._closed_at[cand] + 1.0
            with np.errstate(divide="ignore"):
                key = -(age * (1.0 - u) / (2.0 * u))
        need = self.gc_batch * m
        take = min(cand.size, 4 * self.gc_batch + 8)
        while True:
            part = (
                np.argpartition(key, take - 1)[:take] if take < cand.size else np.arange(cand.size)
            )
            part = part[np.argsort(key[part], kind="stable")]
            gain = np.cumsum(m - valid[part])
            hit = int(np.searchsorted(gain, need))
            if hit < part.size:
                chosen: np.ndarray = cand[part[: hit + 1]]
                return chosen
            if take >= cand.size:
                if gain.size == 0 or gain[-1] <= 0:
                    raise RuntimeError("FTL full: no invalid unit left to collect")
                everything: np.ndarray = cand[part]
                return everything
            take = min(cand.size, take * 4)

    def _collect(self) -> None:
        """Clean victims: relocate their valid units, erase them, free them."""
        m = self.units_per_block
        victims = self._victims()
        units = (victims[:, None] * m + self._offsets).ravel()
        moved = self._p2l[units]
        moved = moved[moved >= 0]
        self._p2l[units] = -1
        self._valid[victims] = 0
        self._closed[victims] = False
        self.erases += int(victims.size)
        self._free = np.concatenate((self._free, victims))
        self._program(moved, host=False)
