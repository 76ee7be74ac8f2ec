import pytest

from gateway_core.money import format_usd, parse_price_per_mtok, parse_usd


@pytest.mark.parametrize(
    ("text", "micros"),
    [
        ("0", 0),
        ("1", 1_000_000),
        ("12.5", 12_500_000),
        ("12.50", 12_500_000),
        ("0.000001", 1),
        (".5", 500_000),
        ("5.", 5_000_000),
        (" 3.25 ", 3_250_000),
        ("1.0000000", 1_000_000),  # extra zeros add no precision
        ("123456789.123456", 123_456_789_123_456),
    ],
)
def test_parse_usd(text, micros):
    assert parse_usd(text) == micros
    assert isinstance(parse_usd(text), int)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-1", "negative"),
        ("-0.5", "negative"),
        ("abc", "decimal number"),
        ("", "decimal number"),
        ("1,5", "decimal number"),
        ("1e3", "decimal number"),
        ("1_000", "decimal number"),
        ("+5", "decimal number"),
        ("NaN", "decimal number"),
        ("nan", "decimal number"),
        ("inf", "decimal number"),
        ("Infinity", "decimal number"),
        ("0.0000001", "6 decimal places"),
        ("1.1234567", "6 decimal places"),
        ("99999999999999999999", "too large"),
    ],
)
def test_parse_usd_rejects(text, message):
    with pytest.raises(ValueError, match=message):
        parse_usd(text)


def test_parse_usd_rejects_non_strings():
    with pytest.raises(ValueError, match="decimal number in a string"):
        parse_usd(1.5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("micros", "text"),
    [
        (0, "0.00"),
        (12_500_000, "12.50"),
        (1_000_000, "1.00"),
        (1, "0.000001"),
        (1_234_567, "1.234567"),
        (1_230_000, "1.23"),
        (1_234_000, "1.234"),
        (-500_000, "-0.50"),
        (10**12, "1000000.00"),
    ],
)
def test_format_usd(micros, text):
    assert format_usd(micros) == text


def test_format_then_parse_round_trips():
    for micros in (0, 1, 999_999, 1_000_001, 42_424_242):
        assert parse_usd(format_usd(micros)) == micros


def test_parse_price_per_mtok():
    assert parse_price_per_mtok("2.50") == 2_500_000
    assert parse_price_per_mtok("0.075") == 75_000
    with pytest.raises(ValueError, match="price per million tokens"):
        parse_price_per_mtok("cheap")
