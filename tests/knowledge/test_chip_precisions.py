"""Chip presets state their datasheet peaks per number format, and the precision a question
computes at picks one of them (issue 23, items 4 and 8); the two model presets added for the
measurements table count their published sizes from their configs."""

import pytest
from chalk.knowledge.presets import chip_preset, preset
from chalk.symbolic.errors import UnknownNameError, UsageError

from chalk import solve


def flops(p):
    return solve("chip_flops", presets=[p]).value("chip_flops", "FLOP/s")


def test_h100_states_its_bf16_and_fp8_peaks_and_computes_at_bf16():
    # NVIDIA H100 SXM datasheet: 989 TFLOP/s BF16 dense, 1,979 TFLOP/s FP8 dense, no FP4
    values = preset("h100").values
    assert values["chip_flops_bf16"].text == "989 TFLOP/s"
    assert values["chip_flops_fp8"].text == "1.979 PFLOP/s"
    assert "chip_flops_fp4" not in values
    assert values["chip_flops_fp8"].source.startswith("https://www.nvidia.com/en-us/data-center/h100/")
    # what existed stays: the plain chip preset computes at its BF16 dense peak
    assert flops("h100") == pytest.approx(989e12)


def test_every_precision_variant_states_all_the_chip_peaks():
    # b200_fp4 computes at FP4, yet still says what the chip does at BF16 and FP8
    # (HGX B200: 2.25 / 4.5 / 9 PFLOP/s dense)
    values = preset("b200_fp4").values
    assert {k: values[k].text for k in ("chip_flops_bf16", "chip_flops_fp8",
                                        "chip_flops_fp4", "chip_flops")} == {
        "chip_flops_bf16": "2.25 PFLOP/s", "chip_flops_fp8": "4.5 PFLOP/s",
        "chip_flops_fp4": "9 PFLOP/s", "chip_flops": "9 PFLOP/s"}


@pytest.mark.parametrize(("chip", "precision", "peak"), [
    ("b200", "bf16", 2.25e15),     # HGX B200 dense BF16
    ("b200", "fp8", 4.5e15),
    ("b200", "fp4", 9e15),
    ("gb200", "fp4", 10e15),       # GB200 NVL72: rack 1,440 PF sparse FP4 / 72 / 2
    ("mi300x", "fp8", 2.6149e15),  # AMD MI300X: 5,229.8 TF sparse FP8 / 2
    ("mi355x", "bf16", 2.5e15),
])
def test_chip_preset_takes_the_peak_of_the_precision_computed_at(chip, precision, peak):
    assert flops(chip_preset(chip, precision)) == pytest.approx(peak)


def test_fp4_peak_is_not_applied_to_a_model_computing_in_bf16():
    # the same step at BF16 and at FP4 on one B200: 1000 sequences x 2 FLOP x 1e10 active
    # parameters = 2e13 FLOP, over 2.25e15 FLOP/s = 8.889 ms; over 9e15 FLOP/s = 2.222 ms
    given = {"n_chips": "1 chip", "batch_size": "1000 sequence", "active_params": "1e10 param",
             "attention_flops_per_token": "0 FLOP/token"}

    def t_compute(precision):
        s = solve("t_compute", given=given, presets=[chip_preset("b200", precision), precision])
        return s.value("t_compute", "s")

    assert t_compute("bf16") == pytest.approx(2e13 / 2.25e15)
    assert t_compute("fp4") == pytest.approx(2e13 / 9e15)


def test_short_chip_names_take_a_precision_too():
    assert preset("gb200_fp8").name == "gb200_nvl72_fp8"
    assert chip_preset("gb300", "fp4").name == "gb300_nvl72_fp4"


def test_a_format_the_datasheet_lacks_is_refused_with_the_formats_it_has():
    with pytest.raises(UsageError) as info:
        chip_preset("h100", "fp4")
    assert info.value.message == ("NVIDIA H100 SXM5 80GB has no fp4 peak in its datasheet (it "
                                  "has bf16, fp8); pick one of those or pin chip_flops")
    with pytest.raises(UnknownNameError) as info:
        chip_preset("h100", "fp16")
    assert info.value.name == "fp16" and info.value.suggestions == ("bf16",)
    with pytest.raises(UnknownNameError) as info:
        chip_preset("h1000", "fp8")
    assert info.value.name == "h1000" and "h100" in info.value.suggestions


def counts(model):
    s = solve(["total_params", "active_params", "kv_bytes_per_token"], presets=[model, "bf16"])
    return (s.value("total_params", "param"), s.value("active_params", "param"),
            s.value("kv_bytes_per_token", "byte/token"))


def test_qwen3_30b_a3b_counts_its_published_size():
    # config: 48 layers, d 2048, 32 heads / 4 KV of 128, 128 experts of 768, top 8,
    # no shared expert, vocab 151,936, untied
    d, vocab = 2048, 151936
    attention = 2 * d * 32 * 128 + 2 * d * 4 * 128        # 18,874,368 per layer
    experts = 48 * 128 * 3 * d * 768                       # 28,991,029,248
    dense = 48 * attention + 48 * d * 128 + vocab * d      # + routers + output head
    total = dense + experts + vocab * d                    # 30,531,911,680
    active = dense + experts * 8 / 128
    got_total, got_active, kv = counts("qwen3_30b_a3b")
    assert got_total == pytest.approx(total, rel=1e-9)
    assert got_active == pytest.approx(active, rel=1e-9)
    assert total == pytest.approx(30.5e9, rel=0.01)        # the model card's 30.5B
    # the card's 3.3B counts the 311M input table this convention leaves out
    assert active + vocab * d == pytest.approx(3.3e9, rel=0.02)
    assert kv == 2 * 48 * 4 * 128 * 2                      # 98,304 byte/token at bf16


def test_llama_3_1_8b_counts_its_published_size():
    # config: 32 layers, d 4096, 32 heads / 8 KV of 128, FFN 14,336, vocab 128,256, untied
    d, vocab = 4096, 128256
    layer = 2 * d * 32 * 128 + 2 * d * 8 * 128 + 3 * d * 14336   # 218,103,808
    total = 32 * layer + 2 * vocab * d                            # 8,029,995,008
    got_total, got_active, kv = counts("llama_3_1_8b")
    assert got_total == pytest.approx(total, rel=1e-9)
    assert got_active == pytest.approx(total - vocab * d, rel=1e-9)
    assert total == pytest.approx(8.03e9, rel=0.001)
    assert kv == 2 * 32 * 8 * 128 * 2                             # 131,072 byte/token
