"""From a solved fit to what is reported: each parameter's estimate, or what the
observations say of it when they do not identify it, and each observation's residual."""

from __future__ import annotations

import math

import numpy as np

from chalk.applications.fit.estimate import BOUND_ATOL, Solved
from chalk.applications.fit.identify import simple
from chalk.applications.fit.result import Estimate, Residual
from chalk.applications.fit.system import System
from chalk.symbolic.printing.expressions import monomial_text
from chalk.symbolic.uncertain import Z90

INFORMS = 1e-9  # |d ln prediction / d ln parameter| above this: the observation informs it


def residuals_of(spec, system, solved, outlier_z, repeats) -> list[Residual]:
    """Every observation against the fit, a repeat (:func:`merge_repeats`) with the
    residual of the observation it repeats and saying which that is."""
    predicted = np.exp(system.predict(solved.x))
    position = {o.index: i for i, o in enumerate(system.spec.observations)}
    out = []
    for o in spec.observations:
        i = position[repeats.get(o.index, o.index)]
        variable = system.model.variables[o.quantity]
        z = float(solved.residuals[i])
        out.append(Residual(o.index, o.quantity, o.subject, o.value / variable.to_base,
                            float(predicted[i]) / variable.to_base, variable.pint_unit,
                            z, abs(z) > outlier_z, o.text, o.source, o.date,
                            repeats.get(o.index)))
    return out


def _widened(center: float, end: float | None, widen: float, bound: float) -> float | None:
    """An interval end (ln) with its distance from the estimate times ``widen``, kept
    within the prior's bound (ln)."""
    if end is None:
        return None
    moved = center + (end - center) * widen
    return min(moved, bound) if end >= center else max(moved, bound)


def estimate_of(system: System, solved: Solved, k: int, widen: float) -> Estimate:
    x = solved.x
    p = system.parameters[k]
    informed = tuple(int(i) for i in np.nonzero(np.abs(solved.jacobian[:, k]) > INFORMS)[0])
    prior = p.prior.describe()
    bounds = [math.log(b) if p.prior.kind in ("uniform", "loguniform") else s * math.inf
              for b, s in ((p.prior.a, -1), (p.prior.b, 1))]

    def shown(v):
        return None if v is None else math.exp(v) / p.to_base

    if solved.identification.identified[k]:
        ends = [_widened(x[k], e.value, widen, b)
                for e, b in zip(solved.intervals[k], bounds, strict=True)]
        notes = [n for side in (0, 1)
                 if (n := _end_note(system, solved, k, side, ends[side], bounds[side]))]
        return Estimate(p.name, p.quantity, p.group, True, shown(x[k]), shown(ends[0]),
                        shown(ends[1]), p.unit, solved.methods[k], prior, informed,
                        notes=tuple(notes))
    if k not in solved.ridges:
        return _flat(system, solved, k, prior, informed, bounds)
    return _combination(system, solved, k, prior, informed, widen)


def _end_note(system, solved, k, side, end, bound) -> str:
    """What an interval end says beyond its value: unbounded, or a prior's bound and which
    way the observations push there."""
    p = system.parameters[k]
    which, beyond = ("lower", "below") if side == 0 else ("upper", "above")
    if end is None:
        reach = math.exp(solved.intervals[k][side].searched)
        return (f"not bounded {beyond} within the searched range: the profile does not rise "
                f"by {Z90:.4g}^2 within a factor {reach:.3g} of the estimate")
    if not math.isfinite(bound) or abs(end - bound) >= BOUND_ATOL:
        return ""
    shown = _format(math.exp(bound) / p.to_base, p.unit)
    if abs(solved.x[k] - bound) < BOUND_ATOL:
        push = _data_slope(system, solved, k)
        outward = push < 0 if side == 1 else push > 0
        if outward:
            return (f"the estimate is the prior's {which} bound {shown}: the observations "
                    f"want it {beyond} the prior's {which} bound")
    return (f"the {which} end is the prior's bound {shown}: the observations do not bound "
            f"it {beyond} within the prior")


def _data_slope(system: System, solved: Solved, k: int) -> float:
    """d/d ln theta_k of the observations' weighted sum of squares at the estimate."""
    column = solved.jacobian[:, k] / system.sigma
    return float(2 * np.sum(solved.weights * solved.residuals * column))


def _format(value: float, unit) -> str:
    from chalk.symbolic.printing.quantities import format_quantity

    return format_quantity(value, unit)


def _flat(system, solved, k, prior, informed, bounds) -> Estimate:
    """A parameter no observation depends on at the estimate: what the observations alone
    still say of it on each side (a step compute-bound at the estimate would turn
    memory-bound below some bandwidth)."""
    p = system.parameters[k]
    ends = [e.value if e.value is not None and abs(e.value - b) >= BOUND_ATOL else None
            for e, b in zip(solved.intervals[k], bounds, strict=True)]
    values = [None if v is None else math.exp(v) / p.to_base for v in ends]
    if values == [None, None]:
        statement = (f"no observation depends on it within its prior's range; only its "
                     f"prior ({prior}) speaks for it")
    elif values[1] is None:
        statement = (f"bounded below by about {_format(values[0], p.unit)}: a lower value "
                     "would change the observations; not above (no observation depends on "
                     "it there)")
    elif values[0] is None:
        statement = (f"bounded above by about {_format(values[1], p.unit)}: a higher value "
                     "would change the observations; not below (no observation depends on "
                     "it there)")
    else:
        statement = (f"flat at the estimate, but the observations keep it between about "
                     f"{_format(values[0], p.unit)} and {_format(values[1], p.unit)}")
    return Estimate(p.name, p.quantity, p.group, False, None, values[0], values[1], p.unit,
                    solved.methods[k], prior, informed, statement=statement)


def _combination(system, solved, k, prior, informed, widen) -> Estimate:
    """An unidentified parameter with a candidate combination, as its ridge walk found
    it: fixed, locally fixed (with where it holds), or not identified at all."""
    x, cov = solved.x, solved.covariance
    p = system.parameters[k]
    combo = solved.identification.combinations[k]
    ridge = solved.ridges[k]
    honest = simple(combo.values())
    names = {system.parameters[j].name: e for j, e in combo.items()}
    text = monomial_text(names) if honest else _tangent_text(names)

    def span(lo, hi):
        return (f"{p.name} from {_format(math.exp(lo) / p.to_base, p.unit)} to "
                f"{_format(math.exp(hi) / p.to_base, p.unit)}")

    if ridge.status == "not identified" or (ridge.status == "locally fixed" and not honest):
        statement = (f"not identified: the observations fix only a curve through "
                     f"{', '.join(sorted(system.parameters[j].name for j in combo))}, "
                     f"not a product of powers; {text}, its tangent at the estimate, moves "
                     f"by a factor "
                     f"{math.exp(ridge.moved):.3g} along it ({span(*ridge.walked)})")
        if ridge.status == "locally fixed":
            statement += f"; it holds within a tenth of its sd only for {span(*ridge.holds)}"
        return Estimate(p.name, p.quantity, p.group, False, None, None, None, p.unit,
                        "not identified", prior, informed, statement=statement)
    vector = np.zeros(len(x))
    unit = 1
    for j, e in combo.items():
        vector[j] = e
        unit = unit * system.parameters[j].unit ** e
    log_value = sum(e * (x[j] - math.log(system.parameters[j].to_base))
                    for j, e in combo.items())
    half = Z90 * math.sqrt(max(float(vector @ cov @ vector), 0.0)) * widen
    value, low, high = (math.exp(log_value + d) for d in (0.0, -half, half))
    unit = getattr(unit, "units", unit)
    shown = f"{_format(value, unit)} ({_format(low, unit)} to {_format(high, unit)}, " \
            "Jacobian (near-linear))"
    if ridge.status == "fixed":
        statement = (f"only {text} is fixed, = {shown}; checked along the observations' "
                     f"ridge for {span(*ridge.walked)}")
    else:
        statement = (f"only {text} is locally fixed, = {shown}: it holds for "
                     f"{span(*ridge.holds)}; further along the observations' ridge it "
                     f"moves (by a factor {math.exp(ridge.moved):.3g} for "
                     f"{span(*ridge.walked)})")
    return Estimate(p.name, p.quantity, p.group, False, value, low, high, unit,
                    "Jacobian (near-linear)", prior, informed, text, statement=statement,
                    fixed=ridge.status)


def _tangent_text(exponents: dict[str, float]) -> str:
    """A product of powers whose exponents are measured slopes, not fractions: each to
    three digits (``a/b^0.0867``)."""
    def term(name, e):
        return name if abs(abs(e) - 1) < 1e-12 else f"{name}^{abs(e):.3g}"

    up = "·".join(term(n, e) for n, e in exponents.items() if e > 0) or "1"
    down = [term(n, e) for n, e in exponents.items() if e < 0]
    if not down:
        return up
    return f"{up}/" + (down[0] if len(down) == 1 else f"({'·'.join(down)})")
