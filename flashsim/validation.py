"""Published reference measurements and the comparison that checks them.

Every ``*.toml`` file under ``validation/`` holds ``[[record]]`` tables.  A
record names the source (seed file and table/figure), the quantity, its
published value and unit, a relative tolerance, its role (``calibration`` when
a model parameter was fitted to it, ``prediction`` otherwise) and where the
simulated value comes from:

* ``scenario`` + ``phase`` + ``field`` (``bandwidth_GBps``, ``iops``,
  ``extra.<name>``...): run the scenario (once per distinct scenario and
  overrides) and read that field of that phase, times ``scale``;
* ``model`` + ``derived``: read ``describe(model).derived[derived]``.

``comparison`` is ``within`` (``|sim/pub - 1| <= tolerance``), ``at_least``
(``sim >= pub * (1 - tolerance)``) or ``at_most`` (``sim <= pub * (1 + tolerance)``).

A record is a :class:`~flashsim.measurements.record.Measurement` (tool
``published``, :func:`record_measurement`) judged by
:func:`flashsim.measurements.outcome.outcome_of` and printed by
:func:`flashsim.measurements.outcome.format_table`, the code ``flashsim check``
uses for a site's own measurements, so the two commands cannot drift apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from flashsim.config import ConfigError, StrictModel, load_toml, validate
from flashsim.measure.results import RunResult
from flashsim.measurements.outcome import Outcome, compare, format_table, outcome_of
from flashsim.measurements.record import Conditions, Measurement, Role
from flashsim.progress import current
from flashsim.scenario import load_scenario, load_system_model, run_loaded

__all__ = [
    "PUBLISHED",
    "RecordFile",
    "RecordResult",
    "RecordSpec",
    "Role",
    "compare",
    "format_table",
    "load_records",
    "record_measurement",
    "run_records",
]


class RecordSpec(StrictModel):
    """One published number and how to reproduce it."""

    id: str
    source: str
    quantity: str
    unit: str
    published: float
    tolerance: Annotated[float, Field(ge=0.0)]
    role: Role
    comparison: Literal["within", "at_least", "at_most"] = "within"
    scenario: str | None = None
    set: dict[str, str] = Field(default_factory=dict)
    phase: str | None = None
    field: str | None = None
    scale: float = 1.0
    model: str | None = None
    derived: str | None = None
    note: str = ""

    @model_validator(mode="after")
    def _one_source(self) -> RecordSpec:
        by_run = self.scenario is not None and self.phase is not None and self.field is not None
        by_model = self.model is not None and self.derived is not None
        if by_run == by_model:
            raise ValueError("give either scenario + phase + field, or model + derived (not both)")
        if self.published == 0 and self.comparison == "within":
            raise ValueError("published must be non-zero for a relative comparison")
        return self


class RecordFile(StrictModel):
    """A validation file: a list of records."""

    record: Annotated[list[RecordSpec], Field(min_length=1)]


#: The outcome of one record (the ``flashsim validate --json`` element): the same
#: :class:`~flashsim.measurements.outcome.Outcome` ``flashsim check`` gives.
RecordResult = Outcome

#: The tool of a published record (:attr:`Conditions.tool`).
PUBLISHED = "published"


def record_measurement(rec: RecordSpec) -> Measurement:
    """A validation record as a :class:`~flashsim.measurements.record.Measurement`.

    The published value is the measured one, the publication its source; the
    record's tolerance, comparison, role and note go with it.
    """
    return Measurement(
        id=rec.id,
        quantity=rec.quantity,
        value=rec.published,
        unit=rec.unit,
        conditions=Conditions(tool=PUBLISHED),
        source=rec.source,
        tolerance=rec.tolerance,
        comparison=rec.comparison,
        role=rec.role,
        note=rec.note,
    )


def _field_of(run: RunResult, phase_name: str, field: str, where: str) -> float:
    try:
        node = run.field(phase_name, field)
    except KeyError as exc:
        if exc.args[0] == "field":
            raise ConfigError(
                where, "field", field, f"phase {phase_name!r} has no such field"
            ) from None
        names = ", ".join(p.name for p in run.phases)
        raise ConfigError(where, "phase", phase_name, f"expected one of: {names}") from None
    return math.nan if node is None else float(node)


def load_records(directory: str | Path) -> list[tuple[Path, RecordSpec]]:
    """All records of all ``*.toml`` files under ``directory``, sorted by file."""
    out: list[tuple[Path, RecordSpec]] = []
    for path in sorted(Path(directory).rglob("*.toml")):
        spec = validate(RecordFile, load_toml(path), path)
        out.extend((path, record) for record in spec.record)
    ids = [r.id for _, r in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ConfigError(str(directory), "record.id", dup[0], "record ids must be unique")
    return out


def run_records(
    records: Iterable[tuple[Path, RecordSpec]],
    on_record: Callable[[RecordResult], None] | None = None,
) -> list[RecordResult]:
    """Evaluate records, running each distinct scenario (with its overrides) once.

    ``on_record`` is called with each result as it is known (``flashsim validate``
    counts records on its progress line); a record's run shows on the active
    progress (:func:`flashsim.progress.current`) under the record's id.
    """
    runs: dict[tuple[Path, tuple[tuple[str, str], ...]], RunResult] = {}
    results: list[RecordResult] = []
    shown = current()  # the command's progress line (flashsim.progress), if any
    for path, rec in records:
        where = f"{path} (record {rec.id})"
        if rec.scenario is not None:
            scenario_path = (path.parent / rec.scenario).resolve()
            key = (scenario_path, tuple(sorted(rec.set.items())))
            if key not in runs:
                with shown.task(rec.id):
                    runs[key] = run_loaded(load_scenario(scenario_path, rec.set))
            assert rec.phase is not None and rec.field is not None
            value = _field_of(runs[key], rec.phase, rec.field, where) * rec.scale
        else:
            assert rec.model is not None and rec.derived is not None
            loaded = load_system_model((path.parent / rec.model).resolve())
            derived = loaded.kind.describe(loaded.model).derived
            if rec.derived not in derived:
                raise ConfigError(
                    where, "derived", rec.derived, f"expected one of: {', '.join(sorted(derived))}"
                )
            value = derived[rec.derived] * rec.scale
        result = outcome_of(record_measurement(rec), value, rec.tolerance)
        results.append(result)
        if on_record is not None:
            on_record(result)
    return results
