"""The apiserver against the webhook: the same job to both, verdicts and field paths compared.

With jobgate's webhooks absent and only the generated CRDs (and policies) in force, a job goes to
the real apiserver (a dry run, or a real create then a dry-run update); the same job goes through
``review_job`` (the rules the webhook runs). Each error of the webhook is traced to its rule in the
catalogue (``jobgate/generate/cel``); for every rule the catalogue says the apiserver enforces, the
apiserver must refuse the job at that rule's field. And the apiserver may refuse nothing the
webhook admits: each of its causes must stand at (or above) a field the webhook reports.

Used by tests/e2e/test_cel_enforcement.py, tests/e2e/test_cel_oldest_release.py,
tests/e2e/test_in_cluster_jobgate.py and ``python -m bench.cel_fuzz`` (jobs mutated from the corpus,
``testkit/fuzzing/cel_cases.py``); the corpus itself is ``testkit/cel_corpus.py``.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jobgate.engine.fielderrors import FieldError, render_path
from jobgate.forms.catalogue import Where, explaining_rule
from jobgate.generate.cel.generate import rules_for
from jobgate.review import kind_of, review_job

if TYPE_CHECKING:
    from envtest.harness import ControlPlane

# What the apiserver adds when a schema error (a wrong type, a missing field, a value outside its
# enum, a list or string too long) stopped it from running the CRD's rules: then only the schema's
# own checks can be compared.
NOT_CHECKED = "some validation rules were not checked because the object was invalid"
# How a ValidatingAdmissionPolicy's denial begins; the webhook's line follows.
POLICY_DENIAL = " denied request: "


@dataclass
class Case:
    """A job (and, for an UPDATE, the stored job it replaces) with its name in the report."""

    name: str
    obj: dict[str, Any]
    old: dict[str, Any] | None = None


@dataclass
class Outcome:
    case: Case
    webhook_errors: list[FieldError]
    apiserver_status: int
    apiserver_causes: list[tuple[str, str]]  # (field, message)
    stored: dict[str, Any] | None  # what the apiserver would store (its dry run's answer)
    disagreements: list[str] = field(default_factory=list)
    enforced_rules: set[str] = field(default_factory=set)  # rules the apiserver was expected to enforce here

    @property
    def apiserver_allowed(self) -> bool:
        return self.apiserver_status < 300


class Apiserver:
    """Custom objects through the kubernetes client (one connection pool)."""

    def __init__(self, kubeconfig: str) -> None:
        from kubernetes import client, config

        configuration = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        self.api = client.CustomObjectsApi(client.ApiClient(configuration))

    @staticmethod
    def _where(obj: dict[str, Any]) -> tuple[str, str, str]:
        group, _, version = obj["apiVersion"].rpartition("/")
        kind = kind_of(obj)
        assert kind is not None, obj.get("kind")
        return group, version, kind.plural

    def create(self, obj: dict[str, Any], namespace: str, *, dry_run: bool) -> tuple[int, dict[str, Any]]:
        group, version, plural = self._where(obj)
        return self._call(
            lambda: self.api.create_namespaced_custom_object(
                group, version, namespace, plural, obj, dry_run="All" if dry_run else None, field_validation="Strict"
            )
        )

    def replace(self, obj: dict[str, Any], namespace: str, *, dry_run: bool) -> tuple[int, dict[str, Any]]:
        group, version, plural = self._where(obj)
        name = obj["metadata"]["name"]
        return self._call(
            lambda: self.api.replace_namespaced_custom_object(
                group,
                version,
                namespace,
                plural,
                name,
                obj,
                dry_run="All" if dry_run else None,
                field_validation="Strict",
            )
        )

    def delete(self, obj: dict[str, Any], namespace: str) -> None:
        group, version, plural = self._where(obj)
        self._call(
            lambda: self.api.delete_namespaced_custom_object(group, version, namespace, plural, obj["metadata"]["name"])
        )

    @staticmethod
    def _call(request: Any) -> tuple[int, dict[str, Any]]:
        from kubernetes.client.exceptions import ApiException

        try:
            return 200, request()
        except ApiException as exc:
            try:
                body = json.loads(exc.body)
            except (TypeError, ValueError):
                body = {"message": str(exc.body)}
            return exc.status, body


# The apiserver's format check of an int32 names its field in the message only.
_FIELD_IN_MESSAGE = re.compile(r"must be of type integer with format int32 in (\S+)$")


def causes_of(status: dict[str, Any]) -> list[tuple[str, str]]:
    causes = status.get("details", {}).get("causes") or []
    if causes:
        return [(_field_of(c), c.get("message", "")) for c in causes]
    return [("", status.get("message", ""))]


def _field_of(cause: dict[str, Any]) -> str:
    field = apiserver_field(cause.get("field", ""))
    named = _FIELD_IN_MESSAGE.search(cause.get("message", ""))
    return named.group(1) if not field and named else field


def apiserver_field(text: str) -> str:
    return "" if text == "<nil>" else text


def comparable(path: str) -> str:
    """A field as both sides can be compared: the apiserver writes map keys ``.Worker`` in its
    schema errors and ``[Worker]`` (or ``.[Worker]``, joining a rule's place and its fieldPath) in
    its rules' errors; the webhook writes them as the apiserver does for each. List indexes stay."""
    return re.sub(r"\.?\[([^\]]*[^\]0-9][^\]]*|)\]", r".\1", path)


def plane_kubectl(plane: ControlPlane) -> Callable[..., str]:
    """``kubectl`` against ``plane``: its output, or an AssertionError with what it printed."""

    def kubectl(*args: str) -> str:
        result = subprocess.run(plane.kubectl_command(*args), capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stdout}{result.stderr}"
        return result.stdout

    return kubectl


def defaulted(case: Case) -> Case:
    """The case as the webhook's defaults leave it (``jobgate default``), its stored job too: what is
    sent where no MutatingAdmissionPolicy applies them (Kubernetes 1.30, ``cel-only-validation``)."""
    kind = kind_of(case.obj)
    assert kind is not None
    old = kind.default(copy.deepcopy(case.old)) if case.old is not None else None
    return Case(case.name, kind.default(copy.deepcopy(case.obj), previous=old), old)


def install(kubectl: Callable[..., str], *paths: str) -> None:
    """The generated CRDs and policies (kustomize directories), established and in force."""
    for path in paths:
        # Server-side: the CRDs are too large for a client-side apply's annotation. A CRD whose rule
        # the apiserver refuses (over the cost limit, a function it does not know) fails here.
        kubectl("apply", "--server-side", "-k", path)
    kubectl("wait", "--for=condition=Established", "crd", "-l", "app.kubernetes.io/part-of=jobgate", "--timeout=1m")


def run_case(apiserver: Apiserver, case: Case, namespace: str) -> Outcome:
    obj = copy.deepcopy(case.obj)
    obj.setdefault("metadata", {})["namespace"] = namespace
    kind = kind_of(obj)
    assert kind is not None, f"{case.name}: not a kind jobgate serves"
    old = None
    if case.old is not None:
        old = copy.deepcopy(case.old)
        old.setdefault("metadata", {})["namespace"] = namespace
        status, stored = apiserver.create(old, namespace, dry_run=False)
        if status >= 300:
            raise AssertionError(f"{case.name}: the stored job of the update was refused: {causes_of(stored)}")
        obj["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
    try:
        if old is None:
            status, answer = apiserver.create(obj, namespace, dry_run=True)
        else:
            status, answer = apiserver.replace(obj, namespace, dry_run=True)
    finally:
        if old is not None:
            apiserver.delete(old, namespace)
    verdict = review_job(kind, case.obj, case.old, with_patch=False)
    outcome = Outcome(
        case=case,
        webhook_errors=verdict.errors,
        apiserver_status=status,
        apiserver_causes=[] if status < 300 else causes_of(answer),
        stored=answer if status < 300 else None,
    )
    compare(outcome)
    # The webhook's own defaulting of the job (review_job's) is what jobgate default prints.
    stored = outcome.stored
    if not outcome.webhook_errors and stored is not None and stored.get("spec") != verdict.defaulted.get("spec"):
        outcome.disagreements.append("the apiserver stores the job otherwise than jobgate default")
    return outcome


def compare(outcome: Outcome) -> None:
    """Fill ``outcome.disagreements``: what the apiserver did not refuse where the catalogue says it
    does, and what it refused that the webhook admits.

    The apiserver checks in stages, and stops at the first that refuses: the CRD's schema (and, when
    it finds a wrong type, a missing field, a value outside its enum, a list too long, that alone),
    then the CRD's CEL rules, then the ValidatingAdmissionPolicies (whose denial names the first
    violation only, its field in its message). A rule is compared where its stage was reached.
    """
    kind = kind_of(outcome.case.obj)
    assert kind is not None
    rules = rules_for(kind)
    policy_lines = [m.split(POLICY_DENIAL, 1)[1] for _, m in outcome.apiserver_causes if POLICY_DENIAL in m]
    causes = [
        (comparable(f), m) for f, m in outcome.apiserver_causes if NOT_CHECKED not in m and POLICY_DENIAL not in m
    ]
    fields = {f for f, _ in causes}
    blocked = any(NOT_CHECKED in m for _, m in outcome.apiserver_causes)
    expected_fields: set[str] = set()
    webhook_fields: set[str] = set()
    # A change the webhook forbids (Volcano's templates and policies on UPDATE): the apiserver may
    # also name what is wrong inside it or beside it (another field of the same policy).
    forbidden_fields = {
        comparable(render_path(e.path[:-1]))
        for e in outcome.webhook_errors
        if e.type.name == "FORBIDDEN" and len(e.path) > 1
    }
    policy_errors: dict[str, str] = {}  # field -> rule
    for error in outcome.webhook_errors:
        found = explaining_rule(rules, error)
        webhook_fields.add(comparable(error.field))
        if found is None:
            outcome.disagreements.append(f"no rule of the catalogue explains the webhook's {error}")
            continue
        rule, produced = found
        if not rule.where.in_apiserver:
            continue
        if rule.where is Where.POLICY:
            policy_errors.setdefault(comparable(error.field), rule.id)
            continue
        expected = [comparable(f) for f in produced.apiserver_fields(error)]
        expected_fields.update(expected)
        if blocked and rule.where is not Where.SCHEMA:
            continue
        outcome.enforced_rules.add(rule.id)
        if not fields.intersection(expected):
            outcome.disagreements.append(
                f"rule {rule.id} ({rule.where.value}): the webhook refuses {error}; "
                f"the apiserver reports nothing at {' or '.join(expected)}"
            )
    for cause_field, message in causes:
        if any(_covers(f, cause_field) for f in forbidden_fields):
            continue
        if not any(_covers(cause_field, f) for f in expected_fields | webhook_fields):
            outcome.disagreements.append(
                f"the apiserver refuses what the webhook admits: {cause_field or '(no field)'}: {message[:300]}"
            )
    for line in policy_lines:
        field = comparable(line.split(": ", 1)[0])
        # The policy names the webhook's field, or (a rule carried from a CRD rule) the list above it.
        explained = [rule for error_field, rule in policy_errors.items() if _covers(field, error_field)]
        if explained:
            outcome.enforced_rules.update(explained)
        else:
            outcome.disagreements.append(f"a policy refuses what the webhook admits: {line[:300]}")
    if policy_errors and not causes and not policy_lines:
        outcome.disagreements.append(
            f"no policy refuses what the webhook refuses at {', '.join(sorted(policy_errors))} "
            f"({', '.join(sorted(set(policy_errors.values())))})"
        )
    if not outcome.webhook_errors and not outcome.apiserver_allowed and not outcome.disagreements:
        outcome.disagreements.append(f"the apiserver refuses a job the webhook admits: {outcome.apiserver_causes}")


def _covers(cause_field: str, webhook_field: str) -> bool:
    """The apiserver's field names the webhook's field or a field above it (a list, a map)."""
    if not cause_field:
        return False
    return webhook_field == cause_field or webhook_field.startswith((f"{cause_field}.", f"{cause_field}["))
