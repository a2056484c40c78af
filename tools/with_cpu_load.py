"""Run a command beside a CPU-bound load of busy processes; stop them when it ends.

``make test-loaded`` runs the test suite this way, to show it does not depend on an idle
machine::

    python tools/with_cpu_load.py [--procs 2] -- COMMAND [ARGS...]

Each load process spins in Python.  They are killed when the command ends, when this script is
interrupted (SIGINT, SIGTERM, SIGHUP), and they end by themselves within a fraction of a second
if this script dies without cleaning up (they watch their parent).  The exit status is the
command's; the load's process ids are printed on stderr and given to the command in
``WITH_CPU_LOAD_PIDS`` (space-separated).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from types import FrameType

# Spin until the parent (this script) is gone: then getppid() names another process.
BUSY = """
import os
parent = os.getppid()
while os.getppid() == parent:
    for _ in range(200_000):
        pass
"""


def _exit_on(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    """Start the load, run the command, stop the load; return the command's exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--procs", type=int, default=2, help="busy processes (default 2)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    if args.procs < 0:
        parser.error(f"--procs must be >= 0, not {args.procs}")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on)
    load: list[subprocess.Popen[bytes]] = []
    try:
        load = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.procs)]
        pids = " ".join(str(p.pid) for p in load)
        print(f"with_cpu_load: {len(load)} busy processes (pids {pids})", file=sys.stderr)
        return subprocess.call(command, env=os.environ | {"WITH_CPU_LOAD_PIDS": pids})
    except KeyboardInterrupt:
        return 130
    finally:
        for proc in load:
            proc.kill()
        for proc in load:
            proc.wait()


if __name__ == "__main__":
    sys.exit(main())
