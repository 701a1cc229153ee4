"""Joint inference (issue 12): recovery, outliers, identifiability, and agreement with
``chalk solve`` when nothing is redundant.

The synthetic systems use relations that are products of powers, so in log space the
model is linear and, with log-normal noise, least squares is exact Gaussian inference:
the 90% intervals should cover the true values 90% of the time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from chalk.symbolic.errors import DataError, UsageError

import chalk
from chalk.applications.fit import fit

Z90 = 1.6448536269514722


def _chips(values: dict, sigma: float = 0.1, chips: dict | None = None) -> dict:
    """Subjects with one hardware_intensity and one hbm_drain_time observation each, one
    shared FLOP rate, and a bandwidth per subject (or per ``chips[subject]`` label);
    ``values`` maps (quantity, subject) to the observed value in FLOP/byte or s."""
    subjects = sorted({s for _, s in values})
    return {
        "unknowns": {"chip_flops": "1e13..1e17 FLOP/s",
                     "hbm_bandwidth": {"prior": "1e11..1e14 byte/s",
                                       "per": "chip" if chips else "subject"}},
        "subjects": {s: {"pins": {"hbm_capacity": "80 GB"},
                         **({"labels": {"chip": chips[s]}} if chips else {})}
                     for s in subjects},
        "observations": [
            {"quantity": q, "subject": s,
             "value": f"lognormal({v!r} {'FLOP/byte' if q == 'hardware_intensity' else 's'}, "
                      f"{sigma})"}
            for (q, s), v in values.items()],
    }


def _draw(rng, flops, bandwidths, sigma=0.1):
    """Observations through the relations: hardware_intensity = chip_flops / hbm_bandwidth,
    hbm_drain_time = hbm_capacity / hbm_bandwidth (80e9 byte), times lognormal noise."""
    out = {}
    for s, b in bandwidths.items():
        out[("hardware_intensity", s)] = flops / b * math.exp(rng.normal(0, sigma))
        out[("hbm_drain_time", s)] = 80e9 / b * math.exp(rng.normal(0, sigma))
    return out


def test_no_redundancy_reduces_to_chalk_solve():
    # one observation, one unknown: the fit must return solve's exact answer.
    # By hand (careful conventions, H100): context_crossover = active_params * 2 FLOP/param
    # / (hardware_intensity * kv_bytes_per_token), hardware_intensity = 989e12 / 3.35e12
    # = 295.22 FLOP/byte, so kv = 74e9 / (295.22 * 3581) = 69,996 byte/token.
    pins = {"active_params": "37e9 param"}
    result = fit({"presets": ["h100"], "pins": pins,
                  "unknowns": {"kv_bytes_per_token": "1e3..1e7 byte/token"},
                  "observations": [{"quantity": "context_crossover",
                                    "value": "lognormal(3581 token, 0.1)"}]})
    solved = chalk.solve("kv_bytes_per_token", {**pins, "context_crossover": "3581 token"},
                         ["h100"])
    estimate = result["kv_bytes_per_token"]
    assert estimate.identified
    assert estimate.value == pytest.approx(solved.value("kv_bytes_per_token", "byte/token"),
                                           rel=1e-6)
    assert estimate.value == pytest.approx(74e9 / (989e12 / 3.35e12 * 3581), rel=1e-6)
    # kv is inversely proportional to the observation, so its 90% interval is the value
    # times exp(-+1.645 * 0.1) = 0.848 and 1.179
    assert estimate.low == pytest.approx(estimate.value * math.exp(-Z90 * 0.1), rel=1e-4)
    assert estimate.high == pytest.approx(estimate.value * math.exp(Z90 * 0.1), rel=1e-4)
    assert estimate.method == "Jacobian (near-linear)"
    assert result.dof == 0 and result.residuals[0].z == pytest.approx(0, abs=1e-6)


def test_an_unidentified_unknown_names_the_fixed_combination():
    # context_crossover = 2 * active_params / (hardware_intensity * kv_bytes_per_token)
    # fixes only the product: 2 * 37e9 FLOP/token / 3581 token = 20.665e6 FLOP/token
    result = fit({"pins": {"active_params": "37e9 param"},
                  "unknowns": {"kv_bytes_per_token": "1e3..1e7 byte/token",
                               "hardware_intensity": "10..3000 FLOP/byte"},
                  "observations": [{"quantity": "context_crossover",
                                    "value": "lognormal(3581 token, 0.1)"}]})
    kv = result["kv_bytes_per_token"]
    assert not kv.identified
    assert kv.combination == "hardware_intensity·kv_bytes_per_token"
    assert kv.value == pytest.approx(2 * 37e9 / 3581, rel=1e-6)
    assert chalk.Q_(1, kv.unit).to("FLOP/token").magnitude == pytest.approx(1)
    text = result.text()
    assert "kv_bytes_per_token: only hardware_intensity·kv_bytes_per_token is fixed" in text
    assert "69,99" not in text  # no made-up estimate of kv alone
    assert result.to_dict()["estimates"][0]["value"] is None


def test_two_observations_of_a_ratio_fix_only_the_ratio():
    # hardware_intensity = chip_flops / hbm_bandwidth; with equal uncertainties the fit is
    # the geometric mean of 300 and 280: sqrt(84,000) = 289.83 FLOP/byte, its log's sd
    # 0.1 / sqrt(2), so the interval is 289.83 * exp(-+1.645 * 0.0707) = 257.9 to 325.6
    result = fit({"unknowns": {"chip_flops": "1e14..1e16 FLOP/s",
                               "hbm_bandwidth": "1e12..1e14 byte/s"},
                  "observations": [
                      {"quantity": "hardware_intensity", "value": f"lognormal({v} FLOP/byte, 0.1)"}
                      for v in (300, 280)]})
    flops = result["chip_flops"]
    assert not flops.identified and flops.combination == "chip_flops/hbm_bandwidth"
    assert flops.value == pytest.approx(math.sqrt(300 * 280), rel=1e-6)
    assert flops.low == pytest.approx(257.9, rel=1e-3)
    assert flops.high == pytest.approx(325.6, rel=1e-3)
    assert result.dof == 1


def test_a_corrupted_observation_is_flagged_and_the_robust_fit_holds():
    # six deployments on two chips (H100-like 3.35 TB/s, H200-like 4.8 TB/s, one FLOP
    # rate 989 TFLOP/s); one drain time is corrupted by a factor of 10, ln 10 / 0.1 = 23
    # standard deviations, and the three other drain times of its chip outvote it.
    # Whether the truth lies in one draw's 90% interval is a 90% event (the recovery test
    # checks that rate); here the robust fit of the corrupted data must stay inside the
    # intervals of the least-squares fit of the clean data, and least squares must not.
    rng = np.random.default_rng(12)
    chips = {"a": "h100", "b": "h100", "c": "h100", "d": "h200", "e": "h200", "f": "h200"}
    bandwidths = {s: {"h100": 3.35e12, "h200": 4.8e12}[chip] for s, chip in chips.items()}
    values = _draw(rng, 989e12, bandwidths)
    clean = fit(_chips(values, chips=chips))
    values[("hbm_drain_time", "c")] *= 10
    bad = list(values).index(("hbm_drain_time", "c"))
    spec = _chips(values, chips=chips)
    robust = fit(spec, loss="cauchy")
    assert [r.index for r in robust.outliers] == [bad]
    for e in clean.estimates:
        assert e.low <= robust[e.name].value <= e.high, (e.name, robust[e.name].value)
    plain = fit(spec)
    assert max(plain.residuals, key=lambda r: abs(r.z)).index == bad
    assert not all(e.low <= plain[e.name].value <= e.high for e in clean.estimates)
    # a convex robust loss flags it too, though its bounded pull still moves the fit
    assert [r.index for r in fit(spec, loss="soft_l1").outliers] == [bad]


def test_recovery_covers_the_truth_at_the_nominal_rate():
    # 200 draws of hidden values, observations generated through the relations with
    # log-normal noise of sd 0.1, fitted with the same sd. Each parameter's 90% interval
    # should hold the truth in 90% of draws; with 200 draws the binomial sd is
    # sqrt(200 * 0.9 * 0.1) = 4.2 draws, so the stated band 80-97% (160-194) is more than
    # 3 sd wide on each side (fixed seed, so the test is deterministic).
    rng = np.random.default_rng(2024)
    draws = 200
    hits = {}
    for _ in range(draws):
        flops = math.exp(rng.uniform(math.log(3e14), math.log(3e15)))
        bandwidths = {s: math.exp(rng.uniform(math.log(1e12), math.log(1e13))) for s in "abc"}
        result = fit(_chips(_draw(rng, flops, bandwidths)))
        truths = {"chip_flops": flops, **{f"hbm_bandwidth@{s}": b
                                          for s, b in bandwidths.items()}}
        for name, true in truths.items():
            e = result[name]
            hits[name] = hits.get(name, 0) + (e.low <= true <= e.high)
    for name, count in hits.items():
        assert 0.80 <= count / draws <= 0.97, (name, count)


def test_a_nonlinear_relation_gets_a_profile_interval():
    # memory_bound step: an observation near a prior's bound pushes the estimate onto it,
    # where the Jacobian interval cannot be trusted: the profile is used and says so
    result = fit({"pins": {"hbm_capacity": "80 GB"},
                  "unknowns": {"hbm_bandwidth": "1e12..2.1e12 byte/s"},
                  "observations": [{"quantity": "hbm_drain_time",
                                    "value": "lognormal(40 ms, 0.1)"}]})
    e = result["hbm_bandwidth"]
    # 80 GB / 40 ms = 2 TB/s, 0.05 in log below the bound 2.1 TB/s, under the 0.1645 half
    # width: the upper end is the bound itself
    assert e.method == "profile likelihood"
    assert e.high == pytest.approx(2.1e12, rel=1e-6)
    assert e.low == pytest.approx(2e12 * math.exp(-Z90 * 0.1), rel=1e-3)
    assert any("prior's bound" in n for n in e.notes)


@pytest.mark.parametrize("spec, message", [
    ({"unknowns": {}, "observations": []}, "name at least one unknown"),
    ({"unknowns": {"chip_flops": "1e14..1e16 FLOP/s"},
      "observations": [{"quantity": "hardware_intensity", "value": "300 FLOP/byte"}]},
     "give its uncertainty"),
    ({"unknowns": {"chip_flops": "1e14..1e16 FLOP/s"}, "subjects": {"Bad-Name": {}},
      "observations": [{"quantity": "hardware_intensity", "value": "300 FLOP/byte ±10%"}]},
     "not a plain lower-case identifier"),
    ({"unknowns": {"chip_flops": "1e14..1e16 FLOP/s"},
      "observations": [{"quantity": "hardware_intensity", "value": "300 FLOP/byte ±10%",
                        "subject": "x"}]},
     "not a declared subject"),
])
def test_mistakes_in_a_fit_name_the_field(spec, message):
    with pytest.raises(DataError, match=message):
        fit(spec)


def test_an_observation_the_unknowns_cannot_reach_is_a_usage_error():
    with pytest.raises(UsageError, match="hardware_intensity"):
        fit({"unknowns": {"chip_flops": "1e14..1e16 FLOP/s"},
             "observations": [{"quantity": "hardware_intensity",
                               "value": "300 FLOP/byte ±10%"}]})


def test_the_command_line_prints_json_and_draws_the_residuals(tmp_path):
    # the shipped example: its third deployment's drain time, 240 ms, is ten times the
    # 24 ms of the other H100 deployment, ln 10 / 0.1 = 23 sd away: the only outlier
    import json
    from pathlib import Path

    from chalk.cli.main import main

    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "fit_chips.toml"
    plot = tmp_path / "residuals.png"
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fit", str(example), "--json", "--plot", str(plot)]) == 0
    body = json.loads(out.getvalue())
    assert body["outliers"] == [4]
    assert [e["name"] for e in body["estimates"]] == [
        "chip_flops", "hbm_bandwidth@h100", "hbm_bandwidth@h200"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_fit_too_large_for_its_measured_cost_is_refused_up_front(monkeypatch):
    # Three subjects, two observations each, a bandwidth per subject and one shared FLOP
    # rate: 6 observations x 4 unknowns = 24 cells. At a (pretended) 10 s a cell that is
    # 240 s (4 min) against the 120 s (2 min) limit, and 8 bytes x 4 copies x 24 = 768
    # bytes. Unknowns grow with the subjects, so cost with observations squared:
    # 6 x sqrt(120/240) = 4.2, so 4 observations fit.
    import dataclasses

    from chalk.solvers import limits
    from chalk.solvers.tolerances import LONG_WORK

    from chalk.applications.fit import estimate

    changed = dataclasses.replace(LONG_WORK, fit_seconds_per_cell=10.0, max_seconds=120.0)
    monkeypatch.setattr(estimate, "LONG_WORK", changed)
    monkeypatch.setattr(limits, "LONG_WORK", changed)
    values = _draw(np.random.default_rng(0), 989e12, {"a": 2e12, "b": 3e12, "c": 4e12})
    with pytest.raises(UsageError) as info:
        fit(_chips(values))
    assert info.value.message == (
        "a fit of 6 observations and 4 unknowns would take about 4 min and 0.768 kB "
        "(limits 2 min, 4 GB); fit about 4 observations or fewer at a time (fewer subjects)")
