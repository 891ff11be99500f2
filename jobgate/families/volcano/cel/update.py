"""What an UPDATE of a Volcano job may change (``rules/families/volcano/update.py``) for the apiserver:
transition rules on the spec, which compare it with the stored one (``oldSelf``).

Only minAvailable, priorityClassName and each task's replicas and minAvailable may change (and a
volume's claim name when it has a claim spec: the controller writes it). Fields are compared as
the webhook compares them: unset, null and empty lists or maps alike where CEL can see them (the
job's and the tasks' own fields); a pod template or a claim spec (objects of any depth) as the
apiserver compares them, nulls and empty values included.
"""

from __future__ import annotations

import re

from jobgate.families.volcano.cel.common import SPEC, TASK_INDEXES, present
from jobgate.families.volcano.rules.bounds import VOLCANO_BOUNDS
from jobgate.families.volcano.rules.update import UPDATE_FORBIDDEN
from jobgate.generate.cel.catalogue import Placement, Produces, Rule, Validation, Where

_POLICY_INDEXES = "[" + ", ".join(str(i) for i in range(VOLCANO_BOUNDS["policies"])) + "]"
_VOLUME_INDEXES = "[" + ", ".join(str(i) for i in range(VOLCANO_BOUNDS["volumes"])) + "]"
_SAME_COUNT = "(has(self.tasks) ? size(self.tasks) : 0) == (has(oldSelf.tasks) ? size(oldSelf.tasks) : 0)"


def _same(a: str, b: str, path: str, *, non_empty: bool = False) -> str:
    """CEL true when the field at ``path`` is set (``non_empty``: and not empty) in both and equal,
    or in neither."""
    set_a, set_b = present(a, path), present(b, path)
    if non_empty:
        set_a, set_b = f"({set_a} && size({a}.{path}) > 0)", f"({set_b} && size({b}.{path}) > 0)"
    return f"({set_a} == {set_b} && (!{set_a} || {a}.{path} == {b}.{path}))"


def _same_list(a: str, b: str, indexes: str, same_item: str, index: str) -> str:
    """Two lists (empty and unset alike) of the same length with ``same_item`` (CEL of ``{x}``, ``{y}``)
    true of the items at each index (the variable ``index``, distinct from any enclosing one)."""
    size_a, size_b = f"(has({a}) ? size({a}) : 0)", f"(has({b}) ? size({b}) : 0)"
    item = same_item.replace("{x}", f"{a}[{index}]").replace("{y}", f"{b}[{index}]")
    return f"({size_a} == {size_b} && ({size_a} == 0 || {indexes}.all({index}, {index} >= {size_a} || {item})))"


def _topology(a: str, b: str, at: str) -> str:
    return " && ".join(_same(a, b, f"{at}.{f}") for f in ("mode", "highestTierAllowed", "highestTierName"))


def _policy(a: str, b: str) -> str:
    scalars = " && ".join(_same(a, b, f) for f in ("action", "event", "exitCode", "timeout"))
    return f"({scalars} && {_same(a, b, 'events', non_empty=True)})"


def _policies(a: str, b: str) -> str:
    return _same_list(f"{a}.policies", f"{b}.policies", _POLICY_INDEXES, _policy("{x}", "{y}"), "pi")


def _task_fields(a: str, b: str) -> list[tuple[str, str]]:
    """(field, CEL of its sameness) of a task's fields, replicas and minAvailable apart."""
    partition = " && ".join(
        _same(a, b, f"partitionPolicy.{f}") for f in ("totalPartitions", "partitionSize", "minPartitions")
    )
    return [
        ("name", _same(a, b, "name")),
        ("template", _same(a, b, "template")),
        ("policies", _policies(a, b)),
        ("topologyPolicy", _same(a, b, "topologyPolicy")),
        ("maxRetry", _same(a, b, "maxRetry")),
        ("dependsOn", f"{_same(a, b, 'dependsOn.name', non_empty=True)} && {_same(a, b, 'dependsOn.iteration')}"),
        ("partitionPolicy", f"{partition} && {_topology(a, b, 'partitionPolicy.networkTopology')}"),
    ]


def _volume(a: str, b: str) -> str:
    # The claim's name is the controller's to write when the volume has a claim spec.
    claim_name = f"((has({a}.volumeClaim) && has({b}.volumeClaim)) || {_same(a, b, 'volumeClaimName')})"
    return f"({_same(a, b, 'mountPath')} && {_same(a, b, 'volumeClaim')} && {claim_name})"


def _spec_fields() -> list[tuple[str, str]]:
    """(field, CEL of its sameness in self and oldSelf) of the spec's fields that may not change."""
    a, b = "self", "oldSelf"
    fields = [
        (f, _same(a, b, f))
        for f in ("schedulerName", "queue", "maxRetry", "ttlSecondsAfterFinished", "minSuccess", "runningEstimate")
    ]
    fields += [
        ("networkTopology", _topology(a, b, "networkTopology")),
        ("plugins", _same(a, b, "plugins", non_empty=True)),
        ("policies", _policies(a, b)),
        ("volumes", _same_list(f"{a}.volumes", f"{b}.volumes", _VOLUME_INDEXES, _volume("{x}", "{y}"), "vi")),
    ]
    # A task's fields are compared when the tasks are as many (else the count is reported), each
    # field by a rule of its own.
    fields += [
        ("tasks", f"!({_SAME_COUNT}) || !has(self.tasks) || {TASK_INDEXES}.all(ti, ti >= size(self.tasks) || ({same}))")
        for _, same in _task_fields("self.tasks[ti]", "oldSelf.tasks[ti]")
    ]
    return fields


def update_rules() -> list[Rule]:
    """The fields an UPDATE may not change; the number of tasks is declared (``declared.py``)."""
    # The webhook names the changed field down to three levels below spec (spec.tasks[0].template,
    # spec.plugins.mpi[0]); the apiserver names the spec's field: as many segments fewer.
    shapes = ("*", "*.*", "*[*]", "*.*.*", "*.*[*]", "*[*].*", "*[*][*]")
    forbidden = "^" + re.escape(UPDATE_FORBIDDEN) + "$"
    immutable = Rule(
        "volcano/update/immutable",
        "an UPDATE changes only minAvailable, priorityClassName and the tasks' replicas and minAvailable",
        Where.TRANSITION,
        tuple(
            Produces(f"spec.{shape}", "FORBIDDEN", forbidden, apiserver_drops=shape.count(".") + shape.count("["))
            for shape in shapes
        ),
        tuple(
            Placement(
                SPEC,
                validation=Validation(
                    rule=same,
                    message=UPDATE_FORBIDDEN,
                    field_path=f".{field}",
                    reason="FieldValueForbidden",
                ),
            )
            for field, same in _spec_fields()
        ),
        why="reported at the spec's field (the webhook names the field inside it); a pod template or a claim "
        "spec is compared as the apiserver compares objects (CEL cannot see into their unknown fields): an UPDATE "
        "that only adds or drops an empty list or object, or a null, inside one (env: [], metadata: {}, "
        "metadata.creationTimestamp: null as Go clients write it) is refused, where the webhook's comparison "
        "(Volcano's) admits it",
    )
    return [immutable]
