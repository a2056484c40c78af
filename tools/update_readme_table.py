"""Replace the README's validation table with what ``flashsim validate`` prints now."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- validation-table:start -->", "<!-- validation-table:end -->"


def main() -> int:
    proc = subprocess.run(
        [sys.executable, "-m", "flashsim.cli", "validate"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stderr)
        return proc.returncode
    readme = ROOT / "README.md"
    text = readme.read_text()
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    table = proc.stdout.strip()
    readme.write_text(pattern.sub(f"{START}\n{table}\n{END}", text))
    print(table.splitlines()[-1])
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
