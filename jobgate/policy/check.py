"""Judging a job against its effective policy, and the defaults a policy writes into it.

:func:`policy_findings` gives every violation of a job, each with the field path in the
apiserver's style, a Kubernetes field-error type, a message naming the policy, the action of that
policy (Deny/Warn/Audit) and a rule id. It expects the job as it will be stored (family and policy
defaults applied), as the validating webhook sees it.

``existingViolations: Allow`` (the default). On UPDATE (``old_job`` given) a finding is dropped
when the old job already had the same violation of the same policy and the update does not make
it worse: each finding carries an ``identity`` (rule, policy and what is violated: the role, the
image, the label key, …) and a ``measure`` (a count compared with ``<=``, or a value compared with
``==``). So a controller adding a finalizer to an old 64-GPU job passes, scaling it to 72 GPUs does
not, swapping its image for another one from a refused registry does not (a different image is a
new violation). ``Deny`` keeps every finding. Conflicts are never dropped.

A requirement or limit on a field the kind does not have (a TTL on MxJob, GenericJob, DIJob; an
active deadline on a Volcano Job; a queue on MxJob or DIJob) gives a Warn finding with rule
``policy/not-applicable`` — never a denial the user cannot fix, never a silent pass.

:func:`policy_defaults` gives the (path, value) pairs to set on CREATE, only where the job leaves
the field unset, written where its family keeps it (:mod:`.fieldmap`). Intermediate objects may be
missing: :func:`apply_defaults` (or the caller's patch builder) creates them. Call it on the job as
received, *before* the family's built-in defaults, so that a platform default beats a built-in one
(Volcano's webhook would otherwise set ``schedulerName: volcano`` first and the policy's scheduler
default could never apply); the family defaults then fill what is left.

The Volcano trap: jobgate's Volcano Job CRD defaults ``spec.queue`` to ``default`` in its schema, and
beside Volcano's own CRD (which has no such default) Volcano's mutating webhook sets it, so a job may
arrive at admission with ``queue: default`` whether or not its author wrote it. When a policy
gives a queue default, a Volcano job whose queue is exactly ``default`` is treated as unset and gets
the policy's queue. The cost, stated: an author who explicitly writes ``queue: default`` in such a
namespace is moved to the policy's queue too (indistinguishable at admission); to stay in ``default``
the policy must not default the queue, or must list ``default`` as its default. Only Volcano, only
the queue, only the exact value ``default``.

Where the parts live: the checks and :class:`PolicyFinding` in :mod:`jobgate.policy.findings`; the
clean path (a plan per effective policy and kind, which rules out a finding without building one) in
:mod:`jobgate.policy.plan`; where a default may be written in :mod:`jobgate.policy.defaults`.
This module is the entry: the findings and the defaults of one job.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobgate.policy.defaults import _unset_at, apply_defaults
from jobgate.policy.fieldmap import (
    TEMPLATE,
    VOLCANO_SCHEMA_DEFAULT_QUEUE,
    Key,
    KindMap,
    get_path,
)
from jobgate.policy.findings import _NO_EXTENDED, PolicyFinding, _all_findings, _locations, _weaker, extended_weights
from jobgate.policy.gpu import is_fraction
from jobgate.policy.kinds import kind_map
from jobgate.policy.plan import _label_defaults, _Plan, _plan, resolved_plan
from jobgate.policy.resolve import EffectivePolicy

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from jobgate.engine.views import DeviceView
    from jobgate.policy.resolve import Sourced

# What the webhook's policy review, the controller's audit and the generators import from here; the
# checks, the clean path and the defaults' helpers live in findings, plan and defaults.
__all__ = [
    "PolicyFinding",
    "apply_defaults",
    "extended_weights",
    "findings_by_action",
    "policy_defaults",
    "policy_findings",
    "resolved_plan",
    "written_defaults",
]


def written_defaults(plan: _Plan, job: dict[str, Any], ops: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """``job`` with the plan's defaults written into copies, each operation recorded in ``ops`` (unless
    None) as a ``PatchRecorder`` records it (the plan's ``write_fixed``). None for defaults that are not
    all at fixed paths: the caller then writes :func:`policy_defaults`' operations."""
    if plan.fixed_writes is not None:
        return plan.write_fixed(job, ops)
    return None


def _not_worse(new: Any, old: Any) -> bool:
    numbers = (isinstance(new, int) or is_fraction(new)) and (isinstance(old, int) or is_fraction(old))
    if numbers and not isinstance(new, bool):
        return new <= old
    return new == old


def policy_findings(
    job: dict[str, Any],
    old_job: dict[str, Any] | None,
    family: str,
    effective: EffectivePolicy,
    kmap: KindMap | None = None,
    *,
    plan: _Plan | None = None,
    devices: DeviceView | None = None,
    context: Any = None,
) -> list[PolicyFinding]:
    """Every finding of ``effective`` on ``job``; on UPDATE (``old_job``), minus the existing violations
    the policies allow (see the module docstring). ``family`` must be the job's family (a mismatch
    finds nothing: the caller dispatched on group and kind). ``kmap``: ``kind_map(job)``, and
    ``plan``: the plan of ``effective`` for it, when the caller has them. ``devices``: the review's
    view of the DRA objects its pods' claims name (None: none, so a claim under a GPU limit is a finding).
    ``context``: the review's (its queue objects and namespace labels, for ``require.fitsQueue``, which
    is not judged without one: the controller's audit)."""
    if kmap is None:
        kmap = kind_map(job)
    if kmap is None or kmap.family != family:
        return []
    if kmap.resolve is not None:
        job = kmap.resolve(job, context)
        old_job = kmap.resolve(old_job, context) if old_job is not None else None
    if plan is None:
        plan = _plan(effective, kmap)
    extended = extended_weights(effective, devices, plan.extended_memo) if devices is not None else _NO_EXTENDED
    fits = effective.required_fields.get("fitsQueue") if context is not None else None
    if plan.clean(job, kmap, extended):
        if not fits:
            return []  # nothing to report, whatever the old job had
        found = []
    else:
        found = _all_findings(job, effective, devices)
    if fits:
        found += _queue_findings(job, kmap, fits, context)
    if old_job is None or not found:
        return found
    old: dict[tuple[Any, ...], list[PolicyFinding]] = {}
    old_found = _all_findings(old_job, effective, devices)
    if fits and kind_map(old_job) is kmap:
        old_found += _queue_findings(old_job, kmap, fits, context)
    for f in old_found:
        old.setdefault(f.identity, []).append(f)
    kept = []
    for f in found:
        if f.existing_violations == "Allow" and f.rule != "policy/conflict":
            previous = old.get(f.identity, [])
            if any(_not_worse(f.measure, o.measure) for o in previous):
                continue
        kept.append(f)
    return kept


def _queue_findings(job: dict[str, Any], kmap: KindMap, entries: list[Sourced], context: Any) -> list[PolicyFinding]:
    """``require.fitsQueue``'s findings (jobgate.policy.queuefit) for each policy requiring it: at its
    action, a not-modelled notice at most a warning."""
    from jobgate.engine.fielderrors import render_path
    from jobgate.policy.constraints import FORBIDDEN
    from jobgate.policy.queuefit import NOT_MODELLED, queue_outcomes

    metadata = job.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    if not isinstance(namespace, str) or not namespace:
        namespace = context.namespace or "default"
    outcomes = queue_outcomes(
        job,
        kmap,
        context.queue_objects,
        namespace,
        namespace_labels=context.namespace_labels,
        labels_known=context.namespace_labels_known,
    )
    found = []
    for entry in entries:
        for o in outcomes:
            notice = o.rule == NOT_MODELLED
            found.append(
                PolicyFinding(
                    render_path(o.path),
                    FORBIDDEN if notice else "Invalid value",
                    f"{o.message} ({entry.source})",
                    _weaker(entry.action) if notice else entry.action,
                    str(entry.source),
                    o.rule,
                    o.value,
                    (o.rule, entry.source, *o.identity),
                    None,
                    entry.existing_violations,
                    o.path,
                )
            )
    return found


# --- defaults ----------------------------------------------------------------------------------


def policy_defaults(
    job: dict[str, Any],
    family: str,
    effective: EffectivePolicy,
    kmap: KindMap | None = None,
    *,
    plan: _Plan | None = None,
) -> list[tuple[list[str | int], object]]:
    """(path segments, value) to set on CREATE, only where the job leaves the field unset (``kmap``:
    ``kind_map(job)``, and ``plan``: the plan of ``effective`` for it, when the caller has them)."""
    if kmap is None:
        kmap = kind_map(job)
    if kmap is None or kmap.family != family:
        return []
    if plan is None:
        plan = _plan(effective, kmap)
    return _defaults(job, kmap, plan)


def _defaults(job: dict[str, Any], kmap: KindMap, plan: _Plan) -> list[tuple[list[str | int], object]]:
    ops: list[tuple[list[str | int], object]] = []
    fixed = plan.fixed_defaults
    if fixed is not None:
        for at, default in fixed:
            if _unset_at(job, at):
                ops.append((list(at), default))
        _label_defaults(job, plan, ops)
        return ops
    # Only the fields given a default that the kind has (explain says which it lacks).
    for field, default, locator in plan.defaults:
        template_level = locator == TEMPLATE
        if template_level:
            places = _locations(kmap, field, job) or []
        else:
            path = locator(job)
            current = get_path(job, path)
            if current is None and not _unset_at(job, path):
                continue  # something that is no object on the way: left for validation to report
            places = [(path, current)]
        for path, current in places:
            value = current
            if field == "queue" and kmap.family == "volcano" and value == VOLCANO_SCHEMA_DEFAULT_QUEUE:
                value = None  # a schema's or Volcano webhook's default, not the author's choice (module docstring)
            if template_level and not isinstance(get_path(job, path[:-1]), dict):
                continue  # a template without a spec: the family's validation reports it
            if value is None:
                ops.append(([str(s) if isinstance(s, Key) else s for s in path], default))
    _label_defaults(job, plan, ops)
    return ops


def findings_by_action(findings: Iterable[PolicyFinding]) -> Mapping[str, list[PolicyFinding]]:
    """Findings grouped Deny / Warn / Audit (the webhook denies, warns, annotates)."""
    grouped: dict[str, list[PolicyFinding]] = {"Deny": [], "Warn": [], "Audit": []}
    for f in findings:
        grouped[f.action].append(f)
    return grouped
