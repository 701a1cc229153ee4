"""Declarations of quantities: variables (solved for or pinned) and constants."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from chalk.symbolic.hashing import fields_hash, state_without_hash
from chalk.symbolic.symbols import symbol, validate_name

if TYPE_CHECKING:  # pragma: no cover
    import pint
    import sympy

# Units are parsed and converted with pint only when a declaration is made or used, so
# checking a value against a quantity's bounds (within_bounds) needs neither pint nor sympy.


def _unit(text: str):
    from chalk.symbolic.parsing import parse_unit_cached

    return parse_unit_cached(text)


BOUND_RTOL = 1e-9  # a value may pass a declared bound by this much (relative) and be allowed


def within_bounds(value: float, lower: float | None, upper: float | None,
                  allow_zero: bool, rtol: float = BOUND_RTOL) -> bool:
    """Whether ``value`` (in the declared unit) is finite and in the allowed range:
    positive (or zero, with ``allow_zero``), and within ``lower``/``upper`` up to ``rtol``."""
    if value != value or value in (float("inf"), float("-inf")):
        return False
    if value < 0 or (value == 0 and not allow_zero):
        return False
    if lower is not None and value < lower * (1 - rtol):
        return False
    if upper is not None and value > upper * (1 + rtol):
        return False
    return True


@dataclass(frozen=True)
class Variable:
    """A named physical quantity with a unit.

    Parameters
    ----------
    name : str
        Canonical name from the vocabulary (lower-case identifier).
    unit : str
        Declared unit (pint syntax); values are shown and exported in it.
    description : str
        One line saying what the quantity is.
    lower, upper : float, optional
        Bounds in the declared unit. Every quantity is positive unless
        ``allow_zero`` is set; ``lower``/``upper`` narrow that further.
    allow_zero : bool
        Whether zero is a meaningful value (a free cache, say).
    aliases : tuple of str
        Other accepted spellings; output always uses ``name``.
    typical : float, optional
        A typical magnitude in the declared unit, the starting point for
        numeric root-finding.
    scale_like : bool
        Whether ranges of this quantity are naturally log-uniform.
    topic : str
        The area it belongs to (hardware, model, serving, ...).
    derived : bool
        Whether it is normally an output of relations rather than an input;
        used to suggest pins "from inputs" when a question is under-determined.
    structural : bool
        Whether it is a whole-number count of a model's config (layers, heads,
        experts, widths): a preset's value gives way only to other such counts, and a
        fractional value is flagged.
    """

    name: str
    unit: str
    description: str
    lower: float | None = None
    upper: float | None = None
    allow_zero: bool = False
    aliases: tuple[str, ...] = ()
    typical: float | None = None
    scale_like: bool = True
    topic: str = ""
    derived: bool = False  # usually computed from others, rarely pinned by hand
    structural: bool = False

    __hash__ = fields_hash  # a cache key on every solve (pin texts read): hashed once
    __getstate__ = state_without_hash

    def __post_init__(self):
        validate_name(self.name)
        for alias in self.aliases:
            validate_name(alias)
        _unit(self.unit)  # fail at declaration on a bad unit

    @property
    def symbol(self) -> sympy.Symbol:
        return symbol(self.name)

    @property
    def pint_unit(self) -> pint.Unit:
        return _unit(self.unit)

    @cached_property
    def dimensionality(self):
        """The declared unit's dimensions (every number given for it is checked against
        them)."""
        from chalk.symbolic.units import dimensionality

        return dimensionality(self.pint_unit)

    @cached_property
    def to_base(self) -> float:
        """Factor from the declared unit to the coherent base unit."""
        from chalk.symbolic.units import base_factor

        return base_factor(self.pint_unit)

    @cached_property
    def display(self):
        """How values of this quantity are shown (a
        :class:`~chalk.symbolic.printing.numbers.UnitDisplay`)."""
        from chalk.symbolic.printing.quantities import unit_display

        return unit_display(self.pint_unit)

    def quantity(self, base_value):
        """A pint Quantity in the declared unit from a base-unit magnitude."""
        from chalk.symbolic.units import Q_

        return Q_(base_value / self.to_base, self.pint_unit)

    def plausible_range(self) -> tuple[float, float]:
        """Where a numeric search looks for this quantity, in its declared unit: its
        bounds where declared, otherwise twelve orders of magnitude either side of its
        typical value."""
        typical = self.typical or 1.0
        low = self.lower if self.lower is not None else typical * 1e-12
        high = self.upper if self.upper is not None else typical * 1e12
        if self.lower is not None and self.lower <= 0:
            low = typical * 1e-12
        return low, high

    def requirement(self) -> str:
        """Words for the allowed range, used in error messages."""
        low = "zero or more" if self.allow_zero else "positive"
        parts = [low]
        # a pure number's unit is "1": "at most 1 1" would read as a typo
        unit = "" if self.unit in ("1", "dimensionless", "") else f" {self.unit}"
        if self.lower is not None:
            parts.append(f"at least {self.lower:g}{unit}")
        if self.upper is not None:
            parts.append(f"at most {self.upper:g}{unit}")
        return ", ".join(parts)

    def admits(self, base_value: float, rtol: float = BOUND_RTOL) -> bool:
        """Whether a base-unit magnitude lies in the allowed range."""
        return within_bounds(base_value / self.to_base, self.lower, self.upper,
                             self.allow_zero, rtol)

    def admits_each(self, base_values, rtol: float = BOUND_RTOL):
        """:meth:`admits` for every element of an array (a boolean array back)."""
        import numpy as np  # only array callers pay for it

        declared = np.asarray(base_values, dtype=float) / self.to_base
        ok = np.isfinite(declared) & (declared >= 0)  # comparisons with NaN are False
        if not self.allow_zero:
            ok &= declared != 0
        if self.lower is not None:
            ok &= declared >= self.lower * (1 - rtol)
        if self.upper is not None:
            ok &= declared <= self.upper * (1 + rtol)
        return ok


@dataclass(frozen=True)
class Constant:
    """A fixed quantity that appears in relations, such as one ``chip``.

    Unit constants let a relation turn a count into a number: ``n_chips/chip``
    reads "how many chips" and is dimensionless.
    """

    name: str
    value: float
    unit: str
    description: str = ""
    shown_as: str = field(default="")

    def __post_init__(self):
        validate_name(self.name)
        _unit(self.unit)

    @property
    def symbol(self) -> sympy.Symbol:
        return symbol(self.name)

    @property
    def pint_unit(self) -> pint.Unit:
        return _unit(self.unit)

    @cached_property
    def dimensionality(self):
        """The declared unit's dimensions (every number given for it is checked against
        them)."""
        from chalk.symbolic.units import dimensionality

        return dimensionality(self.pint_unit)

    @property
    def base_value(self) -> float:
        from chalk.symbolic.units import base_factor

        return self.value * base_factor(self.pint_unit)

    @property
    def label(self) -> str:
        return self.shown_as or self.name


_CONSTANTS: dict[str, Constant] = {}


def unit_constant(unit: str) -> Constant:
    """The constant 'one ``unit``', shown as the unit's name in derivations."""
    made = Constant(f"one_{unit}", 1.0, unit, f"one {unit}", shown_as=unit)
    return register_constant(made)


def register_constant(constant: Constant) -> Constant:
    """Record a constant so models can resolve its symbol; returns the stored one."""
    existing = _CONSTANTS.get(constant.name)
    if existing is not None:
        if existing != constant:
            raise ValueError(f"constant {constant.name!r} declared twice with different values")
        return existing
    _CONSTANTS[constant.name] = constant
    return constant


def known_constant(name: str) -> Constant | None:
    """The registered constant called ``name``, if any."""
    return _CONSTANTS.get(name)


def count(variable: Variable) -> sympy.Expr:
    """The dimensionless number of things in a count variable (``n_chips/chip``)."""
    return variable.symbol / unit_constant(variable.unit).symbol
