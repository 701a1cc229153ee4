"""A question planned and compiled once, then asked again with new numbers cheaply.

``chalk.solve`` re-reads every pin and builds a derivation each time; a
:class:`Question` keeps the compiled question (:func:`chalk.compiled.compile_question`)
and asks it again at new values. Values are given as ``solve`` takes them (text such as
``"64 sequence"`` or pint Quantities, scalars or arrays) or as plain numbers and arrays
in each quantity's declared unit. Each answer is the one ``chalk.solve`` gives at those
values: a point the vectorised run cannot vouch for is solved in full, and a point
``solve`` refuses raises its error (a scalar call) or is NaN (an array call;
:meth:`Question.refusals` names why).

>>> from chalk import Question
>>> q = Question("hbm_drain_time", {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"})
>>> q(hbm_capacity="144 GB")["hbm_drain_time"].to("ms")
<Quantity(7.2, 'millisecond')>
>>> q.magnitudes(hbm_capacity=144e9)  # plain numbers in declared units, for speed
{'hbm_drain_time': 0.0072}
"""

from __future__ import annotations

import numpy as np

from chalk.compiled import Options, compile_question
from chalk.solvers.pinning.pins import read_values
from chalk.symbolic.printing.quantities import format_quantity
from chalk.symbolic.units import ureg


class Answers(dict):
    """A question's answers: target name -> pint Quantity in the target's declared unit
    (holding an array when the question was asked at arrays)."""

    def _lines(self) -> list[str]:
        lines = []
        for name, value in self.items():
            if np.ndim(value.magnitude):
                finite = np.asarray(value.magnitude)[np.isfinite(value.magnitude)]
                shown = f"{np.size(value.magnitude)} values"
                if finite.size:
                    shown += (f", {format_quantity(float(finite.min()), value.units)} to "
                              f"{format_quantity(float(finite.max()), value.units)}")
                if finite.size < np.size(value.magnitude):
                    shown += f", {np.size(value.magnitude) - finite.size} refused"
            else:
                shown = format_quantity(float(value.magnitude), value.units)
            lines.append(f"{name} = {shown}")
        return lines

    def __repr__(self) -> str:
        return "Answers(" + "; ".join(self._lines()) + ")"

    def _repr_markdown_(self) -> str:
        return "\n".join(f"- **{line.replace(' = ', '** = ', 1)}" for line in self._lines())


class Question:
    """Targets as a fast function of the pins given when it was made.

    Parameters are those of :func:`chalk.solve`. Calling it with ``name=value``
    replaces pinned values and returns :class:`Answers` (pint Quantities);
    :meth:`magnitudes` returns plain numbers in the declared units instead, which is
    what a tight loop wants. A question its pins do not determine is refused when
    asked, with what :func:`chalk.solve` raises at those values.
    """

    def __init__(self, targets, given=(), presets=(), *, regime: str | None = None,
                 model=None):
        # an under-determined question is refused where it is asked, as solve refuses it:
        # after the values asked are read (one out of bounds is refused for that first)
        self._question = compile_question(targets, given, presets, model=model,
                                          options=Options(regime=regime))
        self.model = self._question.model
        self.targets = self._question.targets
        self.regime = regime
        self._last = None

    @property
    def pins(self) -> tuple[str, ...]:
        """The quantities that can be changed when asking again."""
        return self._question.pins

    def refusals(self) -> dict:
        """For the last call with arrays: point index -> the error ``chalk.solve`` raises
        there."""
        return dict(self._last.refusals) if self._last is not None else {}

    def __call__(self, **changes) -> Answers:
        found = self.magnitudes(**changes)
        units = {t: self.model.variables[t].pint_unit for t in self.targets}
        return Answers((t, ureg.Quantity(found[t], units[t])) for t in self.targets)

    def magnitudes(self, **changes) -> dict:
        """The answers as plain numbers (or arrays) in each target's declared unit.

        Takes the same values as calling the question; numbers given here are in each
        pin's declared unit.
        """
        model = self._question.model
        base = {}
        scalar = True
        for name, value in changes.items():
            variable = model.variable(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                base[variable.name] = float(value) * variable.to_base  # the common case
            else:
                base[variable.name] = read_values(variable, value)
                scalar = scalar and np.ndim(base[variable.name]) == 0
        if scalar:
            found = self._question.point({k: float(v) for k, v in base.items()})
            return {t: found[t] / model.variables[t].to_base for t in self.targets}
        result = self._question.evaluate(base)
        self._last = result
        return {t: result.values[t] / model.variables[t].to_base for t in self.targets}

    def __repr__(self) -> str:
        return (f"Question({', '.join(self.targets)} from {len(self.pins)} pins; "
                f"ask again with any of them)")

    def _repr_markdown_(self) -> str:
        return (f"**Question** for {', '.join(f'`{t}`' for t in self.targets)}; pins that "
                f"can change: {', '.join(f'`{p}`' for p in self.pins)}")
