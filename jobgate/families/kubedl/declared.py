"""The KubeDL kinds' role rules and run-policy defaults as declarations (``jobgate/forms/``):
what KubeDL's controllers assume of the roles (one PyTorch Master, one MPI Launcher, at most one
TFJob Chief or Master) and the per-kind defaults of its ``*_defaults.go`` that a form says.

``jobgate manifests generate`` compiles them to the calls ``rules.py`` makes
(``jobgate/_generated/declared/kubedl.py``), to the CRDs' rules and schema defaults, the
MutatingAdmissionPolicy (``cel.py`` lists them) and the catalogue's records.
"""

from __future__ import annotations

from jobgate.families.kubedl.rules import (
    CLEAN_POD_POLICY,
    DEFAULT_CLEAN_POD_POLICY,
    MARS_MEMORY_DEFAULTS,
    TFJOB_DEFAULT_SUCCESS_POLICY,
    XDL_DEFAULT_BACKOFF_LIMIT,
    XDL_DEFAULT_MIN_FINISH_WORK_RATE,
    XGBOOST_DEFAULT_TTL_SECONDS,
)
from jobgate.forms.base import Declaration
from jobgate.forms.defaults import DefaultField
from jobgate.forms.fields import AtMostOneOf, FieldBound, RequiredField


def _exactly_one(replica_specs: str, role: str) -> tuple[Declaration, ...]:
    """The role is present with 1 replica (an unset count is 1 once defaulted): one rule of two checks."""
    rule_id, summary = f"roles/{role.lower()}", f"exactly one {role}"
    role_path = f"spec.{replica_specs}[{role}]"
    return (
        RequiredField(rule_id, summary, role_path, "must be present"),
        FieldBound(rule_id, summary, f"{role_path}.replicas", 1, 1, "must be 1"),
    )


def _run_policy_default(default_id: str, name: str, value: int) -> Declaration:
    """A field of the run policy, which these kinds inline into spec."""
    return DefaultField(default_id, f"spec.{name}", value, summary=f"{name}: {value}")


_CLEAN_POD_POLICY_SUMMARY = f"cleanPodPolicy: {DEFAULT_CLEAN_POD_POLICY}"
# Set first, where the run policy is (rules.py applies it before the replicas' defaults).
INLINE_CLEAN_POD_POLICY = DefaultField(
    CLEAN_POD_POLICY,
    "spec.cleanPodPolicy",
    DEFAULT_CLEAN_POD_POLICY,
    empty_is_unset=True,
    summary=_CLEAN_POD_POLICY_SUMMARY,
)
# MPIJob's run policy is spec.runPolicy when that is there, else inline.
EITHER_CLEAN_POD_POLICY = (
    DefaultField(
        CLEAN_POD_POLICY,
        "spec.cleanPodPolicy",
        DEFAULT_CLEAN_POD_POLICY,
        empty_is_unset=True,
        summary=_CLEAN_POD_POLICY_SUMMARY,
        unless=("spec.runPolicy",),
    ),
    DefaultField(
        CLEAN_POD_POLICY,
        "spec.runPolicy.cleanPodPolicy",
        DEFAULT_CLEAN_POD_POLICY,
        empty_is_unset=True,
        when_set=("spec.runPolicy",),
    ),
)

LEADERS = ("Chief", "Master")
_ONE_LEADER = f"at most one of {' and '.join(LEADERS)}, with one replica"

TFJOB: tuple[Declaration, ...] = (
    INLINE_CLEAN_POD_POLICY,
    AtMostOneOf(
        "roles/one-leader",
        _ONE_LEADER,
        "spec.tfReplicaSpecs",
        tuple(f"[{leader}]" for leader in LEADERS),
        f"must not have more than 1 {' or '.join(LEADERS)} role",
    ),
    *(
        FieldBound(
            "roles/one-leader",
            _ONE_LEADER,
            f"spec.tfReplicaSpecs[{leader}].replicas",
            maximum=1,
            message="must be less than or equal to 1",
        )
        for leader in LEADERS
    ),
    DefaultField(
        "tfjob/success-policy",
        "spec.successPolicy",
        TFJOB_DEFAULT_SUCCESS_POLICY,
        summary='successPolicy: "" (the Chief or Master, else worker 0)',
    ),
)
PYTORCHJOB = (INLINE_CLEAN_POD_POLICY, *_exactly_one("pytorchReplicaSpecs", "Master"))
XGBOOSTJOB = (
    INLINE_CLEAN_POD_POLICY,
    *_exactly_one("xgbReplicaSpecs", "Master"),
    _run_policy_default("xgboostjob/ttl", "ttlSecondsAfterFinished", XGBOOST_DEFAULT_TTL_SECONDS),
)
MPIJOB = (*EITHER_CLEAN_POD_POLICY, *_exactly_one("mpiReplicaSpecs", "Launcher"))
XDLJOB = (
    INLINE_CLEAN_POD_POLICY,
    _run_policy_default("xdljob/backoff-limit", "backoffLimit", XDL_DEFAULT_BACKOFF_LIMIT),
    DefaultField(
        "xdljob/min-finish-work-rate",
        "spec.minFinishWorkRate",
        XDL_DEFAULT_MIN_FINISH_WORK_RATE,
        summary=f"minFinishWorkRate: {XDL_DEFAULT_MIN_FINISH_WORK_RATE} unless minFinishWorkNum is set",
        unless=("spec.minFinishWorkNum",),
    ),
)
_TUNING = "spec.workerMemoryTuningPolicy"
_WORKERS = ("spec.marsReplicaSpecs[Worker]",)
# When there are workers: the whole policy when there is none, else each of its fields when unset.
MARSJOB: tuple[Declaration, ...] = (
    INLINE_CLEAN_POD_POLICY,
    DefaultField(
        "marsjob/worker-memory-tuning",
        _TUNING,
        dict(MARS_MEMORY_DEFAULTS),
        summary="workerMemoryTuningPolicy: plasmaStore /dev/shm, lockFreeFileIO true (when there are workers)",
        when_set=_WORKERS,
    ),
    *(
        DefaultField("marsjob/worker-memory-tuning", f"{_TUNING}.{key}", value, when_set=_WORKERS)
        for key, value in MARS_MEMORY_DEFAULTS
    ),
)

# Each kind's declarations, by its name (the family record's ``declared``: the generators compile them).
DECLARED = {
    "TFJob": TFJOB,
    "PyTorchJob": PYTORCHJOB,
    "XGBoostJob": XGBOOSTJOB,
    "MPIJob": MPIJOB,
    "XDLJob": XDLJOB,
    "MarsJob": MARSJOB,
}
