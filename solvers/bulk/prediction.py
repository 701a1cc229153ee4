"""Starting points for batched Newton from the samples already solved.

Monte Carlo samples of a block differ only by the inputs that vary. Once some are
solved, ln of each unknown is fitted by least squares as a polynomial in the logs of
those inputs, and the fit gives every later sample its own start, near its solution, in
place of one shared start: Newton then needs about half the residual evaluations. A
start is only a start: every solution is still verified on the whole block, and a sample
Newton does not solve from its predicted start is started again from the shared one.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations_with_replacement

import numpy as np
from chalk.solvers.tolerances import BATCH_NEWTON


class Prediction:
    """ln of each unknown as a polynomial in the centred logs of the varying inputs."""

    def __init__(self, names, centre, spread, terms, coefficients):
        self.names = names
        self.centre = centre
        self.spread = spread  # half the range of each log, so that terms stay near 1
        self.terms = terms  # each a tuple of input positions multiplied together
        self.coefficients = coefficients  # shape (unknowns, terms)

    @classmethod
    def fit(cls, inputs: Mapping[str, np.ndarray], log_x: np.ndarray) -> Prediction | None:
        """A fit of ``log_x`` (shape (unknowns, samples); NaN where unsolved) to the
        ``inputs`` (arrays over the same samples), or None when there are no inputs, too
        many, or too few solved samples with every input positive."""
        names = sorted(inputs)
        if not 1 <= len(names) <= len(BATCH_NEWTON.fit_degrees):
            return None
        degree = BATCH_NEWTON.fit_degrees[len(names) - 1]
        values = np.array([inputs[n] for n in names], dtype=float)
        usable = np.isfinite(log_x).all(axis=0) & (values > 0).all(axis=0) & np.isfinite(
            values).all(axis=0)
        terms = [t for d in range(degree + 1)
                 for t in combinations_with_replacement(range(len(names)), d)]
        if np.count_nonzero(usable) < BATCH_NEWTON.fit_samples_per_term * len(terms):
            return None
        logs = np.log(values[:, usable])
        low, high = logs.min(axis=1), logs.max(axis=1)
        centre = (low + high) / 2
        spread = np.where(high > low, (high - low) / 2, 1.0)
        design = _design((logs - centre[:, None]) / spread[:, None], terms)
        coefficients, *_ = np.linalg.lstsq(design.T, log_x[:, usable].T, rcond=None)
        return cls(names, centre, spread, terms, coefficients.T)

    def __call__(self, inputs: Mapping[str, np.ndarray], count: int) -> np.ndarray:
        """Predicted ln of each unknown for ``count`` samples of ``inputs``, shape
        (unknowns, count); NaN where an input is not positive or lies beyond
        ``BATCH_NEWTON.fit_reach`` half-ranges from the centre of those the fit saw (a
        polynomial extrapolates badly)."""
        values = np.array([np.broadcast_to(inputs[n], (count,)) for n in self.names],
                          dtype=float)
        with np.errstate(all="ignore"):
            scaled = (np.log(np.where(values > 0, values, np.nan)) - self.centre[:, None]) \
                / self.spread[:, None]
        predicted = self.coefficients @ _design(scaled, self.terms)
        inside = (np.abs(scaled) <= BATCH_NEWTON.fit_reach).all(axis=0)  # False where NaN
        if not inside.all():
            predicted[:, ~inside] = np.nan
        return predicted


def _design(logs: np.ndarray, terms) -> np.ndarray:
    """Each term's value per sample, shape (terms, samples). ``terms`` come in order of
    degree, so each is an earlier one times one more factor."""
    design = np.empty((len(terms), logs.shape[1]))
    row_of = {}
    for row, term in enumerate(terms):
        if term:
            np.multiply(design[row_of[term[:-1]]], logs[term[-1]], out=design[row])
        else:
            design[row] = 1.0
        row_of[term] = row
    return design
