"""Cooperative phases on one SimPy clock: each phase a greenlet, one scheduler advancing time.

A phase's code is written as if it had the simulation to itself: it starts
flows or processes and calls :meth:`Simulation.run(until)
<flashsim.engine.simulation.Simulation.run>`.  Inside a :class:`Scheduler`,
that call switches from the phase's greenlet to the scheduler's, which steps
the environment until some phase's ``until`` comes (or a phase is due to
start), then switches back to that phase.  Phases therefore share the clock,
the flow network and every component, and run at the same time exactly
where their ``until`` s interleave; there are no threads, and the order of
everything is fixed by the SimPy event queue, so a run is deterministic.

A phase alone (the others waiting for it to end) sees exactly what
``env.run(until)`` would give it: the same ``until`` event, scheduled the
same way, and no other event added to the queue.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import simpy
from greenlet import GreenletExit, greenlet
from simpy.core import EmptySchedule, StopSimulation
from simpy.events import URGENT, Event

from flashsim.engine.simulation import Simulation

#: What a phase greenlet is resumed with: a value, or an exception thrown into it.
_Resume = tuple[bool, Any]


@dataclass(eq=False)
class Task:
    """One greenlet the scheduler runs: a phase run.

    Attributes
    ----------
    label : str
        For messages.
    body : callable
        What the greenlet runs (its return value is dropped).
    on_end : callable
        Called (in the scheduler) with the task when the body has returned.
    """

    label: str
    body: Callable[[], Any]
    on_end: Callable[[Task], None]
    glet: greenlet | None = field(default=None, repr=False)
    waiting_empty: bool = False

    @property
    def done(self) -> bool:
        """Whether the body has returned."""
        return self.glet is not None and bool(self.glet.dead)


class Scheduler:
    """Runs tasks (phase greenlets) on one simulation's clock; see the module docstring.

    Parameters
    ----------
    sim : Simulation
        The simulation; while :meth:`run` runs, its ``run`` switches here from a task.
    """

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.env = sim.env
        self._main: greenlet | None = None
        self._ready: deque[tuple[Task, _Resume]] = deque()
        self._tasks: dict[greenlet, Task] = {}
        self._live = 0
        self._last: Task | None = None
        #: While one task at most is live, the environment runs in ``env.run`` (as without a
        #: scheduler), and a wake-up stops it; with more, step by step, checking after each.
        self._single = False
        self._closing = False

    # ------------------------------------------------------------ from tasks
    def wait(self, until: float | simpy.Event | None) -> Any:
        """``Simulation.run(until)`` from a task: give the clock back until ``until`` comes.

        Called from anywhere else (the scheduler itself, an event's action), it
        runs the environment directly.
        """
        task = self._tasks.get(greenlet.getcurrent())
        if task is not None and self._closing:
            raise GreenletExit  # the run failed elsewhere: unwind this phase, run nothing more
        if task is None or self._main is None:
            return self.env.run(until=until)
        env = self.env
        if until is None:
            task.waiting_empty = True
        else:
            if not isinstance(until, Event):
                at = float(until)
                if at <= env.now:
                    raise ValueError(
                        f"until ({at}) must be greater than the current simulation time"
                    )
                until = Event(env)
                until._ok = True
                until._value = None
                env.schedule(until, URGENT, at - env.now)
            elif until.callbacks is None:
                return until.value
            until.callbacks.append(lambda ev: self._wake(task, ev))
        return self._main.switch()

    def _wake(self, task: Task, event: Event) -> None:
        """The ``until`` of ``task`` came: resume it after this step.

        With one task live this stops ``env.run`` as its own ``until`` would
        (simpy's ``StopSimulation``, skipping later callbacks of the event, as
        simpy does); with more, later callbacks run (another task may wait on it).
        """
        if event.ok:
            self._ready.append((task, (True, event.value)))
        else:
            event._defused = True
            self._ready.append((task, (False, event._value)))
        if self._single:
            raise StopSimulation(None)

    # ------------------------------------------------------------ the loop
    def start(self, task: Task) -> None:
        """Make ``task`` ready to start now (it runs when the scheduler next switches)."""
        glet = greenlet(self._body(task))
        glet.gr_context = contextvars.copy_context()
        task.glet = glet
        self._tasks[glet] = task
        self._live += 1
        self._ready.append((task, (True, None)))

    def _body(self, task: Task) -> Callable[[], None]:
        def run(*_first: Any) -> None:  # the first switch passes the start's value
            task.body()

        return run

    def at(self, time_s: float, callback: Callable[[], None]) -> None:
        """Call ``callback`` (in the scheduler) when the clock reaches ``time_s``."""
        timer = self.env.timeout(max(time_s - self.env.now, 0.0))
        timer.callbacks.append(lambda _ev: self._call(callback))

    def _call(self, callback: Callable[[], None]) -> None:
        """A timer's callback; stop ``env.run`` (one task live) if it made a task ready."""
        callback()
        if self._single and self._ready:
            raise StopSimulation(None)

    def run(self, pending: Callable[[], bool]) -> None:
        """Run every task started (and those they start) until none is live.

        ``pending()`` says whether a task may still be started later (a phase
        waiting for its start time); the environment is advanced meanwhile.
        Exceptions of a task propagate; an exception of the environment itself
        (a process failing) is thrown into the task that last ran, which sees it
        raised from its ``Simulation.run``, as it would without the scheduler.
        """
        self._main = greenlet.getcurrent()
        sim = self.sim
        sim._scheduler = self.wait
        try:
            while self._live or pending():
                if self._ready:
                    self._resume(*self._ready.popleft())
                    continue
                self._advance()
        finally:
            self._close()
            sim._scheduler = None
            self._main = None

    def _close(self) -> None:
        """Unwind the tasks still suspended (the run failed): their ``run`` raises ``GreenletExit``.

        Errors while they unwind are dropped: the error that stopped the run is the one reported.
        """
        self._closing = True
        for glet in list(self._tasks):
            if glet and not glet.dead:
                with contextlib.suppress(BaseException):  # see the docstring
                    glet.throw(GreenletExit)
        self._tasks.clear()

    def _resume(self, task: Task, how: _Resume) -> None:
        glet = task.glet
        assert glet is not None
        self._last = task
        ok, value = how
        if ok:
            glet.switch(value)
        else:
            glet.throw(value)
        if glet.dead:
            self._live -= 1
            del self._tasks[glet]
            task.on_end(task)

    def _advance(self) -> None:
        """Step the environment until a task is ready (or nothing is left to step)."""
        env = self.env
        ready = self._ready
        step = env.step
        try:
            if self._live <= 1:
                self._single = True
                try:
                    env.run()  # returns at a wake-up (StopSimulation) or with no event left
                finally:
                    self._single = False
                if not ready:
                    self._empty()
                return
            while not ready:
                step()
        except EmptySchedule:
            self._empty()
        except BaseException as exc:
            last = self._last
            if last is None or last.done or last.glet is None:
                raise
            self._ready.appendleft((last, (False, exc)))

    def _empty(self) -> None:
        """No event is left: wake the tasks that ran ``until=None``; the others never would."""
        waiting = [t for t in self._tasks.values() if not t.done]
        empty = [t for t in waiting if t.waiting_empty]
        for task in empty:
            task.waiting_empty = False
            self._ready.append((task, (True, None)))
        if empty:
            return
        if waiting:
            task = waiting[0]
            self._ready.append(
                (
                    task,
                    (
                        False,
                        RuntimeError(
                            f"{task.label}: no scheduled events left but its 'until' event "
                            "was not triggered"
                        ),
                    ),
                )
            )
            return
        raise RuntimeError("timeline: no event left and a phase still waits for its start")
