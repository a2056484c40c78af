"""Shared test fixtures, the Hypothesis profiles, and a guard on failure reports.

Hypothesis profiles
-------------------
Every test bounds its *work* (example counts, sizes of the generated scripts), never its wall
time, so that the suite passes on a loaded machine:

``dev`` (default)
    ``deadline=None`` (a deadline is a wall-time bound, and no property here is about time),
    the ``too_slow`` health check off (it times data generation on the wall clock), failing
    examples replayed from the local ``.hypothesis/`` database.
``ci`` (chosen when ``CI`` is set to a non-empty value, as in CI)
    The same, derandomized and database-less (as Hypothesis' built-in ``ci`` profile): a run
    explores the same examples every time, so a failure in CI reproduces on any machine with
    the same code.

``HYPOTHESIS_PROFILE=<name>`` picks a profile explicitly.  Each test states its own
``max_examples``; the profile's 100 applies only where one does not.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent

for _name, _ci in (("dev", False), ("ci", True)):
    settings.register_profile(
        _name,
        parent=settings.get_profile("default"),  # not Hypothesis' own "ci", loaded when CI is set
        deadline=None,
        max_examples=100,
        suppress_health_check=[HealthCheck.too_slow],
        print_blob=True,
        **({"derandomize": True, "database": None} if _ci else {}),
    )
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


@pytest.fixture
def root() -> Path:
    """The repository root."""
    return ROOT


# CPython 3.11.0-3.11.7 (this project's venv runs 3.11.7) keeps the AST constructor's recursion
# counter in interpreter-wide state (python/cpython#106905, fixed in 3.11.8).  An AST built while
# another is under construction -- from a GC callback (Hypothesis installs one for the whole
# process), a signal handler (pytest-timeout's signal method formats every thread's stack, and
# 3.11's traceback module parses source segments to place its carets) or another thread --
# corrupts the counter, and the outer ``ast.parse`` raises ``SystemError: AST constructor
# recursion depth mismatch``.  pytest's long and short tracebacks parse each entry's whole source
# file, the largest ASTs of a run, so that is where it surfaces: as an INTERNALERROR that hides
# the failure being reported.
_AST_RACE = "AST constructor recursion depth mismatch"


@pytest.hookimpl(wrapper=True, trylast=True)  # innermost: before other wrappers see it
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Report a failure whose traceback formatting hit the CPython AST race, with the
    traceback formatted without parsing whole source files (``--tb=native``, else ``line``)."""
    try:
        return (yield)
    except SystemError as exc:
        if _AST_RACE not in str(exc):
            raise
        option = item.config.option
        configured = option.tbstyle
        try:
            for style in ("native", "line"):
                option.tbstyle = style
                try:
                    return pytest.TestReport.from_item_and_call(item, call)
                except SystemError as again:
                    if _AST_RACE not in str(again):
                        raise
            raise
        finally:
            option.tbstyle = configured
