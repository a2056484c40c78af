"""The simulation context: a SimPy environment, its random streams and flow network."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import simpy

from flashsim.engine.flows import FlowNetwork
from flashsim.engine.queues import FifoQueue, QueueEnvironment
from flashsim.engine.randomness import RandomStreams


class Simulation:
    """One simulated run: clock, seeded random streams and the flow network.

    Parameters
    ----------
    seed : int
        Seed from which every component stream is derived.

    Attributes
    ----------
    env : QueueEnvironment
        The event loop (a :class:`simpy.Environment` that registers the
        :class:`~flashsim.engine.queues.FifoQueue` created in it); ``env.now``
        is simulated time in seconds.
    flows : FlowNetwork
        Resources and flows of flow fidelity.
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.env = QueueEnvironment()
        self._streams = RandomStreams(seed)
        self.flows = FlowNetwork(self.env)
        self._part_listeners: list[Callable[[str, str | None], None]] = []
        self._state_listeners: list[Callable[[str], None]] = []
        #: Set by a timeline (:class:`flashsim.timeline.scheduler.Scheduler`) while phases
        #: share the clock: :meth:`run` from a phase then waits for its ``until`` there.
        self._scheduler: Callable[[float | simpy.Event | None], Any] | None = None

    @property
    def now(self) -> float:
        """Simulated time in seconds."""
        return float(self.env.now)

    @property
    def queues(self) -> list[FifoQueue]:
        """Every request-fidelity queue created in this simulation, in order of creation."""
        return self.env.queues

    def rng(self, name: str) -> np.random.Generator:
        """The random stream of component ``name`` (see :class:`RandomStreams`)."""
        return self._streams.stream(name)

    def run(self, until: float | simpy.Event | None = None) -> None:
        """Run the event loop until a time (s), an event, or no events remain.

        Inside a timeline whose phases share the clock, a phase's call gives
        the clock to the scheduler until its ``until`` comes, meanwhile other
        phases and events run.
        """
        if self._scheduler is not None:
            self._scheduler(until)
            return
        self.env.run(until=until)

    def begin_part(self, label: str, analytic: str | None = None) -> None:
        """Say that part ``label`` of the running phase starts now (a sub-phase, a job set).

        Phases made of parts (io500's sub-phases, the jobs running together)
        call it at each boundary; reports of what limited each interval
        (:mod:`flashsim.measure.limits`) listen.  It changes nothing in the run.
        ``analytic`` names the model that sets the part's rate when the part
        moves the clock without simulating work (a metadata rate formula).
        """
        for listener in self._part_listeners:
            listener(label, analytic)

    def add_part_listener(self, callback: Callable[[str, str | None], None]) -> None:
        """Call ``callback(label, analytic)`` at every :meth:`begin_part`."""
        self._part_listeners.append(callback)

    def remove_part_listener(self, callback: Callable[[str, str | None], None]) -> None:
        """Stop calling ``callback`` (added by :meth:`add_part_listener`)."""
        self._part_listeners.remove(callback)

    def state_changed(self, label: str) -> None:
        """Say that a component's state changed now (a drive failed, a rebuild ended).

        Components call it at the changes a report should show at their moment
        (``"perlmutter.oss3.ost0: drive 0 failed"``); the run's state recorder
        (:mod:`flashsim.measure.timeline`) listens.  It changes nothing in the run.
        """
        for listener in self._state_listeners:
            listener(label)

    def add_state_listener(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(label)`` at every :meth:`state_changed`."""
        self._state_listeners.append(callback)

    def remove_state_listener(self, callback: Callable[[str], None]) -> None:
        """Stop calling ``callback`` (added by :meth:`add_state_listener`)."""
        self._state_listeners.remove(callback)
