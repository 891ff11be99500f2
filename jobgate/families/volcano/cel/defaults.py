"""The defaults of a Volcano job (``rules/families/volcano/defaults.py``) as a MutatingAdmissionPolicy's
JSONPatch CEL; those a form says (the queue, schedulerName and the maxRetry of the job and of each
task) are declared in ``declared.py``.

The patches run in the webhook's order, each on what the previous made: the job's minAvailable
adds up the tasks' minAvailable once they are defaulted.
"""

from __future__ import annotations

import re

from jobgate.families.volcano.rules.defaults import (
    DEFAULT_TASK_PREFIX,
    HOST_NETWORK_DNS_POLICY,
    IMPLIED_PLUGINS,
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
    """The defaults of each task written here (its maxRetry is declared: ``declared.py``), in the
    webhook's order; the job's minAvailable and plugins follow (``job_defaults``)."""
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
            "volcano/task-name",
            f"a task's name: {DEFAULT_TASK_PREFIX}<index> (when unset or empty)",
            Where.MUTATING_POLICY,
            (
                _each_task(
                    "!has(t.name) || t.name == ''",
                    _patch(f"{_TASK_POINTER} + '/name'", f"{cel_string(DEFAULT_TASK_PREFIX)} + string(ti)"),
                ),
            ),
        ),
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


def job_defaults() -> list[Default]:
    """The job's minAvailable (once its tasks' are defaulted) and the plugins its plugins need."""
    task_sum = f"{_TASKS}.map(t, has(t.minAvailable) ? t.minAvailable : 0).sum()"
    plugins = f"{_SPEC}.plugins"
    implied = sorted({p for needed in IMPLIED_PLUGINS.values() for p in needed})
    needs = {
        plugin: " || ".join(
            f"{cel_string(f)} in {plugins}" for f, needed in IMPLIED_PLUGINS.items() if plugin in needed
        )
        for plugin in implied
    }
    missing = " + ".join(
        f"(!({cel_string(p)} in {plugins}) && ({needs[p]}) ? [{_patch(cel_string('/spec/plugins/' + p), '[]')}] : [])"
        for p in implied
    )
    return [
        Default(
            "volcano/min-available",
            "the job's minAvailable: the sum of the tasks' minAvailable (when unset or 0)",
            Where.MUTATING_POLICY,
            (
                f"has({_SPEC}) && has({_TASKS}) && (!has({_SPEC}.minAvailable) || "
                f"({_SPEC}.minAvailable == 0 && {task_sum} != 0)) ? "
                f"[{_patch(cel_string('/spec/minAvailable'), task_sum)}] : []",
            ),
        ),
        Default(
            "volcano/implied-plugins",
            "the plugins a framework plugin needs: "
            + ", ".join(f"{f}: {' and '.join(n)}" for f, n in IMPLIED_PLUGINS.items()),
            Where.MUTATING_POLICY,
            (f"has({_SPEC}) && has({plugins}) ? {missing} : []",),
        ),
    ]
