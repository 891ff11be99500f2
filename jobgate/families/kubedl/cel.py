"""The KubeDL family's rules and defaults (``rules/families/kubedl.py``) for the apiserver."""

from __future__ import annotations

from jobgate.engine.registry import JobKind
from jobgate.families.kubedl import rules as kubedl
from jobgate.generate.cel.catalogue import Default, Placement, Rule, Where, cel_string
from jobgate.generate.cel.replicajobs import (
    replica_job_defaults,
    replica_job_rules,
    replica_template_site,
    role_rules,
    run_policy_default,
    run_policy_places,
)

# The role rules of each kind, as rules/families/kubedl.py gives them to the kinds.
_ROLE_RULES: dict[object, dict[str, object]] = {
    kubedl.TFJOB: {"one_leader_of": ("Chief", "Master")},
    kubedl.PYTORCHJOB: {"exactly_one": "Master"},
    kubedl.XGBOOSTJOB: {"exactly_one": "Master"},
    kubedl.MPIJOB: {"exactly_one": "Launcher"},
}


def rules(kind: JobKind) -> list[Rule]:
    assert isinstance(kind, kubedl.KubeDLKind)
    return [*replica_job_rules(kind, replica_template_site(kind)), *role_rules(kind, **_ROLE_RULES.get(kind, {}))]  # type: ignore[arg-type]


def defaults(kind: JobKind) -> list[Default]:
    assert isinstance(kind, kubedl.KubeDLKind)
    return [*replica_job_defaults(kind, kubedl.DEFAULT_CLEAN_POD_POLICY), *_extra_defaults(kind)]


def _run_policy_value(kind: kubedl.KubeDLKind, default_id: str, name: str, value: int) -> Default:
    places = run_policy_places(kind)
    inline = len(places) == 1
    return Default(
        default_id,
        f"{name}: {value}",
        Where.SCHEMA_DEFAULT if inline else Where.MUTATING_POLICY,
        (run_policy_default(kind, name, str(value), empty_is_unset=False),),
        (Placement(("spec", name), {"default": value}),) if inline else (),
    )


def _extra_defaults(kind: kubedl.KubeDLKind) -> list[Default]:
    """rules/families/kubedl.py's _default_<kind> functions."""
    if kind is kubedl.TFJOB:
        success = cel_string(kubedl.TFJOB_DEFAULT_SUCCESS_POLICY)
        return [
            Default(
                "tfjob/success-policy",
                'successPolicy: "" (the Chief or Master, else worker 0)',
                Where.SCHEMA_DEFAULT,
                (
                    "!has(object.spec.successPolicy) ? "
                    f"[JSONPatch{{op: 'add', path: '/spec/successPolicy', value: {success}}}] : []",
                ),
                (Placement(("spec", "successPolicy"), {"default": kubedl.TFJOB_DEFAULT_SUCCESS_POLICY}),),
            )
        ]
    if kind is kubedl.XGBOOSTJOB:
        return [
            _run_policy_value(kind, "xgboostjob/ttl", "ttlSecondsAfterFinished", kubedl.XGBOOST_DEFAULT_TTL_SECONDS)
        ]
    if kind is kubedl.XDLJOB:
        rate = kubedl.XDL_DEFAULT_MIN_FINISH_WORK_RATE
        return [
            _run_policy_value(kind, "xdljob/backoff-limit", "backoffLimit", kubedl.XDL_DEFAULT_BACKOFF_LIMIT),
            Default(
                "xdljob/min-finish-work-rate",
                f"minFinishWorkRate: {rate} unless minFinishWorkNum is set",
                Where.MUTATING_POLICY,
                (
                    "!has(object.spec.minFinishWorkNum) && !has(object.spec.minFinishWorkRate) ? "
                    f"[JSONPatch{{op: 'add', path: '/spec/minFinishWorkRate', value: {rate}}}] : []",
                ),
            ),
        ]
    if kind is kubedl.MARSJOB:
        policy = "object.spec.workerMemoryTuningPolicy"
        whole = "{" + ", ".join(f"{cel_string(k)}: dyn({_literal(v)})" for k, v in kubedl.MARS_MEMORY_DEFAULTS) + "}"
        each = " + ".join(
            f"(!has({policy}.{k}) ? [JSONPatch{{op: 'add', path: '/spec/workerMemoryTuningPolicy/{k}', "
            f"value: {_literal(v)}}}] : [])"
            for k, v in kubedl.MARS_MEMORY_DEFAULTS
        )
        return [
            Default(
                "marsjob/worker-memory-tuning",
                "workerMemoryTuningPolicy: plasmaStore /dev/shm, lockFreeFileIO true (when there are workers)",
                Where.MUTATING_POLICY,
                (
                    f"!has(object.spec.marsReplicaSpecs) || !('Worker' in object.spec.marsReplicaSpecs) ? [] : "
                    f"!has({policy}) ? "
                    f"[JSONPatch{{op: 'add', path: '/spec/workerMemoryTuningPolicy', value: {whole}}}] : "
                    f"{each}",
                ),
            )
        ]
    return []


def _literal(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return cel_string(str(value))
