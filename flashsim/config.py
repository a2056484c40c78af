"""Model and scenario files: TOML in, validated typed objects with SI floats out.

Schemas are pydantic models whose quantity fields parse unit strings through
:mod:`flashsim.units`.  Every problem with a file becomes a :class:`ConfigError`
naming the file, the dotted key, the offending value and what was expected; the
CLI prints it on one line and exits with status 2.
"""

from __future__ import annotations

import copy
import re
import stat
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin, overload

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

# The error types live in flashsim.errors (no pydantic); this module re-exports them.
from flashsim.errors import MISSING as MISSING
from flashsim.errors import ConfigError as ConfigError
from flashsim.errors import ModelWarning as ModelWarning
from flashsim.errors import warn as warn
from flashsim.units import Dimension, UnitError, parse_quantity


# ---------------------------------------------------------------- quantity types
def _quantity_validator(
    dimension: Dimension, minimum: float | None, exclusive: bool
) -> Callable[[object], float]:
    def parse(value: object) -> float:
        try:
            result = parse_quantity(value, dimension)
        except UnitError as exc:
            raise ValueError(str(exc)) from None
        if minimum is not None:
            if exclusive and not result > minimum:
                raise ValueError(f"{value!r} must be > {minimum:g}")
            if not exclusive and not result >= minimum:
                raise ValueError(f"{value!r} must be >= {minimum:g}")
        span = PHYSICAL_RANGE.get(dimension)
        if span is not None and result != 0.0 and not span[0] <= abs(result) <= span[1]:
            low, high, unit = span
            raise ValueError(
                f"{value!r} is outside the physical range {low:g} {unit} .. {high:g} {unit} "
                "this simulator accepts (a typo or a missing unit prefix?)"
            )
        return float(result)

    return parse


#: Magnitudes (SI units) a nonzero quantity must lie within: beyond them no storage
#: system exists and float arithmetic in the models loses all precision (1e-300 B/s
#: would stall the event loop, 1e300 B overflows rates to zero).
PHYSICAL_RANGE: dict[str, tuple[float, float, str]] = {
    "bytes": (1.0, 1e21, "B"),  # 1 B .. 1 ZB
    "bandwidth": (1.0, 1e16, "B/s"),  # 1 B/s .. 10 PB/s
    "time": (1e-12, 1e9, "s"),  # 1 ps .. ~32 years
    "rate": (1e-3, 1e13, "IOPS"),
}


def quantity(dimension: Dimension, minimum: float | None = 0.0, exclusive: bool = True) -> Any:
    """An annotated float field that accepts a unit string of ``dimension``.

    Parameters
    ----------
    dimension : str
        See :func:`flashsim.units.parse_quantity`.
    minimum : float or None
        Lower bound in SI units; ``None`` for none.
    exclusive : bool
        Whether the bound is strict.
    """
    return Annotated[float, BeforeValidator(_quantity_validator(dimension, minimum, exclusive))]


Bytes = quantity("bytes")
NonNegativeBytes = quantity("bytes", 0.0, exclusive=False)
Bandwidth = quantity("bandwidth")
NonNegativeBandwidth = quantity("bandwidth", 0.0, exclusive=False)
Seconds = quantity("time")
NonNegativeSeconds = quantity("time", 0.0, exclusive=False)
OpRate = quantity("rate")
Fraction = Annotated[float, BeforeValidator(_quantity_validator("fraction", 0.0, False))]


def _unit_fraction(value: object) -> float:
    result = _quantity_validator("fraction", 0.0, False)(value)
    if result > 1.0:
        raise ValueError(f"{value!r} must be a fraction between 0 and 1")
    return result


UnitFraction = Annotated[float, BeforeValidator(_unit_fraction)]


#: Largest integer a count may have: beyond 2**53 a float no longer holds every integer, and no
#: system has that many of anything (a 400-digit count would otherwise reach the models).
MAX_INT = 2**53


def _accepts_bool(annotation: Any) -> bool:
    """Whether a field's annotation admits a boolean (``bool``, ``Any`` or a union with one)."""
    if annotation is bool or annotation is Any:
        return True
    return any(_accepts_bool(arg) for arg in get_args(annotation))


def _check_number(value: Any, bools_ok: bool) -> None:
    """Refuse booleans where numbers are expected and integers no count can reach."""
    if isinstance(value, bool):
        if not bools_ok:
            raise ValueError(f"{value!r} is a boolean; expected a number (write 1 or 0 if meant)")
    elif isinstance(value, int) and abs(value) > MAX_INT:
        digits = int(value.bit_length() * 0.30103) + 1  # str() refuses over 4300 digits
        raise ValueError(f"an integer of ~{digits} digits; expected at most 2**53")
    elif isinstance(value, list):
        for item in value:
            _check_number(item, bools_ok)


def field_error(field: str, message: str) -> PydanticCustomError:
    """An error a model validator raises about one of its fields (its key names the field)."""
    return PydanticCustomError("field_error", "{message}", {"message": message, "field": field})


class StrictModel(BaseModel):
    """Base of every file schema: unknown keys are errors, values are checked once.

    Pydantic's lax mode would read ``nodes = true`` as 1; a boolean is refused
    wherever the field is not a boolean, and integers above :data:`MAX_INT`
    are refused everywhere.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _numbers_not_booleans(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for name, value in data.items():
                field = cls.model_fields.get(str(name))
                if field is not None:
                    try:
                        _check_number(value, _accepts_bool(field.annotation))
                    except ValueError as exc:
                        raise field_error(str(name), str(exc)) from None
        return data


M = TypeVar("M", bound=BaseModel)


# ------------------------------------------------------------------- loading
#: Largest model or scenario file read (bytes); real ones are a few kB.
MAX_FILE_B = 4 * 2**20
#: Longest run of digits read as a number: longer literals are refused before any
#: parser sees them (Python needs minutes for a 100,000-digit integer, and no
#: quantity needs more than a few dozen digits).
MAX_DIGITS = 100
_LONG_DIGITS = re.compile(rf"\d{{{MAX_DIGITS + 1},}}")


def long_literal(text: str) -> str | None:
    """Describe the first run of more than :data:`MAX_DIGITS` digits in ``text``, or ``None``."""
    match = _LONG_DIGITS.search(text)
    if match is None:
        return None
    line = text.count("\n", 0, match.start()) + 1
    where = f"line {line}: " if "\n" in text else ""
    return (
        f"{where}a number literal of {match.end() - match.start()} digits; "
        f"at most {MAX_DIGITS} digits are read"
    )


def _read_regular(p: Path) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_FILE_B`; special files are refused.

    ``/dev/zero``, FIFOs, sockets and directories would block or never end, so
    the file type is checked before the file is opened.
    """
    try:
        info = p.stat()
    except FileNotFoundError:
        raise ConfigError(str(p), "", MISSING, "file not found") from None
    except OSError as exc:
        raise ConfigError(str(p), "", MISSING, f"cannot read file ({exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise ConfigError(str(p), "", MISSING, "is a directory; expected a TOML file")
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(
            str(p), "", MISSING, "is a special file (device, FIFO or socket); expected a TOML file"
        )
    if info.st_size > MAX_FILE_B:
        raise ConfigError(
            str(p),
            "",
            MISSING,
            f"file of {info.st_size} bytes; model and scenario files are at most "
            f"{MAX_FILE_B // 2**20} MiB",
        )
    with p.open("rb") as handle:
        return handle.read(MAX_FILE_B + 1)


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file into a dict, turning every failure into a :class:`ConfigError`."""
    p = Path(path)
    try:
        text = _read_regular(p).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(p), "", MISSING, f"cannot read file ({exc})") from None
    too_long = long_literal(text)
    if too_long is not None:
        raise ConfigError(str(p), "", MISSING, too_long)
    try:
        return tomllib.loads(text)
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError is a ValueError
        raise ConfigError(str(p), "", MISSING, f"not valid TOML ({exc})") from None


def _tag_sharing_a_key(node: Mapping[Any, Any], item: int | str, following: int | str) -> bool:
    """Whether ``item`` is a union tag although ``node`` has a key of that name.

    It is when the location's next element names a key of ``node`` itself
    and not one inside ``node[item]``.
    """
    child = node[item]
    inside = (isinstance(child, Mapping) and following in child) or (
        isinstance(child, list) and isinstance(following, int)
    )
    return not inside and following in node


def _loc_to_key(loc: Iterable[int | str], data: Any, missing: bool = False) -> tuple[str, object]:
    """Dotted key and the raw value at a pydantic error location.

    Pydantic puts union tags (``ior``), union branch names (``str``,
    ``function-after[...]``) into locations; they are skipped, so the key
    names only tables, list indices and fields as the file writes them.
    """
    items = list(loc)
    parts: list[str] = []
    node: Any = data
    for position, item in enumerate(items):
        last = position == len(items) - 1
        in_table = isinstance(node, Mapping) and item in node
        in_list = isinstance(node, list) and isinstance(item, int) and 0 <= item < len(node)
        if in_table and not last and _tag_sharing_a_key(node, item, items[position + 1]):
            continue  # a union tag that is also a key of this table (workload "mix")
        if in_table or in_list:
            node = node[item]
        elif isinstance(item, str) and not (last and missing and isinstance(node, Mapping)):
            # A union tag or branch name, not a key of the file.
            continue
        else:
            node = MISSING  # a key the file lacks (the last element of a "missing" error)
        parts.append(str(item))
    return ".".join(parts), node


def _describe_error(
    err: Mapping[str, Any], model: type[BaseModel], data: Any, schema: Any = None
) -> ConfigError:
    kind = err["type"]
    loc = list(err["loc"])
    if kind == "field_error":  # raised for a whole table (see field_error): name the field
        loc.append(err.get("ctx", {}).get("field", ""))
    key, value = _loc_to_key(loc, data, missing=kind == "missing")
    if isinstance(value, Mapping):
        value = MISSING  # a whole table: the message names the fields involved
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, list(err["loc"])[:-1])
        hint = f"; expected one of: {', '.join(allowed)}" if allowed else ""
        return ConfigError("", key, value, f"unknown key{hint}")
    if kind == "missing":
        return ConfigError("", key, MISSING, "required key is missing")
    if kind in ("union_tag_not_found", "union_tag_invalid"):
        # A table whose type key (kind, workload) is missing or unknown: often the wrong file.
        tag = str(err.get("ctx", {}).get("discriminator", "")).strip("'")
        tags = err.get("ctx", {}).get("expected_tags") or ", ".join(
            repr(v)
            for m in _models_in(schema)
            if tag in m.model_fields
            for v in get_args(m.model_fields[tag].annotation)
        )
        where = f"{key}.{tag}" if key else tag
        if kind == "union_tag_not_found":
            expected = f"; expected {tag} = one of {tags}" if tags else ""
            return ConfigError(
                "", where, MISSING, f"required key is missing{expected} (is this the right file?)"
            )
        return ConfigError("", where, _loc_to_key([*loc, tag], data)[1], f"expected one of {tags}")
    message = str(err["msg"])
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        message = f"expected one of {expected}"
    return ConfigError("", key, value, message)


def _allowed_keys(model: type[BaseModel], loc: list[int | str]) -> list[str]:
    current: Any = model
    for item in loc:
        if isinstance(item, int):
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(item))
            if field is None:
                continue  # a union tag, not a field
            current = _model_in(field.annotation)
        else:
            return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return sorted(current.model_fields)
    return []


def _model_in(annotation: Any) -> Any:
    models = _models_in(annotation)
    return models[0] if models else None


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation names (a model, or the members of a union)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _model_for(schema: Any, data: Any) -> type[BaseModel]:
    """The model of ``schema`` that ``data`` is meant for.

    For a union, the member whose literal tag fields (``kind``, ``workload``,
    ``operation`` ...) match most of ``data``'s values; its keys are the ones
    an "unknown key" message lists.
    """
    models = _models_in(schema)
    if not models:
        return StrictModel

    def matches(model: type[BaseModel]) -> int:
        if not isinstance(data, Mapping):
            return 0
        return sum(
            1
            for name, field in model.model_fields.items()
            if get_origin(field.annotation) is Literal
            and name in data
            and data[name] in get_args(field.annotation)
        )

    return max(models, key=matches)  # the first of equals wins


@overload
def validate(
    schema: type[M],
    data: Any,
    path: str | Path,
    context: Mapping[str, Any] | None = None,
    key_prefix: str = "",
) -> M: ...


@overload
def validate(
    schema: Any,
    data: Any,
    path: str | Path,
    context: Mapping[str, Any] | None = None,
    key_prefix: str = "",
) -> Any: ...


def validate(
    schema: Any,
    data: Any,
    path: str | Path,
    context: Mapping[str, Any] | None = None,
    key_prefix: str = "",
) -> Any:
    """Validate ``data`` against ``schema``; raise one :class:`ConfigError` on failure.

    ``schema`` is a pydantic model or any type pydantic validates (e.g. a
    discriminated union of phases or drives).  The message names the first
    problem; further problems are counted.  ``context`` is passed to pydantic
    validators (e.g. ``{"model_dir": Path}`` so that a model file can name
    other files relative to itself); ``key_prefix`` is prepended to the key
    (``phases.3`` for one phase of a scenario).
    """
    adapter: TypeAdapter[Any] = TypeAdapter(schema)
    try:
        return adapter.validate_python(data, context=dict(context) if context else None)
    except ValidationError as exc:
        errors = exc.errors()
        first = _describe_error(errors[0], _model_for(schema, data), data, schema)
        first.path = str(path)
        if key_prefix:
            first.key = f"{key_prefix}.{first.key}" if first.key else key_prefix
        if len(errors) > 1:
            first.expected += f" (and {len(errors) - 1} more problem(s) in this file)"
        raise first from None


# ------------------------------------------------------------------ overrides
def parse_override(text: str) -> tuple[str, str]:
    """Split a ``key=value`` command-line override."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError("--set", text, MISSING, "expected key=value, e.g. system.oss.nic.ports=4")
    return key.strip(), value.strip()


#: The prefix of a model key on the command line (``--set system.oss.count=4``).
MODEL_PREFIX = "system."


def model_overrides(overrides: Mapping[str, str]) -> dict[str, str]:
    """``--set`` pairs for a model file alone (``flashsim describe``), as model keys.

    The spelling is the one every command takes, ``system.oss.count``; the
    prefix may be left out (``oss.count``) since only a model is read, and no
    model has a top-level key ``system`` that it could be confused with.
    """
    return {k.removeprefix(MODEL_PREFIX): v for k, v in overrides.items()}


def dotted_keys(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A TOML table as dotted key -> value pairs, nested tables flattened.

    ``{"fabric": {"background": [...]}}`` (TOML's ``fabric.background = [...]``)
    and ``{"fabric.background": [...]}`` (a quoted key) give the same pair, so a
    table in a scenario's ``system_set`` sets the keys it names and leaves the
    model's other keys as they are; arrays (of tables too) and plain values
    replace what the model has.
    """
    pairs: dict[str, Any] = {}
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            pairs.update(dotted_keys(value, f"{dotted}."))
        else:
            pairs[dotted] = value
    return pairs


def _toml_value(text: str) -> object:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (ValueError, RecursionError):  # TOMLDecodeError is a ValueError
        return text  # a bare unit string such as 200 Gb/s


def apply_overrides(data: dict[str, Any], overrides: Mapping[str, object], path: str) -> None:
    """Set dotted ``key -> value`` pairs in a loaded file, in place.

    String values (``--set`` text) are read as TOML literals (``8``, ``true``,
    ``"x"``, ``[{ name = "a" }]``) and otherwise kept as strings (``200 Gb/s``);
    other values (a scenario's ``system_set``: numbers, booleans, arrays,
    tables) are set as they are.  A list element is addressed by its index
    or by the value of its ``name`` key (``phases.write.ranks=8``).  A key
    inside a component named by a ``.toml`` path (``oss.drive.overprovisioning``)
    sets it in a copy of that file, read relative to ``path``; other
    components using the file keep it as it is.
    """
    for key, raw in overrides.items():
        if isinstance(raw, str):
            too_long = long_literal(raw)
            if too_long is not None:
                raise ConfigError(f"{path} (--set)", key, raw, too_long)
            value = _toml_value(raw)
        else:
            value = copy.deepcopy(raw)
        parts = key.split(".")
        node: Any = data
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            where = ".".join(parts[: depth + 1])
            if isinstance(node, list):
                index = _list_index(node, part)
                if index is None:
                    raise ConfigError(
                        f"{path} (--set)", where, raw, "no list element with that index or name"
                    )
                if last:
                    node[index] = value
                else:
                    node = node[index]
            elif isinstance(node, dict):
                if last:
                    node[part] = value
                else:
                    child = node.setdefault(part, {})
                    if isinstance(child, str) and child.endswith(".toml"):
                        # A component named by file (a drive): set keys in a copy of it.
                        child = node[part] = load_toml(Path(path).parent / child)
                    node = child
            else:
                raise ConfigError(
                    f"{path} (--set)", where, raw, "cannot set a key inside a plain value"
                )


def _list_index(items: list[Any], part: str) -> int | None:
    if part.lstrip("-").isdigit():
        index = int(part)
        return index if -len(items) <= index < len(items) else None
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == part:
            return i
    return None


# --------------------------------------------------------------- calibration
def calibratable(
    low: float,
    high: float,
    unit: str,
    tools: Sequence[str],
    measured_by: str,
    row: str,
    where: Sequence[str] = (),
) -> dict[str, Any]:
    """The ``json_schema_extra`` that declares a field calibratable (``flashsim calibrate``).

    Parameters
    ----------
    low, high : float
        Bounds of a fit, in the field's SI unit (``unit``); both > 0 (fits run
        in log space).
    unit : str
        SI unit of the field (``"s"``, ``"B/s"``, ``""`` for a ratio).
    tools : sequence of str
        Tools (:attr:`flashsim.measurements.record.Conditions.tool`) whose
        measurements inform the field; empty when no reader's measurement does
        (the field is fitted another way, named in ``measured_by``).
    measured_by : str
        The measurement that constrains it, as a user would give it ("an IOR
        random-read IOPS measurement").
    row : str
        The docs/calibration.md section whose table lists the field.
    where : sequence of str
        Dotted paths of the tables in which the field is calibrated (a shared
        sub-schema such as a NIC is calibrated on the OSS, not on clients);
        empty: wherever the schema is used.
    """
    assert 0.0 < low < high, "calibratable bounds must be positive and ordered"
    return {
        "calibratable": {
            "low": low,
            "high": high,
            "unit": unit,
            "tools": list(tools),
            "measured_by": measured_by,
            "row": row,
            "where": list(where),
        }
    }
