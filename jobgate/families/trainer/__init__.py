"""Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1), admission only: Trainer's controller runs the jobs.

The API is alpha and changes shape between minors (v2.2 replaced ``podTemplateOverrides`` with
``runtimePatches``): jobgate's rules are those of one release, ``TRAINER_VERSION``, shown by the docs
and held by a test.
"""

from jobgate.families import Family

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_API_VERSION = "v1alpha1"
# The Kubeflow Trainer release whose webhooks, plugins and CRD rules this family reproduces.
TRAINER_VERSION = "v2.3.0"

FAMILY = Family(
    name="trainer",
    group=TRAINER_GROUP,
    version=TRAINER_API_VERSION,
    kinds=("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"),
    description=(
        "{kind} of Kubeflow Trainer's API ({group}/{version}, Trainer " + TRAINER_VERSION + "), as jobgate's "
        "models describe it: a stand-in for Trainer's own CRD in jobgate's end-to-end tests (jobgate ships no "
        "Trainer CRD)."
    ),
    models="jobgate.families.trainer.models",
    rules="jobgate.families.trainer.rules",
    policy="jobgate.families.trainer.policy",
    webhook_only_reason=(
        "jobgate ships no CRD for trainer.kubeflow.org (Kubeflow Trainer's CRDs are Trainer's): the rules its "
        "CRDs enforce with CEL are checked by jobgate's webhook and `jobgate validate` alike, and a TrainJob's "
        "rules read its runtime, which no CEL rule can"
    ),
    catalogue="jobgate.families.trainer.catalogue",
    admission_only=True,
    # Every module of the rules package (never its __init__: see build_support/native.py).
    compiled_modules=tuple(
        f"jobgate.families.trainer.rules.{name}"
        for name in ("cel_rules", "checks", "crd_schema", "kinds", "pods", "runtimes")
    ),
)
