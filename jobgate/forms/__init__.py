"""The rule language: the forms a family declares its rules in (docs/rule-forms.md).

``catalogue`` holds the types a rule compiles to (``Rule``, ``Default``, ``Placement``, ``Produces``,
``Where``, the CEL literals) and ``carried`` a CRD rule carried into a policy; the families' CEL
modules and the generators (``jobgate/generate/``) build on them.

``checks/`` holds each group of forms' runtime twin, the Python the generated checks call
(``jobgate/_generated/declared/<family>.py``, ``scoped_rules.py``); it imports no declaration and
no ``dataclasses``, so a review imports none either. ``checks/volcano.py`` and ``checks/t9k.py``
hold the forms only one family uses; they stay here while one generated module holds every
kind's calls (importing a family's package from it would load every family for one job).
"""
