"""The tables of docs/rule-forms.md that list the shared forms, by marker: the forms whose ``DOC`` rows
each lists, in order. A family's own forms add theirs (its ``forms`` module's ``DOC_TABLE`` and
``FORMS``); ``python -m build_support.docs`` writes the tables."""

from __future__ import annotations

from jobgate.forms.defaults import DefaultField, DefaultItemField
from jobgate.forms.entries import NamedEntries
from jobgate.forms.fields import AtMostOneOf, FieldBound, ForbiddenField, RequiredField, StringField
from jobgate.forms.replica_maps import (
    DefaultTemplatePort,
    DefaultTypeField,
    DefaultTypeSpelling,
    KnownTypes,
    RunPolicyAtMostTotal,
    RunPolicyImmutable,
)
from jobgate.forms.roles import AtMostSum, ForbiddenRoles, Immutable, MaxItems, RequiredRoles, RoleFieldBound, UniqueBy

DOC_TABLES = {
    "forms": (
        DefaultField,
        DefaultItemField,
        MaxItems,
        UniqueBy,
        RequiredRoles,
        ForbiddenRoles,
        RoleFieldBound,
        AtMostSum,
        Immutable,
        RequiredField,
        ForbiddenField,
        FieldBound,
        StringField,
        AtMostOneOf,
    ),
    "volcano-forms": (),
    "replica-map-forms": (
        KnownTypes,
        RunPolicyImmutable,
        RunPolicyAtMostTotal,
        DefaultTypeSpelling,
        DefaultTypeField,
        DefaultTemplatePort,
    ),
    "entry-forms": (NamedEntries,),
}
