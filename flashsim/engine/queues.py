"""Request fidelity: first-come-first-served multi-server queues.

A :class:`FifoQueue` with ``c`` identical servers assigns each arriving request
to the server that frees first (the Kiefer-Wolfowitz workload recursion): under
FCFS with service times independent of the future, the start time
``max(arrival, earliest free server)`` and the departure time are known at
arrival.  A visit therefore costs one SimPy event, which is what makes request
fidelity fast enough for small-scale latency studies.

Queues created in a :class:`QueueEnvironment` (the environment of every
:class:`~flashsim.engine.simulation.Simulation`) register themselves in its
``queues`` list, so measurements (:mod:`flashsim.measure.bottlenecks`) can find
every queue of a run without each caller passing it along.
"""

from __future__ import annotations

import heapq

import numpy as np
import numpy.typing as npt
import simpy


class QueueEnvironment(simpy.Environment):
    """A SimPy environment that keeps a list of the :class:`FifoQueue` created in it.

    Parameters
    ----------
    initial_time : float
        Start time of the clock (s).

    Attributes
    ----------
    queues : list of FifoQueue
        Every queue created with this environment, in order of creation.
    """

    def __init__(self, initial_time: float = 0) -> None:
        super().__init__(initial_time)
        self.queues: list[FifoQueue] = []


class FifoQueue:
    """An FCFS queue with ``servers`` identical servers that records every visit.

    Parameters
    ----------
    env : simpy.Environment
        The simulation clock; a :class:`QueueEnvironment` registers the queue.
    name : str
        Dotted component name.
    servers : int
        Number of servers ``c`` (>= 1), e.g. an SSD's internal parallelism.
    kind : str, optional
        Component type for bottleneck reports; ``None`` to infer it from the
        name (:func:`flashsim.measure.bottlenecks.infer_kind`).
    """

    def __init__(
        self, env: simpy.Environment, name: str, servers: int = 1, kind: str | None = None
    ) -> None:
        if servers < 1:
            raise ValueError(f"{name}: servers(={servers}) must be >= 1")
        self.env = env
        self.name = name
        self.servers = servers
        self.kind = kind
        self._free_at = [0.0] * servers  # a heap of times at which each server frees
        self._arrivals: list[float] = []
        self._starts: list[float] = []
        self._departures: list[float] = []
        #: Service time (s) of every request that has joined, including service
        #: still to come; see :meth:`busy_done_s` for the part already served.
        self.busy_time_s = 0.0
        if isinstance(env, QueueEnvironment):
            env.queues.append(self)

    def visit(self, service_s: float, delay_s: float = 0.0) -> simpy.Timeout:
        """Join the queue now; the returned event fires at departure plus ``delay_s``.

        Parameters
        ----------
        service_s : float
            Time (s, >= 0) the request holds a server.
        delay_s : float
            Latency (s, >= 0) after service that holds no server, e.g. a wire
            or media access latency overlapped with other requests.
        """
        now = self.env.now
        free = heapq.heappop(self._free_at)
        start = free if free > now else now
        end = start + service_s
        heapq.heappush(self._free_at, end)
        self._arrivals.append(now)
        self._starts.append(start)
        self._departures.append(end)
        self.busy_time_s += service_s
        return self.env.timeout(end - now + delay_s)

    def busy_done_s(self) -> float:
        """Server-seconds of service delivered up to now (summed over the servers).

        Service already assigned but not yet delivered is left out: a server
        whose last request departs at ``f > now`` is busy without a gap from
        ``now`` to ``f`` (requests joined at or before ``now``), so that part
        is ``sum(max(f - now, 0))`` over the servers.  Mean utilisation over
        ``[t0, t1]`` is the difference of this counter over ``servers * (t1 - t0)``.
        """
        return self.busy_time_s - self.ahead_s()

    def ahead_s(self) -> float:
        """Service (s, summed over the servers) assigned but not yet delivered at ``now``."""
        now = float(self.env.now)
        return sum(f - now for f in self._free_at if f > now)

    @property
    def visits(self) -> int:
        """Number of requests that have joined."""
        return len(self._arrivals)

    def records(self) -> dict[str, npt.NDArray[np.float64]]:
        """Per-visit arrival, start and departure times (s), and waits and responses (s)."""
        arr = np.asarray(self._arrivals)
        start = np.asarray(self._starts)
        dep = np.asarray(self._departures)
        return {
            "arrival_s": arr,
            "start_s": start,
            "departure_s": dep,
            "wait_s": start - arr,
            "response_s": dep - arr,
        }
