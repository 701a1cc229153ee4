"""Declarations of relations between quantities.

A :class:`Relation` is declared once, with its equation, what it says, where it
comes from and what it assumes; checking, solving, printing and documentation
all read that one declaration.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import sympy
from chalk.symbolic.hashing import fields_hash, state_without_hash
from chalk.symbolic.symbols import validate_name


@dataclass(frozen=True)
class Source:
    """Where a relation or a number comes from.

    Parameters
    ----------
    citation : str
        Human-readable reference, e.g. ``"lecture 16:17-19:25"`` or
        ``"Hoffmann et al. 2022, arXiv:2203.15556"``.
    kind : str
        ``"lecture"``, ``"paper"``, ``"book"``, ``"definition"`` or ``"data"``.
    url : str
        Optional link.
    """

    citation: str
    kind: str = "paper"
    url: str = ""

    def __str__(self) -> str:
        return self.citation


LECTURE_URL = "https://youtu.be/xmkSf5IS-zw"


def lecture(start: str, end: str | None = None) -> Source:
    """A span of the Reiner Pope blackboard lecture (Dwarkesh Patel, 2026)."""
    span = start if end is None else f"{start}-{end}"
    return Source(f"lecture {span}", "lecture", LECTURE_URL)


def definition(text: str = "definition") -> Source:
    """A relation that defines its left-hand quantity."""
    return Source(text, "definition")


def paper(citation: str, url: str = "") -> Source:
    return Source(citation, "paper", url)


def book(citation: str, url: str = "") -> Source:
    return Source(citation, "book", url)


def _as_expr(side, name: str) -> sympy.Expr:
    """Accept a sympy expression or an exact integer, nothing else (no text, no floats)."""
    if isinstance(side, sympy.Basic):
        return side
    if isinstance(side, int) and not isinstance(side, bool):
        return sympy.Integer(side)
    raise TypeError(f"relation {name}: a side must be a sympy expression, not {type(side)}")


# A whole count rounds up where it must cover a load (replicas for the users) and down
# where it must stay within a limit (the sequences that fit in HBM).
ROUNDINGS = {sympy.ceiling: "up", sympy.floor: "down"}


def continuous(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with every ceiling() and floor() replaced by its argument: the smooth
    relaxation in which a whole count equals the count it rounds, for analyses that need
    derivatives (what a relation can determine, a consistent reference point), never for
    values."""
    for rounding in ROUNDINGS:
        expr = expr.replace(rounding, lambda argument: argument)
    return expr


@dataclass(frozen=True)
class Relation:
    """An equation ``lhs = rhs`` between declared quantities.

    Parameters
    ----------
    name : str
        Identifier; unique in a model.
    lhs, rhs : sympy.Expr
        The two sides, built from the symbols of declared variables and
        constants with exact (integer or rational) coefficients.
    description : str
        One line saying what the relation states.
    source : Source
        Where it comes from.
    assumptions : tuple of str
        What must hold for it to apply.
    regimes : tuple of (str, sympy.Expr)
        For a relation with ``max``/``min``, a name for each argument (e.g.
        ``("compute-bound", t_compute)``); the solver reports which one held.
    topic : str
        The lecture section or theme it belongs to.
    variant : str
        The name of the :class:`Variant` it belongs to (``"mla"``), if it holds for one
        kind of model only; empty if it holds for every model.
    only_when_chosen : bool
        Whether it is left out until the pins choose its variant. A relation that states
        one kind's version of a quantity both kinds have (the KV a chip holds: heads for
        grouped-query attention, the whole latent for MLA) would, beside the other kind's,
        equate the two kinds and solve for a model that is neither.
    """

    name: str
    lhs: sympy.Expr
    rhs: sympy.Expr
    description: str
    source: Source
    assumptions: tuple[str, ...] = ()
    regimes: tuple[tuple[str, sympy.Expr], ...] = ()
    topic: str = ""
    variant: str = ""
    only_when_chosen: bool = False

    def __post_init__(self):
        validate_name(self.name)
        if self.only_when_chosen and not self.variant:
            raise ValueError(f"relation {self.name}: only_when_chosen needs a variant")
        object.__setattr__(self, "lhs", _as_expr(self.lhs, self.name))
        object.__setattr__(self, "rhs", _as_expr(self.rhs, self.name))

    __hash__ = fields_hash  # a cache key on every solve: hashed once
    __getstate__ = state_without_hash

    @property
    def residual(self) -> sympy.Expr:
        """``lhs - rhs``, zero when the relation holds."""
        return self.lhs - self.rhs

    @property
    def symbols(self) -> frozenset[sympy.Symbol]:
        return frozenset(self.lhs.free_symbols | self.rhs.free_symbols)

    @property
    def equation(self) -> str:
        from chalk.symbolic.printing.expressions import plain

        return f"{plain(self.lhs)} = {plain(self.rhs)}"

    @cached_property
    def _regime_nodes(self) -> frozenset:
        # asked on every solve (which checks need a regime); the sides never change
        return frozenset(self.lhs.atoms(sympy.Max, sympy.Min)
                         | self.rhs.atoms(sympy.Max, sympy.Min))

    def has_regimes(self) -> bool:
        return bool(self._regime_nodes)

    def is_min(self) -> bool:
        """Whether the max()/min() whose arguments name the regimes is a min() (the
        smallest argument holds) rather than a max()."""
        first = self.regimes[0][1] if self.regimes else None
        return any(isinstance(n, sympy.Min) and (first is None or first in n.args)
                   for n in self._regime_nodes)

    @cached_property
    def _rounded(self) -> dict[str, str]:
        return {s.name: ROUNDINGS[type(n)] for n in self.lhs.atoms(*ROUNDINGS)
                | self.rhs.atoms(*ROUNDINGS) for s in n.free_symbols}

    def rounds(self, name: str) -> bool:
        """Whether quantity ``name`` appears inside a ceiling() or floor(): the relation
        gives a whole count from it, and cannot give it back (every value of an interval
        rounds alike)."""
        return name in self._rounded

    def rounding(self, name: str) -> str:
        """``"up"`` (a ceiling) or ``"down"`` (a floor) for a quantity the relation rounds
        (:meth:`rounds`), empty for any other."""
        return self._rounded.get(name, "")

    def inside_regime_node(self, name: str) -> bool:
        """Whether quantity ``name`` appears inside the max()/min(): solving for it must
        choose a regime, where solving for anything else evaluates the max() forwards."""
        return name in self._inside_regime_nodes

    @cached_property
    def _inside_regime_nodes(self) -> frozenset[str]:
        # asked of every step on every solve (solvers.execution.checked)
        return frozenset(s.name for n in self._regime_nodes for s in n.free_symbols)


@dataclass(frozen=True)
class Condition:
    """A bound an answer should respect to be physical, though no relation forces it.

    ``quantity`` should be at least (``kind=">="``) or at most (``"<="``) ``bound``, an
    expression of constants in the quantity's dimension (``1 sequence``). An answer that
    breaks it is still given, with a flag saying so and what it means.

    Parameters
    ----------
    name : str
    quantity : str
        The quantity held to the bound.
    kind : {">=", "<="}
    bound : sympy.Expr
        Constants only (numbers and unit constants).
    meaning : str
        What a value past the bound says about the pins, one clause.
    source : Source
    topic : str
    reported_with : tuple of str
        Topics of quantities (``"serving"``) whose answers also report this quantity
        whenever the pins determine it, so that a bound is seen even when it holds.
    """

    name: str
    quantity: str
    kind: str
    bound: sympy.Expr
    meaning: str
    source: Source
    topic: str = ""
    reported_with: tuple[str, ...] = ()

    def __post_init__(self):
        validate_name(self.name)
        validate_name(self.quantity)
        if self.kind not in (">=", "<="):
            raise ValueError(f"condition {self.name}: kind must be '>=' or '<='")
        object.__setattr__(self, "bound", _as_expr(self.bound, self.name))

    @property
    def inequality(self) -> str:
        """The condition as text: ``batch_size >= 1 sequence``."""
        from chalk.symbolic.printing.expressions import plain

        bound = plain(self.bound)
        if self.bound.is_Symbol:  # a unit constant, shown by its unit: one of it
            bound = f"1 {bound}"
        return f"{self.quantity} {self.kind} {bound}"


@dataclass(frozen=True)
class Variant:
    """One of several kinds of model whose relations exclude each other's.

    Grouped-query and latent attention size the KV cache, the attention FLOPs and the
    attention weights by different formulas; both sets cannot hold for one model. A
    question whose pins include every ``marker`` of some variants of a group, and not of
    the others, is planned with the relations of those variants only.

    Parameters
    ----------
    name : str
        Referred to by :attr:`Relation.variant`.
    group : str
        The variants of one group exclude each other (``"attention"``).
    markers : tuple of str
        Quantities only this variant has; pinning them selects it.
    description : str
    """

    name: str
    group: str
    markers: tuple[str, ...]
    description: str

    def __post_init__(self):
        validate_name(self.name)
        for marker in self.markers:
            validate_name(marker)
