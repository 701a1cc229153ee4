"""Balance points and optima found numerically (SciPy) on top of the solve plan.

Every function plans its question once, then evaluates the compiled plan as a
vectorised function of one quantity: a grid brackets every sign change or
constraint boundary, and ``brentq`` / ``minimize_scalar`` refine them. Results
say which root is physical and which constraint is active.

The searches live in one module each (:mod:`.curve` holds what they share); this
package's names are the public face.
"""

from chalk.applications.optimize.batch import (
    CheapestBatch,
    LargestBatch,
    cheapest_batch,
    largest_batch,
)
from chalk.applications.optimize.crossover import Crossover, crossover
from chalk.applications.optimize.curve import GRID, Curve, minimize_in_log
from chalk.applications.optimize.fast import FastMode, fast_mode
from chalk.applications.optimize.slo import SLO_OBJECTIVES, SloOptimum, best_under_slo

__all__ = ["GRID", "SLO_OBJECTIVES", "CheapestBatch", "Crossover", "Curve", "FastMode",
           "LargestBatch", "SloOptimum", "best_under_slo", "cheapest_batch", "crossover",
           "fast_mode", "largest_batch", "minimize_in_log"]
