"""The rules and defaults of a map of replica types that forms say, as declarations
(``jobgate/forms/``), from a kind's roles: KubeDL's kinds and Kubeflow's alike.

Read by the generators only (``jobgate manifests generate`` compiles them to the functions
``rules/replicajobs.py`` calls, and ``jobgate/generate/cel/replicajobs.py`` to the records), never
when a job is checked: the forms' dataclasses stay out of the webhook's start-up.
"""

from __future__ import annotations

from jobgate.forms.base import Declaration
from jobgate.forms.defaults import DefaultItemField
from jobgate.forms.replica_maps import (
    DefaultTemplatePort,
    DefaultTypeField,
    DefaultTypeSpelling,
    KnownTypes,
    RunPolicyAtMostTotal,
    RunPolicyImmutable,
)
from jobgate.rules.podtemplate import FALLBACK_TO_LOGS
from jobgate.rules.replicajobs import (
    FRAMEWORK_PORT,
    MIN_AVAILABLE,
    QUEUE_IMMUTABLE,
    REPLICA_DEFAULTS,
    TERMINATION_MESSAGE_POLICY,
    TYPE_SPELLING,
    TYPES,
    ReplicaJobKind,
)

COUNT, RESTART_POLICY = REPLICA_DEFAULTS


def replica_declarations(kind: ReplicaJobKind) -> tuple[Declaration, ...]:
    """The replica map's rules and defaults that forms say, from the kind's roles: its keys (the
    types and their spelling), the gang's size and the run policy's queue, each replica's count and
    restart policy. ``jobgate manifests generate`` compiles them to the functions
    ``rules/replicajobs.py`` calls (``jobgate/_generated/declared/<family>.py``, under the kind's group
    prefixed ``REPLICA_MAP_GROUP``; the spelling's function it calls itself, with the stored job)."""
    field = kind.replicas_field
    path = f"spec.{field}"
    roles = tuple(role.name for role in kind.roles)
    unknown_policy = kind.unknown_type_restart_policy()
    declared: list[Declaration] = [
        # Declared for every kind (its record); checked where the kind checks its types (checks_types).
        KnownTypes(
            TYPES,
            f"replica types are {', '.join(roles)}" + (" (any case, once each)" if kind.normalise_types else ""),
            path,
            roles,
            any_case=kind.normalise_types,
        )
    ]
    if kind.normalise_types:
        declared.append(
            DefaultTypeSpelling(
                TYPE_SPELLING,
                f"a replica type spelled in another case ({roles[0].lower()}) takes the role's name ({roles[0]})",
                path,
                roles,
            )
        )
    counts = tuple((role.name, role.default_replicas) for role in kind.roles)
    declared += [
        RunPolicyAtMostTotal(
            MIN_AVAILABLE,
            "the gang (schedulingPolicy.minAvailable) is at most the total of all replicas",
            "schedulingPolicy.minAvailable",
            path,
            counts,
            others=0 if unknown_policy is None else 1,
            place=kind.run_policy_place(),
        ),
        # Checked by the kinds that keep the shared update check (rules/replicajobs.py's _check_update);
        # Kubeflow's is its own, and its record of this one stays what it was (the run policy in spec).
        RunPolicyImmutable(
            QUEUE_IMMUTABLE,
            "schedulingPolicy.queue does not change once the job exists",
            "schedulingPolicy.queue",
            place="either" if kind.separate_run_policy else "spec",
        ),
    ]
    policies = tuple((role.name, role.restart_policy) for role in kind.roles)
    declared += [
        DefaultTypeField(
            COUNT,
            "each replica type's replicas: " + ", ".join(f"{k} {v}" for k, v in counts),
            path,
            "replicas",
            counts,
            others=None if unknown_policy is None else 1,
        ),
        DefaultTypeField(
            RESTART_POLICY,
            "each replica type's restartPolicy: " + ", ".join(f"{k} {v}" for k, v in policies),
            path,
            "restartPolicy",
            policies,
            others=unknown_policy,
            empty_is_unset=True,
        ),
    ]
    if kind.termination_message_policy:
        # Each replica's containers, after its count and restart policy (rules/replicajobs.py's defaults
        # of one replica), before its framework port.
        declared.append(
            DefaultItemField(
                TERMINATION_MESSAGE_POLICY,
                f"spec.{field}{{*}}.template.spec.containers",
                "terminationMessagePolicy",
                FALLBACK_TO_LOGS,
                empty_is_unset=True,
                entry="container",
                summary=f"every container's terminationMessagePolicy: {FALLBACK_TO_LOGS}",
            )
        )
    port_roles = tuple(role.name for role in kind.roles if role.gets_port)
    declared.append(
        DefaultTemplatePort(
            FRAMEWORK_PORT,
            f"the {kind.port_name} port ({kind.port}) on the {kind.container} container of "
            + ", ".join(port_roles)
            + (
                ""
                if kind.port_requires_named_container
                else f" (the first container when none is named {kind.container})"
            ),
            path,
            port_roles,
            kind.container,
            kind.port_name,
            kind.port,
            requires_named=kind.port_requires_named_container,
            # A type the kind does not know gets the port when it gets a restart policy (Kubeflow's).
            others=unknown_policy is not None,
            known=roles,
        )
    )
    return tuple(declared)
