"""Start-up cost: what ``flashsim --help``, ``describe`` and a small ``run`` import.

Each check runs a fresh interpreter and asserts on the set of modules loaded
(the work), never on seconds: ``flashsim --help`` loads click and three light
flashsim modules; ``describe`` and a small run load pydantic, NumPy and SimPy
but none of SciPy, pandas, pint, Dask, pyarrow, matplotlib or pydarshan;
networkx only where a fabric is described (its max-flow bound).  ``python -X importtime``
measured the import time these sets cost (issue 20: at most 0.3 s).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Third-party packages no command needs before it runs a study, a sweep or a trace.
HEAVY = {
    "scipy",
    "pandas",
    "pint",
    "networkx",
    "matplotlib",
    "dask",
    "distributed",
    "pyarrow",
    "darshan",
}
#: What a command's machinery may load (the simulator's own libraries).
MACHINERY = {"numpy", "pydantic", "pydantic_core", "simpy"}
#: flashsim's machinery, none of which ``flashsim --help`` may load (it loads ``flashsim.cli``,
#: ``flashsim.errors`` and ``flashsim.units``, and may load other light modules).
MACHINERY_MODULES = (
    "flashsim.config",
    "flashsim.scenario",
    "flashsim.sweep",
    "flashsim.validation",
    "flashsim.tasks",
    "flashsim.engine",
    "flashsim.components",
    "flashsim.workloads",
    "flashsim.systems",
    "flashsim.studies",
    "flashsim.measure",
)


def _loaded(code: str) -> set[str]:
    """Modules in ``sys.modules`` after a fresh interpreter ran ``code`` in the repository."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def _top(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def _cli(*args: str) -> str:
    """Code that runs ``flashsim ARGS`` in-process (its output discarded, exit status 0)."""
    return (
        "import contextlib, io\nfrom flashsim.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main({list(args)!r}, standalone_mode=False)\n"
    )


@pytest.mark.parametrize(
    "code",
    [
        "import flashsim.cli",
        "import flashsim",
        _cli("--help"),
        *(_cli(cmd, "--help") for cmd in ("run", "describe", "validate", "sweep", "replay")),
    ],
    ids=["import-cli", "import-flashsim", "help", "run", "describe", "validate", "sweep", "replay"],
)
def test_help_imports_no_machinery(code: str) -> None:
    loaded = _loaded(code)
    assert not [m for m in loaded if m.startswith(MACHINERY_MODULES)]
    assert not _top(loaded) & (HEAVY | MACHINERY | {"tqdm"})


def test_the_package_api_is_still_there() -> None:
    """``flashsim.run_scenario`` and friends load on first use (PEP 562)."""
    import flashsim

    assert callable(flashsim.run_scenario) and callable(flashsim.load_system_model)
    assert {"run_scenario", "run_sweep", "load_scenario"} <= set(dir(flashsim))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = flashsim.nope  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("args", "allowed"),
    [
        (("describe", "models/systems/pipeline-demo.toml"), set()),
        # A fabric's bound in the description is a max-flow, and a dragonfly's
        # connectivity is checked when the model loads: both use networkx.
        (("describe", "models/systems/vast-pdsw21.toml"), {"networkx"}),
        (("describe", "models/systems/perlmutter.toml"), {"networkx"}),
        (("describe", "models/systems/spider.toml"), {"networkx"}),
        (
            (
                "run",
                "scenarios/examples/pipeline-streams.toml",
                "--set",
                "phases.bandwidth.bytes_per_stream=64 MiB",
                "--set",
                "phases.iops.bytes_per_stream=1 MiB",
            ),
            set(),
        ),
    ],
    ids=["describe-pipeline", "describe-vast", "describe-perlmutter", "describe-spider", "run"],
)
def test_describe_and_a_small_run_import_no_heavy_package(
    args: tuple[str, ...], allowed: set[str]
) -> None:
    loaded = _top(_loaded(_cli(*args)))
    assert MACHINERY - {"simpy"} <= loaded  # the check sees the machinery load
    assert not loaded & (HEAVY - allowed), sorted(loaded & HEAVY)


def test_unit_strings_need_no_pint_when_a_model_loads() -> None:
    loaded = _loaded(
        "from flashsim.scenario import load_scenario\n"
        "load_scenario('scenarios/perlmutter/ior-table1.toml')\n"
    )
    assert "pint" not in _top(loaded)


def test_batch_means_t_quantile_is_scipy_stats_own() -> None:
    """Run-length control reads Student's t from scipy.special (0.2 s to import, not
    scipy.stats' 0.5 s): the same float as ``stats.t.ppf`` for every level and batch count."""
    from scipy import special, stats

    for confidence in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999):
        for batches in range(2, 130):
            q = 0.5 + confidence / 2.0
            assert special.stdtrit(batches - 1, q) == stats.t.ppf(q, batches - 1)
    loaded = _loaded(
        "from flashsim.engine.runlength import batch_means\n"
        "batch_means([float(i % 7) for i in range(400)], 20, 0.95)\n"
    )
    assert "scipy.special" in loaded and "scipy.stats" not in loaded
