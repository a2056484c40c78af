"""obdfilter-survey (lustre-iokit) summary output: one bandwidth per line and test.

What the numbers are (``lustre-iokit/obdfilter-survey/obdfilter-survey`` in
lustre-release, and its ``README.obdfilter-survey``)::

    ost  8 sz 67108864K rsz 1024 obj    8 thr    8 write  613.54 [  64.00,  82.00] read ...

* ``ost N``: the OSTs (obdfilter or echo_client instances) driven at once;
* ``sz``: ``total_size = actual_rsz * count * thr * ndevs``, KiB (the script's
  ``size`` is "MBytes" per OST and ``count = size*1024/(actual_rsz*thr)``, so
  ``K`` is 1024 B), over all ``N`` OSTs;
* ``rsz``: ``actual_rsz = pages * PAGE_SIZE`` with ``PAGE_SIZE`` in KiB: the
  record (one echo_client I/O), KiB (newer scripts print a ``K`` after it);
* ``obj``/``thr``: ``ndevs*nobj`` and ``ndevs*thr``, totals over the ``N`` OSTs;
* then per test (``write``, ``rewrite``, ``read``...), its name, the aggregate
  bandwidth ``total_size / ((t1 - t0) * 1024)`` (KiB over seconds over 1024:
  **MiB/s**, 2**20 B/s, although the README says "MB"), and
  ``[min, max]``: the lowest and highest one-second (``lctl --threads ... -1``)
  rate of any single OST, ``records/s * actual_rsz / 1024`` (MiB/s), or
  ``SHORT`` (an OST's ``lctl`` printed no rate) or ``ERROR`` (an ``lctl``
  failed) in its place;
* a line ending ``Too much buffer space`` was skipped by the script.

Measurements: one ``bandwidth`` (B/s, the aggregate over the ``N`` OSTs) per
line and test, with ``threads``, ``objects`` and ``size_B`` **per OST** (the
script's loop values, which is what one OST was driven with) and the printed
totals, ``ost_count``, the test name and the per-OST ``[min, max]`` (B/s) in
``extra``.  The per-OST minimum is an instantaneous one-second rate, not a
steady state a model reproduces, so it is kept in ``extra`` rather than made a
second measurement.  A test marked ``SHORT``/``ERROR``/``ENOSPC`` keeps its
bandwidth with a note.

The summary does not name the OST: a one-OST file takes its index from the
sidecar (``[conditions] target = 12``), and its measurements are then scoped
``"ost 12"``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from flashsim.measurements.readers import sidecar_conditions
from flashsim.measurements.record import Conditions, Measurement, Scalar, error_at, read_text

TOOL = "obdfilter-survey"

#: KiB, the unit of ``sz`` and ``rsz`` (the script's sizes are in KBytes of 1024 B).
KIB = 1024.0
#: MiB/s: the script divides KiB by 1024 per second.
MIB_S = 2.0**20

_HEAD = re.compile(
    r"^ost\s+(?P<ost>\d+)\s+sz\s+(?P<sz>\d+)K\s+rsz\s+(?P<rsz>\d+)K?\s+"
    r"obj\s+(?P<obj>\d+)\s+thr\s+(?P<thr>\d+)(?P<rest>.*)$"
)
_FLAG = r"SHORT|ERROR|ENOSPC"
_NUM = r"\d+(?:\.\d+)?"
_TEST = re.compile(
    rf"\s*(?P<name>[a-z_]+)\s+(?P<bw>{_NUM}|{_FLAG})\s+"
    rf"(?P<range>\[\s*(?P<min>{_NUM})\s*,\s*(?P<max>{_NUM})\s*\]|{_FLAG})"
)
_SNIFF = re.compile(rb"(?m)^ost\s+\d+\s+sz\s+\d+K\s+rsz\s+\d+K?\s+obj\s+\d+\s+thr\s+\d+")
_OPERATION = {"write": "write", "rewrite": "write", "read": "read", "reread": "read"}


def sniff(head: bytes) -> bool:
    """Whether ``head`` holds an obdfilter-survey summary line (``ost N sz ...K rsz ...``)."""
    return bool(_SNIFF.search(head)) or b"Obdfilter-survey for case=" in head


def _sidecar_target(path: Path) -> int | None:
    """The OST index a sidecar names (``[conditions] target``), for the scope; else None."""
    target = sidecar_conditions(path).get("target")
    return target if isinstance(target, int) and not isinstance(target, bool) else None


def _tests(path: Path, lineno: int, rest: str) -> list[dict[str, Any]]:
    """The ``<test> <MiB/s> [min, max]`` groups of one line's tail."""
    tests: list[dict[str, Any]] = []
    pos = 0
    while pos < len(rest.rstrip()):
        match = _TEST.match(rest, pos)
        if match is None:
            raise error_at(
                str(path),
                lineno,
                rest[pos:].strip(),
                "expected '<test> <MiB/s> [<min>, <max>]' (or SHORT/ERROR for the range) "
                "after the line's parameters: a truncated or malformed summary line",
            )
        tests.append(match.groupdict())
        pos = match.end()
    return tests


def read(path: Path) -> list[Measurement]:
    """Every test of every summary line of an obdfilter-survey output."""
    lines = read_text(path).splitlines()
    target = _sidecar_target(path)
    out: list[Measurement] = []
    jobs: set[str] = set()
    for lineno, line in enumerate(lines, start=1):
        head = _HEAD.match(line.strip())
        if head is None:
            if re.match(r"^\s*ost\s", line):
                raise error_at(
                    str(path),
                    lineno,
                    line.strip(),
                    "expected 'ost N sz <KiB>K rsz <KiB> obj N thr N' to start a summary line",
                )
            continue
        rest = head["rest"]
        if "Too much buffer space" in rest:
            continue
        tests = _tests(path, lineno, rest)
        if not tests:
            raise error_at(
                str(path),
                lineno,
                line.strip(),
                "a summary line with no test result (the survey stopped before its first test)",
            )
        n_ost, obj, thr = int(head["ost"]), int(head["obj"]), int(head["thr"])
        if n_ost < 1 or thr < 1 or obj < 1:
            raise error_at(str(path), lineno, line.strip(), "ost, obj and thr of at least 1")
        size_total_B = int(head["sz"]) * KIB
        rsz_B = int(head["rsz"]) * KIB
        job = f"obj{obj}-thr{thr}-rsz{head['rsz']}K" + (f"-ost{n_ost}" if n_ost > 1 else "")
        if job in jobs:
            job = f"{job}-line{lineno}"
        jobs.add(job)
        one = target if n_ost == 1 else None
        scope = f"ost {one}" if one is not None else ""
        for test in tests:
            name = test["name"]
            if test["bw"] in ("SHORT", "ERROR", "ENOSPC"):
                continue  # no bandwidth printed: nothing measured
            extra: dict[str, Scalar] = {
                "test": name,
                "ost_count": n_ost,
                "threads_total": thr,
                "objects_total": obj,
                "size_total_B": size_total_B,
            }
            note = f"aggregate over {n_ost} OSTs" if n_ost > 1 else ""
            if test["min"] is not None:
                extra["ost_min_1s_Bps"] = float(test["min"]) * MIB_S
                extra["ost_max_1s_Bps"] = float(test["max"]) * MIB_S
            else:
                extra["ost_range"] = test["range"]
                flagged = (
                    "an OST's lctl printed no rate" if test["range"] == "SHORT" else "lctl failed"
                )
                note = "; ".join(x for x in (note, f"{test['range']}: {flagged}") if x)
            conditions = Conditions(
                tool=TOOL,
                operation=_OPERATION.get(name, name),
                access="sequential",
                threads=max(thr // n_ost, 1),
                objects=max(obj // n_ost, 1),
                transfer_size_B=rsz_B,
                size_B=size_total_B / n_ost,
                target=one,
                extra=extra,
            )
            parts = [path.stem, job] + ([scope] if scope else []) + [name, "bandwidth"]
            out.append(
                Measurement(
                    id=":".join(parts),
                    quantity="bandwidth",
                    value=float(test["bw"]) * MIB_S,
                    unit="B/s",
                    conditions=conditions,
                    source=f"{path}:{lineno}",
                    scope=scope,
                    note=note,
                )
            )
    return out
