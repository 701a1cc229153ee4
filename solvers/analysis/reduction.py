"""A row of the log-space Jacobian while it is reduced (solvers.analysis.rank).

Rows from products of powers stay exact, as integers over one denominator; a row that
mixes in a linearised relation becomes floating point, and each of its entries keeps
the largest magnitude that went into it, so that a difference is called zero against
what it was computed from (``RANK.rtol``), not against the rest of its row.
"""

from __future__ import annotations

import math
from fractions import Fraction

from chalk.solvers.analysis.jacobian import LogRow, Number
from chalk.solvers.tolerances import RANK


class ReducedRow:
    """A row being reduced: exact as integers over one denominator, else floats.

    An exact row's value in column ``c`` is ``entries[c] / den`` (kept in lowest
    terms), so elimination is integer arithmetic with one gcd per row operation
    rather than a fraction per entry. A floating-point row keeps, per entry, the
    largest magnitude that went into it (``sizes``): a difference counts as zero when
    it is below ``RANK.rtol`` times that, so cancellation is told from rounding entry
    by entry, and an entry that is merely small beside the rest of its row (a sum
    whose terms nearly balance at the reference point) is kept.
    """

    __slots__ = ("entries", "den", "exact", "sizes")

    def __init__(self, entries: dict, den: int, exact: bool, sizes: dict | None = None):
        self.entries, self.den, self.exact, self.sizes = entries, den, exact, sizes

    @classmethod
    def of(cls, row: LogRow) -> ReducedRow:
        if row.exact:
            entries, den = row.integers
            return cls(dict(entries), den, True)
        entries = {c: float(v) for c, v in row.entries.items()}
        return cls(entries, 1, False, {c: abs(v) for c, v in entries.items()})

    def value(self, column: str) -> Number:
        return Fraction(self.entries[column], self.den) if self.exact else self.entries[column]

    def values(self) -> dict[str, Number]:
        """The row as ``{column: Fraction or float}``."""
        if self.exact:
            den = self.den
            return {c: Fraction(v, den) for c, v in self.entries.items()}
        return dict(self.entries)

    def to_float(self) -> None:
        if self.exact:
            den = self.den
            self.entries = {c: v / den for c, v in self.entries.items()}
            self.sizes = {c: abs(v) for c, v in self.entries.items()}
            self.exact, self.den = False, 1

    def normalise(self, pivot: str) -> None:
        """Scale the row so that its ``pivot`` entry is one."""
        if self.exact:
            self.den = self.entries[pivot]
            if self.den < 0:
                self.den = -self.den
                self.entries = {c: -v for c, v in self.entries.items()}
            return
        inverse = 1.0 / self.entries[pivot]
        self.entries = {c: v * inverse for c, v in self.entries.items()}
        self.entries[pivot] = 1.0
        factor = abs(inverse)
        self.sizes = {c: v * factor for c, v in self.sizes.items()}

    def eliminate(self, column: str, source: ReducedRow) -> list[str]:
        """Remove ``column`` from this row with ``source`` (normalised on ``column``);
        returns the other columns that became zero. ``column`` itself is dropped."""
        if self.exact and source.exact:
            return self._eliminate_exact(column, source)
        self.to_float()
        factor = self.entries.pop(column)
        self.sizes.pop(column, None)
        entries, sizes, rtol = self.entries, self.sizes, RANK.rtol
        vanished = []
        # two loops rather than one with a test per entry: this is the engine's innermost
        # loop, and each keeps the arithmetic (so every rank decision) as it was
        if source.exact:
            inverse = 1.0 / source.den
            for c, v in source.entries.items():
                if c == column:
                    continue
                delta = factor * (v * inverse)
                size = sizes.get(c, 0.0)
                grown = abs(delta)
                if grown > size:
                    size = grown
                new = entries.get(c, 0.0) - delta
                if abs(new) <= rtol * size:
                    entries.pop(c, None)
                    sizes.pop(c, None)
                    vanished.append(c)
                else:
                    entries[c] = new
                    sizes[c] = size
            return vanished
        scale, source_sizes = abs(factor), source.sizes
        for c, v in source.entries.items():
            if c == column:
                continue
            delta = factor * v
            size = sizes.get(c, 0.0)
            grown = scale * source_sizes[c]
            if grown > size:
                size = grown
            new = entries.get(c, 0.0) - delta
            if abs(new) <= rtol * size:
                entries.pop(c, None)
                sizes.pop(c, None)
                vanished.append(c)
            else:
                entries[c] = new
                sizes[c] = size
        return vanished

    def _eliminate_exact(self, column: str, source: ReducedRow) -> list[str]:
        # self/d - (t/d)(s/e) = (self*e - t*s) / (d*e), with the source's pivot s_c = e
        t, e = self.entries.pop(column), source.den
        mine = self.entries
        if e != 1:
            mine = {c: v * e for c, v in mine.items()}
        vanished = []
        for c, v in source.entries.items():
            if c == column:
                continue
            new = mine.get(c, 0) - t * v
            if new:
                mine[c] = new
            else:
                mine.pop(c, None)
                vanished.append(c)
        den = self.den * e
        g = math.gcd(den, *mine.values())
        if g > 1:
            mine = {c: v // g for c, v in mine.items()}
            den //= g
        self.entries, self.den = mine, den
        return vanished


class Echelon:
    """Rows in reduced row echelon form, each normalised on its own pivot column.

    ``occurs`` maps each non-pivot column to the pivots whose rows hold it, so that a
    new pivot is removed from exactly the rows that hold it (the form stays reduced: a
    row reduced against it has no pivot column left).
    """

    def __init__(self):
        self.pivots: dict[str, ReducedRow] = {}
        self.occurs: dict[str, set[str]] = {}

    def reduce(self, row: ReducedRow) -> None:
        """Remove every pivot column from ``row``."""
        for column in [c for c in row.entries if c in self.pivots]:
            if column in row.entries:
                row.eliminate(column, self.pivots[column])

    def add(self, pivot: str, row: ReducedRow) -> None:
        """Take a reduced ``row`` in, normalised on ``pivot`` (one of its columns)."""
        row.normalise(pivot)
        occurs, pivots = self.occurs, self.pivots
        others = [c for c in row.entries if c != pivot]
        for other in sorted(occurs.pop(pivot, ())):
            target = pivots[other]
            for column in target.eliminate(pivot, row):
                holders = occurs.get(column)
                if holders is not None:
                    holders.discard(other)
            held = target.entries
            for column in others:
                if column in held:
                    occurs.setdefault(column, set()).add(other)
        for column in others:
            occurs.setdefault(column, set()).add(pivot)
        pivots[pivot] = row
