"""The largest whole batch that fits (issue 23 item 6): a floor, where replicas and chips
are ceilings. Every number derived by hand here."""

import pytest
from chalk.symbolic.errors import NoSolution, RoundedUp

from chalk import solve

# 70e9 parameters in bf16 (140e9 bytes) on 8 chips of 80 GB (640e9 bytes); 8,000 tokens
# of context at 327,680 byte/token is 2,621,440,000 bytes of KV a sequence
PINS = {"n_chips": "8 chip", "hbm_capacity": "80 GB", "total_params": "70e9 param",
        "bytes_per_param": "2 byte/param", "kv_bytes_per_token": "327680 byte/token",
        "context_length": "8000 token"}
KV = 8000 * 327_680
FITS = (640e9 - 140e9) / KV  # 500e9 / 2.62144e9 = 190.73 sequences


def test_the_largest_whole_batch_rounds_down():
    s = solve(["max_batch_size", "max_whole_batch_size"], PINS)
    assert s.value("max_batch_size", "sequence") == pytest.approx(FITS, rel=1e-12)
    assert FITS == pytest.approx(190.73, rel=1e-4)
    assert s.value("max_whole_batch_size", "sequence") == 190
    assert "rounded down to 190 sequence" in s.headline()
    assert s.to_dict()["results"]["max_whole_batch_size"]["rounded_down_from"] == {
        "max_batch_size": pytest.approx(FITS, rel=1e-12)}


def test_the_whole_batch_fits_and_one_more_does_not():
    # 190 sequences: (140e9 + 190 x 2.62144e9) / 640e9 = 0.99699; 191: 1.00109
    assert solve("memory_fill", {**PINS, "batch_size": "190 sequence"}).value(
        "memory_fill") == pytest.approx((140e9 + 190 * KV) / 640e9, rel=1e-12)
    assert (140e9 + 190 * KV) / 640e9 < 1 < (140e9 + 191 * KV) / 640e9


def test_pipeline_stages_and_usable_hbm_shrink_the_batch():
    # two stages keep two micro-batches in flight: 190.73 / 2 = 95.37, 95 whole
    staged = solve("max_whole_batch_size", {**PINS, "pipeline_stages": "2"})
    assert staged.value("max_whole_batch_size", "sequence") == 95
    # vLLM's 0.9 of HBM: (576e9 - 140e9) / 2.62144e9 = 166.32, 166 whole
    usable = solve(["max_batch_size", "max_whole_batch_size"],
                   {**PINS, "usable_hbm_fraction": "0.9"})
    assert usable.value("max_batch_size", "sequence") == pytest.approx(436e9 / KV, rel=1e-12)
    assert usable.value("max_whole_batch_size", "sequence") == 166


def test_the_capacity_a_continuous_batch_needs_backwards():
    # 200 sequences: 8 x capacity = 140e9 + 200 x 2.62144e9 = 664.288e9, 83.036 GB a chip
    pins = {k: v for k, v in PINS.items() if k != "hbm_capacity"}
    s = solve("hbm_capacity", {**pins, "max_batch_size": "200 sequence"})
    assert s.value("hbm_capacity", "GB") == pytest.approx((140e9 + 200 * KV) / 8 / 1e9,
                                                          rel=1e-12)


def test_a_whole_batch_gives_back_no_one_capacity():
    # 190 whole sequences hold for every max_batch_size from 190 to below 191
    pins = {k: v for k, v in PINS.items() if k != "hbm_capacity"}
    with pytest.raises(RoundedUp) as caught:
        solve("hbm_capacity", {**pins, "max_whole_batch_size": "190 sequence"})
    assert ("every value of max_batch_size at or above 190 sequence and below 191 sequence"
            in caught.value.message)


def test_weights_that_do_not_fit_leave_no_batch():
    # one chip: 80e9 - 140e9 bytes of room is negative
    with pytest.raises(NoSolution):
        solve("max_whole_batch_size", {**PINS, "n_chips": "1 chip"})
