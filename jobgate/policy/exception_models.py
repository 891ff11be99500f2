"""pydantic v2 model and CRD of ``TrainingJobPolicyException`` (``policy.jobgate.io/v1alpha1``, namespaced).

An exception waives some constraints of some policies for some jobs of its own namespace until it
expires. Its field names are a contract (:mod:`.exceptions` reads them): ``spec.policies[]``
(``kind``, ``name``, ``rules``), ``spec.match`` (``names``, ``kinds``, ``objectSelector``),
``spec.expiresAt`` and ``spec.reason``, both required.

The CRD is generated from this model as the policy CRDs are (:func:`jobgate.policy.crds.structural`):
a missing ``expiresAt`` or ``reason`` and an unknown rule id (``rules`` items are an enum of the
waivable rule ids, the constraints' own) are refused by the apiserver's schema, so no webhook is
needed to keep a malformed exception out. Offline, :func:`parse_exception` refuses the same.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from jobgate.policy.exceptions import (
    EXCEPTION_KIND,
    EXCEPTION_PLURAL,
    MAX_JOBS_LISTED,
    WAIVABLE_RULES,
    parse_time,
)
from jobgate.policy.models import (
    API_VERSION,
    MAX_LIST,
    Condition,
    KindRef,
    LabelSelector,
    Name,
    NonNegInt32,
    PolicyModel,
)

# Literal of the rule ids an exception may name: the CRD's enum, and pydantic's check offline.
RuleId = Literal[tuple(sorted(WAIVABLE_RULES))]  # type: ignore[valid-type]


class WaivedPolicy(PolicyModel):
    """A policy the exception waives, and which of its constraints."""

    kind: Literal["ClusterTrainingJobPolicy", "TrainingJobPolicy"] = Field(
        description="ClusterTrainingJobPolicy, or TrainingJobPolicy (in the exception's namespace)."
    )
    name: Name = Field(description="The policy's name.")
    rules: Annotated[list[RuleId], Field(min_length=1, max_length=len(WAIVABLE_RULES))] | None = Field(  # type: ignore[valid-type]
        None,
        description="Rule ids waived (policy/max-gpus-per-job, ...); absent = every limit and requirement of the "
        "policy (never its conflicts, never its defaults).",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )


class ExceptionMatch(PolicyModel):
    """Which jobs of the exception's namespace it covers: every condition given must hold; absent = all."""

    names: Annotated[list[Name], Field(max_length=MAX_LIST)] | None = Field(
        None, description="Job names.", json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    kinds: Annotated[list[KindRef], Field(max_length=MAX_LIST)] | None = Field(
        None,
        description="Job kinds by group and kind.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["group", "kind"]},
    )
    objectSelector: LabelSelector | None = Field(None, description="Labels the job must have.")


class TrainingJobPolicyExceptionSpec(PolicyModel):
    """What is waived, for which jobs, until when, and why."""

    policies: Annotated[list[WaivedPolicy], Field(min_length=1, max_length=MAX_LIST)] = Field(
        description="The policies waived and, for each, the rules.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["kind", "name"]},
    )
    match: ExceptionMatch | None = Field(None, description="Jobs of this namespace covered; absent = every job.")
    expiresAt: Annotated[str, Field(json_schema_extra={"format": "date-time"})] = Field(
        description="RFC 3339 time after which the exception is ignored (required: an exception that never "
        "expires is a hole nobody remembers)."
    )
    reason: Annotated[str, Field(min_length=1, max_length=1024)] = Field(description="Why the exception exists.")

    @field_validator("expiresAt")
    @classmethod
    def _time(cls, value: str) -> str:
        if parse_time(value) is None:
            raise ValueError(f"{value!r} is not an RFC 3339 date-time with a time zone (e.g. 2026-12-05T00:00:00Z)")
        return value


class CoveredJob(PolicyModel):
    """A stored job the exception covers."""

    name: Name = Field(description="The job's name.")
    kind: Name = Field(description="The job's kind.")
    apiVersion: Name = Field(description="The job's apiVersion.")
    rules: Annotated[list[Name], Field(max_length=MAX_LIST)] | None = Field(
        None, description="The rules waived for it (policy: rule id)."
    )


class TrainingJobPolicyExceptionStatus(PolicyModel):
    """Observed state, written by the jobgate controller's audit."""

    conditions: Annotated[list[Condition], Field(max_length=MAX_LIST)] | None = Field(
        None,
        description="Active (True while not expired) and Expired.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    expired: bool | None = Field(None, description="Whether expiresAt has passed.")
    totalJobs: NonNegInt32 | None = Field(None, description="Stored jobs it waives a violation of.")
    jobs: Annotated[list[CoveredJob], Field(max_length=100)] | None = Field(
        None, description="Some of those jobs (capped)."
    )


class TrainingJobPolicyException(PolicyModel):
    """Waives constraints of platform policies for some jobs of one namespace, until it expires."""

    apiVersion: Literal["policy.jobgate.io/v1alpha1"] = API_VERSION
    kind: Literal["TrainingJobPolicyException"] = EXCEPTION_KIND
    metadata: dict[str, Any] = Field(default_factory=dict, description="Standard object metadata.")
    spec: TrainingJobPolicyExceptionSpec
    status: TrainingJobPolicyExceptionStatus | None = None


def parse_exception(obj: dict[str, Any]) -> dict[str, Any]:
    """Validate an exception and give it back as a plain dict (``None`` dropped).

    Raises ``pydantic.ValidationError`` (a ``ValueError``) on a malformed one."""
    return TrainingJobPolicyException.model_validate(obj).model_dump(exclude_none=True)


def exception_crd() -> dict[str, Any]:
    """The TrainingJobPolicyException CRD (namespaced), from the model."""
    from jobgate.policy.crds import group_crd

    return group_crd(
        kind=EXCEPTION_KIND,
        plural=EXCEPTION_PLURAL,
        scope="Namespaced",
        short=["tjpe"],
        columns=[
            {"name": "Expires", "type": "string", "jsonPath": ".spec.expiresAt"},
            {"name": "Expired", "type": "boolean", "jsonPath": ".status.expired"},
            {"name": "Jobs", "type": "integer", "jsonPath": ".status.totalJobs"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
        description=(TrainingJobPolicyException.__doc__ or "").strip().splitlines()[0],
        spec_model=TrainingJobPolicyExceptionSpec,
        status_model=TrainingJobPolicyExceptionStatus,
        required=("spec",),
    )


__all__ = [
    "MAX_JOBS_LISTED",
    "TrainingJobPolicyException",
    "TrainingJobPolicyExceptionSpec",
    "exception_crd",
    "parse_exception",
]
