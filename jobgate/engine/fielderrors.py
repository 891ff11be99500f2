"""Field errors in the apiserver's own shape.

Users know Kubernetes' error lines (`spec.x[Key].y: Invalid value: -1: must be ...`) from
``kubectl``; keeping that exact shape, the same type strings and the same ``Status``
envelope (422 / ``Invalid`` with ``details.causes``) makes a jobgate denial read like any
other apiserver validation error.
"""

from __future__ import annotations

from jobgate.engine.values import FrozenValue, Member, set_members

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any, ClassVar


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


class ErrorType(Member):
    """The apiserver's field error types: each member's ``name``, its ``text`` shown in messages and its
    ``cause``, the type in ``status.details.causes``. An Enum's members, written out (``Member``):
    ``members()`` lists them, ``named()`` finds one by name."""

    __slots__ = ("cause", "name", "text")
    REQUIRED: ClassVar[ErrorType]
    INVALID: ClassVar[ErrorType]
    NOT_SUPPORTED: ClassVar[ErrorType]
    FORBIDDEN: ClassVar[ErrorType]
    DUPLICATE: ClassVar[ErrorType]
    NOT_FOUND: ClassVar[ErrorType]
    TOO_LONG: ClassVar[ErrorType]
    TOO_MANY: ClassVar[ErrorType]
    INTERNAL: ClassVar[ErrorType]

    def __init__(self, name: str, text: str, cause: str) -> None:
        self.name = name
        self.text = text
        self.cause = cause

    @staticmethod
    def members() -> tuple[ErrorType, ...]:
        return _ERROR_TYPES


_ERROR_TYPES = set_members(
    ErrorType,
    (
        ErrorType("REQUIRED", "Required value", "FieldValueRequired"),
        ErrorType("INVALID", "Invalid value", "FieldValueInvalid"),
        ErrorType("NOT_SUPPORTED", "Unsupported value", "FieldValueNotSupported"),
        ErrorType("FORBIDDEN", "Forbidden", "FieldValueForbidden"),
        ErrorType("DUPLICATE", "Duplicate value", "FieldValueDuplicate"),
        ErrorType("NOT_FOUND", "Not found", "FieldValueNotFound"),
        ErrorType("TOO_LONG", "Too long", "FieldValueTooLong"),
        ErrorType("TOO_MANY", "Too many", "FieldValueTooMany"),
        # A plain error of a peer's webhook that controller-runtime wraps as field.InternalError(nil, err)
        # (JobSet's): no field, shown as the apiserver shows it (``<nil>: Internal error: ...``).
        ErrorType("INTERNAL", "Internal error", "InternalError"),
    ),
)


_OMITTED: Any = object()
# Types whose message shows no value, as in k8s.io/apimachinery field.Error.ErrorBody.
_VALUELESS = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}


def format_value(value: Any) -> str:
    """A bad value the way apiserver messages print it (strings quoted, scalars bare)."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    # Imported here: only messages need json, and importing it (it compiles six regular
    # expressions) costs a one-file check more than its rules.
    import json

    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    except (TypeError, ValueError):
        return json.dumps(str(value))


class FieldError(FrozenValue):
    """One error, read-only and compared by value (:mod:`jobgate.engine.values`).

    ``rule``: the id of the rule that found it, set by the code that made it (a declaration's generated
    check, a policy's finding); "" where that code names none (``jobgate.engine.ruleids`` then finds it
    in the catalogue's table). A label, not part of the error: equality, hash and repr leave it out
    (it is not in ``FIELDS``), so that an error is the same error whoever labels it."""

    FIELDS = ("type", "path", "value", "detail")
    __slots__ = (*FIELDS, "rule")
    type: ErrorType
    path: FieldPath
    value: Any
    detail: str
    rule: str

    def __init__(
        self, type: ErrorType, path: FieldPath, value: Any = _OMITTED, detail: str = "", rule: str = ""
    ) -> None:
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "detail", detail)
        object.__setattr__(self, "rule", rule)

    def _key(self) -> tuple[ErrorType, FieldPath, Any, str]:  # written out: errors are compared per review
        return (self.type, self.path, self.value, self.detail)

    # Callable, not type[...]: ``type`` here is the field.
    def __reduce__(self) -> tuple[Callable[..., FieldError], tuple[ErrorType, FieldPath, Any, str, str]]:
        # The rule travels too (FrozenValue's reduce gives the compared fields only).
        return FieldError, (self.type, self.path, self.value, self.detail, self.rule)

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


def required(path: FieldPath, detail: str = "", rule: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, path, detail=detail, rule=rule)


def invalid(path: FieldPath, value: Any, detail: str, rule: str = "") -> FieldError:
    return FieldError(ErrorType.INVALID, path, value, detail, rule)


def not_supported(path: FieldPath, value: Any, supported: Iterable[str], rule: str = "") -> FieldError:
    return FieldError(ErrorType.NOT_SUPPORTED, path, value, _supported_values(tuple(supported)), rule)


# The same few lists are rendered for every bad entry of a big map: once each is enough. A dict
# emptied when full, not functools.lru_cache: functools is not imported for a one-file check.
_SUPPORTED_VALUES_MAX = 256
_supported_texts: dict[tuple[str, ...], str] = {}


def _supported_values(supported: tuple[str, ...]) -> str:
    text = _supported_texts.get(supported)
    if text is None:
        import json  # see format_value

        text = "supported values: " + ", ".join(json.dumps(s) for s in supported)
        if len(_supported_texts) >= _SUPPORTED_VALUES_MAX:
            _supported_texts.clear()
        _supported_texts[supported] = text
    return text


def forbidden(path: FieldPath, detail: str, rule: str = "") -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, path, detail=detail, rule=rule)


def duplicate(path: FieldPath, value: Any, rule: str = "") -> FieldError:
    return FieldError(ErrorType.DUPLICATE, path, value, "", rule)


def not_found(path: FieldPath, value: Any, detail: str = "", rule: str = "") -> FieldError:
    return FieldError(ErrorType.NOT_FOUND, path, value, detail, rule)


def too_long(path: FieldPath, limit: int, rule: str = "") -> FieldError:
    """A string longer than its schema's maxLength, in the apiserver's words."""
    return FieldError(ErrorType.TOO_LONG, path, detail=f"may not be more than {limit} bytes", rule=rule)


def too_many(path: FieldPath, count: int, limit: int, rule: str = "") -> FieldError:
    """A list longer than its schema's maxItems, in the apiserver's words."""
    return FieldError(ErrorType.TOO_MANY, path, count, f"must have at most {limit} items", rule)


# The apiserver lists every error of an Invalid status (apierrors.NewInvalid has no limit), but
# a job with 10,000 bad replica types would make a 10 MB answer that no client can show and that
# costs most of a review's time to render. A denial lists the first ones and counts the rest;
# no job of a realistic size comes near this, so its answer is the apiserver's, unabridged.
MAX_LISTED_ERRORS = 1000


def aggregate_message(errors: Sequence[FieldError]) -> str:
    """Join errors as k8s.io/apimachinery's aggregate error does: deduplicated, bracketed.

    Past ``MAX_LISTED_ERRORS`` the rest are counted, not listed.
    """
    return _aggregate([str(e) for e in errors[:MAX_LISTED_ERRORS]], len(errors) - MAX_LISTED_ERRORS)


def _aggregate(lines: list[str], not_listed: int) -> str:
    messages = list(dict.fromkeys(lines))
    if not_listed > 0:
        messages.append(f"and {not_listed} more {'error' if not_listed == 1 else 'errors'} not listed")
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"


def invalid_status(group: str, kind: str, name: str, errors: Sequence[FieldError]) -> dict[str, Any]:
    """A ``metav1.Status`` equal to what apierrors.NewInvalid builds, with at most ``MAX_LISTED_ERRORS`` causes.

    The verdict stays exact however many errors there are: only their listing is cut short.
    """
    import json  # see format_value

    qualified = f"{kind}.{group}" if group else kind
    message = f"{qualified} {json.dumps(name)} is invalid"
    # Each listed error's path and body are rendered once, for both the message and its cause.
    rendered = [(e.type.cause, e.field, e.body) for e in errors[:MAX_LISTED_ERRORS]]
    if rendered:
        lines = [f"{field}: {body}" for _, field, body in rendered]
        message += f": {_aggregate(lines, len(errors) - len(rendered))}"
    return {
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Invalid",
        "details": {
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [{"reason": cause, "message": body, "field": field} for cause, field, body in rendered],
        },
        "code": 422,
    }
