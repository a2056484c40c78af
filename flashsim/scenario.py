"""Scenarios: which system, which workload phases, which seed and fidelity.

A scenario file names a model file (relative to itself), a seed, a fidelity
and a list of phases; each phase is validated by the system kind's phase
schema.  :func:`run_scenario` builds the system once and runs the phases in
order in one simulation, so state (data placement, SSD wear, buffer fill)
carries from phase to phase.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from flashsim.config import (
    ConfigError,
    StrictModel,
    apply_overrides,
    load_toml,
    validate,
)
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import RunResult
from flashsim.systems import SYSTEM_KINDS, system_kind
from flashsim.systems.base import Fidelity, SystemKind


class ScenarioFile(StrictModel):
    """The header of a scenario file; phases are checked by the system kind."""

    name: str
    description: str = ""
    system: str
    seed: Annotated[int, Field(ge=0)] = 0
    fidelity: Fidelity = "flow"
    phases: Annotated[list[dict[str, Any]], Field(min_length=1)]


@dataclass
class LoadedModel:
    """A validated model file and its system kind."""

    path: Path
    kind: SystemKind
    model: Any


@dataclass
class LoadedScenario:
    """A validated scenario with its model and typed phases."""

    path: Path
    spec: ScenarioFile
    system: LoadedModel
    phases: list[Any]


def split_overrides(overrides: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Split ``--set`` pairs into model (``system.`` prefix) and scenario overrides."""
    model: dict[str, str] = {}
    scenario: dict[str, str] = {}
    for key, value in overrides.items():
        if key.startswith("system."):
            model[key[len("system.") :]] = value
        else:
            scenario[key] = value
    return model, scenario


def load_system_model(path: str | Path, overrides: Mapping[str, str] = {}) -> LoadedModel:
    """Load and validate a model file, choosing the schema by its ``kind``."""
    p = Path(path)
    data = load_toml(p)
    apply_overrides(data, overrides, str(p))
    kind_name = data.get("kind")
    if kind_name not in SYSTEM_KINDS:
        raise ConfigError(
            str(p), "kind", kind_name, f"expected one of {', '.join(sorted(SYSTEM_KINDS))}"
        )
    kind = system_kind(str(kind_name))
    model = validate(kind.model_type, data, p, context={"model_dir": p.resolve().parent})
    try:
        kind.check(model)
    except ValueError as exc:
        key, _, message = str(exc).partition(": ")
        raise ConfigError(str(p), key, _resolve(data, key), message or str(exc)) from None
    return LoadedModel(p, kind, model)


def _resolve(data: Mapping[str, Any], key: str) -> object:
    node: Any = data
    for part in key.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def load_scenario(path: str | Path, overrides: Mapping[str, str] = {}) -> LoadedScenario:
    """Load a scenario and its model, applying ``--set`` overrides to both."""
    p = Path(path)
    model_over, scenario_over = split_overrides(overrides)
    data = load_toml(p)
    apply_overrides(data, scenario_over, str(p))
    spec = validate(ScenarioFile, data, p)
    system_path = (p.parent / spec.system).resolve()
    if not system_path.exists():
        raise ConfigError(str(p), "system", spec.system, f"model file {system_path} not found")
    system = load_system_model(system_path, model_over)
    phases = [
        validate(system.kind.phase_type, raw, p, key_prefix=f"phases.{i}")
        for i, raw in enumerate(spec.phases)
    ]
    return LoadedScenario(p, spec, system, phases)


def run_loaded(scenario: LoadedScenario, progress: bool = False) -> RunResult:
    """Run a loaded scenario and return its results."""
    started = time.perf_counter()
    sim = Simulation(scenario.spec.seed)
    built = scenario.system.kind.build(scenario.system.model, sim, scenario.spec.fidelity)
    results = []
    from tqdm import tqdm

    for phase in tqdm(
        scenario.phases, desc=scenario.spec.name, unit="phase", leave=False, disable=not progress
    ):
        results.append(built.run_phase(phase))
    return RunResult(
        scenario=scenario.spec.name,
        system=str(getattr(scenario.system.model, "name", "")),
        seed=scenario.spec.seed,
        fidelity=scenario.spec.fidelity,
        wall_time_s=time.perf_counter() - started,
        phases=results,
    )


def run_scenario(path: str | Path, overrides: Mapping[str, str] = {}) -> RunResult:
    """Load and run a scenario file; see :func:`load_scenario`."""
    return run_loaded(load_scenario(path, overrides))
