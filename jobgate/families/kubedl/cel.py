"""The KubeDL family's rules and defaults (``rules/families/kubedl.py``) for the apiserver."""

from __future__ import annotations

from jobgate.engine.registry import JobKind
from jobgate.families.kubedl import rules as kubedl
from jobgate.forms.base import Declarations
from jobgate.forms.catalogue import Default, Rule
from jobgate.generate.cel.replicajobs import replica_job_defaults, replica_job_rules, replica_template_site

# The role rules and the defaults a form says, declared (declared.py); the rest is written here.


def rules(kind: JobKind, declared: Declarations) -> list[Rule]:
    """The kind's rules, its declared ones (``declared``, compiled by the generator) last."""
    assert isinstance(kind, kubedl.KubeDLKind)
    return [*replica_job_rules(kind, replica_template_site(kind)), *declared.rules()]


def defaults(kind: JobKind) -> list[Default]:
    """The replica map's defaults (the declared ones follow them)."""
    assert isinstance(kind, kubedl.KubeDLKind)
    return replica_job_defaults(kind)
