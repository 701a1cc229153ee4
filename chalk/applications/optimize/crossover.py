"""Where two figures of one dimension cross as one quantity varies
(``chalk optimize crossover``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from chalk.applications.optimize.curve import GRID, Curve, search_bounds
from chalk.symbolic.errors import UsageError
from chalk.symbolic.printing.quantities import describe_dimension
from chalk.symbolic.printing.readable import Readable


def _comparable(model, first: str, second: str) -> None:
    """Refuse a comparison that cannot cross: a quantity with itself, or two quantities
    of different dimensions (a time is never equal to a ratio)."""
    a, b = model.variable(first), model.variable(second)
    if a.name == b.name:
        raise UsageError(f"crossover compares {a.name} with itself; name two different "
                         "quantities")
    if a.dimensionality != b.dimensionality:
        raise UsageError(f"{a.name} ({describe_dimension(a.dimensionality)}) and {b.name} "
                         f"({describe_dimension(b.dimensionality)}) have different "
                         "dimensions, so they are never equal; compare two quantities of "
                         "the same dimension")


@dataclass(repr=False)
class Crossover(Readable):
    """Where two quantities are equal as a third varies."""

    first: str
    second: str
    over: str
    roots: list[float]  # base units of ``over``
    shown: list[str]
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        if not self.roots:
            return (f"{self.first} and {self.second} do not cross for {self.over} in the "
                    "range" + ("".join(f"\nnote: {n}" for n in self.notes)))
        lines = [f"{self.first} = {self.second} at {self.over} = {s}" for s in self.shown]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def crossover(first: str, second: str, over: str, low, high, given=(), presets=(),
              regime: str | None = None, tie: Sequence[str] = ()) -> Crossover:
    """Every value of ``over`` in [low, high] where ``first`` equals ``second``.

    A geometric grid brackets each sign change of ln(first/second) and Brent's method
    refines it, so ``low`` and ``high`` must be positive.

    Parameters
    ----------
    first, second : str
        The two quantities compared (``"t_compute"``, ``"t_memory"``).
    over : str
        The quantity that varies.
    low, high : str or Quantity
        The range searched, as value text with a unit or Quantities.
    given, presets, regime
        As for :func:`chalk.solve`.
    tie : sequence of str
        Names pinned equal to ``over`` as it varies.

    Returns
    -------
    Crossover
        ``roots`` in base (SI) units of ``over``, ``shown`` as text with units, and
        ``notes`` on grid points without a physical value; ``text()`` prints it.
    """
    from scipy.optimize import brentq

    from chalk.knowledge import load_model

    _comparable(load_model(), first, second)
    curve = Curve([first, second], over, given, presets, tie, regime)
    lo, hi = search_bounds(curve.model, over, low, high)
    grid = np.geomspace(lo, hi, GRID)
    values = curve(grid)
    a, b = values[curve.names[0]], values[curve.names[1]]
    with np.errstate(all="ignore"):
        f = np.log(a) - np.log(b)
    roots, notes = [], []
    for i in range(GRID - 1):
        if not (np.isfinite(f[i]) and np.isfinite(f[i + 1])):
            continue
        if f[i] == 0:
            roots.append(grid[i])
        elif f[i] * f[i + 1] < 0:
            def g(log_x):
                v = curve(math.exp(log_x))
                return math.log(v[curve.names[0]][0]) - math.log(v[curve.names[1]][0])
            roots.append(math.exp(brentq(g, math.log(grid[i]), math.log(grid[i + 1]),
                                         xtol=1e-14)))
    if not np.all(np.isfinite(f)):
        notes.append(f"{int(np.sum(~np.isfinite(f)))} of {GRID} grid points had no physical "
                     "value and were skipped")
    if len(roots) > 1:
        notes.append(f"{len(roots)} crossings: each is a balance point; the regime changes at "
                     "each one")
    shown = [curve.show(curve.over, r) for r in roots]
    return Crossover(curve.names[0], curve.names[1], curve.over, roots, shown, notes)
