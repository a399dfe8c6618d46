"""Kubernetes resource quantities ("100m", "5120Mi", "8") as exact numbers, as apimachinery parses them
(k8s.io/apimachinery pkg/api/resource/quantity.go: decimal SI suffixes, binary Ki..Ei, decimal exponents)."""

from __future__ import annotations

import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
            "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
            "P": Fraction(10**15), "E": Fraction(10**18)}
_QUANTITY = re.compile(r"^([+-]?[0-9]*\.?[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")


class QuantityError(ValueError):
    """A value that is no Kubernetes quantity; the message names it."""


def quantity(value: str | int | float) -> Fraction:
    """The exact amount a quantity stands for (cores for cpu, bytes for memory, a count for devices)."""
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if match is None:
        raise QuantityError(f"{value!r} is no Kubernetes quantity")
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])
