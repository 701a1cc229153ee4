"""Cross-validated calibration of serving efficiencies (issue 24's acceptance figures).

Compiles each shipped measurement's question once, calibrates flops_efficiency and
hbm_bandwidth_efficiency per chip/engine (``chalk.calibrate``), then scores predictions
of rows each refit never saw: leave one row out and leave one source out. Printed
beside each other, measured in the same run: the calibrated predictions, one global
pair of efficiencies, and the uncalibrated bound (median |predicted/measured - 1|),
the coverage of the 90% prediction intervals, and the time of each stage.

Usage::

    python benchmarks/calibration.py [--prior-width W] [--rows N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run(prior_width: float | None = None, rows: int | None = None) -> dict:
    """Calibrate and cross-validate (on the first ``rows`` measurements, default all);
    print and return the figures and the seconds each stage took."""
    from chalk.applications.calibrate import (
        PRIOR_WIDTH,
        calibrate,
        compile_rows,
        cross_validate,
        shipped_records,
    )
    from chalk.applications.calibrate.fit import fit_rows

    width = PRIOR_WIDTH if prior_width is None else prior_width
    records = shipped_records()[:rows]
    seconds = {}
    start = time.perf_counter()
    compiled = compile_rows(records)
    seconds["compile"] = time.perf_counter() - start
    start = time.perf_counter()
    calibration = calibrate(rows=compiled, prior_width=width)
    pooled = fit_rows(compiled, 0.0)
    seconds["fit"] = time.perf_counter() - start
    print(calibration.text(), "\n")
    figures = {"rows": len(compiled), "prior_width": width}
    for scheme in ("row", "source"):
        start = time.perf_counter()
        score = cross_validate(compiled, width, scheme, calibration.fitted, pooled)
        seconds[scheme] = time.perf_counter() - start
        figures[scheme] = score.to_dict()
        print(score.text())
    figures["seconds"] = seconds
    print(f"\nseconds: compile {seconds['compile']:.1f} (each question once), calibrate "
          f"{seconds['fit']:.1f}, leave one row out {seconds['row']:.1f}, leave one source "
          f"out {seconds['source']:.1f}")
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prior-width", type=float, default=None)
    parser.add_argument("--rows", type=int, default=None)
    args = parser.parse_args()
    run(args.prior_width, args.rows)
