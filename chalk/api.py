"""The Python API: pins in, pint Quantities and a derivation out.

>>> from chalk import solve
>>> s = solve("hbm_drain_time", given={"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"})
>>> round(s.value("hbm_drain_time", "ms"), 6)
14.4

:func:`solve` and :func:`explain` are the entry points; the one body that computes a
prepared question, :func:`solve_prepared`, is shared with :mod:`chalk.compiled`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from chalk.options import (
    DEFAULT_RTOL,
    REGIMES,
    RTOL_LIMITS,
    SAMPLE_LIMITS,
    Options,
    check_question,
    checked_arguments,
)
from chalk.preparation import (
    Given,
    Prepared,
    answered_with,
    derivable_statements,
    load_presets,
    prepare,
    prepare_again,
    resolve,
    stated_answers,
    stated_plan,
    used_quantities,
)
from chalk.solution import Explanation, Solution
from chalk.solvers.bulk.ranged_pins import judge_ranges
from chalk.solvers.bulk.uncertainty import propagate
from chalk.solvers.execution.solving import compute
from chalk.solvers.execution.symbolic_solve import DEFAULT_TIMEOUT
from chalk.solvers.planning.plan import make_plan
from chalk.solvers.records.counts import fractional_counts, redrawn_counts
from chalk.solvers.records.derivation import Derivation
from chalk.solvers.records.notes import Kind, Note
from chalk.symbolic.errors import ChalkError, NoSolution
from chalk.symbolic.model import Model
from chalk.symbolic.printing.quantities import format_quantity

# Names kept here for callers of the API, though defined in the modules it stands on
__all__ = ["DEFAULT_RTOL", "REGIMES", "RTOL_LIMITS", "SAMPLE_LIMITS", "Explanation", "Options",
           "Prepared", "Solution", "explain", "load_presets", "prepare", "resolve", "solve",
           "solve_prepared"]


def explain(targets: str | Sequence[str], given: Given = (), presets=(), *,
            model: Model | None = None) -> Explanation:
    """The plan and diagnosis for a question, without computing numbers."""
    targets, given, presets = check_question(targets, given, presets)
    q = prepare(targets, given, presets, model)
    return Explanation(q.model, q.plan, q.pins, q.notes, q.conventions)


def solve(targets: str | Sequence[str], given: Given = (), presets=(), *,
          regime: str | None = None, rtol: float = DEFAULT_RTOL,
          timeout: float = DEFAULT_TIMEOUT, model: Model | None = None,
          samples: int | None = None, seed: int = 0, prefer: str = "stated",
          drop: Iterable[str] = ()) -> Solution:
    """Solve for ``targets`` from pins and presets.

    Parameters
    ----------
    targets : str or sequence of str
        Quantity names (or aliases) to determine.
    given : mapping or iterable of "NAME=VALUE UNIT"
        Pins: text such as ``"3.35 TB/s"``, pint Quantities from ``chalk.ureg``,
        or plain numbers for dimensionless quantities.
    presets : str or sequence of str
        Preset names applied before ``given`` (``lecture``, ``h100``, ...).
    regime : str, optional
        ``"compute-bound"`` or ``"memory-bound"`` to resolve a max(...) that
        both regimes could satisfy.
    rtol : float
        Relative tolerance for cross-checks of surplus pins, between 0 and 1.
    timeout : float
        Seconds (positive) allowed for any one symbolic solve before falling back
        to a numeric one.
    model : Model, optional
        Another set of relations (default: the knowledge base).
    samples, seed : int
        Monte Carlo samples and random seed, used when a pin is a range or a
        distribution (``"100e9..300e9 param"``, ``"2 TB/s ±10%"``): 100 to 10,000,000
        samples, by default 100,000, fewer (and said) if a step with no closed form
        would take too long; a seed of 0 or more.
    prefer : {"stated", "derived"}
        For a target a preset or the conventions state a value for (``chip_flops``
        with ``--preset h100``): answer with the statement (default) or with what the
        other pins derive where they give a value. The other is shown beside it as a
        cross-check, and a disagreement is named, not raised.
    drop : iterable of str
        Quantities whose preset or convention values are left out, to see what the
        remaining pins imply for them or through them.

    Returns
    -------
    Solution

    Raises
    ------
    ChalkError
        Subclasses name the problem: unknown name, wrong dimension,
        under-determined (with the pins that would complete it), inconsistent
        pins (with the relation and both values), no or several physical values;
        :class:`~chalk.symbolic.errors.UsageError` for an argument outside what is
        accepted above, naming it.
    """
    options = Options(regime=regime, rtol=rtol, timeout=timeout, prefer=prefer,
                      samples=samples, seed=seed)
    targets, given, presets, drop = checked_arguments(targets, given, presets, options, drop)
    # the body chalk.compiled.CompiledQuestion.solve runs at the pins as given; a question
    # asked again at other values of its pins is not prepared again
    q = prepare_again(targets, given, presets, model, drop)
    try:
        return solve_prepared(q, options)
    except NoSolution as exc:
        if model is not None or drop or any(p.spread is not None for p in q.pins.values()):
            raise  # the bound is asked of the shipped relations at single values
        from chalk.reachable import reachable_bounds

        bound = reachable_bounds(solve, q.model, q, given, presets, options)
        if not bound:
            raise
        raise NoSolution(exc.name, f"{exc.reason}; {bound}", exc.after_search) from None


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
    used = used_quantities(q.model, plan)
    if any(p.spread is not None and n in used for n, p in q.pins.items()):
        # a range on a pin this answer does not use has no share in its spread
        pins = {n: p for n, p in q.pins.items() if p.spread is None or n in used}
        propagation = propagate(done.compiled, pins, q.targets + tuple(q.range_checks),
                                options.samples, options.seed, regime)
    if q.range_checks:
        notes += tuple(Note(Kind.SET_ASIDE, {"text": text}) for text in
                       judge_ranges(q.model, q.range_checks, q.plan, done.values,
                                    propagation, rtol))
    derived = [n for n in done.values if n not in q.pins and n not in plan.placeholders]
    counts = fractional_counts(q.model, done.values, derived)
    notes += redrawn_counts(q.model, plan.analysis, derived)
    derivation = Derivation(q.model, q.conventions, q.pins, done.records, done.checks,
                            done.values,
                            notes + tuple(Note(Kind.SETTLED, {"text": t}) for t in done.notes),
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
