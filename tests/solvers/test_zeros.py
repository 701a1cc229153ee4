"""Pinned zeros put into the relations (solvers/pinning/zeros.py)."""

import pytest
from chalk.knowledge import load_model
from chalk.solvers.pinning.zeros import put_zeros

from chalk import solve


def test_a_vanishing_difference_is_kept_as_an_equality():
    # attention_surplus_time_per_flop = 1/attention_chip_flops - 1/chip_flops: at zero
    # the relation says 1/attention_chip_flops = 1/chip_flops. It used to be set aside as
    # if it only defined an absent part, which left attention's peak unknown.
    model = load_model()
    absent = put_zeros(model, frozenset({"attention_surplus_time_per_flop"}))
    assert "attention_surplus_time_per_flop" not in absent.set_aside
    kept = absent.model.relations["attention_surplus_time_per_flop"]
    names = {s.name for s in kept.lhs.free_symbols | kept.rhs.free_symbols}
    assert names == {"attention_chip_flops", "chip_flops"}


def test_attention_runs_at_the_matmul_peak_by_the_conventions():
    # Regression: asking attention_chip_flops on an H100 in bf16 refused ("also pin
    # attention_bf16_share, attention_fp8_share") although the conventions say attention
    # multiplies at chip_flops: the H100's dense BF16 peak, 989 TFLOP/s (datasheet).
    s = solve("attention_chip_flops", presets=["h100", "bf16"])
    assert s.value("attention_chip_flops", "TFLOP/s") == pytest.approx(989, rel=1e-12)


def test_a_sum_that_vanishes_still_sets_its_relation_aside():
    # kv_window_bytes_per_sequence = 0 (no sliding-window layers) empties a product, not
    # a difference: the relation that defines it only says that part is absent.
    absent = put_zeros(load_model(), frozenset({"kv_window_bytes_per_sequence"}))
    assert "kv_window_bytes_per_sequence" in absent.set_aside
