"""Wall time of the whole process: start-up (interpreter, imports, model load) included.

``flashsim run`` prints ``wall:`` in its header; a user timing the command
with ``time`` counts the interpreter's start and every import, so the header
counts them too: :func:`process_wall_s` is the time since the operating
system created this process.
"""

from __future__ import annotations

import os
import sys
import time


def _linux_process_age_s() -> float | None:
    """Seconds since this process was created, from ``/proc/self/stat`` (Linux).

    Field 22 of ``/proc/self/stat`` is the process's start in clock ticks
    since boot, on the clock that ``CLOCK_BOOTTIME`` reads now.
    """
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        # the command name (field 2) is in parentheses and may hold spaces
        fields = stat[stat.rindex(")") + 2 :].split()
        start_ticks = int(fields[19])  # field 22; fields[0] is field 3
        ticks_per_s = os.sysconf("SC_CLK_TCK")
        now_s = time.clock_gettime(time.CLOCK_BOOTTIME)
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    age_s = now_s - start_ticks / ticks_per_s
    return age_s if age_s >= 0.0 else None


def _psutil_process_age_s() -> float | None:
    """Seconds since this process was created, from psutil where it is installed."""
    try:
        import psutil  # installed with dask.distributed; optional here
    except ImportError:
        return None
    try:
        age_s = time.time() - float(psutil.Process().create_time())
    except Exception:  # psutil.Error and platform errors: no process age
        return None
    return age_s if age_s >= 0.0 else None


def process_wall_s() -> float | None:
    """Wall-clock seconds since this process started, or ``None`` where it cannot be read.

    Returns
    -------
    float or None
        Seconds (10 ms resolution on Linux) since the operating system created
        the process: interpreter start-up, imports and everything after.
    """
    if sys.platform.startswith("linux"):
        age_s = _linux_process_age_s()
        if age_s is not None:
            return age_s
    return _psutil_process_age_s()
