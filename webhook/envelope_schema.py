"""The AdmissionReview envelope as pydantic models: what a well-formed review is, and the words of every 400.

``jobgate.webhook.admission`` checks the usual shape by hand and comes here only when that check fails:
this module (and pydantic) is then imported for the first time. Kept apart so that the
per-review code in ``jobgate.webhook.admission`` compiles with mypyc, which cannot build pydantic models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .envelope import (
    ADMISSION_API_VERSION,
    AdmissionRequest,
    AdmissionReview,
    BadReview,
    RequestKind,
)


class _Schema(BaseModel):
    # Fields jobgate does not read (userInfo, options, resource, ...) are ignored, not copied.
    model_config = ConfigDict(extra="ignore")


class KindSchema(_Schema):
    group: str = ""
    version: str
    kind: str


class RequestSchema(_Schema):
    uid: str = Field(min_length=1)
    kind: KindSchema
    name: str | None = None
    namespace: str | None = None
    operation: Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
    object: Any = None
    oldObject: Any = None
    dryRun: bool | None = None


class ReviewSchema(_Schema):
    apiVersion: Literal["admission.k8s.io/v1"]
    kind: Literal["AdmissionReview"]
    request: RequestSchema


def checked_review(document: dict[str, Any]) -> AdmissionReview:
    """The review as the schema reads it (converting values, e.g. dryRun "true"); BadReview otherwise."""
    try:
        checked = ReviewSchema.model_validate(document)
    except ValidationError as exc:
        raise BadReview(one_line(exc)) from None
    request = checked.request
    kind = RequestKind(request.kind.group, request.kind.version, request.kind.kind)
    return AdmissionReview(
        checked.apiVersion,
        AdmissionRequest(
            request.uid,
            kind,
            request.name,
            request.namespace,
            request.operation,
            request.object,
            request.oldObject,
            request.dryRun,
            _user(document["request"]),
        ),
    )


def _user(request: dict[str, Any]) -> str | None:
    user_info = request.get("userInfo")
    user = user_info.get("username") if type(user_info) is dict else None
    return user if type(user) is str else None


def one_line(exc: ValidationError) -> str:
    """The 400's message: the first error, with where it is."""
    first = exc.errors(include_url=False, include_input=False)[0]
    location = ".".join(str(p) for p in first["loc"]) or "body"
    if location in ("apiVersion", "kind") and first["type"] == "literal_error":
        return f"not an AdmissionReview {ADMISSION_API_VERSION}: {location} {first['msg'].lower()}"
    return f"not an AdmissionReview {ADMISSION_API_VERSION}: {location}: {first['msg'].lower()}"
