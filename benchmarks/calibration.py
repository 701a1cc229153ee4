"""Cross-validated calibration of serving efficiencies (issue 24's acceptance figures).

Compiles each shipped measurement's question once, calibrates flops_efficiency and
hbm_bandwidth_efficiency per chip/engine (``chalk.calibrate``), then scores predictions
of rows each refit never saw: leave one row out and leave one source out. Printed
beside each other, measured in the same run: the calibrated predictions, one global
pair of efficiencies, and the uncalibrated bound (median |predicted/measured - 1|),
the coverage of the 90% prediction intervals, and the time of each stage.

Usage::

    python benchmarks/calibration.py [--prior-width W] [--rows N]
        [--by-architecture | --separate-architectures]

``--by-architecture`` groups by chip, engine and the model's architecture (dense or MoE)
instead of chip and engine. ``--separate-architectures`` is an experiment chalk does not
ship: dense and MoE rows calibrated apart (each its own shared values and scatter, groups
chip/engine within it), each scheme scored within each and over both together.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# As the chalk command (chalk.cli) and benchmarks/run.py do: a single-threaded BLAS, set
# before numpy loads. On 2 shared cores a threaded OpenBLAS spins for the core another
# process holds: compiling the questions (the reference point's least-squares steps) cost
# about three times the CPU time under a load of 6-8 (2026-12-02).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run(prior_width: float | None = None, rows: int | None = None,
        architecture: bool = False, separate: bool = False) -> dict:
    """Calibrate and cross-validate (on the first ``rows`` measurements, default all;
    grouped by chip/engine, or with ``architecture`` by chip/engine/architecture); print
    and return the figures and the seconds each stage took."""
    from chalk.applications.calibrate import (
        PRIOR_WIDTH,
        calibrate,
        compile_rows,
        cross_validate,
        shipped_records,
    )
    from chalk.applications.calibrate.fit import fit_rows
    from chalk.applications.calibrate.rows import by_architecture

    width = PRIOR_WIDTH if prior_width is None else prior_width
    records = shipped_records()[:rows]
    seconds, cpu = {}, {}  # wall and this process's CPU (the cores are shared)

    def timed(stage, work):
        start, start_cpu = time.perf_counter(), time.process_time()
        out = work()
        seconds[stage] = time.perf_counter() - start
        cpu[stage] = time.process_time() - start_cpu
        return out

    compiled = timed("compile", lambda: compile_rows(records))
    if separate:
        return _separately(compiled, width)
    if architecture:
        compiled = by_architecture(compiled)
    calibration, pooled = timed("fit", lambda: (calibrate(rows=compiled, prior_width=width),
                                                fit_rows(compiled, 0.0)))
    print(calibration.text(), "\n")
    figures = {"rows": len(compiled), "prior_width": width,
               "grouping": "chip/engine/architecture" if architecture else "chip/engine"}
    for scheme in ("row", "source"):
        score = timed(scheme, lambda s=scheme: cross_validate(compiled, width, s,
                                                              calibration.fitted, pooled))
        figures[scheme] = score.to_dict()
        logs = figures[scheme]["median_abs_log_error"]
        print(score.text() + "; median |log error| " + ", ".join(
            f"{v:.3f} {k}" for k, v in logs.items()))
        figures[scheme]["by_architecture"] = _by_kind(score, compiled)
    figures["seconds"], figures["cpu_seconds"] = seconds, cpu
    names = {"compile": "compile (each question once)", "fit": "calibrate",
             "row": "leave one row out", "source": "leave one source out"}
    print("\nseconds, wall (CPU): " + ", ".join(
        f"{names[k]} {seconds[k]:.1f} ({cpu[k]:.1f})" for k in names))
    return figures


def _by_kind(score, rows) -> dict:
    """The calibrated figures of a score's dense rows and MoE rows apart (printed)."""
    import statistics

    kind = {r.id: r.architecture for r in rows}
    out = {}
    for architecture in ("dense", "moe"):
        scored = [s for s in score.scored if kind[s.id] == architecture]
        if not scored:
            continue
        out[architecture] = {
            "rows": len(scored),
            "median_abs_error": statistics.median(abs(s.calibrated.value / s.measured - 1)
                                                  for s in scored),
            "coverage_90": sum(s.calibrated.covers(s.measured) for s in scored) / len(scored)}
    print("  " + "; ".join(f"{k} ({v['rows']} rows): {v['median_abs_error']:.1%}, 90% "
                           f"intervals cover {v['coverage_90']:.1%}" for k, v in out.items()))
    return out


def _separately(compiled, width: float) -> dict:
    """Dense and MoE rows calibrated apart and cross-validated within each; the figures
    of each and of every scored row together."""
    import statistics

    from chalk.applications.calibrate import cross_validate
    from chalk.applications.calibrate.fit import fit_rows

    figures = {}
    for scheme in ("row", "source"):
        scored = []
        for kind in ("dense", "moe"):
            rows = [r for r in compiled if r.architecture == kind]
            full, pooled = fit_rows(rows, width), fit_rows(rows, 0.0)
            score = cross_validate(rows, width, scheme, full, pooled)
            print(f"{kind} ({len(rows)} rows, scatter {full.sigma:.3f}): {score.text()}")
            scored += score.scored
        error = statistics.median(abs(s.calibrated.value / s.measured - 1) for s in scored)
        coverage = sum(s.calibrated.covers(s.measured) for s in scored) / len(scored)
        print(f"both, {scheme}: median |predicted/measured - 1| {error:.1%}, 90% intervals "
              f"cover {coverage:.1%} of {len(scored)} rows")
        figures[scheme] = {"median_abs_error": error, "coverage_90": coverage}
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prior-width", type=float, default=None)
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--by-architecture", action="store_true")
    parser.add_argument("--separate-architectures", action="store_true")
    args = parser.parse_args()
    run(args.prior_width, args.rows, args.by_architecture, args.separate_architectures)
