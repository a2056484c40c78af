"""Replay every Darshan log under a directory with ``flashsim replay``; report what happened.

Each log runs as a user would run it (``python -m flashsim.cli replay LOG --system MODEL
--json``, one process per log, a wall-clock timeout each) on the model closest to where
it was recorded (:func:`flashsim.workloads.darshan_log.model_match`; Perlmutter when none
is close).  Every log ends in one of:

* ``replayed``: exit 0, with its calls, whether they conserve the log's counters, the
  simulated and recorded cumulative I/O time, and any module not replayed;
* ``refused``: exit 2 with one ``error:`` line (a corrupt or impossible log);
* ``skipped``: more calls than ``--max-calls`` (counted by reading the log first; a log
  the reader refuses is replayed all the same, to show its message);
* ``FAILED``: any other exit status (3: an internal error), a traceback, more than one
  line on stderr for a refusal, or the timeout.

The exit status is 1 when any log FAILED, else 0.

Usage::

    .venv/bin/python tools/replay_corpus.py DIR [--max-calls 200000] [--timeout 600]
        [--exclude 'GLOB' ...]

``--exclude`` leaves out logs whose path relative to ``DIR`` matches a glob (e.g.
``'dlio_logs/*'``); they are counted as ``excluded``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from flashsim.workloads.darshan_log import DarshanLogError, model_match, read_darshan

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models" / "systems"
#: Model for logs recorded on no system flashsim models (laptops, workstations).
FALLBACK = "perlmutter.toml"


@dataclass(frozen=True)
class Outcome:
    """What one log's replay did.

    Attributes
    ----------
    log : Path
        The log.
    status : str
        ``replayed``, ``refused``, ``skipped``, ``excluded`` or ``FAILED``.
    detail : str
        One line: the replay's numbers, the refusal's message or why it failed.
    wall_s : float
        Wall-clock seconds the replay took (s).
    """

    log: Path
    status: str
    detail: str
    wall_s: float


def choose(log: Path, max_calls: int) -> tuple[str | None, str]:
    """(model file name, "") to replay ``log`` on, or (None, why it is skipped).

    A log the reader refuses gets the fallback model: its replay shows the refusal.
    """
    try:
        trace = read_darshan(log)
    except DarshanLogError:
        return FALLBACK, ""
    calls = len(trace.ops)
    if calls > max_calls:
        return None, f"{calls:,} calls (> --max-calls {max_calls:,})"
    return model_match(trace).model or FALLBACK, ""


def replay_one(log: Path, model: str, timeout_s: float) -> Outcome:
    """Run ``flashsim replay`` on ``log`` and classify the result."""
    cmd = [sys.executable, "-m", "flashsim.cli", "replay", str(log), "--system",
           str(MODELS / model), "--json"]  # fmt: skip
    started = time.perf_counter()
    try:
        out = subprocess.run(
            cmd, capture_output=True, text=True, cwd=ROOT, check=False, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return Outcome(log, "FAILED", f"timeout after {timeout_s:g} s", timeout_s)
    wall = time.perf_counter() - started
    err = out.stderr.strip()
    if "Traceback" in out.stderr:
        return Outcome(log, "FAILED", f"traceback (exit {out.returncode})", wall)
    if out.returncode == 2:
        lines = [ln for ln in err.splitlines() if not ln.startswith("warning:")]
        if len(lines) == 1 and lines[0].startswith("error: "):
            return Outcome(log, "refused", lines[0], wall)
        return Outcome(log, "FAILED", f"exit 2 without one error line: {err[:200]}", wall)
    if out.returncode != 0:
        return Outcome(log, "FAILED", f"exit {out.returncode}: {err[:200]}", wall)
    extra = json.loads(out.stdout)["phases"][0]["extra"]
    total = extra["total"]
    rec = total["recorded_io_time_s"]
    missing = [u["module"] for u in extra.get("not_replayed", []) if not u["above_posix"]]
    detail = (
        f"{model}: {total['reads'] + total['writes']:,} calls, "
        f"{'conserved' if extra['conserved'] else 'NOT conserved'}, I/O simulated "
        f"{total['sim_io_time_s']:.4g} s vs recorded "
        + (f"{rec:.4g} s" if rec is not None else "-")
        + (f"; not replayed: {', '.join(missing)}" if missing else "")
    )
    status = "replayed" if extra["conserved"] else "FAILED"
    return Outcome(log, status, detail, wall)


def main() -> int:
    """Replay every log under the directory; print one line per log and a summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, help="Directory searched for *.darshan logs.")
    parser.add_argument("--max-calls", type=int, default=200_000,
                        help="Skip logs with more read and write calls than this.")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="Wall-clock seconds each replay may take.")  # fmt: skip
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="Leave out logs whose path matches (repeatable).")  # fmt: skip
    args = parser.parse_args()
    logs = sorted(args.directory.rglob("*.darshan"))
    if not logs:
        print(f"error: no *.darshan file under {args.directory}", file=sys.stderr)
        return 2
    outcomes = []
    for log in logs:
        rel = str(log.relative_to(args.directory))
        if any(fnmatch(rel, pattern) for pattern in args.exclude):
            outcomes.append(Outcome(log, "excluded", "--exclude", 0.0))
            continue
        model, why = choose(log, args.max_calls)
        if model is None:
            outcome = Outcome(log, "skipped", why, 0.0)
        else:
            outcome = replay_one(log, model, args.timeout)
        outcomes.append(outcome)
        print(f"{outcome.status:<8} {outcome.wall_s:7.1f} s  {rel}: {outcome.detail}", flush=True)
    counts = {s: sum(o.status == s for o in outcomes) for s in
              ("replayed", "refused", "skipped", "excluded", "FAILED")}  # fmt: skip
    print(", ".join(f"{n} {s}" for s, n in counts.items()) + f" of {len(outcomes)} logs")
    return 1 if counts["FAILED"] else 0


if __name__ == "__main__":
    sys.exit(main())
