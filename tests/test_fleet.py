"""A fleet that is not uniform: per-component variability, stripe risk and stragglers."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError

from flashsim.components.variability import (
    LognormalSpread,
    NormalSpread,
    SlowTailSpread,
    Spread,
    VariabilitySpec,
    component_factor,
)
from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_scenario, load_system_model, run_loaded
from flashsim.systems.lustre.fleet import p_touch_slow, random_placements

MODEL = "models/systems/perlmutter.toml"
ON = {"oss.variability.enabled": "true"}

SHAPES: list[dict[str, Any]] = [
    {"shape": "lognormal", "sigma": 0.05},
    {"shape": "normal", "sigma": 0.04},
    {"shape": "slow-tail", "fraction": 0.1, "slow_median": 0.8, "slow_sigma": 0.05, "sigma": 0.02},
    {"shape": "slow-tail", "fraction": 0.3, "slow_median": 0.5, "slow_sigma": 0.4, "sigma": 0.1},
]


def spread(data: dict[str, Any]) -> LognormalSpread | NormalSpread | SlowTailSpread:
    out: LognormalSpread | NormalSpread | SlowTailSpread = TypeAdapter(Spread).validate_python(data)
    return out


@pytest.mark.parametrize("data", SHAPES)
def test_every_shape_has_median_one(data: dict[str, Any]) -> None:
    dist = spread(data)
    # Exactly at the distribution level ...
    assert dist.cdf(1.0) == pytest.approx(0.5, abs=1e-12)
    # ... and by sampling, through the clipping to a physical ceiling >= 1.
    rng = np.random.default_rng(3)
    draws = np.array([dist.clip(dist.raw(rng), 1.02) for _ in range(20_000)])
    assert abs(np.median(draws) - 1.0) < 0.004
    assert draws.max() <= 1.02 and draws.min() >= dist.floor


def test_slow_tail_puts_its_fraction_below_the_main_population() -> None:
    dist = spread(SHAPES[2])
    rng = np.random.default_rng(9)
    draws = np.array([dist.raw(rng) for _ in range(20_000)])
    assert np.mean(draws < 0.9) == pytest.approx(dist.cdf(0.9), abs=0.005)
    assert dist.cdf(0.9) == pytest.approx(0.1, abs=0.002)


def build(overrides: dict[str, str], seed: int = 5) -> Any:
    loaded = load_system_model(Path(__file__).resolve().parent.parent / MODEL, overrides)
    return loaded.kind.build(loaded.model, Simulation(seed), "flow")


def test_factors_are_seeded_per_component() -> None:
    """Adding servers (or building them in another order) never changes another's factors."""
    alone = build(ON)
    server = alone.server(17)
    crowded = build(ON)
    for i in (3, 250, 0, 16, 18):
        crowded.server(i)
    other = crowded.server(17)
    assert server.osts[0].stack_eff == other.osts[0].stack_eff
    assert server.nic.spec == other.nic.spec
    assert build(ON, seed=6).server(17).osts[0].stack_eff != server.osts[0].stack_eff
    # A new kind of factor (drives) leaves the targets' factors as they were.
    drives = build({**ON, "oss.variability.drive_write": '{ shape = "lognormal", sigma = 0.1 }'})
    assert drives.server(17).osts[0].stack_eff == server.osts[0].stack_eff
    assert len(set(drives.server(17).osts[0].drive_speed["write"])) == 12


def test_variability_is_off_unless_enabled() -> None:
    system = build({})
    effs = {system.server(i).osts[0].stack_eff["write"] for i in range(20)}
    assert effs == {0.926}


def test_component_factor_respects_the_physical_ceiling() -> None:
    spec = VariabilitySpec.model_validate({"target_write": {"shape": "lognormal", "sigma": 0.5}})
    sim = Simulation(1)
    got = [component_factor(sim, f"t{i}", spec, "target_write", 1.05) for i in range(500)]
    assert max(got) == 1.05 and min(got) < 0.7
    assert component_factor(sim, "t0", spec, "target_read") == 1.0


@pytest.mark.parametrize(("k", "published"), [(1, 0.066), (4, 0.24), (16, 0.67)])
def test_monte_carlo_placement_matches_the_hypergeometric(k: int, published: float) -> None:
    n, slow = 273, 18
    exact = p_touch_slow(n, slow, k)
    assert exact == pytest.approx(published, abs=0.006)  # seed 000 §V-A's numbers
    rng = np.random.default_rng(11)
    files = 100_000
    picks = random_placements(rng, n, k, files)
    assert picks.shape == (files, k)
    assert all(len(set(row)) == k for row in picks[:2000].tolist())
    mc = float((picks < slow).any(axis=1).mean())
    se = math.sqrt(exact * (1 - exact) / files)
    assert abs(mc - exact) < 4 * se


def run(tmp_path: Path, phases: str, overrides: dict[str, str] | None = None) -> Any:
    root = Path(__file__).resolve().parent.parent
    path = tmp_path / "s.toml"
    path.write_text(
        f'name = "t"\nsystem = "{(root / MODEL).as_posix()}"\nseed = 1\nfidelity = "flow"\n'
        f'[system_set]\n"oss.variability.enabled" = true\n\n{phases}'
    )
    return run_loaded(load_scenario(path, overrides or {}))


FLEET = """
[[phases]]
name = "w"
workload = "obdfilter-fleet"
operation = "write"
osts = 80

[[phases]]
name = "r"
workload = "obdfilter-fleet"
operation = "read"
osts = 80
"""


def test_write_spreads_much_more_than_read(tmp_path: Path) -> None:
    w, r = (p.extra for p in run(tmp_path, FLEET).phases)
    assert w.count == r.count == 80
    assert w.median == pytest.approx(0.926, abs=0.01)
    assert r.median == pytest.approx(0.999, abs=0.005)
    assert w.max - w.min > 5 * (r.max - r.min)
    assert w.slow_count >= 1 and r.slow_count == 0
    assert all(e <= 1.0 + 1e-9 for e in r.efficiencies.values())


STRAGGLERS = """
[[phases]]
name = "s"
workload = "ior-stragglers"
operation = "{op}"
osts = 60
widths = [1, 4, 16]
placements = 4000
flow_checks = 1
flow_check_max_width = 4
"""


def test_straggler_bandwidth_falls_with_stripe_width(tmp_path: Path) -> None:
    write, read = (
        run(tmp_path, STRAGGLERS.format(op=op)).phases[0].extra for op in ("write", "read")
    )
    per_ost = [write.by_width[k].per_ost_median for k in ("1", "4", "16")]
    assert per_ost[0] > per_ost[1] > per_ost[2]
    assert write.by_width["16"].straggled > write.by_width["1"].straggled
    # The slowest-OST model agrees with the flow engine's IOR (same end-to-end ratio).
    assert write.flow_ratio_spread < 0.02
    checks = [c for w in write.by_width.values() for c in w.flow_checks]
    assert len(checks) == 2 and all(0.85 < c.ratio <= 1.0 + 1e-9 for c in checks)
    # Read shows no comparable spread.
    read_loss = 1 - read.by_width["16"].per_ost_median
    assert 1 - per_ost[2] > 5 * read_loss


def flashsim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flashsim.cli", *args],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )


BAD = [
    ("oss.variability.target_write.fraction", "0.7"),
    ("oss.variability.target_write.shape", '"weibull"'),
    ("oss.variability.target_read.sigma", "-0.1"),
    ("oss.variability.target_read.floor", "1.5"),
]


@pytest.mark.parametrize(("key", "value"), BAD)
def test_bad_distribution_parameters_are_refused_by_key(key: str, value: str) -> None:
    from flashsim.config import ConfigError

    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_system_model(Path(__file__).resolve().parent.parent / MODEL, {key: value})


def test_a_bad_distribution_gives_one_line_not_a_traceback() -> None:
    key, value = BAD[0]
    proc = flashsim("describe", MODEL, "--set", f"{key}={value}")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and key in lines[0] and "0.5" in lines[0], proc.stderr


def test_a_stripe_wider_than_the_survey_is_refused(tmp_path: Path) -> None:
    phases = '[[phases]]\nname = "x"\nworkload = "stripe-risk"\nosts = 10\nwidths = [1, 16]\n'
    with pytest.raises(Exception, match="widths"):
        run(tmp_path, phases)


def test_slow_tail_needs_a_reachable_median() -> None:
    with pytest.raises(ValidationError, match="fraction"):
        spread({"shape": "slow-tail", "fraction": 0.6, "slow_median": 0.5})


def test_both_fidelities_see_the_same_drive_factors() -> None:
    """One OST with a per-drive spread: the slowest drive paces a declustered stripe in both."""
    from flashsim.scenario import run_scenario

    root = Path(__file__).resolve().parent.parent
    base: dict[str, str] = {}
    for op in ("write", "read"):
        base |= {
            f"phases.{op}.nodes": "2",
            f"phases.{op}.ranks_per_node": "16",
            f"phases.{op}.layout.first_target": "0",
        }
    spread = '{ shape = "lognormal", sigma = 0.2 }'
    varied = {
        "system.oss.variability.enabled": "true",
        "system.oss.variability.drive_write": spread,
        "system.oss.variability.drive_read": spread,
    }
    scenario = root / "scenarios/perlmutter/fidelity-check.toml"
    uniform = run_scenario(scenario, base)
    flow = run_scenario(scenario, {**base, **varied})
    request = run_scenario(scenario, {**base, **varied, "fidelity": '"request"'})
    for u, f, r in zip(uniform.phases, flow.phases, request.phases, strict=True):
        assert f.bandwidth_Bps < 0.85 * u.bandwidth_Bps, f.name
        assert r.bandwidth_Bps == pytest.approx(f.bandwidth_Bps, rel=0.06), f.name


def test_the_former_efficiency_spread_still_loads() -> None:
    system = build({"oss.efficiency_spread": "0.03"})
    var = system.model.oss.variability
    assert var.enabled and isinstance(var.target_write, NormalSpread)
    assert var.target_write.sigma == var.target_read.sigma == 0.03
