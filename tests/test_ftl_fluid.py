"""The fluid (mean-field) FTL model against the micro-model and the analytic model."""

from __future__ import annotations

import time

import numpy as np
import pytest

from flashsim.components.ftl_analytic import greedy_wa_mean_field
from flashsim.components.ftl_api import AgingModel, fluid_model, micro_model
from flashsim.components.ftl_fluid import FluidFtl

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
