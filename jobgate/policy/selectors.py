"""A metav1 LabelSelector matcher (``matchLabels`` + ``matchExpressions``), as apimachinery's
``metav1.LabelSelectorAsSelector`` reads one.

Semantics kept from Kubernetes: an absent selector is handled by the caller (for policies: every
namespace); an empty selector ``{}`` matches everything; the requirements are ANDed; ``NotIn`` and
``DoesNotExist`` match objects that do not have the key at all. An unknown operator or a malformed
selector matches nothing (fail closed for limits: better a policy that applies nowhere than one
whose scope is guessed) and :func:`selector_errors` says why, for the policy's status.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def selector_errors(selector: Any) -> list[str]:
    """What is wrong with a LabelSelector (empty when it is well formed)."""
    if not isinstance(selector, Mapping):
        return ["must be an object"]
    errors: list[str] = []
    labels = selector.get("matchLabels")
    if labels is not None and (not isinstance(labels, Mapping) or not all(isinstance(v, str) for v in labels.values())):
        errors.append("matchLabels must map keys to strings")
    expressions = selector.get("matchExpressions")
    if expressions is None:
        return errors
    if not isinstance(expressions, list):
        return [*errors, "matchExpressions must be a list"]
    for i, expr in enumerate(expressions):
        if not isinstance(expr, Mapping) or not isinstance(expr.get("key"), str):
            errors.append(f"matchExpressions[{i}]: must have a key")
            continue
        op, values = expr.get("operator"), expr.get("values") or []
        if op not in OPERATORS:
            errors.append(f"matchExpressions[{i}].operator: {op!r} is not one of {', '.join(OPERATORS)}")
        elif op in ("In", "NotIn") and not values:
            # apimachinery: "for 'in', 'notin' operators, values set can't be empty"
            errors.append(f"matchExpressions[{i}].values: must be non-empty for {op}")
        elif op in ("Exists", "DoesNotExist") and values:
            errors.append(f"matchExpressions[{i}].values: must be empty for {op}")
    return errors


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """Whether ``labels`` satisfy ``selector``; ``None`` (absent) matches everything."""
    if selector is None:
        return True
    if selector_errors(selector):
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True
