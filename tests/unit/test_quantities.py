import decimal

import pytest

from jobarchive.core.quantities import Format, Quantity, parse_quantity


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("2", "2"),
        ("500m", "500m"),
        ("0.5", "500m"),
        ("2000m", "2"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("100M", "100M"),
        ("4Gi", "4Gi"),
        ("1.5Gi", "1536Mi"),
        ("1000Ki", "1000Ki"),
        ("0.1Ki", "102400m"),
        ("1e3", "1e3"),
        ("1.5e3", "1500"),
        ("12e6", "12e6"),
        ("0.0000000001", "1n"),
        ("1Ei", "1Ei"),
        ("0", "0"),
        ("0Gi", "0"),
        (" 2 ", "2"),
        (2, "2"),
        (0.5, "500m"),
    ],
)
def test_quantities_print_as_kubectl_prints_them(raw: object, canonical: str) -> None:
    assert str(parse_quantity(raw)) == canonical


@pytest.mark.parametrize(
    "raw", ["abc", "1.2.3", "", None, True, "1Gb", "Gi", float("nan"), float("inf"), "1e999", {}]
)
def test_what_is_not_a_quantity_parses_to_none(raw: object) -> None:
    assert parse_quantity(raw) is None


def test_a_sum_keeps_the_format_of_its_first_term() -> None:
    gib = Quantity(decimal.Decimal(2**30), Format.BINARY_SI)
    mib = Quantity(decimal.Decimal(2**29), Format.BINARY_SI)
    assert (parse_quantity("1Gi"), parse_quantity("512Mi")) == (gib, mib)
    assert str(gib + mib) == "1536Mi"
    assert str(Quantity(decimal.Decimal("0.1"), Format.DECIMAL_SI) + gib) == "1073741824100m"
