"""Refusing work that would run too long or hold too much, before it starts.

A command whose size the user chooses (Monte Carlo samples, a fit's observations and
unknowns) estimates its time and memory up front, from a pilot run timed at run time or
from per-unit costs measured and documented where they are declared, and is refused with
the estimate and a size that fits when it would pass ``LONG_WORK``'s limits.
"""

from __future__ import annotations

import math

from chalk.solvers.tolerances import LONG_WORK
from chalk.symbolic.errors import UsageError


def refuse_beyond_limits(what: str, seconds: float, size: float, count: float,
                         advice: str, power: float = 1.0) -> None:
    """Raise :class:`UsageError` if work estimated at ``seconds`` and ``size`` bytes
    passes ``LONG_WORK.max_seconds`` or ``LONG_WORK.max_bytes``.

    ``what`` names the work ("300,000 samples through this plan"); ``count`` is its size
    in the unit the user chooses, and ``advice`` a format string with ``{fits}``, the
    largest such count that fits, time and memory taken to grow as ``count ** power``.
    """
    if seconds <= LONG_WORK.max_seconds and size <= LONG_WORK.max_bytes:
        return
    room = min(LONG_WORK.max_seconds / max(seconds, 1e-300),
               LONG_WORK.max_bytes / max(size, 1e-300))
    fits = round_down(count * room ** (1 / power))
    raise UsageError(f"{what} would take about {duration(seconds)} and {memory(size)} "
                     f"(limits {duration(LONG_WORK.max_seconds)}, "
                     f"{memory(LONG_WORK.max_bytes)}); " + advice.format(fits=fits))


def round_down(count: float) -> int:
    """``count`` rounded down to two significant figures (at least 1)."""
    if count < 1:
        return 1
    scale = 10 ** max(int(math.log10(count)) - 1, 0)
    return int(count // scale * scale)


def duration(seconds: float) -> str:
    """A duration in words a person reads at a glance: "40 s", "18 min", "3 h"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def memory(size: float) -> str:
    """A byte count to three figures: "7.2 MB", "37 GB"."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size / 1e3:.3g} kB"
