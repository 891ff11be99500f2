"""Checks every job kind shares: the job name, the names derived from it, the spec schema."""

from __future__ import annotations

from jobgate.engine.fielderrors import FieldError, FieldPath, invalid, required
from jobgate.engine.findings import Findings
from jobgate.engine.schema import SCHEMA_REQUIRED, SCHEMA_TYPES, schema_checker
from jobgate.rules.names import (
    LABEL_MAX_LENGTH,
    dns1035_label_problems,
    dns1123_subdomain_problems,
    label_value_problems,
    qualified_name_problems,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Final

    from pydantic import BaseModel

    from jobgate.engine.modelref import ModelRef

# generateName gets five random characters appended by the apiserver.
_GENERATED_SUFFIX_LENGTH: Final = 5


# The ids of the rules below (their catalogue records: jobgate/generate/cel/jobmeta.py), which their
# errors carry (FieldError.rule).
JOB_NAME: Final = "job/name"
OBJECT_NAMES: Final = "schema/object-names"
LABELS: Final = "schema/labels"
DERIVED_NAMES: Final = "job/derived-names"


def job_name(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return ""
    name = metadata.get("name")
    if isinstance(name, str) and name:
        return name
    prefix = metadata.get("generateName")
    return prefix if isinstance(prefix, str) else ""


def generate_name_errors(metadata: Any, *, creating: bool) -> list[FieldError]:
    """generateName beside a name, as the apiserver checks every object's: on CREATE a DNS-1123
    subdomain once a trailing dash is masked, on UPDATE only no '/' or '%' (a path segment's
    prefix). Without a name the job's own, stricter name rules check the generated name instead."""
    if not isinstance(metadata, dict) or not metadata.get("name"):
        return []
    prefix = metadata.get("generateName")
    if not isinstance(prefix, str) or not prefix:
        return []
    path = ("metadata", "generateName")
    if not creating:
        return [invalid(path, prefix, f"may not contain '{c}'", OBJECT_NAMES) for c in "/%" if c in prefix]
    # apimachinery's maskTrailingDash, its quirk included: the last two characters become one "a".
    masked = prefix[:-2] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix
    return [invalid(path, prefix, problem, OBJECT_NAMES) for problem in dns1123_subdomain_problems(masked)]


# Labels found valid, remembered: a cluster's jobs carry the same few (team, cost-center, ...), and
# checking one pair costs more than the rest of the job's metadata checks.
_VALID_LABELS: Final[set[tuple[str, str]]] = set()
_VALID_LABELS_LIMIT: Final = 4096


def label_errors(metadata: Any) -> list[FieldError]:
    """The labels as the apiserver checks every object's (ValidateLabels), on CREATE and UPDATE: each
    key a qualified name, each value a label value; both reported at metadata.labels. A key or value
    that is no string is the schema's to refuse."""
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    if not isinstance(labels, dict):
        return []
    path: FieldPath = ("metadata", "labels")
    errors: list[FieldError] = []
    for key, value in labels.items():
        pair = (key, value) if type(key) is str and type(value) is str else None
        if pair is not None and pair in _VALID_LABELS:
            continue
        found: list[FieldError] = []
        if isinstance(key, str):
            found += [invalid(path, key, problem, LABELS) for problem in qualified_name_problems(key)]
        if isinstance(value, str):
            found += [invalid(path, value, problem, LABELS) for problem in label_value_problems(value)]
        if found:
            errors += found
        elif pair is not None:
            if len(_VALID_LABELS) >= _VALID_LABELS_LIMIT:
                _VALID_LABELS.clear()
            _VALID_LABELS.add(pair)
    return errors


def pod_name(job: str, replica_type: str, index: int) -> str:
    """``<job>-<type>-<index>``: the name of the pod and of its headless service."""
    return f"{job}-{replica_type.lower()}-{index}"


def check_job_name(obj: dict[str, Any], replica_counts: Iterable[tuple[str, int]]) -> list[FieldError]:
    """The name is a DNS-1035 label and every pod/service name derived from it fits in 63 characters.

    ``replica_counts`` gives (replica type, replicas) pairs; the highest index is replicas - 1.
    """
    metadata = obj.get("metadata")
    path: FieldPath = ("metadata", "name")
    if not isinstance(metadata, dict):
        return [required(("metadata",), rule=SCHEMA_REQUIRED)]
    name = metadata.get("name")
    generated = False
    if name is None or name == "":
        name = metadata.get("generateName")
        path = ("metadata", "generateName")
        generated = True
        if name is None or name == "":
            return [required(("metadata", "name"), "name or generateName is required", JOB_NAME)]
    if not isinstance(name, str):
        return [invalid(path, name, "must be of type string", SCHEMA_TYPES)]

    full_name = name + "x" * _GENERATED_SUFFIX_LENGTH if generated else name
    errors = [invalid(path, name, problem, JOB_NAME) for problem in dns1035_label_problems(full_name)]
    if errors:
        return errors
    # The longest derived name, measured before it is built: built only for the message.
    longest_length = 0
    longest_type = ""
    longest_index = 0
    for replica_type, count in replica_counts:
        index = max(count, 1) - 1
        lowered_length = len(replica_type) if replica_type.isascii() else len(replica_type.lower())
        length = len(full_name) + lowered_length + len(str(index)) + 2
        if length > longest_length:
            longest_length, longest_type, longest_index = length, replica_type, index
    if longest_length > LABEL_MAX_LENGTH:
        longest = pod_name(full_name, longest_type, longest_index)
        budget = len(name) - (len(longest) - LABEL_MAX_LENGTH)
        errors.append(
            invalid(
                path,
                name,
                f"must be no more than {budget} characters: the pod and service name "
                f'"{longest}" derived from it must be no more than {LABEL_MAX_LENGTH} characters',
                DERIVED_NAMES,
            )
        )
    return errors


def check_spec_schema(
    obj: dict[str, Any], spec_model: type[BaseModel] | ModelRef, found: Findings
) -> dict[str, Any] | None:
    """Type, enum and range checks of ``spec``; returns the spec when it is an object."""
    spec = obj.get("spec")
    if spec is None:
        found.errors.append(required(("spec",), rule=SCHEMA_REQUIRED))
        return None
    unknown: list[FieldPath] = []
    schema_checker(spec_model)(spec, ("spec",), found.errors, unknown)
    if unknown:
        # Imported only when a field is unknown: one module fewer for a check without any.
        from jobgate.engine.unknownfields import UnknownField

        found.warnings.extend(UnknownField(p) for p in unknown)
    return spec if isinstance(spec, dict) else None
