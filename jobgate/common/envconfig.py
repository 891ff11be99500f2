"""Settings read from the environment, for what operators tune without a new flag."""

from __future__ import annotations

import logging
import os

log = logging.getLogger("jobgate")


def seconds_from_environment(variable: str, default: float) -> float:
    """A positive, finite number of seconds from ``variable``; ``default`` (with a warning) otherwise."""
    raw = os.environ.get(variable, "")
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):  # NaN included
        log.warning("%s=%r is not a number of seconds: using %g", variable, raw, default)
        return default
    return value
