"""``flashsim validate --junit``: JUnit XML a JUnit parser reads, and records as measurements."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml

from flashsim.measurements.outcome import Outcome
from flashsim.validation import (
    PUBLISHED,
    RecordResult,
    RecordSpec,
    compare,
    format_table,
    record_measurement,
)
from tests.cli_helpers import ROOT, run_flashsim

DEMO_SCENARIO = (ROOT / "scenarios" / "examples" / "pipeline-streams.toml").as_posix()


def record(rid: str, published: float, comparison: str = "within") -> str:
    return f"""
[[record]]
id = "{rid}"
source = "none (test)"
quantity = "pipeline bandwidth"
unit = "GB/s"
published = {published}
tolerance = 0.02
role = "prediction"
comparison = "{comparison}"
scenario = "{DEMO_SCENARIO}"
phase = "bandwidth"
field = "bandwidth_GBps"
"""


def test_validate_junit_counts_passes_and_failures(tmp_path: Path) -> None:
    """Three records on the 3.2 GB/s demo pipeline: two pass, one fails."""
    records = tmp_path / "records"
    records.mkdir()
    (records / "r.toml").write_text(
        record("demo.bw", 3.2) + record("demo.wrong", 5.0) + record("demo.floor", 3.0, "at_least")
    )
    xml = tmp_path / "out" / "validate.xml"
    xml.parent.mkdir()
    proc = run_flashsim("validate", "--dir", str(records), "--junit", str(xml), "--json")
    assert proc.returncode == 1, proc.stderr
    suites = list(JUnitXml.fromfile(str(xml)))
    assert len(suites) == 1
    suite = suites[0]
    assert suite.name == "flashsim validate"
    assert (suite.tests, suite.failures, suite.skipped, suite.errors) == (3, 1, 0, 0)
    cases = {case.name: case for case in suite}
    assert set(cases) == {"demo.bw", "demo.wrong", "demo.floor"}
    assert cases["demo.bw"].is_passed and cases["demo.floor"].is_passed
    (failure,) = cases["demo.wrong"].result
    assert isinstance(failure, Failure) and "simulated 3.2 GB/s" in (failure.message or "")
    # --json keeps its keys and gains status/reason
    out = json.loads(proc.stdout)
    assert [r["status"] for r in out] == ["pass", "fail", "pass"]
    assert all(r["reason"] == "" for r in out)
    assert [r["passed"] for r in out] == [True, False, True]


def test_validate_junit_to_an_unwritable_path_is_one_error_line(tmp_path: Path) -> None:
    records = tmp_path / "records"
    records.mkdir()
    (records / "r.toml").write_text(record("demo.bw", 3.2))
    bad = tmp_path / "no-such-dir" / "v.xml"
    proc = run_flashsim("validate", "--dir", str(records), "--junit", str(bad))
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(bad) in lines[0]
    assert "no such directory" in lines[0]  # refused before the runs, not after them
    assert "Traceback" not in proc.stderr


def test_a_record_is_a_published_measurement() -> None:
    spec = RecordSpec.model_validate(
        {
            "id": "x",
            "source": "seed 000 Table I",
            "quantity": "IOR write bandwidth",
            "unit": "GB/s",
            "published": 27.1,
            "tolerance": 0.1,
            "role": "prediction",
            "comparison": "at_least",
            "scenario": "s.toml",
            "phase": "p",
            "field": "bandwidth_GBps",
            "note": "n",
        }
    )
    m = record_measurement(spec)
    assert m.conditions.tool == PUBLISHED
    assert (m.value, m.unit, m.source, m.tolerance, m.comparison, m.role, m.note) == (
        27.1,
        "GB/s",
        "seed 000 Table I",
        0.1,
        "at_least",
        "prediction",
        "n",
    )
    # the old names still import and are the shared machinery
    assert RecordResult is Outcome
    assert compare(27.1, 25.0, 0.1, "at_least") and not compare(27.1, 24.0, 0.1, "at_least")


def test_the_validate_table_keeps_published_units_and_its_count_line() -> None:
    """A record's own unit (GB/s, kIOPS, %) is never converted; no 'skipped' in the count."""
    rows = [
        Outcome(
            "a",
            "s",
            "q",
            "kIOPS",
            1452.0,
            1452.1,
            1452.1 / 1452 - 1,
            0.02,
            "calibration",
            "within",
            True,
        ),
        Outcome(
            "b", "s", "q", "GB/s", 27.1, 28.45, 28.45 / 27.1 - 1, 0.1, "prediction", "within", True
        ),
    ]
    table = format_table(rows)
    assert table.splitlines()[2] == (
        "| a | s | q | 1452 | 1452 | kIOPS | +0.0% | ±2% | calibration | pass |"
    )
    assert table.splitlines()[3] == (
        "| b | s | q | 27.1 | 28.45 | GB/s | +5.0% | ±10% | prediction | pass |"
    )
    assert table.splitlines()[-1] == "2 passed, 0 failed"
    assert math.isfinite(rows[0].rel_error)


@pytest.mark.parametrize(
    ("unit", "quantity", "measured", "shown"),
    [
        ("B/s", "bandwidth", 28.45e9, "| 28.45 | 28.45 | GB/s |"),
        ("B/s", "bandwidth", 512e6, "| 512 | 512 | MB/s |"),
        ("1/s", "iops", 1.4521e6, "| 1452 | 1452 | kIOPS |"),
        ("1/s", "ops", 2.5e4, "| 25 | 25 | kops/s |"),
        ("s", "latency_mean", 0.0021, "| 2.1 | 2.1 | ms |"),
        ("s", "io_time", 12.5, "| 12.5 | 12.5 | s |"),
    ],
)
def test_si_units_show_readably(unit: str, quantity: str, measured: float, shown: str) -> None:
    row = Outcome("m", "f:1", quantity, unit, measured, measured, 0.0, 0.1, None, "within", True)
    assert shown in format_table([row], reference="measured")


def test_junit_classnames_group_by_a_one_word_quantity_only() -> None:
    from flashsim.measurements.outcome import junit_xml

    def row(quantity: str) -> Outcome:
        return Outcome("r", "s", quantity, "GB/s", 1.0, 1.0, 0.0, 0.1, None, "within", True)

    xml = junit_xml([row("bandwidth"), row("latency_p99.9"), row("IOR bw (vs 3.2 GB/s)")], "s")
    assert 'classname="s.bandwidth"' in xml
    assert xml.count('classname="s"') == 2


def test_a_bar_in_a_skip_reason_does_not_split_the_row() -> None:
    from flashsim.measurements.outcome import skipped
    from flashsim.measurements.record import Conditions, Measurement

    m = Measurement("m", "bandwidth", 1e9, "B/s", Conditions("x"), "f:1")
    row = format_table([skipped(m, "a | b", 0.1)], reference="measured").splitlines()[2]
    assert row.count(" | ") == 10 - 1 and row.endswith("| skip: a \\| b |")
