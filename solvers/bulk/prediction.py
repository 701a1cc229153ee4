"""Starting points for batched Newton from the samples already solved.

Monte Carlo samples of a block differ only by the inputs that vary. Once some are
solved, ln of each unknown and each entry of the inverse Jacobian there are fitted by
least squares as polynomials in the logs of those inputs, and the fit gives every later
sample its own start, near its solution, and its own Newton step from there, in place of
one shared start. A prediction is only a start: every solution is still verified on the
whole block, and a sample not solved from its prediction is solved by Newton as before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import combinations_with_replacement

import numpy as np
from chalk.solvers.tolerances import BATCH_NEWTON


class Prediction:
    """Quantities (ln of each unknown, entries of J⁻¹) as polynomials in the logs of the
    varying inputs, scaled to [-1, 1] over the samples fitted: sums of products of
    Chebyshev polynomials, whose normal equations stay well conditioned, solved without
    BLAS (whose threads cost more than these small products on a busy machine)."""

    def __init__(self, names, centre, spread, terms, coefficients):
        self.names = names
        self.centre = centre
        self.spread = spread  # half the range of each log, so that terms stay near 1
        self.terms = terms  # each a tuple of input positions multiplied together
        self.coefficients = coefficients  # shape (quantities, terms)

    @classmethod
    def fit(cls, inputs: Mapping[str, np.ndarray], targets: np.ndarray) -> Prediction | None:
        """A fit of ``targets`` (shape (quantities, samples); NaN where unknown) to the
        ``inputs`` (arrays over the same samples), or None when there are no inputs, too
        many, or too few samples with every target finite and every input positive."""
        names = sorted(inputs)
        terms = _terms(len(names))
        if terms is None:
            return None
        values = np.array([inputs[n] for n in names], dtype=float)
        usable = np.isfinite(targets).all(axis=0) & (values > 0).all(axis=0) & np.isfinite(
            values).all(axis=0)
        if np.count_nonzero(usable) < samples_needed(len(names)):
            return None
        logs = np.log(values[:, usable])
        low, high = logs.min(axis=1), logs.max(axis=1)
        centre = (low + high) / 2
        spread = np.where(high > low, (high - low) / 2, 1.0)
        design = _design((logs - centre[:, None]) / spread[:, None], terms)
        gram = np.einsum("tm,sm->ts", design, design)
        try:
            coefficients = np.linalg.solve(gram, np.einsum("tm,rm->tr", design,
                                                           targets[:, usable]))
        except np.linalg.LinAlgError:  # inputs that move together: no fit, no prediction
            return None
        return cls(names, centre, spread, terms, coefficients.T)

    def __call__(self, inputs: Mapping[str, np.ndarray], count: int) -> np.ndarray:
        """The quantities predicted for ``count`` samples of ``inputs``, shape
        (quantities, count); NaN where an input is not positive or lies beyond
        ``BATCH_NEWTON.fit_reach`` half-ranges from the centre of those the fit saw (a
        polynomial extrapolates badly)."""
        values = np.array([np.broadcast_to(inputs[n], (count,)) for n in self.names],
                          dtype=float)
        with np.errstate(all="ignore"):
            scaled = (np.log(np.where(values > 0, values, np.nan)) - self.centre[:, None]) \
                / self.spread[:, None]
        predicted = np.einsum("rt,tn->rn", self.coefficients, _design(scaled, self.terms))
        inside = (np.abs(scaled) <= BATCH_NEWTON.fit_reach).all(axis=0)  # False where NaN
        if not inside.all():
            predicted[:, ~inside] = np.nan
        return predicted


def samples_needed(inputs: int) -> float:
    """Samples a fit on ``inputs`` varying inputs needs (infinite if none is made)."""
    terms = _terms(inputs)
    return math.inf if terms is None else BATCH_NEWTON.fit_samples_per_term * len(terms)


def _terms(inputs: int) -> list[tuple[int, ...]] | None:
    """The polynomial's terms in ``inputs`` inputs, in order of degree (each a tuple of
    input positions multiplied together), or None if no fit is made for that many."""
    if not 1 <= inputs <= len(BATCH_NEWTON.fit_degrees):
        return None
    degree = BATCH_NEWTON.fit_degrees[inputs - 1]
    return [t for d in range(degree + 1) for t in combinations_with_replacement(range(inputs), d)]


def _design(scaled: np.ndarray, terms) -> np.ndarray:
    """Each term's value per sample, shape (terms, samples): for a term that names input
    i p times, the Chebyshev polynomial T_p of input i, times those of its other inputs."""
    degree = max(len(term) for term in terms)
    chebyshev = []  # per input, T_0 ... T_degree at its scaled log
    for u in scaled:
        values = [np.ones_like(u), u]
        for _ in range(2, degree + 1):
            values.append(2 * u * values[-1] - values[-2])
        chebyshev.append(values)
    design = np.empty((len(terms), scaled.shape[1]))
    for row, term in enumerate(terms):
        design[row] = 1.0
        for position in set(term):
            design[row] *= chebyshev[position][term.count(position)]
    return design
