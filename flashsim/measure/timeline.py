"""Results over time: the system's state and each phase's bandwidth along a run.

Two recorders, both driven by the scenario runner and both read-only (they
change no rate, no state and the order of no other event of the run):

* :class:`StateRecorder` samples the system's target state
  (:class:`~flashsim.components.target_state.SystemStatus`: write
  amplification, write loss, degraded and rebuilding targets, failed drives,
  SCM fill) at the marks the runner sets (:meth:`StateRecorder.mark`: the
  run's start, each phase's start and end, each event) and periodically in
  between from a SimPy process.  The period adapts to the run's length: it
  starts at :data:`FIRST_INTERVAL_S` and, whenever more than ``max_samples``
  periodic samples are held (:data:`MAX_SAMPLES`, 200), the period doubles
  and the samples off its grid (every other one) are dropped, so a run of
  any length keeps between ``max_samples / 2`` and ``max_samples`` evenly
  spaced periodic samples besides its marks (a simulated year: one every
  3.0 days; about ``max_samples / 2 x log2(duration / first period)``
  status reads in all, some 2,500 for a year).  Its wake-ups are events of
  their own, which change neither the order of the others nor any rate; the
  status callable must only read state.  The process never keeps the
  environment alive: when nothing else is scheduled it goes dormant, and a
  mark or the flow network's next re-solve wakes it; :meth:`StateRecorder.finish`
  stops it.  One wake-up may still be pending after the last other event,
  so only a run "until nothing is left" (``sim.run()`` with no ``until``,
  which no phase does) would see the clock stop up to one period later.
* :class:`BandwidthRecorder` gives one phase's bandwidth and IOPS per
  interval from the flow network's cumulative user-byte counters (the limit
  ledger, :meth:`flashsim.engine.flows.FlowNetwork.limit_bytes`: every byte a
  flow moved is charged there once, settled or in progress).  It reads them
  on the first re-solve at or after each window edge (rates are constant
  between re-solves, so the bytes of each interval are exact; windows start
  at :data:`FIRST_WINDOW_S` and double beyond :data:`MAX_WINDOWS`, as
  :mod:`flashsim.measure.limits` does), adding no event to the run.  The
  counters are the flow network's, not the phase's: with phases overlapping,
  or background traffic (a rebuild, a TRIM, fabric background), those bytes
  count in every phase running then, as the phase's bottleneck report does.
  A phase that moved no flow (request fidelity, an analytic study) gets one
  interval at its own mean bandwidth (``source = "phase mean"``).

Runner API: ``StateRecorder(sim, built.status).start()`` once, ``mark(label)``
at each phase boundary and event, ``finish()`` at the end;
``BandwidthRecorder(sim, name).start()`` when a phase starts and
``finish(result)`` when it ends.  Both return records of
:mod:`flashsim.measure.results` (``RunResult.timeline``,
``RunResult.bandwidth``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Sequence
from itertools import pairwise
from typing import Any

import simpy

from flashsim.components.target_state import SystemStatus
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import BandwidthSample, PhaseResult, TimelineSample
from flashsim.workloads.production import FAST_FORWARD

#: First period of the state sampler (s); it doubles as the run grows long.
FIRST_INTERVAL_S = 1.0
#: Periodic state samples held before every other one is dropped (marks are always kept).
MAX_SAMPLES = 200
#: First bandwidth window of a phase (s); windows double as the phase runs long.
FIRST_WINDOW_S = 0.1
#: Bandwidth windows held per phase before pairs are merged (exact: counters are cumulative).
MAX_WINDOWS = 128
#: Source of a bandwidth sample read from the flow network's counters.
FLOWS = "flows"
#: Source of a bandwidth sample that is the phase's own mean (no flow moved).
PHASE_MEAN = "phase mean"


def status_from_dict(state: dict[str, Any]) -> SystemStatus:
    """The :class:`SystemStatus` a :meth:`SystemStatus.to_dict` (or timeline state) holds."""
    known = {
        "targets",
        "mean_write_amplification",
        "max_write_amplification",
        "mean_write_loss",
        "failed_drives",
        "buffer_fill",
    }
    kwargs: dict[str, Any] = {k: state[k] for k in known if k in state}
    for key in ("degraded_targets", "rebuilding_targets", "data_lost_targets"):
        kwargs[key] = tuple(state.get(key) or ())
    return SystemStatus(time_s=float(state.get("time_s", 0.0)), **kwargs)


def same_state(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two timeline states are equal but for their time."""
    return {k: v for k, v in a.items() if k != "time_s"} == {
        k: v for k, v in b.items() if k != "time_s"
    }


def rebuild_windows(samples: Sequence[TimelineSample]) -> list[tuple[float, float]]:
    """Spans of simulated time (s) during which some target was rebuilding.

    A span opens at the first sample showing a rebuild and closes at the next
    sample showing none (or at the last sample); its resolution is the
    samples' (marks and the periodic period).
    """
    spans: list[tuple[float, float]] = []
    opened: float | None = None
    for s in samples:
        busy = bool(s.state.get("rebuilding_targets"))
        if busy and opened is None:
            opened = s.time_s
        elif not busy and opened is not None:
            spans.append((opened, s.time_s))
            opened = None
    if opened is not None and samples:
        spans.append((opened, samples[-1].time_s))
    return spans


class StateRecorder:
    """Samples a system's state at marks and periodically; see the module docstring.

    Parameters
    ----------
    sim : Simulation
        The run's simulation (its clock, and its flow network whose re-solves
        wake a dormant sampler).
    status : callable
        Returns the system's :class:`SystemStatus` now (``built.status``);
        it must only read state.
    interval_s : float, optional
        Fixed sampling period (s, > 0); ``None`` (default) adapts it (see the
        module docstring).
    max_samples : int
        Periodic samples kept at most (>= 2) when the period adapts.

    Raises
    ------
    ValueError
        ``interval_s`` not a finite number > 0, ``max_samples`` < 2.
    """

    def __init__(
        self,
        sim: Simulation,
        status: Callable[[], SystemStatus],
        interval_s: float | None = None,
        max_samples: int = MAX_SAMPLES,
    ) -> None:
        if interval_s is not None and not (math.isfinite(interval_s) and interval_s > 0):
            raise ValueError(f"interval_s(={interval_s}) must be a finite number > 0")
        if max_samples < 2:
            raise ValueError(f"max_samples(={max_samples}) must be >= 2")
        self.sim = sim
        self.status = status
        self.adaptive = interval_s is None
        self.interval_s = FIRST_INTERVAL_S if interval_s is None else interval_s
        self.max_samples = max_samples
        self.samples: list[TimelineSample] = []
        self._periodic = 0
        self._t0 = 0.0
        self._running = False
        self._wake: simpy.Event | None = None

    @property
    def running(self) -> bool:
        """Whether :meth:`start` was called and :meth:`finish` not yet."""
        return self._running

    def start(self, label: str = "start") -> None:
        """Take the first sample (marked ``label``) and start the periodic sampler."""
        if self._running:
            raise RuntimeError("StateRecorder.start: already started")
        self._running = True
        self._t0 = self.sim.now
        self._take(label, event=False)
        self.sim.flows.add_rate_listener(self._on_rates)
        self.sim.env.process(self._sampler())

    def mark(self, label: str, event: bool = False) -> None:
        """Sample the state now, marked ``label`` (``event``: a scenario event's mark)."""
        self._take(label, event)
        self._rouse()

    def finish(self, label: str = "end") -> list[TimelineSample]:
        """Take the last sample (marked ``label``), stop the sampler, return every sample."""
        if self._running:
            self._take(label, event=False)
            self._running = False
            self.sim.flows.remove_rate_listener(self._on_rates)
            self._rouse()  # a dormant sampler wakes and ends
        return list(self.samples)

    # ------------------------------------------------------------------ internals
    def _take(self, label: str, event: bool) -> None:
        if not label and self.samples and self.samples[-1].time_s == self.sim.now:
            return  # a periodic sample at the instant of the last sample adds nothing
        state = self.status().to_dict()
        sample = TimelineSample(self.sim.now, label, event, state)
        last = self.samples[-1] if self.samples else None
        if last is not None and last.time_s == sample.time_s and not last.label:
            # A mark at the instant of a periodic sample replaces it.
            self.samples[-1] = sample
            self._periodic -= 1
            return
        self.samples.append(sample)
        if not label:
            self._periodic += 1
            if self.adaptive and self._periodic > self.max_samples:
                self._decimate()

    def _decimate(self) -> None:
        """Drop the periodic samples off the doubled period's grid, and double the period."""
        period = 2.0 * self.interval_s
        kept = [
            s
            for s in self.samples
            if s.label or round((s.time_s - self._t0) / self.interval_s) % 2 == 0
        ]
        self.samples = kept
        self._periodic = sum(1 for s in kept if not s.label)
        self.interval_s = period

    def _rouse(self) -> None:
        wake = self._wake
        if wake is not None and not wake.triggered:
            self._wake = None
            wake.succeed()

    def _on_rates(self) -> None:
        if self._wake is not None:
            self._rouse()

    def _next_tick(self, now: float) -> float:
        """The first time of the period's grid (from the start) after ``now`` (s)."""
        k = math.floor((now - self._t0) / self.interval_s + 1e-9) + 1
        return self._t0 + k * self.interval_s

    def _sampler(self) -> Generator[simpy.Event, Any, None]:
        env = self.sim.env
        while self._running:
            if env.peek() == math.inf:
                # Nothing else is scheduled: a wake-up of ours would be the only event
                # and keep the run going forever.  Sleep until a mark or a re-solve.
                self._wake = env.event()
                yield self._wake
                continue
            yield env.timeout(self._next_tick(self.sim.now) - self.sim.now)
            if self._running:
                self._take("", event=False)


class BandwidthRecorder:
    """One phase's bandwidth and IOPS per interval; see the module docstring.

    Parameters
    ----------
    sim : Simulation
        The simulation the phase runs in.
    phase : str
        The phase's name, as its result will carry it.
    """

    def __init__(self, sim: Simulation, phase: str) -> None:
        self.sim = sim
        self.phase = phase
        self.window_s = FIRST_WINDOW_S
        self.next_edge_s = math.inf
        self.readings: list[tuple[float, float, bool]] = []  # (time, bytes, boundary)
        self._listening = False

    def _bytes(self) -> float:
        return float(sum(self.sim.flows.limit_bytes().values()))

    def _read(self, boundary: bool) -> None:
        now = self.sim.now
        reading = (now, self._bytes(), boundary)
        if self.readings and self.readings[-1][0] == now:
            reading = (now, reading[1], boundary or self.readings[-1][2])
            self.readings[-1] = reading
            return
        self.readings.append(reading)

    def start(self) -> None:
        """The phase starts now: read the counters and listen to the network's re-solves."""
        if self._listening:
            raise RuntimeError("BandwidthRecorder.start: already started")
        self.readings = []
        self._read(boundary=True)
        self.next_edge_s = self.sim.now + self.window_s
        self.sim.flows.add_rate_listener(self._on_rates)
        self._listening = True

    def _on_rates(self) -> None:
        now = self.sim.now
        if now < self.next_edge_s:
            return
        self._read(boundary=False)
        self.next_edge_s = now + self.window_s
        inner = len(self.readings) - 2
        if inner > MAX_WINDOWS:
            first, last = self.readings[0], self.readings[-1]
            middle = self.readings[1:-1]
            self.readings = [first, *middle[1::2], last]
            self.window_s *= 2.0

    def cancel(self) -> None:
        """Stop listening without a result (the run stopped mid-phase)."""
        if self._listening:
            self.sim.flows.remove_rate_listener(self._on_rates)
            self._listening = False

    def finish(self, result: PhaseResult) -> list[BandwidthSample]:
        """The phase ended now with ``result``: its bandwidth per interval, in time order."""
        if self._listening:
            self.sim.flows.remove_rate_listener(self._on_rates)
            self._listening = False
            self._read(boundary=True)
        if not self.readings or result.fidelity == FAST_FORWARD:
            # A fast-forward simulates no transfer: the bytes moving meanwhile are other
            # phases' (or its rebuilds' and TRIMs'), so it has no series of its own.
            return []
        ops_per_B = (
            result.iops / result.bandwidth_Bps
            if math.isfinite(result.iops)
            and math.isfinite(result.bandwidth_Bps)
            and result.iops > 0
            and result.bandwidth_Bps > 0
            else None
        )
        t0, b0, _ = self.readings[0]
        t1, b1, _ = self.readings[-1]
        if b1 - b0 <= 0.0:
            return self._phase_mean(result, t0, t1, ops_per_B)
        out: list[BandwidthSample] = []
        for (ta, ba, _), (tb, bb, _) in pairwise(self.readings):
            if tb <= ta:
                continue
            moved = max(bb - ba, 0.0)
            rate = moved / (tb - ta)
            iops = rate * ops_per_B if ops_per_B is not None else None
            out.append(BandwidthSample(self.phase, ta, tb, moved, rate, iops, FLOWS))
        return out

    def _phase_mean(
        self, result: PhaseResult, t0: float, t1: float, ops_per_B: float | None
    ) -> list[BandwidthSample]:
        """One interval at the phase's own mean: it moved no flow."""
        rate = result.bandwidth_Bps
        end = t1 if t1 > t0 else t0 + result.sim_time_s
        if not (math.isfinite(rate) and rate >= 0.0 and end > t0):
            return []
        iops = rate * ops_per_B if ops_per_B is not None else None
        if rate == 0.0 and math.isfinite(result.iops) and result.iops > 0:
            iops = result.iops
        return [BandwidthSample(self.phase, t0, end, rate * (end - t0), rate, iops, PHASE_MEAN)]


class RunTimeline:
    """Both recorders of one run, behind the calls a scenario runner makes.

    ``start()`` when the system is built; ``phase_start(name)`` and
    ``phase_end(name, result)`` around each phase (phases may overlap: each
    has its own :class:`BandwidthRecorder`, by name); ``event(label)`` when an
    event acts; ``finish()`` at the end, for ``RunResult.timeline`` and
    ``RunResult.bandwidth``.

    Parameters
    ----------
    sim : Simulation
        The run's simulation.
    status : callable
        The built system's ``status`` (:meth:`flashsim.systems.base.BuiltSystem.status`).
    interval_s : float, optional
        Fixed state-sampling period (s); ``None`` adapts it (:class:`StateRecorder`).
    """

    def __init__(
        self,
        sim: Simulation,
        status: Callable[[], SystemStatus],
        interval_s: float | None = None,
    ) -> None:
        self.sim = sim
        self.state = StateRecorder(sim, status, interval_s)
        self.bandwidth: list[BandwidthSample] = []
        self._phases: dict[str, BandwidthRecorder] = {}
        self._listening = False

    def start(self) -> None:
        """The run starts now (its first state sample, the periodic sampler).

        From now on every state change a component reports
        (:meth:`flashsim.engine.simulation.Simulation.state_changed`: a drive
        failing, a rebuild ending) is a sample too, marked as an event.
        """
        self.state.start()
        self.sim.add_state_listener(self.event)
        self._listening = True

    def phase_start(self, name: str) -> dict[str, Any]:
        """Phase ``name`` starts now; returns the state then (``PhaseResult.start_state``)."""
        if name in self._phases:
            raise ValueError(f"phases: {name!r} started twice without ending")
        self.state.mark(f"{name}: start")
        recorder = BandwidthRecorder(self.sim, name)
        recorder.start()
        self._phases[name] = recorder
        return dict(self.state.samples[-1].state)

    def phase_end(self, name: str, result: PhaseResult) -> None:
        """Phase ``name`` ended now with ``result``."""
        recorder = self._phases.pop(name, None)
        if recorder is not None:
            self.bandwidth.extend(recorder.finish(result))
        self.state.mark(f"{name}: end")

    def event(self, label: str) -> None:
        """An event acted now (a failure, a TRIM, a reset ...), named ``label``."""
        self.state.mark(label, event=True)

    def finish(self) -> tuple[list[TimelineSample], list[BandwidthSample]]:
        """The run ended: the state samples and every phase's bandwidth samples."""
        if self._listening:
            self.sim.remove_state_listener(self.event)
            self._listening = False
        for recorder in self._phases.values():  # a run stopped mid-phase
            recorder.cancel()
        self._phases.clear()
        return self.state.finish(), list(self.bandwidth)
