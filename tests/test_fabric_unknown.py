"""A switch fabric of unknown bandwidth: no resource, only latency, and describe says so."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import TypeAdapter, ValidationError

from flashsim.components.fabric import Fabric
from flashsim.components.fabric_spec import FabricSpec, SwitchFabricSpec
from flashsim.engine.simulation import Simulation
from tests.cli_helpers import run_flashsim

SPEC = TypeAdapter(FabricSpec)


def _unknown() -> SwitchFabricSpec:
    spec = SPEC.validate_python(
        {"topology": "switch", "switches": 2, "switch_bandwidth": "unknown", "latency": "1 us"}
    )
    assert isinstance(spec, SwitchFabricSpec)
    return spec


def test_unknown_switch_bandwidth_builds_no_resource_and_keeps_its_latency() -> None:
    spec = _unknown()
    assert not spec.binding
    sim = Simulation()
    fabric = Fabric(sim, "f", spec)
    fabric.attach("a")
    fabric.attach("b")
    assert fabric.path("a", "b") == []
    assert fabric.resources() == []
    assert list(fabric.request_hops("a", "b", 1e6, sim.rng("t"))) == []
    assert fabric.latency_s("a", "b") == pytest.approx(1e-6)
    assert math.isinf(fabric.describe_bound_Bps(["a"], ["b"]))
    assert "unknown bandwidth" in fabric.describe_note()
    assert fabric.bound_caveat() == "; switch bandwidth unknown: assumed never to bind"


def test_a_known_switch_bandwidth_still_binds() -> None:
    spec = SPEC.validate_python({"topology": "switch", "switches": 2, "switch_bandwidth": "1 TB/s"})
    assert isinstance(spec, SwitchFabricSpec) and spec.binding
    fabric = Fabric(Simulation(), "f", spec)
    fabric.attach("a")
    fabric.attach("b")
    assert [(r.capacity_Bps, w) for r, w in fabric.path("a", "b")] == [(2e12, 1.0)]
    assert fabric.bound_caveat() == ""


@pytest.mark.parametrize("value", ["unkown", "fast", "-1 GB/s"])
def test_other_words_are_refused(value: str) -> None:
    with pytest.raises(ValidationError):
        SPEC.validate_python({"topology": "switch", "switches": 1, "switch_bandwidth": value})


def test_describe_says_the_fabric_is_not_binding_and_its_json_has_no_infinity() -> None:
    """describe --json of a fabric with no bound gives null (JSON has no inf), text says why."""
    args = ("describe", "models/systems/cori-scratch.toml", "--set")
    setting = 'system.fabric.switch_bandwidth="unknown"'
    text = run_flashsim(*args, setting)
    assert text.returncode == 0, text.stderr
    line = next(x for x in text.stdout.splitlines() if "fabric (clients <-> servers)" in x)
    assert "switch bandwidth unknown: assumed never to bind" in line
    proc = run_flashsim(*args, setting, "--json")
    assert proc.returncode == 0, proc.stderr
    layers = json.loads(proc.stdout)["layers"]
    fabric = next(la for la in layers if la["layer"] == "fabric (clients <-> servers)")
    assert fabric["read_Bps"] is None and fabric["write_Bps"] is None
