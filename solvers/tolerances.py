"""Every numerical tolerance and search setting of the engine, declared once.

Each group is a frozen dataclass whose fields document what they control; the
engine reads these instances and has no tolerance literals of its own. Change a
value here, and every strategy that uses it follows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReferenceOptions:
    """Finding a consistent reference point (solvers.reference).

    seed, spread : the typical values are nudged by ``exp(N(0, spread))`` drawn
        with ``seed``, so that the point is generic (no two terms balanced by chance).
    atol : largest ``|ln lhs - ln rhs|`` accepted as holding.
    max_iterations : Gauss-Newton iterations before giving up.
    dense_limit : above this many quantities the steps use a sparse least-squares solver.
    derived_weight : cost of moving a derived quantity relative to an input (squared
        log moves), so the point stays near the typical inputs.
    max_log : largest ``|ln x|`` (base units) a trial point may reach.
    sparse_iterations, sparse_max_iterations : above ``dense_limit``, the iterations of
        each sparse least-squares step and the number of Gauss-Newton steps: a large
        model gets an approximate point cheaply (``converged`` says which).
    """

    seed: int = 0
    spread: float = 0.1
    atol: float = 1e-12
    max_iterations: int = 60
    dense_limit: int = 400
    derived_weight: float = 1e-6
    max_log: float = 600.0
    sparse_iterations: int = 200
    sparse_max_iterations: int = 4


@dataclass(frozen=True)
class RankOptions:
    """Rank decisions in log space (solvers.rank).

    rtol : a floating-point entry (from a relation that is not a product of powers)
        counts as zero when it is below ``rtol`` times the largest entry that went
        into it. Exact rows (products of powers) are compared with zero exactly.
    pivot_threshold : a floating-point pivot must be at least this fraction of the
        largest eligible entry of its row (threshold partial pivoting).
    rtol_at, null_component : at a solution, singular values below ``rtol_at`` times the
        largest count as zero, and a target whose share of a null direction is above
        ``null_component`` is not fixed there.
    exact_block_limit : blocks of products of powers up to this size are tested for
        singularity in exact fractions; larger ones in floating point at ``rtol``.
    max_completion_size : the largest set of extra pins suggested.
    max_completions : how many of the smallest sets are listed.
    """

    rtol: float = 1e-9
    pivot_threshold: float = 1e-3
    exact_block_limit: int = 12
    rtol_at: float = 1e-9
    null_component: float = 1e-6
    max_completion_size: int = 3
    max_completions: int = 6


@dataclass(frozen=True)
class ScanOptions:
    """The one-dimensional scan of a torn quantity (complete over its plausible range).

    points : grid points over the quantity's plausible range, evenly spaced in log.
    bisections : halvings of each bracketed sign change (60 reach double precision
        over any range a grid step spans).
    accept : largest relative residual of any relation of the block at an accepted
        solution.
    """

    points: int = 241
    bisections: int = 60
    accept: float = 1e-9


REFERENCE = ReferenceOptions()
SCAN = ScanOptions()
RANK = RankOptions()
