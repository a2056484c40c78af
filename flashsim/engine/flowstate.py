"""Flow-level state and the exact incremental max-min repair.

:class:`FlowState` keeps one row per flow slot (its own path constraints and
coefficients, the shared *segments* it uses, priority, level cap, level) and one
entry per constraint (capacity, load, highest level crossing it, saturation),
and re-solves them
exactly: a full solve (:func:`flashsim.engine.maxmin.solve_maxmin_factored`) or an
incremental *repair*.  After a change, a set ``S`` of flows is re-solved on the
capacity the other flows leave; then every flow touching a constraint whose
state may have changed is checked against the max-min optimality condition (at
its cap, or crossing a saturated constraint on which no flow has a higher
level).  Violators join ``S`` and the step repeats.  A feasible allocation in
which every flow passes that check is the unique max-min fair allocation, so
the result equals a full re-solve while the work is proportional to the part
of the system the change reaches.

:class:`~flashsim.engine.flows.FlowNetwork` builds on it: most events are
handled at the level of bottleneck classes
(:mod:`flashsim.engine.flowclasses`), and this flow-level repair runs only when
the bottleneck structure changes.

A *segment* is a sub-path many flows share, stored once: a rank writing a file
striped over S targets uses the stripe set's segment (S server paths with
weight 1/S each) instead of carrying S x path-length entries of its own.  The
solvers here see a flow's entries as its own plus its segments' (scaled by the
flow's weight on the segment), expanded only for the flows being solved.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from flashsim.engine.maxmin import FloatArray, IntArray, solve_maxmin_factored

#: Relative slack below capacity at which a constraint counts as saturated.
SATURATION_RTOL = 1e-9
#: Relative slack for comparing flow levels in the optimality check.
LEVEL_RTOL = 1e-9
#: Changes touching more than this fraction of active flows trigger a full solve ...
FULL_SOLVE_FRACTION = 0.25
#: ... when they touch more than this many flows: a full solve costs the model's size
#: (every constraint), a change to a few flows only what their paths touch.
FULL_SOLVE_MIN_FLOWS = 16


def wants_full_solve(changed: int, n_active: int) -> bool:
    """Whether a change to ``changed`` of ``n_active`` flows is re-solved in full
    (:data:`FULL_SOLVE_FRACTION` and :data:`FULL_SOLVE_MIN_FLOWS`)."""
    return changed > max(FULL_SOLVE_FRACTION * n_active, FULL_SOLVE_MIN_FLOWS)


#: Answers of :meth:`FlowState._segments_containing` kept (the store is emptied when full).
SEGMENT_LOOKUPS_KEPT = 64

BoolArray = npt.NDArray[np.bool_]


def unique_ints(values: IntArray) -> IntArray:
    """The sorted distinct values of an integer array (``np.unique`` by sorting).

    NumPy 2's hash-based ``np.unique`` costs several times a sort on the
    few-thousand-entry index arrays a repair handles; the result is the same.
    """
    if values.size < 2:
        return np.array(values, dtype=np.int64).ravel()
    if values.ndim == 1 and (values[1:] > values[:-1]).all():  # sorted, distinct already
        return np.array(values, dtype=np.int64)
    ordered = np.sort(values, kind="stable")
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    result: IntArray = ordered[keep]
    return result


class Factored:
    """The entries of a set of flows, with shared segments kept factored.

    Flow ``i`` (an index into the slots it was built from) consumes
    ``own_coef`` of ``own_con`` for each of its own entries, plus ``use_coef``
    times segment ``use_seg``'s entries; ``seg_*`` hold only the segments used
    here (local indices), end to end.  Sums, minima and maxima over a flow's
    constraints, or over the flows crossing a constraint, cost O(own entries +
    uses + segment entries) this way.
    """

    def __init__(
        self,
        n: int,
        own: tuple[IntArray, IntArray, FloatArray],
        uses: tuple[IntArray, IntArray, FloatArray],
        segs: tuple[IntArray, FloatArray, IntArray],
    ) -> None:
        self.n = n
        self.own_owner, self.own_con, self.own_coef = own
        self.use_owner, self.use_seg, self.use_coef = uses
        self.seg_con, self.seg_coef, self.seg_start = segs
        self.n_segs = self.seg_start.size - 1
        lens = np.diff(self.seg_start)
        self.seg_of_entry = np.repeat(np.arange(self.n_segs), lens)
        self._nonempty = lens > 0
        self._starts = self.seg_start[:-1][self._nonempty]
        self._cons: IntArray | None = None

    def cons(self) -> IntArray:
        """Every constraint crossed (sorted, unique; computed once, do not modify)."""
        if self._cons is None:
            self._cons = unique_ints(np.concatenate([self.own_con, self.seg_con]))
        return self._cons

    def _scatter(
        self,
        ufunc: Any,
        out: FloatArray,
        own_v: FloatArray,
        seg_v: FloatArray,
        mark: BoolArray | None,
    ) -> None:
        """``ufunc.at`` of each own entry's and segment entry's value onto its constraint."""
        for con, values in ((self.own_con, own_v), (self.seg_con, seg_v)):
            if mark is not None:
                keep = mark[con]
                con, values = con[keep], values[keep]
            ufunc.at(out, con, values)

    def _over_users(self, ufunc: Any, identity: float, per_use: FloatArray) -> FloatArray:
        """Per used segment, ``ufunc`` over its uses of ``per_use``, spread to its entries."""
        per_seg = np.full(self.n_segs, identity)
        ufunc.at(per_seg, self.use_seg, per_use)
        return per_seg[self.seg_of_entry]

    def add_to(self, out: FloatArray, per_flow: FloatArray, mark: BoolArray | None = None) -> None:
        """``out[k] += sum_f a_fk * per_flow[f]`` (only for marked ``k`` if given)."""
        total = self._over_users(np.add, 0.0, self.use_coef * per_flow[self.use_owner])
        own_v = self.own_coef * per_flow[self.own_owner]
        self._scatter(np.add, out, own_v, self.seg_coef * total, mark)

    def max_into(
        self, out: FloatArray, per_flow: FloatArray, mark: BoolArray | None = None
    ) -> None:
        """``out[k] = max(out[k], per_flow[f])`` over the flows crossing ``k``."""
        seg_v = self._over_users(np.maximum, -np.inf, per_flow[self.use_owner])
        self._scatter(np.maximum, out, per_flow[self.own_owner], seg_v, mark)

    def min_into(self, out: FloatArray, per_flow: FloatArray) -> None:
        """``out[k] = min(out[k], per_flow[f])`` over the flows crossing ``k``."""
        seg_v = self._over_users(np.minimum, np.inf, per_flow[self.use_owner])
        self._scatter(np.minimum, out, per_flow[self.own_owner], seg_v, None)

    def seg_reduce(self, per_con: FloatArray, how: Any) -> FloatArray:
        """Per used segment, ``how.reduceat`` of ``per_con`` over its constraints."""
        fill = np.inf if how is np.minimum else -np.inf
        result = np.full(self.n_segs, fill)
        if self._starts.size:
            result[self._nonempty] = how.reduceat(per_con[self.seg_con], self._starts)
        return result

    def owner_min(self, per_con: FloatArray) -> FloatArray:
        """For each flow, the minimum of ``per_con`` over its constraints (inf if none)."""
        out = np.full(self.n, np.inf)
        np.minimum.at(out, self.own_owner, per_con[self.own_con])
        np.minimum.at(out, self.use_owner, self.seg_reduce(per_con, np.minimum)[self.use_seg])
        return out

    def owner_any(self, per_con: BoolArray) -> BoolArray:
        """For each flow, whether ``per_con`` holds on any of its constraints."""
        hit = np.zeros(self.n, dtype=bool)
        hit[self.own_owner[per_con[self.own_con]]] = True
        seg_hit = self.seg_reduce(per_con.astype(np.float64), np.maximum) > 0
        hit[self.use_owner[seg_hit[self.use_seg]]] = True
        return hit


class FlowState:
    """Slot, segment and constraint arrays with the exact flow-level solvers.

    Index 0 of the constraint arrays is a sentinel with infinite capacity used
    as padding in the per-slot path rows.
    """

    def __init__(self) -> None:
        self._con_cap = np.full(64, np.inf)
        # The same capacities as Python floats, for the class layer's scalar checks.
        self._cap_f: list[float] = [math.inf] * 64
        self._con_load = np.zeros(64)
        self._con_max_level = np.zeros(64)
        self._con_saturated = np.zeros(64, dtype=bool)
        self._n_cons = 1
        self._con_segs: list[list[int]] = [[] for _ in range(64)]  # segments crossing it
        # Constraint -> slots index (CSR), rebuilt lazily; slots started since go to a list.
        self._index_indptr = np.zeros(1, dtype=np.int64)
        self._index_slots = np.zeros(0, dtype=np.int64)
        self._index_recent: list[int] = []
        self._index_dirty = True
        # Slot array bytes -> its Factored entries, while a solve runs (see _memo_factored).
        self._factored_memo: dict[bytes, Factored] | None = None
        # Flow slot arrays: a slot's own entries, padded with constraint 0.
        self._path_con = np.zeros((0, 1), dtype=np.int64)
        self._path_coef = np.zeros((0, 1))
        self._priority = np.zeros(0)
        self._level_cap = np.zeros(0)
        self._level = np.zeros(0)
        self._active = np.zeros(0, dtype=bool)
        self._has_seg = np.zeros(0, dtype=bool)  # bool(_segs[slot]), for vector code
        self._segs: list[tuple[tuple[int, float], ...]] = []  # (segment, weight) per slot
        self._flows: list[Any] = []
        self._free_slots: list[int] = []
        # Segments: constraints and coefficients, stored once (flat copies for vector code).
        self._seg_cons: list[IntArray] = []
        self._seg_coefs: list[FloatArray] = []
        self._seg_coef_of: list[dict[int, float]] = []
        self._seg_slots: list[set[int]] = []  # active slots using each segment
        self._segflat_con = np.zeros(0, dtype=np.int64)
        self._segflat_coef = np.zeros(0)
        self._segflat_start = np.zeros(1, dtype=np.int64)
        self._segflat_dirty = False
        # Constraint -> segments containing it (CSR over _segflat), rebuilt when one is added.
        self._con_seg_indptr = np.zeros(1, dtype=np.int64)
        self._con_seg_ids = np.zeros(0, dtype=np.int64)
        self._con_seg_dirty = False
        # Constraint array bytes -> the segments containing any (until a segment is added).
        self._con_seg_found: dict[bytes, tuple[int, ...]] = {}
        # Counters for benchmarks and diagnostics (see stats): the flow-level solver's,
        # and the class fast path's, kept as plain ints since they count every event.
        self._solver_counts: dict[str, int] = {"full_solves": 0, "repairs": 0, "repair_flows": 0}
        self._class_events = 0
        # Shared segments the class fast path checked against their bound and thresholds.
        self._segment_checks = 0
        self._grow_slots(64)

    @property
    def stats(self) -> dict[str, int]:
        """Counters for benchmarks and diagnostics: flow-level ``full_solves``, ``repairs``
        and the flows they moved (``repair_flows``); ``class_events`` solved by the class
        fast path, and the shared segments it checked (``segment_checks``)."""
        return {
            **self._solver_counts,
            "class_events": self._class_events,
            "segment_checks": self._segment_checks,
        }

    def _on_new_constraints(self, grow: int) -> None:
        """Hook: the constraint arrays grew by ``grow`` entries."""

    def _on_new_slots(self, extra: int) -> None:
        """Hook: the slot arrays grew by ``extra`` rows."""

    def _new_constraint(self, capacity: float) -> int:
        if self._n_cons == self._con_cap.size:
            grow = self._con_cap.size
            self._con_cap = np.concatenate([self._con_cap, np.full(grow, np.inf)])
            self._cap_f.extend([math.inf] * grow)
            self._con_load = np.concatenate([self._con_load, np.zeros(grow)])
            self._con_max_level = np.concatenate([self._con_max_level, np.zeros(grow)])
            self._con_saturated = np.concatenate([self._con_saturated, np.zeros(grow, dtype=bool)])
            self._con_segs.extend([] for _ in range(grow))
            self._on_new_constraints(grow)
        idx = self._n_cons
        self._con_cap[idx] = capacity
        self._cap_f[idx] = float(self._con_cap[idx])
        self._n_cons += 1
        return idx

    def _new_segment(self, coef_by_con: dict[int, float]) -> int:
        """Store a shared sub-path (constraint -> coefficient); return its id."""
        g = len(self._seg_cons)
        cons = np.fromiter(coef_by_con, dtype=np.int64, count=len(coef_by_con))
        coefs = np.fromiter(coef_by_con.values(), dtype=np.float64, count=len(coef_by_con))
        self._seg_cons.append(cons)
        self._seg_coefs.append(coefs)
        self._seg_coef_of.append(dict(coef_by_con))
        self._seg_slots.append(set())
        for k in cons.tolist():
            self._con_segs[k].append(g)
        self._segflat_dirty = True
        self._con_seg_dirty = True
        self._index_dirty = True
        return g

    def _segflat(self) -> tuple[IntArray, FloatArray, IntArray]:
        """All segments' constraints and coefficients end to end, and each one's start."""
        if self._segflat_dirty:
            self._segflat_con = np.concatenate([np.zeros(0, dtype=np.int64), *self._seg_cons])
            self._segflat_coef = np.concatenate([np.zeros(0), *self._seg_coefs])
            sizes = [c.size for c in self._seg_cons]
            self._segflat_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
            self._segflat_dirty = False
        return self._segflat_con, self._segflat_coef, self._segflat_start

    def _grow_slots(self, extra: int) -> None:
        old = self._active.size
        width = self._path_con.shape[1]
        self._path_con = np.vstack([self._path_con, np.zeros((extra, width), dtype=np.int64)])
        self._path_coef = np.vstack([self._path_coef, np.zeros((extra, width))])
        for attr in ("_priority", "_level_cap", "_level"):
            setattr(self, attr, np.concatenate([getattr(self, attr), np.zeros(extra)]))
        self._active = np.concatenate([self._active, np.zeros(extra, dtype=bool)])
        self._has_seg = np.concatenate([self._has_seg, np.zeros(extra, dtype=bool)])
        self._segs.extend([()] * extra)
        self._flows.extend([None] * extra)
        self._free_slots.extend(range(old + extra - 1, old - 1, -1))
        self._on_new_slots(extra)

    def _alloc_slot(self, path_len: int) -> int:
        if path_len > self._path_con.shape[1]:
            pad = path_len - self._path_con.shape[1]
            n = self._path_con.shape[0]
            self._path_con = np.hstack([self._path_con, np.zeros((n, pad), dtype=np.int64)])
            self._path_coef = np.hstack([self._path_coef, np.zeros((n, pad))])
        if not self._free_slots:
            self._grow_slots(max(64, self._active.size))
        return self._free_slots.pop()

    # ------------------------------------------------------------------ entries
    def _factored(self, slots: IntArray) -> Factored:
        """The entries of ``slots`` with their segments kept factored (see :class:`Factored`).

        Inside :meth:`_memo_factored` the result for a given slot array is
        built once: a solve asks for the same few flows' entries many times,
        and no path changes while it runs.
        """
        memo = self._factored_memo
        if memo is None:
            return self._build_factored(slots)
        key = np.asarray(slots, dtype=np.int64).tobytes()
        found = memo.get(key)
        if found is None:
            found = memo[key] = self._build_factored(slots)
        return found

    @contextmanager
    def _memo_factored(self) -> Iterator[None]:
        """Within this block, :meth:`_factored` builds each slot array's entries once.

        Only for code that changes no flow's path or segments (solving,
        reclassifying): a started or released flow would leave stale entries.
        """
        outer = self._factored_memo
        if outer is None:
            self._factored_memo = {}
        try:
            yield
        finally:
            self._factored_memo = outer

    def _build_factored(self, slots: IntArray) -> Factored:
        """The entries of ``slots``, built (see :meth:`_factored`)."""
        pc = self._path_con[slots]
        mask = pc > 0
        own = (
            np.broadcast_to(np.arange(slots.size, dtype=np.int64)[:, None], pc.shape)[mask],
            pc[mask],
            self._path_coef[slots][mask],
        )
        with_seg = np.flatnonzero(self._has_seg[slots])
        if with_seg.size == 0:
            empty_i = np.zeros(0, dtype=np.int64)
            return Factored(
                slots.size,
                own,
                (empty_i, empty_i, np.zeros(0)),
                (empty_i, np.zeros(0), np.zeros(1, dtype=np.int64)),
            )
        rows_i: list[int] = []
        rows_g: list[int] = []
        rows_u: list[float] = []
        segs = self._segs
        for i, slot in zip(with_seg.tolist(), slots[with_seg].tolist(), strict=True):
            for g, u in segs[slot]:
                rows_i.append(i)
                rows_g.append(g)
                rows_u.append(u)
        used, local = np.unique(np.array(rows_g, dtype=np.int64), return_inverse=True)
        flat_con, flat_coef, flat_start = self._segflat()
        starts = flat_start[used]
        lens = flat_start[used + 1] - starts
        total = int(lens.sum())
        idx = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(total)
        seg_start = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        return Factored(
            slots.size,
            own,
            (np.array(rows_i, dtype=np.int64), local.astype(np.int64), np.array(rows_u)),
            (flat_con[idx], flat_coef[idx], seg_start),
        )

    def _entries(self, slots: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
        """Every (flow, constraint, coefficient) entry of ``slots``, segments expanded.

        For inspection and tests (:meth:`snapshot`): the solvers use
        :meth:`_factored`, which never expands a segment per flow.
        """
        f = self._factored(slots)
        lens = np.diff(f.seg_start)
        per_use = lens[f.use_seg]
        total = int(per_use.sum())
        idx = np.repeat(f.seg_start[f.use_seg] - np.cumsum(per_use) + per_use, per_use)
        idx = idx + np.arange(total)
        owner = np.concatenate([f.own_owner, np.repeat(f.use_owner, per_use)])
        con = np.concatenate([f.own_con, f.seg_con[idx]])
        coef = np.concatenate([f.own_coef, f.seg_coef[idx] * np.repeat(f.use_coef, per_use)])
        order = np.argsort(owner, kind="stable")
        return owner[order], con[order], coef[order]

    def _mark(self, cons: IntArray) -> BoolArray:
        mark = np.zeros(self._n_cons, dtype=bool)
        mark[cons] = True
        mark[0] = False
        return mark

    def _crossing(self, slots: IntArray, cons: IntArray) -> BoolArray:
        """Which of ``slots`` cross any constraint in ``cons``."""
        return self._factored(slots).owner_any(self._mark(cons))

    # ------------------------------------------------------------------ solvers
    def _solve_factored(
        self, f: Factored, capacity: FloatArray, slots: IntArray, cons: IntArray | None = None
    ) -> FloatArray:
        """Levels of the flows of ``f`` on ``capacity`` (indexed by ``cons`` if given)."""
        own_con, seg_con = f.own_con, f.seg_con
        if cons is not None:
            own_con = np.searchsorted(cons, own_con)
            seg_con = np.searchsorted(cons, seg_con)
        return solve_maxmin_factored(
            f.own_owner,
            own_con,
            f.own_coef,
            f.use_owner,
            f.use_seg,
            f.use_coef,
            seg_con,
            f.seg_coef,
            f.seg_start,
            capacity,
            self._level_cap[slots],
            self._priority[slots],
        )

    def _solve_subset(self, slots: IntArray) -> None:
        """Re-solve ``slots`` on the capacity left by all other active flows."""
        f = self._factored(slots)
        used = f.cons()
        own = np.zeros(self._n_cons)
        f.add_to(own, self._priority[slots] * self._level[slots])
        residual = np.maximum(self._con_cap[used] - (self._con_load[used] - own[used]), 0.0)
        self._level[slots] = self._solve_factored(f, residual, slots, used)

    def _segments_containing(self, cons: IntArray) -> tuple[int, ...]:
        """Segments that contain any of ``cons`` (sorted), in O(their entries among ``cons``).

        Segments are only ever added, so the answer for a constraint array is
        remembered until the next one is (a departed read's whole stripe set is
        looked up again on every call of a replay).
        """
        if self._con_seg_dirty:
            self._con_seg_found.clear()
            flat_con, _coef, flat_start = self._segflat()
            seg_of = np.repeat(np.arange(flat_start.size - 1), np.diff(flat_start))
            order = np.argsort(flat_con, kind="stable")
            counts = np.bincount(flat_con, minlength=self._con_cap.size)
            self._con_seg_indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            self._con_seg_ids = seg_of[order]
            self._con_seg_dirty = False
        key = np.asarray(cons, dtype=np.int64).tobytes()
        found = self._con_seg_found.get(key)
        if found is not None:
            return found
        known = cons[cons < self._con_seg_indptr.size - 1]
        starts = self._con_seg_indptr[known]
        lengths = self._con_seg_indptr[known + 1] - starts
        total = int(lengths.sum())
        found = ()
        if total:
            offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
            found = tuple(unique_ints(self._con_seg_ids[offsets + np.arange(total)]).tolist())
        if len(self._con_seg_found) >= SEGMENT_LOOKUPS_KEPT:
            self._con_seg_found.clear()
        self._con_seg_found[key] = found
        return found

    def _members(self, cons: IntArray) -> IntArray:
        """Active slots whose path crosses any constraint in ``cons``."""
        if self._index_dirty or len(self._index_recent) > max(2048, self._active.size // 16):
            self._rebuild_index()
        known = cons[cons < self._index_indptr.size - 1]
        starts = self._index_indptr[known]
        lengths = self._index_indptr[known + 1] - starts
        total = int(lengths.sum())
        parts = [np.zeros(0, dtype=np.int64)]
        if total:
            offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
            parts.append(self._index_slots[offsets + np.arange(total)])
        if self._index_recent:
            parts.append(np.array(self._index_recent, dtype=np.int64))
        for g in self._segments_containing(cons):
            if self._seg_slots[g]:
                parts.append(np.fromiter(self._seg_slots[g], dtype=np.int64))
        candidates = unique_ints(np.concatenate(parts))
        candidates = candidates[self._active[candidates]]
        if candidates.size == 0:
            return candidates
        return candidates[self._crossing(candidates, cons)]

    def _rebuild_index(self, owner_con: tuple[IntArray, IntArray] | None = None) -> None:
        """Index active slots by their own constraints (CSR); later starts go to a list.

        Flows crossing a constraint through a segment are found from the
        segment's users instead.  ``owner_con`` is the (slot, constraint) of
        every active own entry, if known.
        """
        if owner_con is None:
            active = np.flatnonzero(self._active)
            pc = self._path_con[active]
            mask = pc > 0
            slots = np.broadcast_to(active[:, None], pc.shape)[mask]
            cons = pc[mask]
        else:
            slots, cons = owner_con
        order = np.argsort(cons, kind="stable")
        counts = np.bincount(cons, minlength=self._n_cons)
        self._index_indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._index_slots = slots[order]
        self._index_recent = []
        self._index_dirty = False

    def _recompute_state(self, cons: IntArray) -> IntArray:
        """Recompute exact load, max level and saturation of ``cons``.

        Returns the active slots touching ``cons``.
        """
        touching = self._members(cons)
        self._con_load[cons] = 0.0
        self._con_max_level[cons] = 0.0
        if touching.size:
            mark = self._mark(cons)
            f = self._factored(touching)
            f.add_to(self._con_load, self._priority[touching] * self._level[touching], mark)
            f.max_into(self._con_max_level, self._level[touching], mark)
        self._update_saturation(cons)
        return touching

    def _saturated_now(self, cons: IntArray) -> BoolArray:
        cap = self._con_cap[cons]
        saturated: BoolArray = (
            self._con_load[cons] >= cap * (1.0 - SATURATION_RTOL)
        ) & np.isfinite(cap)
        return saturated

    def _update_saturation(self, cons: IntArray) -> None:
        self._con_saturated[cons] = self._saturated_now(cons)
        self._con_saturated[0] = False

    def _lowest_bottleneck_level(self, f: Factored) -> FloatArray:
        """Per flow, the lowest highest-level among the saturated constraints it crosses."""
        per_con = np.where(
            self._con_saturated[: self._n_cons], self._con_max_level[: self._n_cons], np.inf
        )
        return f.owner_min(per_con)

    def _invalid_flows(self, slots: IntArray) -> IntArray:
        """Return the slots that violate the max-min optimality condition.

        A flow is fine at its cap, or when it crosses a saturated constraint on
        which no flow has a higher level (it has the highest level there).
        """
        f = self._factored(slots)
        level = self._level[slots]
        ok = level >= self._lowest_bottleneck_level(f) * (1.0 - LEVEL_RTOL)
        ok |= level >= self._level_cap[slots] * (1.0 - LEVEL_RTOL)
        return slots[~ok]

    def _repair(self, new: IntArray, touched: IntArray) -> tuple[IntArray, IntArray] | None:
        """Re-solve exactly, starting from the new flows and the touched constraints.

        Returns the slots and constraints the repair examined (every flow whose
        level or whose constraints' state may have changed is among them), or
        ``None`` when it escalated to a full solve.
        """
        self._solver_counts["repairs"] += 1
        reach_slots: list[IntArray] = [new]
        reach_cons: list[IntArray] = [touched]
        n_active = int(self._active.sum())
        in_s = np.zeros(self._active.size, dtype=bool)
        in_s[new] = True
        changed = touched
        solved = np.zeros(0, dtype=np.int64)
        while True:
            s_slots = np.flatnonzero(in_s)
            if wants_full_solve(s_slots.size, n_active):
                self._full_solve()
                return None
            if s_slots.size > solved.size:
                old_rates = self._priority[s_slots] * self._level[s_slots]
                self._solve_subset(s_slots)
                delta = self._priority[s_slots] * self._level[s_slots] - old_rates
                f = self._factored(s_slots)
                f.add_to(self._con_load, delta)
                self._con_load[0] = 0.0
                changed = unique_ints(np.concatenate([changed, f.cons()]))
                solved = s_slots
            # Only constraints saturated before or after can decide a bottleneck.
            relevant = changed[self._con_saturated[changed] | self._saturated_now(changed)]
            unsaturated = np.setdiff1d(changed, relevant, assume_unique=True)
            self._con_saturated[unsaturated] = False
            touching = self._recompute_state(relevant)
            candidates = unique_ints(np.concatenate([touching, s_slots]))
            reach_slots.append(candidates)
            reach_cons.append(changed)
            invalid = self._invalid_flows(candidates)
            grow = invalid[~in_s[invalid]]
            over = relevant[
                self._con_load[relevant] > self._con_cap[relevant] * (1.0 + SATURATION_RTOL)
            ]
            if over.size:
                # A capacity fell below the load: every flow crossing it must be re-solved.
                crossing = touching[self._crossing(touching, over)]
                grow = unique_ints(np.concatenate([grow, crossing[~in_s[crossing]]]))
            invalid_s = invalid[in_s[invalid]]
            if invalid_s.size:
                # A re-solved flow sits below a fixed flow on one of its saturated
                # constraints: free the higher fixed flows there.
                threshold = np.full(self._n_cons, np.inf)
                self._factored(invalid_s).min_into(threshold, self._level[invalid_s])
                threshold[0] = np.inf
                others = touching[~in_s[touching]]
                lowest = self._factored(others).owner_min(threshold)
                above = self._level[others] > lowest * (1.0 + LEVEL_RTOL)
                grow = unique_ints(np.concatenate([grow, others[above]]))
            if grow.size == 0:
                self._solver_counts["repair_flows"] += int(s_slots.size)
                return unique_ints(np.concatenate(reach_slots)), unique_ints(
                    np.concatenate(reach_cons)
                )
            in_s[grow] = True
            changed = relevant

    def _full_solve(self) -> None:
        self._solver_counts["full_solves"] += 1
        active = np.flatnonzero(self._active)
        self._con_load[:] = 0.0
        self._con_max_level[:] = 0.0
        self._con_saturated[:] = False
        if active.size == 0:
            self._rebuild_index()
            return
        f = self._factored(active)
        level = self._solve_factored(f, self._con_cap[: self._n_cons], active)
        self._level[active] = level
        f.add_to(self._con_load, self._priority[active] * level)
        self._con_load[0] = 0.0
        f.max_into(self._con_max_level, level)
        self._con_max_level[0] = 0.0
        self._update_saturation(np.arange(self._n_cons))
        self._rebuild_index((active[f.own_owner], f.own_con))
