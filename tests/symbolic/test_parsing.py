"""The restricted parser: what it reads, and what it refuses without evaluating."""

import math

import pytest
from chalk.symbolic.errors import ParseError, UnitError
from chalk.symbolic.parsing import parse_number, parse_unit, parse_value, split_pin
from chalk.symbolic.units import Q_


def base(text):
    parsed = parse_value(text)
    return Q_(parsed.magnitude, parsed.unit).to_base_units().magnitude


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3.35 TB/s", 3.35e12),
        ("288 GB", 288e9),
        ("200k token", 2e5),
        ("200K token", 2e5),
        ("60 day", 60 * 86400),
        ("95 GiB", 95 * 2**30),
        ("989e12 FLOP/s", 989e12),
        ("5,354 sequence", 5354),
        ("2 USD/hour", 2 / 3600),
        ("1.25 USD/Mtoken", 1.25e-6),
        ("2 FLOP/(param·token)", 2),
        ("2 FLOP/param/token", 2),
        ("2 FLOP / param / token", 2),
        ("3.35TB/s", 3.35e12),
        ("14.4ms", 0.0144),
        ("3 tokens", 3),
        ("30.84e6 chip*hour", 30.84e6 * 3600),
        ("50%", 0.5),
    ],
)
def test_values_with_units_reach_base_units(text, expected):
    assert math.isclose(base(text), expected, rel_tol=1e-12)


# Counts written the field's way. The rule: a scale letter glued to a plain number and
# followed by a space (or the end) multiplies the number; a unit comes after a space, or
# is glued letters that run on into a unit name. Each base value is worked by hand.
@pytest.mark.parametrize(
    ("text", "expected", "unit"),
    [
        ("100B param", 100 * 1e9, "param"),            # B glued, alone: a billion params
        ("15T token", 15 * 1e12, "token"),
        ("1.5M token", 1.5 * 1e6, "token"),
        ("200k token", 200 * 1e3, "token"),
        ("80 GB", 80 * 1e9, "byte"),                   # unit after a space: gigabyte
        ("80GB", 80 * 1e9, "byte"),                    # G runs on into GB: the unit
        ("2 B/param", 2, "byte/param"),                # B after a space: byte
        ("2B/param", 2, "byte/param"),                 # B runs on into '/': the unit
        ("100 B", 100, "byte"),
        ("1e9B", 1e9, "byte"),                         # no multiplier after an exponent
        ("3.35 TB/s", 3.35e12, "byte/s"),
        ("3 USD/Mtok", 3 / 1e6, "USD/token"),          # USD per million tokens
        ("3 USD/Mtoken", 3 / 1e6, "USD/token"),
        ("15 USD/1M tokens", 15 / 1e6, "USD/token"),
        ("15 USD/1M token", 15 / 1e6, "USD/token"),
        ("3 USD/M tokens", 3 / 1e6, "USD/token"),
        ("3 USD/1k tokens", 3 / 1e3, "USD/token"),
        ("3 USD/1B tokens", 3 / 1e9, "USD/token"),     # 1B inside a unit: giga
        ("1.5 M token", 1.5e6, "token"),               # a scale word before a unit name
        ("4.5 USD/Mtoken/hour", 4.5 / 1e6 / 3600, "USD/(token·s)"),
        ("3 Mtokens", 3e6, "token"),
        ("5 params", 5, "param"),
        ("3 sequences", 3, "sequence"),
        ("8 chips", 8, "chip"),
        ("3 bytes", 3, "byte"),
        ("3 seconds", 3, "s"),
        ("2 hours", 2 * 3600, "s"),
        ("6e23 FLOPs", 6e23, "FLOP"),
    ],
)
def test_counts_written_the_fields_way(text, expected, unit):
    parsed = parse_value(text)
    quantity = Q_(parsed.magnitude, parsed.unit).to_base_units()
    assert quantity.units == parse_unit(unit)
    assert math.isclose(quantity.magnitude, expected, rel_tol=1e-12)


def test_a_glued_multiplier_alone_is_a_plain_count():
    # 100B = 100 * 1e9 = 1e11, no unit: a quantity with a unit then asks for one
    parsed = parse_value("100B")
    assert parsed.unit is None and parsed.magnitude == 1e11


@pytest.mark.parametrize(
    ("text", "suggestions", "words"),
    [
        ("3 tokn", ("token",), "not a unit chalk knows"),
        ("3 sequnce", ("sequence",), "not a unit chalk knows"),
        ("3 gb", ("GB",), "not a unit chalk knows"),
        ("3 Mtokn", ("Mtoken",), "not a unit chalk knows"),
        ("3 Bparam", ("Gparam",), "'100B param'"),
        ("3 Ktoken", ("ktoken",), "'100K token'"),
        ("3 TFLOPS", ("TFLOP/s", "TFLOP"), "FLOP per second"),
        ("3 USD/1M", (), "'USD/1M token'"),
        ("100k/s", (), "'1.5k token'"),
    ],
)
def test_unknown_units_suggest_the_accepted_spelling(text, suggestions, words):
    with pytest.raises(UnitError) as info:
        parse_value(text)
    assert info.value.suggestions[:len(suggestions)] == suggestions
    assert words in info.value.message and "\n" not in info.value.message


def test_bare_number_has_no_unit():
    parsed = parse_value("8")
    assert parsed.magnitude == 8 and parsed.unit is None


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "lambda: 1",
        "().__class__",
        "1e999 s",
        "nan s",
        "inf s",
        "1.2.3 s",
        "5,35 s",
        "3 s; rm -rf /",
        "2 byte/(param",
        "2 byte^x",
        "x" * 300,
    ],
)
def test_refuses_non_values(text):
    with pytest.raises((ParseError, UnitError)):
        parse_value(text)


def test_unknown_unit_names_the_unit():
    with pytest.raises(UnitError) as info:
        parse_value("3 furlong")
    assert info.value.unit == "furlong"


def test_unit_powers_are_bounded():
    with pytest.raises(ParseError):
        parse_unit("s^99")


def test_number_and_rest():
    value, rest = parse_number("1.5M param")
    assert value == 1.5e6 and rest.strip() == "param"


def test_split_pin_rejects_code_names():
    with pytest.raises(ParseError):
        split_pin("__class__=1")
    with pytest.raises(ParseError):
        split_pin("os.system=1")
    assert split_pin("batch_size = 2000 sequence") == ("batch_size", "2000 sequence")


@pytest.mark.parametrize("text", ["3 \u03bcs", "3 \u00b5s", "3 \u03bcs/token"])
def test_greek_mu_reads_as_the_micro_sign(text):
    # U+03BC (Greek small letter mu) and U+00B5 (micro sign) look the same: 3 μs = 3e-6 s
    parsed = parse_value(text)
    assert parsed.unit == parse_unit(text[2:].replace("\u03bc", "\u00b5"))
    assert base(text) == pytest.approx(3e-6)


# Prices as people paste them (issue 25: "$3 / 1M tokens" was refused). Each is 3 USD per
# 1e6 tokens, i.e. 3e-6 USD/token, or the hand-converted figure named beside it.
@pytest.mark.parametrize("text, usd_per_token", [
    ("$3 / 1M tokens", 3e-6),
    ("$3/Mtok", 3e-6),
    ("3 $/Mtok", 3e-6),
    ("3 USD per million tokens", 3e-6),
    ("3 USD per 1 million tokens", 3e-6),
    ("30¢ per million tokens", 0.30e-6),  # 30 cent = 0.30 USD
    ("300 ¢/Mtoken", 3e-6),
    ("$0.003 per thousand tokens", 3e-6),  # 0.003 USD / 1e3 token
])
def test_pasted_prices_read_as_usd_per_token(text, usd_per_token):
    from chalk.symbolic.units import ureg

    parsed = parse_value(text)
    value = (parsed.magnitude * parsed.unit).to(ureg.USD / ureg.token).magnitude
    assert value == pytest.approx(usd_per_token, rel=1e-12)


def test_per_hour_and_a_bare_dollar_amount():
    from chalk.symbolic.units import ureg

    rent = parse_value("$2.50 per hour")
    assert (rent.magnitude * rent.unit).to(ureg.USD / ureg.hour).magnitude == 2.5
    assert parse_value("$3").unit == ureg.USD


def test_a_dollar_sign_with_no_number_names_the_whole_text():
    with pytest.raises(ParseError, match=r"cannot read '\$\$3'"):
        parse_value("$$3")
