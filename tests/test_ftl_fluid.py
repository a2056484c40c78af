"""The fluid (mean-field) FTL model against the micro-model and the analytic model."""

from __future__ import annotations

import copy
import time

import numpy as np
import pytest

from flashsim.components.ftl_analytic import greedy_wa_mean_field
from flashsim.components.ftl_api import AgingModel, fluid_model, micro_model
from flashsim.components.ftl_fluid import SMALL_M, FluidFtl

LOGICAL_B = 1.0e12


def op_of(spare_factor: float) -> float:
    """Over-provisioning ``(T - U) / U`` of a spare factor ``(T - U) / T``."""
    return spare_factor / (1.0 - spare_factor)


def wa_curve(model: AgingModel, steps: int, step_B: float) -> np.ndarray:
    """Flash bytes per host byte over each of ``steps`` writes of ``step_B`` bytes."""
    out = []
    for _ in range(steps):
        f0, h0 = model.flash_written_B, model.host_written_B
        model.write(step_B)
        out.append((model.flash_written_B - f0) / (model.host_written_B - h0))
    return np.array(out)


CASES = [
    # spare factor (T - U) / T, units per block, spread, static fraction
    (0.07, 64, 1.0, 0.0),
    (0.2, 64, 1.0, 0.0),
    (0.3, 64, 1.0, 0.0),
    (0.2, 64, 4.0, 0.3),
    (0.12, 32, 8.0, 0.5),
]


@pytest.mark.parametrize(("sf", "m", "spread", "static"), CASES)
def test_fluid_follows_micro_wa_curve_from_fresh_to_steady_state(
    sf: float, m: int, spread: float, static: float
) -> None:
    micro = micro_model(
        LOGICAL_B, op_of(sf), m, spread, static, "greedy", 1024, np.random.default_rng(21)
    )
    fluid = fluid_model(LOGICAL_B, op_of(sf), m, spread, static)
    a = wa_curve(micro, 24, 0.5 * LOGICAL_B)
    b = wa_curve(fluid, 24, 0.5 * LOGICAL_B)
    assert a[0] == b[0] == 1.0
    assert b[-1] > 1.8  # the curve reaches real amplification ...
    assert np.max(np.abs(a / b - 1.0)) < 0.05  # ... and agrees all along
    assert micro.flash_written_B == pytest.approx(fluid.flash_written_B, rel=0.05)
    assert micro.valid_fraction == pytest.approx(fluid.valid_fraction, abs=0.01)


@pytest.mark.parametrize(("sf", "m"), [(0.07, 64), (0.2, 4), (0.2, 8), (0.3, 256)])
def test_fluid_steady_state_is_the_mean_field_closed_form(sf: float, m: int) -> None:
    fluid = FluidFtl(LOGICAL_B, op_of(sf), m)
    fluid.write(20 * LOGICAL_B)
    assert wa_curve(fluid, 1, 2 * LOGICAL_B)[0] == pytest.approx(
        greedy_wa_mean_field(sf, m), rel=0.015
    )
    assert fluid.write_amplification() == pytest.approx(greedy_wa_mean_field(sf, m), rel=0.015)


def test_streaming_writes_block_sized_units_have_no_amplification() -> None:
    """Sequential overwrite: a unit as large as the erase block (m = 1)."""
    fluid = fluid_model(LOGICAL_B, op_of(0.07), 1, 1.0, 0.0)
    assert np.all(wa_curve(fluid, 20, 0.5 * LOGICAL_B) == 1.0)


def test_trim_of_deleted_data_returns_wa_to_one() -> None:
    fluid = fluid_model(LOGICAL_B, 0.25, 64, 4.0, 0.3)
    fluid.write(10 * LOGICAL_B)
    assert fluid.write_amplification() > 1.5
    fluid.trim_dead()
    assert fluid.write_amplification() == 1.0
    assert fluid.valid_fraction == pytest.approx(0.3)
    assert wa_curve(fluid, 1, 0.25 * LOGICAL_B)[0] == pytest.approx(1.0, abs=1e-9)
    assert fluid.write_amplification() < 1.05


def test_fluid_trim_agrees_with_micro_trim() -> None:
    args = (LOGICAL_B, 0.25, 64, 4.0, 0.3)
    micro = micro_model(*args, "greedy", 1024, np.random.default_rng(22))
    fluid = fluid_model(*args)
    for model in (micro, fluid):
        model.write(8 * LOGICAL_B)
        model.trim_dead()
    a, b = wa_curve(micro, 12, 0.5 * LOGICAL_B), wa_curve(fluid, 12, 0.5 * LOGICAL_B)
    assert b[-1] > 1.3
    assert np.max(np.abs(a / b - 1.0)) < 0.05


def test_bytes_are_conserved() -> None:
    fluid = fluid_model(LOGICAL_B, 0.1, 16, 2.0, 0.2)
    total = 0.0
    for size in (1e9, 0.3 * LOGICAL_B, 0.0, 2.7 * LOGICAL_B):
        fluid.write(size)
        total += size
        assert fluid.host_written_B == pytest.approx(total)
        assert fluid.flash_written_B >= fluid.host_written_B
        levels = fluid.level_fractions()
        assert np.all(levels >= -1e-12) and levels.sum() <= 1.0 + 1e-9


@pytest.mark.slow  # a wall-clock budget: `make bench` reports ftl_fluid_day_s every run
def test_a_day_of_writes_is_cheap() -> None:
    """One drive-day at Perlmutter's rate (~0.05 drive writes) costs well under 10 ms."""
    fluid = fluid_model(15.36e12, 0.25, 64, 4.0, 0.3)
    fluid.write(20 * 15.36e12)
    start = time.perf_counter()
    for _ in range(100):
        fluid.write(0.05 * 15.36e12)
    assert (time.perf_counter() - start) / 100 < 5e-3


def test_both_fidelities_implement_the_aging_model() -> None:
    assert isinstance(fluid_model(LOGICAL_B, 0.2, 8, 1.0, 0.0), AgingModel)
    assert isinstance(
        micro_model(LOGICAL_B, 0.2, 8, 1.0, 0.0, "greedy", 64, np.random.default_rng(0)), AgingModel
    )


def test_fluid_rejects_what_it_does_not_model() -> None:
    with pytest.raises(ValueError, match="policy"):
        fluid_model(LOGICAL_B, 0.2, 8, 1.0, 0.0, policy="cost-benefit")
    with pytest.raises(ValueError, match="host_B"):
        fluid_model(LOGICAL_B, 0.2, 8, 1.0, 0.0).write(-1.0)


@pytest.mark.parametrize(("m", "spread", "static"), [(2, 6.8, 0.27), (8, 3.0, 0.0)])
def test_high_water_allocation_agrees_in_both_models(m: int, spread: float, static: float) -> None:
    """The allocation Perlmutter's OSTs use: fresh writes extend a high-water mark in order."""
    sf = 0.2
    micro = micro_model(
        LOGICAL_B,
        op_of(sf),
        m,
        spread,
        static,
        "greedy",
        8192,
        np.random.default_rng(5),
        allocation="high-water",
    )
    fluid = fluid_model(LOGICAL_B, op_of(sf), m, spread, static, allocation="high-water")
    step = 0.25 * LOGICAL_B
    dynamic = 1.0 - static
    for k in range(1, 9):
        micro.write(step)
        fluid.write(step)
        # The never-written share of the churned space falls linearly (k writes of a quarter
        # of the logical space, after the static part went first), unlike exp(-k / spread).
        host = k * 0.25 - static
        expect = static + dynamic * min(1.0, host / (spread * dynamic)) if host > 0 else k * 0.25
        assert fluid.valid_fraction == pytest.approx(expect, abs=0.02)
        assert micro.valid_fraction == pytest.approx(expect, abs=0.02)
    a = wa_curve(micro, 40, 0.25 * LOGICAL_B)
    b = wa_curve(fluid, 40, 0.25 * LOGICAL_B)
    assert b[-1] > 1.2
    # Cumulative flash per host byte along the way (small m: a quarter-drive step of the
    # micro-model holds few GC batches, so its per-step WA is noisy), and the steady state.
    assert np.max(np.abs(np.cumsum(a) / np.cumsum(b) - 1.0)) < 0.05
    assert np.mean(a[-16:]) == pytest.approx(np.mean(b[-16:]), rel=0.03)


def test_allocation_must_be_known() -> None:
    with pytest.raises(ValueError, match="allocation"):
        fluid_model(LOGICAL_B, 0.25, 2, 2.0, 0.0, allocation="sideways")


# -- cost of a step (issue 17: a year of aging over 274 OSTs in seconds) --------------------

#: The Perlmutter model's drive (models/systems/perlmutter.toml [oss.aging]; PM1733 15.36 TB).
M2_CASES = [("high-water", 6.81, 0.266), ("uniform", 1.0, 0.0), ("uniform", 3.0, 0.4)]


def _m2(allocation: str, spread: float, static: float) -> FluidFtl:
    return fluid_model(15.36e12, 0.17, 2, spread, static, allocation=allocation)


def _exercise(model: FluidFtl, days: int) -> float:
    """Drive-days of irregular volumes (the probes' extra files), a TRIM on day 140 of each 150.

    Returns the largest write amplification seen at a day's end.
    """
    rng = np.random.default_rng(7)
    worst = 1.0
    for day in range(days):
        model.write(0.05 * 15.36e12 * (1.0 + 0.02 * float(rng.random())))
        worst = max(worst, model.write_amplification())
        if day % 150 == 140:
            model.trim_dead()
    return worst


@pytest.mark.parametrize(("allocation", "spread", "static"), M2_CASES)
def test_unrolled_two_unit_steps_equal_the_general_steps_to_the_last_bit(
    allocation: str, spread: float, static: float
) -> None:
    fast = _m2(allocation, spread, static)
    general = _m2(allocation, spread, static)
    assert fast._unrolled
    general._unrolled = False  # the list-of-levels steps every m takes
    worst = 1.0
    for _ in range(6):
        worst = max(worst, _exercise(fast, 50))
        _exercise(general, 50)
        assert fast.level_fractions().tolist() == general.level_fractions().tolist()
        assert fast.host_written_B == general.host_written_B
        assert fast.flash_written_B == general.flash_written_B
        assert fast.write_amplification() == general.write_amplification()
        assert fast.valid_fraction == general.valid_fraction
    assert worst > 1.1  # past the onset: GC did copy


def test_two_unit_steps_take_no_array_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """A drive-day of the Perlmutter model is plain float steps: no NumPy call, no method call."""
    model = _m2("high-water", 6.81, 0.266)

    def refuse(*_args: object) -> None:
        raise AssertionError("the m = 2 steps left the unrolled loop")

    monkeypatch.setattr(FluidFtl, "_advance", refuse)
    monkeypatch.setattr(FluidFtl, "_thin", refuse)
    monkeypatch.setattr(np, "exp", refuse)
    assert _exercise(model, 200) > 1.2  # past the onset, and a TRIM


def _binomial_thinning(x: np.ndarray, q: float) -> np.ndarray:
    """``x'[i] = sum_j x[j] C(j, i) q^i (1-q)^(j-i)`` with SciPy's binomial pmf (reference)."""
    from scipy.stats import binom

    m = len(x) - 1
    i = np.arange(m + 1)
    out = np.zeros(m + 1)
    for j in range(m + 1):
        out += x[j] * np.asarray(binom.pmf(i, j, q), dtype=np.float64)
    return out


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8, 9, 24])
def test_plain_and_array_thinning_are_the_same_binomial_thinning(m: int) -> None:
    """m <= SMALL_M thins in plain floats, larger m with the log-binomial matrix: one model."""
    rng = np.random.default_rng(m)
    model = fluid_model(LOGICAL_B, 0.2, m, 1.0, 0.0)
    assert (model._lgc is None) == (m <= SMALL_M)
    for q in (0.999, 0.97, 0.6, 1e-3):
        x = rng.random(m + 1)
        model._x = x.tolist()
        model._thin(q)
        assert np.asarray(model._x) == pytest.approx(_binomial_thinning(x, q), rel=1e-12, abs=0)


def test_a_deep_copy_shares_the_tables_and_evolves_alone() -> None:
    """The memo's copies: the state is copied, the read-only tables shared, the futures equal."""
    for m in (2, 4, 32):
        a = fluid_model(15.36e12, 0.17, m, 2.0, 0.2)
        _exercise(a, 30)
        b = copy.deepcopy(a)
        assert b._binom is a._binom and b._lgc is a._lgc
        assert b._x is not a._x and b._hist is not a._hist
        _exercise(a, 30)
        _exercise(b, 30)
        assert a.level_fractions().tolist() == b.level_fractions().tolist()
        assert a.write_amplification() == b.write_amplification()
        before = a.level_fractions().tolist()
        b.write(15.36e12)
        b.trim_dead()
        assert a.level_fractions().tolist() == before
        if a._lgc is not None:
            with pytest.raises(ValueError):
                a._lgc[0, 0] = 1.0  # shared tables are read-only


def test_large_blocks_build_no_plain_binomial_table() -> None:
    """C(1100, 550) ~ 1e329 overflows a float: blocks past SMALL_M keep only log-binomials."""
    model = fluid_model(LOGICAL_B, 0.2, 1100, 1.0, 0.0)
    assert model._binom == () and model._lgc is not None
    model.write(0.01 * LOGICAL_B)
    assert model.host_written_B == pytest.approx(0.01 * LOGICAL_B)
