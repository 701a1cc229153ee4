"""A question asked again at other values of its pins is not prepared again
(chalk.preparation.prepare_again), and answers exactly as one prepared afresh."""

from __future__ import annotations

import pytest

from chalk import preparation, solve


@pytest.fixture
def passes(monkeypatch):
    """How many times a question ran through the preparation passes; the cache of
    prepared questions starts empty and is emptied again afterwards."""
    ran = []
    passed = preparation._passed

    def counted(*args, **kwargs):
        ran.append(args[1])
        return passed(*args, **kwargs)

    monkeypatch.setattr(preparation, "_passed", counted)
    monkeypatch.setattr(preparation, "_PREPARED", {})
    return ran


def _fresh(*args, **kwargs):
    """``solve`` with nothing prepared before (the cache emptied first)."""
    preparation._PREPARED.clear()
    return solve(*args, **kwargs)


def _shown(solution) -> str:
    return str(solution) + solution.to_json()


def test_new_values_of_the_same_pins_reuse_the_preparation(passes):
    # 288 GB / 20 TB/s = 14.4 ms; 144 GB / 20 TB/s = 7.2 ms
    first = solve("hbm_drain_time", {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"})
    again = solve("hbm_drain_time", {"hbm_capacity": "144 GB", "hbm_bandwidth": "20 TB/s"})
    assert first.value("hbm_drain_time", "ms") == pytest.approx(14.4, rel=1e-12)
    assert again.value("hbm_drain_time", "ms") == pytest.approx(7.2, rel=1e-12)
    assert len(passes) == 1
    # the user's own text is shown, as a fresh preparation shows it
    assert "144 GB" in str(again)
    fresh = _fresh("hbm_drain_time", {"hbm_capacity": "144 GB", "hbm_bandwidth": "20 TB/s"})
    assert _shown(again) == _shown(fresh)


def test_another_shape_is_prepared_afresh(passes):
    solve("hbm_drain_time", {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"})
    solve("hbm_drain_time", {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"},
          ["lecture"])  # other presets
    solve("hbm_bandwidth", {"hbm_capacity": "288 GB", "hbm_drain_time": "14.4 ms"})
    assert len(passes) == 3


# DeepSeek-V3-like figures: 37e9 active, 64 sequences of 4k context, 8 chips of 989 TFLOP/s
COMPUTE = {"context_length": "4k token", "active_params": "37e9 param",
           "batch_size": "64 sequence", "chip_flops": "989 TFLOP/s", "n_chips": "8 chip"}
WITH_ATTENTION = 64 * (2 * 37e9 + 5e10) / (8 * 989e12)  # 1.00303 ms
WITHOUT_ATTENTION = 64 * (2 * 37e9) / (8 * 989e12)  # 0.59858 ms


def test_a_zero_is_another_shape(passes):
    # a zero takes the attention term out when the question is prepared: a later value
    # must put it back, however the cache is keyed
    absent = solve("t_compute", {**COMPUTE, "attention_flops_per_token": "0 FLOP/token"})
    present = solve("t_compute", {**COMPUTE, "attention_flops_per_token": "5e10 FLOP/token"})
    assert absent.value("t_compute", "s") == pytest.approx(WITHOUT_ATTENTION, rel=1e-9)
    assert present.value("t_compute", "s") == pytest.approx(WITH_ATTENTION, rel=1e-9)
    assert len(passes) == 2


def test_a_pin_whose_value_decided_the_preparation_prepares_again(passes):
    # Llama 3.1 70B's architecture gives 2 x 80 layers x 8 KV heads x 128 x 2 byte =
    # 327,680 byte/token; a user's KV size stands over it, and the note quotes the value
    # given: 327,680 / 160,000 = 2.048 ("a factor 2.05 apart"); 200,000 is
    # (327,680 - 200,000) / 327,680 = 39% below it
    presets = ["llama_3_1_70b", "h100", "bf16"]
    serving = {"n_chips": "8 chip", "batch_size": "32 sequence", "context_length": "8k token"}
    first = solve("step_time", {**serving, "kv_bytes_per_token": "160 kB/token"}, presets)
    again = solve("step_time", {**serving, "kv_bytes_per_token": "200 kB/token"}, presets)
    note = next(n for n in again.derivation.notes if n.startswith("kv_bytes_per_token:"))
    assert "you gave 200,000 byte/token" in note and "39% apart" in note
    assert any("a factor 2.05 apart" in n for n in first.derivation.notes)
    assert len(passes) == 2
    fresh = _fresh("step_time", {**serving, "kv_bytes_per_token": "200 kB/token"}, presets)
    assert _shown(again) == _shown(fresh)


def test_a_range_is_never_taken_from_an_earlier_question(passes):
    # a ranged pin is set aside or propagated by its values: prepared every time
    solve("hbm_drain_time", {"hbm_capacity": "100..200 GB", "hbm_bandwidth": "20 TB/s"},
          samples=1000)
    solve("hbm_drain_time", {"hbm_capacity": "100..200 GB", "hbm_bandwidth": "20 TB/s"},
          samples=1000)
    assert len(passes) == 2
