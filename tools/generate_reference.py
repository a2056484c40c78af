"""Write ``docs/reference.md``: every key of every model, drive, scenario and phase file.

The reference is generated from the live pydantic schemas, never written by
hand: system kinds come from :data:`flashsim.systems.SYSTEM_KINDS` (each
kind's ``model_type`` and ``phase_type``), drive files from
:data:`flashsim.components.drive.DriveSpec`, scenario headers from
:class:`flashsim.scenario.ScenarioFile`.  For every key it gives the dotted
path, the meaning (the field's ``description``, else its entry in the
``Attributes`` section of the class docstring or of a base class), the unit
(from the quantity validator of :mod:`flashsim.config`), the default and the
allowed values (literals and bounds).  The output is deterministic.

Usage::

    python tools/generate_reference.py           # rewrite docs/reference.md
    python tools/generate_reference.py --check   # exit 1 when it is stale
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from flashsim import config
from flashsim.components.drive import DriveSpec
from flashsim.measurements.readers import Sidecar
from flashsim.scenario import ScenarioFile
from flashsim.systems import SYSTEM_KINDS, system_kind
from flashsim.timeline.events import EventSpec
from flashsim.timeline.timing import PhaseTiming
from flashsim.units import Dimension, format_quantity

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "reference.md"

#: What a quantity of each dimension means in a file, with examples of how to write it.
UNITS: dict[str, str] = {
    "bytes": 'size, e.g. `"64 MiB"`, `"15.36 TB"`',
    "bandwidth": 'bandwidth, e.g. `"200 Gb/s"`, `"3.2 GB/s"`',
    "time": 'time, e.g. `"80 us"`, `"45 s"`',
    "rate": 'operation rate, e.g. `"1.4 MIOPS"`, `"240 IOPS"`',
    "fraction": 'fraction, e.g. `0.9` or `"90 %"`',
    "count": "whole number",
    "number": "number",
}

#: How a zero of each dimension is written.
ZERO: dict[str, str] = {"bytes": "0 B", "bandwidth": "0 B/s", "time": "0 s", "rate": "0 IOPS"}

#: Unit of a plain (unvalidated) Python type.
PLAIN_UNITS: dict[type, str] = {
    bool: "boolean (`true` / `false`)",
    int: "whole number",
    float: "number",
    str: "text",
}

#: Bounds of ``annotated_types`` metadata: attribute -> how it reads.
BOUNDS: tuple[tuple[str, str], ...] = (
    ("gt", "> {}"),
    ("ge", ">= {}"),
    ("lt", "< {}"),
    ("le", "<= {}"),
    ("min_length", "at least {} item(s)"),
    ("max_length", "at most {} item(s)"),
    ("multiple_of", "a multiple of {}"),
)


# ------------------------------------------------------------------ rows
@dataclass(frozen=True)
class Row:
    """One key of a file.

    Attributes
    ----------
    key : str
        Dotted path of the key in its file (``[]`` marks one list element).
    meaning : str
        What the key means ("" when no description was found).
    unit : str
        The quantity the value takes.
    default : str
        Default value as a file would write it, or ``required``.
    allowed : str
        Allowed values (literals, bounds), "" for any value of the unit.
    """

    key: str
    meaning: str
    unit: str
    default: str
    allowed: str


@dataclass(frozen=True)
class TypeInfo:
    """What a field's annotation tells a user.

    Attributes
    ----------
    unit : str
        The quantity the value takes.
    allowed : list of str
        Allowed values and bounds.
    dimension : str or None
        The :mod:`flashsim.units` dimension of a quantity field.
    models : list of type
        Pydantic models the value may be (a nested table).
    is_list : bool
        Whether the value is a list (of ``models`` when there are any).
    """

    unit: str
    allowed: list[str]
    dimension: str | None
    models: list[type[BaseModel]]
    is_list: bool = False


def _closure(func: Callable[..., Any]) -> dict[str, Any]:
    """Free variables of a closure (e.g. the dimension a quantity validator checks)."""
    code = getattr(func, "__code__", None)
    cells = getattr(func, "__closure__", None) or ()
    if code is None:
        return {}
    values: dict[str, Any] = {}
    for name, cell in zip(code.co_freevars, cells, strict=False):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return values


def _validator_info(func: Callable[..., Any]) -> tuple[str | None, list[str]]:
    """Dimension and bounds a :mod:`flashsim.config` validator enforces."""
    name = getattr(func, "__name__", "")
    if name == "_unit_fraction":
        return "fraction", ["0 to 1"]
    found = _closure(func)
    dimension = found.get("dimension")
    if not isinstance(dimension, str):
        return None, []
    bounds: list[str] = []
    minimum = found.get("minimum")
    exclusive = found.get("exclusive", True)
    if isinstance(minimum, (int, float)) and not isinstance(minimum, bool):
        bounds.append(f"{'>' if exclusive else '>='} {minimum:g}")
    span = getattr(config, "PHYSICAL_RANGE", {}).get(dimension)
    if isinstance(span, tuple) and len(span) == 3:  # magnitudes no storage system leaves
        low, high, unit = span
        within = f"{low:g} {unit} to {high:g} {unit}"
        if minimum == 0 and exclusive:
            bounds = [within]
        elif minimum == 0:
            bounds = [f"0, or {within}"]
        else:
            bounds.append(f"0 or a magnitude of {within}")
    maximum = found.get("maximum")
    if isinstance(maximum, (int, float)) and not isinstance(maximum, bool):
        bounds.append(f"<= {format_quantity(float(maximum), _dim(dimension))}")
    return dimension, bounds


def _dim(name: str) -> Dimension:
    dimension: Dimension = name  # type: ignore[assignment]
    return dimension


def _metadata_info(metadata: list[Any]) -> tuple[str | None, list[str]]:
    """Dimension and bounds from a field's metadata (validators, ``annotated_types``)."""
    dimension: str | None = None
    allowed: list[str] = []
    for item in metadata:
        func = getattr(item, "func", None)
        if callable(func):
            found, bounds = _validator_info(func)
            dimension = dimension or found
            allowed += bounds
        for attr, text in BOUNDS:
            value = getattr(item, attr, None)
            if value is not None and not callable(value):
                shown = f"{value:g}" if isinstance(value, float) else value
                allowed.append(text.format(shown))
        inner = getattr(item, "metadata", None)
        if isinstance(inner, list) and isinstance(item, FieldInfo):
            found, bounds = _metadata_info(inner)
            dimension = dimension or found
            allowed += bounds
    return dimension, allowed


def _literal(value: Any) -> str:
    return f'`"{value}"`' if isinstance(value, str) else f"`{value}`"


def type_info(annotation: Any, metadata: list[Any]) -> TypeInfo:
    """Describe an annotation (with its pydantic metadata) for a reader of the files."""
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *extra = get_args(annotation)
        return type_info(base, [*extra, *metadata])
    dimension, allowed = _metadata_info(metadata)
    if origin is Literal:
        return TypeInfo("choice", [_literal(v) for v in get_args(annotation)], None, [])
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        infos = [type_info(m, []) for m in members]
        models = [m for info in infos for m in info.models]
        if len(members) == 1:
            inner = type_info(members[0], metadata)
            return TypeInfo(inner.unit, inner.allowed, inner.dimension, models, inner.is_list)
        unit = " or ".join(dict.fromkeys(info.unit for info in infos))
        merged = [a for info in infos for a in info.allowed]
        return TypeInfo(unit, [*merged, *allowed], dimension, models)
    if origin is list:
        (item,) = get_args(annotation) or (Any,)
        inner = type_info(item, [])
        unit = "list of tables" if inner.models else f"list, each a {inner.unit}"
        bounds = [f"each {a}" for a in inner.allowed]
        return TypeInfo(unit, [*allowed, *bounds], inner.dimension, inner.models, True)
    if origin is dict:
        return TypeInfo("table", allowed, None, [])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return TypeInfo("table", allowed, None, [annotation])
    if dimension is not None:
        return TypeInfo(UNITS.get(dimension, dimension), allowed, dimension, [])
    if isinstance(annotation, type) and annotation in PLAIN_UNITS:
        return TypeInfo(PLAIN_UNITS[annotation], allowed, None, [])
    return TypeInfo(str(annotation), allowed, None, [])


# ------------------------------------------------------------- meanings
_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


def _markdown(text: str) -> str:
    """rST inline markup of a docstring as Markdown on one line."""
    text = _ROLE.sub(lambda m: f"`{m.group(1).rsplit('.', 1)[-1]}`", text)
    text = text.replace("``", "`")
    text = " ".join(text.split()).replace("`None`", "unset")
    return text.replace("|", "\\|")


def docstring_attributes(cls: type) -> dict[str, str]:
    """Field name -> text of the ``Attributes`` section of ``cls``'s numpydoc docstring."""
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
    lines = doc.splitlines()
    found: dict[str, str] = {}
    shared: dict[tuple[str, ...], bool] = {}
    inside = False
    names: list[str] = []
    for i, line in enumerate(lines):
        underline = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}
        if underline and line.strip() and not line.startswith(" "):
            inside = line.strip() == "Attributes"
            names = []
            continue
        if not inside or set(line.strip()) == {"-"}:
            continue
        if line and not line.startswith(" "):
            names = [n.strip() for n in line.split(":", 1)[0].split(",") if n.strip()]
            for name in names:
                found.setdefault(name, "")
        elif line.strip():
            for name in names:
                found[name] = f"{found[name]} {line.strip()}".strip()
        if len(names) > 1 and line and not line.startswith(" "):
            shared[tuple(names)] = True
    for group in shared:  # one entry for several keys: say which part is whose
        listed = " / ".join(f"`{n}`" for n in group)
        for name in group:
            if found[name]:
                found[name] += f" (entry shared by {listed})"
    return found


def meaning(model: type[BaseModel], name: str, field: FieldInfo) -> str:
    """What a field means: its description, else the docstring of its class or a base."""
    if field.description:
        return _markdown(field.description)
    for cls in model.__mro__:
        if isinstance(cls, type) and issubclass(cls, BaseModel):
            text = docstring_attributes(cls).get(name, "")
            if text:
                return _markdown(text)
    args = get_args(field.annotation)
    if get_origin(field.annotation) is Literal and len(args) == 1:
        return f"Must be `{args[0]}`: selects this schema."
    info = type_info(field.annotation, [])
    if len(info.models) == 1:  # a nested table: what the table describes
        summary = _summary(info.models[0])
        if info.is_list and summary[1:2].islower():
            summary = summary[:1].lower() + summary[1:]
        return f"A list of tables, each: {summary}" if info.is_list else summary
    return ""


# -------------------------------------------------------------- defaults
def _value(value: Any, dimension: str | None) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, BaseModel):
        return "(table with its defaults)"
    if isinstance(value, (list, tuple)):
        return "`[" + ", ".join(_value(v, dimension).strip("`") for v in value) + "]`"
    if isinstance(value, float) and dimension in ZERO:
        shown = format_quantity(value, _dim(dimension)) if value else ZERO[dimension]
        return f'`"{shown}"`'
    if isinstance(value, float):
        return f"`{value:g}`"
    return f"`{value}`"


def default(field: FieldInfo, dimension: str | None) -> str:
    """The default of a field as a file would write it, or ``required``."""
    if field.default_factory is not None:
        factory: Callable[[], Any] = field.default_factory  # type: ignore[assignment]
        return _value(factory(), dimension)
    if field.default is PydanticUndefined:
        return "required"
    return _value(field.default, dimension)


# ------------------------------------------------------------------ walk
def _is_drive(models: list[type[BaseModel]]) -> bool:
    drive_models = set(_union_models(DriveSpec))
    return len(models) > 1 and set(models) == drive_models


def _union_models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _union_models(arg)]


def rows(model: type[BaseModel], prefix: str = "", seen: tuple[type, ...] = ()) -> Iterator[Row]:
    """Every key of ``model`` (nested tables expanded), in field order."""
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        info = type_info(field.annotation, list(field.metadata))
        unit, allowed = info.unit, info.allowed
        nested: list[type[BaseModel]] = []
        if _is_drive(info.models):
            unit = "path of a drive file (relative to this file), or an inline drive table"
            allowed = ["see [Drive files](#drive-files)"]
        elif model is ScenarioFile and name == "phases":
            unit = "list of tables (`[[phases]]`)"
            allowed = [*allowed, "see [Phases](#phases) of the model's kind"]
        elif model is ScenarioFile and name == "events":
            unit = "list of tables (`[[events]]`)"
            allowed = ["see [Timeline](#timeline) for each action's keys"]
            nested = [_EventKeys]
        elif len(info.models) == 1 and info.models[0] not in seen:
            nested = info.models
        elif len(info.models) > 1:
            # A tagged union (e.g. `fabric`, chosen by `topology`): every member's keys.
            nested = [m for m in info.models if m not in seen]
        yield Row(
            key=key,
            meaning=meaning(model, name, field),
            unit=unit,
            default=default(field, info.dimension),
            allowed=", ".join(dict.fromkeys(allowed)),
        )
        for sub in nested:
            inner = f"{key}[]." if info.is_list else f"{key}."
            yield from rows(sub, inner, (*seen, model))


class _EventKeys(BaseModel):
    """Every key of an event of any action, listed once (the scenario file's table)."""


def _event_keys() -> None:
    """Fill :class:`_EventKeys` with the first definition of each event key over the actions."""
    from pydantic import Field
    from pydantic.fields import FieldInfo

    fields: dict[str, Any] = {}
    members = _union_models(EventSpec)
    for member in members:
        for key, info in member.model_fields.items():
            fields.setdefault(key, info)
    actions = tuple(_tag(m, "action") for m in members)
    fields["action"] = FieldInfo.from_annotated_attribute(
        Literal[actions],  # type: ignore[valid-type]
        Field(description="What the event does; it selects the event's other keys."),
    )
    _EventKeys.model_fields.update(fields)


def _members(phase_type: Any) -> list[type[BaseModel]]:
    """The phase schemas of a kind (a model, or the members of a discriminated union)."""
    return _union_models(phase_type)


def _tag(model: type[BaseModel], field: str) -> str:
    args = get_args(model.model_fields[field].annotation) if field in model.model_fields else ()
    return str(args[0]) if args else model.__name__


_event_keys()


def _anchor(text: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def _cell(text: str) -> str:
    return text.replace("|", "\\|") if text else ""


def table(model: type[BaseModel], prefix: str = "") -> list[str]:
    """A Markdown table of every key of ``model``."""
    out = [
        "| key | meaning | unit | default | allowed |",
        "|---|---|---|---|---|",
    ]
    for row in rows(model, prefix):
        cells = [f"`{row.key}`", _cell(row.meaning), row.unit, row.default, row.allowed]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _summary(model: type[BaseModel]) -> str:
    doc = inspect.cleandoc(model.__dict__.get("__doc__") or "")
    return _markdown(doc.split("\n\n", 1)[0]) if doc else ""


@dataclass(frozen=True)
class Section:
    """A heading, its introduction and the schema whose keys it lists."""

    title: str
    intro: str
    model: type[BaseModel]
    prefix: str = ""


def sections() -> list[tuple[str, str, list[Section]]]:
    """(group title, group introduction, sections), discovered from the registries."""
    systems: list[Section] = []
    phases: list[Section] = []
    for kind_name in SYSTEM_KINDS:
        kind = system_kind(kind_name)
        systems.append(
            Section(
                f'System model: kind = "{kind_name}"', _summary(kind.model_type), kind.model_type
            )
        )
        for phase in _members(kind.phase_type):
            title = f'Phase on "{kind_name}": workload = "{_tag(phase, "workload")}"'
            phases.append(Section(title, _summary(phase), phase, "phases[]."))
    drives = [
        Section(f'Drive file: kind = "{_tag(m, "kind")}"', _summary(m), m)
        for m in _union_models(DriveSpec)
    ]
    scenario = [Section("Scenario file", _summary(ScenarioFile), ScenarioFile)]
    timeline = [Section("Phase timing keys", TIMING_INTRO, PhaseTiming, "phases[].")]
    timeline += [
        Section(f'Event: action = "{_tag(m, "action")}"', _summary(m), m, "events[].")
        for m in _union_models(EventSpec)
    ]
    return [
        (
            "System models",
            "A model file (`models/systems/*.toml`) describes hardware; its `kind` picks the "
            "schema. On the command line, prefix a model key with `system.` "
            "(`--set system.oss.count=4`): `run`, `sweep`, `replay` and `describe` all take "
            "this spelling (`describe`, which reads only a model, also takes the key without "
            "the prefix; `run` refuses a model key without it and names the right spelling). "
            "A scenario's `system_set` table takes the same keys without the prefix and TOML "
            'values, arrays of tables included (`"fabric.background" = [{ name = "a", ... }]`).',
            systems,
        ),
        (
            "Drive files",
            "A drive file (`models/drives/*.toml`) is one datasheet; a model file names it by "
            "path (relative to the model file) or gives the same keys as an inline table.",
            drives,
        ),
        (
            "Scenario files",
            "A scenario file (`scenarios/**/*.toml`) names a model file, a seed, a fidelity and "
            "a list of phases.",
            scenario,
        ),
        ("Timeline", TIMELINE_INTRO, timeline),
        (
            "Measurement sidecar files",
            "`flashsim check` and `flashsim calibrate` read benchmark tools' outputs (fio, IOR, "
            "IO-500, obdfilter-survey, `lst stat`, Darshan). What an output does not record "
            "goes in a sidecar file beside it, `<output>.conditions.toml` (for `ost12.txt`: "
            "`ost12.txt.conditions.toml`); it applies to every measurement of that output. "
            "How a site uses them in CI: [ci.md](ci.md).",
            [Section("Sidecar file", _summary(Sidecar), Sidecar)],
        ),
        (
            "Phases",
            "Each `[[phases]]` table of a scenario is validated by the phase schemas of the "
            "model's kind, chosen by its `workload`. On the command line a phase is addressed "
            "by index or by name (`--set phases.write.nodes=4`).",
            phases,
        ),
    ]


TIMELINE_INTRO = """\
A scenario is a timeline: its phases and events share one simulated clock and one system, whose
state (drive wear, failed drives and rebuilds, TRIM, SCM fill, fabric background, capacities)
carries over for the whole run unless a `reset` gives fresh targets.

**Phases.** With no timing key a phase starts when the previous phase in file order ends, so a
scenario without timing keys runs its phases one after the other, as before. `start` starts a
phase at a time on the run's clock, `after` at the end of a named phase; phases whose times
overlap run *together*: each runs in its own greenlet and `Simulation.run` hands the clock to a
scheduler, so they share every component (a bottleneck shared by two phases slows both). With
`repeat` a phase runs every `every` (a run that lasts longer than `every` delays the next; a
phase never overlaps itself) until the clock reaches `until`, or `count` times; each run is a
result named `<name>@<start>` (`probe@7d`, `probe@30s`), the way a weekly checkpoint probes the
state of that day. `reset = true` gives every target fresh state just before the phase (each
run). Each phase's result records `start_s` and `start_state`, the system's target state when
it started (mean and worst write amplification, degraded and rebuilding targets, failed drives,
SCM fill). The run ends when every phase has ended; an event due later never fires (a warning
says so). What limited a phase (bottlenecks, the intervals table) is measured over the phase's
own interval; with phases overlapping it sees the whole system's load then, theirs included.
IOR phases place their ranks from client node `first_node` (default 0) on: two at once give each
its own nodes with it, or they share those nodes (and their NICs).

**Events.** Each `[[events]]` table has a time and an `action` (tables below): `at = "10 s"` on
the run's clock, or `relative_to = "<phase or event name>"` with `edge` (`start` of a phase's
first run, `end` of its last) and `offset`. Events due when a phase starts fire before it starts
(one `relative_to` its start, after its `reset`); an event at a phase's end (offset 0) fires
before the phases waiting for that end start. In flow
fidelity a flow's path is fixed when it starts, so a change of state applies to flows started
after it, while the traffic it causes (a rebuild, a TRIM) loads the drives at once. Events act
through the targets' common interface (`fail-drive`, `replace-drive`, `trim`, `trim-policy`,
`reset`: any kind whose targets keep state), the fabric (`background-start`/`-stop`, a Lustre
system's fabric) and the flow network (`set-capacity`, resources built by then: a component is
built when a phase first uses it). `fail-server` hands a Lustre OSS's targets to its
high-availability partner (OSSes 2k and 2k+1 share the dual-ported drives; the pairing is
ASSUMED), whose NIC ports and CPU then carry both, until `restore-server`. Target and server
indices and background jobs are checked before the run; drive indices and resource globs when
the event fires.

**Fast-forward and probes.** A `production` phase (any kind whose targets keep state) advances
days to years without simulating transfers: each day the clock runs to the day's end (rebuilds,
TRIMs, events and overlapping phases run on it), then every target absorbs its share of
`daily_volume` through its drives' fluid FTL model (`age`), TRIMs start per `trim_every`, and
drives fail at times drawn from `afr` (each drive's own seeded stream), their rebuilds running as
flows. Detailed phases measure only the windows they cover: a phase with `repeat` overlapping the
fast-forward is a probe, run in full fidelity on the state of that day. The fast-forward and a
detailed run of the same bytes reach the same write amplification within 2 %
(`tests/test_production.py`).

Examples: `scenarios/examples/timeline-overlap.toml` (overlapping phases, a repeated probe),
`scenarios/examples/timeline-events.toml` (a NIC throttled mid-phase, background traffic started
and stopped, a reset), each well under a second of work, and
`scenarios/examples/timeline-fast-forward.toml` (120 days of production on one OST, a probe
every 10 days, a drive failure and a TRIM; about a second):

```toml
[[phases]]
name = "checkpoint"
start = "30 s"
repeat = { every = "20 s", until = "90 s" }
workload = "ior"
# ... the phase's own keys

[[events]]
name = "throttle"
at = "3 s"
action = "set-capacity"
resource = "perlmutter.oss0.nic*"
factor = 0.5

[[events]]
relative_to = "throttle"
offset = "3 s"
action = "set-capacity"
resource = "perlmutter.oss0.nic*"
factor = 2.0
```"""

TIMING_INTRO = (
    "Keys every `[[phases]]` table accepts, whatever its workload; they are taken off the table "
    "before the workload's schema reads it."
)


HEADER = """\
# flashsim file reference

<!-- Generated by tools/generate_reference.py from the pydantic schemas; do not edit by hand.
     Regenerate with `make reference`. -->

Every key of every model, drive, scenario and phase file, generated from the schemas the files
are validated against. Columns: the **key** as a dotted path (`a.b` is key `b` of table `a`;
`[]` is one element of a list of tables, addressed on the command line by index or by its
`name`), its **meaning**, its **unit** (values with a unit are strings such as `"200 Gb/s"`;
1 GB = 10^9 B, 1 GiB = 2^30 B, 8 Gb = 1 GB), its **default** (`required` when it has none;
`unset` when omitting it leaves it empty) and the **allowed** values (choices and bounds; cross-key
checks, e.g. `block_size` a multiple of `transfer_size`, are reported when a file is loaded).
Unknown keys are errors. Any key can be overridden with `--set KEY=VALUE`.

How calibrated parameters carry over to other hardware: [calibration.md](calibration.md).
"""


def generate() -> str:
    """The full text of ``docs/reference.md``."""
    groups = sections()
    out = [HEADER.rstrip("\n"), "", "## Contents", ""]
    for title, _intro, items in groups:
        out.append(f"- [{title}](#{_anchor(title)})")
        out += [f"  - [{s.title}](#{_anchor(s.title)})" for s in items]
    for title, intro, items in groups:
        out += ["", f"## {title}", "", intro]
        for section in items:
            out += ["", f"### {section.title}", ""]
            if section.intro:
                out += [section.intro, ""]
            out += table(section.model, section.prefix)
    return "\n".join(out) + "\n"


def undocumented() -> list[str]:
    """Keys (``Section title: key``) that have no meaning in any schema."""
    return [
        f"{section.title}: {row.key}"
        for _title, _intro, items in sections()
        for section in items
        for row in rows(section.model, section.prefix)
        if not row.meaning
    ]


def main(argv: list[str]) -> int:
    """Write (or with ``--check``, compare) ``docs/reference.md``."""
    text = generate()
    if "--check" in argv:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run `make reference`", file=sys.stderr)
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text)
    missing = undocumented()
    for key in missing:
        print(f"warning: no description: {key}", file=sys.stderr)
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
