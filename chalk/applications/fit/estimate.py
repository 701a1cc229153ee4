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
objective, minimised over every other parameter, rises by ``Z90^2`` (:func:`_profile`:
never re-solved at the estimate, each point solved from several starts; an end it does
not reach within ``PROFILE_SPAN`` is None).

An unidentified parameter's candidate combination is walked along the observations'
ridge (:func:`_walk_ridge`) to say whether it is fixed, locally fixed or not fixed; one
no observation depends on at the estimate gets the profile of the observations alone,
which may bound it from one side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from chalk.applications.fit.identify import Identification, identify
from chalk.applications.fit.system import System
from chalk.solvers.bulk.limits import refuse_beyond_limits
from chalk.solvers.tolerances import LONG_WORK
from chalk.symbolic.errors import NoSolution, UsageError
from chalk.symbolic.uncertain import Z90

LINEAR_RTOL = 0.1  # how far the objective's rise may stray from Z90^2 and stay "near-linear"
BOUND_ATOL = 1e-6  # in ln: an estimate this close to a prior's bound is on it
FAILED = 1e3  # the standardised residual of a prediction with no positive value
PROFILE_SPAN = 30.0  # in ln: a profile that has not risen by then is unbounded on that side
LINEAR_BLOCK = 2_000_000  # predictions evaluated at once when checking Jacobian intervals
RIDGE_RTOL = 0.1  # a combination is fixed while it stays within this share of its sd
RIDGE_STEP = 0.05  # in ln: the first move along the ridge, doubled out to the prior's range
RIDGE_RISE = 0.01  # share of Z90^2 the observations' objective may rise and stay on the ridge
PRIOR_REACH = 3.0  # a distribution prior's range walked: this many sd of its log each way


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
    ridges: dict = field(default_factory=dict)  # unidentified parameter -> Ridge


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
        self.progress = None  # the progress line's task counting evaluations, while one runs

    def standardised(self, x, jacobian=False):
        self.evaluations += 1
        if self.progress is not None:
            self.progress.advance()
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

    def weighted_many(self, xs, weights):
        """:meth:`weighted` (priors included) at each row of ``xs``."""
        self.evaluations += len(xs)
        z = (self.system.predict_many(xs) - self.system.observed) / self.system.sigma
        z[~np.isfinite(z)] = FAILED
        prior = (xs[:, self.prior_index] - self.prior_mean) / self.prior_sd
        return np.sum(weights * z * z, axis=1) + np.sum(prior * prior, axis=1)

    def weighted(self, x, weights, priors=True):
        """The objective with the weights frozen (what the intervals describe); with
        ``priors`` False, the observations' part alone."""
        z, _ = self.standardised(x)
        prior = self.prior_rows(x, len(x))[0] if priors else np.zeros(0)
        return float(np.sum(weights * z * z) + np.sum(prior * prior))


def solve(system: System, loss: str = "linear") -> Solved:
    """Fit ``system``; raise :class:`NoSolution` if the start has no prediction, and
    :class:`UsageError` with the estimate if it would pass ``LONG_WORK``'s limits."""
    from scipy.optimize import least_squares

    from chalk.solvers.bulk.progress import task

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
    with task("fit: least-squares evaluations") as objective.progress:
        if loss == "cauchy":  # not convex: start where the convex soft_l1 ends
            objective.loss = "soft_l1"
            x0 = least_squares(objective.robust, x0, jac=objective.robust_jacobian,
                               **options).x
            objective.loss = loss
        x = least_squares(objective.robust, x0, jac=objective.robust_jacobian, **options).x
    objective.progress = None
    z, jac_std = objective.standardised(x, True)
    _, weights = _rho(loss, z * z)
    prior_res, prior_rows = objective.prior_rows(x, p)
    design = np.vstack([np.sqrt(weights)[:, None] * jac_std, prior_rows])
    covariance = np.linalg.pinv(design.T @ design, rcond=1e-12, hermitian=True)
    identification = identify(jac_std)
    linear = _linear(objective, x, covariance,
                     [k for k in range(p) if identification.identified[k]], weights, low, high)
    intervals, methods, ridges = [], [], {}
    with task("fit: intervals", p) as progress:
        for k in range(p):
            interval, method, ridge = _interval(objective, x, covariance, k, identification,
                                                linear, weights, low, high)
            intervals.append(interval)
            methods.append(method)
            if ridge is not None:
                ridges[k] = ridge
            progress.advance()
    return Solved(x, covariance, z, weights, jac_std * system.sigma[:, None], intervals,
                  methods, identification, objective.evaluations, ridges)


def _interval(objective, x, covariance, k, identification, linear, weights, low, high):
    """Parameter ``k``'s interval (None if not identified), how it was found, and the
    ridge walked for an unidentified one with a candidate combination (else None)."""
    if not identification.identified[k]:
        combination = identification.combinations[k]
        if combination:
            return None, "not identified", _walk_ridge(
                objective, x, covariance, k, combination, identification.null, weights, low,
                high)
        # flat here; the observations alone may still bound one side
        return (_profile(objective, x, covariance, k, weights, low, high, priors=False),
                "profile likelihood (observations alone)", None)
    if linear[k] is not None:
        return linear[k], "Jacobian (near-linear)", None
    return (_profile(objective, x, covariance, k, weights, low, high), "profile likelihood",
            None)


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


def _linear(objective, x, covariance, ks, weights, low, high) -> dict:
    """The Jacobian interval of each parameter in ``ks`` where the objective agrees with
    it (else None): both ends of every interval evaluated together, in blocks of
    ``LINEAR_BLOCK`` predictions."""
    out, points, owners = {}, [], []
    for k in ks:
        sd = math.sqrt(max(covariance[k, k], 0.0))
        out[k] = None
        if sd == 0 or x[k] - low[k] < BOUND_ATOL or high[k] - x[k] < BOUND_ATOL:
            continue
        ends = [x + sign * Z90 * covariance[:, k] / sd for sign in (1, -1)]
        if any(np.any(e < low) or np.any(e > high) for e in ends):
            continue
        out[k] = (End(x[k] - Z90 * sd, Z90 * sd), End(x[k] + Z90 * sd, Z90 * sd))
        points += ends
        owners += [k, k]
    if not points:
        return out
    base = objective.weighted(x, weights)
    block = max(1, LINEAR_BLOCK // max(len(x), len(objective.system.observed)))
    for start in range(0, len(points), block):
        rises = objective.weighted_many(np.array(points[start:start + block]), weights) - base
        for k, rise in zip(owners[start:start + block], rises, strict=True):
            if abs(rise / Z90 ** 2 - 1) > LINEAR_RTOL:
                out[k] = None
    return out


def _inner(objective, x, k, value, root_w, low, high, starts, priors=True):
    """The frozen-weight objective minimised over every parameter but ``k`` (held at
    ``value``), from each of ``starts`` (values of the others): the least value found and
    where. Several starts because on a flat stretch one warm start can stop short of the
    minimum and report a worse one."""
    from scipy.optimize import least_squares

    p = len(x)
    rest = np.array([j for j in range(p) if j != k], dtype=int)

    def full(y):
        out = x.copy()
        out[rest], out[k] = y, value
        return out

    def residual(y):
        point = full(y)
        z, _ = objective.standardised(point)
        r = root_w * z
        return np.concatenate([r, objective.prior_rows(point, p)[0]]) if priors else r

    def jacobian(y):
        point = full(y)
        _, jac = objective.standardised(point, True)
        rows = root_w[:, None] * jac
        if priors:
            rows = np.vstack([rows, objective.prior_rows(point, p)[1]])
        return rows[:, rest]

    if not len(rest):
        r = residual(np.array([]))
        return float(r @ r), full(np.array([]))
    best, where, tried = math.inf, None, []
    for y0 in starts:
        y0 = np.clip(y0, low[rest] + 1e-12, high[rest] - 1e-12)
        if any(np.array_equal(y0, t) for t in tried):
            continue
        tried.append(y0)
        out = least_squares(residual, y0, jac=jacobian, bounds=(low[rest], high[rest]),
                            method="trf", ftol=1e-10, xtol=1e-10, gtol=1e-10)
        if 2 * out.cost < best:
            best, where = 2 * out.cost, full(out.x)
    return best, where


@dataclass(frozen=True)
class End:
    """One end of an interval, in ln: ``value``, or None where the profile did not rise
    by ``Z90^2`` within the searched range (``searched`` is how far it looked)."""

    value: float | None
    searched: float


def _profile(objective, x, covariance, k, weights, low, high, priors=True):
    """Where the profile of the frozen-weight objective rises by ``Z90^2`` on each side:
    an :class:`End` per side (at a prior's bound if it rises no further inside it; None
    past ``PROFILE_SPAN``). With ``priors`` False only the observations count: what
    they alone bound.

    The profile at the estimate is the objective there, known: it is never solved again
    (a fresh solve could stop short on a plateau and leave no sign change to bracket).
    Each other point starts from the estimate, from the previous point's optimum, from
    the covariance's straight-line guess and from the priors' middles, and keeps the
    best.
    """
    from scipy.optimize import brentq

    rest = [j for j in range(len(x)) if j != k]
    root_w = np.sqrt(weights)
    middle = np.array([math.log(objective.system.parameters[j].prior.nominal) for j in rest])
    variance = covariance[k, k]
    slope = covariance[rest, k] / variance if variance > 0 else np.zeros(len(rest))
    base = objective.weighted(x, weights, priors)
    target = base + Z90 ** 2
    sd = math.sqrt(max(variance, 0.0)) or 0.1
    ends = []
    for sign, edge in ((-1, low[k]), (1, high[k])):
        known = {0.0: base}
        previous = [x[rest]]

        def profiled(t, sign=sign, known=known, previous=previous):
            if t not in known:  # the prior's middle too: it may lie in another basin
                starts = (x[rest], previous[0], x[rest] + slope * sign * t, middle)
                known[t], point = _inner(objective, x, k, x[k] + sign * t, root_w, low,
                                         high, starts, priors)
                previous[0] = point[rest]
            return known[t]

        limit = min(abs(edge - x[k]), PROFILE_SPAN)
        inner, step = 0.0, Z90 * sd
        while True:
            outer = min(step, limit)
            if outer <= inner:  # never rose: the bound, or nothing within the span
                at_bound = abs(edge - x[k]) <= PROFILE_SPAN
                ends.append(End(x[k] + sign * inner if at_bound else None, limit))
                break
            if profiled(outer) >= target:
                try:
                    t = brentq(lambda t: profiled(t) - target, inner, outer, xtol=1e-5)
                    ends.append(End(x[k] + sign * t, limit))
                except ValueError:  # cannot happen with both ends known; say so if it does
                    ends.append(End(None, outer))
                break
            inner, step = outer, step * 2
    return tuple(ends)


@dataclass(frozen=True)
class Ridge:
    """A candidate combination checked along the observations' ridge.

    ``status`` is ``"fixed"`` (within ``RIDGE_RTOL`` of its sd everywhere the ridge was
    walked), ``"locally fixed"`` (only while the parameter stays within ``holds``, ln) or
    ``"not identified"`` (it moves at the first step); ``moved`` is the span of the
    combination's ln over the points walked, ``walked`` the parameter's ln range.
    """

    status: str
    holds: tuple[float, float]
    walked: tuple[float, float]
    moved: float


def _walk_ridge(objective, x, covariance, k, combination, null, weights, low, high):
    """Move parameter ``k`` along the null direction of the observations, re-fit the
    others to the observations alone at each step, and see whether ``combination`` (a
    tangent of the ridge at the estimate) keeps its value: out to ``k``'s prior range,
    doubling from ``RIDGE_STEP``, each side stopping where the observations' objective
    rises (the ridge leaves the priors' box)."""
    vector = np.zeros(len(x))
    for j, e in combination.items():
        vector[j] = e
    sd = math.sqrt(max(float(vector @ covariance @ vector), 0.0))
    tolerance = max(RIDGE_RTOL * sd, 1e-6)
    direction = null @ null[k]
    direction = direction / direction[k]
    rest = [j for j in range(len(x)) if j != k]
    root_w = np.sqrt(weights)
    base = objective.weighted(x, weights, priors=False)
    prior = objective.system.parameters[k].prior
    reach = (PROFILE_SPAN if prior.kind in ("uniform", "loguniform")
             else PRIOR_REACH * prior.log_sd)
    holds, walked, values = [0.0, 0.0], [0.0, 0.0], [0.0]
    first_failed = False
    for side, (sign, edge) in enumerate(((-1, low[k]), (1, high[k]))):
        limit = min(abs(edge - x[k]), reach, PROFILE_SPAN)
        previous, t, step, holding = x[rest], 0.0, RIDGE_STEP, True
        while t < limit:
            t = min(step, limit)
            step *= 2
            value = x[k] + sign * t
            starts = (x[rest] + sign * t * direction[rest], previous)
            cost, point = _inner(objective, x, k, value, root_w, low, high, starts,
                                 priors=False)
            if cost - base > RIDGE_RISE * Z90 ** 2:
                break
            previous = point[rest]
            walked[side] = t
            change = float(vector @ (point - x))
            values.append(change)
            if abs(change) > tolerance and holding:
                first_failed = first_failed or holds[side] == 0.0
                holding = False
            if holding:
                holds[side] = t
    # fixed only where it was seen to hold: a ridge that leaves the priors' box at once
    # was not walked, so the combination is at most locally fixed
    whole = all(holds[s] == walked[s] for s in (0, 1)) and max(walked) > 0
    status = "fixed" if whole else "not identified" if first_failed else "locally fixed"
    return Ridge(status, (x[k] - holds[0], x[k] + holds[1]),
                 (x[k] - walked[0], x[k] + walked[1]), max(values) - min(values))


def check_loss(loss: str) -> str:
    from chalk.applications.fit.spec import LOSSES

    if loss not in LOSSES:
        raise UsageError(f"loss {loss!r} is not one of {', '.join(LOSSES)}")
    return loss
