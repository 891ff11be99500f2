"""Kubernetes resource quantities ("500m", "1Gi", "1e3", 2) as exact fractions."""

from __future__ import annotations

import math
import re
from fractions import Fraction

QUANTITY_MESSAGE = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}


def parse_quantity(value: object) -> Fraction | None:
    """The quantity's exact value, or None when it is not a valid quantity."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    match = _QUANTITY.fullmatch(value.strip())
    if match is None:
        return None
    number, suffix = match.groups()
    magnitude = Fraction(number)
    if suffix in _BINARY:
        return magnitude * _BINARY[suffix]
    if suffix and suffix[0] in "eE":
        exponent = int(suffix[1:])
        if abs(exponent) > 100:
            return None
        return magnitude * Fraction(10) ** exponent
    return magnitude * _DECIMAL[suffix]
