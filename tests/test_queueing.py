"""Request fidelity against queueing theory: M/M/1, M/M/c, M/D/1, Little's law."""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import numpy as np
import pytest
import simpy

from flashsim.engine.distributions import Deterministic, Distribution, Exponential
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation

SEEDS = (1, 2, 3, 4, 5)
CUSTOMERS = 60_000
TOLERANCE = 0.03  # relative, on the mean over SEEDS


def simulate(
    seed: int, arrival_rate: float, service: Distribution, servers: int
) -> dict[str, np.ndarray]:
    sim = Simulation(seed)
    queue = FifoQueue(sim.env, "q", servers)
    inter = sim.rng("arrivals").exponential(1.0 / arrival_rate, CUSTOMERS)
    services = service.sample(sim.rng("service"), CUSTOMERS)

    def arrivals() -> Generator[simpy.Event, Any, None]:
        for gap, s in zip(inter, services, strict=True):
            yield sim.env.timeout(gap)
            queue.visit(float(s))

    sim.env.process(arrivals())
    sim.run()
    rec = queue.records()
    warm = CUSTOMERS // 10
    return {k: v[warm:] for k, v in rec.items()}


def erlang_c_wait(lam: float, mu: float, c: int) -> float:
    """Mean wait in queue of M/M/c (Erlang C)."""
    a = lam / mu
    rho = a / c
    top = a**c / math.factorial(c) / (1 - rho)
    p_wait = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
    return p_wait / (c * mu - lam)


def mean_wait(lam: float, service: Distribution, servers: int) -> float:
    return float(np.mean([simulate(s, lam, service, servers)["wait_s"].mean() for s in SEEDS]))


def test_mm1_mean_wait() -> None:
    lam, mu = 0.5, 1.0
    expected = (lam / mu) / (mu - lam)
    assert mean_wait(lam, Exponential(1 / mu), 1) == pytest.approx(expected, rel=TOLERANCE)


def test_mmc_mean_wait() -> None:
    lam, mu, c = 3.0, 1.0, 4
    expected = erlang_c_wait(lam, mu, c)
    assert mean_wait(lam, Exponential(1 / mu), c) == pytest.approx(expected, rel=TOLERANCE)


def test_md1_pollaczek_khinchine() -> None:
    lam, s = 0.6, 1.0
    rho = lam * s
    expected = rho * s / (2 * (1 - rho))  # P-K with zero service variance
    assert mean_wait(lam, Deterministic(s), 1) == pytest.approx(expected, rel=TOLERANCE)


def test_mg1_pk_uses_the_distributions_variance() -> None:
    from flashsim.engine.distributions import LogNormal

    lam = 0.5
    service = LogNormal(1.0, 0.5)
    es2 = service.variance + service.mean**2
    expected = lam * es2 / (2 * (1 - lam * service.mean))
    assert mean_wait(lam, service, 1) == pytest.approx(expected, rel=TOLERANCE)


def test_littles_law() -> None:
    for seed in SEEDS[:3]:
        rec = simulate(seed, 0.8, Exponential(1.0), 1)
        arr, dep = rec["arrival_s"], rec["departure_s"]
        t0, t1 = arr[0], arr[-1]
        # Time-average number in system over [t0, t1], measured independently of W.
        times = np.concatenate([arr, dep])
        steps = np.concatenate([np.ones(arr.size), -np.ones(dep.size)])
        order = np.argsort(times, kind="stable")
        times, count = times[order], np.cumsum(steps[order])
        inside = (times >= t0) & (times <= t1)
        ts = np.append(times[inside], t1)
        area = float(np.sum(count[inside] * np.diff(ts)))
        L = area / (t1 - t0)
        lam = arr.size / (t1 - t0)
        W = float(np.mean(dep - arr))
        assert pytest.approx(lam * W, rel=TOLERANCE) == L


def test_distributions_carry_their_moments() -> None:
    from flashsim.engine.distributions import Empirical, Gamma, LogNormal, with_mean_and_cv

    rng = np.random.default_rng(0)
    for dist in (
        Exponential(2.0),
        LogNormal(3.0, 1.5),
        Gamma(2.0, 0.5),
        Deterministic(4.0),
        Empirical([1.0, 2.0, 6.0]),
        with_mean_and_cv("gamma", 5.0, 0.2),
    ):
        x = dist.sample(rng, 400_000)
        assert x.mean() == pytest.approx(dist.mean, rel=0.01)
        assert x.var() == pytest.approx(dist.variance, rel=0.03, abs=1e-12)
    with pytest.raises(ValueError, match="kind"):
        with_mean_and_cv("weibull", 1.0, 1.0)
