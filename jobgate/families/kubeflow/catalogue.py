"""The Kubeflow family's rules (``families/kubeflow/rules.py``) in the catalogue: every one enforced
by the webhook only (Kubeflow's CRDs are Kubeflow's), named so that each error carries a rule id and
``jobgate explain`` can document it.

The shared replica-map rules (replica types, pod templates, gang size, names) are the records the
other replica-map families generate CEL from, marked webhook only here; Kubeflow's own checks, in
its wording, come first (an error is explained by the first rule that matches).
"""

from __future__ import annotations

import re

from jobgate.engine.registry import JobKind
from jobgate.families import kubeflow as record
from jobgate.families.kubeflow import rules as kubeflow
from jobgate.generate.cel.catalogue import Produces, Rule, Where
from jobgate.generate.cel.jobmeta import job_name_rule
from jobgate.generate.cel.replicajobs import replica_job_rules, replica_template_site

REASON = record.FAMILY.webhook_only_reason or ""


def webhook_only(rule: Rule, why: str = REASON) -> Rule:
    """A catalogue record kept for its id, summary and errors, enforced by the webhook only."""
    return Rule(rule.id, rule.summary, Where.WEBHOOK, rule.produces, why=why)


def _own(kind: kubeflow.KubeflowKind) -> list[Rule]:
    field = kind.replicas_field
    rules = [
        Rule(
            "kubeflow/name",
            "the job's name is a DNS-1035 label (Kubeflow's words: should match)",
            Where.WEBHOOK,
            (Produces("metadata.name", "INVALID", "^should match: "),),
            why=REASON,
        ),
        Rule(
            "kubeflow/managed-by",
            f"spec.runPolicy.managedBy is one of {', '.join(kubeflow.SUPPORTED_MANAGERS)}, and never changes",
            Where.WEBHOOK,
            (
                Produces("spec.runPolicy.managedBy", "NOT_SUPPORTED"),
                Produces("spec.runPolicy.managedBy", "INVALID", "^field is immutable$"),
            ),
            why=REASON,
        ),
        Rule(
            "kubeflow/queue-immutable",
            "spec.runPolicy.schedulingPolicy.queue never changes once set (Kubeflow's CRD transition rule)",
            Where.WEBHOOK,
            (
                Produces(
                    "spec.runPolicy.schedulingPolicy.queue", "INVALID", "^" + re.escape(kubeflow.QUEUE_IMMUTABLE) + "$"
                ),
            ),
            why=REASON,
        ),
        Rule(
            "kubeflow/template-containers",
            "every replica has a pod template with containers",
            Where.WEBHOOK,
            (
                Produces(
                    f"spec.{field}[*].template.spec.containers",
                    "REQUIRED",
                    "^must have at least one container$|^must be specified: |containers definition expected",
                ),
            ),
            why=REASON,
        ),
    ]
    if kind is kubeflow.TFJOB:
        rules.append(
            Rule(
                "kubeflow/tfjob-one-leader",
                "at most one of Chief and Master",
                Where.WEBHOOK,
                (Produces(f"spec.{field}", "FORBIDDEN", "^must not have more than 1 Chief or Master role$"),),
                why=REASON,
            )
        )
    if kind in (kubeflow.PYTORCHJOB, kubeflow.XGBOOSTJOB):
        rules.append(
            Rule(
                "kubeflow/master-replicas",
                "the Master has exactly one replica",
                Where.WEBHOOK,
                (Produces(f"spec.{field}[Master].replicas", "FORBIDDEN", "^must be 1$"),),
                why=REASON,
            )
        )
    if kind is kubeflow.PYTORCHJOB:
        rules.append(
            Rule(
                "kubeflow/replicas-at-least-one",
                "every replica type but the Master has at least one replica",
                Where.WEBHOOK,
                (Produces(f"spec.{field}[*].replicas", "FORBIDDEN", "^must be at least 1$"),),
                why=REASON,
            )
        )
    if kind is kubeflow.XGBOOSTJOB:
        rules.append(
            Rule(
                "kubeflow/master-required",
                "a Master is present",
                Where.WEBHOOK,
                (Produces(f"spec.{field}[Master]", "REQUIRED", "^must be present$"),),
                why=REASON,
            )
        )
    if kind is kubeflow.MPIJOB:
        rules.append(
            Rule(
                "kubeflow/one-launcher",
                "exactly one Launcher with one replica (Kubeflow's ValidateV1MpiJobSpec, at admission)",
                Where.WEBHOOK,
                (
                    Produces(f"spec.{field}[Launcher]", "REQUIRED", "^must be present "),
                    Produces(f"spec.{field}[Launcher].replicas", "FORBIDDEN", "^must be 1 "),
                ),
                why=REASON,
            )
        )
    if kind in (kubeflow.PYTORCHJOB, kubeflow.PADDLEJOB):
        rules.append(
            Rule(
                "kubeflow/elastic-needs-worker",
                "an elastic policy needs a Worker",
                Where.WEBHOOK,
                (Produces(f"spec.{field}[Worker]", "REQUIRED", f"^{re.escape(kubeflow.ELASTIC_WITHOUT_WORKER)}$"),),
                why=REASON,
            )
        )
    if kind is kubeflow.PYTORCHJOB:
        rules.append(
            Rule(
                "kubeflow/nproc-per-node",
                "spec.elasticPolicy.nProcPerNode (deprecated) is not given with spec.nprocPerNode",
                Where.WEBHOOK,
                (
                    Produces(
                        "spec.elasticPolicy.nProcPerNode", "FORBIDDEN", "^must not be used with spec\\.nprocPerNode$"
                    ),
                ),
                why=REASON,
            )
        )
    return rules


def rules(kind: JobKind) -> list[Rule]:
    assert isinstance(kind, kubeflow.KubeflowKind)
    shared = [job_name_rule(), *replica_job_rules(kind, replica_template_site(kind))]
    return [*_own(kind), *(webhook_only(rule) for rule in shared)]
