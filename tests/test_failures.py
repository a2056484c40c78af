"""Drive failure injection and data-loss probability (components.failures)."""

from __future__ import annotations

import itertools
import math
import time
from pathlib import Path

import numpy as np
import pytest

from flashsim.components import failures as fl
from flashsim.config import ConfigError
from flashsim.engine.randomness import RandomStreams
from flashsim.scenario import load_scenario, run_loaded
from flashsim.systems.lustre.data_loss import DataLossDetails

MODEL = Path(__file__).resolve().parent.parent / "models/systems/perlmutter.toml"
DAY = 86400.0


def test_rates_from_mtbf_and_afr() -> None:
    # 2,000,000 h MTBF is the 0.44 % AFR of drive datasheets (8760 h/year).
    assert fl.afr_from_mtbf(fl.PM1733_MTBF_H) == pytest.approx(0.0044, abs=5e-5)
    lam = fl.failure_rate_per_s(0.0044)
    assert -math.expm1(-lam * fl.YEAR_S) == pytest.approx(0.0044)
    assert fl.failure_rate_per_s(0.0) == 0.0
    # Spider (seed 003): 4 failures a month over 13,440 disks.
    assert fl.spider_afr() == pytest.approx(48 / 13440)


def test_bad_rates_are_refused() -> None:
    for bad in (-0.01, 1.0, 2.0):
        with pytest.raises(ValueError, match=r"afr\(=.*\) must be an annualised failure rate"):
            fl.failure_rate_per_s(bad)
    with pytest.raises(ValueError, match="mtbf_h"):
        fl.afr_from_mtbf(0.0)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="rebuild_s"):
        fl.simulate_data_loss(rng, 1, 12, 2, 0.01, -1.0, 10)
    with pytest.raises(ValueError, match="tolerance"):
        fl.simulate_data_loss(rng, 1, 12, 12, 0.01, 3600.0, 10)


def test_failure_times_are_seeded_per_drive() -> None:
    def times(seed: int, drives: int) -> np.ndarray:
        streams = RandomStreams(seed)
        return fl.failure_times(lambda i: streams.stream(f"ost0.drive{i}.failure"), drives, 0.3)

    a, b = times(1, 12), times(1, 24)
    assert np.array_equal(a, b[:12])  # adding drives changes no other drive's lifetime
    assert not np.array_equal(a, times(2, 12))
    # Mean lifetime 1 / lambda: over many drives, within 5 %.
    many = times(3, 4000)
    assert many.mean() == pytest.approx(1 / fl.failure_rate_per_s(0.3), rel=0.05)


def test_monte_carlo_matches_the_markov_chain() -> None:
    """Exponential rebuilds: the Monte Carlo is the birth-death chain, up to sampling noise.

    AFR 30 %, 10-day rebuilds, one RAID6 array of 12: P(loss in a year) = 1.8 %;
    4 x 10^5 system-years give a relative standard error of 1.2 %; tolerance 5 %.
    """
    rng = np.random.default_rng(11)
    afr, rebuild = 0.3, 10 * DAY
    est = fl.simulate_data_loss(rng, 1, 12, 2, afr, rebuild, 400_000, repair="exponential")
    lam = fl.failure_rate_per_s(afr)
    exact = fl.markov_loss_probability(12, 2, lam, 1 / rebuild, fl.YEAR_S)
    assert est.probability == pytest.approx(exact, rel=0.05)
    assert est.ci_low < exact < est.ci_high
    # Failures per array-year: 12 slots at rate lambda, less their down time.
    assert est.failures_per_trial == pytest.approx(12 * lam * fl.YEAR_S, rel=0.05)


def test_fixed_rebuild_time_agrees_with_the_chain_to_first_order() -> None:
    """With a rare third failure, only the mean rebuild time matters (both ~ 3 lambda^3 R^2)."""
    rng = np.random.default_rng(5)
    afr, rebuild = 0.2, 5 * DAY
    est = fl.simulate_data_loss(rng, 40, 12, 2, afr, rebuild, 20_000, repair="fixed")
    lam = fl.failure_rate_per_s(afr)
    exact = fl.markov_loss_probability(12, 2, lam, 1 / rebuild, fl.YEAR_S, groups=40)
    assert est.probability == pytest.approx(exact, rel=0.2)


def test_markov_chain_against_chen_et_al_closed_form() -> None:
    """Chen et al. 1994 §3.4 (P+Q): MTTDL = MTTF^3 / (N (G-1)(G-2) MTTR^2), one repair at a time."""
    lam, mu = 1e-9, 1e-4
    chen = fl.mttdl_raid6_chen(12, 12, 1 / lam, 1 / mu)
    assert fl.markov_mttdl(12, 2, lam, mu, parallel_repair=False) == pytest.approx(chen, rel=1e-3)
    # Independent parallel rebuilds halve the chance the third failure lands in the window.
    assert fl.markov_mttdl(12, 2, lam, mu, parallel_repair=True) == pytest.approx(
        2 * chen, rel=1e-3
    )
    # Far below MTTDL, P(loss within T) = 1 - exp(-T / MTTDL).
    mttdl = fl.markov_mttdl(12, 2, lam, mu)
    p = fl.markov_loss_probability(12, 2, lam, mu, fl.YEAR_S, groups=274)
    assert p == pytest.approx(-math.expm1(-274 * fl.YEAR_S / mttdl), rel=1e-3)


def test_perlmutter_scale_is_bounded() -> None:
    """274 arrays x 12 PM1733, 10^5 system-years: no loss at a 1 h rebuild."""
    rng = np.random.default_rng(3)
    afr = fl.afr_from_mtbf(fl.PM1733_MTBF_H)
    est = fl.simulate_data_loss(rng, 274, 12, 2, afr, 3600.0, 100_000)
    assert est.failures_per_trial == pytest.approx(274 * 12 * afr, rel=0.02)
    lam = fl.failure_rate_per_s(afr)
    exact = fl.markov_loss_probability(12, 2, lam, 1 / 3600.0, fl.YEAR_S, groups=274)
    assert exact < 1e-9 and est.losses == 0 and est.ci_high < 4e-5


@pytest.mark.slow  # a wall-clock budget, kept out of the 2-core CI run
def test_perlmutter_scale_runs_in_seconds() -> None:
    start = time.perf_counter()
    fl.simulate_data_loss(np.random.default_rng(3), 274, 12, 2, 0.0044, 3600.0, 100_000)
    assert time.perf_counter() - start < 10.0


def test_data_loss_phase_falls_with_rebuild_priority(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        f'name = "t"\nsystem = "{MODEL.as_posix()}"\nseed = 1\n\n[[phases]]\n'
        'name = "d"\nworkload = "data-loss"\npriorities = [0.1, 0.5, 1.0]\n'
        "afrs = [0.0044, 0.05]\ntrials = 2000\n"
    )
    result = run_loaded(load_scenario(path, {})).phases[0]
    details = result.details(DataLossDetails)
    assert details.arrays == 274 and details.width == 12 and details.tolerance == 2
    for afr in (0.0044, 0.05):
        pts = [p for p in details.points if p.afr == afr]
        down = [p.rebuild_s for p in pts]
        markov = [p.markov_probability for p in pts]
        assert all(a > b for a, b in itertools.pairwise(down))
        assert all(a > b for a, b in itertools.pairwise(markov))
    high = [p.markov_probability for p in details.points if p.afr == 0.05]
    low = [p.markov_probability for p in details.points if p.afr == 0.0044]
    assert all(h > lo for h, lo in zip(high, low, strict=True))


def test_data_loss_phase_refuses_bad_afr(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        f'name = "t"\nsystem = "{MODEL.as_posix()}"\nseed = 1\n\n[[phases]]\n'
        'name = "d"\nworkload = "data-loss"\nafrs = [1.5]\n'
    )
    with pytest.raises(ConfigError, match=r"afrs\.0.*annualised failure rate"):
        load_scenario(path, {})
