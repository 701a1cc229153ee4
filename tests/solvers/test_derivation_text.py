"""How a derivation reads (solvers.records.derivation)."""

from __future__ import annotations

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
