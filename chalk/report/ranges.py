"""Where a ranged answer's median comes from: the pins that give it.

A report shows one number for a ranged answer, its median, and a derivation that
produces that same number. With one uncertain pin that moves the answer one way, the
answer's median is the answer at that pin's median, exactly (quantiles pass through a
monotone function). With several, every uncertain pin is put at the same percentile
``q`` (taken from the top for a pin that lowers the answer), and ``q`` is chosen so the
answer equals the Monte Carlo median.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from chalk.api import Solution

_GRID = np.linspace(0.0005, 0.9995, 4001)  # percentiles tried, 0.025% apart


@dataclass(frozen=True)
class MedianPoint:
    """Values (base units) for the uncertain pins at which ``target`` is at its median.

    ``percentile`` is the common percentile of the pins (50 when ``exact``); ``exact``
    says the point is the answer's true median rather than the Monte Carlo estimate.
    """

    target: str
    values: dict[str, float]
    percentile: float
    exact: bool


def median_point(solution: Solution, target: str) -> MedianPoint | None:
    """The uncertain pins' values that give ``target`` its median, or None when no pin
    it depends on is uncertain or the answer does not move one way with them (in the
    regime the question asked for)."""
    if solution.uncertainty is None or target not in solution.uncertainty.summaries:
        return None
    d = solution.derivation
    uncertain = {n: p.spread for n, p in d.pins.items()
                 if p.spread is not None and n not in d.unused_pins}
    slopes = dict(solution.elasticities(target))
    movers = {n: s for n, s in uncertain.items() if n in slopes}
    if not movers or solution.question is None:
        return None
    trial = {}
    for name, spread in movers.items():
        qs = _GRID if slopes[name] > 0 else 1 - _GRID
        trial[name] = np.array([spread.quantile(float(q)) for q in qs])
    # every point as solve answers it with the ranged pins at those values; a point the
    # bulk run cannot vouch for is left out (settle=0): then no point stands for the median
    curve = solution.question.evaluate(trial, settle=0).values[target]
    ok = np.isfinite(curve) & (curve > 0)
    if not ok.all() or not np.all(np.diff(curve) >= 0):
        return None  # not monotone along the path: no single point stands for the median
    if len(movers) == 1:
        (name, spread), = movers.items()
        return MedianPoint(target, {name: spread.quantile(0.5)}, 50.0, True)
    median = solution.uncertainty.summaries[target].median
    index = int(np.argmin(np.abs(np.log(curve) - math.log(median))))
    q = float(_GRID[index])
    values = {n: s.quantile(q if slopes[n] > 0 else 1 - q) for n, s in movers.items()}
    return MedianPoint(target, values, 100 * q, False)
