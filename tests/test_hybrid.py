"""The hybrid model: VAST CNodes/DNodes in Perlmutter's I/O groups, GPU nodes as NFS clients.

A model file only (``models/systems/vast-on-perlmutter.toml``): the ``vast`` kind with a
dragonfly ``client_fabric``.  It loads, describes, runs its scenario within its describe
bound, and the run names what limits it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flashsim.components.fabric_spec import DragonflySpec, SwitchFabricSpec
from flashsim.measure.results import RunResult
from flashsim.scenario import load_scenario, load_system_model, run_loaded

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "systems" / "vast-on-perlmutter.toml"
SCENARIO = ROOT / "scenarios" / "hybrid" / "vast-on-perlmutter.toml"
PERLMUTTER = ROOT / "models" / "systems" / "perlmutter.toml"


@pytest.fixture(scope="module")
def run() -> RunResult:
    return run_loaded(load_scenario(SCENARIO))


def test_the_hybrid_loads_on_perlmutters_dragonfly() -> None:
    model = load_system_model(MODEL).model
    assert model.kind == "vast"
    assert isinstance(model.client_fabric, DragonflySpec)
    assert isinstance(model.fabric, SwitchFabricSpec)
    # The client fabric is Perlmutter's, value for value.
    perlmutter = load_system_model(PERLMUTTER).model
    assert model.client_fabric == perlmutter.fabric


def test_the_hybrid_places_clients_in_compute_and_cnodes_in_io_groups() -> None:
    from flashsim.engine.simulation import Simulation
    from flashsim.systems.vast.network import VastNetwork

    model = load_system_model(MODEL).model
    net = VastNetwork(model, Simulation(0))
    assert net.front is not None
    names = net.front.group_names
    assert {names[net.front.group_of(c)] for c in net.cnodes} == {f"io{i}" for i in range(4)}
    client_groups = {names[net.front.group_of(c)] for c in net.clients}
    assert client_groups == {f"compute{i}" for i in range(4)}  # spread over 4 groups


def test_the_hybrid_describes_its_fabric() -> None:
    loaded = load_system_model(MODEL)
    desc = loaded.kind.describe(loaded.model)
    layers = {layer.layer: layer for layer in desc.layers}
    assert "client fabric" in layers and "NVMe fabric" in layers
    fabric = layers["client fabric"]
    assert fabric.read_Bps is not None and fabric.read_Bps > 0
    assert desc.bottlenecks["read"] and desc.bottlenecks["write"]


def test_the_hybrid_runs_within_its_describe_bound(run: RunResult) -> None:
    loaded = load_system_model(MODEL)
    desc = loaded.kind.describe(loaded.model)
    checked = 0
    for phase in run.phases:
        peaks = [
            getattr(layer, f"{phase.operation}_Bps")
            for layer in desc.layers
            if layer.scope == "system" and getattr(layer, f"{phase.operation}_Bps") is not None
        ]
        assert 0 < phase.bandwidth_Bps <= min(peaks) * (1 + 1e-9), phase.name
        checked += 1
    assert checked == 2


def test_the_hybrids_run_names_its_bottlenecks(run: RunResult) -> None:
    for phase in run.phases:
        named = phase.bottlenecks or phase.most_utilized
        assert named, phase.name
        assert all(load.name.startswith("vast-on-perlmutter.") for load in named)
    read = next(p for p in run.phases if p.operation == "read")
    assert {b.kind for b in read.bottlenecks} == {"scm drive"}


def test_the_readme_command_runs_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flashsim.cli", "run", str(SCENARIO.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "bottlenecks" in done.stdout
