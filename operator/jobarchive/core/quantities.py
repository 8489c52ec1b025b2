"""Kubernetes resource quantities: parsing, adding and printing in canonical form.

The canonical form is what ``kubectl`` prints (``resource.Quantity.String()``):
``"2"``, ``"500m"``, ``"4Gi"``, ``"1k"``. A sum keeps the format (binary SI,
decimal SI or decimal exponent) of its first term, as Quantity.Add does.
Values finer than a nano-unit are rounded up, as Kubernetes does.
"""

import dataclasses
import decimal
import enum
import re

_DEC = decimal.Context(prec=60)
_NANO = decimal.Decimal("1e-9")
_LIMIT = decimal.Decimal("1e30")

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_PATTERN = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exponent>[eE][+-]?[0-9]+)|(?P<decimal>[numkMGTPE]))?$"
)


class Format(enum.Enum):
    """How a quantity prints."""

    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"
    DECIMAL_EXPONENT = "DecimalExponent"


@dataclasses.dataclass(frozen=True)
class Quantity:
    """An exact quantity and the format it prints in."""

    value: decimal.Decimal
    format: Format

    def __add__(self, other: "Quantity") -> "Quantity":
        return Quantity(_DEC.add(self.value, other.value), self.format)

    def __str__(self) -> str:
        return format_quantity(self)


def parse_quantity(raw: object) -> Quantity | None:
    """Parse a quantity as the API holds it: a string, or a bare JSON number.

    Returns None for anything that is not a quantity.
    """
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return _bounded(Quantity(decimal.Decimal(raw), Format.DECIMAL_SI))
    if isinstance(raw, float):
        if raw != raw or raw in (float("inf"), float("-inf")):
            return None
        return _bounded(Quantity(_round_up(decimal.Decimal(repr(raw))), Format.DECIMAL_SI))
    if not isinstance(raw, str):
        return None
    match = _PATTERN.match(raw.strip())
    if match is None:
        return None
    number = decimal.Decimal(match["number"])
    if match["binary"]:
        value = _DEC.multiply(number, decimal.Decimal(1024) ** _BINARY[match["binary"]])
        return _bounded(Quantity(_round_up(value), Format.BINARY_SI))
    if match["exponent"]:
        exponent = int(match["exponent"][1:])
        if abs(exponent) > 100:
            return None
        value = _round_up(number.scaleb(exponent, _DEC))
        return _bounded(Quantity(value, Format.DECIMAL_EXPONENT))
    value = number.scaleb(_DECIMAL[match["decimal"] or ""], _DEC)
    return _bounded(Quantity(_round_up(value), Format.DECIMAL_SI))


def format_quantity(quantity: Quantity) -> str:
    """Print a quantity in Kubernetes' canonical form."""
    value = quantity.value
    if value == 0:
        return "0"
    if (
        quantity.format is Format.BINARY_SI
        and value == value.to_integral_value()
        and abs(value) >= 1024
    ):
        for power in range(6, 0, -1):
            unit = decimal.Decimal(1024) ** power
            mantissa, remainder = divmod(value, unit)
            if remainder == 0:
                suffix = next(name for name, p in _BINARY.items() if p == power)
                return f"{int(mantissa)}{suffix}"
    mantissa_int, exponent = _decimal_parts(value)
    if quantity.format is Format.DECIMAL_EXPONENT:
        return f"{mantissa_int}e{exponent}" if exponent else str(mantissa_int)
    if exponent > 18:
        mantissa_int, exponent = mantissa_int * 10 ** (exponent - 18), 18
    return f"{mantissa_int}{_DECIMAL_SUFFIX[exponent]}"


def _decimal_parts(value: decimal.Decimal) -> tuple[int, int]:
    """Write value as mantissa * 10**exponent, exponent a multiple of 3, as large as exact."""
    exponent = -9
    mantissa = value.scaleb(9, _DEC)
    while _DEC.remainder(mantissa, 1000) == 0 and exponent < 1000:
        mantissa = _DEC.divide(mantissa, 1000)
        exponent += 3
    return int(mantissa), exponent


def _bounded(quantity: Quantity) -> Quantity | None:
    """Kubernetes holds quantities in 64-bit scaled integers; anything far beyond is noise."""
    return quantity if abs(quantity.value) < _LIMIT else None


def _round_up(value: decimal.Decimal) -> decimal.Decimal:
    """Round away from zero to the nano-unit, Kubernetes' finest precision."""
    if abs(value) >= _LIMIT:
        return value
    return value.quantize(_NANO, rounding=decimal.ROUND_UP, context=_DEC).normalize(_DEC)
