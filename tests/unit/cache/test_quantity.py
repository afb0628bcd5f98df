from fractions import Fraction

import pytest

from volsched.cache.quantity import (
    QuantityError,
    ceil_milli_value,
    ceil_value,
    parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1Gi", Fraction(2**30)),
        ("500m", Fraction(1, 2)),
        ("1e3", Fraction(1000)),
        ("1.5G", Fraction(1_500_000_000)),
        ("0.1", Fraction(1, 10)),
        ("100Ki", Fraction(102400)),
        ("2", Fraction(2)),
        (3, Fraction(3)),
        (0.25, Fraction(1, 4)),
        ("-1", Fraction(-1)),
        (".5", Fraction(1, 2)),
        ("1E-3", Fraction(1, 1000)),
        ("10u", Fraction(1, 100000)),
        ("1Ei", Fraction(2**60)),
    ],
)
def test_parses_like_kubernetes(text: object, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text", ["", "Gi", "1GB", "1 Gi", "abc", "1.2.3", True, None, [1], "1e999", "1" * 5000]
)
def test_rejects_what_kubernetes_rejects(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_rounding_up_as_value_and_milli_value() -> None:
    assert ceil_milli_value(parse_quantity("0.0001")) == 1
    assert ceil_milli_value(parse_quantity("1.5")) == 1500
    assert ceil_value(parse_quantity("1.1")) == 2
    assert ceil_value(parse_quantity("500m")) == 1
