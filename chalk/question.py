"""A question planned and compiled once, then asked again with new numbers cheaply.

``chalk.solve`` re-reads every pin and builds a derivation each time; a
:class:`Question` keeps the plan and the compiled closed forms and only evaluates,
on plain numbers (in each quantity's declared unit) or numpy arrays of them. This is
the path for scripts, sweeps and optimisers that ask the same question many times.

>>> from chalk import Question
>>> q = Question("hbm_drain_time", {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"})
>>> round(q(hbm_capacity=144e9)["hbm_drain_time"] * 1e3, 6)  # seconds -> ms
7.2
"""

from __future__ import annotations

import numpy as np

from chalk.api import prepare
from chalk.solvers.execute import compile_plan
from chalk.solvers.vectorised import evaluate
from chalk.symbolic.errors import UsageError


class Question:
    """Targets as a fast function of the pins given when it was made.

    Parameters are those of :func:`chalk.solve`. Calling it with ``name=value``
    replaces pinned values (plain numbers or arrays in the quantity's declared
    unit) and returns the targets in their declared units.
    """

    def __init__(self, targets, given=(), presets=(), *, regime: str | None = None,
                 model=None):
        q = prepare(targets, given, presets, model)
        model, names, pins, plan = q.model, q.targets, q.pins, q.plan
        if not plan.determined:
            raise plan.underdetermined_error()
        self.model = model
        self.targets = names
        self.regime = regime
        self._compiled = compile_plan(model, plan)
        self._base = {n: p.value for n, p in pins.items()}
        self._scale = {n: model.variables[n].to_base for n in set(pins) | set(names)}

    @property
    def pins(self) -> tuple[str, ...]:
        """The quantities that can be changed when asking again."""
        return tuple(self._base)

    def __call__(self, **changes) -> dict:
        values = dict(self._base)
        for name, value in changes.items():
            if name not in self._base:
                raise UsageError(f"{name} is not pinned in this question; pin it when making "
                                 "the Question")
            values[name] = np.asarray(value, dtype=float) * self._scale[name] \
                if not isinstance(value, float) else value * self._scale[name]
        result = evaluate(self._compiled, values, self.regime, keep=())
        out = {}
        for t in self.targets:
            v = result.raw[t]
            out[t] = float(v) / self._scale[t] if np.ndim(v) == 0 else \
                np.asarray(v, dtype=float) / self._scale[t]
        return out
