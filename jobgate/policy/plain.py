"""Policy objects checked without pydantic, for ``jobgate validate --policies`` and its kin.

Loading pydantic and building the models of :mod:`.models` costs a run more than checking a
thousand jobs, for files that are nearly always exports of policies the apiserver already
admitted. :func:`parse_policy_plain` accepts a policy only when every value has exactly the JSON type
the model declares (no coercion: ``"5"`` for an integer, ``5.0`` for an integer, a tuple for a
list all go to the models) and satisfies every bound and rule of the model, and then gives back
the very dict :func:`.models.parse_policy` gives (defaults filled, ``None`` dropped, the models'
field order). Anything else, valid or not, returns None: the caller asks the models, which decide
and word the error. So this module can make a run faster, never change what it accepts or says;
``tests/unit/test_policy_plain.py`` holds it to the models, case by case.
"""

from __future__ import annotations

import math
import re

from jobgate.families import FAMILY_NAMES

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

GROUP = "policy.jobgate.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
CLUSTER_KIND = "ClusterTrainingJobPolicy"
NAMESPACED_KIND = "TrainingJobPolicy"
POLICY_KINDS = (CLUSTER_KIND, NAMESPACED_KIND)

# The families a policy may name (``match.families``): every registered one, in registration order.
FAMILIES = FAMILY_NAMES
ACTIONS = ("Deny", "Warn", "Audit")
EXISTING = ("Allow", "Deny")
FORBIDDEN_ITEMS = ("hostNetwork", "privileged", "hostPath", "hostPID", "hostIPC")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
CONDITION_STATUSES = ("True", "False", "Unknown")

# Bounds on every list and string: the apiserver estimates each CEL rule's worst-case cost from
# them and refuses a CRD whose rules could exceed the budget, so nothing here may be unbounded.
MAX_LIST = 64
MAX_NAME = 253
INT32_MAX = 2**31 - 1

# apimachinery's qualified name (label keys) and label value, with RE2-compatible syntax (CEL).
LABEL_KEY_RE = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE_RE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"
# An image registry entry: a host (optionally with a port), alone (exact host) or followed by
# "/" and path components each ending in "/" (a prefix). "ghcr.io/org" without the final "/"
# would also match "ghcr.io/org-evil/..." under a plain prefix test, hence the rule.
REGISTRY_RE = (
    r"^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?(:[0-9]{1,5})?"
    r"(/([a-z0-9]+([._-]+[a-z0-9]+)*/)*)?$"
)
# A GPU resource name or pattern: a qualified resource name, optionally ending in "*".
GPU_NAME_RE = r"^[a-zA-Z0-9]([-a-zA-Z0-9_./]*[a-zA-Z0-9.*/-])?$"
# A DeviceClass name (a DNS subdomain) or pattern, optionally ending in "*".
DEVICE_CLASS_RE = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9.*-])?$"

# The patterns are compiled only for a value the plain tests below cannot settle: compiling them
# costs a one-file check more than reading fifty policies. Each plain test accepts a subset of what
# its pattern accepts (tests/unit/test_policy_plain.py checks it against the pattern).
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_NAME_CHARS = _ALNUM | frozenset("-_.")
_HOST_CHARS = _ALNUM | frozenset("-.")


def _plain_name(text: str) -> bool:
    """``[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?``: a label value or key name, no prefix."""
    return 0 < len(text) <= 63 and text[0] in _ALNUM and text[-1] in _ALNUM and all(c in _NAME_CHARS for c in text)


def _plain_host(text: str) -> bool:
    """``[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?``: a registry host without a port."""
    return len(text) > 0 and text[0] in _ALNUM and text[-1] in _ALNUM and all(c in _HOST_CHARS for c in text)


def label_key_valid(key: str) -> bool:
    return _plain_name(key) or re.match(LABEL_KEY_RE, key) is not None


def label_value_valid(value: str) -> bool:
    return value == "" or _plain_name(value) or re.match(LABEL_VALUE_RE, value) is not None


def registry_valid(entry: str) -> bool:
    host, _, rest = entry.partition("/")
    if _plain_host(host) and not rest:
        return True  # "host" or "host/"
    return re.match(REGISTRY_RE, entry) is not None


def gpu_name_valid(name: str) -> bool:
    """The pattern, and a ``*`` only at the end."""
    if "*" in name[:-1]:
        return False
    body = name[:-1] if name.endswith("*") and len(name) > 1 else name
    if body and body[0] in _ALNUM and body[-1] in _ALNUM and all(c in _NAME_CHARS or c == "/" for c in body):
        return True
    return re.match(GPU_NAME_RE, name) is not None


def device_class_valid(name: str) -> bool:
    """The pattern, and a ``*`` only at the end."""
    return "*" not in name[:-1] and len(name) <= 253 and re.match(DEVICE_CLASS_RE, name) is not None


class _Unsure(Exception):
    """Not plainly valid: the models decide."""


def _fields(value: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if type(value) is not dict or not value.keys() <= set(allowed):
        raise _Unsure
    return value


def _text(value: Any, low: int = 0, high: int | None = None) -> str:
    if type(value) is not str or len(value) < low or (high is not None and len(value) > high):
        raise _Unsure
    return value


def _name(value: Any) -> str:
    return _text(value, 1, MAX_NAME)


def _integer(value: Any, low: int | None = None, high: int | None = None) -> int:
    if type(value) is not int or (low is not None and value < low) or (high is not None and value > high):
        raise _Unsure
    return value


def _one_of(value: Any, choices: tuple[str, ...]) -> str:
    if type(value) is not str or value not in choices:
        raise _Unsure
    return value


def _items(value: Any, high: int) -> list[Any]:
    if type(value) is not list or len(value) > high:
        raise _Unsure
    return value


def _string_map(value: Any, high: int, value_high: int) -> dict[str, str]:
    if type(value) is not dict or len(value) > high:
        raise _Unsure
    for key, item in value.items():
        if type(key) is not str:
            raise _Unsure
        _text(item, 0, value_high)
    return dict(value)


def _unique(values: list[Any]) -> None:
    if len(values) != len(set(values)):
        raise _Unsure


def _put(out: dict[str, Any], source: dict[str, Any], key: str, check: Any) -> None:
    """``out[key]`` = the checked value of ``source[key]`` unless absent or None (``exclude_none``)."""
    value = source.get(key)
    if value is not None:
        out[key] = check(value)


def _selector(value: Any) -> dict[str, Any]:
    source = _fields(value, ("matchLabels", "matchExpressions"))
    out: dict[str, Any] = {}
    _put(out, source, "matchLabels", lambda v: _string_map(v, MAX_LIST, 63))
    _put(out, source, "matchExpressions", lambda v: [_requirement(e) for e in _items(v, MAX_LIST)])
    return out


def _requirement(value: Any) -> dict[str, Any]:
    source = _fields(value, ("key", "operator", "values"))
    out = {"key": _name(source.get("key")), "operator": _one_of(source.get("operator"), OPERATORS)}
    _put(out, source, "values", lambda v: [_name(x) for x in _items(v, MAX_LIST)])
    values = out.get("values")
    if (out["operator"] in ("In", "NotIn")) != bool(values):
        raise _Unsure  # values must be non-empty for In and NotIn, empty for Exists and DoesNotExist
    return out


def _kind_ref(value: Any) -> dict[str, Any]:
    source = _fields(value, ("group", "kind"))
    return {"group": _name(source.get("group")), "kind": _name(source.get("kind"))}


def _match(value: Any) -> dict[str, Any]:
    source = _fields(value, ("families", "kinds", "objectSelector"))
    out: dict[str, Any] = {}
    _put(out, source, "families", lambda v: [_one_of(f, FAMILIES) for f in _items(v, len(FAMILIES))])
    _put(out, source, "kinds", lambda v: [_kind_ref(k) for k in _items(v, MAX_LIST)])
    _put(out, source, "objectSelector", _selector)
    return out


def _labels(value: Any) -> dict[str, str]:
    labels = _string_map(value, MAX_LIST, 63)
    for key, item in labels.items():
        if not label_key_valid(key) or not label_value_valid(item):
            raise _Unsure
    return labels


def _defaults(value: Any) -> dict[str, Any]:
    source = _fields(
        value,
        (
            "queue",
            "priorityClassName",
            "schedulerName",
            "ttlSecondsAfterFinished",
            "activeDeadlineSeconds",
            "labels",
            "kueueQueueName",
        ),
    )
    out: dict[str, Any] = {}
    _put(out, source, "queue", _name)
    _put(out, source, "priorityClassName", _name)
    _put(out, source, "schedulerName", _name)
    _put(out, source, "ttlSecondsAfterFinished", lambda v: _integer(v, 0, INT32_MAX))
    _put(out, source, "activeDeadlineSeconds", lambda v: _integer(v, 1))
    _put(out, source, "labels", _labels)
    _put(out, source, "kueueQueueName", _name)
    return out


def _gpu_resource(value: Any, valid: Any = gpu_name_valid) -> dict[str, Any]:
    source = _fields(value, ("name", "weight"))
    name = _name(source.get("name"))
    if not valid(name):
        raise _Unsure
    weight = source.get("weight", 1.0)
    # 0 is allowed: it takes a name off the built-in list.
    if type(weight) not in (int, float) or not math.isfinite(weight) or not weight >= 0:
        raise _Unsure
    return {"name": name, "weight": float(weight)}


_LIFETIME_LIMITS = ("maxTTLSecondsAfterFinished", "maxActiveDeadlineSeconds")
_LIMIT_INTS = (
    ("maxReplicasPerRole", INT32_MAX),
    ("maxReplicasPerJob", INT32_MAX),
    ("maxGPUsPerPod", INT32_MAX),
    ("maxGPUsPerJob", INT32_MAX),
)


def _limits(value: Any) -> dict[str, Any]:
    source = _fields(value, (*(name for name, _ in _LIMIT_INTS), "gpuResources", "gpuDeviceClasses", *_LIFETIME_LIMITS))
    out: dict[str, Any] = {}
    for name, high in _LIMIT_INTS:
        _put(out, source, name, lambda v, high=high: _integer(v, 0, high))
    _put(out, source, "gpuResources", lambda v: [_gpu_resource(g) for g in _items(v, MAX_LIST)])
    _put(out, source, "gpuDeviceClasses", lambda v: [_gpu_resource(g, device_class_valid) for g in _items(v, MAX_LIST)])
    _put(out, source, "maxTTLSecondsAfterFinished", lambda v: _integer(v, 0, INT32_MAX))
    _put(out, source, "maxActiveDeadlineSeconds", lambda v: _integer(v, 0))
    for low, high in (("maxGPUsPerPod", "maxGPUsPerJob"), ("maxReplicasPerRole", "maxReplicasPerJob")):
        if low in out and high in out and out[low] > out[high]:
            raise _Unsure
    _unique([g["name"] for g in out.get("gpuResources", [])])
    _unique([g["name"] for g in out.get("gpuDeviceClasses", [])])
    return out


def _required_label(value: Any) -> dict[str, Any]:
    source = _fields(value, ("key", "values"))
    key = _name(source.get("key"))
    if not label_key_valid(key):
        raise _Unsure
    out: dict[str, Any] = {"key": key}
    _put(out, source, "values", lambda v: [_text(x, 0, 63) for x in _items(v, MAX_LIST)])
    return out


def _boolean(value: Any) -> bool:
    if type(value) is not bool:
        raise _Unsure
    return value


def _names(value: Any) -> list[str]:
    names = [_name(v) for v in _items(value, MAX_LIST)]
    _unique(names)
    return names


def _runtimes(value: Any) -> dict[str, Any]:
    source = _fields(value, RUNTIME_LISTS)
    out: dict[str, Any] = {}
    for name in RUNTIME_LISTS:
        _put(out, source, name, _names)
    return out


RUNTIME_LISTS = ("clusterTrainingRuntimes", "trainingRuntimes")


def _require(value: Any) -> dict[str, Any]:
    source = _fields(
        value,
        (
            "labels",
            "ttlSecondsAfterFinished",
            "activeDeadlineSeconds",
            "fitsQueue",
            "queues",
            "priorityClassNames",
            "schedulerNames",
            "imageRegistries",
            "forbid",
            "runtimes",
        ),
    )
    out: dict[str, Any] = {}
    _put(out, source, "labels", lambda v: [_required_label(x) for x in _items(v, MAX_LIST)])
    _put(out, source, "ttlSecondsAfterFinished", _boolean)
    _put(out, source, "activeDeadlineSeconds", _boolean)
    _put(out, source, "fitsQueue", _boolean)
    for name in ("queues", "priorityClassNames", "schedulerNames", "imageRegistries"):
        _put(out, source, name, _names)
    _put(out, source, "forbid", lambda v: [_one_of(x, FORBIDDEN_ITEMS) for x in _items(v, len(FORBIDDEN_ITEMS))])
    _put(out, source, "runtimes", _runtimes)
    _unique(out.get("forbid", []))
    _unique([label["key"] for label in out.get("labels", [])])
    if not all(registry_valid(entry) for entry in out.get("imageRegistries", [])):
        raise _Unsure
    return out


_SPEC_FIELDS = (
    "match",
    "priority",
    "enforcementAction",
    "existingViolations",
    "exceptions",
    "defaults",
    "limits",
    "require",
)


def _spec(value: Any, cluster: bool) -> dict[str, Any]:
    source = _fields(value, (*_SPEC_FIELDS, "namespaceSelector") if cluster else _SPEC_FIELDS)
    out: dict[str, Any] = {}
    _put(out, source, "match", _match)
    out["priority"] = _integer(source.get("priority", 0), -(2**31), INT32_MAX)
    out["enforcementAction"] = _one_of(source.get("enforcementAction", "Deny"), ACTIONS)
    out["existingViolations"] = _one_of(source.get("existingViolations", "Allow"), EXISTING)
    out["exceptions"] = _one_of(source.get("exceptions", "Allow"), EXISTING)
    _put(out, source, "defaults", _defaults)
    _put(out, source, "limits", _limits)
    _put(out, source, "require", _require)
    if cluster:
        _put(out, source, "namespaceSelector", _selector)
    defaults, limits = out.get("defaults", {}), out.get("limits", {})
    for field, limit in (
        ("ttlSecondsAfterFinished", "maxTTLSecondsAfterFinished"),
        ("activeDeadlineSeconds", "maxActiveDeadlineSeconds"),
    ):
        if field in defaults and limit in limits and defaults[field] > limits[limit]:
            raise _Unsure
    return out


def _condition(value: Any) -> dict[str, Any]:
    source = _fields(value, ("type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"))
    out: dict[str, Any] = {
        "type": _name(source.get("type")),
        "status": _one_of(source.get("status"), CONDITION_STATUSES),
    }
    _put(out, source, "reason", lambda v: _text(v, 0, 1024))
    _put(out, source, "message", lambda v: _text(v, 0, 32768))
    _put(out, source, "lastTransitionTime", _text)
    _put(out, source, "observedGeneration", lambda v: _integer(v, 0))
    return out


def _violation(value: Any) -> dict[str, Any]:
    source = _fields(value, ("namespace", "name", "kind", "apiVersion", "message"))
    out: dict[str, Any] = {}
    _put(out, source, "namespace", lambda v: _text(v, 0, MAX_NAME))
    out["name"] = _name(source.get("name"))
    out["kind"] = _name(source.get("kind"))
    out["apiVersion"] = _name(source.get("apiVersion"))
    out["message"] = _text(source.get("message"), 0, 4096)
    return out


def _status(value: Any) -> dict[str, Any]:
    source = _fields(value, ("conditions", "observedGeneration", "matchedNamespaces", "totalViolations", "violations"))
    out: dict[str, Any] = {}
    _put(out, source, "conditions", lambda v: [_condition(c) for c in _items(v, MAX_LIST)])
    _put(out, source, "observedGeneration", lambda v: _integer(v, 0))
    _put(out, source, "matchedNamespaces", lambda v: _integer(v, 0, INT32_MAX))
    _put(out, source, "totalViolations", lambda v: _integer(v, 0, INT32_MAX))
    _put(out, source, "violations", lambda v: [_violation(x) for x in _items(v, 100)])
    return out


def _copied(value: Any) -> Any:
    """A deep copy of what a reader gives (dicts, lists, scalars), without loading ``copy``."""
    if type(value) is dict:
        return {key: _copied(item) for key, item in value.items()}
    if type(value) is list:
        return [_copied(item) for item in value]
    if value is None or type(value) in (str, int, float, bool):
        return value
    import copy

    return copy.deepcopy(value)


def parse_policy_plain(obj: Any) -> dict[str, Any] | None:
    """What :func:`.models.parse_policy` gives for ``obj`` when ``obj`` is plainly a valid policy;
    None when the models must decide (see the module docstring)."""
    try:
        source = _fields(obj, ("apiVersion", "metadata", "status", "kind", "spec"))
        kind = _one_of(source.get("kind"), POLICY_KINDS)
        out: dict[str, Any] = {"apiVersion": _one_of(source.get("apiVersion", API_VERSION), (API_VERSION,))}
        metadata = source.get("metadata", {})
        if type(metadata) is not dict or not all(type(key) is str for key in metadata):
            raise _Unsure
        out["metadata"] = _copied(metadata)
        _put(out, source, "status", _status)
        out["kind"] = kind
        out["spec"] = _spec(source.get("spec", {}), kind == CLUSTER_KIND)
    except _Unsure:
        return None
    return out
