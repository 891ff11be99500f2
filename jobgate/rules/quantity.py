"""Kubernetes resource quantities ("500m", "1Gi", "1e3", 2) as integer nano-units.

Kubernetes itself keeps quantities at nano precision; integers compare fast, which matters
because every container's requests and limits are compared on each review.

Out-of-range values are handled as k8s.io/apimachinery's ``ParseQuantity`` does, so that a
hostile value costs no more than a normal one and gets the apiserver's verdict: a magnitude
beyond 2^63-1 units is capped there (``1e400`` == 9223372036854775807), a non-zero magnitude
below 1n rounds up to 1n, and an exponent that does not fit a 64-bit integer is malformed.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Final

QUANTITY_MESSAGE: Final = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
NANO: Final = 10**9
MAX_UNITS: Final = 2**63 - 1  # apimachinery's maxAllowed: larger magnitudes are capped to it
MAX_NANOS: Final = MAX_UNITS * NANO
_INFINITY: Final = float("inf")

# What a quantity's text must match (number, suffix): read by _split, without re (compiling this
# pattern costs a one-file check more than its rules; a test holds _split to re.fullmatch).
_QUANTITY: Final = r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)"
_DIGITS: Final = frozenset("0123456789")
_SUFFIXES: Final = frozenset(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E", ""))
_BINARY: Final = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_EXPONENT: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_MAX_EXPONENT_DIGITS: Final = 18  # strconv.ParseInt(..., 64) fails beyond; apimachinery then reports a bad suffix
_KEPT_DIGITS: Final = 64  # more significant digits than a capped result has (28) plus the largest multiplier (19)


def parse_quantity(value: object) -> int | None:
    """The quantity in nano-units (1 == 1n, 10**9 == 1), rounded up; None when not a valid quantity."""
    if isinstance(value, str):
        return parse_text_cached(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return max(-MAX_NANOS, min(MAX_NANOS, value * NANO))
    if isinstance(value, float):
        return _parse_float_cached(value)
    return None


# Pod templates repeat the same few quantities ("4", "16Gi"): each text is parsed once. A plain
# dict, emptied when full, costs a third of an lru_cache look-up (typed=True builds a key tuple).
# Only short texts are kept: real quantities are, and hostile long ones must not pile up.
TEXT_CACHE_MAX: Final = 4096
TEXT_CACHE_MAX_LENGTH: Final = 64
_parsed_texts: dict[str, int | None] = {}


def parse_text_cached(value: str) -> int | None:
    """``parse_quantity`` of a str."""
    try:
        return _parsed_texts[value]
    except KeyError:
        pass
    nanos = _parse_text(value.strip())
    if len(value) <= TEXT_CACHE_MAX_LENGTH:
        if len(_parsed_texts) >= TEXT_CACHE_MAX:
            _parsed_texts.clear()
        _parsed_texts[value] = nanos
    return nanos


def _parse_float_cached(value: float) -> int | None:
    """``parse_quantity`` of a JSON number with a fraction or an exponent."""
    # A JSON number is parsed from its text by the apiserver; repr gives that text back, which is then
    # remembered as a text is. -inf < value < inf: math.isfinite, without loading the math module (a
    # shared library) at start-up.
    return parse_text_cached(repr(value)) if -_INFINITY < value < _INFINITY else None


def _split(text: str) -> tuple[str, str] | None:
    """``re.fullmatch(_QUANTITY, text).groups()``, or None where the pattern does not match.

    The number is read greedily: no suffix starts with a digit or a dot, so no shorter number
    could leave a suffix that matches.
    """
    length = len(text)
    end = 1 if text[:1] in ("+", "-") else 0
    first_digit = end
    while end < length and text[end] in _DIGITS:
        end += 1
    has_digits = end > first_digit
    if end < length and text[end] == ".":
        end += 1
        first_fraction_digit = end
        while end < length and text[end] in _DIGITS:
            end += 1
        has_digits = has_digits or end > first_fraction_digit
    if not has_digits:
        return None
    suffix = text[end:]
    if suffix in _SUFFIXES:
        return text[:end], suffix
    exponent = suffix[2:] if suffix[1:2] in ("+", "-") else suffix[1:]
    if suffix[:1] in ("e", "E") and exponent != "" and _DIGITS.issuperset(exponent):
        return text[:end], suffix
    return None


def _parse_text(text: str) -> int | None:
    split = _split(text)
    if split is None:
        return None
    number, suffix = split
    negative = number.startswith("-")
    whole, _, fraction = number.lstrip("+-").partition(".")
    significant = ((whole or "0") + fraction).lstrip("0")
    exponent = -len(fraction)  # the number == int(whole + fraction) * 10**exponent
    multiplier = 1
    if suffix in _BINARY:
        multiplier = _BINARY[suffix]
    elif suffix and suffix[0] in "eE":
        exponent_text = suffix[1:].lstrip("+-").lstrip("0") or "0"
        if len(exponent_text) > _MAX_EXPONENT_DIGITS:
            return None
        exponent += -int(exponent_text) if suffix[1] == "-" else int(exponent_text)
    else:
        exponent += _DECIMAL_EXPONENT[suffix]
    if not significant:
        return 0
    exponent += 9  # to nano-units
    if len(significant) > _KEPT_DIGITS:
        # Only the leading digits can matter below the cap; a trailing non-zero digit still rounds up.
        dropped = significant[_KEPT_DIGITS:]
        significant = significant[:_KEPT_DIGITS] + ("1" if dropped.strip("0") else "0")
        exponent += len(dropped) - 1
    magnitude_digits = len(significant) + exponent  # decimal digits of the integer part, +-1
    if magnitude_digits > 48:  # beyond 10**47 > MAX_NANOS even with a multiplier of 1
        nanos = MAX_NANOS
    elif magnitude_digits < -20:  # below 1n even times 2**60: rounds up to 1n
        nanos = 1
    else:
        numerator = int(significant) * multiplier
        # Below nano precision Kubernetes rounds up: a ceiling division.
        nanos = numerator * 10**exponent if exponent >= 0 else -(-numerator // 10**-exponent)
        nanos = min(nanos, MAX_NANOS)
    return -nanos if negative else nanos
