"""Flow fidelity: data moves as flows over paths of capacity-limited resources.

A :class:`FlowNetwork` holds resources (capacities in bytes/s and/or ops/s),
shared path segments, and flows (a size, a path of ``(resource, weight)`` and
``(segment, weight)`` pairs, an optional rate cap, an operation size and a share
priority).  Rates are the weighted max-min
fair allocation (:mod:`flashsim.engine.maxmin`), re-solved when
a flow starts or ends or a capacity changes.  Each flow's completion is a SimPy
event.  The changes of one instant are solved together, by a zero-delay event
after them.  A caller that is the only callback of the event it runs in, with
nothing else due at the instant (:meth:`FlowNetwork.nothing_else_due`), may
start a flow and solve it at once, and wait for it by a callback the network
calls at its completion (:meth:`FlowNetwork.when_done`): the same solves and
callbacks at the same points of the event order, without an event each (a
replayed call).

Re-solving is incremental and exact, at two depths.  Flows that share a
bottleneck share a level and a virtual clock (:mod:`flashsim.engine.flowclasses`):
a start, end or capacity change that leaves the set of saturated constraints as
it was costs O(path length x log N), whatever the number of flows sharing the
bottleneck, and completions come from a heap of virtual finish tags.  When the
bottleneck structure changes, the exact flow-level repair of
:class:`flashsim.engine.flowstate.FlowState` re-solves the part of the system
the change reaches, and the classes are rebuilt from its result.  Only a
change to many flows at once (more than a quarter of the active flows, and
more than :data:`~flashsim.engine.flowstate.FULL_SOLVE_MIN_FLOWS`) is solved
from scratch, which costs every constraint of the model: a lone flow starting
in an idle system costs its own path.

A :class:`Segment` is a sub-path many flows share, stored once (a stripe set's
S server paths): a flow using it costs what its own path costs, so striping a
rank's bytes over S targets costs O(ranks + targets), not O(ranks x targets).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
import simpy

from flashsim.engine.flowclasses import ClassLayer, FlowClass
from flashsim.engine.flowstate import FULL_SOLVE_MIN_FLOWS, wants_full_solve
from flashsim.engine.maxmin import FloatArray

#: A flow whose remaining bytes fall below this fraction of its size is complete.
COMPLETION_RTOL = 1e-9
#: Relative time slack within which completions count as simultaneous.
TIME_RTOL = 1e-12
#: Paths whose entries :meth:`FlowNetwork.start_flow` remembers (emptied when full): a
#: replay starts every call of a kind on the same path tuple.
PATH_MEMO_KEPT = 4096


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
    kind : str or None
        Component type for reports (``"nic"``, ``"drive data"``); ``None`` to
        let :func:`flashsim.measure.bottlenecks.infer_kind` infer it from the name.
    """

    name: str
    capacity_Bps: float | None
    capacity_ops: float | None
    kind: str | None = None
    _con_bytes: int = field(default=0, repr=False)
    _con_ops: int = field(default=0, repr=False)


@dataclass(frozen=True)
class ResourceUsage:
    """Cumulative work and capacity-time of every resource at one simulated time.

    Column 0 is the bandwidth constraint (bytes), column 1 the operation-rate
    constraint (operations, or busy seconds for a resource whose capacity is in
    busy-seconds/s).  The mean utilisation of a constraint between two
    snapshots is the difference of ``work`` over the difference of
    ``capacity_time``; see :mod:`flashsim.measure.bottlenecks`.

    Attributes
    ----------
    time_s : float
        Simulated time of the snapshot (s).
    resources : list of Resource
        Every resource, in order of creation (rows of the arrays).
    work : ndarray, shape (n, 2)
        Work that has crossed each constraint so far (B; operations).
    capacity_time : ndarray, shape (n, 2)
        Integral of each constraint's capacity over simulated time since the
        resource was created (B; operations): capacity changes are included.
    limited : ndarray of bool, shape (n, 2)
        Whether the resource has that constraint at all.
    """

    time_s: float
    resources: list[Resource]
    work: FloatArray
    capacity_time: FloatArray
    limited: npt.NDArray[np.bool_]


@dataclass(eq=False)
class Segment:
    """A sub-path shared by many flows, stored once; see :meth:`FlowNetwork.add_segment`.

    Attributes
    ----------
    name : str
        Dotted name, e.g. ``perlmutter.stripes.0-273.write``.
    size : int
        Number of (resource, weight) entries it holds.
    """

    name: str
    size: int
    _bytes: int = field(default=-1, repr=False)
    _ops: int = field(default=-1, repr=False)


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
    start_s: float
    end_s: float = float("nan")
    _slot: int = field(default=-1, repr=False)
    _network: FlowNetwork | None = field(default=None, repr=False)
    # The done event; None until asked for if the flow was started with lazy_done.
    _done: simpy.Event | None = field(default=None, repr=False)
    # What FlowNetwork.when_done registered while no done event existed.
    _on_end: Callable[[Flow], None] | None = field(default=None, repr=False)

    @property
    def done(self) -> simpy.Event:
        """Succeeds (with this flow as value) when the last byte has moved."""
        done = self._done
        if done is None:
            assert self._network is not None
            done = self._done = simpy.Event(self._network.env)
            if self.end_s == self.end_s:  # it ended with nothing waiting on the event
                done.succeed(self)
        return done

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


class FlowNetwork(ClassLayer):
    """Resources, segments, flows and their max-min fair rates inside a SimPy environment.

    Parameters
    ----------
    env : simpy.Environment
        The environment whose clock drives the flows.
    """

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.resources: dict[str, Resource] = {}
        self.segments: dict[str, Segment] = {}
        super().__init__()
        # Slots of flows started since the last solve, in start order, each once: a dict
        # used as an ordered set, so a slot freed before the solve (a flow cancelled as
        # soon as started) and reused by the next start is not listed, and joined, twice.
        self._pending_new: dict[int, None] = {}
        self._pending_full = False
        self._solve_scheduled = False
        # The last completion timer set; earlier ones are stale.
        self._timer_event: simpy.Event | None = None
        self._rate_listeners: list[Callable[[], None]] = []
        # Per resource (creation order): its bandwidth and ops constraints (0 if none).
        self._res_cons: list[tuple[int, int]] = []
        self._res_cons_arr = np.zeros((0, 2), dtype=np.int64)
        # Capacity-time bookkeeping: integral of capacity of constraint k up to t is
        # _con_cap[k] * t + _cap_corr.get(k, 0), kept continuous across creation and
        # set_capacity.
        self._cap_corr: dict[int, float] = {}
        # id(path) -> (path, op_size_B, own constraints, coefficients, segments, and the
        # first two as arrays): a path tuple's entries, checked and built once.
        self._path_memo: dict[int, tuple[Any, ...]] = {}

    # ------------------------------------------------------------------ resources
    def add_resource(
        self,
        name: str,
        capacity_Bps: float | None = None,
        capacity_ops: float | None = None,
        kind: str | None = None,
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
        kind : str, optional
            Component type for bottleneck reports; inferred from ``name`` when
            not given (:func:`flashsim.measure.bottlenecks.infer_kind`).
        """
        if name in self.resources:
            raise ValueError(f"resource name(={name!r}) is already used")
        for label, value in (("capacity_Bps", capacity_Bps), ("capacity_ops", capacity_ops)):
            if value is not None and not (value >= 0 and np.isfinite(value)):
                raise ValueError(f"{name}: {label}(={value}) must be a finite number >= 0")
        res = Resource(name, capacity_Bps, capacity_ops, kind)
        now = float(self.env.now)
        if capacity_Bps is not None:
            res._con_bytes = self._new_constraint(capacity_Bps)
            if now:
                self._cap_corr[res._con_bytes] = -float(capacity_Bps) * now
        if capacity_ops is not None:
            res._con_ops = self._new_constraint(capacity_ops)
            if now:
                self._cap_corr[res._con_ops] = -float(capacity_ops) * now
        self.resources[name] = res
        self._res_cons.append((res._con_bytes, res._con_ops))
        return res

    def add_segment(self, name: str, path: Sequence[tuple[Resource, float]]) -> Segment:
        """Store a sub-path many flows share and return it.

        A flow with ``(segment, w)`` in its path consumes ``w * weight`` bytes
        per user byte on each resource of the segment (and ``w * weight /
        op_size_B`` operations on those limiting operations/s), exactly as if
        the entries were in its own path, but at the cost of one entry.

        Parameters
        ----------
        name : str
            Unique dotted name.
        path : sequence of (Resource, float)
            Resources and weights (> 0), e.g. the S server paths of a stripe set,
            each with weight 1/S.
        """
        if name in self.segments:
            raise ValueError(f"segment name(={name!r}) is already used")
        by_bytes: dict[int, float] = {}
        by_ops: dict[int, float] = {}
        for resource, weight in path:
            if not (weight > 0 and np.isfinite(weight)):
                raise ValueError(
                    f"segment {name!r}: weight(={weight}) on {resource.name} "
                    "must be a finite number > 0"
                )
            if resource._con_bytes:
                by_bytes[resource._con_bytes] = by_bytes.get(resource._con_bytes, 0.0) + weight
            if resource._con_ops:
                by_ops[resource._con_ops] = by_ops.get(resource._con_ops, 0.0) + weight
        if not by_bytes and not by_ops:
            raise ValueError(f"segment {name!r}: has no limited resource")
        seg = Segment(name, len(path))
        if by_bytes:
            seg._bytes = self._new_segment(by_bytes)
        if by_ops:
            seg._ops = self._new_segment(by_ops)
        self.segments[name] = seg
        return seg

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
            old = float(self._con_cap[con])
            self._cap_corr[con] = self._cap_corr.get(con, 0.0) + (old - value) * self.env.now
            self._con_cap[con] = value
            self._cap_f[con] = float(self._con_cap[con])
            setattr(resource, label, float(value))
            self._capacity_changed(con)
        self._schedule_solve()

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
        return self._bytes(resource._con_bytes) if resource._con_bytes else 0.0

    def usage(self) -> ResourceUsage:
        """Cumulative work and capacity-time of every resource now (vectorised).

        Reads the classes' virtual clocks only: pending changes are not solved,
        so taking a snapshot never changes the run.
        """
        if self._res_cons_arr.shape[0] != len(self._res_cons):
            self._res_cons_arr = np.array(self._res_cons, dtype=np.int64).reshape(-1, 2)
        cons = self._res_cons_arr
        now = float(self.env.now)
        n = self._n_cons
        cap_time = self._con_cap[:n].copy()
        cap_time[0] = 0.0  # the padding sentinel's infinite capacity
        cap_time *= now
        if self._cap_corr:
            keys = np.fromiter(self._cap_corr, dtype=np.int64, count=len(self._cap_corr))
            vals = np.fromiter(self._cap_corr.values(), dtype=np.float64, count=keys.size)
            cap_time[keys] += vals
        return ResourceUsage(
            time_s=now,
            resources=list(self.resources.values()),
            work=self._work_done()[cons],
            capacity_time=cap_time[cons],
            limited=cons > 0,
        )

    def limit_bytes(self) -> dict[int | str, float]:
        """User bytes moved so far per limit: bottleneck constraint or cap label.

        Keys are a constraint index (``int``, a resource's bandwidth or
        operation constraint: :attr:`ResourceUsage` rows via ``_res_cons``)
        for bytes moved while that saturated constraint set the flow's rate,
        or a cap label (``str``) for bytes moved at the flow's own rate cap;
        see :mod:`flashsim.engine.limitledger`.  Like :meth:`usage`, it only
        reads the classes' clocks.
        """
        vt = self._class_clocks_now()
        active = np.flatnonzero(self._active)
        cls = self._cls_of(active)
        classed = cls >= 0
        slots = active[classed]
        labels = self._ledger.labels
        out: dict[int | str, float] = {}
        totals = self._ledger.totals(slots, vt[cls[classed]], self._priority[slots])
        for key, moved in totals.items():
            name: int | str = key if key > 0 else labels[-key - 1]
            out[name] = out.get(name, 0.0) + moved
        return out

    def constraint_owner(self) -> dict[int, Resource]:
        """The resource each constraint index belongs to (for :meth:`limit_bytes` keys)."""
        owner: dict[int, Resource] = {}
        for res in self.resources.values():
            for con in (res._con_bytes, res._con_ops):
                if con:
                    owner[con] = res
        return owner

    # ---------------------------------------------------------------------- flows
    def start_flow(
        self,
        size_B: float,
        path: Sequence[tuple[Resource | Segment, float]],
        rate_cap_Bps: float | None = None,
        op_size_B: float | None = None,
        priority: float = 1.0,
        name: str = "",
        cap_label: str | None = None,
        defer: bool = True,
        lazy_done: bool = False,
    ) -> Flow:
        """Start moving ``size_B`` bytes along ``path`` and return the flow.

        Parameters
        ----------
        size_B : float
            Bytes to move (> 0).
        path : sequence of (Resource or Segment, float)
            Resources and shared segments crossed, and the weight on each:
            bytes consumed there per user byte (> 0), e.g. 1.25 on the drives
            of a RAID6 8+2 write.
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
        cap_label : str, optional
            What ``rate_cap_Bps`` stands for, for reports of what limited an
            interval (:meth:`limit_bytes`): ``"<kind>: <what>"``, e.g.
            ``"concurrency: rank window q*t/L"``; ``None`` for ``"rate cap"``.
        defer : bool
            Solve the change by a zero-delay event, with every other change of
            this instant (the default).  ``False``: the caller calls
            :meth:`solve_now` itself before it returns to the event loop, which
            is that event's solve one event sooner when nothing else is due now
            (:meth:`nothing_else_due`) and the caller is the only callback of
            the event it runs in (no event is made and stepped per start).
        lazy_done : bool
            Make the ``done`` event only when something asks for it: a caller
            that waits by :meth:`when_done` then costs no event per flow.
        """
        if not (size_B > 0 and math.isfinite(size_B)):
            raise ValueError(f"flow {name!r}: size_B(={size_B}) must be a finite number > 0")
        if not priority > 0:
            raise ValueError(f"flow {name!r}: priority(={priority}) must be > 0")
        if rate_cap_Bps is not None and not rate_cap_Bps > 0:
            raise ValueError(f"flow {name!r}: rate_cap_Bps(={rate_cap_Bps}) must be > 0")
        if op_size_B is not None and not (op_size_B > 0 and math.isfinite(op_size_B)):
            raise ValueError(f"flow {name!r}: op_size_B(={op_size_B}) must be a finite number > 0")
        memo = self._path_memo.get(id(path))
        if memo is not None and memo[0] is path and memo[1] == op_size_B:
            _path, _op, cons, coefs, segs_t, cons_arr, coefs_arr, own = memo
        else:
            cons, coefs, segs_t = self._path_entries(path, op_size_B, name)
            cons_arr = np.array(cons, dtype=np.int64)
            coefs_arr = np.array(coefs, dtype=np.float64)
            # Its (constraint, coefficient) pairs, made once for a path used again (a tuple
            # is kept here); a path given as a list is zipped when used.
            own = None
            if isinstance(path, tuple):
                own = tuple(zip(cons, coefs, strict=True))
                if len(self._path_memo) >= PATH_MEMO_KEPT:
                    self._path_memo.clear()
                self._path_memo[id(path)] = (
                    path,
                    op_size_B,
                    cons,
                    coefs,
                    segs_t,
                    cons_arr,
                    coefs_arr,
                    own,
                )
        cap = np.inf if rate_cap_Bps is None else float(rate_cap_Bps)
        if not cons and not segs_t and not math.isfinite(cap):
            raise ValueError(f"flow {name!r}: has neither a limited resource nor a rate cap")
        slot = self._alloc_slot(len(cons))
        # A free slot's row is zero (_grow_slots, _release): only its own entries are written
        # (its level is 0 and it has no segment until set here).
        n_own = len(cons)
        self._path_con[slot, :n_own] = cons_arr
        self._path_coef[slot, :n_own] = coefs_arr
        self._priority[slot] = priority
        self._level_cap[slot] = cap / priority
        self._ledger.label[slot] = self._ledger.label_id(cap_label)
        self._active[slot] = True
        if segs_t:
            self._has_seg[slot] = True
        self._segs[slot] = segs_t
        for g, _ in segs_t:
            self._seg_slots[g].add(slot)
        self._n_active += 1
        self._spec[slot] = (
            cons,
            coefs,
            float(priority),
            cap / priority,
            float(size_B),
            segs_t,
            own,
        )
        env = self.env
        flow = Flow(name, float(size_B), env.now, _slot=slot, _network=self)
        if not lazy_done:
            flow._done = simpy.Event(env)
        self._flows[slot] = flow
        self._pending_new[slot] = None
        self._index_recent.append(slot)
        if defer:
            self._schedule_solve()
        return flow

    def _path_entries(
        self,
        path: Sequence[tuple[Resource | Segment, float]],
        op_size_B: float | None,
        name: str,
    ) -> tuple[tuple[int, ...], tuple[float, ...], tuple[tuple[int, float], ...]]:
        """A path's own constraints and coefficients and its (segment, weight) pairs.

        Checks every weight and that ``op_size_B`` is given where operations
        are limited (``ValueError`` naming flow ``name`` otherwise).
        """
        coef_by_con: dict[int, float] = {}
        segs: list[tuple[int, float]] = []
        for element, weight in path:
            if not (weight > 0 and math.isfinite(weight)):
                raise ValueError(
                    f"flow {name!r}: weight(={weight}) on {element.name} "
                    "must be a finite number > 0"
                )
            if isinstance(element, Segment):
                if element._bytes >= 0:
                    segs.append((element._bytes, weight))
                if element._ops >= 0:
                    if op_size_B is None:
                        raise ValueError(
                            f"flow {name!r}: crosses segment {element.name}, which limits "
                            "operations/s, so op_size_B must be given"
                        )
                    segs.append((element._ops, weight / op_size_B))
                continue
            if element._con_bytes:
                coef_by_con[element._con_bytes] = coef_by_con.get(element._con_bytes, 0.0) + weight
            if element._con_ops:
                if op_size_B is None:
                    raise ValueError(
                        f"flow {name!r}: crosses {element.name}, which limits operations/s, "
                        "so op_size_B must be given"
                    )
                coef_by_con[element._con_ops] = (
                    coef_by_con.get(element._con_ops, 0.0) + weight / op_size_B
                )
        return tuple(coef_by_con), tuple(coef_by_con.values()), tuple(segs)

    def cancel_flow(self, flow: Flow) -> float:
        """Stop a flow before it completes; return the bytes it had moved.

        Its ``done`` event is never triggered.
        """
        if flow._network is not self or flow._slot < 0:
            raise ValueError(f"flow {flow.name!r} is not active in this network")
        slot = flow._slot
        moved = flow.size_B - self._remaining_of(slot)
        self._release([slot], self.env.now)
        if flow._done is None:
            flow._done = simpy.Event(self.env)  # never triggered
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

    def remove_rate_listener(self, callback: Callable[[], None]) -> None:
        """Stop calling ``callback`` (added by :meth:`add_rate_listener`)."""
        self._rate_listeners.remove(callback)

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

    def when_done(self, flow: Flow, callback: Callable[[Flow], None]) -> None:
        """Call ``callback(flow)`` when ``flow`` completes, as a callback of its ``done`` event.

        For a flow started with ``lazy_done`` that nothing else has asked the
        event of, no event is made: when nothing else is due at its completion,
        the network calls ``callback`` itself, at the point of the event order
        where the event's callbacks would have run (before any other flow's
        ``done`` that completes with it and has callbacks of its own).
        """
        done = flow._done
        if done is None:
            flow._on_end = callback
        else:
            done.callbacks.append(partial(_flow_ended, callback, flow))

    def nothing_else_due(self) -> bool:
        """Whether no event is due at this instant: a change made now would be solved next.

        Then a caller that is the only callback of the event it runs in may
        start a flow with ``defer=False`` and call :meth:`solve_now` at once: the
        same solve, with the same changes, as the zero-delay event would run.
        """
        return bool(self.env.peek() > self.env.now)

    def solve_now(self) -> None:
        """Apply pending changes and re-solve rates at the current time."""
        if self._pending_new or self._touched or self._touched_segs or self._pending_full:
            self._resolve()

    def rates_Bps(self, flows: Iterable[Flow]) -> FloatArray:
        """Current rates (bytes/s) of the given flows."""
        self.solve_now()
        return np.array([f.rate_Bps for f in flows])

    # ------------------------------------------------------------ flow internals
    def _rate_unsolved(self, slot: int) -> float:
        cid = self._cls[slot]
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
        cid = self._cls[slot]
        if cid < 0:
            return spec[4]
        vtime = self._classes[cid].vtime_at(self.env.now)
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

    def _release(self, slots: Sequence[int], now: float) -> None:
        """Remove flows from their classes and the slot arrays at time ``now`` (s)."""
        for s in slots:
            self._pending_new.pop(s, None)  # cancelled before it was ever solved
            spec = self._spec[s]
            if spec is not None:
                # Their load leaves _con_load when the flow-level arrays are next needed.
                self._load_stale.update(spec[0])
                stale_segs = self._load_stale_segs
                for g, _ in spec[5]:
                    stale_segs.add(g)
            if self._cls[s] >= 0:
                self._leave(s, now)
            else:
                spec = self._spec[s]
                if spec is not None:
                    self._touched.update(spec[0])
                    self._tight.update(spec[0])
                    self._touched_segs.update(g for g, _ in spec[5])
                    self._tight_segs.update(g for g, _ in spec[5])
            self._active[s] = False
            self._level[s] = 0.0
            self._path_con[s] = 0
            self._path_coef[s] = 0.0
            for g, _ in self._segs[s]:
                self._seg_slots[g].discard(s)
            self._has_seg[s] = False
            self._segs[s] = ()
            self._spec[s] = None
            self._n_active -= 1
            flow = self._flows[s]
            if flow is not None:
                flow._slot = -1
            self._flows[s] = None
            self._free_slots.append(s)

    # --------------------------------------------------------------- re-solving
    def _resolve(self) -> None:
        now = self.env.now
        new: list[int] = []
        if self._pending_new:
            for s in self._pending_new:  # (a loop: a comprehension is a call of its own)
                if self._active[s] and self._cls[s] < 0:
                    new.append(s)
            self._pending_new = {}
        if self._pending_full or (
            len(new) > FULL_SOLVE_MIN_FLOWS and wants_full_solve(len(new), self._n_active)
        ):
            self._flow_level_solve(new, full=True)
        elif self._fast_update(new, now):
            self._class_events += 1
        else:
            self._flow_level_solve(new, full=False)
        self._pending_full = False
        self._touched.clear()
        self._tight.clear()
        self._touched_segs.clear()
        self._tight_segs.clear()
        self._refreshed.clear()
        self._lost_bottlenecks.clear()
        classes = self._classes
        gens = self._gen
        events = self._events
        for cid in self._dirty:
            c = classes.get(cid)
            if c is None:
                continue
            # the class's next completion (s): its first live tag (stale ones dropped)
            tags = c.tags
            while tags:
                tag, gen, slot = tags[0]
                if gens[slot] == gen:
                    break
                heapq.heappop(tags)
            else:
                continue
            if c.mu <= 0.0:
                continue
            ahead = tag - c.vtime
            t = c.t_s + (0.0 if ahead < 0.0 else ahead) / c.mu  # (max(ahead, 0.0), inline)
            if t < np.inf:
                heapq.heappush(events, (t, cid, c.ver))
        self._dirty.clear()
        self._reschedule_completion(now)
        for listener in self._rate_listeners:
            listener()

    def _reschedule_completion(self, now: float) -> None:
        self._timer_event = None
        # the next completion: the first live entry (stale ones dropped)
        events = self._events
        classes = self._classes
        while events:
            t, cid, ver = events[0]
            c = classes.get(cid)
            if c is not None and c.ver == ver:
                break
            heapq.heappop(events)
        else:
            return
        # (Timeout itself: what env.timeout makes, without the bound-method call)
        delay = t - now
        event = simpy.Timeout(self.env, 0.0 if delay < 0.0 else delay)  # (max, inline)
        event.callbacks.append(self._on_timer_event)
        self._timer_event = event

    def _on_timer_event(self, event: simpy.Event) -> None:
        """A completion timer fired (stale unless it is the last one set)."""
        if event is self._timer_event:
            self._on_completion_timer()

    def _due(self, c: FlowClass, now: float) -> list[int]:
        """Pop the members of ``c`` that complete at ``now`` (within rounding)."""
        due: list[int] = []
        slack = c.mu * TIME_RTOL * (1.0 if now < 1.0 else now)  # (max(now, 1.0), inline)
        tags = c.tags
        gens = self._gen
        specs = self._spec
        while True:
            # the first live tag (stale ones dropped)
            while tags:
                tag, gen, slot = tags[0]
                if gens[slot] == gen:
                    break
                heapq.heappop(tags)
            else:
                return due
            spec = specs[slot]
            assert spec is not None
            remaining = spec[2] * (tag - c.vtime)
            least = spec[4] * COMPLETION_RTOL
            within = spec[2] * slack
            if remaining > (within if within > least else least):  # (max, inline)
                if due:
                    return due
                # not due now: its completion time (s) from the same live top tag
                mu = c.mu
                if mu <= 0.0 or c.t_s + max(tag - c.vtime, 0.0) / mu > now:
                    return due
            heapq.heappop(tags)
            due.append(slot)

    def _on_completion_timer(self) -> None:
        now = self.env.now
        finished: list[int] = []
        events = self._events
        classes = self._classes
        due_by = now + TIME_RTOL * (1.0 if now < 1.0 else now)  # (max(now, 1.0), inline)
        dirty = self._dirty
        while events:
            # the next completion: the first live entry (stale ones dropped)
            t, cid, ver = events[0]
            c = classes.get(cid)
            if c is None or c.ver != ver:
                heapq.heappop(events)
                continue
            if t > due_by:
                break
            heapq.heappop(events)
            if now > c.t_s:  # c.advance(now), inline
                c.vtime += c.mu * (now - c.t_s)
                c.t_s = now
            finished.extend(self._due(c, now))
            c.ver += 1  # self._mark_dirty(c), inline
            dirty.add(cid)
        flows: list[Flow] = []
        for s in finished:
            flow = self._flows[s]
            if flow is not None:
                flows.append(flow)
        self._release(finished, now)
        self._resolve()
        for flow in flows:
            flow.end_s = now
        # Flows waited for by when_done alone, ahead of any other: when nothing else is
        # due now, their done events would be the next ones stepped, so their callbacks
        # run here, after the other done events are triggered (as they would have been).
        direct = 0
        if flows and self.nothing_else_due():
            while direct < len(flows) and flows[direct]._done is None:
                if flows[direct]._on_end is None:
                    break
                direct += 1
        for flow in flows[direct:]:
            done = flow._done
            if done is None:
                done = flow._done = simpy.Event(self.env)
                on_end = flow._on_end
                if on_end is not None:
                    done.callbacks.append(partial(_flow_ended, on_end, flow))
            done.succeed(flow)
        for flow in flows[:direct]:
            on_end = flow._on_end
            assert on_end is not None
            on_end(flow)

    # ------------------------------------------------------------- inspection
    def snapshot(self) -> dict[str, Any]:
        """Arrays describing the current allocation (for tests and probes).

        ``path_con`` and ``path_coef`` hold each flow's entries with its
        segments expanded, padded with constraint 0.
        """
        self.solve_now()
        self._materialise()
        active = np.flatnonzero(self._active)
        owner, con, coef = self._entries(active)
        counts = np.bincount(owner, minlength=active.size)
        width = int(counts.max()) if counts.size else 1
        col = np.arange(owner.size) - np.repeat(np.cumsum(counts) - counts, counts)
        path_con = np.zeros((active.size, max(width, 1)), dtype=np.int64)
        path_coef = np.zeros((active.size, max(width, 1)))
        path_con[owner, col] = con
        path_coef[owner, col] = coef
        return {
            "slots": active,
            "rates_Bps": self._priority[active] * self._level[active],
            "levels": self._level[active],
            "level_caps": self._level_cap[active],
            "priorities": self._priority[active],
            "path_con": path_con,
            "path_coef": path_coef,
            "con_capacity": self._con_cap[: self._n_cons].copy(),
            "con_load": self._con_load[: self._n_cons].copy(),
        }


def _flow_ended(callback: Callable[[Flow], None], flow: Flow, _event: simpy.Event) -> None:
    """A ``done`` event's callback that calls ``callback(flow)`` (see FlowNetwork.when_done)."""
    callback(flow)
