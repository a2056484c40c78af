"""The page-mapped FTL micro-model against the published analytic write amplification.

Analytic references (see :mod:`flashsim.components.ftl_analytic`):

* Desnoyers, "Analytic modeling of SSD write performance", SYSTOR 2012, Sec. 4:
  greedy GC under uniform random overwrite tends, for large blocks, to
  ``WA = alpha / (alpha + W0(-alpha exp(-alpha)))`` with ``alpha = 1 / (1 - Sf)``
  and spare factor ``Sf = (T - U) / T``; the same closed form is Xiang &
  Kurkoski, ICNC 2012 (arXiv:1110.4245), who quote 2.36 at ``op = 0.3``.
* its finite-``m`` mean-field counterpart (Van Houdt, SIGMETRICS 2013, greedy
  limit; closed form derived in the module).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from flashsim.components.ftl import PageFtl
from flashsim.components.ftl_analytic import (
    greedy_wa_large_m,
    greedy_wa_mean_field,
    spare_factor_from_op,
)
from flashsim.components.ftl_api import AgingModel, MicroAgingModel, fluid_model, micro_model
from flashsim.components.ftl_traffic import SequentialTraffic, SpreadTraffic, UniformTraffic

LOGICAL_B = 1.0e12


def op_of(spare_factor: float) -> float:
    """Over-provisioning ``(T - U) / U`` of a spare factor ``(T - U) / T``."""
    return spare_factor / (1.0 - spare_factor)


def interval_wa(model: AgingModel, host_B: float) -> float:
    """Flash bytes per host byte while writing ``host_B`` more bytes."""
    f0, h0 = model.flash_written_B, model.host_written_B
    model.write(host_B)
    return (model.flash_written_B - f0) / (model.host_written_B - h0)


# -- analytic model -------------------------------------------------------------------


def test_lambert_form_reproduces_xiang_kurkoski() -> None:
    # Xiang & Kurkoski (arXiv:1110.4245), abstract: WA = 2.36 at overprovisioning 0.3.
    assert greedy_wa_large_m(spare_factor_from_op(0.3)) == pytest.approx(2.36, abs=0.005)


@pytest.mark.parametrize("sf", [0.07, 0.2, 0.3])
def test_mean_field_tends_to_lambert_form_and_grows_with_m(sf: float) -> None:
    values = [greedy_wa_mean_field(sf, m) for m in (1, 2, 4, 8, 16, 64, 256, 4096)]
    assert values[0] == 1.0
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(values))
    assert values[-1] == pytest.approx(greedy_wa_large_m(sf), rel=0.005)


def test_mean_field_has_no_amplification_while_an_empty_block_exists() -> None:
    # alpha = 1 / (1 - Sf) >= H_m: with m = 2 (H_2 = 1.5) from Sf = 1/3 on.
    assert greedy_wa_mean_field(0.34, 2) == 1.0
    assert greedy_wa_mean_field(0.30, 2) > 1.0


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, float("nan")])
def test_analytic_rejects_bad_spare_factor(bad: float) -> None:
    with pytest.raises(ValueError, match="spare_factor"):
        greedy_wa_large_m(bad)
    with pytest.raises(ValueError, match="units_per_block"):
        greedy_wa_mean_field(0.2, 0)


# -- micro model against the analytic model ---------------------------------------------


@pytest.mark.parametrize("sf", [0.07, 0.2, 0.3])
def test_micro_greedy_uniform_matches_published_large_block_model(sf: float) -> None:
    """Steady-state greedy WA within 5 % of Desnoyers (SYSTOR 2012) / Xiang & Kurkoski (2012)."""
    model = micro_model(
        LOGICAL_B, op_of(sf), 1024, 1.0, 0.0, "greedy", 512, np.random.default_rng(11)
    )
    model.write(12 * LOGICAL_B)
    assert interval_wa(model, 4 * LOGICAL_B) == pytest.approx(greedy_wa_large_m(sf), rel=0.05)


@pytest.mark.parametrize("sf", [0.07, 0.2, 0.3])
def test_micro_greedy_uniform_matches_finite_block_mean_field(sf: float) -> None:
    model = micro_model(
        LOGICAL_B, op_of(sf), 64, 1.0, 0.0, "greedy", 1024, np.random.default_rng(12)
    )
    model.write(12 * LOGICAL_B)
    assert interval_wa(model, 4 * LOGICAL_B) == pytest.approx(
        greedy_wa_mean_field(sf, 64), rel=0.02
    )


def test_micro_small_blocks_amplify_less() -> None:
    """m = 1 never amplifies; m = 2 at Sf 0.2 gives the mean-field 1.5."""
    one = micro_model(LOGICAL_B, 0.25, 1, 1.0, 0.0, "greedy", 8192, np.random.default_rng(3))
    two = micro_model(LOGICAL_B, 0.25, 2, 1.0, 0.0, "greedy", 8192, np.random.default_rng(3))
    for model in (one, two):
        model.write(10 * LOGICAL_B)
    assert interval_wa(one, 2 * LOGICAL_B) == 1.0
    assert interval_wa(two, 2 * LOGICAL_B) == pytest.approx(1.5, rel=0.02)


# -- sequential, TRIM, policies ---------------------------------------------------------------


def test_sequential_overwrite_has_no_amplification() -> None:
    ftl = PageFtl(256 + 6, 64, int(256 * 64 * 0.93), "greedy")
    stream = SequentialTraffic(ftl.logical_units)
    for _ in range(12):
        ftl.write(stream.draw(ftl.logical_units // 2 + 17, ftl.l2p))
    assert ftl.erases > 256
    assert ftl.windowed_write_amplification(4 * ftl.logical_units) == 1.0
    assert ftl.write_amplification() == 1.0


def test_trim_of_deleted_data_returns_wa_to_one() -> None:
    model = micro_model(LOGICAL_B, 0.25, 64, 4.0, 0.3, "greedy", 1024, np.random.default_rng(4))
    model.write(10 * LOGICAL_B)
    assert model.write_amplification() > 1.5
    model.trim_dead()
    assert model.write_amplification() == 1.0
    assert model.valid_fraction == pytest.approx(0.3, abs=1e-3)
    assert interval_wa(model, 0.25 * LOGICAL_B) == 1.0
    assert model.write_amplification() < 1.05


def hot_cold_wa(policy: str) -> float:
    """Steady WA with 90 % of writes on 10 % of the logical space (Sf 0.1)."""
    rng = np.random.default_rng(5)
    m, blocks = 64, 512
    logical = int(blocks * m * 0.9)
    ftl = PageFtl(blocks + 6, m, logical, policy)
    hot = logical // 10
    ftl.write(np.arange(logical))
    for _ in range(40):
        n = logical // 2
        lpns = np.where(rng.random(n) < 0.9, rng.integers(0, hot, n), rng.integers(hot, logical, n))
        ftl.write(lpns)
    return ftl.windowed_write_amplification(6 * logical)


def test_cost_benefit_beats_greedy_on_hot_cold_traffic() -> None:
    greedy, cost_benefit = hot_cold_wa("greedy"), hot_cold_wa("cost-benefit")
    assert greedy > 3.5
    assert cost_benefit < 0.8 * greedy


# -- mechanics ----------------------------------------------------------------------------------


def test_mapping_stays_consistent_under_writes_and_trims() -> None:
    rng = np.random.default_rng(6)
    ftl = PageFtl(64, 16, 800, "greedy", reserve_blocks=2, gc_batch=3)
    for _ in range(200):
        ftl.write(rng.integers(0, 800, size=int(rng.integers(1, 300))))
        if rng.random() < 0.2:
            ftl.trim(rng.integers(0, 800, size=50))
        live = np.flatnonzero(ftl.l2p >= 0)
        assert ftl.valid_units == live.size
        counts = np.bincount(ftl.l2p[live] // 16, minlength=64)
        assert np.array_equal(counts, ftl.block_valid_counts())
        assert np.unique(ftl.l2p[live]).size == live.size
    assert ftl.flash_units >= ftl.host_units


def test_a_unit_written_twice_in_one_call_keeps_its_last_copy() -> None:
    ftl = PageFtl(16, 4, 10)
    ftl.write(np.array([5, 5, 7, 5]))
    assert ftl.valid_units == 2
    assert ftl.host_units == ftl.flash_units == 4
    assert ftl.l2p[5] == 3 and ftl.l2p[7] == 2


def test_windowed_wa_reports_the_recent_past() -> None:
    ftl = PageFtl(128 + 6, 32, int(128 * 32 * 0.8))
    stream = UniformTraffic(ftl.logical_units, np.random.default_rng(7))
    for _ in range(40):
        ftl.write(stream.draw(ftl.logical_units // 4, ftl.l2p))
    assert ftl.windowed_write_amplification(ftl.logical_units) > ftl.write_amplification()


def test_spread_traffic_never_written_fraction_decays_as_exp_minus_k_over_spread() -> None:
    spread = 4.0
    model = micro_model(LOGICAL_B, 0.25, 64, spread, 0.0, "greedy", 1024, np.random.default_rng(8))
    for step in (1.0, 1.0, 2.0):
        model.write(step * LOGICAL_B)
        written = model.host_written_B / LOGICAL_B
        assert 1.0 - model.valid_fraction == pytest.approx(np.exp(-written / spread), abs=0.01)


def test_micro_model_converts_bytes_with_a_remainder() -> None:
    model = micro_model(LOGICAL_B, 0.25, 64, 1.0, 0.0, "greedy", 256, np.random.default_rng(9))
    assert isinstance(model, MicroAgingModel) and isinstance(model, AgingModel)
    for _ in range(2):
        model.write(2.5 * model.unit_B)
    assert model.ftl.host_units == 5
    assert model.host_written_B == pytest.approx(5 * model.unit_B)


def test_same_seed_same_result() -> None:
    def run(seed: int) -> float:
        model = micro_model(
            LOGICAL_B, 0.1, 32, 3.0, 0.2, "greedy", 256, np.random.default_rng(seed)
        )
        model.write(5 * LOGICAL_B)
        return model.flash_written_B

    assert run(1) == run(1)
    assert run(1) != run(2)


# -- bad arguments --------------------------------------------------------------------------------

GOOD = {
    "logical_B": LOGICAL_B,
    "op": 0.2,
    "units_per_block": 64,
    "spread": 1.0,
    "static_fraction": 0.0,
}
BAD = [
    ("logical_B", -1.0),
    ("op", -0.1),
    ("op", 0.0),
    ("units_per_block", 0),
    ("units_per_block", 2.5),
    ("spread", 0.5),
    ("static_fraction", 1.0),
    ("static_fraction", -0.1),
]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_bad_arguments_raise_naming_the_argument(name: str, value: float) -> None:
    args = {**GOOD, name: value}
    with pytest.raises(ValueError, match=name):
        micro_model(**args, policy="greedy", blocks=256, rng=np.random.default_rng(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=name):
        fluid_model(**args)  # type: ignore[arg-type]


def test_bad_ftl_arguments_raise_naming_the_argument() -> None:
    with pytest.raises(ValueError, match="policy"):
        micro_model(**GOOD, policy="lru", blocks=256, rng=np.random.default_rng(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="blocks"):
        micro_model(**GOOD, policy="greedy", blocks=2, rng=np.random.default_rng(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="logical_units"):
        PageFtl(16, 4, 64)
    with pytest.raises(ValueError, match="units_per_block"):
        PageFtl(16, 0, 8)
    with pytest.raises(ValueError, match="spread"):
        SpreadTraffic(100, 0.9, 0.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="host_B"):
        micro_model(**GOOD, policy="greedy", blocks=256, rng=np.random.default_rng(0)).write(-1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lpns"):
        PageFtl(16, 4, 8).write(np.array([8]))
