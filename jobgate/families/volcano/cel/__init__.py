"""The Volcano family's rules and defaults (``rules/families/volcano``) for the apiserver.

Its modules follow the webhook's: ``job`` (the job as a whole: its name, counts, pods' names,
queue), ``tasks`` (each task's name, minAvailable, partition, NUMA) and ``resources`` (pod-level
resources). The rest is declared (``declared.py``: the plugins, the DAG, the bounds of lists and
strings, the volumes, the lifecycle policies, what an UPDATE may change, the defaults); the pod
templates get the shared pod-template rules.
"""

from __future__ import annotations

from jobgate.engine.registry import JobKind
from jobgate.families.volcano import rules as volcano
from jobgate.families.volcano.cel import job, resources, tasks
from jobgate.forms.base import Declarations
from jobgate.forms.catalogue import Default, Rule
from jobgate.generate.cel.podtemplate import TemplateSite, pod_template_rules

# The rules a form says are declared (declared.py); the rest is written in the modules here.
TEMPLATES = TemplateSite(("spec", "tasks", "[]", "template"), "spec.tasks[*].template")


def rules(kind: JobKind, declared: Declarations) -> list[Rule]:
    """The kind's rules, its declared ones (``declared``, compiled by the generator) in their places."""
    assert kind is volcano.VOLCANO_JOB
    # Declared rules in their places among the others: the order of a CRD's rules is the order of
    # the apiserver's errors.
    declared_rules = {r.id: r for r in declared.rules()}
    return [
        job.job_name_rule(),
        declared_rules["volcano/tasks-required"],
        job.counts_rule(),
        declared_rules["volcano/min-available"],
        job.pod_names_rule(),
        declared_rules["volcano/dag"],
        declared_rules["volcano/plugins"],
        declared_rules["volcano/mpi-master"],
        declared_rules["volcano/network-topology"],
        declared_rules["volcano/priority-class-name"],
        declared_rules["volcano/scheduler-name"],
        job.queue_rule(),
        *(r for r in declared.rules() if r.id.startswith("volcano/volumes/")),
        tasks.task_name_rule(),
        declared_rules["volcano/task-names-unique"],
        declared_rules["volcano/template-required"],
        tasks.task_min_available_rule(),
        tasks.partition_rule(),
        tasks.numa_rule(),
        *resources.pod_level_resources_rules(),
        *(r for r in declared.rules() if r.id.startswith("volcano/policies/")),
        declared_rules["volcano/update/task-count"],
        declared_rules["volcano/update/immutable"],
        declared_rules["volcano/bounds"],
        *pod_template_rules(TEMPLATES),
    ]


def defaults(kind: JobKind) -> list[Default]:
    assert kind is volcano.VOLCANO_JOB
    # Every default is declared, in the webhook's order (declared.py): none written here.
    return []
