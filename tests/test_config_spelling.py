"""Issue 18: `describe --set` and `run --set` take one spelling of a Lustre model key."""

from __future__ import annotations

import json

import pytest

from tests.cli_helpers import run_flashsim

PERLMUTTER = "models/systems/perlmutter.toml"


@pytest.mark.parametrize("key", ["system.oss.count", "oss.count"])
def test_describe_takes_system_oss_count_as_run_does(key: str) -> None:
    """The spelling of run, sweep and replay (``system.``) and, for a model alone, the bare key."""
    proc = run_flashsim("describe", PERLMUTTER, "--json", "--set", f"{key}=4")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["components"]["oss"] == 4


def test_run_takes_system_oss_count_and_names_it_for_the_bare_key() -> None:
    """A bad value reaches the model under ``system.`` (no run starts); the bare key is refused
    with the spelling to use."""
    scenario = "scenarios/perlmutter/ior-sweep.toml"
    good = run_flashsim("run", scenario, "--set", "system.oss.count=0")
    assert good.returncode == 2 and "a Lustre system needs at least one OSS" in good.stderr
    bare = run_flashsim("run", scenario, "--set", "oss.count=4")
    assert bare.returncode == 2 and "system.oss.count" in bare.stderr, bare.stderr
