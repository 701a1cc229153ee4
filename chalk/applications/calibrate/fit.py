"""Partial pooling of serving efficiencies in log space, fitted to measured rates.

The model, for a row ``i`` of group ``k`` (its chip and engine) and each efficiency
``j`` (flops, HBM bandwidth, scale-up bandwidth: :data:`~.rows.EFFICIENCIES`)::

    log measured_i = log rate_i(exp(x_k)) + e_i,      e_i ~ N(0, sigma_a^2)
    x_kj = mu_j + u_kj,                                u_kj ~ N(0, tau^2)

``rate_i`` is chalk's answer for the row's question at those efficiencies
(:meth:`~chalk.applications.calibrate.rows.Row.rates`); ``mu`` is the shared log
efficiency (flat prior), ``u`` a group's deviation under a normal prior whose width
``tau`` is *stated* (:data:`PRIOR_WIDTH` unless the caller gives another), and
``sigma_a`` the scatter between measurements of the row's architecture ``a`` (dense or
MoE; one scatter where the rows have one architecture, or fewer than
:data:`SCATTER_ROWS` of one of them: the data could not fix its own), estimated from that
architecture's residuals with the degrees of freedom the fit spent on its rows (``n_a -
edf_a``, edf_a the hat matrix's diagonal summed over them). A mixture of experts carries
physics the relations state at its limit (expert load balance, small expert matrix
products, the exposed all-to-all), so its rows scatter more about the fitted rates than
dense rows do; one scatter for both would weigh the MoE rows as heavily as the dense
ones in every group they share and give the dense rows intervals too wide and the MoE
rows too narrow. The
estimate is the posterior mode (penalised least squares, Levenberg-Marquardt on
one-sided finite-difference slopes) and the covariance its Laplace approximation,
``(A'WA + P)^-1`` with ``W`` each row's ``1 / sigma_a^2`` and ``P`` the prior precision.
``tau = 0`` is complete
pooling: one set of efficiencies for every group.

An efficiency of :data:`~.rows.COMMUNICATION` that no row's answer depends on (no row
states an expert-parallel layout, so none waits on an all-to-all) is not identified: its
shared value gets the same prior as a deviation, centred on 1 (the bound), instead of the
flat one, so the fit stays defined; it is reported as not identified and a prediction
that depends on it is refused (:func:`~.predict.predict_row`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from chalk.applications.calibrate.rows import COMMUNICATION, EFFICIENCIES, Row
from chalk.symbolic.errors import UsageError

# Stated prior width of a group's log-efficiency deviation from the shared value: a
# group's efficiency within a factor exp(1.645 * 0.5) = 2.3 of the shared one at 90%.
# Measured/bound over the shipped rows runs from about 0.05 to 0.9 (benchmarks/
# serving_bounds.py), a spread of this order between chips and engines.
PRIOR_WIDTH = 0.5
INFORMS = 1e-6  # sum of squared slopes below this: the rows do not inform an efficiency
# Smallest over largest singular value of the rows' slopes (as unit directions) below
# which the efficiencies move only together: copies of one question give rounding, 1e-16;
# two questions whose FLOP/s shares differ by 1% give about 1e-2
SEPARABLE = 1e-8
# An efficiency is named as moving with the others when its share of that joint direction
# is at least this fraction of the largest share
NAMED_SHARE = 1e-3
# Rows each architecture needs for a scatter of its own (else one scatter for every row):
# ten rows leave it some 8 degrees of freedom after the parameters they inform, a scatter
# known to about 1 / sqrt(2 x 8) = 25%; with fewer it is too loose to weigh rows by (four
# MoE rows of equal noise gave the links' 90% interval 20 covers in 20, not 16-19).
SCATTER_ROWS = 10
J = len(EFFICIENCIES)
MAX_ITERATIONS = 100
# Change of the objective (chi-square units) at which the fit has converged: 1/270 of
# the 2.71 that moves a 90% interval's end, so smaller changes move no stated figure.
TOLERANCE = 0.01
DAMPINGS = (0.0, 1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0)  # Marquardt's, relative to the diagonal
START_FACTORS = (1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0)  # the grid a fit starts from, x median
SMALL_STEP = 1e-4  # or a step under this in every log efficiency (0.01% of the value)


@dataclass(frozen=True)
class Fitted:
    """The posterior mode and its Laplace covariance.

    Attributes
    ----------
    groups : tuple of str
        The groups with a deviation, in the parameter order.
    theta : ndarray
        ``[mu per efficiency..., u of the first efficiency per group..., u of the next
        per group..., v of the first efficiency per family..., ...]``, efficiencies in
        the order of :data:`~.rows.EFFICIENCIES` (only the ``mu`` under complete pooling).
    covariance : ndarray
    sigma : float
        Residual scatter in log rate (with a scatter per architecture, their pooled
        summary: the residuals' root mean square over every row's degrees of freedom).
    dof : float
        ``n - edf``, the degrees of freedom ``sigma`` rests on.
    prior_width : float
    log_rates, slopes : ndarray
        Each row's fitted log rate and d log rate / d log efficiency (n × J).
    informed : ndarray of bool
        Per group and efficiency (G × J): whether any of the group's rows depends on it.
    families : tuple of str
        Architectures with their own offset ``v`` from the shared values (``moe``), for
        groups named ``chip/engine/architecture``; the first architecture in sorted order
        (``dense``) is the reference and has none.
    """

    groups: tuple[str, ...]
    theta: np.ndarray
    covariance: np.ndarray
    sigma: float
    dof: float
    prior_width: float
    log_rates: np.ndarray
    slopes: np.ndarray
    informed: np.ndarray
    families: tuple[str, ...] = ()
    # (architecture, sigma_a, n_a - edf_a) per architecture, where the rows have several
    scatters: tuple[tuple[str, float, float], ...] = ()

    def scatter(self, architecture: str | None = None) -> tuple[float, float]:
        """The scatter of a row of ``architecture`` and the degrees of freedom it rests on
        (the one scatter where the calibration has no scatter per architecture)."""
        for kind, sigma, dof in self.scatters:
            if kind == architecture:
                return sigma, dof
        return self.sigma, self.dof

    @property
    def pooled(self) -> bool:
        return self.prior_width == 0

    @property
    def identified(self) -> np.ndarray:
        """Per efficiency (J): whether any row's answer depends on it (a communication
        efficiency no row waits on is not, and predictions that need it are refused)."""
        return self.informed.any(axis=0)

    def log_efficiency(self, group: str | None, family: str | None = None) -> np.ndarray:
        """A group's log efficiencies (a group not fitted: the shared values of its
        architecture; ``family`` for the shared values of an architecture)."""
        return self.gradient(group, family) @ self.theta

    def gradient(self, group: str | None, family: str | None = None) -> np.ndarray:
        """d (log efficiencies of ``group``) / d theta, J × P (``group`` None: the
        shared values, of architecture ``family`` if given)."""
        out = np.zeros((J, len(self.theta)))
        out[:, :J] = np.eye(J)
        size, count = len(self.groups), len(self.families)
        efficiency = np.arange(J)
        if not self.pooled and group in self.groups:
            out[efficiency, J + efficiency * size + self.groups.index(group)] = 1.0
        family = family_of(group) if family is None else family
        if not self.pooled and family in self.families:
            out[efficiency, J + J * size + efficiency * count + self.families.index(family)] \
                = 1.0
        return out

    def parameter_variance(self, group: str | None, slopes: np.ndarray,
                           family: str | None = None) -> float:
        """Variance of a log rate with these slopes, from the efficiencies' uncertainty
        (a group not fitted adds its deviation's prior, ``tau^2`` per efficiency)."""
        a = slopes @ self.gradient(group, family)
        variance = float(a @ self.covariance @ a)
        if not self.pooled and group not in self.groups:
            variance += self.prior_width ** 2 * float(slopes @ slopes)
        return variance


def fit_rows(rows: Sequence[Row], prior_width: float = PRIOR_WIDTH,
             start: Fitted | None = None) -> Fitted:
    """Fit the shared efficiencies and each group's deviation to ``rows``.

    Parameters
    ----------
    rows : sequence of Row
    prior_width : float
        ``tau``, the stated width of a group's deviation (0: complete pooling).
    start : Fitted, optional
        A previous fit to start from (cross-validation refits from the full fit).

    Raises
    ------
    UsageError
        Too few rows, an efficiency no row depends on at the estimate, efficiencies
        the rows move only together, a row chalk has no answer for where the fit
        starts, or no convergence in
        :data:`MAX_ITERATIONS` steps.
    """
    if prior_width < 0 or not np.isfinite(prior_width):
        raise UsageError(f"the prior width must be a finite number, 0 or more, not "
                         f"{prior_width}")
    n = len(rows)
    if n < 3:
        raise UsageError(f"{n} measurement(s) cannot calibrate two efficiencies and a "
                         "scatter; give at least 3")
    groups = () if prior_width == 0 else tuple(sorted({r.group for r in rows}))
    member = np.array([groups.index(r.group) if groups else 0 for r in rows])
    # each architecture but the first (the reference) gets an offset, pooled as a group is
    kinds = sorted({family_of(g) for g in groups} - {None})
    families = tuple(kinds[1:])
    size = J + J * len(groups) + J * len(families)
    design = np.zeros((n, J, size))  # d x_i / d theta
    design[:, :, :J] = np.eye(J)
    for j in range(J):
        if groups:
            design[np.arange(n), j, J + j * len(groups) + member] = 1.0
        for f, family in enumerate(families):
            inside = np.array([family_of(r.group) == family for r in rows])
            design[inside, j, J + J * len(groups) + j * len(families) + f] = 1.0
    base = np.zeros(size)  # the prior precision (a communication efficiency: see _held)
    base[J:] = 1 / prior_width ** 2 if groups else 0.0
    y = np.log([r.measured for r in rows])
    # a scatter for each architecture's rows (one where the rows have one, or where one
    # architecture has too few rows to fix its own): see the module
    architectures = sorted({r.architecture for r in rows})
    if min(sum(r.architecture == a for r in rows) for a in architectures) < SCATTER_ROWS:
        architectures = ["all"]
    cls = np.array([architectures.index(r.architecture) if len(architectures) > 1 else 0
                    for r in rows])
    masks = [cls == c for c in range(len(architectures))]

    def scatter(a, residual, sig, precision):
        """Each architecture's scatter from its residuals and the degrees of freedom the
        fit spent on its rows (the hat matrix's diagonal summed over them), at the
        weights of the scatters ``sig`` so far."""
        w = 1 / sig[cls] ** 2
        covariance = np.linalg.pinv(a.T @ (a * w[:, None]) + np.diag(precision))
        hat = np.einsum("ip,pq,iq->i", a, covariance, a) * w
        dof = np.array([max(m.sum() - hat[m].sum(), 1.0) for m in masks])
        out = np.array([max(float(np.sqrt(residual[m] @ residual[m] / d)), 1e-6)
                        for m, d in zip(masks, dof, strict=True)])
        return out, dof

    def evaluate(thetas, strict=True):
        """Log rates (m × n) and slopes (m × n × J) at m parameter vectors, one
        evaluation per row (NaN where chalk refuses a point, unless ``strict``)."""
        x = np.einsum("ijp,mp->mij", design, np.atleast_2d(thetas))
        found = [r.log_rates_and_slopes(x[:, i], strict) for i, r in enumerate(rows)]
        return (np.stack([f[0] for f in found], axis=1),
                np.stack([f[1] for f in found], axis=1))

    def feasible(theta):  # every group's efficiencies at most 1
        return bool((design @ theta <= 0).all())

    def descend(theta, sigma) -> Fitted:
        """The mode reached from ``theta`` (Levenberg-Marquardt, below)."""
        log_rates, slopes = (v[0] for v in evaluate(theta))
        # whether a row waits on an all-to-all is structural: the start's slopes say it
        precision = _held(base, slopes, prior_width)
        for _ in range(MAX_ITERATIONS):
            a = np.einsum("ij,ijp->ip", slopes, design)  # d log rate_i / d theta
            residual = y - log_rates
            # the scatter from the residuals and the degrees of freedom the fit spent on
            # them (pinv: on the way, no row may yet depend on an efficiency)
            sigma, _ = scatter(a, residual, sigma, precision)
            w = 1 / sigma[cls] ** 2
            hessian = a.T @ (a * w[:, None]) + np.diag(precision)
            gradient = a.T @ (residual * w) - precision * theta
            objective = residual ** 2 @ w + precision @ theta ** 2
            # Levenberg-Marquardt with every damping tried at once (one evaluation per row):
            # the max() of the regimes makes the objective piecewise smooth, so the
            # undamped step often overshoots a kink
            steps = [np.linalg.lstsq(hessian + d * np.diag(np.diag(hessian)), gradient,
                                     rcond=None)[0] for d in DAMPINGS]
            trials = np.array([theta + s for s in steps if feasible(theta + s)])
            if not len(trials):
                break
            trial_rates, trial_slopes = evaluate(trials, strict=False)
            r = y - trial_rates
            objectives = (r ** 2) @ w + (trials ** 2) @ precision
            # a step where chalk refuses some row (or its slopes) is not taken
            objectives[~np.isfinite(objectives) | ~np.isfinite(trial_slopes).all(axis=(1, 2))] \
                = np.inf
            best = int(np.argmin(objectives))
            # the gain is measured at this iteration's weights on both sides: the scatter
            # is re-estimated from the residuals at each iteration, so the objective itself
            # stays near the degrees of freedom however far the fit is from its mode, and
            # comparing it across iterations stopped fits short of it
            gain = objective - objectives[best]
            if gain < 0:  # no step lowers it: the mode
                break
            step = trials[best] - theta
            theta, log_rates, slopes = trials[best], trial_rates[best], trial_slopes[best]
            if gain <= TOLERANCE or np.abs(step).max() < SMALL_STEP:
                break
        else:
            raise UsageError(f"the calibration of these {n} measurements did not settle in "
                             f"{MAX_ITERATIONS} steps; try another prior width")
        a = np.einsum("ij,ijp->ip", slopes, design)
        _check_informed(a, rows)
        w = 1 / sigma[cls] ** 2
        _check_separable(a[:, :J], precision[:J], rows)
        covariance = np.linalg.inv(a.T @ (a * w[:, None]) + np.diag(precision))
        # symmetric as the matrix it inverts: inv leaves rounding that a stored calibration's
        # reader would refuse where the links and the flops trade off (ill-conditioned)
        covariance = (covariance + covariance.T) / 2
        _, dof = scatter(a, y - log_rates, sigma, precision)
        informed = np.zeros((max(len(groups), 1), J), dtype=bool)
        for k in range(informed.shape[0]):
            inside = member == k
            informed[k] = (slopes[inside] ** 2).sum(axis=0) > INFORMS
        scatters = tuple(zip(architectures, sigma.tolist(), dof.tolist(), strict=True)) \
            if len(architectures) > 1 else ()
        whole = float(np.sqrt(((y - log_rates) ** 2).sum() / dof.sum()))
        return Fitted(groups, theta, covariance, whole if scatters else float(sigma[0]),
                      float(dof.sum()), prior_width, log_rates, slopes, informed, families,
                      scatters)

    starts = _starts(rows, size, groups, families, member, start, evaluate)
    sigma = np.full(len(architectures), 0.3)
    if start is not None:
        sigma[:] = [start.scatter(k)[0] for k in architectures]
    fits, refusals = [], []
    for theta in starts:
        try:
            fits.append(descend(theta, sigma))
        except UsageError as exc:  # from this start; another may reach a mode
            refusals.append(exc)
    if not fits:
        raise refusals[0]
    # the lowest posterior objective, every fit's residuals scaled by one scatter for each
    # architecture
    common = np.array([min(f.scatter(k)[0] for f in fits) for k in architectures])
    return min(fits, key=lambda f: float((y - f.log_rates) ** 2 @ (1 / common[cls] ** 2))
               + float(_held(base, f.slopes, prior_width) @ f.theta ** 2))


def _starts(rows, size, groups, families, member, start, evaluate) -> list[np.ndarray]:
    """Where the descent starts: the previous fit's values where it has them; else the
    best, by squared log error, of a grid of shared efficiencies about the median
    measured/bound (a fit started with both efficiencies equal can sit where every row
    is memory-bound and the flops have no slope to follow), and that point with each
    group moved to the grid pair best for its own rows. A group started on the wrong
    side of the regime change of all its rows never sees the slope that would move it
    (every row memory-bound: no flops slope), so a shared start alone can leave it there.
    """
    theta = np.zeros(size)
    size_g, size_f = len(groups), len(families)
    if start is not None:
        theta[:J] = start.theta[:J]
        for k, group in enumerate(groups):
            if not start.pooled and group in start.groups:
                i, size_s = start.groups.index(group), len(start.groups)
                for j in range(J):
                    theta[J + j * size_g + k] = start.theta[J + j * size_s + i]
        for f, family in enumerate(families):
            if not start.pooled and family in start.families:
                v = start.log_efficiency(None, family) - start.theta[:J]
                theta[J + J * size_g + np.arange(J) * size_f + f] = v
        return [theta]
    y = np.log([r.measured for r in rows])
    centre = float(np.median(y - evaluate(theta)[0][0]))
    shifts = np.log(START_FACTORS)
    grid = np.stack(np.meshgrid(*[shifts] * J), -1).reshape(-1, J)
    points = np.minimum(centre + grid, -1e-3)
    candidates = np.zeros((len(points), size))
    candidates[:, :J] = points
    squares = (y - evaluate(candidates, False)[0]) ** 2
    squares[~np.isfinite(squares)] = np.inf  # a start where chalk refuses some row
    shared = int(np.argmin(squares.sum(axis=1)))
    starts = [candidates[shared]]
    if groups:
        own = candidates[shared].copy()
        for k in range(size_g):
            point = points[int(np.argmin(squares[:, member == k].sum(axis=1)))]
            own[J + np.arange(J) * size_g + k] = point - points[shared]
        if (own != starts[0]).any():
            starts.append(own)
    return starts


def family_of(group: str | None) -> str | None:
    """The architecture a group is named for (``moe`` of ``b200/vllm/moe``), or None."""
    parts = (group or "").split("/")
    return parts[2] if len(parts) == 3 else None


def _held(precision: np.ndarray, slopes: np.ndarray, prior_width: float) -> np.ndarray:
    """``precision`` with the shared value of each communication efficiency no row depends
    on (``slopes``, n × J, all zero for it) given a deviation's prior about 1, the bound,
    in place of the flat one: nothing in the rows could fix it, and the fit must stay
    defined (it is reported as not identified)."""
    out = precision.copy()
    width = prior_width if prior_width > 0 else PRIOR_WIDTH
    for name in COMMUNICATION:
        j = EFFICIENCIES.index(name)
        if (slopes[:, j] ** 2).sum() <= INFORMS:
            out[j] = 1 / width ** 2
    return out


def _check_separable(shared: np.ndarray, precision: np.ndarray, rows) -> None:
    """Refuse shared efficiencies the rows move only together: several copies of one
    question, or questions that all change with the same mix of FLOP/s and bandwidth, fix
    a combination but not each one, and no interval of either could be stated.

    ``shared`` holds each row's slopes d log rate / d log efficiency (n × J); only the
    efficiencies under the flat prior (``precision`` 0) are checked, since a held one has
    its prior. The slopes are compared as directions (each column scaled to length 1),
    so the check does not depend on the scatter that weighs the rows.
    """
    flat = [j for j in range(J) if precision[j] == 0 and (shared[:, j] ** 2).sum() > INFORMS]
    if len(flat) < 2:
        return
    columns = shared[:, flat] / np.linalg.norm(shared[:, flat], axis=0)
    _, values, vectors = np.linalg.svd(columns, full_matrices=False)
    if values[-1] > SEPARABLE * values[0]:
        return
    direction = np.abs(vectors[-1])
    moved = [EFFICIENCIES[j] for j, v in zip(flat, direction, strict=True)
             if v >= NAMED_SHARE * direction.max()]
    raise UsageError(f"{' and '.join(moved)} cannot be told apart from these {len(rows)} "
                     "measurements: every one changes with them alike, so they fix a "
                     "combination but not each; add measurements of another batch or "
                     "request shape, which one of them bounds more than the other")


def _check_informed(a: np.ndarray, rows) -> None:
    """Refuse a shared compute or HBM efficiency that no row depends on (nothing could
    fix it); a communication efficiency is held instead (:func:`_held`)."""
    for j, name in enumerate(EFFICIENCIES):
        if name in COMMUNICATION:
            continue
        if (a[:, j] ** 2).sum() <= INFORMS:
            bound = "memory" if j == 0 else "compute"
            raise UsageError(f"{name} cannot be calibrated from these {len(rows)} "
                             f"measurements: every one is {bound}-bound at the estimate, "
                             "so none depends on it; add measurements bound by it")
