"""The AdmissionReview envelope as jobgate reads it: plain classes, built for every review.

Both readers of a review use them: ``admission`` checks the usual shape by hand, and
``envelope_schema`` (pydantic) judges the rest; neither imports the other's module for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ADMISSION_API_VERSION = "admission.k8s.io/v1"


class BadReview(ValueError):
    """The body is not a well-formed AdmissionReview v1 with a uid (HTTP 400, CLI exit 2)."""


# The envelope's dataclasses are built for every review: not frozen, because a frozen
# dataclass's __init__ sets each field through object.__setattr__ (5x slower). Never mutated.
@dataclass(slots=True)
class RequestKind:
    group: str
    version: str
    kind: str


@dataclass(slots=True)
class AdmissionRequest:
    uid: str
    kind: RequestKind
    name: str | None
    namespace: str | None
    operation: str
    object: Any
    oldObject: Any
    dryRun: bool | None
    # request.userInfo.username, for the review's context; never judged (a review without it is well formed).
    user: str | None = None


@dataclass(slots=True)
class AdmissionReview:
    """A well-formed review, as ``ReviewSchema`` (envelope_schema.py) accepts it; the object passed through as is."""

    apiVersion: str
    request: AdmissionRequest
