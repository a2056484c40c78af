"""A scenario as a timeline: phases that may overlap or repeat, and events, on one clock.

:class:`Timeline` starts each phase run when its timing says
(:mod:`flashsim.timeline.timing`), as a task of a
:class:`~flashsim.timeline.scheduler.Scheduler` (its own greenlet), and fires
the events (:mod:`flashsim.timeline.events`) at their times with
:func:`flashsim.timeline.actions.apply`.  Ordering at one instant: events due
then fire before a phase starts then (and before its ``reset``); an event at
a phase's start with no offset fires after its ``reset``, just before it
runs; one at a phase's end fires before any phase waiting for that end starts.  The run
ends when every phase has ended; an event not fired by then never fires (a
warning says so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from flashsim.config import warn
from flashsim.systems.base import BuiltSystem
from flashsim.timeline.actions import apply
from flashsim.timeline.events import EventSpec
from flashsim.timeline.scheduler import Scheduler, Task
from flashsim.timeline.timing import TimedPhase, predecessor, time_label


@dataclass(frozen=True)
class PhaseRun:
    """One run of a phase, as the timeline hands it to the caller.

    Attributes
    ----------
    timed : TimedPhase
        The phase.
    name : str
        Its result's name: the phase's, or ``<name>@<time>`` for a repeated phase.
    number : int
        Which run of the phase (0 for the first).
    """

    timed: TimedPhase
    name: str
    number: int


def event_label(event: EventSpec, index: int) -> str:
    """How reports name an event: ``"<name>: <action>"`` (``events.<i>`` when unnamed)."""
    return f"{event.name or f'events.{index}'}: {event.action}"


class Timeline:
    """Runs ``phases`` and ``events`` on ``built``; see the module docstring.

    Parameters
    ----------
    built : BuiltSystem
        The system (its ``sim`` is the clock).
    phases : list of TimedPhase
        The scenario's phases, in file order (checked by
        :func:`~flashsim.timeline.timing.check_order`).
    events : list of EventSpec
        The scenario's events, checked by :func:`~flashsim.timeline.events.load_events`.
    run_one : callable
        Runs one phase run (in its task) and records its result.
    path : Path
        The scenario file, for messages.
    on_event : callable, optional
        Called with a label (``"<name>: <action>"``) right after each event acts,
        e.g. to sample the state then (:class:`flashsim.measure.timeline.RunTimeline`).
    """

    def __init__(
        self,
        built: BuiltSystem,
        phases: list[TimedPhase],
        events: list[EventSpec],
        run_one: Callable[[PhaseRun], None],
        path: Path,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        self.built = built
        self.sim = built.sim
        self.phases = phases
        self.events = events
        self.run_one = run_one
        self.path = path
        self.on_event = on_event
        self.scheduler = Scheduler(self.sim)
        self._followers: dict[int, list[int]] = {p.index: [] for p in phases}
        for p in phases:
            before = predecessor(phases, p)
            if before is not None:
                self._followers[before].append(p.index)
        self._unfinished = len(phases)
        self._first_start: dict[int, float] = {}
        self._runs: dict[int, int] = {}
        #: Events waiting for a phase edge or another event: by (name, edge).
        self._on_edge: dict[tuple[str, str], list[int]] = {}
        #: Events with a time and not fired yet: index -> time (s).
        self._due: dict[int, float] = {}
        self._fired: set[int] = set()
        self._names: set[str] = set()

    # ------------------------------------------------------------- events
    def _schedule_event(self, i: int, time_s: float) -> None:
        self._due[i] = time_s
        if time_s <= self.sim.now:
            self._fire(i)
        else:
            self.scheduler.at(time_s, lambda: self._fire_due(time_s))

    def _fire_due(self, now_s: float | None = None) -> None:
        """Fire every event due by now (or by ``now_s``), in time then file order."""
        limit = self.sim.now if now_s is None else max(now_s, self.sim.now)
        for i, t in sorted(self._due.items(), key=lambda item: (item[1], item[0])):
            if t <= limit and i not in self._fired:
                self._fire(i)

    def _fire(self, i: int) -> None:
        if i in self._fired:
            return
        self._fired.add(i)
        self._due.pop(i, None)
        event = self.events[i]
        apply(event, self.built, self.path, i)
        if self.on_event is not None:
            self.on_event(event_label(event, i))
        if event.name is not None:
            self._edge(event.name, "start")
            self._edge(event.name, "end")

    def _edge(self, name: str, edge: str) -> None:
        """Phase or event ``name`` reached ``edge`` now: schedule the events relative to it."""
        for i in self._on_edge.pop((name, edge), []):
            self._schedule_event(i, self.sim.now + self.events[i].offset)

    # ------------------------------------------------------------- phases
    def _begin(self, index: int) -> None:
        """Start the next run of phase ``index`` now.

        First the events due by now fire, then the phase's ``reset`` gives
        fresh targets, then the events at its start (no offset) fire.
        """
        self._fire_due()
        timed = self.phases[index]
        if timed.timing.reset:
            self.built.reset_state()
        number = self._runs.get(index, 0)
        self._runs[index] = number + 1
        if number == 0:
            self._first_start[index] = self.sim.now
            self._edge(timed.name, "start")
        name = timed.name
        if timed.timing.repeat is not None:
            name = f"{timed.name}@{time_label(self.sim.now)}"
            if name in self._names:  # two starts a label cannot tell apart
                name = f"{name}#{number}"
            self._names.add(name)
        run = PhaseRun(timed, name, number)
        self.scheduler.start(
            Task(name, lambda: self.run_one(run), lambda _task: self._ended(index))
        )

    def _next_start(self, index: int) -> float | None:
        """When the next run of a repeated phase is due (s); ``None`` when it has run out."""
        repeat = self.phases[index].timing.repeat
        if repeat is None:
            return None
        done = self._runs[index]
        if repeat.count is not None and done >= repeat.count:
            return None
        at = self._first_start[index] + done * float(repeat.every)
        if repeat.until is not None and not at < repeat.until:
            return None
        return at

    def _ended(self, index: int) -> None:
        """A run of phase ``index`` ended: its next run, or its end edge and its followers."""
        at = self._next_start(index)
        if at is not None:
            if at <= self.sim.now:
                self._begin(index)
            else:
                self.scheduler.at(at, lambda: self._begin(index))
            return
        self._unfinished -= 1
        self._edge(self.phases[index].name, "end")
        for follower in self._followers[index]:
            self._begin(follower)

    # ------------------------------------------------------------- the run
    def run(self) -> None:
        """Run every phase to its end; events fire on the way."""
        for i, event in enumerate(self.events):
            if event.at is not None:
                self._due[i] = event.at
            else:
                assert event.relative_to is not None
                self._on_edge.setdefault((event.relative_to, event.edge), []).append(i)
        for time_s in sorted(set(self._due.values())):
            self.scheduler.at(time_s, partial(self._fire_due, time_s))
        for p in self.phases:
            if p.timing.start is not None:
                start = p.timing.start
                if start <= self.sim.now:
                    self._begin(p.index)
                else:
                    self.scheduler.at(start, partial(self._begin, p.index))
            elif predecessor(self.phases, p) is None:
                self._begin(p.index)
        self.scheduler.run(lambda: self._unfinished > 0)
        self._warn_unfired()

    def _warn_unfired(self) -> None:
        end_s = self.sim.now
        for i, event in enumerate(self.events):
            if i in self._fired:
                continue
            when = (
                f"at {self._due[i]:g} s"
                if i in self._due
                else f"{event.edge} of {event.relative_to!r} + {event.offset:g} s"
            )
            label = f" ({event.name})" if event.name else ""
            warn(
                f"{self.path}: events.{i}{label} ({when}) never fired: the run ends when its "
                f"last phase ends, at {end_s:g} s"
            )
