"""Platform policy defaults in the apiserver: MutatingAdmissionPolicies with ``paramKind``.

Kubernetes 1.36 serves MutatingAdmissionPolicy as ``admissionregistration.k8s.io/v1`` (the feature
gate ``MutatingAdmissionPolicy`` is GA and on by default; 1.34-1.35 had v1beta1 behind the gate and
``--runtime-config``). The apiserver runs every MAP before any ValidatingAdmissionPolicy, so with
``manifests/policy-maps`` beside ``manifests/policy-vaps`` a job whose policy default satisfies a
requirement (``defaults.queue`` with ``require.queues``, a default label with a required label, a
default TTL with ``require.ttlSecondsAfterFinished``) is admitted without the webhook.

For every job kind (:mod:`jobgate.policy.fieldmap`) and each policy kind, one policy and its binding,
selected as :mod:`.policy_vap` selects (``paramRef.selector: {}``, ``parameterNotFoundAction: Allow``,
the binding skipping kube-system and jobgate-system; ``spec.match`` and a cluster policy's
``namespaceSelector`` evaluated in the ``applies`` variable). CREATE only, whatever the param's
``enforcementAction`` (defaults are not enforcement). One JSON Patch per param writes what
:func:`jobgate.policy.check.policy_defaults` writes for a policy alone:

- each of ``queue``, ``priorityClassName``, ``schedulerName``, ``ttlSecondsAfterFinished``,
  ``activeDeadlineSeconds`` the param gives and the kind has, where the field map places it: a
  job-level field only when unset, the missing objects on the way created first (once, so that two
  defaults under one object both land); a pod-template field in each group whose template has a
  ``spec`` without it;
- ``defaults.labels`` the job's labels lack, and on the kinds Kueue integrates the
  ``kueue.x-k8s.io/queue-name`` label from ``kueueQueueName`` (beating a same-key ``defaults.labels``).

Where the webhook's behaviour varies by kind, the generator asks the engine rather than repeating
it (:func:`_write_rule`): which object must already exist before a default is written under it
(whether a T9k queue needs ``spec.scheduler.t9kScheduler`` first, as creating it switches the job to
T9k's scheduler), and which value counts as unset (Volcano's schema ``queue: default``). A change of
that behaviour in jobgate.policy.check changes the generated policies: regenerate them.

What a MAP cannot do (docs/policy-enforcement.md): the apiserver evaluates each (policy, binding,
param) alone and in no specified order (the policies of a hook come from a Go map, a binding's params
from an informer's list), and each param sees the job as the previous ones left it. So when one
policy defaults a field, or every matching policy gives the same value, the result is the webhook's;
when matching policies give *different* values for one field, the first param evaluated wins, not
the namespaced one or the higher ``priority``, and an equal-priority conflict writes one value where
the webhook writes none. Likewise a field the family's own MutatingAdmissionPolicy
(``manifests/mutating-policies``) also defaults (Volcano's ``schedulerName``, KubeDL XGBoostJob's
``ttlSecondsAfterFinished``) keeps the family's value when that policy runs first; the webhook writes
the platform's first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jobgate.generate.policy_vap import EXCLUDED_NAMESPACES, PREFIX, SCOPES, _has, _labels, _q, _selector
from jobgate.policy.fieldmap import KUEUE_LABEL, TEMPLATE, VOLCANO_SCHEMA_DEFAULT_QUEUE, KindMap
from jobgate.policy.kinds import KINDS
from jobgate.policy.models import API_VERSION, CLUSTER_KIND

# The defaults at a field of the job, in the order jobgate.policy.check writes them; then the labels.
DEFAULT_FIELDS = ("queue", "priorityClassName", "schedulerName", "ttlSecondsAfterFinished", "activeDeadlineSeconds")
_DEFAULTS = "params.spec.defaults"
# Values the probes give a default: any value of the field's type.
_PROBE_VALUE: dict[str, Any] = {
    "queue": "probe-q",
    "priorityClassName": "probe-pc",
    "schedulerName": "probe-sched",
    "ttlSecondsAfterFinished": 7,
    "activeDeadlineSeconds": 9,
}


def _pointer(path: Iterable[str]) -> str:
    """A JSON pointer of static segments."""
    return "".join("/" + str(s).replace("~", "~0").replace("/", "~1") for s in path)


def _escaped(cel: str) -> str:
    """A CEL string escaped as one JSON pointer token."""
    return f"{cel}.replace('~', '~0').replace('/', '~1')"


def _patch(path: str, value: str) -> str:
    """A JSONPatch ``add`` (``path``: a CEL string): it creates the member or replaces its value."""
    return f"JSONPatch{{op: 'add', path: {path}, value: {value}}}"


def _given(field: str) -> str:
    return f"has({_DEFAULTS}) && has({_DEFAULTS}.{field})"


# --- the engine's behaviour, asked --------------------------------------------------------------------


def _probe(kmap: KindMap, field: str, job: dict[str, Any]) -> list[tuple[list[str | int], object]]:
    """What jobgate.policy.check.policy_defaults writes into ``job`` for one policy defaulting ``field``."""
    from jobgate.policy.check import policy_defaults
    from jobgate.policy.resolve import effective_policy

    policy = {
        "apiVersion": API_VERSION,
        "kind": CLUSTER_KIND,
        "metadata": {"name": "probe"},
        "spec": {"defaults": {field: _PROBE_VALUE[field]}},
    }
    job = {"apiVersion": f"{kmap.group}/probe", "kind": kmap.kind, "metadata": {"name": "probe"}, **job}
    effective = effective_policy([policy], "probe", {}, job)
    return policy_defaults(job, kmap.family, effective, kmap)


def _nested(path: tuple[str, ...], leaf: Any = None) -> dict[str, Any]:
    """``{path[0]: {path[1]: … {}}}`` (the innermost ``leaf`` when given: the whole path set)."""
    out: dict[str, Any] = {}
    node = out
    for i, step in enumerate(path):
        last = i == len(path) - 1
        node[step] = leaf if last and leaf is not None else {}
        node = node[step]
    return out


class _WriteRule:
    """How the engine writes one job-level default of one kind at one place: the shortest part of
    the path that must already exist (None: none, every missing object is created), and a value
    that counts as unset (None: none)."""

    def __init__(self, must_exist: tuple[str, ...] | None, unset_value: Any) -> None:
        self.must_exist, self.unset_value = must_exist, unset_value


def _write_rule(kmap: KindMap, field: str, base: dict[str, Any], path: tuple[str, ...]) -> _WriteRule:
    """Asked of the engine: the shortest prefix of ``path`` that, present (as empty objects) in the
    job ``base``, lets the default be written; and whether a job holding Volcano's schema default
    there is given the policy's value."""
    must_exist: tuple[str, ...] | None = None
    for depth in range(len(path)):
        job = _merge(base, _nested(path[:depth]))
        if _probe(kmap, field, job):
            must_exist = path[:depth] if depth > 1 else None  # the spec itself is never required
            break
    else:
        raise ValueError(f"{kmap.group}/{kmap.kind}: the engine writes no {field} default at {'.'.join(path)}")
    unset_value = None
    if isinstance(_PROBE_VALUE[field], str):
        held = _merge(base, _nested(path, VOLCANO_SCHEMA_DEFAULT_QUEUE))
        if _probe(kmap, field, held):
            unset_value = VOLCANO_SCHEMA_DEFAULT_QUEUE
    return _WriteRule(must_exist, unset_value)


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        out[key] = _merge(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out


# --- one kind ------------------------------------------------------------------------------------------


class _Write:
    """One job-level default at a static path, written when ``when`` holds (CEL), a policy variable
    ``name`` (read by the default and by each object it may create on the way)."""

    def __init__(self, name: str, path: tuple[str, ...], value: str, when: str, exists: int) -> None:
        self.name, self.path, self.value, self.when = name, path, value, when
        self.exists = exists  # how many steps of the path are present whenever it is written

    @property
    def variable(self) -> str:
        return f"variables.{self.name}"


def _job_level_writes(kmap: KindMap) -> list[_Write]:
    writes: list[_Write] = []
    for field in DEFAULT_FIELDS:
        locator = kmap.locator(field)
        if locator is None or locator == TEMPLATE:
            continue
        # A path that depends on the job (a KubeDL MPIJob keeps its RunPolicy under spec.runPolicy
        # when it has one): the place for each shape, chosen by the shape.
        plain = tuple(str(s) for s in locator({"spec": {}}))  # type: ignore[operator]
        run_policy = tuple(str(s) for s in locator({"spec": {"runPolicy": {}}}))  # type: ignore[operator]
        if plain == run_policy:
            places = [("true", {}, plain)]
        else:
            has_run_policy = _has("object", ("spec", "runPolicy"))
            places = [(f"!{has_run_policy}", {}, plain), (has_run_policy, {"spec": {"runPolicy": {}}}, run_policy)]
        for n, (shape, base, path) in enumerate(places):
            rule = _write_rule(kmap, field, base, path)
            present = _has("object", path)
            unset = f"!{present}"
            if rule.unset_value is not None:
                unset = f"({unset} || {'.'.join(('object', *path))} == {_q(rule.unset_value)})"
            conditions = [c for c in (shape, _given(field)) if c != "true"]
            if rule.must_exist:
                conditions.append(_has("object", rule.must_exist))
            conditions.append(unset)
            name = f"write{field[0].upper()}{field[1:]}{n if len(places) > 1 else ''}"
            exists = len(rule.must_exist) if rule.must_exist else 0
            writes.append(_Write(name, path, f"{_DEFAULTS}.{field}", " && ".join(conditions), exists))
    return writes


def _job_level_patch(writes: list[_Write]) -> list[str]:
    """The missing objects on the way, each created once (outermost first) when a default goes
    under it, then the defaults."""
    prefixes: dict[tuple[str, ...], list[str]] = {}
    for w in writes:
        for depth in range(w.exists + 1, len(w.path)):
            prefixes.setdefault(w.path[:depth], []).append(w.variable)
    parts = []
    for prefix in sorted(prefixes, key=len):
        under = " || ".join(prefixes[prefix])
        parts.append(f"(!{_has('object', prefix)} && ({under}) ? [{_patch(_q(_pointer(prefix)), '{}')}] : [])")
    parts += [f"({w.variable} ? [{_patch(_q(_pointer(w.path)), w.value)}] : [])" for w in writes]
    return parts


def _has_steps(root: str, steps: tuple[str, ...]) -> str:
    """``has(g.a) && has(g.a.b)``: each step below ``root``."""
    parts, current = [], root
    for step in steps:
        current = f"{current}.{step}"
        parts.append(f"has({current})")
    return " && ".join(parts)


def _template_patch(kmap: KindMap) -> list[str]:
    """Pod-template fields: in each group whose template has a ``spec`` without the field."""
    parts = []
    f = kmap.replica_field
    groups = f"object.spec.{f}"
    # Where a group keeps its pod template: a JobSet's replicated job in its Job template.
    steps = ("template", "spec", "template") if kmap.replica_layout == "jobs" else ("template",)
    present = _has("object", ("spec", f))
    for field in DEFAULT_FIELDS:
        if kmap.locator(field) != TEMPLATE:
            continue

        def wanted(g: str, field: str = field) -> str:
            template = f"{g}.{'.'.join(steps)}"
            return f"{_has_steps(g, steps)} && has({template}.spec) && !has({template}.spec.{field})"

        value = f"{_DEFAULTS}.{field}"
        if kmap.replica_layout == "map":
            path = f"'/spec/{f}/' + {_escaped('r')} + '/template/spec/{field}'"
            each = f"{groups}.filter(r, {wanted(f'{groups}[r]')}).map(r, {_patch(path, value)})"
        else:
            path = f"'/spec/{f}/' + string(i) + '/{'/'.join(steps)}/spec/{field}'"
            each = f"{groups}.transformList(i, g, {wanted('g')}, {_patch(path, value)})"
        parts.append(f"({_given(field)} && {present} ? {each} : [])")
    return parts


def _label_patch(kmap: KindMap) -> list[str]:
    """``defaults.labels`` the job lacks, then the Kueue label (last: it beats a same-key default label)."""
    labels = "variables.labels"
    given = _given("labels")
    new = f"{_DEFAULTS}.labels.filter(k, !(k in {labels}))"
    add_new = f"{new}.map(k, {_patch(_q('/metadata/labels/') + ' + ' + _escaped('k'), f'{_DEFAULTS}.labels[k]')})"
    wants = [f"({given} && size({new}) > 0)"]
    parts = [f"({given} ? {add_new} : [])"]
    if kmap.kueue:
        kueue = f"{_given('kueueQueueName')} && !({_q(KUEUE_LABEL)} in {labels})"
        wants.append(f"({kueue})")
        where = _q(_pointer(("metadata", "labels", KUEUE_LABEL)))
        parts.append(f"({kueue} ? [{_patch(where, f'{_DEFAULTS}.kueueQueueName')}] : [])")
    create = f"(!has(object.metadata.labels) && ({' || '.join(wants)}) ? [{_patch(_q('/metadata/labels'), '{}')}] : [])"
    return [create, *parts]


def patch_expression(kmap: KindMap) -> str:
    """The JSON Patch of one param (a CEL list of JSONPatch): empty unless the param applies."""
    parts = _job_level_patch(_job_level_writes(kmap)) + _template_patch(kmap) + _label_patch(kmap)
    return "!variables.applies ? [] : " + " + ".join(parts)


def _variables(kmap: KindMap, scope: str) -> list[dict[str, str]]:
    """``applies`` (the param selects this job), the job's ``labels``, and whether each job-level
    default is written."""
    return _selection(kmap, scope) + [{"name": w.name, "expression": w.when} for w in _job_level_writes(kmap)]


def _selection(kmap: KindMap, scope: str) -> list[dict[str, str]]:
    p = "params.spec"
    match = f"{p}.match"
    conditions = [
        "params != null && has(params.spec)",
        f"(!has({match}) || !has({match}.families) || '{kmap.family}' in {match}.families)",
        f"(!has({match}) || !has({match}.kinds) || {match}.kinds.exists(mk, mk.group == '{kmap.group}' && "
        f"mk.kind == '{kmap.kind}'))",
        f"(!has({match}) || !has({match}.objectSelector) || {_selector(f'{match}.objectSelector', _labels('object'))})",
    ]
    if scope == "cluster":
        ns_labels = (
            "(namespaceObject != null && has(namespaceObject.metadata.labels) ? namespaceObject.metadata.labels : {})"
        )
        conditions.append(f"(!has({p}.namespaceSelector) || {_selector(f'{p}.namespaceSelector', ns_labels)})")
    return [
        {"name": "applies", "expression": " && ".join(conditions)},
        {"name": "labels", "expression": _labels("object")},
    ]


def policy_map_name(kmap: KindMap, plural: str, scope: str) -> str:
    return f"{PREFIX}.{scope}.defaults.{plural}.{kmap.group}"


def kind_documents(kmap: KindMap, plural: str, version: str, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The two MutatingAdmissionPolicies of one kind (cluster and namespaced policies) and their bindings."""
    expression = patch_expression(kmap)
    documents: list[dict[str, Any]] = []
    for scope, param_kind in SCOPES:
        name = policy_map_name(kmap, plural, scope)
        metadata = {"name": name, "labels": dict(labels)}
        documents.append(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingAdmissionPolicy",
                "metadata": metadata,
                "spec": {
                    "paramKind": {"apiVersion": API_VERSION, "kind": param_kind},
                    "matchConstraints": {
                        "resourceRules": [
                            {
                                "apiGroups": [kmap.group],
                                "apiVersions": [version],
                                "resources": [plural],
                                "operations": ["CREATE"],
                            }
                        ]
                    },
                    # A default that cannot be evaluated is not written (defaults fail open); the
                    # ValidatingAdmissionPolicies then judge the job as it is.
                    "failurePolicy": "Ignore",
                    # Writes only what is unset: running again after another mutation changes nothing
                    # it wrote, and fills what that mutation left unset.
                    "reinvocationPolicy": "IfNeeded",
                    "variables": _variables(kmap, scope),
                    "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}],
                },
            }
        )
        documents.append(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingAdmissionPolicyBinding",
                "metadata": metadata,
                "spec": {
                    "policyName": name,
                    "paramRef": {"selector": {}, "parameterNotFoundAction": "Allow"},
                    "matchResources": {
                        "namespaceSelector": {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/metadata.name",
                                    "operator": "NotIn",
                                    "values": list(EXCLUDED_NAMESPACES),
                                }
                            ]
                        }
                    },
                },
            }
        )
    return documents


def policy_map_kinds() -> list[KindMap]:
    """The kinds that get a policy map: those whose field map reads their pods from their own fields (not
    a TrainJob, whose pods are its runtime's)."""
    return sorted((m for m in KINDS.values() if m.replica_field), key=lambda m: (m.group, m.kind))
