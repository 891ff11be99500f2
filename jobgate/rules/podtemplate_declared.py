"""The pod template's declared rules (docs/rule-forms.md): per-entry scopes, whose paths are
relative to one entry (a template, its pod spec, a container, a port, a mount, a variable, a volume),
checked by ``jobgate/rules/podtemplate.py``'s loops through the generated
``jobgate/_generated/scoped_rules.py`` where the hand-written checks of the entry ran, and placed at
every template of every kind by ``jobgate/generate/cel/podtemplate.py``. Data only: read by the
generators, never when a job is checked.

``{list}`` in an id or summary is the container list of the site: ``containers`` or
``initContainers``. A loop that reports something of its own between two checks of one entry (a
duplicate name, a mount of no volume) calls two scopes, one before and one after; the declarations
of one id are one rule of the catalogue however many scopes hold them.

The fields are strings and integers that the CRDs keep whole (``x-kubernetes-preserve-unknown-fields``):
no structural schema check reads their types, so the declarations say them (``string``, ``integer``).
"""

from __future__ import annotations

from jobgate.rules.forms import RequiredField, Scope

CONTAINER = Scope(
    "container",
    "container",
    (RequiredField("pod-template/{list}/image", "{list}: an image", "image", empty_is_unset=True, string=True),),
)

SCOPES = (CONTAINER,)
