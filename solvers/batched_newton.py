"""Newton's method in log space on many small systems at once.

Monte Carlo through a block torn at several quantities solves the same k equations
in k unknowns once per sample. Here every sample takes its Newton steps together, as
numpy arrays: the Jacobian by forward differences (k more residual evaluations per
step), every sample's k-by-k system in one batched solve, and a step that does not
lower a sample's residual halved (``BATCH_NEWTON``). A sample counts as solved only
when every residual is within the tolerance; the caller checks the solution on the
whole block and hands every other sample to the one-at-a-time search, so nothing
here is a silent guess.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from chalk.solvers.tolerances import BATCH_NEWTON

# residual(log_x, index): the residuals, shape (k, m), of the samples ``index`` (m of
# them) at ln x = ``log_x`` (shape (k, m)); NaN where undefined
Residual = Callable[[np.ndarray, np.ndarray], np.ndarray]


def solve(residual: Residual, start: np.ndarray, accept: float,
          polish: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Newton from ``start`` (ln x, shape (k, n); a column with NaN is not attempted).

    A sample within ``accept`` is solved; it takes further steps while they lower its
    residual, until every residual is within ``polish`` (as a scalar solution is polished).
    Every step evaluates the whole batch (finished samples ride along, unchanged):
    gathering the unfinished ones would cost more than it saves.

    Returns
    -------
    log_x : ndarray, shape (k, n)
        The last iterate of every sample.
    solved : ndarray of bool, shape (n,)
        Samples whose every residual is below ``accept`` at ``log_x``.
    """
    x = np.array(start, dtype=float)
    n = x.shape[1]
    everyone = np.arange(n)
    solved = np.zeros(n, dtype=bool)
    alive = np.isfinite(x).all(axis=0)
    x[:, ~alive] = 0.0  # evaluated harmlessly, never reported
    f = residual(x, everyone)
    with np.errstate(all="ignore"):
        for _ in range(BATCH_NEWTON.iterations + 1):
            size = _size(f)
            solved |= alive & (size < accept)
            alive &= np.isfinite(size) & (size > polish)
            if not alive.any():
                break
            inverse, regular = _inverse(_jacobian(residual, x, f, everyone))
            alive &= regular
            x, f, stuck = _step(residual, x, f, alive, inverse)
            alive &= ~stuck  # the end of that sample's search (or of its polishing)
    return x, solved


def _size(f: np.ndarray) -> np.ndarray:
    """The largest residual of each sample (NaN if any is undefined)."""
    return np.abs(f).max(axis=0)


def _jacobian(residual: Residual, x: np.ndarray, f: np.ndarray, index: np.ndarray):
    """Forward differences, shape (equation, unknown, sample)."""
    k = x.shape[0]
    h = BATCH_NEWTON.difference_step
    jacobian = np.empty((k, k, x.shape[1]))
    for j in range(k):
        shifted = x.copy()
        shifted[j] += h
        jacobian[:, j] = (residual(shifted, index) - f) / h
    return jacobian


def _step(residual: Residual, x: np.ndarray, f: np.ndarray, alive: np.ndarray,
          inverse: np.ndarray):
    """One damped Newton step of the samples ``alive`` with their inverse Jacobians.
    Returns the iterates and residuals (others unchanged) and which samples no halving of
    the step helped."""
    n = x.shape[1]
    step = -np.einsum("ijm,jm->im", inverse, f)
    longest = np.abs(step).max(axis=0)
    step *= np.where(longest > BATCH_NEWTON.max_step,
                     BATCH_NEWTON.max_step / np.where(longest > 0, longest, 1.0), 1.0)
    norm = np.einsum("ij,ij->j", f, f)
    fraction = np.ones(n)
    pending = alive.copy()
    moved, f_moved = x, f
    for _ in range(BATCH_NEWTON.halvings):
        count = np.count_nonzero(pending)
        if not count:
            break
        if count > n // 4:  # most of the batch: whole arrays, no gathering
            trial = x + fraction * step
            f_trial = residual(trial, np.arange(n))
            better = pending & (np.einsum("ij,ij->j", f_trial, f_trial) < norm)  # not NaN
            moved = np.where(better, trial, moved)
            f_moved = np.where(better, f_trial, f_moved)
        else:
            trying = np.flatnonzero(pending)
            trial = x[:, trying] + fraction[trying] * step[:, trying]
            f_trial = residual(trial, trying)
            gain = np.einsum("ij,ij->j", f_trial, f_trial) < norm[trying]
            taken = trying[gain]
            moved, f_moved = moved.copy(), f_moved.copy()
            moved[:, taken] = trial[:, gain]
            f_moved[:, taken] = f_trial[:, gain]
            better = np.zeros(n, dtype=bool)
            better[taken] = True
        pending &= ~better
        fraction = np.where(pending, 0.5 * fraction, fraction)
    return moved, f_moved, pending


def _inverse(jacobian: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of every sample's Jacobian (meaningless where singular) and where it
    is regular. Up to three unknowns by cofactors, elementwise: a batched LAPACK call on
    millions of tiny matrices costs more than the rest of a step."""
    a = jacobian
    k = a.shape[0]
    if k > 3:
        matrices = np.moveaxis(a, 2, 0).copy()
        regular = _regular(np.linalg.det(matrices), a)
        matrices[~regular] = np.eye(k)
        inverse = np.moveaxis(np.linalg.inv(matrices), 0, 2)
        return inverse, regular
    if k == 1:
        det = a[0, 0]
        cofactor = np.ones_like(a)
    elif k == 2:
        det = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
        cofactor = np.array([[a[1, 1], -a[1, 0]], [-a[0, 1], a[0, 0]]])
    else:
        cofactor = np.empty_like(a)
        for i in range(3):
            for j in range(3):
                r0, r1 = [r for r in range(3) if r != i]
                c0, c1 = [c for c in range(3) if c != j]
                sign = 1.0 if (i + j) % 2 == 0 else -1.0
                cofactor[i, j] = sign * (a[r0, c0] * a[r1, c1] - a[r0, c1] * a[r1, c0])
        det = np.einsum("jm,jm->m", a[0], cofactor[0])
    regular = _regular(det, a)
    # inverse[i, j] = cofactor[j, i] / det
    return np.swapaxes(cofactor, 0, 1) / np.where(regular, det, 1.0), regular


def _regular(det: np.ndarray, jacobian: np.ndarray) -> np.ndarray:
    """Where a determinant is not negligible beside the product of its rows' largest
    entries (a singular Jacobian: the block is flat there)."""
    scale = np.prod(np.abs(jacobian).max(axis=1), axis=0)
    return np.isfinite(det) & np.isfinite(scale) & (np.abs(det) > BATCH_NEWTON.singular * scale)
