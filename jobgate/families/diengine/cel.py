"""The DI-engine family's rules and defaults (``rules/families/diengine.py``: DIJob) for the apiserver.

``tasks`` is a list (at most ``MAX_TASKS``, a bound the webhook checks too); each task's pods
get ``spec.volumes`` (at most ``MAX_SHARED_VOLUMES``) after their own volumes. What the pod-template
rules say of a pod's volumes therefore reads both lists: the names of the shared volumes are
checked where they are written (``spec.volumes[i].name``), a shared volume may not share its name
with a pod's own, the two lists together stay within the pod's bound, and a mount may name a
volume of either list. A rule that reads both sits on ``spec``, the narrowest place that sees
both, and reports at ``spec.tasks`` or ``spec.volumes``.

A mount of a volume that is not there is checked once per task index (a rule for task 0, one
for task 1, ...): one rule over every task would cost more than the apiserver allows a rule
(every container × every mount × every volume of both lists, for every task).
"""

from __future__ import annotations

import re

from jobgate.engine.registry import JobKind
from jobgate.families.diengine import rules as diengine
from jobgate.forms.base import Declarations
from jobgate.forms.catalogue import (
    LIST_ITEMS,
    Default,
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    bound,
    unique_field,
)
from jobgate.generate.cel.jobmeta import DNS1123_LABEL_PATTERN, NAME, derived_names_rule, names_a_pod
from jobgate.generate.cel.podtemplate import TemplateSite, pod_template_rules
from jobgate.rules.names import DNS1123_LABEL_MESSAGE, LABEL_MAX_LENGTH
from jobgate.rules.podtemplate import POD_TEMPLATE_BOUNDS

TASKS = ("spec", "tasks")
TASK = (*TASKS, LIST_ITEMS)
SHARED = ("spec", "volumes")
_LABEL_PROBLEM = "^(" + re.escape(DNS1123_LABEL_MESSAGE) + "|must be no more than 63 )"
_CONTAINER_LISTS = ("containers", "initContainers")


def _named(task: str) -> str:
    # A task whose name is no label names no pod (dijob/task-name refuses it), as rules.py counts.
    return names_a_pod(f"{task}.name")


# The defaults, the lists' bounds and the tasks' types and names are declared (declared.py); the rest is
# written here.


def rules(kind: JobKind, declared: Declarations) -> list[Rule]:
    """The kind's rules, its declared ones (``declared``, compiled by the generator) in their places."""
    assert kind is diengine.DIJOB
    site = TemplateSite((*TASK, "template"), "spec.tasks[*].template")
    template_rules = [r for r in pod_template_rules(site) if not r.id.endswith("/mounted-volumes")]
    return [
        _derived_names(),
        *(r for r in declared.rules() if r.id == "dijob/bounds"),
        _pod_volumes_bound(),
        *(r for r in declared.rules() if r.id != "dijob/bounds"),
        _shared_volume_names(),
        _shared_volume_names_unique(),
        *(_mounted_volumes(key) for key in _CONTAINER_LISTS),
        *template_rules,
    ]


def _derived_names() -> Rule:
    """``<job>-<name>-<index>`` of every task's pods (the first task of a name counts)."""
    tasks = "self.spec.tasks"

    def length(task: str) -> str:
        first = f"{tasks}.filter(same, has(same.name) && same.name == {task}.name)[0]"
        count = f"(has({first}.replicas) && {first}.replicas > 0 ? {first}.replicas : 1)"
        return f"(size({NAME}) + size({task}.name) + size(string({count} - 1)) + 2)"

    longest = f"{tasks}.map(q, {_named('q')} ? {length('q')} : 0).max()"
    longest_name = f"{tasks}.map(t, {_named('t')} && {length('t')} == {longest} ? t.name : '').filter(n, n != '')[0]"
    return derived_names_rule(
        "job/derived-names",
        "the pods' and services' names (<job>-<task name>-<index>) fit in 63 characters",
        f"{NAME} + '-' + {longest_name} + '-<index>'",
        f"!has({tasks}) || {tasks}.all(t, !{_named('t')} || {length('t')} <= {LABEL_MAX_LENGTH})",
    )


def _pod_volumes_bound() -> Rule:
    limit = POD_TEMPLATE_BOUNDS["volumes"]
    own = "(has(t.template.spec.volumes) ? size(t.template.spec.volumes) : 0)"
    return Rule(
        "dijob/pod-volumes-bound",
        f"a pod's volumes and spec.volumes together: at most {limit}",
        Where.CRD_RULE,
        # A pod's own list too long on its own is refused by the schema there (pod-template/bounds' keyword).
        (Produces("spec.tasks[*].template.spec.volumes", "TOO_MANY", apiserver_drops=4),),
        (
            Placement(
                ("spec",),
                validation=Validation(
                    rule="!has(self.volumes) || size(self.volumes) == 0 || !has(self.tasks) || self.tasks.all(t, "
                    f"!has(t.template) || !has(t.template.spec) || {own} + size(self.volumes) <= {limit})",
                    message=f"Too many: must have at most {limit} items: a pod's volumes with spec.volumes",
                    field_path=".tasks",
                ),
            ),
        ),
        why="reported at the tasks (a rule on a list cannot name the item)",
    )


def _shared_volume_names() -> Rule:
    return Rule(
        "dijob/shared-volumes",
        "shared volumes have names, DNS-1123 labels",
        Where.SCHEMA,
        (
            Produces("spec.volumes[*].name", "REQUIRED"),
            Produces("spec.volumes[*].name", "INVALID", _LABEL_PROBLEM),
        ),
        (
            Placement(
                (*SHARED, LIST_ITEMS),
                {
                    "properties": {
                        "name": {
                            "description": "Name of the volume: a DNS-1123 label, unique among each pod's volumes.",
                            "type": "string",
                            "pattern": DNS1123_LABEL_PATTERN,
                            "maxLength": LABEL_MAX_LENGTH,
                        }
                    },
                    "required": ["name"],
                },
            ),
        ),
    )


def _shared_volume_names_unique() -> Rule:
    own = "t.template.spec.volumes"
    in_pod = (
        f"(has(t.template) && has(t.template.spec) && has({own}) && {own}.exists(w, has(w.name) && w.name == {{n}}))"
    )
    return Rule(
        "dijob/shared-volume-names-unique",
        "shared volume names unique, and none the name of a pod's own volume",
        Where.CRD_RULE,
        (Produces("spec.volumes[*].name", "DUPLICATE", apiserver_drops=2),),
        (
            Placement(
                SHARED,
                validation=unique_field("name"),
            ),
            Placement(
                ("spec",),
                validation=Validation(
                    rule="!has(self.volumes) || !has(self.tasks) || "
                    f"!self.volumes.exists(v, has(v.name) && self.tasks.exists(t, {in_pod.format(n='v.name')}))",
                    message_expression="'Duplicate value: \"' + self.volumes.map(v, has(v.name) ? v.name : '')"
                    f".filter(n, n != '' && self.tasks.exists(t, {in_pod.format(n='n')}))[0] + '\"'",
                    field_path=".volumes",
                ),
            ),
        ),
        why="reported at the list (a rule on a list cannot name the item)",
    )


def _mounted_volumes(key: str) -> Rule:
    """Every mount names a volume of the pod or of spec.volumes: one rule per task index."""
    placements = []
    for index in range(diengine.MAX_TASKS):
        spec = f"self.tasks[{index}].template.spec"

        # The volumes' names listed once, each mount's looked up in them natively (not mounts x volumes reads).
        names = (
            f"(has({spec}.volumes) ? {spec}.volumes.map(v, has(v.name), v.name) : []) + "
            "(has(self.volumes) ? self.volumes.map(v, has(v.name), v.name) : [])"
        )
        mounted = (
            f"{spec}.{key}.all(c, !has(c.volumeMounts) || "
            "c.volumeMounts.all(m, !has(m.name) || m.name == '' || m.name in names))"
        )
        placements.append(
            Placement(
                ("spec",),
                validation=Validation(
                    rule=f"!has(self.tasks) || size(self.tasks) <= {index} || "
                    f"!has(self.tasks[{index}].template) || !has({spec}) || !has({spec}.{key}) || "
                    + bound(names, "names", mounted),
                    # The webhook names the mount: a message naming it costs as much as the rule again,
                    # which, for every task, the apiserver's limit of all rules of the CRD does not allow.
                    message="Not found: a volume mount names no volume of the pod nor of spec.volumes",
                    field_path=".tasks",
                ),
            )
        )
    return Rule(
        f"pod-template/{key}/mounted-volumes",
        f"{key}: every volume mount names a volume of the pod or of spec.volumes",
        Where.CRD_RULE,
        (Produces(f"spec.tasks[*].template.spec.{key}[*].volumeMounts[*].name", "NOT_FOUND", apiserver_drops=8),),
        tuple(placements),
        why="reported at the tasks (a rule on spec, which sees spec.volumes, cannot name the task)",
    )


# --- defaults: declared (declared.py) ----------------------------------------------------------


def defaults(kind: JobKind) -> list[Default]:
    """Every default is declared (declared.py): none written here."""
    assert kind is diengine.DIJOB
    return []
