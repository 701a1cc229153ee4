"""The registry of strategies that solve a simultaneous block, and what a search found.

Every way the engine solves a block is an entry of :data:`REGISTRY`, a
:class:`Strategy` with its name, whether it is complete (finding no solution proves there
is none in its domain, and finding one proves it unique there) and its function; a
derivation says "numeric block" only when every strategy a block used is complete, and
"numeric block (multi-start)" otherwise (solvers.execution.blocks). Settings are declared
in solvers.tolerances.

A block torn at some of its quantities (solvers.execution.tearing) is solved, regime
combination by regime combination, by one of three strategies chosen by how many
quantities are torn (role ``"regime"``; each is called as ``solve(branch, env, guesses,
ranges, reference)``):

closed form
    Nothing is torn (the regime makes the block triangular): the relations are solved
    one after another by their closed forms. Complete: the one solution, or none.
scan
    One quantity is torn: its residual is scanned over the quantity's plausible range
    (``Variable.plausible_range``) and every sign change bracketed and refined
    (``SCAN``). Complete over that range: finding none proves there is none there, and
    finding one proves it unique there.
newton multi-start
    Two or more are torn: Newton in log space (scipy.optimize.root) from the typical
    values and from random starts around them (``NEWTON``); if none reaches a solution,
    the solution at the model's reference point is followed to the pins (a homotopy,
    ``CONTINUATION``). Not complete: a start that reaches no solution proves nothing,
    and other solutions may exist that no start reached; the derivation says so.

When those find no physical solution, two rescues (role ``"rescue"``, registered by
solvers.execution.blocks, each with its own call) try further:

placeholders moved
    The block has quantities that cancel from the answer, held at arbitrary values at
    which it may have no solution: they are solved for with the block, by least squares
    from the model's reference point. Not complete.
flat family member
    A solution off its bounds lies on a family the relations leave free along one
    direction: the free tears are put back at their typical values and the rest solved
    again. Not complete: a failure proves nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from chalk.solvers.execution.numeric import follow_path, roots_scalar, solve_tears
from chalk.solvers.tolerances import SCAN

CLOSED_FORM = "closed form"
SCAN_1D = "scan"
NEWTON_MULTI_START = "newton multi-start"
PLACEHOLDERS_MOVED = "placeholders moved"
FLAT_MEMBER = "flat family member"


@dataclass(frozen=True)
class Strategy:
    """One way of solving (part of) a simultaneous block.

    Attributes
    ----------
    name : str
    complete : bool
        Whether its search is exhaustive over its domain: finding no solution proves
        there is none, finding one proves it unique.
    role : {"regime", "rescue"}
        ``"regime"``: solves one regime combination of a torn block, called as
        ``solve(branch, env, guesses, ranges, reference)`` and returning a
        :class:`Search`; ``"rescue"``: tried on a block when those found no physical
        solution, with its own call (see the module docstring).
    solve : callable
    """

    name: str
    complete: bool
    role: str
    solve: Callable


REGISTRY: dict[str, Strategy] = {}


def register(name: str, complete: bool, role: str = "regime"):
    """Enter the decorated function in :data:`REGISTRY` as the strategy ``name``."""
    def entered(function):
        if name in REGISTRY:
            raise ValueError(f"strategy {name!r} is registered twice")
        REGISTRY[name] = Strategy(name, complete, role, function)
        return function
    return entered


@dataclass(frozen=True)
class Search:
    """What one strategy found for one regime combination of a block.

    Attributes
    ----------
    solutions : every solution found, each a scope (the environment and the block's values).
    complete : whether the search is exhaustive (over the torn quantity's plausible range),
        so that no solution proves there is none and one solution that it is unique; only
        a search by a complete strategy may claim it.
    strategy : the name of the :data:`REGISTRY` entry that searched.
    note : how the search went, in words for the derivation.
    """

    solutions: tuple[dict[str, float], ...]
    complete: bool
    strategy: str
    note: str

    def __post_init__(self):
        if self.strategy not in REGISTRY:
            raise ValueError(f"unknown strategy {self.strategy!r}; one of "
                             f"{tuple(REGISTRY)}")
        if self.complete and not REGISTRY[self.strategy].complete:
            raise ValueError(f"a search by {self.strategy!r} cannot be complete")


def strategy_for(tears) -> str:
    """The name of the strategy that solves a regime combination torn at ``tears``."""
    if not tears:
        return CLOSED_FORM
    return SCAN_1D if len(tears) == 1 else NEWTON_MULTI_START


def solve_branch(branch, env: dict, guesses: Mapping[str, float],
                 ranges: Mapping[str, tuple[float, float]],
                 reference: Mapping[str, float] | None = None) -> Search:
    """Every solution the strategy for ``branch``'s tears finds (see the module
    docstring for the arguments)."""
    return REGISTRY[strategy_for(branch.tears)].solve(branch, env, guesses, ranges, reference)


def search_range(variable) -> tuple[float, float]:
    """Where a scan looks for ``variable``, in base units: its plausible range, reaching
    ``SCAN.margin`` (in ln x) past each end so that a root on a declared bound is
    bracketed."""
    low, high = variable.plausible_range()
    widen = math.exp(SCAN.margin)
    return low * variable.to_base / widen, high * variable.to_base * widen


@register(CLOSED_FORM, complete=True)
def closed_form(branch, env: dict, guesses=None, ranges=None, reference=None) -> Search:
    """The block's values from its closed forms in sequence (nothing torn)."""
    scope = branch.complete(env, {})
    defined = all(not math.isnan(scope[name]) for name, _ in branch.sequence)
    return Search((scope,) if defined else (), True, CLOSED_FORM,
                  "in this regime the relations are solved one after another by their "
                  "closed forms")


@register(SCAN_1D, complete=True)
def scan_tear(branch, env: dict, guesses: Mapping[str, float],
              ranges: Mapping[str, tuple[float, float]], reference=None) -> Search:
    """:func:`scan` of the one torn quantity over its range, from its guess."""
    name = branch.tears[0]
    return scan(branch, env, name, ranges[name], guesses[name])


def scan(branch, env: dict, name: str, span: tuple[float, float], guess: float) -> Search:
    """Every solution with the one torn quantity ``name`` in ``span`` (base units).

    A sign change whose torn residual is above ``SCAN.root_accept`` (up to
    ``SCAN.loose_accept``) may be a badly conditioned root: closed forms through a
    cancellation leave it noisy although the block is not. It is kept only if refining it
    on all the block's relations brings each within ``SCAN.accept``; across a pole that
    refinement fails, and the candidate is dropped.
    """
    def f(log_x):
        return branch.residual(env, {name: math.exp(log_x)})[0]

    def why_undefined(log_x):
        return branch.first_undefined(env, {name: math.exp(log_x)})

    note = f"every root of {name} in its plausible range bracketed and refined (brentq)"
    low, high = span
    roots = roots_scalar(f, low, high, why_undefined=why_undefined, accept=SCAN.loose_accept)
    if not roots:
        # A residual that is zero wherever it is defined: any value of the tear
        # satisfies the block. Hold the tear at its guess; whether anything asked for
        # depends on it is decided at the solution (solvers.analysis.at_solution.open_at).
        probe = [f(g) for g in np.linspace(math.log(low), math.log(high), SCAN.flat_points)]
        finite = [abs(v) for v in probe if math.isfinite(v)]
        if finite and max(finite) < SCAN.flat_below:
            return Search((branch.complete(env, {name: guess}),), True, SCAN_1D,
                          f"{name} held at its typical value: every value of it in its "
                          "plausible range solves the relations")
    solutions = []
    for root in roots:
        scope = branch.polish(env, branch.complete(env, {name: root}))
        clean = abs(branch.residual(env, {name: root})[0]) < SCAN.root_accept
        if clean or _holds(branch, env, scope, SCAN.accept):
            solutions.append(scope)
    return Search(tuple(solutions), True, SCAN_1D, note)


@register(NEWTON_MULTI_START, complete=False)
def newton_multi_start(branch, env: dict, guesses: Mapping[str, float], ranges=None,
                       reference: Mapping[str, float] | None = None) -> Search:
    """Solutions that Newton in log space reaches from several starts (two or more tears);
    failing that, the one a path from ``reference`` (base-unit values of every quantity,
    where the model's relations hold) leads to."""
    note = ("scipy.optimize.root from several starts, in log space; other solutions may "
            "exist that no start reached")
    found = solve_tears(lambda values: branch.residual(env, values), branch.tears, guesses)
    if found:
        return Search(tuple(branch.polish(env, branch.complete(env, values))
                            for values in found), False, NEWTON_MULTI_START, note)
    # Guesses far from the answer can push the closed forms off their domain (a
    # difference going negative); then solve every relation of the block at once.
    full = solve_tears(lambda values: branch.all_residuals(env, values), branch.variables,
                       guesses)
    if full or not reference or not all(reference.get(n, 0) > 0 for n in branch.variables):
        return Search(tuple({**env, **values} for values in full), False, NEWTON_MULTI_START,
                      note)
    followed = follow_path(branch.all_residuals, branch.variables, env, reference,
                           {n: reference[n] for n in branch.variables})
    return Search(() if followed is None else ({**env, **followed},), False,
                  NEWTON_MULTI_START,
                  "no start of scipy.optimize.root reached a solution; this one was followed "
                  "from the model's reference point to the pins (a homotopy); other "
                  "solutions may exist")


def _holds(branch, env: dict, scope: dict, tolerance: float) -> bool:
    """Every relation of the block within ``tolerance`` (relative) at ``scope``."""
    values = {n: scope[n] for n in branch.variables}
    return all(math.isfinite(r) and abs(r) <= tolerance
               for r in branch.all_residuals(env, values))

