"""Kubernetes quantities: the suffixes, exponents and rounding of apimachinery's resource.Quantity."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyvolcano.api.quantity import format_quantity, parse_quantity, to_milli, to_units
from pyvolcano.errors import QuantityError


@pytest.mark.parametrize(("text", "value"), [
    ("500m", Decimal("0.5")),
    ("0.5", Decimal("0.5")),
    (".5", Decimal("0.5")),
    ("2", Decimal(2)),
    ("1Gi", Decimal(2**30)),
    ("1.5Gi", Decimal(3 * 2**29)),
    ("100Mi", Decimal(100 * 2**20)),
    ("2Ki", Decimal(2048)),
    ("1Ti", Decimal(2**40)),
    ("1G", Decimal(10**9)),
    ("1M", Decimal(10**6)),
    ("1k", Decimal(1000)),
    ("1e3", Decimal(1000)),
    ("1E3", Decimal(1000)),
    ("2e-3", Decimal("0.002")),
    ("1E", Decimal(10**18)),
    ("250u", Decimal("0.00025")),
    ("7n", Decimal("7e-9")),
    ("+3", Decimal(3)),
    (" 4 ", Decimal(4)),
    (3, Decimal(3)),
    (0.25, Decimal("0.25")),
])
def test_parse(text: object, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "two", "1Gib", "1gi", "1e", "Gi", "1.2.3", "--1", "1 Gi",
                                  None, True, [1], {"a": 1}])
def test_parse_rejects(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_milli_and_units_round_up_like_kubernetes() -> None:
    assert to_milli("1") == 1000
    assert to_milli("500m") == 500
    assert to_milli("0.0001") == 1  # MilliValue rounds up
    assert to_milli("1") == to_milli(1) == to_milli("1000m")
    assert to_units("1.5") == 2  # Value rounds up
    assert to_units("1m") == 1
    assert to_units("1Gi") == 2**30
    assert to_units("2G") == 2e9


def test_format() -> None:
    assert format_quantity("cpu", 1500) == "1.5"
    assert format_quantity("cpu", 250) == "250m"
    assert format_quantity("cpu", 0) == "0"
    assert format_quantity("memory", 2**30) == "1Gi"
    assert format_quantity("memory", 3 * 2**19) == "1.5Mi"
    assert format_quantity("memory", 100) == "100"
    assert format_quantity("pods", 110) == "110"
    assert format_quantity("nvidia.com/gpu", 2000) == "2"


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["Ki", "Mi", "Gi", "Ti"]))
def test_binary_suffixes_are_powers_of_two(n: int, suffix: str) -> None:
    power = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40}[suffix]
    assert parse_quantity(f"{n}{suffix}") == n * 2**power


@given(st.integers(min_value=0, max_value=10**9))
def test_milli_suffix_round_trips(n: int) -> None:
    assert to_milli(f"{n}m") == n
