"""``TrainingJobPolicyException``: constraints of named policies waived for some jobs of one namespace,
until a time. Pure: the webhook, the offline commands and the controller's audit hand in the
exceptions they know and the time it is.

Semantics (issue 46; the field names are the CRD's, :mod:`.exception_models`):

- An exception lives in a namespace and covers jobs of that namespace only: it never widens another.
- ``spec.policies[]`` names what it waives: a ``ClusterTrainingJobPolicy`` by name, or a
  ``TrainingJobPolicy`` of the exception's own namespace; ``rules`` the rule ids waived, absent =
  every *constraint* of the policy (its limits and requirements, :data:`WAIVABLE_RULES`). Conflicts
  between policies, not-applicable notices and other warnings are never waived, and defaults are
  never touched (they are written on CREATE whatever the exceptions).
- ``spec.match``: ``names``, ``kinds`` (``{group, kind}``) and ``objectSelector`` combine as AND;
  absent, every job of the namespace.
- ``spec.expiresAt``: an exception whose ``expiresAt`` is not after now is expired and ignored.
- A policy with ``spec.exceptions: Deny`` cannot be waived (the default is ``Allow``).

Limits combine "most restrictive first" and the resolution drops the entries a stricter one
dominates (:func:`jobgate.policy.resolve.prune`): a 40-GPU job under a waived Deny-16 policy must
still meet another policy's Deny-32. So when a waiver removes a finding, the constraint findings
are made again: the policies not waived together, each waived policy alone (its waived rules
dropped), every one of them counting GPUs with the lists of all the policies that apply.
"""

from __future__ import annotations

import datetime

from jobgate.policy.constraints import CONSTRAINTS
from jobgate.policy.resolve import CLUSTER_KIND, NAMESPACED_KIND, PolicyRef, combine, policy_ref
from jobgate.policy.selectors import selector_matches

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    from jobgate.engine.views import DeviceView
    from jobgate.policy.check import PolicyFinding
    from jobgate.policy.fieldmap import KindMap

EXCEPTION_KIND = "TrainingJobPolicyException"
EXCEPTION_PLURAL = "trainingjobpolicyexceptions"
# The rule ids an exception may name: the constraints (limits and requirements) of the policies.
WAIVABLE_RULES = frozenset(c.rule for c in CONSTRAINTS)
# The rule of the warning and audit line that say an exception waived a finding.
EXCEPTION_RULE = "policy/exception"
# Jobs listed in an exception's status (the total is always exact).
MAX_JOBS_LISTED = 20


def parse_time(text: Any) -> datetime.datetime | None:
    """An RFC 3339 date-time with its zone (``2026-12-05T00:00:00Z``) as an aware datetime; None otherwise."""
    if isinstance(text, datetime.datetime):
        return text if text.tzinfo is not None else None
    if not isinstance(text, str) or "T" not in text.upper():
        return None
    try:
        parsed = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def format_time(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class PolicyException:
    """An exception as the checks read it (built from a stored or given object)."""

    __slots__ = ("expires_at", "expires_text", "kinds", "name", "names", "namespace", "reason", "selector", "waives")

    def __init__(
        self,
        namespace: str,
        name: str,
        waives: Mapping[PolicyRef, frozenset[str] | None],
        expires_at: datetime.datetime,
        reason: str,
        *,
        names: Iterable[str] | None = None,
        kinds: Iterable[tuple[str, str]] | None = None,
        selector: Mapping[str, Any] | None = None,
        expires_text: str | None = None,
    ) -> None:
        self.namespace = namespace
        self.name = name
        # Each waived policy, with the rule ids waived (None: every constraint of it).
        self.waives = dict(waives)
        self.expires_at = expires_at
        self.expires_text = expires_text or format_time(expires_at)
        self.reason = reason
        self.names = frozenset(names) if names is not None else None
        self.kinds = frozenset(kinds) if kinds is not None else None
        self.selector = selector

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> PolicyException | None:
        """The exception an object states; None when it states none that can be honoured (no name or
        namespace, no valid ``expiresAt``, nothing waived): a malformed exception waives nothing."""
        metadata = obj.get("metadata")
        spec = obj.get("spec")
        if not isinstance(metadata, dict) or not isinstance(spec, dict):
            return None
        namespace, name = metadata.get("namespace"), metadata.get("name")
        expires_at = parse_time(spec.get("expiresAt"))
        reason = spec.get("reason")
        if not (isinstance(namespace, str) and namespace and isinstance(name, str) and name):
            return None
        if expires_at is None or not isinstance(reason, str) or not reason:
            return None
        waives: dict[PolicyRef, frozenset[str] | None] = {}
        for entry in spec.get("policies") or []:
            if not isinstance(entry, dict):
                return None
            kind, policy = entry.get("kind"), entry.get("name")
            if kind not in (CLUSTER_KIND, NAMESPACED_KIND) or not isinstance(policy, str) or not policy:
                return None
            ref = PolicyRef(kind, namespace if kind == NAMESPACED_KIND else "", policy)
            rules = entry.get("rules")
            if rules is None:
                waives[ref] = None
                continue
            if not isinstance(rules, list) or not rules or not all(r in WAIVABLE_RULES for r in rules):
                return None
            if ref in waives and waives[ref] is None:
                continue  # listed again: every constraint stays waived
            waives[ref] = frozenset(rules) | (waives.get(ref) or frozenset())
        if not waives:
            return None
        match = spec.get("match")
        match = match if isinstance(match, dict) else {}
        names = match.get("names")
        kinds = match.get("kinds")
        selector = match.get("objectSelector")
        if names is not None and not isinstance(names, list):
            return None
        if kinds is not None and not (
            isinstance(kinds, list) and all(isinstance(k, dict) and "group" in k and "kind" in k for k in kinds)
        ):
            return None
        if selector is not None and not isinstance(selector, dict):
            return None
        return cls(
            namespace,
            name,
            waives,
            expires_at,
            reason,
            names=names,
            kinds=None if kinds is None else [(k["group"], k["kind"]) for k in kinds],
            selector=selector,
            expires_text=spec.get("expiresAt") if isinstance(spec.get("expiresAt"), str) else None,
        )

    def __str__(self) -> str:
        return f"{EXCEPTION_KIND} {self.namespace}/{self.name}"

    def __repr__(self) -> str:
        return f"PolicyException({self.namespace}/{self.name}, until {self.expires_text})"

    def expired(self, now: datetime.datetime) -> bool:
        """Whether it is ignored: its ``expiresAt`` is not after ``now``."""
        return self.expires_at <= now

    def matches(self, job: Mapping[str, Any], namespace: str) -> bool:
        """Whether it covers ``job`` (in ``namespace``): its namespace, then every match criterion."""
        if namespace != self.namespace:
            return False
        metadata = job.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        if self.names is not None and metadata.get("name") not in self.names:
            return False
        if self.kinds is not None:
            api_version = job.get("apiVersion")
            group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
            if (group, job.get("kind")) not in self.kinds:
                return False
        if self.selector is not None:
            labels = metadata.get("labels")
            if not selector_matches(self.selector, labels if isinstance(labels, dict) else {}):
                return False
        return True

    def rules_for(self, ref: PolicyRef) -> frozenset[str]:
        """The rule ids waived of ``ref`` (every constraint: :data:`WAIVABLE_RULES`); empty when none."""
        if ref not in self.waives:
            return frozenset()
        rules = self.waives[ref]
        return WAIVABLE_RULES if rules is None else rules


class ExceptionSnapshot:
    """The exceptions known to a transport, by namespace, and the time they are judged at.

    ``now``: a fixed time (``--now``, tests); None: the clock at each question (the webhook)."""

    __slots__ = ("_by_namespace", "_now")

    def __init__(self, exceptions: Iterable[PolicyException], now: datetime.datetime | None = None) -> None:
        self._by_namespace: dict[str, list[PolicyException]] = {}
        for exception in exceptions:
            self._by_namespace.setdefault(exception.namespace, []).append(exception)
        self._now = now

    @classmethod
    def of_objects(
        cls, objects: Iterable[Mapping[str, Any]], now: datetime.datetime | None = None
    ) -> ExceptionSnapshot:
        return cls((e for e in map(PolicyException.from_object, objects) if e is not None), now)

    def now(self) -> datetime.datetime:
        return self._now if self._now is not None else datetime.datetime.now(datetime.UTC)

    def in_namespace(self, namespace: str) -> list[PolicyException]:
        return self._by_namespace.get(namespace, [])

    def every(self) -> list[PolicyException]:
        return [e for group in self._by_namespace.values() for e in group]


def covering(view: Any, job: Mapping[str, Any], namespace: str) -> list[PolicyException]:
    """The exceptions of ``view`` in force for ``job``: in its namespace, matching it, not expired."""
    candidates = view.in_namespace(namespace)
    if not candidates:
        return []
    now = view.now()
    return sorted((e for e in candidates if not e.expired(now) and e.matches(job, namespace)), key=lambda e: e.name)


def _allows_exceptions(policy: Mapping[str, Any]) -> bool:
    spec = policy.get("spec")
    return not (isinstance(spec, dict) and spec.get("exceptions") == "Deny")


def _only_gpu_lists(policy: Mapping[str, Any]) -> dict[str, Any]:
    """A policy reduced to what it adds to every other's GPU counting: its resource and class lists."""
    spec = policy.get("spec")
    limits = spec.get("limits") if isinstance(spec, dict) else None
    kept = {}
    if isinstance(limits, dict):
        kept = {k: limits[k] for k in ("gpuResources", "gpuDeviceClasses") if k in limits}
    return {
        "apiVersion": policy.get("apiVersion"),
        "kind": policy.get("kind"),
        "metadata": policy.get("metadata"),
        "spec": {"limits": kept} if kept else {},
    }


class Waiver:
    """A finding an exception waived, with the exceptions that cover it."""

    __slots__ = ("exceptions", "finding")

    def __init__(self, finding: PolicyFinding, exceptions: list[PolicyException]) -> None:
        self.finding = finding
        self.exceptions = exceptions


def waive(
    found: list[PolicyFinding],
    exceptions: Sequence[PolicyException],
    policies: Iterable[Mapping[str, Any]],
    job: dict[str, Any],
    *,
    old_job: dict[str, Any] | None,
    family: str,
    applied: Sequence[PolicyRef],
    namespace: str,
    kmap: KindMap | None = None,
    devices: DeviceView | None = None,
) -> tuple[list[PolicyFinding], list[Waiver]]:
    """``found`` (the findings of the policies ``applied`` to ``job``) without what ``exceptions`` (in force
    for it) waive, and the waived findings. ``policies``: at least the policy objects of ``applied``."""
    from jobgate.policy.check import policy_findings

    by_ref = {policy_ref(p): p for p in policies}
    waived: dict[PolicyRef, dict[str, list[PolicyException]]] = {}
    for exception in exceptions:
        for ref in exception.waives:
            policy = by_ref.get(ref)
            if ref not in applied or policy is None or not _allows_exceptions(policy):
                continue
            rules = waived.setdefault(ref, {})
            for rule in exception.rules_for(ref):
                rules.setdefault(rule, []).append(exception)
    named = {str(ref): ref for ref in waived}
    if not any(f.rule in waived.get(named.get(f.policy), {}) for f in found):  # type: ignore[arg-type]
        return found, []
    selected = [by_ref[ref] for ref in applied if ref in by_ref]
    kept = [f for f in found if f.rule not in WAIVABLE_RULES]
    dropped: list[Waiver] = []

    def findings_of(judged: list[Mapping[str, Any]]) -> list[PolicyFinding]:
        judged_ids = {id(p) for p in judged}
        combined = [p if id(p) in judged_ids else _only_gpu_lists(p) for p in selected]
        effective = combine(combined, namespace)
        return [f for f in policy_findings(job, old_job, family, effective, kmap, devices=devices)
                if f.rule in WAIVABLE_RULES]  # fmt: skip

    others = [p for p in selected if policy_ref(p) not in waived]
    if others:
        kept += findings_of(others)
    for ref, rules in sorted(waived.items()):
        for finding in findings_of([by_ref[ref]]):
            covered = rules.get(finding.rule)
            if covered:
                dropped.append(Waiver(finding, covered))
            else:
                kept.append(finding)
    return kept, dropped


def waiver_lines(waivers: Iterable[Waiver]) -> list[str]:
    """One line per exception that waived something: what it waived, until when, and why."""
    per_exception: dict[str, tuple[PolicyException, dict[str, list[str]]]] = {}
    for waiver in waivers:
        for exception in waiver.exceptions:
            entry = per_exception.setdefault(str(exception), (exception, {}))
            rules = entry[1].setdefault(waiver.finding.policy, [])
            if waiver.finding.rule not in rules:
                rules.append(waiver.finding.rule)
    lines = []
    for text, (exception, by_policy) in sorted(per_exception.items()):
        waived = "; ".join(f"{policy}: {', '.join(rules)}" for policy, rules in by_policy.items())
        lines.append(f"{text} waives {waived} until {exception.expires_text} ({exception.reason})")
    return lines
