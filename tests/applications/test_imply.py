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


# --- issue 13: imply uses what it is told ------------------------------------------------

def _deepseek_v3_active_params() -> float:
    """DeepSeek-V3's active parameters from its published shape (arXiv:2412.19437, config):
    MLA attention, 3 dense then 58 MoE layers of 256 routed experts (8 active) and 1 shared,
    SwiGLU MLPs, a 129,280-entry vocabulary with untied output embedding."""
    d, layers, dense_layers = 7168, 61, 3
    attention = (d * 1536 + d * (512 + 64) + d * 128 * 128 + 512 * 128 * (128 + 128)
                 + 128 * 1536 * (128 + 64))
    expert = 3 * d * 2048
    moe_layers = layers - dense_layers
    shared = moe_layers * (expert * 1 + d * 256)  # shared expert and router per MoE layer
    dense = shared + attention * layers + 3 * 18432 * d * dense_layers + d * 129280
    return dense + expert * 256 * moe_layers * 8 / 256


def test_an_open_weight_sheet_uses_its_model_preset_and_says_so():
    result = imply("deepseek_v3_chat")
    named = {name: (value, origin) for name, value, origin in result.assumptions}
    assert named["model"][0] == "deepseek_v3" and "open-weight" in named["model"][1]
    assert "active_params" not in named  # the lecture's 100B guess is not used
    floor = deduction(result, "Cost floor").solution
    active = _deepseek_v3_active_params()
    assert active == pytest.approx(36.62e9, rel=1e-3)
    # H100 at 2.35 USD/h and 989 TFLOP/s; 2 FLOP per active parameter per token
    expected = 2.35 / 3600 * 2 * active / 989e12
    assert floor.value("cost_per_token_floor", "USD/token") == pytest.approx(expected, rel=1e-6)


def test_another_model_preset_replaces_the_sheets():
    result = imply("deepseek_v3_chat", presets=["llama_3_1_70b"])
    assert "model" not in {name for name, _, _ in result.assumptions}


def test_a_given_speedup_is_used_for_a_sheet_without_one():
    result = imply("gpt_5", given={"fast_speedup": "2"})
    fast = deduction(result, "Fast mode").solution
    # fast batch ratio = 1 / (price ratio x speed-up) = 1 / (2 x 2)
    assert fast.value("fast_batch_ratio") == pytest.approx(1 / 4)


def test_without_a_speedup_the_fast_section_says_how_to_give_one():
    fast = deduction(imply("gpt_5"), "Fast mode")
    assert fast.solution is None and "fast_speedup" in fast.skipped


@pytest.mark.slow  # seconds of searching: the slow tier
def test_fast_mode_runs_the_optimiser_when_the_deployment_is_known():
    result = imply("claude_opus_4_6", presets=["lecture", "deepseek_v3", "h100", "fp8"],
                   given={"context_length": "4k token", "n_chips": "32 chip"})
    fast = deduction(result, "Fast mode")
    optimiser = fast.details["optimiser"]
    assert optimiser["feasible"] and optimiser["batch_fast"] > 0
    # cost per token is step time / batch, so the fast batch is the normal batch / (k s)
    assert optimiser["batch_fast"] == pytest.approx(optimiser["batch"] / (6 * 2.5))
    assert any(line.startswith("fast tier: batch_size") for line in fast.lines)


def test_a_given_kv_size_becomes_a_cross_check_of_the_price_step():
    result = imply("gemini_2_5_pro", given={"kv_bytes_per_token": "100000 byte/token"})
    kv = deduction(result, "KV-cache bytes")
    # careful conventions: 100e9 param x 2 FLOP/param/token / (300 FLOP/byte x 200k token)
    implied = 100e9 * 2 / (300 * 2e5)
    assert kv.solution.value("kv_bytes_per_token", "byte/token") == pytest.approx(implied)
    assert len(kv.checks) == 1
    # 100,000 / 3,333 = 30: format_gap reads |a - b| / max as "a factor 30 apart"
    assert "you gave" in kv.checks[0] and "a factor 30 apart" in kv.checks[0]


def test_a_model_and_precision_give_the_cache_its_kv_size():
    result = imply("deepseek_v3_chat", presets=["deepseek_v3", "bf16"])
    cache = deduction(result, "Prompt-cache")
    assert not cache.skipped
    # MLA caches the 512-wide latent and the 64-wide RoPE key, 61 layers, 2 bytes each
    assert any(f"{(512 + 64) * 61 * 2:,} byte/token" in line for line in cache.lines)


def test_free_storage_is_paid_from_the_read_price():
    result = imply("deepseek_v3_chat", presets=["deepseek_v3", "bf16"])
    cache = deduction(result, "Prompt-cache")
    verdict = cache.details["verdict"]
    # one read at 0.07 USD/Mtoken holds 70,272 byte x 1e6 = 70.272 GB for
    # 0.07 / (70.272 x 0.000388 USD/GB/h) = 2.57 h in host DRAM (over 1 h: allowed) and
    # 0.07 / (70.272 x 0.0844) = 42 s in the dearest HBM (under 1 h: ruled out)
    assert "hbm" not in verdict["kinds"] and "dram" in verdict["kinds"]
    assert verdict["favoured"] is None  # no hold time: nothing chooses between the rest


def test_a_ranged_pin_prints_its_median_interval_and_driver():
    result = imply("gemini_2_5_pro", given={"active_params": "50e9..200e9 param"})
    kv = deduction(result, "KV-cache bytes")
    text = "\n".join(kv.lines)
    # kv is proportional to active; log-uniform 50e9..200e9 has median sqrt(50e9 x 200e9)
    median = 2 * (50e9 * 200e9) ** 0.5 / (300 * 2e5)
    assert kv.solution.median("kv_bytes_per_token", "byte/token").magnitude == pytest.approx(
        median, rel=0.02)
    assert "(median; 90% interval" in text
    assert "spread driven by active_params 100%" in text


def test_comparison_table_rows_worked_by_hand():
    from chalk.applications.comparison import compare

    rows = {r["sheet"]: r for r in compare(["gemini_2_5_pro", "deepseek_v3_chat"]).rows()}
    gemini, deepseek = rows["gemini_2_5_pro"], rows["deepseek_v3_chat"]
    assert gemini["output/input"] == "8"  # 10 / 1.25
    assert gemini["decode util."] == "0.125"
    assert gemini["KV byte/token"] == "3,333 (step)"  # 100e9 x 2 / (300 x 200k)
    # 4.5 USD/Mtoken/hour over 3,333.3 byte/token = 1.35e-9 USD/byte/h = 1.35 USD/GB/h
    assert gemini["cache USD/GB/h"] == "1.35 (storage)"
    assert deepseek["output/input"] == "4.074"  # 1.10 / 0.27
    # no long-context tier: the row's KV is the one its tier verdict uses, the preset's
    # MLA latent (512 + 64) x 61 layers x 2 bytes
    assert deepseek["KV byte/token"] == f"{(512 + 64) * 61 * 2:,} (deepseek_v3)"
    assert deepseek["cache USD/GB/h"] == "free storage"
    assert deepseek["tier"] == "dram/flash/disk"


def test_cli_several_sheets_and_a_plot(run_cli, tmp_path):
    out_file = tmp_path / "tiers.png"
    status, out, err = run_cli("imply", "gemini_2_5_pro", "claude_opus_4_6", "--plot",
                               str(out_file))
    assert status == 0, err
    assert out.splitlines()[0].split()[:3] == ["sheet", "output/input", "decode"]
    assert out_file.read_bytes()[:4] == b"\x89PNG"


def test_cli_all_and_sheets_together_is_a_usage_error(run_cli):
    status, out, err = run_cli("imply", "gemini_2_5_pro", "--all")
    assert status == 2 and out == "" and "not both" in err
