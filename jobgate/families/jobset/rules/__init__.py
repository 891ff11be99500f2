"""The JobSet family (``jobset.x-k8s.io/v1alpha2``, JobSet v0.12.0): JobSet, at admission only.

Defaults are JobSet's defaulting webhook's (CREATE only) and its CRD's structural defaults (which the
apiserver applies to every request; written here so that ``jobgate default`` shows the stored object).
Checks are JobSet's CRD rules (schema, list bounds and list-map keys (lists.py), and CEL, which the
apiserver enforces before any webhook), its validating webhook's (CREATE, and UPDATE's immutability with
Kueue's and ElasticJobSet's relaxations), then what the apiserver would refuse only when JobSet's
controller creates the Jobs and their pods (jobset PR #1211's intent): each replicated job's Job template
and pod template. See docs/families.md.
"""

from __future__ import annotations

import copy

from jobgate.engine.findings import Findings
from jobgate.engine.jsonpatch import NO_PATCH, PatchRecorder
from jobgate.engine.modelref import ModelRef
from jobgate.engine.registry import GroupVersionKind, register
from jobgate.families.jobset import GROUP, VERSION
from jobgate.families.jobset.rules.checks import (
    crd_rules,
    job_template_errors,
    replicated_jobs,
    validate_create,
    validate_update,
)
from jobgate.families.jobset.rules.claims import check_for as claims_check_for
from jobgate.families.jobset.rules.lists import crd_list_errors, ratcheted
from jobgate.rules.jobmeta import check_spec_schema
from jobgate.rules.podtemplate import check_pod_template

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.context import ReviewContext

DEFAULT_GROUP_NAME = "default"
DEFAULT_RULE_NAME = "failurePolicyRule{}"
# JobSet's own columns (the generated stand-in CRD only).
PRINTER_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "TerminalState", "type": "string", "jsonPath": ".status.terminalState"},
    {"name": "Restarts", "type": "string", "jsonPath": ".status.restarts"},
    {"name": "Completed", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Completed")].status'},
    {"name": "Suspended", "type": "string", "jsonPath": ".spec.suspend"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


def _child(parent: dict[str, Any], key: str, pointer: str, recorder: PatchRecorder) -> dict[str, Any] | None:
    """``parent[key]`` when it is an object; a new empty one (recorded) when it is absent; None otherwise."""
    value = parent.get(key)
    if value is None:
        recorder.set(parent, key, {}, pointer)
        return parent[key]  # type: ignore[no-any-return]
    return value if type(value) is dict else None


def default_spec(spec: dict[str, Any], recorder: PatchRecorder, *, creating: bool) -> None:
    """JobSet's defaults, in place on a copy of the spec: the CRD's always, the webhook's on CREATE."""
    jobs = spec.get("replicatedJobs")
    for index, job in enumerate(jobs if type(jobs) is list else []):
        if type(job) is not dict:
            continue
        pointer = f"/spec/replicatedJobs/{index}"
        if job.get("groupName") is None:
            recorder.set(job, "groupName", DEFAULT_GROUP_NAME, pointer)
        if job.get("replicas") is None:
            recorder.set(job, "replicas", 1, pointer)
        if not creating:
            continue
        template = job.get("template")
        if type(template) is not dict:
            continue
        job_spec = _child(template, "spec", f"{pointer}/template", recorder)
        if job_spec is None:
            continue
        if job_spec.get("completionMode") is None:
            recorder.set(job_spec, "completionMode", "Indexed", f"{pointer}/template/spec")
        pod = _child(job_spec, "template", f"{pointer}/template/spec", recorder)
        pod_spec = _child(pod, "spec", f"{pointer}/template/spec/template", recorder) if pod is not None else None
        if pod_spec is not None and not pod_spec.get("restartPolicy"):
            recorder.set(pod_spec, "restartPolicy", "OnFailure", f"{pointer}/template/spec/template/spec")
    failure_policy = spec.get("failurePolicy")
    if type(failure_policy) is dict:
        if failure_policy.get("restartStrategy") is None:
            recorder.set(failure_policy, "restartStrategy", "Recreate", "/spec/failurePolicy")
        rules = failure_policy.get("rules")
        if creating and type(rules) is list:
            for index, rule in enumerate(rules):
                if type(rule) is dict and not rule.get("name"):
                    recorder.set(rule, "name", DEFAULT_RULE_NAME.format(index), f"/spec/failurePolicy/rules/{index}")
    policies = spec.get("volumeClaimPolicies")
    for index, policy in enumerate(policies if type(policies) is list else []):
        if type(policy) is not dict:
            continue
        pointer = f"/spec/volumeClaimPolicies/{index}"
        retention = policy.get("retentionPolicy")
        if retention is None and creating:
            recorder.set(policy, "retentionPolicy", {"whenDeleted": "Delete"}, pointer)
        elif type(retention) is dict and retention.get("whenDeleted") is None:
            recorder.set(retention, "whenDeleted", "Delete", f"{pointer}/retentionPolicy")
    if not creating:
        return
    if spec.get("successPolicy") is None:
        recorder.set(spec, "successPolicy", {"operator": "All"}, "/spec")
    if spec.get("startupPolicy") is None:
        recorder.set(spec, "startupPolicy", {"startupPolicyOrder": "AnyOrder"}, "/spec")
    network = _child(spec, "network", "/spec", recorder)
    if network is not None:
        if network.get("enableDNSHostnames") is None:
            recorder.set(network, "enableDNSHostnames", True, "/spec/network")
        if network.get("publishNotReadyAddresses") is None:
            recorder.set(network, "publishNotReadyAddresses", True, "/spec/network")


class JobSetKind:
    kind: str = "JobSet"
    plural: str = "jobsets"
    short_names: tuple[str, ...] = ()
    family: str = "jobset"
    spec_model: ModelRef = ModelRef("jobgate.families.jobset.models:JobSetSpec")
    status_model: ModelRef = ModelRef("jobgate.families.jobset.models:JobSetStatus")
    gvk: GroupVersionKind = GroupVersionKind(GROUP, VERSION, "JobSet")
    printer_columns: tuple[dict[str, Any], ...] = PRINTER_COLUMNS

    def default(
        self, obj: dict[str, Any], recorder: PatchRecorder = NO_PATCH, previous: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        spec = obj.get("spec")
        if type(spec) is not dict:
            return obj
        spec = copy.deepcopy(spec)
        # JobSet's defaulting webhook is registered for CREATE only; on UPDATE only the CRD's defaults apply.
        default_spec(spec, recorder, creating=previous is None)
        return {**obj, "spec": spec}

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None, context: ReviewContext) -> Findings:
        found = Findings()
        spec = check_spec_schema(obj, self.spec_model, found)
        if spec is None:
            return found
        gates = context.feature_gates
        if old is not None:
            # Compared as JobSet's defaulter leaves a created JobSet, both sides: the stored one was, and
            # an update that leaves out what the defaulter wrote (a manifest applied again) changes nothing.
            new, stored = self.default(obj), self.default(old)
            new_spec, stored_spec = new.get("spec"), stored.get("spec")
            new_spec = new_spec if type(new_spec) is dict else {}
            stored_spec = stored_spec if type(stored_spec) is dict else {}
            found.errors += ratcheted(crd_list_errors(spec, stored_spec), obj, stored)
            found.errors += crd_rules(new_spec, stored_spec)
            found.errors += validate_update(new, stored, new_spec, gates)
            return found
        found.errors += crd_list_errors(spec, None)
        found.errors += crd_rules(spec, None)
        existing_claims = claims_check_for(obj, spec, context, found.warnings)
        found.errors += validate_create(obj, spec, gates, existing_claims)
        jobs = list(enumerate(replicated_jobs(spec)))
        found.errors += job_template_errors(jobs)
        claims = claim_template_names(spec)
        for index, job in jobs:
            name = job.get("name")
            template = job.get("template")
            job_spec = template.get("spec") if type(template) is dict else None
            if type(job_spec) is dict:
                path = ("spec", "replicatedJobs", index, "template", "spec", "template")
                where = f"replicatedJobs[{name}]"
                pod = with_claim_volumes(job_spec.get("template"), claims)
                check_pod_template(pod, path, where=where, replica_restart_policy=None, found=found)
        return found


def claim_template_names(spec: dict[str, Any]) -> list[str]:
    """The names of the volume claim policies' PVC templates, in order."""
    names = []
    policies = spec.get("volumeClaimPolicies")
    for policy in policies if type(policies) is list else []:
        templates = policy.get("templates") if type(policy) is dict else None
        for template in templates if type(templates) is list else []:
            metadata = template.get("metadata") if type(template) is dict else None
            name = metadata.get("name") if type(metadata) is dict else None
            if type(name) is str and name:
                names.append(name)
    return names


def with_claim_volumes(template: Any, claims: list[str]) -> Any:
    """The pod template as JobSet's controller makes each Job's (``addVolumes``): a volume for each claim
    template a container or init container mounts, so that the mount is not reported as of no volume.
    One the template already has is left (``jobset/volume-claim-mounts`` reports the conflict)."""
    spec = template.get("spec") if type(template) is dict else None
    if not claims or type(spec) is not dict:
        return template
    mounted = set()
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        for container in containers if type(containers) is list else []:
            mounts = container.get("volumeMounts") if type(container) is dict else None
            for mount in mounts if type(mounts) is list else []:
                if type(mount) is dict and type(mount.get("name")) is str:
                    mounted.add(mount["name"])
    volumes = spec.get("volumes")
    if volumes is not None and type(volumes) is not list:
        return template
    present = {v["name"] for v in volumes or [] if type(v) is dict and type(v.get("name")) is str}
    added = [
        {"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims if c in mounted and c not in present
    ]
    if not added:
        return template
    return {**template, "spec": {**spec, "volumes": [*(volumes or []), *added]}}


JOBSET = register(JobSetKind())
KINDS = (JOBSET,)
