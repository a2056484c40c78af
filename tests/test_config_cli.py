"""Config files and the CLI: contracts, overrides and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flashsim.config import ConfigError, apply_overrides
from flashsim.scenario import load_scenario

DEMO_MODEL = "models/systems/pipeline-demo.toml"
DEMO_SCENARIO = "scenarios/examples/pipeline-streams.toml"


def flashsim(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flashsim.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def write_scenario(tmp: Path, root: Path, body: str) -> Path:
    model = (root / DEMO_MODEL).as_posix()
    path = tmp / "s.toml"
    path.write_text(f'name = "t"\nsystem = "{model}"\n' + body)
    return path


def assert_clean_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_run_json_contract(root: Path) -> None:
    proc = flashsim("run", DEMO_SCENARIO, "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for key in ("scenario", "system", "seed", "wall_time_s", "phases"):
        assert key in out
    for phase in out["phases"]:
        for key in (
            "name",
            "operation",
            "bandwidth_GBps",
            "iops",
            "ranks",
            "transfer_size_B",
            "sim_time_s",
            "ci_rel_halfwidth",
        ):
            assert key in phase
    assert out["phases"][0]["bandwidth_GBps"] == pytest.approx(3.2)


def test_set_overrides_model_with_units(root: Path) -> None:
    proc = flashsim(
        "run", DEMO_SCENARIO, "--json", "--set", "system.stages.ssd.bandwidth=1.6 GB/s", cwd=root
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["phases"][0]["bandwidth_GBps"] == pytest.approx(1.6)


def test_describe_names_the_bottleneck(root: Path) -> None:
    proc = flashsim("describe", DEMO_MODEL, "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["bottlenecks"]["bandwidth"] == "ssd"


def test_validate_json_contract_and_exit_codes(root: Path, tmp_path: Path) -> None:
    scenario = (root / DEMO_SCENARIO).as_posix()
    records = tmp_path / "records.toml"
    records.write_text(
        f"""
[[record]]
id = "demo.bw"
source = "none (test)"
quantity = "pipeline bandwidth"
unit = "GB/s"
published = 3.2
tolerance = 0.02
role = "prediction"
scenario = "{scenario}"
phase = "bandwidth"
field = "bandwidth_GBps"

[[record]]
id = "demo.wrong"
source = "none (test)"
quantity = "pipeline bandwidth, wrong on purpose"
unit = "GB/s"
published = 5.0
tolerance = 0.02
role = "prediction"
scenario = "{scenario}"
phase = "bandwidth"
field = "bandwidth_GBps"
"""
    )
    proc = flashsim("validate", "--json", "--dir", str(tmp_path), cwd=root)
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert [r["id"] for r in out] == ["demo.bw", "demo.wrong"]
    for rec in out:
        for key in (
            "id",
            "source",
            "quantity",
            "unit",
            "published",
            "simulated",
            "rel_error",
            "tolerance",
            "role",
            "passed",
        ):
            assert key in rec
    assert out[0]["passed"] and not out[1]["passed"]
    only = flashsim("validate", "--json", "--only", "demo.bw", "--dir", str(tmp_path), cwd=root)
    assert only.returncode == 0
    assert len(json.loads(only.stdout)) == 1


@pytest.mark.parametrize(
    ("body", "needles"),
    [
        ("seed = 1\n[[phases]\nname = 'x'\n", ("s.toml", "not valid TOML")),
        (
            "seed = -1\n[[phases]]\nname='a'\nworkload='streams'\nstreams=1\n"
            "transfer_size='1 MiB'\n",
            ("s.toml", "'seed'", "-1"),
        ),
        (
            "colour = 'red'\n[[phases]]\nname='a'\nworkload='streams'\nstreams=1\n"
            "transfer_size='1 MiB'\n",
            ("'colour'", "unknown key"),
        ),
        (
            "[[phases]]\nname='a'\nworkload='streams'\nstreams=1\ntransfer_size='-4 KiB'\n",
            ("phases.0.transfer_size", "-4 KiB", "> 0"),
        ),
        (
            "[[phases]]\nname='a'\nworkload='streams'\nstreams=1\ntransfer_size='4 KB/s'\n",
            ("phases.0.transfer_size", "expected a size"),
        ),
        (
            "[[phases]]\nname='a'\nworkload='streams'\nstreams=1\n",
            ("phases.0.transfer_size", "required"),
        ),
        (
            "[[phases]]\nname='a'\nworkload='ior2'\nstreams=1\ntransfer_size='1 MiB'\n",
            ("phases.0.workload", "'ior2'"),
        ),
    ],
)
def test_bad_scenarios_give_one_clear_line(root: Path, tmp_path: Path, body, needles) -> None:
    path = write_scenario(tmp_path, root, body)
    assert_clean_error(flashsim("run", str(path), cwd=root), *needles)


def test_bad_model_value_names_file_and_key(root: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.toml"
    model.write_text(
        'kind = "pipeline"\nname = "x"\n[[stages]]\nname = "nic"\nservers = 0\n'
        'bandwidth = "1 GB/s"\n'
    )
    assert_clean_error(flashsim("describe", str(model), cwd=root), "m.toml", "stages.0.servers")
    model.write_text('kind = "hdd-array"\nname = "x"\n')
    assert_clean_error(flashsim("describe", str(model), cwd=root), "'kind'", "hdd-array")


def test_missing_file_and_bad_set(root: Path) -> None:
    assert_clean_error(flashsim("run", "nope.toml", cwd=root), "nope.toml", "not found")
    assert_clean_error(
        flashsim("run", DEMO_SCENARIO, "--set", "phases.iops.streams", cwd=root), "key=value"
    )
    assert_clean_error(
        flashsim("run", DEMO_SCENARIO, "--set", "phases.nosuch.streams=2", cwd=root),
        "phases.nosuch",
    )


def test_overrides_address_lists_by_name_and_index() -> None:
    data = {"phases": [{"name": "a", "n": 1}, {"name": "b", "n": 2}], "x": {"y": 1}}
    apply_overrides(data, {"phases.b.n": "5", "phases.0.n": "7", "x.y": "200 Gb/s"}, "f")
    assert data["phases"][1]["n"] == 5 and data["phases"][0]["n"] == 7
    assert data["x"]["y"] == "200 Gb/s"
    with pytest.raises(ConfigError, match="plain value"):
        apply_overrides(data, {"x.y.z": "1"}, "f")


def test_python_api_returns_a_dataframe(root: Path) -> None:
    from flashsim.scenario import run_loaded

    frame = run_loaded(load_scenario(root / DEMO_SCENARIO)).to_dataframe()
    assert list(frame["name"]) == ["bandwidth", "iops"]
    assert frame["bandwidth_GBps"].iloc[0] == pytest.approx(3.2)


def test_sweep_parallel_matches_serial(root: Path) -> None:
    from flashsim.sweep import run_sweep

    axes = [("phases.iops.streams", ["1", "4"]), ("system.stages.ssd.bandwidth", ["1 GB/s"])]
    serial = run_sweep(root / DEMO_SCENARIO, axes, jobs=1)
    parallel = run_sweep(root / DEMO_SCENARIO, axes, jobs=2)
    assert serial["bandwidth_GBps"].tolist() == parallel["bandwidth_GBps"].tolist()
    assert len(serial) == 4  # two points x two phases
    assert serial["bandwidth_GBps"].max() == pytest.approx(1.0)


def test_sweep_bad_key_is_a_clean_error(root: Path) -> None:
    assert_clean_error(
        flashsim("sweep", DEMO_SCENARIO, "--vary", "phases.iops.nosuch=1,2", cwd=root),
        "nosuch",
        "unknown key",
    )


@pytest.mark.parametrize(
    ("setting", "needles"),
    [
        (
            "phases.write-bandwidth.nodes=0",
            ("key 'phases.0.nodes' = 0", "greater than or equal to 1"),
        ),
        ("phases.read-iops.stonewall=-5 s", ("key 'phases.6.stonewall' = '-5 s'", ">= 0")),
        ("phases.write-bandwidth.bogus=1", ("key 'phases.0.bogus'", "expected one of: access")),
        ("phases.write-iops.transfer_size=3 KiB", ("key 'phases.3':", "multiple of transfer_size")),
    ],
)
def test_errors_inside_tagged_phase_unions_name_the_field(
    root: Path, setting: str, needles: tuple[str, ...]
) -> None:
    proc = flashsim("run", "scenarios/perlmutter/ior-table1.toml", "--set", setting, cwd=root)
    assert_clean_error(proc, *needles)
    assert ".ior" not in proc.stderr  # the union tag is not part of the key
