"""Propagating ranges and distributions through a solve plan.

The plan, compiled once, is evaluated on numpy samples of every uncertain pin
(Monte Carlo); each result gets a median and a 90% interval. Where the answer
is smooth in the inputs a first-order (Jacobian, in log space) interval is
given beside it; where a regime boundary falls inside the ranges that estimate
is withheld and the derivation says so. A one-at-a-time sensitivity ranking
says which pins drive each result's spread.

The samples are evaluated ``LONG_WORK.chunk`` at a time, so memory grows with the
pins drawn and the targets kept, not with every quantity of the plan. A run whose
measured cost (a pilot batch, timed at run time) would pass ``LONG_WORK.max_seconds``
or ``LONG_WORK.max_bytes`` is refused before it starts, with the estimate.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from chalk.solvers.bulk.limits import refuse_beyond_limits
from chalk.solvers.bulk.progress import task
from chalk.solvers.bulk.vectorised import VectorResult, evaluate
from chalk.solvers.execution.execute import CompiledPlan
from chalk.solvers.pinning.pinned import Pin
from chalk.solvers.tolerances import LONG_WORK
from chalk.symbolic.uncertain import Z90

DEFAULT_SAMPLES = 100_000
SENSITIVITY_SAMPLES = 20_000
UNCERTAINTY_BUDGET = 10.0  # seconds a range question may take before samples are lowered
PILOT_SAMPLES = 20  # samples timed to estimate that
MIN_SAMPLES = 1_000  # never lowered below this

SENSITIVITY_METHOD = (
    "Each share is one-at-a-time, not a variance decomposition: every uncertain pin is "
    "sampled alone with the others at their nominal values, w is the log-width ln(p95/p5) "
    "of the answer's 90% interval that results, and a pin's share is its w squared over "
    "the sum of every pin's w squared (interactions between pins are not counted).")


def _searched(step) -> bool:
    """Whether a compiled step may be solved element by element (solvers.bulk.vectorised): a
    relation with no closed form, or a block torn at several quantities (batched Newton,
    with its pilots and the elements it does not reach solved alone)."""
    return step.kind == "numeric" or (
        step.kind == "block" and any(len(b.tears) > 1 for b in step.block_branches))


@dataclass(frozen=True)
class Summary:
    """Spread of one result, in base units."""

    low: float
    median: float
    high: float
    linear: tuple[float, float] | None
    sensitivity: tuple[tuple[str, float], ...]
    valid_fraction: float


@dataclass
class Propagation:
    """Summaries of every target and how they were obtained."""

    summaries: dict[str, Summary]
    samples: int
    seed: int
    inputs: dict[str, str]  # pin -> description of its spread
    mixed_regimes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def method(self) -> str:
        spreads = "; ".join(f"{k}: {v}" for k, v in self.inputs.items())
        text = (f"Monte Carlo over {self.samples:,} samples (seed {self.seed}) of {spreads}; "
                "median and 5th-95th percentiles")
        if self.mixed_regimes:
            parts = [f"{k} ({' / '.join(v)})" for k, v in self.mixed_regimes.items()]
            text += "; regime changes inside the ranges: " + ", ".join(parts) + \
                    " - the linear estimate is withheld there"
        return text


def propagate(compiled: CompiledPlan, pins: Mapping[str, Pin], targets: Sequence[str],
              samples: int | None = None, seed: int = 0,
              regime: str | None = None) -> Propagation:
    """Sample the uncertain pins and summarise every target.

    A plan with a step that may be solved element by element (no closed form, or a
    block torn at several quantities) is timed on a pilot batch first; if the whole run
    would take longer than ``UNCERTAINTY_BUDGET`` seconds, the default sample count is
    lowered to fit and the result says so, rather than running silently for minutes.
    A sample count asked for explicitly is kept, unless it is above
    ``LONG_WORK.pilot_above`` and the pilot says the run would pass ``LONG_WORK``'s
    limits: then :class:`UsageError` gives the estimate and a count that fits.
    """
    adaptive = samples is None
    samples = DEFAULT_SAMPLES if samples is None else samples
    uncertain = {n: p.spread for n, p in pins.items() if p.spread is not None}
    nominal = {n: p.value for n, p in pins.items()}
    requested = samples
    seeds: dict = {}  # pilot solutions of blocks torn at several quantities, shared by runs
    sens_size = min(samples, SENSITIVITY_SAMPLES)
    if (adaptive and any(_searched(step) for step in compiled.steps)) or (
            not adaptive and samples > LONG_WORK.pilot_above):
        per_sample = _cost_per_sample(compiled, nominal, uncertain, regime, seed, seeds)
        if adaptive:
            # the one-at-a-time sensitivity runs evaluate up to SENSITIVITY_SAMPLES more each
            affordable = int(UNCERTAINTY_BUDGET / max(per_sample, 1e-9) / (1 + len(uncertain)))
            samples = max(MIN_SAMPLES, min(samples, affordable))
            sens_size = min(samples, SENSITIVITY_SAMPLES)
        else:
            where = "this block" if any(_searched(s) for s in compiled.steps) else "this plan"
            refuse_beyond_limits(f"{samples:,} samples through {where}",
                                 per_sample * (samples + sens_size * len(uncertain)),
                                 _bytes_kept(samples, uncertain, targets, compiled), samples,
                                 "use --samples {fits} or fewer")
    rng = np.random.default_rng(seed)
    drawn = dict(nominal)
    for name, spread in uncertain.items():
        drawn[name] = spread.sample(rng, samples)
    with task(f"Monte Carlo over {samples:,} samples",
              samples + sens_size * len(uncertain)) as progress:
        result = _in_chunks(compiled, drawn, regime, samples, targets, seeds, progress)
        one_at_a_time = {}
        for name, spread in uncertain.items():
            trial = dict(nominal)
            trial[name] = spread.sample(np.random.default_rng(seed + 1), sens_size)
            one_at_a_time[name] = _in_chunks(compiled, trial, regime, sens_size, targets,
                                             seeds, progress).values

    mixed = {}
    for name, labels in result.regimes.items():
        present = tuple(sorted({str(x) for x in np.unique(labels) if x}))
        if len(present) > 1:
            mixed[name] = present
    propagation = Propagation({}, samples, seed,
                              {n: s.describe() for n, s in uncertain.items()}, mixed)
    if samples < requested:
        propagation.notes.append(
            f"lowered the sample count from {requested:,} to {samples:,} to finish in about "
            f"{UNCERTAINTY_BUDGET:g} s: a step is solved element by element; ask for "
            "--samples to choose another")
    for name, count in result.failed.items():
        propagation.notes.append(f"{count:,} samples had no physical value of {name}")
    for name, count in result.ambiguous.items():
        propagation.notes.append(f"{count:,} samples had several values of {name}")
    for name, count in result.ill_conditioned.items():
        propagation.notes.append(f"{count:,} samples had no trustworthy digit of {name} "
                                 "(ill-conditioned: solve refuses them)")
    if result.scalar_steps:
        propagation.notes.append("solved element by element (no closed form): "
                                 + ", ".join(result.scalar_steps))
    for names, count in result.one_at_a_time.items():
        propagation.notes.append(f"{count:,} samples of {names} were solved one at a time "
                                 "(the search over every sample at once did not settle them)")
    smooth = (not mixed and not result.failed and not result.ambiguous
              and not result.ill_conditioned)
    linear = _linear(compiled, nominal, uncertain, targets, regime, seeds) if smooth else {}

    for target in targets:
        values = result.values[target]
        finite = values[np.isfinite(values)]
        if finite.size == 0:
            continue
        low, median, high = np.percentile(finite, [5, 50, 95])
        widths = {}
        for name in uncertain:
            v = one_at_a_time[name][target]
            v = v[np.isfinite(v) & (v > 0)]
            if v.size:
                lo, hi = np.percentile(v, [5, 95])
                widths[name] = math.log(hi / lo) if lo > 0 else 0.0
        total = sum(w * w for w in widths.values())
        ranking = tuple(sorted(((n, (w * w / total) if total else 0.0)
                                for n, w in widths.items()), key=lambda item: -item[1]))
        propagation.summaries[target] = Summary(
            float(low), float(median), float(high), linear.get(target), ranking,
            finite.size / values.size)
    return propagation


def _cost_per_sample(compiled, nominal, uncertain, regime, seed, seeds) -> float:
    """Seconds per sample of a run, measured now: ``PILOT_SAMPLES`` first (which also
    solves a block's pilot elements, once, into ``seeds``); if every step was vectorised
    there, ``LONG_WORK.pilot`` more, so that fixed costs per call are spread thin, and
    if those made the fits that predict a block's later samples (also kept in ``seeds``),
    ``LONG_WORK.pilot`` more again, timed as the run will go, with them."""
    rng = np.random.default_rng(seed + 2)

    def timed(size):
        trial = dict(nominal)
        for name, spread in uncertain.items():
            trial[name] = spread.sample(rng, size)
        start = time.perf_counter()
        result = evaluate(compiled, trial, regime, size, keep=(), seeds=seeds)
        return (time.perf_counter() - start) / size, result

    per_sample, result = timed(PILOT_SAMPLES)
    if result.scalar_steps or result.one_at_a_time:
        return per_sample
    fitted = _fits(seeds)
    per_sample = timed(LONG_WORK.pilot)[0]
    if _fits(seeds) > fitted:
        per_sample = timed(LONG_WORK.pilot)[0]
    return per_sample


def _fits(seeds) -> int:
    """How many fits ``seeds`` holds (dicts under ("fits", step) keys, beside the
    pilots' solutions under each step's index)."""
    return sum(len(fits) for key, fits in seeds.items() if isinstance(key, tuple))


def _bytes_kept(samples, uncertain, targets, compiled) -> float:
    """Memory a run holds throughout: every pin drawn and every target kept (8 bytes a
    sample each), the finite copy of one target that its percentiles sort, and a label
    (one pointer) per sample for each quantity with regimes. A chunk's working memory
    is bounded by ``LONG_WORK.chunk`` and left out."""
    labelled = sum(1 for step in compiled.steps
                   if step.regime_args or any(b.labels for b in step.block_branches)
                   or any(c.candidate.regime for c in step.candidates))
    return 8.0 * samples * (len(uncertain) + len(targets) + 1 + labelled)


def _in_chunks(compiled, drawn, regime, size, keep, seeds, progress) -> VectorResult:
    """:func:`evaluate` over ``size`` samples, ``LONG_WORK.chunk`` at a time, keeping only
    the names ``keep``; counts add up and regime labels are joined."""
    merged = VectorResult({n: np.full(size, np.nan) for n in keep})
    for start in range(0, size, LONG_WORK.chunk):
        stop = min(start + LONG_WORK.chunk, size)
        part = {k: (v[start:stop] if isinstance(v, np.ndarray) and v.ndim else v)
                for k, v in drawn.items()}
        result = evaluate(compiled, part, regime, stop - start, keep=keep, seeds=seeds)
        for name, values in result.values.items():
            merged.values[name][start:stop] = values
        for name, labels in result.regimes.items():
            merged.regimes.setdefault(name, np.full(size, "", dtype=object))[start:stop] = labels
        for total, counts in ((merged.failed, result.failed),
                              (merged.ambiguous, result.ambiguous),
                              (merged.ill_conditioned, result.ill_conditioned),
                              (merged.one_at_a_time, result.one_at_a_time)):
            for name, count in counts.items():
                total[name] = total.get(name, 0) + count
        merged.scalar_steps += [s for s in result.scalar_steps if s not in merged.scalar_steps]
        progress.advance(stop - start)
    return merged


def _log_derivatives(compiled, nominal, names, regime, step=1e-4, seeds=None):
    """Every quantity at the nominal point and d ln(quantity) / d ln(pin) for each of
    ``names`` (central differences, one vectorised evaluation); NaN where undefined.
    ``seeds`` as for :func:`solvers.bulk.vectorised.evaluate`."""
    size = 1 + 2 * len(names)
    trial = {k: np.full(size, v) for k, v in nominal.items()}
    for i, name in enumerate(names):
        trial[name][1 + 2 * i] *= math.exp(step)
        trial[name][2 + 2 * i] *= math.exp(-step)
    values = evaluate(compiled, trial, regime, size, seeds=seeds).values
    out = {}
    with np.errstate(all="ignore"):
        for target, v in values.items():
            up, down = v[1::2], v[2::2]
            ok = np.isfinite(up) & np.isfinite(down) & (up > 0) & (down > 0)
            slopes = np.where(ok, (np.log(np.where(ok, up, 1.0))
                                   - np.log(np.where(ok, down, 1.0))) / (2 * step), np.nan)
            out[target] = (v[0], dict(zip(names, slopes.tolist(), strict=True)))
    return out


def _linear(compiled, nominal, uncertain, targets, regime, seeds=None):
    """First-order interval from log-space derivatives at the nominal point."""
    derivatives = _log_derivatives(compiled, nominal, list(uncertain), regime, seeds=seeds)
    out = {}
    for target in targets:
        centre, slopes = derivatives[target]
        if not (np.isfinite(centre) and centre > 0) or not all(
                math.isfinite(e) for e in slopes.values()):
            continue
        sd = math.sqrt(sum((slopes[n] * uncertain[n].log_sd) ** 2 for n in uncertain))
        out[target] = (math.exp(math.log(centre) - Z90 * sd),
                       math.exp(math.log(centre) + Z90 * sd))
    return out


def elasticities(compiled: CompiledPlan, pins: Mapping[str, Pin], target: str,
                 step: float = 1e-4) -> list[tuple[str, float]]:
    """d ln(target) / d ln(pin) at the pins' values, for every pin that moves the target.

    An elasticity e means doubling the pin multiplies the answer by 2**e. Sorted by |e|.
    """
    names = [n for n, p in pins.items() if p.value > 0]
    nominal = {n: p.value for n, p in pins.items()}
    _, slopes = _log_derivatives(compiled, nominal, names, None, step)[target]
    out = [(n, e) for n, e in slopes.items() if math.isfinite(e) and abs(e) > 1e-6]
    return sorted(out, key=lambda item: -abs(item[1]))
