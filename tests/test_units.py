"""Unit strings at the boundary become SI floats."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flashsim import units
from flashsim.units import UnitError, format_quantity, parse_quantity


@pytest.mark.parametrize(
    ("text", "dimension", "expected"),
    [
        ("200 Gb/s", "bandwidth", 25e9),
        ("3.2 GB/s", "bandwidth", 3.2e9),
        ("400 Gbit/s", "bandwidth", 50e9),
        ("15.36 TB", "bytes", 15.36e12),
        ("64 MiB", "bytes", 64 * 2**20),
        ("1 GiB", "bytes", 2**30),
        ("4 KiB", "bytes", 4096),
        ("8 Gb", "bytes", 1e9),
        ("80 us", "time", 80e-6),
        ("45 s", "time", 45.0),
        ("1.5 ms", "time", 1.5e-3),
        ("2 min", "time", 120.0),
        ("1.4 MIOPS", "rate", 1.4e6),
        ("240 IOPS", "rate", 240.0),
        ("92.6 %", "fraction", 0.926),
        (0.5, "fraction", 0.5),
    ],
)
def test_parses_to_si(text: object, dimension, expected: float) -> None:
    assert parse_quantity(text, dimension) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("text", "dimension", "message"),
    [
        ("200 Gb", "bandwidth", "expected a bandwidth"),
        ("3.2 GB/s", "bytes", "expected a size"),
        ("fast", "time", "cannot read"),
        (12, "bytes", "has no unit"),
        (True, "bytes", "boolean"),
        ("inf GB", "bytes", "not finite"),
        ("80 uS", "time", "cannot read"),
    ],
)
def test_rejects_with_a_clear_reason(text: object, dimension, message: str) -> None:
    with pytest.raises(UnitError, match=message):
        parse_quantity(text, dimension)


@settings(max_examples=100)
@given(st.floats(1e-6, 1e18), st.sampled_from(["bytes", "bandwidth", "time", "rate"]))
def test_format_then_parse_round_trips(value: float, dimension) -> None:
    text = format_quantity(value, dimension, digits=17)
    assert parse_quantity(text, dimension) == pytest.approx(value, rel=1e-12)


# ------------------------------------------------ the fast path reads as pint does
_DIMENSIONS = ("bytes", "bandwidth", "time", "rate", "fraction")
_NUMBERS = ("1", "200", "3.2", "0.5", "1.", ".25", "1e9", "2.5E-3", "123456789012345678901")


def _by_pint(text: str, dimension: str) -> float:
    if dimension == "fraction":
        return units._pint_fraction(text)
    return units._pint_magnitude(text, dimension)


def _same_as_pint(text: str) -> int:
    """Assert every dimension the fast path reads ``text`` as gives pint's float; count them."""
    read = 0
    for dimension in _DIMENSIONS:
        fast = units._fast_magnitude(text, dimension)
        if fast is not None:
            read += 1
            expected = _by_pint(text, dimension)
            assert fast == expected or (math.isnan(fast) and math.isnan(expected)), (
                text,
                dimension,
                fast,
                expected,
            )
            assert type(fast) is float
    return read


def test_fast_path_reads_every_spelling_as_pint_does() -> None:
    """Every unit spelling the fast path knows gives pint's exact float (all ~1,600 of them)."""
    spellings = sorted(units._fast_units())
    assert len(spellings) > 1000
    for i, name in enumerate(spellings):
        number = _NUMBERS[i % len(_NUMBERS)]
        alone = units._fast_units()[name][0] != "operation"  # "5 op" is no quantity we read
        assert _same_as_pint(f"{number} {name}") == alone, name
        _same_as_pint(f"{number} {name}/s")


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_NUMBERS),
    st.sampled_from(sorted(units._fast_units())),
    st.sampled_from(sorted(units._fast_units())),
    st.sampled_from(["{n} {a}/{b}", "{n}{a}/{b}", "{n} {a} / {b}", "{n}/{b}", " {n} {a} "]),
)
def test_fast_path_reads_ratios_as_pint_does(number: str, over: str, under: str, form: str) -> None:
    _same_as_pint(form.format(n=number, a=over, b=under))


@pytest.mark.parametrize(
    ("text", "dimension"),
    [
        ("007 B", "bytes"),  # pint reads a leading zero its own way (as 0)
        ("1_000 B", "bytes"),
        ("-5 GB", "bytes"),
        ("2 mins", "time"),
        ("5 kpercent", "fraction"),
        ("1 GB/s/s", "bandwidth"),
        ("200 Gb", "bandwidth"),
        ("80 uS", "time"),
    ],
)
def test_other_spellings_are_left_to_pint(text: str, dimension: str) -> None:
    assert units._fast_magnitude(text, dimension) is None


def test_common_values_need_no_pint() -> None:
    """A fresh interpreter reads the usual model-file values without importing pint."""
    code = (
        "import sys\n"
        "from flashsim.units import parse_quantity\n"
        "for text, dimension in [('200 Gb/s', 'bandwidth'), ('15.36 TB', 'bytes'),\n"
        "        ('64 MiB', 'bytes'), ('80 us', 'time'), ('1.4 MIOPS', 'rate'),\n"
        "        ('92.6 %', 'fraction'), ('2 min', 'time'), ('100 op/s', 'rate')]:\n"
        "    parse_quantity(text, dimension)\n"
        "print('pint' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    assert out.stdout.strip() == "False"
