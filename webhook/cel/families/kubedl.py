"""The KubeDL family's rules (``rules/families/kubedl.py``) for the apiserver."""

from __future__ import annotations

from jobgate.webhook.cel.catalogue import Rule
from jobgate.webhook.cel.replicajobs import replica_job_rules, replica_template_site, role_rules
from jobgate.webhook.rules.families import kubedl
from jobgate.webhook.rules.registry import JobKind

# The role rules of each kind, as rules/families/kubedl.py gives them to the kinds.
_ROLE_RULES = {
    kubedl.TFJOB: {"one_leader_of": ("Chief", "Master")},
    kubedl.PYTORCHJOB: {"exactly_one": "Master"},
    kubedl.XGBOOSTJOB: {"exactly_one": "Master"},
    kubedl.MPIJOB: {"exactly_one": "Launcher"},
}


def rules(kind: JobKind) -> list[Rule]:
    assert isinstance(kind, kubedl.KubeDLKind)
    return [*replica_job_rules(kind, replica_template_site(kind)), *role_rules(kind, **_ROLE_RULES.get(kind, {}))]
