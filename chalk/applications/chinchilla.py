"""Training vs inference compute: the real optimum next to the lecture's heuristic.

With a Chinchilla-form loss fit L(N, D) = E + A/N^alpha + B/D^beta, the
compute-optimal split of a pre-training budget C = 6ND minimises L; with a
lifetime of serving, the optimum minimises pre-training plus serving compute
for a target loss (the question of Sardana et al. 2023, "Beyond
Chinchilla-Optimal"). The lecture instead sets the two costs equal. Both are
solved here through the knowledge base's relations, the optimum with SciPy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from chalk.applications.optimize import Curve, minimize_in_log
from chalk.symbolic.errors import BeyondSearch, NoSolution
from chalk.symbolic.printing.readable import Readable


@dataclass(repr=False)
class Optimum(Readable):
    params: float
    tokens: float
    loss: float
    compute: float  # total FLOP the objective counts
    label: str

    @property
    def tokens_per_param(self) -> float:
        return self.tokens / self.params

    def text(self) -> str:
        return self.line()

    def line(self) -> str:
        return (f"{self.label}: N = {self.params:.4g} param, D = {self.tokens:.4g} token "
                f"({self.tokens_per_param:.3g} token/param), loss {self.loss:.4g}, "
                f"compute {self.compute:.4g} FLOP")


def compute_optimal(compute_flops: float, fit: str = "besiroglu2024",
                    bounds: tuple[float, float] = (1e6, 1e15)) -> Optimum:
    """The model size and data that minimise a fitted loss at a fixed training budget.

    Parameters
    ----------
    compute_flops : float
        The pre-training budget in FLOP, spent as 6 x active params x tokens.
    fit : str
        A scaling-law preset (``"besiroglu2024"``, ``"hoffmann2022"``).
    bounds : (float, float)
        The range of active parameters searched.

    Returns
    -------
    Optimum
        ``params``, ``tokens``, ``tokens_per_param``, the predicted ``loss`` and the
        ``compute``; ``line()`` prints it.

    Raises
    ------
    BeyondSearch
        The optimum lies at or beyond an end of ``bounds``.
    NoSolution
        A loss that is not a finite number (a budget too small to train on).
    ChalkError
        A budget that is not positive.
    """
    curve = Curve(["loss", "pretrain_tokens"], "active_params",
                   {"train_flops": f"{compute_flops!r} FLOP"}, [fit])
    n = minimize_in_log(lambda size: curve(size)["loss"][0], *bounds, "active_params", "param",
                        f"the compute-optimal model for {compute_flops:.4g} FLOP ({fit})",
                        minimised="the loss")
    v = curve(n)
    if not all(math.isfinite(float(v[k][0])) for k in ("loss", "pretrain_tokens")):
        raise NoSolution("active_params", f"the loss at {compute_flops:.4g} FLOP ({fit}) is not "
                                          "a finite number: the budget is too small to train on")
    return Optimum(n, float(v["pretrain_tokens"][0]), float(v["loss"][0]), compute_flops,
                   f"compute-optimal ({fit})")


@dataclass(repr=False)
class Lifetime(Readable):
    optimum: Optimum
    heuristic: Optimum
    fit: str

    @property
    def excess(self) -> float:
        """How much more compute the equal-cost heuristic spends than the optimum."""
        return self.heuristic.compute / self.optimum.compute - 1

    def text(self) -> str:
        return "\n".join([
            self.optimum.line(), self.heuristic.line(),
            f"the equal-cost heuristic spends {100 * self.excess:.3g}% more compute than the "
            f"optimum for the same loss ({self.fit})"])


def lifetime_optimum(target_loss: float, inference_tokens: float, fit: str = "besiroglu2024",
                     decode_inefficiency: float = 1.0,
                     bounds: tuple[float, float] = (1e6, 1e15)) -> Lifetime:
    """The cheapest model over its life for a target loss, beside the lecture's heuristic.

    The optimum minimises pre-training plus serving compute along the curve of models
    that reach ``target_loss``; the heuristic sets serving compute equal to pre-training
    compute instead.

    Parameters
    ----------
    target_loss : float
        The loss both answers must reach under ``fit``.
    inference_tokens : float
        Tokens served over the model's life.
    fit : str
        A scaling-law preset (``"besiroglu2024"``, ``"hoffmann2022"``).
    decode_inefficiency : float
        How many times a served token's 2N FLOP it costs in training-equivalent compute.
    bounds : (float, float)
        The range of active parameters searched.

    Returns
    -------
    Lifetime
        ``optimum`` and ``heuristic`` (each an ``Optimum``) and ``excess``, the share of
        extra compute the heuristic spends; ``text()`` prints them.

    Raises
    ------
    NoSolution
        A target loss at or below the fit's irreducible loss.
    BeyondSearch
        The optimum (or the smallest model that reaches the loss) lies beyond ``bounds``.
    """
    from chalk.api import solve

    pins = {"loss": f"{target_loss!r}", "inference_tokens": f"{inference_tokens!r} token",
            "decode_inefficiency": f"{decode_inefficiency!r}"}
    curve = Curve(["pretrain_tokens", "train_flops", "inference_compute"], "active_params",
                   pins, [fit])

    def total(n):
        v = curve(n)
        value = v["train_flops"][0] + v["inference_compute"][0]
        # a size that cannot reach the loss scores far above any real log-compute (a
        # finite stand-in: the bounded search interpolates between its values)
        return math.log(value) if math.isfinite(value) and value > 0 else 1e6

    # Below some size no amount of data reaches the loss: search above it.
    e, a, alpha = (curve.base[k] for k in ("fit_e", "fit_a", "fit_alpha"))
    if target_loss <= e:
        raise NoSolution("active_params", f"loss {target_loss} is below the fit's floor E = {e}")
    question = (f"the cheapest model over its life reaching loss {target_loss:g} with "
                f"{inference_tokens:.4g} tokens served ({fit})")
    n_min = (a / (target_loss - e)) ** (1 / alpha) * 1.000001
    if n_min >= bounds[1]:
        raise BeyondSearch("active_params", "above", f"{bounds[1]:.4g} param",
                           f"{question}: reaching the loss needs at least {n_min:.4g} param")
    low = max(bounds[0], n_min)
    # the low end is a search bound only where it is not the size that reaches the loss
    n = minimize_in_log(total, low, bounds[1], "active_params", "param", question,
                        edges=("below", "above") if low == bounds[0] else ("above",),
                        minimised="the lifetime compute")
    v = curve(n)
    if not all(math.isfinite(float(v[k][0])) for k in v):
        raise NoSolution("active_params", f"{question}: the compute at the best size found "
                                          "is not a finite number")
    optimum = Optimum(n, float(v["pretrain_tokens"][0]), target_loss,
                      float(v["train_flops"][0] + v["inference_compute"][0]),
                      "optimum of pre-training + serving compute")
    h = solve(["active_params", "pretrain_tokens", "train_flops", "inference_compute"],
              {**pins, "inference_cost_ratio": "1"}, [fit])
    heuristic = Optimum(h.value("active_params", "param"), h.value("pretrain_tokens", "token"),
                        target_loss, h.value("train_flops", "FLOP")
                        + h.value("inference_compute", "FLOP"),
                        "lecture heuristic (serving compute = pre-training compute)")
    return Lifetime(optimum, heuristic, fit)
