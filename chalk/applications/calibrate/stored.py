"""A calibration written to a file and read back, so predictions need no refit.

The file (YAML) holds what a prediction uses: the groups and how many measurements each
was fitted to, the posterior mode ``theta``
and its covariance, the scatter and its degrees of freedom, the stated prior width, and
which efficiencies each group's rows informed. It is read strictly
(:func:`chalk.knowledge.files.load_yaml`), every field checked: a covariance that is not
symmetric positive definite, an efficiency above 1 or a length that does not match the
groups is refused with the file and the field named.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chalk.applications.calibrate.fit import Fitted, family_of
from chalk.applications.calibrate.predict import LEVEL, Prediction
from chalk.applications.calibrate.rows import ARCHITECTURES, EFFICIENCIES
from chalk.symbolic.errors import DataError

# 2: the rows of each group (group_rows), which a calibrated answer names; 3: three
# efficiencies (scale_up_bandwidth_efficiency joined the two), so theta and informed grew;
# 4: a scatter per architecture (scatters), which a format-3 reader would not know
FORMAT = 4
KEYS = ("format", "level", "rows", "groups", "group_rows", "families", "prior_width",
        "scatter_log_sd", "degrees_of_freedom", "scatters", "theta", "covariance",
        "informed")
SCATTER_KEYS = ("architecture", "scatter_log_sd", "degrees_of_freedom")
GROUP = re.compile(r"^[a-z][a-z0-9_]*/[a-z][a-z0-9_]*(/dense|/moe)?$")
MAX_GROUPS = 1000
SYMMETRY = 1e-9  # relative asymmetry of a covariance written by chalk (it writes it exact)


@dataclass(frozen=True)
class StoredCalibration:
    """A calibration read from a file: enough to predict (see :meth:`predict`)."""

    fitted: Fitted
    groups: tuple[str, ...]
    rows: int
    group_rows: Mapping[str, int]  # the measurements each group was fitted to
    source: str = "given"  # where it came from, as a calibrated answer names it

    def predict(self, target: str, given=(), presets=(), group: str | None = None
                ) -> Prediction:
        """As :meth:`chalk.applications.calibrate.Calibration.predict`."""
        from chalk.applications.calibrate.calibration import predict_question

        return predict_question(self.fitted, self.groups, target, given, presets, group)


def dumps(calibration) -> bytes:
    """The file's text for ``calibration`` (a Calibration), UTF-8."""
    import yaml

    f = calibration.fitted
    data = {"format": FORMAT, "level": LEVEL, "rows": len(calibration.rows),
            "groups": list(calibration.groups),
            "group_rows": [calibration.group_rows[g] for g in calibration.groups],
            "families": list(f.families),
            "prior_width": float(f.prior_width),
            "scatter_log_sd": float(f.sigma), "degrees_of_freedom": float(f.dof),
            "scatters": [dict(zip(SCATTER_KEYS, (a, float(sd), float(d)), strict=True))
                         for a, sd, d in f.scatters],
            "theta": [float(v) for v in f.theta],
            "covariance": [[float(v) for v in row] for row in f.covariance],
            "informed": [[bool(v) for v in row] for row in f.informed]}
    header = ("# A chalk calibration (chalk calibrate --save): efficiencies per chip/engine in "
              "log space,\n# read by chalk calibrate --calibration FILE; docs/CALIBRATE.md\n")
    return (header + yaml.safe_dump(data, sort_keys=False)).encode("utf-8")


def read(path: str | Path) -> StoredCalibration:
    """A calibration file, checked (see the module docstring).

    Raises
    ------
    DataError
        Naming the file and the field at fault.
    """
    from chalk.knowledge import files

    return parse(files.load_yaml(path), files.shown_name(path), str(path))


def loads(text: str, shown: str, source: str) -> StoredCalibration:
    """A calibration from the text :func:`dumps` writes, checked as :func:`read` checks a
    file (``shown`` names the text in an error; ``source`` says where it came from)."""
    from chalk.knowledge import files

    return parse(files.parse_yaml(text, shown), shown, source)


def parse(raw: object, shown: str, source: str) -> StoredCalibration:
    """A calibration from its YAML data, checked (see the module docstring)."""
    from chalk.knowledge import fields

    if not isinstance(raw, Mapping):
        raise DataError(shown, "-", "-", "expected a calibration written by chalk calibrate "
                                         "--save")
    fields.known_keys(raw, KEYS, shown, "-", None)
    for key in KEYS:
        if key not in raw:
            raise DataError(shown, "-", key, "missing; write the file with chalk calibrate "
                                             "--save")
    if raw["format"] != FORMAT:
        raise DataError(shown, "-", "format", f"this chalk reads format {FORMAT}, not "
                                              f"{fields.describe(raw['format'])}")
    if raw["level"] != LEVEL:
        raise DataError(shown, "-", "level", f"expected {LEVEL}, the level chalk predicts at")
    groups = fields.listing(raw["groups"], shown, "-", "groups", "chip/engine names")
    if len(groups) > MAX_GROUPS or not all(isinstance(g, str) and GROUP.match(g)
                                           for g in groups):
        raise DataError(shown, "-", "groups", f"expected at most {MAX_GROUPS} names such as "
                                              "'h200/tensorrt_llm'")
    if len(set(groups)) != len(groups):
        raise DataError(shown, "-", "groups", "a group is named twice")
    rows = _number(raw, "rows", shown, low=3)
    counts = raw["group_rows"]
    if not (isinstance(counts, list) and len(counts) == len(groups)
            and all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in counts)
            and sum(counts) == rows):
        raise DataError(shown, "-", "group_rows", f"expected {len(groups)} whole numbers, one "
                                                  f"per group, adding up to rows ({rows:g})")
    width = _number(raw, "prior_width", shown, low=0)
    sigma = _number(raw, "scatter_log_sd", shown, low=0, strict=True)
    dof = _number(raw, "degrees_of_freedom", shown, low=1)
    fitted_groups = tuple(groups) if width > 0 else ()
    kinds = sorted({family_of(g) for g in fitted_groups} - {None})
    families = tuple(kinds[1:])
    if raw["families"] != list(families):
        raise DataError(shown, "-", "families", f"expected {list(families)}: the "
                                                "architectures of the groups but the first")
    count = len(EFFICIENCIES)
    size = count * (1 + len(fitted_groups) + len(families))
    theta = _vector(raw["theta"], size, shown, "theta")
    covariance = np.array([_vector(r, size, shown, "covariance")
                           for r in fields.listing(raw["covariance"], shown, "-", "covariance",
                                                   "rows of numbers")])
    if covariance.shape != (size, size):
        raise DataError(shown, "-", "covariance", f"expected {size} rows of {size} numbers")
    if not np.allclose(covariance, covariance.T, rtol=SYMMETRY, atol=0):
        raise DataError(shown, "-", "covariance", "not symmetric")
    try:
        np.linalg.cholesky(covariance)
    except np.linalg.LinAlgError:
        raise DataError(shown, "-", "covariance", "not positive definite") from None
    informed = fields.listing(raw["informed"], shown, "-", "informed",
                              f"lists of {count} true/false")
    if len(informed) != max(len(fitted_groups), 1) or not all(
            isinstance(p, list) and len(p) == count and all(isinstance(v, bool) for v in p)
            for p in informed):
        raise DataError(shown, "-", "informed", f"expected {max(len(fitted_groups), 1)} lists "
                                                f"of {count} true/false, one per group")
    fitted = Fitted(fitted_groups, theta, covariance, sigma, dof, width, np.zeros(0),
                    np.zeros((0, count)), np.array(informed, dtype=bool), families,
                    _scatters(raw["scatters"], shown))
    for group in (None, *fitted_groups):
        if (fitted.log_efficiency(group) > 0).any():
            raise DataError(shown, "-", "theta", f"{group or 'the shared value'} has an "
                                                 "efficiency above 1")
    return StoredCalibration(fitted, tuple(groups), int(rows),
                             dict(zip(groups, counts, strict=True)), source)


def _scatters(raw, shown: str) -> tuple[tuple[str, float, float], ...]:
    """The scatter of each architecture: none (one scatter for every row), or one for each
    of two or more architectures in sorted order, each positive on at least 1 degree of
    freedom."""
    from chalk.knowledge import fields

    entries = fields.listing(raw, shown, "-", "scatters", "entries of " + ", ".join(
        SCATTER_KEYS))
    out = []
    for entry in entries:
        if not isinstance(entry, Mapping) or sorted(entry) != sorted(SCATTER_KEYS) \
                or entry["architecture"] not in ARCHITECTURES:
            raise DataError(shown, "-", "scatters", "expected entries of " + ", ".join(
                SCATTER_KEYS) + f", each architecture one of {', '.join(ARCHITECTURES)}")
        out.append((entry["architecture"],
                    _number(entry, "scatter_log_sd", shown, low=0, strict=True),
                    _number(entry, "degrees_of_freedom", shown, low=1)))
    names = [a for a, _, _ in out]
    if len(out) == 1 or names != sorted(set(names)):
        raise DataError(shown, "-", "scatters", "expected none, or one entry for each of two "
                                                "or more architectures in sorted order")
    return tuple(out)


def _number(raw: Mapping, key: str, shown: str, low: float, strict: bool = False) -> float:
    value = raw[key]
    ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
          and math.isfinite(value) and (value > low if strict else value >= low))
    if not ok:
        limit = f"more than {low:g}" if strict else f"at least {low:g}"
        raise DataError(shown, "-", key, f"expected a number {limit}")
    return float(value)


def _vector(value, size: int, shown: str, key: str) -> np.ndarray:
    ok = (isinstance(value, Sequence) and not isinstance(value, str) and len(value) == size
          and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                  for v in value))
    if not ok:
        raise DataError(shown, "-", key, f"expected {size} finite numbers")
    return np.array(value, dtype=float)
