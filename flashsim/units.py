"""Quantities with units at the file/CLI boundary, SI floats inside.

Model and scenario files write values like ``"200 Gb/s"``, ``"3.2 GB/s"``,
``"15.36 TB"``, ``"64 MiB"``, ``"80 us"`` or ``"1.4 MIOPS"``.  They are parsed
once, here, into floats in bytes, seconds, bytes/s or operations/s.  Decimal
prefixes are powers of 1000 (1 GB = 1e9 B), binary ones powers of 1024
(1 GiB = 2**30 B), and 8 b = 1 B.

A dedicated pint registry is used: pint's default registry reads ``Gb`` as a
gilbert and ``b`` as a barn, which no storage architect means.  pint costs
about a second to import, so the usual spellings (``NUMBER [UNIT] [/ UNIT]``
with the units below, any prefix) are read by a fast path that computes
pint's exact float (tests/test_units.py compares the two over every
spelling); pint is imported only for anything else and for every error.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

#: Binary byte multiples, for code that builds sizes (files use unit strings).
KIB = 2.0**10
MIB = 2.0**20
GIB = 2.0**30
TIB = 2.0**40

Dimension = Literal["bytes", "bandwidth", "time", "rate", "fraction", "count", "number"]

_DEFINITIONS = """
second = [time] = s = sec
minute = 60 * second = min
hour = 60 * minute = h
day = 24 * hour
week = 7 * day
year = 365 * day = yr
byte = [information] = B
bit = byte / 8 = b
operation = [operations] = op = ops = IO = IOs
IOPS = operation / second
percent = 0.01 = %
yocto- = 1e-24 = y-
zepto- = 1e-21 = z-
atto- =  1e-18 = a-
femto- = 1e-15 = f-
pico- =  1e-12 = p-
nano- =  1e-9  = n-
micro- = 1e-6  = u- = µ- = μ-
milli- = 1e-3  = m-
kilo- =  1e3   = k- = K-
mega- =  1e6   = M-
giga- =  1e9   = G-
tera- =  1e12  = T-
peta- =  1e15  = P-
exa- =   1e18  = E-
kibi- = 2**10 = Ki-
mebi- = 2**20 = Mi-
gibi- = 2**30 = Gi-
tebi- = 2**40 = Ti-
pebi- = 2**50 = Pi-
exbi- = 2**60 = Ei-
"""

_EXPECTED: dict[str, tuple[str, str]] = {
    # dimension: (pint dimensionality, example for messages)
    "bytes": ("[information]", 'a size such as "64 MiB" or "15.36 TB"'),
    "bandwidth": ("[information] / [time]", 'a bandwidth such as "200 Gb/s" or "3.2 GB/s"'),
    "time": ("[time]", 'a time such as "80 us" or "45 s"'),
    "rate": ("1 / [time]", 'an operation rate such as "1.4 MIOPS" or "240 IOPS"'),
}


class UnitError(ValueError):
    """A value that is not a quantity of the expected dimension."""


#: Longest quantity string read, and the characters it may use: a number and a unit
#: (``"1.4 MIOPS"``, ``"92.6 %"``, ``"200 Gb/s"``).  Anything else (``10**10**10 B``,
#: a 100,000-digit literal) is refused before pint, which would evaluate it for minutes.
MAX_QUANTITY_CHARS = 64
_QUANTITY_TEXT = re.compile(r"[0-9A-Za-z.+\-/ %µμ_]*")


def _check_text(text: str) -> None:
    if len(text) > MAX_QUANTITY_CHARS:
        raise UnitError(
            f"{text[:20]!r}... is {len(text)} characters long; a quantity is a number and a unit "
            f"of at most {MAX_QUANTITY_CHARS} characters"
        )
    if not _QUANTITY_TEXT.fullmatch(text):
        raise UnitError(
            f"{text!r}: expected a number and a unit (letters, digits, '.', '/', '%'), "
            "no arithmetic"
        )


@lru_cache(maxsize=1)
def registry() -> Any:
    """The flashsim unit registry (built once per process, never mutated after).

    pint is imported here, on first use: it costs about a second of start-up
    (it probes for NumPy, Dask, Babel ...), and :func:`_fast_magnitude` reads
    the common unit strings without it.
    """
    import pint

    reg: Any = pint.UnitRegistry(None, autoconvert_offset_to_baseunit=False)
    for line in _DEFINITIONS.strip().splitlines():
        reg.define(line.strip())
    return reg


# ------------------------------------------------------------ fast path
# The units of _DEFINITIONS as pint holds them: scale, reference (unit -> exponent)
# and dimension (information, time, operations exponents).  Base units have no scale.
_Scale = int | float


@dataclass(frozen=True)
class _Unit:
    scale: _Scale | None  # None for a base unit
    reference: tuple[tuple[str, int], ...]
    dims: tuple[int, int, int]


_BASE_UNITS: dict[str, _Unit] = {
    "second": _Unit(None, (), (0, 1, 0)),
    "byte": _Unit(None, (), (1, 0, 0)),
    "operation": _Unit(None, (), (0, 0, 1)),
    "minute": _Unit(60, (("second", 1),), (0, 1, 0)),
    "hour": _Unit(60, (("minute", 1),), (0, 1, 0)),
    "day": _Unit(24, (("hour", 1),), (0, 1, 0)),
    "week": _Unit(7, (("day", 1),), (0, 1, 0)),
    "year": _Unit(365, (("day", 1),), (0, 1, 0)),
    "bit": _Unit(0.125, (("byte", 1),), (1, 0, 0)),
    "IOPS": _Unit(1.0, (("operation", 1), ("second", -1)), (0, -1, 1)),
    "percent": _Unit(0.01, (), (0, 0, 0)),
}

#: Spellings of each unit (name first) and of each prefix, as _DEFINITIONS declares them.
_UNIT_SPELLINGS: dict[str, tuple[str, ...]] = {
    "second": ("second", "s", "sec"),
    "minute": ("minute", "min"),
    "hour": ("hour", "h"),
    "day": ("day",),
    "week": ("week",),
    "year": ("year", "yr"),
    "byte": ("byte", "B"),
    "bit": ("bit", "b"),
    "operation": ("operation", "op", "ops", "IO", "IOs"),
    "IOPS": ("IOPS",),
}
_PREFIXES: dict[str, tuple[_Scale, tuple[str, ...]]] = {
    "yocto": (1e-24, ("y",)),
    "zepto": (1e-21, ("z",)),
    "atto": (1e-18, ("a",)),
    "femto": (1e-15, ("f",)),
    "pico": (1e-12, ("p",)),
    "nano": (1e-9, ("n",)),
    "micro": (1e-6, ("u", "µ", "μ")),
    "milli": (1e-3, ("m",)),
    "kilo": (1e3, ("k", "K")),
    "mega": (1e6, ("M",)),
    "giga": (1e9, ("G",)),
    "tera": (1e12, ("T",)),
    "peta": (1e15, ("P",)),
    "exa": (1e18, ("E",)),
    "kibi": (2**10, ("Ki",)),
    "mebi": (2**20, ("Mi",)),
    "gibi": (2**30, ("Gi",)),
    "tebi": (2**40, ("Ti",)),
    "pebi": (2**50, ("Pi",)),
    "exbi": (2**60, ("Ei",)),
}


@lru_cache(maxsize=1)
def _fast_units() -> dict[str, tuple[str, _Scale | None]]:
    """Every unit spelling the fast path reads -> (unit, prefix scale or ``None``).

    A unit's name, symbol or alias, with or without one prefix (name or
    symbol), plus the plural of a name (``bytes``, ``kilobytes``); ``%`` and
    ``percent`` without prefix.  Other spellings go to pint.
    """
    table: dict[str, tuple[str, _Scale | None]] = {"%": ("percent", None)}
    table["percent"] = ("percent", None)
    for unit, spellings in _UNIT_SPELLINGS.items():
        names = [*spellings, spellings[0] + "s"]
        for name in names:
            table[name] = (unit, None)
        for prefix, (scale, symbols) in _PREFIXES.items():
            for p in (prefix, *symbols):
                for name in names:
                    table[p + name] = (unit, scale)
    return table


_FAST_QUANTITY = re.compile(
    r"\s*(?P<number>(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)"
    r"\s*(?P<over>[A-Za-z%µμ]+)?(?:\s*/\s*(?P<under>[A-Za-z%µμ]+))?\s*"
)

_FAST_DIMS: dict[str, tuple[tuple[int, int, int], ...]] = {
    "bytes": ((1, 0, 0),),
    "bandwidth": ((1, -1, 0),),
    "time": ((0, 1, 0),),
    "rate": ((0, -1, 0), (0, -1, 1)),
    "fraction": ((0, 0, 0),),
}


def _root_factor(units: list[tuple[str, _Scale | None, int]]) -> _Scale:
    """The factor to base units of ``(unit, prefix scale, exponent)`` terms, as pint computes it.

    A port of ``pint``'s ``_get_root_units``: scales are collected by value
    into a numerator and a denominator (equal scales cancel), then multiplied
    in that order, so the product is bit-identical to pint's.
    """
    numerator: dict[_Scale, int] = {}
    denominator: dict[_Scale, int] = {}

    def add(scale: _Scale, exponent: int) -> None:
        if exponent < 0:
            denominator[scale] = denominator.get(scale, 0) - exponent
        else:
            numerator[scale] = numerator.get(scale, 0) + exponent

    def recurse(unit: str, exponent: int) -> None:
        definition = _BASE_UNITS[unit]
        if definition.scale is None:
            return
        add(definition.scale, exponent)
        for child, power in definition.reference:
            recurse(child, exponent * power)

    for unit, prefix, exponent in units:
        if prefix is None:
            recurse(unit, exponent)
        else:  # a prefixed unit is a unit of the prefix's scale referring to the unit
            add(prefix, exponent)
            recurse(unit, exponent)
    while any(scale in denominator for scale in numerator):
        for scale, power in numerator.items():
            if scale in denominator and power >= denominator[scale]:
                numerator[scale] -= denominator.pop(scale)
        for scale, power in denominator.items():
            if scale in numerator and power >= numerator[scale]:
                denominator[scale] -= numerator.pop(scale)
    factor: _Scale = 1
    for scale, power in numerator.items():
        if power != 0:
            factor *= scale**power
    for scale, power in denominator.items():
        if power != 0:
            factor *= scale**-power
    return factor


def _fast_magnitude(text: str, dimension: str) -> float | None:
    """``text`` in SI units without pint, or ``None`` when pint must read it.

    Reads ``NUMBER [UNIT] [/ UNIT]`` with the units of :func:`_fast_units`
    when the result has the expected dimension, and gives the same float as
    pint (tests/test_units.py compares the two over every spelling).  Anything
    else, including every error, is left to pint and its messages.
    """
    match = _FAST_QUANTITY.fullmatch(text)
    if match is None:
        return None
    table = _fast_units()
    terms: list[tuple[str, _Scale | None, int]] = []
    for group, exponent in (("over", 1), ("under", -1)):
        name = match.group(group)
        if name is not None:
            if name not in table:
                return None
            unit, prefix = table[name]
            terms.append((unit, prefix, exponent))
    dims = tuple(
        sum(_BASE_UNITS[unit].dims[axis] * exponent for unit, _, exponent in terms)
        for axis in range(3)
    )
    if dims not in _FAST_DIMS[dimension]:
        return None
    number = match.group("number")
    magnitude: _Scale = int(number) if number.isdigit() else float(number)
    # pint divides the magnitude by 1 for a unit under '/', and by 'operation'
    # for an operation rate: true division makes it a float.
    if match.group("under") is not None or dims[2] == 1:
        magnitude = magnitude / 1
    if dims[2] == 1:
        terms.append(("operation", None, -1))
    return float(magnitude * _root_factor(terms))


def _base_magnitude(text: str, dimension: str) -> float:
    _check_text(text)
    fast = _fast_magnitude(text, dimension)
    return fast if fast is not None else _pint_magnitude(text, dimension)


def _pint_magnitude(text: str, dimension: str) -> float:
    """``text`` of a dimension of :data:`_EXPECTED` read by pint, in SI units."""
    reg: Any = registry()
    want, example = _EXPECTED[dimension]
    try:
        quantity: Any = reg.Quantity(text)
    except Exception as exc:  # pint raises several unrelated types for bad text
        raise UnitError(f"cannot read {text!r} as {example}") from exc
    # Operations per second and plain "1/s" are both rates.
    if dimension == "rate":
        quantity = quantity / reg.operation if quantity.check("[operations] / [time]") else quantity
    if not quantity.check(want):
        raise UnitError(f"{text!r} has units of {quantity.units}; expected {example}")
    return float(quantity.to_base_units().magnitude)


def _pint_fraction(text: str) -> float:
    """A dimensionless string (``"92.6 %"``) read by pint."""
    reg: Any = registry()
    try:
        q: Any = reg.Quantity(text)
    except Exception as exc:
        raise UnitError(f'cannot read {text!r} as a fraction such as 0.9 or "90 %"') from exc
    if not q.dimensionless:
        raise UnitError(f"{text!r} has units of {q.units}; expected a fraction")
    return float(q.to("dimensionless").magnitude)


def parse_quantity(value: object, dimension: Dimension) -> float:
    """Parse a file or CLI value into an SI float.

    Parameters
    ----------
    value : str or int or float
        A string with a unit (``"200 Gb/s"``), or a bare number for the
        unitless dimensions ``fraction`` (``0.926`` or ``"92.6 %"``),
        ``count`` and ``number``.
    dimension : {"bytes", "bandwidth", "time", "rate", "fraction", "count", "number"}
        What the value measures; the result is in bytes, bytes/s, seconds,
        operations/s, a fraction, an integer count or a plain number.

    Raises
    ------
    UnitError
        When the value is not of the expected dimension, is not finite, or is
        a bare number where a unit is required.
    """
    if isinstance(value, bool):
        raise UnitError(f"{value!r} is a boolean; expected a {dimension}")
    if dimension in _EXPECTED:
        if isinstance(value, (int, float)):
            raise UnitError(
                f"{value!r} has no unit; expected {_EXPECTED[dimension][1]} (write the unit)"
            )
        if not isinstance(value, str):
            raise UnitError(f"{value!r} is not a string; expected {_EXPECTED[dimension][1]}")
        result = _base_magnitude(value, dimension)
    elif dimension == "fraction":
        if isinstance(value, str):
            _check_text(value)
            fast = _fast_magnitude(value, "fraction")
            result = fast if fast is not None else _pint_fraction(value)
        elif isinstance(value, (int, float)):
            result = float(value)
        else:
            raise UnitError(f"{value!r} is not a number; expected a fraction such as 0.9")
    elif dimension == "count":
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise UnitError(f"{value!r} is not a whole number")
    elif dimension == "number":
        if not isinstance(value, (int, float)):
            raise UnitError(f"{value!r} is not a number")
        result = float(value)
    else:  # pragma: no cover - guarded by the Literal type
        raise UnitError(f"unknown dimension {dimension!r}")
    if not math.isfinite(result):
        raise UnitError(f"{value!r} is not finite")
    return result


def format_quantity(value: float, dimension: Dimension, digits: int = 4) -> str:
    """Format an SI float for people, e.g. ``format_quantity(25e9, "bandwidth")``."""
    units = {
        "bytes": [(1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B")],
        "bandwidth": [(1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1, "B/s")],
        "time": [(1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")],
        "rate": [(1e6, "MIOPS"), (1e3, "kIOPS"), (1, "IOPS")],
    }.get(dimension)
    if units is None:
        return f"{value:.{digits}g}"
    for scale, name in units:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {name}"
    scale, name = units[-1]
    return f"{value / scale:.{digits}g} {name}"
