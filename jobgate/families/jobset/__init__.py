"""JobSet (jobset.x-k8s.io/v1alpha2), admission only: JobSet's own CRD and controller run the JobSets.

jobgate serves JobSet as JobSet v0.12.0 does (``PEER_VERSION``): the API is alpha and changes shape
between minors, so the version is part of the family's record, shown in the docs and held by a test.
"""

from jobgate.families import Family

GROUP = "jobset.x-k8s.io"
VERSION = "v1alpha2"
# The JobSet release whose webhook, CRD rules and defaults the family follows (2026-05-08, commit
# f22e565ac3cc3265c7c45ef67ecffdc689af5d77); its Go module is sigs.k8s.io/jobset at this version.
PEER_VERSION = "v0.12.0"
PEER_MODULE = "sigs.k8s.io/jobset"

FAMILY = Family(
    name="jobset",
    group=GROUP,
    version=VERSION,
    kinds=("JobSet",),
    description=(
        "{kind} of the JobSet API ({group}/{version}, JobSet " + PEER_VERSION + "), as jobgate's models describe it: "
        "a stand-in for JobSet's own CRD in jobgate's end-to-end tests (jobgate ships no JobSet CRD)."
    ),
    models="jobgate.families.jobset.models",
    rules="jobgate.families.jobset.rules",
    policy="jobgate.families.jobset.policy",
    webhook_only_reason=(
        "jobgate ships no CRD for jobset.x-k8s.io (JobSet's CRD is JobSet's): the rules JobSet's CRD enforces "
        "(its schema and its CEL) hold in the cluster through JobSet's CRD, and jobgate's webhook and "
        "`jobgate validate` check them too"
    ),
    catalogue="jobgate.families.jobset.catalogue",
    admission_only=True,
    compiled_modules=(
        "jobgate.families.jobset.rules.checks",
        "jobgate.families.jobset.rules.claims",
        "jobgate.families.jobset.rules.gates",
        "jobgate.families.jobset.rules.lists",
        "jobgate.families.jobset.shape",
    ),
)
