"""Newton's method in log space on many small systems at once.

Monte Carlo through a block torn at several quantities solves the same k equations
in k unknowns once per sample. Here every sample takes its Newton steps together, as
numpy arrays: the Jacobian by forward differences (k more residual evaluations per
step), every sample's k-by-k system inverted by Cramer's rule (up to three unknowns) or
one batched inverse, and a step that does not lower a sample's residual halved
(``BATCH_NEWTON``). A caller that predicts each sample's solution and inverse Jacobian
(solvers.bulk.prediction) takes one step with them instead (:func:`step_with`).
Two cheaper steps ride along, each taken only where it lowers the
residual: a first step for every sample with the Jacobian of the one nearest a solution,
and after each Newton step a second with the same Jacobian (the chord method). A sample
counts as solved only when every residual is within the tolerance; the caller checks the
solution on the whole block and hands every other sample to the one-at-a-time search, so
nothing here is a silent guess.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from chalk.solvers.tolerances import BATCH_NEWTON

# residual(log_x, index): the residuals, shape (k, m), of the samples ``index`` (m of
# them) at ln x = ``log_x`` (shape (k, m)); NaN where undefined
Residual = Callable[[np.ndarray, np.ndarray], np.ndarray]
# a Newton step as a function of the residuals: f -> -J⁻¹ f, per sample
Step = Callable[[np.ndarray], np.ndarray]


def solve(residual: Residual, start: np.ndarray, accept: float,
          polish: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Newton from ``start`` (ln x, shape (k, n); a column with NaN is not attempted).

    A sample within ``accept`` is solved; it takes further steps while they lower its
    residual, until every residual is within ``polish`` (as a scalar solution is polished).
    Every step evaluates the whole batch (finished samples ride along with a zero step)
    until at most a quarter of it is still iterating; those few are then gathered and
    iterated alone.

    Returns
    -------
    log_x : ndarray, shape (k, n)
        The last iterate of every sample.
    solved : ndarray of bool, shape (n,)
        Samples whose every residual is below ``accept`` at ``log_x``.
    """
    x = np.array(start, dtype=float)
    n = x.shape[1]
    solved = np.zeros(n, dtype=bool)
    alive = np.isfinite(x).all(axis=0)
    x[:, ~alive] = 0.0  # evaluated harmlessly, never reported
    f = residual(x, np.arange(n))
    with np.errstate(all="ignore"):
        x, f, size = _shared_steps(residual, x, f, alive, polish)
        _iterate(residual, x, f, size, alive, solved, accept, polish,
                 BATCH_NEWTON.iterations + 1)
    return x, solved


def inverse_jacobians(residual: Residual, log_x: np.ndarray) -> np.ndarray:
    """J⁻¹ of every sample at ``log_x`` (shape (k, n)), by forward differences: shape
    (unknown, equation, sample), NaN where J is singular or undefined."""
    index = np.arange(log_x.shape[1])
    with np.errstate(all="ignore"):
        inverse, regular = _inverse(_jacobian(residual, log_x, residual(log_x, index), index))
    inverse[:, :, ~regular] = np.nan
    return inverse


def step_with(residual: Residual, start: np.ndarray, inverse: np.ndarray,
              polish: float) -> tuple[np.ndarray, np.ndarray]:
    """Steps ``-H f`` from ``start`` (ln x, shape (k, n)) with each sample's own
    (predicted) inverse Jacobian H (shape (k, k, n)), as many as ``BATCH_NEWTON.chords``,
    each kept only where it lowers the residual, for every sample above ``polish``.
    Returns the iterates and each sample's largest residual there (NaN where undefined)."""
    n = start.shape[1]
    with np.errstate(all="ignore"):
        f = residual(start, np.arange(n))
        x, _, size = _chords(residual, start, f, np.ones(n, dtype=bool), polish,
                             lambda f: _step_with(inverse, f))
    return x, size


def _iterate(residual: Residual, x, f, size, alive, solved, accept, polish, steps) -> None:
    """Up to ``steps`` Newton steps (each with its chord steps) of the samples ``alive``,
    updating ``x`` and ``solved`` in place; the samples still iterating are gathered and
    go on alone once they are at most a quarter of those given."""
    n = x.shape[1]
    everyone = np.arange(n)
    for step in range(steps):
        solved |= alive & (size < accept)
        alive &= np.isfinite(size) & (size > polish)
        going = np.count_nonzero(alive)
        if not going:
            return
        if step and going <= n // 4:
            rest = np.flatnonzero(alive)
            x_rest, solved_rest = x[:, rest], solved[rest]
            _iterate(lambda log_x, index, rest=rest: residual(log_x, rest[index]),
                     x_rest, f[:, rest], size[rest], np.ones(rest.size, dtype=bool),
                     solved_rest, accept, polish, steps - step)
            x[:, rest] = x_rest
            solved[rest] = solved_rest
            return
        newton, regular = _factor(_jacobian(residual, x, f, everyone))
        alive &= regular
        moved, f, stuck = _damped(residual, x, f, alive, newton(f))
        alive &= ~stuck  # the end of that sample's search (or of its polishing)
        moved, f, size = _chords(residual, moved, f, alive, polish, newton)
        x[...] = moved


def _shared_steps(residual: Residual, x: np.ndarray, f: np.ndarray, alive: np.ndarray,
                  polish: float):
    """First steps for every sample with one Jacobian: that of the sample nearest a
    solution. Samples started at one point (a pilot's solution) differ there only by
    their pins, so a step gains about what a Newton step would, for one residual
    evaluation instead of k + 1 and no solve per sample. Returns the iterates, residuals
    and sizes."""
    size = _size(f)
    nearest = int(np.argmin(np.where(alive, size, np.inf)))
    if not (alive[nearest] and np.isfinite(size[nearest])):
        return x, f, size
    if not ((x == x[:, nearest:nearest + 1]).all(axis=0) | ~alive).all():
        return x, f, size  # own starts (predicted): one Jacobian fits them no better
    index = np.array([nearest])
    newton, regular = _factor(_jacobian(residual, x[:, index], f[:, index], index))
    if not regular[0]:
        return x, f, size
    return _chords(residual, x, f, alive, polish, newton, size)


def _chords(residual: Residual, x: np.ndarray, f: np.ndarray, alive: np.ndarray,
            polish: float, newton: Step, size: np.ndarray | None = None):
    """Up to ``BATCH_NEWTON.chords`` steps ``newton(f)`` with one Jacobian (the chord
    method) for the samples ``alive`` above ``polish``, each kept only where it lowers the
    sample's largest residual: the others stay where they were, nothing is decided here.
    Returns the iterates, residuals and sizes."""
    size = _size(f) if size is None else size
    for _ in range(BATCH_NEWTON.chords):
        moving = np.flatnonzero(alive & (size > polish))
        if not moving.size:
            break
        if moving.size > x.shape[1] // 4:  # most of the batch: whole arrays, no gathering
            step = newton(f)
            if moving.size < x.shape[1]:
                step = np.where(alive & (size > polish), step, 0.0)
            trial = x + _bounded(step)
            f_trial = residual(trial, np.arange(x.shape[1]))
            size_trial = _size(f_trial)
            lower = size_trial < size  # NaN is no gain
            x = np.where(lower, trial, x)
            f = np.where(lower, f_trial, f)
            size = np.where(lower, size_trial, size)
        else:
            trial = x[:, moving] + _bounded(newton(f)[:, moving])
            f_trial = residual(trial, moving)
            size_trial = _size(f_trial)
            lower = size_trial < size[moving]
            taken = moving[lower]
            x, f, size = x.copy(), f.copy(), size.copy()
            x[:, taken] = trial[:, lower]
            f[:, taken] = f_trial[:, lower]
            size[taken] = size_trial[lower]
    return x, f, size


def _bounded(step: np.ndarray) -> np.ndarray:
    """``step`` shortened where any ln x would change by more than ``BATCH_NEWTON.max_step``."""
    longest = np.abs(step).max(axis=0)
    too_long = longest > BATCH_NEWTON.max_step
    if too_long.any():
        step = step * np.where(too_long, BATCH_NEWTON.max_step / longest, 1.0)
    return step


def _size(f: np.ndarray) -> np.ndarray:
    """The largest residual of each sample (NaN if any is undefined)."""
    return np.abs(f).max(axis=0)


def _jacobian(residual: Residual, x: np.ndarray, f: np.ndarray, index: np.ndarray):
    """Forward differences, shape (equation, unknown, sample): the Jacobian times
    ``BATCH_NEWTON.difference_step``, which :func:`_factor` divides out."""
    k = x.shape[0]
    h = BATCH_NEWTON.difference_step
    jacobian = np.empty((k, k, x.shape[1]))
    shifted = x.copy()
    for j in range(k):
        shifted[j] = x[j] + h
        np.subtract(residual(shifted, index), f, out=jacobian[:, j])
        shifted[j] = x[j]
    return jacobian


def _factor(differences: np.ndarray) -> tuple[Step, np.ndarray]:
    """Every sample's Newton step as a function of its residuals, ``f -> -J⁻¹ f``
    (meaningless where J is singular), and where J is regular, from the forward
    ``differences`` (see :func:`_inverse`)."""
    inverse, regular = _inverse(differences)
    return (lambda f: _step_with(inverse, f)), regular


def _inverse(differences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """J⁻¹ of every sample, shape (unknown, equation, sample), meaningless where J is
    singular, and where it is regular, from the forward ``differences`` (J times the
    difference step h, so J⁻¹ is h times their inverse; the test of a singular J does
    not change with its scale). Up to three unknowns by Cramer's rule, elementwise: a
    batched LAPACK call on millions of tiny matrices costs more than the rest of a step."""
    a = differences
    h = BATCH_NEWTON.difference_step
    k = a.shape[0]
    if k > 3:
        matrices = np.moveaxis(a, 2, 0).copy()
        regular = _regular(np.linalg.det(matrices), a)
        matrices[~regular] = np.eye(k)
        return h * np.moveaxis(np.linalg.inv(matrices), 0, 2), regular
    adjugate = _adjugate(a)
    if k == 1:
        det = a[0, 0]
    else:  # expanded along the first row: adjugate[i][0] is the cofactor of a[0, i]
        det = sum(a[0, i] * adjugate[i][0] for i in range(k))
    regular = _regular(det, a)
    scale = h / np.where(regular, det, 1.0)
    inverse = np.empty((k, k, a.shape[2]))
    for i in range(k):
        for j in range(k):
            np.multiply(adjugate[i][j], scale, out=inverse[i, j])
    return inverse, regular


def _step_with(inverse: np.ndarray, f: np.ndarray) -> np.ndarray:
    """``-inverse @ f`` for every sample (inverse shape (k, k, n), f shape (k, n))."""
    k = inverse.shape[0]
    step = np.empty(np.broadcast_shapes(f.shape, inverse.shape[1:]))
    for i in range(k):
        total = inverse[i, 0] * f[0]
        for j in range(1, k):
            total += inverse[i, j] * f[j]
        np.negative(total, out=step[i])
    return step


def _adjugate(a: np.ndarray) -> list[list]:
    """The adjugate of every sample's k-by-k matrix (k up to 3), entry by entry:
    ``adjugate[i][j]`` is the cofactor of ``a[j, i]``, an array over the samples."""
    k = a.shape[0]
    if k == 1:
        return [[1.0]]
    if k == 2:
        return [[a[1, 1], -a[0, 1]], [-a[1, 0], a[0, 0]]]
    # in cyclic order the cofactor of a[j, i] needs no sign
    return [[a[(j + 1) % 3, (i + 1) % 3] * a[(j + 2) % 3, (i + 2) % 3]
             - a[(j + 1) % 3, (i + 2) % 3] * a[(j + 2) % 3, (i + 1) % 3]
             for j in range(3)] for i in range(3)]


def _regular(det: np.ndarray, jacobian: np.ndarray) -> np.ndarray:
    """Where a determinant is not negligible beside the product of its rows' largest
    entries (a singular Jacobian: the block is flat there)."""
    scale = np.prod(np.abs(jacobian).max(axis=1), axis=0)
    return np.isfinite(det) & np.isfinite(scale) & (np.abs(det) > BATCH_NEWTON.singular * scale)


def _damped(residual: Residual, x: np.ndarray, f: np.ndarray, alive: np.ndarray,
            step: np.ndarray):
    """One damped Newton step of the samples ``alive``. Returns the iterates and residuals
    (others unchanged) and which samples no halving of the step helped."""
    n = x.shape[1]
    everyone = np.arange(n)
    step = _bounded(np.where(alive, step, 0.0))  # the others stay exactly where they are
    norm = np.einsum("ij,ij->j", f, f)
    trial = x + step
    f_trial = residual(trial, everyone)
    pending = alive & ~(np.einsum("ij,ij->j", f_trial, f_trial) < norm)  # NaN is no gain
    if not pending.any():  # the usual case: every step taken whole
        return trial, f_trial, pending
    moved = np.where(pending, x, trial)
    f_moved = np.where(pending, f, f_trial)
    fraction = 1.0
    for _ in range(BATCH_NEWTON.halvings - 1):
        fraction *= 0.5
        trying = np.flatnonzero(pending)
        if not trying.size:
            break
        if trying.size > n // 4:  # most of the batch: whole arrays, no gathering
            trial = x + fraction * step
            f_trial = residual(trial, everyone)
            better = pending & (np.einsum("ij,ij->j", f_trial, f_trial) < norm)
            moved = np.where(better, trial, moved)
            f_moved = np.where(better, f_trial, f_moved)
            pending &= ~better
        else:
            trial = x[:, trying] + fraction * step[:, trying]
            f_trial = residual(trial, trying)
            gain = np.einsum("ij,ij->j", f_trial, f_trial) < norm[trying]
            taken = trying[gain]
            moved[:, taken] = trial[:, gain]
            f_moved[:, taken] = f_trial[:, gain]
            pending[taken] = False
    return moved, f_moved, pending
