"""Model and scenario files: TOML in, validated typed objects with SI floats out.

Schemas are pydantic models whose quantity fields parse unit strings through
:mod:`flashsim.units`.  Every problem with a file becomes a :class:`ConfigError`
naming the file, the dotted key, the offending value and what was expected; the
CLI prints it on one line and exits with status 2.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin, overload

from pydantic import BaseModel, BeforeValidator, ConfigDict, TypeAdapter, ValidationError

from flashsim.units import Dimension, UnitError, parse_quantity


@dataclass
class ConfigError(Exception):
    """A bad model, scenario or command-line value.

    Attributes
    ----------
    path : str
        The file (or ``"--set"`` / ``"command line"``) the value came from.
    key : str
        Dotted key of the value, e.g. ``oss.nic.ports``.
    value : object
        The offending value as written.
    expected : str
        What would have been accepted.
    """

    path: str
    key: str
    value: object
    expected: str

    def __str__(self) -> str:
        parts = [self.path] if self.path else []
        if self.key:
            shown = _show(self.value)
            parts.append(f"key '{self.key}'" + (f" = {shown}" if shown else ""))
        return ": ".join([*parts, self.expected])


def _show(value: object) -> str:
    if value is MISSING:
        return ""
    if isinstance(value, (dict, list)):
        text = repr(value)
        return text if len(text) <= 80 else text[:77] + "..."
    return repr(value)


#: Marks a ConfigError that has no value to show (a missing key or file).
MISSING = object()


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
        return float(result)

    return parse


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


class StrictModel(BaseModel):
    """Base of every file schema: unknown keys are errors, values are checked once."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


M = TypeVar("M", bound=BaseModel)


# ------------------------------------------------------------------- loading
def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file into a dict, turning every failure into a :class:`ConfigError`."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(str(p), "", MISSING, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(p), "", MISSING, f"cannot read file ({exc})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(p), "", MISSING, f"not valid TOML ({exc})") from None


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
        if in_table or in_list:
            node = node[item]
        elif isinstance(item, str) and not (last and missing and isinstance(node, Mapping)):
            # A union tag or branch name, not a key of the file.
            continue
        else:
            node = MISSING  # a key the file lacks (the last element of a "missing" error)
        parts.append(str(item))
    return ".".join(parts), node


def _describe_error(err: Mapping[str, Any], model: type[BaseModel], data: Any) -> ConfigError:
    kind = err["type"]
    key, value = _loc_to_key(err["loc"], data, missing=kind == "missing")
    if isinstance(value, Mapping):
        value = MISSING  # a whole table: the message names the fields involved
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, list(err["loc"])[:-1])
        hint = f"; expected one of: {', '.join(allowed)}" if allowed else ""
        return ConfigError("", key, value, f"unknown key{hint}")
    if kind == "missing":
        return ConfigError("", key, MISSING, "required key is missing")
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
        first = _describe_error(errors[0], _model_for(schema, data), data)
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
        raise ConfigError("--set", text, MISSING, "expected key=value, e.g. oss.nic.ports=4")
    return key.strip(), value.strip()


def _toml_value(text: str) -> object:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # a bare unit string such as 200 Gb/s


def apply_overrides(data: dict[str, Any], overrides: Mapping[str, str], path: str) -> None:
    """Set dotted ``key -> value`` pairs in a loaded file, in place.

    Values are read as TOML literals (``8``, ``true``, ``"x"``) and otherwise
    kept as strings (``200 Gb/s``).  A list element is addressed by its index
    or by the value of its ``name`` key (``phases.write.ranks=8``).
    """
    for key, raw in overrides.items():
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
                    node[index] = _toml_value(raw)
                else:
                    node = node[index]
            elif isinstance(node, dict):
                if last:
                    node[part] = _toml_value(raw)
                else:
                    node = node.setdefault(part, {})
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
