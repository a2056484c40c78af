"""Replay every Darshan log pydarshan ships on the model closest to where it was recorded.

Prints (and with ``--write`` stores in ``docs/darshan-replay.md``) one row per distinct
log: where it ran, the model used, calls replayed and whether they conserve the log's
counters, and the simulated beside the recorded cumulative I/O time and run time.

Usage::

    .venv/bin/python tools/replay_examples.py [--write]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import time
from pathlib import Path

import darshan

from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_system_model
from flashsim.workloads.darshan import DarshanPhase, ReplayDetails, run_darshan
from flashsim.workloads.darshan_log import model_match

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models" / "systems"
#: Model for logs recorded on no system flashsim models (laptops, workstations).
FALLBACK = "perlmutter.toml"
#: Ranks per node of the machines the logs name (Cori Haswell 32 cores; Edison 24).
RANKS_PER_NODE = {"Edison": 24, "Cori": 32}


def distinct_logs() -> list[Path]:
    """Every ``.darshan`` file pydarshan ships, each content once."""
    root = Path(darshan.__file__).parent
    seen: set[str] = set()
    out = []
    for path in sorted([*root.glob("examples/**/*.darshan"), *root.glob("tests/input/*.darshan")]):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            out.append(path)
    return out


def fmt_s(value: float | None) -> str:
    """Seconds to 3 significant digits, or a dash."""
    return "-" if value is None or not math.isfinite(value) else f"{value:.3g}"


def replay_row(log: Path) -> str:
    """One Markdown table row for ``log``."""
    phase = DarshanPhase.model_validate({"name": "replay", "workload": "darshan", "log": str(log)})
    trace = phase.trace(0)
    match = model_match(trace)
    model_name = match.model or FALLBACK
    rpn = next((n for site, n in RANKS_PER_NODE.items() if site in trace.recorded_on), 32)
    phase = DarshanPhase.model_validate(
        {"name": "replay", "workload": "darshan", "log": str(log), "ranks_per_node": rpn}
    )
    loaded = load_system_model(MODELS / model_name)
    system = loaded.kind.build(loaded.model, Simulation(0), "flow")
    started = time.perf_counter()
    d = run_darshan(system, phase, "flow", 0).details(ReplayDetails)  # type: ignore[arg-type]
    wall = time.perf_counter() - started
    t = d.total
    ratio = "-" if d.io_time_ratio is None else f"{d.io_time_ratio:.3g}"
    model = model_name if match.model else f"({model_name}: none close)"
    return (
        f"| {log.name[:34]} | {d.nprocs} | {d.timing} | {d.recorded_on} | {model} | "
        f"{t.reads + t.writes:,} | {'yes' if d.conserved else 'NO'} | "
        f"{fmt_s(t.recorded_io_time_s)} | {fmt_s(t.sim_io_time_s)} | {ratio} | "
        f"{fmt_s(d.recorded_runtime_s)} | {fmt_s(d.sim_runtime_s)} | {wall:.2f} |"
    )


COLUMNS = (
    "log", "ranks", "calls", "recorded on", "model", "calls replayed", "conserved",
    "recorded I/O s", "simulated I/O s", "sim/rec", "recorded run s", "simulated run s", "wall s",
)  # fmt: skip
HEADER = "| " + " | ".join(COLUMNS) + " |\n" + "|---" * len(COLUMNS) + "|"


def main() -> None:
    """Replay the logs and print (or write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update docs/darshan-replay.md")
    args = parser.parse_args()
    rows = [replay_row(log) for log in distinct_logs()]
    table = "\n".join([HEADER, *rows])
    print(table)
    if args.write:
        doc = ROOT / "docs" / "darshan-replay.md"
        text = doc.read_text()
        start = text.index("<!-- table -->") + len("<!-- table -->")
        end = text.index("<!-- /table -->")
        doc.write_text(text[:start] + "\n" + table + "\n" + text[end:])


if __name__ == "__main__":
    main()
