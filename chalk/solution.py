"""What a question gives back: a :class:`Solution` (answers as pint Quantities, with the
derivation that produced them), an :class:`Outcome` (a solve as data, refusals included)
and an :class:`Explanation` (the plan, before numbers).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from chalk.solvers.bulk.uncertainty import SENSITIVITY_METHOD, Propagation, elasticities
from chalk.solvers.execution.blocks import MULTI_START
from chalk.solvers.execution.execute import compile_plan
from chalk.solvers.pinning.pinned import Pin
from chalk.solvers.planning.forward import downstream, whole_counts
from chalk.solvers.planning.plan import Plan
from chalk.solvers.records.derivation import Derivation
from chalk.solvers.records.notes import Note, texts
from chalk.symbolic.errors import ChalkError
from chalk.symbolic.model import Model
from chalk.symbolic.printing.quantities import format_quantity
from chalk.symbolic.printing.readable import Readable
from chalk.symbolic.units import Q_, conversion_factor


class Solution:
    """Answers with units, plus the derivation that produced them.

    ``solution["critical_batch_size"]`` is a pint Quantity in the quantity's
    declared unit; ``solution.derivation`` says how it was obtained.
    """

    def __init__(self, targets: Sequence[str], derivation: Derivation, plan: Plan,
                 uncertainty: Propagation | None = None, stated: Mapping | None = None,
                 override: Mapping[str, float] | None = None):
        self.targets = tuple(targets)
        self.derivation = derivation
        self.plan = plan
        self.uncertainty = uncertainty
        self.stated = dict(stated or {})  # target -> what a preset states, and the check
        self._override = dict(override or {})  # target -> base value answered instead
        self.question = None  # the CompiledQuestion answered, set by it

    def __getitem__(self, name: str):
        model = self.derivation.model
        variable = model.variable(name)
        if variable.name not in self.derivation.values:
            raise KeyError(f"{name} was not determined by this solution")
        if variable.name in self._override:
            return Q_(self._override[variable.name] / variable.to_base, variable.pint_unit)
        if not self.derivation.determined(variable.name):
            raise KeyError(f"{name} is not fixed by the pins: it depends on "
                           f"{', '.join(self.derivation.placeholders)}, which cancel from "
                           f"{', '.join(self.targets)}")
        return Q_(self.derivation.declared(variable.name), variable.pint_unit)

    @property
    def results(self) -> dict:
        """The targets as pint Quantities."""
        return {t: self[t] for t in self.targets}

    def elasticities(self, target: str) -> list[tuple[str, float]]:
        """d ln(target) / d ln(pin) at this solution's pins, for every pin that moves
        ``target``, largest first (:func:`chalk.solvers.bulk.uncertainty.elasticities`)."""
        compiled = compile_plan(self.derivation.model, self.plan)
        return elasticities(compiled, self.derivation.pins, target)

    def base_value(self, name: str) -> float | None:
        """A quantity's answer in base units, or None if this solution does not fix it
        (not computed, or resting on a placeholder value)."""
        variable = self.derivation.model.variable(name)
        if variable.name in self._override:
            return self._override[variable.name]
        if (variable.name not in self.derivation.values
                or not self.derivation.determined(variable.name)):
            return None
        return float(self.derivation.values[variable.name])

    def value(self, name: str, unit: str | None = None) -> float:
        """A determined quantity as a float, in ``unit`` or its declared unit."""
        quantity = self[name]
        if unit is None:
            return float(quantity.magnitude)
        return float(quantity.magnitude) * conversion_factor(quantity.units, unit)

    def interval(self, name: str, unit: str | None = None) -> tuple:
        """The 90% interval (5th, 95th percentile) of an uncertain result, as Quantities."""
        summary = self._summary(name)
        variable = self.derivation.model.variable(name)
        out = tuple(Q_(x / variable.to_base, variable.pint_unit)
                    for x in (summary.low, summary.high))
        return tuple(q.to(unit) for q in out) if unit else out

    def median(self, name: str, unit: str | None = None):
        """The Monte Carlo median of an uncertain result, as a Quantity."""
        variable = self.derivation.model.variable(name)
        q = Q_(self._summary(name).median / variable.to_base, variable.pint_unit)
        return q.to(unit) if unit else q

    def _summary(self, name: str):
        if self.uncertainty is None or name not in self.uncertainty.summaries:
            raise KeyError(f"{name} has no uncertainty: no pin it depends on is a range")
        return self.uncertainty.summaries[name]

    def to_dict(self) -> dict:
        """``{"results": ..., "steps": ..., "pins": ..., "checks": ...}`` for scripts.

        ``value`` is the result at the pins' nominal values (the derivation's);
        with uncertain pins each result adds ``low``, ``median``, ``high`` (5th, 50th,
        95th percentiles) and ``sensitivity`` (share of the spread per pin).
        """
        body = self.derivation.to_dict()
        results = {t: self.derivation.json_value(t) for t in self.targets}
        for t in self.targets:  # a whole count carries the continuous counts behind it
            for inner, low, _, _, way in self._roundings(t):
                results[t].setdefault(f"rounded_{way}_from", {})[inner] = low.magnitude
        for t, entry in self.stated.items():
            if t in self._override:
                results[t]["value"] = self.value(t)
            results[t]["stated"] = {k: v for k, v in entry.items() if v != ""}
        if self.uncertainty is not None:
            for t, summary in self.uncertainty.summaries.items():
                scale = self.derivation.model.variables[t].to_base
                results[t].update({
                    "low": summary.low / scale, "median": summary.median / scale,
                    "high": summary.high / scale,
                    "sensitivity": dict(summary.sensitivity),
                })
                if summary.linear:
                    results[t]["linear"] = [x / scale for x in summary.linear]
            body["uncertainty"] = {"method": self.uncertainty.method(),
                                   "sensitivity_method": SENSITIVITY_METHOD,
                                   "notes": self.uncertainty.notes}
        return {"results": results, **body}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def _show(self, name: str, base_value: float) -> str:
        variable = self.derivation.model.variables[name]
        return format_quantity(base_value / variable.to_base, variable.pint_unit)

    def headline(self) -> str:
        lines = []
        for t in self.targets:
            summary = (self.uncertainty.summaries.get(t) if self.uncertainty else None)
            if summary is None:
                entry = self.stated.get(t)
                suffix = ""
                if entry and entry["answer"] == "stated":
                    suffix = f" (stated by {entry['origin']})"
                elif entry:
                    suffix = f" (derived; {entry['origin']} states it too)"
                shown = format_quantity(self.value(t), self.derivation.model.variables[t]
                                        .pint_unit)
                lines.append(f"{t} = {shown}{suffix}{self._rounded(t)}")
            else:
                lines.append(f"{t} = {self._show(t, summary.median)} (median; 90% interval "
                             f"{self._show(t, summary.low)} to {self._show(t, summary.high)})")
        return "\n".join(lines)

    def _rounded(self, name: str) -> str:
        """For a whole count, the continuous counts it was rounded from, beside it:
        `` (whole: replicas = 16.67 rounded up to 17)``, `` (whole: max_batch_size = 150.6
        rounded down to 150)``; empty for any other quantity."""
        shown = [f"{inner} = {format_quantity(low.magnitude, low.units)} rounded {way} to "
                 f"{self._show(whole, high)}"
                 for inner, low, whole, high, way in self._roundings(name)]
        return f" (whole: {'; '.join(shown)})" if shown else ""

    def _roundings(self, name: str) -> list[tuple[str, object, str, float, str]]:
        """``(continuous, its value, whole, its value, "up" or "down")`` for each rounding
        behind the whole count ``name`` (none for any other quantity): the continuous count
        is the quantity inside the rounding (``replicas``), or the ratio it takes
        (``prompt_tokens/prefill_chunk_tokens``) with its pure number; its value a
        Quantity in its unit, the whole one in base units."""
        from chalk.symbolic.evaluate import compile_expr
        from chalk.symbolic.printing.expressions import plain
        from chalk.symbolic.relations import ROUNDINGS

        model = self.derivation.model
        if name not in whole_counts(model):
            return []
        found = []
        for relation in model.relations.values():
            whole = relation.lhs.name if relation.lhs.is_Symbol else None
            if whole is None or not (whole == name or name in downstream(model, whole)):
                continue
            high = self.base_value(whole)
            for node in sorted(relation.rhs.atoms(*ROUNDINGS), key=str):
                inner = sorted(s.name for s in node.free_symbols if s.name in model.variables)
                values = {n: self.base_value(n) for n in inner}
                if high is None or None in values.values():
                    continue
                way = relation.rounding(inner[0])
                if len(inner) == 1:
                    variable = model.variables[inner[0]]
                    low = Q_(values[inner[0]] / variable.to_base, variable.pint_unit)
                    found.append((inner[0], low, whole, high, way))
                    continue
                ratio = compile_expr(node.args[0], model.constant_values())(values)
                found.append((plain(node.args[0]), Q_(float(ratio), ""), whole, high, way))
        return found

    def summary(self) -> str:
        """The answers, then what is reported beside them (``memory_fill``), then flags."""
        return "\n".join([self.headline(), *self.derivation.reported_lines(),
                          *self.derivation.flag_lines()])

    def uncertainty_text(self) -> str:
        if self.uncertainty is None:
            return ""
        u = self.uncertainty
        lines = ["uncertainty", f"  {u.method()}"]
        for t, summary in u.summaries.items():
            if summary.linear:
                lo, hi = summary.linear
                lines.append(f"  {t}: first-order (log-space Jacobian) 90% interval "
                             f"{self._show(t, lo)} to {self._show(t, hi)}")
            drivers = ", ".join(f"{n} {100 * share:.0f}%" for n, share in summary.sensitivity)
            lines.append(f"  {t}: spread driven by {drivers}")
        if any(len(s.sensitivity) > 1 for s in u.summaries.values()):
            lines.append(f"  shares: {SENSITIVITY_METHOD}")
        lines.extend(f"  note: {note}" for note in u.notes)
        lines.append("  the derivation below is at the nominal value of each range")
        return "\n".join(lines)

    def __str__(self) -> str:
        parts = [self.summary()]
        if self.uncertainty is not None:
            parts.append(self.uncertainty_text())
        parts.append(self.derivation.text())
        return "\n\n".join(parts)

    def __repr__(self) -> str:
        inner = ", ".join(f"{t}={self.derivation.show(t)}" for t in self.targets)
        return f"Solution({inner})"

    def _repr_markdown_(self) -> str:
        heads = "\n".join(f"- **{t}** = {self.derivation.show(t)}" for t in self.targets)
        return heads + "\n\n" + self.derivation.markdown()



@dataclass(frozen=True)
class Outcome:
    """What solving a question at one point computed, as data. Every public edge
    (:func:`chalk.solve`, :meth:`chalk.compiled.CompiledQuestion.solve`, and so
    :class:`chalk.Question`, sweeps, fits and reports) raises a refusal only through
    :meth:`result`.

    Attributes
    ----------
    status : {"solved", "refused"}
    values : mapping of name to float
        The targets and the quantities reported beside them that the pins fix, in base
        units (a quantity resting on a placeholder value is left out).
    proven : bool
        Whether every step's solution is proven unique: no simultaneous block was solved
        by a strategy that is not complete (a multi-start search). False when refused.
    notes : tuple of Note
        What was set aside or settled, and why (empty when refused).
    error : ChalkError or None
        The refusal, naming what was wrong.
    solution : Solution or None
        The full answer with its derivation, when solved.
    """

    status: str
    values: Mapping[str, float]
    proven: bool
    notes: tuple[Note, ...] = ()
    error: ChalkError | None = None
    solution: Solution | None = None

    @classmethod
    def solved(cls, solution: Solution) -> Outcome:
        """The outcome of ``solution``, with the values it fixes of its targets and of the
        quantities reported beside them."""
        derivation = solution.derivation
        names = solution.targets + tuple(n for n, _ in derivation.reported)
        values = {n: v for n in names if (v := solution.base_value(n)) is not None}
        proven = not any(step.method == MULTI_START for step in derivation.steps)
        return cls("solved", values, proven, derivation.remarks, solution=solution)

    @classmethod
    def refused(cls, error: ChalkError) -> Outcome:
        """The outcome of a question refused with ``error``."""
        return cls("refused", {}, False, error=error)

    def result(self) -> Solution:
        """The solution.

        Raises
        ------
        ChalkError
            The refusal, if the question was refused.
        """
        if self.error is not None:
            raise self.error
        return self.solution


@dataclass(frozen=True, repr=False)
class Explanation(Readable):
    """The plan for a question, before any number is computed."""

    model: Model
    plan: Plan
    pins: Mapping[str, Pin]
    notes: tuple[Note, ...]
    conventions: str

    def text(self) -> str:
        plan, model = self.plan, self.model
        lines = [f"targets: {', '.join(plan.targets)}", f"conventions: {self.conventions}"]
        lines.append(f"pinned: {', '.join(sorted(plan.pinned)) or '(none)'}")
        if plan.undetermined:
            lines.append(f"not determined: {', '.join(plan.undetermined)}")
            for text in plan.fixed_texts().values():
                lines.append(f"  the pins fix only {text}")
            if plan.completions:
                lines.append("smallest sets of extra pins that would determine them:")
                lines.extend(f"  {{{', '.join(c)}}}" for c in plan.completions)
            else:
                lines.append("no set of up to 3 extra pins determines them")
            if plan.from_inputs:
                lines.append(f"or, from inputs: {{{', '.join(plan.from_inputs)}}}")
        if plan.placeholders:
            lines.append(f"cancels: {', '.join(plan.placeholders)} (any value gives the same "
                         f"{', '.join(plan.targets)}; the steps hold a placeholder value)")
        if plan.regime:
            lines.append(f"planned in the regimes: {', '.join(plan.regime)}")
        lines.append("steps:")
        if not plan.steps:
            lines.append("  (none)")
        for index, step in enumerate(plan.steps, 1):
            if step.simultaneous:
                lines.append(f"  {index}. solve {', '.join(step.relations)} together for "
                             f"{', '.join(step.variables)} (numeric block)")
            else:
                relation = model.relations[step.relations[0]]
                lines.append(f"  {index}. {relation.name}: {relation.equation}  ->  "
                             f"{step.variables[0]}  [{relation.source}]")
        if plan.checks:
            lines.append("cross-checks:")
            lines.extend(f"  {c}: {model.relations[c].equation}" for c in plan.checks)
        if plan.unused_pins:
            lines.append(f"pins not needed: {', '.join(plan.unused_pins)}")
        lines.extend(f"note: {text}" for text in texts(self.notes))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        plan = self.plan
        return {
            "targets": list(plan.targets),
            "conventions": self.conventions,
            "pinned": sorted(plan.pinned),
            "determined": plan.determined,
            "undetermined": list(plan.undetermined),
            "completions": [list(c) for c in plan.completions],
            "fixed": plan.fixed_texts(),
            "cancels": list(plan.placeholders),
            "from_inputs": list(plan.from_inputs),
            "steps": [{"relations": list(s.relations), "solved_for": list(s.variables),
                       "simultaneous": s.simultaneous} for s in plan.steps],
            "checks": list(plan.checks),
            "unused_pins": list(plan.unused_pins),
            "notes": list(texts(self.notes)),
        }
