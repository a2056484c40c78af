"""Batch means and run-length control."""

from __future__ import annotations

import numpy as np
import pytest

from flashsim.engine.runlength import RunLengthControl, batch_means


def test_batch_means_interval_covers_the_true_mean() -> None:
    rng = np.random.default_rng(11)
    hits = 0
    trials = 400
    for _ in range(trials):
        # AR(1) series: correlated, mean 5.
        e = rng.normal(0, 1, 4000)
        x = np.empty_like(e)
        x[0] = 0.0
        for i in range(1, x.size):
            x[i] = 0.5 * x[i - 1] + e[i]
        est = batch_means(x + 5.0, n_batches=20)
        hits += abs(est.mean - 5.0) <= est.halfwidth
    assert 0.90 <= hits / trials <= 0.99


def test_control_stops_once_precise_enough() -> None:
    rng = np.random.default_rng(1)
    control = RunLengthControl(target_rel_halfwidth=0.01, min_samples=40)
    samples: list[float] = []
    while not control.done(samples):
        samples.extend(rng.normal(100.0, 10.0, 10))
    est = control.estimate(samples)
    assert est.rel_halfwidth < 0.01
    assert est.mean == pytest.approx(100.0, rel=0.02)
    assert len(samples) < 100_000


def test_invalid_target_is_refused() -> None:
    with pytest.raises(ValueError, match="target_rel_halfwidth"):
        RunLengthControl(target_rel_halfwidth=0)
