"""Bottleneck classes: flows that share a max-min level move on one virtual clock.

In a weighted max-min fair allocation every flow's level (rate / priority) is
either its cap or the level of a saturated constraint it crosses and on which
no flow has a higher level (its bottleneck).  Flows with the same bottleneck
constraint therefore share one level ``mu``, and flows at the same cap level
share theirs.  A :class:`FlowClass` holds such a group:

* its level ``mu`` and a virtual clock ``vtime`` (the integral of ``mu`` over
  time), so a member's remaining bytes are ``priority * (tag - vtime)`` and its
  completion is the moment ``vtime`` reaches its *virtual finish tag* (the
  processor-sharing virtual-time technique of fair queueing, Parekh & Gallager
  1993), found in a heap in O(log n);
* ``w[k]``, the summed ``coefficient * priority`` of its members on constraint
  ``k``, so the load a class puts on ``k`` is ``mu * w[k]``;
* the checks that keep the class structure the max-min solution: members' caps
  (a heap), the saturated constraints members cross (``sat``), and a heap of
  *threshold levels* for the unsaturated constraints it crosses: the level at
  which a constraint this class alone moves would saturate, or, where several
  classes share a constraint, this class's escrow share of its slack (each
  moving class may grow by its share without re-checking; one that exceeds it
  re-divides the slack, so a check costs O(log n) however many classes share
  the constraint).

A class also keeps ``segw[g]``, the summed ``weight * priority`` of members
using shared segment ``g``: the segment's rate is ``R_g = sum_c mu_c segw_c[g]``
and each constraint ``k`` of the segment carries ``coef_g[k] * R_g``, so a
member joining a 274-wide stripe set costs O(1), not O(274).  Segments have
escrow thresholds on ``R_g`` of their own, but only on the constraints
something else loads too: a *solo* constraint, which only the segment loads,
is checked by one number per segment, its bound ``min_k limit_k / coef_g[k]``
(past it some constraint is over capacity on the segment's load alone).  So
a lone flow on a file striped over 160 OSTs (a segment of ~6,000
constraints) costs a vector pass over the segment when it comes into use,
not a threshold per constraint.

A start or end changes a few ``w`` entries; the classes whose equation
``sum_c mu_c w_c[b] = C_b`` it touches are re-solved in level order and the
checks above are re-run for them only.  When any check fails the bottleneck
structure has changed and :class:`ClassLayer` falls back to the exact
flow-level repair of :class:`~flashsim.engine.flowstate.FlowState`, then moves
only the flows that repair reached.  One new bottleneck needs no repair: a flow
*alone* on its path (no class crosses any of its constraints) runs at the least
capacity / coefficient along it, so its class is made there directly and checked
as above (a read on a 160-OST stripe set costs its own path).  Nor do new flows
that cross no class's bottleneck but share constraints with other classes (a
checkpoint's write-behind drain starting on an idle OST behind busy client
NICs): they are solved exactly among themselves on the capacity the classes
leave them, their bottleneck classes are made from that sub-solution, and the
checks above (with every class crossing a new bottleneck at or below it) decide
whether it stands.

An event re-checks only what it can have broken, so that a call costs its own
path however many classes and segments its class spans (a 500k-call replay):

* a leave only lowers loads (weights fall, levels are re-solved and checked
  by the thresholds), so the constraints a leaving flow crossed keep their
  escrow thresholds and only those whose load may have risen are re-derived
  (``_tight``; segments: ``_tight_segs``);
* a segment a class alone uses has a *guard* (``FlowClass.sguard``): a level
  a little below the one at which the class's rate on it reaches its bound or
  its lowest threshold, valid while its weight, users, bound and thresholds
  are unchanged (``_seg_stamp``); a class that rises checks the segments it
  shares, those without a guard and those whose guard it passed, not all;
* a constraint one class moves within :data:`NEAR_RTOL` of saturation (a link
  tied with the class's bottleneck, as the parallel links of a route striped
  over I/O groups are) is checked directly when the class is verified
  (``FlowClass.near``), not by a new threshold entry on every event; stale
  threshold entries are dropped when a class's heap outgrows what it crosses.

Each of these makes the same decisions as re-checking everything: a check
skipped is one that passes without changing anything.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import simpy

from flashsim.engine.flowstate import (
    LEVEL_RTOL,
    SATURATION_RTOL,
    BoolArray,
    FlowState,
    unique_ints,
)
from flashsim.engine.limitledger import LimitLedger
from flashsim.engine.maxmin import FloatArray, IntArray

#: A segment guard sits this factor below the level at which its class's rate on the
#: segment reaches the segment's limit: far more than the rounding of ``mu * segw``.
GUARD_MARGIN = 1.0 - 1e-12

#: A constraint one class moves whose slack is at most this fraction of its capacity is
#: checked directly when the class rises, not by a threshold entry (see FlowClass.near).
NEAR_RTOL = 1e-6

#: No class created in a class event (the common case; immutable, so shared).
_NONE_CREATED: frozenset[int] = frozenset()

#: A class's guard or threshold heap is compacted to its live entries when it holds more
#: than this many entries per segment or constraint it uses, plus :data:`HEAP_SLACK_MIN`
#: (a tuning choice: compaction costs a pass over the heap, stale entries a heap level).
HEAP_SLACK_PER_ENTRY = 4
HEAP_SLACK_MIN = 64

#: A flow's fixed description: own constraints and coefficients, priority, level
#: cap (bytes/s per unit priority), size (B), (segment, weight) pairs, and its own
#: (constraint, coefficient) pairs (the first two zipped once per path kept for use
#: again; None: zip them, see :func:`own_entries`).
FlowSpec = tuple[
    tuple[int, ...],
    tuple[float, ...],
    float,
    float,
    float,
    tuple[tuple[int, float], ...],
    tuple[tuple[int, float], ...] | None,
]


def own_entries(spec: FlowSpec) -> Iterable[tuple[int, float]]:
    """A flow's own (constraint, coefficient) pairs."""
    own = spec[6]
    return zip(spec[0], spec[1], strict=True) if own is None else own


class FlowClass:
    """Flows sharing one level: a bottleneck constraint's, or one cap level.

    Parameters
    ----------
    cid : int
        Class id.
    con : int
        Bottleneck constraint index, or 0 for a class of flows at their cap.
    cap_level : float
        The fixed level of a cap class; ``inf`` for a bottleneck class.
    mu : float
        Current level (rate / priority), in bytes/s per unit of priority.
    now_s : float
        Simulated time of creation (s).
    """

    __slots__ = (
        "cap_level",
        "caps",
        "cid",
        "cnt",
        "con",
        "members",
        "mu",
        "near",
        "sat",
        "segcnt",
        "segw",
        "sguard",
        "shared",
        "t_s",
        "tags",
        "thr",
        "thr_lazy",
        "unguarded",
        "ver",
        "vtime",
        "w",
    )

    def __init__(self, cid: int, con: int, cap_level: float, mu: float, now_s: float) -> None:
        self.cid = cid
        self.con = con
        self.cap_level = cap_level
        self.mu = mu
        self.vtime = 0.0
        self.t_s = now_s
        self.w: dict[int, float] = {}
        self.cnt: dict[int, int] = {}
        self.sat: set[int] = set()
        self.tags: list[tuple[float, int, int]] = []
        self.caps: list[tuple[float, int, int]] = []
        self.thr: list[tuple[float, int, int]] = []
        # Threshold entries from a rebuild, turned into heap entries on first use.
        self.thr_lazy: tuple[Any, Any, Any] | None = None
        self.members: set[int] = set()
        # Constraints this class alone moves (no segment holds them) whose slack was
        # within NEAR_RTOL of their capacity when last re-derived: checked directly by
        # ClassLayer._verify rather than by a threshold entry (a constraint tied with the
        # bottleneck would otherwise push a new entry on every event).
        self.near: set[int] = set()
        self.segw: dict[int, float] = {}
        self.segcnt: dict[int, int] = {}
        self.ver = 0
        # Segment guards (see ClassLayer._guard_segments): of the segments in ``segw``,
        # those other classes use too (``shared``), those this class alone uses whose
        # check has no guard entry (``unguarded``), and a heap of guard entries
        # ``(level, segment, stamp)`` for the rest: below ``level`` the segment passes.
        self.shared: set[int] = set()
        self.unguarded: set[int] = set()
        self.sguard: list[tuple[float, int, int]] = []

    def advance(self, now_s: float) -> None:
        """Move the virtual clock to ``now_s`` at the current level."""
        if now_s > self.t_s:
            self.vtime += self.mu * (now_s - self.t_s)
            self.t_s = now_s

    def vtime_at(self, now_s: float) -> float:
        """The virtual clock at ``now_s`` (>= the last update), at the current level."""
        return self.vtime + self.mu * (now_s - self.t_s)

    def set_level(self, mu: float, now_s: float) -> None:
        """Change the level from ``now_s`` on (the clock is advanced first)."""
        self.advance(now_s)
        self.mu = mu

    def min_threshold(self, con_ver: list[int]) -> tuple[float, int]:
        """The lowest live threshold level and its constraint (``(inf, 0)`` if none)."""
        if self.thr_lazy is not None:
            levels, cons, vers = self.thr_lazy
            self.thr.extend(zip(levels.tolist(), cons.tolist(), vers.tolist(), strict=True))
            heapq.heapify(self.thr)
            self.thr_lazy = None
        thr = self.thr
        while thr:
            level, con, ver = thr[0]
            if con_ver[con] == ver:
                return level, con
            heapq.heappop(thr)
        return float("inf"), 0


class ClassLayer(FlowState):
    """Bottleneck classes over the flow-level state: the fast path of every event.

    Subclasses own the clock (``env``), flows and public API; this layer keeps
    the classes, the per-constraint and per-segment bookkeeping that checks
    them, and the hand-over to and from the flow-level repair.
    """

    env: simpy.Environment

    def __init__(self) -> None:
        # Per-constraint class bookkeeping (grown with the constraint arrays).
        self._con_class: list[int] = [-1] * 64  # class whose bottleneck it is, or -1
        self._con_class_arr = np.full(64, -1, dtype=np.int64)  # the same, for vector code
        self._con_cls: list[set[int]] = [set() for _ in range(64)]  # classes crossing it
        self._con_movers: list[set[int]] = [set() for _ in range(64)]  # bottleneck classes
        self._con_fixed: list[float] = [0.0] * 64  # load of the cap classes crossing it
        self._con_ver: list[int] = [0] * 64  # bumped when its threshold entries go stale
        # Constraints some class has crossed since the last rebuild: the only ones whose
        # bookkeeping a rebuild must reset (idle resources cost nothing).
        self._con_used: set[int] = set()
        # Own-entry bytes moved = sum_c w_c * vtime_c - z, per constraint (a list: joins and
        # leaves update it entry by entry, which Python floats do several times faster).
        self._con_z: list[float] = [0.0] * 64
        # Per constraint, for vector code: classes crossing it by their own entries, and
        # segments in use that contain it.  A constraint of a segment in use that nothing
        # else loads is *solo*: its load is the segment's, checked by the segment's bound.
        self._con_ncls = np.zeros(64, dtype=np.int64)
        self._con_nsegs = np.zeros(64, dtype=np.int64)
        # Scratch marks for finding a constraint two segments of one flow share.
        self._lone_stamp = np.zeros(64, dtype=np.int64)
        self._lone_tick = 0
        # Per-segment bookkeeping.
        self._seg_cls: list[set[int]] = []  # classes with members using it
        self._seg_bott: list[set[int]] = []  # its constraints that are a class's bottleneck
        self._seg_thr: list[list[tuple[float, int, int]]] = []  # escrow thresholds on R_g
        self._seg_z: list[float] = []  # bytes per unit coefficient = sum segw*vtime - z
        # The highest rate a segment can carry before one of its constraints saturates on
        # its load alone (min limit / coefficient); NaN when a capacity changed since.
        self._seg_bound: list[float] = []
        # The level a lone user of unit weight and priority reaches on a segment (its least
        # capacity / coefficient) and the constraint that sets it; None when a capacity
        # changed since (see _segment_alone).
        self._seg_alone: list[tuple[float, int] | None] = []
        # Bumped whenever a segment's guard entries go stale (see _guard_segments).
        self._seg_stamp: list[int] = []
        # Per-slot class bookkeeping (grown with the slot arrays).
        # (Lists, as _gen and _tag: read and written one entry per join and leave.)
        self._cls: list[int] = []
        self._gen: list[int] = []
        self._tag: list[float] = []
        self._spec: list[FlowSpec | None] = []
        self._classes: dict[int, FlowClass] = {}
        self._cap_class: dict[float, int] = {}
        self._next_cid = 0
        self._events: list[tuple[float, int, int]] = []  # (completion s, class, version)
        self._dirty: set[int] = set()
        self._touched: set[int] = set()
        # Touched constraints whose load may have risen: their thresholds are re-derived
        # (_check_classes).  A flow leaving only lowers loads, so its constraints' escrow
        # thresholds stay safe (if conservative) and they are not in it.
        self._tight: set[int] = set()
        self._touched_segs: set[int] = set()
        # Touched segments whose rate may have risen at the classes' present levels (users
        # joined); a leave only lowers the rate of the segments it leaves.
        self._tight_segs: set[int] = set()
        self._refreshed: set[int] = set()  # constraints re-derived during this event
        self._lost_bottlenecks: set[int] = set()
        self._moved: set[int] = set()
        self._unsynced: set[int] = set()
        # Constraints (and segments) whose cached load still counts departed flows.
        self._load_stale: set[int] = set()
        self._load_stale_segs: set[int] = set()
        self._n_active = 0
        # Bytes moved per bottleneck constraint or cap label (measure's per-interval limits).
        self._ledger = LimitLedger()
        # Segment rates while no class level or member changes (see _levels_fixed), and
        # the dict it is during a class event's checks (kept, to make none per event).
        self._rate_memo: dict[int, float] | None = None
        self._event_rate_memo: dict[int, float] = {}
        super().__init__()

    def _on_new_constraints(self, grow: int) -> None:
        self._con_class.extend([-1] * grow)
        self._con_class_arr = np.concatenate([self._con_class_arr, np.full(grow, -1)])
        self._con_cls.extend(set() for _ in range(grow))
        self._con_movers.extend(set() for _ in range(grow))
        self._con_fixed.extend([0.0] * grow)
        self._con_ver.extend([0] * grow)
        self._con_z.extend([0.0] * grow)
        self._con_ncls = np.concatenate([self._con_ncls, np.zeros(grow, dtype=np.int64)])
        self._con_nsegs = np.concatenate([self._con_nsegs, np.zeros(grow, dtype=np.int64)])
        self._lone_stamp = np.concatenate([self._lone_stamp, np.zeros(grow, dtype=np.int64)])

    def _on_new_slots(self, extra: int) -> None:
        self._cls.extend([-1] * extra)
        self._gen.extend([0] * extra)
        self._tag.extend([0.0] * extra)
        self._spec.extend([None] * extra)
        self._ledger.grow(extra)

    def _new_segment(self, coef_by_con: dict[int, float]) -> int:
        g = super()._new_segment(coef_by_con)
        self._seg_cls.append(set())
        self._seg_bott.append({k for k in coef_by_con if self._con_class[k] >= 0})
        self._seg_thr.append([])
        self._seg_z.append(0.0)
        self._seg_bound.append(float("nan"))
        self._seg_alone.append(None)
        self._seg_stamp.append(0)
        return g

    # ------------------------------------------------------------ derived values
    def _seg_rate(self, g: int) -> float:
        """Rate through segment ``g`` (bytes/s per unit of its coefficients).

        Inside :meth:`_levels_fixed` each segment's sum is taken once.
        """
        memo = self._rate_memo
        if memo is not None:
            rate = memo.get(g)
            if rate is not None:
                return rate
        classes = self._classes
        rate = sum(classes[c].mu * classes[c].segw[g] for c in self._seg_cls[g])
        if memo is not None:
            memo[g] = rate
        return rate

    @contextmanager
    def _levels_fixed(self) -> Iterator[None]:
        """Within this block, :meth:`_seg_rate` sums each segment's classes once.

        Only for code that changes no class's level or members (re-deriving
        and checking thresholds): the sums would go stale.
        """
        outer = self._rate_memo
        if outer is None:
            self._rate_memo = {}
        try:
            yield
        finally:
            self._rate_memo = outer

    def _weight(self, c: FlowClass, k: int) -> float:
        """Summed coefficient x priority of class ``c``'s members on constraint ``k``."""
        w = c.w.get(k, 0.0)
        if c.segw:
            for g in self._con_segs[k]:
                sw = c.segw.get(g)
                if sw:
                    w += sw * self._seg_coef_of[g][k]
        return w

    def _crossing_classes(self, k: int) -> set[int]:
        """Classes with a member crossing constraint ``k`` (directly or by a segment)."""
        if not self._con_segs[k]:
            return self._con_cls[k]
        found = set(self._con_cls[k])
        for g in self._con_segs[k]:
            found.update(self._seg_cls[g])
        return found

    def _cls_of(self, slots: IntArray) -> IntArray:
        """The classes of flows ``slots`` (-1: in none), as an array."""
        cls = self._cls
        return np.array([cls[s] for s in slots.tolist()], dtype=np.int64)

    def _load(self, k: int) -> float:
        """Current load of constraint ``k`` (its unit per second), from the classes."""
        classes = self._classes
        load = self._con_fixed[k]
        load += sum(classes[c].mu * classes[c].w[k] for c in self._con_movers[k])
        for g in self._con_segs[k]:
            load += self._seg_coef_of[g][k] * self._seg_rate(g)
        return float(load)

    def _bytes(self, k: int) -> float:
        """Bytes (units of ``k``) that have crossed constraint ``k`` so far."""
        now = self.env.now
        total = 0.0
        for cid in self._con_cls[k]:
            c = self._classes[cid]
            total += c.w[k] * c.vtime_at(now)
        total -= self._con_z[k]
        for g in self._con_segs[k]:
            seg_bytes = -self._seg_z[g]
            for cid in self._seg_cls[g]:
                c = self._classes[cid]
                seg_bytes += c.segw[g] * c.vtime_at(now)
            total += self._seg_coef_of[g][k] * seg_bytes
        return total

    def _work_done(self) -> FloatArray:
        """Work (units of each constraint) that has crossed every constraint so far.

        The vectorised form of :meth:`_bytes` over all constraints: entry ``k``
        equals ``_bytes(k)`` (index 0, the padding sentinel, is 0).  It costs
        O(active flows x own path length + segment entries + classes).
        """
        n = self._n_cons
        vt = self._class_clocks_now()
        active = np.flatnonzero(self._active)
        cls = self._cls_of(active)
        slots = active[cls >= 0]
        per_flow = self._priority[slots] * vt[cls[cls >= 0]]
        pc = self._path_con[slots]
        weights = (self._path_coef[slots] * per_flow[:, None]).ravel()
        work: FloatArray = -np.array(self._con_z[:n])
        work += np.bincount(pc.ravel(), weights=weights, minlength=n)[:n]
        if self._seg_cls:
            classes = self._classes
            seg_work = np.array(
                [
                    sum(classes[c].segw[g] * vt[c] for c in users) - self._seg_z[g]
                    for g, users in enumerate(self._seg_cls)
                ]
            )
            seg_con, seg_coef, seg_start = self._segflat()
            per_entry = seg_coef * np.repeat(seg_work, np.diff(seg_start))
            work += np.bincount(seg_con, weights=per_entry, minlength=n)[:n]
        work[0] = 0.0
        return work

    def _segment_bound(self, g: int) -> float:
        """The highest rate segment ``g`` can carry alone (its unit per second).

        The least ``limit_k / coef_gk`` over its constraints: past it, one of
        them would be over capacity on the segment's load alone.  Kept until a
        capacity changes (:meth:`_capacity_changed`).
        """
        bound = self._seg_bound[g]
        if bound != bound:  # NaN: not computed since the last capacity change
            limit = self._con_cap[self._seg_cons[g]] * (1.0 + SATURATION_RTOL)
            with np.errstate(divide="ignore", invalid="ignore"):
                bound = float(np.min(limit / self._seg_coefs[g]))
            self._seg_bound[g] = bound
        return bound

    def _capacity_changed(self, k: int) -> None:
        """Constraint ``k``'s capacity changed: re-check it and the segments holding it."""
        self._touched.add(k)
        self._tight.add(k)
        for g in self._con_segs[k]:
            self._seg_bound[g] = float("nan")
            self._seg_alone[g] = None
            self._seg_changed(g)

    def _segment_alone(self, g: int) -> tuple[float, int]:
        """The rate segment ``g`` carries for a lone user, and the constraint that sets it.

        The least ``capacity_k / coef_gk`` over its constraints (its unit per
        second) and, among the constraints a user at that rate saturates (within
        :data:`SATURATION_RTOL`), the lowest index: the one the flow-level
        solution's bottleneck choice names.  Kept until a capacity changes.
        """
        found = self._seg_alone[g]
        if found is None:
            cons = self._seg_cons[g]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = self._con_cap[cons] / self._seg_coefs[g]
            least = float(ratio.min())
            saturating = cons[ratio * (1.0 - SATURATION_RTOL) <= least]
            found = self._seg_alone[g] = (least, int(saturating.min()))
        return found

    def _lone_bottleneck(self, spec: FlowSpec) -> tuple[int, float] | None:
        """A lone flow's new bottleneck constraint and level; None if not alone or at its cap.

        A flow is *alone* when no class crosses any of its constraints, directly
        or through a segment in use: its max-min level is then the least
        ``capacity / (coefficient x priority)`` over its path (its cap aside),
        set by the first constraint it saturates in path order, own entries
        before segments (as :meth:`_bottleneck_choice` names it).  This costs
        its own path: one vector pass over each of its segments' constraints.
        A path crossing a constraint twice (in its own entries and a segment,
        or in two segments) is left to the repair.  The level is checked like
        any class event afterwards.
        """
        cons, _coefs, prio, level_cap, _size, segs, _own = spec
        ncls = self._con_ncls
        nsegs = self._con_nsegs
        cap = self._cap_f
        best = np.inf
        own_ratio: list[float] = []
        for k, a in own_entries(spec):
            if ncls[k] or nsegs[k]:
                return None
            r = cap[k] / (a * prio)
            own_ratio.append(r)
            best = min(best, r)
        seg_level: list[tuple[float, int]] = []
        for g, u in segs:
            if self._seg_cls[g]:
                return None
            least, k = self._segment_alone(g)
            r = least / (u * prio)
            seg_level.append((r, k))
            best = min(best, r)
        if not 0.0 < best < level_cap * (1.0 - LEVEL_RTOL):
            return None  # it would run at its cap (or nothing limits it): no new bottleneck
        # Alone, and crossing no constraint twice?  One vector pass per segment.
        for k in cons:
            for g, _u in segs:
                if k in self._seg_coef_of[g]:
                    return None
        if len(segs) > 1:
            self._lone_tick += 1
        for g, _u in segs:
            seg_cons = self._seg_cons[g]
            if ncls[seg_cons].any() or nsegs[seg_cons].any():
                return None
            if len(segs) > 1:
                if (self._lone_stamp[seg_cons] == self._lone_tick).any():
                    return None  # two of its segments share a constraint
                self._lone_stamp[seg_cons] = self._lone_tick
        for k, r in zip(cons, own_ratio, strict=True):
            if r * (1.0 - SATURATION_RTOL) <= best:
                return k, best
        for r, k in seg_level:
            if r * (1.0 - SATURATION_RTOL) <= best:
                return k, best
        return None  # pragma: no cover - best is one of the ratios

    def _at_own_cap(self, spec: FlowSpec) -> bool:
        """Whether a flow's finite cap is below every ``capacity / (coefficient x priority)``
        of its own entries and segments (their cached least ratios): alone, it runs at its cap.
        """
        _cons, _coefs, prio, level_cap, _size, segs, _own = spec
        if not math.isfinite(level_cap):
            return False
        limit = level_cap / (1.0 - LEVEL_RTOL)
        cap = self._cap_f
        if any(cap[k] / (a * prio) < limit for k, a in own_entries(spec)):
            return False
        return all(self._segment_alone(g)[0] / (u * prio) >= limit for g, u in segs)

    def _new_bottlenecks(self, slots: list[int]) -> list[tuple[int, int, float]] | None:
        """Where new flows that found no class go: ``(slot, bottleneck or 0 at cap, level)``.

        The flows (none crossing a class's bottleneck, else None) are solved
        exactly among themselves on the capacity the classes leave them
        (``capacity - load`` on each constraint of their paths); each one's
        bottleneck is the first constraint in its path order (own entries,
        then segments) that the sub-solution saturates and on which the flow
        has the highest level, or 0 at its (finite) cap.  The classes stay
        put, so this is the max-min solution when no class crossing a new
        bottleneck sits above it and no other constraint overflows: the
        checks of :meth:`_fast_update` (a created class is verified as one
        whose level fell) decide, and hand the event to the repair otherwise.
        Costs the flows' paths (one class-load sum per constraint they cross).
        """
        arr = np.array(slots, dtype=np.int64)
        f = self._factored(arr)
        used = f.cons()
        if (self._con_class_arr[used] >= 0).any():
            return None
        # Constraints no class crosses and no segment in use holds carry only their fixed
        # load (what cap classes that left it behind rounded to); the rest sum their classes.
        con_fixed = self._con_fixed
        load = np.array([con_fixed[k] for k in used.tolist()])
        busy = np.flatnonzero((self._con_ncls[used] > 0) | (self._con_nsegs[used] > 0))
        if busy.size:
            with self._levels_fixed():  # each segment's rate summed once
                load[busy] = [self._load(k) for k in used[busy].tolist()]
        residual = np.maximum(self._con_cap[used] - load, 0.0)
        level = self._solve_factored(f, residual, arr, used)
        n = self._n_cons
        sub_load = np.zeros(n)
        f.add_to(sub_load, self._priority[arr] * level)
        sub_max = np.zeros(n)
        f.max_into(sub_max, level)
        res_full = np.full(n, np.inf)
        res_full[used] = residual
        saturated = (sub_load >= res_full * (1.0 - SATURATION_RTOL)) & np.isfinite(res_full)
        saturated[0] = False
        placed: list[tuple[int, int, float]] = []
        picked: set[int] = set()
        for slot, mu in zip(slots, level.tolist(), strict=True):
            spec = self._spec[slot]
            assert spec is not None
            if mu >= spec[3] * (1.0 - LEVEL_RTOL):
                if not math.isfinite(spec[3]):
                    return None
                placed.append((slot, 0, spec[3]))
                continue
            found = self._sub_bottleneck(spec, mu, saturated, sub_max, picked)
            if not found:
                return None  # pragma: no cover - max-min optimality of the sub-solution
            picked.add(found)
            placed.append((slot, found, mu))
        return placed

    def _sub_bottleneck(
        self,
        spec: FlowSpec,
        mu: float,
        saturated: BoolArray,
        max_level: FloatArray,
        picked: set[int],
    ) -> int:
        """A flow's bottleneck in a sub-solution, named as :meth:`_bottleneck_choice` names it.

        A candidate is a saturated constraint on which the flow at level ``mu``
        has the highest level; the first in path order, preferring one already
        ``picked`` (a class), own entries before segments; in a segment, the
        saturated constraint with the lowest highest-level (ties: picked, then
        the lowest index).  0 if none.
        """
        low = 1.0 - LEVEL_RTOL
        best, best_score = 0, 0
        for k in spec[0]:
            if saturated[k] and mu >= max_level[k] * low:
                score = 3 if k in picked else 2
                if score > best_score:
                    best, best_score = k, score
        for g, _u in spec[5]:
            cons = self._seg_cons[g]
            key = np.where(saturated[cons], max_level[cons], np.inf)
            least = key.min()
            if least == np.inf:
                continue
            tied = np.sort(cons[key == least])
            k = next((int(t) for t in tied.tolist() if t in picked), int(tied[0]))
            if mu >= max_level[k] * low:
                score = 3 if k in picked else 2
                if score > best_score:
                    best, best_score = k, score
        return best

    def _solo(self, cons: IntArray) -> BoolArray:
        """Which of ``cons`` only one segment in use loads (no class crosses them directly)."""
        solo: BoolArray = (self._con_nsegs[cons] == 1) & (self._con_ncls[cons] == 0)
        return solo

    def _segment_in_use(self, g: int) -> None:
        """Segment ``g`` comes into use: thresholds for the constraints it now shares.

        Its solo constraints (nothing else loads them) need none: the
        segment's bound (:meth:`_segment_bound`) checks them all at once, so a
        flow starting on a stripe set of thousands of constraints costs one
        vector pass over it, not a threshold per constraint.  A constraint
        something else loads too gets escrow thresholds as before.
        """
        cons = self._seg_cons[g]
        shared = (self._con_nsegs[cons] > 0) | (self._con_ncls[cons] > 0)
        if shared.any():
            now_shared = cons[shared].tolist()
            self._touched.update(now_shared)
            self._tight.update(now_shared)
        self._con_nsegs[cons] += 1

    def _crosses_by_segment(self, c: FlowClass, k: int) -> bool:
        return any(g in c.segw for g in self._con_segs[k])

    # ---------------------------------------------------------- class bookkeeping
    def _mark_dirty(self, c: FlowClass) -> None:
        c.ver += 1
        self._dirty.add(c.cid)

    def _set_level(self, c: FlowClass, mu: float) -> None:
        """Change a class's level now; its members' cached flow levels go stale."""
        c.set_level(mu, self.env.now)
        self._unsynced.add(c.cid)
        self._mark_dirty(c)

    def _cap_class_for(self, level_cap: float) -> FlowClass:
        """The cap class of level ``level_cap``, made when there is none."""
        cap_cid = self._cap_class.get(level_cap)
        if cap_cid is not None:
            return self._classes[cap_cid]
        return self._new_class(0, level_cap, level_cap)

    def _new_class(self, con: int, cap_level: float, mu: float) -> FlowClass:
        cid = self._next_cid
        self._next_cid += 1
        c = FlowClass(cid, con, cap_level, mu, self.env.now)
        self._classes[cid] = c
        if con:
            self._con_class[con] = cid
            self._con_class_arr[con] = cid
            for g in self._con_segs[con]:
                self._seg_bott[g].add(con)
            for other in self._crossing_classes(con):
                self._classes[other].sat.add(con)
            self._touched.add(con)
            self._tight.add(con)
        else:
            self._cap_class[cap_level] = cid
        return c

    def _drop_class(self, c: FlowClass) -> None:
        del self._classes[c.cid]
        self._unsynced.discard(c.cid)
        if c.con:
            con = c.con
            self._con_class[con] = -1
            self._con_class_arr[con] = -1
            for g in self._con_segs[con]:
                self._seg_bott[g].discard(con)
            self._lost_bottlenecks.add(con)
            self._touched.add(con)
            self._tight.add(con)
            for other in self._crossing_classes(con):
                self._classes[other].sat.discard(con)
        else:
            del self._cap_class[c.cap_level]

    def _join(self, slot: int, c: FlowClass, remaining_B: float, now: float) -> None:
        """Put a flow with ``remaining_B`` bytes to move into class ``c`` at time ``now`` (s)."""
        spec = self._spec[slot]
        assert spec is not None
        cons, coefs, prio, level_cap, _size, segs, own = spec
        if now > c.t_s:  # c.advance(now), inline
            c.vtime += c.mu * (now - c.t_s)
            c.t_s = now
        gen = self._gen[slot] + 1
        self._gen[slot] = gen
        tag = c.vtime + remaining_B / prio
        self._tag[slot] = tag
        self._cls[slot] = c.cid
        self._ledger.join(slot, c.con, c.vtime)
        heapq.heappush(c.tags, (tag, gen, slot))
        if c.con:
            heapq.heappush(c.caps, (level_cap, gen, slot))
        vtime = c.vtime
        cid = c.cid
        con_z = self._con_z
        con_class = self._con_class
        con_fixed = self._con_fixed
        fresh: list[int] = []
        cnt = c.cnt
        w = c.w
        bott = c.con
        mu = c.mu
        for k, a in zip(cons, coefs, strict=True) if own is None else own:
            dw = a * prio
            n = cnt.get(k, 0)
            if n:
                cnt[k] = n + 1
                w[k] += dw
            else:
                cnt[k] = 1
                w[k] = dw
                self._con_cls[k].add(cid)
                fresh.append(k)
                self._con_used.add(k)
                if bott:
                    self._con_movers[k].add(cid)
                if con_class[k] >= 0 and k != bott:
                    c.sat.add(k)
            if not bott:
                con_fixed[k] += mu * dw
            con_z[k] += dw * vtime  # (a * prio) * vtime, as a vector form would compute it
        if fresh:
            self._con_ncls[fresh] += 1
        self._touched.update(cons)
        self._tight.update(cons)
        seg_stamp = self._seg_stamp
        for g, u in segs:
            dw = u * prio
            n = c.segcnt.get(g, 0)
            if n:
                c.segcnt[g] = n + 1
                c.segw[g] += dw
                if g not in c.shared:
                    seg_stamp[g] += 1
                    c.unguarded.add(g)
            else:
                c.segcnt[g] = 1
                c.segw[g] = dw
                users = self._seg_cls[g]
                if not users:
                    self._segment_in_use(g)
                    c.unguarded.add(g)
                else:
                    c.shared.add(g)
                    if len(users) == 1:
                        for other in users:
                            o = self._classes[other]
                            o.shared.add(g)
                            o.unguarded.discard(g)
                users.add(cid)
                seg_stamp[g] += 1
                c.sat.update(k for k in self._seg_bott[g] if k != c.con)
            self._seg_z[g] += dw * vtime
            self._touched_segs.add(g)
            self._tight_segs.add(g)
        c.members.add(slot)
        self._moved.add(slot)
        c.ver += 1  # self._mark_dirty(c), inline
        self._dirty.add(c.cid)

    def _leave(self, slot: int, now: float) -> float:
        """Take a flow out of its class at time ``now`` (s); return its remaining bytes."""
        spec = self._spec[slot]
        assert spec is not None
        cons, coefs, prio, _cap, _size, segs, own = spec
        c = self._classes[self._cls[slot]]
        if now > c.t_s:  # c.advance(now), inline
            c.vtime += c.mu * (now - c.t_s)
            c.t_s = now
        vtime = c.vtime
        remaining = prio * (self._tag[slot] - vtime)
        self._ledger.leave(slot, vtime, prio)
        cid = c.cid
        con_z = self._con_z
        con_fixed = self._con_fixed
        gone: list[int] = []
        cnt = c.cnt
        w = c.w
        bott = c.con
        mu = c.mu
        for k, a in zip(cons, coefs, strict=True) if own is None else own:
            dw = a * prio
            if not bott:
                con_fixed[k] -= mu * dw
            n = cnt[k] - 1
            if n:
                cnt[k] = n
                w[k] -= dw
            else:
                del cnt[k]
                del w[k]
                self._con_cls[k].discard(cid)
                gone.append(k)
                self._con_movers[k].discard(cid)
                if not (c.segw and self._crosses_by_segment(c, k)):
                    c.sat.discard(k)
            con_z[k] -= dw * vtime  # (a * prio) * vtime, as a vector form would compute it
        if gone:
            self._con_ncls[gone] -= 1
        self._touched.update(cons)
        seg_stamp = self._seg_stamp
        for g, u in segs:
            dw = u * prio
            n = c.segcnt[g] - 1
            if n:
                # A lower weight keeps its guard safe (the segment's rate only falls).
                c.segcnt[g] = n
                c.segw[g] -= dw
            else:
                del c.segcnt[g]
                del c.segw[g]
                users = self._seg_cls[g]
                users.discard(cid)
                c.shared.discard(g)
                c.unguarded.discard(g)
                seg_stamp[g] += 1
                if not users:
                    self._con_nsegs[self._seg_cons[g]] -= 1
                elif len(users) == 1:
                    for other in users:
                        o = self._classes[other]
                        o.shared.discard(g)
                        o.unguarded.add(g)
                for k in self._seg_bott[g]:
                    if k not in c.cnt and not self._crosses_by_segment(c, k):
                        c.sat.discard(k)
            self._seg_z[g] -= dw * vtime
            self._touched_segs.add(g)
        self._gen[slot] += 1
        self._cls[slot] = -1
        c.members.discard(slot)
        self._moved.add(slot)
        c.ver += 1  # self._mark_dirty(c), inline
        self._dirty.add(c.cid)
        if not c.members:
            self._drop_class(c)
        return 0.0 if remaining < 0.0 else remaining  # (max(remaining, 0.0), inline)

    # ------------------------------------------------------------ class fast path
    def _fast_update(self, new: list[int], now: float) -> bool:
        """Apply the pending changes at class level (at time ``now``, s); False if the
        structure changed.

        On False every tentative change is undone: the classes describe the
        allocation before the change (minus released flows), ready for the
        flow-level repair.
        """
        classes = self._classes
        con_class = self._con_class
        joined: list[int] = []
        changed: list[tuple[int, float]] = []
        created: frozenset[int] | set[int] = _NONE_CREATED  # a set once one is
        deferred: list[int] = []
        ok = True
        for slot in new:
            spec = self._spec[slot]
            assert spec is not None
            best = spec[3]
            target = -1
            for k in spec[0]:
                cid = con_class[k]
                if cid >= 0 and classes[cid].mu < best:
                    best = classes[cid].mu
                    target = cid
            for g, _u in spec[5]:
                for k in self._seg_bott[g]:
                    cid = con_class[k]
                    if classes[cid].mu < best:
                        best = classes[cid].mu
                        target = cid
            if target < 0 and deferred:
                deferred.append(slot)  # solved with the flows before it that found no class
                continue
            lone = None if target >= 0 else self._lone_bottleneck(spec)
            if target >= 0:
                c = classes[target]
            elif lone is None and len(new) == 1 and self._at_own_cap(spec):
                # One new flow whose own path's capacities all pass its cap: its cap class,
                # checked below like any class (a call of a replay at its read-ahead cap).
                c = self._cap_class_for(spec[3])
            elif lone is not None:
                # A new bottleneck forms on a lone flow's own path: its class directly.
                c = self._new_class(lone[0], np.inf, lone[1])
            else:
                deferred.append(slot)  # a new bottleneck among other flows, or its cap
                continue
            self._join(slot, c, spec[4], now)
            joined.append(slot)
        if deferred:
            placed = self._new_bottlenecks(deferred)
            if placed is None:
                ok = False  # leave it to the repair
            else:
                for slot, k, level in placed:
                    spec = self._spec[slot]
                    assert spec is not None
                    if k:
                        cid = con_class[k]
                        if cid >= 0:
                            c = classes[cid]
                        else:
                            # Checked below like any class, and against those crossing it.
                            c = self._new_class(k, np.inf, level)
                            created = created | {c.cid}
                    else:
                        c = self._cap_class_for(spec[3])
                    self._join(slot, c, spec[4], now)
                    joined.append(slot)
        if ok:
            seeds: set[int] = set()
            for k in self._touched:  # (a loop: a comprehension is a call of its own)
                cid = con_class[k]
                if cid >= 0:
                    seeds.add(cid)
            seg_bott = self._seg_bott
            for g in self._touched_segs:
                if seg_bott[g]:
                    seeds.update(con_class[k] for k in seg_bott[g])
            ok = self._update_levels(seeds, changed, now)
        if ok:
            # As `with self._levels_fixed()`, without a context manager on every event.
            outer = self._rate_memo
            if outer is None:
                self._rate_memo = self._event_rate_memo  # (empty: cleared after each use)
            try:
                ok = self._check_classes(changed, joined, created)
            finally:
                if outer is None:
                    self._event_rate_memo.clear()
                self._rate_memo = outer
        if not ok:
            for cid, mu in changed:
                if cid in classes:
                    self._set_level(classes[cid], mu)
            for slot in joined:
                self._leave(slot, now)
            # Thresholds derived from the tentative levels are re-derived after the repair.
            self._touched.update(self._refreshed)
        return ok

    def _check_classes(
        self,
        changed: list[tuple[int, float]],
        joined: list[int],
        created: frozenset[int] | set[int],
    ) -> bool:
        """The checks of :meth:`_fast_update` once levels are re-solved; False on a violation.

        Touched constraints get their thresholds re-derived; classes whose level
        changed, or that flows joined, are verified (a class ``created`` here as
        one whose level fell: every class crossing its bottleneck must sit at or
        below it); segments whose rate may have risen are checked.
        """
        classes = self._classes
        old = dict(changed)
        check = set(old)
        cls = self._cls
        for s in joined:
            check.add(cls[s])
        tight = self._tight
        if tight:
            refresh = self._refresh_constraint
            con_movers = self._con_movers
            con_segs = self._con_segs
            con_class = self._con_class
            con_ver = self._con_ver
            refreshed = self._refreshed
            for k in self._touched:
                if k not in tight:
                    continue
                if con_class[k] >= 0:  # a bottleneck: what _refresh_constraint does to it
                    con_ver[k] += 1
                    refreshed.add(k)
                    continue
                movers = con_movers[k]
                if len(movers) == 1 and not con_segs[k]:
                    (cid,) = movers
                    if cid in check and k in classes[cid].near:
                        continue  # still one mover's: _verify checks it directly
                if not refresh(k):
                    return False
        verify = self._verify
        for cid in check:
            c = classes[cid]
            if not verify(c, cid in created or c.mu < old.get(cid, -np.inf)):
                return False
        # A segment's rate can pass a threshold only if it rose: users joined it, or a
        # class using it moved up (one whose level fell, or a leave, only lowers it).
        segs = set(self._tight_segs)
        risen: list[FlowClass] = []
        for cid, mu in changed:
            c = classes[cid]
            if c.mu > mu:
                guard = c.sguard
                if guard and not c.mu <= guard[0][0]:
                    self._unguard_risen(c)
                segs.update(c.shared)
                segs.update(c.unguarded)
                risen.append(c)
        self._segment_checks += len(segs)
        check_segment = self._check_segment
        seg_cls = self._seg_cls
        seg_bound = self._seg_bound
        seg_thr = self._seg_thr
        con_ver = self._con_ver
        for g in segs:
            users = seg_cls[g]
            if len(users) == 1:
                # The common case, decided here when it passes touching nothing (as
                # _check_segment computes it); anything else is left to it.
                (cid,) = users
                c = classes[cid]
                rate = 0.0 + c.mu * c.segw[g]
                bound = seg_bound[g]
                if bound == bound and rate <= bound:
                    thr = seg_thr[g]
                    if not thr:
                        continue
                    level, k, ver = thr[0]
                    if con_ver[k] == ver and rate <= level:
                        continue
            if not check_segment(g):
                return False
        touched_segs = self._touched_segs
        for c in risen:
            if c.unguarded:
                self._guard_segments(c, touched_segs)
        return True

    def _seg_changed(self, g: int) -> None:
        """Segment ``g``'s load limits or its user's weight changed: its guard is stale."""
        self._seg_stamp[g] += 1
        users = self._seg_cls[g]
        if len(users) == 1:
            for cid in users:
                self._classes[cid].unguarded.add(g)

    def _unguard_risen(self, c: FlowClass) -> None:
        """Class ``c`` rose: the segments whose guard level it passed need their check.

        A guard entry ``(level, g, stamp)`` of a segment ``g`` that ``c`` alone
        uses says that its check (:meth:`_check_segment`) passes, touching
        nothing, for any level of ``c`` up to ``level`` (a little below the
        level at which ``c``'s rate on ``g`` reaches its bound or its lowest
        threshold), as long as ``g``'s stamp is unchanged (its user's weight,
        users, bound and thresholds as they were).  So a class that rises
        checks only its shared segments, those without a guard, and those
        whose guard it passed: not every segment it uses.
        """
        guard = c.sguard
        mu = c.mu
        stamps = self._seg_stamp
        while guard and not mu <= guard[0][0]:
            _level, g, stamp = heapq.heappop(guard)
            if stamps[g] == stamp:
                c.unguarded.add(g)

    def _guard_segments(self, c: FlowClass, skip: set[int]) -> None:
        """Give ``c``'s unguarded segments, which just passed their checks, guard entries.

        Those in ``skip`` (touched in this event, so likely touched again) stay
        unguarded: they are checked whenever ``c`` rises.
        """
        unguarded = c.unguarded
        if not unguarded:
            return
        stamps = self._seg_stamp
        con_ver = self._con_ver
        guard = c.sguard
        # (in any order: each segment's entry and stale pops are its own, and a heap pops
        # the same sequence of entries whatever the order they were pushed in)
        for g in unguarded - skip:
            limit = self._segment_bound(g)
            thr = self._seg_thr[g]
            while thr:
                level, k, ver = thr[0]
                if con_ver[k] == ver:
                    limit = min(limit, level)
                    break
                heapq.heappop(thr)
            # A margin of many rounding steps: below the entry's level, mu * segw <= limit.
            heapq.heappush(guard, (limit / c.segw[g] * GUARD_MARGIN, g, stamps[g]))
            unguarded.discard(g)
        if len(guard) > HEAP_SLACK_PER_ENTRY * len(c.segw) + HEAP_SLACK_MIN:
            live = [e for e in guard if stamps[e[1]] == e[2] and e[1] in c.segw]
            heapq.heapify(live)
            c.sguard = live

    def _update_levels(self, seeds: set[int], changed: list[tuple[int, float]], now: float) -> bool:
        """Re-solve the levels of bottleneck classes in level order from ``seeds`` (at ``now``, s).

        Appends ``(class, old level)`` to ``changed``; False when two classes
        turn out to depend on each other (a tie), which the repair resolves.
        """
        classes = self._classes
        if len(seeds) == 1:
            (cid,) = seeds
            heap = [(classes[cid].mu, cid)]
        else:
            heap = [(classes[cid].mu, cid) for cid in seeds]
            heapq.heapify(heap)
        done: set[int] = set()
        while heap:
            _, cid = heapq.heappop(heap)
            if cid in done:
                continue
            done.add(cid)
            c = classes[cid]
            b = c.con
            rest = self._con_fixed[b]
            for other in self._con_movers[b]:
                if other != cid:
                    o = classes[other]
                    rest += o.mu * o.w[b]
            for g in self._con_segs[b]:
                rate = sum(classes[o].mu * classes[o].segw[g] for o in self._seg_cls[g] if o != cid)
                rest += self._seg_coef_of[g][b] * rate
            # (_weight is c.w[b] when no segment holds b)
            wb = self._weight(c, b) if c.segw and self._con_segs[b] else c.w.get(b, 0.0)
            if wb <= 0.0:
                return False
            mu = (self._cap_f[b] - rest) / wb
            if mu == c.mu:
                continue
            changed.append((cid, c.mu))
            # self._set_level(c, mu), inline: advance the clock, then the level
            if now > c.t_s:
                c.vtime += c.mu * (now - c.t_s)
                c.t_s = now
            c.mu = mu
            self._unsynced.add(cid)
            c.ver += 1
            self._dirty.add(cid)
            for k in c.sat:
                dep = self._con_class[k]
                if dep in done:
                    return False
                heapq.heappush(heap, (classes[dep].mu, dep))
        return True

    def _refresh_constraint(self, k: int) -> bool:
        """Re-derive the saturation check of constraint ``k``; False if it is violated now.

        Each mover of ``k`` (a bottleneck class crossing it directly, or a
        segment containing it) gets a threshold: its escrow share of ``k``'s
        slack, as a level (classes) or a segment rate (segments).
        """
        con_ver = self._con_ver
        ver = con_ver[k] + 1
        con_ver[k] = ver
        self._refreshed.add(k)
        if self._con_class[k] >= 0:
            return True
        limit = self._cap_f[k] * (1.0 + SATURATION_RTOL)
        load = self._con_fixed[k]
        mover_ids = self._con_movers[k]
        if len(mover_ids) == 1 and not self._con_segs[k]:
            # The common case: one class moves it, no segment holds it (the same sums).
            for cid in mover_ids:
                c = self._classes[cid]
                w = c.w[k]
                load += c.mu * w
                if not load <= limit:
                    return False
                if limit - load <= NEAR_RTOL * limit:
                    c.near.add(k)  # _verify checks it directly
                elif limit < np.inf:
                    c.near.discard(k)
                    thr = c.thr
                    heapq.heappush(thr, (c.mu + (limit - load) / w, k, ver))
                    if len(thr) > HEAP_SLACK_PER_ENTRY * len(c.w) + HEAP_SLACK_MIN:
                        self._drop_stale_thresholds(c)
            return True
        movers = [self._classes[cid] for cid in mover_ids]
        for c in movers:
            c.near.discard(k)
        for c in movers:
            load += c.mu * c.w[k]
        seg_movers: list[tuple[int, float, float]] = []
        for g in self._con_segs[k]:
            if self._seg_cls[g]:
                rate = self._seg_rate(g)
                coef = self._seg_coef_of[g][k]
                load += coef * rate
                seg_movers.append((g, rate, coef))
        if not load <= limit:
            return False
        n_movers = len(movers) + len(seg_movers)
        if n_movers and limit < np.inf:
            share = (limit - load) / n_movers
            for mover in movers:
                heapq.heappush(mover.thr, (mover.mu + share / mover.w[k], k, ver))
            for g, rate, coef in seg_movers:
                heapq.heappush(self._seg_thr[g], (rate + share / coef, k, ver))
                self._seg_changed(g)
        return True

    def _check_segment(self, g: int) -> bool:
        """Check segment ``g``'s rate against its bound and its escrow thresholds."""
        users = self._seg_cls[g]
        if not users:
            return True
        if len(users) == 1:  # the common case, as _seg_rate sums it
            (cid,) = users
            c = self._classes[cid]
            rate = 0.0 + c.mu * c.segw[g]
        else:
            rate = self._seg_rate(g)
        bound = self._seg_bound[g]
        if not rate <= (bound if bound == bound else self._segment_bound(g)):
            return False  # one of its constraints is over capacity on its load alone
        thr = self._seg_thr[g]
        con_ver = self._con_ver
        while thr:
            level, k, ver = thr[0]
            if con_ver[k] != ver:
                heapq.heappop(thr)
                continue
            if rate <= level:
                return True
            if not self._refresh_constraint(k):
                return False
        return True

    def _verify(self, c: FlowClass, fell: bool) -> bool:
        """Check the max-min conditions of class ``c`` against its neighbours.

        ``fell``: its level went down, so flows of other classes crossing its
        bottleneck may now sit above it.
        """
        mu = c.mu
        if not mu >= 0.0:
            return False
        classes = self._classes
        if c.con:
            caps = c.caps  # the least live member cap (stale entries popped) is not below mu
            gens = self._gen
            while caps:
                cap, gen, slot = caps[0]
                if gens[slot] == gen:
                    if cap < mu * (1.0 - LEVEL_RTOL):
                        return False
                    break
                heapq.heappop(caps)
            con_ver = self._con_ver
            while True:
                if c.thr_lazy is None:  # c.min_threshold(con_ver), inline
                    thr = c.thr  # (re-read: a re-derivation may compact it)
                    while thr:
                        level, k, ver = thr[0]
                        if con_ver[k] == ver:
                            break
                        heapq.heappop(thr)
                    else:
                        break
                else:
                    level, k = c.min_threshold(con_ver)
                if mu <= level:
                    break
                # Past its threshold or escrow share: re-check the constraint for real.
                if not self._refresh_constraint(k):
                    return False
            near = c.near
            if near:
                # _check_near's common case, inline: every one still alone and under.
                w = c.w
                con_movers = self._con_movers
                con_segs = self._con_segs
                con_class = self._con_class
                con_fixed = self._con_fixed
                con_cap = self._cap_f
                over = 1.0 + SATURATION_RTOL
                for k in near:
                    wk = w.get(k)
                    if (
                        wk is None
                        or len(con_movers[k]) != 1
                        or con_segs[k]
                        or con_class[k] >= 0
                        or not con_fixed[k] + mu * wk <= con_cap[k] * over
                    ):
                        if not self._check_near(c):
                            return False
                        break
            if fell:
                high = mu * (1.0 + LEVEL_RTOL)
                for other in self._crossing_classes(c.con):
                    if classes[other].mu > high:
                        return False
        if c.sat:
            con_class = self._con_class
            for k in c.sat:
                if not mu <= classes[con_class[k]].mu * (1.0 + LEVEL_RTOL):
                    return False
        return True

    def _drop_stale_thresholds(self, c: FlowClass) -> None:
        """Keep only ``c``'s live threshold entries (at most one per constraint it crosses).

        Each re-derivation pushes a new entry and leaves the old one stale; stale
        ones far above the level never reach the top to be dropped.  The heap's
        top stays the least live entry, so no check changes.
        """
        con_ver = self._con_ver
        live = [entry for entry in c.thr if con_ver[entry[1]] == entry[2]]
        heapq.heapify(live)
        c.thr = live

    def _check_near(self, c: FlowClass) -> bool:
        """Check the constraints of ``c.near`` directly at its level; False if one is over.

        :meth:`_verify` decides the common case inline (every one still alone and
        under); this is the rest.  A constraint that is no longer moved by ``c``
        alone (or has become a bottleneck, or part of a segment in use) leaves the
        set: the event that changed it re-derived its thresholds.
        """
        mu = c.mu
        w = c.w
        con_movers = self._con_movers
        con_segs = self._con_segs
        con_class = self._con_class
        con_fixed = self._con_fixed
        con_cap = self._cap_f
        for k in list(c.near):
            wk = w.get(k)
            if wk is None or len(con_movers[k]) != 1 or con_segs[k] or con_class[k] >= 0:
                c.near.discard(k)
                continue
            load = con_fixed[k] + mu * wk
            # Over: the real check says so (and re-derives what it must).
            over = not load <= con_cap[k] * (1.0 + SATURATION_RTOL)
            if over and not self._refresh_constraint(k):
                return False
        return True

    # ------------------------------------------------------------ flow-level path
    def _materialise(self) -> None:
        """Bring the flow-level arrays up to date with the classes (new flows at 0).

        Invariant: ``_con_load`` equals the load of the cached flow levels
        ``_level``, except on the constraints departed flows crossed
        (``_load_stale``), which are recomputed exactly here.  Only flows whose
        class level changed, or which joined or left a class, since the last
        call are rewritten, and only the constraints they cross are rechecked.
        """
        stale = set(self._moved)
        for cid in self._unsynced:
            stale.update(self._classes[cid].members)
        self._moved.clear()
        self._unsynced.clear()
        slots = np.fromiter(stale, dtype=np.int64, count=len(stale))
        slots = slots[self._active[slots]]
        stale_load = self._cons_of(self._load_stale, self._load_stale_segs)
        self._load_stale.clear()
        self._load_stale_segs.clear()
        parts = [self._touched_constraints(), stale_load]
        if self._lost_bottlenecks:
            parts.append(np.fromiter(self._lost_bottlenecks, dtype=np.int64))
        if slots.size:
            cls = self._cls_of(slots)
            mu_of = np.zeros(max(self._next_cid, 1))
            for cid in np.unique(cls[cls >= 0]).tolist():
                mu_of[cid] = self._classes[cid].mu
            level = np.where(cls >= 0, mu_of[np.maximum(cls, 0)], 0.0)
            delta = self._priority[slots] * (level - self._level[slots])
            f = self._factored(slots)
            f.add_to(self._con_load, delta)
            self._con_load[0] = 0.0
            self._level[slots] = level
            parts.append(f.cons())
        if stale_load.size:
            self._recompute_state(stale_load)
        arr = unique_ints(np.concatenate(parts))
        if not arr.size:
            return
        self._update_saturation(arr)
        # A bottleneck constraint is saturated and its highest level is its class's.
        con_class = self._con_class
        bottleneck = arr[self._con_class_arr[arr] >= 0].tolist()
        self._con_saturated[bottleneck] = True
        self._con_max_level[bottleneck] = [self._classes[con_class[k]].mu for k in bottleneck]
        # Saturated constraints that are no class's bottleneck (ties, or a class that
        # just emptied) need their highest level computed from the flows.
        odd = arr[self._con_saturated[arr] & (self._con_class_arr[arr] < 0)]
        lost = np.fromiter(self._lost_bottlenecks, dtype=np.int64)
        odd = unique_ints(np.concatenate([odd, lost]))
        if odd.size:
            self._recompute_state(odd)
            self._con_saturated[lost] = True

    def _touched_constraints(self) -> IntArray:
        """Constraints a pending change touched, with those of the touched segments (sorted)."""
        return self._cons_of(self._touched, self._touched_segs)

    def _cons_of(self, cons: set[int], segs: set[int]) -> IntArray:
        """The distinct constraints among ``cons`` and those of segments ``segs`` (sorted).

        Built from the segments' index arrays, never as Python sets over a
        stripe set's thousands of constraints.
        """
        parts = [np.fromiter(cons, dtype=np.int64, count=len(cons))]
        parts.extend(self._seg_cons[g] for g in segs)
        return unique_ints(np.concatenate(parts))

    def _flow_level_solve(self, new: list[int], full: bool) -> None:
        """Solve at flow level (repair or full), then rebuild the classes from it."""
        with self._memo_factored():
            self._flow_level_solve_memo(new, full)

    def _flow_level_solve_memo(self, new: list[int], full: bool) -> None:
        """:meth:`_flow_level_solve`, each flow set's entries built once."""
        if full:
            self._full_solve()
            self._rebuild_classes()
            return
        self._materialise()
        touched = self._touched_constraints()
        level_before = self._level.copy()
        reach = self._repair(np.array(new, dtype=np.int64), touched)
        if reach is None:
            self._rebuild_classes()  # the repair escalated to a full solve
            return
        reach_slots, reach_cons = reach
        # Constraints on which any flow's rate rose: escrow shares there may exceed the
        # slack left.  Not only where the total load rose: a constraint whose load fell
        # overall can still have one mover above its share (its class's level rose) while
        # another mover, fallen, keeps a threshold drawn on the old slack; the two would
        # overcommit it.  Only where no crossing flow's rate rose are the shares safe.
        rose = reach_slots[self._level[reach_slots] > level_before[reach_slots]]
        raised = np.zeros(self._n_cons)
        if rose.size:
            delta = self._priority[rose] * (self._level[rose] - level_before[rose])
            self._factored(rose).add_to(raised, delta)
        self._reclassify(reach_slots, reach_cons, np.flatnonzero(raised > 0))

    def _bottleneck_choice(
        self, slots: IntArray, prefer_classed: bool
    ) -> tuple[IntArray, BoolArray]:
        """Each flow's bottleneck from the flow-level solution, and whether it is at its cap.

        A candidate is a saturated constraint the flow crosses on which its
        level is the highest; the first in path order is chosen (preferring
        one that already has a class when ``prefer_classed``), own entries
        before segments.  The chosen constraint is 0 for a flow at its cap with
        no candidate.
        """
        level = self._level[slots]
        at_cap = level >= self._level_cap[slots] * (1.0 - LEVEL_RTOL)
        n = self._n_cons
        sat = self._con_saturated[:n]
        max_level = self._con_max_level[:n]
        classed = self._con_class_arr[:n] >= 0
        rows = np.arange(slots.size)
        # Own entries, row by row: candidates score 2, classed candidates 3.
        pc = self._path_con[slots]
        cand = sat[pc] & (pc > 0) & (level[:, None] >= max_level[pc] * (1 - LEVEL_RTOL))
        score = cand.astype(np.int8) * 2
        if prefer_classed:
            score += cand & classed[pc]
        col = np.argmax(score, axis=1)
        best_score = score[rows, col].astype(np.int64)
        choice = np.where(best_score > 0, pc[rows, col], 0)
        with_seg = self._has_seg[slots]
        if with_seg.any():
            # In a segment, the saturated constraint with the lowest highest-level is the
            # one any user can have as its bottleneck (ties: classed first, lowest index).
            f = self._factored(slots)
            key_level = np.where(sat, max_level, np.inf)
            order = np.lexsort(
                (
                    f.seg_con,
                    ~classed[f.seg_con] if prefer_classed else f.seg_con,
                    key_level[f.seg_con],
                    f.seg_of_entry,
                )
            )
            firsts = order[np.searchsorted(f.seg_of_entry[order], np.arange(f.n_segs))]
            use_con = f.seg_con[firsts][f.use_seg]
            use_cand = sat[use_con] & (level[f.use_owner] >= max_level[use_con] * (1 - LEVEL_RTOL))
            use_score = use_cand.astype(np.int64) * 2
            if prefer_classed:
                use_score += use_cand & classed[use_con]
            for owner, k, sc in zip(
                f.use_owner.tolist(), use_con.tolist(), use_score.tolist(), strict=True
            ):
                if sc > best_score[owner]:
                    best_score[owner] = sc
                    choice[owner] = k
        if ((best_score == 0) & ~at_cap).any():  # pragma: no cover - max-min optimality
            raise RuntimeError("flow-level solution left a flow without a bottleneck")
        return choice, at_cap

    def _is_bottleneck(self, slots: IntArray, cons: IntArray) -> BoolArray:
        """Whether each flow crosses ``cons[i]``, saturated, with the highest level there."""
        level = self._level[slots]
        ok = self._con_saturated[cons] & (level >= self._con_max_level[cons] * (1 - LEVEL_RTOL))
        crosses = (self._path_con[slots] == cons[:, None]).any(axis=1)
        for i in np.flatnonzero(ok & ~crosses & self._has_seg[slots]).tolist():
            k = int(cons[i])
            crosses[i] = any(k in self._seg_coef_of[g] for g, _ in self._segs[int(slots[i])])
        result: BoolArray = ok & crosses
        return result

    def _reclassify(self, reach_slots: IntArray, reach_cons: IntArray, reloaded: IntArray) -> None:
        """Move the flows whose class no longer matches the flow-level solution.

        Only the flows and constraints a repair examined (``reach_slots``,
        ``reach_cons``) can have changed level or bottleneck; ``reloaded`` are
        the constraints whose load rose, whose thresholds are re-derived.
        """
        now = self.env.now
        active = reach_slots[self._active[reach_slots]]
        if active.size == 0:
            return
        choice, at_cap = self._bottleneck_choice(active, prefer_classed=True)
        con_of = np.full(max(self._next_cid, 1), -1, dtype=np.int64)
        for cid, c in self._classes.items():
            con_of[cid] = c.con
        cur = self._cls_of(active)
        cur_con = np.where(cur >= 0, con_of[np.maximum(cur, 0)], 0)
        in_cur = self._is_bottleneck(active, cur_con) & (cur_con > 0)
        valid = (cur >= 0) & np.where(cur_con == 0, at_cap, in_cur)
        # Surviving bottleneck classes take the solved level of their constraint.
        classed = reach_cons[self._con_class_arr[reach_cons] >= 0]
        for k in classed.tolist():
            cid = self._con_class[k]
            if cid >= 0 and self._con_saturated[k]:
                c = self._classes[cid]
                mu = float(self._con_max_level[k])
                if mu != c.mu:
                    self._set_level(c, mu)
        moving = np.flatnonzero(~valid)
        for i, b, capped in zip(
            active[moving].tolist(), choice[moving].tolist(), at_cap[moving].tolist(), strict=True
        ):
            spec = self._spec[i]
            assert spec is not None
            remaining = self._leave(i, now) if self._cls[i] >= 0 else spec[4]
            if capped:
                c = self._cap_class_for(spec[3])
            else:
                cid = self._con_class[b]
                c = (
                    self._classes[cid]
                    if cid >= 0
                    else self._new_class(b, np.inf, float(self._con_max_level[b]))
                )
            self._join(i, c, remaining, now)
        # Constraints whose movers changed, or whose load the repair raised, get their
        # thresholds re-derived (a solo constraint has none: its segment's bound holds).
        reloaded = reloaded[~self._solo(reloaded)]
        with self._levels_fixed():
            for k in self._touched.union(reloaded.tolist()):
                self._refresh_constraint(k)

    def _class_clocks_now(self) -> FloatArray:
        """Virtual time of every class at ``now``, indexed by class id."""
        now = self.env.now
        vt = np.zeros(max(self._next_cid, 1))
        for cid, c in self._classes.items():
            vt[cid] = c.vtime_at(now)
        return vt

    def _rebuild_classes(self) -> None:
        """Replace every class by classes built, vectorised, from the flow-level solution."""
        now = self.env.now
        n = self._n_cons
        active = np.flatnonzero(self._active)
        pc = self._path_con[active]
        coef = self._path_coef[active]
        prio = self._priority[active]
        cls = self._cls_of(active)
        known = cls >= 0
        # Bytes moved so far and each flow's remaining bytes, from the old classes.
        vt_old = self._class_clocks_now()
        vt_flow = np.where(known, vt_old[np.maximum(cls, 0)], 0.0)
        con_bytes: FloatArray = np.bincount(
            pc.ravel(), weights=(coef * (prio * vt_flow)[:, None]).ravel(), minlength=n
        )[:n] - np.array(self._con_z[:n])
        seg_bytes = [
            sum(self._classes[c].segw[g] * vt_old[c] for c in users) - self._seg_z[g]
            for g, users in enumerate(self._seg_cls)
        ]
        size = np.array([self._spec[s][4] for s in active.tolist()])  # type: ignore[index]
        tag_old = np.array(self._tag)[active]
        remaining = np.where(known, np.maximum(prio * (tag_old - vt_flow), 0.0), size)
        self._ledger.settle_many(active, vt_flow, prio, known)
        # Forget the old classes.
        self._classes.clear()
        self._cap_class.clear()
        self._events.clear()
        self._dirty.clear()
        self._con_ncls[:] = 0
        self._con_nsegs[:] = 0
        for k in self._con_used:
            self._con_cls[k] = set()
            self._con_movers[k] = set()
            self._con_fixed[k] = 0.0
            self._con_ver[k] += 1
        self._con_used.clear()
        for k in np.flatnonzero(self._con_class_arr >= 0).tolist():
            self._con_class[k] = -1
            self._con_ver[k] += 1
        self._con_class_arr[:] = -1
        self._con_z[:n] = (-con_bytes).tolist()
        n_segs = len(self._seg_cls)
        self._seg_cls = [set() for _ in range(n_segs)]
        self._seg_bott = [set() for _ in range(n_segs)]
        self._seg_thr = [[] for _ in range(n_segs)]
        self._seg_z = [-b for b in seg_bytes]
        self._moved.clear()
        self._unsynced.clear()
        self._load_stale.clear()
        self._load_stale_segs.clear()
        if active.size == 0:
            return
        # Classify: at cap, else the first saturated constraint at the flow's level.
        level_cap = self._level_cap[active]
        bott, at_cap = self._bottleneck_choice(active, prefer_classed=False)
        # Class keys: bottleneck constraint b -> b; cap level v -> n + rank of v.
        cap_values, cap_rank = np.unique(level_cap[at_cap], return_inverse=True)
        key = bott.copy()
        key[at_cap] = n + cap_rank
        keys, cid_of = np.unique(key, return_inverse=True)
        n_cls = keys.size
        self._next_cid = n_cls
        cls_con = np.where(keys < n, keys, 0)
        cls_mu = np.where(
            keys < n,
            self._con_max_level[np.minimum(keys, n - 1)],
            cap_values[np.maximum(keys - n, 0)] if cap_values.size else 0.0,
        )
        gens = np.array(self._gen)
        gens[active] += 1
        self._gen = gens.tolist()
        cls_all = np.array(self._cls, dtype=np.int64)
        cls_all[active] = cid_of
        self._cls = cls_all.tolist()
        self._ledger.join_many(active, cls_con[cid_of])
        tags = remaining / prio
        tag_all = np.array(self._tag)
        tag_all[active] = tags
        self._tag = tag_all.tolist()
        classes: list[FlowClass] = []
        for cid in range(n_cls):
            con = int(cls_con[cid])
            cap_level = float("inf") if con else float(cls_mu[cid])
            c = FlowClass(cid, con, cap_level, float(cls_mu[cid]), now)
            classes.append(c)
            self._classes[cid] = c
            if con:
                self._con_class[con] = cid
                self._con_class_arr[con] = cid
                for g in self._con_segs[con]:
                    self._seg_bott[g].add(con)
            else:
                self._cap_class[cap_level] = cid
        # Members, and their tag and cap heaps (a sorted list is a heap).
        gens_active = gens[active]
        by_tag = np.lexsort((tags, cid_of))
        bounds = np.searchsorted(cid_of[by_tag], np.arange(n_cls + 1))
        tag_rows = list(
            zip(
                tags[by_tag].tolist(),
                gens_active[by_tag].tolist(),
                active[by_tag].tolist(),
                strict=True,
            )
        )
        by_cap = np.lexsort((level_cap, cid_of))
        cap_rows = list(
            zip(
                level_cap[by_cap].tolist(),
                gens_active[by_cap].tolist(),
                active[by_cap].tolist(),
                strict=True,
            )
        )
        slots_sorted = active[by_tag].tolist()
        for cid, c in enumerate(classes):
            lo, hi = int(bounds[cid]), int(bounds[cid + 1])
            c.tags = tag_rows[lo:hi]
            if c.con:
                c.caps = cap_rows[lo:hi]
            c.members = set(slots_sorted[lo:hi])
        # Per (class, own constraint) weights and member counts.
        mask = pc > 0
        pair = (np.broadcast_to(cid_of[:, None], pc.shape)[mask] * n + pc[mask]).astype(np.int64)
        upair, inv = np.unique(pair, return_inverse=True)
        pw = np.bincount(inv, weights=(coef * prio[:, None])[mask], minlength=upair.size)
        pn = np.bincount(inv, minlength=upair.size)
        pc_cls = upair // n
        pc_con = upair % n
        pbounds = np.searchsorted(pc_cls, np.arange(n_cls + 1))
        con_class = self._con_class_arr
        is_sat = (con_class[pc_con] >= 0) & (pc_con != cls_con[pc_cls])
        for cid, c in enumerate(classes):
            lo, hi = int(pbounds[cid]), int(pbounds[cid + 1])
            ks = pc_con[lo:hi].tolist()
            c.w = dict(zip(ks, pw[lo:hi].tolist(), strict=True))
            c.cnt = dict(zip(ks, pn[lo:hi].tolist(), strict=True))
            c.sat = set(pc_con[lo:hi][is_sat[lo:hi]].tolist())
        by_con = np.argsort(pc_con, kind="stable")
        cbounds = np.searchsorted(pc_con[by_con], np.arange(n + 1))
        cls_sorted = pc_cls[by_con]
        mover_sorted = cls_con[cls_sorted] > 0
        for k in np.flatnonzero(np.diff(cbounds)).tolist():
            lo, hi = int(cbounds[k]), int(cbounds[k + 1])
            self._con_cls[k] = set(cls_sorted[lo:hi].tolist())
            self._con_movers[k] = set(cls_sorted[lo:hi][mover_sorted[lo:hi]].tolist())
            self._con_used.add(k)
        self._con_ncls[:n] = np.diff(cbounds)
        capped_pair = cls_con[pc_cls] == 0
        fixed = np.bincount(
            pc_con[capped_pair], weights=(cls_mu[pc_cls] * pw)[capped_pair], minlength=n
        )
        for k in np.flatnonzero(fixed[:n]).tolist():
            self._con_fixed[k] = float(fixed[k])
            self._con_used.add(k)
        # Segment use per class.
        for s, cid in zip(
            active[self._has_seg[active]].tolist(),
            cid_of[self._has_seg[active]].tolist(),
            strict=True,
        ):
            c = classes[cid]
            p = self._priority[s]
            for g, u in self._segs[s]:
                c.segcnt[g] = c.segcnt.get(g, 0) + 1
                c.segw[g] = c.segw.get(g, 0.0) + u * p
        for c in classes:
            for g in c.segw:
                if not self._seg_cls[g]:
                    self._con_nsegs[self._seg_cons[g]] += 1
                self._seg_cls[g].add(c.cid)
                c.sat.update(k for k in self._seg_bott[g] if k != c.con)
        for c in classes:
            for g in c.segw:
                (c.unguarded if len(self._seg_cls[g]) == 1 else c.shared).add(g)
        # Threshold levels of the constraints that are no class's bottleneck: vectorised
        # for constraints only classes' own entries cross, one by one in used segments.
        in_seg = self._con_nsegs[:n] > 0
        mover = cls_con[pc_cls] > 0
        free = (con_class[pc_con] < 0) & ~in_seg[pc_con]
        movers_per_con = np.bincount(pc_con[free & mover], minlength=n)
        load = np.bincount(pc_con[free], weights=(cls_mu[pc_cls] * pw)[free], minlength=n)
        limit = self._con_cap[:n] * (1.0 + SATURATION_RTOL)
        entry = free & mover & np.isfinite(limit[pc_con])
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.maximum(limit - load, 0.0) / np.maximum(movers_per_con, 1)
            thr = cls_mu[pc_cls] + share[pc_con] / pw
        con_ver = np.asarray(self._con_ver)
        e_cls, e_con, e_thr = pc_cls[entry], pc_con[entry], thr[entry]  # sorted by class
        e_ver = con_ver[e_con]
        tbounds = np.searchsorted(e_cls, np.arange(n_cls + 1))
        for c in classes:
            lo, hi = int(tbounds[c.cid]), int(tbounds[c.cid + 1])
            if hi > lo:
                c.thr_lazy = (e_thr[lo:hi], e_con[lo:hi], e_ver[lo:hi])
            self._dirty.add(c.cid)
        # Constraints of segments in use: thresholds where something else loads them too;
        # solo ones are checked by their segment's bound.
        shared = in_seg & ((self._con_nsegs[:n] > 1) | (self._con_ncls[:n] > 0))
        with self._levels_fixed():
            for k in np.flatnonzero(shared).tolist():
                self._refresh_constraint(k)
        # The cached flow levels take the classes' levels exactly.
        self._level[active] = cls_mu[cid_of]
        self._con_load[:] = 0.0
        self._factored(active).add_to(self._con_load, prio * self._level[active])
        self._con_load[0] = 0.0
