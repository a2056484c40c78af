"""Eighty days of the whole Perlmutter file system aging, at daily-volume resolution.

Runs the ``monthly-trim`` phase of ``scenarios/perlmutter/trim-policy.toml``
(2.2 PB/day over all 274 OSTs, fstrim every 30 days) for 80 simulated days in
flow fidelity: each day one fluid FTL step per OST and one or two max-min
solves of the file system's write capability.  Prints one JSON line:
``days``, ``wall_s`` (loading included), ``onset_day``.

    python -m benchmarks.aging [DAYS]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from flashsim.scenario import load_scenario, run_loaded

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "perlmutter" / "trim-policy.toml"
PHASE = "monthly-trim"


def main(argv: list[str]) -> int:
    days = argv[1] if len(argv) > 1 else "80"
    start = time.perf_counter()
    loaded = load_scenario(SCENARIO, {f"phases.{PHASE}.days": days})
    loaded.phases = [p for p in loaded.phases if p.name == PHASE]
    result = run_loaded(loaded)
    wall = time.perf_counter() - start
    extra = result.phases[0].extra.to_dict()
    print(json.dumps({"days": int(days), "wall_s": wall, "onset_day": extra["onset_day"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
