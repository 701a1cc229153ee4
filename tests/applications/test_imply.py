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
    # DeepSeek's decode layout, attention groups of 4 chips (TP4, one all-reduce a layer;
    # DeepSeek-V3, arXiv:2412.19437, sec. 3.4.2): each group holds MLA's latent 4 times.
    # Megatron's layout (the conventions) would hold it on all 32 chips, 32 copies, and no
    # normal batch within 100 ms and the HBM then leaves room for the fast tier
    result = imply("claude_opus_4_6", presets=["lecture", "deepseek_v3", "h100", "fp8"],
                   given={"context_length": "4k token", "n_chips": "32 chip",
                          "attention_tensor_parallelism": "4 chip",
                          "allreduces_per_layer": "1"})
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


# --- issue 25: imply reads every sheet ------------------------------------------------------

# The lecture's defaults behind the numbers below: 100e9 active parameters, 2 FLOP per
# parameter per token (careful conventions), 300 FLOP/byte, an H100 at 989 TFLOP/s and
# 2.35 USD/h. The floor is then 2.35 / 3600 x 2 x 100e9 / 989e12 = 1.3202e-7 USD/token.
FLOOR_100B = 2.35 / 3600 * 2 * 100e9 / 989e12


def test_a_read_price_alone_is_read(run_cli):
    result = imply("gpt_5_4")
    cache = deduction(result, "Prompt-cache")
    assert not cache.skipped and cache.title.endswith("(read price only)")
    # KV from the 272k step: 2 x 100e9 / (300 x 272,000) = 2,451 byte/token
    assert cache.solution.value("kv_bytes_per_token", "byte/token") == pytest.approx(
        2 * 100e9 / (300 * 272e3))
    assert cache.details["verdict"]["kinds"]  # the read-back test ran on some tier
    assert any("cache-read price 0.25 USD/Mtoken pays for reading" in line
               for line in cache.lines)
    read = deduction(result, "Cache reads")
    # 0.25 / 2.5 = 0.1 of the input price; 0.25e-6 / 1.3202e-7 = 1.89 times the recompute cost
    assert 0.25e-6 / FLOOR_100B == pytest.approx(1.894, abs=1e-3)
    assert any("0.1 times the input price 2.5 USD/Mtoken, and 1.89 times" in line
               for line in read.lines)
    status, out, err = run_cli("imply", "gpt_5_4", "--brief")
    assert status == 0, err
    assert "prices no cache storage, writes or reads" not in out


def test_a_read_price_below_recomputing_says_the_kv_is_kept():
    read = deduction(imply("gpt_5_nano"), "Cache reads")
    # 0.005e-6 / 1.3202e-7 = 0.0379: a cached read earns less than recomputing costs
    assert any("0.0379 times what recomputing" in line for line in read.lines)
    assert any(line.startswith("below the cost of recomputing") for line in read.lines)


def test_each_cache_number_names_the_price_it_comes_from():
    result = imply("claude_opus_4_6")
    five, hour = [d for d in result.deductions if d.key == "cache"]
    assert "priced from the 5 min write, 6.25 USD/Mtoken, less the input price 5 USD/Mtoken, " \
           "spread over 5 min" in five.lines
    assert "priced from the 1 hour write, 10 USD/Mtoken, less the input price 5 USD/Mtoken, " \
           "spread over 1 hour" in hour.lines
    # (10 - 5) USD/Mtoken over 1 hour at 3,333.3 byte/token: 5e-6 / 3,333.3 x 1e9 = 1.5
    assert hour.solution.value("cache_price_per_byte_hour", "USD/GB/hour") == pytest.approx(1.5)


def test_the_table_and_the_atlas_show_the_same_named_cache_price():
    from chalk.knowledge.price_sheets import price_sheet

    from chalk.applications.atlas import atlas
    from chalk.applications.comparison import compare

    row = compare(["claude_opus_4_6"]).rows()[0]
    # the shortest-hold write: (6.25 - 5) USD/Mtoken over 5/60 hour = 15 USD/Mtoken/hour,
    # over 3,333.3 byte/token = 4.5e-9 USD/byte/hour = 4.5 USD/GB/hour
    assert row["cache USD/GB/h"] == "4.5 (5 min write)"
    fitted = atlas([price_sheet("claude_opus_4_6"), price_sheet("gemini_2_5_pro")])
    cell = fitted.row("claude_opus_4_6").cells()["cache USD/GB/h"]
    assert cell.startswith("4.5 (") and cell.endswith("(5 min write)")
    assert fitted.row("gemini_2_5_pro").cells()["cache USD/GB/h"].endswith("(storage)")


QWEN_SHEET = """id: my_qwen
provider: Me
model: Qwen3 235B hosted
preset: qwen3_235b_a22b
prices:
  input: 0.2 USD/Mtoken
  output: 0.8 USD/Mtoken
  cache_read: 0.02 USD/Mtoken
  cache_storage: 1 USD/Mtoken/hour
long_context:
  threshold: 128k token
  input: 0.4 USD/Mtoken
"""


def test_each_table_row_uses_one_kv_size(tmp_path, run_cli):
    from chalk.applications.comparison import compare

    sheet = tmp_path / "my_qwen.yaml"
    sheet.write_text(QWEN_SHEET)
    result = compare(["gemini_2_5_pro", str(sheet)])
    rows = {r["sheet"]: r for r in result.rows()}
    # Qwen3-235B-A22B (config.json): 94 layers x 4 KV heads x 128 wide x (K and V) x 2 bytes
    kv = 94 * 4 * 128 * 2 * 2
    assert kv == 192_512
    assert rows["my_qwen"]["KV byte/token"] == "192,512 (qwen3_235b_a22b)"
    # 1 USD/Mtoken/hour = 1e-6 USD/token/hour; over 192,512 byte/token x 1e9 = 0.00519
    assert rows["my_qwen"]["cache USD/GB/h"] == f"{1e-6 / kv * 1e9:.3g} (storage)"
    assert rows["my_qwen"]["cache USD/GB/h"] == "0.00519 (storage)"
    # the price step's own size is named beside it, not mixed in: 2 FLOP x 22e9 active (the
    # preset's published count) / (300 FLOP/byte x 128,000 token) = 1,145.8 byte/token
    note = next(n for n in result.notes() if n.startswith("my_qwen:"))
    assert "at KV 192,512 byte/token from qwen3_235b_a22b" in note
    assert f"the long-context step implies {2 * 22e9 / (300 * 128e3):,.0f} byte/token" in note
    # the other sheet's row is its own: 2 x 100e9 / (300 x 200k) = 3,333; 4.5e-6 / 3,333.3
    assert rows["gemini_2_5_pro"]["KV byte/token"] == "3,333 (step)"
    assert rows["gemini_2_5_pro"]["cache USD/GB/h"] == "1.35 (storage)"
    status, out, err = run_cli("imply", str(sheet), "gemini_2_5_pro")
    assert status == 0, err
    assert "192,512 (qwen3_235b_a22b)  0.00519 (storage)" in out


def test_a_price_below_the_floor_bounds_the_model():
    result = imply("gpt_5_nano")
    floor = deduction(result, "Cost floor")
    # 0.05e-6 / 1.3202e-7 = 0.379 of the floor
    assert any("0.05 USD/Mtoken is 0.379 times this floor" in line for line in floor.lines)
    # price = floor solved for active_params: 0.05e-6 x 989e12 / (2 x 2.35 / 3600) = 37.88e9
    largest = 0.05e-6 * 989e12 / (2 * 2.35 / 3600)
    assert floor.details["below_floor"]["active_params"] == pytest.approx(largest)
    assert floor.details["below_floor"]["chip"] == "h100"
    line = next(line for line in floor.lines if line.startswith("below the floor"))
    assert "at most active_params = 37.88e9 param on h100" in line
    assert "2 FLOP/(param·token)" in line and "2.35 USD/h" in line and "or a subsidy" in line


def test_a_price_below_the_floor_with_a_known_model_is_a_subsidy(tmp_path):
    sheet = tmp_path / "cheap.yaml"
    sheet.write_text("id: cheap\nprovider: Me\nmodel: V3 cheap\npreset: deepseek_v3\n"
                     "prices: {input: 0.01 USD/Mtoken, output: 0.04 USD/Mtoken}\n")
    floor = deduction(imply(str(sheet)), "Cost floor")
    # DeepSeek-V3's 36.6e9 active on an H100: 2.35 / 3600 x 2 x 36.6e9 / 989e12 = 0.0483
    # USD/Mtoken, so 0.01 USD/Mtoken is about 0.207 of the floor
    expected = 0.01e-6 / (2.35 / 3600 * 2 * _deepseek_v3_active_params() / 989e12)
    assert any(f"is {expected:.3g} times this floor" in line for line in floor.lines)
    line = next(line for line in floor.lines if line.startswith("below the floor"))
    assert "fixed by its preset" in line and "a subsidy" in line


def test_imply_prints_one_kv_median():
    result = imply("gemini_2_5_pro", given={"active_params": "100e9..150e9 param"})
    step = deduction(result, "KV-cache bytes")
    cache = next(d for d in result.deductions if d.key == "cache")
    median = step.solution.median("kv_bytes_per_token", "byte/token").magnitude
    shown = f"{median:,.0f} byte/token"
    # the cache solves the KV from the same step and ranges (same seed): one median
    assert cache.solution.median("kv_bytes_per_token", "byte/token").magnitude == median
    assert f"KV bytes per token: {shown} (median) from the long-context price step" \
        in cache.lines
    # the mid-point of a log-uniform 100e9..150e9 is sqrt(100e9 x 150e9) = 122.47e9, where
    # the KV is 2 x 122.47e9 / (300 x 200k) = 4,082 byte/token: the derivation says so
    midpoint = 2 * (100e9 * 150e9) ** 0.5 / (300 * 2e5)
    text = result.text()
    heading = next(line for line in text.splitlines()
                   if "derivation (at each range's mid-point" in line)
    assert f"kv_bytes_per_token = {midpoint:,.0f} byte/token here" in heading
    assert "the median above is over the Monte Carlo samples" in heading
    # no summary line quotes the mid-point value as if it were the answer
    summary = [line for d in result.deductions for line in d.lines]
    if f"{midpoint:,.0f}" != f"{median:,.0f}":
        assert not any(f"{midpoint:,.0f} byte/token" in line for line in summary)


def test_a_batch_discount_is_read():
    batch = deduction(imply("gemini_2_5_pro"), "Batch tier")
    # 0.5 x the price: the standard tier is k = 1/0.5 = 2 times dearer at s = 1, so the
    # standard batch is 1/(k s) = 0.5 of the batch tier's: the batch tier runs at least 2x
    assert batch.solution.value("fast_batch_ratio") == pytest.approx(0.5)
    assert any("runs at least 2 times the standard batch" in line for line in batch.lines)
    assert any("fast_speedup = 1" in line for line in batch.lines)


def test_a_batch_ratio_that_is_no_discount_is_refused(tmp_path, run_cli):
    sheet = tmp_path / "bad.yaml"
    sheet.write_text("id: bad\nprovider: Me\nmodel: M\n"
                     "prices: {input: 1 USD/Mtoken, output: 4 USD/Mtoken}\n"
                     "batch: {price_ratio: 2}\n")
    status, out, err = run_cli("imply", str(sheet))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "batch.price_ratio" in err and "fast_mode" in err


def test_the_shipped_batch_discount_is_sourced_and_dated():
    from chalk.knowledge.price_sheets import price_sheet

    ratio = price_sheet("gemini_2_5_pro").batch["price_ratio"]
    # the sheet's note records "Batch -50%": the batch price is 0.5 x the standard one
    assert ratio.value == pytest.approx(0.5)
    assert ratio.source.startswith("https://ai.google.dev/gemini-api/docs/pricing")
    assert "2025" in ratio.date


def test_the_tier_plot_places_only_priced_caches(run_cli, tmp_path):
    # gpt_5_4 has a read price alone and deepseek_v3_chat free storage: tier verdicts with
    # no price per GB-hour to place; claude_opus_4_6 has two writes, one point each
    from chalk.applications.comparison import compare, implied_tier_figure

    figure = implied_tier_figure(compare(["gpt_5_4", "deepseek_v3_chat",
                                          "claude_opus_4_6"]).implications)
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert labels == ["claude_opus_4_6\n5 min write", "claude_opus_4_6\n1 hour write"]
