"""Kubernetes resource quantities ("500m", "1Gi", "1e3", 2) as integer nano-units.

Kubernetes itself keeps quantities at nano precision; integers compare fast, which matters
because every container's requests and limits are compared on each review.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

QUANTITY_MESSAGE = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
NANO = 10**9

_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_EXPONENT = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(value: object) -> int | None:
    """The quantity in nano-units (1 == 1n, 10**9 == 1), rounded up; None when not a valid quantity."""
    if isinstance(value, str | int | float):
        return _parse_cached(value)
    return None


@lru_cache(maxsize=4096, typed=True)
def _parse_cached(value: str | int | float) -> int | None:
    # Pod templates repeat the same few quantities ("4", "16Gi"): parse each once.
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value * NANO
    if isinstance(value, float):
        return math.ceil(value * NANO) if math.isfinite(value) else None
    match = _QUANTITY.fullmatch(value.strip())
    if match is None:
        return None
    number, suffix = match.groups()
    negative = number.startswith("-")
    whole, _, fraction = number.lstrip("+-").partition(".")
    digits = int((whole or "0") + fraction)  # the number times 10**len(fraction)
    scale = len(fraction)
    if suffix in _BINARY:
        numerator, exponent = digits * _BINARY[suffix], -scale
    elif suffix and suffix[0] in "eE":
        exponent = int(suffix[1:]) - scale
        if abs(exponent) > 100:
            return None
        numerator = digits
    else:
        numerator, exponent = digits, _DECIMAL_EXPONENT[suffix] - scale
    exponent += 9  # to nano-units
    if exponent >= 0:
        nanos = numerator * 10**exponent
    else:
        divisor = 10**-exponent
        nanos = -(-numerator // divisor)  # round up, as Kubernetes does below its precision
    return -nanos if negative else nanos
