"""Uncertain values: ranges and distributions a pin may carry instead of one number.

Text forms (read by :func:`symbolic.parsing.parse_spread`)::

    100e9..300e9 param        a range: log-uniform for scale-like quantities, else uniform
    100e9 param ±50%          uniform within ±50% (also written +-50%)
    loguniform(1 ms, 1 s)     uniform(a, b)      normal(mean, sd)      lognormal(median, sigma)

``sigma`` of a lognormal is the standard deviation of the natural log (no unit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

KINDS = ("uniform", "loguniform", "normal", "lognormal")
Z90 = 1.6448536269514722  # standard normal quantile at 95%


@dataclass(frozen=True)
class Spread:
    """A distribution of base-unit values; ``a``/``b`` depend on ``kind``.

    uniform, loguniform: low and high. normal: mean and standard deviation.
    lognormal: median and sigma (of the natural log).
    """

    kind: str
    a: float
    b: float
    text: str = ""

    @property
    def nominal(self) -> float:
        """The value used for the point derivation: mid-point (geometric for log kinds)."""
        if self.kind == "uniform":
            return (self.a + self.b) / 2
        if self.kind == "loguniform":
            return math.sqrt(self.a * self.b)
        return self.a  # normal mean, lognormal median

    @property
    def log_sd(self) -> float:
        """Standard deviation of ln(value), for first-order propagation."""
        if self.kind == "loguniform":
            return (math.log(self.b) - math.log(self.a)) / math.sqrt(12)
        if self.kind == "lognormal":
            return self.b
        if self.kind == "uniform":
            return (self.b - self.a) / math.sqrt(12) / self.nominal
        return self.b / self.a

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        if self.kind == "uniform":
            return rng.uniform(self.a, self.b, size)
        if self.kind == "loguniform":
            return np.exp(rng.uniform(math.log(self.a), math.log(self.b), size))
        if self.kind == "normal":
            return rng.normal(self.a, self.b, size)
        return np.exp(rng.normal(math.log(self.a), self.b, size))

    def quantile(self, q: float) -> float:
        """The value below which a fraction ``q`` (0 < q < 1) of the distribution lies."""
        if self.kind == "uniform":
            return self.a + q * (self.b - self.a)
        if self.kind == "loguniform":
            return math.exp(math.log(self.a) + q * (math.log(self.b) - math.log(self.a)))
        z = NormalDist().inv_cdf(q)
        if self.kind == "normal":
            return self.a + z * self.b
        return self.a * math.exp(z * self.b)

    def describe(self) -> str:
        words = {"uniform": "uniform", "loguniform": "log-uniform", "normal": "normal",
                 "lognormal": "log-normal"}
        return f"{words[self.kind]} {self.text}".strip()

    def interval(self) -> tuple[float, float]:
        """What the pin claims: a range's whole width, a distribution's central 90%."""
        if self.kind in ("uniform", "loguniform"):
            return self.a, self.b
        if self.kind == "normal":
            return self.a - Z90 * self.b, self.a + Z90 * self.b
        return self.a * math.exp(-Z90 * self.b), self.a * math.exp(Z90 * self.b)

    def bounds(self) -> tuple[float, float]:
        """Values every sample lies within (central 99.99% for unbounded kinds)."""
        if self.kind in ("uniform", "loguniform"):
            return self.a, self.b
        if self.kind == "normal":
            return self.a - 4 * self.b, self.a + 4 * self.b
        return self.a * math.exp(-4 * self.b), self.a * math.exp(4 * self.b)
