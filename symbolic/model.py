"""A model: the immutable set of declared variables, constants and relations.

Building a model validates it: names are unique, every symbol in a relation is
declared, coefficients are exact, and both sides of every relation have the
same dimension. A defect raises :class:`KnowledgeError` naming the relation.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import sympy
from chalk.symbolic.dimensions import DimensionConflict, dimension_of
from chalk.symbolic.errors import KnowledgeError, UnknownNameError
from chalk.symbolic.printing.quantities import describe_dimension
from chalk.symbolic.relations import Condition, Relation, Variant
from chalk.symbolic.units import base_unit, ureg
from chalk.symbolic.variables import Constant, Variable, known_constant


@dataclass(frozen=True, eq=False)  # compared and hashed by identity
class Model:
    """Variables, constants, relations and conditions, checked; look-ups by name."""

    variables: Mapping[str, Variable]
    relations: Mapping[str, Relation]
    constants: Mapping[str, Constant]
    aliases: Mapping[str, str]
    _relations_of: Mapping[str, tuple[str, ...]] = field(repr=False)
    _unknowns_of: Mapping[str, frozenset[str]] = field(repr=False)
    conditions: Mapping[str, Condition] = field(default_factory=dict)
    variants: Mapping[str, Variant] = field(default_factory=dict)
    # the model this one keeps a subset of the relations of (for_variants), else None
    parent: Model | None = field(default=None, repr=False)

    def variable(self, name: str) -> Variable:
        """The variable called ``name`` (or one of its aliases).

        Raises
        ------
        UnknownNameError
            With close matches as suggestions.
        """
        canonical = self.aliases.get(name, name)
        try:
            return self.variables[canonical]
        except KeyError:
            pool = list(self.variables) + list(self.aliases)
            close = difflib.get_close_matches(name, pool, n=3, cutoff=0.6)
            suggestions = list(dict.fromkeys(self.aliases.get(c, c) for c in close))
            raise UnknownNameError(name, "quantity", suggestions) from None

    def relation(self, name: str) -> Relation:
        try:
            return self.relations[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(self.relations), n=3, cutoff=0.6)
            raise UnknownNameError(name, "relation", close) from None

    def relations_of(self, variable: str) -> tuple[str, ...]:
        """Names of the relations a variable appears in."""
        return self._relations_of.get(variable, ())

    def variables_in(self, relation: str) -> frozenset[str]:
        """Names of the variables (not constants) a relation involves."""
        return self._unknowns_of[relation]

    def constant_values(self) -> dict[str, float]:
        """Base-unit values of every constant, by symbol name."""
        return {name: c.base_value for name, c in self.constants.items()}

    def base_unit_of(self, expr: sympy.Expr):
        """The coherent base unit (pint) of ``expr``, a product of powers of declared
        quantities and constants; a sum, max() or min() takes its first term's (the model
        checked at build that all agree)."""
        if expr.is_Symbol:
            declared = self.variables.get(expr.name) or self.constants[expr.name]
            return base_unit(declared.pint_unit)
        if expr.is_Number:
            return ureg.dimensionless
        if expr.is_Add or isinstance(expr, (sympy.Max, sympy.Min)):
            return self.base_unit_of(expr.args[0])
        if expr.is_Pow:
            return self.base_unit_of(expr.args[0]) ** float(expr.args[1])
        unit = ureg.dimensionless
        for factor in expr.args:  # a product
            unit = unit * self.base_unit_of(factor)
        return unit


def build_model(variables: Iterable[Variable], relations: Iterable[Relation],
                conditions: Iterable[Condition] = (), variants: Iterable[Variant] = (),
                parent: Model | None = None) -> Model:
    """Check declarations and assemble a :class:`Model`.

    Raises
    ------
    KnowledgeError
        On duplicate names, undeclared symbols, float coefficients or a
        relation whose sides differ in dimension.
    """
    var_map: dict[str, Variable] = {}
    aliases: dict[str, str] = {}
    for v in variables:
        if v.name in var_map:
            raise KnowledgeError(f"variable {v.name} is declared twice")
        var_map[v.name] = v
    for v in var_map.values():
        for alias in v.aliases:
            if alias in var_map or alias in aliases:
                raise KnowledgeError(f"alias {alias} of {v.name} clashes with another name")
            aliases[alias] = v.name

    rel_map: dict[str, Relation] = {}
    constants: dict[str, Constant] = {}
    relations_of: dict[str, list[str]] = {}
    unknowns_of: dict[str, frozenset[str]] = {}
    for r in relations:
        if r.name in rel_map:
            raise KnowledgeError(f"relation {r.name} is declared twice")
        rel_map[r.name] = r
        dims = {}
        names = set()
        for s in r.symbols:
            if s.name in var_map:
                dims[s] = var_map[s.name].dimensionality
                names.add(s.name)
                relations_of.setdefault(s.name, []).append(r.name)
                continue
            constant = known_constant(s.name)
            if constant is None:
                raise KnowledgeError(f"relation {r.name} uses undeclared symbol {s.name}")
            constants[s.name] = constant
            dims[s] = constant.dimensionality
        if not names:
            raise KnowledgeError(f"relation {r.name} involves no variables")
        unknowns_of[r.name] = frozenset(names)
        floats = (r.lhs.atoms(sympy.Float) | r.rhs.atoms(sympy.Float))
        if floats:
            raise KnowledgeError(
                f"relation {r.name} has float coefficients {sorted(map(str, floats))}; "
                "use sympy.Rational so symbolic solving stays exact"
            )
        _check_dimensions(r, dims)
        _check_regimes(r)
    variant_map = {v.name: v for v in variants}
    for r in rel_map.values():
        if r.variant and r.variant not in variant_map:
            raise KnowledgeError(f"relation {r.name} belongs to undeclared variant {r.variant}")
    for v in variant_map.values():
        for marker in v.markers:
            if marker not in var_map:
                raise KnowledgeError(f"variant {v.name} is marked by undeclared {marker}")
    cond_map: dict[str, Condition] = {}
    for c in conditions:
        if c.name in cond_map:
            raise KnowledgeError(f"condition {c.name} is declared twice")
        if c.quantity not in var_map:
            raise KnowledgeError(f"condition {c.name} bounds undeclared quantity {c.quantity}")
        dims = {}
        for s in c.bound.free_symbols:
            constant = known_constant(s.name)
            if constant is None:
                raise KnowledgeError(f"condition {c.name}: its bound may hold constants only, "
                                     f"not {s.name}")
            dims[s] = constant.dimensionality
        bound = dimension_of(c.bound, dims)
        if bound != var_map[c.quantity].dimensionality:
            raise KnowledgeError(
                f"condition {c.name} is dimensionally inconsistent: {c.quantity} is "
                f"{describe_dimension(var_map[c.quantity].dimensionality)} but its bound "
                f"{c.bound} is {describe_dimension(bound)}")
        cond_map[c.name] = c
    return Model(
        variables=MappingProxyType(var_map),
        relations=MappingProxyType(rel_map),
        constants=MappingProxyType(constants),
        aliases=MappingProxyType(aliases),
        _relations_of=MappingProxyType({k: tuple(v) for k, v in relations_of.items()}),
        _unknowns_of=MappingProxyType(unknowns_of),
        conditions=MappingProxyType(cond_map),
        variants=MappingProxyType(variant_map),
        parent=parent,
    )


def narrowed_model(parent: Model, relations: Iterable[Relation],
                   variants: Iterable[Variant] | None = None) -> Model:
    """``parent`` keeping only ``relations`` (some of its own, or them with terms taken
    out) and ``variants`` (all of its own if None): built once per distinct content.

    A model is compared by identity, and everything computed about one (its reference
    point, its rows, its plans) is cached on that identity. Different routes reach the
    same narrowed model (the same zeros put in beside other stated ones, a variant's
    relations set aside again): they get the same object, so that work is done once.
    """
    relations = tuple(relations)
    variants = tuple(parent.variants.values() if variants is None else variants)
    key = (parent, tuple((r.name, r.lhs, r.rhs) for r in relations),
           tuple(v.name for v in variants))
    found = _NARROWED.get(key)
    if found is None:
        if len(_NARROWED) >= MODELS_KEPT:
            del _NARROWED[next(iter(_NARROWED))]  # the oldest first
        found = _NARROWED[key] = build_model(parent.variables.values(), relations,
                                             parent.conditions.values(), variants,
                                             parent=parent)
    return found


# How many models the engine keeps what it computed about (narrowed models here; each
# per-model cache, such as a model's reference point and rows, holds as many): a test
# run or a long session meets a few hundred, and recomputing one's point costs 0.1 s.
MODELS_KEPT = 256
_NARROWED: dict = {}


def _check_dimensions(r: Relation, dims) -> None:
    try:
        lhs = dimension_of(r.lhs, dims)
        rhs = dimension_of(r.rhs, dims)
    except DimensionConflict as exc:
        raise KnowledgeError(f"relation {r.name} is dimensionally inconsistent: {exc}") from None
    if lhs != rhs:
        raise KnowledgeError(
            f"relation {r.name} is dimensionally inconsistent: left side {r.lhs} is "
            f"{describe_dimension(lhs)} ({dict(lhs) or 'dimensionless'}) but right side {r.rhs} "
            f"is {describe_dimension(rhs)} ({dict(rhs) or 'dimensionless'})"
        )


def _check_regimes(r: Relation) -> None:
    if not r.regimes:
        return
    arguments = set()
    for node in (r.lhs.atoms(sympy.Max, sympy.Min) | r.rhs.atoms(sympy.Max, sympy.Min)):
        arguments.update(node.args)
    for label, expr in r.regimes:
        if expr not in arguments:
            raise KnowledgeError(
                f"relation {r.name}: regime {label!r} names {expr}, which is not an "
                "argument of its max/min"
            )
