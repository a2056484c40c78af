"""A closed-loop request driver for request fidelity.

``customers`` requests are kept in flight (e.g. ranks x queue depth); each
request follows a route of queue visits chosen by the caller, and the next
request of that customer is issued when it completes.  Throughput is measured
until run-length control is satisfied (batch means over fixed-count intervals)
and reported with its confidence half-width.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import simpy

from flashsim.engine.queues import FifoQueue
from flashsim.engine.runlength import Estimate, RunLengthControl
from flashsim.engine.simulation import Simulation

#: One stage of a request's route: the queue, the service time (s) it holds a
#: server, and the delay (s) after service that holds none.
Visit = tuple[FifoQueue, float, float]


@dataclass
class ClosedLoopResult:
    """Steady-state throughput of a closed loop.

    Attributes
    ----------
    ops_per_s : float
        Completed requests per second after warm-up deletion (ratio estimator).
    estimate : Estimate
        Batch-means estimate of the per-interval rate, with its half-width.
    requests : int
        Requests completed in total.
    elapsed_s : float
        Simulated time of the measurement in seconds.
    responses_s : ndarray
        Response times (s) of the requests after warm-up deletion.
    """

    ops_per_s: float
    estimate: Estimate
    requests: int
    elapsed_s: float
    responses_s: npt.NDArray[np.float64]

    @property
    def rel_halfwidth(self) -> float:
        """Relative 95 % confidence half-width of the throughput."""
        return self.estimate.rel_halfwidth


def run_closed_loop(
    sim: Simulation,
    route: Callable[[int], Iterable[Visit]],
    customers: int,
    control: RunLengthControl,
    sample_every: int = 200,
) -> ClosedLoopResult:
    """Drive ``customers`` concurrent request loops until ``control`` is satisfied.

    Parameters
    ----------
    sim : Simulation
        The simulation whose clock and queues are used.
    route : callable
        ``route(customer)`` returns the visits of that customer's next request.
    customers : int
        Requests kept in flight (>= 1).
    control : RunLengthControl
        Stopping rule over per-interval throughput samples.
    sample_every : int
        Completions per throughput sample (>= 1).
    """
    if customers < 1:
        raise ValueError(f"customers(={customers}) must be >= 1")
    if sample_every < 1:
        raise ValueError(f"sample_every(={sample_every}) must be >= 1")
    env = sim.env
    start = env.now
    completions: list[float] = []
    responses: list[float] = []
    samples: list[float] = []
    stop = env.event()

    def customer(index: int) -> Generator[simpy.Event, Any, None]:
        while not stop.triggered:
            issued = env.now
            for queue, service_s, delay_s in route(index):
                yield queue.visit(service_s, delay_s)
            completions.append(env.now)
            responses.append(env.now - issued)
            if len(completions) % sample_every == 0:
                k = len(completions) // sample_every
                t0 = completions[(k - 1) * sample_every - 1] if k > 1 else start
                samples.append(sample_every / (env.now - t0))
                if control.done(samples) and not stop.triggered:
                    stop.succeed()

    for index in range(customers):
        env.process(customer(index))
    sim.run(stop)
    kept = int(control.warmup_fraction * len(samples))
    t_first = completions[kept * sample_every - 1] if kept else start
    t_last = completions[len(samples) * sample_every - 1]
    ops = (len(samples) - kept) * sample_every / (t_last - t_first)
    warm = kept * sample_every
    return ClosedLoopResult(
        ops_per_s=ops,
        estimate=control.estimate(samples),
        requests=len(completions),
        elapsed_s=env.now - start,
        responses_s=np.asarray(responses[warm:]),
    )
