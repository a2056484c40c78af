"""Running the ``flashsim`` command line from tests, as a user would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_flashsim(*args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    """``python -m flashsim.cli ARGS`` from the repository root; output captured, no check."""
    return subprocess.run(
        [sys.executable, "-m", "flashsim.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=timeout,
    )
