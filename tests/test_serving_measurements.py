"""The serving measurements table (issue 23's acceptance): every row sourced, dated and with
its conditions; chalk's bound beside each, checked by hand on two rows; the table runs."""

import sys
from pathlib import Path

import pytest
from chalk.knowledge import data
from chalk.knowledge.presets import chip_preset, preset
from chalk.symbolic.errors import DataError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import serving_bounds  # noqa: E402  (benchmarks/serving_bounds.py)

ROWS = data.serving_measurements()


def _moe(model: str) -> bool:
    experts = data.models()[model].facts.get("n_experts")
    return experts is not None and experts.value > 1


def test_the_dataset_spans_chips_engines_and_both_kinds_of_model():
    # issue 24 item 1: at least 60 rows over 4 chip kinds, 3 engines, dense and MoE models
    assert len(ROWS) >= 60
    assert len({r.fields["chip"] for r in ROWS.values()}) >= 4
    engines = {r.fields["engine"] for r in ROWS.values()}
    assert len(engines) >= 3
    assert engines <= {"tensorrt_llm", "vllm", "sglang", "nim"}  # one spelling per engine
    kinds = {_moe(r.fields["model"]) for r in ROWS.values()}
    assert kinds == {True, False}
    # the first address of each source: more than one publisher
    sources = {r.fields["source"].split()[0] for r in ROWS.values()}
    assert len(sources) >= 4


def test_published_latencies_agree_with_the_published_rates():
    # A stream emits at most one token per TPOT after its first, so c streams emit at most
    # c / TPOT in total (the first token waits TTFT, which only lowers the rate): e.g. NIM's
    # 70B at concurrency 5, 218.48 token/s <= 5 / 21.83 ms = 229.0. A swapped column or a
    # slipped digit breaks it.
    timed = [r for r in ROWS.values() if "tpot" in r.facts]
    assert len(timed) >= 6
    for record in timed:
        tpot = record.facts["tpot"].quantity().to("s").magnitude
        streams = record.facts["batch_size"].quantity().to("sequence").magnitude
        rate = record.facts["measured"].quantity().to("token/s").magnitude
        per_stream = rate if record.fields["metric"] == "per_user" else rate / streams
        assert per_stream <= 1 / tpot, record.id


@pytest.mark.parametrize("ident", sorted(ROWS))
def test_every_row_has_source_date_and_conditions(ident):
    record = ROWS[ident]
    fields = record.fields
    assert fields["source"].startswith("https://")
    assert fields["date"].strip() and fields["engine_version"].strip()
    assert fields["parallelism"].strip()
    assert fields["metric"] in ("total", "per_chip", "per_user")
    assert preset(fields["model"]).kind == "model"
    assert preset(fields["precision"]).kind == "precision"
    # the chip has a datasheet peak for the format the row ran at
    assert chip_preset(fields["chip"], fields["precision"]).kind == "accelerator"
    facts = record.facts
    assert facts["measured"].quantity().to("token/s").magnitude > 0
    assert facts["n_chips"].quantity().to("chip").magnitude >= 1
    assert facts["input_tokens"].quantity().to("token").magnitude > 0
    assert "output_tokens" in facts or fields.get("note")
    for latency in ("ttft", "tpot"):
        if latency in facts:
            assert facts[latency].quantity().to("s").magnitude > 0
    for fact in facts.values():  # each number under the row's source and date
        assert (fact.source, fact.date) == (fields["source"], fields["date"])


def _write(tmp_path, text):
    path = tmp_path / "serving_measurements.yaml"
    path.write_text(text, encoding="utf-8")
    return path


ENTRY = """measurements:
- id: row
  name: a row
  source: https://example.org
  date: "2025"
  engine: an_engine
  engine_version: "1.0"
  parallelism: TP1
  model: llama_3_1_8b
  chip: h100
  precision: fp8
  metric: {metric}
  facts: {{{facts}}}
"""
FACTS = 'measured: "1 token/s", n_chips: "1 chip", input_tokens: "1 token"'


@pytest.mark.parametrize(("entry", "message"), [
    (ENTRY.format(metric="total", facts=FACTS).replace("  source: https://example.org\n", ""),
     "serving_measurements.yaml, entry 'row', field 'source': missing"),
    (ENTRY.format(metric="total", facts='measured: "1 token/s", n_chips: "1 chip"'),
     "serving_measurements.yaml, entry 'row', field 'input_tokens': missing"),
    (ENTRY.format(metric="per_node", facts=FACTS + ', output_tokens: "1 token"'),
     "serving_measurements.yaml, entry 'row', field 'metric': 'per_node' is not one of "
     "total, per_chip, per_user"),
    (ENTRY.format(metric="total", facts=FACTS),
     "serving_measurements.yaml, entry 'row', field 'output_tokens': missing: give it, or "
     "say in a note why the source does not"),
    # a misspelt key would otherwise be dropped without a word
    (ENTRY.format(metric="total", facts=FACTS + ', output_tokens: "1 token"').replace(
        "  parallelism: TP1\n", "  parallelism: TP1\n  paralellism: TP2\n"),
     "serving_measurements.yaml, entry 'row': unknown key 'paralellism'; did you mean "
     "'parallelism'?"),
    (ENTRY.format(metric="total", facts=FACTS + ', output_tokens: "1 token", tftt: "1 s"'),
     "serving_measurements.yaml, entry 'row', field 'facts': unknown key 'tftt'; did you "
     "mean 'ttft'?"),
    # a latency in tokens, a rate in seconds: the dimension each fact needs
    (ENTRY.format(metric="total", facts=FACTS + ', output_tokens: "1 token", ttft: "5 token"'),
     "serving_measurements.yaml, entry 'row', field 'ttft': '5 token' is not in s "
     "(e.g. '5 s')"),
    # a layout is counted in chips, as the quantities it pins are
    (ENTRY.format(metric="total", facts=FACTS + ', output_tokens: "1 token", '
                                                'expert_parallelism: "4 token"'),
     "serving_measurements.yaml, entry 'row', field 'expert_parallelism': '4 token' is not "
     "in chip (e.g. '4 chip')"),
    (ENTRY.format(metric="total", facts='measured: "1 s", n_chips: "1 chip", '
                                        'input_tokens: "1 token", output_tokens: "1 token"'),
     "serving_measurements.yaml, entry 'row', field 'measured': '1 s' is not in token/s "
     "(e.g. '1 token/s')"),
    (ENTRY.format(metric="total", facts=FACTS + ', output_tokens: "1 token"').replace(
        "  parallelism: TP1\n", ""),
     "serving_measurements.yaml, entry 'row', field 'parallelism': missing"),
    (ENTRY.format(metric="total", facts=FACTS + ', output_tokens: "1 token"').replace(
        "engine: an_engine", "engine: TensorRT-LLM 1.0"),
     "serving_measurements.yaml, entry 'row', field 'engine': expected an identifier such "
     "as 'tensorrt_llm', found 'TensorRT-LLM 1.0'"),
    (ENTRY.format(metric="total", facts=FACTS + ', output_tokens: "1 token"').replace(
        'engine_version: "1.0"', "engine_version: [1, 0]"),
     "serving_measurements.yaml, entry 'row', field 'engine_version': expected text, "
     "found a list"),
])
def test_a_row_without_its_conditions_is_refused(tmp_path, entry, message):
    # a user's file (chalk calibrate --data) goes through the shipped file's reader
    with pytest.raises(DataError) as info:
        data.serving_measurements(_write(tmp_path, entry))
    assert info.value.message == message


def test_a_users_file_is_read_as_the_shipped_one(tmp_path):
    entry = ENTRY.format(metric="per_user", facts=FACTS + ', output_tokens: "1 token"')
    (record,) = data.serving_measurements(_write(tmp_path, entry)).values()
    assert (record.id, record.fields["chip"], record.fields["metric"]) == ("row", "h100",
                                                                           "per_user")
    assert record.facts["measured"].source == "https://example.org"
    assert len(data.serving_measurements()) == len(ROWS)  # the shipped file, untouched


def test_a_row_without_a_batch_asks_for_the_batch_hbm_holds():
    targets, given, presets = serving_bounds.question(ROWS["trtllm_llama70b_h200_fp8_1000_1000"])
    # 1000 in, 1000 out: the mean context of the decode is 1000 + 1000 / 2
    assert given == {"n_chips": "1 chip", "context_length": "1500 token", "memory_fill": "1"}
    assert "batch_size" in targets
    assert [p.name if hasattr(p, "name") else p for p in presets] == [
        "h200_fp8", "llama_3_1_70b", "fp8"]


def test_bound_of_a_row_that_fills_hbm_by_hand():
    # Llama 3.1/3.3 70B at fp8: 80 x (2x8192x64x128 + 2x8192x8x128 + 3x8192x28672)
    # + 2 x 128256 x 8192 = 70,552,387,584 weight bytes held; KV 2 x 80 x 8 x 128 x 1 B =
    # 163,840 B per token, x 1500 tokens per sequence. HBM full (141 GB) holds
    # (141e9 - weights) / (1500 x 163,840) = 286.65 sequences. A step reads all of HBM but
    # the input-embedding table (128256 x 8192 = 1,050,673,152 B: a token looks up one row):
    # (141e9 - 1,050,673,152) / 4.8e12 = 29.156 ms (memory-bound: the compute is ~20.7 ms;
    # one chip, dense, so no all-to-all), 286.65 / 29.156 ms = 9,832 token/s.
    weights = 80 * (2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128 + 3 * 8192 * 28672) \
        + 2 * 128256 * 8192
    embedding = 128256 * 8192
    batch = (141e9 - weights) / (1500 * 163840)
    step = (141e9 - embedding) / 4.8e12
    row = serving_bounds.bound_row(ROWS["trtllm_llama70b_h200_fp8_1000_1000"])
    assert row.batch == pytest.approx(batch, rel=1e-6)
    assert row.bound == pytest.approx(batch / step, rel=1e-6)                  # 9,832 token/s
    assert row.regime == "memory"
    assert row.ratio == pytest.approx(2909 / row.bound)                        # 0.30


def test_bound_of_a_row_at_batch_one_by_hand():
    # Llama 3.1 405B at fp8 on 8 MI300X: weights 126 x (2x16384x128x128 + 2x16384x8x128
    # + 3x16384x53248) + 2 x 128256 x 16384 = 405,849,243,648 B, of which a step reads all
    # but the input-embedding table (128256 x 16384 = 2,101,346,304 B): 403,747,897,344 B;
    # KV 2 x 126 x 8 x 128 x 1 B = 258,048 B per token at the mean context 128 + 128 / 2 =
    # 192. One step reads both over 8 x 5.3 TB/s: 9.524 ms (dense over tensor parallelism:
    # no expert-parallel all-to-all), so at most 105.0 token/s (measured: 36).
    weights = 126 * (2 * 16384 * 128 * 128 + 2 * 16384 * 8 * 128 + 3 * 16384 * 53248) \
        + 2 * 128256 * 16384
    embedding = 128256 * 16384
    step = (weights - embedding + 192 * 258048) / (8 * 5.3e12)
    row = serving_bounds.bound_row(ROWS["oracle_llama405b_mi300x_fp8_batch1"])
    assert row.bound == pytest.approx(1 / step, rel=1e-6)
    assert row.ratio == pytest.approx(36 * step, rel=1e-6)


def test_summary_medians_and_flags():
    rows = [serving_bounds.Row("a", "", 1, 4, 1, "memory", True),     # 0.25
            serving_bounds.Row("b", "", 3, 4, 1, "memory", True),     # 0.75
            serving_bounds.Row("c", "", 5, 4, 1, "memory", False)]    # 1.25: beats its bound
    s = serving_bounds.summary(rows)
    assert s["median"] == pytest.approx(0.75)
    assert s["median_comparable"] == pytest.approx(0.5)
    assert s["beats_bound"] == ["c"]
    assert s["at_least_half"] == 2


@pytest.mark.slow  # seconds of searching: the slow tier
def test_the_table_runs_over_every_row(capsys):
    figures = serving_bounds.main()
    out = capsys.readouterr().out
    assert all(ident in out for ident in ROWS)
    assert f"median measured/bound: {figures['median']:.2f} over {len(ROWS)} rows" in out
    # every flagged row is printed as such
    assert out.count("BEATS ITS BOUND") == len(figures["beats_bound"])


@pytest.mark.parametrize(("entry", "message"), [
    (ENTRY.format(metric="total", facts=FACTS + ', output_tokens: "1 token"').replace(
        "model: llama_3_1_8b", "model: llama_9_8b"),
     "serving_measurements.yaml, entry 'row', field 'model': 'llama_9_8b' is not a model "
     "chalk knows; run 'chalk list presets'"),
    (ENTRY.format(metric="total", facts=FACTS + ', output_tokens: "1 token"').replace(
        "precision: fp8", "precision: fp4"),
     "serving_measurements.yaml, entry 'row', field 'precision': NVIDIA H100 SXM5 80GB has "
     "no fp4 peak in its datasheet (it has bf16, fp8); give the format the run used"),
    (ENTRY.format(metric="total", facts=FACTS + ', output_tokens: "1 token"').replace(
        "chip: h100", "chip: h1000"),
     "serving_measurements.yaml, entry 'row', field 'chip': unknown preset 'h1000'; did you mean "
     "'h100' or 'h800' or 'h200'?"),
])
def test_a_row_naming_no_preset_is_refused_before_any_question(tmp_path, entry, message):
    # a row's question is asked of its model on its chip at its format (chalk calibrate)
    from chalk.applications.calibrate.rows import shipped_records

    with pytest.raises(DataError) as info:
        shipped_records(data=_write(tmp_path, entry))
    assert info.value.message == message
