"""What a fit reports: estimates with intervals and how they were obtained, what the
observations cannot fix, and each observation's residual."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from chalk.symbolic.printing.quantities import format_quantity, format_unit
from chalk.symbolic.printing.readable import Readable


@dataclass(frozen=True)
class Estimate:
    """One parameter: its estimate and 90% interval in ``unit`` (an end None where the
    profile did not rise within the searched range), or, if the observations do not
    identify it, what they say of it: the combination they fix (``combination`` names
    it, ``fixed`` says "fixed" or "locally fixed"; ``value`` and the interval are then
    the combination's), or the side they bound it from (``low`` or ``high``).
    ``statement`` says which in words."""

    name: str
    quantity: str
    group: str
    identified: bool
    value: float | None
    low: float | None
    high: float | None
    unit: object
    method: str
    prior: str
    informed_by: tuple[int, ...] = ()  # indices of the observations that depend on it
    combination: str = ""
    notes: tuple[str, ...] = ()
    statement: str = ""  # an unidentified parameter: what the observations say of it
    fixed: str = ""  # "fixed" or "locally fixed" when ``combination`` is given

    def shown(self, x: float | None) -> str:
        return "not bounded" if x is None else format_quantity(x, self.unit)

    def to_dict(self) -> dict:
        out = {"name": self.name, "quantity": self.quantity, "group": self.group,
               "identified": self.identified, "method": self.method, "prior": self.prior,
               "informed_by": list(self.informed_by), "unit": format_unit(self.unit)}
        if self.identified:
            out.update(value=self.value, low=self.low, high=self.high)
        else:
            out["value"] = None
            out["fixed"] = ({"combination": self.combination, "status": self.fixed,
                             "value": self.value, "low": self.low, "high": self.high}
                            if self.combination else None)
            if not self.combination:
                out.update(low=self.low, high=self.high)
            out["statement"] = self.statement
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass(frozen=True)
class Residual:
    """One observation against the fit: ``z`` is (ln predicted - ln observed) over the
    standard deviation of the observation's log. ``repeats`` is the index of the
    observation this one repeats (same source, value and question), counted once with
    it; None otherwise."""

    index: int
    quantity: str
    subject: str
    observed: float
    predicted: float
    unit: object
    z: float
    outlier: bool
    text: str
    source: str = ""
    date: str = ""
    repeats: int | None = None

    def to_dict(self) -> dict:
        return {"index": self.index, "quantity": self.quantity, "subject": self.subject,
                "observed": self.observed, "predicted": self.predicted,
                "unit": format_unit(self.unit), "z": self.z, "outlier": self.outlier,
                "value": self.text, "source": self.source, "date": self.date,
                "repeats": self.repeats}


@dataclass(frozen=True, repr=False)
class FitResult(Readable):
    """A fit's outcome (:func:`chalk.fit`)."""

    title: str
    estimates: tuple[Estimate, ...]
    residuals: tuple[Residual, ...]
    loss: str
    outlier_z: float
    chi2: float
    dof: int
    p_value: float | None
    rank: int
    notes: tuple[str, ...] = field(default_factory=tuple)
    evaluations: int = 0
    dispersion: float = 1.0  # chi-squared / dof (of the inliers under a robust loss)
    interval_scale: float = 1.0  # what the log half-widths were multiplied by

    def __getitem__(self, name: str) -> Estimate:
        for e in self.estimates:
            if e.name == name:
                return e
        raise KeyError(f"{name} is not a parameter of this fit (parameters: "
                       f"{', '.join(e.name for e in self.estimates)})")

    @property
    def outliers(self) -> tuple[Residual, ...]:
        return tuple(r for r in self.residuals if r.outlier)

    @property
    def counted(self) -> int:
        """How many observations the fit counted (repeats once)."""
        return sum(r.repeats is None for r in self.residuals)

    def to_dict(self) -> dict:
        return {"title": self.title, "loss": self.loss, "outlier_z": self.outlier_z,
                "chi2": self.chi2, "dof": self.dof, "p_value": self.p_value,
                "rank": self.rank, "interval": "90%", "dispersion": self.dispersion,
                "interval_scale": self.interval_scale,
                "estimates": [e.to_dict() for e in self.estimates],
                "residuals": [r.to_dict() for r in self.residuals],
                "outliers": [r.index for r in self.outliers], "notes": list(self.notes)}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def text(self) -> str:
        identified = [e for e in self.estimates if e.identified]
        lines = [f"fit: {self.title}"] if self.title else []
        fit = (f"chi-squared {self.chi2:.3g} on {self.dof} degrees of freedom"
               + (f" (p = {self.p_value:.2g})" if self.p_value is not None else ""))
        once = (f" ({self.counted} counted, repeats once)"
                if self.counted < len(self.residuals) else "")
        lines.append(f"{len(self.residuals)} observations{once}, {len(self.estimates)} "
                     f"parameters ({len(identified)} identified), loss {self.loss}; {fit}")
        if identified:
            lines += ["", "estimates (90% intervals)"]
            width = max(len(e.name) for e in identified)
            for e in identified:
                lines.append(f"  {e.name:<{width}}  {e.shown(e.value)}  "
                             f"({e.shown(e.low)} to {e.shown(e.high)})  {e.method}")
                lines.append(f"  {'':<{width}}  {self._informed(e)}; prior {e.prior}")
                lines.extend(f"  {'':<{width}}  note: {n}" for n in e.notes)
        missing = [e for e in self.estimates if not e.identified]
        if missing:
            lines += ["", "not identified (no estimate given)"]
            lines.extend(f"  {e.name}: {e.statement}" for e in missing)
        lines += ["", f"residuals (z = (ln predicted - ln observed) / sd of ln observed; "
                      f"outlier beyond {self.outlier_z:g})"]
        for r in self.residuals:
            where = f"{r.quantity}@{r.subject}" if r.subject else r.quantity
            flag = "  OUTLIER" if r.outlier else ""
            if r.repeats is not None:
                flag += f"  (repeats [{r.repeats}], counted once)"
            lines.append(f"  [{r.index}] {where}: observed {format_quantity(r.observed, r.unit)}"
                         f", fitted {format_quantity(r.predicted, r.unit)}, "
                         f"z = {r.z:+.2f}{flag}")
        lines += [""] + [f"note: {n}" for n in self.notes]
        return "\n".join(lines).rstrip()

    def _informed(self, e: Estimate) -> str:
        quantities = sorted({self.residuals[i].quantity for i in e.informed_by})
        count = len(e.informed_by)
        return (f"from {count} observation{'s' if count != 1 else ''} of "
                f"{', '.join(quantities)}")

    def __str__(self) -> str:
        return self.text()

    def figure(self):
        """The residual plot: each observation's z with the outlier bands."""
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=110)
        ax.set_title(self.title or "fit residuals", fontsize=11)
        ax.grid(True, axis="x", alpha=0.25)
        labels = [f"[{r.index}] {r.quantity}" + (f"@{r.subject}" if r.subject else "")
                  for r in self.residuals]
        zs = [r.z for r in self.residuals]
        colours = ["tab:red" if r.outlier else "tab:blue" for r in self.residuals]
        positions = range(len(zs))
        ax.barh(list(positions), zs, color=colours)
        ax.set_yticks(list(positions))
        ax.set_yticklabels(labels, fontsize=7 if len(zs) < 40 else 5)
        ax.invert_yaxis()
        for edge in (-self.outlier_z, self.outlier_z):
            ax.axvline(edge, color="tab:red", linestyle="--", linewidth=0.8)
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set_xlabel("residual z = (ln fitted - ln observed) / sd of ln observed")
        limit = max([self.outlier_z + 1] + [abs(z) * 1.1 for z in zs if math.isfinite(z)])
        ax.set_xlim(-limit, limit)
        fig.set_size_inches(7.5, max(3.0, 0.22 * len(zs) + 1.2))
        return fig
