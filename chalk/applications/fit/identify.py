"""Which parameters the observations fix, and what they may fix of the others.

Decided by the rank of the observations' log-space Jacobian (priors left out: a prior
is an assumption, not evidence). With ``J`` the Jacobian of the standardised residuals
and ``N`` an orthonormal basis of its null space (from the reduced SVD, singular values
at or below ``RANK_RTOL`` times the largest counting as zero), parameter ``k`` is
identified exactly when the unit vector ``e_k`` is orthogonal to ``N`` (to
``NULL_TOL``): no change the observations cannot see moves it. An unidentified
parameter's candidate combination is the row of the reduced row echelon form of the
Jacobian's row space, restricted to the unidentified parameters, with that parameter as
pivot: ``k`` plus multiples of the others the observations see only together
(``kv_bytes_per_token · hardware_intensity``). Its exponents are shown as small
fractions when they are within ``NULL_TOL`` of one. The candidate is only a tangent at
the estimate: :mod:`.estimate` walks the observations' ridge to decide whether it is
fixed.

The tolerances are looser than rounding because the Jacobian comes from central
differences (error about 1e-10 relative) and tighter than any real dependence.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

RANK_RTOL = 1e-7
NULL_TOL = 1e-6


@dataclass(frozen=True)
class Identification:
    """The outcome: which parameters are identified, and the rest's combinations.

    ``combinations[k]`` maps parameter index to exponent (``k`` itself has exponent 1);
    it is empty when no observation depends on ``k`` at all.
    """

    rank: int
    identified: tuple[bool, ...]
    combinations: dict[int, dict[int, float]]
    null: np.ndarray  # parameters by (parameters - rank): an orthonormal null-space basis


def identify(jacobian: np.ndarray) -> Identification:
    """Identifiability from the standardised residuals' Jacobian (observations by
    parameters)."""
    n, p = jacobian.shape
    if p == 0:
        return Identification(0, (), {}, np.zeros((0, 0)))
    # the reduced SVD: the full one would build an unused observations-square matrix;
    # with fewer observations than parameters the null space is completed below
    _, s, vt = np.linalg.svd(jacobian, full_matrices=False)
    rank = int(np.sum(s > RANK_RTOL * s[0])) if s.size and s[0] > 0 else 0
    null = _null_space(vt, rank, p)
    row = vt[:rank]
    identified = tuple(bool(np.linalg.norm(null[k]) <= NULL_TOL) for k in range(p))
    free = [k for k in range(p) if not identified[k]]
    combinations = {}
    for k in free:
        if np.all(np.abs(jacobian[:, k]) <= RANK_RTOL * (s[0] if s.size else 1)):
            combinations[k] = {}
            continue
        combinations[k] = _combination(row, free, k)
    return Identification(rank, identified, combinations, null)


def _null_space(vt: np.ndarray, rank: int, p: int) -> np.ndarray:
    """An orthonormal basis of what the first ``rank`` rows of ``vt`` leave out."""
    if vt.shape[0] == p:
        return vt[rank:].T
    q, _ = np.linalg.qr(np.vstack([vt[:rank], np.eye(p)]).T, mode="complete")
    return q[:, rank:p] if rank else np.eye(p)


def _combination(row: np.ndarray, free: list[int], k: int) -> dict[int, float]:
    """The row-space vector over the unidentified parameters with ``k`` as pivot.

    The identified parameters' unit vectors lie in the row space, so dropping their
    columns leaves the row space's part the unidentified ones share.
    """
    order = [k] + [j for j in free if j != k]
    m = row[:, order].copy()
    pivot_row = None
    r = 0
    for c in range(len(order)):
        if r >= m.shape[0]:
            break
        best = r + int(np.argmax(np.abs(m[r:, c])))
        if abs(m[best, c]) <= NULL_TOL:
            continue
        m[[r, best]] = m[[best, r]]
        m[r] /= m[r, c]
        for i in range(m.shape[0]):
            if i != r:
                m[i] -= m[i, c] * m[r]
        if c == 0:
            pivot_row = r
        r += 1
    if pivot_row is None:
        return {}
    out = {}
    for c, j in enumerate(order):
        value = float(m[pivot_row, c])
        if abs(value) > NULL_TOL:
            near = Fraction(value).limit_denominator(12)
            out[j] = float(near) if abs(float(near) - value) <= NULL_TOL else value
    return out


def simple(exponents) -> bool:
    """Whether every exponent is a small fraction (denominator up to 12), as a product of
    powers of physical quantities has: only then is the combination's unit honest."""
    return all(float(Fraction(e).limit_denominator(12)) == e for e in exponents)
