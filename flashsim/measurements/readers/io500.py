"""Reader of the IO-500 application's result files (``result.txt``, ``result_summary.txt``).

The application (github.com/IO500/io500, ``src/main.c``) writes two files into
its result directory, and prints the summary on stdout too:

* ``result_summary.txt`` (and stdout): a header ``IO500 version <v> (<mode>)``,
  one line per phase::

      [RESULT]       ior-easy-write        1.721144 GiB/s : time 0.074 seconds [INVALID]
      [      ]  ior-rnd4K-easy-read        1.691373 GiB/s : time 2.780 seconds

  (``[      ]``: a phase reported but not scored) and the scores::

      [SCORE ] Bandwidth 1.582447 GiB/s : IOPS 71.345673 kiops : TOTAL 10.625477 [INVALID]

  Earlier versions in the source's history wrote ``[RESULT-invalid]`` instead
  of the trailing ``[INVALID]`` and ``[SCORE]``/``[SCORE-invalid]`` (before
  commit 68ada56, Feb 2021), ``[SCORE_EXTENDED]`` for today's ``[SCOREX]``,
  and ``GB/s`` on the score line (before commit 4e0acfc, Oct 2020, "Bandwidth
  score should be GiB/s instead of GB/s": the value was always GiB/s).  The
  bash ``io500.sh`` of 2017-2019 wrote ``[RESULT] BW   phase 1  ior_easy_write
  1.128 GB/s : time ...``; those lines are read the same way.
* ``result.txt``: INI-like: ``[run]`` (``procs``, ``version``, ``mode``...),
  one section per phase (``exe`` = the ior/mdtest/pfind command line,
  ``score``, ``t_delta``, ``; ERROR INVALID ...`` comments) and ``[SCORE]``
  (``MD``, ``BW``, ``SCORE [INVALID]``), ``[SCOREX]`` in extended mode.  An
  echoed configuration (``[global]``, ``[ior-easy] transferSize = ...``...) at
  the top of a file is read for the options io500 ran with.

Units (checked in the source): a phase whose name starts with ``i`` is in
GiB/s (``phase->name[0] == 'i' ? "GiB/s" : "kIOPS"`` in ``src/main.c``; IOR's
``aggFileSizeForBW / time / GIBIBYTE`` with ``GIBIBYTE (1 << 30)`` in
``src/phase_ior.c`` and IOR's ``iordef.h``), so x 2**30 to B/s; the others are
kIOPS (mdtest's ``rate / 1000`` in ``src/phase_mdtest.c``, pfind's ``files /
runtime / 1000`` in ``src/phase_find.c``), so x 1000 to 1/s.  The scores:
``score`` (``sqrt(bw x md)``, as printed, unit ``""``), ``score_bw`` (B/s)
and ``score_md`` (1/s).

IOR/mdtest size strings in a command line or the configuration (``1m``,
``64m``) use IOR's binary multipliers (``string_to_bytes`` in IOR's
``utilities.c``: k = 2**10, m = 2**20, g = 2**30...); they are read by the IOR
reader's :func:`~flashsim.measurements.readers.ior.ior_bytes`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from flashsim.measurements.readers.ior import ior_bytes
from flashsim.measurements.record import Conditions, Measurement, Scalar, error_at, number_at

TOOL = "io500"

#: GiB in bytes (IOR's ``GIBIBYTE``).
GIB = float(1 << 30)
#: kIOPS in operations/s.
KILO = 1000.0

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)"
_RESULT = re.compile(
    r"^\[(?P<tag>RESULT(?:-invalid)?| {6})\]\s+"
    r"(?:(?:BW|IOPS)\s+phase\s+\d+\s+)?"
    rf"(?P<phase>\S+)\s+(?P<value>{_NUMBER})\s+(?P<unit>GiB/s|GB/s|kIOPS|kiops)\s*:\s*"
    rf"time\s+(?P<time>{_NUMBER})\s+seconds(?P<invalid>\s+\[INVALID\])?\s*$"
)
_SCORE = re.compile(
    r"^\[(?P<tag>SCORE(?:-invalid)?|SCORE |SCOREX|SCORE_EXTENDED)\]\s+"
    rf"Bandwidth\s+(?P<bw>{_NUMBER})\s+(?:GiB/s|GB/s)\s*:\s*"
    rf"IOPS\s+(?P<md>{_NUMBER})\s+kiops\s*:\s*"
    rf"TOTAL\s+(?P<total>{_NUMBER})(?P<invalid>\s+\[INVALID\])?\s*$"
)
_VERSION = re.compile(r"^IO500 version (?P<version>\S+)(?:\s+\((?P<mode>\w+)\))?\s*$")
_STDOUT_INVALID = re.compile(r"^ERROR INVALID(?: \((?P<where>[^)]*)\))?\s*(?P<text>.*)$")
_SECTION = re.compile(r"^\[(?P<name>[A-Za-z0-9_.-]+)\]\s*$")
_PAIR = re.compile(r"^(?P<key>[A-Za-z0-9_.-]+)\s*=\s*(?P<value>.*?)\s*$")
_SNIFF = re.compile(
    rb"^(?:IO500 version \S+|\[RESULT(?:-invalid)?\]\s+\S+\s+\S+\s+(?:GiB/s|GB/s|kIOPS|kiops)"
    rb"|\[SCORE ?\] Bandwidth|config-hash\s+=)",
    re.MULTILINE,
)
#: Echoed configuration keys kept as run-wide options: (section, key) -> extra name.
_CONFIG_KEYS: dict[tuple[str, str], str] = {
    ("global", "api"): "api",
    ("ior-easy", "transfersize"): "ior_easy_transfer_size_B",
    ("ior-easy", "blocksize"): "ior_easy_block_size_B",
    ("ior-easy", "fileperproc"): "ior_easy_file_per_process",
    ("ior-hard", "segmentcount"): "ior_hard_segments",
    ("mdtest-easy", "n"): "mdtest_easy_files_per_proc",
    ("mdtest-hard", "n"): "mdtest_hard_files_per_proc",
    ("find", "nproc"): "find_nproc",
    ("debug", "stonewall-time"): "stonewall_s",
}


def sniff(head: bytes) -> bool:
    """Whether ``head`` starts an IO-500 result file (summary, result.txt or stdout)."""
    return _SNIFF.search(head) is not None


@dataclass
class _Phase:
    """One phase as read so far (from a ``[RESULT]`` line and/or a result.txt section)."""

    name: str
    line: int = 0
    value: float | None = None
    unit: str = ""
    time_s: float | None = None
    invalid: list[str] = field(default_factory=list)
    scored: bool | None = None
    exe: str | None = None
    nproc: int | None = None


@dataclass
class _Score:
    """A score line or section: bandwidth GiB/s, metadata kIOPS, total."""

    line: int
    bw: float | None = None
    md: float | None = None
    total: float | None = None
    invalid: bool = False
    summary: bool = False  # from a summary line (else a result.txt section)


@dataclass
class _Run:
    """Everything one file says."""

    version: str | None = None
    mode: str | None = None
    procs: int | None = None
    phases: dict[str, _Phase] = field(default_factory=dict)
    scores: dict[str, _Score] = field(default_factory=dict)
    config: dict[str, Scalar] = field(default_factory=dict)
    run_invalid: list[str] = field(default_factory=list)


def _float(path: Path, line: int, text: str, what: str) -> float:
    return number_at(str(path), line, text, what, non_negative=True)


def _int(path: Path, line: int, text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise error_at(str(path), line, text, f"expected an integer for {what}") from None
    if value < 1:
        raise error_at(str(path), line, text, f"expected a positive integer for {what}")
    return value


def _option(exe: str, flag: str) -> str | None:
    """The value of ``-flag VALUE`` or ``-flag=VALUE`` in a command line (the last one)."""
    found = re.findall(rf"(?:^|\s){re.escape(flag)}(?:=|\s+)(\S+)", exe)
    return found[-1] if found else None


def _has_flag(exe: str, flag: str) -> bool:
    return re.search(rf"(?:^|\s){re.escape(flag)}(?:\s|$)", exe) is not None


def _bool(text: str) -> bool | None:
    return {"true": True, "false": False, "1": True, "0": False}.get(text.strip().lower())


def _config_value(extra: str, text: str) -> Scalar | None:
    """An echoed configuration value as kept in ``extra`` (``None``: empty or unreadable)."""
    text = text.strip()
    if not text:
        return None
    if extra.endswith("_B") or extra == "stonewall_s":
        return ior_bytes(text) if extra.endswith("_B") else _maybe_float(text)
    if extra == "ior_easy_file_per_process":
        return _bool(text)
    if extra == "api":
        return text
    return int(text) if text.isdigit() else None


def _maybe_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _parse(path: Path, text: str) -> _Run:
    run = _Run()
    section: str | None = None
    section_line = 0
    pairs: dict[str, tuple[int, str]] = {}
    comments: list[str] = []
    pending_invalid: list[str] = []

    def close_section() -> None:
        if section is None:
            return
        _close(path, run, section, section_line, pairs, comments)

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if m := _RESULT.match(line):
            close_section()
            section = None
            _result_line(path, run, number, m, pending_invalid)
            pending_invalid = []
            continue
        if m := _SCORE.match(line):
            close_section()
            section = None
            tag = m["tag"]
            key = "SCOREX" if tag in ("SCOREX", "SCORE_EXTENDED") else "SCORE"
            if key in run.scores and run.scores[key].summary:
                raise error_at(
                    str(path),
                    number,
                    line,
                    f"a second [{key}] score (line {run.scores[key].line}): one run per file",
                )
            run.scores[key] = _Score(
                number,
                _float(path, number, m["bw"], "bandwidth score"),
                _float(path, number, m["md"], "IOPS score"),
                _float(path, number, m["total"], "total score"),
                invalid=bool(m["invalid"]) or tag == "SCORE-invalid",
                summary=True,
            )
            continue
        if m := _VERSION.match(line):
            run.version = m["version"]
            run.mode = m["mode"] or run.mode
            continue
        if m := _SECTION.match(line):
            close_section()
            section, section_line, pairs, comments = m["name"], number, {}, []
            continue
        if line.startswith("["):
            raise error_at(
                str(path),
                number,
                line,
                "expected a '[RESULT] <phase> <value> GiB/s|kIOPS : time <t> seconds' line, "
                "a '[SCORE ] Bandwidth ... : IOPS ... : TOTAL ...' line or a [section] header",
            )
        stripped = line.strip()
        if stripped.startswith((";", "#")):
            if section is not None:
                comments.append(stripped.lstrip("; ").strip())
            continue
        if m := _STDOUT_INVALID.match(stripped):  # stdout: precedes its phase's [RESULT]
            # The debug options' check (src/phase_dbg.c) is the run's, not the next phase's
            # (result.txt puts it in [run]).
            run_level = (m["where"] or "").startswith("src/phase_dbg.c")
            (run.run_invalid if run_level else pending_invalid).append(m["text"])
            continue
        if section is not None:
            pair = _PAIR.match(stripped)
            if pair is None:
                raise error_at(
                    str(path), number, line, f"expected 'key = value' in section [{section}]"
                )
            pairs[pair["key"]] = (number, pair["value"])
        # Outside a section (stdout), other text (warnings, the result directory) is skipped.
    close_section()
    return run


def _result_line(path: Path, run: _Run, number: int, m: re.Match[str], invalid: list[str]) -> None:
    name = m["phase"].replace("_", "-")
    if name == "timestamp":  # a marker phase with no measurement (score printed as 0)
        return
    phase = run.phases.setdefault(name, _Phase(name))
    if phase.scored is not None:
        raise error_at(
            str(path),
            number,
            m.group(0),
            f"a second [RESULT] line for {name} (line {phase.line}): one run per file",
        )
    phase.line = number
    phase.value = _float(path, number, m["value"], f"the score of {name}")
    phase.unit = "GiB/s" if m["unit"] in ("GiB/s", "GB/s") else "kIOPS"
    phase.time_s = _float(path, number, m["time"], f"the time of {name}")
    phase.scored = m["tag"] != " " * 6
    reasons = list(invalid)
    if (m["invalid"] or m["tag"] == "RESULT-invalid") and not reasons:
        reasons.append("marked invalid by io500")
    phase.invalid = reasons or phase.invalid


def _close(
    path: Path,
    run: _Run,
    name: str,
    line: int,
    pairs: dict[str, tuple[int, str]],
    comments: list[str],
) -> None:
    invalid = [c.removeprefix("ERROR INVALID").strip() for c in comments if "INVALID" in c]
    if name == "run":
        if "procs" in pairs:
            run.procs = _int(path, pairs["procs"][0], pairs["procs"][1], "procs")
        if "version" in pairs:
            run.version = pairs["version"][1]
        if "mode" in pairs:
            run.mode = pairs["mode"][1]
        run.run_invalid.extend(invalid)
        return
    if name in ("SCORE", "SCOREX", "SCORE_EXTENDED"):
        key = "SCORE" if name == "SCORE" else "SCOREX"
        if "SCORE" not in pairs:
            raise error_at(str(path), line, f"[{name}]", "expected a 'SCORE = <total>' line")
        total_line, total_text = pairs["SCORE"]
        total, _, flag = total_text.partition(" ")
        score = _Score(total_line, total=_float(path, total_line, total, "SCORE"))
        score.invalid = "INVALID" in flag
        for attr, k in (("bw", "BW"), ("md", "MD")):
            if k in pairs:
                setattr(score, attr, _float(path, pairs[k][0], pairs[k][1], k))
        run.scores.setdefault(key, score)
        return
    if "score" not in pairs and "t_delta" not in pairs:
        # An echoed configuration section ([global], [ior-easy] ...): the options io500 ran with.
        for key, (_, value) in pairs.items():
            extra = _CONFIG_KEYS.get((name, key.lower()))
            if extra is not None and (v := _config_value(extra, value)) is not None:
                run.config[extra] = v
        return
    if name == "timestamp":
        return
    phase = run.phases.setdefault(name, _Phase(name))
    if "score" in pairs:
        score_line, score_text = pairs["score"]
        if phase.value is None:
            phase.line = score_line
            phase.value = _float(path, score_line, score_text, f"the score of {name}")
            phase.unit = "GiB/s" if name.startswith("i") else "kIOPS"
    elif phase.value is None:
        raise error_at(str(path), line, f"[{name}]", "expected a 'score = <value>' line")
    if "t_delta" in pairs and phase.time_s is None:
        phase.time_s = _float(path, pairs["t_delta"][0], pairs["t_delta"][1], "t_delta")
    if "exe" in pairs:
        phase.exe = pairs["exe"][1]
    if "nproc" in pairs:
        phase.nproc = _int(path, pairs["nproc"][0], pairs["nproc"][1], "nproc")
    if invalid and not phase.invalid:
        phase.invalid = invalid


def _run_config(run: _Run) -> dict[str, Scalar]:
    """Run-wide options (from the echoed configuration, else the phases' command lines)."""
    config = dict(run.config)
    exes = {name: p.exe for name, p in run.phases.items() if p.exe}
    easy = exes.get("ior-easy-write") or exes.get("ior-easy-read")
    if easy:
        for flag, key in (("-t", "ior_easy_transfer_size_B"), ("-b", "ior_easy_block_size_B")):
            if (v := _option(easy, flag)) is not None and (b := ior_bytes(v)) is not None:
                config.setdefault(key, b)
        config.setdefault("ior_easy_file_per_process", _has_flag(easy, "-F"))
        if (api := _option(easy, "-a")) is not None:
            config.setdefault("api", api)
    hard = exes.get("ior-hard-write") or exes.get("ior-hard-read")
    if hard and (v := _option(hard, "-s")) is not None and v.isdigit():
        config.setdefault("ior_hard_segments", int(v))
    for area in ("easy", "hard"):
        for suffix in ("write", "stat", "delete", "read"):
            exe = exes.get(f"mdtest-{area}-{suffix}")
            if exe and (v := _option(exe, "-n")) is not None and v.isdigit():
                config.setdefault(f"mdtest_{area}_files_per_proc", int(v))
                break
    for name in ("ior-easy-write", "ior-hard-write", "mdtest-easy-write", "mdtest-hard-write"):
        exe = exes.get(name)
        flag = "-D" if name.startswith("ior") else "-W"
        if exe and (v := _option(exe, flag)) is not None and (s := _maybe_float(v)) is not None:
            config.setdefault("stonewall_s", s)
            break
    find = run.phases.get("find")
    if find is not None and find.nproc is not None:
        config.setdefault("find_nproc", find.nproc)
    if run.mode:
        config.setdefault("mode", run.mode)
    return config


def _phase_conditions(run: _Run, phase: _Phase, config: dict[str, Scalar]) -> Conditions:
    extra: dict[str, Scalar] = {
        f"io500_{k}" if k != "mode" else "io500_mode": v for k, v in config.items()
    }
    extra["valid"] = not phase.invalid
    if phase.invalid:
        extra["invalid_reason"] = "; ".join(phase.invalid)
    if phase.scored is not None:
        extra["scored"] = phase.scored
    exe = phase.exe or ""
    transfer = block = None
    segments = None
    fpp = None
    stonewall = config.get("stonewall_s") if "write" in phase.name else None
    if phase.name.startswith("ior") and exe:
        t, b, s = _option(exe, "-t"), _option(exe, "-b"), _option(exe, "-s")
        transfer = ior_bytes(t) if t else None
        block = ior_bytes(b) if b else None
        segments = int(s) if s and s.isdigit() else None
        fpp = _has_flag(exe, "-F")
        d = _option(exe, "-D")
        stonewall = _maybe_float(d) if d else None
    elif phase.name.startswith("ior-easy"):
        transfer = _as_float(config.get("ior_easy_transfer_size_B"))
        block = _as_float(config.get("ior_easy_block_size_B"))
        fpp_value = config.get("ior_easy_file_per_process")
        fpp = fpp_value if isinstance(fpp_value, bool) else None
    elif phase.name.startswith("ior-hard"):
        transfer = block = 47008.0  # fixed by the rules (src/phase_ior_hard.c)
        seg = config.get("ior_hard_segments")
        segments = seg if isinstance(seg, int) and not isinstance(seg, bool) else None
        fpp = False
    if phase.name.startswith("mdtest") and exe:
        w = _option(exe, "-W")
        stonewall = _maybe_float(w) if w else None
    tasks = phase.nproc if phase.nproc is not None else run.procs
    return Conditions(
        tool=TOOL,
        tool_version=run.version,
        command_line=phase.exe,
        operation=phase.name,
        access="random" if "rnd" in phase.name else None,
        tasks=tasks,
        transfer_size_B=transfer,
        block_size_B=block,
        segments=segments,
        file_per_process=fpp,
        duration_s=phase.time_s,
        stonewall_s=_as_float(stonewall),
        extra=extra,
    )


def _as_float(value: Scalar | None) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def read(path: Path) -> list[Measurement]:
    """Every phase's bandwidth (B/s) or operation rate (1/s), and the scores, of one file."""
    try:
        text = path.read_text(encoding="utf-8", errors="strict")
    except (OSError, UnicodeDecodeError) as exc:
        raise error_at(str(path), 1, None, f"cannot read an IO-500 result file ({exc})") from None
    last_line = max(1, len(text.splitlines()))
    if text and not text.endswith("\n"):  # io500 ends every line it writes with "\n"
        raise error_at(
            str(path),
            last_line,
            text.splitlines()[-1],
            "truncated: the file ends inside a line",
        )
    run = _parse(path, text)
    if not run.phases:
        raise error_at(
            str(path),
            last_line,
            None,
            "no IO-500 phase result found (expected '[RESULT] ...' lines or result.txt "
            "phase sections with 'score = ...')",
        )
    if "SCORE" not in run.scores:
        raise error_at(
            str(path),
            last_line,
            None,
            "truncated: no '[SCORE ] Bandwidth ... : TOTAL ...' line or [SCORE] section "
            "(the run did not finish)",
        )
    stem = path.stem
    source = str(path)
    config = _run_config(run)
    out: list[Measurement] = []

    def add(
        what: str, quantity: str, value: float, unit: str, cond: Conditions, line: int, note: str
    ) -> None:
        out.append(
            Measurement(
                id=f"{stem}:{what}:{quantity}",
                quantity=quantity,
                value=value,
                unit=unit,
                conditions=cond,
                source=f"{source}:{line}",
                note=note,
            )
        )

    for phase in run.phases.values():
        assert phase.value is not None
        bandwidth = phase.unit == "GiB/s"
        add(
            phase.name,
            "bandwidth" if bandwidth else "ops",
            phase.value * (GIB if bandwidth else KILO),
            "B/s" if bandwidth else "1/s",
            _phase_conditions(run, phase, config),
            phase.line,
            ("invalid: " + "; ".join(phase.invalid)) if phase.invalid else "",
        )
    run_extra: dict[str, Scalar] = {
        ("io500_mode" if k == "mode" else f"io500_{k}"): v for k, v in config.items()
    }
    for key, score in run.scores.items():
        scope = key.lower()
        extra = {**run_extra, "valid": not score.invalid, "extended": key == "SCOREX"}
        conditions = Conditions(
            tool=TOOL, tool_version=run.version, operation=scope, tasks=run.procs, extra=extra
        )
        note = ""
        if score.invalid:
            reasons = "; ".join(run.run_invalid) or "the run is marked [INVALID]"
            note = f"invalid: {reasons}"
        for quantity, value, unit in (
            ("score", score.total, ""),
            ("score_bw", None if score.bw is None else score.bw * GIB, "B/s"),
            ("score_md", None if score.md is None else score.md * KILO, "1/s"),
        ):
            if value is not None:
                add(scope, quantity, value, unit, conditions, score.line, note)
    return out
