"""``chalk calibrate``: serving efficiencies fitted to the shipped measurements (or a
user's own file of them), their cross-validated scores, and calibrated predictions
(docs/CALIBRATE.md)."""

from __future__ import annotations

import json
import math

from chalk.cli.options import UsageProblem, add_pin_options, add_quiet
from chalk.cli.output import Outputs

SAVE_FORMATS = {".yaml": "yaml", ".yml": "yaml"}
MAX_PRIOR_WIDTH = 5.0  # a log-space width past this says nothing a flat prior does not


def add_parser(commands, parser_class) -> None:
    c = commands.add_parser(
        "calibrate", help="fit serving efficiencies to published measurements",
        description="Fit flops_efficiency, hbm_bandwidth_efficiency and "
                    "scale_up_bandwidth_efficiency (the all-to-all's links) per chip/engine to "
                    "the shipped serving measurements or your own (--data; partial pooling "
                    "in log space, 90% intervals), score them on measurements each fit "
                    "never saw, or predict "
                    "a rate with a 90% prediction interval.")
    c.add_argument("--data", metavar="FILE",
                   help="calibrate on your own measurements (YAML in the shipped format, "
                        "docs/CALIBRATE.md) instead of the shipped ones")
    c.add_argument("--prior-width", type=float, default=None, metavar="W",
                   help="stated standard deviation of a group's log efficiency about the "
                        "shared one (default 0.5; 0 fits one set for every group)")
    c.add_argument("--by-architecture", action="store_true",
                   help="group by chip, engine and the model's architecture (dense or moe: "
                        "h200/tensorrt_llm/moe) instead of chip and engine")
    c.add_argument("--cross-validate", choices=["row", "source", "both"],
                   help="leave out one row, one source or both in turn and score the "
                        "predictions of what was left out")
    c.add_argument("--predict", metavar="TARGET",
                   help="a rate (token/s) to predict from -g/-p at the fitted efficiencies")
    c.add_argument("--group", metavar="CHIP/ENGINE",
                   help="the calibrated group to predict with, e.g. h200/tensorrt_llm "
                        "(default: a group not calibrated)")
    c.add_argument("--save", metavar="FILE",
                   help="also write the calibration (YAML) for later predictions")
    c.add_argument("--calibration", metavar="FILE",
                   help="predict from a calibration written by --save instead of fitting")
    add_pin_options(c)
    add_quiet(c)


def run(args) -> str:
    """The output of ``chalk calibrate`` for parsed ``args``."""
    from chalk.applications.calibrate import PRIOR_WIDTH, calibrate, cross_validate
    from chalk.applications.calibrate.fit import fit_rows

    if args.predict is None and args.calibration is None and (args.group or args.given
                                                              or args.preset):
        raise UsageProblem("--group, --given and --preset describe a prediction; add "
                           "--predict TARGET")
    if args.calibration is not None:
        return _from_file(args)
    width = PRIOR_WIDTH if args.prior_width is None else args.prior_width
    if not (math.isfinite(width) and 0 <= width <= MAX_PRIOR_WIDTH):
        raise UsageProblem(f"--prior-width must be between 0 and {MAX_PRIOR_WIDTH:g}")
    outputs = Outputs([args.data] if args.data else [])  # --save never overwrites --data
    if args.save is not None:  # checked before the measurements are compiled
        outputs.declare("--save", args.save, SAVE_FORMATS)
    if args.predict is not None:
        from chalk.applications.calibrate.calibration import checked_prediction
        from chalk.applications.calibrate.rows import group_of, shipped_records

        groups = sorted({group_of(r, args.by_architecture)
                         for r in shipped_records(data=args.data)})
        checked_prediction(args.predict, args.given, args.group, groups, args.preset)
    calibration = calibrate(prior_width=width, data=args.data,
                            architecture=args.by_architecture)
    out = {"calibration": calibration}
    if args.predict is not None:
        out["prediction"] = calibration.predict(args.predict, args.given, args.preset,
                                                args.group)
    if args.cross_validate:
        schemes = ["row", "source"] if args.cross_validate == "both" else [args.cross_validate]
        pooled = fit_rows(calibration.rows, 0.0)
        out["cross_validation"] = [cross_validate(calibration.rows, width, s,
                                                  calibration.fitted, pooled)
                                   for s in schemes]
    if args.save is not None:  # last: a refused prediction leaves no file behind
        from chalk.applications.calibrate.stored import dumps

        outputs.write({args.save: dumps(calibration)})
    if args.json:
        return json.dumps({k: ([s.to_dict() for s in v] if isinstance(v, list)
                               else v.to_dict()) for k, v in out.items()}, indent=2)
    parts = [calibration.text()]
    if "prediction" in out:
        parts.append(_prediction_text(args.predict, args.group, out["prediction"]))
    parts += [s.text() for s in out.get("cross_validation", [])]
    return "\n\n".join(parts)


def _from_file(args) -> str:
    """A prediction from a calibration file: no measurement is compiled or fitted."""
    from chalk.applications.calibrate.stored import read

    clashing = [o for o, v in (("--cross-validate", args.cross_validate),
                               ("--prior-width", args.prior_width), ("--save", args.save),
                               ("--data", args.data),
                               ("--by-architecture", args.by_architecture or None))
                if v is not None]
    if clashing:
        raise UsageProblem(f"{clashing[0]} goes with a fit of the measurements; "
                           "--calibration only predicts from a stored fit")
    if args.predict is None:
        raise UsageProblem("--calibration predicts; add --predict TARGET")
    stored = read(args.calibration)
    prediction = stored.predict(args.predict, args.given, args.preset, args.group)
    if args.json:
        return json.dumps({"prediction": prediction.to_dict(), "calibration": {
            "file": args.calibration, "rows": stored.rows}}, indent=2)
    return (_prediction_text(args.predict, args.group, prediction)
            + f"\n(from {args.calibration}, fitted to {stored.rows} measurements)")


def _prediction_text(target: str, group: str | None, p) -> str:
    who = group or "a group not calibrated (shared efficiencies and their spread)"
    cut = " (cut at the bound)" if p.capped else ""
    return (f"{target} with {who}: {p.value:,.4g} token/s, 90% prediction interval "
            f"{p.low:,.4g} to {p.high:,.4g}{cut} (measurement scatter {p.scatter:.3f} and "
            f"efficiencies {p.parameter_sd:.3f} in log); bound at peak efficiencies "
            f"{p.bound:,.4g} token/s")


def solve_calibrated(args, options: dict) -> str:
    """The output of ``chalk solve ... --calibrated [CHIP/ENGINE]`` (``options`` as
    checked for ``chalk solve``)."""
    from chalk.applications.calibrate.solved import calibrated_solve, check_against_shipped

    if args.calibrated is None:
        raise UsageProblem("--calibration names the calibration --calibrated uses; add "
                           "--calibrated [CHIP/ENGINE]")
    group = args.calibrated or None
    calibration = args.calibration
    if calibration is None:
        check_against_shipped(args.targets, args.given, args.preset, group)
        calibration = shipped_calibration()
    answer = calibrated_solve(args.targets, args.given, args.preset, group, calibration,
                              **options)
    if args.json:
        return json.dumps(answer.to_dict(), indent=2)
    return answer.text(brief=args.brief)


def shipped_calibration():
    """The calibration on the shipped measurements, kept in chalk's cache between runs.

    Fitting it compiles every measurement (tens of seconds), so the first run stores it
    beside the cached questions, keyed by every source and data file (a changed
    measurement or relation never meets a calibration made before it). Fresh or cached,
    it is the stored form read back (:func:`chalk.applications.calibrate.stored.loads`),
    so both give the same numbers to the last bit.
    """
    from chalk.applications.calibrate import calibrate
    from chalk.applications.calibrate.solved import SHIPPED
    from chalk.applications.calibrate.stored import dumps, loads
    from chalk.cli import cache
    from chalk.symbolic.errors import ChalkError

    name = cache.key(["calibration", "shipped measurements"]) if cache.enabled() else None
    entry = cache.load(name) if name is not None else None
    if entry is not None and isinstance(entry.get("calibration"), str):
        try:
            return loads(entry["calibration"], "the cached calibration", SHIPPED)
        except ChalkError:
            pass  # an entry that does not check out is refitted, as a damaged one would be
    text = dumps(calibrate()).decode("utf-8")
    if name is not None:
        cache.store(name, cache.sealed({"calibration": text}))
    return loads(text, "the fitted calibration", SHIPPED)
