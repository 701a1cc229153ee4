"""Scalar root scanning (solvers.numeric.roots_scalar)."""

import math

import pytest

from solvers.numeric import roots_scalar


def test_steep_root_is_kept_although_rounding_leaves_a_residual():
    # Regression: a residual with slope 1e8 per unit of ln x leaves |f| ~ 1e-7 at the best
    # double next to its root; such roots were thrown away as "not a root" (training round
    # trip, seed 6331, answered with the other, far root).
    centre = math.log(3.3616e10)

    def f(y):
        return math.tanh(1e8 * (y - centre))

    roots = roots_scalar(f)
    assert len(roots) == 1
    assert roots[0] == pytest.approx(3.3616e10, rel=1e-9)


def test_sign_change_across_a_pole_is_not_a_root():
    # (x - 5) / (x - 2): a pole at x = 2, a root at x = 5; the relative form stays within ±1.
    def f(y):
        x = math.exp(y)
        value = (x - 5.0) / (x - 2.0)
        return value / max(1.0, abs(value))

    roots = roots_scalar(f, 1e-3, 1e3)
    assert roots == [pytest.approx(5.0, rel=1e-9)]


def test_two_roots_are_both_reported():
    # (x - 3)(x - 300) has two positive roots; neither may hide the other.
    def f(y):
        x = math.exp(y)
        return (x - 3.0) * (x - 300.0) / (x * x + 900.0)

    roots = roots_scalar(f, 1e-3, 1e6)
    assert roots == [pytest.approx(3.0, rel=1e-9), pytest.approx(300.0, rel=1e-9)]


def test_flat_crossing_is_bracketed_not_polished():
    # Regression (43 wrong round trips in the 10,000-case run): a residual with slope 8.4e-6
    # per unit of ln x dips below the 1e-10 "touching zero" threshold 1e-5 away from its
    # root; polishing |f| there returned a value 1e-5 off as a second or only root.
    centre = math.log(1.16986403884e11)

    def f(y):
        return 8.4e-6 * (y - centre)

    roots = roots_scalar(f)
    assert len(roots) == 1
    assert roots[0] == pytest.approx(1.16986403884e11, rel=1e-12)
