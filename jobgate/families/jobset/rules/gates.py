"""JobSet's feature gates that change what its webhook admits (``pkg/features/features.go``, v0.12.0).

A cluster runs JobSet's controller with ``--feature-gates=InPlaceRestart=true,...``; jobgate's webhook and
offline commands take the same list as ``--jobset-feature-gates`` so that they admit what that JobSet
admits. Every gate here is alpha and off by default, as in JobSet. (TLSOptions, JobSet's fourth gate,
is about its own server and changes no rule: it is accepted and ignored.)
"""

from __future__ import annotations

IN_PLACE_RESTART = "InPlaceRestart"
RESTART_JOB = "RestartJob"
ELASTIC_JOBSET = "ElasticJobSet"
# Each gate and its default (JobSet v0.12.0).
GATES: dict[str, bool] = {IN_PLACE_RESTART: False, RESTART_JOB: False, ELASTIC_JOBSET: False}
IGNORED = ("TLSOptions",)
FLAG = "--jobset-feature-gates"


def parse_gates(text: str | None) -> frozenset[str]:
    """The enabled gates of a ``Name=true,Name=false`` list (component-base's syntax); None: the defaults.

    Raises ValueError with the message a user needs for an unknown gate or a value that is no boolean."""
    enabled = {name for name, on in GATES.items() if on}
    if not text:
        return frozenset(enabled)
    for entry in text.split(","):
        item = entry.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"missing bool value for {name}")
        if name not in GATES and name not in IGNORED:
            known = ", ".join(sorted((*GATES, *IGNORED)))
            raise ValueError(f"unrecognized feature gate: {name} (JobSet v0.12.0's gates: {known})")
        lowered = value.strip().lower()
        if lowered not in ("true", "false"):
            raise ValueError(f"invalid value of {name}={value}, err: must be true or false")
        if name in IGNORED:
            continue
        if lowered == "true":
            enabled.add(name)
        else:
            enabled.discard(name)
    return frozenset(enabled)
