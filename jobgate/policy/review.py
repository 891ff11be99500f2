"""Platform policy inside a review: the defaults it writes and the verdict it adds.

``review_job`` calls these only when the review's context carries policies (the webhook with its
policy caches, ``jobgate validate --policies``, the controller's audit); a review without them
imports nothing of this package. The effective policy is resolved once per review from the
context's policies, the job's namespace and that namespace's labels.

Order: on CREATE the policy's defaults are written first, then the family's. A platform default
must beat a built-in one (Volcano's webhook sets ``schedulerName: volcano``; a policy's scheduler
default written after it could never apply); the family's defaults then fill what is left, and
the family's validation judges the result. Both go into the one JSON Patch /mutate answers.
"""

from __future__ import annotations

from jobgate.engine.context import CREATE, ReviewContext
from jobgate.engine.fielderrors import ErrorType, FieldError
from jobgate.engine.jsonpatch import NO_PATCH, PatchRecorder, escape_pointer_token
from jobgate.engine.views import NAMESPACE_NAME_LABEL
from jobgate.policy.check import (
    PolicyFinding,
    policy_defaults,
    policy_findings,
    resolved_plan,
    written_defaults,
)
from jobgate.policy.kinds import kind_map
from jobgate.policy.memo import Resolution
from jobgate.policy.resolve import PolicySet, effective_policy, selected_by_unknown_labels

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.fielderrors import FieldPath
    from jobgate.engine.views import DeviceView

_ERROR_TYPES = {error_type.text: error_type for error_type in ErrorType.members()}


def resolution_for(job: dict[str, Any], context: ReviewContext) -> Resolution | None:
    """The job's effective policy with its kind's field map, or None when the review carries no policies."""
    policies = context.policies
    if policies is None:
        return None
    metadata = job.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    if type(namespace) is not str or not namespace:
        namespace = namespace if isinstance(namespace, str) and namespace else context.namespace or "default"
    if type(policies) is PolicySet:  # the webhook's and the offline command's: its memo, compiled
        return policies.memo.resolution(namespace, context.namespace_labels, job)
    effective = effective_policy(policies, namespace, context.namespace_labels, job)
    return Resolution(effective, kind_map(job))


def with_policy_defaults(
    family: str, obj: dict[str, Any], context: ReviewContext, recorder: PatchRecorder
) -> dict[str, Any]:
    """``obj`` with its effective policy's defaults (CREATE only), each change recorded; ``obj`` itself
    is not modified."""
    return PolicyReview(family, context).defaults(obj, recorder)


class PolicyReview:
    """The policies' part of one review: their defaults, then their verdict on the job as defaulted.

    It keeps what it resolved for the defaults (the memo's entry: the effective policy, the kind's
    field map, their plan) and gives it to the verdict when the defaulted job selects the same
    policies (the labels selectors read unchanged), so that a review resolves once."""

    __slots__ = ("context", "family", "received", "resolution")

    def __init__(self, family: str, context: ReviewContext) -> None:
        self.family = family
        self.context = context
        # The effective policy, the kind's field map and their plan, as resolved for the defaults.
        self.resolution: Resolution | None = None
        self.received: dict[str, Any] | None = None

    def defaults(self, obj: dict[str, Any], recorder: PatchRecorder) -> dict[str, Any]:
        """``obj`` with its effective policy's defaults (CREATE only), each change recorded; ``obj``
        itself is not modified."""
        if self.context.operation != CREATE or not isinstance(obj, dict):
            return obj
        resolution = resolution_for(obj, self.context)
        if resolution is None:
            return obj
        self.resolution, self.received = resolution, obj
        effective, kmap = resolution.effective, resolution.kmap
        # None applies here (most namespaces, most jobs), or not to this family: nothing to write.
        if not effective.policies or kmap is None or kmap.family != self.family:
            return obj
        plan = resolved_plan(resolution)
        if recorder is NO_PATCH or type(recorder) is PatchRecorder:
            # The plan's defaults written out: the same copies and recorded operations as below.
            written = written_defaults(plan, obj, None if recorder is NO_PATCH else recorder.ops)
            if written is not None:
                return written
        return write_defaults(obj, policy_defaults(obj, self.family, effective, kmap, plan=plan), recorder)

    def judge(self, defaulted: dict[str, Any], old: dict[str, Any] | None) -> PolicyVerdict | None:
        """The policies' verdict on the job as it will be stored; None when they have nothing to say."""
        resolution, received, policies = self.resolution, self.received, self.context.policies
        if not (
            resolution is not None
            and received is not None
            and type(policies) is PolicySet
            and (
                defaulted is received
                or _selection_untouched(received, defaulted)
                or policies.memo.selects_alike(received, defaulted)
            )
        ):
            judged = judge(self.family, defaulted, old, self.context)
        else:
            judged = verdict(self.family, resolution, defaulted, old, self.context.devices, context=self.context)
        context = self.context
        if resolution is not None and resolution.effective.conflicts and context.operation == CREATE:
            judged = _with_default_conflicts(judged, resolution, self.family)
        if not context.namespace_labels_known and policies is not None:
            judged = _with_unknown_labels(judged, defaulted, context)
        return judged


def write_defaults(
    obj: dict[str, Any], ops: list[tuple[list[str | int], object]], recorder: PatchRecorder
) -> dict[str, Any]:
    """``obj`` with ``ops`` (``policy_defaults``') set one by one, each change recorded; ``obj`` itself
    is not modified: copy on write, each container at most once whatever number of defaults go under it."""
    if not ops:
        return obj
    copies: set[int] = set()
    root = dict(obj)
    copies.add(id(root))
    for path, value in ops:
        _set_path(root, path, value, recorder, copies)
    return root


def _selection_untouched(received: dict[str, Any], defaulted: dict[str, Any]) -> bool:
    """Whether defaulting kept what policies select by (apiVersion, kind, metadata and so the labels)
    as the very objects received: defaults copy on write, so the same object holds the same values."""
    return (
        defaulted.get("metadata") is received.get("metadata")
        and defaulted.get("kind") is received.get("kind")
        and defaulted.get("apiVersion") is received.get("apiVersion")
    )


def _set_path(
    root: dict[str, Any], path: list[str | int], value: object, recorder: PatchRecorder, copies: set[int]
) -> None:
    """Down ``path`` from ``root`` (a copy), copying each container not yet copied and creating
    missing objects, and set the value at its end. ``copies`` holds the identities of the copies made."""
    node: Any = root
    # The pointer serves only the recorded patch: /validate's defaults record none.
    recording = recorder is not NO_PATCH
    pointer = ""
    for segment in path[:-1]:
        child = node[int(segment)] if type(node) is list else node.get(segment)
        if type(child) is dict or type(child) is list or isinstance(child, dict | list):
            if id(child) not in copies:
                child = dict(child) if isinstance(child, dict) else list(child)
                copies.add(id(child))
                node[segment] = child
        else:
            recorder.set(node, str(segment), {}, pointer)
            child = node[segment]
            copies.add(id(child))
        if recording:
            pointer = f"{pointer}/{escape_pointer_token(str(segment))}"
        node = child
    recorder.set(node, str(path[-1]), value, pointer)


class PolicyVerdict:
    """What the policies add to a review: errors (Deny), warnings (Warn), audit lines (Audit)."""

    __slots__ = ("audit", "errors", "waived", "warning_rules", "warnings")

    def __init__(self) -> None:
        # Each labelled with the policy rule behind it (``policy/max-gpus-per-job``, ...: ``FieldError.rule``).
        self.errors: list[FieldError] = []
        self.warnings: list[str] = []
        # (rule id, field path) of each warning, by its text.
        self.warning_rules: dict[str, tuple[str, FieldPath]] = {}
        self.audit: list[str] = []
        # What TrainingJobPolicyExceptions waived, one line per exception (also a warning).
        self.waived: list[str] = []


def judge(
    family: str, defaulted: dict[str, Any], old: dict[str, Any] | None, context: ReviewContext
) -> PolicyVerdict | None:
    """The policies' verdict on the job as it will be stored; None when they have nothing to say
    (the review carries no policies, or the job breaks none)."""
    resolution = resolution_for(defaulted, context)
    return (
        verdict(family, resolution, defaulted, old, context.devices, context=context)
        if resolution is not None
        else None
    )


def verdict(
    family: str,
    resolution: Resolution,
    defaulted: dict[str, Any],
    old: dict[str, Any] | None,
    devices: DeviceView | None = None,
    *,
    context: ReviewContext | None = None,
) -> PolicyVerdict | None:
    """The verdict of the resolved policies on the job as it will be stored; None when the job breaks
    none. ``devices``: the review's view of DRA objects (claim templates, claims, device classes);
    ``context``: the review's (queue objects, namespace labels: ``require.fitsQueue``; the exceptions in force)."""
    effective, kmap = resolution.effective, resolution.kmap
    if not effective.policies or kmap is None or kmap.family != family:
        return None
    found = policy_findings(
        defaulted, old, family, effective, kmap, plan=resolved_plan(resolution), devices=devices, context=context
    )
    if not found:
        return None
    waived: list[str] = []
    if context is not None and context.exceptions is not None:
        from jobgate.policy.exception_review import waive_in_review

        found, waived = waive_in_review(found, context, family, resolution, defaulted, old=old)
    judged = PolicyVerdict()
    if waived:
        judged.waived = waived
        for line in waived:
            judged.warnings.append(line)
            judged.warning_rules[line] = ("policy/exception", ("metadata", "name"))
    for finding in found:
        if finding.action == "Deny":
            judged.errors.append(field_error(finding))
        elif finding.action == "Warn":
            text = finding.text()
            judged.warnings.append(text)
            judged.warning_rules[text] = (finding.rule, finding.segments or (finding.path,))
        else:
            judged.audit.append(finding.text())
    return judged


def _with_default_conflicts(judged: PolicyVerdict | None, resolution: Resolution, family: str) -> PolicyVerdict | None:
    """A warning for each default that policies of equal priority disagree on (neither value is
    written): the policy author's mistake, said where a job meets it rather than only in ``policy
    explain``. Only for a field this kind has (a queue default means nothing to an MxJob)."""
    kmap = resolution.kmap
    if kmap is None or kmap.family != family:
        return judged
    for conflict in resolution.effective.conflicts:
        if conflict.action is not None or not conflict.field.startswith("defaults."):
            continue  # an allow-list conflict: a finding of the checks
        field = conflict.field.removeprefix("defaults.")
        if field == "kueueQueueName":
            if not kmap.kueue:
                continue
        elif not field.startswith("labels[") and kmap.locator(field) is None:
            continue
        names = ", ".join(str(p) for p in conflict.policies)
        judged = judged or PolicyVerdict()
        text = f"{conflict.field}: the policies {names} conflict: {conflict.message}"
        judged.warnings.append(text)
        judged.warning_rules[text] = (DEFAULT_CONFLICT, ("spec",))
    return judged


# The rule of the warning that policies of equal priority disagree on a default.
DEFAULT_CONFLICT = "policy/default-conflict"
# The rule of a job judged where a policy selects namespaces by labels the command was not given.
NAMESPACE_LABELS_UNKNOWN = "policy/namespace-labels-unknown"


def _with_unknown_labels(
    judged: PolicyVerdict | None, defaulted: dict[str, Any], context: ReviewContext
) -> PolicyVerdict | None:
    """An error for each cluster policy whose namespaceSelector reads labels of the job's namespace
    that were not given (offline without its Namespace): applying it or skipping it would both be a
    guess, and a skipped limit is a CI check greener than the cluster."""
    policies = context.policies
    if policies is None:
        return judged
    unknown = selected_by_unknown_labels(policies, defaulted, NAMESPACE_NAME_LABEL)
    if not unknown:
        return judged
    metadata = defaulted.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    if not isinstance(namespace, str) or not namespace:
        namespace = context.namespace or "default"
    judged = judged or PolicyVerdict()
    for ref in unknown:
        error = FieldError(
            ErrorType.INVALID,
            ("metadata", "namespace"),
            namespace,
            f"the labels of namespace {namespace} are unknown and {ref} selects namespaces by label: "
            f"pass the Namespace (--namespaces FILE or --cluster-objects FILE, e.g. from "
            f"`kubectl get namespace {namespace} -o yaml`)",
            NAMESPACE_LABELS_UNKNOWN,
        )
        judged.errors.append(error)
    return judged


def field_error(finding: PolicyFinding) -> FieldError:
    error_type = _ERROR_TYPES.get(finding.type, ErrorType.INVALID)
    path = finding.segments or (finding.path,)
    if error_type in (ErrorType.REQUIRED, ErrorType.FORBIDDEN):
        return FieldError(error_type, path, detail=finding.message, rule=finding.rule)
    return FieldError(error_type, path, finding.value, finding.message, finding.rule)
