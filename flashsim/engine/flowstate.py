"""Flow-level state and the exact incremental max-min repair.

:class:`FlowState` keeps one row per flow slot (path constraints and
coefficients, priority, level cap, level) and one entry per constraint
(capacity, load, highest level crossing it, saturation), and re-solves them
exactly: a full solve (:func:`flashsim.engine.maxmin.solve_maxmin`) or an
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
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from flashsim.engine.maxmin import IntArray, solve_maxmin

#: Relative slack below capacity at which a constraint counts as saturated.
SATURATION_RTOL = 1e-9
#: Relative slack for comparing flow levels in the optimality check.
LEVEL_RTOL = 1e-9
#: Changes touching more than this fraction of active flows trigger a full solve.
FULL_SOLVE_FRACTION = 0.25


class FlowState:
    """Slot and constraint arrays with the exact flow-level solvers.

    Index 0 of the constraint arrays is a sentinel with infinite capacity used
    as padding in the per-slot path rows.
    """

    def __init__(self) -> None:
        self._con_cap = np.full(64, np.inf)
        self._con_load = np.zeros(64)
        self._con_max_level = np.zeros(64)
        self._con_saturated = np.zeros(64, dtype=bool)
        self._n_cons = 1
        # Constraint -> slots index (CSR), rebuilt lazily; slots started since go to a list.
        self._index_indptr = np.zeros(1, dtype=np.int64)
        self._index_slots = np.zeros(0, dtype=np.int64)
        self._index_recent: list[int] = []
        self._index_dirty = True
        # Flow slot arrays.
        self._path_con = np.zeros((0, 1), dtype=np.int64)
        self._path_coef = np.zeros((0, 1))
        self._priority = np.zeros(0)
        self._level_cap = np.zeros(0)
        self._level = np.zeros(0)
        self._active = np.zeros(0, dtype=bool)
        self._flows: list[Any] = []
        self._free_slots: list[int] = []
        #: Counters for benchmarks and diagnostics.
        self.stats: dict[str, int] = {
            "full_solves": 0,
            "repairs": 0,
            "repair_flows": 0,
            "class_events": 0,
        }
        self._grow_slots(64)

    def _on_new_constraints(self, grow: int) -> None:
        """Hook: the constraint arrays grew by ``grow`` entries."""

    def _on_new_slots(self, extra: int) -> None:
        """Hook: the slot arrays grew by ``extra`` rows."""

    def _new_constraint(self, capacity: float) -> int:
        if self._n_cons == self._con_cap.size:
            grow = self._con_cap.size
            self._con_cap = np.concatenate([self._con_cap, np.full(grow, np.inf)])
            self._con_load = np.concatenate([self._con_load, np.zeros(grow)])
            self._con_max_level = np.concatenate([self._con_max_level, np.zeros(grow)])
            self._con_saturated = np.concatenate([self._con_saturated, np.zeros(grow, dtype=bool)])
            self._on_new_constraints(grow)
        idx = self._n_cons
        self._con_cap[idx] = capacity
        self._n_cons += 1
        return idx

    def _grow_slots(self, extra: int) -> None:
        old = self._active.size
        width = self._path_con.shape[1]
        self._path_con = np.vstack([self._path_con, np.zeros((extra, width), dtype=np.int64)])
        self._path_coef = np.vstack([self._path_coef, np.zeros((extra, width))])
        for attr in ("_priority", "_level_cap", "_level"):
            setattr(self, attr, np.concatenate([getattr(self, attr), np.zeros(extra)]))
        self._active = np.concatenate([self._active, np.zeros(extra, dtype=bool)])
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

    def _solve_subset(self, slots: IntArray) -> None:
        """Re-solve ``slots`` on the capacity left by all other active flows."""
        cons = self._path_con[slots]
        coefs = self._path_coef[slots]
        old_rates = self._priority[slots] * self._level[slots]
        mask = cons > 0
        local_flow = np.broadcast_to(np.arange(slots.size)[:, None], cons.shape)[mask]
        used_cons, local_con = np.unique(cons[mask], return_inverse=True)
        own = np.bincount(
            local_con, weights=(coefs * old_rates[:, None])[mask], minlength=used_cons.size
        )
        residual = np.maximum(self._con_cap[used_cons] - (self._con_load[used_cons] - own), 0.0)
        level = solve_maxmin(
            local_flow.astype(np.int64),
            local_con.astype(np.int64),
            coefs[mask],
            residual,
            self._level_cap[slots],
            self._priority[slots],
        )
        self._level[slots] = level

    def _members(self, cons: IntArray) -> IntArray:
        """Active slots whose path crosses any constraint in ``cons``."""
        if self._index_dirty or len(self._index_recent) > max(2048, self._active.size // 16):
            self._rebuild_index()
        known = cons[cons < self._index_indptr.size - 1]
        starts = self._index_indptr[known]
        lengths = self._index_indptr[known + 1] - starts
        total = int(lengths.sum())
        if total:
            offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
            candidates = self._index_slots[offsets + np.arange(total)]
        else:
            candidates = np.zeros(0, dtype=np.int64)
        if self._index_recent:
            candidates = np.concatenate([candidates, np.array(self._index_recent, dtype=np.int64)])
        candidates = np.unique(candidates)
        candidates = candidates[self._active[candidates]]
        mark = np.zeros(self._n_cons, dtype=bool)
        mark[cons] = True
        mark[0] = False
        return candidates[mark[self._path_con[candidates]].any(axis=1)]

    def _rebuild_index(self, order: IntArray | None = None) -> None:
        """Index active slots by constraint (CSR); later starts go to a recent list.

        ``order`` is the stable argsort of the active entries' constraints, if known.
        """
        active = np.flatnonzero(self._active)
        pc = self._path_con[active]
        mask = pc > 0
        cons = pc[mask]
        slots = np.broadcast_to(active[:, None], pc.shape)[mask]
        if order is None:
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
        mark = np.zeros(self._n_cons, dtype=bool)
        mark[cons] = True
        mark[0] = False
        pc = self._path_con[touching]
        in_set = mark[pc]
        con_entries = pc[in_set]
        rates = self._priority[touching] * self._level[touching]
        self._con_load[cons] = 0.0
        np.add.at(self._con_load, con_entries, (self._path_coef[touching] * rates[:, None])[in_set])
        self._con_max_level[cons] = 0.0
        levels = np.broadcast_to(self._level[touching][:, None], pc.shape)[in_set]
        np.maximum.at(self._con_max_level, con_entries, levels)
        self._update_saturation(cons)
        return touching

    def _saturated_now(self, cons: IntArray) -> npt.NDArray[np.bool_]:
        cap = self._con_cap[cons]
        saturated: npt.NDArray[np.bool_] = (
            self._con_load[cons] >= cap * (1.0 - SATURATION_RTOL)
        ) & np.isfinite(cap)
        return saturated

    def _update_saturation(self, cons: IntArray) -> None:
        self._con_saturated[cons] = self._saturated_now(cons)
        self._con_saturated[0] = False

    def _invalid_flows(self, slots: IntArray) -> IntArray:
        """Return the slots that violate the max-min optimality condition."""
        pc = self._path_con[slots]
        level = self._level[slots]
        is_max = level[:, None] >= self._con_max_level[pc] * (1.0 - LEVEL_RTOL)
        ok = (self._con_saturated[pc] & is_max).any(axis=1)
        ok |= level >= self._level_cap[slots] * (1.0 - LEVEL_RTOL)
        return slots[~ok]

    def _repair(self, new: IntArray, touched: IntArray) -> tuple[IntArray, IntArray] | None:
        """Re-solve exactly, starting from the new flows and the touched constraints.

        Returns the slots and constraints the repair examined (every flow whose
        level or whose constraints' state may have changed is among them), or
        ``None`` when it escalated to a full solve.
        """
        self.stats["repairs"] += 1
        reach_slots: list[IntArray] = [new]
        reach_cons: list[IntArray] = [touched]
        n_active = int(self._active.sum())
        in_s = np.zeros(self._active.size, dtype=bool)
        in_s[new] = True
        changed = touched
        solved = np.zeros(0, dtype=np.int64)
        while True:
            s_slots = np.flatnonzero(in_s)
            if s_slots.size > FULL_SOLVE_FRACTION * n_active:
                self._full_solve()
                return None
            if s_slots.size > solved.size:
                old_rates = self._priority[s_slots] * self._level[s_slots]
                self._solve_subset(s_slots)
                delta = self._priority[s_slots] * self._level[s_slots] - old_rates
                path = self._path_con[s_slots]
                np.add.at(
                    self._con_load,
                    path.reshape(-1),
                    (self._path_coef[s_slots] * delta[:, None]).reshape(-1),
                )
                self._con_load[0] = 0.0
                changed = np.union1d(changed, path[path > 0])
                solved = s_slots
            # Only constraints saturated before or after can decide a bottleneck.
            relevant = changed[self._con_saturated[changed] | self._saturated_now(changed)]
            unsaturated = np.setdiff1d(changed, relevant, assume_unique=True)
            self._con_saturated[unsaturated] = False
            touching = self._recompute_state(relevant)
            candidates = np.union1d(touching, s_slots)
            reach_slots.append(candidates)
            reach_cons.append(changed)
            invalid = self._invalid_flows(candidates)
            grow = invalid[~in_s[invalid]]
            over = relevant[
                self._con_load[relevant] > self._con_cap[relevant] * (1.0 + SATURATION_RTOL)
            ]
            if over.size:
                # A capacity fell below the load: every flow crossing it must be re-solved.
                mark = np.zeros(self._n_cons, dtype=bool)
                mark[over] = True
                crossing = touching[mark[self._path_con[touching]].any(axis=1)]
                grow = np.union1d(grow, crossing[~in_s[crossing]])
            invalid_s = invalid[in_s[invalid]]
            if invalid_s.size:
                # A re-solved flow sits below a fixed flow on one of its saturated
                # constraints: free the higher fixed flows there.
                threshold = np.full(self._n_cons, np.inf)
                pc = self._path_con[invalid_s]
                np.minimum.at(
                    threshold, pc.reshape(-1), np.repeat(self._level[invalid_s], pc.shape[1])
                )
                threshold[0] = np.inf
                others = touching[~in_s[touching]]
                above = self._level[others][:, None] > threshold[self._path_con[others]] * (
                    1.0 + LEVEL_RTOL
                )
                grow = np.union1d(grow, others[above.any(axis=1)])
            if grow.size == 0:
                self.stats["repair_flows"] += int(s_slots.size)
                return np.unique(np.concatenate(reach_slots)), np.unique(np.concatenate(reach_cons))
            in_s[grow] = True
            changed = relevant

    def _full_solve(self) -> None:
        self.stats["full_solves"] += 1
        active = np.flatnonzero(self._active)
        self._con_load[:] = 0.0
        self._con_max_level[:] = 0.0
        self._con_saturated[:] = False
        if active.size == 0:
            self._rebuild_index()
            return
        cons = self._path_con[active]
        coefs = self._path_coef[active]
        mask = cons > 0
        entry_con = cons[mask]
        order = np.argsort(entry_con, kind="stable")
        local_flow = np.broadcast_to(np.arange(active.size)[:, None], cons.shape)[mask]
        level = solve_maxmin(
            local_flow.astype(np.int64),
            entry_con,
            coefs[mask],
            self._con_cap[: self._n_cons],
            self._level_cap[active],
            self._priority[active],
            con_order=order,
        )
        self._level[active] = level
        rates = self._priority[active] * level
        self._con_load[: self._n_cons] = np.bincount(
            entry_con, weights=(coefs * rates[:, None])[mask], minlength=self._n_cons
        )
        self._con_load[0] = 0.0
        np.maximum.at(
            self._con_max_level, entry_con, np.broadcast_to(level[:, None], cons.shape)[mask]
        )
        self._update_saturation(np.arange(self._n_cons))
        self._rebuild_index(order)
