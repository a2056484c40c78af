"""Time the scenarios the README quotes a run time for, and write those times into it.

``make readme-times`` (``python tools/time_scenarios.py``) finds every line of
README.md that runs ``flashsim run SCENARIO`` and quotes a time (``~16 s CPU``),
runs each of those commands as a user would (a new process: interpreter
start-up, imports, model load, run and output all counted; output to
/dev/null, so no progress line), measures its wall time and its CPU time
(user + system of the command and every worker process it waited for, from
``getrusage(RUSAGE_CHILDREN)``), and rewrites

* each quoted time, as the CPU seconds (``~16 s CPU``): less sensitive to the
  machine's load than wall time, and the same as the wall time of a
  single-process run on an idle core;
* the run-time table between ``<!-- run-times:start -->`` and
  ``<!-- run-times:end -->``: wall and CPU seconds of every scenario, and
  when, where and under what load they were measured.

The measurements are kept in ``tools/run_times.json``, so ``--only`` re-times
some scenarios and keeps the others, and ``--rewrite`` rewrites the README
from them without running anything.  ``--check`` runs nothing: it checks that
every time the README quotes belongs to a timed command and that the table
lists exactly those commands (``tests/test_readme.py`` calls :func:`problems`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RESULTS = ROOT / "tools" / "run_times.json"
START, END = "<!-- run-times:start -->", "<!-- run-times:end -->"

#: A time quoted in prose or a comment: ``~3 s``, ``about 2 s``, ``~1.5 min``, ``~16 s CPU``.
QUOTED_TIME = re.compile(r"(?:~|\babout )\s?\d[\d,.]*\s?(?:s|sec|seconds|min|minutes)\b")
#: A README command line that runs a scenario and quotes its time (the marker the tool rewrites).
TIMED_COMMAND = re.compile(
    r"flashsim run (?P<scenario>scenarios/\S+\.toml)(?P<middle>[^\n]*?)"
    r"~(?P<time>\d[\d,.]*) s(?: CPU)?"
)


@dataclass
class Timing:
    """One command's measurement.

    Attributes
    ----------
    scenario : str
        The scenario file, relative to the repository root.
    wall_s : float
        Wall-clock seconds of the whole command, start-up included.
    cpu_s : float
        User + system CPU seconds of the command and the processes it waited for.
    exit_status : int
        The command's exit status (0 when it ran).
    load_before, load_after : float
        The machine's 1-minute load average just before and just after.
    measured : str
        When (UTC, ISO 8601).
    commit : str
        The commit of the code measured (``git rev-parse --short HEAD``).
    """

    scenario: str
    wall_s: float
    cpu_s: float
    exit_status: int
    load_before: float
    load_after: float
    measured: str
    commit: str = ""


def timed_scenarios(text: str) -> list[str]:
    """Scenarios of the README's timed command lines, in order of first appearance."""
    seen: list[str] = []
    for match in TIMED_COMMAND.finditer(text):
        if match["scenario"] not in seen:
            seen.append(match["scenario"])
    return seen


def problems(text: str) -> list[str]:
    """What is wrong with the README's run times (empty when every time has its marker).

    Every quoted time must be the time of a ``flashsim run SCENARIO`` command on
    the same line (outside the generated table), and the table must list exactly
    the timed scenarios.
    """
    out: list[str] = []
    before, _, rest = text.partition(START)
    table, _, after = rest.partition(END)
    if not rest:
        out.append(f"README has no {START} ... {END} table")
    for lineno, line in enumerate((before + after).splitlines(), 1):
        for quote in QUOTED_TIME.finditer(line):
            owner = TIMED_COMMAND.search(line)
            if owner is None or owner.start("time") - 1 != quote.start():
                out.append(
                    f"README line ~{lineno}: {quote.group(0)!r} is not the time of a "
                    f"'flashsim run scenarios/...toml' command on its line: {line.strip()}"
                )
    listed = re.findall(r"^\| `(scenarios/\S+\.toml)` \|", table, re.M)
    timed = timed_scenarios(before + after)
    if sorted(listed) != sorted(timed):
        out.append(
            f"the run-time table lists {sorted(listed)} but the README times {sorted(timed)}; "
            "run `make readme-times`"
        )
    for scenario in timed:
        if not (ROOT / scenario).is_file():
            out.append(f"README times {scenario}, which does not exist")
    return out


def flashsim_command() -> list[str]:
    """The ``flashsim`` entry point beside this Python (as the README runs it), or ``-m``."""
    script = Path(sys.executable).parent / "flashsim"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "flashsim.cli"]


def time_command(scenario: str) -> Timing:
    """Run ``flashsim run SCENARIO`` in a new process and measure it."""
    load_before = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        [*flashsim_command(), "run", scenario],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    wall_s = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
    return Timing(
        scenario=scenario,
        wall_s=wall_s,
        cpu_s=cpu_s,
        exit_status=proc.returncode,
        load_before=load_before,
        load_after=os.getloadavg()[0],
        measured=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        commit=head_commit(),
    )


def _rounded(seconds: float) -> str:
    """Seconds to two significant figures, at least 1: ``16``, ``140``, ``1``."""
    if seconds < 1.0:
        return "1"
    return f"{float(f'{seconds:.2g}'):g}"


def rewrite(text: str, timings: dict[str, Timing], machine: str) -> str:
    """The README with each timed command's time and the run-time table from ``timings``."""

    def inline(match: re.Match[str]) -> str:
        timing = timings.get(match["scenario"])
        if timing is None:
            return match.group(0)
        return f"flashsim run {match['scenario']}{match['middle']}~{_rounded(timing.cpu_s)} s CPU"

    before, _, rest = text.partition(START)
    _, _, after = rest.partition(END)
    before, after = TIMED_COMMAND.sub(inline, before), TIMED_COMMAND.sub(inline, after)
    rows = [
        "| scenario | wall s | CPU s | load (1 min) | measured |",
        "|---|---:|---:|---:|---|",
    ]
    for scenario in timed_scenarios(before + after):
        t = timings.get(scenario)
        if t is None:
            rows.append(f"| `{scenario}` | - | - | - | not measured |")
            continue
        failed = "" if t.exit_status == 0 else f" (exit {t.exit_status})"
        rows.append(
            f"| `{scenario}` | {t.wall_s:.1f} | {t.cpu_s:.1f} | "
            f"{t.load_before:.1f}-{t.load_after:.1f} | {t.measured}{failed} |"
        )
    table = "\n".join([machine, "", *rows])
    return f"{before}{START}\n{table}\n{END}{after}"


def head_commit() -> str:
    """The checkout's commit (short hash), or ``"unknown"``."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine_note(timings: dict[str, Timing]) -> str:
    """Where the times were measured: the commits, cores, Python."""
    commits = sorted({t.commit for t in timings.values() if t.commit}) or [head_commit()]
    return (
        f"Measured by `make readme-times` (tools/time_scenarios.py) at commit "
        f"{', '.join(commits)}, "
        f"one command at a time, on {os.cpu_count()} cores ({platform.machine()}, "
        f"Python {platform.python_version()}). Wall time covers the whole command (start-up, "
        "imports, model load, run, output) and grows with the machine's load (the load column); "
        "CPU time is user + system of the command and its worker processes."
    )


def load_results() -> dict[str, Timing]:
    """The measurements kept from earlier runs."""
    if not RESULTS.is_file():
        return {}
    return {t["scenario"]: Timing(**t) for t in json.loads(RESULTS.read_text())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Run nothing; check the markers.")
    parser.add_argument("--only", default="", help="Time only scenarios containing this text.")
    parser.add_argument(
        "--rewrite", action="store_true", help="Run nothing; rewrite from tools/run_times.json."
    )
    args = parser.parse_args(argv)
    text = README.read_text()
    if args.check:
        found = problems(text)
        for problem in found:
            print(problem, file=sys.stderr)
        return 1 if found else 0
    timings = load_results()
    for scenario in timed_scenarios(text):
        if args.rewrite or args.only not in scenario:
            continue
        print(f"timing {scenario} ...", file=sys.stderr, flush=True)
        timing = time_command(scenario)
        timings[scenario] = timing
        print(
            f"  wall {timing.wall_s:.1f} s, CPU {timing.cpu_s:.1f} s, exit {timing.exit_status}, "
            f"load {timing.load_before:.1f}-{timing.load_after:.1f}",
            file=sys.stderr,
            flush=True,
        )
        RESULTS.write_text(
            json.dumps([asdict(t) for t in timings.values()], indent=2) + "\n"
        )  # after each command, so an interrupted run keeps what it measured
    # read again: the README may have been edited while the commands ran
    README.write_text(rewrite(README.read_text(), timings, machine_note(timings)))
    failed = [t.scenario for t in timings.values() if t.exit_status != 0]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
