"""Drive endurance (issue 9, deliverable 3): the arithmetic, and VAST drive wear in both fidelities.

Everything here runs in a few seconds: the small PDSW'21 system for the fidelity checks, the
Perlmutter-sized one (flow fidelity, 2 TB samples) for the scenario.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from flashsim.components.endurance import (
    DAY_S,
    catch_up,
    daily_bytes,
    drive_wear,
    drive_writes_per_day,
    endurance_used_per_year,
    life_years,
    rated_bytes_written,
)
from flashsim.components.ssd import SsdState
from flashsim.config import ConfigError
from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_scenario, load_system_model, run_scenario
from flashsim.systems.base import Fidelity
from flashsim.systems.vast.endurance import (
    VastEnduranceDetails,
    VastEndurancePhase,
    simulate_sample,
    sync_wear,
    write_path,
)

PDSW = "models/systems/vast-pdsw21.toml"
SCENARIO = "scenarios/vast/endurance.toml"
TB = 1e12


def build(fidelity: Fidelity = "flow", model: str = PDSW):  # type: ignore[no-untyped-def]
    loaded = load_system_model(model)
    return loaded.kind.build(loaded.model, Simulation(0), fidelity)


def phase(**kw: object) -> VastEndurancePhase:
    data: dict[str, object] = {
        "name": "e",
        "workload": "vast-endurance",
        "daily_writes": "0.2 PB/day",
        "sample": "4 GiB",
    }
    data.update(kw)
    return VastEndurancePhase.model_validate(data)


# ---------------------------------------------------------------- arithmetic
def test_dwpd_arithmetic() -> None:
    cap = 15.36 * TB
    five_years = 5 * 365 * DAY_S
    assert drive_writes_per_day(7.68 * TB, cap) == pytest.approx(0.5)
    assert daily_bytes(1.0 * TB, 3600.0) == pytest.approx(24 * TB)
    # 0.9 DWPD over five years of 365 days: 15.36 TB x 0.9 x 1,825 = 25.23 PB.
    assert rated_bytes_written(cap, 0.9, five_years) == pytest.approx(25.2288e15)
    # Writing exactly at the rating uses a fifth of it per year and lasts the warranty.
    at_rating = 0.9 * cap
    assert endurance_used_per_year(at_rating, cap, 0.9, five_years) == pytest.approx(0.2)
    assert life_years(at_rating, cap, 0.9, five_years) == pytest.approx(5.0)
    assert life_years(at_rating / 10, cap, 0.9, five_years) == pytest.approx(50.0)
    assert life_years(0.0, cap, 0.9, five_years) == math.inf


def test_catch_up_records_only_what_a_counter_gained() -> None:
    state = SsdState(1.5 * TB)
    assert catch_up(state, 3 * TB) == 3 * TB
    assert catch_up(state, 3 * TB) == 0.0  # reading the same counter again adds nothing
    assert catch_up(state, 4 * TB) == pytest.approx(TB)
    assert state.bytes_written_B == pytest.approx(4 * TB) and state.valid_fraction == 1.0
    with pytest.raises(ValueError, match="counted_B"):
        catch_up(state, math.nan)


def test_drive_wear_reads_the_datasheet_rating() -> None:
    loaded = load_system_model(PDSW)
    qlc = loaded.model.dnode.qlc_drive
    scm = loaded.model.dnode.scm_drive
    assert qlc.endurance_dwpd == 0.9 and scm.endurance_dwpd == 60.0
    wear = drive_wear(qlc, 0.09 * float(qlc.capacity))
    assert wear.dwpd == pytest.approx(0.09)
    assert wear.warranty_years == pytest.approx(5.0)
    assert wear.life_years == pytest.approx(50.0)
    doubled = drive_wear(qlc, 0.09 * float(qlc.capacity), write_amplification=2.0)
    assert doubled.dwpd == pytest.approx(0.18) and doubled.life_years == pytest.approx(25.0)
    unrated = drive_wear(qlc.model_copy(update={"endurance_dwpd": None}), 1.0 * TB)
    assert math.isnan(unrated.life_years) and unrated.dwpd == pytest.approx(1 / 15.36)


def test_bad_inputs_fail_with_one_clear_message() -> None:
    with pytest.raises(ValueError, match=r"bytes_per_day_B\(=-1"):
        drive_writes_per_day(-1.0, TB)
    with pytest.raises(ValueError, match=r"capacity_B\(=0"):
        drive_writes_per_day(1.0, 0.0)
    with pytest.raises(ValueError, match=r"elapsed_s"):
        daily_bytes(1.0, 0.0)
    with pytest.raises(ValueError, match=r"rated_dwpd"):
        rated_bytes_written(TB, -0.9, 1.0)
    with pytest.raises(ValueError, match="write_amplification"):
        drive_wear(load_system_model(PDSW).model.dnode.qlc_drive, TB, write_amplification=0.5)
    system = build()
    with pytest.raises(ValueError, match=r"compression\(=0.5\) must be a ratio >= 1"):
        write_path(system, 0.5)
    # Through a scenario: the key and the value are named, no traceback.
    with pytest.raises(ConfigError, match="compression"):
        load_scenario(SCENARIO, {"phases.pb22.compression": "0.5"})
    with pytest.raises(ConfigError, match="daily_writes"):
        load_scenario(SCENARIO, {"phases.pb22.daily_writes": "-2.2 PB/day"})


# ---------------------------------------------------------------- accounting
@pytest.mark.parametrize("compression", [1.0, 2.0, 3.0])
def test_write_path_identities(compression: float) -> None:
    """SCM gets 2 bytes per user byte; QLC c (k'+m)/k' with k' = ceil(c k) data strips."""
    system = build()
    path = write_path(system, compression)
    k, m = 36, 4
    c = 1.0 / compression
    data = math.ceil(c * k - 1e-9)
    assert path.scm_per_user == 2.0
    assert path.stripe_width == data + m
    assert path.qlc_per_user == pytest.approx(c * (data + m) / data)
    if compression == 1.0:
        assert path.qlc_per_user == pytest.approx((k + m) / k)  # user / compression x (k+m)/k


@pytest.mark.parametrize("compression", [1.0, 2.0])
def test_simulated_bytes_follow_the_write_path(compression: float) -> None:
    system = build()
    sample = simulate_sample(system, phase(compression=compression))
    path = write_path(system, compression)
    assert sample.user_B == pytest.approx(4 * 2**30, rel=1e-9)
    assert sample.migrated_B == pytest.approx(sample.user_B, rel=1e-9)
    assert sample.scm_B.sum() == pytest.approx(2.0 * sample.user_B, rel=1e-9)
    assert sample.qlc_B.sum() == pytest.approx(path.qlc_per_user * sample.user_B, rel=1e-9)
    # The drive states hold the same bytes, and syncing again counts nothing twice.
    before = np.array([s.bytes_written_B for s in system.scm_state + system.qlc_state])
    sync_wear(system)
    after = np.array([s.bytes_written_B for s in system.scm_state + system.qlc_state])
    assert np.array_equal(before, after)
    assert before[: len(system.scm)].sum() == pytest.approx(2.0 * sample.user_B, rel=1e-9)


def test_flow_and_request_fidelity_wear_agree() -> None:
    flow = simulate_sample(build("flow"), phase())
    req = simulate_sample(build("request"), phase())
    assert req.fidelity == "request" and flow.fidelity == "flow"
    assert req.user_B == pytest.approx(flow.user_B, rel=1e-9)
    # Totals are exact in both; request fidelity spreads SCM replicas by random picks.
    assert req.scm_B.sum() == pytest.approx(flow.scm_B.sum(), rel=1e-9)
    np.testing.assert_allclose(req.scm_B, flow.scm_B, rtol=0.15)
    assert req.scm_B.std() > 0.0 and flow.scm_B.std() == pytest.approx(0.0, abs=1.0)
    # Migration writes the same stripes to the same QLC drives.
    np.testing.assert_allclose(req.qlc_B, flow.qlc_B, rtol=1e-6)


def test_request_fidelity_counts_each_replica_at_its_drive() -> None:
    system = build("request")
    simulate_sample(system, phase(sample="1 GiB"))
    scm = np.array([s.bytes_written_B for s in system.scm_state])
    assert system.drives.request_user_B == pytest.approx(2**30, rel=1e-9)
    assert scm.sum() == pytest.approx(2 * 2**30, rel=1e-9)
    # 1 MiB replicas: every drive's bytes are a whole number of them.
    assert np.allclose(scm / 2**20, np.round(scm / 2**20))


# ---------------------------------------------------------------- the phase
def test_perlmutter_sized_vast_wear_at_2_2_and_2_9_pb_per_day() -> None:
    run = run_scenario(SCENARIO)
    by = {p.name: p.details(VastEnduranceDetails) for p in run.phases}
    e = by["pb22"]
    assert (e.scm_drives, e.qlc_drives) == (696, 2552)
    # describe's sustained SCM write bound: 2.2 PB/day uses under a tenth of it.
    assert e.scm_sustained_write_GBps == pytest.approx(293.039, rel=1e-5)
    assert e.load_fraction == pytest.approx(2.2e15 / DAY_S / 293.039e9, rel=1e-5)
    assert e.turnover_minutes == pytest.approx(173e12 / (2.2e15 / DAY_S) / 60)
    assert e.turnover_minutes == pytest.approx(113.0, rel=0.02)  # seed 002 §III-B
    qlc_daily = 2.2e15 * 40 / 36 / 2552
    assert e.qlc_TB_per_drive_day == pytest.approx(qlc_daily / TB)
    assert e.qlc_dwpd == pytest.approx(qlc_daily / 15.36e12)
    assert e.scm_dwpd == pytest.approx(2 * 2.2e15 / 696 / 1.5e12)
    assert e.qlc_life_years == pytest.approx(0.9 / e.qlc_dwpd * 5.0)
    # The simulated sample agrees with the analytic write path.
    assert e.sim_max_rel_diff < 1e-9
    assert e.sim_qlc_dwpd == pytest.approx(e.qlc_dwpd, rel=1e-9)
    assert e.sim_qlc_dwpd_max < 1.1 * e.qlc_dwpd
    # 2.9 PB/day scales every daily figure by 29/22.
    f = by["pb29"]
    assert f.qlc_dwpd == pytest.approx(e.qlc_dwpd * 29 / 22)
    assert f.turnover_minutes == pytest.approx(e.turnover_minutes * 22 / 29)
    # Compressible data: fewer QLC bytes, narrower stripes.
    g = by["pb22-compressible"]
    assert g.stripe_width == 22 and g.qlc_dwpd < e.qlc_dwpd
    assert g.sim_max_rel_diff < 0.01


def test_vast_endurance_columns_show_an_unmeasured_or_infinite_value_as_a_dash() -> None:
    # flashsim.measure.results.cell, as every table: a life of inf years (no writes)
    # printed "inf" through the study's own helper (issue 20 review)
    from types import SimpleNamespace

    from flashsim.systems.vast.endurance import VastEnduranceDetails

    nan, inf = float("nan"), float("inf")
    fake = SimpleNamespace(
        scm_dwpd=0.0,
        scm_rated_dwpd=None,
        scm_life_years=inf,
        qlc_dwpd=0.12345,
        qlc_rated_dwpd=1.0,
        qlc_life_years=nan,
        turnover_minutes=42.0,
    )
    cols = VastEnduranceDetails.columns(fake)  # type: ignore[arg-type]
    assert cols == {
        "SCM DWPD": "0",
        "SCM rated": "-",
        "SCM life y": "-",
        "QLC DWPD": "0.123",
        "QLC rated": "1",
        "QLC life y": "-",
        "turnover min": "42",
    }
