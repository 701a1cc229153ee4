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
  give way or which terms are absent), one physical value at every step, every
  cross-check within tolerance, and no step that needs a search. Any other point is
  answered by :meth:`solve` itself, so each point carries ``solve``'s answer or its
  refusal.

:class:`chalk.Question`, sweeps, optimisation curves, fits and reports go through here
(``chalk.solve`` runs the same body, :func:`chalk.api.solve_prepared`, at the pins as
given); nothing outside the engine plans, compiles or evaluates on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from chalk.api import (
    Given,
    Options,
    Prepared,
    Solution,
    checked_arguments,
    moved_pin,
    prepare,
    solve_prepared,
    stated_answers,
    stated_plan,
)
from chalk.solvers.execute import CompiledPlan, compile_plan
from chalk.solvers.vectorised import evaluate as evaluate_plan
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

    def __init__(self, prepared: Prepared, options: Options, source: dict):
        self.prepared = prepared
        self.options = options
        self._source = source  # what compile_question was given, to prepare again

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
        determine are taken from the statement (:func:`chalk.api.stated_plan`)."""
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
        from chalk.solvers.strategies import NEWTON_MULTI_START

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
            As :func:`chalk.solve`.
        """
        changes = self._changes(values or {})
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
        solution.question = self
        return solution

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
        changes = {name: np.asarray(v, dtype=float) for name, v in
                   self._changes(values, arrays=True).items()}
        size = int(np.broadcast(*changes.values()).size) if changes else 1
        arrays = {n: np.broadcast_to(v, (size,)) for n, v in changes.items()}
        names = self.targets + self.reported
        out = {n: np.full(size, np.nan) for n in names}
        if not self._main.plan.determined:
            # solve refuses every point so, before any number (the pins that would do)
            error = self._main.plan.underdetermined_error()
            return Evaluation(out, dict.fromkeys(range(size), error),
                              np.zeros(size, dtype=bool))
        trusted = np.zeros(size, dtype=bool)
        regimes: dict[str, np.ndarray] = {}
        if self._vouched and not self._value_sensitive(arrays):
            as_given = np.ones(size, dtype=bool)  # values solve would read as they are
            for name, array in arrays.items():
                as_given &= (array == 0) == (self.prepared.pins[name].value == 0)
                as_given &= self.model.variables[name].admits_each(array)
            run, ok = self._run(arrays, size)
            trusted = as_given & ok
            for n in names:
                if n in run.values:
                    out[n] = np.where(trusted, run.values[n], np.nan)
            regimes = run.regimes
        result = Evaluation(out, unsettled=np.zeros(size, dtype=bool), regimes=regimes)
        pending = np.nonzero(~trusted)[0]
        for index in pending[:settle]:
            point = {n: float(a[index]) for n, a in arrays.items()}
            try:
                solution = self.solve(point)
            except ChalkError as exc:
                result.refusals[int(index)] = exc
                continue
            for n in names:
                base = solution.base_value(n)
                if base is not None:
                    out[n][index] = base
        result.settled = int(min(len(pending), settle))
        result.unsettled[pending[settle:]] = True
        return result

    # the parts -------------------------------------------------------------------------
    def _run(self, arrays: Mapping[str, np.ndarray], size: int):
        """The vectorised run and, per point, whether solve would take it as it is."""
        main = self._main
        pins = {n: p.value for n, p in main.pins.items()}
        pins.update(arrays)
        run = evaluate_plan(self.compiled, pins, self.options.regime, size)
        ok = np.ones(size, dtype=bool)
        for name in main.plan.computed:
            if name in run.values and name not in main.plan.placeholders:
                ok &= np.isfinite(run.values[name])
        env = {**pins, **{k: v for k, v in run.raw.items()}}
        with np.errstate(all="ignore"):
            for _, lhs, rhs in self.compiled.checks:
                left = np.broadcast_to(np.asarray(lhs(env), dtype=float), (size,))
                right = np.broadcast_to(np.asarray(rhs(env), dtype=float), (size,))
                scale = np.maximum(np.abs(left), np.abs(right))
                gap = np.where(scale == 0, 0.0, np.abs(left - right) / scale)
                ok &= gap <= self.options.rtol
        values = dict(run.values)
        for t, answer in self._answers.items():
            if answer == "stated":
                values[t] = np.full(size, self.prepared.stated[t].value)
        run.values = values
        return run, ok

    def _changes(self, values: Mapping[str, object], arrays: bool = False) -> dict:
        """``values`` checked against the question's pins."""
        allowed = set(self.pins)
        out = {}
        for name, value in values.items():
            canonical = self.model.variable(name).name
            if canonical not in allowed:
                raise UsageError(f"{canonical} is not pinned in this question; pin it when "
                                 "making the question")
            out[canonical] = value
        return out

    @cached_property
    def _sensitive(self) -> frozenset[str]:
        """Pins whose values decide which lower-layer values give way."""
        return self.prepared.value_sensitive

    def _value_sensitive(self, changes: Mapping[str, object]) -> bool:
        return bool(self._sensitive.intersection(changes))

    def _reprepare(self, changes: Mapping[str, float]) -> bool:
        if self._value_sensitive(changes):
            return True
        return any((value == 0) != (self.prepared.pins[name].value == 0)
                   for name, value in changes.items())

    def _prepared_at(self, changes: Mapping[str, float]) -> Prepared:
        """The question prepared afresh with ``changes`` in place of the pins' values."""
        source = self._source
        return prepare(source["targets"], source["given"], source["presets"],
                       source["model"], source["drop"], values=changes)


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
    q = prepare(targets, given, presets, model, drop)
    source = {"targets": targets, "given": given, "presets": presets, "model": model,
              "drop": tuple(drop)}
    return CompiledQuestion(q, options, source)
