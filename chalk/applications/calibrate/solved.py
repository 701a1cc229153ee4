"""A question answered at a calibration's fitted efficiencies (``chalk solve ...
--calibrated [CHIP/ENGINE]``).

The question is solved with the efficiencies (:data:`~.rows.EFFICIENCIES`) pinned at
the group's fitted values, so the derivation shows every step at those efficiencies, and
their pins name the group and how many measurements fixed them. Each target, a rate in
token/s, gets the calibrated prediction of :mod:`.predict` beside it: the value, its 90%
prediction interval (the efficiencies' uncertainty and the scatter between measurements)
and the bound at peak efficiencies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from chalk.applications.calibrate.calibration import (
    Efficiency,
    checked_prediction,
    fitted_efficiency,
    predict_question,
    question_architecture,
)
from chalk.applications.calibrate.predict import LEVEL, Prediction
from chalk.applications.calibrate.rows import EFFICIENCIES

SHIPPED = "the shipped measurements"  # where a calibration came from when no file is named


@dataclass(frozen=True)
class CalibratedAnswer:
    """A solution at fitted efficiencies with a calibrated prediction of each target.

    Attributes
    ----------
    solution : Solution
        The question solved with the efficiencies pinned at ``efficiencies``' values.
    predictions : dict of target to Prediction
    efficiencies : tuple of Efficiency
        The efficiencies (:data:`~.rows.EFFICIENCIES`) as used, with 90% intervals; the
        group is ``(not calibrated)`` for the shared values of a group the calibration
        never saw (their spread between groups included).
    calibration, measurements : str, int
        Where the calibration came from (a file, or the shipped measurements) and how
        many measurements it was fitted to.
    """

    solution: object
    predictions: dict[str, Prediction]
    efficiencies: tuple[Efficiency, ...]
    calibration: str
    measurements: int

    def text(self, brief: bool = False) -> str:
        """The predictions, the efficiencies used, then the solution (``brief``: its
        answers and assumptions only, as ``chalk solve --brief``)."""
        unit = "token/s"
        lines = []
        for target, p in self.predictions.items():
            cut = " (cut at the bound)" if p.capped else ""
            lines.append(f"{target} = {p.value:,.4g} {unit} calibrated, 90% prediction "
                         f"interval {p.low:,.4g} to {p.high:,.4g} {unit}{cut}; bound at peak "
                         f"efficiencies {p.bound:,.4g} {unit}")
            lines.append(f"  (interval from measurement scatter {p.scatter:.3f} and the "
                         f"efficiencies' uncertainty {p.parameter_sd:.3f}, in log)")
        lines += ["", f"efficiencies used (90% intervals), {self._fitted_on()}:"]
        lines += [f"  {e.name:<26} {e.value:.4g} ({e.low:.4g}-{e.high:.4g})"
                  for e in self.efficiencies]
        if brief:
            from chalk.solvers.records.brief import brief_text

            shown = brief_text(self.solution.summary().splitlines(), self.solution.derivation)
        else:
            shown = str(self.solution)
        return "\n".join(lines) + "\n\n" + shown

    def _fitted_on(self) -> str:
        e = self.efficiencies[0]
        if e.rows == 0:
            return (f"shared values for a group not calibrated, with the spread between "
                    f"groups; calibration of {self.measurements} measurements "
                    f"({self.calibration})")
        return (f"group {e.group}, fitted to {e.rows} of {self.measurements} measurements "
                f"({self.calibration})")

    def to_dict(self) -> dict:
        import json

        return {"predictions": {t: p.to_dict() for t, p in self.predictions.items()},
                "efficiencies": [{"name": e.name, "group": e.group, "rows": e.rows,
                                  "value": e.value, "low": e.low, "high": e.high,
                                  "level": LEVEL} for e in self.efficiencies],
                "calibration": {"from": self.calibration, "measurements": self.measurements},
                "solution": json.loads(self.solution.to_json())}


def calibrated_solve(targets: str | Sequence[str], given=(), presets=(),
                     group: str | None = None, calibration=None, **options
                     ) -> CalibratedAnswer:
    """Solve ``targets`` at ``group``'s fitted efficiencies, with calibrated predictions.

    Parameters
    ----------
    targets : str or sequence of str
        Rates in token/s (the calibration's scatter was measured on rates).
    given, presets
        As for :func:`chalk.solve`, without either efficiency (the calibration sets them).
    group : str, optional
        ``chip/engine`` as calibrated (its chip's preset among ``presets``); None: a group
        the calibration never saw (the shared efficiencies, their spread between groups
        added to the intervals).
    calibration : Calibration, StoredCalibration, str or Path, optional
        A calibration, a file written by ``chalk calibrate --save``, or None to calibrate
        on the shipped measurements (compiling each of them: tens of seconds).
    **options
        Passed to :func:`chalk.solve` (``regime``, ``rtol``, ...).

    Raises
    ------
    UsageError
        A target that is not a rate, a pinned efficiency, an unknown group or a group
        whose chip no preset names.
    DataError
        A calibration file that is not one chalk wrote.
    """
    from chalk.api import solve

    names = [targets] if isinstance(targets, str) else list(targets)
    if calibration is None:  # checked before the shipped measurements are fitted
        check_against_shipped(names, given, presets, group)
    source, calibration = _loaded(calibration)
    fitted, groups = calibration.fitted, calibration.groups
    family = question_architecture(fitted, group, presets)
    canonical = [checked_prediction(t, given, group, groups, presets) for t in names]
    counts = calibration.group_rows
    used = tuple(fitted_efficiency(fitted, group or "(not calibrated)", group, j,
                                   counts.get(group, 0), unseen=group is None,
                                   family=family)
                 for j in range(len(EFFICIENCIES)))
    pins = list(given.items()) if isinstance(given, Mapping) else list(given)
    pins += [(e.name, repr(e.value)) for e in used]
    solution = solve(canonical, pins, presets, **options)
    _name_in_derivation(solution, used, source, sum(counts.values()))
    predictions = {t: predict_question(fitted, groups, t, given, presets, group)
                   for t in canonical}
    return CalibratedAnswer(solution, predictions, used, source, sum(counts.values()))


def check_against_shipped(targets: Sequence[str], given, presets, group: str | None) -> None:
    """Refuse what a calibration on the shipped measurements could not answer, before
    anything is fitted (the checks of :func:`calibrated_solve`)."""
    from chalk.applications.calibrate.rows import group_of, shipped_records

    shipped = sorted({group_of(r) for r in shipped_records()})
    for name in targets:
        checked_prediction(name, given, group, shipped, presets)


def _loaded(calibration) -> tuple[str, object]:
    """Where a calibration comes from, and the calibration (read or fitted if need be)."""
    if calibration is None:
        from chalk.applications.calibrate import calibrate

        return SHIPPED, calibrate()
    if isinstance(calibration, (str, Path)):
        from chalk.applications.calibrate.stored import read

        return str(calibration), read(calibration)
    return getattr(calibration, "source", "given"), calibration


def _name_in_derivation(solution, used: Sequence[Efficiency], source: str,
                        measurements: int) -> None:
    """Each efficiency's pin says the group and the measurements that fixed it."""
    pins = dict(solution.derivation.pins)
    for e in used:
        fitted_on = (f"{e.rows} of {measurements} measurements" if e.rows
                     else f"none of its own; shared values of {measurements} measurements")
        pins[e.name] = replace(pins[e.name], source=(
            f"calibrated for {e.group} ({fitted_on}, {source}); 90% interval "
            f"{e.low:.4g}-{e.high:.4g}"))
    solution.derivation = replace(solution.derivation, pins=pins)
