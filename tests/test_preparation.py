"""Preparation as ordered passes: each pin set is planned once."""

import pytest

import chalk.preparation as preparation
from chalk.preparation import PASSES, prepare


def _counting(monkeypatch):
    """Record the (model, pins, targets) of every plan preparation makes."""
    calls = []
    original = preparation.make_plan

    def make_plan(model, pinned, targets, *args, **kwargs):
        calls.append((id(model), frozenset(pinned), tuple(targets)))
        return original(model, pinned, targets, *args, **kwargs)

    monkeypatch.setattr(preparation, "make_plan", make_plan)
    return calls


def test_a_preset_question_plans_each_pin_set_once(monkeypatch):
    calls = _counting(monkeypatch)
    q = prepare("critical_batch_size", presets=["h100", "bf16", "deepseek_v3"])
    # The pin sets this question goes through, by hand: (1) the pins after the MLA
    # variant is chosen; (2) those without the conventions' zero input-embedding table
    # (its widths give it; the zero attention copies stay, as the copies are counted
    # from the chips of a group and no n_chips is pinned), the two headline sizes (36.7e9
    # active, 671e9 total), which the architecture determines, and the H100's datasheet
    # FLOP/s, which bf16's share of the matmuls derives; (3) the model with the absent
    # terms taken out (no all-to-all, no draft), whose zeros fix the quantities they
    # alone define. Before the passes the first pin set was planned again once zeros
    # were settled, and the second twice. No condition is reported: without n_chips the
    # pins fix neither memory_fill nor weight_fill.
    assert len(calls) == len(set(calls)) == 3
    assert calls[0][1] - calls[1][1] == {"active_params", "total_params", "chip_flops",
                                         "input_embedding_params"}
    assert calls[1][0] != calls[2][0]  # another model: the absent terms are out
    assert q.plan.determined and q.reported == ()


def test_a_pass_that_changes_nothing_plans_nothing(monkeypatch):
    q = prepare("hbm_drain_time", {"hbm_capacity": "80 GB", "hbm_bandwidth": "3.35 TB/s"})
    # the pins include zeros (the conventions' absent terms): a first look until put in
    state = preparation.State(q.model, q.targets, q.pins, q.stated, q.conventions,
                              explain=False, plan=q.plan)
    calls = _counting(monkeypatch)
    for step in PASSES[:-1]:  # the last one plans the reported quantities, if any
        assert step(state).plan is q.plan
    assert calls == []


def test_a_chip_headline_gives_way_once_the_lectures_intensity_has():
    # Regression (merge of precision per part with the lecture's conventions): the H100's
    # datasheet 989 TFLOP/s waits on the lecture's 300 FLOP/byte, which gives way to the
    # chip only after DeepSeek-V3's headline sizes have; one round left chip_flops at 989
    # beside fp8's 1,979 and the step was refused as a conflict. 32 H100s at the FP8
    # dense peak: 32 x 1,979e12 = 6.333e16 FLOP/s
    from chalk import solve

    s = solve("step_time", {"n_chips": "32 chip", "context_length": "4k token",
                            "batch_size": "64 sequence"},
              ["lecture", "deepseek_v3", "h100", "fp8"])
    assert s.value("replica_flops", "FLOP/s") == pytest.approx(32 * 1979e12, rel=1e-12)


def test_a_users_chip_flops_stands_over_the_precision_presets_format_peak():
    # Regression (issue 22, precision per part): the bf16 preset's shares (1 bf16, 0 fp8,
    # 0 fp4) times the H800's per-format peaks determine chip_flops only once the zero
    # shares are put in: before, the FP4 term held the H800's unknown FP4 peak, so the
    # user's chip_flops was not seen as a second value of a preset-derived quantity, and
    # once the zeros went in the pins were refused as a conflict in matmul_peak_by_format.
    from chalk import solve

    s = solve("t_compute", {"n_chips": "8 chip", "chip_flops": "500 TFLOP/s",
                            "batch_size": "32 sequence", "active_params": "70e9 param",
                            "attention_flops_per_token": "0 FLOP/token"},
              ["h800", "bf16"])
    # the user's 500 TFLOP/s is used: 32 sequences x 1 token x 2 FLOP/param x 70e9 param
    # = 4.48e12 FLOP over 8 chips x 500e12 FLOP/s = 4e15 FLOP/s -> 1.12e-3 s
    # (at the presets' 989 TFLOP/s it would be 4.48e12 / 7.912e15 = 0.566 ms)
    assert s.value("t_compute", "s") == pytest.approx(1.12e-3, rel=1e-12)
    # the presets' value is the cross-check: H800 dense BF16 989 TFLOP/s
    # (knowledge/data/accelerators.yaml, getdeploying.com and DeepSeek-V3 sec. 3.2.2), all
    # of the matmuls in bf16: 1 / (1 / 989e12) = 989 TFLOP/s; the gap
    # (989 - 500) / 989 = 0.4944 -> "49.4% apart"
    note = next(n for n in s.derivation.notes if n.startswith("chip_flops:"))
    assert note == ("chip_flops: you gave 500 TFLOP/s; presets bf16 and h800 give "
                    "989 TFLOP/s: 49.4% apart (relation matmul_peak_by_format set aside: "
                    "your value stands)")


def test_a_stated_count_asked_alone_is_the_statement():
    # Regression: asking DeepSeek-V3's kv_lora_rank alone refused with "pins disagree in
    # relation attention_width_mla". Set aside as the question's target, the preset's 512
    # no longer marked the model as latent attention, so the grouped-query and latent
    # forms of the attention widths both stayed and over-determined each other. The kind
    # of model is read from every statement, asked or not: the config's kv_lora_rank is
    # 512 (DeepSeek-V3 config_671B.json).
    from chalk import solve

    for presets in (["deepseek_v3"], ["h200", "fp8", "deepseek_v3"]):
        s = solve("kv_lora_rank", presets=presets)
        assert s.value("kv_lora_rank") == 512


def test_a_stated_share_asked_alone_is_the_statement():
    # Regression: asking fp8's matmul share on an H200 refused: set aside as the target,
    # the share no longer derived the chip's FP8-era peak, so H200's datasheet headline
    # (989 TFLOP/s, its dense BF16 figure) stayed and gave 989/1979 = 0.5 against the
    # statement's 1. The headline gives way to the statement whether or not it is asked,
    # so the share is 1 and the chip's peak is its FP8 figure, 1979 TFLOP/s (NVIDIA H200
    # datasheet, dense), asked alone or together.
    from chalk import solve

    s = solve("matmul_fp8_share", presets=["h200", "fp8"])
    assert s.value("matmul_fp8_share") == 1
    both = solve(["matmul_fp8_share", "chip_flops"], presets=["h200", "fp8"])
    alone = solve("chip_flops", presets=["h200", "fp8"])
    assert both.value("matmul_fp8_share") == 1
    assert both.value("chip_flops", "TFLOP/s") == pytest.approx(1979, rel=1e-12)
    assert alone.value("chip_flops", "TFLOP/s") == pytest.approx(1979, rel=1e-12)


# The cross-check of a user's chip_flops over an H100 in bf16: the H100's dense BF16 peak,
# 989 TFLOP/s (knowledge/data/accelerators.yaml, the H100 datasheet), all of the matmuls
# in bf16 (bf16's shares 1, 0, 0): 1 / (1 / 989e12) = 989 TFLOP/s; against the user's
# 500, (989 - 500) / 989 = 0.4944 -> "49.4% apart".
CHIP_FLOPS_NOTE = ("chip_flops: you gave 500 TFLOP/s; presets bf16 and h100 give 989 TFLOP/s: "
                   "49.4% apart (relation matmul_peak_by_format set aside: your value stands)")
CHIP_FLOPS_ASKED = ("hardware_intensity", "--preset", "h100", "--preset", "bf16",
                    "--given", "chip_flops=500 TFLOP/s")


def test_a_users_chip_flops_is_cross_checked_where_the_answer_rests_on_no_zero():
    # Regression (issue 22): hardware_intensity = chip_flops / hbm_bandwidth rests on no
    # relation with an absent term, so the zeros were not put in, bf16's zero FP4 share
    # never took the H100's unknown FP4 peak out of matmul_peak_by_format, and the
    # user's chip_flops stood over the presets' 989 TFLOP/s without a word
    from chalk import solve

    s = solve("hardware_intensity", {"chip_flops": "500 TFLOP/s"}, ["h100", "bf16"])
    # the user's value is used: 500e12 FLOP/s / 3.35e12 byte/s (H100 HBM3) = 149.25
    assert s.value("hardware_intensity", "FLOP/byte") == pytest.approx(500 / 3.35, rel=1e-12)
    assert CHIP_FLOPS_NOTE in s.derivation.notes
    assert CHIP_FLOPS_NOTE in s.to_dict()["notes"]


@pytest.mark.parametrize("flag", [None, "--brief", "--json"])
def test_the_chip_flops_cross_check_is_printed_by_every_solve_output(run_cli, flag):
    import json

    for _ in range(2):  # asked again: from the cache of compiled questions, if it kept it
        status, out, err = run_cli("solve", *CHIP_FLOPS_ASKED, *([flag] if flag else []))
        assert status == 0, err
        if flag == "--json":
            assert CHIP_FLOPS_NOTE in json.loads(out)["notes"]
        else:
            assert f"note: {CHIP_FLOPS_NOTE}" in out


def test_every_imply_deduction_cross_checks_a_users_chip_flops():
    # Regression (issue 22): the decode-utilisation deduction (prices alone) rests on no
    # zero, and it was the one deduction of the sheet without the cross-check
    from chalk.applications.imply import imply

    result = imply("deepseek_v3_chat", {"chip_flops": "500 TFLOP/s"}, ["h100", "bf16"])
    solved = [d for d in result.deductions if d.solution is not None]
    assert len(solved) >= 4  # decode ratio, cache prices, cache reads, cost floor
    for d in solved:
        assert CHIP_FLOPS_NOTE in d.solution.derivation.notes, d.title
    assert result.text().count(f"note: {CHIP_FLOPS_NOTE}") == len(solved)
