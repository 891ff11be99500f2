"""MxJob's defaults and rules as declarations (``jobgate/forms/``): the operator's ``SetDefaults``
and its job-mode rules, with the operator's own sentences.

``jobgate manifests generate`` compiles them to the check ``rules.py`` calls
(``jobgate/_generated/declared/mlkube.py``), to the CRD's schema defaults and rules and the
MutatingAdmissionPolicy (``cel.py`` lists them), and to the catalogue's records.
"""

from __future__ import annotations

from jobgate.api.constants import MX_REPLICA_TYPES
from jobgate.families.mlkube.rules import DEFAULT_PS_ROOT_PORT, DEFAULT_REPLICA_TYPE
from jobgate.forms.base import Declaration, Roles, When
from jobgate.forms.defaults import DefaultItemField
from jobgate.forms.roles import ForbiddenRoles, RequiredRoles, RoleFieldBound, UniqueBy

REPLICA_SPECS = "spec.replicaSpecs"
ROLES = Roles(REPLICA_SPECS, "mxReplicaType", MX_REPLICA_TYPES)
LOCAL = When("spec.jobMode", "local")

MXJOB: tuple[Declaration, ...] = (
    DefaultItemField("replicas/count", REPLICA_SPECS, "replicas", 1, entry="replica spec"),
    DefaultItemField("mxjob/ps-root-port", REPLICA_SPECS, "PsRootPort", DEFAULT_PS_ROOT_PORT, entry="replica spec"),
    DefaultItemField(
        "mxjob/replica-type",
        REPLICA_SPECS,
        "mxReplicaType",
        DEFAULT_REPLICA_TYPE,
        empty_is_unset=True,
        entry="replica spec",
    ),
    RoleFieldBound(
        "mxjob/scheduler-replicas",
        "the SCHEDULER has one replica",
        ROLES,
        "SCHEDULER",
        "replicas",
        "The SCHEDULER must have Replicas = 1",
        minimum=1,
        maximum=1,
        every=True,
        why="every SCHEDULER entry, a duplicate one too (the CRD's rule reads each entry)",
    ),
    UniqueBy(
        "mxjob/types-unique",
        REPLICA_SPECS,
        "mxReplicaType",
        among=MX_REPLICA_TYPES,
        summary="each replica type once (an entry without mxReplicaType is a WORKER)",
    ),
    ForbiddenRoles(
        "mxjob/local-mode-workers-only",
        "job mode local: no SCHEDULER, no SERVER",
        ROLES,
        ("SCHEDULER", "SERVER"),
        "job mode is local, but its replicas set have replicas type other than worker",
        when=LOCAL,
    ),
    RoleFieldBound(
        "mxjob/local-mode-one-worker",
        "job mode local: one WORKER replica at most",
        ROLES,
        "WORKER",
        "replicas",
        "job mode is local, but it has more than 1 worker",
        maximum=1,
        when=LOCAL,
    ),
    RequiredRoles(
        "mxjob/dist-mode-roles",
        "job mode dist: a SCHEDULER, a SERVER and a WORKER",
        ROLES,
        MX_REPLICA_TYPES,
        "dist job mode without replica type {role}",
        when=When("spec.jobMode", "dist"),
    ),
)


# Each kind's declarations, by its name (the family record's ``declared``: the generators compile them).
DECLARED = {"MxJob": MXJOB}
