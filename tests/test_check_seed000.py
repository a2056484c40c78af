"""Issue 19 item 5: one OST's obdfilter-survey 15 % low, and ``flashsim check`` names it.

The shipped files (tests/data/measurements/seed000-check/, see its README) state seed 000's
obdfilter-survey medians (§IV-A, Fig. 4) for four Perlmutter OSTs in obdfilter-survey's
summary format; the model reproduces each within its tolerance.  Shifting one OST's write
15 % low (a slow OST) makes ``check`` exit 1 with exactly that record FAIL.  Each run is
one OST's obdfilter-survey (bounded work: eight one-phase scenarios).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml

from tests.cli_helpers import ROOT, run_flashsim

pytest.importorskip("flashsim.measurements.readers.obdfilter")

DATA = ROOT / "tests" / "data" / "measurements" / "seed000-check"
PERLMUTTER = str(ROOT / "models" / "systems" / "perlmutter.toml")
WRITE_MiBps = "27128.91"  # 92.6 % of 12 x 3.2 GB/s x 8/10, in MiB/s (the README's arithmetic)


def copy_fixtures(tmp_path: Path) -> list[Path]:
    for path in DATA.iterdir():
        if path.name != "README.md":
            shutil.copy(path, tmp_path / path.name)
    return sorted(tmp_path.glob("ost*.txt"))


def test_the_seed_medians_pass_on_every_ost(tmp_path: Path) -> None:
    files = copy_fixtures(tmp_path)
    proc = run_flashsim("check", *map(str, files), "--system", PERLMUTTER, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out) == 8 and {r["status"] for r in out} == {"pass"}
    assert {r["quantity"] for r in out} == {"bandwidth"}
    for r in out:
        assert abs(r["rel_error"]) < 0.005, r  # the calibrated medians themselves


def test_one_ost_15_percent_low_fails_naming_that_record(tmp_path: Path) -> None:
    files = copy_fixtures(tmp_path)
    slow = tmp_path / "ost012.txt"
    low = f"{0.85 * float(WRITE_MiBps):.2f}"
    text = slow.read_text()
    assert text.count(WRITE_MiBps) == 3  # the write and its [min, max]
    slow.write_text(text.replace(WRITE_MiBps, low))
    xml = tmp_path / "check.xml"
    proc = run_flashsim("check", *map(str, files), "--system", PERLMUTTER, "--junit", str(xml))
    assert proc.returncode == 1, proc.stderr
    failed = [line for line in proc.stdout.splitlines() if line.endswith("| FAIL |")]
    assert len(failed) == 1
    row = failed[0]
    assert row.startswith("| ost012:") and ":ost 12:write:bandwidth |" in row
    assert f"{slow}:2 |" in row  # the file and line the value was read from
    assert "| +17.6% |" in row  # the model's median over the low measurement (1/0.85 - 1)
    assert proc.stdout.splitlines()[-1] == "7 passed, 1 failed"
    (suite,) = list(JUnitXml.fromfile(str(xml)))
    assert (suite.tests, suite.failures, suite.skipped) == (8, 1, 0)
    failures = [case.name for case in suite if any(isinstance(r, Failure) for r in case.result)]
    assert len(failures) == 1 and failures[0] in row


def test_check_on_a_terminal_counts_measurements_and_piped_prints_none() -> None:
    from tests.test_progress import _in_a_pty

    one = str(DATA / "ost000.txt")
    now = {"FLASHSIM_PROGRESS_INTERVAL": "0 s"}
    rc, out, tty = _in_a_pty(["check", one, "--system", PERLMUTTER], now)
    assert rc == 0, tty
    assert "check 0/2 measurement" in tty and "ost000:" in tty
    assert out.splitlines()[-1] == "2 passed, 0 failed"
    rc, out, tty = _in_a_pty(["check", one, "--system", PERLMUTTER, "--json"], now)
    assert rc == 0 and tty == "" and out.lstrip().startswith("[")
