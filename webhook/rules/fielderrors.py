"""Field errors in the apiserver's own shape.

Users know Kubernetes' error lines (`spec.x[Key].y: Invalid value: -1: must be ...`) from
``kubectl``; keeping that exact shape, the same type strings and the same ``Status``
envelope (422 / ``Invalid`` with ``details.causes``) makes a jobgate denial read like any
other apiserver validation error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any


class Key(str):
    """A map key inside a field path, rendered as ``[key]`` rather than ``.key``."""

    __slots__ = ()


PathSegment = str | int
FieldPath = tuple[PathSegment, ...]


def render_path(path: FieldPath) -> str:
    parts: list[str] = []
    for segment in path:
        if isinstance(segment, Key | int):
            parts.append(f"[{segment}]")
        elif parts:
            parts.append(f".{segment}")
        else:
            parts.append(segment)
    return "".join(parts)


class ErrorType(Enum):
    """(text shown in messages, cause type in ``status.details.causes``)."""

    REQUIRED = ("Required value", "FieldValueRequired")
    INVALID = ("Invalid value", "FieldValueInvalid")
    NOT_SUPPORTED = ("Unsupported value", "FieldValueNotSupported")
    FORBIDDEN = ("Forbidden", "FieldValueForbidden")
    DUPLICATE = ("Duplicate value", "FieldValueDuplicate")
    NOT_FOUND = ("Not found", "FieldValueNotFound")
    TOO_LONG = ("Too long", "FieldValueTooLong")

    @property
    def text(self) -> str:
        return self.value[0]

    @property
    def cause(self) -> str:
        return self.value[1]


_OMITTED: Any = object()
# Types whose message shows no value, as in k8s.io/apimachinery field.Error.ErrorBody.
_VALUELESS = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG}


def format_value(value: Any) -> str:
    """A bad value the way apiserver messages print it (strings quoted, scalars bare)."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    except (TypeError, ValueError):
        return json.dumps(str(value))


@dataclass(frozen=True, slots=True)
class FieldError:
    type: ErrorType
    path: FieldPath
    value: Any = _OMITTED
    detail: str = ""

    @property
    def field(self) -> str:
        return render_path(self.path)

    @property
    def body(self) -> str:
        if self.type in _VALUELESS or self.value is _OMITTED:
            text = self.type.text
        else:
            text = f"{self.type.text}: {format_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body}"


def required(path: FieldPath, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, path, detail=detail)


def invalid(path: FieldPath, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, path, value, detail)


def not_supported(path: FieldPath, value: Any, supported: Iterable[str]) -> FieldError:
    listed = ", ".join(json.dumps(s) for s in supported)
    return FieldError(ErrorType.NOT_SUPPORTED, path, value, f"supported values: {listed}")


def forbidden(path: FieldPath, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, path, detail=detail)


def duplicate(path: FieldPath, value: Any) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, path, value)


def not_found(path: FieldPath, value: Any, detail: str = "") -> FieldError:
    return FieldError(ErrorType.NOT_FOUND, path, value, detail)


def aggregate_message(errors: Sequence[FieldError]) -> str:
    """Join errors as k8s.io/apimachinery's aggregate error does: deduplicated, bracketed."""
    messages = list(dict.fromkeys(str(e) for e in errors))
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"


def invalid_status(group: str, kind: str, name: str, errors: Sequence[FieldError]) -> dict[str, Any]:
    """A ``metav1.Status`` equal to what apierrors.NewInvalid builds."""
    qualified = f"{kind}.{group}" if group else kind
    message = f"{qualified} {json.dumps(name)} is invalid"
    if errors:
        message += f": {aggregate_message(errors)}"
    return {
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Invalid",
        "details": {
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [{"reason": e.type.cause, "message": e.body, "field": e.field} for e in errors],
        },
        "code": 422,
    }
