"""AdmissionReview ``admission.k8s.io/v1`` in, AdmissionReview out: no I/O, no HTTP.

The webhook server and ``jobgate review`` both call ``parse_review`` then ``answer_review``,
so the CLI prints byte for byte what the server would send. The contract (kubernetes/apiserver
``VerifyAdmissionResponse``): same apiVersion and kind as received, ``uid`` echoed,
``allowed`` always set, ``patch`` and ``patchType`` together and only from /mutate.
"""

from __future__ import annotations

import base64
import logging
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

import orjson

from jobgate.engine.context import ReviewContext, context_for
from jobgate.engine.registry import GroupVersionKind, JobKind, lookup_names
from jobgate.review import defaulting_patch, review_job

from .envelope import ADMISSION_API_VERSION, AdmissionRequest, AdmissionReview, BadReview, RequestKind

if TYPE_CHECKING:
    from jobgate.engine.views import ClusterViews

log = logging.getLogger("jobgate.admission")

# The audit annotation an Audit policy's findings go under (the apiserver prefixes the webhook's name).
AUDIT_ANNOTATION = "policy-violations"
# The audit annotation naming the exceptions a job was admitted through, and what they waived.
EXCEPTION_ANNOTATION = "policy-exceptions"

# Nesting is bounded by the JSON parser: orjson refuses documents nested deeper than 1024
# levels (a 400 "depth limit exceeded"). Everything that walks a parsed review (the schema
# check, the rules, the JSON rendering of an invalid value in a field error) recurses once per
# level, so Python's own limit (1000 frames by default) must sit above the parser's: then the
# parser's limit is the only one, and a value nested 1,023 levels deep gets a field error.
MAX_NESTING_DEPTH = 1024
_RECURSION_LIMIT = 4 * MAX_NESTING_DEPTH + 1000
if sys.getrecursionlimit() < _RECURSION_LIMIT:
    sys.setrecursionlimit(_RECURSION_LIMIT)


class Webhook(StrEnum):
    MUTATE = "mutate"
    VALIDATE = "validate"


# Responses are produced by jobgate itself, never parsed: typed dictionaries serialised by
# orjson cost a fraction of building and dumping pydantic models on every review.
class AdmissionResponse(TypedDict):
    uid: str
    allowed: bool
    status: NotRequired[dict[str, Any]]
    patchType: NotRequired[Literal["JSONPatch"]]
    patch: NotRequired[str]
    warnings: NotRequired[list[str]]
    auditAnnotations: NotRequired[dict[str, str]]


class AdmissionReviewResponse(TypedDict):
    apiVersion: str
    kind: Literal["AdmissionReview"]
    response: AdmissionResponse


def parse_review(body: bytes | str) -> AdmissionReview:
    # orjson decodes a 5 KB review in about half the time pydantic's JSON parser takes; the
    # envelope is then checked by hand, and by pydantic only when that check does not pass.
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadReview(f"malformed JSON: {exc}") from None
    if not isinstance(document, dict):
        raise BadReview(f"not an AdmissionReview {ADMISSION_API_VERSION}: the body must be a JSON object")
    review = _well_formed(document)
    if review is not None:
        return review
    # Not the usual shape: the schema decides, and words the 400. Imported only here, so that
    # well-formed reviews (and the start of ``jobgate review``) never load pydantic.
    from .envelope_schema import checked_review

    return checked_review(document)


_OPERATIONS = frozenset(("CREATE", "UPDATE", "DELETE", "CONNECT"))
_OPTIONAL_TEXT = (str, type(None))
_OPTIONAL_FLAG = (bool, type(None))


def _well_formed(document: dict[str, Any]) -> AdmissionReview | None:
    """The review when every envelope field has exactly the JSON type ``ReviewSchema`` asks for, else None.

    Strictly narrower than the schema: None sends the document to pydantic, which either accepts
    it (converting a value, e.g. dryRun "true") or gives the message. Whatever is accepted here
    the schema accepts with the same values, so the two paths cannot answer differently
    (tests/unit/test_admission.py checks both on generated envelopes).
    """
    request = document.get("request")
    if (
        type(request) is not dict
        or document.get("apiVersion") != ADMISSION_API_VERSION
        or document.get("kind") != "AdmissionReview"
    ):
        return None
    uid = request.get("uid")
    kind = request.get("kind")
    operation = request.get("operation")
    if type(uid) is not str or not uid or type(kind) is not dict or type(operation) is not str:
        return None
    if operation not in _OPERATIONS:
        return None
    group = kind.get("group", "")
    version = kind.get("version")
    kind_name = kind.get("kind")
    if type(group) is not str or type(version) is not str or type(kind_name) is not str:
        return None
    name = request.get("name")
    namespace = request.get("namespace")
    user_info = request.get("userInfo")
    user = user_info.get("username") if type(user_info) is dict else None
    dry_run = request.get("dryRun")
    if (
        not isinstance(name, _OPTIONAL_TEXT)
        or not isinstance(namespace, _OPTIONAL_TEXT)
        or not isinstance(dry_run, _OPTIONAL_FLAG)
    ):
        return None
    return AdmissionReview(
        ADMISSION_API_VERSION,
        AdmissionRequest(
            uid,
            RequestKind(group, version, kind_name),
            name,
            namespace,
            operation,
            request.get("object"),
            request.get("oldObject"),
            dry_run,
            user if type(user) is str else None,
        ),
    )


def answer_review(
    review: AdmissionReview, webhook: Webhook, views: ClusterViews | None = None
) -> AdmissionReviewResponse:
    """The response to one review. An exception in the rules denies (fails closed) and is logged.

    ``views``: the cluster objects the transport can show the rules (the webhook's caches, the
    files given to ``jobgate review``); none by default.
    """
    request = review.request
    try:
        response = _decide(request, webhook, views)
    except BadReview:
        raise
    except Exception:
        log.exception("internal error while reviewing uid=%s kind=%s", request.uid, request.kind.kind)
        response = {
            "uid": request.uid,
            "allowed": False,
            "status": {
                "metadata": {},
                "status": "Failure",
                "reason": "InternalError",
                "code": 500,
                "message": f"jobgate internal error while reviewing request {request.uid}; see the webhook log",
            },
        }
    return {"apiVersion": review.apiVersion, "kind": "AdmissionReview", "response": response}


def review_context(request: AdmissionRequest, views: ClusterViews | None) -> ReviewContext:
    """What the rules may know of this request: its operation, namespace, user and dry run, and the views."""
    return context_for(
        views,
        operation=request.operation,
        namespace=request.namespace,
        user=request.user,
        dry_run=bool(request.dryRun),
    )


def _decide(request: AdmissionRequest, webhook: Webhook, views: ClusterViews | None) -> AdmissionResponse:
    if request.operation not in ("CREATE", "UPDATE") or request.object is None:
        return {"uid": request.uid, "allowed": True}
    kind = lookup_names(request.kind.group, request.kind.version, request.kind.kind)
    if kind is None:
        gvk = GroupVersionKind(request.kind.group, request.kind.version, request.kind.kind)
        warning = f"jobgate does not serve {gvk.api_version} {gvk.kind}; admitted without checks"
        return {"uid": request.uid, "allowed": True, "warnings": [warning]}
    if not isinstance(request.object, dict):
        raise BadReview("not an AdmissionReview v1: request.object must be an object")
    old = request.oldObject if request.operation == "UPDATE" and isinstance(request.oldObject, dict) else None
    if webhook is Webhook.MUTATE:
        return _mutate(request, kind, old, views)
    verdict = review_job(kind, request.object, old, context=review_context(request, views), with_patch=False)
    response: AdmissionResponse = {"uid": request.uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        response["status"] = verdict.status()
    if verdict.warnings:
        response["warnings"] = verdict.warnings
    if verdict.audit:
        # Audit policies: admitted, recorded in the apiserver's audit log under this key.
        response["auditAnnotations"] = {AUDIT_ANNOTATION: "; ".join(verdict.audit)}
    if verdict.waived:
        # Findings TrainingJobPolicyExceptions waived: recorded beside the warnings that say so.
        response.setdefault("auditAnnotations", {})[EXCEPTION_ANNOTATION] = "; ".join(verdict.waived)
    return response


def _mutate(
    request: AdmissionRequest, kind: JobKind, old: dict[str, Any] | None, views: ClusterViews | None
) -> AdmissionResponse:
    """Defaults only: /mutate admits every well-formed review of a served kind, the verdict is /validate's.

    Even a bug in a defaulting rule admits the object unpatched (with a warning): the validating
    webhook, which defaults in memory first, meets the same bug and fails closed there.
    """
    try:
        patch = defaulting_patch(kind, request.object, old, review_context(request, views))
    except Exception:
        log.exception("internal error while defaulting uid=%s kind=%s", request.uid, request.kind.kind)
        warning = f"jobgate could not fill defaults (internal error, request {request.uid}); see the webhook log"
        return {"uid": request.uid, "allowed": True, "warnings": [warning]}
    response: AdmissionResponse = {"uid": request.uid, "allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(patch)).decode("ascii")
    return response


def encode_response(answer: AdmissionReviewResponse) -> bytes:
    return orjson.dumps(answer)


def review_body(body: bytes | str, webhook: Webhook, views: ClusterViews | None = None) -> bytes:
    """Body in, body out; raises BadReview for anything that is not an AdmissionReview v1."""
    return encode_response(answer_review(parse_review(body), webhook, views))


def decoded_patch(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON Patch carried by a response (tests and debugging)."""
    patch = answer.get("response", {}).get("patch")
    return orjson.loads(base64.b64decode(patch)) if patch else []
