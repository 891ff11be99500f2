"""The forms only Volcano's rules use (``jobgate/families/volcano/declared.py``): declarations and
their compilation, a module per topic; this module names them all, and the table of
docs/rule-forms.md they fill.
"""

from __future__ import annotations

from jobgate.families.volcano.forms.bounds import Bound, Bounds
from jobgate.families.volcano.forms.defaults import (
    DefaultIndexed,
    DefaultItemProduct,
    DefaultItemWhen,
    DefaultSum,
    ImpliedKeys,
)
from jobgate.families.volcano.forms.graph import Acyclic
from jobgate.families.volcano.forms.keys import FixedCount, FlagNamesEntry, KnownKeys, Subdomain
from jobgate.families.volcano.forms.lifecycle import LifecyclePolicies
from jobgate.families.volcano.forms.lists import NotBoth, RequiredItemField, RequiredList, UniqueName
from jobgate.families.volcano.forms.unchanged import Same, SameAll, SameEach, SameUnlessBoth, Shape, Unchanged
from jobgate.families.volcano.forms.volumes import ClaimVolumes

VolcanoForm = (
    Acyclic
    | KnownKeys
    | FixedCount
    | Subdomain
    | FlagNamesEntry
    | Unchanged
    | LifecyclePolicies
    | ClaimVolumes
    | NotBoth
    | RequiredList
    | UniqueName
    | RequiredItemField
    | Bounds
)


# Its table of docs/rule-forms.md, and the forms it lists there (their ``DOC`` rows), in order.
DOC_TABLE = "volcano-forms"
FORMS = (
    Acyclic,
    KnownKeys,
    FixedCount,
    Subdomain,
    FlagNamesEntry,
    Unchanged,
    LifecyclePolicies,
    ClaimVolumes,
    RequiredList,
    UniqueName,
    RequiredItemField,
    Bounds,
    NotBoth,
    DefaultIndexed,
    DefaultSum,
    ImpliedKeys,
    DefaultItemWhen,
    DefaultItemProduct,
)

__all__ = [
    "DOC_TABLE",
    "FORMS",
    "Acyclic",
    "Bound",
    "Bounds",
    "ClaimVolumes",
    "DefaultIndexed",
    "DefaultItemProduct",
    "DefaultItemWhen",
    "DefaultSum",
    "FixedCount",
    "FlagNamesEntry",
    "ImpliedKeys",
    "KnownKeys",
    "LifecyclePolicies",
    "NotBoth",
    "RequiredItemField",
    "RequiredList",
    "Same",
    "SameAll",
    "SameEach",
    "SameUnlessBoth",
    "Shape",
    "Subdomain",
    "Unchanged",
    "UniqueName",
    "VolcanoForm",
]
