"""Joint inference: the hidden quantities most consistent with many noisy observations.

>>> import chalk
>>> result = chalk.fit({
...     "pins": {"hbm_capacity": "80 GB"},
...     "unknowns": {"hbm_bandwidth": "1e12..1e14 byte/s"},
...     "observations": [{"quantity": "hbm_drain_time", "value": "lognormal(40 ms, 0.1)"}]})
>>> round(result["hbm_bandwidth"].value / 1e12, 6)  # 80 GB / 40 ms = 2 TB/s
2.0

The modules: :mod:`.spec` reads and checks what is asked, :mod:`.system` turns it into
predictions and their Jacobian, :mod:`.estimate` fits, sets intervals and walks the
ridges of what is not identified, :mod:`.identify` decides what the observations fix,
:mod:`.dispersion` measures their scatter, :mod:`.readout` says what all that means per
parameter and observation, :mod:`.result` holds and prints it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from chalk.applications.fit.dispersion import Dispersion, p_value
from chalk.applications.fit.estimate import Solved, check_loss, solve
from chalk.applications.fit.readout import estimate_of, residuals_of
from chalk.applications.fit.result import Estimate, FitResult, Residual
from chalk.applications.fit.spec import FitSpec, load_spec, read_spec
from chalk.applications.fit.system import System, merge_repeats

__all__ = ["Estimate", "FitResult", "FitSpec", "Residual", "fit"]

def fit(source: str | Path | Mapping | FitSpec, *, loss: str | None = None,
        outlier_z: float | None = None, scale_intervals: bool | None = None,
        model=None) -> FitResult:
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
    scale_intervals : bool, optional
        Overrides the file's ``scale_by_dispersion`` (default False): widen every
        interval's half-widths in the log by the square root of the observed dispersion
        when it is above 1 (the observations scatter more than stated).
    model : Model, optional
        Another set of relations (default: the knowledge base).

    Returns
    -------
    FitResult
    """
    from chalk.knowledge import load_model
    from chalk.solvers.bulk.progress import task

    model = model if model is not None else load_model()
    if isinstance(source, FitSpec):
        spec = source
    elif isinstance(source, Mapping):
        spec = read_spec(source, model)
    else:
        spec = load_spec(source, model)
    loss = check_loss(loss or spec.loss)
    outlier_z = spec.outlier_z if outlier_z is None else float(outlier_z)
    scale = spec.scale_by_dispersion if scale_intervals is None else bool(scale_intervals)
    merged, repeats, repeated = merge_repeats(spec)
    # three stages, each counted within (subjects; evaluations, then parameters;
    # subjects): between their counts the line shows how many stages are done
    with task(f"fit of {len(spec.observations):,} observations", 3) as stages:
        system = System(merged, model)
        stages.advance()
        solved = solve(system, loss)
        stages.advance()
        system.confirm(solved.x)  # every prediction is what solve answers there
        stages.advance()
    return _result(spec, system, solved, loss, outlier_z, scale, repeats, repeated)


def _result(spec: FitSpec, system: System, solved: Solved, loss: str,
            outlier_z: float, scale: bool, repeats: dict[int, int],
            repeated: list[str]) -> FitResult:
    found = residuals_of(spec, system, solved, outlier_z, repeats)
    rank = solved.identification.rank
    chi2 = float(np.sum(solved.residuals ** 2))
    dof = len(solved.residuals) - rank
    dispersion = Dispersion.of(solved.residuals, rank, loss, outlier_z)
    widen = dispersion.widening(scale)
    estimates = [estimate_of(system, solved, k, widen) for k in range(len(system.parameters))]
    notes = list(system.notes) + repeated
    notes.append("intervals are 90%: 'Jacobian (near-linear)' from the covariance of the "
                 "log estimates, checked against the objective at both ends; 'profile "
                 "likelihood' where that check failed or a prior's bound is near")
    if dof == 0:
        notes.append("no redundancy: the observations fix the identified parameters exactly "
                     "and cannot be checked against each other")
    notes.extend(dispersion.notes(widen, scale))
    if loss != "linear":
        notes.append(f"robust loss {loss}: observations far off count less; the intervals "
                     "use the final reweighting's weights, and chi-squared is of the "
                     "unweighted residuals")
    notes.append(f"outliers: |z| > {outlier_z:g}, z from this fit's own residuals (an outlier "
                 "also pulls a least-squares fit towards itself, so its z understates it)")
    return FitResult(spec.title, tuple(estimates), tuple(found), loss, outlier_z, chi2,
                     dof, p_value(chi2, dof), rank, tuple(notes), solved.evaluations,
                     dispersion.ratio, widen)
