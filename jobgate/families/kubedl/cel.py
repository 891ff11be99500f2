"""The KubeDL family's rules and defaults (``rules/families/kubedl.py``) for the apiserver."""

from __future__ import annotations

from jobgate.engine.registry import JobKind
from jobgate.families.kubedl import declared as declarations
from jobgate.families.kubedl import rules as kubedl
from jobgate.forms.base import Declarations
from jobgate.forms.catalogue import Default, Rule
from jobgate.generate.cel.replicajobs import replica_job_defaults, replica_job_rules, replica_template_site

# The role rules and the defaults a form says, declared (declared.py); the rest is written here.
DECLARED = {kind: Declarations(declarations.BY_KIND[kind.kind]) for kind in kubedl.KINDS}


def declared(kind: JobKind) -> Declarations:
    assert isinstance(kind, kubedl.KubeDLKind)
    return DECLARED[kind]


def rules(kind: JobKind) -> list[Rule]:
    assert isinstance(kind, kubedl.KubeDLKind)
    return [*replica_job_rules(kind, replica_template_site(kind)), *DECLARED[kind].rules()]


def defaults(kind: JobKind) -> list[Default]:
    assert isinstance(kind, kubedl.KubeDLKind)
    return [
        *replica_job_defaults(kind),
        *DECLARED[kind].defaults(),
    ]
