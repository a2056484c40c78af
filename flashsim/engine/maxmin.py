"""Weighted max-min fair allocation by vectorised progressive filling.

The problem: flows ``f`` with priorities ``phi_f > 0`` and optional rate caps
``cap_f``; constraints ``j`` with capacities ``C_j``; flow ``f`` consumes
``a_fj * rate_f`` of constraint ``j``.  The weighted max-min fair allocation
raises every flow's *level* ``lambda_f = rate_f / phi_f`` together and freezes a
flow when one of its constraints saturates or it reaches its cap (progressive
filling, Bertsekas & Gallager, *Data Networks*, 2nd ed., section 6.5.2).

Instead of freezing one bottleneck per round, every constraint whose fill level
is a *local minimum* (no flow through it can be frozen earlier by another
constraint or cap) is frozen in the same round.  Fill levels only grow as other
flows freeze, so a local minimum's level is final; the result is identical to
the sequential algorithm while the number of rounds is the length of the
longest chain of decreasing levels, not the number of distinct levels.
Each round is a handful of NumPy passes over the still-active entries.

:func:`solve_maxmin_factored` solves flows that share *segments* (sub-paths
stored once) without expanding them; :func:`solve_maxmin` is its flat form.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Relative tolerance used to decide that two levels are equal.
LEVEL_RTOL = 1e-12


def solve_maxmin(
    entry_flow: IntArray,
    entry_con: IntArray,
    entry_coef: FloatArray,
    capacity: FloatArray,
    level_cap: FloatArray,
    priority: FloatArray,
) -> FloatArray:
    """Return the weighted max-min fair level of every flow.

    The flat form of :func:`solve_maxmin_factored` (no shared segments).

    Parameters
    ----------
    entry_flow : ndarray of int, shape (E,)
        Local flow index ``0..F-1`` of each (flow, constraint) entry.
    entry_con : ndarray of int, shape (E,)
        Constraint index ``0..C-1`` of each entry.
    entry_coef : ndarray of float, shape (E,)
        Consumption of the constraint per unit of the flow's rate (> 0),
        e.g. bytes on the constraint per user byte.
    capacity : ndarray of float, shape (C,)
        Capacity of each constraint available to these flows (>= 0), in the
        constraint's own unit per second.
    level_cap : ndarray of float, shape (F,)
        Cap on each flow's level ``rate / priority``; ``inf`` for none.
    priority : ndarray of float, shape (F,)
        Share weight of each flow (> 0); rate = priority * level.

    Returns
    -------
    ndarray of float, shape (F,)
        The level of each flow; its rate is ``priority * level``.  A flow with
        no entries and no cap gets ``inf``.
    """
    no_int = np.zeros(0, dtype=np.int64)
    return solve_maxmin_factored(
        entry_flow,
        entry_con,
        entry_coef,
        no_int,
        no_int,
        np.zeros(0),
        no_int,
        np.zeros(0),
        np.zeros(1, dtype=np.int64),
        capacity,
        level_cap,
        priority,
    )


def solve_maxmin_factored(
    entry_flow: IntArray,
    entry_con: IntArray,
    entry_coef: FloatArray,
    use_flow: IntArray,
    use_seg: IntArray,
    use_coef: FloatArray,
    seg_con: IntArray,
    seg_coef: FloatArray,
    seg_start: IntArray,
    capacity: FloatArray,
    level_cap: FloatArray,
    priority: FloatArray,
) -> FloatArray:
    """:func:`solve_maxmin` for flows that share *segments* (sub-paths stored once).

    Flow ``f`` consumes ``a_fk = d_fk + sum_g u_fg * s_gk`` of constraint ``k``:
    its own entries ``d`` plus, for each segment ``g`` it uses with weight
    ``u_fg``, the segment's entries ``s_g``.  Progressive filling needs only
    sums and minima over flows, which factor through the segments: the weight
    on ``k`` is ``sum_f d_fk phi_f + sum_g s_gk U_g`` with ``U_g`` the summed
    ``u * phi`` of ``g``'s active users.  Each round therefore costs O(own
    entries + uses + segment entries), not O(flows x segment size), and the
    result equals the flat solve (:func:`solve_maxmin`) of the expanded entries.

    Parameters
    ----------
    entry_flow, entry_con, entry_coef : ndarray, shape (E,)
        The flows' own entries (any order).
    use_flow, use_seg, use_coef : ndarray, shape (U,)
        Segment uses: flow, segment index ``0..G-1`` and weight ``u > 0``.
    seg_con, seg_coef : ndarray, shape (S,)
        The segments' entries, end to end.
    seg_start : ndarray of int, shape (G + 1,)
        Where each segment's entries start in ``seg_con`` (and the total).
    capacity, level_cap, priority : ndarray
        As for :func:`solve_maxmin`.

    Returns
    -------
    ndarray of float, shape (F,)
        The level of each flow (rate = priority * level).
    """
    n_flows = level_cap.shape[0]
    n_cons = capacity.shape[0]
    n_segs = seg_start.size - 1
    level = np.full(n_flows, np.inf)
    if n_flows == 0:
        return level
    residual = capacity.astype(np.float64, copy=True)
    active = np.zeros(n_flows, dtype=bool)
    active[entry_flow] = True
    active[use_flow] = True
    level[~active] = level_cap[~active]
    seg_len = np.diff(seg_start)
    seg_of_entry = np.repeat(np.arange(n_segs), seg_len)
    nonempty = seg_len > 0
    starts = seg_start[:-1][nonempty]
    ef, ec, ew = entry_flow, entry_con, entry_coef * priority[entry_flow]
    uf, ug, uw = use_flow, use_seg, use_coef * priority[use_flow]
    while active.any():
        users = np.bincount(ug, weights=uw, minlength=n_segs)
        weight_sum = np.bincount(ec, weights=ew, minlength=n_cons).astype(np.float64)
        weight_sum += np.bincount(seg_con, weights=seg_coef * users[seg_of_entry], minlength=n_cons)
        with np.errstate(divide="ignore", invalid="ignore"):
            fill = np.where(weight_sum > 0, np.maximum(residual, 0.0) / weight_sum, np.inf)
        # Each flow's lowest fill over its own entries and its segments' entries.
        flow_min = level_cap.copy()
        np.minimum.at(flow_min, ef, fill[ec])
        seg_fill = np.full(n_segs, np.inf)
        if starts.size:
            seg_fill[nonempty] = np.minimum.reduceat(fill[seg_con], starts)
        np.minimum.at(flow_min, uf, seg_fill[ug])
        if n_flows == 1:
            # A lone flow freezes at its lowest fill or cap in this round (the rest of
            # the round would find exactly that).
            level[0] = flow_min[0]
            return level
        # Each constraint's lowest flow minimum among the flows crossing it.
        con_min = np.full(n_cons, np.inf)
        np.minimum.at(con_min, ec, flow_min[ef])
        seg_users_min = np.full(n_segs, np.inf)
        np.minimum.at(seg_users_min, ug, flow_min[uf])
        np.minimum.at(con_min, seg_con, seg_users_min[seg_of_entry])
        freezable = (weight_sum > 0) & (fill <= con_min * (1.0 + LEVEL_RTOL))
        freeze = np.zeros(n_flows, dtype=bool)
        freeze[ef[freezable[ec]]] = True
        if starts.size:
            seg_free = np.zeros(n_segs, dtype=bool)
            seg_free[nonempty] = np.logical_or.reduceat(freezable[seg_con], starts)
            freeze[uf[seg_free[ug]]] = True
        freeze |= active & (level_cap <= flow_min * (1.0 + LEVEL_RTOL))
        freeze &= active
        if not freeze.any():  # pragma: no cover - impossible by construction
            freeze[np.argmin(np.where(active, flow_min, np.inf))] = True
        level[freeze] = flow_min[freeze]
        # Take what the frozen flows consume out of the residual capacities.
        fe = freeze[ef]
        consumed = ew[fe] * level[ef[fe]]
        residual -= np.bincount(
            ec[fe], weights=np.where(np.isfinite(consumed), consumed, 0.0), minlength=n_cons
        )
        fu = freeze[uf]
        used = uw[fu] * level[uf[fu]]
        frozen_use = np.bincount(
            ug[fu], weights=np.where(np.isfinite(used), used, 0.0), minlength=n_segs
        )
        residual -= np.bincount(
            seg_con, weights=seg_coef * frozen_use[seg_of_entry], minlength=n_cons
        )
        active &= ~freeze
        ef, ec, ew = ef[~fe], ec[~fe], ew[~fe]
        uf, ug, uw = uf[~fu], ug[~fu], uw[~fu]
    return level
