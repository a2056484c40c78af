r"""What limited a phase: every resource's mean utilisation, and those that saturated.

Over a phase that ran from ``t0`` to ``t1`` (simulated seconds), a resource's
mean utilisation is the work it did over the work it could have done:

* flow fidelity: for each capacity of a :class:`~flashsim.engine.flows.Resource`
  (bytes/s, operations/s or busy-seconds/s), the work that crossed it over
  the integral of its capacity over ``[t0, t1]``, read from the flow network's
  cumulative counters (:meth:`~flashsim.engine.flows.FlowNetwork.usage`; a
  capacity changed by ``set_capacity`` mid-phase is integrated piecewise, a
  resource created mid-phase counts from its creation); a resource with both
  a bandwidth and an operation-rate capacity takes the larger of the two;
* request fidelity: for each :class:`~flashsim.engine.queues.FifoQueue`, the
  service delivered during the phase (server-seconds) over ``servers x (t1 -
  t0)``.

A resource is a *bottleneck* of the phase when its mean utilisation is at
least :data:`BOTTLENECK_UTILIZATION`.  The computation is vectorised over all
resources (NumPy over the constraint arrays), and only the few resources
reported become Python objects, so a 10^5-resource model pays milliseconds
per phase.

Resource kinds
--------------
A resource or queue created with ``kind=...`` reports that kind; otherwise
:func:`infer_kind` infers one from its dotted name with :data:`KIND_RULES`,
the first matching rule winning:

* ``\.pcie(\.|$)`` -> pcie (``perlmutter.oss3.ost0.drive2.pcie.up``)
* ``\.scm\d*\.cmd$`` -> scm command (``vast.scm3.cmd``)
* ``\.qlc\d*\.cmd$`` -> qlc command (``vast.qlc5.cmd``)
* ``\.cmd$`` -> drive command (``perlmutter.oss3.ost0.drive2.cmd``)
* ``\.scm\d*\.xfer$`` -> scm data (``vast.scm3.xfer``)
* ``\.qlc\d*\.xfer$`` -> qlc data (``vast.qlc5.xfer``)
* ``\.(data|xfer)$`` -> drive data (``perlmutter.oss3.ost0.drive2.data``)
* ``\.scm\d*\.ops$`` -> scm ops (``vast.dnode0.scm1.ops``)
* ``\.qlc\d*\.ops$`` -> qlc ops (``vast.dnode0.qlc5.ops``)
* ``\.scm\d*$`` -> scm drive (``vast.dnode0.scm3``)
* ``\.qlc\d*$`` -> qlc drive (``vast.dnode0.qlc5``)
* ``\.raid\d*$`` -> raid (``perlmutter.oss3.ost0.raid``)
* ``\.cpu\d*$`` -> cpu (``perlmutter.oss3.cpu``)
* ``\.osc\d*$`` -> osc (``perlmutter.client12.osc40``)
* ``\.(\w+_)?nic\d*(\.|$)`` -> nic (``perlmutter.oss3.nic0.ingress``,
  ``vast.cnode2.fabric_nic3.egress``)
* ``\.(client|cnode|dnode)\d*\.(\w+_)?(tx|rx)$`` -> nic (``vast.cnode2.fabric_tx``, the
  per-node aggregates of results from before the VAST ports were ``NicPorts``)
* ``(^|\.)fabric(\.|$)`` -> fabric (``perlmutter.fabric.io0.write.x8``)
* ``\.(drain_)?gate$`` -> tier gate (``vast.tier.gate``)
* ``\.copy$`` -> page copy (``vast.rank3.copy``)
* anything else -> the last name part (``demo.ssd`` -> ssd)

The fallback is the last dotted part with trailing digits removed, so a
pipeline stage ``demo.ssd`` is of kind ``ssd``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from flashsim.engine.flows import ResourceUsage
from flashsim.engine.maxmin import FloatArray
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import ResourceLoad

#: Mean utilisation over a phase (dimensionless) at or above which a resource
#: counts as a bottleneck of the phase: saturated for at least 99 % of the
#: phase's simulated time, which leaves room for a phase's ramp-up and tail.
BOTTLENECK_UTILIZATION = 0.99
#: How many of the most utilised resources a phase reports (``most_utilized``).
MOST_UTILIZED_COUNT = 3
#: Decimals of utilisation compared when ordering (so rounding noise does not
#: reorder resources that are equally loaded; ties are broken by name).
ORDER_DECIMALS = 9

#: Name patterns and the kind they imply, tried in order (see the module docstring).
KIND_RULES: tuple[tuple[str, str], ...] = (
    (r"\.pcie(\.|$)", "pcie"),
    (r"\.scm\d*\.cmd$", "scm command"),
    (r"\.qlc\d*\.cmd$", "qlc command"),
    (r"\.cmd$", "drive command"),
    (r"\.scm\d*\.xfer$", "scm data"),
    (r"\.qlc\d*\.xfer$", "qlc data"),
    (r"\.(data|xfer)$", "drive data"),
    (r"\.scm\d*\.ops$", "scm ops"),
    (r"\.qlc\d*\.ops$", "qlc ops"),
    (r"\.scm\d*$", "scm drive"),
    (r"\.qlc\d*$", "qlc drive"),
    (r"\.raid\d*$", "raid"),
    (r"\.cpu\d*$", "cpu"),
    (r"\.osc\d*$", "osc"),
    (r"\.(\w+_)?nic\d*(\.|$)", "nic"),
    (r"\.(client|cnode|dnode)\d*\.(\w+_)?(tx|rx)$", "nic"),
    (r"(^|\.)fabric(\.|$)", "fabric"),
    (r"\.(drain_)?gate$", "tier gate"),
    (r"\.copy$", "page copy"),
)


def infer_kind(name: str) -> str:
    """The component kind of a resource from its dotted name (see :data:`KIND_RULES`).

    Parameters
    ----------
    name : str
        Dotted component name, e.g. ``perlmutter.oss3.nic0.ingress``.

    Returns
    -------
    str
        The kind, e.g. ``"nic"``; for a name no rule matches, its last dotted
        part without trailing digits (``"resource"`` if that is empty).
    """
    for pattern, kind in KIND_RULES:
        if re.search(pattern, name):
            return kind
    last = name.rsplit(".", 1)[-1].rstrip("0123456789")
    return last or "resource"


@dataclass(frozen=True)
class UsageMark:
    """The cumulative counters of a simulation at the start of a phase.

    Attributes
    ----------
    time_s : float
        Simulated time (s).
    flow : ResourceUsage
        Work and capacity-time of every flow resource.
    queue_busy_s : ndarray
        Service delivered so far by each registered queue (server-seconds).
    """

    time_s: float
    flow: ResourceUsage
    queue_busy_s: FloatArray


def _queue_busy_s(sim: Simulation) -> FloatArray:
    queues = sim.queues
    return np.fromiter(
        (q.busy_done_s() if q.busy_time_s else 0.0 for q in queues),
        dtype=np.float64,
        count=len(queues),
    )


def mark(sim: Simulation) -> UsageMark:
    """Read the counters now, before a phase runs.

    Parameters
    ----------
    sim : Simulation
        The simulation the phase runs in.
    """
    return UsageMark(sim.now, sim.flows.usage(), _queue_busy_s(sim))


def _pad(values: FloatArray, rows: int) -> FloatArray:
    """``values`` with zero rows appended up to ``rows`` (for resources made since)."""
    if values.shape[0] >= rows:
        return values
    pad = np.zeros((rows - values.shape[0], *values.shape[1:]))
    return np.concatenate([values, pad])


def flow_utilization(start: ResourceUsage, end: ResourceUsage) -> FloatArray:
    """Mean utilisation of every flow resource between two snapshots (rows of ``end``).

    Parameters
    ----------
    start, end : ResourceUsage
        Snapshots at the start and end of the interval (``end`` may hold more
        resources: those created since count from their creation).

    Returns
    -------
    ndarray
        Per resource, the larger utilisation of its bandwidth and operation
        constraints (0 for an unlimited resource or a zero capacity).
    """
    rows = end.work.shape[0]
    work = end.work - _pad(start.work, rows)
    cap = end.capacity_time - _pad(start.capacity_time, rows)
    ok = end.limited & (cap > 0)
    util = np.divide(work, cap, out=np.zeros_like(work), where=ok)
    result: FloatArray = util.max(axis=1) if rows else np.zeros(0)
    return result


def queue_utilization(
    sim: Simulation, start: UsageMark, end: UsageMark | None = None
) -> FloatArray:
    """Mean utilisation of every registered queue between two readings (0 when no time passed).

    Parameters
    ----------
    sim : Simulation
        The simulation whose queues are read.
    start : UsageMark
        The counters at the start of the interval (:func:`mark`).
    end : UsageMark, optional
        The counters at its end; read now when not given.  Queues registered
        since ``start`` count from their creation.

    Returns
    -------
    ndarray
        Per queue (in ``sim.queues`` order), its service delivered in the
        interval (server-seconds) over its servers times the interval (s).
    """
    queues = sim.queues
    elapsed = (sim.now if end is None else end.time_s) - start.time_s
    if not queues or elapsed <= 0:
        return np.zeros(len(queues))
    after = _queue_busy_s(sim) if end is None else _pad(end.queue_busy_s, len(queues))
    busy = after - _pad(start.queue_busy_s, len(queues))
    servers = np.fromiter((q.servers for q in queues), dtype=np.float64, count=len(queues))
    result: FloatArray = busy / (servers * elapsed)
    return result


def natural_key(name: str) -> tuple[tuple[int, str, int], ...]:
    """Sort key ordering numbered parts by number (``drive2`` before ``drive10``)."""
    return tuple(
        (1, "", int(part)) if part.isdigit() else (0, part, 0)
        for part in re.split(r"(\d+)", name)
        if part
    )


def _order_key(load: ResourceLoad) -> tuple[float, tuple[tuple[int, str, int], ...]]:
    return (-round(load.utilization, ORDER_DECIMALS), natural_key(load.name))


def phase_loads(
    sim: Simulation, start: UsageMark, end: UsageMark | None = None
) -> tuple[list[ResourceLoad], list[ResourceLoad]]:
    """The bottlenecks and the most utilised resources of the phase begun at ``start``.

    Parameters
    ----------
    sim : Simulation
        The simulation, after the phase has run.
    start : UsageMark
        The counters read by :func:`mark` before the phase.
    end : UsageMark, optional
        The counters read by :func:`mark` after it (read now when not given; a
        scenario passes it and reuses it as the next phase's ``start``).

    Returns
    -------
    bottlenecks : list of ResourceLoad
        Every resource (flow resource or queue) whose mean utilisation is at
        least :data:`BOTTLENECK_UTILIZATION`, most utilised first, then by name (numbers in
        names compared as numbers, :func:`natural_key`).
    most_utilized : list of ResourceLoad
        The :data:`MOST_UTILIZED_COUNT` most utilised resources with a
        utilisation above zero, in the same order.  A flow resource and a
        queue of the same name (a model that builds both fidelities) count
        once, at the larger utilisation.
    """
    now = end if end is not None else mark(sim)
    elapsed = now.time_s - start.time_s
    if elapsed <= 0:
        return [], []
    flow_util = flow_utilization(start.flow, now.flow)
    queue_util = queue_utilization(sim, start, now)
    queues = sim.queues
    chosen: dict[str, ResourceLoad] = {}

    def take(index: int, util: float, from_queue: bool) -> None:
        if from_queue:
            q = queues[index]
            name, kind = q.name, q.kind
        else:
            res = now.flow.resources[index]
            name, kind = res.name, res.kind
        old = chosen.get(name)
        if old is None or util > old.utilization:
            chosen[name] = ResourceLoad(name, kind or infer_kind(name), float(util))

    for utils, from_queue in ((flow_util, False), (queue_util, True)):
        if utils.size == 0:
            continue
        hot = np.flatnonzero(utils >= BOTTLENECK_UTILIZATION)
        # Twice the count, so that a name duplicated across fidelities cannot crowd out.
        top = min(2 * MOST_UTILIZED_COUNT, utils.size)
        best = np.argpartition(-utils, top - 1)[:top]
        for i in np.union1d(hot, best).tolist():
            if utils[i] > 0:
                take(i, float(utils[i]), from_queue)
    ranked = sorted(chosen.values(), key=_order_key)
    bottlenecks = [r for r in ranked if r.utilization >= BOTTLENECK_UTILIZATION]
    return bottlenecks, ranked[:MOST_UTILIZED_COUNT]
