"""A question planned and compiled once, then asked again with new numbers cheaply.

``chalk.solve`` re-reads every pin and builds a derivation each time; a
:class:`Question` keeps the compiled question (:func:`chalk.compiled.compile_question`)
and asks it again on plain numbers (in each quantity's declared unit) or numpy arrays
of them. Each answer is the one ``chalk.solve`` gives at those values: a point the
vectorised run cannot vouch for is solved in full, and a point ``solve`` refuses
raises its error (a scalar call) or is NaN (an array call; :meth:`Question.refusals`
names why).

>>> from chalk import Question
>>> q = Question("hbm_drain_time", {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"})
>>> round(q(hbm_capacity=144e9)["hbm_drain_time"] * 1e3, 6)  # seconds -> ms
7.2
"""

from __future__ import annotations

import numpy as np

from chalk.compiled import Options, compile_question


class Question:
    """Targets as a fast function of the pins given when it was made.

    Parameters are those of :func:`chalk.solve`. Calling it with ``name=value``
    replaces pinned values (plain numbers or arrays in the quantity's declared
    unit) and returns the targets in their declared units.
    """

    def __init__(self, targets, given=(), presets=(), *, regime: str | None = None,
                 model=None):
        self._question = compile_question(targets, given, presets, model=model,
                                          options=Options(regime=regime))
        plan = self._question.prepared.plan
        if not plan.determined:
            raise plan.underdetermined_error()
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

    def __call__(self, **changes) -> dict:
        model = self._question.model
        scalar = True
        base = {}
        for name, value in changes.items():
            variable = model.variable(name)
            if isinstance(value, (int, float)):
                base[variable.name] = float(value) * variable.to_base
            else:
                array = np.asarray(value, dtype=float)
                scalar &= array.ndim == 0
                base[variable.name] = array * variable.to_base
        if scalar:
            found = self._question.point(base)
            return {t: found[t] / model.variables[t].to_base for t in self.targets}
        result = self._question.evaluate(base)
        self._last = result
        return {t: result.values[t] / model.variables[t].to_base for t in self.targets}
