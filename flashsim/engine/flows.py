"""Flow fidelity: data moves as flows over paths of capacity-limited resources.

A :class:`FlowNetwork` holds resources (capacities in bytes/s and/or ops/s)
and flows (a size, a path of ``(resource, weight)`` pairs, an optional rate
cap, an operation size and a share priority).  Rates are the weighted max-min
fair allocation (:func:`flashsim.engine.maxmin.solve_maxmin`), re-solved when
a flow starts or ends or a capacity changes.  Each flow's completion is a SimPy
event.

Re-solving is incremental and exact.  After a change, a set ``S`` of flows is
re-solved on the capacity the other flows leave; then every flow touching a
constraint whose state may have changed is checked against the max-min
optimality condition (at its cap, or crossing a saturated constraint on which
no flow has a higher level).  Violators join ``S`` and the step repeats.  A
feasible allocation in which every flow passes that check is the unique
max-min fair allocation, so the result equals a full re-solve while the work is
proportional to the part of the system the change reaches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import simpy

from flashsim.engine.maxmin import FloatArray, IntArray, solve_maxmin

#: Relative slack below capacity at which a constraint counts as saturated.
SATURATION_RTOL = 1e-9
#: Relative slack for comparing flow levels in the optimality check.
LEVEL_RTOL = 1e-9
#: A flow whose remaining bytes fall below this fraction of its size is complete.
COMPLETION_RTOL = 1e-9
#: Changes touching more than this fraction of active flows trigger a full solve.
FULL_SOLVE_FRACTION = 0.25


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


class FlowNetwork:
    """Resources, flows and their max-min fair rates inside a SimPy environment.

    Parameters
    ----------
    env : simpy.Environment
        The environment whose clock drives the flows.
    """

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.resources: dict[str, Resource] = {}
        # Constraint arrays; index 0 is a sentinel with infinite capacity used as padding.
        self._con_cap = np.full(64, np.inf)
        self._con_load = np.zeros(64)
        self._con_max_level = np.zeros(64)
        self._con_bytes = np.zeros(64)  # integral of load over time (units of the constraint)
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
        self._remaining = np.zeros(0)
        self._size = np.zeros(0)
        self._active = np.zeros(0, dtype=bool)
        self._flows: list[Flow | None] = []
        self._free_slots: list[int] = []
        self._grow_slots(64)
        self._last_sync_s = env.now
        self._pending_new: list[int] = []
        self._pending_touched: list[IntArray] = []
        self._pending_full = False
        self._solve_scheduled = False
        self._timer_token = 0
        #: Counters for benchmarks and diagnostics.
        self.stats: dict[str, int] = {"full_solves": 0, "repairs": 0, "repair_flows": 0}
        self._rate_listeners: list[Callable[[], None]] = []

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
        self._sync()
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
            self._pending_touched.append(np.array([con], dtype=np.int64))
        self._schedule_solve()

    def utilization(self, resource: Resource) -> float:
        """Current load over capacity of the resource's tightest constraint (0..1)."""
        cons = [c for c in (resource._con_bytes, resource._con_ops) if c]
        if not cons:
            return 0.0
        self.solve_now()
        with np.errstate(divide="ignore", invalid="ignore"):
            util = [
                self._con_load[c] / self._con_cap[c] if self._con_cap[c] > 0 else 0.0 for c in cons
            ]
        return float(max(util))

    def throughput_Bps(self, resource: Resource) -> float:
        """Current bytes/s through the resource (weighted by its path weights)."""
        self.solve_now()
        return float(self._con_load[resource._con_bytes]) if resource._con_bytes else 0.0

    def bytes_moved(self, resource: Resource) -> float:
        """Bytes that have crossed the resource's bandwidth constraint so far."""
        self._sync()
        return float(self._con_bytes[resource._con_bytes]) if resource._con_bytes else 0.0

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
        self._sync()
        slot = self._alloc_slot(len(coef_by_con))
        cons = np.fromiter(coef_by_con.keys(), dtype=np.int64, count=len(coef_by_con))
        self._path_con[slot, :] = 0
        self._path_coef[slot, :] = 0.0
        self._path_con[slot, : cons.size] = cons
        self._path_coef[slot, : cons.size] = np.fromiter(coef_by_con.values(), dtype=np.float64)
        self._priority[slot] = priority
        self._level_cap[slot] = cap / priority
        self._level[slot] = 0.0
        self._remaining[slot] = size_B
        self._size[slot] = size_B
        self._active[slot] = True
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
        self._sync()
        slot = flow._slot
        moved = float(self._size[slot] - self._remaining[slot])
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
        return float(self._priority[slot] * self._level[slot])

    @property
    def active_flows(self) -> int:
        """Number of flows in progress."""
        return int(self._active.sum())

    def solve_now(self) -> None:
        """Apply pending changes and re-solve rates at the current time."""
        if self._pending_new or self._pending_touched or self._pending_full:
            self._sync()
            self._resolve()

    def rates_Bps(self, flows: Iterable[Flow]) -> FloatArray:
        """Current rates (bytes/s) of the given flows."""
        self.solve_now()
        return np.array([f.rate_Bps for f in flows])

    # ---------------------------------------------------------------- internals
    def _new_constraint(self, capacity: float) -> int:
        if self._n_cons == self._con_cap.size:
            grow = self._con_cap.size
            self._con_cap = np.concatenate([self._con_cap, np.full(grow, np.inf)])
            self._con_load = np.concatenate([self._con_load, np.zeros(grow)])
            self._con_max_level = np.concatenate([self._con_max_level, np.zeros(grow)])
            self._con_bytes = np.concatenate([self._con_bytes, np.zeros(grow)])
            self._con_saturated = np.concatenate([self._con_saturated, np.zeros(grow, dtype=bool)])
        idx = self._n_cons
        self._con_cap[idx] = capacity
        self._n_cons += 1
        return idx

    def _grow_slots(self, extra: int) -> None:
        old = self._active.size
        width = self._path_con.shape[1]
        self._path_con = np.vstack([self._path_con, np.zeros((extra, width), dtype=np.int64)])
        self._path_coef = np.vstack([self._path_coef, np.zeros((extra, width))])
        for attr in ("_priority", "_level_cap", "_level", "_remaining", "_size"):
            setattr(self, attr, np.concatenate([getattr(self, attr), np.zeros(extra)]))
        self._active = np.concatenate([self._active, np.zeros(extra, dtype=bool)])
        self._flows.extend([None] * extra)
        self._free_slots.extend(range(old + extra - 1, old - 1, -1))

    def _alloc_slot(self, path_len: int) -> int:
        if path_len > self._path_con.shape[1]:
            pad = path_len - self._path_con.shape[1]
            n = self._path_con.shape[0]
            self._path_con = np.hstack([self._path_con, np.zeros((n, pad), dtype=np.int64)])
            self._path_coef = np.hstack([self._path_coef, np.zeros((n, pad))])
        if not self._free_slots:
            self._grow_slots(max(64, self._active.size))
        return self._free_slots.pop()

    def _rate_of(self, slot: int) -> float:
        self.solve_now()
        return float(self._priority[slot] * self._level[slot]) if self._active[slot] else 0.0

    def _remaining_of(self, slot: int) -> float:
        self._sync()
        return float(self._remaining[slot])

    def _sync(self) -> None:
        """Advance remaining bytes and per-constraint byte counters to now."""
        dt = self.env.now - self._last_sync_s
        if dt > 0:
            active = np.flatnonzero(self._active)
            if active.size:
                rate = self._priority[active] * self._level[active]
                self._remaining[active] -= rate * dt
            self._con_bytes[: self._n_cons] += self._con_load[: self._n_cons] * dt
        self._last_sync_s = self.env.now

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
        """Remove flows from the allocation and mark their constraints touched."""
        arr = np.asarray(slots, dtype=np.int64)
        cons = self._path_con[arr]
        coefs = self._path_coef[arr]
        rates = self._priority[arr] * self._level[arr]
        np.subtract.at(self._con_load, cons.reshape(-1), (coefs * rates[:, None]).reshape(-1))
        self._con_load[0] = 0.0
        self._pending_touched.append(np.unique(cons[cons > 0]))
        self._active[arr] = False
        self._level[arr] = 0.0
        self._path_con[arr] = 0
        self._path_coef[arr] = 0.0
        for s in arr.tolist():
            flow = self._flows[s]
            if flow is not None:
                flow._slot = -1
            self._flows[s] = None
            self._free_slots.append(s)

    def _resolve(self) -> None:
        new = np.array(self._pending_new, dtype=np.int64)
        touched = (
            np.unique(np.concatenate(self._pending_touched))
            if self._pending_touched
            else np.zeros(0, dtype=np.int64)
        )
        self._pending_new = []
        self._pending_touched = []
        n_active = int(self._active.sum())
        if self._pending_full or new.size > FULL_SOLVE_FRACTION * max(n_active, 1):
            self._full_solve()
        else:
            self._repair(new, touched)
        self._pending_full = False
        self._reschedule_completion()
        for listener in self._rate_listeners:
            listener()

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

    def _repair(self, new: IntArray, touched: IntArray) -> None:
        """Re-solve exactly, starting from the new flows and the touched constraints."""
        self.stats["repairs"] += 1
        n_active = int(self._active.sum())
        in_s = np.zeros(self._active.size, dtype=bool)
        in_s[new] = True
        changed = touched
        solved = np.zeros(0, dtype=np.int64)
        while True:
            s_slots = np.flatnonzero(in_s)
            if s_slots.size > FULL_SOLVE_FRACTION * n_active:
                self._full_solve()
                return
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
                return
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

    def _reschedule_completion(self) -> None:
        self._timer_token += 1
        active = np.flatnonzero(self._active)
        if active.size == 0:
            return
        rate = self._priority[active] * self._level[active]
        with np.errstate(divide="ignore"):
            ttc = np.where(rate > 0, np.maximum(self._remaining[active], 0.0) / rate, np.inf)
        dt = float(ttc.min())
        if not np.isfinite(dt):
            return
        token = self._timer_token
        event = self.env.timeout(dt)
        event.callbacks.append(lambda _ev: self._on_completion_timer(token))

    def _on_completion_timer(self, token: int) -> None:
        if token != self._timer_token:
            return
        self._sync()
        active = np.flatnonzero(self._active)
        tol = self._size[active] * COMPLETION_RTOL
        rate = self._priority[active] * self._level[active]
        # Also finish flows that would complete within a rounding error of now.
        finished = active[
            (self._remaining[active] <= tol)
            | ((rate > 0) & (self._remaining[active] <= rate * 1e-12 * max(self.env.now, 1.0)))
        ]
        flows: list[Flow] = []
        for s in finished.tolist():
            flow = self._flows[s]
            if flow is not None:
                flows.append(flow)
        if finished.size:
            self._remaining[finished] = 0.0
            self._release(finished.tolist())
        self._resolve()
        for flow in flows:
            flow.end_s = self.env.now
            flow.done.succeed(flow)

    # ------------------------------------------------------------- inspection
    def snapshot(self) -> dict[str, Any]:
        """Arrays describing the current allocation (for tests and probes)."""
        self.solve_now()
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
