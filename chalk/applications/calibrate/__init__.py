"""Calibrate serving efficiencies to published measurements, predict with intervals,
score on measurements the fit never saw (docs/CALIBRATE.md).

The modules: :mod:`.rows` turns each measurement into a compiled question answered at
any efficiencies, :mod:`.fit` fits the partial-pooling model, :mod:`.predict` gives
predictions with 90% prediction intervals, :mod:`.calibration` reports, and
:mod:`.score` cross-validates.
"""

from __future__ import annotations

from collections.abc import Iterable

from chalk.applications.calibrate.calibration import Calibration, Efficiency
from chalk.applications.calibrate.fit import PRIOR_WIDTH, fit_rows
from chalk.applications.calibrate.predict import Prediction
from chalk.applications.calibrate.rows import by_architecture, compile_rows, shipped_records
from chalk.applications.calibrate.score import Score, cross_validate
from chalk.symbolic.errors import UsageError

__all__ = ["Calibration", "Efficiency", "PRIOR_WIDTH", "Prediction", "Score", "calibrate",
           "cross_validate"]


def calibrate(records: Iterable | None = None, *, prior_width: float = PRIOR_WIDTH,
              rows=None, data=None, architecture: bool = False) -> Calibration:
    """Fit flops_efficiency, hbm_bandwidth_efficiency and scale_up_bandwidth_efficiency
    per chip × engine group (the last only where some row waits on an all-to-all).

    Parameters
    ----------
    records : iterable of Record, optional
        Measurements as :func:`chalk.knowledge.data.serving_measurements` reads them
        (default: every one of ``data``).
    prior_width : float
        The stated standard deviation of a group's log efficiency about the shared
        value (default :data:`PRIOR_WIDTH`; 0 fits one set for every group).
    rows : list of Row, optional
        Measurements already compiled (:func:`compile_rows`), to calibrate again
        without compiling.
    data : str or Path, optional
        A file of measurements in the shipped format (default: the shipped
        ``knowledge/data/serving_measurements.yaml``), read as strictly.
    architecture : bool
        Group by chip, engine and the model's architecture (``h200/tensorrt_llm/moe``)
        instead of chip and engine.

    Returns
    -------
    Calibration

    Raises
    ------
    UsageError
        Fewer than 3 measurements, an efficiency no measurement depends on, or a
        measurement chalk has no answer for.
    DataError
        A ``data`` file that breaks the schema, naming its file, entry and field.
    """
    if sum(x is not None for x in (records, rows, data)) > 1:
        raise UsageError("give the measurements one way: records, rows or data")
    if rows is None:
        rows = compile_rows(shipped_records(data=data) if records is None else records)
    if architecture:
        rows = by_architecture(rows)
    return Calibration(rows, fit_rows(rows, prior_width))
