"""Weighted least squares in log space, and honest intervals.

The objective is ``sum_i rho(z_i^2) + sum_k p_k^2`` with ``z_i = (ln predicted_i -
ln observed_i) / sigma_i`` (``sigma_i`` the standard deviation of the log of observation
``i``) and ``p_k = (ln theta_k - ln median_k) / s_k`` for each parameter with a
normal or log-normal prior (a normal prior enters as the log-normal of the same median
and relative spread, ``s = sd / mean``, an approximation good while that is small). A
range prior bounds the search and is otherwise flat in the log: log-uniform exactly,
uniform approximately. ``rho`` is the identity (``loss = "linear"``) or a robust loss
(``soft_l1``, ``huber``, ``cauchy``) bending at ``BEND`` standard deviations.
``soft_l1`` and ``huber`` are convex and bound a far outlier's pull (to about what one
observation one standard deviation off exerts), which with few observations can still
move an estimate by a standard deviation; ``cauchy`` lets a far outlier's pull fade to
nothing but is not convex, so it starts from the ``soft_l1`` solution. The robust loss is
applied by transforming each residual to ``sign(z) sqrt(rho(z^2))`` so the priors stay
quadratic; :func:`scipy.optimize.least_squares` (trust region, bounds) minimises it.

Intervals (90%, ``Z90`` standard deviations) come from the covariance ``(A'A)^+`` of the
log parameters, ``A`` stacking the observation rows weighted by ``sqrt(rho'(z^2))`` (the
weights of the last reweighting step of a robust fit; 1 for least squares) and the prior
rows. This is the Jacobian (near-linear) interval. It is trusted only where it is: along
the direction the covariance moves a parameter, the objective with those weights must
rise by ``Z90^2`` within ``LINEAR_RTOL`` at both ends of the interval (exactly so for a
product of powers, whose log is linear). Where it does not, or where the estimate sits on
a prior's bound, the interval is the profile likelihood's: the values at which the
objective, minimised over every other parameter, rises by ``Z90^2``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from chalk.applications.fit.identify import Identification, identify
from chalk.applications.fit.system import System
from chalk.solvers.limits import refuse_beyond_limits
from chalk.solvers.tolerances import LONG_WORK
from chalk.symbolic.errors import NoSolution, UsageError
from chalk.symbolic.uncertain import Z90

LINEAR_RTOL = 0.1  # how far the objective's rise may stray from Z90^2 and stay "near-linear"
BOUND_ATOL = 1e-6  # in ln: an estimate this close to a prior's bound is on it
FAILED = 1e3  # the standardised residual of a prediction with no positive value
PROFILE_SPAN = 30.0  # in ln: a profile that has not risen by then is unbounded on that side


@dataclass(frozen=True)
class Solved:
    """The raw outcome: log estimates, covariance, residuals and how each interval came."""

    x: np.ndarray
    covariance: np.ndarray
    residuals: np.ndarray  # standardised, observations only
    weights: np.ndarray
    jacobian: np.ndarray  # d ln prediction / d ln parameter
    intervals: list  # per parameter: (low, high) in ln, or None if not identified
    methods: list[str]
    identification: Identification
    evaluations: int


# Where each robust loss bends, in standard deviations: the usual tuning constants that
# keep 95% of least squares' efficiency when the noise is in fact normal (soft_l1 is a
# smooth Huber loss and takes Huber's constant).
BEND = {"linear": 1.0, "soft_l1": 1.345, "huber": 1.345, "cauchy": 2.385}


def _rho(loss: str, z2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The loss and its derivative, as functions of the squared residual, scaled so
    that both match least squares for small residuals."""
    c2 = BEND[loss] ** 2
    u = z2 / c2
    if loss == "soft_l1":
        root = np.sqrt(1 + u)
        return c2 * 2 * (root - 1), 1 / root
    if loss == "cauchy":
        return c2 * np.log1p(u), 1 / (1 + u)
    if loss == "huber":
        big = u > 1
        safe = np.sqrt(np.where(big, u, 1.0))
        return c2 * np.where(big, 2 * safe - 1, u), np.where(big, 1 / safe, 1.0)
    return z2, np.ones_like(z2)


class _Objective:
    def __init__(self, system: System, loss: str):
        self.system = system
        self.loss = loss
        priors = [(k, p.prior) for k, p in enumerate(system.parameters)
                  if p.prior.kind in ("normal", "lognormal")]
        self.prior_index = np.array([k for k, _ in priors], dtype=int)
        self.prior_mean = np.array([math.log(s.nominal) for _, s in priors])
        self.prior_sd = np.array([s.log_sd for _, s in priors])
        self.evaluations = 0

    def standardised(self, x, jacobian=False):
        self.evaluations += 1
        out = self.system.predict(x, jacobian)
        predicted, jac = out if jacobian else (out, None)
        z = (predicted - self.system.observed) / self.system.sigma
        bad = ~np.isfinite(z)
        z[bad] = FAILED
        if jacobian:
            jac = jac / self.system.sigma[:, None]
            jac[bad] = 0.0
            jac[~np.isfinite(jac)] = 0.0
        return z, jac

    def prior_rows(self, x, p):
        residual = (x[self.prior_index] - self.prior_mean) / self.prior_sd
        rows = np.zeros((len(self.prior_index), p))
        rows[np.arange(len(self.prior_index)), self.prior_index] = 1 / self.prior_sd
        return residual, rows

    def robust(self, x):
        z, _ = self.standardised(x)
        value, _ = _rho(self.loss, z * z)
        return np.concatenate([np.sign(z) * np.sqrt(value), self.prior_rows(x, len(x))[0]])

    def robust_jacobian(self, x):
        z, jac = self.standardised(x, True)
        value, slope = _rho(self.loss, z * z)
        root = np.sqrt(value)
        small = np.abs(z) < 1e-8
        factor = np.where(small, 1.0, slope * np.abs(z) / np.where(small, 1.0, root))
        return np.vstack([factor[:, None] * jac, self.prior_rows(x, len(x))[1]])

    def weighted(self, x, weights):
        """The objective with the weights frozen (what the intervals describe)."""
        z, _ = self.standardised(x)
        prior = self.prior_rows(x, len(x))[0]
        return float(np.sum(weights * z * z) + np.sum(prior * prior))


def solve(system: System, loss: str = "linear") -> Solved:
    """Fit ``system``; raise :class:`NoSolution` if the start has no prediction, and
    :class:`UsageError` with the estimate if it would pass ``LONG_WORK``'s limits."""
    from scipy.optimize import least_squares

    refuse_too_large(system)
    p = len(system.parameters)
    low = np.array([_bound(q.prior, 0) for q in system.parameters])
    high = np.array([_bound(q.prior, 1) for q in system.parameters])
    x0 = np.array([math.log(q.prior.nominal) for q in system.parameters])
    objective = _Objective(system, loss)
    z0, _ = objective.standardised(x0)
    if np.any(z0 == FAILED):
        i = int(np.argmax(z0 == FAILED))
        quantity, subject = system.describe(i)
        raise NoSolution(quantity, "the relations give no positive value at the priors' "
                         "middles" + (f" for subject {subject}" if subject else "")
                         + "; narrow the priors towards plausible values")
    options = dict(bounds=(low, high), method="trf", x_scale=1.0, ftol=1e-12, xtol=1e-12,
                   gtol=1e-12, max_nfev=200 * (p + 1))
    if loss == "cauchy":  # not convex: start where the convex soft_l1 ends
        objective.loss = "soft_l1"
        x0 = least_squares(objective.robust, x0, jac=objective.robust_jacobian, **options).x
        objective.loss = loss
    x = least_squares(objective.robust, x0, jac=objective.robust_jacobian, **options).x
    z, jac_std = objective.standardised(x, True)
    _, weights = _rho(loss, z * z)
    prior_res, prior_rows = objective.prior_rows(x, p)
    design = np.vstack([np.sqrt(weights)[:, None] * jac_std, prior_rows])
    covariance = np.linalg.pinv(design.T @ design, rcond=1e-12, hermitian=True)
    identification = identify(jac_std)
    intervals, methods = [], []
    for k in range(p):
        if not identification.identified[k]:
            intervals.append(None)
            methods.append("not identified")
            continue
        span = _linear(objective, x, covariance, k, weights, low, high)
        if span is not None:
            intervals.append(span)
            methods.append("Jacobian (near-linear)")
        else:
            intervals.append(_profile(objective, x, covariance, k, weights, low, high))
            methods.append("profile likelihood")
    return Solved(x, covariance, z, weights, jac_std * system.sigma[:, None], intervals,
                  methods, identification, objective.evaluations)


def refuse_too_large(system: System) -> None:
    """Refuse, before any work, a fit whose measured cost per observation per unknown
    (``LONG_WORK.fit_seconds_per_cell``) or dense Jacobian would pass the limits. With
    an unknown per subject or group, unknowns grow with the observations, and so the
    cost with their square: the count suggested allows for that."""
    observations, unknowns = len(system.observed), len(system.parameters)
    cells = float(observations) * unknowns
    per_group = any(q.group for q in system.parameters)
    refuse_beyond_limits(f"a fit of {observations:,} observations and {unknowns:,} unknowns",
                         LONG_WORK.fit_seconds_per_cell * cells,
                         8.0 * LONG_WORK.fit_copies * cells, observations,
                         "fit about {fits} observations or fewer at a time"
                         + (" (fewer subjects)" if per_group else ""),
                         power=2.0 if per_group else 1.0)


def _bound(prior, side: int) -> float:
    if prior.kind in ("uniform", "loguniform"):
        return math.log((prior.a, prior.b)[side])
    return (-np.inf, np.inf)[side]


def _linear(objective, x, covariance, k, weights, low, high):
    """The Jacobian interval of parameter ``k`` if the objective agrees with it, else
    None."""
    sd = math.sqrt(max(covariance[k, k], 0.0))
    if sd == 0 or x[k] - low[k] < BOUND_ATOL or high[k] - x[k] < BOUND_ATOL:
        return None
    direction = covariance[:, k] / sd
    base = objective.weighted(x, weights)
    for sign in (1, -1):
        point = x + sign * Z90 * direction
        if np.any(point < low) or np.any(point > high):
            return None
        rise = objective.weighted(point, weights) - base
        if abs(rise / Z90 ** 2 - 1) > LINEAR_RTOL:
            return None
    return x[k] - Z90 * sd, x[k] + Z90 * sd


def _profile(objective, x, covariance, k, weights, low, high):
    """Where the profile of the frozen-weight objective rises by ``Z90^2`` on each side
    (a prior's bound, or +-``PROFILE_SPAN``, if it never does)."""
    from scipy.optimize import brentq, least_squares

    p = len(x)
    rest = [j for j in range(p) if j != k]
    root_w = np.sqrt(weights)
    start = {"x": x[rest].copy()}

    def profiled(value):
        def residual(y):
            full = x.copy()
            full[rest], full[k] = y, value
            z, _ = objective.standardised(full)
            return np.concatenate([root_w * z, objective.prior_rows(full, p)[0]])

        def jacobian(y):
            full = x.copy()
            full[rest], full[k] = y, value
            _, jac = objective.standardised(full, True)
            return np.vstack([root_w[:, None] * jac, objective.prior_rows(full, p)[1]])[:, rest]

        if not rest:
            r = residual(np.array([]))
            return float(r @ r)
        y0 = np.clip(start["x"], low[rest] + 1e-12, high[rest] - 1e-12)
        out = least_squares(residual, y0, jac=jacobian, bounds=(low[rest], high[rest]),
                            method="trf", ftol=1e-10, xtol=1e-10, gtol=1e-10)
        start["x"] = out.x
        return 2 * out.cost

    target = objective.weighted(x, weights) + Z90 ** 2
    sd = math.sqrt(max(covariance[k, k], 0.0)) or 0.1
    ends = []
    for sign, edge in ((-1, low[k]), (1, high[k])):
        start["x"] = x[rest].copy()
        inner, step = 0.0, Z90 * sd
        found = None
        while True:
            outer = min(step, abs(edge - x[k]), PROFILE_SPAN)
            if outer <= inner:
                found = x[k] + sign * inner
                break
            if profiled(x[k] + sign * outer) >= target:
                found = brentq(lambda t, sign=sign: profiled(x[k] + sign * t) - target,
                               inner, outer, xtol=1e-5)
                found = x[k] + sign * found
                break
            inner, step = outer, step * 2
        ends.append(found)
    return ends[0], ends[1]


def check_loss(loss: str) -> str:
    from chalk.applications.fit.spec import LOSSES

    if loss not in LOSSES:
        raise UsageError(f"loss {loss!r} is not one of {', '.join(LOSSES)}")
    return loss
