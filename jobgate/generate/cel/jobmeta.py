"""Rules every kind shares (``rules/jobmeta.py``, ``rules/schema.py``) for the apiserver: the job's
name, and the structural schema's own checks.
"""

from __future__ import annotations

import re

from jobgate.forms.catalogue import Placement, Produces, Rule, Validation, Where, cel_raw_string
from jobgate.rules.names import (
    DNS1035_LABEL_MESSAGE,
    DNS1123_LABEL_PATTERN,
    DNS1123_SUBDOMAIN_MESSAGE,
    LABEL_MAX_LENGTH,
    LABEL_VALUE_MESSAGE,
    SUBDOMAIN_MAX_LENGTH,
    max_length_message,
)

DNS1035_LABEL_PATTERN = "^[a-z]([-a-z0-9]*[a-z0-9])?$"
# generateName gets five characters appended by the apiserver (rules/jobmeta.py).
GENERATED_SUFFIX_LENGTH = 5

# What the apiserver says of a name that is no DNS-1123 subdomain (names.dns1123_subdomain_problems).
SUBDOMAIN_PROBLEM = f"^({re.escape(DNS1123_SUBDOMAIN_MESSAGE)}|{re.escape(max_length_message(SUBDOMAIN_MAX_LENGTH))})$"

# What the apiserver says of a label key or value (names.qualified_name_problems, label_value_problems).
LABEL_PROBLEM = (
    f"^({re.escape(max_length_message(LABEL_MAX_LENGTH))}|{re.escape(LABEL_VALUE_MESSAGE)}"
    "|(prefix|name) part |a qualified name )"
)

NAME = "self.metadata.name"
PREFIX = "self.metadata.generateName"
# The name was generated (CEL sees the generated name; the webhook reports at generateName).
GENERATED = (
    f"(has({PREFIX}) && {PREFIX} != '' && size({NAME}) == size({PREFIX}) + {GENERATED_SUFFIX_LENGTH} && "
    f"{NAME}.startsWith({PREFIX}))"
)
# The name the user chose: generateName's prefix when the name was generated.
NAME_IS_LABEL = f"(size({NAME}) <= {LABEL_MAX_LENGTH} && {NAME}.matches({cel_raw_string(DNS1035_LABEL_PATTERN)}))"
# A role's or task's name that pods are named after: a DNS-1123 label (rules/jobmeta.py's callers
# leave any other out of the derived names; its own rule refuses it).


def names_a_pod(name: str) -> str:
    """CEL true when the field ``name`` (CEL) names its role's pods: set, a DNS-1123 label."""
    label = cel_raw_string(DNS1123_LABEL_PATTERN)
    return f"(has({name}) && {name} != '' && size({name}) <= {LABEL_MAX_LENGTH} && {name}.matches({label}))"


def job_name_rule() -> Rule:
    """The name is a DNS-1035 label (pods and services are named after it)."""
    placements = []
    for generated, field_path in ((False, ".metadata.name"), (True, ".metadata.generateName")):
        unless = f"!{GENERATED}" if generated else GENERATED
        placements += [
            Placement(
                (),
                validation=Validation(
                    rule=f"{unless} || {NAME}.matches({cel_raw_string(DNS1035_LABEL_PATTERN)})",
                    message=DNS1035_LABEL_MESSAGE,
                    field_path=field_path,
                ),
            ),
            Placement(
                (),
                validation=Validation(
                    rule=f"{unless} || size({NAME}) <= {LABEL_MAX_LENGTH}",
                    message=max_length_message(LABEL_MAX_LENGTH),
                    field_path=field_path,
                ),
            ),
        ]
    return Rule(
        "job/name",
        "the job's name is a DNS-1035 label",
        Where.CRD_RULE,
        (
            Produces("metadata.name", "REQUIRED", "name or generateName is required"),
            Produces(
                "metadata.name", "INVALID", "^(" + re.escape(DNS1035_LABEL_MESSAGE) + "|must be no more than 63 )"
            ),
            # The apiserver checks the name it generated (a DNS-1123 subdomain) before any rule.
            Produces(
                "metadata.generateName",
                "INVALID",
                "^(" + re.escape(DNS1035_LABEL_MESSAGE) + "|must be no more than 63 )",
                apiserver_instead="metadata.name",
            ),
        ),
        tuple(placements),
        why="a missing name, or a generated one that is no DNS-1123 subdomain, is refused by the apiserver itself",
    )


def derived_names_rule(rule_id: str, summary: str, longest: str, fits: str) -> Rule:
    """The names of the job's pods and services (``<job>-<type>-<index>`` and alike) fit in 63
    characters. ``fits`` is CEL true when every derived name fits; ``longest`` CEL naming the
    longest derived name (read only when one does not fit). The webhook's message also says how
    long the name may be; CEL's cost estimator cannot size a number made a string, so this one
    names the derived name only."""
    message = (
        f"'must be shorter: the pod and service name ' + {longest} + "
        f"' derived from it must be no more than {LABEL_MAX_LENGTH} characters'"
    )
    placements = tuple(
        Placement(
            (),
            validation=Validation(
                rule=f"{unless} || !{NAME_IS_LABEL} || {fits}",
                message_expression=message,
                field_path=field_path,
            ),
        )
        for unless, field_path in ((GENERATED, ".metadata.name"), (f"!{GENERATED}", ".metadata.generateName"))
    )
    return Rule(
        rule_id,
        summary,
        Where.CRD_RULE,
        (
            Produces("metadata.name", "INVALID", "derived from it must be no more than"),
            Produces("metadata.generateName", "INVALID", "derived from it must be no more than"),
        ),
        placements,
    )


def schema_rules() -> list[Rule]:
    """What the structural schema checks (``rules/schema.py`` writes the apiserver's own lines)."""
    return [
        Rule(
            "schema/types",
            "every field has its type",
            Where.SCHEMA,
            (Produces("**", "INVALID", "must be of type |^must be an (object|array)$"),),
        ),
        Rule(
            "schema/enums",
            "enumerated fields hold one of their values",
            Where.SCHEMA,
            (Produces("**", "NOT_SUPPORTED"),),
        ),
        Rule(
            "schema/ranges",
            "numbers within their bounds, lists and maps not empty where they must not be",
            Where.SCHEMA,
            (Produces("**", "INVALID", " in body should (be|have) "),),
        ),
        Rule("schema/required", "required fields are present", Where.SCHEMA, (Produces("**", "REQUIRED", "^$"),)),
        Rule("schema/lengths", "strings within their maximum length", Where.SCHEMA, (Produces("**", "TOO_LONG"),)),
        Rule(
            "schema/object-names",
            "the name is a DNS-1123 subdomain, generateName one with its trailing dash masked (UPDATE: no / or %)",
            Where.SCHEMA,
            (
                Produces("metadata.name", "INVALID", SUBDOMAIN_PROBLEM),
                Produces("metadata.generateName", "INVALID", SUBDOMAIN_PROBLEM),
                Produces("metadata.generateName", "INVALID", "^may not contain '[/%]'$"),
            ),
            why="the apiserver's own check of every object's metadata",
        ),
        Rule(
            "schema/labels",
            "label keys are qualified names (an optional DNS-1123 subdomain and '/' before the name), label values "
            "empty or at most 63 letters, digits, '-', '_' and '.' between alphanumerics",
            Where.SCHEMA,
            (Produces("metadata.labels", "INVALID", LABEL_PROBLEM),),
            why="the apiserver's own check of every object's metadata, before any admission webhook is asked",
        ),
    ]
