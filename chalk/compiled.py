"""One compiled question behind every path into the engine.

:func:`compile_question` resolves a question's pins and plans it once. The result,
:class:`CompiledQuestion`, answers it at the pins it was made with or at other values
of those pins, in two ways that cannot disagree:

- :meth:`CompiledQuestion.solve` answers one point with every check (surplus pins,
  several solutions followed through the plan, max() regimes, the rank test at the
  solution) and returns a :class:`~chalk.api.Solution` or raises the refusal;
- :meth:`CompiledQuestion.evaluate` answers many points at once on arrays. A point is
  taken from the vectorised run only when nothing :meth:`solve` checks could decide it
  otherwise: the same preparation (no pin changed whose value decides which defaults
  give way or which terms are absent), one physical value at every step, no one-relation
  closed form that :func:`chalk.solvers.analysis.conditioning.check` would refuse (a
  simultaneous block's conditioning is not yet tested per point), every cross-check
  within tolerance, and no step that needs a search. Any other point is
  answered by :meth:`solve` itself, so each point carries ``solve``'s answer or its
  refusal.

:class:`chalk.Question`, sweeps, optimisation curves, fits and reports go through here
and so does ``chalk.solve`` (the compiled question's :meth:`CompiledQuestion.outcome` at the
pins as given); nothing outside the engine plans, compiles or evaluates on its own. Each
path runs :func:`chalk.answering.solve_prepared` through :meth:`CompiledQuestion.outcome`
and raises, where it raises, by :meth:`~chalk.solution.Outcome.result`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from chalk.answering import solve_prepared, stated_answers, stated_plan
from chalk.options import Options, checked_arguments
from chalk.preparation import Given, Prepared, moved_pin, prepare, prepare_again
from chalk.solution import Outcome, Solution
from chalk.solvers.bulk.vectorised import evaluate as evaluate_plan
from chalk.solvers.bulk.vectorised import run_env, scalar_env
from chalk.solvers.execution.execute import CompiledPlan, compile_plan
from chalk.symbolic.errors import ChalkError, UsageError
from chalk.symbolic.model import Model

SETTLE = 2_000  # points evaluate answers one by one with solve, at most, per call


@dataclass
class Evaluation:
    """A question answered at many points.

    Attributes
    ----------
    values : dict of name to ndarray
        Each target (and each quantity reported beside them) in base units, NaN where
        the point has no answer.
    refusals : dict of int to ChalkError
        Points that ``solve`` refuses, with its error.
    unsettled : ndarray of bool
        Points the vectorised run could not vouch for and that were not answered one
        by one (more than the ``settle`` budget): no value, no refusal.
    regimes : dict of name to ndarray
        The side of each max() per point, where the vectorised run recorded it.
    settled : int
        Points answered one by one by ``solve``.
    """

    values: dict[str, np.ndarray]
    refusals: dict[int, ChalkError] = field(default_factory=dict)
    unsettled: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    regimes: dict[str, np.ndarray] = field(default_factory=dict)
    settled: int = 0


class CompiledQuestion:
    """A question resolved and planned once, answerable at other values of its pins.

    Made by :func:`compile_question`; see the module docstring for the contract.
    """

    def __init__(self, prepared: Prepared, options: Options, arguments: dict):
        self.prepared = prepared
        self.options = options
        # what compile_question was given (targets, given, presets, model, drop), each
        # checked and read once: to prepare again, and for chalk.solve's refusals
        self.arguments = arguments

    # what it is ------------------------------------------------------------------------
    @property
    def model(self) -> Model:
        return self.prepared.model

    @property
    def targets(self) -> tuple[str, ...]:
        return self.prepared.targets

    @property
    def reported(self) -> tuple[str, ...]:
        """Quantities a condition reports beside the targets (``memory_fill``)."""
        return tuple(n for n, _ in self._main.reported)

    @property
    def pins(self) -> tuple[str, ...]:
        """The quantities whose values may be changed when asking again (a range or
        distribution changed to a value is that value)."""
        return tuple(self.prepared.pins)

    @cached_property
    def _main(self) -> Prepared:
        """The question as it is run: targets a preset states but the other pins do not
        determine are taken from the statement (:func:`chalk.answering.stated_plan`)."""
        return stated_plan(self.prepared) if self.prepared.stated else self.prepared

    @cached_property
    def _answers(self) -> dict[str, str]:
        """For each stated target, whether the answer is the statement or derived."""
        if not self.prepared.stated:
            return {}
        return stated_answers(self.prepared, self.options.prefer)

    @cached_property
    def compiled(self) -> CompiledPlan:
        return compile_plan(self._main.model, self._main.plan, self.options.timeout)

    @cached_property
    def _vouched(self) -> bool:
        """Whether the vectorised run can answer for solve at all: every step has a
        closed form or a complete scan (a search or a numeric step may find one
        solution of several, which solve then settles)."""
        from chalk.solvers.execution.strategies import NEWTON_MULTI_START

        for step in self.compiled.steps:
            if step.kind == "numeric":
                return False
            if step.kind == "block" and any(b.strategy == NEWTON_MULTI_START
                                            for b in step.block_branches):
                return False
        return True

    # answering -------------------------------------------------------------------------
    def solve(self, values: Mapping[str, float] | None = None) -> Solution:
        """The answer at the question's pins, with ``values`` (base units) in place of
        theirs: exactly what :func:`chalk.solve` answers with those values given.

        Raises
        ------
        ChalkError
            As :func:`chalk.solve` (the refusal of :meth:`outcome`).
        """
        return self.outcome(values).result()

    def outcome(self, values: Mapping[str, float] | None = None) -> Outcome:
        """What :meth:`solve` computes at ``values``, as data: solved with its values and
        notes, or refused with the error :meth:`solve` raises.

        Raises
        ------
        UsageError
            Only for a name in ``values`` that is not one of the question's pins.
        """
        changes = self._changes(values or {})
        try:
            if not changes:
                prepared = self.prepared
            elif self._reprepare(changes):
                prepared = self._prepared_at(changes)
            else:
                pins = dict(self.prepared.pins)
                for name, value in changes.items():
                    pins[name] = moved_pin(self.model, pins[name], value)
                prepared = replace(self.prepared, pins=pins)
            solution = solve_prepared(prepared, self.options)
        except ChalkError as exc:
            return Outcome.refused(exc)
        solution.question = self
        return Outcome.solved(solution)

    def point(self, values: Mapping[str, float] | None = None) -> dict[str, float]:
        """The targets and reported quantities (base units) at one point: what
        :meth:`solve` answers there, found by the bulk run where it can vouch for it
        (the fast path of :class:`chalk.Question`), else by :meth:`solve` itself.

        Raises
        ------
        ChalkError
            Where :meth:`solve` refuses.
        """
        changes = self._changes(values or {})
        if (self._bulk_ready and not self._value_sensitive(changes)
                and all(self._as_prepared(n, float(v)) for n, v in changes.items())):
            found = self._run_point(changes)
            if found is not None:
                return found
        solution = self.solve(changes)
        return {n: math.nan if (v := solution.base_value(n)) is None else v
                for n in self._answered}

    def _run_point(self, changes: Mapping[str, float]) -> dict[str, float] | None:
        """:meth:`_run` at one point, on plain floats; None where solve must decide."""
        env = dict(self._point_env)
        env.update((n, float(v)) for n, v in changes.items())
        env = run_env(self.compiled, env, self.options.regime, 1, keep=()).raw
        for name in self._computed:
            value = env.get(name)
            if value is not None and not math.isfinite(_scalar(value)):
                return None
        for _, lhs, rhs in self.compiled.checks:
            left, right = _scalar(lhs(env)), _scalar(rhs(env))
            scale = max(abs(left), abs(right))
            if scale and abs(left - right) / scale > self.options.rtol:
                return None
        stated = self.prepared.stated
        return {n: stated[n].value if self._answers.get(n) == "stated" else _scalar(env[n])
                for n in self._answered}

    def evaluate(self, values: Mapping[str, object], settle: int = SETTLE) -> Evaluation:
        """The answer at many points: arrays (or scalars) of base-unit pin values.

        Parameters
        ----------
        values : mapping of name to float or array
            New values for some of :attr:`pins`, broadcast together.
        settle : int
            At most this many points the vectorised run cannot vouch for are answered
            one by one with :meth:`solve`; the rest are marked ``unsettled``.

        Returns
        -------
        Evaluation
        """
        arrays: dict[str, object] = {}
        for name, value in self._changes(values).items():
            array = np.asarray(value, dtype=float)
            # a scalar stays a float: the bulk run keeps it scalar (and fast)
            arrays[name] = float(array) if array.ndim == 0 else array.ravel()
        shaped = [a for a in arrays.values() if not isinstance(a, float)]
        size = int(np.broadcast(*shaped).size) if shaped else 1
        arrays = {n: a if isinstance(a, float) else np.broadcast_to(a, (size,))
                  for n, a in arrays.items()}
        names = self._answered
        out = {n: np.full(size, np.nan) for n in names}
        if not self._main.plan.determined:
            # solve refuses every point so, before any number (the pins that would do),
            # but only once it has read the point's values: one out of bounds is refused
            # for that first, as solve reads pins before it plans
            error = self._main.plan.underdetermined_error()
            refusals = dict.fromkeys(range(size), error)
            admitted = np.ones(size, dtype=bool)
            for name, array in arrays.items():
                admitted &= self.model.variables[name].admits_each(array)
            for index in np.nonzero(~admitted)[0]:
                point = {n: a if isinstance(a, float) else float(a[index])
                         for n, a in arrays.items()}
                refusals[int(index)] = self.outcome(point).error
            return Evaluation(out, refusals, np.zeros(size, dtype=bool))
        trusted = np.zeros(size, dtype=bool)
        regimes: dict[str, np.ndarray] = {}
        if self._vouched and not self._value_sensitive(arrays):
            as_given = np.ones(size, dtype=bool)  # as _as_prepared, point by point
            for name, array in arrays.items():
                as_given &= (array == 0) == (self.prepared.pins[name].value == 0)
                as_given &= self.model.variables[name].admits_each(array)
            run, ok = self._run(arrays, size)
            trusted = as_given & ok
            for n, value in run.values.items():
                out[n] = np.where(trusted, value, np.nan)
            regimes = run.regimes
        result = Evaluation(out, unsettled=np.zeros(size, dtype=bool), regimes=regimes)
        pending = np.nonzero(~trusted)[0]
        for index in pending[:settle]:
            point = {n: a if isinstance(a, float) else float(a[index])
                     for n, a in arrays.items()}
            outcome = self.outcome(point)
            if outcome.error is not None:
                result.refusals[int(index)] = outcome.error
            for n in names:
                if n in outcome.values:
                    out[n][index] = outcome.values[n]
        result.settled = int(min(len(pending), settle))
        result.unsettled[pending[settle:]] = True
        return result

    # the parts -------------------------------------------------------------------------
    def _run(self, arrays: Mapping[str, object], size: int):
        """The vectorised run and, per point, whether solve would take it as it is:
        every computed quantity finite (one physical value, not ill-conditioned) and
        every cross-check within tolerance. ``run.values`` holds the targets and
        reported quantities."""
        pins = dict(self._base)
        pins.update(arrays)
        run = evaluate_plan(self.compiled, pins, self.options.regime, size, keep=())
        env = run.raw
        ok = np.ones(size, dtype=bool)
        with np.errstate(all="ignore"):
            for name in self._computed:
                value = env.get(name)
                if value is not None:
                    ok &= np.isfinite(value)
            for _, lhs, rhs in self.compiled.checks:
                left, right = np.asarray(lhs(env), dtype=float), np.asarray(rhs(env), dtype=float)
                scale = np.maximum(np.abs(left), np.abs(right))
                gap = np.where(scale == 0, 0.0, np.abs(left - right) / scale)
                ok &= gap <= self.options.rtol
        values = {}
        for n in self._answered:
            if self._answers.get(n) == "stated":
                values[n] = np.full(size, self.prepared.stated[n].value)
            elif n in env:
                values[n] = np.broadcast_to(np.asarray(env[n], dtype=float), (size,))
        run.values = values
        return run, ok

    @cached_property
    def _bulk_ready(self) -> bool:
        """Whether the bulk run can vouch for any point (determined, no search)."""
        return self._main.plan.determined and self._vouched

    @cached_property
    def _answered(self) -> tuple[str, ...]:
        """The targets, then the quantities reported beside them."""
        return self.targets + self.reported

    @cached_property
    def _base(self) -> dict[str, float]:
        """Base values of the pins the run reads."""
        return {n: p.value for n, p in self._main.pins.items()}

    @cached_property
    def _point_env(self) -> dict[str, object]:
        """What a point's run starts from: constants, placeholders and the pins' base
        values, as :func:`~chalk.solvers.bulk.vectorised.evaluate` puts them (a pin is a
        float), kept so that a point changes only what it asks."""
        env = scalar_env(self.compiled)
        env.update((n, float(v)) for n, v in self._base.items())
        return env

    @cached_property
    def _computed(self) -> tuple[str, ...]:
        """The quantities the plan computes that a value rests on (placeholders aside)."""
        plan = self._main.plan
        return tuple(n for n in plan.computed if n not in plan.placeholders)

    def _changes(self, values: Mapping[str, object]) -> dict:
        """``values`` checked against the question's pins (by name or alias)."""
        pins = self.prepared.pins
        out = {}
        for name, value in values.items():
            canonical = name if name in pins else self.model.variable(name).name
            if canonical not in pins:
                raise UsageError(f"{canonical} is not pinned in this question; pin it when "
                                 "making the question")
            out[canonical] = value
        return out

    def _value_sensitive(self, changes: Mapping[str, object]) -> bool:
        """Whether a changed pin's value decided which lower-layer values gave way."""
        return not self.prepared.value_sensitive.isdisjoint(changes)

    def _as_prepared(self, name: str, value: float) -> bool:
        """Whether ``value`` is read as the question's own pin was: in its bounds, and
        zero (a term absent) exactly when that pin was."""
        return ((value == 0) == (self.prepared.pins[name].value == 0)
                and self.model.variables[name].admits(value))

    def _reprepare(self, changes: Mapping[str, float]) -> bool:
        """Whether ``changes`` need the question prepared afresh (a default that gave
        way by its value, or a term now absent or present)."""
        if self._value_sensitive(changes):
            return True
        return any((value == 0) != (self.prepared.pins[name].value == 0)
                   for name, value in changes.items())

    def _prepared_at(self, changes: Mapping[str, float]) -> Prepared:
        """The question prepared afresh with ``changes`` in place of the pins' values."""
        asked = self.arguments
        return prepare(asked["targets"], asked["given"], asked["presets"], asked["model"],
                       asked["drop"], values=changes)


def compile_question(targets: str | Sequence[str], given: Given = (), presets=(), *,
                     model: Model | None = None, drop: Iterable[str] = (),
                     options: Options | None = None) -> CompiledQuestion:
    """Resolve and plan a question once (see the module docstring).

    Parameters
    ----------
    targets, given, presets, model, drop
        As for :func:`chalk.solve`.
    options : Options, optional

    Returns
    -------
    CompiledQuestion
    """
    options = options or Options()
    targets, given, presets, drop = checked_arguments(targets, given, presets, options, drop)
    given = list(given.items()) if isinstance(given, Mapping) else list(given)
    # a question of a shape asked before (other values of the same pins) is not
    # prepared again (chalk.preparation.prepare_again)
    q = prepare_again(targets, given, presets, model, drop)
    arguments = {"targets": targets, "given": given, "presets": presets, "model": model,
                 "drop": tuple(drop)}
    return CompiledQuestion(q, options, arguments)


def _scalar(value) -> float:
    """A value of a one-point run as a float (a step may give an array of one)."""
    return value if isinstance(value, float) else float(np.ravel(value)[0])
