"""LNet Self-Test ``lst stat`` output: the sink group's bandwidth in the test's direction.

What ``lst stat`` prints (``lnet/utils/lst.c``: ``lst_print_stat``,
``lst_cal_lnet_stat``, ``lst_print_lnet_stat``), once per ``--delay`` interval
(5 s by default) and group::

    [LNet Rates of servers]
    [R] Avg: 19486    RPC/s Min: 19234    RPC/s Max: 19739    RPC/s
    [W] Avg: 19486    RPC/s Min: 19234    RPC/s Max: 19739    RPC/s
    [LNet Bandwidth of servers]
    [R] Avg: 1737.60  MiB/s Min: 1680.61  MiB/s Max: 1794.59  MiB/s
    [W] Avg: 1737.60  MiB/s Min: 1680.61  MiB/s Max: 1794.59  MiB/s

* ``[R]`` is what the group's nodes *received* (``lcc_recv_length``/``_count``
  deltas over the interval), ``[W]`` what they *sent* (``lcc_send_*``);
* ``Avg`` is the mean over the group's nodes (``total / lnet_stat_count``, one
  count per node answering), ``Min``/``Max`` the extreme nodes: per node, not
  the group's total;
* bandwidth is in ``MiB/s`` (bytes / 2**20 / s), or ``MB/s`` (bytes / 1e6 / s)
  with ``lst stat --mbs``; outputs of Lustre before ``--mbs`` existed print
  ``MB/s`` for what is read here as 1e6 B/s (the manual's example);
* ``RPC/s`` counts LNet *messages* (``lcc_*_count``), not RPCs: a 1 MiB ``brw``
  moves two messages per RPC (lustre-iokit's ``README.lst-survey`` shows
  11463 MB/s at 22924 "RPC/s" for ``write 1m``), so it is read as the quantity
  ``message_rate`` (1/s), which a model's RPC rate is not compared with.

Direction (verified against ``README.lst-survey``: "a read test is really
measuring the write performance of the servers and the write test is really
measuring the read performance of the servers"): on the *sink* (server) group,
a ``brw read`` moves data out of the servers, their ``[W]``; a ``brw write``
moves it into them, their ``[R]``.  The operation comes from the sidecar
(``[conditions] operation``); without one it is the sink's dominant direction
(the bulk data dwarfs the replies), and a sidecar that says otherwise is an
error naming both.

The group read is the sidecar's ``[conditions.extra] group``, else the only
group in the file, else the only group whose name contains ``server``.  It is
the sink (``--to``) unless the sidecar says ``role = "source"`` or its name
contains ``client`` (and not ``server``): a source group sees the mirror image
(a read test's data arrives as its ``[R]``) and its measurements are scoped
``"group <name>"``, per source node, not per sink.  Measurements (per file):
``bandwidth`` (B/s) and ``message_rate`` (1/s), the mean over the intervals of
that group's per-node ``Avg`` in the test's direction.  The test itself
(``lst add_test --concurrency 8 ... brw read size=1M``) is not in the output:
sources, concurrency, transfer size and the sink OSS come from the sidecar.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from flashsim.config import ConfigError
from flashsim.measurements.readers import sidecar_conditions, sidecar_path
from flashsim.measurements.record import Conditions, Measurement, Scalar, error_at, read_text

TOOL = "lnet-selftest"

#: Bytes per unit as ``lst stat`` prints it (``unit_divisor`` in lst.c).
UNIT_B: dict[str, float] = {"MiB/s": 2.0**20, "MB/s": 1e6}

_BLOCK = re.compile(r"^\[LNet (?P<kind>Rates|Bandwidth) of (?P<group>.+)\]\s*$")
_NUM = r"\d+(?:\.\d+)?"
_STAT = re.compile(
    rf"^\[(?P<dir>[RW])\]\s+(?:Avg:\s+(?P<avg>{_NUM})\s+(?P<u1>RPC/s|MiB/s|MB/s)\s*)?"
    rf"(?:Min:\s+(?P<min>{_NUM})\s+(?P<u2>RPC/s|MiB/s|MB/s)\s*)?"
    rf"(?:Max:\s+(?P<max>{_NUM})\s+(?P<u3>RPC/s|MiB/s|MB/s)\s*)?$"
)


def sniff(head: bytes) -> bool:
    """Whether ``head`` holds an ``lst stat`` block header."""
    return b"[LNet Rates of " in head or b"[LNet Bandwidth of " in head


@dataclass
class _Group:
    """One group's samples: per direction, the per-node ``Avg`` of each interval."""

    first_line: int
    bandwidth: dict[str, list[float]] = field(default_factory=lambda: {"R": [], "W": []})
    rate: dict[str, list[float]] = field(default_factory=lambda: {"R": [], "W": []})
    units: set[str] = field(default_factory=set)


def _parse(path: Path) -> tuple[dict[str, _Group], int]:
    lines = read_text(path).splitlines()
    groups: dict[str, _Group] = {}
    failed = 0
    current: tuple[str, str] | None = None  # (kind, group)
    pending = 0  # [R]/[W] lines read since the last block header
    header_line = 0
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        block = _BLOCK.match(line)
        if block is not None:
            if current is not None and pending == 0:
                raise error_at(
                    str(path),
                    header_line,
                    lines[header_line - 1].strip(),
                    "a '[LNet ... of <group>]' block with no [R]/[W] line",
                )
            current = (block["kind"], block["group"].strip())
            groups.setdefault(current[1], _Group(lineno))
            pending, header_line = 0, lineno
            continue
        if line.startswith("Failed to stat on"):
            failed += 1
            continue
        if not line.startswith(("[R]", "[W]")):
            if line.startswith("[LNet"):
                raise error_at(
                    str(path),
                    lineno,
                    line,
                    "expected '[LNet Rates of <group>]' or '[LNet Bandwidth of <group>]'",
                )
            continue  # the shell's echo of commands, 'lst run' messages...
        if current is None:
            raise error_at(
                str(path), lineno, line, "an [R]/[W] line before any '[LNet ... of <group>]' header"
            )
        stat = _STAT.match(line)
        units = {u for u in (stat["u1"], stat["u2"], stat["u3"])} - {None} if stat else set()
        kind, name = current
        want = {"RPC/s"} if kind == "Rates" else {"MiB/s", "MB/s"}
        if stat is None or not units or not units <= want or len(units) != 1:
            raise error_at(
                str(path),
                lineno,
                line,
                f"expected '[R|W] Avg: <n> {'RPC/s' if kind == 'Rates' else 'MiB/s'} Min: ... "
                "Max: ...' (a truncated or malformed lst stat line)",
            )
        pending += 1
        if stat["avg"] is None:
            raise error_at(
                str(path), lineno, line, "an Avg: value (run lst stat without --min/--max alone)"
            )
        group = groups[name]
        if kind == "Rates":
            group.rate[stat["dir"]].append(float(stat["avg"]))
        else:
            unit = units.pop()
            group.units.add(unit)
            group.bandwidth[stat["dir"]].append(float(stat["avg"]) * UNIT_B[unit])
    if current is not None and pending == 0:
        raise error_at(
            str(path),
            header_line,
            lines[header_line - 1].strip(),
            "a '[LNet ... of <group>]' block with no [R]/[W] line (truncated output)",
        )
    if not groups:
        raise error_at(str(path), len(lines), None, "no '[LNet Bandwidth of <group>]' block")
    return groups, failed


def _sink(path: Path, groups: dict[str, _Group], chosen: object) -> str:
    if isinstance(chosen, str):
        if chosen not in groups:
            raise ConfigError(
                str(sidecar_path(path)),
                "conditions.extra.group",
                chosen,
                f"a group of {path} ({', '.join(groups)})",
            )
        return chosen
    if len(groups) == 1:
        return next(iter(groups))
    servers = [g for g in groups if "server" in g.lower()]
    if len(servers) == 1:
        return servers[0]
    raise error_at(
        str(path),
        1,
        ", ".join(groups),
        'one sink group: name it in the sidecar ([conditions.extra] group = "<name>")',
    )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def read(path: Path) -> list[Measurement]:
    """The sink group's bandwidth and message rate in the test's direction."""
    groups, failed = _parse(path)
    side = sidecar_conditions(path)
    extra_side = side.get("extra", {}) if isinstance(side.get("extra"), dict) else {}
    name = _sink(path, groups, extra_side.get("group"))
    group = groups[name]
    bw = group.bandwidth
    role = extra_side.get("role")
    if role not in ("sink", "source"):
        lower = name.lower()
        role = "source" if "client" in lower and "server" not in lower else "sink"
    # The direction the bulk data of a read test takes, seen from this group.
    read_dir = "W" if role == "sink" else "R"
    write_dir = "R" if read_dir == "W" else "W"
    operation = side.get("operation")
    if operation not in ("read", "write"):
        if not bw["R"] or not bw["W"]:
            raise error_at(
                str(path),
                group.first_line,
                name,
                "both [R] and [W] bandwidth lines to tell a read from a write test, "
                'or the operation in the sidecar ([conditions] operation = "read")',
            )
        operation = "read" if _mean(bw[read_dir]) > _mean(bw[write_dir]) else "write"
    elif bw["R"] and bw["W"]:
        dominant = "read" if _mean(bw[read_dir]) > _mean(bw[write_dir]) else "write"
        if dominant != operation:
            raise ConfigError(
                str(sidecar_path(path)),
                "conditions.operation",
                operation,
                f"group {name} ({role}) of {path} moved most data the way of a {dominant} "
                "test (is the group or its role right?)",
            )
    direction = read_dir if operation == "read" else write_dir
    extra: dict[str, Scalar] = {"group": name, "role": role, "direction": direction}
    scope = "" if role == "sink" else f"group {name}"
    if failed:
        extra["failed_stats"] = failed
    conditions = Conditions(tool=TOOL, operation=operation, extra=extra)
    out: list[Measurement] = []

    def add(quantity: str, unit: str, samples: list[float], note: str) -> None:
        out.append(
            Measurement(
                id=":".join([path.stem, name, *([scope] if scope else []), operation, quantity]),
                quantity=quantity,
                value=_mean(samples),
                unit=unit,
                conditions=conditions,
                source=f"{path}:{group.first_line}",
                scope=scope,
                note=note,
            )
        )

    samples = bw[direction]
    if samples:
        add(
            "bandwidth",
            "B/s",
            samples,
            f"mean of {len(samples)} lst stat interval(s) of the per-node Avg "
            f"[{direction}] of group {name} ({'/'.join(sorted(group.units))})",
        )
    rates = group.rate[direction]
    if rates:
        add(
            "message_rate",
            "1/s",
            rates,
            f"mean of {len(rates)} interval(s) of the per-node Avg [{direction}] "
            "'RPC/s', which counts LNet messages (two per bulk RPC)",
        )
    if not out:
        raise error_at(
            str(path),
            group.first_line,
            name,
            f"[{direction}] lines for group {name} (the {operation} direction)",
        )
    return out
