"""Pinned values: what is known about a quantity and where it comes from.

Plain data, importable without sympy or pint (a cached command-line answer builds
pins from it); reading and checking values is :mod:`chalk.solvers.pinning.pins`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from chalk.symbolic.uncertain import Spread


class Layer(IntEnum):
    """Where a pin comes from; a higher layer overrides a lower one."""

    CONVENTIONS = 0
    PRESET = 1
    GIVEN = 2


@dataclass(frozen=True)
class Pin:
    """A known value: base-unit magnitude plus where it came from.

    Attributes
    ----------
    name : str
        The quantity's canonical name.
    value : float
        Magnitude in chalk's coherent base units (the nominal value of a spread).
    text : str
        The value as written.
    layer : Layer
        Conventions, a preset, or the user's own pin.
    preset : str
        The conventions or preset name ("" for the user's pins).
    source, date, note : str
        Provenance of a preset value.
    estimate : bool
        Whether the source gives the value as an estimate.
    replaces : str
        Origin of a lower-layer value this pin overrode.
    spread : Spread or None
        A range or distribution.
    headline : bool
        A published, rounded figure that gives way to what the other pins determine.
    gives_way_to : tuple of str
        For a headline, quantities it feeds that still ground it when pinned: another
        way of stating the same choice (a layout's chips per group for its groups).
    """

    name: str
    value: float
    text: str
    layer: Layer = Layer.GIVEN
    preset: str = ""
    source: str = ""
    date: str = ""
    note: str = ""
    estimate: bool = False
    replaces: str = ""
    spread: Spread | None = None
    headline: bool = False
    gives_way_to: tuple[str, ...] = ()

    @property
    def origin(self) -> str:
        """Where the pin comes from, as shown: ``given``, ``preset h100``,
        ``conventions careful``."""
        if self.layer is Layer.GIVEN:
            return "given"
        word = "conventions" if self.layer is Layer.CONVENTIONS else "preset"
        return f"{word} {self.preset}"


def ground_zeros(pins) -> frozenset[str]:
    """The zeros the user states (exactly zero, not a range; not a preset's or the
    conventions' defaults): facts that may ground what computes their quantity
    (solvers.pinning.zeros)."""
    return frozenset(n for n, p in pins.items()
                     if p.value == 0 and p.spread is None and p.layer is Layer.GIVEN)
