"""Rules written for a CRD carried into a ValidatingAdmissionPolicy over a kind whose CRD is not
jobgate's (Kubeflow's): each CRD-rule placement (a ``Validation`` on ``self``, the value at its
location) becomes a policy validation on ``object.<location>``, every map value and list item on the
way visited (``first_message``: the first violation's message, '' when none), with the same message.

A policy's denial names no field, so the message carries it, as the webhook writes it: the location
and the validation's ``fieldPath``, then the error type (the validation's ``reason``, or the type its
message already begins with: ``Duplicate value: "x"``, ``Not found: "x": ...``), then the message.
A rule on a list or a map is reported there, as its CRD rule is (it cannot name the item).

Written against the records, not their text: whatever makes a rule's placements (a hand-written
generator or a declaration) gives its policy validations here.
"""

from __future__ import annotations

import re

from jobgate.forms.catalogue import (
    Location,
    PolicyValidation,
    Rule,
    Validation,
    Where,
    cel_string,
    first_message,
)

# The error type a CRD validation's reason gives (apiextensions: FieldValueInvalid when none).
REASON_TYPES = {
    "": "Invalid value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueRequired": "Required value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueDuplicate": "Duplicate value",
}
# A message that begins with its own type (the webhook's words): the reason's is not added.
OWN_TYPES = ("Duplicate value: ", "Not found: ", "Unsupported value: ", "Required value: ", "Forbidden: ")


class NotCarried(ValueError):
    """A placement that has no meaning in a policy (a transition rule reads ``oldSelf``)."""


def placement_check(at: Location, validation: Validation) -> PolicyValidation:
    """The validation placed at ``at`` as a policy validation: CEL of '<field>: <type>: <message>' for
    the first value at ``at`` that breaks it, '' when none."""
    if re.search(r"\boldSelf\b", f"{validation.rule} {validation.message_expression}"):
        raise NotCarried(f"a transition rule at {'/'.join(at) or '(root)'}: its stored value has no place to be read")
    field_path = re.sub(r"\['([^']*)'\]", r"[\1]", validation.field_path)
    literal = validation.message_expression or cel_string(validation.message)
    own = any(literal.startswith("'" + text) for text in OWN_TYPES)
    joint = "': '" if own else cel_string(f": {REASON_TYPES[validation.reason]}: ")

    def body(value: str, path: str) -> str:
        def bound(text: str) -> str:
            return re.sub(r"\bself\b", value, text)

        message = bound(validation.message_expression) if validation.message_expression else literal
        if path == "''":  # the object's root: its fields have no leading dot
            field = cel_string(field_path.lstrip("."))
        else:
            field = f"{path} + {cel_string(field_path)}" if field_path else path
        return f"(({bound(validation.rule)}) ? '' : {field} + {joint} + {message})"

    return PolicyValidation(first_message(at, body))


def carried(rule: Rule, why: str) -> Rule:
    """The rule as a ValidatingAdmissionPolicy's: its CRD-rule placements as policy validations
    (schema keywords have no policy form and are left out), its own policy validations kept."""
    checks = [placement_check(p.at, p.validation) for p in rule.placements if p.validation is not None]
    return Rule(rule.id, rule.summary, Where.POLICY, rule.produces, policy=(*rule.policy, *checks), why=why)
