"""Config files and the CLI: contracts, overrides and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

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


# ------------------------------------------------------------------ one spelling
def _ssd_peak_GBps(proc: subprocess.CompletedProcess[str]) -> float:
    assert proc.returncode == 0, proc.stderr
    layers = json.loads(proc.stdout)["layers"]
    ssd = next(layer for layer in layers if layer["layer"] == "ssd")
    return float(ssd["read_Bps"]) / 1e9


@pytest.mark.parametrize("key", ["system.stages.ssd.bandwidth", "stages.ssd.bandwidth"])
def test_describe_takes_the_model_key_spelled_as_run_does(root: Path, key: str) -> None:
    """``describe --set system.<key>`` (as run, sweep and replay spell it) and the bare key."""
    proc = flashsim("describe", DEMO_MODEL, "--json", "--set", f"{key}=1 GB/s", cwd=root)
    assert _ssd_peak_GBps(proc) == pytest.approx(1.0)


def test_describe_names_the_prefixed_key_it_refuses(root: Path) -> None:
    proc = flashsim("describe", DEMO_MODEL, "--set", "system.stages.ssd.servers=0", cwd=root)
    assert_clean_error(proc, "pipeline-demo.toml: key 'stages.2.servers' = 0")


def test_run_refuses_a_bare_model_key_and_names_its_spelling(root: Path) -> None:
    proc = flashsim("run", DEMO_SCENARIO, "--set", "stages.ssd.bandwidth=1 GB/s", cwd=root)
    assert_clean_error(
        proc, "key 'stages.ssd.bandwidth'", "not a scenario key", "system.stages.ssd.bandwidth"
    )


def test_sweep_takes_the_same_model_key(root: Path, tmp_path: Path) -> None:
    proc = flashsim(
        "sweep",
        DEMO_SCENARIO,
        "--jobs",
        "1",
        "--store",
        str(tmp_path / "store"),
        "--json",
        "--set",
        "system.stages.ssd.bandwidth=1 GB/s",
        "--vary",
        "phases.iops.bytes_per_stream=4 MiB",
        "--set",
        "phases.bandwidth.bytes_per_stream=64 MiB",
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    bandwidth = next(row for row in rows if row["name"] == "bandwidth")
    assert bandwidth["bandwidth_GBps"] == pytest.approx(1.0)
    bare = flashsim(
        "sweep",
        DEMO_SCENARIO,
        "--jobs",
        "1",
        "--store",
        str(tmp_path / "s2"),
        "--set",
        "stages.ssd.bandwidth=1 GB/s",
        "--vary",
        "phases.iops.streams=1",
        cwd=root,
    )
    assert bare.returncode == 2 and "system.stages.ssd.bandwidth" in bare.stderr, bare.stderr


def test_replay_takes_the_same_model_key(root: Path) -> None:
    """``replay --set system.<key>`` reaches the model (here a bad value it names)."""
    import darshan

    log = Path(darshan.__file__).parent / "examples/example_logs/ior_hdf5_example.darshan"
    model = "models/systems/cori-scratch.toml"
    args = ("replay", str(log), "--system", model, "--set")
    assert_clean_error(
        flashsim(*args, "system.oss.count=0", cwd=root), "cori-scratch.toml", "key 'oss.count' = 0"
    )
    assert_clean_error(flashsim(*args, "oss.count=4", cwd=root), "system.oss.count=4")


# --------------------------------------------------------------- system_set values
_BACKGROUND = (
    '{ name = "alltoall", between = ["compute", "compute"], rate_per_pair = "100 GB/s" }, '
    '{ name = "other-io", between = ["compute", "io"], rate_per_pair = "2 GB/s" }'
)
_PHASE = (
    '[[phases]]\nname = "w"\nworkload = "ior"\noperation = "write"\nnodes = 1\n'
    'transfer_size = "1 MiB"\nblock_size = "1 MiB"\n'
)


@pytest.mark.parametrize(
    "system_set",
    [
        f'"fabric.background" = [{_BACKGROUND}]',  # an array of tables
        f"fabric.background = [{_BACKGROUND}]",  # a dotted key: a nested table
        f"\"fabric.background\" = '''[{_BACKGROUND}]'''",  # TOML in a string, as --set takes it
    ],
    ids=["array", "nested", "string"],
)
def test_system_set_takes_toml_values(root: Path, tmp_path: Path, system_set: str) -> None:
    model = (root / "models/systems/perlmutter.toml").as_posix()
    path = tmp_path / "s.toml"
    path.write_text(
        f'name = "t"\nsystem = "{model}"\n[system_set]\n"oss.count" = 8\n{system_set}\n{_PHASE}'
    )
    loaded = load_scenario(path)
    jobs = loaded.system.model.fabric.background
    assert [(j.name, j.rate_per_pair) for j in jobs] == [("alltoall", 1e11), ("other-io", 2e9)]
    assert loaded.system.model.oss.count == 8
    assert loaded.system.model.fabric.groups  # the rest of the fabric table is the model's
    wins = load_scenario(path, {"system.fabric.background.alltoall.rate_per_pair": "1 GB/s"})
    assert wins.system.model.fabric.background[0].rate_per_pair == 1e9  # --set wins


def test_system_set_table_value_names_its_key_when_bad(root: Path, tmp_path: Path) -> None:
    body = '[system_set]\n"stages.0" = { name = "nic", servers = 0, bandwidth = "1 GB/s" }\n'
    phase = '[[phases]]\nname = "p"\nworkload = "streams"\nstreams = 1\n'
    phase += 'transfer_size = "1 MiB"\nbytes_per_stream = "1 MiB"\n'
    path = write_scenario(tmp_path, root, body + phase)
    assert_clean_error(flashsim("run", str(path), cwd=root), "key 'stages.0.servers' = 0")


def test_dotted_keys_flatten_tables_and_keep_arrays() -> None:
    from flashsim.config import dotted_keys

    table = {"a": {"b": 1, "c": {"d": [{"x": 1}]}}, "e.f": "g", "h": {}}
    assert dotted_keys(table) == {"a.b": 1, "a.c.d": [{"x": 1}], "e.f": "g", "h": {}}


# -------------------------------------------------------------------- --debug
def _cli(*args: str, env: dict[str, str] | None = None) -> Any:
    from click.testing import CliRunner

    from flashsim.cli import main

    return CliRunner().invoke(main, list(args), env=env)


def test_debug_keeps_exit_3_and_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import flashsim.scenario

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("a flashsim bug")

    monkeypatch.setattr(flashsim.scenario, "run_loaded", broken)
    for args, env in (
        (("--debug", "run", DEMO_SCENARIO), None),
        (("run", DEMO_SCENARIO), {"FLASHSIM_DEBUG": "1"}),
    ):
        result = _cli(*args, env=env)
        assert result.exit_code == 3, result.output
        assert "Traceback (most recent call last)" in result.stderr
        assert "KeyError: 'a flashsim bug'" in result.stderr


def test_debug_keeps_exit_2_for_a_bad_input() -> None:
    result = _cli("--debug", "run", DEMO_SCENARIO, "--set", "phases.iops.streams=0")
    assert result.exit_code == 2, result.output
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "phases.1.streams" in last


# ------------------------------------------------------------------ LNet sources
def test_lnet_sources_beyond_the_other_groups_is_a_bad_input(root: Path) -> None:
    proc = flashsim(
        "run",
        "scenarios/perlmutter/lnet-selftest.toml",
        "--set",
        "phases.lnet-read.sources=206",
        cwd=root,
    )
    assert_clean_error(
        proc, "key 'phases.0.sources' = 206", "the system has 205 there", "at most 205"
    )


def test_lnet_check_counts_the_sources_the_run_takes(root: Path) -> None:
    """The check (model alone) and the built system agree on each sink's candidate sources."""
    from flashsim.engine.simulation import Simulation
    from flashsim.scenario import load_system_model
    from flashsim.systems.lustre.kind import Lustre
    from flashsim.systems.lustre.phases import (
        LnetSelftestPhase,
        check_lnet_sources,
        lnet_candidates,
        lnet_sources,
        server_groups,
    )

    for name in ("perlmutter.toml", "cori-scratch.toml", "spider.toml"):
        model = load_system_model(root / "models/systems" / name).model
        core = Lustre(model, Simulation(0), "flow")
        n, groups = model.oss.count, server_groups(model)
        for sink in {0, 1, n - 1}:
            for cross in (True, False):
                found = lnet_candidates(n, groups, sink, cross)
                built = [
                    i
                    for i in range(n)
                    if i != sink and (core.server_group(i) != core.server_group(sink)) == cross
                ]
                assert found == built, (name, sink, cross)
                if not found:
                    continue
                raw = {"name": "l", "workload": "lnet-selftest", "operation": "read"}
                phase = LnetSelftestPhase.model_validate(
                    {**raw, "sink": sink, "sources": len(found), "cross_group": cross}
                )
                check_lnet_sources(model, phase)
                assert lnet_sources(core, phase) == found
                with pytest.raises(ValueError, match=f"sources: {len(found) + 1} source"):
                    check_lnet_sources(model, phase.model_copy(update={"sources": len(found) + 1}))
