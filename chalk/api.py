"""The Python API: pins in, pint Quantities and a derivation out.

>>> from chalk import solve
>>> s = solve("hbm_drain_time", given={"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"})
>>> round(s.value("hbm_drain_time", "ms"), 6)
14.4

:func:`solve` and :func:`explain` are the entry points. Both ask through the engine's one
entry, :func:`chalk.compiled.compile_question`: :func:`solve` runs the compiled question
once at the pins as given and raises only here, at the edge, from the
:class:`~chalk.solution.Outcome`'s refusal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from chalk.compiled import compile_question
from chalk.options import (
    DEFAULT_RTOL,
    REGIMES,
    RTOL_LIMITS,
    SAMPLE_LIMITS,
    Options,
)
from chalk.preparation import Given, Prepared, load_presets, prepare, resolve
from chalk.solution import Explanation, Outcome, Solution
from chalk.solvers.execution.symbolic_solve import DEFAULT_TIMEOUT
from chalk.symbolic.errors import NoSolution
from chalk.symbolic.model import Model

# Names kept here for callers of the API, though defined in the modules it stands on
__all__ = ["DEFAULT_RTOL", "REGIMES", "RTOL_LIMITS", "SAMPLE_LIMITS", "Explanation", "Options",
           "Prepared", "Solution", "explain", "load_presets", "prepare", "resolve", "solve"]


def explain(targets: str | Sequence[str], given: Given = (), presets=(), *,
            model: Model | None = None) -> Explanation:
    """The plan and diagnosis for a question, without computing numbers."""
    q = compile_question(targets, given, presets, model=model).prepared
    return Explanation(q.model, q.plan, q.pins, q.notes, q.conventions)


def solve(targets: str | Sequence[str], given: Given = (), presets=(), *,
          regime: str | None = None, rtol: float = DEFAULT_RTOL,
          timeout: float = DEFAULT_TIMEOUT, model: Model | None = None,
          samples: int | None = None, seed: int = 0, prefer: str = "stated",
          drop: Iterable[str] = ()) -> Solution:
    """Solve for ``targets`` from pins and presets.

    Parameters
    ----------
    targets : str or sequence of str
        Quantity names (or aliases) to determine.
    given : mapping or iterable of "NAME=VALUE UNIT"
        Pins: text such as ``"3.35 TB/s"``, pint Quantities from ``chalk.ureg``,
        or plain numbers for dimensionless quantities.
    presets : str or sequence of str
        Preset names applied before ``given`` (``lecture``, ``h100``, ...).
    regime : str, optional
        ``"compute-bound"`` or ``"memory-bound"`` to resolve a max(...) that
        both regimes could satisfy.
    rtol : float
        Relative tolerance for cross-checks of surplus pins, between 0 and 1.
    timeout : float
        Seconds (positive) allowed for any one symbolic solve before falling back
        to a numeric one.
    model : Model, optional
        Another set of relations (default: the knowledge base).
    samples, seed : int
        Monte Carlo samples and random seed, used when a pin is a range or a
        distribution (``"100e9..300e9 param"``, ``"2 TB/s ±10%"``): 100 to 10,000,000
        samples, by default 100,000, fewer (and said) if a step with no closed form
        would take too long; a seed of 0 or more.
    prefer : {"stated", "derived"}
        For a target a preset or the conventions state a value for (``chip_flops``
        with ``--preset h100``): answer with the statement (default) or with what the
        other pins derive where they give a value. The other is shown beside it as a
        cross-check, and a disagreement is named, not raised.
    drop : iterable of str
        Quantities whose preset or convention values are left out, to see what the
        remaining pins imply for them or through them.

    Returns
    -------
    Solution

    Raises
    ------
    ChalkError
        Subclasses name the problem: unknown name, wrong dimension,
        under-determined (with the pins that would complete it), inconsistent
        pins (with the relation and both values), no or several physical values;
        :class:`~chalk.symbolic.errors.UsageError` for an argument outside what is
        accepted above, naming it.
    """
    options = Options(regime=regime, rtol=rtol, timeout=timeout, prefer=prefer,
                      samples=samples, seed=seed)
    question = compile_question(targets, given, presets, model=model, drop=drop,
                                options=options)
    return _with_reachable_bound(question.outcome(), question).result()


def _with_reachable_bound(outcome: Outcome, question) -> Outcome:
    """``outcome``, its refusal naming the most the user's figures can reach where there
    is no physical value (:mod:`chalk.reachable`): a bound asked of the shipped relations
    at single values, so not with another model, dropped values or ranged pins."""
    error, asked = outcome.error, question.arguments
    if (not isinstance(error, NoSolution) or asked["model"] is not None or asked["drop"]
            or any(p.spread is not None for p in question.prepared.pins.values())):
        return outcome
    from chalk.reachable import reachable_bounds

    bound = reachable_bounds(solve, question.model, question.prepared, asked["given"],
                             asked["presets"], question.options)
    if not bound:
        return outcome
    return replace(outcome, error=NoSolution(error.name, f"{error.reason}; {bound}",
                                             error.after_search))
