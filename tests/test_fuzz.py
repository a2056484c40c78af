"""Fuzzing the boundary (issue 11): random ``--set`` values and random schema inputs.

Whatever the value (negative, zero, huge, NaN, inf, strings, booleans, lists,
long digit strings) on whatever real key, ``flashsim`` exits 0, 2 (one
``error:`` line) or 4 (``--max-wall`` stopped a valid but long run), never
with a traceback, and within a time bound.  Schemas given random tables raise
only :class:`~flashsim.config.ConfigError`.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flashsim.cli import main
from flashsim.components.raid import RaidSpec
from flashsim.config import ConfigError, StrictModel, _accepts_bool, _models_in, validate
from flashsim.scenario import ScenarioFile
from flashsim.systems.lustre.kind import LnetSelftestPhase, ObdfilterPhase
from flashsim.systems.lustre.model import LustreModel
from flashsim.systems.pipeline.kind import PipelineModel, StageModel, StreamsPhase
from flashsim.workloads.ior import FileLayout, IorPhase

ROOT = Path(__file__).resolve().parent.parent

#: Wall-clock limit given to every fuzzed run, and the bound on one example's work in CPU
#: seconds of this process (a runaway parse or model build; CPU time, not wall time, so that
#: other processes on a busy machine do not count).
MAX_WALL_S = 1.0
EXAMPLE_BOUND_S = 20.0
SCHEMA_EXAMPLE_BOUND_S = 2.0


def dotted_keys(model: type[StrictModel], prefix: str) -> list[str]:
    """Every key of ``model`` and its nested tables, dotted, under ``prefix``."""
    keys: list[str] = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        keys.append(key)
        for nested in _models_in(field.annotation):
            if issubclass(nested, StrictModel):
                keys.extend(dotted_keys(nested, f"{key}."))
    return keys


#: (scenario, keys): real keys of the scenario's phases and of its model.
TARGETS: list[tuple[str, list[str]]] = [
    (
        "scenarios/examples/pipeline-streams.toml",
        dotted_keys(StreamsPhase, "phases.0.")
        + dotted_keys(StageModel, "system.stages.0.")
        + dotted_keys(ScenarioFile, ""),
    ),
    (
        "scenarios/perlmutter/obdfilter-survey.toml",
        dotted_keys(ObdfilterPhase, "phases.0.") + dotted_keys(LustreModel, "system."),
    ),
    (
        "scenarios/perlmutter/lnet-selftest.toml",
        dotted_keys(LnetSelftestPhase, "phases.0.") + dotted_keys(LustreModel, "system."),
    ),
    (
        "scenarios/perlmutter/ior-sweep.toml",
        dotted_keys(IorPhase, "phases.0.") + dotted_keys(IorPhase, "phases.read-iops."),
    ),
]

UNITS = ["B", "KiB", "MiB", "GB", "TB", "B/s", "GB/s", "Gb/s", "s", "us", "ms", "IOPS", "%", "m"]

#: ``--set`` values as a user could type them.
RAW_VALUES = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**6).map(str),
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(
        lambda x: (
            "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf") if math.isinf(x) else repr(x)
        )
    ),
    st.sampled_from(
        [
            *["0", "-1", "0.0", "-0.0", "true", "false", "[]", "[1, 2]", "[true]", "{}", '""'],
            *["nan", "inf", "-inf", "1e308", "1e-308", '"1e-300 B/s"', '"1e300 B"', '"0 s"'],
            *["10**10**10 B", "[[[[[[1]]]]]]", "{a = 1}", '"flow"', '"request"', '"x"'],
        ]
    ),
    st.builds(
        lambda number, unit: f"{number:g} {unit}",
        st.floats(min_value=-1e30, max_value=1e30, allow_nan=False),
        st.sampled_from(UNITS),
    ),
    st.integers(min_value=1, max_value=400).map(lambda n: "9" * n),
    st.sampled_from(["9" * 5000, "9" * 100_000, "1" + "0" * 4400 + " B"]),
    st.text(max_size=12),
)


@pytest.mark.parametrize("scenario,keys", TARGETS, ids=[Path(t[0]).stem for t in TARGETS])
def test_fuzz_set_values_never_crash(scenario: str, keys: list[str]) -> None:
    runner = CliRunner()

    @settings(
        max_examples=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(pairs=st.lists(st.tuples(st.sampled_from(keys), RAW_VALUES), min_size=1, max_size=2))
    def check(pairs: list[tuple[str, str]]) -> None:
        args = ["run", scenario, "--json", "--max-wall", str(MAX_WALL_S)]
        for key, value in pairs:
            args += ["--set", f"{key}={value}"]
        started = time.process_time()
        result = runner.invoke(main, args)
        elapsed = time.process_time() - started
        shown = [(k, v[:40]) for k, v in pairs]
        assert result.exit_code in (0, 2, 4), (shown, result.exit_code, result.output[-600:])
        assert "Traceback" not in result.output, shown
        if result.exit_code == 2:
            lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
            assert len(lines) == 1, (shown, result.stderr)
        assert elapsed < EXAMPLE_BOUND_S, (shown, elapsed)

    check()


#: Python values a TOML table could hold (plus a few it cannot).
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([10**400, -(10**4000)]),  # hypothesis cannot print over 4300 digits
    st.sampled_from(["10**10**10 B", "9" * 5000 + " B", "1e-300 B/s", "1e300 B"]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=10),
    st.builds(
        lambda number, unit: f"{number:g} {unit}",
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(UNITS),
    ),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)

SCHEMAS: list[type[StrictModel]] = [
    IorPhase,
    FileLayout,
    StreamsPhase,
    StageModel,
    PipelineModel,
    ObdfilterPhase,
    LnetSelftestPhase,
    RaidSpec,
    LustreModel,
    ScenarioFile,
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.__name__)
def test_fuzz_schemas_raise_only_config_errors(schema: type[StrictModel]) -> None:
    names = sorted(schema.model_fields)

    @settings(max_examples=150, deadline=None)
    @given(data=st.dictionaries(st.sampled_from(names), VALUES, max_size=len(names)))
    def check(data: dict[str, Any]) -> None:
        started = time.process_time()
        try:
            validate(schema, data, "fuzz.toml")
        except ConfigError as exc:
            text = str(exc)
            assert text.startswith("fuzz.toml") and "\n" not in text, text
        else:
            for name, value in data.items():  # lax pydantic would read true as 1
                if isinstance(value, bool):
                    assert _accepts_bool(schema.model_fields[name].annotation), (name, value)
        assert time.process_time() - started < SCHEMA_EXAMPLE_BOUND_S

    check()
