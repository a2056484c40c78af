"""Unit strings at the boundary become SI floats."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
