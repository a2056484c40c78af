"""Issue 19's commands as the README runs them, for whole-command wall time.

``check``: ``flashsim check`` of seed 000's obdfilter-survey medians for four OSTs
(``tests/data/measurements/seed000-check``) on Perlmutter; ``calibrate``: ``flashsim
calibrate`` of Perlmutter's six calibrated parameters from seed 000's numbers in the tools'
formats (``tests/data/measurements/seed000``), the model written to a temporary file.  Each
runs as its own process (start-up included); prints one JSON line with ``wall_s`` and the
command's exit status.

    python -m benchmarks.measurements {check,calibrate}
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "measurements"
MODEL = ROOT / "models" / "systems" / "perlmutter.toml"


def _args(case: str, out: Path) -> list[str]:
    if case == "check":
        files = sorted(str(p) for p in (DATA / "seed000-check").glob("*.txt"))
        return ["check", *files, "--system", str(MODEL)]
    seed = DATA / "seed000"
    files = sorted(str(p) for p in seed.iterdir() if p.suffix in (".txt", ".summary"))
    return ["calibrate", *files, "--system", str(MODEL), "--out", str(out), "--force"]


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in ("check", "calibrate"):
        print("usage: python -m benchmarks.measurements {check,calibrate}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "flashsim.cli", *_args(argv[1], Path(tmp) / "refit.toml")]
        start = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
        wall = time.perf_counter() - start
    print(json.dumps({"wall_s": wall, "exit": proc.returncode}))
    return 0  # the exit status is in the record: run.py fails the benchmark on it


if __name__ == "__main__":
    sys.exit(main(sys.argv))
