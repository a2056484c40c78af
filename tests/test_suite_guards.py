"""The suite's own guards: the Hypothesis profiles and failure reports under the AST race."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, settings

from tests.conftest import ROOT

pytest_plugins = ["pytester"]

PROFILE = """
import runpy, sys
runpy.run_path(sys.argv[1])
from hypothesis import settings
s = settings.default
print(s.deadline, s.derandomize, s.database is None, s.max_examples)
"""


def test_loaded_profile_bounds_work_not_wall_time() -> None:
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check


@pytest.mark.parametrize(
    ("env", "expected"),
    [({"CI": "true"}, "None True True 100"), ({}, "None False False 100")],
    ids=["ci", "dev"],
)
def test_ci_profile_is_derandomized_and_database_less(env: dict[str, str], expected: str) -> None:
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")} | env
    out = subprocess.run(
        [sys.executable, "-c", PROFILE, str(ROOT / "tests" / "conftest.py")],
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split("\n")[0] == expected


RACING_TEST = """
import _pytest._code.code


def test_fails_while_the_ast_race_strikes(monkeypatch):
    def racing(*args, **kwargs):
        raise SystemError("AST constructor recursion depth mismatch (before=78, after=133)")

    monkeypatch.setattr(_pytest._code.code, "getstatementrange_ast", racing)
    assert 6 * 7 == 41
"""


def test_a_failure_is_reported_when_formatting_hits_the_ast_race(
    pytester: pytest.Pytester,
) -> None:
    """The CPython 3.11.0-3.11.7 race (see conftest.py) surfaces as a SystemError from pytest's
    source parse; the failure is still reported, with a native traceback."""
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text())
    pytester.makepyfile(test_racing=RACING_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    out = result.stdout.str()
    assert "INTERNALERROR" not in out
    assert "PluggyTeardownRaisedWarning" not in out
    result.assert_outcomes(failed=1)
    assert "assert 6 * 7 == 41" in out


SEES_THE_LOAD = """
import os, sys
pids = [int(p) for p in os.environ["WITH_CPU_LOAD_PIDS"].split()]
for pid in pids:
    os.kill(pid, 0)  # running beside this command
sys.exit(3 if len(pids) == 2 else 1)
"""


def test_cpu_load_runs_beside_the_command_and_stops_with_it() -> None:
    """tools/with_cpu_load.py (make test-loaded): two busy processes while the command runs,
    its exit status passed on, none left once it returns."""
    tool = [sys.executable, str(ROOT / "tools" / "with_cpu_load.py"), "--procs", "2", "--"]
    out = subprocess.run(
        [*tool, sys.executable, "-c", SEES_THE_LOAD],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 3, out.stderr
    pids = [int(p) for p in out.stderr.split("(pids ")[1].split(")")[0].split()]
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
