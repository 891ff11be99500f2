"""The Python meaning of the forms of the kinds with a map of replica types (KubeDL's, Kubeflow's:
``jobgate/rules/replicajobs.py``): known types, ports, run policy and the types' spelling.

Generated calls of these functions are in ``jobgate/_generated/declared/<family>.py``; see
``docs/rule-forms.md``.
"""

from __future__ import annotations

from jobgate.engine.fielderrors import (
    FieldError,
    Key,
    duplicate,
    invalid,
    not_supported,
)
from jobgate.engine.jsonpatch import PatchRecorder
from jobgate.forms.checks.common import MISSING, get
from jobgate.forms.checks.defaults import replaced
from jobgate.rules.dicts import as_int

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.fielderrors import FieldPath

    FieldSteps = tuple[str, ...]
    Condition = tuple[tuple[str, ...], Any]


def known_types(obj: Any, path: tuple[str, ...], types: tuple[str, ...], any_case: bool) -> list[FieldError]:
    """``KnownTypes``: each key of the map that is no type, in the map's order."""
    found = get(obj, path)
    if not isinstance(found, dict) or found.keys() <= set(types):
        return []
    canonical = {t.casefold(): t for t in types}
    errors: list[FieldError] = []
    for key in found:
        if key in types:
            continue
        spelled = canonical.get(key.casefold())
        at = (*path, Key(key))
        if (
            spelled is not None
            and any_case
            and any(other != key and canonical.get(other.casefold()) == spelled for other in found)
        ):
            errors.append(duplicate(at, key))
        else:
            errors.append(not_supported(at, key, list(types)))
    return errors


def with_port(
    replica: dict[str, Any],
    recorder: PatchRecorder,
    pointer: str,
    *,
    container: str,
    port: tuple[str, int],
    named: bool,
) -> dict[str, Any]:
    """``DefaultTemplatePort`` on one value of the map (``replica``, at ``pointer``): the port on the
    container named ``container`` (``named``: only there; else the first container), unless a port of
    its name is there; the value copied down to the container when it changes. Anything of an
    unexpected type is validation's."""
    template = replica.get("template")
    spec = template.get("spec") if isinstance(template, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(template, dict) or not isinstance(spec, dict) or not isinstance(containers, list):
        return replica
    target = -1
    for index, candidate in enumerate(containers):
        if isinstance(candidate, dict) and candidate.get("name") == container:
            target = index
            break
    if target < 0:
        if named or not containers:
            return replica
        target = 0
    given = containers[target]
    if not isinstance(given, dict):
        return replica
    ports = given.get("ports")
    if ports is not None and not isinstance(ports, list):
        return replica
    name, number = port
    for existing in ports or ():
        if isinstance(existing, dict) and existing.get("name") == name:
            return replica
    copied = dict(given)
    recorder.append(
        copied, "ports", {"name": name, "containerPort": number}, f"{pointer}/template/spec/containers/{target}"
    )
    changed = list(containers)
    changed[target] = copied
    return {**replica, "template": {**template, "spec": {**spec, "containers": changed}}}


def _run_policy(spec: dict[str, Any], place: str) -> tuple[dict[str, Any], FieldPath]:
    """The run policy (``RUN_POLICY_PLACES``) and its path."""
    separate = spec.get("runPolicy")
    if place == "runPolicy":
        return (separate if isinstance(separate, dict) else {}), ("spec", "runPolicy")
    if place == "either" and isinstance(separate, dict):
        return separate, ("spec", "runPolicy")
    return spec, ("spec",)


def _run_policy_value(spec: dict[str, Any], field: tuple[str, ...], place: str) -> tuple[Any, FieldPath]:
    """The run policy's field ("" read as None) and its path."""
    policy, path = _run_policy(spec, place)
    value = get(policy, field)
    return (None if value in (MISSING, "") else value), (*path, *field)


def run_policy_immutable(obj: Any, old: Any, field: tuple[str, ...], place: str, message: str) -> list[FieldError]:
    """``RunPolicyImmutable``: on UPDATE the field as it was (unset and "" alike)."""
    if old is None or not isinstance(obj.get("spec"), dict) or not isinstance(old.get("spec"), dict):
        return []
    new_value, new_path = _run_policy_value(obj["spec"], field, place)
    old_value, old_path = _run_policy_value(old["spec"], field, place)
    if new_value == old_value:
        return []
    return [invalid(new_path if new_value is not None else old_path, new_value, message)]


def run_policy_at_most_total(
    obj: Any, field: tuple[str, ...], path: tuple[str, ...], place: str, message: str
) -> list[FieldError]:
    """``RunPolicyAtMostTotal``, on the defaulted job: the replicas as they are."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    policy, at = _run_policy(spec, place)
    parent = get(policy, field[:-1])
    if not isinstance(parent, dict):
        return []
    bound = as_int(parent.get(field[-1]))
    if bound is None:
        return []
    entries = get(obj, path)
    counts = (
        [as_int(r.get("replicas")) for r in entries.values() if isinstance(r, dict)]
        if isinstance(entries, dict)
        else []
    )
    total = sum(n for n in counts if n is not None and n > 0)
    if bound <= total:
        return []
    return [invalid((*at, *field), bound, f"{message} ({total})")]


def default_type_spelling(
    obj: dict[str, Any], recorder: PatchRecorder, path: tuple[str, ...], types: tuple[str, ...], old: Any
) -> dict[str, Any]:
    """``DefaultTypeSpelling``: ``worker``/``WORKER`` -> ``Worker`` in a copy of the map, unless that
    would overwrite an existing key; ``old``: the stored job (None on CREATE)."""
    entries = get(obj, path)
    if not isinstance(entries, dict):
        return obj
    previous = get(old, path) if old is not None else None
    return replaced(obj, path, respelled_types(entries, recorder, "/" + "/".join(path), types, previous))


def respelled_types(
    entries: dict[str, Any], recorder: PatchRecorder, pointer: str, types: tuple[str, ...], previous: Any
) -> dict[str, Any]:
    """``DefaultTypeSpelling`` on the map itself (``entries``, at the JSON pointer ``pointer``; ``previous``:
    the stored job's map, or anything else when there is none): its renamed copy."""
    if entries.keys() <= set(types):
        # Every key spelled as its type (the usual job): nothing to rename, nothing stale.
        return dict(entries)
    spelled = {t.casefold(): t for t in types}
    canonical_of = {
        key: canonical
        for key in entries
        if isinstance(key, str) and (canonical := spelled.get(key.casefold())) not in (None, key)
    }
    # Two other spellings of one type (``worker`` and ``WORKER``): neither is renamed, whichever
    # came first in the object; both are duplicates then.
    spellings: dict[str, int] = {}
    for canonical in canonical_of.values():
        spellings[canonical] = spellings.get(canonical, 0) + 1
    canonical_of = {key: canonical for key, canonical in canonical_of.items() if spellings[canonical] == 1}
    stale = {
        canonical
        for key, canonical in canonical_of.items()
        if canonical in entries
        and isinstance(previous, dict)
        and key not in previous
        and previous.get(canonical) == entries[canonical]
    }
    for canonical in stale:
        recorder.remove(pointer, canonical)
    renamed: dict[str, Any] = {}
    for key, entry in entries.items():
        if key in stale:
            continue
        canonical = canonical_of.get(key)
        if canonical is not None and (canonical not in entries or canonical in stale) and canonical not in renamed:
            recorder.move(pointer, key, canonical)
            renamed[canonical] = entry
        else:
            renamed[key] = entry
    return renamed
