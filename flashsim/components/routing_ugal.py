"""The UGAL split of flow fidelity: route fractions per group pair from offered load.

Adaptive routing chooses per packet; a flow's path is fixed when it starts, so
flow fidelity routes each group pair's traffic over its minimal and Valiant
routes (:mod:`flashsim.components.routing`) in fractions computed once per
phase from the offered load, at the fixed point of a fluid UGAL rule
(:func:`ugal_split`).  Load already on the bundles (background traffic) is
planned around: the offered load is placed on top of it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from flashsim.components.fabric_spec import GroupId
from flashsim.components.routing import Route, Topology, split_weights
from flashsim.engine.maxmin import FloatArray

#: Bisection steps of the per-pair UGAL balance before a final linear interpolation.
_BISECTION_STEPS = 20
#: Past sweeps the Anderson acceleration of :func:`ugal_split` combines.
_ANDERSON_DEPTH = 5


@dataclass(frozen=True)
class _PairRoutes:
    """One group pair's routes over the bundles it crosses, for :func:`ugal_split`.

    ``carry[r, j]`` is the bytes on bundle ``idx[j]`` per byte sent on route
    ``r`` (route 0: the minimal routes, evenly; 1..K: the Valiant routes);
    ``costed`` leaves out bundles every route crosses (the ends' local links),
    which cannot steer the choice; ``scale[r]`` is hops (x threshold for
    Valiant routes).
    """

    demand: float
    idx: npt.NDArray[np.int64]
    carry: FloatArray
    costed: npt.NDArray[np.bool_]
    scale: FloatArray

    @classmethod
    def build(
        cls,
        demand: float,
        mins: list[Route],
        nms: list[Route],
        index: dict[str, int],
        threshold: float,
    ) -> _PairRoutes:
        rows = [split_weights(mins, [], 0.0, 1.0)] + [split_weights([], [r], 1.0, 1.0) for r in nms]
        names = sorted(set().union(*rows))
        carry = np.array([[row.get(n, 0.0) for n in names] for row in rows])
        used = carry > 0
        costed = used & ~used.all(axis=0)
        scale = np.array([mins[0].hops] + [threshold * r.hops for r in nms], dtype=float)
        idx = np.array([index[n] for n in names], dtype=np.int64)
        return cls(demand, idx, carry, costed, scale)

    def load(self, fractions: FloatArray) -> FloatArray:
        """Bytes/s this pair puts on its bundles when routes carry ``fractions`` of it."""
        load: FloatArray = self.demand * (fractions @ self.carry)
        return load

    def best_reply(self, base: FloatArray, cap: FloatArray) -> FloatArray:
        """Route fractions of the fluid UGAL rule against the other pairs' load ``base``."""

        # Fraction route r takes before its weighted excess reaches ``level``:
        # min over its costed bundles of alpha + beta * level, floored at 0.
        per_byte = self.demand * np.where(self.costed, self.carry, 1.0)
        alpha = np.where(self.costed, (cap - base) / per_byte, np.inf)
        beta = np.where(self.costed, cap / per_byte / self.scale[:, None], 0.0)

        def room(level: float) -> FloatArray:
            free: FloatArray = np.clip((alpha + beta * level).min(axis=1), 0.0, None)
            return free

        free = room(0.0)
        out = np.zeros(len(self.scale))
        if free[0] >= 1.0:
            out[0] = 1.0
            return out
        if free.sum() >= 1.0:
            out[0] = free[0]
            out[1:] = (1.0 - free[0]) * free[1:] / free[1:].sum()
            return out
        lo, hi = 0.0, 1.0
        while room(hi).sum() < 1.0:
            lo, hi = hi, 2.0 * hi
        for _ in range(_BISECTION_STEPS):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if room(mid).sum() < 1.0 else (lo, mid)
        # The total room is piecewise linear in the level: interpolate in the bracket.
        s_lo, s_hi = float(room(lo).sum()), float(room(hi).sum())
        level = lo + (hi - lo) * (1.0 - s_lo) / (s_hi - s_lo) if s_hi > s_lo else hi
        out = np.minimum(room(level), 1.0)
        reply: FloatArray = out / out.sum()
        return reply


def ugal_split(
    topology: Topology,
    demands_Bps: Mapping[tuple[GroupId, GroupId], float],
    threshold: float,
    rounds: int = 200,
    tol: float = 1e-6,
    base_load_Bps: Mapping[str, float] | None = None,
) -> dict[tuple[GroupId, GroupId], FloatArray]:
    """Route fractions per group pair at the fixed point of a fluid UGAL rule.

    A bundle's queue in the fluid picture grows at ``q(u) = max(u - 1, 0)``
    (its excess of offered load over capacity, relative to capacity): zero
    while the bundle is not overloaded, as a real queue stays near empty.  A
    route's cost is its hops times the ``q`` of its most loaded bundle, and
    a Valiant route's cost is also multiplied by ``threshold``.  As in UGAL
    (Kim et al., ISCA 2008: minimal unless ``q_min * H_min`` exceeds
    ``q_nonmin * H_nonmin``, here with a multiplicative bias), each pair
    sends all its traffic minimally while its minimal bundles are not
    overloaded; otherwise it fills them to capacity and spreads the rest over
    its Valiant routes in proportion to their spare capacity (a random
    intermediate whose queue is empty is accepted, a congested one refused);
    when that is not enough, it equalises the weighted excesses of all its
    routes.  Pairs reply in turn to the loads of all the others (Gauss-Seidel
    sweeps, Anderson-accelerated) until a sweep moves no fraction by ``tol``.

    Parameters
    ----------
    topology : Topology
        The fabric.
    demands_Bps : mapping of (int, int) to float
        Offered load in bytes/s per (source group, destination group).
    threshold : float
        UGAL bias towards minimal routes (> 0).
    rounds : int
        Most sweeps.
    tol : float
        Convergence tolerance on the fractions.
    base_load_Bps : mapping of str to float, optional
        Load in bytes/s already on bundles (by name) that the plan cannot
        move, e.g. background traffic at its offered rate; the demands are
        planned on top of it.

    Returns
    -------
    dict of (int, int) to numpy.ndarray
        For each pair with demand and Valiant routes, the fraction of its
        traffic on its minimal routes (element 0) and on each route of
        ``topology.nonminimal(a, b)`` (elements 1..K).
    """
    fixed: dict[str, float] = {}
    keys: list[tuple[GroupId, GroupId]] = []
    for (a, b), demand in demands_Bps.items():
        if not demand > 0 or a == b:
            continue
        if topology.nonminimal(a, b):
            keys.append((a, b))
        else:
            for name, w in split_weights(topology.minimal(a, b), [], 0.0, demand).items():
                fixed[name] = fixed.get(name, 0.0) + w
    index = {name: i for i, name in enumerate(topology.bundles)}
    cap = np.array([topology.bundles[n].capacity_Bps for n in index])
    fixed_load = np.zeros(len(index))
    for name, w in fixed.items():
        fixed_load[index[name]] += w
    for name, w in (base_load_Bps or {}).items():
        fixed_load[index[name]] += w
    pairs = [
        _PairRoutes.build(
            float(demands_Bps[k]), topology.minimal(*k), topology.nonminimal(*k), index, threshold
        )
        for k in keys
    ]
    bounds = np.cumsum([0] + [len(p.scale) for p in pairs])

    def sweep(x: FloatArray) -> FloatArray:
        """One Gauss-Seidel pass from fractions ``x``: each pair's best reply in turn."""
        load = fixed_load.copy()
        for p, lo, hi in zip(pairs, bounds[:-1], bounds[1:], strict=True):
            load[p.idx] += p.load(x[lo:hi])
        out = x.copy()
        for p, lo, hi in zip(pairs, bounds[:-1], bounds[1:], strict=True):
            base = load[p.idx] - p.load(out[lo:hi])
            out[lo:hi] = p.best_reply(base, cap[p.idx])
            load[p.idx] = base + p.load(out[lo:hi])
        return out

    def project(x: FloatArray) -> FloatArray:
        x = np.clip(x, 0.0, None)
        for lo, hi in itertools.pairwise(bounds):
            total = x[lo:hi].sum()
            x[lo:hi] = x[lo:hi] / total if total > 0 else np.eye(1, hi - lo)[0]
        return x

    # Anderson acceleration of the sweeps: pairs sharing detour bundles couple
    # strongly, and plain sweeps then take ~100 rounds.
    x = np.zeros(int(bounds[-1]))
    x[bounds[:-1]] = 1.0
    xs: list[FloatArray] = []
    gs: list[FloatArray] = []
    for _ in range(rounds):
        g = sweep(x)
        if not len(x) or float(np.abs(g - x).max()) < tol:
            x = g
            break
        xs, gs = [*xs[-_ANDERSON_DEPTH:], x], [*gs[-_ANDERSON_DEPTH:], g]
        if len(xs) > 1:
            f = np.array([gi - xi for gi, xi in zip(gs, xs, strict=True)]).T
            dg = np.diff(np.array(gs).T, axis=1)
            gamma = np.linalg.lstsq(np.diff(f, axis=1), f[:, -1], rcond=None)[0]
            g = g - dg @ gamma
        x = project(g)
    return {k: x[lo:hi].copy() for k, lo, hi in zip(keys, bounds[:-1], bounds[1:], strict=True)}
