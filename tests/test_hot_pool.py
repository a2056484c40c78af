"""The hot-pool hybrid: Perlmutter's OSSes with every OST an SCM write buffer over QLC.

A model file only (``models/systems/lustre-hot-pool.toml``): the ``lustre`` kind with a tier
target (``[oss.tier]``).  It is Perlmutter but for its OSTs, its drives fit the E1000's bays,
it describes, and its scenario (``scenarios/hybrid/lustre-hot-pool.toml``) runs Table I fresh
and aged within the describe bound, aged reads coming from QLC.
"""

from __future__ import annotations

import json
import math

import pytest

from flashsim.components.tier_target import TierTargetSpec
from flashsim.config import load_toml
from flashsim.measure.results import PhaseResult, RunResult
from flashsim.scenario import load_scenario, load_system_model, run_loaded, scenario_from_data
from tests.cli_helpers import ROOT, run_flashsim

MODEL = ROOT / "models" / "systems" / "lustre-hot-pool.toml"
SCENARIO = ROOT / "scenarios" / "hybrid" / "lustre-hot-pool.toml"
PERLMUTTER = ROOT / "models" / "systems" / "perlmutter.toml"
TABLE_I = [
    "write-bandwidth",
    "read-bandwidth-dataset",
    "read-bandwidth",
    "write-iops",
    "read-iops-dataset",
    "read-iops-cache-flush",
    "read-iops",
]
AGED = [
    "age-scm-flush",
    "read-bandwidth-aged",
    "read-iops-aged",
    "write-bandwidth-aged",
    "write-iops-aged",
]
WHOLE_SYSTEM = ["fpp-write", "fpp-read", "fpp-age-scm-flush", "fpp-read-aged"]


@pytest.fixture(scope="module")
def bandwidth_run() -> RunResult:
    """The scenario's flow-fidelity single-OST phases: Table I's bandwidth tests, fresh and aged."""
    data = load_toml(SCENARIO)
    keep = {"write-bandwidth", "read-bandwidth-dataset", "read-bandwidth", *AGED} - {
        "read-iops-aged",
        "write-iops-aged",
    }
    data["phases"] = [p for p in data["phases"] if p["name"] in keep]
    return run_loaded(scenario_from_data(data, SCENARIO))


def _phase(run: RunResult, name: str) -> PhaseResult:
    return next(p for p in run.phases if p.name == name)


def test_the_hot_pool_is_perlmutter_but_for_its_osts() -> None:
    model = load_system_model(MODEL).model
    perlmutter = load_system_model(PERLMUTTER).model
    assert model.kind == "lustre"
    assert isinstance(model.oss.tier, TierTargetSpec)
    assert model.oss.drive is None and model.oss.raid is None
    for key in ("fabric", "client", "mds"):
        assert getattr(model, key) == getattr(perlmutter, key), key
    for key in ("count", "targets_per_server", "enclosure", "cpu", "nic", "rpc_cost"):
        assert getattr(model.oss, key) == getattr(perlmutter.oss, key), key


def test_the_hot_pool_fills_the_e1000_bays_with_vasts_media() -> None:
    oss = load_system_model(MODEL).model.oss
    tier = oss.tier
    assert oss.enclosure is not None and tier is not None
    # Two OSSes per E1000 share its 24 bays, 12 each (seed 000 §II-A/B), as on Perlmutter.
    assert oss.enclosure.servers * (tier.scm_drives + tier.qlc_drives) == oss.enclosure.drives
    # 3 SCM + 9 QLC drives, 2 SCM copies, 7+2 erasure coding (the model file's values).
    assert (tier.scm_drives, tier.qlc_drives) == (3, 9)
    assert (tier.scm_copies, tier.ec_data, tier.ec_parity) == (2, 7, 2)
    assert "P4800X" in tier.scm_drive.name and "P4326" in tier.qlc_drive.name


def test_the_aging_flushes_overfill_the_write_buffers() -> None:
    """The aged reads read data a flush moved to QLC: it writes more than each buffer holds."""
    scenario = load_scenario(SCENARIO)
    tier = scenario.system.model.oss.tier
    n_ost = scenario.system.model.oss.count
    assert [phase.name for phase in scenario.phases] == TABLE_I + AGED + WHOLE_SYSTEM
    phases = {phase.name: phase for phase in scenario.phases}
    one_ost = phases["age-scm-flush"]
    assert one_ost.layout.first_target == 0 and one_ost.stonewall == 0
    assert one_ost.ranks * one_ost.bytes_per_rank_B > float(tier.write_buffer)
    every_ost = phases["fpp-age-scm-flush"]
    assert every_ost.ranks == n_ost and every_ost.stonewall == 0  # one rank per OST
    assert every_ost.bytes_per_rank_B > float(tier.write_buffer)
    # Each fresh dataset is read by the ranks that wrote it (no reader of a file never held).
    for read, written in (("read-iops", "read-iops-dataset"), ("fpp-read", "fpp-write")):
        assert phases[read].ranks == phases[written].ranks


def test_the_hot_pool_describes_its_tier_targets() -> None:
    loaded = load_system_model(MODEL)
    desc = loaded.kind.describe(loaded.model)
    assert desc.bottlenecks["system write_Bps"] and desc.bottlenecks["system read_Bps"]
    # 274 OSTs x 9 QLC drives of 15.36 TB (D5-P4326, seed 002 Sec. II-A), EC 7+2 (the model file)
    assert math.isclose(desc.derived["usable_capacity_B"], 274 * 9 * 15.36e12 * 7 / 9, rel_tol=1e-9)


def test_table_i_bandwidth_runs_within_describe_and_aged_reads_come_from_qlc(
    bandwidth_run: RunResult,
) -> None:
    loaded = load_system_model(MODEL)
    derived = loaded.kind.describe(loaded.model).derived
    for phase in bandwidth_run.phases:
        peak = derived[f"oss_{phase.operation}_Bps_peak"]
        assert 0 < phase.bandwidth_Bps <= peak * (1 + 1e-9), phase.name
    fresh = _phase(bandwidth_run, "read-bandwidth")
    aged = _phase(bandwidth_run, "read-bandwidth-aged")
    # Fresh data is read from the 3 SCM drives, aged data from the 9 QLC drives.
    assert fresh.bottlenecks and {b.kind for b in fresh.bottlenecks} <= {"scm drive", "pcie"}
    assert aged.bandwidth_Bps > 2.0 * fresh.bandwidth_Bps
    assert aged.bottlenecks and all(".ost0." in b.name for b in aged.bottlenecks)
    # A full buffer holds writers to the migration's pace: slower than into an empty one.
    full = _phase(bandwidth_run, "write-bandwidth-aged")
    assert full.bandwidth_Bps < 0.9 * _phase(bandwidth_run, "write-bandwidth").bandwidth_Bps


@pytest.mark.slow  # the whole scenario: ~2 minutes of 274-OST flows (the README's command)
def test_the_readme_command_runs_every_phase_within_describe() -> None:
    done = run_flashsim("run", str(SCENARIO.relative_to(ROOT)), "--json", timeout=1800)
    assert done.returncode == 0, done.stderr
    phases = {p["name"]: p for p in json.loads(done.stdout)["phases"]}
    assert list(phases) == TABLE_I + AGED + WHOLE_SYSTEM
    loaded = load_system_model(MODEL)
    derived = loaded.kind.describe(loaded.model).derived
    for name in ("fpp-write", "fpp-read", "fpp-read-aged"):
        op = phases[name]["operation"]
        assert 0 < phases[name]["bandwidth_Bps"] <= derived[f"system_{op}_Bps_peak"] * (1 + 1e-9)
    # Aged data is read from the 9 QLC drives of every OST, fresh data from the 3 SCM drives.
    assert phases["fpp-read-aged"]["bandwidth_Bps"] > 2.0 * phases["fpp-read"]["bandwidth_Bps"]
    # Random 4 KiB writes land in SCM: no RAID read-modify-write bounds them (Perlmutter's
    # one OST: 28.8 kIOPS, seed 000 Table I, record perlmutter-table1-write-iops).
    assert phases["write-iops"]["iops"] > 10 * 28.8e3
