"""Every user-causable failure is one clean ``error:`` line (issue 11, items 1-3).

Exit statuses: 2 for a bad file, value or option; 3 for an internal error (a
traceback only with ``--debug``); 4 for a run stopped by ``--max-wall`` or
``--max-memory``.  The corpus of bad files is ``tests/corpus/`` (see its README).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from pydantic import ValidationError

from flashsim.cli import main
from flashsim.config import StrictModel

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
PERL = "scenarios/perlmutter"


@pytest.fixture(autouse=True)
def _in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def cli(*args: str) -> Result:
    """Run the flashsim CLI in this process."""
    return CliRunner().invoke(main, list(args))


def assert_clean_error(result: Result, *needles: str) -> str:
    """Exit 2, no traceback, exactly one ``error:`` line containing every needle."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# ----------------------------------------------------------- --set cases
CASES = [
    # (args, expected fragment)
    (["run", f"{PERL}/ior-sweep.toml", "--set", "system.oss.count=0"], "at least one OSS"),
    (
        ["run", f"{PERL}/obdfilter-survey.toml", "--set", "system.oss.stack_write_efficiency=0"],
        "key 'oss.stack_write_efficiency' = 0: an efficiency of 0",
    ),
    (
        ["run", f"{PERL}/lnet-selftest.toml", "--set", "system.oss.nic.ingress_efficiency=0"],
        "key 'oss.nic.ingress_efficiency' = 0: an efficiency of 0",
    ),
    (
        ["describe", "models/systems/perlmutter.toml", "--set", "oss.count=0"],
        "key 'oss.count' = 0: a Lustre system needs at least one OSS",
    ),
    (
        ["run", f"{PERL}/obdfilter-survey.toml", "--set", "phases.obdfilter-write.ost=274"],
        "key 'phases.0.ost' = 274: OST 274 does not exist",
    ),
    (
        ["run", f"{PERL}/lnet-selftest.toml", "--set", "phases.lnet-read.sink=9999"],
        "key 'phases.0.sink' = 9999: OSS 9999 does not exist",
    ),
    (
        ["run", "scenarios/vast/naive-vs-aged.toml", "--set", "phases.write.nodes=100"],
        "key 'phases.0.nodes' = 100: 100 client nodes",
    ),
    (
        ["run", "scenarios/vast/bandwidth-grid.toml", "--set", "phases.grid.nodes=[]"],
        "key 'phases.0.nodes' = []: an empty list",
    ),
    (
        ["run", f"{PERL}/ior-sweep.toml", "--set", "phases.read-bandwidth.dataset=other"],
        "key 'phases.1.dataset' = 'other': no earlier phase writes this dataset",
    ),
    (
        [
            "run",
            f"{PERL}/ior-sweep.toml",
            "--set",
            "system.oss.drive=../drives/seagate-st4000nm0034.toml",
        ],
        "is a hard disk",
    ),
    (
        ["run", f"{PERL}/ior-sweep.toml", "--set", "system.oss.nic.port_bandwidth=1e-300 B/s"],
        "outside the physical range",
    ),
    (
        [
            "run",
            "scenarios/examples/pipeline-streams.toml",
            "--set",
            "phases.0.bytes_per_stream=1e300 B",
        ],
        "outside the physical range",
    ),
    (
        [
            "run",
            "scenarios/examples/pipeline-streams.toml",
            "--set",
            "phases.0.streams=" + "9" * 400,
        ],
        "a number literal of 400 digits",
    ),
    (
        [
            "run",
            f"{PERL}/ior-sweep.toml",
            "--set",
            "system.oss.drive=../../scenarios/perlmutter/ior-sweep.toml",
        ],
        "key 'kind': required key is missing; expected kind = one of 'ssd', 'hdd'",
    ),
    (
        ["run", f"{PERL}/ior-sweep.toml", "--set", "phases.0.layout.stripe_count=300"],
        "300 stripes need more OSTs than the 274",
    ),
    (
        ["run", f"{PERL}/ior-sweep.toml", "--set", "phases.0.layout.first_target=300"],
        "OST 300 does not exist",
    ),
    (
        ["run", f"{PERL}/ior-sweep.toml", "--set", 'phases.1.name="write-bandwidth"'],
        "phases.0 has the same name",
    ),
    (["run", f"{PERL}/ior-sweep.toml", "--set", "phases.0.nodes=true"], "True is a boolean"),
    (
        ["run", f"{PERL}/ior-sweep.toml", "--set", "phases.0.layout.stripe_count=[true]"],
        "boolean",
    ),
    (
        ["run", f"{PERL}/lnet-selftest.toml", "--set", "system.mds.raid.parity=2"],
        "key 'mds.raid.parity' = 2: means nothing for level 'raid10'",
    ),
    (
        ["run", f"{PERL}/lnet-selftest.toml", "--set", "system.oss.raid.mirrors=3"],
        "key 'oss.raid.mirrors' = 3: means nothing for level 'raid6'",
    ),
    (
        [
            "run",
            f"{PERL}/ior-sweep.toml",
            "--set",
            "phases.0.nodes=4000",
            "--set",
            "phases.0.ranks_per_node=1600",
        ],
        "gives 6,400,000 streams",
    ),
    (
        ["run", f"{PERL}/ior-sweep.toml", "--set", "phases.0.transfer_size=2**64 B"],
        "no arithmetic",
    ),
    (
        ["run", f"{PERL}/ior-sweep.toml", "--set", "phases.2.max_requests=1000000000"],
        "key 'phases.2.max_requests' = 1000000000: 1,000,000,000 requests",
    ),
    (
        ["run", "scenarios/vast/bandwidth-grid.toml", "--set", "phases.0.repetitions=100000"],
        "rank runs; at most 2,000,000",
    ),
    (
        [
            "run",
            f"{PERL}/ior-table1.toml",
            "--set",
            "phases.read-iops.sample_interval_requests=1000000000",
        ],
        "40 samples of 1,000,000,000 requests",
    ),
    (["validate", "--only", "no-record-has-this-id"], "no validation record"),
    (["run", "/dev/zero"], "is a special file"),
    (["run", f"{PERL}/ior-sweep.toml", "--max-wall", "nan"], "--max-wall: nan"),
    (["run", f"{PERL}/ior-sweep.toml", "--max-memory", "2 furlongs"], "--max-memory"),
]


@pytest.mark.parametrize(("args", "needle"), CASES, ids=[" ".join(c[0])[-60:] for c in CASES])
def test_user_errors_are_one_line(args: list[str], needle: str) -> None:
    assert_clean_error(cli(*args), needle)


def test_hundred_thousand_digit_literal_is_refused_quickly() -> None:
    started = time.process_time()  # CPU seconds of this process: the work, whatever the load
    result = cli(
        "run",
        "scenarios/examples/pipeline-streams.toml",
        "--set",
        "phases.0.streams=" + "9" * 100_000,
    )
    assert_clean_error(result, "a number literal of 100000 digits")
    assert time.process_time() - started < 5.0


# ----------------------------------------------------------------- corpus
def _corpus() -> Iterator[Path]:
    return iter(sorted(CORPUS.glob("*.toml")))


def _header(path: Path, field: str) -> list[str]:
    prefix = f"# {field}: "
    return [
        line[len(prefix) :] for line in path.read_text().splitlines() if line.startswith(prefix)
    ]


@pytest.mark.parametrize("path", list(_corpus()), ids=lambda p: p.stem)
def test_corpus_file_gives_its_error(path: Path) -> None:
    (command,) = _header(path, "command")
    (expected,) = _header(path, "expect")
    sets = [arg for pair in _header(path, "set") for arg in ("--set", pair)]
    started = time.process_time()  # CPU seconds of this process: the work, whatever the load
    assert_clean_error(cli(command, str(path.relative_to(ROOT)), *sets), expected)
    assert time.process_time() - started < 20.0


def test_corpus_covers_every_case() -> None:
    assert len(list(_corpus())) >= 20


# -------------------------------------------------------------- special files
def test_fifo_and_directory_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "scenario.toml"
    os.mkfifo(fifo)
    assert_clean_error(cli("run", str(fifo)), "is a special file")
    assert_clean_error(cli("describe", str(fifo)), "is a special file")
    folder = tmp_path / "model.toml"
    folder.mkdir()
    drive_dir = ROOT / "models" / "systems"
    # A directory named as the drive file of a model.
    assert_clean_error(
        cli("describe", str(drive_dir / "perlmutter.toml"), "--set", f"oss.drive={folder}"),
        "is a directory",
    )


def test_a_huge_file_is_refused_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    with big.open("wb") as handle:
        handle.truncate(64 * 2**20)  # sparse: no disk used
    assert_clean_error(cli("run", str(big)), "at most 4 MiB")


# -------------------------------------------------------------- warnings
def test_unmodelled_knobs_warn_once() -> None:
    result = cli(
        "run",
        f"{PERL}/ior-table1.toml",
        "--set",
        'phases.0.layout.stripe_size="4 MiB"',
        "--set",
        'phases.2.layout.stripe_size="4 MiB"',
        "--set",
        "phases.2.drop_caches=false",
        "--max-wall",
        "0.01",
    )
    assert result.exit_code in (0, 4), result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 3, result.stderr  # one per phase and knob, each once
    assert sum("layout.stripe_size" in w and "not modelled" in w for w in warnings) == 2
    assert any("drop_caches = false is not modelled" in w for w in warnings)
    assert "Traceback" not in result.output


def test_vast_warns_about_lustre_layout_and_drop_caches() -> None:
    result = cli(
        "run",
        "scenarios/vast/naive-vs-aged.toml",
        "--set",
        "phases.0.layout.stripe_count=4",
        "--set",
        "phases.0.drop_caches=false",
        "--max-wall",
        "0.01",
    )
    assert result.exit_code in (0, 4), result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2, result.stderr
    assert any("layout (striping) is not modelled on a vast system" in w for w in warnings)
    assert any("drop_caches = false is not modelled" in w for w in warnings)


def test_obdfilter_objects_warns() -> None:
    result = cli(
        "run", f"{PERL}/obdfilter-survey.toml", "--set", "phases.0.objects=4", "--max-wall", "0.01"
    )
    assert result.exit_code in (0, 4), result.output
    assert result.stderr.count("objects = 4 is not modelled") == 1, result.stderr


def test_raid_none_warns_about_leftover_parity() -> None:
    result = cli("describe", "models/systems/perlmutter.toml", "--set", 'oss.raid.level="none"')
    assert result.exit_code == 0, result.output
    assert result.stderr.count("warning: raid.parity = 2 is ignored by level 'none'") == 1


# -------------------------------------------------------------- internal errors
def test_internal_error_is_one_line_and_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    import flashsim.scenario

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("a flashsim bug")

    monkeypatch.setattr(flashsim.scenario, "run_loaded", broken)
    result = cli("run", "scenarios/examples/pipeline-streams.toml")
    assert result.exit_code == 3
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: internal error (KeyError"), lines
    assert "--debug" in lines[0]
    debug = cli("--debug", "run", "scenarios/examples/pipeline-streams.toml")
    assert debug.exit_code == 3  # --debug shows the traceback and keeps the status
    assert "Traceback" in debug.stderr and "KeyError: 'a flashsim bug'" in debug.stderr


# ---------------------------------------------------------- bounded runs
#: A run whose second phase would take hours: request fidelity with an unreachable precision.
#: The first phase is short (its work bounded: 8 x 256 MiB) so that it ends well within the
#: limits below on a loaded machine, SciPy's special functions imported on first use included.
SLOW_RUN = [
    "run",
    "scenarios/examples/pipeline-streams.toml",
    "--fidelity",
    "request",
    "--set",
    "phases.bandwidth.bytes_per_stream=256 MiB",
    "--set",
    "phases.iops.target_rel_halfwidth=1e-9",
    "--set",
    "phases.iops.max_requests=100000000",
]


def test_max_wall_stops_inside_a_phase_with_partial_results() -> None:
    started = time.perf_counter()
    result = cli(*SLOW_RUN, "--json", "--max-wall", "1.5")
    elapsed = time.perf_counter() - started
    assert result.exit_code == 4, result.output
    stopped = [line for line in result.stderr.splitlines() if line.startswith("stopped:")]
    assert len(stopped) == 1 and "--max-wall 1.5 s" in stopped[0], result.stderr
    assert "1 of 2 phases completed" in stopped[0]
    phases = json.loads(result.stdout)["phases"]
    assert [p["name"] for p in phases] == ["bandwidth"]  # the partial result
    assert elapsed < 1.5 + 3.0  # stopped inside the long phase, not at its end


def test_max_memory_stops_the_run() -> None:
    result = cli("run", "scenarios/examples/pipeline-streams.toml", "--max-memory", "1 MB")
    assert result.exit_code == 4, result.output
    assert "resident memory" in result.stderr and "--max-memory 1 MB" in result.stderr
    assert "0 of 2 phases completed" in result.stderr


def test_generous_limits_change_nothing() -> None:
    plain = cli("run", "scenarios/examples/pipeline-streams.toml", "--json")
    limited = cli(
        "run",
        "scenarios/examples/pipeline-streams.toml",
        "--json",
        "--max-wall",
        "600",
        "--max-memory",
        "64 GiB",
    )
    assert plain.exit_code == limited.exit_code == 0

    def strip(out: str) -> list[dict[str, object]]:
        return [
            {k: v for k, v in p.items() if k != "wall_time_s"} for p in json.loads(out)["phases"]
        ]

    assert strip(plain.stdout) == strip(limited.stdout)


# ------------------------------------------------------------- subprocesses
def _flashsim(*args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    # ``timeout`` is a hang guard: a start-up takes seconds on a busy machine.
    return subprocess.run(
        [sys.executable, "-m", "flashsim.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_subprocess_long_literal_and_dev_zero() -> None:
    for args in (
        [
            "run",
            "scenarios/examples/pipeline-streams.toml",
            "--set",
            "phases.0.streams=" + "9" * 100_000,
        ],
        ["describe", "/dev/zero"],
        ["run", f"{PERL}/ior-sweep.toml", "--set", "system.oss.count=0"],
    ):
        proc = _flashsim(*args)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_subprocess_max_wall_exit_4() -> None:
    proc = _flashsim(*SLOW_RUN, "--max-wall", "1")
    assert proc.returncode == 4, proc.stderr
    assert "stopped: wall time" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_help_documents_exit_codes() -> None:
    text = " ".join(cli("--help").output.split())  # click re-wraps the help text
    assert "Exit status" in text and "4 a run stopped" in text
    assert "1 a validation record or measurement failed" in text
    run_help = cli("run", "--help").output
    assert "--max-wall" in run_help and "--max-memory" in run_help


# --------------------------------------------------------------- schemas
def _schemas() -> list[type[StrictModel]]:
    import importlib
    import pkgutil

    import flashsim

    for info in pkgutil.walk_packages(flashsim.__path__, "flashsim."):
        importlib.import_module(info.name)

    def subclasses(cls: type[StrictModel]) -> Iterator[type[StrictModel]]:
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    return sorted(set(subclasses(StrictModel)), key=lambda c: f"{c.__module__}.{c.__name__}")


@pytest.mark.parametrize("schema", _schemas(), ids=lambda c: c.__name__)
def test_every_default_validates_when_its_key_is_omitted(schema: type[StrictModel]) -> None:
    """Building a schema from nothing fails only for its required keys, never a default."""
    try:
        schema.model_validate({})
    except ValidationError as exc:
        bad = [e for e in exc.errors() if e["type"] != "missing"]
        assert not bad, [(e["loc"], e["msg"]) for e in bad]


def test_python_api_refuses_huge_integers_in_one_line() -> None:
    from flashsim.config import ConfigError, validate
    from flashsim.workloads.ior import IorPhase

    for value, digits in ((10**20, "~21 digits"), (10**5000, "~5001 digits")):
        with pytest.raises(ConfigError) as info:
            validate(
                IorPhase,
                {"name": "a", "workload": "ior", "operation": "write", "nodes": value},
                "x",
            )
        text = str(info.value)
        assert "key 'nodes'" in text and digits in text and len(text) < 200, text


def test_wide_stripes_are_not_refused_as_ranks_times_stripes(tmp_path: Path) -> None:
    """200,000 ranks on 274-wide stripes: stripe sets are stored once, so the run fits."""
    path = tmp_path / "wide.toml"
    path.write_text(
        f'name = "wide"\nsystem = "{Path("models/systems/perlmutter.toml").resolve().as_posix()}"\n'
        '[[phases]]\nname = "w"\nworkload = "ior"\noperation = "write"\nnodes = 1000\n'
        "ranks_per_node = 200\nlayout = { stripe_count = 274 }\n"
    )
    result = cli("run", str(path), "--max-wall", "0.01")
    assert result.exit_code == 4, result.output  # started, then stopped by --max-wall
