"""Kubernetes resource quantities (``500m``, ``1Gi``, ``1G``, ``1e3``, ``0.5``) to numbers."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from pyvolcano.errors import QuantityError

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}
_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:(Ki|Mi|Gi|Ti|Pi|Ei)|([eE][+-]?\d+)|(n|u|m|k|M|G|T|P|E))?$", re.ASCII)


def parse_quantity(value: object) -> Decimal:
    """Parse a quantity exactly (Decimal), as apimachinery's resource.Quantity does."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity")
    text = value.strip()
    m = _RE.match(text)
    if not m:
        raise QuantityError(f"{value!r} is not a quantity (expected e.g. 500m, 2, 1Gi, 1G, 1e3)")
    number, binary, exponent, decimal = m.groups()
    try:
        base = Decimal(number)
    except InvalidOperation as exc:  # pragma: no cover - the regex already checked the shape
        raise QuantityError(f"{value!r} is not a quantity") from exc
    if binary:
        return base * _BINARY[binary]
    if exponent:
        return base * (Decimal(10) ** int(exponent[1:]))
    return base * _DECIMAL[decimal or ""]


def to_milli(value: object) -> float:
    """Quantity in thousandths (cpu millicores, Volcano's scalar-resource unit), rounded up like MilliValue."""
    q = parse_quantity(value) * 1000
    return float(q.to_integral_value(rounding="ROUND_CEILING"))


def to_units(value: object) -> float:
    """Quantity in whole units (memory bytes, pod counts), rounded up like Quantity.Value()."""
    q = parse_quantity(value)
    return float(q.to_integral_value(rounding="ROUND_CEILING"))


def format_quantity(name: str, value: float) -> str:
    """Human form of an internal amount: cpu in cores, memory in Gi/Mi, scalars in whole units."""
    if name == "cpu":
        cores = value / 1000
        return f"{cores:g}" if cores >= 1 or value == 0 else f"{value:g}m"
    if name == "memory" or name == "ephemeral-storage":
        for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if abs(value) >= size:
                return f"{value / size:.4g}{unit}"
        return f"{value:g}"
    if name == "pods":
        return f"{value:g}"
    return f"{value / 1000:g}"
