"""How much more the observations scatter than their stated uncertainties say, and
what that does to the intervals when asked to (``scale_by_dispersion``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def p_value(chi2: float, dof: int) -> float | None:
    """chi-squared's upper tail on ``dof`` degrees of freedom (None without any).

    ``scipy.special.chdtrc`` is ``scipy.stats.chi2.sf`` without loading scipy.stats."""
    from scipy.special import chdtrc

    return float(chdtrc(dof, chi2)) if dof > 0 else None


@dataclass(frozen=True)
class Dispersion:
    """How much more the observations scatter than their stated uncertainties say.

    ``ratio`` is chi-squared over its degrees of freedom: of every residual under least
    squares; under a robust loss of the inliers only (``|z|`` within ``outlier_z``; the
    outliers are what the loss set aside), their count less the rank as the degrees of
    freedom. ``p_value`` is chi-squared's upper tail there (None without redundancy).
    """

    ratio: float
    dof: int
    p_value: float | None
    inliers: int
    robust: bool = False

    @classmethod
    def of(cls, z: np.ndarray, rank: int, loss: str, outlier_z: float) -> Dispersion:
        kept = z if loss == "linear" else z[np.abs(z) <= outlier_z]
        dof = len(kept) - rank
        chi2 = float(np.sum(kept ** 2))
        return cls(chi2 / dof if dof > 0 else 1.0, dof, p_value(chi2, dof), len(kept),
                   loss != "linear")

    def widening(self, scale: bool) -> float:
        """What interval half-widths in the log are multiplied by: the square root of
        the dispersion when asked to scale and it is above 1, else 1."""
        return float(np.sqrt(self.ratio)) if scale and self.ratio > 1 else 1.0

    def notes(self, widen: float, scale: bool) -> list[str]:
        """What the report says of the scatter, and of the scaling if asked for."""
        if self.p_value is None:
            return (["intervals not scaled: no degrees of freedom left to measure the "
                     "dispersion"] if scale else [])
        among = (f" among the {self.inliers} observations within the outlier band"
                 if self.robust else "")
        out = []
        if self.p_value < 0.01:
            out.append(f"the observations scatter more than their stated uncertainties allow"
                       f"{among}: chi-squared / dof = {self.ratio:.3g} (p = {self.p_value:.2g})"
                       + ("" if widen > 1 else "; the intervals take the uncertainties as "
                          "stated, so they are likely too narrow: look at the outliers, or "
                          "fit with scale_by_dispersion = true (--scale-intervals)"))
        if widen > 1:
            out.append(f"intervals scaled by the dispersion: every half-width in the log is "
                       f"multiplied by sqrt({self.ratio:.3g}) = {widen:.3g} (chi-squared / "
                       f"dof on {self.dof} degree{'s' if self.dof != 1 else ''} of freedom"
                       f"{among})")
        elif scale:
            out.append(f"intervals not scaled: the dispersion {self.ratio:.3g} is not above 1")
        return out


