"""Calibration of serving efficiencies (issue 24 items 2-4): rows answered by chalk at any
efficiencies, partial pooling, identifiability, refusals, predictions with intervals,
cross-validation, and recovery of known efficiencies from simulated measurements."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import numpy as np
import pytest
from chalk.symbolic.errors import ChalkError

from chalk.applications.calibrate import calibrate, compile_rows, cross_validate, shipped_records
from chalk.applications.calibrate.fit import fit_rows
from chalk.applications.calibrate.predict import predict_row

# Three chip/engine groups, each with a row of a small batch (memory-bound at any
# efficiencies a fit reaches) and a row at a large batch.
IDS = ["trtllm_llama70b_h200_fp8_1000_1000", "trtllm_llama70b_h200_fp8_2048_128",
       "oracle_llama405b_mi300x_fp8_batch1", "oracle_llama405b_mi300x_fp8_batch256",
       "nim_llama70b_h100_fp8_5000_500_c1", "nim_llama70b_h100_fp8_5000_500_c100"]


@pytest.fixture(scope="module")
def rows():
    return compile_rows(shipped_records(IDS))


def _by_id(rows, ident):
    return next(r for r in rows if r.id == ident)


def _simulated(rows, truth: dict, noise: float, rng, copies: int = 1):
    """Rows whose measurements are chalk's rate at the true efficiencies of their group
    times log-normal noise (``copies`` independent measurements of each question). A truth
    of two (flops, HBM) leaves the links' efficiency at 1, for rows that wait on no
    all-to-all (a dense model, or a MoE model on one chip), where it does not enter the
    rate; a truth of three states it."""
    out = []
    for row in rows:
        rate = row.rates(np.log([(tuple(truth[row.group]) + (1.0,))[:3]]))[0]
        for copy in range(copies):
            measured = rate * math.exp(noise * rng.standard_normal())
            out.append(replace(row, id=f"{row.id}_{copy}", measured=measured))
    return out


def test_a_whole_request_row_is_its_prefill_at_the_flops_and_its_decode_at_the_bandwidth(
        rows):
    # Oracle's batch-1 row (128 in / 128 out on 8 MI300X, prefill included in the rate) is
    # asked as whole requests: 1 / rate = (t_prefill / f + 127 x step / b) / 128 token with
    # the prefill compute-bound (FLOP/s efficiency f) and the batch-1 step memory-bound (HBM
    # efficiency b). Two points give the two times, the third must follow from them.
    row = _by_id(rows, "oracle_llama405b_mi300x_fp8_batch1")
    at_peak, half_bandwidth, half_flops = row.rates(np.log([[1, 1, 1], [1, 0.5, 1],
                                                            [0.5, 1, 1]]))
    decode = 128 * (1 / half_bandwidth - 1 / at_peak)  # 127 steps, seconds
    prefill = 128 / at_peak - decode
    assert half_flops == pytest.approx(128 / (2 * prefill + decode), rel=1e-9)
    # by hand: 128 prompt tokens x 2 FLOP x ~405e9 params over 8 x 2.6149 PFLOP/s (FP8
    # dense, AMD's datasheet); a step reads ~405e9 bytes of FP8 weights over 8 x 5.3 TB/s
    assert prefill == pytest.approx(128 * 2 * 405e9 / (8 * 2.6149e15), rel=0.03)
    assert decode / 127 == pytest.approx(405e9 / (8 * 5.3e12), rel=0.02)


def test_the_bound_is_what_solve_answers(rows):
    import chalk
    from chalk.applications.calibrate.rows import measurement_question

    row = _by_id(rows, "trtllm_llama70b_h200_fp8_1000_1000")
    targets, given, presets = measurement_question(shipped_records([row.id])[0])
    solved = chalk.solve(targets, given=given, presets=presets)  # no efficiency pinned
    assert targets[0] == "output_tokens_per_second"  # both lengths, a total rate
    assert row.rates(np.zeros((1, 3)))[0] == pytest.approx(
        solved.value("output_tokens_per_second", "token/s"), rel=1e-9)


def _decode_row(rows, ident):
    """A shipped row asked for its decode rate alone (``decode_question``: the step at the
    generation's mean context, no prefill), a question of one regime."""
    from chalk.applications.calibrate.rows import EFFICIENCIES, decode_question
    from chalk.compiled import compile_question

    _, given, presets = decode_question(shipped_records([ident])[0])
    given.update(dict.fromkeys(EFFICIENCIES, "1"))
    return replace(_by_id(rows, ident), known={}, question=compile_question(
        ["tokens_per_second"], given, presets))


def test_a_group_whose_rows_are_all_memory_bound_keeps_the_pooled_flops(rows):
    # h100/nim's decode rates at 1 and 100 requests in flight both read HBM for longer than
    # they compute, so no row of the group depends on its flops_efficiency: its deviation
    # has only its prior (mode 0) and the group's value is the shared one
    rng = np.random.default_rng(3)
    truth = {"h200/tensorrt_llm": (0.2, 0.3), "mi300x/vllm": (0.1, 0.25),
             "h100/nim": (0.2, 0.35)}
    asked = [r if r.group != "h100/nim" else _decode_row(rows, r.id) for r in rows]
    calibration = calibrate(rows=_simulated(asked, truth, 0.1, rng, copies=2))
    nim = calibration.efficiency("h100/nim", "flops_efficiency")
    assert not nim.identified
    assert nim.value == pytest.approx(calibration.shared["flops_efficiency"].value, rel=1e-9)
    assert nim.at_least is not None and nim.at_least < nim.value
    assert "not identified" in nim.note() and "memory-bound" in nim.note()
    assert calibration.efficiency("h100/nim", "hbm_bandwidth_efficiency").identified
    assert "h100/nim flops_efficiency: not identified" in calibration.text()


def test_what_cannot_be_fitted_is_refused_in_one_line(rows):
    # one request at a time reads every weight for each token: compute would bound it only
    # at a flops_efficiency below 0.001 (the one-sided bound of the shipped calibration)
    batch1 = [_decode_row(rows, i) for i in IDS if i.endswith(("_c1", "_batch1"))]
    memory_bound = batch1 + [replace(batch1[0], id="again", measured=batch1[0].measured / 2)]
    with pytest.raises(ChalkError, match="^flops_efficiency cannot be calibrated from these 3 "
                                         "measurements: every one is memory-bound"):
        fit_rows(memory_bound)
    # one question three times (NIM's one request of 5,000 in / 500 out): the prefill moves
    # its rate with the FLOP/s and the decode with the bandwidth, always in the same mix
    # (slopes about 0.08 and 0.92), so only that combination is fixed: refused, where the
    # fit's covariance used to raise numpy's "Singular matrix"
    nim = _by_id(rows, "nim_llama70b_h100_fp8_5000_500_c1")
    copies = [replace(nim, id=f"copy {k}", measured=nim.measured * f)
              for k, f in enumerate((0.2, 0.25, 0.3))]
    for width in (0.5, 0.0):
        with pytest.raises(ChalkError, match="^flops_efficiency and hbm_bandwidth_efficiency "
                                             "cannot be told apart from these 3 measurements"):
            fit_rows(copies, prior_width=width)
    with pytest.raises(ChalkError, match="^2 measurement"):
        fit_rows(rows[:2])
    with pytest.raises(ChalkError, match="prior width must be a finite number"):
        fit_rows(rows, prior_width=-1)


def test_a_prediction_of_a_calibrated_row_is_its_fitted_rate(rows):
    rng = np.random.default_rng(5)
    truth = {"h200/tensorrt_llm": (0.15, 0.3), "mi300x/vllm": (0.1, 0.2),
             "h100/nim": (0.15, 0.35)}
    calibration = calibrate(rows=_simulated(rows, truth, 0.2, rng, copies=2))
    record = shipped_records(["trtllm_llama70b_h200_fp8_1000_1000"])[0]
    from chalk.applications.calibrate.rows import measurement_question

    _, given, presets = measurement_question(record)
    prediction = calibration.predict("output_tokens_per_second", given, presets,
                                     group="h200/tensorrt_llm")
    fitted = calibration.fitted
    index = next(i for i, r in enumerate(calibration.rows) if r.id.startswith(record.id))
    assert prediction.value == pytest.approx(math.exp(fitted.log_rates[index]), rel=1e-6)
    assert prediction.bound == pytest.approx(_by_id(rows, record.id).rates(
        np.zeros((1, 3)))[0], rel=1e-9)
    # the interval holds the scatter between measurements beyond the efficiencies' own
    assert math.log(prediction.high / prediction.value) > 1.645 * fitted.sigma
    unseen = calibration.predict("output_tokens_per_second", given, presets)  # a new group
    assert unseen.group is None
    assert unseen.high / unseen.low > prediction.high / prediction.low
    with pytest.raises(ChalkError, match="^group 'mi300x/vllm' was calibrated on mi300x"):
        calibration.predict("tokens_per_second", given, presets, group="mi300x/vllm")
    with pytest.raises(ChalkError, match="^the question: chalk has no answer at efficiencies "
                                         r"\[.*\]: not enough pins to determine"):
        calibration.predict("tokens_per_second", {}, ["fp8"])  # no chip, no model
    with pytest.raises(ChalkError, match="is of a rate in token/s"):
        calibration.predict("t_memory", given, presets)
    with pytest.raises(ChalkError, match="sets flops_efficiency from the calibration"):
        calibration.predict("tokens_per_second", dict(given, flops_efficiency="0.5"),
                            presets)


def test_leaving_out_a_groups_only_source_predicts_it_as_a_new_group(rows):
    rng = np.random.default_rng(7)
    truth = {"h200/tensorrt_llm": (0.15, 0.3), "mi300x/vllm": (0.1, 0.2),
             "h100/nim": (0.15, 0.35)}
    simulated = _simulated(rows, truth, 0.2, rng, copies=2)
    score = cross_validate(simulated, 0.5, "source")
    assert score.folds == 3  # TensorRT-LLM's table, Oracle's MI300X page, NVIDIA's NIM page
    assert all(s.calibrated.group is None for s in score.scored)
    by_row = cross_validate(simulated, 0.5, "row")
    assert by_row.folds == len(simulated)
    assert all(s.calibrated.group == s.group for s in by_row.scored)
    assert 0 <= by_row.coverage <= 1 and by_row.bound_error > by_row.calibrated_error


@pytest.mark.slow
def test_intervals_recover_known_efficiencies(rows):
    # Truth drawn as the model states it: shared efficiencies 0.1 (FLOP/s) and 0.4
    # (bandwidth), each group's log deviation ~ N(0, 0.5^2), measurements the rate at the
    # truth times exp(N(0, 0.2^2)), three measurements of each question. Over 30 seeds the
    # 90% intervals of the six group efficiencies should cover the truth 80-97% of the
    # time. A draw where no row is compute-bound cannot fix flops_efficiency and is
    # refused (said in one line); few draws may be.
    covered, total, refused = 0, 0, 0
    for seed in range(30):
        rng = np.random.default_rng(1000 + seed)
        truth = {}
        for group in sorted({r.group for r in rows}):
            deviation = np.exp(0.5 * rng.standard_normal(2))
            truth[group] = tuple(np.minimum([0.1, 0.4] * deviation, 1.0))
        try:
            calibration = calibrate(rows=_simulated(rows, truth, 0.2, rng, copies=3))
        except ChalkError as exc:
            assert "every one is memory-bound" in exc.message
            refused += 1
            continue
        for e in calibration.efficiencies:
            value = truth[e.group][0 if e.name == "flops_efficiency" else 1]
            covered += e.low <= value <= e.high
            total += 1
    assert refused <= 3
    assert 0.80 <= covered / total <= 0.97, covered / total


@pytest.mark.slow
def test_prediction_intervals_cover_new_measurements(rows):
    # A fresh measurement of each calibrated question (same truth, new noise) should fall
    # in its 90% prediction interval 80-97% of the time over 20 seeds x 6 questions.
    covered, total = 0, 0
    truth = {"h200/tensorrt_llm": (0.15, 0.3), "mi300x/vllm": (0.1, 0.2),
             "h100/nim": (0.15, 0.35)}
    for seed in range(20):
        rng = np.random.default_rng(2000 + seed)
        fitted = fit_rows(_simulated(rows, truth, 0.2, rng, copies=3))
        for new in _simulated(rows, truth, 0.2, rng):
            covered += predict_row(fitted, new).covers(new.measured)
            total += 1
    assert 0.80 <= covered / total <= 0.97, covered / total


@pytest.mark.slow
def test_the_calibration_benchmark_runs():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration.py"
    spec = importlib.util.spec_from_file_location("calibration_benchmark", path)
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    figures = benchmark.run(rows=18)  # TensorRT-LLM's first 14 rows and Oracle's 4
    sources = {r.fields["source"] for r in shipped_records()[:18]}
    assert figures["rows"] == 18
    assert (figures["row"]["folds"], figures["source"]["folds"]) == (18, len(sources))
    assert set(figures["seconds"]) == {"compile", "fit", "row", "source"}


@pytest.mark.slow
def test_the_command_calibrates_predicts_and_scores_the_shipped_rows(run_cli):
    import json

    status, out, err = run_cli(
        "calibrate", "--json", "-q", "--predict", "tokens_per_second",
        "-g", "n_chips=1 chip", "-g", "context_length=1500 token", "-g", "memory_fill=1",
        "-p", "h200_fp8", "-p", "llama_3_1_70b", "-p", "fp8", "--group", "h200/tensorrt_llm",
        "--cross-validate", "source")
    assert (status, err) == (0, "")
    found = json.loads(out)
    (score,) = found["cross_validation"]
    assert (score["scheme"], score["rows"], score["unscored"]) == ("source", 71, [])
    assert 0 < score["coverage_90"]["calibrated"] <= 1
    calibration, prediction = found["calibration"], found["prediction"]
    assert calibration["rows"] == 71 and calibration["prior_width"]["kind"] == "stated"
    assert len(calibration["efficiencies"]) == 3 * len(calibration["groups"])
    assert prediction["group"] == "h200/tensorrt_llm" and prediction["level"] == 0.9
    # a prediction below its bound (every efficiency under 1), inside its own interval
    assert prediction["low"] < prediction["value"] < prediction["high"]
    assert prediction["value"] < prediction["bound"]


@pytest.fixture(scope="module")
def simulated_calibration(rows):
    rng = np.random.default_rng(11)
    truth = {"h200/tensorrt_llm": (0.15, 0.3), "mi300x/vllm": (0.1, 0.2),
             "h100/nim": (0.15, 0.35)}
    return calibrate(rows=_simulated(rows, truth, 0.2, rng, copies=2))


def test_a_stored_calibration_predicts_as_the_fit_does(simulated_calibration, tmp_path,
                                                       run_cli):
    from chalk.applications.calibrate.rows import measurement_question
    from chalk.applications.calibrate.stored import dumps, read

    path = tmp_path / "cal.yaml"
    path.write_bytes(dumps(simulated_calibration))
    stored = read(path)
    _, given, presets = measurement_question(shipped_records([IDS[0]])[0])
    for group in ("h200/tensorrt_llm", None):
        fresh = simulated_calibration.predict("tokens_per_second", given, presets, group)
        again = stored.predict("tokens_per_second", given, presets, group)
        assert (again.value, again.low, again.high) == pytest.approx(
            (fresh.value, fresh.low, fresh.high), rel=1e-12)
    status, out, err = run_cli(
        "calibrate", "--calibration", str(path), "--predict", "tokens_per_second",
        "-g", "n_chips=1 chip", "-g", "context_length=1500 token", "-g", "batch_size=64 sequence",
        "-p", "h200_fp8", "-p", "llama_3_1_70b", "-p", "fp8", "--group", "h200/tensorrt_llm")
    assert (status, err) == (0, "")
    assert "90% prediction interval" in out and "fitted to 12 measurements" in out


def test_no_interval_reaches_past_the_bound(simulated_calibration):
    # a rate at efficiencies at most 1 is at most the rate at 1: a batch-1 row predicted at
    # a bandwidth efficiency near 0.35 with a scatter of about 0.2 could reach past it only
    # if the interval were not cut; widen the scatter tenfold to make sure it would
    fitted = simulated_calibration.fitted
    wide = replace(fitted, sigma=fitted.sigma * 10)
    row = next(r for r in simulated_calibration.rows if r.id.endswith("_c1_0"))
    prediction = predict_row(wide, row)
    assert prediction.capped and prediction.high == prediction.bound
    assert not predict_row(fitted, row).capped


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("theta"), "field 'theta': missing"),
    (lambda d: d.update(format=3), "field 'format': this chalk reads format 4, not the "
                                       "number 3"),
    (lambda d: d.update(group_rows=[1, 1, 1]), "field 'group_rows': expected 3 whole numbers, "
                                               "one per group, adding up to rows (12)"),
    (lambda d: d.update(scatter_log_sd=0), "field 'scatter_log_sd': expected a number more "
                                           "than 0"),
    (lambda d: d.update(theta=d["theta"][:-1]), "field 'theta': expected 12 finite numbers"),
    (lambda d: d["covariance"][0].__setitem__(1, 5.0), "field 'covariance': not symmetric"),
    (lambda d: d.update(covariance=[[-abs(v) if i == j else 0.0 for j, v in enumerate(r)]
                                    for i, r in enumerate(d["covariance"])]),
     "field 'covariance': not positive definite"),
    (lambda d: d["theta"].__setitem__(0, 0.5), "field 'theta': the shared value has an "
                                               "efficiency above 1"),
    (lambda d: d.update(groups=["H200"] + d["groups"][1:]), "field 'groups': expected"),
    (lambda d: d.update(extra=1), "field 'extra': unknown key"),
    (lambda d: d.update(families=["moe"]), "field 'families': expected []"),
    (lambda d: d.update(scatters=[{"architecture": "moe", "scatter_log_sd": 0.3,
                                   "degrees_of_freedom": 5.0}]),
     "field 'scatters': expected none, or one entry for each of two or more architectures"),
    (lambda d: d.update(scatters=[{"architecture": "dense", "scatter_log_sd": 0.3}] * 2),
     "field 'scatters': expected entries of architecture, scatter_log_sd, "
     "degrees_of_freedom"),
])
def test_a_bad_calibration_file_is_refused_by_field(simulated_calibration, tmp_path, change,
                                                    message):
    import yaml

    from chalk.applications.calibrate.stored import dumps, read

    data = yaml.safe_load(dumps(simulated_calibration))
    change(data)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ChalkError, match=f"^bad.yaml, {re.escape(message)}"):
        read(path)


def test_a_fold_that_cannot_be_calibrated_is_reported_not_dropped(rows):
    # leaving out Oracle's page leaves only NIM's one-request rows, one question thrice,
    # which fix a mix of flops_efficiency and hbm_bandwidth_efficiency but not each: that
    # fold is refused and said to be
    rng = np.random.default_rng(13)
    truth = {"mi300x/vllm": (0.1, 0.3), "h100/nim": (0.15, 0.35)}
    chosen = [_by_id(rows, i) for i in ("nim_llama70b_h100_fp8_5000_500_c1",
                                        "oracle_llama405b_mi300x_fp8_batch1",
                                        "oracle_llama405b_mi300x_fp8_batch256")]
    simulated = _simulated(chosen[:1], truth, 0.2, rng, copies=3) + _simulated(
        chosen[1:], truth, 0.2, rng, copies=2)
    score = cross_validate(simulated, 0.5, "source")
    assert score.folds == 2 and len(score.scored) == 3  # NIM's three rows, predicted
    ((left_out, reason),) = score.unscored
    assert left_out == chosen[1].source
    assert reason.startswith("flops_efficiency and hbm_bandwidth_efficiency cannot be told "
                             "apart from these 3")
    assert "1 fold(s) or row(s) not scored" in score.text()


def _file_entry(record, measured: float) -> dict:
    """A shipped record written back in the file format, with another measured rate."""
    entry = dict(record.fields)
    entry["facts"] = {name: fact.text for name, fact in record.facts.items()}
    entry["facts"]["measured"] = f"{float(measured)!r} token/s"
    return entry


def test_a_users_file_calibrates_as_its_records_do(rows, tmp_path, run_cli):
    # a user's file of six measurements simulated at known efficiencies: read through the
    # strict loader, it gives the fit the same records give in Python, and the command
    # calibrates those six rows, not the 71 shipped ones
    import json

    import yaml

    rng = np.random.default_rng(5)
    truth = {"h200/tensorrt_llm": (0.15, 0.3), "mi300x/vllm": (0.1, 0.2),
             "h100/nim": (0.15, 0.35)}
    simulated = _simulated(rows, truth, 0.2, rng)
    records = {r.id: r for r in shipped_records(IDS)}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"measurements": [
        _file_entry(records[row.id.removesuffix("_0")], row.measured) for row in simulated]}),
        encoding="utf-8")
    from_file = calibrate(data=path)
    in_python = calibrate(rows=simulated)
    assert len(from_file.rows) == 6
    assert from_file.fitted.theta == pytest.approx(in_python.fitted.theta, rel=1e-9)
    status, out, err = run_cli("calibrate", "--data", str(path), "--json", "-q")
    assert (status, err) == (0, "")
    found = json.loads(out)["calibration"]
    assert found["rows"] == 6 and found["groups"] == sorted(truth)
    assert found["shared"]["flops_efficiency"]["value"] == pytest.approx(
        from_file.shared["flops_efficiency"].value, rel=1e-9)


def _h200_question():
    from chalk.applications.calibrate.rows import measurement_question

    _, given, presets = measurement_question(shipped_records([IDS[0]])[0])
    return given, presets


def test_a_calibrated_solve_answers_at_the_groups_fitted_efficiencies(simulated_calibration):
    import chalk
    from chalk.applications.calibrate.predict import quantile
    from chalk.applications.calibrate.solved import calibrated_solve

    given, presets = _h200_question()
    answer = calibrated_solve("tokens_per_second", given, presets, "h200/tensorrt_llm",
                              simulated_calibration)
    fitted = simulated_calibration.fitted
    flops, hbm, links = np.exp(fitted.log_efficiency("h200/tensorrt_llm"))
    assert [(e.name, e.rows) for e in answer.efficiencies] == [
        ("flops_efficiency", 4), ("hbm_bandwidth_efficiency", 4),
        ("scale_up_bandwidth_efficiency", 4)]  # 2 rows x 2
    assert [e.value for e in answer.efficiencies] == pytest.approx([flops, hbm, links],
                                                                   rel=1e-12)
    # the derivation is the solve at those efficiencies, and names where they came from
    (p,) = answer.predictions.values()
    solved = answer.solution["tokens_per_second"].to("token/s").magnitude
    assert solved == pytest.approx(p.value, rel=1e-9)
    pins = answer.solution.derivation.pins
    assert pins["flops_efficiency"].value == flops
    assert "calibrated for h200/tensorrt_llm (4 of 12 measurements" in \
        pins["hbm_bandwidth_efficiency"].source
    # the prediction is the calibration's own, its interval t * sqrt(efficiencies' variance
    # + scatter^2) wide in the log, so never narrower than the scatter alone
    assert (p.value, p.low) == pytest.approx(
        (simulated_calibration.predict("tokens_per_second", given, presets,
                                       "h200/tensorrt_llm").value,
         p.value * math.exp(-quantile(fitted) * math.hypot(p.parameter_sd, fitted.sigma))),
        rel=1e-9)
    assert p.scatter == fitted.sigma and math.log(p.value / p.low) > quantile(fitted) * p.scatter
    # the bound beside it: chalk's answer at efficiencies 1, the conventions' own
    bound = chalk.solve("tokens_per_second", given, presets)["tokens_per_second"]
    assert p.bound == pytest.approx(bound.to("token/s").magnitude, rel=1e-9)
    text = answer.text()
    assert "90% prediction interval" in text and "fitted to 4 of 12 measurements" in text


def test_a_group_not_calibrated_gets_the_shared_values_and_their_spread(simulated_calibration):
    from chalk.applications.calibrate.predict import quantile
    from chalk.applications.calibrate.solved import calibrated_solve

    given, presets = _h200_question()
    answer = calibrated_solve(["tokens_per_second"], given, presets, None,
                              simulated_calibration)
    fitted = simulated_calibration.fitted
    for j, e in enumerate(answer.efficiencies):
        shared = simulated_calibration.shared[e.name]
        assert (e.value, e.rows) == (pytest.approx(shared.value, rel=1e-12), 0)
        # the shared value's own variance plus tau^2 = 0.5^2, the spread between groups
        sd = math.sqrt(fitted.covariance[j, j] + 0.25)
        assert e.low == pytest.approx(e.value * math.exp(-quantile(fitted) * sd), rel=1e-9)
    assert "shared values for a group not calibrated" in answer.text()


def test_a_calibrated_solve_refuses_what_the_calibration_cannot_answer(simulated_calibration):
    from chalk.applications.calibrate.solved import calibrated_solve

    given, presets = _h200_question()
    with pytest.raises(ChalkError, match="is of a rate in token/s.*t_memory is in s"):
        calibrated_solve("t_memory", given, presets, None, simulated_calibration)
    with pytest.raises(ChalkError, match="sets flops_efficiency from the calibration"):
        calibrated_solve("tokens_per_second", {**given, "flops_efficiency": "0.5"}, presets,
                         None, simulated_calibration)
    with pytest.raises(ChalkError, match="no calibrated group 'b200/vllm'"):
        calibrated_solve("tokens_per_second", given, presets, "b200/vllm",
                         simulated_calibration)


def test_solve_calibrated_from_a_stored_calibration(simulated_calibration, tmp_path, run_cli):
    import json

    from chalk.applications.calibrate.stored import dumps
    from chalk.cli import fast
    from chalk.cli.options import solve_parser

    path = tmp_path / "cal.yaml"
    path.write_bytes(dumps(simulated_calibration))
    argv = ["solve", "tokens_per_second", "-g", "n_chips=1 chip", "-g",
            "context_length=1500 token", "-g", "batch_size=64 sequence", "-p", "h200_fp8",
            "-p", "llama_3_1_70b", "-p", "fp8", "--calibrated", "h200/tensorrt_llm",
            "--calibration", str(path), "-q"]
    # never answered from the cache of the same question asked without --calibrated
    assert fast.shape(solve_parser().parse_args(argv)) is None
    status, out, err = run_cli(*argv, "--json")
    assert (status, err) == (0, "")
    found = json.loads(out)
    p = found["predictions"]["tokens_per_second"]
    expected = simulated_calibration.predict(
        "tokens_per_second", ["n_chips=1 chip", "context_length=1500 token",
                              "batch_size=64 sequence"], ["h200_fp8", "llama_3_1_70b", "fp8"],
        "h200/tensorrt_llm")
    assert (p["value"], p["low"], p["high"], p["bound"]) == pytest.approx(
        (expected.value, expected.low, expected.high, expected.bound), rel=1e-9)
    assert [e["rows"] for e in found["efficiencies"]] == [4, 4, 4]
    status, out, err = run_cli(*argv, "--brief")
    assert (status, err) == (0, "")
    assert out.startswith("tokens_per_second = ") and "calibrated, 90% prediction" in out


def test_solve_calibrated_keeps_the_shipped_calibration_between_runs(
        simulated_calibration, monkeypatch, run_cli):
    """Without --calibration the shipped measurements are fitted once and kept in the
    cache; the next run reads them back and answers the same to the last bit."""
    import json

    import chalk.applications.calibrate as package

    fits = []

    def fitted_once(*args, **kwargs):
        fits.append(1)  # stands in for the fit of the 71 shipped rows (tens of seconds)
        return simulated_calibration

    monkeypatch.setattr(package, "calibrate", fitted_once)
    argv = ["solve", "tokens_per_second", "-g", "n_chips=1 chip", "-g",
            "context_length=1500 token", "-g", "batch_size=64 sequence", "-p", "h200_fp8",
            "-p", "llama_3_1_70b", "-p", "fp8", "--calibrated", "h200/tensorrt_llm", "-q",
            "--json"]
    first = run_cli(*argv)
    second = run_cli(*argv)
    assert fits == [1]  # the second run fitted nothing
    assert first == second and first[0] == 0
    found = json.loads(first[1])
    assert found["calibration"]["from"] == "the shipped measurements"
    expected = simulated_calibration.predict(
        "tokens_per_second", ["n_chips=1 chip", "context_length=1500 token",
                              "batch_size=64 sequence"], ["h200_fp8", "llama_3_1_70b", "fp8"],
        "h200/tensorrt_llm")
    p = found["predictions"]["tokens_per_second"]
    assert (p["value"], p["low"], p["high"]) == pytest.approx(
        (expected.value, expected.low, expected.high), rel=1e-12)


def test_the_architecture_of_a_model_is_whether_it_routes_to_experts():
    from chalk.applications.calibrate.rows import architecture_of, group_of

    # DeepSeek-V3 routes each token to 8 of 256 experts, Qwen3-30B-A3B to 8 of 128;
    # Llama 3.1 has one MLP per layer
    assert [architecture_of(m) for m in ("deepseek_v3", "qwen3_30b_a3b", "llama_3_1_70b")] \
        == ["moe", "moe", "dense"]
    (record,) = shipped_records(["trtllm_qwen3_30b_b200_fp4_1000_1000"])
    assert (group_of(record), group_of(record, by_architecture=True)) == (
        "b200/tensorrt_llm", "b200/tensorrt_llm/moe")


def test_a_prediction_for_an_architecture_group_needs_a_model_of_it():
    from chalk.applications.calibrate.calibration import checked_prediction

    groups = ["b200/tensorrt_llm/dense", "b200/tensorrt_llm/moe"]
    with pytest.raises(ChalkError, match="calibrated on moe models; name a moe model"):
        checked_prediction("tokens_per_second", {}, "b200/tensorrt_llm/moe", groups,
                           ["b200_fp4", "llama_3_1_70b", "fp4"])
    assert checked_prediction("tokens_per_second", {}, "b200/tensorrt_llm/moe", groups,
                              ["b200_fp4", "qwen3_30b_a3b", "fp4"]) == "tokens_per_second"


@pytest.mark.slow
def test_grouping_by_architecture_recovers_an_moe_efficiency_the_chip_group_averages(tmp_path):
    # one chip and engine, dense and MoE rows whose true hbm_bandwidth_efficiency differs
    # threefold (0.6 and 0.2): grouped by chip/engine the fit can only split the difference
    # and the offset shows up as scatter; grouped by architecture each is recovered. (Not
    # the flops: Qwen3 235B on 8 chips waits on the all-to-all, the conventions' experts
    # over every chip, and its two compute-bound questions fix only a combination of the
    # flops and the links' efficiency; Qwen3 30B on one chip is memory-bound and fixes the
    # MoE bandwidth alone.)
    ids = ["trtllm_llama70b_b200_fp4_1000_1000", "trtllm_llama70b_b200_fp4_128_2048",
           "trtllm_llama405b_b200_fp4_1000_1000", "trtllm_llama405b_b200_fp4_128_2048",
           "trtllm_qwen3_30b_b200_fp4_1000_1000", "trtllm_qwen3_30b_b200_fp4_128_2048",
           "trtllm_qwen3_235b_b200_fp4_1000_1000", "trtllm_qwen3_235b_b200_fp4_128_2048"]
    from chalk.applications.calibrate.rows import by_architecture

    rows = by_architecture(compile_rows(shipped_records(ids)))
    truth = {"b200/tensorrt_llm/dense": (0.3, 0.6, 0.3),
             "b200/tensorrt_llm/moe": (0.3, 0.2, 0.3)}
    simulated = _simulated(rows, truth, 0.05, np.random.default_rng(3), copies=2)
    split = calibrate(rows=simulated)
    assert split.fitted.families == ("moe",)  # dense is the reference
    for group, (_, hbm, _) in truth.items():
        assert split.fitted.informed[split.fitted.groups.index(group), 1]
        assert split.efficiency(group, "hbm_bandwidth_efficiency").value == pytest.approx(
            hbm, rel=0.15)
    merged = calibrate(rows=[replace(r, group="b200/tensorrt_llm") for r in simulated])
    # log(0.6 / 0.2) = 1.1 between the two: at least a few times the 0.05 noise is left
    assert merged.fitted.sigma > 3 * split.fitted.sigma
    # the split calibration is stored and answers a solve for its MoE group
    from chalk.applications.calibrate.rows import measurement_question
    from chalk.applications.calibrate.solved import calibrated_solve
    from chalk.applications.calibrate.stored import dumps, read

    path = tmp_path / "split.yaml"
    path.write_bytes(dumps(split))
    assert read(path).group_rows == {"b200/tensorrt_llm/dense": 8, "b200/tensorrt_llm/moe": 8}
    _, given, presets = measurement_question(shipped_records([ids[4]])[0])
    answer = calibrated_solve("tokens_per_second", given, presets, "b200/tensorrt_llm/moe",
                              str(path))
    assert answer.efficiencies[0].value == pytest.approx(
        split.efficiency("b200/tensorrt_llm/moe", "flops_efficiency").value, rel=1e-12)
    # with no group, the shared values of the model preset's architecture (MoE) and the
    # spread between groups
    unseen = calibrated_solve("tokens_per_second", given, presets, None, str(path))
    shared_moe = split.fitted.log_efficiency(None, "moe")
    assert [e.value for e in unseen.efficiencies] == pytest.approx(np.exp(shared_moe),
                                                                   rel=1e-12)
    # with no model preset it could not tell which architecture's values to use
    with pytest.raises(ChalkError, match="tells dense and MoE models apart; name one model"):
        calibrated_solve("tokens_per_second", given, [p for p in presets if p != "qwen3_30b_a3b"],
                         None, str(path))


def test_an_architecture_offset_moves_every_group_of_it():
    from chalk.applications.calibrate.fit import Fitted

    # theta = [mu_f, mu_h, mu_s, u_f(dense), u_f(moe), u_h(dense), u_h(moe), u_s(dense),
    #          u_s(moe), v_f(moe), v_h(moe), v_s(moe)] (s: the scale-up bandwidth)
    groups = ("b200/x/dense", "b200/x/moe")
    theta = np.array([-2.0, -1.0, -0.7, 0.1, 0.2, 0.3, 0.4, 0.05, 0.06, -0.5, -0.6, -0.1])
    fitted = Fitted(groups, theta, np.eye(12) * 0.01, 0.3, 10.0, 0.5, np.zeros(0),
                    np.zeros((0, 3)), np.ones((2, 3), bool), ("moe",))
    assert fitted.log_efficiency("b200/x/dense") == pytest.approx([-2.0 + 0.1, -1.0 + 0.3,
                                                                   -0.7 + 0.05])
    assert fitted.log_efficiency("b200/x/moe") == pytest.approx([-2 + 0.2 - 0.5,
                                                                 -1 + 0.4 - 0.6,
                                                                 -0.7 + 0.06 - 0.1])
    # a MoE group never calibrated: the shared values plus the MoE offset, and the spread
    # of a group's deviation (0.5^2) beside the parameters' (0.01 each of mu and v)
    assert fitted.log_efficiency("h200/y/moe") == pytest.approx([-2.5, -1.6, -0.8])
    assert fitted.parameter_variance("h200/y/moe", np.array([1.0, 0.0, 0.0])) == \
        pytest.approx(0.01 + 0.01 + 0.25)
    assert fitted.log_efficiency(None) == pytest.approx([-2.0, -1.0, -0.7])


# Rows whose source states an expert-parallel layout (attention data parallel, experts
# over every chip: DEP4 and DEP8), so each step waits on the all-to-all (issue 24: the
# communication the MoE rows miss).
EP_IDS = ["trtllm12_qwen3_235b_h200_fp8_1024_1024", "trtllm12_deepseek_r1_h200_fp8_1024_1024"]


@pytest.fixture(scope="module")
def ep_rows():
    return compile_rows(shipped_records(EP_IDS))


def test_a_stated_expert_parallel_layout_puts_the_all_to_all_on_the_step(ep_rows, rows):
    import chalk
    from chalk.applications.calibrate.rows import measurement_question

    # step_time = max(t_compute, t_memory) + t_ep_comm, and t_ep_comm is inversely
    # proportional to scale_up_bandwidth_efficiency. The row is a whole request: the replica
    # spends t_prefill_compute on each prompt and decoded / tokens_per_step of a step on
    # its decode, so at 0.5 the exposed all-to-all e doubles and the time per request grows
    # by decoded x e / tokens_per_step, with every piece chalk's own at peak
    row = ep_rows[0]
    targets, given, presets = measurement_question(shipped_records([row.id])[0])
    assert (given["expert_parallelism"], given["attention_tensor_parallelism"]) == \
        ("4 chip", "1 chip")
    s = chalk.solve(targets + ["t_ep_comm", "t_prefill_compute", "decoded_tokens",
                               "tokens_per_step", "replica_time_per_request"],
                    given=given, presets=presets)
    roofline = max(s.value("t_compute", "s"), s.value("t_memory", "s"))
    exposed = s.value("t_ep_comm", "s")
    assert exposed > 0
    share = s.value("decoded_tokens", "token") / s.value("tokens_per_step", "token")
    per_request = s.value("t_prefill_compute", "s") + share * (roofline + exposed)
    assert s.value("replica_time_per_request", "s") == pytest.approx(per_request, rel=1e-9)
    at_peak, half_links = row.rates(np.log([[1, 1, 1], [1, 1, 0.5]]))
    assert half_links / at_peak == pytest.approx(per_request / (per_request + share * exposed),
                                                 rel=1e-9)
    # a dense model sends no all-to-all: the links' efficiency changes nothing in its row
    dense = _by_id(rows, IDS[0])
    assert dense.rates(np.log([[1, 1, 0.5]]))[0] == pytest.approx(
        dense.rates(np.zeros((1, 3)))[0], rel=1e-12)


def test_a_link_efficiency_no_row_waits_on_is_held_at_the_bound_and_not_used(
        simulated_calibration, ep_rows):
    from chalk.applications.calibrate.rows import measurement_question

    # none of the six simulated rows has an all-to-all: nothing fixes the links' efficiency,
    # so it stays at 1 (its prior's centre), is reported as not identified, and a question
    # that waits on an all-to-all is refused rather than predicted from it
    shared = simulated_calibration.shared["scale_up_bandwidth_efficiency"]
    assert not shared.identified and shared.value == pytest.approx(1.0, abs=1e-6)
    assert "held at 1, the bound" in shared.note()
    assert "scale_up_bandwidth_efficiency: not identified" in simulated_calibration.text()
    assert all(e.identified for e in simulated_calibration.shared.values()
               if e.name != "scale_up_bandwidth_efficiency")
    _, given, presets = measurement_question(shipped_records([EP_IDS[0]])[0])
    with pytest.raises(ChalkError, match="depends on scale_up_bandwidth_efficiency, which none "
                                         "of the calibration's measurements did"):
        simulated_calibration.predict("tokens_per_second", given, presets,
                                      "h200/tensorrt_llm")
    # in cross-validation the row is said not scored, never dropped: leaving out both
    # all-to-all rows of a calibration leaves nothing that fixes the links
    rng = np.random.default_rng(5)
    truth = {"h200/tensorrt_llm": (0.15, 0.3, 0.2), "mi300x/vllm": (0.1, 0.2),
             "h100/nim": (0.15, 0.35)}
    simulated = _simulated(rows_of(simulated_calibration), truth, 0.05, rng) + [
        replace(r, source="ep") for r in _simulated(ep_rows, truth, 0.05, rng)]
    score = cross_validate(simulated, 0.5, "source")
    assert sorted(i for i, _ in score.unscored) == sorted(r.id for r in simulated
                                                          if r.source == "ep")


def rows_of(calibration):
    """One copy of each distinct question a calibration was fitted to."""
    seen = {}
    for r in calibration.rows:
        seen.setdefault(r.id.rsplit("_", 1)[0], replace(r, id=r.id.rsplit("_", 1)[0]))
    return list(seen.values())


@pytest.mark.slow
def test_the_links_efficiency_is_recovered_from_rows_that_wait_on_the_all_to_all(rows,
                                                                                  ep_rows):
    # flops 0.15, HBM 0.3 and links 0.2 (one set for every group, as the complete pooling
    # fitted here assumes; with the groups apart the misfit inflates the scatter and the
    # intervals over-cover): at 0.2 the exposed all-to-all is five times its peak time,
    # comparable to the roofline part, so the two DEP rows fix it; over 60 seeds its 90%
    # interval covers the truth 80-97% of the time, and it is always identified (20 seeds
    # could not tell 97% from 100%: 20 in 20 happens one time in eight at a true 90%)
    truth = {"h200/tensorrt_llm": (0.15, 0.3, 0.2), "mi300x/vllm": (0.15, 0.3),
             "h100/nim": (0.15, 0.3)}
    covered = 0
    for seed in range(60):
        rng = np.random.default_rng(100 + seed)
        simulated = _simulated(rows, truth, 0.1, rng, copies=2) + _simulated(
            ep_rows, truth, 0.1, rng, copies=2)
        calibration = calibrate(rows=simulated, prior_width=0.0)
        links = calibration.shared["scale_up_bandwidth_efficiency"]
        assert links.identified
        covered += links.low <= 0.2 <= links.high
    assert 48 <= covered <= 58, covered  # 80-97% of 60 is 48-58.2; 54 expected


def test_a_fit_of_exact_measurements_reaches_the_efficiencies_they_were_made_at(rows,
                                                                                 ep_rows):
    # measurements made at flops 0.15, HBM 0.3 and links 0.2 with a noise of 1e-4 in the
    # log: the mode is the truth to about that noise. The fit re-estimates the scatter at
    # each step, so its objective stays near the degrees of freedom wherever it is; when it
    # stopped on a small change of that objective between steps it ended at links 0.155
    # with a scatter of 0.033, 300 times the noise
    truth = {"h200/tensorrt_llm": (0.15, 0.3, 0.2), "mi300x/vllm": (0.15, 0.3),
             "h100/nim": (0.15, 0.3)}
    rng = np.random.default_rng(1)
    simulated = _simulated(rows, truth, 1e-4, rng, copies=2) + _simulated(
        ep_rows, truth, 1e-4, rng, copies=2)
    calibration = calibrate(rows=simulated, prior_width=0.0)
    shared = {name: e.value for name, e in calibration.shared.items()}
    assert shared == pytest.approx({"flops_efficiency": 0.15, "hbm_bandwidth_efficiency": 0.3,
                                    "scale_up_bandwidth_efficiency": 0.2}, rel=2e-3)
    assert calibration.fitted.sigma < 3e-4


def test_each_architecture_has_its_own_scatter(rows, ep_rows):
    # dense rows measured to 0.05 in the log and MoE rows (the two DEP rows, which share
    # h200/tensorrt_llm with two dense questions) to 0.5. One scatter for every row would
    # give both the same intervals and weigh a MoE row as heavily as a dense one; each
    # architecture's own scatter is about its noise: on the ~10 degrees of freedom of 12
    # MoE rows an sd estimate lies within a factor 0.6-1.4 of the truth at 95%, on the ~12
    # of 18 dense rows likewise, so 0.05 reads below 0.1 and 0.5 above 0.25
    truth = {"h200/tensorrt_llm": (0.15, 0.3, 0.2), "mi300x/vllm": (0.1, 0.2),
             "h100/nim": (0.15, 0.35)}
    rng = np.random.default_rng(7)
    simulated = _simulated(rows, truth, 0.05, rng, copies=3) + _simulated(
        ep_rows, truth, 0.5, rng, copies=6)
    calibration = calibrate(rows=simulated)
    fitted = calibration.fitted
    (dense, dense_dof), (moe, moe_dof) = fitted.scatter("dense"), fitted.scatter("moe")
    assert [a for a, _, _ in fitted.scatters] == ["dense", "moe"]
    assert dense < 0.1 < 0.25 < moe
    # the degrees of freedom split between them: n - edf over all 30 rows
    assert dense_dof + moe_dof == pytest.approx(fitted.dof, rel=1e-12)
    assert dense_dof < 18 and moe_dof < 12
    # a row's prediction takes its own architecture's scatter, and a stored calibration
    # carries both
    from chalk.applications.calibrate.stored import dumps, loads

    stored = loads(dumps(calibration).decode(), "cal.yaml", "test").fitted
    for row, sigma in ((simulated[0], dense), (simulated[-1], moe)):
        p = predict_row(fitted, row)
        assert p.scatter == sigma
        assert predict_row(stored, row) == p
    assert "dense 0.0" in calibration.text() and "moe 0." in calibration.text()
    # six MoE rows (fewer than SCATTER_ROWS, 10) cannot fix a scatter of their own: one
    # scatter for every row, which the noisy MoE rows widen past the dense rows' 0.05
    few = fit_rows(simulated[:18] + simulated[18:24])
    assert few.scatters == () and few.scatter("dense") == few.scatter("moe")
    assert few.sigma > 0.1


def test_a_row_answers_a_point_it_has_answered_from_memory(rows):
    # a cross-validation refit starts where the fit on every row ended: the row's answer
    # there is kept, not asked of chalk again (a copy without a question still answers it),
    # but only for the same metric (a per-chip rate of the same point is another answer)
    row = replace(rows[0], known={})
    x = np.log([[0.2, 0.3, 1.0]])
    logs, slopes = row.log_rates_and_slopes(x)
    unanswerable = replace(row, question=None)
    again = unanswerable.log_rates_and_slopes(x)
    assert again[0].tolist() == logs.tolist() and again[1].tolist() == slopes.tolist()
    with pytest.raises(AttributeError):
        replace(unanswerable, metric="per_chip").log_rates_and_slopes(x)
    with pytest.raises(AttributeError):  # another point
        unanswerable.log_rates_and_slopes(x - 0.1)
