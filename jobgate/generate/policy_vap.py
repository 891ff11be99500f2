"""Platform policy in the apiserver: ValidatingAdmissionPolicies with ``paramKind``.

For every job kind (the field map of :mod:`jobgate.policy.fieldmap`), for each policy kind and each
enforcement action, one ValidatingAdmissionPolicy and its binding:

- ``paramKind: ClusterTrainingJobPolicy``, binding ``paramRef.selector: {}`` (every cluster policy).
  A binding cannot read each param's ``spec.namespaceSelector``, so the CEL evaluates it against
  ``namespaceObject.metadata.labels`` (matchLabels; matchExpressions In/NotIn/Exists/DoesNotExist).
  The binding's ``matchResources.namespaceSelector`` is the webhook's (not kube-system, not jobgate-system).
- ``paramKind: TrainingJobPolicy``, ``paramRef`` without a namespace: the request namespace's policies.
- ``parameterNotFoundAction: Allow`` on both: with ``Deny`` a namespace without a policy would refuse
  every job, and a namespace holding one could not delete (kubernetes/kubernetes#129883: the param goes
  first, then every finalizer removal is refused).
- One binding cannot vary its ``validationActions`` per param, so each action has its own policy and
  binding (``Deny``, ``Warn``, ``Audit``), and the policy's variable ``applies`` keeps only the params
  whose ``spec.enforcementAction`` is that action (absent = Deny).
- ``spec.match`` (``families``, ``kinds``, ``objectSelector``) is evaluated in ``applies`` too.
- ``existingViolations: Allow`` (the default) is written on ``oldObject``: on UPDATE a violation the
  old object already had, under the same param, is excused unless the update makes it worse — the
  same identities and measures as :func:`jobgate.policy.check.policy_findings` (per role for the
  per-role caps, the total for the job's, the value for the TTL and deadline caps, the label's value,
  the field's value at the same place for the allow-lists, the image string, the role and volume or
  container name for ``forbid``).
- Each measure of the job (groups, roles, largest counts, pod GPUs, containers; the old object's too),
  the param's GPU resources and each validation's violators are policy ``variables``, written once and
  read by index: the apiserver compiles every expression on its own, so the size of the policies is
  the time it takes to put them in force.
- The validations are compiled from the constraints' declarations (:mod:`jobgate.policy.constraints`),
  one compiler per form (``_COMPILERS``), as :mod:`jobgate.policy.findings` compiles its findings from them.
- A VAP validation has no field path of its own (admissionregistration.k8s.io/v1 ``Validation``:
  ``expression``, ``message``, ``messageExpression``, ``reason``; ``fieldPath`` exists only on a CRD's
  ``x-kubernetes-validations``), so each ``messageExpression`` writes the whole line the webhook gives
  the same finding, path and error type first (``spec.tfReplicaSpecs[Worker].replicas: Invalid value:
  5: role Worker may reach 5 replicas, exceeds 4 per role (ClusterTrainingJobPolicy caps)``), from the
  declaration's text.

What the policies carry and what stays in the webhook: :func:`enforcement_rows` (printed by
``jobgate manifests enforcement --policy``, and in docs/policy-enforcement.md).

Each (policy, binding, param) is evaluated on its own and every one must pass, so these are the
constraints that combine as AND across policies: caps, totals, required labels and fields,
allow-lists (a job satisfying each list satisfies their intersection), ``forbid``. A VAP reports the
first failing validation of each param; the webhook reports every finding.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from string import Formatter
from typing import Any

from jobgate.policy.constraints import (
    ALLOW_LIST,
    CONSTRAINTS,
    CONTAINER_FLAG_PATHS,
    FIELD_CAP,
    FORBID_CONTAINER_FLAG,
    FORBID_POD_FLAG,
    FORBID_VOLUME,
    GPU_CLAIMS,
    IMAGE_REGISTRIES,
    JOB_CAP,
    REQUIRED_FIELD,
    REQUIRED_LABEL,
    ROLE_CAP,
    RUNTIMES,
    Constraint,
    Outcome,
)
from jobgate.policy.fieldmap import TEMPLATE, KindMap
from jobgate.policy.gpu import (
    DEFAULT_GPU_DEVICE_CLASSES,
    DEFAULT_GPU_RESOURCES,
    IMPLICIT_DEVICE_PREFIX,
    counted_resources,
)
from jobgate.policy.kinds import KINDS
from jobgate.policy.models import API_VERSION, CLUSTER_KIND, NAMESPACED_KIND

ACTIONS = ("Deny", "Warn", "Audit")
SCOPES = (("cluster", CLUSTER_KIND), ("namespaced", NAMESPACED_KIND))
PREFIX = "jobgate-policy"
# The namespaces the webhook does not review (manifests.py _webhook): the bindings skip them too.
EXCLUDED_NAMESPACES = ("kube-system", "jobgate-system")
# Weighted GPUs are computed in double precision: a total is over a cap only by more than this.
EPSILON = "0.000000001"
ABSENT = "'<absent>'"  # no label value, queue, class or scheduler can contain '<'

# The role of a list-layout group, as fieldmap's ``role_of`` gives it ({g}: the item, {i}: its index).
_LIST_ROLES = {
    ("mxnet.mlkube.io", "MxJob"): "(has({g}.mxReplicaType) && {g}.mxReplicaType != '' ? {g}.mxReplicaType : 'WORKER')",
    ("batch.tensorstack.dev", "GenericJob"): "(has({g}.type) && {g}.type != '' ? {g}.type : string({i}))",
    ("diengine.opendilab.org", "DIJob"): (
        "(has({g}.name) && {g}.name != '' ? {g}.name : (has({g}.type) && {g}.type != '' ? {g}.type : 'none'))"
    ),
    ("batch.volcano.sh", "Job"): "(has({g}.name) && {g}.name != '' ? {g}.name : 'default' + string({i}))",
    ("jobset.x-k8s.io", "JobSet"): "(has({g}.name) && {g}.name != '' ? {g}.name : string({i}))",
}


def _has(root: str, path: Iterable[str]) -> str:
    """``has(a.b) && has(a.b.c) …`` for a path of plain field names (true for an empty path)."""
    parts, current = [], root
    for step in path:
        current = f"{current}.{step}"
        parts.append(f"has({current})")
    return "(" + " && ".join(parts) + ")" if parts else "true"


def _at(root: str, path: Iterable[str]) -> str:
    return ".".join([root, *path])


def _selector(sel: str, labels: str) -> str:
    """A metav1 LabelSelector ``sel`` (present) against the label map ``labels``."""
    return (
        f"((!has({sel}.matchLabels) || {sel}.matchLabels.all(lk, lk in {labels} && {labels}[lk] == "
        f"{sel}.matchLabels[lk]))"
        f" && (!has({sel}.matchExpressions) || {sel}.matchExpressions.all(e, "
        f"e.operator == 'In' ? (has(e.values) && e.key in {labels} && {labels}[e.key] in e.values) : "
        f"e.operator == 'NotIn' ? !(has(e.values) && e.key in {labels} && {labels}[e.key] in e.values) : "
        f"e.operator == 'Exists' ? e.key in {labels} : "
        f"e.operator == 'DoesNotExist' ? !(e.key in {labels}) : false)))"
    )


def _labels(root: str) -> str:
    return f"(has({root}.metadata) && has({root}.metadata.labels) ? {root}.metadata.labels : {{}})"


# --- quantities and GPUs ----------------------------------------------------------------------------


def _quantity(value: str) -> str:
    """A resource quantity (int or string) as a double; 0.0 when it is not a quantity (the webhook
    does not count it either, and warns)."""
    return (
        f"[{value}].map(qv, type(qv) == int || type(qv) == double ? double(qv) : "
        f"(type(qv) == string && isQuantity(qv) ? quantity(qv).asApproximateFloat() : 0.0))[0]"
    )


def _container_value(c: str, k: str) -> str:
    """Container ``c``'s amount of resource ``k``: requests, else limits (templates are not defaulted)."""
    return (
        f"(has({c}.resources) && has({c}.resources.requests) && {k} in {c}.resources.requests ? "
        f"{_quantity(f'{c}.resources.requests[{k}]')} : "
        f"(has({c}.resources) && has({c}.resources.limits) && {k} in {c}.resources.limits ? "
        f"{_quantity(f'{c}.resources.limits[{k}]')} : 0.0))"
    )


def _has_resource(c: str, k: str) -> str:
    return (
        f"(has({c}.resources) && ((has({c}.resources.requests) && {k} in {c}.resources.requests) || "
        f"(has({c}.resources.limits) && {k} in {c}.resources.limits)))"
    )


def _resource_names(c: str) -> str:
    return (
        f"((has({c}.resources) && has({c}.resources.requests) ? {c}.resources.requests.map(rk, rk) : []) + "
        f"(has({c}.resources) && has({c}.resources.limits) ? {c}.resources.limits.filter(rk, "
        f"!(has({c}.resources.requests) && rk in {c}.resources.requests)) : []))"
    )


def gpu_variables() -> list[tuple[str, str]]:
    """The param's GPU resources as two parallel lists, names (a pattern ends in ``*``) and weights:
    its ``gpuResources`` first, then the built-in list, then the implicit extended resource
    (``deviceclass.resource.kubernetes.io/<class>``) of each entry of its ``gpuDeviceClasses`` and of
    the built-in classes. A name given comes before the built-in entry of that name, so that it
    wins (``indexOf`` finds the first): the param's lists are added to the built-in ones, as the
    webhook adds them. Written once per policy, not at every resource of every container."""
    lst = "params.spec.limits.gpuResources"
    own = "has(params.spec.limits) && has(params.spec.limits.gpuResources)"
    classes = "params.spec.limits.gpuDeviceClasses"
    own_classes = "has(params.spec.limits) && has(params.spec.limits.gpuDeviceClasses)"
    builtin = counted_resources(DEFAULT_GPU_RESOURCES, ())
    builtin_classes = counted_resources((), DEFAULT_GPU_DEVICE_CLASSES)
    names = "[" + ", ".join(f"'{n}'" for n, _ in builtin) + "]"
    weights = "[" + ", ".join(repr(float(w)) for _, w in builtin) + "]"
    class_names = "[" + ", ".join(f"'{n}'" for n, _ in builtin_classes) + "]"
    class_weights = "[" + ", ".join(repr(float(w)) for _, w in builtin_classes) + "]"
    weight = "has(gw.weight) ? double(gw.weight) : 1.0"
    return [
        (
            "gpuNames",
            f"({own} ? {lst}.map(gw, gw.name) : []) + {names} + "
            f"({own_classes} ? {classes}.map(gw, '{IMPLICIT_DEVICE_PREFIX}' + gw.name) : []) + {class_names}",
        ),
        (
            "gpuWeights",
            f"({own} ? {lst}.map(gw, {weight}) : []) + {weights} + "
            f"({own_classes} ? {classes}.map(gw, {weight}) : []) + {class_weights}",
        ),
    ]


def _weight(k: str) -> str:
    """The weight of resource ``k`` (gpu_variables); -1.0 when ``k`` is not counted as GPUs. An exact
    name beats a pattern, a longer pattern a shorter one (the first of equals)."""
    names, weights = "variables.gpuNames", "variables.gpuWeights"
    return (
        f"({k} in {names} ? {weights}[{names}.indexOf({k})] : "
        f"[{names}.filter(gx, gx.endsWith('*') && {k}.startsWith(gx.substring(0, size(gx) - 1)))].map(gm, "
        f"size(gm) == 0 ? -1.0 : {weights}[{names}.indexOf(gm.filter(gx, gm.all(gy, size(gy) <= size(gx)))[0])])[0])"
    )


def _is_sidecar(c: str) -> str:
    return f"(has({c}.restartPolicy) && {c}.restartPolicy == 'Always')"


def pod_gpus(spec: str) -> str:
    """Weighted GPUs of a pod spec ``spec`` (present), as resource.PodRequests computes the pod's request.
    The container lists (``ins``, ``aps``, ``evr``) and each init container's amount (``iv``) are bound
    once with ``[x].map(v, …)[0]`` rather than written out at every use."""
    side = _is_sidecar
    cv = _container_value
    app_sum = f"([0.0] + aps.map(ca, {cv('ca', 'rn')})).sum()"
    side_sum = f"([0.0] + ins.filter(cs, {side('cs')}).map(cs, iv[ins.indexOf(cs)])).sum()"
    before = (
        f"([0.0] + ins.filter(cs, {side('cs')} && ins.indexOf(cs) < ins.indexOf(ci))"
        ".map(cs, iv[ins.indexOf(cs)])).sum()"
    )
    peak = f"([0.0] + ins.filter(ci, !{side('ci')}).map(ci, iv[ins.indexOf(ci)] + {before})).max()"
    overhead = f"(has({spec}.overhead) && rn in {spec}.overhead ? {_quantity(f'{spec}.overhead[rn]')} : 0.0)"
    per_resource = f"([ins.map(ci, {cv('ci', 'rn')})].map(iv, [{app_sum} + {side_sum}, {peak}].max())[0] + {overhead})"
    first = f"!evr.exists(cd, evr.indexOf(cd) < evr.indexOf(cc) && {_has_resource('cd', 'rn')})"
    in_containers = (
        f"([0.0] + evr.map(cc, ([0.0] + {_resource_names('cc')}.filter(rn, {first})"
        f".map(rn, [{_weight('rn')}].map(wt, wt < 0.0 ? 0.0 : wt * {per_resource})[0])).sum())).sum()"
    )
    only_overhead = (
        f"(has({spec}.overhead) ? ([0.0] + {spec}.overhead.filter(rn, !evr.exists(cd, {_has_resource('cd', 'rn')}))"
        f".map(rn, [{_weight('rn')}].map(wt, wt < 0.0 ? 0.0 : wt * "
        f"{_quantity(f'{spec}.overhead[rn]')})[0])).sum() : 0.0)"
    )
    return (
        f"[has({spec}.initContainers) ? {spec}.initContainers : []].map(ins, "
        f"[has({spec}.containers) ? {spec}.containers : []].map(aps, "
        f"[ins + aps].map(evr, {in_containers} + {only_overhead})[0])[0])[0]"
    )


# --- one kind ---------------------------------------------------------------------------------------
#
# Each measure of the job (the groups, their roles, their largest counts, their pods' GPUs, their
# containers) is written once per object as a policy variable, and the validations read it by the
# group's index. Before, every validation repeated the GPU count of the new and the old object
# inline (about 100 kB per policy); the apiserver compiles each expression on its own, so size is
# compile time. Variables are evaluated lazily and at most once per param.


def _cap(name: str) -> str:
    return name[0].upper() + name[1:]


class KindCel:
    """CEL of one kind. The validations iterate ``variables.idx`` (the new object's group indices)
    and read the per-group variables at an index; ``old=True`` reads the old object's variables."""

    def __init__(self, kmap: KindMap) -> None:
        self.k = kmap
        if not kmap.replica_field:
            raise ValueError(f"{kmap.group}/{kmap.kind}: the field map gives no replica field")

    # The groups: a map (iterate its keys; the group is groups[key]) or a list (iterate its items).
    @property
    def is_map(self) -> bool:
        return self.k.replica_layout == "map"

    @property
    def empty(self) -> str:
        return "{}" if self.is_map else "[]"

    def groups(self, root: str) -> str:
        f = self.k.replica_field
        return f"({_has(root, ('spec', f))} ? {root}.spec.{f} : {self.empty})"

    @staticmethod
    def var(name: str, old: bool = False) -> str:
        return f"variables.{'old' + _cap(name) if old else name}"

    def item(self, i: str, old: bool = False) -> str:
        """The group at index ``i``."""
        groups = self.var("groups", old)
        return f"{groups}[{self.var('roles', old)}[{i}]]" if self.is_map else f"{groups}[{i}]"

    def role(self, i: str, old: bool = False) -> str:
        return f"{self.var('roles', old)}[{i}]"

    def largest(self, i: str, old: bool = False) -> str:
        return f"{self.var('largest', old)}[{i}]"

    def gpus(self, i: str, old: bool = False) -> str:
        return f"{self.var('podGpus', old)}[{i}]"

    def containers(self, i: str, old: bool = False) -> str:
        """Init, app and ephemeral containers of the group's pod, in that order."""
        return f"{self.var('containers', old)}[{i}]"

    @property
    def template_steps(self) -> tuple[str, ...]:
        """Where a group keeps its pod template: ``template``, or a Job template's (JobSet's)."""
        return ("template", "spec", "template") if self.k.replica_layout == "jobs" else ("template",)

    def has_template(self, i: str, old: bool = False) -> str:
        """``has(g.template) && …`` for each step, unparenthesised (a plain conjunction in what it joins)."""
        return (
            _has(self.item(i, old), self.template_steps)[1:-1]
            if len(self.template_steps) > 1
            else (f"has({self.item(i, old)}.template)")
        )

    def pod(self, i: str, old: bool = False) -> str:
        """The group's pod spec is present."""
        return _has(self.item(i, old), (*self.template_steps, "spec"))

    def spec(self, i: str, old: bool = False) -> str:
        return f"{self.item(i, old)}.{'.'.join(self.template_steps)}.spec"

    @property
    def template(self) -> str:
        """The pod template's place in a group, dotted (``template``)."""
        return ".".join(self.template_steps)

    def path(self, i: str) -> str:
        """The new object's group at index ``i`` as the webhook's field path (a CEL string)."""
        f = self.k.replica_field
        key = self.role(i) if self.is_map else f"string({i})"
        return f"'spec.{f}[' + {key} + ']'"

    def same_role(self, i: str, body: Callable[[str], str]) -> str:
        """``body(j)`` for the old object's group of the same role as the new one's at ``i``."""
        return f"variables.oldIdx.exists(j, {self.role('j', True)} == {self.role(i)} && {body('j')})"

    def same_place(self, i: str, body: Callable[[str], str]) -> str:
        """The old object's group at the same place (the same key; the same index of a list)."""
        if self.is_map:
            return self.same_role(i, body)
        return f"(size(variables.oldIdx) > {i} && {body(i)})"

    def _own_replicas(self, i: str, old: bool) -> str:
        g = self.item(i, old)
        default = str(self.k.default_count)
        if self.k.default_zero:
            default = f"({self.role(i, old)} in {list(self.k.default_zero)!r} ? 0 : {default})"
        own = f"(has({g}.replicas) && type({g}.replicas) == int ? {g}.replicas : {default})"
        if self.k.replica_layout != "jobs":
            return own
        # A JobSet's replicated job: replicas × its Job's pods, min(parallelism (1), completions (parallelism)).
        js = f"{g}.template.spec"
        parallelism = f"(has({js}.parallelism) && type({js}.parallelism) == int ? {js}.parallelism : 1)"
        fewer = f"has({js}.completions) && type({js}.completions) == int && {js}.completions < {parallelism}"
        pods = f"((has({g}.template) && has({js})) ? (({fewer}) ? {js}.completions : {parallelism}) : 1)"
        return f"({own} * {pods})"

    def _elastic_high(self, i: str, old: bool) -> str:
        """The Worker grows to elasticPolicy.maxReplicas (a CEL condition)."""
        root = "oldObject" if old else "object"
        high = f"{root}.spec.elasticPolicy.maxReplicas"
        return (
            f"({self.role(i, old)} == 'Worker' && {_has(root, ('spec', 'elasticPolicy', 'maxReplicas'))} && "
            f"type({high}) == int && {high} > {self._own_replicas(i, old)})"
        )

    def _largest_of(self, i: str, old: bool) -> str:
        own = self._own_replicas(i, old)
        if not self.k.elastic:
            return own
        root = "oldObject" if old else "object"
        return f"({self._elastic_high(i, old)} ? {root}.spec.elasticPolicy.maxReplicas : {own})"

    def largest_path(self, i: str) -> str:
        """The field that gives the largest count (fieldmap's ``largest_path``), a CEL string."""
        own = f"{self.path(i)} + '.replicas'"
        if not self.k.elastic:
            return own
        return f"({self._elastic_high(i, False)} ? 'spec.elasticPolicy.maxReplicas' : {own})"

    def _containers_of(self, i: str, old: bool) -> str:
        s = self.spec(i, old)
        return (
            f"({self.pod(i, old)} ? (has({s}.initContainers) ? {s}.initContainers : []) + "
            f"(has({s}.containers) ? {s}.containers : []) + "
            f"(has({s}.ephemeralContainers) ? {s}.ephemeralContainers : []) : [])"
        )

    def _container_paths(self, i: str) -> str:
        """The webhook's field path of each of ``containers(i)`` (new object), in the same order."""
        s = self.spec(i)
        parts = [
            f"(has({s}.{name}) ? {s}.{name}.map(ct, {self.path(i)} + '.{self.template}.spec.{name}[' + "
            f"string({s}.{name}.indexOf(ct)) + ']') : [])"
            for name in ("initContainers", "containers", "ephemeralContainers")
        ]
        return f"({self.pod(i)} ? {' + '.join(parts)} : [])"

    def variables(self) -> list[tuple[str, str]]:
        """(name, expression) of the per-object variables, the old object's after the new one's."""
        out: list[tuple[str, str]] = gpu_variables()
        for old in (False, True):
            root = "oldObject" if old else "object"

            def name(n: str, old: bool = old) -> str:
                return "old" + _cap(n) if old else n

            groups = self.groups(root)
            out.append((name("groups"), f"({root} == null ? {self.empty} : {groups})" if old else groups))
            g = self.var("groups", old)
            if self.is_map:
                roles = f"{g}.map(r, r)"
                idx = f"{self.var('roles', old)}.map(r, {self.var('roles', old)}.indexOf(r))"
            else:
                role = _LIST_ROLES[self.k.group, self.k.kind].format(g="rg", i=f"{g}.indexOf(rg)")
                roles = f"{g}.map(rg, {role})"
                # Equal groups share the first one's index: their measures are equal too.
                idx = f"{g}.map(rg, {g}.indexOf(rg))"
            out.append((name("roles"), roles))
            out.append((name("idx"), idx))
            each = self.var("idx", old)
            out.append((name("largest"), f"{each}.map(i, {self._largest_of('i', old)})"))
            gpus = f"({self.pod('i', old)} ? [{self.spec('i', old)}].map(ps, {pod_gpus('ps')})[0] : 0.0)"
            out.append((name("podGpus"), f"{each}.map(i, {gpus})"))
            out.append((name("containers"), f"{each}.map(i, {self._containers_of('i', old)})"))
            out.append((name("jobReplicas"), f"([0] + {self.var('largest', old)}).sum()"))
            out.append(
                (
                    name("jobGpus"),
                    f"([0.0] + {each}.map(i, double({self.largest('i', old)}) * {self.gpus('i', old)})).sum()",
                )
            )
        out.append(("containerPaths", f"variables.idx.map(i, {self._container_paths('i')})"))
        return out

    # Job-level fields: (present, value, the webhook's path as a CEL string) per root; None when the
    # kind has no such field.
    def field(self, name: str, root: str) -> tuple[str, str, str] | None:
        locator = self.k.locator(name)
        if locator is None or locator == TEMPLATE:
            return None
        plain = [str(s) for s in locator({})]  # type: ignore[operator]
        run_policy = [str(s) for s in locator({"spec": {"runPolicy": {}}})]  # type: ignore[operator]
        if plain == run_policy:
            return _has(root, plain), _at(root, plain), _q(".".join(plain))
        cond = _has(root, ("spec", "runPolicy"))
        return (
            f"({cond} ? {_has(root, run_policy)} : {_has(root, plain)})",
            f"({cond} ? {_at(root, run_policy)} : {_at(root, plain)})",
            f"({cond} ? {_q('.'.join(run_policy))} : {_q('.'.join(plain))})",
        )


# --- validations -------------------------------------------------------------------------------------


def _image_name(image: str) -> str:
    """distribution/reference's normalised ``host/path`` of ``image``, '' when malformed (jobgate.policy.images)."""
    name = f"{image}.trim().split('@')[0]"
    return (
        f"[{name}].map(nm, [nm.split('/')[0]].map(fc, [nm.contains('/') && (fc.contains('.') || fc.contains(':') || "
        f"fc == 'localhost' || fc.lowerAscii() != fc)].map(reg, "
        f"[reg ? (fc.lowerAscii() == 'index.docker.io' ? 'docker.io' : fc.lowerAscii()) : 'docker.io'].map(hs, "
        f"[reg ? nm.substring(size(fc) + 1) : nm].map(pt, "
        f"[pt.lastIndexOf(':') > pt.lastIndexOf('/') ? pt.substring(0, pt.lastIndexOf(':')) : pt].map(ph, "
        f"ph == '' || ph.startsWith('/') || ph.endsWith('/') || ph.contains('//') || nm == '' || "
        f"{image}.trim().matches('\\\\s') ? '' : "
        f"hs + '/' + (hs == 'docker.io' && !ph.contains('/') ? 'library/' + ph : ph))[0])[0])[0])[0])[0])[0]"
    )


def _registry_prefix(entry: str) -> str:
    return (
        f"[{entry}.trim()].map(en, [en.split('/')[0].lowerAscii()].map(eh, "
        f"[eh == 'index.docker.io' ? 'docker.io' : eh].map(eh2, "
        f"en.contains('/') ? eh2 + '/' + en.substring(size(eh) + 1) : eh2 + '/')[0])[0])[0]"
    )


def _image_allowed(image: str, entries: str) -> str:
    prefix = _registry_prefix("re")
    return f"[{_image_name(image)}].all(iname, iname != '' && {entries}.exists(re, iname.startsWith({prefix})))"


class Validation:
    def __init__(self, rule: str, expression: str, message: str, reason: str = "Invalid") -> None:
        self.rule, self.expression, self.message, self.reason = rule, expression, message, reason


def _v(rule: str, guard: str, ok: str, message: str, reason: str = "Invalid") -> Validation:
    return Validation(rule, f"!variables.applies || !({guard}) || ({ok})", message, reason)


def _msg(*parts: str) -> str:
    return " + ".join(parts) + " + ' (' + variables.who + ')'"


def _q(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _line(outcome: Outcome, path: str, value: str | None = None, **holes: str) -> str:
    """The webhook's finding line (``PATH: TYPE[: VALUE]: DETAIL``, jobgate.policy.check's
    ``PolicyFinding.text``) as a CEL string expression: ``path``, ``value`` and the holes are CEL, the
    detail's text is the declaration's (jobgate.policy.constraints)."""
    pieces: list[tuple[bool, str]] = [(False, path), (True, f": {outcome.type}: ")]
    if value is not None:
        pieces += [(False, value), (True, ": ")]
    for literal, hole, _, _ in Formatter().parse(outcome.text):
        pieces.append((True, literal))
        if hole is not None:
            pieces.append((False, holes[hole]))
    operands: list[str] = []
    for is_text, written in pieces:
        piece = (_q(written) if written else "") if is_text else written
        if not piece:
            continue
        tail = _TAIL_LITERAL.search(operands[-1]) if operands else None
        head = _HEAD_LITERAL.match(piece)
        if tail is not None and head is not None:
            # one literal rather than two joined: the expression reads as the text it writes
            operands[-1] = operands[-1][: tail.start(1)] + piece[1:]
        else:
            operands.append(piece)
    return " + ".join(operands)


# A CEL expression's last operand when it is a string literal (``… + 'text'``, ``'text'``), and its
# first (``'text' + …``).
_TAIL_LITERAL = re.compile(r"(?:^| \+ )'(?:[^'\\]|\\.)*(')$")
_HEAD_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'(?= \+ |$)")


def _quoted(value: str) -> str:
    """A string value as the webhook shows it: in double quotes."""
    return f"'\"' + {value} + '\"'"


def _quoted_list(values: str) -> str:
    return f"{values}.map(qx, {_quoted('qx')}).join(', ')"


def _first(indices: str, message: Callable[[str], str]) -> str:
    """``message(i)`` for the first index of the list ``indices`` (a CEL list), '?' when it is empty."""
    return f"[{indices}].map(bi, size(bi) == 0 ? '?' : {message('bi[0]')})[0]"


class _Violating:
    """Per validation, a variable holding what violates it (group indices, required labels): the
    expression tests that it is empty and the message reads its first item, instead of both writing
    the same filter. A variable is evaluated only when a validation reads it, after its guard."""

    def __init__(self) -> None:
        self.variables: list[tuple[str, str]] = []

    def __call__(self, name: str, expression: str) -> str:
        self.variables.append((name, expression))
        return f"variables.{name}"


def validations(kc: KindCel, violating: _Violating | None = None) -> list[Validation]:
    """The validations of one kind, one piece of code per form of jobgate.policy.constraints. Each
    message is the line the webhook gives the same finding (jobgate.policy.check): a VAP has no field
    of its own for a path, so the path is the message's first word."""
    out: list[Validation] = []
    violating = violating if violating is not None else _Violating()
    for decl in CONSTRAINTS:
        out.extend(_COMPILERS[decl.form](kc, decl, violating))
    return out


def _unless_old(violates: str, had: str) -> str:
    """``violates``, unless existingViolations: Allow excuses it because the old object ``had`` it (no better)."""
    return f"{violates} && !({_ALLOW_OLD} && {had})"


_LIM = "params.spec.limits"
_REQ = "params.spec.require"
_ALLOW_OLD = "variables.allowOld"
_EACH = "variables.idx"


def _role_cap(kc: KindCel, decl: Constraint, violating: _Violating) -> list[Validation]:
    """A measure of each role (its largest count, its pod's GPUs) at most the limit; a role the old
    object had over the limit is excused while it does not grow."""
    gpus = decl.subject == "gpus"
    limit = f"{_LIM}.{decl.field}"
    cap = f"(double({limit}) + {EPSILON})" if gpus else limit
    slack = f" + {EPSILON}" if gpus else ""

    def measure(i: str, old: bool = False) -> str:
        return kc.gpus(i, old) if gpus else kc.largest(i, old)

    def bad(i: str) -> str:
        return _unless_old(
            f"{measure(i)} > {cap}",
            kc.same_role(i, lambda j: f"{measure(j, True)} > {cap} && {measure(i)} <= {measure(j, True)}{slack}"),
        )

    over = violating(f"over{_cap(decl.field)}", f"{_EACH}.filter(i, {bad('i')})")

    def line(b: str) -> str:
        path = f"{kc.path(b)} + '.{kc.template}.spec'" if gpus else kc.largest_path(b)
        amount = f"string({measure(b)})"
        shown = _quoted(amount) if gpus else amount  # a quantity, quoted as the webhook shows one
        return _line(decl.outcomes["over"], path, shown, role=kc.role(b), measure=amount, limit=f"string({limit})")

    return [_v(decl.rule, f"has({_LIM}) && has({limit})", f"size({over}) == 0", _msg(_first(over, line)))]


def _job_cap(kc: KindCel, decl: Constraint, violating: _Violating) -> list[Validation]:
    """A measure of the whole job at most the limit; over it, the old object's total is excused while
    the update does not raise it."""
    gpus = decl.subject == "gpus"
    limit = f"{_LIM}.{decl.field}"
    if gpus:
        total, old_total = "variables.jobGpus", "variables.oldJobGpus"
        cap, slack, path = f"(double({limit}) + {EPSILON})", f" + {EPSILON}", "'spec'"
        each = f"{_EACH}.filter(i, {kc.gpus('i')} > 0.0)"
        if kc.is_map:
            # CEL iterates a map in no fixed order: the roles by name, as the webhook writes them
            # (rank of each role, then the index of each rank: quadratic in the roles, in the message only).
            ranks = f"gl.map(i, size(gl.filter(j, {kc.role('j')} < {kc.role('i')})))"
            each = f"[{each}].map(gl, [{ranks}].map(gr, gl.map(p, gl[gr.indexOf(gl.indexOf(p))]))[0])[0]"
        breakdown = {
            "breakdown": f"{each}.map(i, {kc.role('i')} + ' ' + string({kc.largest('i')}) + ' × ' + "
            f"string({kc.gpus('i')})).join(', ')"
        }
    else:
        total, old_total = "variables.jobReplicas", "variables.oldJobReplicas"
        cap, slack, path, breakdown = limit, "", _q(f"spec.{kc.k.replica_field}"), {}
    amount = f"string({total})"
    return [
        _v(
            decl.rule,
            f"has({_LIM}) && has({limit})",
            f"{total} <= {cap} || ({_ALLOW_OLD} && {old_total} > {cap} && {total} <= {old_total}{slack})",
            _msg(
                _line(
                    decl.outcomes["over"],
                    path,
                    _quoted(amount) if gpus else amount,
                    measure=amount,
                    limit=f"string({limit})",
                    **breakdown,
                )
            ),
        )
    ]


class _JobInt:
    """A job-level integer field of the new and the old object (CEL): where it is, its value, and
    whether it is set to an integer."""

    def __init__(self, kc: KindCel, field: str) -> None:
        new, old = kc.field(field, "object"), kc.field(field, "oldObject")
        self.applies = new is not None and old is not None
        if new is None or old is None:
            return  # not applicable: the webhook warns (enforcement table)
        (present, self.value, self.where), (old_present, self.old_value, _) = new, old
        self.number = f"({present} && type({self.value}) == int)"
        self.old_number = f"({old_present} && type({self.old_value}) == int)"


def _field_cap(kc: KindCel, decl: Constraint, violating: _Violating) -> list[Validation]:
    f = _JobInt(kc, decl.subject)
    if not f.applies:
        return []
    limit = f"{_LIM}.{decl.field}"
    return [
        _v(
            decl.rule,
            f"has({_LIM}) && has({limit})",
            f"!{f.number} || {f.value} <= {limit} || ({_ALLOW_OLD} && {f.old_number} && {f.old_value} > {limit} "
            f"&& {f.value} <= {f.old_value})",
            _msg(_line(decl.outcomes["over"], f.where, f"string({f.value})", limit=f"string({limit})")),
        )
    ]


def _required_field(kc: KindCel, decl: Constraint, violating: _Violating) -> list[Validation]:
    f = _JobInt(kc, decl.subject)
    if not f.applies:
        return []
    required = f"{_REQ}.{decl.field}"
    return [
        _v(
            decl.rule,
            f"has({_REQ}) && has({required}) && {required} == true",
            f"{f.number} || ({_ALLOW_OLD} && !{f.old_number})",
            _msg(_line(decl.outcomes["missing"], f.where)),
        )
    ]


def _required_label(kc: KindCel, decl: Constraint, violating: _Violating) -> list[Validation]:
    labels, old_labels = _labels("object"), _labels("oldObject")
    required = f"{_REQ}.{decl.field}"
    state = f"(rl.key in {labels} ? {labels}[rl.key] : {ABSENT})"
    old_state = f"(oldObject != null && rl.key in {old_labels} ? {old_labels}[rl.key] : {ABSENT})"
    ok_label = f"(rl.key in {labels} && (!has(rl.values) || {labels}[rl.key] in rl.values))"
    bad_label = f"!{ok_label} && !({_ALLOW_OLD} && {old_state} == {state})"
    missing = violating("badLabels", f"{required}.filter(rl, {bad_label})")
    path = "'metadata.labels[' + bl[0].key + ']'"
    outside = _line(
        decl.outcomes["outside"], path, _quoted(f"{labels}[bl[0].key]"), supported=_quoted_list("bl[0].values")
    )
    absent = _line(decl.outcomes["missing"], path)
    return [
        _v(
            decl.rule,
            f"has({_REQ}) && has({required})",
            f"size({missing}) == 0",
            _msg(f"[{missing}].map(bl, size(bl) == 0 ? '?' : (bl[0].key in {labels} ? {outside} : {absent}))[0]"),
        )
    ]


def _allow_list(kc: KindCel, decl: Constraint, violating: _Violating) -> list[Validation]:
    allowed = f"{_REQ}.{decl.field}"
    guard = f"has({_REQ}) && has({allowed})"
    field = decl.subject
    locator = kc.k.locator(field)
    if locator is None:
        return []  # not applicable: the webhook warns
    outside, missing = decl.outcomes["outside"], decl.outcomes["missing"]

    listed = f"{allowed}.join(', ')"

    def line(present: str, path: str, value: str) -> str:
        return (
            f"({present} ? {_line(outside, path, _quoted(value), supported=_quoted_list(allowed))} : "
            f"{_line(missing, path, allowed=listed)})"
        )

    if locator == TEMPLATE:
        default = "'default-scheduler'" if field == "schedulerName" else ABSENT

        def state(i: str, old: bool = False) -> str:
            s = kc.spec(i, old)
            return f"({kc.pod(i, old)} && has({s}.{field}) ? {s}.{field} : {default})"

        def bad(i: str) -> str:
            return _unless_old(
                f"{kc.has_template(i)} && !({state(i)} in {allowed})",
                kc.same_place(i, lambda j: f"{kc.has_template(j, True)} && {state(j, True)} == {state(i)}"),
            )

        outside_groups = violating(f"bad{_cap(decl.field)}", f"{_EACH}.filter(i, {bad('i')})")
        return [
            _v(
                decl.rule,
                guard,
                f"size({outside_groups}) == 0",
                _msg(
                    _first(
                        outside_groups,
                        lambda b: line(
                            f"{state(b)} != {ABSENT}", f"{kc.path(b)} + '.{kc.template}.spec.{field}'", state(b)
                        ),
                    )
                ),
            )
        ]
    (present, value, where), (old_present, old_value, _) = kc.field(field, "object"), kc.field(field, "oldObject")  # type: ignore[misc]
    st = f"({present} ? string({value}) : {ABSENT})"
    old_st = f"(oldObject != null && {old_present} ? string({old_value}) : {ABSENT})"
    return [
        _v(
            decl.rule,
            guard,
            f"({present} && {value} in {allowed}) || ({_ALLOW_OLD} && {old_st} == {st})",
            _msg(line(present, where, f"string({value})")),
        )
    ]


def _image_registries(kc: KindCel, decl: Constraint, violating: _Violating) -> list[Validation]:
    """Every container's image from a listed registry; an image the old object had anywhere is
    excused (the webhook's identity is the image)."""
    entries = f"{_REQ}.{decl.field}"
    bad_image = _unless_old(
        f"has(ct.image) && !{_image_allowed('ct.image', entries)}",
        "variables.oldContainers.exists(ol, ol.exists(oc, has(oc.image) && oc.image == ct.image))",
    )
    bad_images = violating("badImages", f"{_EACH}.filter(i, {kc.containers('i')}.exists(ct, {bad_image}))")
    origin = (
        f"[{_image_name('ct.image')}].map(nm, nm == '' ? 'its registry cannot be determined' : "
        "'it comes from ' + nm.substring(0, nm.lastIndexOf('/')) + '/')[0]"
    )

    def line(b: str) -> str:
        detail = _line(
            decl.outcomes["outside"],
            f"variables.containerPaths[{b}][{kc.containers(b)}.indexOf(ct)] + '.image'",
            _quoted("ct.image"),
            origin=origin,
            allowed=f"{entries}.join(', ')",
        )
        return f"[{kc.containers(b)}.filter(ct, {bad_image})[0]].map(ct, {detail})[0]"

    # Image volumes (volumes[].image.reference, GA in 1.36): the same test of the reference; the old
    # object's containers or image volumes holding the same reference excuse it, as the webhook's
    # identity (the image) does.
    def volumes(i: str, old: bool = False) -> str:
        s = kc.spec(i, old)
        return f"({kc.pod(i, old)} && has({s}.volumes) ? {s}.volumes : [])"

    def job_volumes(root: str) -> str:
        if kc.k.family != "diengine":  # DIJob adds spec.volumes to every pod of the job
            return "[]"
        return f"({_has(root, ('spec', 'volumes'))} ? {root}.spec.volumes : [])"

    def is_image(v: str) -> str:
        return f"(has({v}.image) && has({v}.image.reference))"

    had = (
        "(variables.oldContainers.exists(ol, ol.exists(oc, has(oc.image) && oc.image == vl.image.reference)) || "
        f"variables.oldIdx.exists(j, {volumes('j', True)}.exists(ov, {is_image('ov')} && "
        "ov.image.reference == vl.image.reference)) || "
        f"{job_volumes('oldObject')}.exists(ov, {is_image('ov')} && ov.image.reference == vl.image.reference))"
    )
    bad_volume = _unless_old(f"{is_image('vl')} && !{_image_allowed('vl.image.reference', entries)}", had)
    bad_volumes = violating("badImageVolumes", f"{_EACH}.filter(i, {volumes('i')}.exists(vl, {bad_volume}))")
    volume_origin = (
        f"[{_image_name('vl.image.reference')}].map(nm, nm == '' ? 'its registry cannot be determined' : "
        "'it comes from ' + nm.substring(0, nm.lastIndexOf('/')) + '/')[0]"
    )

    def volume_line(where: str) -> str:
        return _line(
            decl.outcomes["outside"],
            where,
            _quoted("vl.image.reference"),
            origin=volume_origin,
            allowed=f"{entries}.join(', ')",
        )

    def on_volume(b: str) -> str:
        listed = volumes(b)
        path = f"{kc.path(b)} + '.{kc.template}.spec.volumes[' + string({listed}.indexOf(vl)) + '].image.reference'"
        return f"[{listed}.filter(vl, {bad_volume})[0]].map(vl, {volume_line(path)})[0]"

    # The first of them in the webhook's order: containers, then each pod's volumes, then a DIJob's own.
    on_volumes = _first(bad_volumes, on_volume)
    ok = f"size({bad_images}) == 0 && size({bad_volumes}) == 0"
    if kc.k.family == "diengine":
        jv = job_volumes("object")
        on_job = volume_line(f"'spec.volumes[' + string({jv}.indexOf(vl)) + '].image.reference'")
        first_job = f"[{jv}.filter(vl, {bad_volume})[0]].map(vl, {on_job})[0]"
        on_volumes = f"(size({bad_volumes}) > 0 ? {on_volumes} : {first_job})"
        ok = f"{ok} && !{jv}.exists(vl, {bad_volume})"
    message = f"(size({bad_images}) > 0 ? {_first(bad_images, line)} : {on_volumes})"
    return [_v(decl.rule, f"has({_REQ}) && has({entries})", ok, _msg(message))]


def _forbidden(decl: Constraint) -> str:
    return f"has({_REQ}) && has({_REQ}.forbid) && '{decl.subject}' in {_REQ}.forbid"


def _forbid_groups(decl: Constraint, hits: str, line: Callable[[str], str]) -> list[Validation]:
    """The validation of a forbid form: no group in ``hits``; the message is ``line`` of the first."""
    return [_v(decl.rule, _forbidden(decl), f"size({hits}) == 0", _msg(_first(hits, line)), "Forbidden")]


def _forbid_pod_flag(kc: KindCel, decl: Constraint, violating: _Violating) -> list[Validation]:
    item = decl.subject

    def on(i: str, old: bool = False) -> str:
        s = kc.spec(i, old)
        return f"({kc.pod(i, old)} && has({s}.{item}) && {s}.{item} == true)"

    def bad(i: str) -> str:
        return _unless_old(on(i), kc.same_role(i, lambda j: on(j, True)))

    hits = violating(f"bad{_cap(item)}", f"{_EACH}.filter(i, {bad('i')})")
    forbidden = decl.outcomes["forbidden"]
    return _forbid_groups(decl, hits, lambda b: _line(forbidden, f"{kc.path(b)} + '.{kc.template}.spec.{item}'"))


def _forbid_volume(kc: KindCel, decl: Constraint, violating: _Violating) -> list[Validation]:
    source = decl.subject
    forbidden = decl.outcomes["forbidden"]

    def volumes(i: str, old: bool = False) -> str:
        s = kc.spec(i, old)
        return f"({kc.pod(i, old)} && has({s}.volumes) ? {s}.volumes : [])"

    def job_volumes(root: str) -> str:
        if kc.k.family != "diengine":
            return "[]"
        return f"({_has(root, ('spec', 'volumes'))} ? {root}.spec.volumes : [])"

    def vname(v: str) -> str:
        return f"(has({v}.name) ? {v}.name : {ABSENT})"

    def bad_volume(i: str) -> str:
        return _unless_old(
            f"has(vl.{source})",
            kc.same_role(
                i, lambda j: f"{volumes(j, True)}.exists(ov, has(ov.{source}) && {vname('ov')} == {vname('vl')})"
            ),
        )

    job_bad = _unless_old(
        f"has(vl.{source})",
        f"{job_volumes('oldObject')}.exists(ov, has(ov.{source}) && {vname('ov')} == {vname('vl')})",
    )
    hits = violating(f"bad{_cap(source)}", f"{_EACH}.filter(i, {volumes('i')}.exists(vl, {bad_volume('i')}))")
    message = _first(
        hits,
        lambda b: _line(
            forbidden,
            f"{kc.path(b)} + '.{kc.template}.spec.volumes[' + string({volumes(b)}.indexOf({volumes(b)}.filter(vl, "
            f"{bad_volume(b)})[0])) + '].{source}'",
        ),
    )
    if kc.k.family == "diengine":
        jv = job_volumes("object")
        index = f"string({jv}.indexOf({jv}.filter(vl, {job_bad})[0]))"
        on_job = _line(forbidden, f"'spec.volumes[' + {index} + '].{source}'")
        message = f"({jv}.exists(vl, {job_bad}) ? {on_job} : {message})"
    return [
        _v(
            decl.rule,
            _forbidden(decl),
            f"size({hits}) == 0 && !{job_volumes('object')}.exists(vl, {job_bad})",
            _msg(message),
            "Forbidden",
        )
    ]


def _forbid_container_flag(kc: KindCel, decl: Constraint, violating: _Violating) -> list[Validation]:
    flag = CONTAINER_FLAG_PATHS[decl.subject]

    def on(c: str) -> str:
        return "(" + _has(c, flag) + f" && {_at(c, flag)} == true)"

    def cname(c: str) -> str:
        return f"(has({c}.name) ? {c}.name : {ABSENT})"

    def bad_container(i: str) -> str:
        return _unless_old(
            on("ct"),
            kc.same_role(
                i, lambda j: f"{kc.containers(j, True)}.exists(oc, {on('oc')} && {cname('oc')} == {cname('ct')})"
            ),
        )

    hits = violating(
        f"bad{_cap(decl.subject)}", f"{_EACH}.filter(i, {kc.containers('i')}.exists(ct, {bad_container('i')}))"
    )
    forbidden = decl.outcomes["forbidden"]

    def line(b: str) -> str:
        path = f"variables.containerPaths[{b}][{kc.containers(b)}.indexOf(ct)] + '.{'.'.join(flag)}'"
        return f"[{kc.containers(b)}.filter(ct, {bad_container(b)})[0]].map(ct, {_line(forbidden, path)})[0]"

    return _forbid_groups(decl, hits, line)


def _gpu_claims(kc: KindCel, decl: Constraint, violating: _Violating) -> list[Validation]:
    """Nothing: a pod's claims are counted from ResourceClaimTemplates and ResourceClaims, other objects
    a ValidatingAdmissionPolicy cannot read (the enforcement table says so)."""
    return []


_COMPILERS: dict[str, Callable[[KindCel, Constraint, _Violating], list[Validation]]] = {
    ROLE_CAP: _role_cap,
    JOB_CAP: _job_cap,
    FIELD_CAP: _field_cap,
    REQUIRED_FIELD: _required_field,
    REQUIRED_LABEL: _required_label,
    ALLOW_LIST: _allow_list,
    IMAGE_REGISTRIES: _image_registries,
    FORBID_POD_FLAG: _forbid_pod_flag,
    FORBID_VOLUME: _forbid_volume,
    FORBID_CONTAINER_FLAG: _forbid_container_flag,
    GPU_CLAIMS: _gpu_claims,
    # A TrainJob's runtime: no kind with a generated policy references one (TrainJobs get none).
    RUNTIMES: lambda kc, decl, violating: [],
}


# --- the objects -------------------------------------------------------------------------------------


def _variables(kc: KindCel, scope: str, action: str) -> list[dict[str, str]]:
    k = kc.k
    p = "params.spec"
    match = f"{p}.match"
    conditions = [
        "params != null && has(params.spec)",
        f"(has({p}.enforcementAction) ? {p}.enforcementAction : 'Deny') == '{action}'",
        f"(!has({p}.match) || !has({match}.families) || '{k.family}' in {match}.families)",
        f"(!has({p}.match) || !has({match}.kinds) || {match}.kinds.exists(mk, mk.group == '{k.group}' && "
        f"mk.kind == '{k.kind}'))",
        f"(!has({p}.match) || !has({match}.objectSelector) || "
        f"{_selector(f'{match}.objectSelector', _labels('object'))})",
    ]
    if scope == "cluster":
        ns_labels = (
            "(namespaceObject != null && has(namespaceObject.metadata.labels) ? namespaceObject.metadata.labels : {})"
        )
        conditions.append(f"(!has({p}.namespaceSelector) || {_selector(f'{p}.namespaceSelector', ns_labels)})")
        who = f"'{CLUSTER_KIND} ' + params.metadata.name"
    else:
        who = f"'{NAMESPACED_KIND} ' + params.metadata.namespace + '/' + params.metadata.name"
    return [
        {"name": "applies", "expression": " && ".join(conditions)},
        {
            "name": "allowOld",
            "expression": f"oldObject != null && (has({p}.existingViolations) ? {p}.existingViolations : "
            "'Allow') == 'Allow'",
        },
        {"name": "who", "expression": who},
        *({"name": name, "expression": expression} for name, expression in kc.variables()),
    ]


def policy_name(kmap: KindMap, plural: str, scope: str, action: str) -> str:
    return f"{PREFIX}.{scope}.{action.lower()}.{plural}.{kmap.group}"


def kind_documents(kmap: KindMap, plural: str, version: str, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The six policies and bindings of one kind (two policy kinds × three actions)."""
    kc = KindCel(kmap)
    violating = _Violating()
    checks = validations(kc, violating)
    documents: list[dict[str, Any]] = []
    for scope, param_kind in SCOPES:
        for action in ACTIONS:
            name = policy_name(kmap, plural, scope, action)
            metadata = {"name": name, "labels": dict(labels)}
            spec = {
                "paramKind": {"apiVersion": API_VERSION, "kind": param_kind},
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [kmap.group],
                            "apiVersions": [version],
                            "resources": [plural],
                            "operations": ["CREATE", "UPDATE"],
                        }
                    ]
                },
                # An evaluation error refuses the job (a limit fails closed), as the webhook's failurePolicy.
                "failurePolicy": "Fail",
                "variables": _variables(kc, scope, action)
                + [{"name": n, "expression": e} for n, e in violating.variables],
                "validations": [
                    {
                        "expression": c.expression,
                        "messageExpression": c.message,
                        "message": f"{c.rule}: the job violates a {param_kind}",
                        "reason": c.reason,
                    }
                    for c in checks
                ],
            }
            param_ref: dict[str, Any] = {"selector": {}, "parameterNotFoundAction": "Allow"}
            documents.append(
                {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": "ValidatingAdmissionPolicy",
                    "metadata": metadata,
                    "spec": spec,
                }
            )
            documents.append(
                {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": "ValidatingAdmissionPolicyBinding",
                    "metadata": metadata,
                    "spec": {
                        "policyName": name,
                        "paramRef": param_ref,
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
                        "validationActions": [action],
                    },
                }
            )
    return documents


def policy_vap_kinds() -> list[KindMap]:
    return sorted(KINDS.values(), key=lambda m: (m.group, m.kind))


# --- the table ---------------------------------------------------------------------------------------

APISERVER = "apiserver (manifests/policy-vaps)"
WEBHOOK = "webhook"

_ROWS: tuple[tuple[str, str, str], ...] = (
    ("limits.maxReplicasPerRole", APISERVER, "per role, at the largest count (elasticPolicy.maxReplicas)"),
    ("limits.maxReplicasPerJob", APISERVER, "sum over the roles at their largest"),
    (
        "limits.maxGPUsPerPod",
        APISERVER,
        "requests else limits, sidecars and init containers as resource.PodRequests, overhead; the built-in "
        "list with each param's own gpuResources added (exact names and '*' patterns, weights)",
    ),
    ("limits.maxGPUsPerJob", APISERVER, "Σ roles largest × pod; weights in double precision (1e-9 tolerance)"),
    (
        "limits.gpuResources, limits.gpuDeviceClasses across policies",
        WEBHOOK,
        "each list is added to its built-in one (a name given again sets its weight, 0 excludes it) on both sides; "
        "the webhook counts with the union of the matching policies' lists (largest weight per name), a VAP param "
        "with its own: the two agree when every matching policy that sets a GPU limit or a list gives the same "
        "lists (or none does)",
    ),
    (
        "deviceclass.resource.kubernetes.io/<class> container resources",
        APISERVER,
        "counted as devices of the class, weighted by gpuDeviceClasses and the built-in classes",
    ),
    (
        "DRA claims: spec.resourceClaims (ResourceClaimTemplates, shared ResourceClaims), a DeviceClass's "
        "extendedResourceName",
        WEBHOOK,
        "a VAP cannot read other objects, so it counts none of them (the job's claims count 0 there); the webhook "
        "reads them from its informers and refuses what it cannot count (allocationMode: All, an object not there)",
    ),
    ("limits.maxTTLSecondsAfterFinished", APISERVER, "where the kind has the field"),
    ("limits.maxActiveDeadlineSeconds", APISERVER, "where the kind has the field"),
    ("require.ttlSecondsAfterFinished", APISERVER, "where the kind has the field"),
    ("require.activeDeadlineSeconds", APISERVER, "where the kind has the field"),
    (
        "require.fitsQueue",
        WEBHOOK,
        "reads Kueue's LocalQueues, ClusterQueues, ResourceFlavors and Cohorts and Volcano's Queues, which a VAP "
        "cannot: the webhook (informers) and jobgate validate (--cluster-objects) only",
    ),
    ("require.labels (key, values)", APISERVER, "each param's list; several lists = their intersection"),
    ("require.queues", APISERVER, "job-level field (kinds without a queue: webhook warning)"),
    ("require.priorityClassNames", APISERVER, "job-level, or each pod template's for MxJob, GenericJob, DIJob"),
    ("require.schedulerNames", APISERVER, "job-level (Volcano) or each pod template's (unset = default-scheduler)"),
    (
        "require.imageRegistries",
        APISERVER,
        "init, app and ephemeral containers, image volumes (volumes[].image.reference); docker.io normalisation",
    ),
    ("require.forbid", APISERVER, "hostNetwork, hostPID, hostIPC, hostPath (and DIJob spec.volumes), privileged"),
    (
        "require.runtimes",
        WEBHOOK,
        "a Kubeflow Trainer TrainJob's runtimeRef: TrainJobs get no generated policy (their pods are their runtime's)",
    ),
    ("match.families / kinds / objectSelector", APISERVER, "CEL guard per param"),
    ("namespaceSelector (cluster policies)", APISERVER, "CEL against namespaceObject's labels"),
    ("enforcementAction", APISERVER, "one policy + binding per action, CEL keeps the params of that action"),
    ("existingViolations", APISERVER, "CEL on oldObject: Allow excuses the same identity, not worse; Deny none"),
    (
        "field path, error type and message of a refusal",
        APISERVER,
        "the message is the webhook's line for the first failing validation, path and type first (a VAP "
        "validation has no fieldPath), from the same declaration; the webhook lists every finding",
    ),
    (
        "defaults (queue, priorityClassName, schedulerName, TTL, deadline, labels, kueueQueueName)",
        "apiserver (manifests/policy-maps, 1.36+)",
        "MutatingAdmissionPolicies (v1), CREATE only, where the job leaves the field unset, at the webhook's "
        "places; they run before every VAP, so a default that meets a requirement admits the job",
    ),
    (
        "defaults: which policy's value when matching policies differ (scope, priority, equal-priority conflict)",
        WEBHOOK,
        "the apiserver runs each param alone, in no set order, and the first to write a field wins: the webhook "
        "takes the namespaced policy's, then the higher priority, and writes none on a tie; agree when one policy, "
        "or policies giving the same value, default a field",
    ),
    (
        "defaults on a field the family also defaults (Volcano schedulerName, KubeDL XGBoostJob TTL)",
        WEBHOOK,
        "the webhook writes the policy's first; in the apiserver the family's MutatingAdmissionPolicy (cel-only) "
        "may run first and keep its own value",
    ),
    (
        "conflicts (empty allow-list intersection, equal-priority defaults)",
        WEBHOOK,
        "needs every policy at once; in the apiserver a job fails each list separately (still refused, other message), "
        "but a kind without the field is not refused there",
    ),
    ("not-applicable notices (a TTL on MxJob, a queue on DIJob …)", WEBHOOK, "a warning; the VAPs skip the field"),
    ("unparseable GPU quantities", WEBHOOK, "a warning; the VAPs count them as 0, as the webhook"),
    (
        "dominated Warn entries",
        WEBHOOK,
        "the webhook drops a Warn limit a stricter Deny one covers; the apiserver warns for it as well",
    ),
    (
        "TrainingJobPolicyException (waivers until expiresAt), spec.exceptions",
        WEBHOOK,
        "a VAP's param is the policy alone and cannot read exceptions: without the webhook nothing is waived, "
        "the safe side (a job an exception covers is refused as if it had none); the MAPs are unaffected "
        "(exceptions never touch defaults)",
    ),
    ("policy status, violations of stored jobs, events, metrics", "controller", "section 4"),
)


def enforcement_rows() -> list[tuple[str, str, str]]:
    """(constraint, where it is enforced when the webhook is absent, note)."""
    return list(_ROWS)
