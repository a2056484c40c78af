"""Peak resident memory of the current process."""

from __future__ import annotations

import resource
from pathlib import Path


def peak_rss_MiB() -> float:
    """This process's own peak resident set size in MiB.

    Linux's ``VmHWM`` belongs to the process image, whereas ``ru_maxrss`` is
    carried across ``fork`` + ``exec`` and so reports the parent's peak when
    the parent was larger (a benchmark child would echo its runner).
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
