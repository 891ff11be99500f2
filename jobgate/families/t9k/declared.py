"""GenericJob's rules as declarations (``jobgate/rules/forms.py``); ``jobgate manifests generate``
compiles them to the calls ``rules.py`` makes (``jobgate/_generated/declared_rules.py``), to the
CRD's rules (``cel.py`` lists them) and to the catalogue's records.
"""

from __future__ import annotations

from jobgate.rules.forms import Declaration, Immutable

GENERIC_JOB: tuple[Declaration, ...] = (
    Immutable(
        "genericjob/resume-specs-immutable",
        "the resume settings do not change once the job exists",
        "spec.runMode.pause.resumeSpecs",
        "field is immutable: only pause.enabled may change while the job exists",
    ),
)
