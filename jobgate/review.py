"""Mutate, then validate: the order the apiserver applies jobgate's webhooks in.

``defaulting_patch`` is all /mutate does: it fills defaults and never judges, because other
mutating webhooks may still complete the object after it (and the apiserver may call it
again). ``review_job`` defaults in memory and then validates: /validate, ``jobgate
validate``/``default`` and the controller call it, so a cluster without the mutating webhook
gets the same verdict as one with it.

The pipeline stands above what it calls: the engine (registry, context, patches), the shared
ObjectMeta checks, the families' kinds and platform policy. The engine below imports none of them.
"""

from __future__ import annotations

from jobgate.engine.context import CREATE, UPDATE, ReviewContext
from jobgate.engine.fielderrors import FieldError, FieldPath, invalid_status
from jobgate.engine.jsonpatch import NO_PATCH, Patch, PatchRecorder
from jobgate.engine.registry import GroupVersionKind, JobKind, lookup, served_kinds
from jobgate.engine.schema import schema_checker
from jobgate.rules.jobmeta import generate_name_errors, job_name, label_errors

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any


class Verdict:
    # Not a dataclass: importing ``dataclasses`` costs a one-file ``jobgate validate`` more
    # than the rules it runs.
    __slots__ = (
        "audit",
        "defaulted",
        "errors",
        "kind",
        "patch",
        "skipped",
        "waived",
        "warning_rules",
        "warnings",
    )

    def __init__(
        self,
        kind: JobKind,
        defaulted: dict[str, Any],
        patch: Patch,
        errors: list[FieldError],
        warnings: list[str],
        *,
        skipped: frozenset[str] = frozenset(),
        audit: list[str] | None = None,
        warning_rules: dict[str, tuple[str, FieldPath]] | None = None,
    ) -> None:
        self.kind = kind
        self.defaulted = defaulted
        self.patch = patch
        self.errors = errors
        self.warnings = warnings
        # The checks the review's context could not support (no view of the objects they read).
        self.skipped = skipped
        # Findings of Audit policies: recorded (the webhook's audit annotations), never shown as denials.
        self.audit = audit if audit is not None else []
        # The rule behind a warning and its field where the review knows them (the platform policies'),
        # by the warning's text; the others' are looked up by warning_rule (jobgate.engine.warningids).
        self.warning_rules = warning_rules if warning_rules is not None else {}
        # What TrainingJobPolicyExceptions waived (the webhook's audit annotation policy-exceptions).
        self.waived: list[str] = []

    @property
    def allowed(self) -> bool:
        return not self.errors

    def warning_rule(self, warning: str) -> str:
        """The id of the rule behind one of ``warnings``; '' when none is known."""
        known = self.warning_rules.get(warning)
        if known is not None:
            return known[0]
        from jobgate.engine.warningids import warning_rule

        return warning_rule(self.kind.family, warning)

    def status(self) -> dict[str, Any]:
        """The ``metav1.Status`` of a denial (422, reason Invalid, one cause per error)."""
        gvk = self.kind.gvk
        return invalid_status(gvk.group, gvk.kind, job_name(self.defaulted), self.errors)


def engine_build() -> str:
    """How the rule engine runs here: as mypyc extension modules (``JOBGATE_COMPILE=1``) or not."""
    return "pure Python" if __file__.endswith(".py") else "compiled (mypyc)"


# jobgate.policy.review once a review carries policies: a plain one-file check never loads it, and a
# review with policies does not pay an import statement per call.
_loaded: dict[str, Any] = {}


def _policy_review() -> Any:
    loaded = _loaded.get("policy")
    if loaded is None:
        from jobgate.policy import review

        loaded = _loaded["policy"] = review
    return loaded


def warm_up() -> None:
    """Build every kind's schema now, so that the first review does not pay for it."""
    for kind in served_kinds():
        schema_checker(kind.spec_model)


def kind_of(obj: Any) -> JobKind | None:
    gvk = GroupVersionKind.from_object(obj)
    return lookup(gvk) if gvk is not None else None


def defaulting_patch(
    kind: JobKind, obj: dict[str, Any], old: dict[str, Any] | None = None, context: ReviewContext | None = None
) -> Patch:
    """The JSON Patch /mutate sends: defaults only (the platform policies' first, on CREATE), whatever
    validation would say of the result."""
    recorder = PatchRecorder()
    if context is not None and context.policies is not None:
        obj = _policy_review().with_policy_defaults(kind.family, obj, context, recorder)
    kind.default(obj, recorder, previous=_as_stored(kind, old))
    return recorder.ops


def _as_stored(kind: JobKind, old: Any) -> dict[str, Any] | None:
    """The stored job is a defaulted one: read as the apiserver keeps it, also by the defaults that
    compare the update with it (a replica type's spelling), whoever gave it (a webhook's oldObject,
    or a manifest on the command line)."""
    return kind.default(old) if isinstance(old, dict) else None


def review_job(
    kind: JobKind,
    obj: dict[str, Any],
    old: dict[str, Any] | None = None,
    *,
    context: ReviewContext | None = None,
    with_patch: bool = True,
) -> Verdict:
    """Default, then validate; the patch (skipped by /validate, which never sends one) turns obj into defaulted.

    ``context`` is what the transport knows of the request and the cluster; without one, the
    review knows only the operation (UPDATE when ``old`` is given) and no cluster object.
    """
    if context is None:
        context = ReviewContext(operation=CREATE if old is None else UPDATE)
    recorder = PatchRecorder() if with_patch else NO_PATCH
    policy = _policy_review().PolicyReview(kind.family, context) if context.policies is not None else None
    if policy is not None:
        obj = policy.defaults(obj, recorder)
    old_defaulted = _as_stored(kind, old)
    defaulted = kind.default(obj, recorder, previous=old_defaulted)
    found = kind.validate(defaulted, old_defaulted, context)
    found.errors.extend(generate_name_errors(defaulted.get("metadata"), creating=old is None))
    found.errors.extend(label_errors(defaulted.get("metadata")))
    audit: list[str] = []
    warning_rules: dict[str, tuple[str, FieldPath]] | None = None
    waived: list[str] = []
    if policy is not None:
        judged = policy.judge(defaulted, old_defaulted)
        if judged is not None:
            found.errors.extend(judged.errors)
            found.warnings.extend(judged.warnings)
            audit = judged.audit
            warning_rules = judged.warning_rules
            waived = judged.waived
    verdict = Verdict(
        kind=kind,
        defaulted=defaulted,
        patch=recorder.ops if with_patch else [],
        errors=found.errors,
        warnings=list(dict.fromkeys(found.warnings)),
        skipped=frozenset(context.skipped),
        audit=audit,
        warning_rules=warning_rules,
    )
    verdict.waived = waived
    return verdict
