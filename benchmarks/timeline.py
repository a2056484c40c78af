"""Issue 17's timeline scenarios, for wall time and peak memory.

``year``: ``scenarios/perlmutter/year.toml`` (a year of production fast-forwarded over
274 OSTs with drives failing and rebuilding, fleet variability on, 52 weekly 512-node
checkpoint probes in flow fidelity); ``composed``:
``scenarios/perlmutter/aged-degraded-checkpoint.toml`` (four 512-node checkpoints around
60 days of production, three rebuilds and background traffic).  Prints one JSON line:
``wall_s`` (loading and running the scenario) and ``peak_rss_MiB`` of this process.

    python -m benchmarks.timeline {year,composed}
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from benchmarks.memory import peak_rss_MiB
from flashsim.scenario import load_scenario, run_loaded

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios" / "perlmutter"
CASES = {"year": "year.toml", "composed": "aged-degraded-checkpoint.toml"}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in CASES:
        print(f"usage: python -m benchmarks.timeline {{{','.join(CASES)}}}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    result = run_loaded(load_scenario(SCENARIOS / CASES[argv[1]]))
    wall = time.perf_counter() - start
    print(
        json.dumps({"phases": len(result.phases), "wall_s": wall, "peak_rss_MiB": peak_rss_MiB()})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
