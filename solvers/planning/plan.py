"""The solve plan: what the pins determine, which relation solves which unknown, in order.

Planning happens before any number is computed. Two analyses work together:

* rank in log space (solvers.analysis.rank) decides what the pins determine, which
  relations are cross-checks, what combination a degenerate pin set fixes, and
  the smallest sets of extra pins;
* Dulmage-Mendelsohn (solvers.analysis.structure) orders the work: which relation solves
  for which quantity, and which must be solved together.

A quantity that cancels (it appears on the way to a target, but the target does
not depend on it) is given an arbitrary placeholder value so the steps can run;
the derivation names it, and nothing that depends on it is reported as an answer.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from chalk.solvers.analysis import screen
from chalk.solvers.analysis.jacobian import regime_rows
from chalk.solvers.analysis.rank import RankAnalysis, analyse
from chalk.solvers.analysis.structure import dulmage_mendelsohn, incidence_graph, solve_order
from chalk.solvers.planning.completions import combination, completions, spans
from chalk.solvers.planning.forward import defining_relation, downstream, whole_counts
from chalk.solvers.planning.regimes import (
    free_in_every_regime,
    may_fix,
    regime_screens,
    regimes_reach,
)
from chalk.solvers.tolerances import RANK
from chalk.symbolic.errors import DegenerateError, UnderdeterminedError
from chalk.symbolic.model import MODELS_KEPT, Model
from chalk.symbolic.printing.expressions import monomial_text


@dataclass(frozen=True)
class Step:
    """Relations that together determine ``variables`` (one of each: explicit)."""

    relations: tuple[str, ...]
    variables: tuple[str, ...]

    @property
    def simultaneous(self) -> bool:
        return len(self.relations) > 1


@dataclass(frozen=True)
class Plan:
    """What will be solved, in order, and what is missing, surplus or cancels.

    Attributes
    ----------
    steps : tuple of Step
        In solve order; only those the targets and the cross-checks need.
    checks : tuple of str
        Relations implied by the others that cross-check pins.
    undetermined : tuple of str
        Targets the pins do not fix.
    completions : tuple of tuple of str
        The smallest sets of extra pins that would fix them.
    fixed : mapping of target to {quantity: exponent}
        For an undetermined target, the product of powers the pins do fix.
    placeholders : tuple of str
        Quantities the steps need that cancel: they run at arbitrary values.
    provisional : frozenset of str
        Quantities the steps compute that depend on a placeholder (not answers).
    analysis : RankAnalysis
        The reduced log-space Jacobian behind all of this.
    """

    targets: tuple[str, ...]
    pinned: frozenset[str]
    steps: tuple[Step, ...]
    checks: tuple[str, ...]
    undetermined: tuple[str, ...]
    completions: tuple[tuple[str, ...], ...]
    unused_pins: tuple[str, ...]
    analysis: RankAnalysis
    from_inputs: tuple[str, ...] = ()  # a completion made only of input quantities
    placeholders: tuple[str, ...] = ()
    provisional: frozenset[str] = frozenset()
    fixed: tuple[tuple[str, tuple[tuple[str, Fraction | float], ...]], ...] = ()
    structurally_determined: frozenset[str] = frozenset()
    regime: tuple[str, ...] = ()  # the regimes planned in, when only some fix the targets

    @property
    def determined(self) -> bool:
        return not self.undetermined

    def determines(self, name: str) -> bool:
        """Whether the pins fix ``name`` (a pin counts)."""
        return self.analysis.is_determined(name)

    def fixed_texts(self) -> dict[str, str]:
        """For each undetermined target, the combination of it and others that the pins
        fix, in words: a product of powers where exact rows make it one, else only the
        quantities it mixes. A linearised row is a tangent at one point, and its
        exponents (``output_tokens^(601/600)``) move with the point: no fixed product."""
        out = {}
        for target, combo in self.fixed:
            if not combo or len(combo) < 2:
                continue
            if all(isinstance(e, (int, Fraction)) for _, e in combo):
                out[target] = monomial_text(dict(combo))
            else:
                names = sorted(n for n, _ in combo)
                out[target] = ("a combination of " + ", ".join(names[:-1]) + " and "
                               + names[-1])
        return out

    def underdetermined_error(self) -> UnderdeterminedError:
        """The error to raise when the targets are not determined: degenerate when the
        structure says the pins suffice but they fix only a combination."""
        fixed = self.fixed_texts()
        if self.undetermined and all(t in self.structurally_determined
                                     for t in self.undetermined) and fixed:
            return DegenerateError(list(self.undetermined), list(self.completions),
                                   self.from_inputs, fixed)
        return UnderdeterminedError(list(self.undetermined), list(self.completions),
                                    self.from_inputs, fixed)

    @property
    def computed(self) -> tuple[str, ...]:
        return tuple(v for step in self.steps for v in step.variables)

    @property
    def relations(self) -> frozenset[str]:
        """The relations the plan solves with or checks."""
        return frozenset(r for step in self.steps for r in step.relations) | set(self.checks)


def clear_caches() -> None:
    """Forget every cached plan and analysis (for benchmarks that time planning)."""
    _plan.cache_clear()
    _analysis.cache_clear()
    screen.clear_caches()
    _structure.cache_clear()
    identities.cache_clear()
    unpinned_analysis.cache_clear()
    regime_screens.cache_clear()


def make_plan(model: Model, pinned: frozenset[str], targets: tuple[str, ...],
              regime: tuple[str, ...] = (), explain: bool = True) -> Plan:
    """Plan the solution of ``targets`` from the ``pinned`` quantities (cached).

    ``regime`` names a combination of max()/min() regimes (one of
    ``solvers.analysis.jacobian.regime_rows``) to plan in, instead of their mixture. With
    ``explain`` false, an under-determined plan leaves out what would complete it (its
    ``completions``, ``from_inputs`` and ``fixed`` are empty): for a first look that is
    planned again.
    """
    return _plan(model, frozenset(pinned), tuple(targets), tuple(regime), explain)


def regime_plans(model: Model, pinned: frozenset[str], targets: tuple[str, ...]
                 ) -> tuple[Plan, ...]:
    """One plan per combination of max()/min() regimes that fixes every target."""
    out = []
    for labels, _ in regime_rows(model):
        if not may_fix(model, frozenset(pinned), targets, labels):
            continue
        analysis, _ = _analysis(model, frozenset(pinned), tuple(targets), "near", labels)
        if all(analysis.is_determined(t) for t in targets):
            out.append(make_plan(model, pinned, targets, labels))
    return tuple(out)


def determined_in_every_regime(model: Model, pinned: frozenset[str],
                               targets: tuple[str, ...]) -> bool:
    """Whether every combination of max()/min() regimes fixes every target (so that no
    regime can hold with a target left free)."""
    for labels, _ in regime_rows(model):
        if not may_fix(model, frozenset(pinned), targets, labels):
            return False
        analysis, _ = _analysis(model, frozenset(pinned), tuple(targets), "near", labels)
        if not all(analysis.is_determined(t) for t in targets):
            return False
    return True


def regime_mapping(labels: tuple[str, ...]) -> dict[str, str]:
    """``("step_time: memory-bound", ...)`` as ``{"step_time": "memory-bound", ...}``."""
    return dict(label.split(": ", 1) for label in labels if ": " in label)


def upstream_pins(model: Model, follow, start, pins) -> list[str]:
    """Pins that reach ``start`` through the relations that solve each unknown.

    Parameters
    ----------
    model : Model
    follow : Callable[[str], Iterable[str]]
        For an unpinned variable, the relations to trace through (those that solve it).
    start : Iterable[str]
        Variables to trace back from.
    pins : Container[str]
        Pinned variable names; the trace stops at them.
    """
    seen, found, frontier = set(), set(), list(start)
    while frontier:
        name = frontier.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in pins:
            found.add(name)
            continue
        for relation in follow(name):
            frontier.extend(model.variables_in(relation))
    return sorted(found)


def analyse_pins(model: Model, pinned: frozenset[str], targets: tuple[str, ...] = (),
                 leave_open: str = "near") -> RankAnalysis:
    """The rank analysis of ``model`` with ``pinned`` known (cached).

    Rows are taken in the structural solve order, each relation pivoting on its
    structural match. What stays free (a basis of what the pins leave open) depends
    on ``leave_open``: ``"near"`` keeps quantities close to the targets free, so that a
    quantity that cancels is held at a placeholder right where it enters; ``"inputs"``
    keeps input quantities free, so what is fixed is said in terms of inputs.
    """
    return _analysis(model, frozenset(pinned), tuple(targets), leave_open)[0]


@lru_cache(maxsize=512)
def _analysis(model: Model, pinned: frozenset[str], targets: tuple[str, ...],
              leave_open: str = "near", regime: tuple[str, ...] = ()):
    consequences, unknowns_of, blocks, order, preferred, determined = _structure(model,
                                                                                 pinned)
    wanted = set(targets)
    if leave_open == "near":
        distance = _distances(model, unknowns_of, targets)

        def preference(name):
            # far quantities pivot first: the near ones are left free
            return (name not in wanted, -distance.get(name, 10**6),
                    not model.variables[name].derived, name)
    else:
        def preference(name):
            # inputs pivot last: what is left open is said in inputs
            return (name not in wanted, not model.variables[name].derived, name)

    rows = dict(regime_rows(model)).get(regime) if regime else None
    analysis = analyse(model, pinned, blocks, order, preferred, preference, rows)
    dependent = tuple((r, left) for r, left in analysis.dependent if r not in consequences)
    return dataclasses.replace(analysis, dependent=dependent), determined


@lru_cache(maxsize=256)
def _structure(model: Model, pinned: frozenset[str]):
    """The Dulmage-Mendelsohn structure every analysis of these pins shares (cached)."""
    # Relations that follow from the others for any values take no part in the structure;
    # they come last, reduce to zero, and are neither solved with nor checked.
    consequences = identities(model)
    unknowns_of = {r: model.variables_in(r) - pinned for r in model.relations
                   if r not in consequences}
    unknowns = {v for v in model.variables if v not in pinned and model.relations_of(v)}
    # A relation rounding a quantity (up or down) is not matched to it: another relation fixes it
    # where one can, leaving the rounding a forwards step or a check
    forwards = {r: {v for v in vs if not model.relations[r].rounds(v)}
                for r, vs in unknowns_of.items()}
    partition = dulmage_mendelsohn(incidence_graph(forwards, unknowns))
    blocks = solve_order(partition, unknowns_of)
    order = [r for relations, _ in blocks for r in relations]
    order += sorted(partition.under_relations)
    order += sorted(partition.unmatched_relations)
    order += sorted(consequences)
    determined = partition.determined
    preferred = {r: v for r, v in partition.matched.items() if v in determined}
    return consequences, unknowns_of, blocks, order, preferred, determined


@lru_cache(maxsize=MODELS_KEPT)
def identities(model: Model) -> frozenset[str]:
    """Relations that follow from the others whatever the values (cached per model).

    With nothing pinned, a relation whose row reduces to zero is a consequence of the
    rows before it for every value of every quantity: it can never check a pin or fix
    anything the others do not. Rows are taken in the structural solve order, with any
    relation that defines a quantity (a single quantity on its left, or named after one
    it holds) before the others, so the relation called an identity is a consequence
    rather than a definition.
    """
    return frozenset(r for r, _ in unpinned_analysis(model).dependent)


@lru_cache(maxsize=MODELS_KEPT)
def unpinned_analysis(model: Model) -> RankAnalysis:
    """The rank analysis of ``model`` with nothing pinned (cached per model): what the
    relations alone fix, and which of them follow from the others (:func:`identities`)."""
    def definition_first(name):
        defines = model.relations[name].lhs.is_Symbol or name in model.variables_in(name)
        return (not defines, name)

    unknowns_of = {r: model.variables_in(r) for r in model.relations}
    unknowns = {v for v in model.variables if model.relations_of(v)}
    partition = dulmage_mendelsohn(incidence_graph(unknowns_of, unknowns))
    blocks = solve_order(partition, unknowns_of)
    order = [r for relations, _ in blocks for r in relations]
    order += sorted(partition.under_relations, key=definition_first)
    order += sorted(partition.unmatched_relations, key=definition_first)
    preferred = {r: v for r, v in partition.matched.items() if v in partition.determined}
    return analyse(model, (), blocks, order, preferred)


def _distances(model: Model, unknowns_of, targets) -> dict[str, int]:
    """Hops from the targets to each unknown through shared relations."""
    distance = {t: 0 for t in targets}
    frontier = list(targets)
    while frontier:
        following = []
        for name in frontier:
            for relation in model.relations_of(name):
                for other in unknowns_of.get(relation, ()):
                    if other not in distance:
                        distance[other] = distance[name] + 1
                        following.append(other)
        frontier = following
    return distance


@lru_cache(maxsize=256)
def _plan(model: Model, pinned: frozenset[str], targets: tuple[str, ...],
          forced: tuple[str, ...] = (), explain: bool = True) -> Plan:
    analysis, structural = _analysis(model, pinned, targets, "near", forced)
    regime: tuple[str, ...] = forced
    if not forced and not all(analysis.is_determined(t) for t in targets) and regimes_reach(
            model, analysis, targets) and not any(free_in_every_regime(model, analysis, t)
                                                  for t in targets):
        # A max() mixes its regimes; a target may still be fixed in one of them (by
        # different relations in each). Plan in the first regime combination that fixes
        # every target; the solution found is then checked in its actual regime.
        for labels, _ in regime_rows(model):
            if not may_fix(model, pinned, targets, labels):
                continue
            trial, _ = _analysis(model, pinned, targets, "near", labels)
            if all(trial.is_determined(t) for t in targets):
                analysis, regime = trial, labels
                break
    undetermined = tuple(t for t in targets if not analysis.is_determined(t))
    explained = analysis
    if undetermined and explain:  # say what is fixed, and what to pin, in terms of inputs
        explained = analyse_pins(model, pinned, targets, "inputs")
    free = set(analysis.free)
    checks = analysis.checks

    # Solve with the independent relations only, the free quantities held at placeholder
    # values: that system is square and (by rank) non-singular.
    independent = set(analysis.solved_by.values())
    solvable = set(analysis.rows)
    unknowns_of = {r: model.variables_in(r) - pinned - free for r in independent}
    partition = dulmage_mendelsohn(incidence_graph(unknowns_of, solvable))
    blocks = solve_order(partition, unknowns_of)
    solver_block = {v: i for i, (_, variables) in enumerate(blocks) for v in variables}

    needed: set[int] = set()
    frontier = [solver_block[t] for t in targets
                if t in solver_block and t not in undetermined]
    for relation in checks:
        frontier += [solver_block[v] for v in model.variables_in(relation) if v in solver_block]
    while frontier:
        index = frontier.pop()
        if index in needed:
            continue
        needed.add(index)
        relations, variables = blocks[index]
        for r in relations:
            for v in unknowns_of[r]:
                if v not in variables and v in solver_block:
                    frontier.append(solver_block[v])
    steps = tuple(Step(*blocks[i]) for i in sorted(needed))

    used: set[str] = set()
    for step in steps:
        for r in step.relations:
            used |= model.variables_in(r)
    for r in checks:
        used |= model.variables_in(r)
    used |= set(targets)  # a target that is pinned (a preset states it) is the answer
    placeholders = tuple(sorted(used & free))
    computed = {v for step in steps for v in step.variables}
    provisional = frozenset(v for v in computed if v not in analysis.determined)
    for t in undetermined:
        used |= set(explained.pins_behind(model, t))
        used |= _pins_near(model, explained, t)
    unused = tuple(sorted(p for p in pinned if p not in used))

    found, from_inputs, fixed = (), (), ()
    if explain and undetermined:
        found = completions(explained, undetermined,
                            _completion_candidates(model, pinned, undetermined),
                            _rank_key(model))
        from_inputs = _input_completion(model, explained, pinned, undetermined)
        if from_inputs in found:
            from_inputs = ()
        fixed = tuple((t, tuple(sorted(_fixed_combination(model, explained, t,
                                                          found).items())))
                      for t in undetermined)
    return Plan(targets, pinned, steps, checks, undetermined, found, unused, analysis,
                from_inputs, placeholders, provisional, fixed, frozenset(structural), regime)


def _completion_candidates(model: Model, pinned: frozenset[str], undetermined) -> set[str]:
    # a whole count completes only a question about what it feeds forward into
    whole = whole_counts(model)
    return {v for v in model.variables if v not in pinned and model.relations_of(v)
            and (v not in whole or set(undetermined) <= downstream(model, v))}


def _rank_key(model: Model):
    def rank_key(extra):
        return (sum(model.variables[v].derived for v in extra),
                sum(len(model.relations_of(v)) for v in extra), extra)
    return rank_key


def completions_replacing(model: Model, pinned: frozenset[str], targets: tuple[str, ...],
                          replaced: frozenset[str]) -> tuple[tuple[str, ...], ...]:
    """The smallest sets of extra pins that would determine ``targets``, each naming at
    least one of ``replaced`` (pins of a lower layer, left out of ``pinned``, that a
    user's pin would stand over): the sets that complete a question whose defaults took
    the target's relations out."""
    analysis = analyse_pins(model, pinned, targets, "inputs")
    undetermined = [t for t in targets if not analysis.is_determined(t)]
    if not undetermined:
        return ()
    return completions(analysis, undetermined,
                       _completion_candidates(model, pinned, undetermined),
                       _rank_key(model), require=replaced)


def _fixed_combination(model: Model, analysis: RankAnalysis, target: str, found) -> dict:
    """The smallest product involving ``target`` that the pins fix: over the first
    completion that determines it if there is one, else its reduced row. A product the
    relations fix by themselves is passed over: empty when every completion's is one
    (the completions are then the whole story)."""
    completed = False
    for extra in found:
        combo = combination(analysis, target, extra)
        if combo is not None and not _stated_by_relations(model, combo):
            return combo
        completed |= combo is not None
    combo = {} if completed else analysis.fixed_combination(target) or {}
    return {} if _stated_by_relations(model, combo) else combo


def _stated_by_relations(model: Model, combo: dict) -> bool:
    """Whether the relations alone fix the product ``combo`` (``{quantity: exponent}``).

    Such a product holds whatever the pins: with the conventions' zero attention surplus,
    ``1/attention_chip_flops = 1/chip_flops`` fixes ``chip_flops/attention_chip_flops``
    at 1, and ``cost_per_token = output_input_price_ratio * prefill_cost_per_token`` with
    ``decode_mfu_ratio * output_input_price_ratio = 1`` fixes
    ``cost_per_token * decode_mfu_ratio / prefill_cost_per_token``. Naming one as what the
    pins fix says nothing about them. Decided by reducing its log-space row by the
    reduced rows of the model with nothing pinned: it is fixed when nothing is left in a
    free column.
    """
    if len(combo) < 2:
        return False
    analysis = unpinned_analysis(model)
    left: dict[str, float] = {}  # the row less its pivots' reduced rows
    for name, exponent in combo.items():
        row = analysis.rows.get(name)
        if row is None:
            left[name] = left.get(name, 0) + float(exponent)
            continue
        for column, value in row.items():
            if column != name:
                left[column] = left.get(column, 0) - float(exponent) * float(value)
    scale = max(abs(float(e)) for e in combo.values())
    return all(abs(v) <= RANK.rtol * scale for c, v in left.items()
               if c not in analysis.settled)


def _pins_near(model: Model, analysis: RankAnalysis, name: str) -> set[str]:
    """Pins an undetermined target would use: those in the relations around it and its
    open part."""
    near: set[str] = set()
    for quantity in [name, *analysis.open_part(name)]:
        for relation in model.relations_of(quantity):
            near |= model.variables_in(relation) & analysis.pinned
    return near


def _input_completion(model, analysis, pinned, undetermined):
    """Unfold each undetermined target through the relations that define it, down to input
    quantities: the 'from first principles' pins. A quantity the pins already determine
    ends its branch: pinning it, or what defines it, would add nothing."""
    if not undetermined:
        return ()
    leaves, seen, stack = set(), set(), list(undetermined)
    while stack:
        name = stack.pop()
        if name in seen or name in pinned or analysis.is_determined(name):
            continue
        seen.add(name)
        relation = defining_relation(model, name) if model.variables[name].derived else None
        if relation is None:
            leaves.add(name)
        else:
            stack.extend(model.variables_in(relation) - {name})
    leaves -= set(undetermined)
    if not spans(analysis, leaves, undetermined):
        return ()
    return tuple(sorted(leaves))
