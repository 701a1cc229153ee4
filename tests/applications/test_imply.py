"""``chalk imply``: what a price sheet implies, and the assumptions it states."""

import json

import pytest

from chalk.applications.imply import imply


def deduction(implication, title_start):
    return next(d for d in implication.deductions if d.title.startswith(title_start))


def test_gemini_long_context_tier_gives_the_lectures_kv_bytes():
    result = imply("gemini_2_5_pro", given={"active_params": "100e9 param"}, presets="lecture")
    kv = deduction(result, "KV-cache bytes").solution
    # 200,000 x kv x 300 FLOP/byte = 1 token x 100e9 x 1 FLOP/param/token
    assert kv.value("kv_bytes_per_token", "byte/token") == pytest.approx(100e9 / (300 * 2e5))
    assert kv.value("kv_bytes_per_token", "byte/token") == pytest.approx(1667, abs=1)


def test_assumptions_are_stated_with_their_origin():
    result = imply("claude_opus_4_6")
    named = {name: origin for name, _, origin in result.assumptions}
    assert "lecture" in named["active_params"]  # the default, with its timestamp
    assert "hardware_intensity" in named and "chip" in named


def test_decode_utilisation_from_price_ratio():
    result = imply("claude_opus_4_6")
    ratio = deduction(result, "Decode utilisation").solution
    assert ratio.value("output_input_price_ratio") == pytest.approx(25 / 5)
    assert ratio.value("decode_mfu_ratio") == pytest.approx(1 / 5)


def test_cache_writes_point_at_tiers_by_drain_time():
    result = imply("claude_opus_4_6")
    five, hour = [d for d in result.deductions if d.title.startswith("Prompt-cache")]
    # (6.25 - 5) USD/Mtoken per 5 minutes; (10 - 5) per hour
    assert five.solution.value("cache_storage_price", "USD/Mtoken/hour") == pytest.approx(15)
    assert hour.solution.value("cache_storage_price", "USD/Mtoken/hour") == pytest.approx(5)
    assert any("flash" in line for line in five.lines)


def test_fast_mode_batch_ratio():
    result = imply("claude_opus_4_6")
    fast = deduction(result, "Fast mode").solution
    assert fast.value("fast_batch_ratio") == pytest.approx(1 / (6 * 2.5))


def test_sheet_without_long_context_says_why():
    result = imply("claude_haiku_4_5")
    kv = deduction(result, "KV-cache bytes")
    assert kv.solution is None and "no long-context" in kv.skipped


def test_cli_json_and_yaml_file(run_cli, tmp_path):
    sheet = tmp_path / "mine.yaml"
    sheet.write_text(
        "id: my_model\nprovider: Me\nmodel: M1\nsource: my notes\ndate: 2026-11-01\n"
        "prices: {input: 1 USD/Mtoken, output: 4 USD/Mtoken}\n"
        "long_context: {threshold: 128k token, input: 2 USD/Mtoken}\n")
    status, out, err = run_cli("imply", str(sheet), "--json", "--preset", "lecture")
    assert status == 0, err
    body = json.loads(out)
    assert body["sheet"]["id"] == "my_model"
    kv = body["deductions"][0]
    assert kv["results"]["kv_bytes_per_token"]["value"] == pytest.approx(100e9 / (300 * 128e3))


def test_cli_unknown_sheet(run_cli):
    status, out, err = run_cli("imply", "gemini_9_ultra")
    assert status == 2 and out == ""
    assert err.startswith("chalk: error: unknown price sheet 'gemini_9_ultra'")
