"""Flow fidelity: data moves as flows over paths of capacity-limited resources.

A :class:`FlowNetwork` holds resources (capacities in bytes/s and/or ops/s)
and flows (a size, a path of ``(resource, weight)`` pairs, an optional rate
cap, an operation size and a share priority).  Rates are the weighted max-min
fair allocation (:func:`flashsim.engine.maxmin.solve_maxmin`), re-solved when
a flow starts or ends or a capacity changes.  Each flow's completion is a SimPy
event.

Re-solving is incremental and exact, at two depths.  Flows that share a
bottleneck share a level and a virtual clock (:mod:`flashsim.engine.flowclasses`):
a start, end or capacity change that leaves the set of saturated constraints as
it was costs O(path length x log N), whatever the number of flows sharing the
bottleneck, and completions come from a heap of virtual finish tags.  When the
bottleneck structure changes, the exact flow-level repair of
:class:`flashsim.engine.flowstate.FlowState` re-solves the part of the system
the change reaches, and the classes are rebuilt from its result.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from flashsim.engine.flowclasses import FlowClass
from flashsim.engine.flowstate import (
    FULL_SOLVE_FRACTION,
    LEVEL_RTOL,
    SATURATION_RTOL,
    FlowState,
)
from flashsim.engine.maxmin import FloatArray, IntArray

#: A flow whose remaining bytes fall below this fraction of its size is complete.
COMPLETION_RTOL = 1e-9
#: Relative time slack within which completions count as simultaneous.
TIME_RTOL = 1e-12


@dataclass(eq=False)
class Resource:
    """A capacity-limited element of a path (a NIC port, a link, a drive).

    Attributes
    ----------
    name : str
        Dotted component name, e.g. ``perlmutter.oss17.nic0``.
    capacity_Bps : float or None
        Bandwidth capacity in bytes/s; ``None`` for unlimited.
    capacity_ops : float or None
        Operation-rate capacity in operations/s; ``None`` for unlimited.
    """

    name: str
    capacity_Bps: float | None
    capacity_ops: float | None
    _con_bytes: int = field(default=0, repr=False)
    _con_ops: int = field(default=0, repr=False)


@dataclass(eq=False)
class Flow:
    """A transfer of ``size_B`` bytes along a path; see :meth:`FlowNetwork.start_flow`.

    Attributes
    ----------
    name : str
        Label for probes and debugging.
    size_B : float
        Bytes to move.
    done : simpy.Event
        Succeeds (with this flow as value) when the last byte has moved.
    start_s, end_s : float
        Simulated start and completion times in seconds (``end_s`` is NaN
        until completion).
    """

    name: str
    size_B: float
    done: simpy.Event
    start_s: float
    end_s: float = float("nan")
    _slot: int = field(default=-1, repr=False)
    _network: FlowNetwork | None = field(default=None, repr=False)

    @property
    def rate_Bps(self) -> float:
        """Current rate in bytes/s (0 once complete)."""
        if self._network is None or self._slot < 0:
            return 0.0
        return self._network._rate_of(self._slot)

    @property
    def remaining_B(self) -> float:
        """Bytes still to move, as of the current simulated time."""
        if self._network is None or self._slot < 0:
            return 0.0
        return self._network._remaining_of(self._slot)


#: A flow's fixed description: constraints, coefficients, priority, level cap, size (B).
FlowSpec = tuple[tuple[int, ...], tuple[float, ...], float, float, float]


class FlowNetwork(FlowState):
    """Resources, flows and their max-min fair rates inside a SimPy environment.

    Parameters
    ----------
    env : simpy.Environment
        The environment whose clock drives the flows.
    """

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.resources: dict[str, Resource] = {}
        # Per-constraint class bookkeeping (grown with the constraint arrays).
        self._con_class: list[int] = [-1] * 64  # class whose bottleneck it is, or -1
        self._con_class_arr = np.full(64, -1, dtype=np.int64)  # the same, for vector code
        self._con_cls: list[set[int]] = [set() for _ in range(64)]  # classes crossing it
        self._con_ver: list[int] = [0] * 64  # bumped when its threshold entries go stale
        self._con_z = np.zeros(64)  # bytes moved = sum_c w_c * vtime_c - z
        # Per-slot class bookkeeping (grown with the slot arrays).
        self._cls = np.zeros(0, dtype=np.int64)
        self._gen: list[int] = []
        self._tag: list[float] = []
        self._spec: list[FlowSpec | None] = []
        self._classes: dict[int, FlowClass] = {}
        self._cap_class: dict[float, int] = {}
        self._next_cid = 0
        self._events: list[tuple[float, int, int]] = []  # (completion s, class, version)
        self._dirty: set[int] = set()
        self._touched: set[int] = set()
        self._lost_bottlenecks: set[int] = set()
        self._n_active = 0
        self._moved: set[int] = set()
        self._unsynced: set[int] = set()
        super().__init__()
        self._pending_new: list[int] = []
        self._pending_full = False
        self._solve_scheduled = False
        self._timer_token = 0
        self._rate_listeners: list[Callable[[], None]] = []

    def _on_new_constraints(self, grow: int) -> None:
        self._con_class.extend([-1] * grow)
        self._con_class_arr = np.concatenate([self._con_class_arr, np.full(grow, -1)])
        self._con_cls.extend(set() for _ in range(grow))
        self._con_ver.extend([0] * grow)
        self._con_z = np.concatenate([self._con_z, np.zeros(grow)])

    def _on_new_slots(self, extra: int) -> None:
        self._cls = np.concatenate([self._cls, np.full(extra, -1, dtype=np.int64)])
        self._gen.extend([0] * extra)
        self._tag.extend([0.0] * extra)
        self._spec.extend([None] * extra)

    # ------------------------------------------------------------------ resources
    def add_resource(
        self, name: str, capacity_Bps: float | None = None, capacity_ops: float | None = None
    ) -> Resource:
        """Add a resource and return it.

        Parameters
        ----------
        name : str
            Unique dotted name.
        capacity_Bps : float, optional
            Bandwidth capacity in bytes/s (>= 0); ``None`` for unlimited.
        capacity_ops : float, optional
            Operation rate capacity in operations/s (>= 0); ``None`` for unlimited.
        """
        if name in self.resources:
            raise ValueError(f"resource name(={name!r}) is already used")
        for label, value in (("capacity_Bps", capacity_Bps), ("capacity_ops", capacity_ops)):
            if value is not None and not (value >= 0 and np.isfinite(value)):
                raise ValueError(f"{name}: {label}(={value}) must be a finite number >= 0")
        res = Resource(name, capacity_Bps, capacity_ops)
        if capacity_Bps is not None:
            res._con_bytes = self._new_constraint(capacity_Bps)
        if capacity_ops is not None:
            res._con_ops = self._new_constraint(capacity_ops)
        self.resources[name] = res
        return res

    def set_capacity(
        self,
        resource: Resource,
        capacity_Bps: float | None = None,
        capacity_ops: float | None = None,
    ) -> None:
        """Change a resource's capacities (bytes/s, ops/s); rates are re-solved.

        Only capacities the resource was created with can be changed; pass
        ``None`` to leave one as it is.
        """
        for label, value, con in (
            ("capacity_Bps", capacity_Bps, resource._con_bytes),
            ("capacity_ops", capacity_ops, resource._con_ops),
        ):
            if value is None:
                continue
            if con == 0:
                raise ValueError(f"{resource.name}: has no {label} to change")
            if not (value >= 0 and np.isfinite(value)):
                raise ValueError(f"{resource.name}: {label}(={value}) must be a finite number >= 0")
            self._con_cap[con] = value
            setattr(resource, label, float(value))
            self._touched.add(con)
        self._schedule_solve()

    def _load(self, con: int) -> float:
        """Current load of a constraint (its unit per second), from the classes."""
        classes = self._classes
        return float(sum(classes[c].mu * classes[c].w[con] for c in self._con_cls[con]))

    def utilization(self, resource: Resource) -> float:
        """Current load over capacity of the resource's tightest constraint (0..1)."""
        cons = [c for c in (resource._con_bytes, resource._con_ops) if c]
        if not cons:
            return 0.0
        self.solve_now()
        util = [self._load(c) / self._con_cap[c] if self._con_cap[c] > 0 else 0.0 for c in cons]
        return float(max(util))

    def throughput_Bps(self, resource: Resource) -> float:
        """Current bytes/s through the resource (weighted by its path weights)."""
        self.solve_now()
        return self._load(resource._con_bytes) if resource._con_bytes else 0.0

    def bytes_moved(self, resource: Resource) -> float:
        """Bytes that have crossed the resource's bandwidth constraint so far."""
        con = resource._con_bytes
        if not con:
            return 0.0
        now = self.env.now
        total = 0.0
        for cid in self._con_cls[con]:
            c = self._classes[cid]
            total += c.w[con] * (c.vtime + c.mu * (now - c.t_s))
        return float(total - self._con_z[con])

    # ---------------------------------------------------------------------- flows
    def start_flow(
        self,
        size_B: float,
        path: Sequence[tuple[Resource, float]],
        rate_cap_Bps: float | None = None,
        op_size_B: float | None = None,
        priority: float = 1.0,
        name: str = "",
    ) -> Flow:
        """Start moving ``size_B`` bytes along ``path`` and return the flow.

        Parameters
        ----------
        size_B : float
            Bytes to move (> 0).
        path : sequence of (Resource, float)
            Resources crossed and the weight on each: bytes consumed there per
            user byte (> 0), e.g. 1.25 on the drives of a RAID6 8+2 write.
        rate_cap_Bps : float, optional
            Upper bound on the flow's rate in bytes/s, e.g. ``q * t / L`` for
            ``q`` requests of ``t`` bytes in flight over a round trip ``L``.
        op_size_B : float, optional
            Bytes per operation; required to cross a resource with an
            operation-rate capacity, whose ops/s it then consumes at
            ``weight * rate / op_size_B``.
        priority : float
            Share weight (> 0): at a common bottleneck, rates are proportional
            to priorities.
        name : str
            Label for diagnostics.
        """
        if not (size_B > 0 and np.isfinite(size_B)):
            raise ValueError(f"flow {name!r}: size_B(={size_B}) must be a finite number > 0")
        if not priority > 0:
            raise ValueError(f"flow {name!r}: priority(={priority}) must be > 0")
        if rate_cap_Bps is not None and not rate_cap_Bps > 0:
            raise ValueError(f"flow {name!r}: rate_cap_Bps(={rate_cap_Bps}) must be > 0")
        if op_size_B is not None and not (op_size_B > 0 and np.isfinite(op_size_B)):
            raise ValueError(f"flow {name!r}: op_size_B(={op_size_B}) must be a finite number > 0")
        coef_by_con: dict[int, float] = {}
        for resource, weight in path:
            if not (weight > 0 and np.isfinite(weight)):
                raise ValueError(
                    f"flow {name!r}: weight(={weight}) on {resource.name} "
                    "must be a finite number > 0"
                )
            if resource._con_bytes:
                coef_by_con[resource._con_bytes] = (
                    coef_by_con.get(resource._con_bytes, 0.0) + weight
                )
            if resource._con_ops:
                if op_size_B is None:
                    raise ValueError(
                        f"flow {name!r}: crosses {resource.name}, which limits operations/s, "
                        "so op_size_B must be given"
                    )
                coef_by_con[resource._con_ops] = (
                    coef_by_con.get(resource._con_ops, 0.0) + weight / op_size_B
                )
        cap = np.inf if rate_cap_Bps is None else float(rate_cap_Bps)
        if not coef_by_con and not np.isfinite(cap):
            raise ValueError(f"flow {name!r}: has neither a limited resource nor a rate cap")
        slot = self._alloc_slot(len(coef_by_con))
        cons = tuple(coef_by_con)
        coefs = tuple(coef_by_con.values())
        self._path_con[slot, :] = 0
        self._path_coef[slot, :] = 0.0
        self._path_con[slot, : len(cons)] = cons
        self._path_coef[slot, : len(cons)] = coefs
        self._priority[slot] = priority
        self._level_cap[slot] = cap / priority
        self._level[slot] = 0.0
        self._active[slot] = True
        self._n_active += 1
        self._spec[slot] = (cons, coefs, float(priority), cap / priority, float(size_B))
        flow = Flow(name, float(size_B), self.env.event(), self.env.now, _slot=slot, _network=self)
        self._flows[slot] = flow
        self._pending_new.append(slot)
        self._index_recent.append(slot)
        self._schedule_solve()
        return flow

    def cancel_flow(self, flow: Flow) -> float:
        """Stop a flow before it completes; return the bytes it had moved.

        Its ``done`` event is never triggered.
        """
        if flow._network is not self or flow._slot < 0:
            raise ValueError(f"flow {flow.name!r} is not active in this network")
        slot = flow._slot
        moved = flow.size_B - self._remaining_of(slot)
        self._release([slot])
        flow.end_s = self.env.now
        self._schedule_solve()
        return moved

    def add_rate_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after every re-solve, i.e. whenever rates may have changed.

        Rates are constant between calls, so a listener can integrate a state
        (a buffer's fill level) exactly and predict when it crosses a
        threshold.  A listener may start, cancel or re-cap flows; those
        changes are solved in a later call.
        """
        self._rate_listeners.append(callback)

    def rate_now_Bps(self, flow: Flow) -> float:
        """A flow's rate (bytes/s) as of the last solve, without solving pending changes.

        For rate listeners, which must not trigger a nested solve.
        """
        slot = flow._slot
        if flow._network is not self or slot < 0:
            return 0.0
        return self._rate_unsolved(slot)

    @property
    def active_flows(self) -> int:
        """Number of flows in progress."""
        return self._n_active

    def solve_now(self) -> None:
        """Apply pending changes and re-solve rates at the current time."""
        if self._pending_new or self._touched or self._pending_full:
            self._resolve()

    def rates_Bps(self, flows: Iterable[Flow]) -> FloatArray:
        """Current rates (bytes/s) of the given flows."""
        self.solve_now()
        return np.array([f.rate_Bps for f in flows])

    # ------------------------------------------------------------ flow internals
    def _rate_unsolved(self, slot: int) -> float:
        cid = int(self._cls[slot])
        spec = self._spec[slot]
        if cid < 0 or spec is None:
            return 0.0
        return spec[2] * self._classes[cid].mu

    def _rate_of(self, slot: int) -> float:
        self.solve_now()
        return self._rate_unsolved(slot) if self._active[slot] else 0.0

    def _remaining_of(self, slot: int) -> float:
        spec = self._spec[slot]
        if spec is None or not self._active[slot]:
            return 0.0
        cid = int(self._cls[slot])
        if cid < 0:
            return spec[4]
        c = self._classes[cid]
        vtime = c.vtime + c.mu * (self.env.now - c.t_s)
        return max(spec[2] * (self._tag[slot] - vtime), 0.0)

    def _schedule_solve(self) -> None:
        if self._solve_scheduled:
            return
        self._solve_scheduled = True
        event = self.env.timeout(0)
        event.callbacks.append(self._on_solve_event)

    def _on_solve_event(self, _event: simpy.Event) -> None:
        self._solve_scheduled = False
        self.solve_now()

    def _release(self, slots: Sequence[int]) -> None:
        """Remove flows from their classes and the slot arrays."""
        arr = np.asarray(slots, dtype=np.int64)
        # Keep _con_load equal to the load of the cached flow levels.
        rates = self._priority[arr] * self._level[arr]
        np.subtract.at(
            self._con_load,
            self._path_con[arr].ravel(),
            (self._path_coef[arr] * rates[:, None]).ravel(),
        )
        self._con_load[0] = 0.0
        for s in slots:
            if self._cls[s] >= 0:
                self._leave(s)
            else:
                spec = self._spec[s]
                if spec is not None:
                    self._touched.update(spec[0])
            self._active[s] = False
            self._level[s] = 0.0
            self._path_con[s] = 0
            self._path_coef[s] = 0.0
            self._spec[s] = None
            self._n_active -= 1
            flow = self._flows[s]
            if flow is not None:
                flow._slot = -1
            self._flows[s] = None
            self._free_slots.append(s)

    # ---------------------------------------------------------- class bookkeeping
    def _mark_dirty(self, c: FlowClass) -> None:
        c.ver += 1
        self._dirty.add(c.cid)

    def _set_level(self, c: FlowClass, mu: float) -> None:
        """Change a class's level now; its members' cached flow levels go stale."""
        c.set_level(mu, self.env.now)
        self._unsynced.add(c.cid)
        self._mark_dirty(c)

    def _new_class(self, con: int, cap_level: float, mu: float) -> FlowClass:
        cid = self._next_cid
        self._next_cid += 1
        c = FlowClass(cid, con, cap_level, mu, self.env.now)
        self._classes[cid] = c
        if con:
            self._con_class[con] = cid
            self._con_class_arr[con] = cid
            for other in self._con_cls[con]:
                self._classes[other].sat.add(con)
            self._touched.add(con)
        else:
            self._cap_class[cap_level] = cid
        return c

    def _drop_class(self, c: FlowClass) -> None:
        del self._classes[c.cid]
        if c.con:
            con = c.con
            self._con_class[con] = -1
            self._con_class_arr[con] = -1
            self._lost_bottlenecks.add(con)
            self._touched.add(con)
            for other in self._con_cls[con]:
                self._classes[other].sat.discard(con)
        else:
            del self._cap_class[c.cap_level]

    def _join(self, slot: int, c: FlowClass, remaining_B: float) -> None:
        """Put a flow with ``remaining_B`` bytes to move into class ``c``."""
        spec = self._spec[slot]
        assert spec is not None
        cons, coefs, prio, level_cap, _size = spec
        c.advance(self.env.now)
        gen = self._gen[slot] + 1
        self._gen[slot] = gen
        tag = c.vtime + remaining_B / prio
        self._tag[slot] = tag
        self._cls[slot] = c.cid
        heapq.heappush(c.tags, (tag, gen, slot))
        if c.con:
            heapq.heappush(c.caps, (level_cap, gen, slot))
        vtime = c.vtime
        cid = c.cid
        con_z = self._con_z
        for k, a in zip(cons, coefs, strict=True):
            dw = a * prio
            n = c.cnt.get(k, 0)
            if n:
                c.cnt[k] = n + 1
                c.w[k] += dw
            else:
                c.cnt[k] = 1
                c.w[k] = dw
                self._con_cls[k].add(cid)
                if self._con_class[k] >= 0 and k != c.con:
                    c.sat.add(k)
            con_z[k] += dw * vtime
        self._touched.update(cons)
        c.size += 1
        c.members.add(slot)
        self._moved.add(slot)
        self._mark_dirty(c)

    def _leave(self, slot: int) -> float:
        """Take a flow out of its class; return its remaining bytes."""
        spec = self._spec[slot]
        assert spec is not None
        cons, coefs, prio, _cap, _size = spec
        c = self._classes[int(self._cls[slot])]
        c.advance(self.env.now)
        vtime = c.vtime
        remaining = prio * (self._tag[slot] - vtime)
        cid = c.cid
        con_z = self._con_z
        for k, a in zip(cons, coefs, strict=True):
            dw = a * prio
            n = c.cnt[k] - 1
            if n:
                c.cnt[k] = n
                c.w[k] -= dw
            else:
                del c.cnt[k]
                del c.w[k]
                c.sat.discard(k)
                self._con_cls[k].discard(cid)
            con_z[k] -= dw * vtime
        self._touched.update(cons)
        self._gen[slot] += 1
        self._cls[slot] = -1
        c.size -= 1
        c.members.discard(slot)
        self._moved.add(slot)
        self._mark_dirty(c)
        if c.size == 0:
            self._drop_class(c)
        return max(remaining, 0.0)

    # ------------------------------------------------------------ class fast path
    def _fast_update(self, new: list[int]) -> bool:
        """Apply the pending changes at class level; False if the structure changed.

        On False every tentative change is undone: the classes describe the
        allocation before the change (minus released flows), ready for the
        flow-level repair.
        """
        classes = self._classes
        con_class = self._con_class
        joined: list[int] = []
        changed: list[tuple[int, float]] = []
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
            if target >= 0:
                c = classes[target]
            elif np.isfinite(spec[3]):
                cap_cid = self._cap_class.get(spec[3])
                c = classes[cap_cid] if cap_cid is not None else self._new_class(0, best, best)
            else:
                ok = False  # a new bottleneck forms: leave it to the repair
                break
            self._join(slot, c, spec[4])
            joined.append(slot)
        if ok:
            seeds = {con_class[k] for k in self._touched if con_class[k] >= 0}
            ok = self._update_levels(seeds, changed)
        if ok:
            ok = all(self._refresh_constraint(k) for k in self._touched)
        if ok:
            check = {cid for cid, _ in changed}
            check.update(int(self._cls[s]) for s in joined)
            ok = all(self._verify(classes[cid]) for cid in check)
        if not ok:
            for cid, mu in changed:
                if cid in classes:
                    self._set_level(classes[cid], mu)
            for slot in joined:
                self._leave(slot)
        return ok

    def _update_levels(self, seeds: set[int], changed: list[tuple[int, float]]) -> bool:
        """Re-solve the levels of bottleneck classes in level order from ``seeds``.

        Appends ``(class, old level)`` to ``changed``; False when two classes
        turn out to depend on each other (a tie), which the repair resolves.
        """
        classes = self._classes
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
            rest = 0.0
            for other in self._con_cls[b]:
                if other != cid:
                    o = classes[other]
                    rest += o.mu * o.w[b]
            wb = c.w.get(b, 0.0)
            if wb <= 0.0:
                return False
            mu = (float(self._con_cap[b]) - rest) / wb
            if mu == c.mu:
                continue
            changed.append((cid, c.mu))
            self._set_level(c, mu)
            for k in c.sat:
                dep = self._con_class[k]
                if dep in done:
                    return False
                heapq.heappush(heap, (classes[dep].mu, dep))
        return True

    def _refresh_constraint(self, k: int) -> bool:
        """Re-derive the saturation check of constraint ``k``; False if it is violated now.

        Each moving class crossing ``k`` gets a threshold level in its heap: the
        level at which ``k`` saturates if it moves ``k`` alone, otherwise its
        escrow share of ``k``'s slack.
        """
        self._con_ver[k] += 1
        if self._con_class[k] >= 0:
            return True
        limit = float(self._con_cap[k]) * (1.0 + SATURATION_RTOL)
        load = 0.0
        movers: list[FlowClass] = []
        for cid in self._con_cls[k]:
            c = self._classes[cid]
            load += c.mu * c.w[k]
            if c.con:
                movers.append(c)
        if not load <= limit:
            return False
        if movers and limit < np.inf:
            share = (limit - load) / len(movers)
            ver = self._con_ver[k]
            for mover in movers:
                heapq.heappush(mover.thr, (mover.mu + share / mover.w[k], k, ver))
        return True

    def _verify(self, c: FlowClass) -> bool:
        """Check the max-min conditions of class ``c`` against its neighbours."""
        mu = c.mu
        if not mu >= 0.0:
            return False
        classes = self._classes
        high = mu * (1.0 + LEVEL_RTOL)
        if c.con:
            if c.min_cap(self._gen) < mu * (1.0 - LEVEL_RTOL):
                return False
            while True:
                level, k = c.min_threshold(self._con_ver)
                if mu <= level:
                    break
                # Past its threshold or escrow share: re-check the constraint for real.
                if not self._refresh_constraint(k):
                    return False
            for other in self._con_cls[c.con]:
                if classes[other].mu > high:
                    return False
        return all(mu <= classes[self._con_class[k]].mu * (1.0 + LEVEL_RTOL) for k in c.sat)

    # ------------------------------------------------------------ flow-level path
    def _materialise(self) -> None:
        """Bring the flow-level arrays up to date with the classes (new flows at 0).

        Invariant: ``_con_load`` always equals the load of the cached flow
        levels ``_level``.  Only flows whose class level changed, or which
        joined or left a class, since the last call are rewritten, and only the
        constraints they cross are recomputed exactly.
        """
        stale = set(self._moved)
        for cid in self._unsynced:
            c = self._classes.get(cid)
            if c is not None:
                stale.update(c.members)
        self._moved.clear()
        self._unsynced.clear()
        slots = np.fromiter(stale, dtype=np.int64, count=len(stale))
        slots = slots[self._active[slots]]
        cons = set(self._touched)
        cons.update(self._lost_bottlenecks)
        if slots.size:
            cls = self._cls[slots]
            mu_of = np.zeros(max(self._next_cid, 1))
            for cid in np.unique(cls[cls >= 0]).tolist():
                mu_of[cid] = self._classes[cid].mu
            level = np.where(cls >= 0, mu_of[np.maximum(cls, 0)], 0.0)
            pc = self._path_con[slots]
            delta = self._priority[slots] * (level - self._level[slots])
            np.add.at(self._con_load, pc.ravel(), (self._path_coef[slots] * delta[:, None]).ravel())
            self._con_load[0] = 0.0
            self._level[slots] = level
            cons.update(np.unique(pc[pc > 0]).tolist())
        if not cons:
            return
        arr = np.fromiter(cons, dtype=np.int64, count=len(cons))
        self._update_saturation(arr)
        # A bottleneck constraint is saturated and its highest level is its class's.
        con_class = self._con_class
        bottleneck = [k for k in cons if con_class[k] >= 0]
        self._con_saturated[bottleneck] = True
        self._con_max_level[bottleneck] = [self._classes[con_class[k]].mu for k in bottleneck]
        # Saturated constraints that are no class's bottleneck (ties, or a class that
        # just emptied) need their highest level computed from the flows.
        odd = arr[self._con_saturated[arr] & (self._con_class_arr[arr] < 0)]
        lost = np.fromiter(self._lost_bottlenecks, dtype=np.int64)
        odd = np.union1d(odd, lost)
        if odd.size:
            self._recompute_state(odd)
            self._con_saturated[lost] = True

    def _flow_level_solve(self, new: list[int], full: bool) -> None:
        """Solve at flow level (repair or full), then rebuild the classes from it."""
        if full:
            self._full_solve()
            self._rebuild_classes()
            return
        self._materialise()
        touched = np.fromiter(self._touched, dtype=np.int64, count=len(self._touched))
        reach = self._repair(np.array(new, dtype=np.int64), np.unique(touched))
        if reach is None:
            self._rebuild_classes()  # the repair escalated to a full solve
        else:
            self._reclassify(*reach)

    def _class_clocks_now(self) -> FloatArray:
        """Virtual time of every class at ``now``, indexed by class id."""
        now = self.env.now
        vt = np.zeros(max(self._next_cid, 1))
        for cid, c in self._classes.items():
            vt[cid] = c.vtime + c.mu * (now - c.t_s)
        return vt

    def _rebuild_classes(self) -> None:
        """Replace every class by classes built, vectorised, from the flow-level solution."""
        now = self.env.now
        n = self._n_cons
        active = np.flatnonzero(self._active)
        pc = self._path_con[active]
        coef = self._path_coef[active]
        prio = self._priority[active]
        cls = self._cls[active]
        known = cls >= 0
        # Bytes moved so far and each flow's remaining bytes, from the old classes.
        vt_old = self._class_clocks_now()
        vt_flow = np.where(known, vt_old[np.maximum(cls, 0)], 0.0)
        con_bytes: FloatArray = (
            np.bincount(
                pc.ravel(), weights=(coef * (prio * vt_flow)[:, None]).ravel(), minlength=n
            )[:n]
            - self._con_z[:n]
        )
        size = np.array([self._spec[s][4] for s in active.tolist()])  # type: ignore[index]
        tag_old = np.array(self._tag)[active]
        remaining = np.where(known, np.maximum(prio * (tag_old - vt_flow), 0.0), size)
        # Forget the old classes.
        self._classes.clear()
        self._cap_class.clear()
        self._events.clear()
        self._dirty.clear()
        size_cons = len(self._con_class)
        self._con_cls = [set() for _ in range(size_cons)]
        self._con_class = [-1] * size_cons
        self._con_ver = [v + 1 for v in self._con_ver]
        self._con_class_arr[:] = -1
        self._con_z[:n] = -con_bytes
        if active.size == 0:
            return
        # Classify: at cap, else the first saturated constraint at the flow's level.
        level = self._level[active]
        level_cap = self._level_cap[active]
        at_cap = level >= level_cap * (1.0 - LEVEL_RTOL)
        cand = (
            self._con_saturated[pc]
            & (pc > 0)
            & (level[:, None] >= self._con_max_level[pc] * (1.0 - LEVEL_RTOL))
        )
        if (~cand.any(axis=1) & ~at_cap).any():  # pragma: no cover - max-min optimality
            raise RuntimeError("flow-level solution left a flow without a bottleneck")
        bott = pc[np.arange(active.size), np.argmax(cand, axis=1)]
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
        self._cls[active] = cid_of
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
            c.size = hi - lo
        # Per (class, constraint) weights and member counts.
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
        for k in np.flatnonzero(np.diff(cbounds)).tolist():
            self._con_cls[k] = set(cls_sorted[cbounds[k] : cbounds[k + 1]].tolist())
        # Threshold levels of the constraints that are no class's bottleneck.
        mover = cls_con[pc_cls] > 0
        free = con_class[pc_con] < 0
        movers_per_con = np.bincount(pc_con[free & mover], minlength=n)
        load = np.bincount(pc_con[free], weights=(cls_mu[pc_cls] * pw)[free], minlength=n)
        limit = self._con_cap[:n] * (1.0 + SATURATION_RTOL)
        entry = free & mover & np.isfinite(limit[pc_con])
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.maximum(limit - load, 0.0) / np.maximum(movers_per_con, 1)
            thr = cls_mu[pc_cls] + share[pc_con] / pw
        con_ver = np.asarray(self._con_ver)
        e_cls, e_con, e_thr = pc_cls[entry], pc_con[entry], thr[entry]
        by_thr = np.lexsort((e_thr, e_cls))
        tbounds = np.searchsorted(e_cls[by_thr], np.arange(n_cls + 1))
        thr_rows = list(
            zip(
                e_thr[by_thr].tolist(),
                e_con[by_thr].tolist(),
                con_ver[e_con[by_thr]].tolist(),
                strict=True,
            )
        )
        for c in classes:
            c.thr = thr_rows[int(tbounds[c.cid]) : int(tbounds[c.cid + 1])]
            self._dirty.add(c.cid)
        # The cached flow levels take the classes' levels exactly.
        self._level[active] = cls_mu[cid_of]
        rates = prio * self._level[active]
        self._con_load[:n] = np.bincount(
            pc.ravel(), weights=(coef * rates[:, None]).ravel(), minlength=n
        )[:n]
        self._con_load[0] = 0.0
        self._moved.clear()
        self._unsynced.clear()

    def _reclassify(self, reach_slots: IntArray, reach_cons: IntArray) -> None:
        """Move the flows whose class no longer matches the flow-level solution.

        Only the flows and constraints a repair examined (``reach_slots``,
        ``reach_cons``) can have changed level or bottleneck.
        """
        active = reach_slots[self._active[reach_slots]]
        if active.size == 0:
            return
        level = self._level[active]
        pc = self._path_con[active]
        at_cap = level >= self._level_cap[active] * (1.0 - LEVEL_RTOL)
        cand = (
            self._con_saturated[pc]
            & (pc > 0)
            & (level[:, None] >= self._con_max_level[pc] * (1.0 - LEVEL_RTOL))
        )
        con_of = np.full(max(self._next_cid, 1), -1, dtype=np.int64)
        for cid, c in self._classes.items():
            con_of[cid] = c.con
        cur = self._cls[active]
        cur_con = np.where(cur >= 0, con_of[np.maximum(cur, 0)], -1)
        in_cur = ((pc == cur_con[:, None]) & cand).any(axis=1)
        valid = (cur >= 0) & np.where(cur_con == 0, at_cap, in_cur)
        # Surviving bottleneck classes take the solved level of their constraint.
        for k in reach_cons.tolist():
            cid = self._con_class[k]
            if cid >= 0 and self._con_saturated[k]:
                c = self._classes[cid]
                mu = float(self._con_max_level[k])
                if mu != c.mu:
                    self._set_level(c, mu)
        moving = np.flatnonzero(~valid)
        if moving.size:
            has_class = self._con_class_arr[pc[moving]] >= 0
            score = cand[moving].astype(np.int8) * 2 + (cand[moving] & has_class)
            choice = pc[moving, np.argmax(score, axis=1)]
            no_bottleneck = ~cand[moving].any(axis=1) & ~at_cap[moving]
            if no_bottleneck.any():  # pragma: no cover - excluded by max-min optimality
                raise RuntimeError("flow-level solution left a flow without a bottleneck")
            for i, b, capped in zip(
                active[moving].tolist(), choice.tolist(), at_cap[moving].tolist(), strict=True
            ):
                spec = self._spec[i]
                assert spec is not None
                remaining = self._leave(i) if self._cls[i] >= 0 else spec[4]
                if capped:
                    cap_cid = self._cap_class.get(spec[3])
                    c = (
                        self._classes[cap_cid]
                        if cap_cid is not None
                        else self._new_class(0, spec[3], spec[3])
                    )
                else:
                    cid = self._con_class[b]
                    c = (
                        self._classes[cid]
                        if cid >= 0
                        else self._new_class(b, np.inf, float(self._con_max_level[b]))
                    )
                self._join(i, c, remaining)
        for k in self._touched:
            self._refresh_constraint(k)

    # --------------------------------------------------------------- re-solving
    def _resolve(self) -> None:
        new = [s for s in self._pending_new if self._active[s] and self._cls[s] < 0]
        self._pending_new = []
        if self._pending_full or len(new) > FULL_SOLVE_FRACTION * max(self._n_active, 1):
            self._flow_level_solve(new, full=True)
        elif self._fast_update(new):
            self.stats["class_events"] += 1
        else:
            self._flow_level_solve(new, full=False)
        self._pending_full = False
        self._touched.clear()
        self._lost_bottlenecks.clear()
        for cid in self._dirty:
            c = self._classes.get(cid)
            if c is not None:
                t = c.next_completion_s(self._gen)
                if t < np.inf:
                    heapq.heappush(self._events, (t, cid, c.ver))
        self._dirty.clear()
        self._reschedule_completion()
        for listener in self._rate_listeners:
            listener()

    def _next_event(self) -> tuple[float, FlowClass] | None:
        events = self._events
        while events:
            t, cid, ver = events[0]
            c = self._classes.get(cid)
            if c is not None and c.ver == ver:
                return t, c
            heapq.heappop(events)
        return None

    def _reschedule_completion(self) -> None:
        self._timer_token += 1
        nxt = self._next_event()
        if nxt is None:
            return
        token = self._timer_token
        event = self.env.timeout(max(nxt[0] - self.env.now, 0.0))
        event.callbacks.append(lambda _ev: self._on_completion_timer(token))

    def _due(self, c: FlowClass, now: float) -> list[int]:
        """Pop the members of ``c`` that complete at ``now`` (within rounding)."""
        due: list[int] = []
        slack = c.mu * TIME_RTOL * max(now, 1.0)
        while True:
            top = c.top_tag(self._gen)
            if top is None:
                return due
            tag, slot = top
            spec = self._spec[slot]
            assert spec is not None
            remaining = spec[2] * (tag - c.vtime)
            if remaining > max(spec[4] * COMPLETION_RTOL, spec[2] * slack) and (
                due or c.next_completion_s(self._gen) > now
            ):
                return due
            heapq.heappop(c.tags)
            due.append(slot)

    def _on_completion_timer(self, token: int) -> None:
        if token != self._timer_token:
            return
        now = self.env.now
        finished: list[int] = []
        while True:
            nxt = self._next_event()
            if nxt is None:
                break
            t, c = nxt
            if t > now + TIME_RTOL * max(now, 1.0):
                break
            heapq.heappop(self._events)
            c.advance(now)
            finished.extend(self._due(c, now))
            self._mark_dirty(c)
        flows: list[Flow] = []
        for s in finished:
            flow = self._flows[s]
            if flow is not None:
                flows.append(flow)
        self._release(finished)
        self._resolve()
        for flow in flows:
            flow.end_s = now
            flow.done.succeed(flow)

    # ------------------------------------------------------------- inspection
    def snapshot(self) -> dict[str, Any]:
        """Arrays describing the current allocation (for tests and probes)."""
        self.solve_now()
        self._materialise()
        active = np.flatnonzero(self._active)
        return {
            "slots": active,
            "rates_Bps": self._priority[active] * self._level[active],
            "levels": self._level[active],
            "level_caps": self._level_cap[active],
            "priorities": self._priority[active],
            "path_con": self._path_con[active],
            "path_coef": self._path_coef[active],
            "con_capacity": self._con_cap[: self._n_cons].copy(),
            "con_load": self._con_load[: self._n_cons].copy(),
        }
