"""The allowed range of a quantity, as error messages state it."""

from chalk.symbolic.variables import Variable


def test_a_pure_numbers_range_names_no_unit():
    # regression: a share bounded by 1 read "must be positive, at most 1 1"
    share = Variable("some_share", "1", "a fraction", lower=0, upper=1, allow_zero=True)
    assert share.requirement() == "zero or more, at least 0, at most 1"


def test_a_dimensioned_range_keeps_its_unit():
    batch = Variable("some_batch", "sequence", "a batch", lower=1)
    assert batch.requirement() == "positive, at least 1 sequence"
