"""Sweeps that tell you why: every row names what limited its phase (issue 20, item 5)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from flashsim.cli import main
from flashsim.measure.results import PhaseResult, ResourceLoad
from flashsim.sweep import run_sweep
from flashsim.sweep_limits import LIMIT_COLUMNS, limit_columns, limited_by

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios/examples/pipeline-streams.toml"
# Flow fidelity: one stream of 4 KiB requests leaves the SSD 40 % busy (no bottleneck),
# three saturate it; the 1 MiB bandwidth phase always saturates it.
AXES = [("phases.iops.streams", ["1", "3"])]


def phase(bottlenecks: list[ResourceLoad], most: list[ResourceLoad]) -> PhaseResult:
    return PhaseResult(
        "p", "read", 1e9, 1e3, 1, 4096.0, 1.0, 1e9, bottlenecks=bottlenecks, most_utilized=most
    )


NIC = [ResourceLoad(f"sys.client{i}.nic0", "nic", 1.0) for i in range(3)]
FABRIC = ResourceLoad("sys.fabric.up", "fabric", 0.995)


def test_columns_of_many_bottlenecks_one_none_and_an_unmeasured_phase() -> None:
    many = limit_columns(phase([*NIC, FABRIC], [*NIC]))
    assert list(many) == list(LIMIT_COLUMNS)
    assert many["bottleneck"] == "sys.client0.nic0" and many["bottleneck_kind"] == "nic"
    assert many["bottleneck_utilization"] == 1.0 and many["bottleneck_count"] == 4
    assert many["bottleneck_kinds"] == "nic x3, fabric x1"
    assert limited_by(many) == "sys.client0.nic0 (nic) 100.0% +3 more: nic x3, fabric x1"

    none = limit_columns(phase([], [ResourceLoad("sys.ssd", "ssd", 0.4)]))
    assert none["bottleneck"] == "none" and none["bottleneck_count"] == 0
    assert none["bottleneck_kind"] is None and math.isnan(none["bottleneck_utilization"])
    assert (none["most_utilized"], none["most_utilized_utilization"]) == ("sys.ssd", 0.4)
    assert limited_by(none) == "none; most utilised: sys.ssd (ssd) 40.0%"

    unmeasured = limit_columns(phase([], []))
    assert unmeasured["bottleneck"] is None and unmeasured["most_utilized"] is None
    assert limited_by(unmeasured) == "-"


def expected_limits(frame: pd.DataFrame) -> None:
    """The rows of the AXES sweep name the SSD, or none and the SSD at 40 %."""
    rows = frame.set_index(["phases.iops.streams", "name"])
    for streams in ("1", "3"):
        assert rows.loc[(streams, "bandwidth"), "bottleneck"] == "demo.ssd"
        assert rows.loc[(streams, "bandwidth"), "bottleneck_kind"] == "ssd"
        assert rows.loc[(streams, "bandwidth"), "bottleneck_utilization"] >= 0.99
    assert rows.loc[("3", "iops"), "bottleneck"] == "demo.ssd"
    assert rows.loc[("1", "iops"), "bottleneck"] == "none"
    assert rows.loc[("1", "iops"), "bottleneck_count"] == 0
    assert rows.loc[("1", "iops"), "most_utilized"] == "demo.ssd"
    assert 0.3 < rows.loc[("1", "iops"), "most_utilized_utilization"] < 0.5


def test_frame_and_parquet_rows_name_the_bottleneck(tmp_path: Path) -> None:
    store = tmp_path / "store"
    frame = run_sweep(SCENARIO, AXES, store=store)
    expected_limits(frame)
    files = sorted(store.glob("point-*.parquet"))
    assert len(files) == 2
    one_point = pd.read_parquet(files[0])  # a point file alone says it too
    assert set(LIMIT_COLUMNS) <= set(one_point.columns)
    expected_limits(pd.read_parquet(store))


def test_table_csv_and_json_name_the_bottleneck(tmp_path: Path) -> None:
    vary = ["--vary", "phases.iops.streams=1,3"]
    csv = tmp_path / "out.csv"
    text = CliRunner().invoke(
        main, ["sweep", str(SCENARIO), *vary, "--store", str(tmp_path / "a"), "--csv", str(csv)]
    )
    assert text.exit_code == 0, text.output
    header, *rows = text.stdout.splitlines()
    assert header.rstrip().endswith("limited by") and len(rows) == 4
    assert rows[0].split()[:2] == ["1", "bandwidth"] and "demo.ssd (ssd) 100.0%" in rows[0]
    assert (
        "none saturated; held by concurrency: stream queue depth q*t/RTT; "
        "most utilised: demo.ssd (ssd) 39"
    ) in rows[1]
    expected_limits(pd.read_csv(csv, dtype={"phases.iops.streams": str}))

    out = CliRunner().invoke(
        main, ["sweep", str(SCENARIO), *vary, "--store", str(tmp_path / "b"), "--json"]
    )
    assert out.exit_code == 0, out.output
    expected_limits(pd.DataFrame(json.loads(out.stdout)))


@pytest.mark.parametrize("column", LIMIT_COLUMNS)
def test_every_limit_column_is_documented(column: str) -> None:
    assert f"`{column}`" in (ROOT / "docs" / "sweeps.md").read_text()
