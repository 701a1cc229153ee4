"""Printing combinations of quantities for people."""

from __future__ import annotations

from fractions import Fraction

import pytest
from chalk.symbolic.parsing import parse_unit
from chalk.symbolic.printing.expressions import monomial_text
from chalk.symbolic.printing.quantities import format_quantity


def test_a_monomial_reads_as_a_fraction_with_fractional_powers_shown():
    assert monomial_text({"chip_flops": 1, "hbm_bandwidth": -1}) == "chip_flops/hbm_bandwidth"
    assert monomial_text({"a": Fraction(1, 2), "b": -1, "c": -2}) == "a^(1/2)/(b·c^2)"


def test_a_small_exponent_is_shown_as_it_is_not_as_zero():
    # Regression: a combination from a linearised (floating-point) row printed
    # "expert_params^0·t_weight_fetch_touched/dense_params^0" (probe seed 7743).
    shown = monomial_text({"expert_params": 5.5e-6, "t_weight_fetch_touched": Fraction(1),
                           "dense_params": -5.5e-6})
    assert shown == "expert_params^5.5e-06·t_weight_fetch_touched/dense_params^5.5e-06"


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        # 132e-9 USD/token x 1e6 token/Mtoken = 0.132 USD/Mtoken
        (132e-9, "USD/token", "0.132 USD/Mtoken"),
        # 1.25 USD/Mtoken given in its own unit stays 1.25
        (1.25, "USD/Mtoken", "1.25 USD/Mtoken"),
        # 4.5e-6 USD/(token·hour) x 1e6 = 4.5 USD/Mtoken/hour
        (4.5e-6, "USD/token/hour", "4.5 USD/Mtoken/hour"),
        # 1.25e-12 USD/(token·s) x 1e6 x 3600 = 4.5e-3 USD/Mtoken/hour
        (1.25e-12, "USD/token/s", "0.0045 USD/Mtoken/hour"),
        # 1.35e-9 USD/(byte·hour) x 1e9 byte/GB = 1.35 USD/GB/hour
        (1.35e-9, "USD/byte/hour", "1.35 USD/GB/hour"),
        # 8e-9 USD/byte x 1e9 = 8 USD/GB
        (8e-9, "USD/byte", "8 USD/GB"),
        # a price per chip-hour is not a per-token price: shown in its own unit
        (2, "USD/hour", "2 USD/h"),
    ],
)
def test_prices_read_as_price_lists_write_them(value, unit, shown):
    assert format_quantity(value, parse_unit(unit)) == shown
