"""Production mixes (seed 003 §2) and bandwidth series: shares, tails, bursts, conservation."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flashsim.config import ConfigError, validate
from flashsim.measure.series import DDN_POLL_INTERVAL_S, bandwidth_series, cdf_summary
from flashsim.workloads.mix import (
    PRESETS,
    MixJob,
    MixSpec,
    ParetoDist,
    draw_arrivals,
    generate_mix,
    request_shares,
    systematic_assignment,
)

COLS = ["reads", "writes", "bytes_read", "bytes_written"]


def _data(**over: Any) -> dict[str, Any]:
    """A mix table as a file writes it: many modest jobs, a large draw at little cost."""
    data: dict[str, Any] = {
        "preset": "widow1",
        "duration": "48 h",
        "arrivals": {"process": "poisson", "mean_interarrival": "1 min"},
        "nodes": {"dist": "pareto", "alpha": 1.5, "min": 1, "max": 16},
        "ranks_per_node": 4,
        "bursts": {"dist": "fixed", "value": 2},
        "compute_gap": {"dist": "exponential", "mean": "10 min"},
        "bytes_per_rank": {"dist": "lognormal", "median": "4 MiB", "sigma": 1.0, "max": "64 MiB"},
        "file_per_process": 0.5,
    }
    data.update(over)
    return data


def _spec(**over: Any) -> MixSpec:
    return MixSpec.model_validate(_data(**over))


@pytest.fixture(scope="module")
def big() -> dict[str, tuple[MixSpec, list[MixJob]]]:
    """One large draw per preset (~0.5 M calls each)."""
    out = {}
    for preset in PRESETS:
        spec = _spec(preset=preset)
        out[preset] = (spec, generate_mix(spec, np.random.default_rng(7), max_nodes=10_000))
    return out


# ------------------------------------------------------------------ mixtures over requests
@pytest.mark.parametrize("preset", ["widow1", "widow2", "widow3"])
def test_preset_read_fraction_holds_over_requests(
    big: dict[str, tuple[MixSpec, list[MixJob]]], preset: str
) -> None:
    """Seed 003 §2: 61.6 % reads (widow1), ~35 % (widow2/3), counted over requests.

    Tolerance: the systematic assignment misses by at most the largest
    burst's share of calls (computed from the draw, a few 1e-3 here), and we
    also require an absolute 0.01.
    """
    spec, jobs = big[preset]
    shares = request_shares(jobs, spec)
    assert shares["requests"] > 200_000
    target = PRESETS[preset]["read_fraction"]
    largest = max(
        np.bincount(np.unique(j.trace.ops.start_s, return_inverse=True)[1]).max() for j in jobs
    )
    bound = largest / shares["requests"]
    assert abs(shares["read_fraction"] - target) <= min(0.01, bound + 1e-12)


def test_request_size_mixture_holds_over_requests(
    big: dict[str, tuple[MixSpec, list[MixJob]]],
) -> None:
    """The seed's mix: 4-16 KiB, 512 KiB and 1 MiB (0.32 each ASSUMED), 0.04 elsewhere.

    Tolerance 0.01 absolute per class over ~0.5 M calls (the byte-weighted
    systematic assignment misses by at most one run per cut, here ~4e-3).
    """
    spec, jobs = big["widow1"]
    shares = request_shares(jobs, spec)["size_shares"]
    wanted = [c.probability for c in spec.request_sizes]
    assert sum(wanted[:3]) > 0.95  # "more than 95 % of requests" (seed 003 §2)
    assert shares == pytest.approx(wanted, abs=0.01)
    # Every call's size is one of the classes' sizes (none was invented).
    assert math.isclose(sum(shares), 1.0)


def test_direction_per_run_reaches_the_share_in_a_small_window() -> None:
    """Per-run directions: the read share misses by at most the largest run's share of calls."""
    spec = _spec(duration="2 h", direction_per="run")
    for seed in range(5):
        jobs = generate_mix(spec, np.random.default_rng(seed), max_nodes=64)
        shares = request_shares(jobs, spec)
        largest = max(
            np.bincount(
                np.unique(j.trace.ops.rank * 1e7 + j.trace.ops.start_s, return_inverse=True)[1]
            ).max()
            for j in jobs
        )
        assert abs(shares["read_fraction"] - 0.616) <= largest / shares["requests"]
    # A burst-wide direction is uniform across the burst's ranks by default.
    burst_spec = _spec(duration="2 h")
    for job in generate_mix(burst_spec, np.random.default_rng(3), max_nodes=64):
        ops = job.trace.ops
        for t in np.unique(ops.start_s):
            assert np.unique(ops.write[ops.start_s == t]).size == 1


@settings(max_examples=200, deadline=None)
@given(
    weights=st.lists(st.floats(0.0, 1e6), min_size=1, max_size=60),
    shares=st.lists(st.floats(0.01, 1.0), min_size=1, max_size=6),
    seed=st.integers(0, 2**32 - 1),
)
def test_systematic_assignment_bound(weights: list[float], shares: list[float], seed: int) -> None:
    """Each category's realised weight misses its share by at most the largest weight."""
    w = np.array(weights)
    p = np.array(shares) / sum(shares)
    cat = systematic_assignment(np.random.default_rng(seed), w, p)
    assert cat.min() >= 0 and cat.max() < p.size
    got = np.bincount(cat, weights=w, minlength=p.size)
    assert np.all(np.abs(got - p * w.sum()) <= w.max() * (1 + 1e-9) + 1e-6)


def test_systematic_marginals_are_the_shares() -> None:
    """Over many rotations, one item's category frequencies are the shares (+-0.01)."""
    rng = np.random.default_rng(0)
    w = np.array([5.0, 1.0, 1.0, 3.0])
    p = np.array([0.2, 0.5, 0.3])
    hits = np.zeros(3)
    for _ in range(4000):
        hits[systematic_assignment(rng, w, p)[0]] += 1
    assert hits / 4000 == pytest.approx(p, abs=0.025)  # binomial std <= 0.008


# ------------------------------------------------------------------ tails and bursts
def test_job_bytes_are_heavy_tailed() -> None:
    """Job volume p99 / median >> 1 with Pareto nodes and lognormal bytes; ~1 when fixed.

    Pareto(1.1) nodes alone give p99/median ~ (100/2)^(1/1.1) ~ 35, lognormal
    sigma = 2 bytes e^(2.33 * 2) ~ 100; 50 leaves room for the truncations.
    """
    heavy = _spec(
        duration="12 h",
        ranks_per_node=1,
        nodes={"dist": "pareto", "alpha": 1.1, "min": 1, "max": 1000},
        bytes_per_rank={"dist": "lognormal", "median": "1 MiB", "sigma": 2.0, "max": "16 GiB"},
    )
    jobs = generate_mix(heavy, np.random.default_rng(8), max_nodes=4096)
    volume = np.array([j.trace.ops.size_B.sum() for j in jobs])
    assert volume.size > 500
    assert np.percentile(volume, 99) / np.median(volume) > 50.0
    flat = _spec(
        duration="6 h",
        nodes={"dist": "fixed", "value": 2},
        bytes_per_rank={"dist": "fixed", "value": "8 MiB"},
        request_sizes=[{"size": "1 MiB", "probability": 1.0}],
    )
    flat_volume = np.array(
        [j.trace.ops.size_B.sum() for j in generate_mix(flat, np.random.default_rng(1), 64)]
    )
    assert np.percentile(flat_volume, 99) / np.median(flat_volume) < 1.01


def test_pareto_tail_index_by_hill_estimator() -> None:
    """Hill's estimator on the top 1 % of 200,000 Pareto(1.5) draws recovers alpha +- 0.1."""
    x = ParetoDist(dist="pareto", alpha=1.5, min=1.0).sample(np.random.default_rng(5), 200_000)
    top = np.sort(x)[-2001:]
    hill = 1.0 / np.mean(np.log(top[1:] / top[0]))
    assert hill == pytest.approx(1.5, abs=0.1)  # std of the estimate: 1.5/sqrt(2000) = 0.034
    assert x.min() >= 1.0


def test_truncation_is_inverse_cdf_not_clipping() -> None:
    """Truncated to the system, no probability mass piles up at the bound."""
    d = ParetoDist(dist="pareto", alpha=0.8, min=1.0)
    x = d.sample(np.random.default_rng(2), 100_000, upper=100.0)
    assert x.max() <= 100.0
    assert np.mean(x > 99.0) < 0.001  # clipping would put ~2.5 % there: (1/100)^0.8
    bounded = ParetoDist(dist="pareto", alpha=2.5, min=2.0, max=50.0)
    mean = bounded.sample(np.random.default_rng(4), 400_000).mean()
    assert mean == pytest.approx(bounded.expected(), rel=0.01)


def _dispersion(times: np.ndarray, horizon: float, window: float) -> float:
    counts = np.bincount((times // window).astype(int), minlength=int(horizon // window))
    return float(counts.var() / counts.mean())


def test_on_off_arrivals_are_bursty_and_poisson_is_not() -> None:
    """Index of dispersion of arrivals per 10 min: ~1 for Poisson, >> 1 for ON/OFF.

    Over 30 days (4320 windows) the Poisson estimate has std sqrt(2/4319) ~
    0.02, so +-0.15 is a 7-sigma band.  The ON/OFF mean rate matches
    ``(p_on + (1 - p_on) * off_activity) / on_interarrival`` within 5 %.
    """
    horizon = 30 * 86400.0
    poisson = _spec(duration="720 h")
    t = draw_arrivals(poisson, np.random.default_rng(11))
    assert _dispersion(t, horizon, 600.0) == pytest.approx(1.0, abs=0.15)
    assert np.all(np.diff(t) >= 0) and t.max() < horizon
    bursty = _spec(
        duration="720 h",
        arrivals={
            "process": "on-off",
            "on_interarrival": "20 s",
            "off_activity": 0.05,
            "on_period": {"dist": "exponential", "mean": "15 min"},
            "off_period": {"dist": "exponential", "mean": "45 min"},
        },
    )
    t = draw_arrivals(bursty, np.random.default_rng(11))
    assert _dispersion(t, horizon, 600.0) > 5.0
    rate = (0.25 + 0.75 * 0.05) / 20.0
    assert t.size / horizon == pytest.approx(rate, rel=0.05)


# ------------------------------------------------------------------ traces
def test_traces_conserve_and_are_merge_friendly(
    big: dict[str, tuple[MixSpec, list[MixJob]]],
) -> None:
    """Records equal the replayed calls exactly; runs are contiguous; files never overlap."""
    spec, jobs = big["widow2"]
    kinds = set()
    for job in jobs[:400]:
        trace = job.trace
        trace.check()
        assert trace.timing == "generated" and trace.nprocs == job.nodes * job.ranks_per_node
        assert (trace.records["module"] == "MIX").all()
        replayed = trace.replayed_counts()
        assert (replayed[COLS].to_numpy() == trace.records[COLS].to_numpy()).all()
        ops = trace.ops
        kinds.add(len(trace.files) == 1)
        # Within a run (same rank, same start) calls are contiguous and of one size.
        same = (ops.rank[1:] == ops.rank[:-1]) & (ops.start_s[1:] == ops.start_s[:-1])
        assert np.all(ops.offset_B[1:][same] == ops.offset_B[:-1][same] + ops.size_B[:-1][same])
        assert np.all(ops.size_B[1:][same] == ops.size_B[:-1][same])
        # No two calls of a job touch the same bytes of a file.
        order = np.lexsort((ops.offset_B, ops.file))
        f, off, size = ops.file[order], ops.offset_B[order], ops.size_B[order]
        same_file = f[1:] == f[:-1]
        assert np.all(off[1:][same_file] >= off[:-1][same_file] + size[:-1][same_file])
    assert kinds == {True, False}  # both shared-file and file-per-process jobs were drawn
    assert all(0.0 <= j.arrival_s < spec.duration for j in jobs)
    assert [j.arrival_s for j in jobs] == sorted(j.arrival_s for j in jobs)


def test_same_seed_same_jobs() -> None:
    spec = _spec(duration="3 h")
    a = generate_mix(spec, np.random.default_rng(42), 64)
    b = generate_mix(spec, np.random.default_rng(42), 64)
    c = generate_mix(spec, np.random.default_rng(43), 64)
    assert [(j.name, j.arrival_s, j.nodes) for j in a] == [
        (j.name, j.arrival_s, j.nodes) for j in b
    ]
    for x, y in zip(a, b, strict=True):
        for name in ("rank", "file", "write", "offset_B", "size_B", "start_s"):
            assert np.array_equal(getattr(x.trace.ops, name), getattr(y.trace.ops, name))
        assert x.trace.records.equals(y.trace.records)
    assert [j.arrival_s for j in a] != [j.arrival_s for j in c]


def test_nodes_truncated_to_the_system() -> None:
    spec = _spec(duration="12 h", nodes={"dist": "pareto", "alpha": 0.5, "min": 1})
    jobs = generate_mix(spec, np.random.default_rng(0), max_nodes=3)
    assert max(j.nodes for j in jobs) == 3 and min(j.nodes for j in jobs) == 1


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"nodes": {"dist": "pareto", "alpha": -1, "min": 1}}, "alpha"),
        ({"nodes": {"dist": "zipf", "s": 2}}, "dist"),
        ({"bytes_per_rank": {"dist": "fixed", "value": 5}}, "value"),
        ({"bytes_per_rank": {"dist": "pareto", "alpha": 1, "min": "2 GiB", "max": "1 GiB"}}, "max"),
        ({"bursts": {"dist": "choice", "values": [1, 2], "probabilities": [0.5]}}, "probabil"),
        ({"request_sizes": [{"size": "1 MiB", "probability": 0.9}]}, "request_sizes"),
        ({"request_sizes": [{"size": "1 MiB", "min": "4 KiB", "probability": 1}]}, "size"),
        ({"preset": "widow9"}, "preset"),
        ({"preset": None}, "read_fraction"),
        ({"read_fraction": 1.5}, "read_fraction"),
        ({"file_per_process": "lots"}, "file_per_process"),
        ({"bytes_per_rank": {"dist": "fixed", "value": "1e30 B"}}, "physical range"),
        ({"compute_gap": {"dist": "exponential", "mean": "5 parsecs"}}, "mean"),
    ],
)
def test_bad_spec_values_raise_a_clear_value_error(over: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        _spec(**over)


def test_bad_spec_through_config_names_the_key() -> None:
    data = _data(bytes_per_rank={"dist": "lognormal", "median": "4 MiB", "sigma": -1})
    with pytest.raises(ConfigError) as err:
        validate(MixSpec, data, "mix.toml")
    assert "bytes_per_rank" in str(err.value) and "sigma" in str(err.value)


def test_max_requests_guard() -> None:
    spec = _spec(duration="6 h", max_requests=1000)
    with pytest.raises(ValueError, match="max_requests"):
        generate_mix(spec, np.random.default_rng(0), 64)
    with pytest.raises(ValueError, match="max_nodes"):
        generate_mix(_spec(), np.random.default_rng(0), 0)
    # A truncation to the system that leaves a distribution no mass names its key.
    above = _spec(nodes={"dist": "choice", "values": [64, 128], "probabilities": [0.5, 0.5]})
    with pytest.raises(ValueError, match="nodes: truncation bound"):
        generate_mix(above, np.random.default_rng(0), 16)


# ------------------------------------------------------------------ bandwidth series
def test_bandwidth_series_by_hand() -> None:
    """Bytes spread uniformly over [start, end); zero-length ones land where they start."""
    start = np.array([0.0, 1.0, 3.0, -2.0])
    end = np.array([4.0, 3.0, 3.0, 2.0])
    size = np.array([8.0, 4.0, 10.0, 8.0])
    # [0,2): 4 (first) + 2 (second) + 4 (fourth, its half inside) = 10 B -> 5 B/s
    # [2,4): 4 + 2 + 10 (instantaneous at 3 s) = 16 B -> 8 B/s
    # [4,5): nothing (last interval cut at t1 = 5 s)
    series = bandwidth_series(start, end, size, 2.0, 0.0, 5.0)
    assert series == pytest.approx([5.0, 8.0, 0.0])
    assert DDN_POLL_INTERVAL_S == 2.0
    # The last, partial interval's rate is over its own length: 3 B in [4, 5) -> 3 B/s.
    assert bandwidth_series([4.0], [5.0], [3.0], 2.0, 0.0, 5.0) == pytest.approx([0, 0, 3.0])


def test_bandwidth_series_conserves_bytes_and_matches_a_loop() -> None:
    rng = np.random.default_rng(9)
    start = rng.random(500) * 90.0
    end = start + rng.exponential(3.0, 500) * (rng.random(500) < 0.8)
    size = rng.random(500) * 1e9
    series = bandwidth_series(start, end, size, 2.0, 0.0, 100.0)
    assert (series * 2.0).sum() == pytest.approx(size.sum(), rel=1e-9)
    naive = np.zeros(50)
    for s, e, b in zip(start, end, size, strict=True):
        if e == s:
            naive[int(s // 2)] += b
            continue
        for i in range(50):
            overlap = max(0.0, min(e, 2.0 * i + 2.0) - max(s, 2.0 * i))
            naive[i] += b * overlap / (e - s)
    assert series == pytest.approx(naive / 2.0, rel=1e-9, abs=1e-3)


@settings(max_examples=100, deadline=None)
@given(
    spans=st.lists(
        st.tuples(st.floats(0.0, 99.0), st.floats(0.0, 30.0), st.floats(0.0, 1e12)),
        min_size=1,
        max_size=40,
    ),
    interval=st.floats(0.1, 7.0),
)
def test_bandwidth_series_conserves_bytes_in_the_window(
    spans: list[tuple[float, float, float]], interval: float
) -> None:
    """Bytes inside the window are all counted once, whatever the interval."""
    start = np.array([a for a, _, _ in spans])
    end = np.minimum(start + np.array([d for _, d, _ in spans]), 100.0)
    size = np.array([b for _, _, b in spans])
    series = bandwidth_series(start, end, size, interval, 0.0, 100.0)
    widths = np.diff(np.minimum(np.arange(series.size + 1) * interval, 100.0))
    assert np.all(series >= 0.0)
    assert (series * widths).sum() == pytest.approx(size.sum(), rel=1e-9, abs=1e-3)


def test_idle_intervals_are_exactly_zero() -> None:
    """Large byte counts far into a window leave no rounding residue in idle intervals."""
    start = np.array([3600.5, 3601.0, 7000.0])
    end = np.array([3610.3, 3700.0, 7000.0])
    size = np.array([4e12, 7.3e11, 5e9])
    series = bandwidth_series(start, end, size, 2.0, 0.0, 7200.0)
    busy = np.zeros(series.size, dtype=bool)
    busy[1800:1850] = True  # [3600, 3700)
    busy[3500] = True  # the instantaneous one at 7000 s
    assert np.all(series[~busy] == 0.0) and np.all(series[busy] > 0.0)
    assert (series * 2.0).sum() == pytest.approx(size.sum(), rel=1e-12)
    assert cdf_summary(series)["zero_fraction"] == pytest.approx(1.0 - 51 / 3600)


def test_bandwidth_series_bad_input() -> None:
    with pytest.raises(ValueError, match="end_s"):
        bandwidth_series([2.0], [1.0], [1.0], 2.0, 0.0, 4.0)
    with pytest.raises(ValueError, match="interval_s"):
        bandwidth_series([0.0], [1.0], [1.0], 0.0, 0.0, 4.0)
    with pytest.raises(ValueError, match="shapes"):
        bandwidth_series([0.0], [1.0, 2.0], [1.0], 2.0, 0.0, 4.0)


def test_cdf_summary_by_hand() -> None:
    s = cdf_summary([0.0, 0.0, 0.0, 1.0, 100.0])
    # numpy's linear percentiles: p90 at position 3.6 -> 1 + 0.6 * 99; p99 at 3.96.
    assert s["p50"] == 0.0 and s["max"] == 100.0 and s["mean"] == pytest.approx(20.2)
    assert s["p90"] == pytest.approx(60.4) and s["p99"] == pytest.approx(96.04)
    assert s["peak_to_median"] == math.inf and s["zero_fraction"] == pytest.approx(0.6)
    assert s["peak_to_mean"] == pytest.approx(100.0 / 20.2)
    t = cdf_summary([1.0, 2.0, 3.0, 4.0])
    assert t["p50"] == 2.5 and t["peak_to_median"] == pytest.approx(1.6) and t["n"] == 4
    assert math.isnan(cdf_summary([0.0, 0.0])["peak_to_mean"])
    with pytest.raises(ValueError, match="empty"):
        cdf_summary([])
