"""Numeric searches (solvers.execution.numeric): scalar root scans, paths from a known solution,
least squares with more unknowns than equations."""

import math

import numpy as np
import pytest
from chalk.solvers.execution.numeric import roots_scalar
from chalk.solvers.tolerances import SCAN

# The range the scan covered before it was given each quantity's plausible range: wide
# enough that the situations below sit well inside it.
WIDE = (1e-30, 1e30)


def test_steep_root_is_kept_although_rounding_leaves_a_residual():
    # Regression: a residual with slope 1e8 per unit of ln x leaves |f| ~ 1e-7 at the best
    # double next to its root; such roots were thrown away as "not a root" (training round
    # trip, seed 6331, answered with the other, far root).
    centre = math.log(3.3616e10)

    def f(y):
        return math.tanh(1e8 * (y - centre))

    roots = roots_scalar(f, *WIDE)
    assert len(roots) == 1
    assert roots[0] == pytest.approx(3.3616e10, rel=1e-9)


def test_a_steep_root_is_refined_to_the_best_double_before_it_is_judged():
    # Regression (the steep-edge block of test_block_regressions): brentq stops within
    # 1e-14 of ln x, here ten doubles of x from the root, where a residual of slope 1e10
    # per unit of ln x is still 2e-5, above the acceptance threshold; the best double of
    # x (the root itself, a double here) leaves 0. Refined further, the root is kept.
    root = 1 + 3e-10

    def f(y):
        return math.tanh(1e10 * (math.exp(y) - root) / root)

    assert SCAN.root_accept < 1e-5  # else the test would pass without the refinement
    assert roots_scalar(f, 0.5, 2.0) == [root]


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

    roots = roots_scalar(f, *WIDE)
    assert len(roots) == 1
    assert roots[0] == pytest.approx(1.16986403884e11, rel=1e-12)


def test_domain_island_narrower_than_the_grid_step_is_searched():
    # Regression (moe round trip, seed 361): the closed forms behind a tear were defined
    # only on a window 0.18 wide in ln x, narrower than the 0.29 grid step, so the scan
    # saw NaN everywhere and reported no solution. The ends are undefined for different
    # reasons (below: one quantity negative, above: another), which the scan now uses.
    lo, hi, root = math.log(2.63e11), math.log(3.16e11), 3.0e11

    def f(y):
        if y <= lo or y >= hi:
            return math.nan
        return math.tanh(y - math.log(root))

    def why(y):
        return "" if lo < y < hi else ("n_experts" if y <= lo else "dense_params")

    assert roots_scalar(f, *WIDE, why_undefined=why) == [pytest.approx(root, rel=1e-9)]
    # without the reasons the island stays invisible: the test above is not vacuous
    assert roots_scalar(f, *WIDE) == []


def test_roots_crowded_against_a_domain_edge_are_found():
    # Regression (moe round trip, seed 1113): a saturated relation put two roots within
    # 1% of the domain edge at x = 294.003, both between the edge and the next grid point,
    # where the residual has the same sign; the scan found neither.
    edge = 294.003

    def f(y):
        x = math.exp(y)
        if x <= edge:
            return math.nan
        return math.tanh((x - 294.0078) * (x - 296.0) / (x - edge) ** 2)

    roots = roots_scalar(f, *WIDE)
    assert roots == [pytest.approx(294.0078, rel=1e-9), pytest.approx(296.0, rel=1e-9)]


def test_two_roots_between_grid_points_are_both_bracketed():
    # Regression (batch round trip, seed 840): the residual crossed zero and crossed back
    # within 0.06 of ln x, between two grid points where it is negative. The local minimum
    # of |f| there was polished, but the polish stopped 2e-7 short of a root (|f| = 6e-9,
    # not "touching"), so neither root was found and a consistent state was called
    # unsolvable. Polishing the signed residual passes zero, and each side brackets one.
    centre = math.log(8.35e11)

    def f(y):
        return math.tanh(-0.2 * (y - centre) * (y - centre - 0.06))

    grid = np.linspace(math.log(WIDE[0]), math.log(WIDE[1]), SCAN.points)
    assert all(f(y) < 0 for y in grid)  # the grid alone sees no sign change
    roots = roots_scalar(f, *WIDE)
    assert roots == [pytest.approx(8.35e11, rel=1e-12),
                     pytest.approx(8.35e11 * math.exp(0.06), rel=1e-12)]


def test_a_quadratic_root_that_cancels_is_polished_on_the_relation():
    # Regression: t = 2 (N - 1)(a + K / N) solved for N is a quadratic root whose
    # discriminant nearly cancels when t ~ 2K; evaluated as written it lost 8 digits (the
    # per-hop ring all-reduce, round trip seed 5), now a Newton step on the relation
    # itself restores them. The reference root is the positive root of
    # 2 a N^2 + (2K - 2a - t) N - 2K = 0, computed here in exact-enough arithmetic.
    from fractions import Fraction

    from chalk.symbolic.model import build_model
    from chalk.symbolic.relations import Relation, definition
    from chalk.symbolic.variables import Variable

    from chalk import Q_, solve

    n = Variable("test_group", "1", "ring size")
    alpha = Variable("test_hop", "s", "latency of one ring step")
    k = Variable("test_bytes_time", "s", "time to send the whole message once")
    t = Variable("test_ring_time", "s", "all-reduce time")
    ring = Relation("test_ring", t.symbol,
                    2 * (n.symbol - 1) * (alpha.symbol + k.symbol / n.symbol), "m",
                    definition())
    model = build_model([n, alpha, k, t], [ring])
    a, big_k, total = 1.9339458080966862e-06, 246.22906036, 491.9377880422822
    s = solve("test_group", {"test_hop": Q_(a, "s"), "test_bytes_time": Q_(big_k, "s"),
                             "test_ring_time": Q_(total, "s")}, ["none"], model=model)
    # N = (-(2K - 2a - t) + sqrt((2K - 2a - t)^2 + 16 a K)) / (4a), with the square root
    # taken by Newton's method on fractions so no digit cancels
    A, B, C = Fraction(2 * a), Fraction(2 * big_k - 2 * a - total), Fraction(-2 * big_k)
    disc = B * B - 4 * A * C
    root = Fraction(math.sqrt(float(disc)))
    for _ in range(6):
        root = (root + disc / root) / 2
    exact = float((-B + root) / (2 * A))
    assert s.value("test_group") == pytest.approx(exact, rel=1e-12)


def _sum_and_product(env, values):
    # x + y = b and x y = a, as relative residuals
    x, y = values["x"], values["y"]
    return [(x + y - env["b"]) / (x + y + env["b"]), (x * y - env["a"]) / (x * y + env["a"])]


def test_a_path_from_a_known_solution_follows_its_root():
    # x + y = 3, x y = 2 has (1, 2); moving to x + y = 5, x y = 6 the roots of
    # z^2 - b z + a go from {1, 2} to {2, 3}: x stays the smaller, so (2, 3)
    from chalk.solvers.execution.numeric import follow_path

    found = follow_path(_sum_and_product, ["x", "y"], {"a": 6.0, "b": 5.0},
                        {"a": 2.0, "b": 3.0}, {"x": 1.0, "y": 2.0})
    assert found == {"x": pytest.approx(2.0, rel=1e-10), "y": pytest.approx(3.0, rel=1e-10)}


def test_a_path_from_a_point_that_is_no_solution_still_ends_on_one():
    # the homotopy subtracts the start's residual: from (1, 1), which solves neither
    # system, the path still ends where x + y = 5 and x y = 6
    from chalk.solvers.execution.numeric import follow_path

    found = follow_path(_sum_and_product, ["x", "y"], {"a": 6.0, "b": 5.0},
                        {"a": 2.0, "b": 3.0}, {"x": 1.0, "y": 1.1})
    assert found is not None
    assert sorted(found.values()) == pytest.approx([2.0, 3.0], rel=1e-10)


def test_a_path_that_runs_out_of_real_roots_is_lost():
    # x + y = 2, x y = 2 has no real roots (z^2 - 2 z + 2): the path cannot end
    from chalk.solvers.execution.numeric import follow_path

    assert follow_path(_sum_and_product, ["x", "y"], {"a": 2.0, "b": 2.0},
                       {"a": 2.0, "b": 3.0}, {"x": 1.0, "y": 2.0}) is None


def test_more_unknowns_than_equations_find_a_point_that_holds():
    # x y = 6 alone: any point on the hyperbola will do; it must hold to the tolerance
    from chalk.solvers.execution.numeric import solve_underdetermined

    found = solve_underdetermined(lambda v: [(v["x"] * v["y"] - 6) / (v["x"] * v["y"] + 6)],
                                  ["x", "y"], [{"x": 1.0, "y": 1.0}])
    assert found is not None
    assert found["x"] * found["y"] == pytest.approx(6.0, rel=1e-9)
