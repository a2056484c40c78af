"""Every run time the README quotes is measured by ``make readme-times`` (nothing is run here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "time_scenarios", ROOT / "tools/time_scenarios.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass resolves annotations there
    spec.loader.exec_module(module)
    return module


def test_every_quoted_time_is_a_measured_command() -> None:
    tool = _tool()
    assert tool.problems((ROOT / "README.md").read_text()) == []


def test_a_time_without_its_command_is_found() -> None:
    tool = _tool()
    table = f"{tool.START}\n| `scenarios/perlmutter/aging.toml` | 1 | 1 | 1-1 | now |\n{tool.END}"
    good = f"flashsim run scenarios/perlmutter/aging.toml  # Fig. 8, ~3 s CPU\n{table}\n"
    assert tool.problems(good) == []
    assert tool.timed_scenarios(good) == ["scenarios/perlmutter/aging.toml"]
    for bad in (
        "It runs in about 2 s.\n",  # prose: no command on the line
        "flashsim run scenarios/perlmutter/aging.toml  # ~3 s, then ~5 s\n",  # two times
        "flashsim run scenarios/perlmutter/fleet.toml  # ~15 s\n",  # not in the table
    ):
        assert tool.problems(good + bad), bad


def test_rewriting_puts_the_measured_cpu_seconds_and_a_row_in_place() -> None:
    tool = _tool()
    command = "`flashsim run scenarios/perlmutter/aging.toml` # Fig. 8, ~3 s"
    text = f"x\n{command}\n{tool.START}\n{tool.END}\n"
    timing = tool.Timing("scenarios/perlmutter/aging.toml", 40.0, 16.4, 0, 5.0, 6.0, "T")
    out = tool.rewrite(text, {timing.scenario: timing}, "measured here")
    assert "# Fig. 8, ~16 s CPU" in out
    assert "| `scenarios/perlmutter/aging.toml` | 40.0 | 16.4 | 5.0-6.0 | T |" in out
    assert tool.problems(out) == []
