"""Answering a prepared question: the one body behind every solve.

:func:`solve_prepared` computes a :class:`~chalk.preparation.Prepared` question with its
options and returns a :class:`~chalk.solution.Solution` or raises the refusal. Only
:meth:`chalk.compiled.CompiledQuestion.outcome` calls it, and turns the refusal into an
:class:`~chalk.solution.Outcome`'s data; :func:`chalk.solve` and every other path ask
through that compiled question. Targets a preset or the conventions state a value for are
answered here too: :func:`stated_plan` is the question as run, :func:`stated_answers`
says whether each answer is the statement or what the other pins derive.
"""

from __future__ import annotations

from dataclasses import replace

from chalk.options import Options
from chalk.preparation import Prepared, settled_plan, used_quantities
from chalk.solution import Solution
from chalk.solvers.bulk.ranged_pins import judge_ranges
from chalk.solvers.bulk.uncertainty import propagate
from chalk.solvers.execution.solving import compute
from chalk.solvers.pinning.pinned import Layer
from chalk.solvers.pinning.yielding import outranked
from chalk.solvers.planning.plan import make_plan
from chalk.solvers.records.counts import fractional_counts, redrawn_counts
from chalk.solvers.records.derivation import Derivation
from chalk.solvers.records.notes import Kind, Note
from chalk.symbolic.errors import ChalkError
from chalk.symbolic.printing.quantities import format_quantity


def solve_prepared(q: Prepared, options: Options) -> Solution:
    """Compute a prepared question with ``options``: the one body behind every solve."""
    return _solve_stated(q, options) if q.stated else _solve_prepared(q, options)


def _solve_prepared(q: Prepared, options: Options) -> Solution:
    """Compute a prepared question that states none of its targets."""
    regime, rtol, timeout = options.regime, options.rtol, options.timeout
    notes = q.notes
    try:
        done = compute(q.model, q.plan, q.pins, regime, rtol, timeout)
    except ChalkError as exc:
        if not q.reported:
            raise
        # what is reported beside the answer must never cost the answer itself
        q = replace(q, plan=make_plan(q.model, frozenset(q.pins), q.targets), reported=())
        done = compute(q.model, q.plan, q.pins, regime, rtol, timeout)
        notes += (Note(Kind.UNREPORTED, {"names": tuple(n for n, _ in q.reported),
                                         "reason": exc.message}),)
    plan = done.plan
    propagation = None
    ranged = [n for n, p in q.pins.items() if p.spread is not None]
    used = used_quantities(q.model, plan) if ranged else set()
    if any(n in used for n in ranged):
        # a range on a pin this answer does not use has no share in its spread
        pins = {n: p for n, p in q.pins.items() if p.spread is None or n in used}
        propagation = propagate(done.compiled, pins, q.targets + tuple(q.range_checks),
                                options.samples, options.seed, regime)
    if q.range_checks:
        notes += tuple(Note(Kind.SET_ASIDE, data) for data in
                       judge_ranges(q.model, q.range_checks, q.plan, done.values,
                                    propagation, rtol))
    derived = [n for n in done.values if n not in q.pins and n not in plan.placeholders]
    counts = fractional_counts(q.model, done.values, derived)
    notes += redrawn_counts(q.model, plan.analysis, derived)
    derivation = Derivation(q.model, q.conventions, q.pins, done.records, done.checks,
                            done.values,
                            notes + tuple(Note(Kind.SETTLED, d) for d in done.notes),
                            plan.unused_pins, rtol,
                            plan.placeholders, plan.provisional, q.targets,
                            done.flags + counts, q.reported)
    return Solution(q.targets, derivation, plan, propagation)


def _solve_stated(q: Prepared, options: Options) -> Solution:
    """Targets that a preset or the conventions state a value for.

    A stated target that the other pins also determine is solved for like any target,
    and the statement becomes its cross-check (a disagreement is named, not raised);
    one they do not determine is answered from the statement. The answer is the
    statement unless ``prefer`` is ``"derived"``, or unless everything that derives it
    comes from higher layers than the statement (as pins yield: the conventions' zero
    sliding-window KV gives way to a hybrid model's preset, a preset's figure to the
    user's own numbers).
    """
    model, names = q.model, q.targets
    derivable = derivable_statements(q)
    answers = stated_answers(q, options.prefer)
    failure = ""
    try:
        solution = _solve_prepared(stated_plan(q), options)
    except ChalkError as exc:
        if not derivable:
            raise
        # the other pins would give a value but cannot be solved here: use the statements
        failure = exc.message
        solution = _solve_prepared(answered_with(q, {**q.pins, **q.stated}), options)
    values = solution.derivation.values
    info, notes, override = {}, [], {}
    for t, pin in q.stated.items():
        variable = model.variables[t]
        stated_text = format_quantity(pin.value / variable.to_base, variable.pint_unit)
        entry = {"stated": pin.value / variable.to_base, "origin": pin.origin,
                 "source": pin.source, "date": pin.date}
        about = {"target": t, "origin": pin.origin, "stated": stated_text}
        if t in derivable and not failure:
            derived = values[t]
            scale = max(abs(derived), abs(pin.value))  # both zero: they agree
            gap = abs(derived - pin.value) / scale if scale else 0.0
            entry.update(derived=derived / variable.to_base, relative_difference=gap)
            about.update(derived=format_quantity(derived / variable.to_base,
                                                 variable.pint_unit),
                         gap=gap, agree=gap <= options.rtol)
            if answers[t] == "derived":
                entry["answer"] = "derived"
                behind = (tuple(q.plan.analysis.pins_behind(model, t))
                          if options.prefer != "derived" else ())
                notes.append(Note(Kind.DERIVED, {**about, "behind": behind}))
            else:
                entry["answer"] = "stated"
                override[t] = pin.value
                notes.append(Note(Kind.STATED, {**about, "unsolved": None}))
        else:
            entry["answer"] = "stated"
            if failure and t in derivable:
                notes.append(Note(Kind.STATED, {**about, "derived": None, "unsolved": failure}))
            elif t in q.pins:
                notes.append(Note(Kind.HELD, about))
            else:
                notes.append(Note(Kind.STATED, {**about, "derived": None, "unsolved": None}))
        info[t] = entry
    derivation = replace(solution.derivation, remarks=solution.derivation.remarks + tuple(notes),
                         targets=names)
    return Solution(names, derivation, solution.plan, solution.uncertainty, info, override)


def stated_plan(q: Prepared) -> Prepared:
    """The question as run when presets state some targets: a stated target the other
    pins determine is solved for (its statement checks it); one they do not is taken
    from the statement as a pin."""
    derivable = derivable_statements(q)
    return answered_with(q, {**q.pins, **{t: p for t, p in q.stated.items()
                                          if t not in derivable}})


def answered_with(q: Prepared, pins: dict) -> Prepared:
    """``q`` run with ``pins`` (statements among them), settled as :func:`prepare`
    settles, so the reported conditions (``memory_fill``) and the ranges set aside do not
    depend on which targets a statement answers."""
    names = q.targets
    rest = tuple(t for t in names if t not in pins) or names
    plan, pins, extra, ranged = settled_plan(q.model, pins, rest,
                                             make_plan(q.model, frozenset(pins), rest),
                                             q.range_checks)
    return replace(q, pins=pins, stated={}, plan=plan, reported=extra, range_checks=ranged)


def derivable_statements(q: Prepared) -> set[str]:
    """The stated targets the other pins determine: solved for, the statement their
    check. A held count (:func:`chalk.solvers.pinning.yielding.held_counts`) is pinned, so the
    plan "determines" it only as a pin."""
    return {t for t in q.stated if t not in q.pins and q.plan.determines(t)}


def statement_outranked(q: Prepared, target: str) -> bool:
    """Whether what derives a stated target outranks the statement.

    As pins yield (:func:`~chalk.solvers.pinning.yielding.outranked`), and one more
    way: a conventions default of an asked target (``hbm_bandwidth_efficiency = 1``, a
    bound at peak) gives way to a derivation that rests on at least one of the user's
    pins (a measured rate), the other conventions defaults beside them. Asking for a
    quantity the conventions only default, with evidence that fixes it, asks for that
    derivation; the default stays as its cross-check. A preset's statement (a model's
    stated counts) gives way only as a pin would.
    """
    stated = q.stated[target]
    behind = [q.pins[b] for b in q.plan.analysis.pins_behind(q.model, target)]
    if stated.layer is Layer.CONVENTIONS and any(b.layer is Layer.GIVEN for b in behind):
        return True
    return outranked(stated, behind, q.model)


def stated_answers(q: Prepared, prefer: str) -> dict[str, str]:
    """For each stated target, ``"stated"`` or ``"derived"``: which one is the answer
    when the other pins can be solved (as :func:`solve` decides)."""
    out = {}
    derivable = derivable_statements(q)
    for t in q.stated:
        out[t] = ("derived" if t in derivable and (prefer == "derived" or statement_outranked(q, t))
                  else "stated")
    return out
