"""The defaults of a Volcano job (``rules/families/volcano/defaults.py``) as a MutatingAdmissionPolicy's
JSONPatch CEL: a task's dnsPolicy and minAvailable; the others a form says, in ``declared.py``.

The patches run in the webhook's order, each on what the previous made: the job's minAvailable
(declared) adds up the tasks' minAvailable once they are defaulted.
"""

from __future__ import annotations

import re

from jobgate.families.volcano.rules.defaults import (
    HOST_NETWORK_DNS_POLICY,
)
from jobgate.generate.cel.catalogue import Default, Where, cel_string
from jobgate.generate.cel.podtemplate import TemplatePatches

_SPEC = "object.spec"
_TASKS = "object.spec.tasks"
# The tasks' index is ``ti``: the pod-template helpers name a container's index ``i``.
_TASK_POINTER = "'/spec/tasks/' + string(ti)"


def _patch(path: str, value: str) -> str:
    return f"JSONPatch{{op: 'add', path: {path}, value: {value}}}"


def task_templates() -> TemplatePatches:
    """Each task's pod template, for patches: ``template`` and its JSON pointer ``pointer``."""

    def each(condition: str, body: str) -> str:
        def bind(text: str) -> str:
            return re.sub(r"\bpointer\b", f"{_TASK_POINTER} + '/template'", re.sub(r"\btemplate\b", "t.template", text))

        return (
            f"(has({_SPEC}) && has({_TASKS}) ? {_TASKS}.transformList(ti, t, has(t.template) && {bind(condition)}, "
            f"{bind(body)}).flatten() : [])"
        )

    return TemplatePatches(each)


def _each_task(condition: str, patch: str) -> str:
    """One patch for every task (``t``, index ``ti``) that ``condition`` admits."""
    return f"has({_SPEC}) && has({_TASKS}) ? {_TASKS}.transformList(ti, t, {condition}, {patch}) : []"


def task_defaults() -> list[Default]:
    """The defaults of each task written here (a form says its name and maxRetry, the job's
    minAvailable and implied plugins: ``declared.py``), in the webhook's order."""
    partition = "t.partitionPolicy"
    min_partitions = f"(has({partition}.minPartitions) ? {partition}.minPartitions : 0)"
    size = f"(has({partition}.partitionSize) ? {partition}.partitionSize : 0)"
    replicas = "(has(t.replicas) ? t.replicas : 0)"
    task_min = f"(has({partition}) && {min_partitions} > 0 ? {min_partitions} * {size} : {replicas})"
    host_network = (
        "has(template.spec) && has(template.spec.hostNetwork) && template.spec.hostNetwork == true && "
        "(!has(template.spec.dnsPolicy) || template.spec.dnsPolicy == '')"
    )
    return [
        Default(
            "volcano/dns-policy",
            f"dnsPolicy {HOST_NETWORK_DNS_POLICY} for a pod template on the host's network (when unset or empty)",
            Where.MUTATING_POLICY,
            (
                task_templates().each(
                    host_network,
                    f"[{_patch('pointer + ' + cel_string('/spec/dnsPolicy'), cel_string(HOST_NETWORK_DNS_POLICY))}]",
                ),
            ),
        ),
        Default(
            "volcano/task-min-available",
            "a task's minAvailable: minPartitions x partitionSize when minPartitions > 0, else its replicas "
            "(when unset)",
            Where.MUTATING_POLICY,
            (_each_task("!has(t.minAvailable)", _patch(f"{_TASK_POINTER} + '/minAvailable'", task_min)),),
        ),
    ]
