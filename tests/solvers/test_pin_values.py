"""Reading one value given from Python: any real number is a number, and a value that is
not finite is called what it is."""

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from chalk.knowledge import load_model
from chalk.solvers.pinning.pins import read_value
from chalk.symbolic.errors import MissingUnit, ParseError
from chalk.symbolic.units import Q_

MODEL = load_model()
RATIO = MODEL.variable("sparsity_factor")  # dimensionless
TIME = MODEL.variable("hbm_drain_time")  # seconds


@pytest.mark.parametrize("number", [8, 8.0, np.int64(8), np.float32(8), Fraction(16, 2),
                                    Decimal("8"), Decimal("8.000")])
def test_every_real_number_is_read_for_a_dimensionless_pin(number):
    assert read_value(RATIO, number) == (8.0, str(number))


@pytest.mark.parametrize("number", [np.int64(8), Fraction(8), Decimal("8")])
def test_a_real_number_for_a_quantity_with_a_unit_is_told_its_unit(number):
    with pytest.raises(MissingUnit, match="has no unit; write it with a unit such as '8 s'"):
        read_value(TIME, number)


@pytest.mark.parametrize(("value", "message"), [
    (float("nan"), "cannot read 'nan': not a number (NaN); give a finite value"),
    (np.float64("nan"), "cannot read 'nan': not a number (NaN); give a finite value"),
    (Decimal("NaN"), "cannot read 'NaN': not a number (NaN); give a finite value"),
    (Decimal("sNaN"), "cannot read 'sNaN': not a number (NaN); give a finite value"),
    (float("inf"), "cannot read 'inf': infinite; give a finite value"),
    (Decimal("-Infinity"), "cannot read '-Infinity': infinite; give a finite value"),
    # finite, but past a float's 1.8e308
    (Decimal("1e500"), "cannot read '1E+500': too large for a floating-point number (at most "
                       "about 1.8e308)"),
    (Fraction(10**400, 3), "too large for a floating-point number"),
])
def test_a_value_that_is_not_finite_says_so(value, message):
    for variable in (RATIO, TIME):  # before any word about its unit
        with pytest.raises(ParseError) as caught:
            read_value(variable, value)
        assert message in caught.value.message


def test_a_quantity_whose_magnitude_is_nan_says_so():
    with pytest.raises(ParseError) as caught:
        read_value(TIME, Q_(float("nan"), "ms"))
    assert caught.value.message == "cannot read 'nan ms': not a number (NaN); give a finite " \
                                   "value"


def test_an_integer_past_the_digit_limit_is_one_short_line():
    with pytest.raises(ParseError) as caught:
        read_value(RATIO, 10**5000)
    assert caught.value.message == ("cannot read 'an integer of more than 4300 digits': too "
                                    "large for a floating-point number (at most about 1.8e308)")
