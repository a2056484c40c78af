"""What limited a phase, when: one limiter per part of the phase and per time window.

A phase's mean utilisation (:mod:`flashsim.measure.bottlenecks`) says little
of a long or composite phase: a checkpoint that saturates the drives for
135 s of a 3,900 s production hour averages 3.5 %.  A :class:`LimitRecorder`
reads the simulation's cumulative counters during the phase:

* at every part boundary a phase announces
  (:meth:`flashsim.engine.simulation.Simulation.begin_part`: io500's
  sub-phases, the set of jobs running together);
* at time-window edges, on the first re-solve at or after each edge
  (:meth:`flashsim.engine.flows.FlowNetwork.add_rate_listener`): windows
  start :data:`FIRST_WINDOW_S` wide and double whenever more than
  :data:`MAX_WINDOWS` are held (every other window edge is dropped, which
  merges pairs exactly since the counters are cumulative).

Each interval between two readings gets a limiter, by the bytes moved in it
(the flow network's :meth:`~flashsim.engine.flows.FlowNetwork.limit_bytes`):
bytes move either in a class whose rate a saturated constraint sets, or at
the flows' own rate cap.  Bytes are summed per resource kind and per cap
label, and the largest sum names the limiter: a resource kind (its busiest
member's name when it has one member, ``"<kind> x<n>"`` otherwise, with
their mean utilisation), or the latency/concurrency bound named where the cap
was created (``"concurrency: rank window q*t/L"``).  An interval in which no
flow moved (request fidelity) is limited by a queue whose utilisation
reached :data:`~flashsim.measure.bottlenecks.BOTTLENECK_UTILIZATION`, or
else by the closed loops (requests in flight per client), or is idle.  An
interval whose flows met a resource bottleneck that was nonetheless busy less
than :data:`PACED_UTILIZATION` of the interval is paced by the workload
(:data:`PACED`: its arrivals and gaps between calls), not by the resource.
Consecutive intervals of one part with the same kind of limit, saturated or not, are merged (their
limiter is read again over the merged interval).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from flashsim.engine.flows import Resource
from flashsim.engine.maxmin import FloatArray
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation
from flashsim.measure.bottlenecks import (
    BOTTLENECK_UTILIZATION,
    UsageMark,
    flow_utilization,
    infer_kind,
    mark,
    queue_utilization,
)
from flashsim.measure.results import IntervalLimit, PhaseResult

#: Width of the first time windows (s); they double as a phase runs long.
FIRST_WINDOW_S = 1.0
#: Time windows held before pairs are merged (part boundaries are always kept).
MAX_WINDOWS = 64
#: Mean utilisation (dimensionless) of the resources an interval's flows were bottlenecked
#: at below which the interval counts as paced by the workload: the flows met a bottleneck
#: while they ran, but ran for less than half the interval.
PACED_UTILIZATION = 0.5
#: Limiter of such an interval (its utilisation is the bottleneck resources' mean).
PACED = "offered load: the workload's pace (arrivals, gaps)"
#: Limiter of an interval of request fidelity whose queues all stayed below saturation.
CLOSED_LOOP = "closed loop (requests in flight per client)"


@dataclass(frozen=True)
class _Reading:
    """The counters at one time: resource usage and bytes per limit."""

    usage: UsageMark
    limit_bytes: dict[int | str, float]
    label: str
    boundary: bool
    analytic: str | None = None


def _merge_key(limit: IntervalLimit) -> tuple[str, str, bool]:
    """Intervals of one part, limit kind and saturation merge into one.

    Idle windows count as the workload's pace (the gaps between its calls).
    """
    saturated = limit.utilization is not None and limit.utilization >= BOTTLENECK_UTILIZATION
    kind = "offered load" if limit.kind == "idle" else limit.kind
    return limit.label, kind, saturated


def _kind_of(element: Resource | FifoQueue) -> str:
    """A resource's or queue's kind: the one it was given, else inferred from its name."""
    return element.kind or infer_kind(element.name)


def _cap_kind(label: str) -> str:
    """The kind of a cap label ``"<kind>: <what>"`` (``"rate cap"`` without a colon)."""
    head, sep, _ = label.partition(":")
    return head.strip() if sep else "rate cap"


class LimitRecorder:
    """Reads a simulation's counters during one phase; see the module docstring.

    Parameters
    ----------
    sim : Simulation
        The simulation the phase runs in.
    start : UsageMark, optional
        The counters at the start of the phase, when already read.
    """

    def __init__(self, sim: Simulation, start: UsageMark | None = None) -> None:
        self.sim = sim
        self.t0_s = sim.now
        self.window_s = FIRST_WINDOW_S
        self.next_edge_s = self.t0_s + self.window_s
        self.label = ""
        self.analytic: str | None = None
        first = start if start is not None and start.time_s == self.t0_s else mark(sim)
        self.readings: list[_Reading] = [_Reading(first, sim.flows.limit_bytes(), "", True)]
        self._row_of: dict[int, int] = {}  # id(flow resource) -> its row (see _rows)
        sim.flows.add_rate_listener(self._on_rates)
        sim.add_part_listener(self._on_part)

    def _read(self, boundary: bool, usage: UsageMark | None = None) -> None:
        now = usage if usage is not None else mark(self.sim)
        reading = _Reading(now, self.sim.flows.limit_bytes(), self.label, boundary, self.analytic)
        if self.readings[-1].usage.time_s == now.time_s:
            # Two readings at one instant: the later one stands (and keeps a boundary).
            prev = self.readings.pop()
            reading = _Reading(
                now, reading.limit_bytes, self.label, boundary or prev.boundary, self.analytic
            )
        self.readings.append(reading)

    def _rows(self, resources: list[Resource]) -> dict[int, int]:
        """Row of every flow resource of ``resources`` by ``id``, built once per recorder.

        The flow network only ever appends resources (a resource keeps its row
        for the whole run), so the map made for one reading is extended with the
        resources made since, never rebuilt.
        """
        for row in range(len(self._row_of), len(resources)):
            self._row_of[id(resources[row])] = row
        return self._row_of

    def _on_rates(self) -> None:
        now = self.sim.now
        if now < self.next_edge_s:
            return
        self._read(boundary=False)
        self.next_edge_s = now + self.window_s
        windows = sum(1 for r in self.readings if not r.boundary)
        if windows > MAX_WINDOWS:
            kept: list[_Reading] = []
            odd = False
            for r in self.readings:
                if r.boundary:
                    kept.append(r)
                    continue
                if odd:
                    kept.append(r)
                odd = not odd
            self.readings = kept
            self.window_s *= 2.0

    def _on_part(self, label: str, analytic: str | None) -> None:
        self._read(boundary=True)
        self.label = label
        self.analytic = analytic
        # The reading opens the part: it carries the new label.
        last = self.readings[-1]
        self.readings[-1] = _Reading(last.usage, last.limit_bytes, label, True, analytic)

    def finish(self, end: UsageMark | None = None) -> list[IntervalLimit]:
        """Stop listening and return what limited each interval, in time order.

        Parameters
        ----------
        end : UsageMark, optional
            The counters at the end of the phase, when already read.
        """
        self.sim.flows.remove_rate_listener(self._on_rates)
        self.sim.remove_part_listener(self._on_part)
        self._read(boundary=True, usage=end)
        owner = self.sim.flows.constraint_owner()
        spans = [(a, b) for a, b in pairwise(self.readings) if b.usage.time_s > a.usage.time_s]
        out: list[IntervalLimit] = []
        run_start: _Reading | None = None
        run_limit: IntervalLimit | None = None
        for a, b in spans:
            limit = self._limit(a, b, owner)
            if (
                run_start is not None
                and run_limit is not None
                and _merge_key(run_limit) == _merge_key(limit)
            ):
                run_limit = self._limit(run_start, b, owner)
                continue
            if run_limit is not None:
                out.append(run_limit)
            run_start, run_limit = a, limit
        if run_limit is not None:
            out.append(run_limit)
        return out

    def _limit(self, a: _Reading, b: _Reading, owner: dict[int, Resource]) -> IntervalLimit:
        """The limiter of the interval between readings ``a`` and ``b``."""
        t0, t1 = a.usage.time_s - self.t0_s, b.usage.time_s - self.t0_s
        flow_util = flow_utilization(a.usage.flow, b.usage.flow)
        row_of = self._rows(b.usage.flow.resources)
        groups: dict[str, float] = {}
        members: dict[str, dict[int, float]] = {}  # kind -> resource row -> bytes
        total = 0.0
        for key, after in b.limit_bytes.items():
            moved = after - a.limit_bytes.get(key, 0.0)
            if moved <= 0.0:
                continue
            total += moved
            if isinstance(key, str):
                groups[f"cap:{key}"] = groups.get(f"cap:{key}", 0.0) + moved
                continue
            res = owner.get(key)
            if res is None:
                continue
            kind = _kind_of(res)
            groups[f"res:{kind}"] = groups.get(f"res:{kind}", 0.0) + moved
            row = row_of[id(res)]
            by_row = members.setdefault(kind, {})
            by_row[row] = by_row.get(row, 0.0) + moved
        resources = b.usage.flow.resources
        hot = np.flatnonzero(flow_util >= BOTTLENECK_UTILIZATION).tolist()
        hot_kinds: dict[str, list[int]] = {}
        for r in hot:
            hot_kinds.setdefault(_kind_of(resources[r]), []).append(r)
        if hot_kinds and total > 0.0:
            # A saturated resource limits the interval, before any cap (a cap that ties
            # with it is the resource's rate too); of several kinds, the one most bytes
            # moved under, then the one most work crossed.
            work = b.usage.flow.work[:, 0]
            before = a.usage.flow.work[:, 0]
            crossed = {
                kind: sum(float(work[r] - (before[r] if r < before.size else 0.0)) for r in rows)
                for kind, rows in hot_kinds.items()
            }
            name = max(hot_kinds, key=lambda k: (groups.get(f"res:{k}", 0.0), crossed[k], k))
            rows_hot = dict.fromkeys(hot_kinds[name], 0.0)
            rows_hot.update(members.get(name, {}))
            return self._resource_limit(
                a, t0, t1, name, rows_hot, flow_util, resources, groups, total
            )
        if total > 0.0 and groups:
            top = max(groups, key=lambda g: (groups[g], g))
            what, name = top.split(":", 1)
            if what == "cap":
                share = groups[top] / total
                return IntervalLimit(t0, t1, a.label, name, _cap_kind(name), None, share)
            limit = self._resource_limit(
                a, t0, t1, name, dict(members[name]), flow_util, resources, groups, total
            )
            if limit.utilization is not None and limit.utilization < PACED_UTILIZATION:
                # The flows met a bottleneck while they ran, but it was mostly idle.  In request
                # fidelity the phase's work is in the queues (the flows are background: a
                # tier's migration): a busy queue or the closed loops held it.
                queued = self._queue_limit(a, b, t0, t1)
                if queued.kind not in ("idle", "analytic"):
                    return queued
                # Otherwise the workload's own pace (arrivals, gaps between calls) set it.
                return IntervalLimit(
                    t0, t1, a.label, PACED, "offered load", limit.utilization, limit.share
                )
            return limit
        return self._queue_limit(a, b, t0, t1)

    @staticmethod
    def _resource_limit(
        a: _Reading,
        t0: float,
        t1: float,
        kind: str,
        rows: dict[int, float],
        flow_util: FloatArray,
        resources: list[Resource],
        groups: dict[str, float],
        total: float,
    ) -> IntervalLimit:
        """The interval limited by resources of ``kind`` (``rows``: their rows, bytes; the
        caller has added every saturated row of that kind)."""
        util = sum(float(flow_util[r]) for r in rows) / len(rows)
        limiter = (
            resources[next(iter(rows))].name if len(rows) == 1 else f"{kind} \u00d7{len(rows)}"
        )
        share = groups.get(f"res:{kind}", 0.0) / total
        return IntervalLimit(t0, t1, a.label, limiter, kind, util, share)

    def _queue_limit(self, a: _Reading, b: _Reading, t0: float, t1: float) -> IntervalLimit:
        """An interval in which no flow moved: a saturated queue, the closed loops, or idle."""
        queues = self.sim.queues
        util = queue_utilization(self.sim, a.usage, b.usage)
        if queues and util.size and float(util.max()) > 0.0:
            order = np.argsort(-util, kind="stable")
            best = int(order[0])
            if util[best] >= BOTTLENECK_UTILIZATION:
                kind = _kind_of(queues[best])
                of_kind = [
                    i
                    for i in order.tolist()
                    if util[i] >= BOTTLENECK_UTILIZATION and _kind_of(queues[i]) == kind
                ]
                limiter = queues[best].name if len(of_kind) == 1 else f"{kind} \u00d7{len(of_kind)}"
                mean = sum(float(util[i]) for i in of_kind) / len(of_kind)
                return IntervalLimit(t0, t1, a.label, limiter, kind, mean, 1.0)
            return IntervalLimit(
                t0, t1, a.label, CLOSED_LOOP, "concurrency", float(util[best]), 1.0
            )
        if a.analytic:
            return IntervalLimit(t0, t1, a.label, a.analytic, "analytic", None, 0.0)
        return IntervalLimit(t0, t1, a.label, "idle", "idle", None, 0.0)


#: Kinds of :class:`~flashsim.measure.results.IntervalLimit` that are no resource.
BOUND_KINDS = frozenset(
    {"concurrency", "latency", "throttle", "offered load", "rate cap", "analytic", "idle"}
)


def held_by(phase: PhaseResult) -> tuple[str, str] | None:
    """The latency or concurrency bound that held a phase longest: ``(limiter, kind)``.

    Sums the length (s) of the phase's intervals per bound (not per resource,
    and not idle time); ``None`` when no interval was held by a bound.
    """
    bound: dict[tuple[str, str], float] = {}
    for i in phase.intervals:
        if i.kind in BOUND_KINDS and i.kind != "idle":
            key = (i.limiter, i.kind)
            bound[key] = bound.get(key, 0.0) + (i.end_s - i.start_s)
    if not bound:
        return None
    return max(bound, key=lambda k: (bound[k], k))
