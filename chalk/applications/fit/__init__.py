"""Joint inference: the hidden quantities most consistent with many noisy observations.

>>> import chalk
>>> result = chalk.fit({
...     "pins": {"hbm_capacity": "80 GB"},
...     "unknowns": {"hbm_bandwidth": "1e12..1e14 byte/s"},
...     "observations": [{"quantity": "hbm_drain_time", "value": "lognormal(40 ms, 0.1)"}]})
>>> round(result["hbm_bandwidth"].value / 1e12, 6)  # 80 GB / 40 ms = 2 TB/s
2.0

The modules: :mod:`.spec` reads and checks what is asked, :mod:`.system` turns it into
predictions and their Jacobian, :mod:`.estimate` fits and sets intervals,
:mod:`.identify` decides what the observations fix, :mod:`.result` reports.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from chalk.applications.fit.estimate import Solved, check_loss, solve
from chalk.applications.fit.result import Estimate, FitResult, Residual
from chalk.applications.fit.spec import FitSpec, load_spec, read_spec
from chalk.applications.fit.system import System
from chalk.symbolic.printing.expressions import monomial_text

__all__ = ["Estimate", "FitResult", "FitSpec", "Residual", "fit"]

INFORMS = 1e-9  # |d ln prediction / d ln parameter| above this: the observation informs it


def fit(source: str | Path | Mapping | FitSpec, *, loss: str | None = None,
        outlier_z: float | None = None, model=None) -> FitResult:
    """Fit unknowns to observations (docs/FIT.md describes the file).

    Parameters
    ----------
    source : path, mapping or FitSpec
        A fit file (TOML), or its contents as mappings.
    loss : {"linear", "soft_l1", "huber", "cauchy"}, optional
        Overrides the file's ``loss``: least squares, or a robust loss that lets an
        outlying observation count less (``cauchy`` the least, see
        :mod:`chalk.applications.fit.estimate`).
    outlier_z : float, optional
        Overrides the file's ``outlier_z`` (default 3): residuals beyond this many
        standard deviations are flagged.
    model : Model, optional
        Another set of relations (default: the knowledge base).

    Returns
    -------
    FitResult
    """
    from chalk.knowledge import load_model

    model = model if model is not None else load_model()
    if isinstance(source, FitSpec):
        spec = source
    elif isinstance(source, Mapping):
        spec = read_spec(source, model)
    else:
        spec = load_spec(source, model)
    loss = check_loss(loss or spec.loss)
    outlier_z = spec.outlier_z if outlier_z is None else float(outlier_z)
    system = System(spec, model)
    solved = solve(system, loss)
    system.confirm(solved.x)  # every prediction is what solve answers there
    return _result(spec, system, solved, loss, outlier_z)


def _result(spec: FitSpec, system: System, solved: Solved, loss: str,
            outlier_z: float) -> FitResult:
    from scipy.stats import chi2 as chi2_dist

    x, cov = solved.x, solved.covariance
    estimates = []
    for k, p in enumerate(system.parameters):
        informed = tuple(int(i) for i in np.nonzero(np.abs(solved.jacobian[:, k]) > INFORMS)[0])
        prior = p.prior.describe()
        declared = math.exp(x[k]) / p.to_base
        if solved.identification.identified[k]:
            low, high = (math.exp(v) / p.to_base for v in solved.intervals[k])
            notes = []
            for side, v, bound in ((0, solved.intervals[k][0], p.prior.a),
                                   (1, solved.intervals[k][1], p.prior.b)):
                if p.prior.kind in ("uniform", "loguniform") and \
                        abs(v - math.log(bound)) < 1e-6:
                    notes.append(f"the {('lower', 'upper')[side]} end is the prior's bound: "
                                 "the observations do not bound it on that side")
            estimates.append(Estimate(p.name, p.quantity, p.group, True, declared, low, high,
                                      p.unit, solved.methods[k], prior, informed,
                                      notes=tuple(notes)))
            continue
        combo = solved.identification.combinations.get(k, {})
        if not combo:
            estimates.append(Estimate(p.name, p.quantity, p.group, False, None, None, None,
                                      p.unit, "not identified", prior, informed))
            continue
        vector = np.zeros(len(x))
        unit = 1
        for j, e in combo.items():
            vector[j] = e
            unit = unit * system.parameters[j].unit ** e
        log_value = sum(e * (x[j] - math.log(system.parameters[j].to_base))
                        for j, e in combo.items())
        sd = math.sqrt(max(float(vector @ cov @ vector), 0.0))
        from chalk.symbolic.uncertain import Z90

        text = monomial_text({system.parameters[j].name: e for j, e in combo.items()})
        estimates.append(Estimate(
            p.name, p.quantity, p.group, False, math.exp(log_value),
            math.exp(log_value - Z90 * sd), math.exp(log_value + Z90 * sd),
            getattr(unit, "units", unit), "Jacobian (near-linear)", prior, informed, text))
    predicted = np.exp(system.predict(x))
    residuals = []
    for i, o in enumerate(spec.observations):
        variable = system.model.variables[o.quantity]
        z = float(solved.residuals[i])
        residuals.append(Residual(o.index, o.quantity, o.subject, o.value / variable.to_base,
                                  float(predicted[i]) / variable.to_base, variable.pint_unit,
                                  z, abs(z) > outlier_z, o.text, o.source, o.date))
    rank = solved.identification.rank
    chi2 = float(np.sum(solved.residuals ** 2))
    dof = len(residuals) - rank
    p_value = float(chi2_dist.sf(chi2, dof)) if dof > 0 else None
    notes = list(system.notes)
    notes.append("intervals are 90%: 'Jacobian (near-linear)' from the covariance of the "
                 "log estimates, checked against the objective at both ends; 'profile "
                 "likelihood' where that check failed or a prior's bound is near")
    if dof == 0:
        notes.append("no redundancy: the observations fix the identified parameters exactly "
                     "and cannot be checked against each other")
    elif p_value is not None and p_value < 0.01 and loss == "linear":
        notes.append(f"the observations scatter more than their stated uncertainties allow "
                     f"(p = {p_value:.2g}); the intervals take the uncertainties as stated, "
                     "so they are likely too narrow; look at the outliers, or fit with "
                     "loss = soft_l1")
    if loss != "linear":
        notes.append(f"robust loss {loss}: observations far off count less; the intervals "
                     "use the final reweighting's weights, and chi-squared is of the "
                     "unweighted residuals")
    notes.append(f"outliers: |z| > {outlier_z:g}, z from this fit's own residuals (an outlier "
                 "also pulls a least-squares fit towards itself, so its z understates it)")
    return FitResult(spec.title, tuple(estimates), tuple(residuals), loss, outlier_z, chi2,
                     dof, p_value, rank, tuple(notes), solved.evaluations)
