"""The whole Perlmutter model under full-system IOR, for wall time and peak memory.

Runs ``scenarios/perlmutter/full-system.toml`` (16,384 file-per-process ranks over
all 274 OSTs, then 1,024 ranks on 274-wide stripes; 45 s stonewalled write then
read each) in flow fidelity, optionally with the file-per-process rank count
changed, and prints one JSON line: ``ranks``, ``wall_s`` (simulation only, after
loading), ``peak_rss_MiB`` of this process.

    python -m benchmarks.full_system [FPP_NODES]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from benchmarks.memory import peak_rss_MiB
from flashsim.scenario import load_scenario, run_loaded

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "perlmutter" / "full-system.toml"


def main(argv: list[str]) -> int:
    overrides = {}
    if len(argv) > 1:
        overrides = {"phases.fpp-write.nodes": argv[1], "phases.fpp-read.nodes": argv[1]}
    loaded = load_scenario(SCENARIO, overrides)
    start = time.perf_counter()
    result = run_loaded(loaded)
    wall = time.perf_counter() - start
    frame = result.to_dataframe()
    peak = peak_rss_MiB()
    ranks = int(frame["ranks"].max()) if "ranks" in frame else 0
    print(json.dumps({"ranks": ranks, "wall_s": wall, "peak_rss_MiB": peak}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
