"""Bad timing keys and events: exit 2, one ``error:`` line naming the key, no traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import ROOT, run_flashsim

MODEL = ROOT / "models" / "systems" / "perlmutter.toml"

PHASE = """
[[phases]]
name = "{name}"
workload = "ior"
operation = "write"
nodes = 1
ranks_per_node = 2
file_per_process = true
transfer_size = "16 MiB"
block_size = "1 GiB"
layout = {{ stripe_count = 1, stripe_size = "1 MiB", first_target = 0 }}
{extra}
"""


def scenario(tmp_path: Path, extras: list[str], events: str = "") -> Path:
    """A scenario of one small IOR phase per item of ``extras`` (TOML lines added to it)."""
    text = f'name = "bad-timeline"\nsystem = "{MODEL}"\n'
    for i, extra in enumerate(extras):
        text += PHASE.format(name=f"p{i}", extra=extra)
    path = tmp_path / "scenario.toml"
    path.write_text(text + events)
    return path


CASES: list[tuple[str, list[str], str, str]] = [
    ("start unit", ["", 'start = "5 parsecs"'], "", "phases.1.start"),
    ("after unknown", ["", 'after = "nope"'], "", "phases.1.after"),
    ("after itself", ["", 'after = "p1"'], "", "phases.1.after"),
    ("cycle", ['after = "p1"', ""], "", "phases.0.after"),
    ("start and after", ["", 'start = "1 s"\nafter = "p0"'], "", "phases.1.after"),
    ("repeat unbounded", ["", 'repeat = { every = "1 s" }'], "", "phases.1.repeat"),
    ("repeat key", ["", 'repeat = { every = "1 s", count = 2, x = 1 }'], "", "phases.1.repeat.x"),
    ("repeat every", ["", 'repeat = { every = "0 s", count = 2 }'], "", "phases.1.repeat.every"),
    ("reset string", ["", 'reset = "yes"'], "", "phases.1.reset"),
    (
        "unknown action",
        [""],
        '[[events]]\nat = "1 s"\naction = "explode"\n',
        "events.0.action",
    ),
    (
        "two times",
        [""],
        '[[events]]\nat = "1 s"\nrelative_to = "p0"\naction = "reset"\n',
        "events.0.at",
    ),
    (
        "no time",
        [""],
        '[[events]]\naction = "reset"\n',
        "events.0",
    ),
    (
        "offset with at",
        [""],
        '[[events]]\nat = "1 s"\noffset = "1 s"\naction = "reset"\n',
        "events.0.offset",
    ),
    (
        "relative to nothing",
        [""],
        '[[events]]\nrelative_to = "nope"\naction = "reset"\n',
        "events.0.relative_to",
    ),
    (
        "bad edge",
        [""],
        '[[events]]\nrelative_to = "p0"\nedge = "middle"\naction = "reset"\n',
        "events.0.edge",
    ),
    (
        "same names",
        [""],
        '[[events]]\nname = "x"\nat = "1 s"\naction = "reset"\n'
        '[[events]]\nname = "x"\nat = "2 s"\naction = "reset"\n',
        "events.1.name",
    ),
    (
        "event named as a phase",
        [""],
        '[[events]]\nname = "p0"\nat = "1 s"\naction = "reset"\n',
        "events.0.name",
    ),
    (
        "cycle of events",
        [""],
        '[[events]]\nname = "a"\nrelative_to = "b"\naction = "reset"\n'
        '[[events]]\nname = "b"\nrelative_to = "a"\naction = "reset"\n',
        "events.0.relative_to",
    ),
    (
        "stop without start",
        [""],
        '[[events]]\nname = "bg"\nat = "1 s"\naction = "background-stop"\n',
        "events.0.name",
    ),
    (
        "background role",
        [""],
        '[[events]]\nname = "bg"\nat = "1 s"\naction = "background-start"\n'
        'jobs = [{ between = ["compute", "storage"], rate_per_pair = "1 GB/s" }]\n',
        "events.0.jobs.0.between",
    ),
    (
        "target index",
        [""],
        '[[events]]\nat = "1 s"\naction = "fail-drive"\ntarget = 100000\ndrive = 0\n',
        "events.0.target",
    ),
    (
        "trim target index",
        [""],
        '[[events]]\nat = "1 s"\naction = "trim"\ntargets = [100000]\n',
        "events.0.targets",
    ),
    (
        "factor and capacity",
        [""],
        '[[events]]\nat = "1 s"\naction = "set-capacity"\nresource = "*"\nfactor = 0.5\n'
        'capacity = "1 GB/s"\n',
        "events.0.factor",
    ),
    (
        "negative factor",
        [""],
        '[[events]]\nat = "1 s"\naction = "set-capacity"\nresource = "*"\nfactor = -1\n',
        "events.0.factor",
    ),
    (
        "glob matching nothing",
        [""],
        '[[events]]\nat = "0.01 s"\naction = "set-capacity"\nresource = "nothing.*"\n'
        "factor = 0.5\n",
        "events.0.resource",
    ),
]


@pytest.mark.parametrize(
    ("extras", "events", "key"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_timeline_input_is_one_error_line(
    tmp_path: Path, extras: list[str], events: str, key: str
) -> None:
    done = run_flashsim("run", str(scenario(tmp_path, extras, events)))
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert f"'{key}'" in errors[0], errors[0]
    assert "Traceback" not in done.stderr


def test_a_good_timeline_scenario_runs(tmp_path: Path) -> None:
    """The same file with valid keys runs (the cases above fail on their key alone)."""
    extras: list[Any] = ["", 'start = "0 s"', 'after = "p0"\nrepeat = { every = "1 s", count = 2 }']
    events = '[[events]]\nrelative_to = "p1"\noffset = "0.01 s"\naction = "reset"\n'
    done = run_flashsim("run", "--json", str(scenario(tmp_path, extras, events)))
    assert done.returncode == 0, done.stderr
    assert '"p2@' in done.stdout
