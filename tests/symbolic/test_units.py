"""Distinct count dimensions and readable formatting."""

import pytest
from chalk.symbolic.parsing import parse_unit_cached
from chalk.symbolic.printing.numbers import format_number
from chalk.symbolic.printing.quantities import format_quantity
from chalk.symbolic.units import Q_, ureg


@pytest.mark.parametrize(
    ("a", "b"),
    [("byte/token", "byte/param"), ("token", "sequence"), ("FLOP", "byte"), ("chip", "param"),
     ("USD", "token")],
)
def test_count_units_are_distinct_dimensions(a, b):
    assert ureg.get_dimensionality(a) != ureg.get_dimensionality(b)


def test_byte_is_not_dimensionless():
    # pint's stock byte is dimensionless; chalk's must not be.
    assert ureg.get_dimensionality("byte")  # an empty container would mean dimensionless


def test_mixing_counts_fails_loudly():
    with pytest.raises(Exception):  # noqa: B017 - pint's DimensionalityError
        Q_(1, "byte/token").to("byte/param")


@pytest.mark.parametrize(
    ("value", "text"),
    [(6.71e11, "671e9"), (5353.9, "5,354"), (0.5, "0.5"), (2.592e14, "259.2e12"), (0, "0")],
)
def test_format_number(value, text):
    assert format_number(value) == text


def test_format_quantity_picks_readable_prefixes():
    assert format_quantity(0.0144, parse_unit_cached("s")) == "14.4 ms"
    assert format_quantity(3.35e12, parse_unit_cached("byte/s")) == "3.35 TB/s"
    assert format_quantity(2.0, parse_unit_cached("FLOP/param/token")) == "2 FLOP/(param·token)"


def test_gap_reads_as_percent_when_small_and_as_factor_when_large():
    from chalk.symbolic.printing.numbers import format_gap

    # 20 ms against 14.4 ms: |20 - 14.4| / 20 = 28%.
    assert format_gap(abs(20 - 14.4) / 20) == "28% apart"
    # 1 against 128,000: a percentage would round to "100%", hiding the factor.
    assert format_gap((128_000 - 1) / 128_000) == "a factor 128,000 apart"
    assert format_gap(1.0) == "one side zero"
    assert format_gap(2.0) == "of opposite sign"
