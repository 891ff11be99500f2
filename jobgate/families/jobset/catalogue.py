"""The JobSet family's rules (``families/jobset/checks.py``) in the catalogue: each error's rule id,
its summary for ``jobgate explain`` and the rule reference (docs/rules/jobset.md).

jobgate ships no CRD for JobSet and generates no policy for it: every rule is the webhook's (and
``jobgate validate``'s). The rules JobSet's own CRD enforces with CEL (``jobset/crd-*``) hold in the
cluster through JobSet's CRD, before any webhook is asked; jobgate checks them as well so that an
offline check, which has no CRD, refuses what the cluster would. Their summaries say so.
"""

from __future__ import annotations

import re

from jobgate.engine.registry import JobKind
from jobgate.families import jobset as record
from jobgate.families.jobset.rules import checks, claims
from jobgate.forms.catalogue import LIST_ITEMS, Produces, Rule, Where
from jobgate.generate.cel.podtemplate import TemplateSite, pod_template_rules

REASON = record.FAMILY.webhook_only_reason or ""
PEER = f"JobSet {record.PEER_VERSION}'s validating webhook"
CEL_WHY = (
    f"enforced in the cluster by JobSet {record.PEER_VERSION}'s own CRD (x-kubernetes-validations, CEL), before any "
    "webhook; jobgate checks it too, so that `jobgate validate` (no CRD offline) refuses what the cluster refuses"
)

CRD_SCHEMA_WHY = (
    f"enforced in the cluster by JobSet {record.PEER_VERSION}'s own CRD (its structural schema), before any "
    "webhook and ratcheted on UPDATE; jobgate checks it too, so that `jobgate validate` (no CRD offline) refuses "
    "what the cluster refuses"
)


def _gated(gate: str) -> str:
    """The why of a rule JobSet puts behind a feature gate."""
    return (
        f"{PEER}'s rule, behind JobSet's feature gate {gate} (off by default; jobgate's flag "
        f"--jobset-feature-gates); {REASON}"
    )


SITE = TemplateSite(
    ("spec", "replicatedJobs", LIST_ITEMS, "template", "spec", "template"),
    "spec.replicatedJobs[*].template.spec.template",
)


def _internal(detail: str) -> Produces:
    return Produces(checks.NIL_FIELD, "INTERNAL", detail)


def _rule(rule_id: str, summary: str, *produces: Produces, why: str = "") -> Rule:
    return Rule(rule_id, summary, Where.WEBHOOK, produces, why=why or f"{PEER}'s rule; {REASON}")


def _own() -> list[Rule]:
    jobs = "spec.replicatedJobs[*]"
    return [
        _rule(
            checks.R_CEL_STARTUP_DEPENDS_ON,
            "JobSet's CRD (CEL): startupPolicy InOrder and dependsOn are not used together",
            Produces("spec", "INVALID", "^" + re.escape(checks.CEL_STARTUP_DEPENDS_ON) + "$"),
            why=CEL_WHY,
        ),
        _rule(
            checks.R_CEL_IMMUTABLE,
            "JobSet's CRD (CEL): network, successPolicy, failurePolicy, startupPolicy, volumeClaimPolicies and each "
            "replicated job's dependsOn never change once set (UPDATE)",
            Produces("spec.*", "INVALID", "^Value is immutable$"),
            Produces(f"{jobs}.dependsOn", "INVALID", "^Value is immutable$"),
            why=CEL_WHY,
        ),
        _rule(
            checks.R_CEL_CLAIM_NAMESPACE,
            "JobSet's CRD (CEL): a volume claim policy's templates name no namespace",
            Produces("spec.volumeClaimPolicies[*]", "INVALID", "^" + re.escape(checks.CEL_CLAIM_NAMESPACE) + "$"),
            why=CEL_WHY,
        ),
        _rule(
            checks.R_LIST_BOUNDS,
            "JobSet's CRD (maxItems): a replicated job's dependsOn has at most 5 items, volumeClaimPolicies and "
            "each policy's templates at most 50",
            Produces(f"{jobs}.dependsOn", "TOO_MANY"),
            Produces("spec.volumeClaimPolicies", "TOO_MANY"),
            Produces("spec.volumeClaimPolicies[*].templates", "TOO_MANY"),
            why=CRD_SCHEMA_WHY,
        ),
        _rule(
            checks.R_LIST_MAP_KEYS,
            "JobSet's CRD (x-kubernetes-list-type: map): no two replicated jobs, nor two dependsOn items of one, "
            "share a name; no two items of a pod template's containers, volumes, env, ports, mounts, ... share "
            "their keys (as core/v1 keys them)",
            Produces("spec.**", "DUPLICATE"),
            why=CRD_SCHEMA_WHY,
        ),
        _rule(
            checks.R_INPLACE_GATE,
            "failurePolicy.restartStrategy InPlaceRestart needs the InPlaceRestart feature gate",
            _internal("^InPlaceRestart restart strategy cannot be set"),
        ),
        _rule(
            checks.R_FIRST_DEPENDS_ON,
            "the first replicated job depends on none",
            _internal("^DependsOn can't be set for the first ReplicatedJob$"),
        ),
        _rule(
            checks.R_SUBDOMAIN,
            "spec.network.subdomain is a DNS-1123 subdomain and a DNS-1035 label (it names the headless service)",
            Produces("spec.network.subdomain", "INVALID"),
        ),
        _rule(
            checks.R_MANAGED_BY,
            "spec.managedBy is a domain-prefixed path of at most 63 characters (CREATE)",
            Produces("spec.managedBy", "INVALID"),
            Produces("spec.managedBy", "REQUIRED"),
            Produces("spec.managedBy", "TOO_LONG"),
        ),
        _rule(
            checks.R_POD_COUNT,
            "replicas × parallelism of a replicated job fits in an int32",
            _internal("^the product of replicas and parallelism must not exceed "),
        ),
        _rule(
            checks.R_GROUP_NAME,
            "each replicated job's groupName is a DNS-1035 label",
            Produces(f"{jobs}.groupName", "INVALID"),
        ),
        _rule(
            checks.R_DERIVED_NAMES,
            "the Job names (<jobset>-<job>-<index>) and, for Indexed Jobs with completions, the pod names derived "
            "from the JobSet's name are DNS-1035 labels of at most 63 characters",
            Produces(f"{jobs}.name", "INVALID"),
        ),
        _rule(
            checks.R_DEPENDS_ON_ORDER,
            "dependsOn names an earlier replicated job",
            _internal("^replicatedJob: .* cannot depend on replicatedJob: "),
        ),
        _rule(
            checks.R_INPLACE_JOBS,
            "with InPlaceRestart (gate on): every Job has backoffLimit 2147483647, podReplacementPolicy Failed, "
            "completions equal to parallelism",
            Produces(f"{jobs}.template.spec.backoffLimit", "INVALID", "when in-place restart is enabled$"),
            Produces(f"{jobs}.template.spec.podReplacementPolicy", "INVALID", "when in-place restart is enabled$"),
            Produces(f"{jobs}.template.spec.completions", "INVALID", "when in-place restart is enabled$"),
            why=_gated("InPlaceRestart"),
        ),
        _rule(
            checks.R_SUCCESS_TARGETS,
            "successPolicy.targetReplicatedJobs name replicated jobs",
            _internal(r"^invalid replicatedJob name '.*' does not appear in \.spec\.ReplicatedJobs$"),
        ),
        _rule(
            checks.R_RESTART_JOB,
            "RestartJob actions need the RestartJob feature gate, and then no replicated job has more than 1024 "
            "replicas",
            _internal("^RestartJob and RestartJobAndIgnoreMaxRestarts failure policy actions are not allowed"),
            _internal("^JobSet cannot have a failure policy rule with RestartJob"),
            why=_gated("RestartJob"),
        ),
        _rule(
            checks.R_RULE_NAMES,
            "failure policy rule names: 1 to 128 characters, a letter first, letters, digits and '_,:' after, unique",
            _internal("^invalid failure policy rule name "),
            _internal("^rule names are not unique"),
        ),
        _rule(
            checks.R_FAILURE_TARGETS,
            "failure policy rules target replicated jobs that exist",
            _internal("^invalid replicatedJob name '.*' in failure policy does not appear"),
        ),
        _rule(
            checks.R_FAILURE_REASONS,
            "onJobFailureReasons are Job failure reasons: " + ", ".join(checks.VALID_FAILURE_REASONS),
            _internal("^invalid job failure reason "),
        ),
        _rule(
            checks.R_COORDINATOR,
            "the coordinator names a replicated job, a Job index below its replicas, an Indexed Job with completions "
            "and a pod index below them",
            _internal("^coordinator |^job for coordinator pod must be indexed"),
        ),
        _rule(
            checks.R_COORDINATOR_LABEL,
            "the coordinator's endpoint (<jobset>-<job>-<j>-<p>.<subdomain>) is a valid label value",
            _internal("^spec will lead to invalid label value "),
        ),
        _rule(
            checks.R_CLAIM_TEMPLATES,
            "volume claim templates: unique DNS-1123 subdomain names, <template>-<jobset> at most 63 characters",
            Produces("spec.volumeClaimPolicies[*].template[*].name", "INVALID"),
        ),
        _rule(
            checks.R_CLAIM_MOUNTS,
            "each volume claim template is mounted by some container and shadowed by no pod volume",
            Produces(f"{jobs}.template.spec.template.spec.volumes[*].name", "INVALID", "^volume name conflicts "),
            Produces("spec.replicatedJobs", "INVALID", "^replicatedJob containers don't have a matching volumeMount"),
        ),
        _rule(
            claims.R_EXISTING_CLAIMS,
            "an existing PVC <template>-<jobset> in the JobSet's namespace has the template's spec, and the policy "
            "retains it (whenDeleted Retain)",
            Produces("spec.volumeClaimPolicies[*].template[*].spec", "INVALID", "^spec does not match existing PVC "),
            Produces("spec.volumeClaimPolicies[*].retentionPolicy.whenDeleted", "INVALID", "^retentionPolicy must be "),
            Produces("spec.volumeClaimPolicies[*].template[*]", "INTERNAL", "^failed to check for existing PVC "),
            why=f"{PEER}'s rule; it reads the cluster's PVCs (offline: --cluster-objects); {REASON}",
        ),
        _rule(
            checks.R_REPLICATED_JOBS_IMMUTABLE,
            "spec.replicatedJobs never changes (UPDATE), but for the pod templates' labels, annotations, "
            "nodeSelector, tolerations and schedulingGates while the JobSet is or becomes suspended (Kueue), and "
            "Indexed Jobs' parallelism and completions with ElasticJobSet",
            Produces("spec.replicatedJobs", "INVALID", "^field is immutable$"),
        ),
        _rule(
            checks.R_ELASTIC,
            "with ElasticJobSet (gate on): an Indexed Job's parallelism and completions change only before the JobSet "
            "completes or fails, stay at least 1 and equal (UPDATE)",
            Produces(f"{jobs}.template.spec", "FORBIDDEN", "^Cannot mutate parallelism or completions"),
            Produces(f"{jobs}.template.spec.parallelism", "INVALID", "^parallelism must be >= 1$"),
            Produces(f"{jobs}.template.spec.completions", "INVALID", "^completions must be"),
            why=_gated("ElasticJobSet"),
        ),
        _rule(
            checks.R_MANAGED_BY_IMMUTABLE,
            "spec.managedBy never changes (UPDATE)",
            Produces("spec.managedBy", "INVALID", "^field is immutable$"),
        ),
        _rule(
            checks.R_JOB_TEMPLATE,
            "each replicated job's Job template is one the apiserver accepts when JobSet's controller creates the "
            "Jobs: counts not negative, a positive deadline, Indexed Jobs with completions when parallelism is set "
            "and parallelism at most 100000, pod restartPolicy OnFailure or Never",
            Produces(f"{jobs}.template.spec.*", "INVALID"),
            Produces(f"{jobs}.template.spec.completions", "REQUIRED", "^when completion mode is Indexed$"),
            Produces(
                f"{jobs}.template.spec.template.spec.restartPolicy",
                "NOT_SUPPORTED",
                '^supported values: "OnFailure", "Never"$',
            ),
            why=(
                "jobgate's rule beyond JobSet's webhook (jobset PR #1211's intent): the apiserver's batch/v1 Job "
                "validation, which otherwise refuses the Jobs only when JobSet's controller creates them; " + REASON
            ),
        ),
    ]


def _shared(rule: Rule) -> Rule:
    why = (
        "jobgate's pod-template rule beyond JobSet's webhook (jobset PR #1211's intent: the apiserver refuses "
        "such a pod only when the Job creates it); " + REASON
    )
    return Rule(rule.id, rule.summary, Where.WEBHOOK, rule.produces, why=why)


def enforced_by(rule: Rule) -> str:
    """Where the rule holds, for the rule reference (docs/rules/jobset.md)."""
    if rule.why == CEL_WHY:
        return f"JobSet {record.PEER_VERSION}'s CRD (CEL) in the cluster; the webhook and `jobgate validate`"
    if rule.why == CRD_SCHEMA_WHY:
        return f"JobSet {record.PEER_VERSION}'s CRD (schema) in the cluster; the webhook and `jobgate validate`"
    if "feature gate" in rule.why:
        return "the webhook and `jobgate validate`, " + rule.why.split(", ", 1)[1].split(";")[0]
    return "the webhook and `jobgate validate`"


def rules(kind: JobKind) -> list[Rule]:
    return [*_own(), *(_shared(rule) for rule in pod_template_rules(SITE))]
