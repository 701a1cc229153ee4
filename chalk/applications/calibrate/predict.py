"""Predictions with 90% prediction intervals from a fitted calibration.

A prediction is chalk's answer for the question at the group's fitted efficiencies.
Its interval, in log space, has two parts added in variance:

- the efficiencies' uncertainty, carried through the answer's slopes
  (d log rate / d log efficiency, found by evaluating the question), plus the prior of
  a group the calibration never saw (a new chip or engine gets the shared values and
  their spread between groups);
- the scatter between measurements (``sigma``), which no amount of data removes: a new
  measurement of a calibrated group still lands that far from the fitted curve.

The quantile is Student's t on the degrees of freedom ``sigma`` rests on, so a thin
calibration gives wider intervals. The bound (every efficiency 1) stays beside it, and
an interval reaching past it is cut there: no efficiency exceeds 1, so no rate exceeds
the bound (``capped`` says so).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from chalk.applications.calibrate.fit import INFORMS, Fitted
from chalk.applications.calibrate.rows import EFFICIENCIES, Row
from chalk.symbolic.errors import UsageError

LEVEL = 0.90  # the prediction intervals' coverage


@dataclass(frozen=True)
class Prediction:
    """A calibrated prediction of a rate (token/s), its 90% prediction interval and
    chalk's bound at peak efficiencies.

    Attributes
    ----------
    value, low, high, bound : float
    group : str or None
        The calibration group it used (None: a group the calibration has not seen,
        predicted from the shared efficiencies and their spread).
    scatter, parameter_sd : float
        The measurement scatter and the efficiencies' standard deviation, in log rate.
    """

    value: float
    low: float
    high: float
    bound: float
    group: str | None
    scatter: float
    parameter_sd: float
    capped: bool = False

    def covers(self, measured: float) -> bool:
        return self.low <= measured <= self.high

    def to_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "bound": self.bound,
                "level": LEVEL, "group": self.group, "scatter_log_sd": self.scatter,
                "efficiency_log_sd": self.parameter_sd, "capped_at_bound": self.capped}


def quantile(fitted: Fitted, architecture: str | None = None) -> float:
    """The two-sided 90% quantile of Student's t on the degrees of freedom of
    ``fitted``'s scatter (of ``architecture``'s rows, where it has one per architecture).

    ``scipy.special.stdtrit`` is ``scipy.stats.t.ppf`` without loading scipy.stats
    (about 0.3 s in every process that calibrates)."""
    return float(special.stdtrit(max(fitted.scatter(architecture)[1], 1.0), 0.5 + LEVEL / 2))


def predict_row(fitted: Fitted, row: Row) -> Prediction:
    """The calibrated prediction for ``row``'s question (its group's efficiencies, or
    the shared ones when ``fitted`` has no such group).

    Raises
    ------
    UsageError
        The question depends on an efficiency none of the calibration's rows did (an
        all-to-all, when no row stated an expert-parallel layout): nothing fixed it.
    """
    known = row.group if (not fitted.pooled and row.group in fitted.groups) else None
    # an unseen group: the shared values of the row's architecture
    x = fitted.log_efficiency(row.group, row.architecture)
    both = np.vstack([x, np.zeros(len(x))])  # the fitted point and the bound
    logs, slopes = row.log_rates_and_slopes(both)
    for j in np.nonzero(~fitted.identified & (slopes[0] ** 2 > INFORMS))[0]:
        what = f"measurement {row.id!r}" if row.id else "this question"
        raise UsageError(f"{what} depends on {EFFICIENCIES[j]}, which none of the "
                         "calibration's measurements did; calibrate on measurements that "
                         "state such a layout (expert_parallelism) or predict without it")
    parameter = fitted.parameter_variance(row.group, slopes[0], row.architecture)
    sigma = fitted.scatter(row.architecture)[0]
    spread = math.sqrt(parameter + sigma ** 2) * quantile(fitted, row.architecture)
    bound = float(np.exp(logs[1]))
    high = float(np.exp(logs[0] + spread))
    return Prediction(float(np.exp(logs[0])), float(np.exp(logs[0] - spread)),
                      min(high, bound), bound, known, sigma, math.sqrt(parameter),
                      high > bound)
