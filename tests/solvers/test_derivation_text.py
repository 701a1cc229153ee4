"""How a derivation reads (solvers.records.derivation)."""

from __future__ import annotations

import pytest

from chalk import solve


def test_a_step_with_no_inputs_is_not_written_out_twice():
    # With no speculation (the lecture's conventions) the relation for the tokens a decode
    # step gives each sequence is 1 token/sequence outright: there is nothing to substitute,
    # so the formula is followed by its value, not by itself again (chalk imply printed
    # "= token/sequence" twice before "= 1 token/sequence").
    found = solve("decode_tokens_per_step", given={"active_params": "100e9 param"},
                  presets=["lecture"])
    assert found.value("decode_tokens_per_step", "token/sequence") == 1.0
    body = found.derivation.text().splitlines()
    start = body.index("derivation")
    assert [line.strip() for line in body[start + 1:start + 3]] == [
        "1. decode_tokens_per_step = token/sequence", "= 1 token/sequence"]


def test_a_step_that_renames_a_quantity_is_followed_by_its_value():
    # remat_cost_per_token = cost_per_token_floor: putting the value in would print the
    # result in brackets, "= (0.132 USD/Mtoken)", just above "= 0.132 USD/Mtoken".
    # H100 at 2.35 USD/h and 989 TFLOP/s, 100e9 active parameters at 2 FLOP each:
    # 2.35 / 3600 x 200e9 / 989e12 = 1.32e-7 USD/token.
    found = solve("remat_cost_per_token", given={"active_params": "100e9 param"},
                  presets=["h100"])
    assert found.value("remat_cost_per_token", "USD/token") == pytest.approx(
        2.35 / 3600 * 200e9 / 989e12, rel=1e-3)
    body = [line.strip() for line in found.derivation.text().splitlines()]
    step = body.index("3. remat_cost_per_token = cost_per_token_floor")
    assert body[step + 1] == "= 0.132 USD/Mtoken"
    # the step before it, a formula of three inputs, keeps the line with them put in
    assert "= (2.35 USD/h)·(200e9 FLOP/token)/(989 TFLOP/s)" in body
