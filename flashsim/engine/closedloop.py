"""A closed-loop request driver for request fidelity.

Each customer (a rank's request slot: ranks x queue depth of them) issues a
request, waits for it, and issues the next, until run-length control is
satisfied or every customer has stopped.  Throughput is sampled over
fixed-count intervals; the steady-state rate and its batch-means confidence
half-width are reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Sequence
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
#: A SimPy generator that performs one request from issue to completion.
Request = Generator[simpy.Event, Any, None]


def visit_all(visits: Sequence[Visit]) -> Request:
    """Perform a request that visits queues one after another."""
    for queue, service_s, delay_s in visits:
        yield queue.visit(service_s, delay_s)


@dataclass
class ClosedLoopResult:
    """Steady-state throughput of a closed loop.

    Attributes
    ----------
    ops_per_s : float
        Completed requests per second: the ratio estimator over the samples
        kept after warm-up deletion, or all completions over the elapsed time
        when too few samples were taken for batch means.
    estimate : Estimate or None
        Batch-means estimate of the per-interval rate with its half-width;
        ``None`` when fewer than two samples per batch were taken.
    requests : int
        Requests completed in total.
    elapsed_s : float
        Simulated time (s) until the stop decision.
    responses_s : ndarray
        Response times (s) of the requests after warm-up deletion.
    """

    ops_per_s: float
    estimate: Estimate | None
    requests: int
    elapsed_s: float
    responses_s: npt.NDArray[np.float64]

    @property
    def rel_halfwidth(self) -> float | None:
        """Relative 95 % confidence half-width of the throughput (``None`` if unknown)."""
        return self.estimate.rel_halfwidth if self.estimate is not None else None


def run_closed_loop(
    sim: Simulation,
    request: Callable[[int], Request],
    customers: Sequence[int],
    control: RunLengthControl,
    sample_every: int = 200,
    keep_going: Callable[[int], bool] | None = None,
    drain: bool = False,
) -> ClosedLoopResult:
    """Drive concurrent request loops until ``control`` is satisfied.

    Parameters
    ----------
    sim : Simulation
        The simulation whose clock is used.
    request : callable
        ``request(key)`` returns a SimPy generator performing one request of
        the customer with that key (e.g. its rank).
    customers : sequence of int
        One key per concurrent request loop; keys may repeat (a rank with
        queue depth ``q`` appears ``q`` times).
    control : RunLengthControl
        Stopping rule over per-interval throughput samples.
    sample_every : int
        Completions per throughput sample (>= 1).
    keep_going : callable, optional
        ``keep_going(key)`` is asked before each request; a loop ends when it
        returns False (a rank out of data, a stonewall deadline).
    drain : bool
        After the stop decision, let requests in flight complete so the
        system is idle for what follows.
    """
    if not customers:
        raise ValueError("customers must not be empty")
    if sample_every < 1:
        raise ValueError(f"sample_every(={sample_every}) must be >= 1")
    env = sim.env
    start = env.now
    completions: list[float] = []
    responses: list[float] = []
    samples: list[float] = []
    stop = env.event()

    def loop(key: int) -> Generator[simpy.Event, Any, None]:
        while not stop.triggered and (keep_going is None or keep_going(key)):
            issued = env.now
            yield from request(key)
            completions.append(env.now)
            responses.append(env.now - issued)
            if len(completions) % sample_every == 0:
                k = len(completions) // sample_every
                t0 = completions[(k - 1) * sample_every - 1] if k > 1 else start
                samples.append(sample_every / max(env.now - t0, 1e-15))
                if control.done(samples) and not stop.triggered:
                    stop.succeed()

    procs = [env.process(loop(key)) for key in customers]
    sim.run(env.any_of([stop, env.all_of(procs)]))
    elapsed = env.now - start
    estimate: Estimate | None = None
    kept = 0
    if len(samples) >= 2 * control.n_batches:
        estimate = control.estimate(samples)
        kept = int(control.warmup_fraction * len(samples))
        t_first = completions[kept * sample_every - 1] if kept else start
        t_last = completions[len(samples) * sample_every - 1]
        ops = (len(samples) - kept) * sample_every / (t_last - t_first)
    else:
        ops = len(completions) / elapsed if elapsed > 0 else math.nan
    requests = len(completions)
    if drain:
        if not stop.triggered:
            stop.succeed()
        sim.run(env.all_of(procs))
    return ClosedLoopResult(
        ops_per_s=ops,
        estimate=estimate,
        requests=requests,
        elapsed_s=elapsed,
        responses_s=np.asarray(responses[kept * sample_every : requests]),
    )
