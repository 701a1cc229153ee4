"""The calibration a user sees: efficiencies per group with intervals, what the rows
cannot fix, and predictions for questions nobody measured."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from chalk.applications.calibrate.fit import Fitted, family_of
from chalk.applications.calibrate.predict import LEVEL, Prediction, predict_row, quantile
from chalk.applications.calibrate.rows import (
    ARCHITECTURES,
    COMMUNICATION,
    EFFICIENCIES,
    Row,
    architecture_of,
)
from chalk.symbolic.errors import UsageError

RATE_UNIT = "token/s"  # the scatter is measured on output token rates
SCAN = 200  # efficiencies tried below the estimate when looking for a one-sided bound
SCAN_DEPTH = 1000.0  # ... down to the estimate over this factor


@dataclass(frozen=True)
class Efficiency:
    """One group's fitted efficiency and its 90% interval (from the Laplace covariance,
    Student's t on the scatter's degrees of freedom; capped at 1, the bound).

    ``identified`` is False when none of the group's rows depends on it: the value is
    then the shared one with the prior's spread, and ``at_least`` the lowest value at
    which the rows would all still answer as they do (the one side they bound).
    """

    group: str
    name: str
    value: float
    low: float
    high: float
    identified: bool
    rows: int
    at_least: float | None = None

    def note(self) -> str:
        if self.identified:
            return ""
        if self.name in COMMUNICATION:
            where = ("no measurement waits on an all-to-all (none states an expert-parallel "
                     "layout), so it is held at 1, the bound, with the prior's spread, and a "
                     "prediction that needs it is refused" if self.group == "shared" else
                     f"no row of {self.group} waits on an all-to-all, so it stays at the "
                     "pooled value")
            return f"not identified: {where}"
        other = "memory" if self.name == EFFICIENCIES[0] else "compute"
        floor = f"; its rows say only that it is at least {self.at_least:.3g}" \
            if self.at_least is not None else ""
        return (f"not identified: every row of {self.group} is {other}-bound, so it stays at "
                f"the pooled value{floor}")


class Calibration:
    """Efficiencies fitted to measured serving rates (see :func:`calibrate`).

    Attributes
    ----------
    rows : list of Row
    fitted : Fitted
        The posterior mode, covariance and scatter.
    efficiencies : list of Efficiency
        Per group, in the order of :data:`~.rows.EFFICIENCIES` (flops, HBM bandwidth,
        scale-up bandwidth).
    shared : dict of name to Efficiency
        The shared (pooled) values, group ``"shared"``.
    """

    def __init__(self, rows: Sequence[Row], fitted: Fitted):
        self.rows = list(rows)
        self.fitted = fitted
        q = quantile(fitted)
        self.shared = {name: self._efficiency("shared", None, j, q, len(self.rows),
                                              bool(fitted.identified[j]))
                       for j, name in enumerate(EFFICIENCIES)}
        self.efficiencies = []
        for k, group in enumerate(fitted.groups):
            members = [i for i, r in enumerate(self.rows) if r.group == group]
            for j in range(len(EFFICIENCIES)):
                informed = bool(fitted.informed[k, j])
                efficiency = self._efficiency(group, group, j, q, len(members), informed)
                if not informed:
                    efficiency = _with_floor(efficiency, fitted, [self.rows[i] for i in
                                                                  members], j)
                self.efficiencies.append(efficiency)

    def _efficiency(self, shown: str, group, j: int, q: float, rows: int,
                    identified: bool) -> Efficiency:
        return fitted_efficiency(self.fitted, shown, group, j, rows, identified, q)

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(sorted({r.group for r in self.rows}))

    @property
    def group_rows(self) -> dict[str, int]:
        """The measurements each group was fitted to."""
        return {g: sum(r.group == g for r in self.rows) for g in self.groups}

    def efficiency(self, group: str, name: str) -> Efficiency:
        """A group's fitted efficiency by name (one of :data:`~.rows.EFFICIENCIES`)."""
        for e in self.efficiencies:
            if e.group == group and e.name == name:
                return e
        raise UsageError(f"no calibrated group {group!r}; the groups are "
                         f"{', '.join(self.groups)}")

    def predict(self, target: str, given=(), presets=(), group: str | None = None
                ) -> Prediction:
        """A rate for a configuration at ``group``'s fitted efficiencies, with its 90%
        prediction interval and the bound.

        Parameters
        ----------
        target : str
            A rate in token/s (the scatter was measured on rates), e.g.
            ``tokens_per_second``.
        given, presets
            As for :func:`chalk.solve`; they must not pin the efficiencies.
        group : str, optional
            ``chip/engine`` as calibrated; None predicts for a group the calibration
            has not seen (the shared efficiencies and the spread between groups).

        Raises
        ------
        UsageError
            A target that is not a rate, a pinned efficiency, an unknown group, or a
            group whose chip no preset names.
        """
        return predict_question(self.fitted, self.groups, target, given, presets, group)

    def to_dict(self) -> dict:
        f = self.fitted
        return {
            "rows": len(self.rows), "groups": list(self.groups), "level": LEVEL,
            "prior_width": {"value": f.prior_width, "kind": "stated"},
            "scatter_log_sd": f.sigma, "degrees_of_freedom": f.dof,
            "scatter_by_architecture": {a: {"scatter_log_sd": sd, "degrees_of_freedom": d}
                                        for a, sd, d in f.scatters},
            "shared": {n: _efficiency_dict(e) for n, e in self.shared.items()},
            "efficiencies": [_efficiency_dict(e) for e in self.efficiencies]}

    def text(self) -> str:
        f = self.fitted
        kind = ("chip/engine/architecture" if any(family_of(g) for g in self.groups)
                else "chip/engine")
        lines = [f"Calibrated {len(self.rows)} measurements in {len(self.groups)} groups "
                 f"({kind}); 90% intervals.",
                 f"Each group's log efficiency = shared + deviation, deviation ~ N(0, "
                 f"{f.prior_width:g}^2) (prior width stated, not estimated).",
                 _scatter_line(f), "",
                 f"{'group':<22} {'rows':>4}  "
                 + " ".join(f"{name:<29}" for name in EFFICIENCIES).rstrip()]
        reference = sorted({family_of(g) for g in self.groups} - {None})[:1]
        shown = " ".join(["shared", *reference]) if f.families else "shared"
        count = sum(family_of(r.group) in (reference or [None]) for r in self.rows) \
            if f.families else len(self.rows)
        rows = [(shown, count, *self.shared.values())]
        if f.families:
            lines.insert(2, f"An architecture's shared value = the {reference[0]} one + an "
                            f"offset ~ N(0, {f.prior_width:g}^2).")
        for family in f.families:  # the architectures with their own offset
            pair = [fitted_efficiency(f, f"shared {family}", None, j, 0, family=family)
                    for j in range(len(EFFICIENCIES))]
            members = sum(family_of(r.group) == family for r in self.rows)
            rows.append((f"shared {family}", members, *pair))
        size = len(EFFICIENCIES)
        for k in range(0, len(self.efficiencies), size):
            each = self.efficiencies[k:k + size]
            rows.append((each[0].group, each[0].rows, *each))
        notes = []
        for group, count, *each in rows:
            lines.append(f"{group:<22} {count:>4}  "
                         + " ".join(f"{_shown(e):<29}" for e in each).rstrip())
            notes += [f"  {e.group} {e.name}: {e.note()}" for e in each if not e.identified]
        return "\n".join(lines + ([""] + ["* " + n.strip() for n in notes] if notes else []))

    def __str__(self) -> str:
        return self.text()


def fitted_efficiency(fitted: Fitted, shown: str, group: str | None, j: int, rows: int,
                      identified: bool = True, q: float | None = None,
                      unseen: bool = False, family: str | None = None) -> Efficiency:
    """Efficiency ``j`` of ``group`` (None: the shared value) with its 90% interval.

    ``unseen`` is a group the fit never saw: the shared value with the spread between
    groups (the prior width) added in log variance, as its predictions get it.
    """
    q = quantile(fitted) if q is None else q
    x = fitted.log_efficiency(group, family)[j]
    a = fitted.gradient(group, family)[j]
    variance = float(a @ fitted.covariance @ a)
    if unseen and not fitted.pooled:
        variance += fitted.prior_width ** 2
    sd = math.sqrt(variance)
    return Efficiency(shown, EFFICIENCIES[j], math.exp(x), math.exp(x - q * sd),
                      min(math.exp(x + q * sd), 1.0), identified, rows)


def predict_question(fitted: Fitted, groups: Sequence[str], target: str, given=(),
                     presets=(), group: str | None = None) -> Prediction:
    """:meth:`Calibration.predict` from a fit and the groups it calibrated (a stored
    calibration has no rows to compile)."""
    from chalk.compiled import compile_question

    family = question_architecture(fitted, group, presets)
    name = checked_prediction(target, given, group, groups, presets)
    pins = list(given.items()) if isinstance(given, Mapping) else list(given)
    pins += [(efficiency, "1") for efficiency in EFFICIENCIES]
    question = compile_question([name], pins, presets)
    row = Row(id="", group=group or "(not calibrated)", source="",
              measured=math.nan, metric="total", question=question,
              architecture=family or ARCHITECTURES[0])
    return predict_row(fitted, row)


def question_architecture(fitted: Fitted, group: str | None, presets=()) -> str | None:
    """The architecture a question's prediction is of, where the calibration tells them
    apart (an offset or a scatter per architecture; else None): the one a group named
    ``chip/engine/moe`` says, else the model preset's among ``presets``.

    Raises
    ------
    UsageError
        A calibration that tells architectures apart and a question with no group of
        one and not exactly one model preset: which efficiencies or scatter would apply.
    """
    from chalk.knowledge import data

    if family_of(group) is not None or not (fitted.families or fitted.scatters):
        return family_of(group)
    names = [getattr(p, "name", p) for p in ([presets] if isinstance(presets, str)
                                             else presets)]
    kinds = {architecture_of(n) for n in names if n in data.models()}
    if len(kinds) != 1:
        raise UsageError("this calibration tells dense and MoE models apart; name one "
                         "model preset (or a group of its architecture, such as "
                         "h200/tensorrt_llm/moe, for a split calibration)")
    return kinds.pop()


def checked_prediction(target: str, given, group: str | None, groups: Sequence[str],
                       presets=()) -> str:
    """The canonical name of a prediction's target, once checked: a rate, pins without
    the efficiencies the calibration sets, and a calibrated group (or none) whose chip
    a preset names (``h200`` or ``h200_fp8`` for ``h200/tensorrt_llm``): a group's
    efficiencies belong to its chip.

    Raises
    ------
    UsageError
    """
    from chalk.knowledge import data, load_model
    from chalk.symbolic.parsing import looks_uncertain
    from chalk.symbolic.units import Q_

    variable = load_model().variable(target)
    if Q_(1, variable.unit).dimensionality != Q_(1, RATE_UNIT).dimensionality:
        raise UsageError(f"a calibrated prediction is of a rate in {RATE_UNIT} (the "
                         f"scatter was measured on rates); {variable.name} is in "
                         f"{variable.unit}")
    if group is not None and group not in groups:
        raise UsageError(f"no calibrated group {group!r}; the groups are "
                         f"{', '.join(groups)}, or leave the group out to predict for one "
                         "not calibrated")
    if group is not None:
        chip = group.split("/", 1)[0]
        names = [getattr(p, "name", p) for p in
                 ([presets] if isinstance(presets, str) else presets)]
        if not any(n == chip or str(n).startswith(chip + "_") for n in names):
            raise UsageError(f"group {group!r} was calibrated on {chip}; name its chip preset "
                             f"(e.g. --preset {chip}) or leave the group out")
        kind = family_of(group)
        models = [n for n in names if n in data.models()]
        if kind is not None and not any(architecture_of(n) == kind for n in models):
            raise UsageError(f"group {group!r} was calibrated on {kind} models; name a {kind} "
                             "model preset or a group of the model's architecture")
    pins = list(given) if not isinstance(given, Mapping) else list(given.items())
    for pin in pins:
        name, value = ((str(pin[0]), pin[1]) if isinstance(pin, tuple)
                       else (str(pin).split("=", 1) + [""])[:2])
        name = name.strip()
        if name in EFFICIENCIES:
            raise UsageError(f"a calibrated prediction sets {name} from the calibration; "
                             "leave it out of the pins")
        if looks_uncertain(value):  # its interval would leave the pin's spread out
            raise UsageError(f"a calibrated prediction takes one value per pin; {name} is "
                             f"given a range or distribution ({value.strip()[:60]})")
    return variable.name


def _scatter_line(f: Fitted) -> str:
    """The scatter between measurements, one per architecture where there are several."""
    if not f.scatters:
        return (f"Scatter between measurements: {f.sigma:.3f} in log rate (a factor "
                f"{math.exp(f.sigma):.2f}), on {f.dof:.1f} degrees of freedom.")
    return "Scatter between measurements, in log rate: " + "; ".join(
        f"{a} {sd:.3f} (a factor {math.exp(sd):.2f}) on {d:.1f} degrees of freedom"
        for a, sd, d in f.scatters) + "."


def _shown(e: Efficiency) -> str:
    mark = "" if e.identified else " *"
    return f"{e.value:.3f} ({e.low:.3f}-{e.high:.3f}){mark}"


def _efficiency_dict(e: Efficiency) -> dict:
    return {"group": e.group, "name": e.name, "value": e.value, "low": e.low, "high": e.high,
            "identified": e.identified, "rows": e.rows, "at_least": e.at_least,
            "note": e.note()}


def _with_floor(e: Efficiency, fitted: Fitted, rows: Sequence[Row], j: int) -> Efficiency:
    """``e`` with the lowest value of efficiency ``j`` at which every row still answers
    as at the estimate (below it some row turns bound by it): the one side the rows fix.
    Found by evaluating each row on a scan below the estimate."""
    x = fitted.log_efficiency(e.group)
    scan = np.tile(x, (SCAN, 1))
    scan[:, j] = x[j] - np.linspace(0.0, math.log(SCAN_DEPTH), SCAN)
    floor = None
    for row in rows:
        logs = np.log(row.rates(scan))
        moved = np.nonzero(np.abs(logs - logs[0]) > 1e-6)[0]
        if len(moved):  # the last efficiency before the row's answer moves
            value = math.exp(scan[moved[0] - 1, j])
            floor = value if floor is None else max(floor, value)
    return Efficiency(e.group, e.name, e.value, e.low, e.high, False, e.rows, floor)
