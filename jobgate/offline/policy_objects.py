"""Platform policies read from files (``--policies``, ``--cluster-objects``), checked as the apiserver
would admit them: every error of every policy, one line each, ``FILE:LINE: field: Type: detail`` in
the apiserver's words (:mod:`jobgate.policy.schema_errors`), and the mistakes that would otherwise
pass silently: a document of a kind ``--policies`` does not know, a ``TrainingJobPolicy`` without a
namespace (it would apply nowhere), one policy given twice with different contents.

Pure but for the models: what was read comes in (:class:`~jobgate.offline.cluster_objects.Located`),
the policies as the pure modules read them and the error lines come out.
"""

from __future__ import annotations

from jobgate.offline.cluster_objects import POLICY_GROUP, group_version_kind
from jobgate.policy.plain import API_VERSION, NAMESPACED_KIND, POLICY_KINDS, parse_policy_plain

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from jobgate.offline.cluster_objects import Located

KNOWN = f"{' and '.join(POLICY_KINDS)} of {API_VERSION}"


class PolicyErrors(Exception):
    """The policies cannot be used: ``lines`` says why, one error a line."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def is_policy_kind(obj: dict[str, Any]) -> bool:
    """Whether an object claims to be a policy (its group is the policies', or its kind a policy kind)."""
    group, _, kind = group_version_kind(obj)
    return group == POLICY_GROUP or kind in POLICY_KINDS


def check_policies(
    objects: Iterable[Located],
    flag: str,
    other_kind: Callable[[dict[str, Any]], bool] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The valid policies among ``objects`` (as :func:`jobgate.policy.models.parse_policy` gives them)
    and the error lines of the others.

    ``other_kind``: for an object that is no policy, whether it is a kind the command knows as
    something else (a job, a Namespace in an export): skipped. Any other object is an error (a
    ``--policies`` file must hold policies); None: every non-policy is skipped (``--cluster-objects``
    routes only policies here).
    """
    policies: list[dict[str, Any]] = []
    errors: list[str] = []
    for located in objects:
        obj = located.obj
        group, version, kind = group_version_kind(obj)
        if group != POLICY_GROUP and kind not in POLICY_KINDS:
            if other_kind is None or other_kind(obj):
                continue
            if not obj.get("apiVersion") or not kind:
                errors.append(f"{located.where()}: not a Kubernetes object: apiVersion and kind are required")
            else:
                errors.append(
                    f"{located.where()}: {located.title}: {flag} reads {KNOWN}, not {obj.get('apiVersion')} {kind}"
                )
            continue
        if kind not in POLICY_KINDS or f"{group}/{version}" != API_VERSION:
            errors.append(
                f'{located.where()}: no matches for kind "{kind}" in version "{obj.get("apiVersion")}" '
                f"({flag} reads {KNOWN})"
            )
            continue
        problems = _namespace_problems(located)
        parsed = parse_policy_plain(obj)
        if parsed is None:
            parsed, found = _parse_with_models(located)
            problems += found
        if problems:
            errors.append(f"jobgate: {flag} {located.source}: {located.title} is invalid:")
            errors.extend(problems)
            continue
        if parsed is not None:
            policies.append(parsed)
    return policies, errors


def _namespace_problems(located: Located) -> list[str]:
    obj = located.obj
    metadata = obj.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    if obj.get("kind") == NAMESPACED_KIND and not (isinstance(namespace, str) and namespace):
        return [
            f"{located.where(('metadata',))}: metadata.namespace: Required value: a {NAMESPACED_KIND} applies "
            "in its own namespace only; set metadata.namespace (or make it a ClusterTrainingJobPolicy)"
        ]
    return []


def _parse_with_models(located: Located) -> tuple[dict[str, Any] | None, list[str]]:
    """The models' verdict: the policy, or every error in the apiserver's words, each at its line."""
    from pydantic import ValidationError

    from jobgate.policy.models import parse_policy
    from jobgate.policy.schema_errors import schema_errors

    try:
        return parse_policy(located.obj), []
    except ValidationError as exc:
        found = schema_errors(exc.errors(include_url=False))
        ordered = sorted(found, key=lambda e: located.line_of(e.path))
        return None, [f"{located.where(e.path)}: {e.text}" for e in ordered]
    except ValueError as exc:  # not a policy at all (parse_policy's own check)
        return None, [f"{located.where()}: {exc}"]


def policy_key(policy: dict[str, Any]) -> tuple[str, str, str]:
    """(kind, namespace, name): one object in a cluster."""
    metadata = policy.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    return str(policy.get("kind")), str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def merge_policies(groups: Iterable[list[dict[str, Any]]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The policies of every source, each object once: a policy given twice (in ``--policies`` and in
    ``--cluster-objects``, say) counts once when both copies agree, and is an error when they differ
    (the cluster holds only one of them)."""
    chosen: dict[tuple[str, str, str], dict[str, Any]] = {}
    errors: list[str] = []
    for group in groups:
        for policy in group:
            key = policy_key(policy)
            before = chosen.get(key)
            if before is not None and before.get("spec") != policy.get("spec"):
                kind, namespace, name = key
                shown = f"{namespace}/{name}" if namespace else name
                errors.append(f"jobgate: {kind} {shown} is given twice with different specs: keep one")
                continue
            chosen[key] = policy
    return list(chosen.values()), errors
