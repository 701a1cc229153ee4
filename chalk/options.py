"""How a question is solved, and the arguments of a question checked.

:class:`Options` is the one set of solving options every path uses (``chalk.solve``, the
compiled question, sweeps, fits, reports); :func:`checked_arguments` holds a question's
arguments to what the command line accepts, with one :class:`~chalk.symbolic.errors.UsageError`
naming the first that is not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from numbers import Integral, Real

from chalk.solvers.execution.symbolic_solve import DEFAULT_TIMEOUT
from chalk.solvers.tolerances import PINS
from chalk.symbolic.errors import UsageError
from chalk.symbolic.presets import Preset

DEFAULT_RTOL = PINS.agreement_rtol  # pins from public sources are rounded


DEFAULT_RTOL = PINS.agreement_rtol  # pins from public sources are rounded
# What solve accepts, here and on the command line (chalk.cli.main reads these)
SAMPLE_LIMITS = (100, 10_000_000)  # a 90% interval needs ~100 draws; 1e7 fit in memory


SAMPLE_LIMITS = (100, 10_000_000)  # a 90% interval needs ~100 draws; 1e7 fit in memory
RTOL_LIMITS = (0.0, 1.0)  # both open: 0 accepts no rounding, 1 accepts any two numbers


RTOL_LIMITS = (0.0, 1.0)  # both open: 0 accepts no rounding, 1 accepts any two numbers
REGIMES = ("compute-bound", "memory-bound")


REGIMES = ("compute-bound", "memory-bound")
PREFERENCES = ("stated", "derived")



@dataclass(frozen=True)
class Options:
    """How a question is solved; the same on every path.

    Attributes
    ----------
    regime : str, optional
        ``"compute-bound"`` or ``"memory-bound"``: the side of a max() to take where
        both could hold.
    rtol : float
        Relative tolerance of the cross-checks of surplus pins.
    timeout : float
        Seconds allowed for any one symbolic solve.
    prefer : {"stated", "derived"}
        For a target a preset states: answer with the statement or the derivation.
    samples, seed : int
        Monte Carlo samples and seed for ranged pins.
    """

    regime: str | None = None
    rtol: float = DEFAULT_RTOL
    timeout: float = DEFAULT_TIMEOUT
    prefer: str = "stated"
    samples: int | None = None
    seed: int = 0



def _is_whole(value) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)



def _is_real(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)



def _names(argument: str, names, single: bool):
    """``names`` as a list (a single name as it is, if ``single``); UsageError unless it
    is a list of names."""
    if isinstance(names, str) and single:
        return names
    one = "a quantity name or " if single else ""
    if isinstance(names, (str, Mapping)) or not isinstance(names, Iterable):
        raise UsageError(f"{argument} must be {one}a list of quantity names, not "
                         f"{_shown(names)}")
    names = list(names)  # read once: a generator is empty the second time
    if not all(isinstance(n, str) for n in names):
        raise UsageError(f"{argument} must be {one}a list of quantity names (text)")
    return names



def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."



def _pin_value(name: str, value) -> None:
    """Refuse a whole number (alone or as a Quantity's magnitude) no float can hold."""
    if isinstance(value, str):
        return  # text: the parser reads it (and refuses a number past a float's range)
    magnitude = getattr(value, "magnitude", value)
    if _is_whole(magnitude):
        try:
            float(magnitude)
        except OverflowError:
            raise UsageError(f"given {name}={_shown(magnitude)} is too large for a "
                             f"floating-point number (at most about 1.8e308)") from None



def check_question(targets, given, presets) -> tuple:
    """``(targets, given, presets)`` read once each (lists for iterables), or UsageError
    naming the argument and what it accepts, for what :func:`solve` and :func:`explain`
    cannot read (the engine would fail on it with a bare TypeError or OverflowError)."""
    targets = _names("targets", targets, single=True)
    pins = "given must be a mapping {name: value} or a list of \"NAME=VALUE UNIT\" texts"
    if isinstance(given, Mapping):
        items = list(given.items())
    elif isinstance(given, Iterable) and not isinstance(given, str):
        given = list(given)
        items = [item for item in given if not isinstance(item, str)]
        if not all(isinstance(item, tuple) and len(item) == 2 for item in items):
            raise UsageError(pins)
    else:
        raise UsageError(f"{pins}, not {_shown(given)}")
    for name, value in items:
        if not isinstance(name, str):
            raise UsageError(f"{pins}: the name {_shown(name)} is not text")
        _pin_value(name, value)
    if presets is None or isinstance(presets, (str, Preset)):
        return targets, given, presets
    presets = list(presets) if isinstance(presets, Iterable) else None
    if presets is None or not all(isinstance(p, (str, Preset)) for p in presets):
        raise UsageError("presets must be a preset name or a list of them")
    return targets, given, presets



def check_options(regime, rtol, timeout, samples, seed, prefer, drop) -> list[str]:
    """``drop`` as a list, or UsageError for an option the command line would refuse (the
    same choices and limits) or the engine could not use."""
    if regime is not None and regime not in REGIMES:
        raise UsageError(f"regime must be None, {' or '.join(map(repr, REGIMES))}, not "
                         f"{_shown(regime)}")
    if prefer not in PREFERENCES:
        raise UsageError(f"prefer must be {' or '.join(map(repr, PREFERENCES))}, not "
                         f"{_shown(prefer)}")
    low, high = RTOL_LIMITS
    if not _is_real(rtol) or not low < rtol < high:
        raise UsageError(f"rtol must be a number between {low:g} and {high:g} (both "
                         f"excluded), not {_shown(rtol)}")
    if not _is_real(timeout) or not 0 < timeout < math.inf:
        raise UsageError(f"timeout must be a positive number of seconds, not "
                         f"{_shown(timeout)}")
    low, high = SAMPLE_LIMITS
    if samples is not None and (not _is_whole(samples) or not low <= samples <= high):
        raise UsageError(f"samples must be a whole number from {low:,} to {high:,}, not "
                         f"{_shown(samples)}")
    if not _is_whole(seed) or seed < 0:
        raise UsageError(f"seed must be a whole number, 0 or more, not {_shown(seed)}")
    return _names("drop", drop, single=False)



def checked_arguments(targets, given, presets, options: Options, drop=()):
    """The arguments of a question, each checked as :func:`solve` checks them.

    Returns
    -------
    targets, given, presets, drop
        With iterators read once into lists.

    Raises
    ------
    UsageError
        Naming the first argument outside what is accepted.
    """
    targets, given, presets = check_question(targets, given, presets)
    drop = check_options(options.regime, options.rtol, options.timeout, options.samples,
                    options.seed, options.prefer, drop)
    return targets, given, presets, drop
