"""``flashsim check``: exit statuses, table, --json, --junit, --strict, --set, bad input.

The readers of the real tools are tested on real outputs in their own files; here a small
stand-in reader (one OST's write bandwidth per line, ``ost <N> write <MB/s>``) feeds the
command, so these tests depend on the command and the reproduction only.  Each run is one
OST's obdfilter-survey on the Perlmutter model (bounded work).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from click.testing import CliRunner, Result
from junitparser import Failure, JUnitXml, Skipped

from flashsim.cli import main
from flashsim.measurements import readers
from flashsim.measurements.record import Conditions, Measurement, error_at
from tests.cli_helpers import ROOT

PERLMUTTER = str(ROOT / "models" / "systems" / "perlmutter.toml")

#: seed 000 §IV-A: median obdfilter-survey write 92.6 % of 12 x 3.2 GB/s x 8/10, in MB/s.
OST_WRITE_MBps = 0.926 * 12 * 3.2e3 * 0.8


def _read(path: Path) -> list[Measurement]:
    out = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if number == 1:
            continue
        words = line.split()
        if len(words) != 4 or words[0] != "ost" or words[2] not in ("write", "fio"):
            raise error_at(str(path), number, line, "expected 'ost <N> write <MB/s>'")
        try:
            value = float(words[3]) * 1e6
        except ValueError:
            raise error_at(str(path), number, words[3], "expected a number of MB/s") from None
        tool = "fio" if words[2] == "fio" else "obdfilter-survey"
        conditions = Conditions(
            tool=tool,
            operation="write",
            threads=1024,
            objects=1,
            transfer_size_B=4 * 2.0**20,
            target=int(words[1]),
        )
        out.append(
            Measurement(
                id=f"{path.stem}:ost{words[1]}:write:bandwidth",
                quantity="bandwidth",
                value=value,
                unit="B/s",
                conditions=conditions,
                source=f"{path}:{number}",
                scope=f"ost {words[1]}",
            )
        )
    return out


STAND_IN = SimpleNamespace(
    TOOL="obdfilter-survey", sniff=lambda head: head.startswith(b"#stand-in"), read=_read
)


@pytest.fixture(autouse=True)
def stand_in_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in reads 'obdfilter-survey' files; no other reader is consulted."""

    def module(tool: str) -> ModuleType | SimpleNamespace:
        if tool == "obdfilter-survey":
            return STAND_IN
        raise ModuleNotFoundError(tool)

    monkeypatch.setattr(readers, "reader_module", module)


def outputs(tmp_path: Path, **files: list[str]) -> list[str]:
    paths = []
    for name, lines in files.items():
        path = tmp_path / f"{name}.txt"
        path.write_text("#stand-in\n" + "".join(line + "\n" for line in lines))
        paths.append(str(path))
    return paths


def check(*args: str) -> Result:
    return CliRunner().invoke(main, ["check", *args], catch_exceptions=False)


def one_error_line(result: Result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0]
    assert "Traceback" not in result.stderr


def test_a_passing_check_prints_the_table_in_readable_units(tmp_path: Path) -> None:
    files = outputs(tmp_path, ost0=[f"ost 0 write {OST_WRITE_MBps:.2f}"])
    result = check(*files, "--system", PERLMUTTER)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("| id | source | quantity | measured | simulated | unit |")
    assert "| ost0:ost0:write:bandwidth |" in lines[2] and "| GB/s |" in lines[2]
    assert "| 28.45 | 28.45 | GB/s | +0.0% | ±10% | - | pass |" in lines[2]
    assert lines[-1] == "1 passed, 0 failed"
    assert result.stderr == ""  # no progress when not a terminal


def test_a_low_ost_fails_naming_that_record_in_json_and_junit(tmp_path: Path) -> None:
    files = outputs(
        tmp_path,
        osts=[
            f"ost 0 write {OST_WRITE_MBps:.2f}",
            f"ost 1 write {0.85 * OST_WRITE_MBps:.2f}",
            f"ost 999 write {OST_WRITE_MBps:.2f}",
            f"ost 2 fio {OST_WRITE_MBps:.2f}",
        ],
    )
    xml = tmp_path / "check.xml"
    result = check(*files, "--system", PERLMUTTER, "--json", "--junit", str(xml))
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    assert [(r["id"], r["status"]) for r in out] == [
        ("osts:ost0:write:bandwidth", "pass"),
        ("osts:ost1:write:bandwidth", "fail"),
        ("osts:ost999:write:bandwidth", "skip"),
        ("osts:ost2:write:bandwidth", "skip"),
    ]
    assert out[2]["simulated"] is None and "OST 999 does not exist" in out[2]["reason"]
    assert "calibrate" in out[3]["reason"]
    assert out[1]["source"].endswith("osts.txt:3")
    (suite,) = list(JUnitXml.fromfile(str(xml)))
    assert suite.name == "flashsim check"
    assert (suite.tests, suite.failures, suite.skipped) == (4, 1, 2)
    verdicts = {case.name: case.result for case in suite}
    assert verdicts["osts:ost0:write:bandwidth"] == []
    assert isinstance(verdicts["osts:ost1:write:bandwidth"][0], Failure)
    assert isinstance(verdicts["osts:ost999:write:bandwidth"][0], Skipped)


def test_skips_do_not_fail_unless_strict(tmp_path: Path) -> None:
    files = outputs(tmp_path, a=[f"ost 0 write {OST_WRITE_MBps:.2f}", "ost 999 write 1000"])
    result = check(*files, "--system", PERLMUTTER)
    assert result.exit_code == 0, result.output
    assert "| skip: the model cannot run it: OST 999 does not exist" in result.stdout
    assert result.stdout.splitlines()[-1] == "1 passed, 0 failed, 1 skipped"
    assert check(*files, "--system", PERLMUTTER, "--strict").exit_code == 1


def test_tolerance_and_set_change_the_verdict(tmp_path: Path) -> None:
    files = outputs(tmp_path, a=[f"ost 0 write {1.04 * OST_WRITE_MBps:.2f}"])
    assert check(*files, "--system", PERLMUTTER).exit_code == 0
    assert check(*files, "--system", PERLMUTTER, "--tolerance", "3%").exit_code == 1
    assert check(*files, "--system", PERLMUTTER, "--tolerance", "0.05").exit_code == 0
    # the calibrated stack efficiency 0.926 -> 0.963 makes the model 4 % faster
    moved = check(
        *files, "--system", PERLMUTTER, "--tolerance", "1%", "--set",
        "system.oss.stack_write_efficiency=0.963", "--json",
    )  # fmt: skip
    assert moved.exit_code == 0, moved.output
    assert json.loads(moved.stdout)[0]["rel_error"] == pytest.approx(0.0, abs=0.001)
    unprefixed = check(
        *files, "--system", PERLMUTTER, "--set", "oss.stack_write_efficiency=0.5", "--json"
    )
    assert json.loads(unprefixed.stdout)[0]["status"] == "fail"


def test_a_sidecar_tolerance_applies_unless_overridden(tmp_path: Path) -> None:
    files = outputs(tmp_path, a=[f"ost 0 write {1.04 * OST_WRITE_MBps:.2f}"])
    Path(files[0] + ".conditions.toml").write_text("tolerance = 0.02\n")
    assert check(*files, "--system", PERLMUTTER).exit_code == 1
    assert check(*files, "--system", PERLMUTTER, "--tolerance", "5%").exit_code == 0


@pytest.mark.parametrize(
    ("lines", "args", "needles"),
    [
        (["ost 0 write fast"], (), ("a.txt", "line 2", "MB/s")),
        (["ost 0 write"], (), ("a.txt", "line 2", "expected 'ost")),
        ([f"ost 0 write {OST_WRITE_MBps}"], ("--tolerance", "-1"), ("--tolerance", "-1")),
        ([f"ost 0 write {OST_WRITE_MBps}"], ("--tolerance", "lots"), ("--tolerance",)),
        ([f"ost 0 write {OST_WRITE_MBps}"], ("--tool", "nope"), ("--tool", "nope")),
        ([f"ost 0 write {OST_WRITE_MBps}"], ("--set", "system.nope.x=1"), ("nope",)),
        (
            [f"ost 0 write {OST_WRITE_MBps}"],
            ("--junit", "/no-such-dir/c.xml"),
            ("--junit", "no such directory"),
        ),
    ],
)
def test_bad_input_is_one_error_line(
    tmp_path: Path, lines: list[str], args: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    files = outputs(tmp_path, a=lines)
    one_error_line(check(*files, "--system", PERLMUTTER, *args), *needles)


def test_missing_files_and_unknown_formats_are_one_error_line(tmp_path: Path) -> None:
    files = outputs(tmp_path, a=[f"ost 0 write {OST_WRITE_MBps}"])
    one_error_line(check(str(tmp_path / "none.txt"), "--system", PERLMUTTER), "none.txt")
    other = tmp_path / "other.txt"
    other.write_text("not a benchmark output\n")
    one_error_line(check(str(other), "--system", PERLMUTTER), "other.txt", "recognised")
    one_error_line(check(*files, "--system", str(tmp_path / "m.toml")), "m.toml")


def test_help_names_the_options() -> None:
    result = CliRunner().invoke(main, ["check", "--help"])
    assert result.exit_code == 0
    for option in ("--system", "--tool", "--tolerance", "--junit", "--set", "--strict", "--seed"):
        assert option in result.output
    assert "system." in result.output


def test_check_help_imports_no_machinery() -> None:
    """``flashsim check --help`` loads what ``flashsim --help`` loads (tests/test_imports.py)."""
    from tests.test_imports import HEAVY, MACHINERY, MACHINERY_MODULES, _cli, _loaded, _top

    loaded = _loaded(_cli("check", "--help"))
    assert not [m for m in loaded if m.startswith((*MACHINERY_MODULES, "flashsim.measurements"))]
    assert not _top(loaded) & (HEAVY | MACHINERY)
