"""The rules of a Volcano job as a whole (``rules/families/volcano/job.py``, ``plugins.py``,
``tasks.py``'s network topology, ``queue_check.py``) for the apiserver; its volumes are in
``volumes``.

Volcano checks most of them on CREATE only. Where a rule reads a field that an UPDATE may change
(replicas, minAvailable, priorityClassName, a volume's claim name, which the controller fills in),
its CEL has ``optionalOldSelf``: it runs on CREATE (``oldSelf`` has no value) and holds on every
UPDATE, as the webhook's does. A rule that reads only what no UPDATE may change runs on both: on
an UPDATE it can only fail where the immutability rule fails too.
"""

from __future__ import annotations

from jobgate.families.volcano.cel.common import (
    SPEC,
    TASK,
    TASK_INDEXES,
    replicas_of,
)
from jobgate.families.volcano.rules.job import (
    QUALIFIED_NAME_MESSAGE,
    QUALIFIED_NAME_REGEX,
)
from jobgate.forms.catalogue import (
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_raw_string,
    cel_string,
)
from jobgate.generate.cel.jobmeta import GENERATED_SUFFIX_LENGTH, NAME, PREFIX
from jobgate.rules.names import (
    DNS1123_SUBDOMAIN,
    LABEL_MAX_LENGTH,
)

CREATE_ONLY = "oldSelf.hasValue() || "
QUALIFIED_NAME_PATTERN = f"^{QUALIFIED_NAME_REGEX}$"
SUBDOMAIN_PATTERN = f"^{DNS1123_SUBDOMAIN}$"
_TOO_LONG_NAME = f"name part must be no more than {LABEL_MAX_LENGTH} characters"


def create_only(rule: str) -> str:
    """CEL of ``rule`` on CREATE, true on UPDATE (a validation with ``optionalOldSelf``)."""
    return CREATE_ONLY + "(" + rule + ")"


# The apiserver generates a name from at most 58 characters of generateName (then five random
# ones); the webhook, which reads generateName, counts all of it with five characters more.
_KEPT_PREFIX_LENGTH = LABEL_MAX_LENGTH - GENERATED_SUFFIX_LENGTH
_KEPT_PREFIX = f"(size({PREFIX}) > {_KEPT_PREFIX_LENGTH} ? {PREFIX}.substring(0, {_KEPT_PREFIX_LENGTH}) : {PREFIX})"
# The name was generated (CEL sees the generated name; the webhook reads generateName).
GENERATED = (
    f"(has({PREFIX}) && {PREFIX} != '' && size({NAME}) == size({_KEPT_PREFIX}) + {GENERATED_SUFFIX_LENGTH} && "
    f"{NAME}.startsWith({_KEPT_PREFIX}))"
)
# The job's name as the webhook reads it: generateName when the name was generated.
JOB = f"({GENERATED} ? {PREFIX} : {NAME})"
# The name the webhook checks: generateName with five characters.
CHECKED_NAME = f"({GENERATED} ? {PREFIX} + {cel_string('x' * GENERATED_SUFFIX_LENGTH)} : {NAME})"


# --- the job's name (job.py _job_name_errors) ---------------------------------------------------


def job_name_rule() -> Rule:
    """Volcano's: the name (generateName with five characters) is a qualified name of 63 at most.
    It replaces the shared rule of the job's name (a DNS-1035 label), which Volcano does not have."""
    placements = []
    for generated, field_path, shown in (
        (False, ".metadata.name", NAME),
        (True, ".metadata.generateName", PREFIX),
    ):
        unless = f"!{GENERATED}" if generated else GENERATED
        for rule, problem in (
            (f"size({CHECKED_NAME}) <= {LABEL_MAX_LENGTH}", _TOO_LONG_NAME),
            (f"{CHECKED_NAME}.matches({cel_raw_string(QUALIFIED_NAME_PATTERN)})", QUALIFIED_NAME_MESSAGE),
        ):
            placements.append(
                Placement(
                    (),
                    validation=Validation(
                        rule=f"{unless} || {rule}",
                        message_expression=f"'create job with name ' + {shown} + "
                        f"{cel_string(' validate failed [' + problem + ']')}",
                        field_path=field_path,
                    ),
                )
            )
    return Rule(
        "job/name",
        "the job's name is a qualified name of 63 characters at most (Volcano's)",
        Where.CRD_RULE,
        (
            Produces("metadata.name", "REQUIRED", "name or generateName is required"),
            Produces("metadata.name", "INVALID", "^create job with name "),
            Produces("metadata.generateName", "INVALID", "^create job with name ", apiserver_instead="metadata.name"),
        ),
        tuple(placements),
        why="a missing name, or a generated one that is no DNS-1123 subdomain, is refused by the apiserver itself",
    )


# --- the tasks as a whole ----------------------------------------------------------------------


def counts_rule() -> Rule:
    """Counts that may not be negative: the schema's minimum, which Volcano also says in its words."""
    fields = (
        ((*SPEC, "minAvailable"), "spec.minAvailable", "^job 'minAvailable' must be >= 0"),
        ((*SPEC, "maxRetry"), "spec.maxRetry", "^'maxRetry' cannot be less than zero"),
        ((*SPEC, "ttlSecondsAfterFinished"), "spec.ttlSecondsAfterFinished", "^'ttlSecondsAfterFinished' cannot be"),
        ((*TASK, "replicas"), "spec.tasks[*].replicas", "^'replicas' (< 0|must be >= 0) in task"),
        ((*TASK, "minAvailable"), "spec.tasks[*].minAvailable", "^'minAvailable' (< 0|must be >= 0) in task"),
    )
    return Rule(
        "volcano/counts",
        "minAvailable, maxRetry, ttlSecondsAfterFinished and each task's replicas and minAvailable are not negative",
        Where.SCHEMA,
        tuple(Produces(path, "INVALID", detail) for _, path, detail in fields),
        tuple(Placement(at, {"minimum": 0}) for at, _, _ in fields),
        why="the apiserver says it in its words: should be greater than or equal to 0",
    )


def pod_names_rule() -> Rule:
    """``<job>-<task>-<index>`` of the last pod of each task fits in 63 characters (CREATE only:
    an UPDATE of the replicas is not checked by Volcano). The job is generateName's prefix when
    the name was generated; a task's pods are numbered up to its replicas, and the webhook
    counts at least the task's position. And a qualified name: the schema's pattern of task names
    admits none that would not make one, but reports at the name, this rule at the tasks."""
    job = JOB
    task = "self.spec.tasks[i]"
    replicas = replicas_of(task)
    last = f"(i > {replicas} - 1 ? i : {replicas} - 1)"
    # The pod name's characters: the job's name begins it, the index (digits) ends it.
    job_characters = f"{job}.matches({cel_raw_string('^[A-Za-z0-9][-A-Za-z0-9_.]*$')})"
    task_characters = cel_raw_string("^[-A-Za-z0-9_.]*$")
    fits = (
        f"!has({task}.name) || {task}.name == '' || ({job_characters} && {task}.name.matches({task_characters}) && "
        f"size({job}) + size({task}.name) + size(string({last})) + 2 <= {LABEL_MAX_LENGTH})"
    )
    first = f"{TASK_INDEXES}.filter(i, i < size(self.spec.tasks) && !({fits})).map(i, {task}.name)[0]"
    problem = (
        f"({job_characters} && {first}.matches({task_characters}) ? "
        f"{cel_string(_TOO_LONG_NAME)} : {cel_string(QUALIFIED_NAME_MESSAGE)})"
    )
    return Rule(
        "volcano/pod-names",
        "the name of each task's last pod (<job>-<task>-<index>) is a qualified name of 63 characters at most",
        Where.CRD_RULE,
        (Produces("spec.tasks[*].name", "INVALID", "^create pod with name ", apiserver_drops=2),),
        (
            Placement(
                (),
                validation=Validation(
                    rule=create_only(
                        f"!has(self.spec.tasks) || {TASK_INDEXES}.all(i, i >= size(self.spec.tasks) || ({fits}))"
                    ),
                    # CEL's cost estimator cannot size string(int): the message names the index.
                    message_expression=f"'create pod with name ' + {job} + '-' + {first} + "
                    f"'-<index> validate failed [' + {problem} + ']'",
                    field_path=".spec.tasks",
                    optional_old_self=True,
                ),
            ),
        ),
        why="CREATE only; reported at the tasks (a rule on a list cannot name the item)",
    )


# --- other fields ------------------------------------------------------------------------------


def queue_rule() -> Rule:
    return Rule(
        "volcano/queue",
        "the job's Queue exists, is Open, is not root and has no child queues",
        Where.WEBHOOK,
        (Produces("spec.queue", "NOT_FOUND"), Produces("spec.queue", "INVALID")),
        why="it reads the cluster's Queue objects (scheduling.volcano.sh), which no CRD rule can see",
    )
