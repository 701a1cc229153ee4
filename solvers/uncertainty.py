"""Propagating ranges and distributions through a solve plan.

The plan, compiled once, is evaluated on numpy samples of every uncertain pin
(Monte Carlo); each result gets a median and a 90% interval. Where the answer
is smooth in the inputs a first-order (Jacobian, in log space) interval is
given beside it; where a regime boundary falls inside the ranges that estimate
is withheld and the derivation says so. A one-at-a-time sensitivity ranking
says which pins drive each result's spread.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from chalk.solvers.execute import CompiledPlan
from chalk.solvers.pinned import Pin
from chalk.solvers.vectorised import evaluate
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


def _element_by_element(step) -> bool:
    """Whether a compiled step has no vectorised path (solvers.vectorised)."""
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

    A plan with a step that has to be solved element by element (no closed form, or a
    block torn at several quantities) is timed on a few samples first; if the whole run
    would take longer than ``UNCERTAINTY_BUDGET`` seconds, the default sample count is
    lowered to fit and the result says so, rather than running silently for minutes.
    A sample count asked for explicitly is kept.
    """
    adaptive = samples is None
    samples = DEFAULT_SAMPLES if samples is None else samples
    uncertain = {n: p.spread for n, p in pins.items() if p.spread is not None}
    nominal = {n: p.value for n, p in pins.items()}
    requested = samples
    if adaptive and any(_element_by_element(step) for step in compiled.steps):
        pilot = min(PILOT_SAMPLES, samples)
        trial = dict(nominal)
        pilot_rng = np.random.default_rng(seed)
        for name, spread in uncertain.items():
            trial[name] = spread.sample(pilot_rng, pilot)
        start = time.perf_counter()
        evaluate(compiled, trial, regime, pilot)
        per_sample = (time.perf_counter() - start) / pilot
        # the one-at-a-time sensitivity runs evaluate up to SENSITIVITY_SAMPLES more each
        affordable = int(UNCERTAINTY_BUDGET / max(per_sample, 1e-9) / (1 + len(uncertain)))
        samples = max(MIN_SAMPLES, min(samples, affordable))
    rng = np.random.default_rng(seed)
    drawn = dict(nominal)
    for name, spread in uncertain.items():
        drawn[name] = spread.sample(rng, samples)
    result = evaluate(compiled, drawn, regime, samples)

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
    if result.scalar_steps:
        propagation.notes.append("solved element by element (no closed form): "
                                 + ", ".join(result.scalar_steps))

    sens_size = min(samples, SENSITIVITY_SAMPLES)  # never more than the main run
    one_at_a_time = {}
    for name, spread in uncertain.items():
        trial = dict(nominal)
        trial[name] = spread.sample(np.random.default_rng(seed + 1), sens_size)
        one_at_a_time[name] = evaluate(compiled, trial, regime, sens_size).values
    smooth = not mixed and not result.failed and not result.ambiguous
    linear = _linear(compiled, nominal, uncertain, targets, regime) if smooth else {}

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


def _log_derivatives(compiled, nominal, names, regime, step=1e-4):
    """Every quantity at the nominal point and d ln(quantity) / d ln(pin) for each of
    ``names`` (central differences, one vectorised evaluation); NaN where undefined."""
    size = 1 + 2 * len(names)
    trial = {k: np.full(size, v) for k, v in nominal.items()}
    for i, name in enumerate(names):
        trial[name][1 + 2 * i] *= math.exp(step)
        trial[name][2 + 2 * i] *= math.exp(-step)
    values = evaluate(compiled, trial, regime, size).values
    out = {}
    with np.errstate(all="ignore"):
        for target, v in values.items():
            up, down = v[1::2], v[2::2]
            ok = np.isfinite(up) & np.isfinite(down) & (up > 0) & (down > 0)
            slopes = np.where(ok, (np.log(np.where(ok, up, 1.0))
                                   - np.log(np.where(ok, down, 1.0))) / (2 * step), np.nan)
            out[target] = (v[0], dict(zip(names, slopes.tolist(), strict=True)))
    return out


def _linear(compiled, nominal, uncertain, targets, regime):
    """First-order interval from log-space derivatives at the nominal point."""
    derivatives = _log_derivatives(compiled, nominal, list(uncertain), regime)
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
