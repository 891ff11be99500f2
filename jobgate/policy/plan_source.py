"""The clean path written out as Python source, in the pure-Python build only.

Interpreted, :meth:`jobgate.policy.plan._Plan.clean` spends most of its time on what is the same for
every job of a plan: which constraints exist, where each field is, the calls between its parts. So
the pure Python engine writes each plan out once as one function of the job (:func:`specialised_clean`),
with the plan's bounds, paths and sets as constants and every part inline, and its defaults as one
function (:func:`specialised_writer`). It answers as ``clean`` does and is held to it and to the
checks by tests/unit/test_policy_plan.py; in any shape it was not written for (a subclass of dict or
list, a Mapping that is not a dict) it says "not clean" and leaves the answer to the checks. The
compiled engine keeps the compiled method.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobgate.policy.fieldmap import (
    FieldPath,
    KindMap,
    get_path,
    pod_sizes,
)
from jobgate.policy.gpu import (
    QuantityError,
    gpu_weight,
    parse_quantity,
)
from jobgate.policy.plan import _EPHEMERAL, _IMAGE_MEMO_LIMIT, _INITS, _UNSET, _pointers

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.policy.plan import _Plan


# Calls of policy_findings and policy_defaults (a review makes one of each, /mutate only the
# second) a plan serves with the general code before it is written out. Writing and compiling the
# two functions costs what checking about nine jobs does (20 M instructions, the bench's TFJob and
# policies), and they save about 40 k of a job's 2.4 M after: a check of a few files (a pre-commit
# hook, a CI step) never pays for it, a long run or the webhook pays it once.
SPECIALISE_AFTER = 64


class _Source:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {}

    def add(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def constant(self, value: Any) -> str:
        name = f"_c{len(self.constants)}"
        self.constants[name] = value
        return name

    def get(self, indent: int, var: str, source: str, path: FieldPath) -> None:
        """``var`` = the value at ``path`` under ``source`` (None when missing); not clean when a step
        is neither a dict nor missing (the checks decide what such a shape means)."""
        if source == "job" and path[:1] == ("spec",):
            source, path = "jspec", path[1:]  # the job's spec, read once (a dict: see specialised_clean)
        if not path:
            self.add(indent, f"{var} = {source}")
            return
        # ``source`` is a dict (the job, its spec): the first step needs no test.
        self.add(indent, f"{var} = {source}.get({path[0]!r})")
        for segment in path[1:]:
            self.add(indent, f"if type({var}) is dict:")
            self.add(indent + 1, f"{var} = {var}.get({segment!r})")
            self.add(indent, f"elif {var} is not None:")
            self.add(indent + 1, "return False")

    def job_field(self, indent: int, var: str, locator: Any, path: FieldPath | None) -> None:
        """``var`` = a job-level field: at ``path``, the plan's fixed path for it, else where ``locator`` says."""
        if path is None:
            self.add(indent, f"{var} = _get_path(job, {self.constant(locator)}(job))")
        else:
            self.get(indent, var, "job", path)

    def container(self, indent: int, plan: _Plan) -> None:
        """The checks of one container ``c`` (a dict)."""
        if plan.privileged:
            self.add(indent, 'sc = c.get("securityContext")')
            self.add(indent, 'if isinstance(sc, dict) and sc.get("privileged") is True:')
            self.add(indent + 1, "return False")
        if plan.registries:
            self.add(indent, 'im = c.get("image")')
            self.add(indent, "if type(im) is str:")
            self.add(indent + 1, "known = _images.get(im)")
            self.add(indent + 1, "if known is None:")
            self.add(indent + 2, "known = _image_allowed(im)")
            self.add(indent + 1, "if not known:")
            self.add(indent + 2, "return False")
            self.add(indent, "elif isinstance(im, str):")
            self.add(indent + 1, "return False")

    def volumes(self, indent: int, var: str) -> None:
        """The image volumes of the list ``var`` (a list): as :meth:`_Plan._volumes_clean`."""
        self.add(indent, f"for volume in {var}:")
        self.add(indent + 1, "if type(volume) is not dict:")
        self.add(indent + 2, "if isinstance(volume, dict):")
        self.add(indent + 3, "return False")
        self.add(indent + 2, "continue")
        self.add(indent + 1, 'source = volume.get("image")')
        self.add(indent + 1, "if source is None:")
        self.add(indent + 2, "continue")
        self.add(indent + 1, "if type(source) is not dict:")
        self.add(indent + 2, "if isinstance(source, dict):")
        self.add(indent + 3, "return False")
        self.add(indent + 2, "continue")
        self.add(indent + 1, 'im = source.get("reference")')
        self.add(indent + 1, "if type(im) is str:")
        self.add(indent + 2, "known = _images.get(im)")
        self.add(indent + 2, "if known is None:")
        self.add(indent + 3, "known = _image_allowed(im)")
        self.add(indent + 2, "if not known:")
        self.add(indent + 3, "return False")
        self.add(indent + 1, "elif isinstance(im, str):")
        self.add(indent + 2, "return False")

    def containers(self, indent: int, plan: _Plan, list_name: str) -> None:
        self.add(indent, f"items = spec.get({list_name!r})")
        self.add(indent, "if type(items) is list:")
        self.add(indent + 1, "for c in items:")
        self.add(indent + 2, "if type(c) is dict:")
        self.container(indent + 3, plan)
        self.add(indent + 2, "elif isinstance(c, dict):")
        self.add(indent + 3, "return False")
        self.add(indent, "elif isinstance(items, list):")
        self.add(indent + 1, "return False")

    def quantities(self, indent: int, source: str, skip: str | None) -> None:
        """Add the weighted GPUs of ``source`` (requests or limits) to ``pod``."""
        # Only the names not known to be other resources (cpu, memory, ...) are looked at; most
        # containers ask for none other, which one test in C settles.
        self.add(indent, f"if not _not_gpus.issuperset({source}):")
        indent += 1
        self.add(indent, f"for name in {source}:")
        self.add(indent + 1, "if name in _not_gpus:")
        self.add(indent + 2, "continue")
        if skip:
            self.add(indent + 1, f"if {skip} and name in {skip}:")
            self.add(indent + 2, "continue")
        self.add(indent + 1, "w = _weights.get(name, _UNSET)")
        self.add(indent + 1, "if w is _UNSET:")
        self.add(indent + 2, "if type(name) is not str:")
        self.add(indent + 3, "return False")
        self.add(indent + 2, "w = _weights[name] = _gpu_weight(name, _resources)")
        self.add(indent + 1, "if w is None:")
        self.add(indent + 2, "if len(_not_gpus) >= _LIMIT:")
        self.add(indent + 3, "_not_gpus.clear()")
        self.add(indent + 2, "_not_gpus.add(name)")
        self.add(indent + 2, "continue")
        self.add(indent + 1, f"raw = {source}[name]")
        self.add(indent + 1, "if type(raw) is int:")
        self.add(indent + 2, "pod += raw * w")
        self.add(indent + 1, "else:")
        self.add(indent + 2, "try:")
        self.add(indent + 3, "pod += _parse_quantity(raw) * w")
        self.add(indent + 2, "except _QuantityError:")
        self.add(indent + 3, "return False")


def specialised_clean(plan: _Plan, kmap: KindMap) -> Any:
    """``plan.clean`` for this plan's jobs, as one function of the job (see above)."""
    if not plan.usable:
        return lambda job, ext: False
    src = _Source()
    src.constants.update(
        _get_path=get_path,
        _pod_sizes=pod_sizes,
        _kmap=kmap,
        _Mapping=Mapping,
        _UNSET=_UNSET,
        _images=plan.images,
        _image_allowed=plan.image_allowed,
        _weights=plan.gpu_weights,
        _resources=plan.gpu_resources,
        _gpu_weight=gpu_weight,
        _parse_quantity=parse_quantity,
        _QuantityError=QuantityError,
        _not_gpus=plan.not_gpus,
        _LIMIT=_IMAGE_MEMO_LIMIT,
    )
    src.add(0, "def clean(job, ext):")
    src.add(1, "if type(job) is not dict:")
    src.add(2, "return False")
    # A job without a spec object is left to the checks (the family's rules refuse it anyway).
    src.add(1, 'jspec = job.get("spec")')
    src.add(1, "if type(jspec) is not dict:")
    src.add(2, "return False")
    for locator, required, maximum, fixed in plan.lifetime:
        src.job_field(1, "v", locator, fixed)
        src.add(1, "if type(v) is int:")
        src.add(2, f"if v > {src.constant(maximum)}:" if maximum is not None else "pass")
        if maximum is not None:
            src.add(3, "return False")
        src.add(1, f"elif {required!r} or (isinstance(v, int) and type(v) is not bool):")
        src.add(2, "return False")
    for locator, allowed, fixed in plan.job_allow:
        src.job_field(1, "v", locator, fixed)
        src.add(1, f"if type(v) is not str or v not in {src.constant(frozenset(allowed))}:")
        src.add(2, "return False")
    if plan.labels:
        src.get(1, "labels", "job", ("metadata", "labels"))
        src.add(1, "if type(labels) is not dict:")
        src.add(2, "return False")
        for key, allowed_values in plan.labels:
            src.add(1, f"if {key!r} not in labels:")
            src.add(2, "return False")
            if allowed_values is not None:
                src.add(1, f"v = labels[{key!r}]")
                src.add(1, f"if type(v) is not str or v not in {src.constant(frozenset(allowed_values))}:")
                src.add(2, "return False")
    if plan.host_path or plan.registries:
        src.get(1, "volumes", "job", ("spec", "volumes"))
        src.add(1, "if type(volumes) is list:")
        if plan.host_path:
            src.add(2, "for volume in volumes:")
            src.add(3, 'if isinstance(volume, dict) and volume.get("hostPath") is not None:')
            src.add(4, "return False")
        if plan.registries:
            src.volumes(2, "volumes")
        src.add(1, "elif isinstance(volumes, list):")
        src.add(2, "return False")
    count = plan.count_gpus
    src.add(1, "replicas = 0")
    src.add(1, "gpus = 0")
    if kmap.replica_layout == "map":
        # fieldmap.pod_sizes inline for the kinds that keep their roles in a map.
        src.add(1, f"items = jspec.get({kmap.replica_field!r})")
        src.add(1, "if not isinstance(items, dict):")
        src.add(2, "items = {}")
        if kmap.elastic:
            src.add(1, 'high = jspec.get("elasticPolicy")')
            src.add(1, 'high = high.get("maxReplicas") if isinstance(high, dict) else None')
            src.add(1, "if type(high) is not int:")
            src.add(2, "if isinstance(high, int) and type(high) is not bool:")
            src.add(3, "return False")
            src.add(2, "high = None")
        src.add(1, "for role, item in items.items():")
        src.add(2, "if not isinstance(item, dict):")
        src.add(3, "continue")
        src.add(2, 'largest = item.get("replicas")')
        src.add(2, "if type(largest) is not int:")
        src.add(3, "if isinstance(largest, int) and type(largest) is not bool:")
        src.add(4, "return False")
        src.add(3, f"largest = 0 if role in {src.constant(frozenset(kmap.default_zero))} else 1")
        if kmap.elastic:
            src.add(2, 'if high is not None and role == "Worker" and high > largest:')
            src.add(3, "largest = high")
        src.add(2, 'template = item.get("template")')
        src.add(2, "if not isinstance(template, dict):")
        src.add(3, "template = None")
    else:
        src.add(1, "for largest, template in _pod_sizes(_kmap, job):")
    if plan.max_role is not None:
        src.add(2, f"if largest > {src.constant(plan.max_role)}:")
        src.add(3, "return False")
    src.add(2, "replicas += largest")
    src.add(2, "pod = 0")
    src.add(2, 'spec = template.get("spec") if template is not None else None')
    src.add(2, "if type(spec) is not dict:")
    src.add(3, "if spec is not None and isinstance(spec, _Mapping):")
    src.add(4, "return False")
    if any(unset is None or unset not in allowed for _, allowed, unset in plan.template_allow):
        src.add(3, "return False")  # an allow-list's field is unset and its unset meaning is not allowed
    src.add(2, "else:")
    for field, allowed, unset in plan.template_allow:
        src.add(3, f"v = spec.get({field!r})")
        if unset is not None:
            src.add(3, "if v is None:")
            src.add(4, f"v = {unset!r}")
        src.add(3, f"if type(v) is not str or v not in {src.constant(frozenset(allowed))}:")
        src.add(4, "return False")
    if plan.host_path or plan.registries:
        src.add(3, 'volumes = spec.get("volumes")')
        src.add(3, "if type(volumes) is list:")
        if plan.host_path:
            src.add(4, "for volume in volumes:")
            src.add(5, 'if isinstance(volume, dict) and volume.get("hostPath") is not None:')
            src.add(6, "return False")
        if plan.registries:
            src.volumes(4, "volumes")
        src.add(3, "elif isinstance(volumes, list):")
        src.add(4, "return False")
    if plan.rare_pod_fields:
        src.add(3, f"if not spec.keys().isdisjoint({src.constant(plan.rare_pod_fields)}):")
    for flag in plan.host_flags:
        src.add(4, f"if spec.get({flag!r}) is True:")
        src.add(5, "return False")
    if count:
        src.add(4, 'overhead = spec.get("overhead")')
        src.add(4, "if overhead is not None and isinstance(overhead, _Mapping):")
        src.add(5, "return False")
        src.add(4, 'if spec.get("resourceClaims"):')
        src.add(5, "return False")
        src.add(4, f"items = spec.get({_INITS!r})")
        src.add(4, "if isinstance(items, list) and len(items) > 0:")
        src.add(5, "return False")
    if plan.walk_containers:
        if not count:  # counting GPUs, any init container was sent to the checks above
            src.containers(4, plan, _INITS)
        src.containers(4, plan, _EPHEMERAL)
    src.add(3, 'containers = spec.get("containers")')
    src.add(3, "if type(containers) is not list:")
    src.add(4, "if isinstance(containers, list):")
    src.add(5, "return False")
    src.add(4, "containers = ()")
    src.add(3, "for c in containers:")
    src.add(4, "if type(c) is not dict:")
    src.add(5, "if isinstance(c, _Mapping):")
    src.add(6, "return False")
    src.add(5, "continue")
    if plan.walk_containers:
        src.container(4, plan)
    if count:
        src.add(4, 'res = c.get("resources")')
        src.add(4, "if res is None:")
        src.add(5, "continue")
        src.add(4, "if type(res) is not dict:")
        src.add(5, "if isinstance(res, _Mapping):")
        src.add(6, "return False")
        src.add(5, "continue")
        src.add(4, 'if res.get("claims"):')
        src.add(5, "return False")
        src.add(4, 'requests = res.get("requests")')
        src.add(4, 'limits = res.get("limits")')
        src.add(4, "if (requests is not None and type(requests) is not dict) or (")
        src.add(5, "limits is not None and type(limits) is not dict")
        src.add(4, "):")
        src.add(5, "return False")
        # A DeviceClass's extended resource (rare; ext is then non-empty): the checks count it.
        src.add(4, "if ext and (")
        src.add(5, "(requests and not ext.keys().isdisjoint(requests))")
        src.add(5, "or (limits and not ext.keys().isdisjoint(limits))")
        src.add(4, "):")
        src.add(5, "return False")
        src.add(4, "if requests:")
        src.quantities(5, "requests", None)
        src.add(4, "if limits:")
        src.quantities(5, "limits", "requests")
        if plan.max_pod_gpus is not None:
            src.add(2, f"if pod > {src.constant(plan.max_pod_gpus)}:")
            src.add(3, "return False")
        src.add(2, "if pod:")
        src.add(3, "gpus += pod * largest")
    if plan.max_replicas is not None:
        src.add(1, f"if replicas > {src.constant(plan.max_replicas)}:")
        src.add(2, "return False")
    if plan.max_job_gpus is not None:
        src.add(1, f"if gpus > {src.constant(plan.max_job_gpus)}:")
        src.add(2, "return False")
    src.add(1, "return True")
    namespace = dict(src.constants)
    exec(compile("\n".join(src.lines), f"<policy plan {kmap.group}/{kmap.kind}>", "exec"), namespace)
    clean = namespace["clean"]
    clean.source = "\n".join(src.lines)
    return clean


def specialised_writer(plan: _Plan) -> Any:
    """The defaults of a plan with fixed paths written into a copy of the job, as one function
    ``write(job, ops)``: the job with :func:`policy_defaults`' operations set, each container on
    the way copied once and a missing one created, and (``ops``, a JSON Patch list, unless None) the
    operations a ``PatchRecorder`` records for them, in the same order (see ``policy.review``);
    the job itself when no default applies. None when the plan's defaults are not all fixed."""
    if plan.fixed_defaults is None:
        return None
    src = _Source()
    # One variable per container on the way, None until copied (or created) in this call.
    containers: dict[FieldPath, str] = {(): "root"}

    def ensure(indent: int, path: FieldPath) -> str:
        """Emit, in the current block, the copy (or creation) of the container at ``path`` and of
        those above it, each unless an earlier block did; its variable."""
        if not path:
            return "root"
        parent = ensure(indent, path[:-1])
        if path not in containers:
            containers[path] = f"n{len(containers)}"
        name = containers[path]
        src.add(indent, f"if {name} is None:")
        src.add(indent + 1, f"{name} = {parent}.get({path[-1]!r})")
        src.add(indent + 1, f"if {name} is None:")
        src.add(indent + 2, f"{name} = {{}}")
        src.add(indent + 2, "if ops is not None:")
        src.add(
            indent + 3,
            f'ops.append({{"op": {_op(str(path[-1]), parent)}, "path": {_pointers(path)[-1]!r}, "value": {name}}})',
        )
        src.add(indent + 1, "else:")
        src.add(indent + 2, f"{name} = dict({name})")
        src.add(indent + 1, f"{parent}[{path[-1]!r}] = {name}")
        return name

    def write(indent: int, path: FieldPath, value: Any) -> None:
        src.add(indent, "if root is job:")
        src.add(indent + 1, "root = dict(job)")
        owner = ensure(indent, path[:-1])
        pointer = _pointers(path)[-1]
        constant = src.constant(value)
        src.add(indent, "if ops is not None:")
        src.add(
            indent + 1, f'ops.append({{"op": {_op(str(path[-1]), owner)}, "path": {pointer!r}, "value": {constant}}})'
        )
        src.add(indent, f"{owner}[{path[-1]!r}] = {constant}")

    # Each default is tested on the job as received, which is never changed: as policy_defaults
    # tests them all before any is written.
    for path, default in plan.fixed_defaults:
        src.add(1, f"if {_unset_condition(path)}:")
        write(2, path, default)
    if plan.default_labels:
        # _labels_to_default inline.
        src.add(1, 'labels = job.get("metadata")')
        src.add(1, "if labels is None:")
        src.add(2, "labels = {}")
        src.add(1, "elif isinstance(labels, dict):")
        src.add(2, 'labels = labels.get("labels")')
        src.add(2, "if labels is None:")
        src.add(3, "labels = {}")
        src.add(1, "if isinstance(labels, dict):")
        for key, value in plan.default_labels:
            src.add(2, f"if {key!r} not in labels:")
            write(3, ("metadata", "labels", key), value)
    src.lines = [
        "def write(job, ops):",
        "    root = job",
        *(f"    {name} = None" for path, name in containers.items() if path),
        *src.lines,
        "    return root",
    ]
    namespace = dict(src.constants)
    exec(compile("\n".join(src.lines), "<policy defaults written>", "exec"), namespace)
    write_defaults = namespace["write"]
    write_defaults.source = "\n".join(src.lines)
    return write_defaults


def _op(key: str, container: str) -> str:
    """The expression of a recorded operation's name: ``replace`` for a key present (as null), else ``add``."""
    return f'"replace" if {key!r} in {container} else "add"'


def _unset_condition(path: FieldPath, var: str = "v", source: str = "job") -> str:
    """:func:`_unset_at` of ``source`` at ``path`` as one expression (``var`` its scratch variable)."""
    head, *rest = path
    if not rest:
        return f"{source}.get({head!r}) is None"
    inner = _unset_condition(tuple(rest), var, var)
    return f"(({var} := {source}.get({head!r})) is None or (isinstance({var}, dict) and {inner}))"


def _specialise(plan: _Plan, kmap: KindMap) -> Any:
    """Count a call served by ``plan``; write the plan out at the SPECIALISE_AFTER-th. ``plan.fast``."""
    plan.uses += 1
    if plan.uses >= SPECIALISE_AFTER:
        plan.fast = specialised_clean(plan, kmap)
        plan.fast_write = specialised_writer(plan)
    return plan.fast
