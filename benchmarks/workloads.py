"""Issue 10's workloads at the size an architect runs them.

* ``replay_2048_ranks_s``: pydarshan's ``sample-badost.darshan`` (2,048 ranks,
  166,000 calls drawn from its counters) read and replayed on Cori scratch;
* ``production_mix_hour_s`` and ``..._peak_rss_MiB``: the widow1-like hour of
  ``scenarios/spider/production-mix.toml`` (about 40 jobs, a million calls);
* ``io500_perlmutter_s``: ``scenarios/perlmutter/io500.toml`` (the 10-node and
  256-node IO-500 runs).

Each is loaded and run from scratch in this process; prints one JSON line per
name with ``wall_s`` (and ``peak_rss_MiB``).

    python -m benchmarks.workloads {replay|mix|io500}
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from benchmarks.memory import peak_rss_MiB
from flashsim.scenario import load_scenario, run_loaded, scenario_from_data

ROOT = Path(__file__).resolve().parents[1]


def replay() -> None:
    """Replay the 2,048-rank counters-only log on Cori scratch."""
    data = {
        "name": "bench-replay",
        "system": str(ROOT / "models" / "systems" / "cori-scratch.toml"),
        "phases": [
            {
                "name": "badost",
                "workload": "darshan",
                "log": "pydarshan:examples/example_logs/sample-badost.darshan",
                "ranks_per_node": 24,
            }
        ],
    }
    run_loaded(scenario_from_data(data, ROOT / "bench-replay"))


def scenario(path: str) -> None:
    """Run a shipped scenario."""
    run_loaded(load_scenario(ROOT / path))


def main(argv: list[str]) -> int:
    which = argv[1] if len(argv) > 1 else "replay"
    start = time.perf_counter()
    if which == "replay":
        replay()
    elif which == "mix":
        scenario("scenarios/spider/production-mix.toml")
    elif which == "io500":
        scenario("scenarios/perlmutter/io500.toml")
    else:
        raise SystemExit(f"unknown benchmark {which!r}: expected replay, mix or io500")
    wall = time.perf_counter() - start
    print(json.dumps({"wall_s": wall, "peak_rss_MiB": peak_rss_MiB()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
