"""chalk: deduce how LLMs are trained and served from public numbers.

The public Python API. Pin what you know, ask for what you don't::

    import chalk
    s = chalk.solve("critical_batch_size", presets="lecture", given={"sparsity_factor": 8})
    s["critical_batch_size"]      # <Quantity(2400.0, 'sequence')>
    print(s.derivation.text())    # every relation used, values substituted

Quantities are pint Quantities from ``chalk.ureg``; errors are ``chalk.ChalkError``.

Beyond one solve, a few tools answer the questions the lecture asks of whole curves:
``sweep`` and ``plot`` (a quantity over a range of one pin), ``crossover`` and
``cheapest_batch`` (where two costs balance, the best batch under a latency budget),
``compute_optimal`` and ``lifetime_optimum`` (model size against data under a scaling
law), ``tier_table`` and ``tier_costs`` (memory tiers for a KV cache), ``imply``
(what a provider's price sheet implies), ``fit`` (the unknowns most consistent with
many noisy observations, with intervals, outliers and what they cannot fix) and
``calibrate`` (serving efficiencies fitted to published measurements, with predictions).

The package is laid out in layers: :mod:`chalk.symbolic` (units, parsing, relations,
printing), :mod:`chalk.solvers` (the generic engine: structure, rank, plans, blocks,
uncertainty, derivations), :mod:`chalk.knowledge` (the lecture's relations and sourced
data), and on top the API (:mod:`chalk.api`, :mod:`chalk.question`), the applications
(:mod:`chalk.applications`), reports (:mod:`chalk.report`) and the command line
(:mod:`chalk.cli`). The names below load on first use, so ``import chalk`` is cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# public name -> (module, attribute)
_EXPORTS = {
    "ChalkError": ("chalk.symbolic.errors", "ChalkError"),
    "Explanation": ("chalk.api", "Explanation"),
    "Q_": ("chalk.symbolic.units", "Q_"),
    "Question": ("chalk.question", "Question"),
    "Solution": ("chalk.api", "Solution"),
    "explain": ("chalk.api", "explain"),
    "model": ("chalk.knowledge", "load_model"),
    "solve": ("chalk.api", "solve"),
    "ureg": ("chalk.symbolic.units", "ureg"),
    # curves of one pin
    "sweep": ("chalk.applications.sweep", "sweep"),
    "plot": ("chalk.applications.plots", "plot"),
    # optima and balance points
    "crossover": ("chalk.applications.optimize", "crossover"),
    "cheapest_batch": ("chalk.applications.optimize", "cheapest_batch"),
    "compute_optimal": ("chalk.applications.chinchilla", "compute_optimal"),
    "lifetime_optimum": ("chalk.applications.chinchilla", "lifetime_optimum"),
    # memory tiers and price sheets
    "tier_table": ("chalk.applications.tiers", "tier_table"),
    "tier_costs": ("chalk.applications.tiers", "tier_costs"),
    "imply": ("chalk.applications.imply", "imply"),
    "compare": ("chalk.applications.comparison", "compare"),
    # joint inference from many noisy observations
    "fit": ("chalk.applications.fit", "fit"),
    "atlas": ("chalk.applications.atlas", "atlas"),
    # efficiencies calibrated to published serving measurements
    "calibrate": ("chalk.applications.calibrate", "calibrate"),
}

__all__ = [
    "ChalkError", "Explanation", "Q_", "Question", "Solution", "atlas", "calibrate",
    "cheapest_batch", "compare", "compute_optimal", "crossover", "explain", "fit", "imply",
    "lifetime_optimum", "model", "plot", "solve", "sweep", "tier_costs", "tier_table", "ureg",
]

if TYPE_CHECKING:  # pragma: no cover
    from chalk.api import Explanation, Solution, explain, solve
    from chalk.applications.atlas import atlas
    from chalk.applications.calibrate import calibrate
    from chalk.applications.chinchilla import compute_optimal, lifetime_optimum
    from chalk.applications.comparison import compare
    from chalk.applications.fit import fit
    from chalk.applications.imply import imply
    from chalk.applications.optimize import cheapest_batch, crossover
    from chalk.applications.plots import plot
    from chalk.applications.sweep import sweep
    from chalk.applications.tiers import tier_costs, tier_table
    from chalk.knowledge import load_model as model
    from chalk.question import Question
    from chalk.symbolic.errors import ChalkError
    from chalk.symbolic.units import Q_, ureg


def __getattr__(name: str):
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'chalk' has no attribute {name!r}") from None
    value = getattr(import_module(module), attribute)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
