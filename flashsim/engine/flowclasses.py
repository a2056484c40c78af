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

A start or end changes a few ``w`` entries; the classes whose equation
``sum_c mu_c w_c[b] = C_b`` it touches are re-solved in level order and the
checks above are re-run for them only.  When any check fails the bottleneck
structure has changed and :class:`~flashsim.engine.flows.FlowNetwork` falls
back to its exact flow-level repair.
"""

from __future__ import annotations

import heapq


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
        "sat",
        "size",
        "t_s",
        "tags",
        "thr",
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
        self.members: set[int] = set()
        self.size = 0
        self.ver = 0

    def advance(self, now_s: float) -> None:
        """Move the virtual clock to ``now_s`` at the current level."""
        if now_s > self.t_s:
            self.vtime += self.mu * (now_s - self.t_s)
            self.t_s = now_s

    def set_level(self, mu: float, now_s: float) -> None:
        """Change the level from ``now_s`` on (the clock is advanced first)."""
        self.advance(now_s)
        self.mu = mu

    def top_tag(self, gens: list[int]) -> tuple[float, int] | None:
        """The smallest live virtual finish tag and its slot (stale entries dropped)."""
        tags = self.tags
        while tags:
            tag, gen, slot = tags[0]
            if gens[slot] == gen:
                return tag, slot
            heapq.heappop(tags)
        return None

    def min_cap(self, gens: list[int]) -> float:
        """The smallest level cap among live members (``inf`` if none)."""
        caps = self.caps
        while caps:
            cap, gen, slot = caps[0]
            if gens[slot] == gen:
                return cap
            heapq.heappop(caps)
        return float("inf")

    def min_threshold(self, con_ver: list[int]) -> tuple[float, int]:
        """The lowest live threshold level and its constraint (``(inf, 0)`` if none)."""
        thr = self.thr
        while thr:
            level, con, ver = thr[0]
            if con_ver[con] == ver:
                return level, con
            heapq.heappop(thr)
        return float("inf"), 0

    def next_completion_s(self, gens: list[int]) -> float:
        """Simulated time (s) at which the first member completes at the current level."""
        top = self.top_tag(gens)
        if top is None or self.mu <= 0.0:
            return float("inf")
        return self.t_s + max(top[0] - self.vtime, 0.0) / self.mu
