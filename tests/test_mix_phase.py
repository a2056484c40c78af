"""A production mix on the Spider model: seed 003 §2's qualitative findings come out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_flashsim

from flashsim.measure.results import RunResult
from flashsim.scenario import load_scenario, run_loaded
from flashsim.workloads.mix_phase import MixDetails

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "spider" / "production-mix.toml"
SPIDER = ROOT / "models" / "systems" / "spider.toml"


@pytest.fixture(scope="module")
def run() -> RunResult:
    return run_loaded(load_scenario(SCENARIO))


@pytest.fixture(scope="module")
def widow1_hour(run: RunResult) -> MixDetails:
    return run.phases[0].details(MixDetails)


def test_json_is_strict_even_with_an_idle_median(run: RunResult) -> None:
    # the median of an idle-most-of-the-time window is 0, so peak/median is infinite:
    # --json must still be strict JSON (null, not Infinity)
    text = json.dumps(run.to_dict(), allow_nan=False)
    extra = json.loads(text)["phases"][0]["extra"]
    assert extra["write"]["p50"] == 0.0
    assert extra["write"]["peak_to_median"] is None


def test_the_calls_issued_hold_the_seeds_request_mix(widow1_hour: MixDetails) -> None:
    d = widow1_hour
    assert d.jobs > 10
    # seed 003 §2: widow1's reads are 61.6 % of requests
    assert d.read_fraction == pytest.approx(0.616, abs=0.02)
    # 4-16 KB, 512 KB and 1 MB are "more than 95 %" of requests
    spikes = d.size_shares["<=16 KiB"] + d.size_shares["512 KiB"] + d.size_shares["1 MiB"]
    assert spikes > 0.95


def test_bandwidth_cdfs_have_long_tails(widow1_hour: MixDetails) -> None:
    # seed 003 §2, Fig. 3(a): widow1 reads exceed 100 GB/s, are below 10 GB/s at the 90th
    # percentile and below 100 MB/s at the median: each step is at least 10x.
    for s in (widow1_hour.read, widow1_hour.write):
        assert s["max"] >= 10 * s["p90"]
        assert s["p90"] >= 10 * s["p50"]
        assert s["max"] > 1e9  # peaks of GB/s over a near-idle median
        assert s["p50"] < 100e6
    # the samples are the 2 s polls of an hour (plus the tail of the last jobs)
    assert len(widow1_hour.read_series_Bps) >= 1800


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ('preset = "widow1"', "preset"),  # replaced by an unknown partition below
        ('duration = "1 h"', "duration"),
        ("file_per_process = 0.5", "file_per_process"),
    ],
)
def test_a_bad_mix_exits_2_with_one_line(tmp_path: Path, change: str, expected: str) -> None:
    bad = {
        'preset = "widow1"': 'preset = "widow9"',
        'duration = "1 h"': 'duration = "-1 h"',
        "file_per_process = 0.5": "file_per_process = 1.5",
    }[change]
    text = SCENARIO.read_text().replace("\n" + change, "\n" + bad, 1)  # the key, not a comment
    text = text.replace('system = "../../models/systems/spider.toml"', f'system = "{SPIDER}"')
    scenario = tmp_path / "mix.toml"
    scenario.write_text(text)
    out = run_flashsim("run", str(scenario))
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("error: ") and "Traceback" not in out.stderr
    assert expected in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_bad_key_beside_the_mix_table_is_named_as_written() -> None:
    # the phase's union tag "mix" is also the name of its `mix` table: the error must name
    # `interval`, not the table
    out = run_flashsim("run", str(SCENARIO), "--set", "phases.widow1-hour.interval=-2s")
    assert out.returncode == 2
    assert "key 'phases.0.interval' = '-2s'" in out.stderr
    out = run_flashsim("run", str(SCENARIO), "--set", "phases.widow1-hour.mix.duration=-2s")
    assert "key 'phases.0.mix.duration' = '-2s'" in out.stderr
