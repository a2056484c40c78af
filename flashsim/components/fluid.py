"""A write-back reservoir in flow fidelity: ingest flows in, one drain flow out.

A :class:`FluidBuffer` models any store that accepts bytes faster than it can
pass them on and hands them on later: a client's page cache (dirty pages,
written back over the network) or the SCM write buffer of a tiered store
(stripes migrated to QLC).  Its state is the number of bytes it holds, kept
per *object* (a file) in arrival order, so where every byte is stays known.

Rates are constant between re-solves of the flow network, so the buffer
listens to every re-solve (:meth:`FlowNetwork.add_rate_listener`), integrates
its level exactly and schedules the instant it will next cross a threshold:

* ``drain_start_B``: the drain flow starts when the level reaches it, and the
  level is held there (the drain follows the ingest rate through a *drain
  gate* whose capacity is set to the ingest rate) while the ingest is slower
  than the drain could go;
* ``capacity_B``: a full buffer back-pressures writers: the capacity of the
  *ingest gate* (a resource on every ingest flow's path) is set to the drain
  rate, which re-solves the network (the writers slow to the drain rate);
* :meth:`flush` lowers the hold level to zero until the buffer is empty
  (``fsync``).

Accounting is exact: ``ingested_B == level_B + drained_B`` at every instant,
per object and in total (see :meth:`check`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import simpy

from flashsim.engine.flows import Flow, Resource
from flashsim.engine.simulation import Simulation

#: Capacity (bytes/s) of an open gate: far above any physical rate.
OPEN_Bps = 1e15
#: Size (bytes) of the open-ended drain flow (it is cancelled, never completed).
ENDLESS_B = 1e18
#: Relative tolerance on rates and levels.
RTOL = 1e-9
#: Absolute tolerance on levels, in bytes.
ATOL_B = 1e-3
#: Fraction of the capacity that bytes added outside flows may exceed the hold level by
#: before a drain starts (:meth:`FluidBuffer.add_bytes`).
DIRECT_BATCH = 1e-4

#: Where drained bytes go: a list of (object, bytes) in arrival order.
Pieces = list[tuple[str, float]]


@dataclass(slots=True)
class _Piece:
    """Bytes of one object, in arrival order."""

    obj: str
    bytes_B: float


@dataclass
class _Tracked:
    """An ingest flow, its object and its state at the last sync."""

    flow: Flow
    obj: str
    moved_B: float = 0.0
    rate_Bps: float = 0.0
    #: Fraction of the flow's bytes that enter this buffer (a flow striped over several).
    share: float = 1.0


@dataclass
class DrainPath:
    """What a drain flow crosses: see :meth:`FlowNetwork.start_flow`.

    Attributes
    ----------
    path : list of (Resource, float)
        Resources and weights (bytes consumed per drained byte).
    rate_cap_Bps : float or None
        Cap on the drain rate in bytes/s.
    op_size_B : float or None
        Bytes per operation, for resources with an operation-rate capacity.
    key : object
        Drains with different keys need different paths (e.g. a different
        compression ratio at the head of the queue); a change of key at the
        head restarts the drain flow.
    """

    path: list[tuple[Resource, float]]
    rate_cap_Bps: float | None = None
    op_size_B: float | None = None
    key: object = None


@dataclass
class BufferCheck:
    """Totals of :meth:`FluidBuffer.check` (bytes)."""

    ingested_B: float
    level_B: float
    drained_B: float
    fifo_B: float
    per_object_B: dict[str, float] = field(default_factory=dict)


class FluidBuffer:
    """A buffer between ingest flows and an asynchronous drain, in flow fidelity.

    Parameters
    ----------
    sim : Simulation
        Owns the flow network.
    name : str
        Dotted component name; the gates are ``<name>.gate`` and
        ``<name>.drain_gate``.
    capacity_B : float
        Bytes the buffer can hold (> 0); at this level writers are
        back-pressured to the drain rate.
    drain_start_B : float
        Level in bytes (0 <= ... <= capacity) at which draining starts and is
        held; ``capacity_B`` drains only when full.
    drain_path : callable
        ``drain_path(head_object) -> DrainPath``: what a drain of the data at
        the head of the queue crosses.
    on_drained : callable, optional
        ``on_drained(pieces)`` receives the (object, bytes) pieces as they
        leave, in arrival order.
    drain_priority : float
        Share weight of the drain flow at common bottlenecks.
    """

    def __init__(
        self,
        sim: Simulation,
        name: str,
        capacity_B: float,
        drain_start_B: float,
        drain_path: Callable[[str], DrainPath],
        on_drained: Callable[[Pieces], None] | None = None,
        drain_priority: float = 1.0,
    ) -> None:
        if not (capacity_B > 0 and math.isfinite(capacity_B)):
            raise ValueError(f"{name}: capacity_B(={capacity_B}) must be a finite number > 0")
        if not 0 <= drain_start_B <= capacity_B:
            raise ValueError(
                f"{name}: drain_start_B(={drain_start_B}) must be in [0, capacity_B={capacity_B}]"
            )
        self.sim = sim
        self.name = name
        self.capacity_B = float(capacity_B)
        self.drain_start_B = float(drain_start_B)
        self._drain_path = drain_path
        self._on_drained = on_drained
        self._drain_priority = drain_priority
        self.gate = sim.flows.add_resource(f"{name}.gate", capacity_Bps=OPEN_Bps)
        self.drain_gate = sim.flows.add_resource(f"{name}.drain_gate", capacity_Bps=OPEN_Bps)
        self._tracked: list[_Tracked] = []
        self._upstreams: list[FluidBuffer] = []
        self._keep_outbox = False
        self._fifo: deque[_Piece] = deque()
        self._outbox: Pieces = []
        #: Bytes that have entered, are held, and have left (exact at every sync).
        self.ingested_B = 0.0
        self.level_B = 0.0
        self.drained_B = 0.0
        #: Bytes held per object.
        self.per_object_B: dict[str, float] = {}
        #: FIFO pieces per object: an object leaves ``per_object_B`` with its last piece
        #: (exactly, with no rounding residue of its summed additions).
        self._pieces: dict[str, int] = {}
        self._drain: Flow | None = None
        self._drain_key: object = None
        self._drain_moved_B = 0.0
        self._drain_rate_Bps = 0.0
        self._hold_B = self.drain_start_B
        self._flush_waiters: list[simpy.Event] = []
        self._last_sync_s = sim.now
        self._timer_token = 0
        self._adjust_time = -1.0
        self._adjust_count = 0
        #: Rates (bytes/s) at the last control step.
        self.in_rate_Bps = 0.0
        self.out_rate_Bps = 0.0
        sim.flows.add_rate_listener(self._on_rates)

    # ----------------------------------------------------------------- ingest
    def add_ingest(self, flow: Flow, obj: str, share: float = 1.0) -> None:
        """Count ``share`` of the bytes of ``flow`` as ``obj``'s.

        The flow's path must include :meth:`ingest_path` scaled by ``share``
        (a flow striped over several targets puts ``share`` of its bytes in each).
        """
        if not 0.0 < share <= 1.0:
            raise ValueError(f"{self.name}: share(={share}) must be in (0, 1]")
        self._tracked.append(_Tracked(flow, obj, share=share))

    def add_bytes(self, obj: str, b: float) -> None:
        """Count ``b`` bytes of ``obj`` that arrived outside any flow, now.

        Request fidelity moves data as individual operations, not flows: an
        acknowledged write adds its bytes here when it completes, so later
        reads see them and the drain follows as it would in flow fidelity.
        """
        if not (b >= 0 and math.isfinite(b)):
            raise ValueError(f"{self.name}: bytes(={b}) must be a finite number >= 0")
        self.sync()
        self._add(obj, b)
        if self.draining and not self._flush_waiters:
            return  # the running drain's next crossing re-checks the level
        # Start a drain only once the level is a batch above the hold level, so that a
        # stream of small operations does not start and stop the drain at every one.
        batch = max(self._tol(), DIRECT_BATCH * self.capacity_B)
        if (
            self.level_B > self._hold_B + batch
            or self.level_B >= self.capacity_B - self._tol()
            or self._flush_waiters
        ):
            self._control()

    def add_upstream(self, upstream: FluidBuffer) -> None:
        """Take ``upstream``'s drained bytes as ingest (its drain path must cross :attr:`gate`)."""
        upstream._keep_outbox = True
        self._upstreams.append(upstream)

    def ingest_path(self, share: float = 1.0) -> list[tuple[Resource, float]]:
        """The buffer's part of an ingest flow's path (its gate, weight ``share``)."""
        return [(self.gate, share)]

    # ------------------------------------------------------------------ state
    def flush(self) -> simpy.Event:
        """Drain to empty; the event succeeds when the level reaches zero (``fsync``)."""
        event = self.sim.env.event()
        self.sync()
        if self.level_B <= self._tol():
            event.succeed()
            return event
        self._flush_waiters.append(event)
        self._hold_B = 0.0
        self._control()
        return event

    def drain_now(self, size_B: float) -> float:
        """Move up to ``size_B`` bytes out of the head at once, outside any flow.

        For a fast-forward over time the flows do not simulate (the bytes
        leave in arrival order, to the ``on_drained`` callback and any downstream
        buffer, as the drain would have moved them) and for a reset; then the
        policy is applied at the new level.  Returns the bytes moved.
        """
        if not (size_B >= 0 and math.isfinite(size_B)):
            raise ValueError(f"{self.name}: bytes(={size_B}) must be a finite number >= 0")
        self.sync()
        moved = min(float(size_B), self.level_B)
        if moved > 0:
            self._pop(moved)
            if self.level_B <= self._tol() and not self._fifo:
                self.level_B = 0.0
        self._control()
        return moved

    def bytes_of(self, obj: str) -> float:
        """Bytes of ``obj`` held now."""
        self.sync()
        return self.per_object_B.get(obj, 0.0)

    def take_drained(self) -> Pieces:
        """Pop the pieces drained so far and not yet taken (for a downstream buffer)."""
        self.sync()
        out, self._outbox = self._outbox, []
        return out

    def level_now_B(self) -> float:
        """Bytes held now (after a sync; no per-object totals, unlike :meth:`check`)."""
        self.sync()
        return self.level_B

    def ingested_now_B(self) -> float:
        """Bytes that have entered so far (after a sync)."""
        self.sync()
        return self.ingested_B

    def check(self) -> BufferCheck:
        """Totals after a sync; ``ingested == level + drained`` must hold."""
        self.sync()
        fifo = sum(p.bytes_B for p in self._fifo)
        return BufferCheck(
            self.ingested_B, self.level_B, self.drained_B, fifo, dict(self.per_object_B)
        )

    def head_object(self) -> str | None:
        """The object whose bytes drain next, if any."""
        return self._fifo[0].obj if self._fifo else None

    @property
    def draining(self) -> bool:
        """Whether a drain flow is running."""
        return self._drain is not None and self._drain._slot >= 0

    def sync(self) -> None:
        """Bring the level and the per-object accounting up to now."""
        now = self.sim.now
        dt = now - self._last_sync_s
        keep: list[_Tracked] = []
        for tr in self._tracked:
            flow = tr.flow
            if flow._slot >= 0:
                moved = flow.size_B - flow.remaining_B
                alive = True
            elif math.isnan(flow.end_s) or flow.done.triggered:
                moved = flow.size_B  # completed
                alive = False
            else:  # cancelled: it moved at its last rate until now
                moved = min(flow.size_B, tr.moved_B + tr.rate_Bps * dt)
                alive = False
            delta = moved - tr.moved_B
            if delta > 0:
                self._add(tr.obj, delta * tr.share)
            tr.moved_B = moved
            if alive:
                keep.append(tr)
        self._tracked = keep
        for up in self._upstreams:
            for obj, b in up.take_drained():
                self._add(obj, b)
        if self._drain is not None and dt > 0:
            # The drain flow is open-ended (its remaining bytes are too large to difference
            # precisely), so integrate its rate, constant since the last re-solve.
            delta = min(self._drain_rate_Bps * dt, self.level_B)
            if delta > 0:
                self._pop(delta)
            self._drain_moved_B += delta
        self._last_sync_s = now

    # -------------------------------------------------------------- internals
    def _tol(self) -> float:
        return ATOL_B + RTOL * self.capacity_B

    def _add(self, obj: str, b: float) -> None:
        if b <= 0:
            return
        self.ingested_B += b
        self.level_B += b
        self.per_object_B[obj] = self.per_object_B.get(obj, 0.0) + b
        if self._fifo and self._fifo[-1].obj == obj:
            self._fifo[-1].bytes_B += b
        else:
            self._fifo.append(_Piece(obj, b))
            self._pieces[obj] = self._pieces.get(obj, 0) + 1

    def _pop(self, b: float) -> None:
        self.drained_B += b
        self.level_B -= b
        pieces: Pieces = []
        left = b
        while left > 0 and self._fifo:
            head = self._fifo[0]
            obj = head.obj
            have = head.bytes_B
            take = have if have <= left else left
            pieces.append((obj, take))
            left -= take
            rest = self.per_object_B.get(obj, 0.0) - take
            last = take >= have and self._pieces.get(obj, 0) <= 1
            if rest <= 0 or last:
                self.per_object_B.pop(obj, None)
            else:
                self.per_object_B[obj] = rest
            if take >= have:
                self._fifo.popleft()
                left_pieces = self._pieces.get(obj, 0) - 1
                if left_pieces > 0:
                    self._pieces[obj] = left_pieces
                else:
                    self._pieces.pop(obj, None)
            else:
                head.bytes_B = have - take
        if self._keep_outbox:
            self._outbox.extend(pieces)
        if self._on_drained is not None and pieces:
            self._on_drained(pieces)

    def _on_rates(self) -> None:
        self.sync()
        self._control()

    def _rates(self) -> tuple[float, float]:
        flows = self.sim.flows
        rate_in = 0.0
        for tr in self._tracked:
            tr.rate_Bps = flows.rate_now_Bps(tr.flow)
            rate_in += tr.rate_Bps * tr.share
        for up in self._upstreams:
            rate_in += up._drain_rate_now()
        rate_out = self._drain_rate_now()
        self._drain_rate_Bps = rate_out
        return rate_in, rate_out

    def _drain_rate_now(self) -> float:
        if self._drain is None:
            return 0.0
        return self.sim.flows.rate_now_Bps(self._drain)

    def _may_adjust(self) -> bool:
        """Limit gate adjustments at one instant (a fixed point reached by iteration)."""
        now = self.sim.now
        if now != self._adjust_time:
            self._adjust_time = now
            self._adjust_count = 0
        self._adjust_count += 1
        return self._adjust_count <= 60

    def _set_capacity(self, gate: Resource, capacity: float, rtol: float = RTOL) -> None:
        """Set a gate's capacity (bytes/s) when it differs from its current one by > ``rtol``."""
        capacity = max(capacity, 0.0)
        current = gate.capacity_Bps if gate.capacity_Bps is not None else OPEN_Bps
        if abs(capacity - current) > rtol * max(capacity, current, 1.0):
            if capacity < OPEN_Bps and not self._may_adjust():
                return
            self.sim.flows.set_capacity(gate, capacity_Bps=capacity)

    def _start_drain(self) -> None:
        head = self.head_object()
        if head is None:
            return
        spec = self._drain_path(head)
        self._set_capacity(self.drain_gate, OPEN_Bps)
        self._drain = self.sim.flows.start_flow(
            ENDLESS_B,
            [*spec.path, (self.drain_gate, 1.0)],
            rate_cap_Bps=spec.rate_cap_Bps,
            op_size_B=spec.op_size_B,
            priority=self._drain_priority,
            name=f"{self.name}.drain",
        )
        self._drain_key = spec.key
        self._drain_moved_B = 0.0
        self._drain_rate_Bps = 0.0

    def _stop_drain(self) -> None:
        if self._drain is not None and self._drain._slot >= 0:
            self.sim.flows.cancel_flow(self._drain)
        self._drain = None
        self._drain_rate_Bps = 0.0

    def _control(self) -> None:
        """Apply the policy at the current level and rates; schedule the next crossing."""
        level = self.level_B
        tol = self._tol()
        if self._flush_waiters and level <= tol:
            waiters, self._flush_waiters = self._flush_waiters, []
            self._hold_B = self.drain_start_B
            for ev in waiters:
                ev.succeed()
        hold = self._hold_B
        rate_in, rate_out = self._rates()
        self.in_rate_Bps, self.out_rate_Bps = rate_in, rate_out
        if self._drain is not None and self._drain._slot < 0:
            self._drain = None
        if self.draining:
            head = self.head_object()
            if head is None or self._drain_path(head).key != self._drain_key:
                self._stop_drain()
                rate_out = 0.0
        if not self.draining:
            if level > tol and (level > hold + tol or (level >= hold - tol and rate_in > 0)):
                self._start_drain()
                return  # the listener runs again once the drain has a rate
        else:
            if level < hold - tol or (level <= hold + tol and rate_in <= 0):
                self._stop_drain()
                rate_out = 0.0
            elif level <= hold + tol:
                self._set_capacity(self.drain_gate, rate_in, rtol=1e-6)  # hold: follow the ingest
            else:
                self._set_capacity(self.drain_gate, OPEN_Bps)
        if level >= self.capacity_B - tol:
            self._set_capacity(
                self.gate, rate_out, rtol=1e-6
            )  # full: writers slow to the drain rate
        else:
            self._set_capacity(self.gate, OPEN_Bps)
        self._schedule_crossing(level, hold, rate_in, rate_out)

    def _schedule_crossing(
        self, level: float, hold: float, rate_in: float, rate_out: float
    ) -> None:
        self._timer_token += 1
        net = rate_in - rate_out
        tol = self._tol()
        times: list[float] = []
        if net > RTOL * max(rate_in, 1.0):
            if level < self.capacity_B - tol:
                times.append((self.capacity_B - level) / net)
            if level < hold - tol:
                times.append((hold - level) / net)
        elif net < -RTOL * max(rate_out, 1.0):
            if level > hold + tol:
                times.append((level - hold) / -net)
            elif level > tol:
                times.append(level / -net)
        if not times:
            return
        token = self._timer_token
        event = self.sim.env.timeout(max(min(times), 0.0))
        event.callbacks.append(lambda _ev: self._on_timer(token))

    def _on_timer(self, token: int) -> None:
        if token == self._timer_token:
            self._on_rates()


def split_evenly(resources: Sequence[Resource], weight: float) -> list[tuple[Resource, float]]:
    """Spread ``weight`` bytes per user byte evenly over ``resources``."""
    if not resources:
        return []
    each = weight / len(resources)
    return [(r, each) for r in resources]
