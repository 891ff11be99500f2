"""JobSet's admission rules, as JobSet v0.12.0 enforces them (``pkg/webhooks/jobset_webhook.go`` and the
CRD's ``x-kubernetes-validations``), in its words: each function returns field errors, each labelled with
its rule id (``catalogue.py`` documents them).

JobSet's webhook returns most of its errors as plain Go errors, which controller-runtime turns into
``field.InternalError(nil, err)``: the apiserver shows them as ``<nil>: Internal error: <text>``, and so
does jobgate (``internal``). The rules read the object after the defaults (``defaults.py``), as JobSet's
validator reads it after its defaulter.
"""

from __future__ import annotations

from jobgate.engine.fielderrors import ErrorType, FieldError, FieldPath, forbidden, invalid, required
from jobgate.families.jobset.rules.gates import ELASTIC_JOBSET, IN_PLACE_RESTART, RESTART_JOB
from jobgate.families.jobset.shape import job_spec, pod_spec, replicas, replicated_jobs
from jobgate.rules.names import (
    HTTP_PATH,
    dns1035_label_problems,
    dns1123_subdomain_problems,
    is_http_path,
    label_value_problems,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

    # (policy index, policy, template index, template) -> errors: the check of an existing PVC.
    ClaimCheck = Callable[[int, Mapping[str, Any], int, Mapping[str, Any]], list[FieldError]]

INT32_MAX = 2**31 - 1
# The field of a plain error: apimachinery's (*field.Path)(nil).String().
NIL_FIELD = "<nil>"
MAX_MANAGED_BY_LENGTH = 63
MAX_VOLUME_CLAIM_LENGTH = 63
MAX_REPLICAS_WITH_RESTART_JOB = 1024
MAX_RULE_NAME_LENGTH = 128
COORDINATOR_KEY = "jobset.sigs.k8s.io/coordinator"
VALID_FAILURE_REASONS = (
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "MaxFailedIndexesExceeded",
    "PodFailurePolicy",
)
RESTART_JOB_ACTIONS = ("RestartJob", "RestartJobAndIgnoreMaxRestarts")

DNS1035_TOO_LONG = "must be no more than 63 characters"
GROUP_NAME_TOO_LONG = ".spec.replicatedJob[].groupName is too long, must be less than 63 characters"
JOB_NAME_TOO_LONG = "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
POD_NAME_TOO_LONG = "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
SUBDOMAIN_TOO_LONG = ".spec.network.subdomain is too long, must be less than 63 characters"
IMMUTABLE = "field is immutable"
CEL_IMMUTABLE = "Value is immutable"
CEL_STARTUP_DEPENDS_ON = "StartupPolicy and DependsOn APIs are mutually exclusive"
CEL_CLAIM_NAMESPACE = "namespace cannot be set for VolumeClaimPolicies templates"

# Rule ids (catalogue.py).
R_INPLACE_GATE = "jobset/in-place-restart-gate"
R_FIRST_DEPENDS_ON = "jobset/first-job-depends-on"
R_SUBDOMAIN = "jobset/network-subdomain"
R_MANAGED_BY = "jobset/managed-by"
R_POD_COUNT = "jobset/pod-count"
R_GROUP_NAME = "jobset/group-name"
R_DERIVED_NAMES = "jobset/derived-names"
R_DEPENDS_ON_ORDER = "jobset/depends-on-order"
R_INPLACE_JOBS = "jobset/in-place-restart-jobs"
R_SUCCESS_TARGETS = "jobset/success-policy-targets"
R_RESTART_JOB = "jobset/failure-policy-restart-job"
R_RULE_NAMES = "jobset/failure-policy-rule-names"
R_FAILURE_TARGETS = "jobset/failure-policy-targets"
R_FAILURE_REASONS = "jobset/failure-policy-reasons"
R_COORDINATOR = "jobset/coordinator"
R_COORDINATOR_LABEL = "jobset/coordinator-label"
R_CLAIM_TEMPLATES = "jobset/volume-claim-templates"
R_CLAIM_MOUNTS = "jobset/volume-claim-mounts"
R_REPLICATED_JOBS_IMMUTABLE = "jobset/replicated-jobs-immutable"
R_ELASTIC = "jobset/elastic-scaling"
R_MANAGED_BY_IMMUTABLE = "jobset/managed-by-immutable"
R_CEL_STARTUP_DEPENDS_ON = "jobset/crd-startup-policy-depends-on"
R_CEL_IMMUTABLE = "jobset/crd-immutable"
R_CEL_CLAIM_NAMESPACE = "jobset/crd-claim-namespace"
R_JOB_TEMPLATE = "jobset/job-template"
R_LIST_BOUNDS = "jobset/list-bounds"
R_LIST_MAP_KEYS = "jobset/list-map-keys"


def internal(detail: str, rule: str) -> FieldError:
    """A plain error of JobSet's webhook, as the apiserver shows it (no field)."""
    return FieldError(ErrorType.INTERNAL, (NIL_FIELD,), detail=detail, rule=rule)


def _go_quote(text: str) -> str:
    """Go's %q of a string (JSON's quoting, which agrees for printable text)."""
    import json

    return json.dumps(text, ensure_ascii=False)


def _dict(value: Any) -> dict[str, Any]:
    return value if type(value) is dict else {}


def _list(value: Any) -> list[Any]:
    return value if type(value) is list else []


def _int(value: Any, default: int) -> int:
    return value if type(value) is int else default


def _str(value: Any) -> str:
    return value if type(value) is str else ""


def is_indexed(job: dict[str, Any]) -> bool:
    return job_spec(job).get("completionMode") == "Indexed"


def jobset_name(obj: dict[str, Any]) -> str:
    """The JobSet's name as the validating webhook sees it: a generateName's name is made before
    validation (the apiserver's BeforeCreate), so jobgate measures the prefix with its 5 random characters."""
    metadata = _dict(obj.get("metadata"))
    name = _str(metadata.get("name"))
    if not name:
        prefix = _str(metadata.get("generateName"))
        if prefix:
            return prefix + "x" * 5
    return name


def _dns1035(value: str, path: FieldPath, shown: str, too_long: str, rule: str) -> list[FieldError]:
    out = []
    for problem in dns1035_label_problems(value):
        out.append(invalid(path, shown, too_long if DNS1035_TOO_LONG in problem else problem, rule))
    return out


def domain_prefixed_path_errors(path: FieldPath, value: str, rule: str) -> list[FieldError]:
    """apimachinery's IsDomainPrefixedPath."""
    if not value:
        return [required(path, "", rule)]
    host, sep, rest = value.partition("/")
    if not sep or not host or not rest:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")', rule)]
    errors = [invalid(path, host, problem, rule) for problem in dns1123_subdomain_problems(host)]
    if not is_http_path(rest):
        errors.append(invalid(path, rest, f"Invalid path (regex used for validation is '{HTTP_PATH}')", rule))
    return errors


# --- CREATE -------------------------------------------------------------------------------------------


def validate_create(
    obj: dict[str, Any], spec: dict[str, Any], enabled: frozenset[str], existing_claims: ClaimCheck | None = None
) -> list[FieldError]:
    """JobSet's ValidateCreate, in its order; the look-up of existing PVCs (cluster state) only with
    ``existing_claims`` (``claims.claim_lookup``)."""
    errors: list[FieldError] = []
    name = jobset_name(obj)
    failure_policy = spec.get("failurePolicy")
    in_place = type(failure_policy) is dict and failure_policy.get("restartStrategy") == "InPlaceRestart"
    if in_place and IN_PLACE_RESTART not in enabled:
        errors.append(
            internal(
                "InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is disabled",
                R_INPLACE_GATE,
            )
        )
    jobs = replicated_jobs(spec)
    if jobs and jobs[0].get("dependsOn") is not None:
        errors.append(internal("DependsOn can't be set for the first ReplicatedJob", R_FIRST_DEPENDS_ON))
    network = _dict(spec.get("network"))
    subdomain = _str(network.get("subdomain"))
    if subdomain:
        path: FieldPath = ("spec", "network", "subdomain")
        errors += [invalid(path, subdomain, p, R_SUBDOMAIN) for p in dns1123_subdomain_problems(subdomain)]
        errors += _dns1035(subdomain, path, subdomain, SUBDOMAIN_TOO_LONG, R_SUBDOMAIN)
    managed_by = spec.get("managedBy")
    if type(managed_by) is str:
        errors += domain_prefixed_path_errors(("spec", "managedBy"), managed_by, R_MANAGED_BY)
        if len(managed_by) > MAX_MANAGED_BY_LENGTH:
            errors.append(
                FieldError(
                    ErrorType.TOO_LONG,
                    ("spec", "managedBy"),
                    detail=f"may not be more than {MAX_MANAGED_BY_LENGTH} bytes",
                    rule=R_MANAGED_BY,
                )
            )
    names: set[str] = set()
    for index, job in enumerate(jobs):
        errors += _replicated_job(name, index, job, names, in_place and IN_PLACE_RESTART in enabled)
    success_policy = _dict(spec.get("successPolicy"))
    for target in _list(success_policy.get("targetReplicatedJobs")):
        if type(target) is str and target not in names:
            errors.append(
                internal(
                    f"invalid replicatedJob name '{target}' does not appear in .spec.ReplicatedJobs", R_SUCCESS_TARGETS
                )
            )
    if type(failure_policy) is dict:
        errors += _failure_policy(failure_policy, jobs, names, enabled)
    coordinator = spec.get("coordinator")
    if type(coordinator) is dict:
        problem = _coordinator(coordinator, jobs)
        if problem is not None:
            errors.append(internal(problem, R_COORDINATOR))
        errors += _coordinator_label(name, coordinator, network)
    policies = _list(spec.get("volumeClaimPolicies"))
    if policies:
        errors += _volume_claim_policies(name, policies, jobs, existing_claims)
    return errors


def _replicated_job(name: str, index: int, job: dict[str, Any], names: set[str], in_place: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    path: FieldPath = ("spec", "replicatedJobs", index)
    job_name = _str(job.get("name"))
    names.add(job_name)
    spec = job_spec(job)
    count = replicas(job)
    parallelism = _int(spec.get("parallelism"), 1)
    if parallelism * count > INT32_MAX:
        errors.append(
            internal(
                f"the product of replicas and parallelism must not exceed {INT32_MAX} for replicatedJob '{job_name}'",
                R_POD_COUNT,
            )
        )
    group = _str(job.get("groupName"))
    errors += _dns1035(group, (*path, "groupName"), group, GROUP_NAME_TOO_LONG, R_GROUP_NAME)
    longest_job = f"{name}-{job_name}-{count - 1}"
    errors += _dns1035(longest_job, (*path, "name"), longest_job, JOB_NAME_TOO_LONG, R_DERIVED_NAMES)
    completions = spec.get("completions")
    if is_indexed(job) and type(completions) is int:
        longest_pod = f"{name}-{job_name}-{count - 1}-{completions - 1}-abcde"
        # JobSet reports the job name as the value (sic).
        errors += _dns1035(longest_pod, (*path, "name"), longest_job, POD_NAME_TOO_LONG, R_DERIVED_NAMES)
    for item in _list(job.get("dependsOn")):
        wanted = _str(_dict(item).get("name"))
        if wanted not in names:
            errors.append(
                internal(f"replicatedJob: {job_name} cannot depend on replicatedJob: {wanted}", R_DEPENDS_ON_ORDER)
            )
    if in_place:
        spec_path = (*path, "template", "spec")
        backoff = spec.get("backoffLimit")
        if backoff != INT32_MAX:
            errors.append(
                invalid(
                    (*spec_path, "backoffLimit"),
                    backoff,
                    f"replicatedJob {job_name}: must be set to {INT32_MAX} (MaxInt32) when in-place restart is enabled",
                    R_INPLACE_JOBS,
                )
            )
        replacement = spec.get("podReplacementPolicy")
        if replacement != "Failed":
            errors.append(
                invalid(
                    (*spec_path, "podReplacementPolicy"),
                    replacement,
                    f"replicatedJob {job_name}: must be set to Failed when in-place restart is enabled",
                    R_INPLACE_JOBS,
                )
            )
        if completions is None or spec.get("parallelism") is None or completions != spec.get("parallelism"):
            errors.append(
                invalid(
                    (*spec_path, "completions"),
                    completions,
                    f"replicatedJob {job_name}: completions and parallelism must be set and equal to each other when "
                    "in-place restart is enabled",
                    R_INPLACE_JOBS,
                )
            )
    return errors


# What a failure policy rule's name must match (JobSet's ``ruleNameFmt``), answered by is_rule_name
# without re (a test holds it to the pattern).
RULE_NAME_PATTERN = r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_RULE_NAME_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_,:")


def is_rule_name(name: str) -> bool:
    """``re.fullmatch(RULE_NAME_PATTERN, name) is not None``."""
    if not name or not name[0].isascii() or not name[0].isalpha():
        return False
    last = name[-1]
    if len(name) > 1 and (last in ",:" or last not in _RULE_NAME_CHARACTERS):
        return False
    return _RULE_NAME_CHARACTERS.issuperset(name)


def _failure_policy(
    policy: dict[str, Any], jobs: list[dict[str, Any]], names: set[str], enabled: frozenset[str]
) -> list[FieldError]:
    errors: list[FieldError] = []
    rules = [rule if type(rule) is dict else {} for rule in _list(policy.get("rules"))]
    if any(rule.get("action") in RESTART_JOB_ACTIONS for rule in rules):
        if RESTART_JOB not in enabled:
            return [
                internal(
                    "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy actions are not allowed when "
                    "RestartJob feature gate is disabled",
                    R_RESTART_JOB,
                )
            ]
        if any(replicas(job) > MAX_REPLICAS_WITH_RESTART_JOB for job in jobs):
            errors.append(
                internal(
                    "JobSet cannot have a failure policy rule with RestartJob or RestartJobAndIgnoreMaxRestarts action "
                    f"and a replicated job with replicas > {MAX_REPLICAS_WITH_RESTART_JOB}",
                    R_RESTART_JOB,
                )
            )
    by_name: dict[str, list[int]] = {}
    for index, rule in enumerate(rules):
        name = _str(rule.get("name"))
        if not 1 <= len(name) <= MAX_RULE_NAME_LENGTH:
            errors.append(
                internal(
                    f"invalid failure policy rule name of length {len(name)}, the rule name must be at least 1 "
                    f"characters long and at most {MAX_RULE_NAME_LENGTH} characters long",
                    R_RULE_NAMES,
                )
            )
        by_name.setdefault(name, []).append(index)
        if not is_rule_name(name):
            errors.append(
                internal(
                    f"invalid failure policy rule name '{name}', a failure policy rule name must start with an "
                    "alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and "
                    "must end with an alphanumeric character or '_'",
                    R_RULE_NAMES,
                )
            )
        for target in _list(rule.get("targetReplicatedJobs")):
            if type(target) is str and target not in names:
                errors.append(
                    internal(
                        f"invalid replicatedJob name '{target}' in failure policy does not appear in "
                        ".spec.ReplicatedJobs",
                        R_FAILURE_TARGETS,
                    )
                )
        for reason in _list(rule.get("onJobFailureReasons")):
            if reason not in VALID_FAILURE_REASONS:
                errors.append(
                    internal(
                        f"invalid job failure reason '{reason}' in failure policy is not a recognized job failure "
                        "reason",
                        R_FAILURE_REASONS,
                    )
                )
    # JobSet walks a Go map (no order); jobgate reports in the order of the names' first rules.
    for name, indices in by_name.items():
        if len(indices) > 1:
            shown = "[" + " ".join(str(i) for i in indices) + "]"
            errors.append(
                internal(
                    f"rule names are not unique, rules with indices {shown} all have the same name '{name}'",
                    R_RULE_NAMES,
                )
            )
    return errors


def _coordinator(coordinator: dict[str, Any], jobs: list[dict[str, Any]]) -> str | None:
    """validateCoordinator: its first problem, or None."""
    wanted = _str(coordinator.get("replicatedJob"))
    job = next((j for j in jobs if j.get("name") == wanted), None)
    if job is None:
        return f"coordinator replicatedJob {wanted} does not exist"
    job_index = _int(coordinator.get("jobIndex"), 0)
    if job_index < 0 or job_index >= replicas(job):
        return f"coordinator job index {job_index} is invalid for replicatedJob {wanted}"
    completions = job_spec(job).get("completions")
    if type(completions) is not int or not is_indexed(job):
        return "job for coordinator pod must be indexed completion mode, and completions number must be set"
    pod_index = _int(coordinator.get("podIndex"), 0)
    if pod_index < 0 or pod_index >= completions:
        return f"coordinator pod index {pod_index} is invalid for replicatedJob {wanted} job index {job_index}"
    return None


def _coordinator_label(name: str, coordinator: dict[str, Any], network: dict[str, Any]) -> list[FieldError]:
    subdomain = _str(network.get("subdomain")) or name
    value = (
        f"{name}-{_str(coordinator.get('replicatedJob'))}-{_int(coordinator.get('jobIndex'), 0)}-"
        f"{_int(coordinator.get('podIndex'), 0)}.{subdomain}"
    )
    problems = label_value_problems(value)
    if not problems:
        return []
    return [
        internal(
            f"spec will lead to invalid label value {_go_quote(value)} for coordinator label "
            f"{_go_quote(COORDINATOR_KEY)} (long JobSet / ReplicatedJob / SubDomain name?): {', '.join(problems)}",
            R_COORDINATOR_LABEL,
        )
    ]


def _volume_claim_policies(
    name: str, policies: list[Any], jobs: list[dict[str, Any]], existing_claims: ClaimCheck | None
) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for p, policy in enumerate(policies):
        for t, template in enumerate(_list(_dict(policy).get("templates"))):
            path: FieldPath = ("spec", "volumeClaimPolicies", p, "template", t, "name")
            claim = _str(_dict(_dict(template).get("metadata")).get("name"))
            if claim in seen:
                errors.append(
                    invalid(path, claim, "names must be unique for VolumeClaimPolicies template", R_CLAIM_TEMPLATES)
                )
            errors += [
                invalid(path, claim, problem, R_CLAIM_TEMPLATES) for problem in dns1123_subdomain_problems(claim)
            ]
            if len(f"{claim}-{name}") > MAX_VOLUME_CLAIM_LENGTH:
                errors.append(invalid(path, claim, "VolumeClaimPolicies template name is too long", R_CLAIM_TEMPLATES))
            errors += _claim_mounts(jobs, claim)
            if existing_claims is not None and type(template) is dict:
                errors += existing_claims(p, _dict(policy), t, template)
            seen.add(claim)
    return errors


def _claim_mounts(jobs: list[dict[str, Any]], claim: str) -> list[FieldError]:
    errors: list[FieldError] = []
    mounted = False
    for index, job in enumerate(jobs):
        spec = pod_spec(job)
        for v, volume in enumerate(_list(spec.get("volumes"))):
            if _dict(volume).get("name") == claim:
                path = ("spec", "replicatedJobs", index, "template", "spec", "template", "spec", "volumes", v, "name")
                errors.append(
                    invalid(
                        path,
                        claim,
                        f"volume name conflicts with VolumeClaimPolicy template name: {claim}",
                        R_CLAIM_MOUNTS,
                    )
                )
        if not mounted:
            for container in [*_list(spec.get("initContainers")), *_list(spec.get("containers"))]:
                if any(_dict(m).get("name") == claim for m in _list(_dict(container).get("volumeMounts"))):
                    mounted = True
                    break
    if not mounted:
        errors.append(
            invalid(
                ("spec", "replicatedJobs"),
                jobs,
                f"replicatedJob containers don't have a matching volumeMount: {claim} from VolumeClaimPolicies",
                R_CLAIM_MOUNTS,
            )
        )
    return errors


# --- UPDATE -------------------------------------------------------------------------------------------

# The pod template fields Kueue sets on a suspended JobSet (its PodSetInfo), with where each lives.
_KUEUE_MUTABLE: tuple[tuple[str, str], ...] = (
    ("metadata", "annotations"),
    ("metadata", "labels"),
    ("spec", "nodeSelector"),
    ("spec", "tolerations"),
    ("spec", "schedulingGates"),
)


def _terminal(old: dict[str, Any]) -> bool:
    conditions = _list(_dict(old.get("status")).get("conditions"))
    return any(_dict(c).get("type") in ("Completed", "Failed") and _dict(c).get("status") == "True" for c in conditions)


def _set(target: dict[str, Any], key: str, source: dict[str, Any]) -> None:
    """``target[key]`` becomes ``source``'s (absent when it has none), as JobSet copies the old value over."""
    if key in source:
        target[key] = source[key]
    else:
        target.pop(key, None)


def validate_update(
    obj: dict[str, Any], old: dict[str, Any], spec: dict[str, Any], enabled: frozenset[str]
) -> list[FieldError]:
    """JobSet's ValidateUpdate: spec.replicatedJobs immutable but for what Kueue (a suspended JobSet) and
    ElasticJobSet (the gate) may change, and spec.managedBy immutable."""
    import copy

    errors: list[FieldError] = []
    old_spec = _dict(old.get("spec"))
    new_jobs = spec.get("replicatedJobs")
    munged: Any = copy.deepcopy(new_jobs)
    old_by_name = {_str(j.get("name")): j for j in replicated_jobs(old_spec)}
    if ELASTIC_JOBSET in enabled and type(munged) is list:
        terminal = _terminal(old)
        for index, job in enumerate(munged):
            if type(job) is not dict:
                continue
            previous = old_by_name.get(_str(job.get("name")))
            if previous is None or not is_indexed(job):
                continue
            errors += _elastic(index, job, previous, terminal)
            # is_indexed: the job has a template with a spec, which takes the old counts.
            _set(job_spec(job), "parallelism", job_spec(previous))
            _set(job_spec(job), "completions", job_spec(previous))
    if (spec.get("suspend") is True or old_spec.get("suspend") is True) and type(munged) is list:
        for job in munged:
            if type(job) is not dict:
                continue
            previous = old_by_name.get(_str(job.get("name")))
            if previous is None:
                continue
            template = _dict(job_spec(job).get("template"))
            old_template = _dict(job_spec(previous).get("template"))
            if not template:
                continue
            for part, key in _KUEUE_MUTABLE:
                target = template.get(part)
                source = _dict(old_template.get(part))
                if type(target) is not dict:
                    if key not in source:
                        continue
                    target = template[part] = {}
                _set(target, key, source)
    if _pruned(munged) != _pruned(old_spec.get("replicatedJobs")):
        errors.append(invalid(("spec", "replicatedJobs"), munged, IMMUTABLE, R_REPLICATED_JOBS_IMMUTABLE))
    if spec.get("managedBy") != old_spec.get("managedBy"):
        errors.append(invalid(("spec", "managedBy"), spec.get("managedBy"), IMMUTABLE, R_MANAGED_BY_IMMUTABLE))
    return errors


def _pruned(value: Any) -> Any:
    """``value`` without empty objects: JobSet compares typed Go structs, where an empty struct (a pod
    template's ``metadata: {}``) and an absent one are the same value."""
    if type(value) is dict:
        pruned = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v != {}}
    if type(value) is list:
        return [_pruned(v) for v in value]
    return value


def _elastic(index: int, job: dict[str, Any], previous: dict[str, Any], terminal: bool) -> list[FieldError]:
    spec, old_spec = job_spec(job), job_spec(previous)
    parallelism, completions = spec.get("parallelism"), spec.get("completions")
    parallelism_changed = parallelism != old_spec.get("parallelism")
    completions_changed = completions != old_spec.get("completions")
    if not (parallelism_changed or completions_changed):
        return []
    path: FieldPath = ("spec", "replicatedJobs", index, "template", "spec")
    if terminal:
        return [
            forbidden(
                path,
                "Cannot mutate parallelism or completions when JobSet is in a terminal state (Completed or Failed)",
                R_ELASTIC,
            )
        ]
    errors = []
    if parallelism_changed and type(parallelism) is int and parallelism < 1:
        errors.append(invalid((*path, "parallelism"), parallelism, "parallelism must be >= 1", R_ELASTIC))
    if completions_changed and type(completions) is int and completions < 1:
        errors.append(invalid((*path, "completions"), completions, "completions must be >= 1", R_ELASTIC))
    if type(parallelism) is int and type(completions) is int and parallelism != completions:
        errors.append(
            invalid(
                (*path, "completions"),
                completions,
                "completions must be equal to parallelism for Elastic Indexed Jobs",
                R_ELASTIC,
            )
        )
    return errors


# --- JobSet's CRD rules (CEL), which the apiserver checks before any webhook ---------------------------

_IMMUTABLE_FIELDS = ("network", "successPolicy", "failurePolicy", "startupPolicy", "volumeClaimPolicies")


def _schema_type(value: Any) -> str:
    return "array" if type(value) is list else "object" if type(value) is dict else "string"


def crd_rules(spec: dict[str, Any], old_spec: dict[str, Any] | None, base: FieldPath = ("spec",)) -> list[FieldError]:
    """JobSet's x-kubernetes-validations: the apiserver reports each at its field with the schema type as
    the value (``Invalid value: "object"``). A transition rule (``self == oldSelf``) holds only where the
    field is in both the old and the new object (a null is no value: the apiserver prunes it).

    ``base`` is where the JobSetSpec is: ``spec`` in a JobSet, ``spec.template.spec`` in a Kubeflow
    Trainer runtime, whose CRDs carry these rules too."""
    errors: list[FieldError] = []
    startup = _dict(spec.get("startupPolicy"))
    jobs = replicated_jobs(spec)
    if startup.get("startupPolicyOrder") == "InOrder" and any("dependsOn" in job for job in jobs):
        errors.append(invalid(base, "object", CEL_STARTUP_DEPENDS_ON, R_CEL_STARTUP_DEPENDS_ON))
    if old_spec is not None:
        for field in _IMMUTABLE_FIELDS:
            value, before = spec.get(field), old_spec.get(field)
            if value is not None and before is not None and value != before:
                errors.append(invalid((*base, field), _schema_type(value), CEL_IMMUTABLE, R_CEL_IMMUTABLE))
        # Correlated by name, a list-map's key: a job whose name is no string matches none (the schema refuses it).
        old_jobs = {j["name"]: j for j in replicated_jobs(old_spec) if type(j.get("name")) is str}
        for index, job in enumerate(jobs):
            name = job.get("name")
            previous = old_jobs.get(name) if type(name) is str else None
            if previous is None or job.get("dependsOn") is None or previous.get("dependsOn") is None:
                continue
            if job["dependsOn"] != previous["dependsOn"]:
                path = (*base, "replicatedJobs", index, "dependsOn")
                errors.append(invalid(path, _schema_type(job["dependsOn"]), CEL_IMMUTABLE, R_CEL_IMMUTABLE))
    for p, policy in enumerate(_list(spec.get("volumeClaimPolicies"))):
        templates = _list(_dict(policy).get("templates"))
        if any(_str(_dict(_dict(t).get("metadata")).get("namespace")) for t in templates):
            errors.append(
                invalid((*base, "volumeClaimPolicies", p), "object", CEL_CLAIM_NAMESPACE, R_CEL_CLAIM_NAMESPACE)
            )
    return errors


# --- what the Job the controller creates must be (jobset PR #1211's intent) ----------------------------

JOB_RESTART_POLICIES = ("OnFailure", "Never")
MAX_INDEXED_PARALLELISM = 100_000


def job_template_errors(jobs: Iterable[tuple[int, dict[str, Any]]]) -> list[FieldError]:
    """What the apiserver's batch/v1 Job validation would refuse when JobSet's controller creates each
    replicated job's Jobs: refused here, at admission, at the replicated job's field (JobSet v0.12.0 admits
    such a JobSet and fails later; jobset PR #1211, closed unmerged, meant to catch them)."""
    errors: list[FieldError] = []
    for index, job in jobs:
        base: FieldPath = ("spec", "replicatedJobs", index, "template", "spec")
        spec = job_spec(job)
        for field in ("parallelism", "completions", "backoffLimit", "ttlSecondsAfterFinished"):
            value = spec.get(field)
            if type(value) is int and value < 0:
                errors.append(invalid((*base, field), value, "must be greater than or equal to 0", R_JOB_TEMPLATE))
        deadline = spec.get("activeDeadlineSeconds")
        if type(deadline) is int and deadline <= 0:
            errors.append(invalid((*base, "activeDeadlineSeconds"), deadline, "must be greater than 0", R_JOB_TEMPLATE))
        if is_indexed(job):
            completions = spec.get("completions")
            parallelism = spec.get("parallelism")
            # batch/v1 defaults both to 1 when both are unset; completions alone stays unset otherwise.
            if completions is None and parallelism is not None:
                errors.append(required((*base, "completions"), "when completion mode is Indexed", R_JOB_TEMPLATE))
            if type(parallelism) is int and parallelism > MAX_INDEXED_PARALLELISM:
                errors.append(
                    invalid(
                        (*base, "parallelism"),
                        parallelism,
                        f"must be less than or equal to {MAX_INDEXED_PARALLELISM} when completion mode is Indexed",
                        R_JOB_TEMPLATE,
                    )
                )
        pod = _dict(spec.get("template"))
        restart = _dict(pod.get("spec")).get("restartPolicy")
        if type(restart) is str and restart not in JOB_RESTART_POLICIES:
            from jobgate.engine.fielderrors import not_supported

            path = (*base, "template", "spec", "restartPolicy")
            errors.append(not_supported(path, restart, JOB_RESTART_POLICIES, R_JOB_TEMPLATE))
    return errors
