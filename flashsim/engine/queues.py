"""Request fidelity: first-come-first-served multi-server queues.

A :class:`FifoQueue` with ``c`` identical servers assigns each arriving request
to the server that frees first (the Kiefer-Wolfowitz workload recursion): under
FCFS with service times independent of the future, the start time
``max(arrival, earliest free server)`` and the departure time are known at
arrival.  A visit therefore costs one SimPy event, which is what makes request
fidelity fast enough for small-scale latency studies.
"""

from __future__ import annotations

import heapq

import numpy as np
import numpy.typing as npt
import simpy


class FifoQueue:
    """An FCFS queue with ``servers`` identical servers that records every visit.

    Parameters
    ----------
    env : simpy.Environment
        The simulation clock.
    name : str
        Dotted component name.
    servers : int
        Number of servers ``c`` (>= 1), e.g. an SSD's internal parallelism.
    """

    def __init__(self, env: simpy.Environment, name: str, servers: int = 1) -> None:
        if servers < 1:
            raise ValueError(f"{name}: servers(={servers}) must be >= 1")
        self.env = env
        self.name = name
        self.servers = servers
        self._free_at = [0.0] * servers  # a heap of times at which each server frees
        self._arrivals: list[float] = []
        self._starts: list[float] = []
        self._departures: list[float] = []
        self.busy_time_s = 0.0

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
