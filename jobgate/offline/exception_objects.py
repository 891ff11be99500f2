"""``TrainingJobPolicyException`` s read from files (``--policies``, ``--cluster-objects``), checked as the
apiserver would admit them: a missing ``expiresAt`` or ``reason``, an unknown rule id, a missing
namespace are errors (exit 2), each line naming the exception, the file and line, and the field.

The time they are judged at is the clock's, or ``--now RFC3339`` (reproducible CI).
"""

from __future__ import annotations

from jobgate.offline.cluster_objects import group_version_kind
from jobgate.policy.exceptions import EXCEPTION_KIND

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    import datetime
    from collections.abc import Iterable
    from typing import Any

    from jobgate.offline.cluster_objects import Located
    from jobgate.policy.exceptions import ExceptionSnapshot


def split_exceptions(objects: Iterable[Located]) -> tuple[list[Located], list[Located]]:
    """(everything else, the exceptions) among ``objects``."""
    rest: list[Located] = []
    exceptions: list[Located] = []
    for located in objects:
        (exceptions if group_version_kind(located.obj)[2] == EXCEPTION_KIND else rest).append(located)
    return rest, exceptions


def check_exceptions(objects: Iterable[Located], flag: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The valid exceptions among ``objects`` and the error lines of the others."""
    objects = list(objects)
    if not objects:
        return [], []  # the models (pydantic) are loaded only for a run given exceptions
    from pydantic import ValidationError

    from jobgate.offline.cluster_objects import POLICY_GROUP
    from jobgate.policy.exception_models import parse_exception
    from jobgate.policy.schema_errors import schema_errors

    found: list[dict[str, Any]] = []
    errors: list[str] = []
    for located in objects:
        obj = located.obj
        group, version, _ = group_version_kind(obj)
        problems: list[str] = []
        if group != POLICY_GROUP or version != "v1alpha1":
            problems.append(
                f'{located.where()}: no matches for kind "{EXCEPTION_KIND}" in version "{obj.get("apiVersion")}" '
                f"({flag} reads {EXCEPTION_KIND} of {POLICY_GROUP}/v1alpha1)"
            )
        metadata = obj.get("metadata")
        namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
        if not (isinstance(namespace, str) and namespace):
            problems.append(
                f"{located.where(('metadata',))}: metadata.namespace: Required value: an exception covers jobs of "
                "its own namespace only; set metadata.namespace"
            )
        parsed = None
        if not problems:
            try:
                parsed = parse_exception(obj)
            except ValidationError as exc:
                lines = schema_errors(exc.errors(include_url=False))
                ordered = sorted(lines, key=lambda e: located.line_of(e.path))
                problems += [f"{located.where(e.path)}: {e.text}" for e in ordered]
        if problems:
            errors.append(f"jobgate: {flag} {located.source}: {located.title} is invalid:")
            errors.extend(problems)
        elif parsed is not None:
            found.append(parsed)
    return found, errors


def exception_view(objects: list[dict[str, Any]], now: datetime.datetime | None) -> ExceptionSnapshot:
    """The exceptions given, judged at ``now`` (None: the clock's time)."""
    import datetime

    from jobgate.policy.exceptions import ExceptionSnapshot

    return ExceptionSnapshot.of_objects(objects, now or datetime.datetime.now(datetime.UTC))


def now_argument(text: str) -> datetime.datetime:
    """argparse's ``type=`` for ``--now``: an RFC 3339 date-time with its zone."""
    import argparse

    from jobgate.policy.exceptions import parse_time

    moment = parse_time(text)
    if moment is None:
        raise argparse.ArgumentTypeError(
            f"not an RFC 3339 date-time with a time zone (e.g. 2026-12-05T00:00:00Z): {text!r}"
        )
    return moment
