"""Each platform-policy constraint declared once.

A declaration names the rule id its findings carry, the policy field that states it, what it
checks, and for each outcome the field-error type and the detail's text. Three readers compile
from the same declarations:

- :mod:`jobgate.policy.findings`, the webhook's and the offline command's findings: :meth:`Outcome.detail`
  fills a text's holes with Python values;
- :mod:`jobgate.generate.policy_vap`, the apiserver's ValidatingAdmissionPolicies: the same text
  written as a CEL string expression whose holes are CEL, so that the apiserver's refusal reads as
  the webhook's finding line (``PATH: TYPE[: VALUE]: DETAIL (POLICY)``);
- :mod:`jobgate.policy.ruleids`, the catalogue ``jobgate explain`` prints.

A form is how a constraint measures the job; each compiler has one piece of code per form and
loops over the declarations of it, so a constraint of a known form (a cap or requirement on a
job-level field the field map locates, an allow-list of such a field, a pod-level flag to forbid) is
one declaration here. The measures themselves (a role's largest count, a pod's weighted GPUs) are
each compiler's: Python counts :class:`~jobgate.policy.fieldmap.ReplicaGroup` s, CEL reads the
policy's per-group variables.

A text's holes are ``{name}``; a hole a compiler does not fill is a ``KeyError`` when it runs, never a
text with a gap. Plain slotted classes, not dataclasses: this module is on the offline command's
start-up path.
"""

from __future__ import annotations

INVALID = "Invalid value"
REQUIRED = "Required value"
FORBIDDEN = "Forbidden"
UNSUPPORTED = "Unsupported value"

# The forms (how the job is measured); see each compiler.
ROLE_CAP = "role-cap"  # a measure of each role against a limit
JOB_CAP = "job-cap"  # a measure of the whole job against a limit
FIELD_CAP = "field-cap"  # a job-level integer field against a limit
REQUIRED_FIELD = "required-field"  # a job-level field that must be set
ALLOW_LIST = "allow-list"  # a field (job-level or each pod template's) whose value must be listed
REQUIRED_LABEL = "required-label"  # a metadata label, with its allowed values
IMAGE_REGISTRIES = "image-registries"  # every container's image from a listed registry
FORBID_POD_FLAG = "forbid-pod-flag"  # a boolean pod-spec field that must not be true
FORBID_VOLUME = "forbid-volume"  # a volume source no pod (nor a DIJob's spec.volumes) may use
FORBID_CONTAINER_FLAG = "forbid-container-flag"  # a boolean container field that must not be true
# The DRA devices a pod's claims ask for, read from other objects (ResourceClaimTemplates,
# ResourceClaims): the webhook and the offline command only, a VAP cannot read them.
GPU_CLAIMS = "gpu-claims"
# The runtime a Kubeflow Trainer TrainJob references, by kind: the webhook and the offline command only
# (TrainJobs get no generated policy: their pods are their runtime's).
RUNTIMES = "runtimes"


class Outcome:
    """One finding a constraint gives: its field-error type and the text of its detail."""

    __slots__ = ("text", "type")

    def __init__(self, type_: str, text: str) -> None:
        self.type = type_
        self.text = text

    def detail(self, **holes: object) -> str:
        """The detail with its holes filled (each value as ``str`` writes it)."""
        return self.text.format(**holes)


class Constraint:
    """One rule of platform policy.

    ``param`` is the policy spec field that states it (``limits.maxGPUsPerJob``); ``subject`` what
    the form measures: the measure of a cap (``replicas``, ``gpus``), the job field of a field cap,
    required field or allow-list, the forbidden item. ``outcomes`` by name: ``over`` (a cap
    exceeded), ``missing`` (unset), ``outside`` (a value not listed), ``forbidden``.
    """

    __slots__ = ("checks", "form", "outcomes", "param", "rule", "subject")

    def __init__(self, rule: str, form: str, param: str, subject: str, checks: str, **outcomes: Outcome) -> None:
        self.rule = rule
        self.form = form
        self.param = param
        self.subject = subject
        self.checks = checks
        self.outcomes = outcomes

    @property
    def field(self) -> str:
        """The last name of ``param`` (``maxGPUsPerJob``, ``queues``), as a policy's spec spells it."""
        return self.param.rpartition(".")[2]

    @property
    def error_type(self) -> str:
        """The catalogue's error type: the first outcome's."""
        return next(iter(self.outcomes.values())).type


def _field_cap(rule: str, field: str, limit: str) -> Constraint:
    return Constraint(
        rule,
        FIELD_CAP,
        f"limits.{limit}",
        field,
        f"{field}, where the kind has it, must not exceed the limit.",
        over=Outcome(INVALID, "must be less than or equal to {limit}"),
    )


def _required_field(rule: str, field: str) -> Constraint:
    return Constraint(
        rule,
        REQUIRED_FIELD,
        f"require.{field}",
        field,
        f"The job must set {field} (where the kind has the field).",
        missing=Outcome(REQUIRED, f"the policy requires {field}"),
    )


def _allow_list(rule: str, list_name: str, field: str, checks: str) -> Constraint:
    return Constraint(
        rule,
        ALLOW_LIST,
        f"require.{list_name}",
        field,
        checks,
        outside=Outcome(UNSUPPORTED, "supported values: {supported}"),
        missing=Outcome(REQUIRED, "must be one of: {allowed}"),
    )


def _forbid(form: str, item: str, checks: str) -> Constraint:
    return Constraint(
        f"policy/forbid-{item.lower()}",
        form,
        "require.forbid",
        item,
        checks,
        forbidden=Outcome(FORBIDDEN, f"{item} is forbidden by policy"),
    )


CONSTRAINTS: tuple[Constraint, ...] = (
    Constraint(
        "policy/max-replicas-per-role",
        ROLE_CAP,
        "limits.maxReplicasPerRole",
        "replicas",
        "No role may reach more replicas than the limit, counted at the largest size the job may reach "
        "(a PyTorchJob's elasticPolicy.maxReplicas, a Volcano task's replicas).",
        over=Outcome(INVALID, "role {role} may reach {measure} replicas, exceeds {limit} per role"),
    ),
    Constraint(
        "policy/max-replicas-per-job",
        JOB_CAP,
        "limits.maxReplicasPerJob",
        "replicas",
        "The replicas of all roles together, each at its largest, must not exceed the limit.",
        over=Outcome(INVALID, "the job may reach {measure} replicas in all, exceeds {limit} per job"),
    ),
    Constraint(
        "policy/max-gpus-per-pod",
        ROLE_CAP,
        "limits.maxGPUsPerPod",
        "gpus",
        "A pod of any role must not request more weighted GPUs than the limit, counted as Kubernetes "
        "counts a pod's request (app containers and sidecars against the largest init container; "
        "requests, else limits; overhead) with the weights of limits.gpuResources.",
        over=Outcome(INVALID, "a pod of role {role} requests {measure} GPUs, exceeds {limit} GPUs per pod"),
    ),
    Constraint(
        "policy/max-gpus-per-job",
        JOB_CAP,
        "limits.maxGPUsPerJob",
        "gpus",
        "The job's weighted GPUs, Σ over roles of the largest replica count × one pod's GPUs, must not "
        "exceed the limit.",
        over=Outcome(
            INVALID, "the job requests {measure} GPUs at its largest ({breakdown}), exceeds {limit} GPUs per job"
        ),
    ),
    _required_field("policy/require-ttl", "ttlSecondsAfterFinished"),
    _field_cap("policy/max-ttl", "ttlSecondsAfterFinished", "maxTTLSecondsAfterFinished"),
    _required_field("policy/require-deadline", "activeDeadlineSeconds"),
    _field_cap("policy/max-active-deadline", "activeDeadlineSeconds", "maxActiveDeadlineSeconds"),
    Constraint(
        "policy/required-label",
        REQUIRED_LABEL,
        "require.labels",
        "labels",
        "The job must carry the label, with one of the listed values when values are given "
        "(Unsupported value otherwise).",
        missing=Outcome(REQUIRED, "the policy requires this label"),
        outside=Outcome(UNSUPPORTED, "supported values: {supported}"),
    ),
    _allow_list(
        "policy/allowed-queues",
        "queues",
        "queue",
        "The job's queue must be one of the list (unset: Required value).",
    ),
    _allow_list(
        "policy/allowed-priority-classes",
        "priorityClassNames",
        "priorityClassName",
        "The job's PriorityClass (or each pod template's, for the kinds that keep it there) must be one of the list.",
    ),
    _allow_list(
        "policy/allowed-schedulers",
        "schedulerNames",
        "schedulerName",
        "The scheduler of the job (Volcano) or of each pod template (unset = default-scheduler) must be "
        "one of the list.",
    ),
    Constraint(
        "policy/gpu-claim-unbounded",
        GPU_CLAIMS,
        "limits.maxGPUsPerPod, limits.maxGPUsPerJob",
        "allocationMode",
        "Where a GPU limit applies, a claim of a pod (its ResourceClaimTemplate or ResourceClaim) must not ask "
        "for every device of a GPU DeviceClass (allocationMode: All): that number cannot be bounded, so it "
        "violates the limit.",
        unbounded=Outcome(
            FORBIDDEN,
            "{claim} asks for all devices of class {device_class} (allocationMode: All): the number of GPUs "
            "cannot be bounded, so {limit_field} ({limit}) cannot hold",
        ),
    ),
    Constraint(
        "policy/gpu-claim-unknown",
        GPU_CLAIMS,
        "limits.maxGPUsPerPod, limits.maxGPUsPerJob",
        "resourceClaims",
        "Where a GPU limit applies, every ResourceClaimTemplate and ResourceClaim a pod names must be readable, "
        "so that its GPUs are counted: in the cluster it must exist before the job; offline it must be given "
        "with --cluster-objects. One that cannot be read violates the limit (never a guess).",
        unknown=Outcome(
            FORBIDDEN,
            "{claim} is not known here, so its GPUs cannot be counted against {limit_field} ({limit}); "
            "create it in namespace {namespace} before the job (offline: pass it with --cluster-objects)",
        ),
    ),
    Constraint(
        "policy/image-registries",
        IMAGE_REGISTRIES,
        "require.imageRegistries",
        "image",
        "Every init, app and ephemeral container's image, and every image volume's reference "
        "(volumes[].image.reference), must come from an exact host of the list or start with a host/path/ "
        "prefix of it; an image without a registry is docker.io's.",
        outside=Outcome(INVALID, "{origin}; images must come from: {allowed}"),
    ),
    *(
        _forbid(FORBID_POD_FLAG, item, f"No pod template of the job may use {item}.")
        for item in ("hostNetwork", "hostPID", "hostIPC")
    ),
    _forbid(FORBID_VOLUME, "hostPath", "No pod template of the job may use hostPath (nor a DIJob's spec.volumes)."),
    _forbid(FORBID_CONTAINER_FLAG, "privileged", "No pod template of the job may use privileged."),
    Constraint(
        "policy/runtime-not-allowed",
        RUNTIMES,
        "require.runtimes",
        "runtimeRef",
        "A Kubeflow Trainer TrainJob's spec.runtimeRef must name a runtime of the list of its kind "
        "(require.runtimes.clusterTrainingRuntimes, require.runtimes.trainingRuntimes); a kind the policy "
        "does not list is not limited. Several policies: their intersection.",
        outside=Outcome(UNSUPPORTED, "supported values: {supported}"),
    ),
)

DECLARED: dict[str, Constraint] = {c.rule: c for c in CONSTRAINTS}


def of_form(form: str) -> tuple[Constraint, ...]:
    """The declarations of one form, in declaration order."""
    return tuple(c for c in CONSTRAINTS if c.form == form)


# Where a container flag and a volume source sit (the forbid forms' subjects).
CONTAINER_FLAG_PATHS: dict[str, tuple[str, ...]] = {"privileged": ("securityContext", "privileged")}
