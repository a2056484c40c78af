"""fio's JSON output (``--output-format=json`` and ``json+``).

One measurement per job, per direction that did I/O (``read``, ``write``,
``trim``, or ``mixed`` under ``unified_rw_reporting``: then the operation is
``mixed``) and per quantity:

* ``bandwidth`` (B/s): fio's ``bw_bytes``, which fio computes as
  ``io_bytes * 1000 / runtime_ms`` (fio ``stat.c``, ``add_ddir_status_json``);
  fio's ``bw`` is the same value in KiB/s (``bw_bytes / 1024``), so nothing is
  converted here;
* ``iops`` (1/s): fio's ``iops``;
* ``latency_mean`` (s): the mean of fio's ``lat_ns``, the total latency from
  submission to completion.  ``clat_ns`` leaves out the submission latency
  (``slat_ns``), which for an asynchronous engine is part of what the
  application waits for; a simulated drive's latency runs from issue to
  completion too, so ``lat_ns`` is the comparable one.  Under ``disable_lat=1``
  fio leaves ``lat_ns`` empty (``N`` = 0) and the ``clat_ns`` mean is taken;
  ``extra["latency_mean_of"]`` says which;
* ``latency_p<P>`` (s): every percentile fio printed, taken from ``clat_ns``
  (fio's default, ``clat_percentiles=1``) or from ``lat_ns`` when the job set
  ``lat_percentiles=1``; ``extra["percentiles_of"]`` says which.

fio prints notes and warnings (``note: ...``, ``fio: ...``) on standard
output before its JSON object; they are skipped and counted, so ``source``
(``<path>:<line>``, the line of the job's object) stays right.  fio's JSON
does not record its command line: the effective options (``"global options"``
overridden by the job's ``"job options"``) go to ``Conditions.extra``.
A ``--status-interval`` run's file holds one JSON object per interval; the
last one (fio's final report) is read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flashsim.measurements.record import (
    Conditions,
    Measurement,
    Scalar,
    error_at,
    read_text,
)

TOOL = "fio"

_SNIFF = re.compile(rb'\{\s*"fio version"\s*:')

#: fio's directions, in its JSON order (``bs=r,w,t`` gives one size each).
DIRECTIONS = ("read", "write", "trim")

#: The direction objects a job may hold: ``unified_rw_reporting`` reports reads
#: and writes together as ``"mixed"`` (fio ``stat.c``, ``add_ddir_status_json``).
REPORTED = (*DIRECTIONS, "mixed")

#: ``rw`` -> access pattern (fio HOWTO, ``readwrite``).
_ACCESS = {
    "read": "sequential",
    "write": "sequential",
    "trim": "sequential",
    "rw": "sequential",
    "readwrite": "sequential",
    "trimwrite": "sequential",
    "randread": "random",
    "randwrite": "random",
    "randtrim": "random",
    "randrw": "random",
    "randtrimwrite": "random",
}

#: Engines that complete each I/O before issuing the next: fio caps their queue
#: depth at 1 (its "note: both iodepth >= 1 and synchronous I/O engine are
#: selected, queue depth will be capped at 1").
SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap", "splice"})

#: fio's defaults (fio HOWTO): ``rw=read``, ``bs=4k``, ``iodepth=1``,
#: ``numjobs=1``, ``ioengine=psync`` on Linux, ``direct=0``.
_DEFAULTS = {"rw": "read", "bs": "4k", "iodepth": "1", "numjobs": "1", "ioengine": "psync"}

_NEXT_OBJECT = re.compile(r"(?m)^[ \t]*\{")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtpe]?)(i?)(b?)\s*$", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}


def sniff(head: bytes) -> bool:
    """Whether ``head`` holds fio's JSON object (its first key is ``"fio version"``)."""
    return _SNIFF.search(head) is not None


def fio_size(text: str, kb_base: int = 1024) -> float | None:
    """A fio size option in bytes, or ``None`` if it is not a plain size.

    fio reads suffixes the old way by default (``kb_base=1024``): ``4k``, ``4K``
    and ``4KB`` are 4096 B and the IEC ``4KiB`` is 4000 B; with ``kb_base=1000``
    the reverse (fio HOWTO, "Parameter types" and ``kb_base``).

    Parameters
    ----------
    text : str
        The option value, e.g. ``"64M"``.
    kb_base : int
        fio's ``kb_base`` option (1024 or 1000).
    """
    match = _SIZE.match(text)
    if match is None:
        return None
    number, prefix, iec, _ = match.groups()
    power = _POWERS[prefix.lower()]
    binary = (kb_base == 1024) != bool(iec)
    return float(number) * float((1024 if binary else 1000) ** power)


def _lines_before(text: str, pos: int) -> int:
    """1-based line of character ``pos`` of ``text``."""
    return text.count("\n", 0, pos) + 1


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _json_start(path: Path, text: str) -> int:
    """Offset of fio's JSON object: the first line that starts with ``{``."""
    match = _NEXT_OBJECT.search(text)
    if match is None:
        first = text.strip().splitlines()[0] if text.strip() else ""
        raise error_at(
            str(path),
            1,
            first,
            "no JSON object: expected fio's --output-format=json (or json+) output",
        )
    return match.end() - 1


def _decode_at(path: Path, text: str, start: int) -> tuple[dict[str, Any], int]:
    """The fio object at ``start`` and the offset after it; an error if cut or malformed."""
    try:
        top, end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        cut_in_string = exc.msg.startswith("Unterminated string") and "\n" not in text[exc.pos :]
        if _skip_ws(text, exc.pos) >= len(text) or cut_in_string:
            raise error_at(
                str(path),
                exc.lineno,
                None,
                "the JSON object ends before it is complete (truncated file?)",
            ) from None
        raise error_at(
            str(path), exc.lineno, text[exc.pos : exc.pos + 30], f"malformed JSON: {exc.msg}"
        ) from None
    if not isinstance(top, dict) or "fio version" not in top:
        raise error_at(
            str(path),
            _lines_before(text, start),
            None,
            'not fio output: expected a JSON object with a "fio version" key',
        )
    return top, end


def _decode(path: Path, text: str) -> tuple[dict[str, Any], int]:
    """fio's final JSON object and its offset.

    A ``--status-interval`` run prints one object per interval and the final
    report last: the last object is the run's result.  Lines between objects
    that do not start with ``{`` (fio's notes) are skipped.
    """
    start = _json_start(path, text)
    top, end = _decode_at(path, text, start)
    while (following := _NEXT_OBJECT.search(text, end)) is not None:
        start = following.end() - 1
        top, end = _decode_at(path, text, start)
    return top, start


def _job_lines(text: str, start: int) -> list[int]:
    """1-based lines of the objects of the top-level ``"jobs"`` array.

    The top object is walked key by key (it decoded already, so this cannot
    fail), so a ``"jobs"`` string nested elsewhere is never mistaken for it.
    """
    decoder = json.JSONDecoder()
    pos = _skip_ws(text, start + 1)
    while pos < len(text) and text[pos] != "}":
        key, pos = decoder.raw_decode(text, pos)
        pos = _skip_ws(text, pos)
        pos = _skip_ws(text, pos + 1)  # the ':'
        if key == "jobs":
            lines: list[int] = []
            pos = _skip_ws(text, pos + 1)  # the '['
            while text[pos] != "]":
                lines.append(_lines_before(text, pos))
                _, pos = decoder.raw_decode(text, pos)
                pos = _skip_ws(text, pos)
                if text[pos] == ",":
                    pos = _skip_ws(text, pos + 1)
            return lines
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip_ws(text, pos)
        if text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
    return []


def _get(
    obj: Mapping[str, Any], key: str, where: str, path: Path, line: int, kind: type = dict
) -> Any:
    """``obj[key]`` of type ``kind`` (numbers: int or float), else an error naming ``where.key``."""
    value = obj.get(key)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is not float:
        ok = isinstance(value, kind)
    if not ok:
        wanted = "a number" if kind is float else f"a JSON {'object' if kind is dict else 'value'}"
        at = f"{where}.{key}" if where else key
        if key not in obj:
            raise error_at(str(path), line, None, f"{at}: missing (expected {wanted})")
        raise error_at(str(path), line, value, f"{at}: expected {wanted}")
    return value


def _options(top: Mapping[str, Any], job: Mapping[str, Any]) -> dict[str, str]:
    """The job's effective options: global ones overridden by its own."""
    merged: dict[str, str] = {}
    for table in (top.get("global options"), job.get("job options")):
        if isinstance(table, dict):
            merged.update({str(k): str(v) for k, v in table.items()})
    return merged


def _flag(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key, "0").strip().lower()
    return value not in ("0", "", "false", "no", "off")


def _percentile_name(key: str) -> str:
    """``"99.900000"`` -> ``"latency_p99.9"``."""
    return f"latency_p{float(key):g}"


def _conditions(
    top: Mapping[str, Any],
    job: Mapping[str, Any],
    direction: str,
    ddir: Mapping[str, Any],
    tasks: int,
    percentiles_of: str,
    mean_of: str,
) -> Conditions:
    """The conditions of one job's direction."""
    options = _options(top, job)
    effective = {**_DEFAULTS, **options}
    kb_base = 1000 if effective.get("kb_base", "1024").strip() == "1000" else 1024
    rw = effective["rw"].split(":")[0].strip().lower()
    engine = effective["ioengine"].strip()
    iodepth = int(effective["iodepth"]) if effective["iodepth"].strip().isdigit() else None
    queue_depth = 1 if engine in SYNC_ENGINES else iodepth
    bs_parts = effective["bs"].split(",")
    bs_index = DIRECTIONS.index(direction) if direction in DIRECTIONS else 0
    bs_text = bs_parts[bs_index] if bs_index < len(bs_parts) and bs_parts[bs_index] else bs_parts[0]
    size = fio_size(effective["size"], kb_base) if "size" in effective else None
    # bssplit / bsrange / blocksize_range give a mix of sizes: no single transfer size.
    mixed_sizes = any(k in options for k in ("bssplit", "bsrange", "blocksize_range"))
    extra: dict[str, Scalar] = {k: v for k, v in options.items()}
    extra["ioengine"] = engine
    extra["io_bytes"] = int(ddir["io_bytes"])
    extra["percentiles_of"] = percentiles_of
    extra["latency_mean_of"] = mean_of
    fsync = any(
        _flag(options, key) for key in ("fsync", "fdatasync", "end_fsync", "fsync_on_close")
    )
    direct = _flag(options, "direct") or ("buffered" in options and not _flag(options, "buffered"))
    return Conditions(
        tool=TOOL,
        tool_version=str(top["fio version"]),
        command_line=None,
        operation=direction,
        access=_ACCESS.get(rw),
        tasks=tasks,
        transfer_size_B=None if mixed_sizes else fio_size(bs_text, kb_base),
        block_size_B=size,
        file_per_process="filename" not in options,
        queue_depth=queue_depth,
        size_B=None if size is None else size * tasks,
        duration_s=float(ddir["runtime"]) / 1000.0,  # fio: ms of this direction
        fsync=fsync,
        direct=direct,
        extra=extra,
    )


def _job_measurements(
    path: Path,
    top: Mapping[str, Any],
    index: int,
    job: Mapping[str, Any],
    label: str,
    line: int,
    tasks: int,
) -> list[Measurement]:
    """The measurements of one job object."""
    where = f"jobs[{index}]"
    error = job.get("error", 0)
    if error not in (0, None):
        raise error_at(
            str(path), line, error, f"{where}.error: fio reports this job failed (error {error})"
        )
    out: list[Measurement] = []
    source = f"{path}:{line}"
    for direction in REPORTED:
        if direction not in job:
            continue
        ddir = _get(job, direction, where, path, line)
        dwhere = f"{where}.{direction}"
        total = _get(ddir, "total_ios", dwhere, path, line, float)
        io_bytes = _get(ddir, "io_bytes", dwhere, path, line, float)
        if total == 0 and io_bytes == 0:
            continue
        bw = _get(ddir, "bw_bytes", dwhere, path, line, float)
        iops = _get(ddir, "iops", dwhere, path, line, float)
        _get(ddir, "runtime", dwhere, path, line, float)
        lat = _get(ddir, "lat_ns", dwhere, path, line)
        clat = _get(ddir, "clat_ns", dwhere, path, line)
        # The total latency's mean; fio leaves it empty (N = 0) under
        # disable_lat=1, then the completion latency's is the nearest one.
        mean_of = "lat" if lat.get("N", 1) else "clat"
        stats = lat if mean_of == "lat" else clat
        mean = _get(stats, "mean", f"{dwhere}.{mean_of}_ns", path, line, float)
        percentiles_of = "clat"
        table = clat.get("percentile")
        if not isinstance(table, dict) and isinstance(lat.get("percentile"), dict):
            table, percentiles_of = lat["percentile"], "lat"
        conditions = _conditions(top, job, direction, ddir, tasks, percentiles_of, mean_of)
        prefix = f"{path.stem}:{label}:{direction}"

        values: list[tuple[str, float, str]] = [
            ("bandwidth", bw, "B/s"),
            ("iops", iops, "1/s"),
        ]
        if stats.get("N", 1):
            values.append(("latency_mean", mean / 1e9, "s"))  # fio: ns
        for key, value in (table or {}).items():
            try:
                name = _percentile_name(key)
            except ValueError:
                raise error_at(
                    str(path),
                    line,
                    key,
                    f"{dwhere}.{percentiles_of}_ns.percentile: "
                    "expected percentile keys such as '99.000000'",
                ) from None
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise error_at(
                    str(path),
                    line,
                    value,
                    f"{dwhere}.{percentiles_of}_ns.percentile.{key}: expected a number (ns)",
                )
            values.append((name, value / 1e9, "s"))
        out.extend(
            Measurement(
                id=f"{prefix}:{quantity}",
                quantity=quantity,
                value=float(value),
                unit=unit,
                conditions=conditions,
                source=source,
            )
            for quantity, value, unit in values
        )
    return out


def read(path: Path) -> list[Measurement]:
    """Every measurement of a fio JSON (or json+) output file.

    Parameters
    ----------
    path : Path
        The file fio wrote (``--output``) or its captured standard output.

    Returns
    -------
    list of Measurement
        Per job (``id`` ``<stem>:<jobname>:<direction>:<quantity>``; a job name
        that repeats, as ``numjobs`` without ``group_reporting`` gives, gets
        ``.<n>`` appended) and per direction that did I/O.  ``tasks`` is 1 for a
        job entry, or ``numjobs`` when the entry is the only one of its name and
        group (``group_reporting`` summed its clones).
    """
    text = read_text(path)
    top, start = _decode(path, text)
    line_of_top = _lines_before(text, start)
    if "jobs" not in top and "client_stats" in top:
        raise error_at(
            str(path), line_of_top, None, "fio client/server output (client_stats) is not supported"
        )
    jobs = _get(top, "jobs", "", path, line_of_top, list)
    lines = _job_lines(text, start)
    names: list[tuple[str, object]] = []
    for index, job in enumerate(jobs):
        line = lines[index] if index < len(lines) else line_of_top
        if not isinstance(job, dict):
            raise error_at(str(path), line, job, f"jobs[{index}]: expected a JSON object")
        name = _get(job, "jobname", f"jobs[{index}]", path, line, str)
        names.append((name, job.get("groupid")))
    out: list[Measurement] = []
    seen: dict[str, int] = {}
    for index, job in enumerate(jobs):
        line = lines[index] if index < len(lines) else line_of_top
        name, group = names[index]
        clones = names.count((name, group))
        count = sum(1 for other, _ in names if other == name)
        label = name if count == 1 else f"{name}.{seen.get(name, 0)}"
        seen[name] = seen.get(name, 0) + 1
        numjobs_text = {**_DEFAULTS, **_options(top, job)}["numjobs"].strip()
        numjobs = int(numjobs_text) if numjobs_text.isdigit() else 1
        tasks = numjobs if clones == 1 else 1
        out.extend(_job_measurements(path, top, index, job, label, line, tasks))
    return out
