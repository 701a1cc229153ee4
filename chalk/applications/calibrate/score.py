"""Honest scoring: each measurement predicted by a calibration that never saw it.

Two schemes: leave one row out, and leave one source out (every row of a source
removed together, so a table's rows cannot vouch for each other; a group whose only
source is left out is predicted as a group never calibrated). Each left-out row gets
three predictions, each refitted without it:

- the calibration (partial pooling, with its 90% prediction interval);
- one global set of efficiencies shared by every chip and engine (complete pooling);
- the bound itself (every efficiency 1), which needs no fit.

Figures: the median absolute error of the predicted rate, ``|predicted / measured -
1|`` (and of its log, in :meth:`Score.to_dict`), and the share of left-out rows inside
their 90% prediction interval.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from chalk.applications.calibrate.fit import fit_rows
from chalk.applications.calibrate.predict import Prediction, predict_row
from chalk.applications.calibrate.rows import Row
from chalk.symbolic.errors import UsageError

SCHEMES = ("row", "source")


@dataclass(frozen=True)
class Scored:
    """One left-out row: what was measured and the three predictions of it."""

    id: str
    group: str
    measured: float
    calibrated: Prediction
    pooled: Prediction

    @property
    def bound(self) -> float:
        return self.calibrated.bound


@dataclass(frozen=True)
class Score:
    """Cross-validated figures of one scheme (``row`` or ``source``)."""

    scheme: str
    folds: int
    scored: tuple[Scored, ...]
    unscored: tuple[tuple[str, str], ...] = ()  # folds refused: (what was left out, why)

    def _error(self, predicted) -> float:
        return statistics.median(abs(predicted(s) / s.measured - 1) for s in self.scored)

    def _log_error(self, predicted) -> float:
        return statistics.median(abs(math.log(predicted(s) / s.measured)) for s in self.scored)

    @property
    def calibrated_error(self) -> float:
        return self._error(lambda s: s.calibrated.value)

    @property
    def pooled_error(self) -> float:
        return self._error(lambda s: s.pooled.value)

    @property
    def bound_error(self) -> float:
        return self._error(lambda s: s.bound)

    @property
    def coverage(self) -> float:
        return sum(s.calibrated.covers(s.measured) for s in self.scored) / len(self.scored)

    @property
    def pooled_coverage(self) -> float:
        return sum(s.pooled.covers(s.measured) for s in self.scored) / len(self.scored)

    def to_dict(self) -> dict:
        return {"scheme": self.scheme, "folds": self.folds, "rows": len(self.scored),
                "unscored": [{"left_out": f, "reason": r} for f, r in self.unscored],
                "median_abs_error": {"calibrated": self.calibrated_error,
                                     "global": self.pooled_error, "bound": self.bound_error},
                "median_abs_log_error": {
                    name: self._log_error(pick) for name, pick in (
                        ("calibrated", lambda s: s.calibrated.value),
                        ("global", lambda s: s.pooled.value), ("bound", lambda s: s.bound))},
                "coverage_90": {"calibrated": self.coverage, "global": self.pooled_coverage}}

    def text(self) -> str:
        name = {"row": "leave one row out", "source": "leave one source out"}[self.scheme]
        return (f"{name} ({self.folds} folds, {len(self.scored)} rows): median |predicted/"
                f"measured - 1| {self.calibrated_error:.1%} calibrated, "
                f"{self.pooled_error:.1%} one global set, {self.bound_error:.1%} the bound; "
                f"90% intervals cover {self.coverage:.1%} (one global set: "
                f"{self.pooled_coverage:.1%})" + (
                    f"; {len(self.unscored)} fold(s) or row(s) not scored: the rows left "
                    f"could not calibrate them (first: {self.unscored[0][1]})"
                    if self.unscored else ""))


def cross_validate(rows: Sequence[Row], prior_width: float, scheme: str = "row",
                   start=None, pooled_start=None) -> Score:
    """Refit without each fold and predict its rows (see the module docstring).

    Parameters
    ----------
    rows : sequence of Row
    prior_width : float
        The calibration's stated prior width.
    scheme : {"row", "source"}
    start, pooled_start : Fitted, optional
        Fits on every row to start each refit from (they change no estimate beyond
        the fit's tolerance, only how long it takes).
    """
    if scheme not in SCHEMES:
        raise UsageError(f"cross-validation leaves out one 'row' or one 'source', not "
                         f"{scheme!r}")
    key = (lambda r: r.id) if scheme == "row" else (lambda r: r.source)
    folds = list(dict.fromkeys(key(r) for r in rows))
    if len(folds) < 2:
        raise UsageError(f"cross-validation by {scheme} needs at least 2 of them; these "
                         f"rows have {len(folds)}")
    scored, unscored = [], []
    for fold in folds:
        train = [r for r in rows if key(r) != fold]
        try:
            fitted = fit_rows(train, prior_width, start)
            pooled = fit_rows(train, 0.0, pooled_start)
        except UsageError as exc:  # what is left cannot be calibrated: said, not hidden
            unscored.append((fold, exc.message))
            continue
        for row in (r for r in rows if key(r) == fold):
            try:
                scored.append(Scored(row.id, row.group, row.measured,
                                     predict_row(fitted, row), predict_row(pooled, row)))
            except UsageError as exc:  # it needs what no remaining row fixed: said, not hidden
                unscored.append((row.id, exc.message))
    if not scored:
        raise UsageError(f"no fold of the cross-validation by {scheme} could be calibrated: "
                         f"{unscored[0][1]}")
    return Score(scheme, len(folds), tuple(scored), tuple(unscored))
