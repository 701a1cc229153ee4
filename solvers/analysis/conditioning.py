"""How much a closed-form answer can be trusted in floating point.

A closed form can be exact and still useless: solving a saturated relation for
the quantity it has stopped depending on (the experts a large batch touches,
say) amplifies the last bits of the inputs into the whole answer. The
elasticity of the answer to each input (d ln out / d ln in) measures that: a
value above 1e9 means no digit of the answer survives, and the step is refused
with an explanation; above 1e5 it is kept with a warning in the derivation (both
declared in solvers.tolerances.CONDITIONING).
"""

from __future__ import annotations

import math

import numpy as np
from chalk.solvers.tolerances import CONDITIONING
from chalk.symbolic.errors import IllConditioned


def elasticities(evaluator, env: dict, inputs, value: float) -> dict[str, float]:
    """d ln(answer) / d ln(input) for each positive input, by a one-sided difference."""
    out = {}
    for name in inputs:
        x = env.get(name)
        if not isinstance(x, float) or x <= 0:
            continue
        trial = dict(env)
        trial[name] = x * (1 + CONDITIONING.step)
        try:
            with np.errstate(all="ignore"):
                moved = float(evaluator(trial))
        except (ArithmeticError, ValueError, TypeError):
            continue
        if moved > 0 and math.isfinite(moved):
            out[name] = (math.log(moved) - math.log(value)) / math.log1p(CONDITIONING.step)
        else:
            out[name] = math.inf
    return out


def check(name: str, relation: str, evaluator, env: dict, inputs, value: float) -> str:
    """A warning note, or "" ; raises IllConditioned when no digit of the answer survives."""
    if value <= 0:
        return ""
    found = elasticities(evaluator, env, inputs, value)
    if not found:
        return ""
    worst_input, worst = max(found.items(), key=lambda item: abs(item[1]))
    if abs(worst) >= CONDITIONING.refuse:
        raise IllConditioned(name, f"relation {relation} barely depends on it here, so rounding in "
                         f"{worst_input} swamps it (elasticity {abs(worst):.2g}); pin {name} "
                         "or use values further from saturation")
    if abs(worst) >= CONDITIONING.warn:
        return (f"ill-conditioned: a relative change in {worst_input} moves {name} "
                f"{abs(worst):.2g} times as much, so trailing digits are not meaningful")
    return ""
