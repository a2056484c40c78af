"""IOR's output: the normal text report and the JSON summary.

IOR (https://github.com/hpc/ior) prints, per test, an ``Options:`` block, a
per-iteration ``Results:`` table and, at the end, a ``Summary of all tests:``
table (``src/ior-output.c``).  With ``-O summaryFormat=JSON`` the same report
is JSON (to stdout or to ``-O summaryFile=FILE``): a ``tests`` array (each
with its ``Parameters``, ``Options`` and ``Results``) and a ``summary`` array.

Each test and operation gives

* ``bandwidth`` (B/s) and ``iops`` (1/s) of the summary (scope ``""``: the
  *mean* over the repetitions, the ``Mean(MiB)``/``Mean(OPs)`` columns; the
  note gives the max, min and standard deviation);
* ``bandwidth`` and ``iops`` of every iteration (scope ``"iteration N"``, N as
  IOR numbers it, from 0).  IOR computes an iteration's ``IOPS`` over the
  ``wr/rd(s)`` time alone (``src/ior.c``: transfers / ``accessTime``), the
  summary's ``OPs`` over the whole ``total(s)`` (bandwidth / transfer size), so
  the two differ by the open and close times; the note says which.

IOR's ``MiB`` is 2**20 B: ``src/ior-output.c`` divides bytes/s by
``MEBIBYTE`` (``src/iordef.h``: ``1 << 20``) for every ``bw(MiB/s)``,
``Max(MiB)``... column and ``bwMiB``/``bwMeanMIB`` key.  Its size suffixes on
the command line (``-t 1m``) are binary too (``string_to_bytes`` in
``src/option.c``: ``k`` is ``<< 10``, ``m`` ``<< 20``...).

Conditions come from the output (the Options block, the summary row, the JSON
``Parameters``) and, for what IOR does not print (``-e`` fsync,
``--posix.odirect``), from the command line it echoes, parsed like IOR's own
option parser (``src/parse_options.c``, ``src/option.c``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from flashsim.measurements.record import (
    SI_UNITS,
    Conditions,
    Measurement,
    error_at,
    number_at,
    read_text,
)

TOOL = "ior"

#: IOR's MiB (``MEBIBYTE`` in ``src/iordef.h``), B.
MIB = float(2**20)

_BANNER = re.compile(r"^IOR-(\S+): MPI Coordinated Test of Parallel I/O")
_KEYVAL = re.compile(r"^(\S[^:]*?)\s*:(?: (.*))?$")
_SIZE = re.compile(r"^([0-9]+(?:\.[0-9]+)?) (bytes|KiB|MiB|GiB|TiB|PiB)$")
_UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
_SUFFIX = {"k": 10, "m": 20, "g": 30, "t": 40, "p": 50}

#: Short options of IOR that take an argument (``src/parse_options.c``,
#: ``createGlobalOptions``); every other letter is a flag.
_ARG_OPTIONS = frozenset("aAbdDfGijlMNoOQstTX")

#: Note of an iteration's IOPS (``src/ior.c`` divides by the access time only).
_ITER_IOPS_NOTE = "IOR iteration IOPS: transfers over the wr/rd time (open and close excluded)"

#: Columns of the per-iteration table (``PrintTableHeader``).
_ITER_COLUMNS = 11
#: Columns of a "Summary of all tests" row (``PrintLongSummaryOneOperation``).
_SUMMARY_COLUMNS = 27


def sniff(head: bytes) -> bool:
    """Whether ``head`` starts an IOR text report or an IOR JSON summary."""
    if b"MPI Coordinated Test of Parallel I/O" in head:
        return True
    text = head.lstrip()
    return (
        text.startswith(b"{")
        and b'"Version"' in text
        and b'"Command line"' in text
        and b'"tests"' in text
        and b'"fio version"' not in text
    )


def read(path: Path) -> list[Measurement]:
    """Every summary and iteration measurement of an IOR output.

    Parameters
    ----------
    path : Path
        IOR's text output or its JSON summary.

    Returns
    -------
    list of Measurement
        Per test and operation: the summary's bandwidth (B/s) and IOPS (1/s),
        then each iteration's.

    Raises
    ------
    MeasurementError
        The file is malformed or truncated (names the file and line).
    """
    text = read_text(path)
    if text.lstrip().startswith("{"):
        return _read_json(path, text)
    return _read_text(path, text)


# --------------------------------------------------------------------------- #
# Command line and sizes


@dataclass
class CommandLine:
    """What IOR's echoed command line says (``None``: it does not say).

    Attributes
    ----------
    values : dict
        Condition field names to values (sizes in B, times in s).
    script : bool
        ``-f`` was given: the tests' options come from a script, so an
        absent flag says nothing.
    """

    values: dict[str, Any] = field(default_factory=dict)
    script: bool = False


def ior_bytes(text: str) -> float | None:
    """An IOR size argument (``4k``, ``1m``, ``1048576``) in B (``string_to_bytes``)."""
    match = re.fullmatch(r"\s*([0-9]+)\s*([kKmMgGtTpP]?)\s*", text)
    if match is None:
        return None
    shift = _SUFFIX.get(match.group(2).lower(), 0)
    return float(int(match.group(1)) << shift)


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


#: ``-O`` directives that set what a short option does (``src/parse_options.c``).
_DIRECTIVE_OPTION = {
    "transfersize": "t",
    "blocksize": "b",
    "segmentcount": "s",
    "repetitions": "i",
    "numtasks": "N",
    "deadlineforstonewalling": "D",
}


def _directive(key: str, value: str, cl: CommandLine) -> None:
    """One ``-O key=value`` directive (``DecodeDirective`` in ``src/parse_options.c``)."""
    k = key.strip().lower()
    v = value.strip()
    flags = {
        "fsync": "fsync",
        "randomoffset": "random",
        "fileperproc": "file_per_process",
        "useo_direct": "direct",
        "--posix.odirect": "direct",
        "posix.odirect": "direct",
        "reordertasks": "reorder",
        "reordertasksrandom": "reorder_random",
    }
    if k in flags:
        number = _int(v)
        if number is not None:
            cl.values[flags[k]] = number > 0
    elif k in _DIRECTIVE_OPTION:
        _short_argument(_DIRECTIVE_OPTION[k], v, cl)


def parse_command_line(command_line: str) -> CommandLine:
    """The conditions IOR's echoed command line sets.

    IOR joins its ``argv`` with spaces, so quoting is lost; short flags may be
    grouped (``-wrF``), an argument may follow its letter (``-t1m``) or be the
    next word, ``-O`` takes comma-separated ``key=value`` directives and long
    options are ``--name[=value]`` (``src/option.c``).
    """
    cl = CommandLine()
    words = command_line.split()[1:]
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word.startswith("--"):
            name, _, value = word[2:].partition("=")
            if name.endswith(".odirect"):
                cl.values["direct"] = value == "" or (_int(value) or 0) > 0
            continue
        if not word.startswith("-") or len(word) < 2:
            continue
        letters = word[1:]
        for pos, letter in enumerate(letters):
            if letter in _ARG_OPTIONS:
                arg = letters[pos + 1 :].lstrip("=")
                if not arg and i < len(words):
                    arg = words[i]
                    i += 1
                _short_argument(letter, arg, cl)
                break
            _short_flag(letter, cl)
    return cl


def _short_flag(letter: str, cl: CommandLine) -> None:
    names = {
        "e": "fsync",
        "F": "file_per_process",
        "z": "random",
        "C": "reorder",
        "Z": "reorder_random",
        "w": "write",
        "r": "read",
    }
    if letter in names:
        cl.values[names[letter]] = True


def _short_argument(letter: str, arg: str, cl: CommandLine) -> None:
    if letter == "f":
        cl.script = True
    elif letter == "O":
        for item in arg.split(","):
            key, sep, value = item.partition("=")
            if sep:
                _directive(key, value, cl)
    elif letter in "tb":
        size = ior_bytes(arg)
        if size is not None:
            cl.values["transfer_size_B" if letter == "t" else "block_size_B"] = size
    elif letter in "siN":
        number = _int(arg)
        if number is not None:
            cl.values[{"s": "segments", "i": "repetitions", "N": "tasks"}[letter]] = number
    elif letter == "D":
        number = _int(arg)
        if number is not None:
            cl.values["stonewall_s"] = float(number)


def _human_bytes(text: str) -> float | None:
    """A size as IOR's ``HumanReadable`` prints it (``1 MiB``, ``4096 bytes``), B."""
    match = _SIZE.match(text.strip())
    if match is None:
        return None
    return float(match.group(1)) * _UNITS[match.group(2)]


# --------------------------------------------------------------------------- #
# Records


@dataclass
class _Test:
    """What one IOR test printed (text or JSON), before it becomes measurements."""

    test_id: int
    line: int
    options: dict[str, str] = field(default_factory=dict)
    #: (line, access, bandwidth B/s, iops 1/s, total time s, iteration)
    iterations: list[tuple[int, str, float, float, float, int]] = field(default_factory=list)
    #: operation -> (line, {column: value})
    summary: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)


def _parsed(command_line: str | None) -> CommandLine:
    """The echoed command line parsed (none echoed: like a script, absent flags say nothing)."""
    return parse_command_line(command_line) if command_line else CommandLine(script=True)


def _base_conditions(
    version: str | None,
    command_line: str | None,
    cl: CommandLine,
    test: _Test,
    exact: Mapping[str, Any],
) -> Conditions:
    """The conditions of every measurement of ``test``.

    ``exact`` holds values the output gives exactly (the summary row or the
    JSON ``Parameters``): they win over the Options block's rounded text, and
    the command line fills what neither says.
    """
    opts = test.options
    values = cl.values

    def flag(name: str, output: bool | None) -> bool | None:
        if output is not None:
            return output
        if name in values:
            return bool(values[name])
        return None if cl.script else False

    def opt_int(key: str) -> int | None:
        return _int(opts[key]) if key in opts else None

    access = opts.get("access")
    ordering = opts.get("ordering in a file")
    inter = opts.get("ordering inter file")
    random: bool | None = exact.get("random")
    if random is None and ordering is not None:
        random = ordering == "random"
    fpp: bool | None = exact.get("file_per_process")
    if fpp is None and access is not None:
        fpp = access == "file-per-process"
    reorder: bool | None = exact.get("reorder")
    if reorder is None and inter is not None:
        reorder = inter == "constant task offset"
    reorder_random: bool | None = exact.get("reorder_random")
    if reorder_random is None and inter is not None:
        reorder_random = inter == "random task offset"
    stonewall = exact.get("stonewall_s")
    if stonewall is None and "stonewallingTime" in opts:
        stonewall = float(opts["stonewallingTime"])
    if stonewall is None:
        stonewall = values.get("stonewall_s")
    repetitions = exact.get("repetitions") or opt_int("repetitions") or values.get("repetitions")
    extra: dict[str, str | int | float | bool] = {}
    if repetitions is not None:
        extra["repetitions"] = int(repetitions)
    for name, value in (
        ("reorder", flag("reorder", reorder)),
        ("reorder_random", flag("reorder_random", reorder_random)),
    ):
        if value is not None:
            extra[name] = value
    offset = exact.get("task_per_node_offset") or opt_int("task offset")
    if offset is not None and (extra.get("reorder") or extra.get("reorder_random")):
        extra["task_per_node_offset"] = int(offset)
    if "api" in opts:
        extra["api"] = opts["api"]
    if "stoneWallingWearOut" in opts:
        extra["stonewall_wear_out"] = opts["stoneWallingWearOut"] == "1"
    transfer = exact.get("transfer_size_B") or _human_bytes(opts.get("xfersize", ""))
    block = exact.get("block_size_B") or _human_bytes(opts.get("blocksize", ""))
    random_flag = flag("random", random)
    return Conditions(
        tool=TOOL,
        tool_version=version,
        command_line=command_line,
        access=None if random_flag is None else ("random" if random_flag else "sequential"),
        tasks=exact.get("tasks") or opt_int("tasks") or values.get("tasks"),
        nodes=exact.get("nodes") or opt_int("nodes"),
        transfer_size_B=transfer or values.get("transfer_size_B"),
        block_size_B=block or values.get("block_size_B"),
        segments=exact.get("segments") or opt_int("segments") or values.get("segments"),
        file_per_process=flag("file_per_process", fpp),
        fsync=flag("fsync", exact.get("fsync")),
        direct=flag("direct", exact.get("direct")),
        stonewall_s=stonewall if stonewall else None,
        extra=extra,
    )


def _measurements(
    path: Path,
    version: str | None,
    command_line: str | None,
    cl: CommandLine,
    test: _Test,
    exact: Mapping[str, Any],
) -> list[Measurement]:
    """The summary and iteration measurements of one test (``cl``: ``command_line`` parsed)."""
    base = _base_conditions(version, command_line, cl, test, exact)
    stem = f"{path.stem}:test{test.test_id}"
    operations = list(test.summary) + [it[1] for it in test.iterations if it[1] not in test.summary]
    out: list[Measurement] = []

    def add(
        op: str,
        quantity: str,
        value: float,
        line: int,
        duration_s: float,
        scope: str = "",
        note: str = "",
    ) -> None:
        out.append(
            Measurement(
                id=":".join([stem, *([scope] if scope else []), op, quantity]),
                quantity=quantity,
                value=value,
                unit=SI_UNITS[quantity],
                conditions=replace(base, operation=op, duration_s=duration_s),
                source=f"{path}:{line}",
                scope=scope,
                note=note,
            )
        )

    for op in dict.fromkeys(operations):
        if op in test.summary:
            line, row = test.summary[op]
            stats = (
                f"IOR summary of {row['reps']} repetition(s): mean; "
                f"max {row['bw_max_MiB']:.2f}, min {row['bw_min_MiB']:.2f}, "
                f"stddev {row['bw_sd_MiB']:.2f} MiB/s"
            )
            add(op, "bandwidth", row["bw_mean_MiB"] * MIB, line, row["mean_time_s"], note=stats)
            add(op, "iops", row["ops_mean"], line, row["mean_time_s"], note=stats)
        for line, access, bw, iops, total, iteration in test.iterations:
            if access == op:
                scope = f"iteration {iteration}"
                add(op, "bandwidth", bw, line, total, scope=scope)
                add(op, "iops", iops, line, total, scope=scope, note=_ITER_IOPS_NOTE)
    return out


# --------------------------------------------------------------------------- #
# Text report


def _number(path: Path, line: int, text: str, what: str) -> float:
    return number_at(str(path), line, text, what)


def _iteration_row(path: Path, line: int, text: str) -> tuple[int, str, float, float, float, int]:
    words = text.split()
    if len(words) != _ITER_COLUMNS:
        raise error_at(
            str(path),
            line,
            text.strip(),
            f"a results row of {_ITER_COLUMNS} columns (access bw(MiB/s) IOPS Latency(s) "
            "block(KiB) xfer(KiB) open(s) wr/rd(s) close(s) total(s) iter); "
            "the file may be truncated",
        )
    bw = _number(path, line, words[1], "bw(MiB/s)") * MIB
    iops = _number(path, line, words[2], "IOPS")
    total = _number(path, line, words[9], "total(s)")
    iteration = _int(words[10])
    if iteration is None or iteration < 0:
        raise error_at(str(path), line, words[10], "an iteration number for iter")
    return line, words[0], bw, iops, total, iteration


def _summary_row(path: Path, line: int, text: str) -> tuple[str, int, dict[str, Any]]:
    words = text.split()
    if len(words) != _SUMMARY_COLUMNS:
        raise error_at(
            str(path),
            line,
            text.strip(),
            f"a 'Summary of all tests' row of {_SUMMARY_COLUMNS} columns; "
            "the file may be truncated",
        )
    names = ("Max(MiB)", "Min(MiB)", "Mean(MiB)", "StdDev", "Max(OPs)", "Min(OPs)")
    nums = [_number(path, line, w, n) for w, n in zip(words[1:7], names, strict=True)]
    ops_mean = _number(path, line, words[7], "Mean(OPs)")
    mean_time = _number(path, line, words[9], "Mean(s)")
    ints: list[int] = []
    for word, name in zip(
        words[12:24],
        (
            "Test#",
            "#Tasks",
            "tPN",
            "reps",
            "fPP",
            "reord",
            "reordoff",
            "reordrand",
            "seed",
            "segcnt",
            "blksiz",
            "xsize",
        ),
        strict=True,
    ):
        value = _int(word)
        if value is None:
            raise error_at(str(path), line, word, f"an integer for {name}")
        ints.append(value)
    test_id, tasks, _tpn, reps, fpp, reord, offset, reordrand, _seed, segs, blk, xfer = ints
    row = {
        "bw_max_MiB": nums[0],
        "bw_min_MiB": nums[1],
        "bw_mean_MiB": nums[2],
        "bw_sd_MiB": nums[3],
        "ops_mean": ops_mean,
        "mean_time_s": mean_time,
        "reps": reps,
        "exact": {
            "tasks": tasks,
            "repetitions": reps,
            "file_per_process": fpp > 0,
            "reorder": reord > 0,
            "reorder_random": reordrand > 0,
            "task_per_node_offset": offset,
            "segments": segs,
            "block_size_B": float(blk),
            "transfer_size_B": float(xfer),
        },
    }
    return words[0], test_id, row


def _read_text(path: Path, text: str) -> list[Measurement]:
    lines = text.splitlines()
    version: str | None = None
    command_line: str | None = None
    tests: list[_Test] = []
    current: _Test | None = None
    section = ""
    saw_table = False
    saw_summary = False
    finished = False
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip()
        stripped = line.strip()
        banner = _BANNER.match(line)
        if banner:
            version = banner.group(1)
            continue
        if section == "summary":
            if stripped.startswith("Operation"):
                continue
            first = stripped.split(" ", 1)[0] if stripped else ""
            if first in ("write", "read"):
                op, test_id, row = _summary_row(path, number, line)
                owner = next((t for t in tests if t.test_id == test_id), None)
                if owner is None:
                    raise error_at(str(path), number, test_id, "a Test# of a test above")
                owner.summary[op] = (number, row)
                continue
            if not stripped:
                continue
            section = ""
        if section == "results":
            first = stripped.split(" ", 1)[0] if stripped else ""
            if first.startswith("access") or first.startswith("------"):
                saw_table = True
                continue
            if first in ("write", "read") and current is not None:
                saw_table = True
                current.iterations.append(_iteration_row(path, number, line))
                continue
            if first != "Summary" and not stripped.startswith("TestID"):
                continue  # remove rows, stonewalling notes, verbose chatter
            section = ""
        if stripped.startswith("Summary of all tests:"):
            section = "summary"
            saw_summary = True
            continue
        keyval = _KEYVAL.match(line)
        if keyval is None:
            if section == "options" and not stripped:
                section = ""
            continue
        key, value = keyval.group(1), (keyval.group(2) or "").strip()
        if key == "Command line" and command_line is None:
            command_line = value
        elif key == "Finished":
            finished = True
        elif key == "TestID":
            new_id = _int(value)
            if new_id is None:
                raise error_at(str(path), number, value, "an integer test id")
            current = _Test(new_id, number)
            tests.append(current)
            section = ""
        elif key == "Options":
            if current is None:
                current = _Test(0, number)
                tests.append(current)
            section = "options"
        elif key == "Results":
            section = "results"
        elif section == "options" and current is not None:
            current.options[key] = value
    if version is None and command_line is None:
        raise error_at(str(path), 1, lines[0] if lines else "", "IOR's banner or command line")
    if not saw_table or not any(t.iterations for t in tests):
        raise error_at(
            str(path),
            len(lines),
            None,
            "an IOR results table ('access bw(MiB/s) IOPS ...' and its rows); "
            "the file may be truncated",
        )
    if not saw_summary and not finished:
        raise error_at(
            str(path),
            len(lines),
            None,
            "the 'Summary of all tests' table (IOR did not finish: the file is truncated)",
        )
    cl = _parsed(command_line)
    out: list[Measurement] = []
    for test in tests:
        exact: dict[str, Any] = {}
        if test.summary:
            exact = dict(next(iter(test.summary.values()))[1]["exact"])
        out.extend(_measurements(path, version, command_line, cl, test, exact))
    return out


# --------------------------------------------------------------------------- #
# JSON summary


def _json_lines(text: str) -> tuple[list[int], list[int], list[int]]:
    """1-based lines of the test objects, the result objects and the summary objects.

    IOR writes one key per line (``PrintKeyVal``), so a test starts at its
    ``"TestID"`` key, a result at its ``"access"`` key and a summary entry at
    its ``"operation"`` key.
    """
    tests: list[int] = []
    results: list[int] = []
    summary: list[int] = []
    in_summary = False
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(r'\s*"summary"\s*:', line):
            in_summary = True
        elif in_summary and re.match(r'\s*"operation"\s*:', line):
            summary.append(number)
        elif not in_summary and re.match(r'\s*"TestID"\s*:', line):
            tests.append(number)
        elif not in_summary and re.match(r'\s*"access"\s*:\s*"(write|read|remove)"', line):
            results.append(number)
    return tests, results, summary


def _get(path: Path, line: int, obj: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = obj.get(key)
    if kind is float:
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    elif isinstance(value, kind) and not isinstance(value, bool):
        return value
    expected = "a number" if kind is float else ("an integer" if kind is int else "a string")
    raise error_at(str(path), line, value, f"{where}: key {key!r} to be {expected}")


def _flatten(items: Sequence[Any]) -> list[Any]:
    """IOR 3.x nests each iteration's results in its own array; 4.x does not."""
    out: list[Any] = []
    for item in items:
        out.extend(_flatten(item) if isinstance(item, list) else [item])
    return out


def _read_json(path: Path, text: str) -> list[Measurement]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        shown = text.splitlines()[exc.lineno - 1] if text.splitlines() else ""
        raise error_at(
            str(path),
            exc.lineno,
            shown.strip(),
            f"valid JSON ({exc.msg}); the IOR summary may be cut short",
        ) from None
    test_lines, result_lines, summary_lines = _json_lines(text)
    if not isinstance(doc, dict) or not isinstance(doc.get("tests"), list):
        raise error_at(str(path), 1, None, "an IOR JSON summary with a 'tests' array")
    version = doc.get("Version") if isinstance(doc.get("Version"), str) else None
    command_line = doc.get("Command line") if isinstance(doc.get("Command line"), str) else None
    summary = doc.get("summary", [])
    if not isinstance(summary, list):
        raise error_at(str(path), 1, None, "the 'summary' key to be an array")
    cl = _parsed(command_line)
    out: list[Measurement] = []
    result_index = 0
    for index, entry in enumerate(doc["tests"]):
        line = test_lines[index] if index < len(test_lines) else 1
        if not isinstance(entry, dict):
            raise error_at(str(path), line, entry, "a test object in 'tests'")
        test_id = _get(path, line, entry, "TestID", int, "a test")
        options = entry.get("Options", {})
        params = entry.get("Parameters", {})
        if not isinstance(options, dict) or not isinstance(params, dict):
            raise error_at(str(path), line, None, "'Options' and 'Parameters' objects")
        test = _Test(test_id, line, options={str(k): str(v) for k, v in options.items()})
        results = entry.get("Results")
        if not isinstance(results, list) or not results:
            raise error_at(str(path), line, None, "a non-empty 'Results' array in the test")
        counts: dict[str, int] = {}
        for result in _flatten(results):
            rline = result_lines[result_index] if result_index < len(result_lines) else line
            result_index += 1
            if not isinstance(result, dict):
                raise error_at(str(path), rline, result, "a result object")
            access = _get(path, rline, result, "access", str, "a result")
            if access not in ("write", "read"):
                continue
            iteration = counts.get(access, 0)
            counts[access] = iteration + 1
            bw = _get(path, rline, result, "bwMiB", float, "a result") * MIB
            iops = _get(path, rline, result, "iops", float, "a result")
            total = _get(path, rline, result, "totalTime", float, "a result")
            test.iterations.append((rline, access, bw, iops, total, iteration))
        exact: dict[str, Any] = {}
        for key, name, kind in (
            ("nodes", "nodes", int),
            ("repetitions", "repetitions", int),
            ("segmentCount", "segments", int),
            ("transferSize", "transfer_size_B", float),
            ("blockSize", "block_size_B", float),
        ):
            if key in params:
                exact[name] = _get(path, line, params, key, kind, "the test's Parameters")
        for key, name in (
            ("filePerProc", "file_per_process"),
            ("randomOffset", "random"),
            ("fsync", "fsync"),
            ("reorderTasks", "reorder"),
            ("reorderTasksRandom", "reorder_random"),
        ):
            if key in params:
                exact[name] = _get(path, line, params, key, int, "the test's Parameters") > 0
        if "deadlineForStonewall" in params:
            deadline = _get(path, line, params, "deadlineForStonewall", int, "Parameters")
            exact["stonewall_s"] = float(deadline) if deadline > 0 else None
        for sindex, row in enumerate(summary):
            sline = summary_lines[sindex] if sindex < len(summary_lines) else 1
            if not isinstance(row, dict):
                raise error_at(str(path), sline, row, "a summary object")
            if row.get("TestID") != test_id:
                continue
            op = _get(path, sline, row, "operation", str, "a summary entry")
            where = "a summary entry"
            test.summary[op] = (
                sline,
                {
                    "bw_max_MiB": _get(path, sline, row, "bwMaxMIB", float, where),
                    "bw_min_MiB": _get(path, sline, row, "bwMinMIB", float, where),
                    "bw_mean_MiB": _get(path, sline, row, "bwMeanMIB", float, where),
                    "bw_sd_MiB": _get(path, sline, row, "bwStdMIB", float, where),
                    "ops_mean": _get(path, sline, row, "OPsMean", float, where),
                    "mean_time_s": _get(path, sline, row, "MeanTime", float, where),
                    "reps": _get(path, sline, row, "repetitions", int, where),
                },
            )
            exact.setdefault("tasks", _get(path, sline, row, "numTasks", int, where))
            if "taskPerNodeOffset" in row:
                exact.setdefault(
                    "task_per_node_offset",
                    _get(path, sline, row, "taskPerNodeOffset", int, where),
                )
        if not test.iterations and not test.summary:
            raise error_at(str(path), line, None, "write or read results in the test")
        out.extend(_measurements(path, version, command_line, cl, test, exact))
    if not out:
        raise error_at(str(path), 1, None, "at least one test with results")
    return out
