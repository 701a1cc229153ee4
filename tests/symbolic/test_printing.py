"""Printing combinations of quantities for people."""

from __future__ import annotations

from fractions import Fraction

from chalk.symbolic.printing.expressions import monomial_text


def test_a_monomial_reads_as_a_fraction_with_fractional_powers_shown():
    assert monomial_text({"chip_flops": 1, "hbm_bandwidth": -1}) == "chip_flops/hbm_bandwidth"
    assert monomial_text({"a": Fraction(1, 2), "b": -1, "c": -2}) == "a^(1/2)/(b·c^2)"


def test_a_small_exponent_is_shown_as_it_is_not_as_zero():
    # Regression: a combination from a linearised (floating-point) row printed
    # "expert_params^0·t_weight_fetch_touched/dense_params^0" (probe seed 7743).
    shown = monomial_text({"expert_params": 5.5e-6, "t_weight_fetch_touched": Fraction(1),
                           "dense_params": -5.5e-6})
    assert shown == "expert_params^5.5e-06·t_weight_fetch_touched/dense_params^5.5e-06"
