"""Volcano Job's rules as declarations (``jobgate/forms/``), as far as a form says them;
``jobgate manifests generate`` compiles them to the calls ``rules/`` makes
(``jobgate/_generated/declared/volcano.py``), to the CRD's rules (``cel/`` lists them) and to the
catalogue's records.
"""

from __future__ import annotations

from jobgate.families.volcano.forms import (
    Acyclic,
    Bound,
    Bounds,
    ClaimVolumes,
    DefaultIndexed,
    DefaultItemProduct,
    DefaultItemWhen,
    DefaultSum,
    FixedCount,
    FlagNamesEntry,
    ImpliedKeys,
    KnownKeys,
    LifecyclePolicies,
    NotBoth,
    RequiredItemField,
    RequiredList,
    Same,
    SameAll,
    SameEach,
    SameUnlessBoth,
    Subdomain,
    Unchanged,
    UniqueName,
)
from jobgate.families.volcano.rules.bounds import (
    DEPENDENCY_NAME_MAX_LENGTH,
    MOUNT_PATH_MAX_LENGTH,
    PLUGIN_ARGUMENT_MAX_LENGTH,
    POLICY_STRING_MAX_LENGTH,
    VOLCANO_BOUNDS,
    VOLUME_CLAIM_NAME_MAX_LENGTH,
)
from jobgate.families.volcano.rules.defaults import (
    DEFAULT_MAX_RETRY,
    DEFAULT_QUEUE,
    DEFAULT_SCHEDULER,
    DEFAULT_TASK_PREFIX,
    HOST_NETWORK_DNS_POLICY,
    IMPLIED_PLUGINS,
)
from jobgate.families.volcano.rules.job import CLAIM_CONFLICT, DAG_MESSAGE
from jobgate.families.volcano.rules.plugins import DEFAULT_MPI_MASTER, PLUGINS
from jobgate.families.volcano.rules.policies import ANY_EVENT, USER_ACTIONS, USER_EVENTS, VALID_LISTS
from jobgate.families.volcano.rules.tasks import TIER_CONFLICT
from jobgate.families.volcano.rules.update import UPDATE_FORBIDDEN
from jobgate.forms.base import Declaration, When
from jobgate.forms.defaults import DefaultField, DefaultItemField
from jobgate.forms.fields import StringField
from jobgate.forms.roles import AtMostSum
from jobgate.rules.names import LABEL_MAX_LENGTH

# A list of lifecycle policies as an UPDATE compares it (the job's and each task's).
_POLICIES = SameEach(
    "policies",
    VOLCANO_BOUNDS["policies"],
    SameAll((SameAll(tuple(Same(f) for f in ("action", "event", "exitCode", "timeout"))), Same("events", True)), True),
)
_TOPOLOGY = ("mode", "highestTierAllowed", "highestTierName")

# A policy's bounds, the job's and each task's.
_POLICY_BOUNDS = (
    Bound("events", VOLCANO_BOUNDS["events"]),
    Bound("action", POLICY_STRING_MAX_LENGTH, string=True),
    Bound("timeout", POLICY_STRING_MAX_LENGTH, string=True),
)

# The webhook reports a declared rule where Volcano's did, among the rules written by hand: ``rules/``
# calls the generated check with the rule's id (``only``), and ``cel/`` lists its record in place.

# The mutating webhook's defaults, in its order (``rules/defaults.py`` runs them all): the job's fields
# and the tasks' names; each task's dnsPolicy, minAvailable and maxRetry (the webhook sets them task by
# task, these field by field: each task comes out the same, its keys in their order); the job's
# minAvailable (the sum of the tasks', once defaulted) and the plugins the plugins imply.
# Volcano's Go fields cannot tell 0 or "" from absent, so ``empty_is_unset`` (the zero of the type):
# ``maxRetry: 0`` is defaulted too; a task's ``minAvailable: 0`` is kept (a pointer there).
JOB: tuple[Declaration, ...] = (
    DefaultField(
        "volcano/queue", "spec.queue", DEFAULT_QUEUE, empty_is_unset=True, summary="queue: default (when unset or '')"
    ),
    DefaultField(
        "volcano/scheduler-name",
        "spec.schedulerName",
        DEFAULT_SCHEDULER,
        empty_is_unset=True,
        summary="schedulerName: volcano (when unset or '')",
    ),
    DefaultField(
        "volcano/max-retry",
        "spec.maxRetry",
        DEFAULT_MAX_RETRY,
        empty_is_unset=True,
        summary=f"maxRetry: {DEFAULT_MAX_RETRY} (when unset or 0)",
    ),
    DefaultIndexed(
        "volcano/task-name",
        f"a task's name: {DEFAULT_TASK_PREFIX}<index> (when unset or empty)",
        "spec.tasks",
        "name",
        DEFAULT_TASK_PREFIX,
        empty_is_unset=True,
    ),
    DefaultItemWhen(
        "volcano/dns-policy",
        f"dnsPolicy {HOST_NETWORK_DNS_POLICY} for a pod template on the host's network (when unset or empty)",
        "spec.tasks",
        "template.spec.dnsPolicy",
        HOST_NETWORK_DNS_POLICY,
        When("hostNetwork", True),
        empty_is_unset=True,
    ),
    DefaultItemProduct(
        "volcano/task-min-available",
        "a task's minAvailable: minPartitions x partitionSize when minPartitions > 0, else its replicas (when unset)",
        "spec.tasks",
        "minAvailable",
        ("partitionPolicy.minPartitions", "partitionPolicy.partitionSize"),
        "replicas",
    ),
    DefaultItemField(
        "volcano/task-max-retry",
        "spec.tasks",
        "maxRetry",
        DEFAULT_MAX_RETRY,
        empty_is_unset=True,
        entry="task",
        summary=f"a task's maxRetry: {DEFAULT_MAX_RETRY} (when unset or 0)",
    ),
    DefaultSum(
        "volcano/min-available",
        "the job's minAvailable: the sum of the tasks' minAvailable (when unset or 0)",
        "spec.minAvailable",
        "spec.tasks",
        "minAvailable",
        empty_is_unset=True,
    ),
    ImpliedKeys(
        "volcano/implied-plugins",
        "the plugins a framework plugin needs: "
        + ", ".join(f"{f}: {' and '.join(n)}" for f, n in IMPLIED_PLUGINS.items()),
        "spec.plugins",
        tuple(IMPLIED_PLUGINS.items()),
    ),
    RequiredList(
        "volcano/tasks-required",
        "a job has tasks",
        "spec.tasks",
        "No task specified in job spec",
        why="an empty list is refused by the schema (minItems 1), in the apiserver's words",
    ),
    UniqueName(
        "volcano/task-names-unique", "task names are unique", "spec.tasks", "name", "duplicated task name {name}"
    ),
    RequiredItemField(
        "volcano/template-required",
        "a task has a pod template",
        "spec.tasks",
        "template",
        "spec.task[{index}].template.spec.containers: Required value",
        why="the apiserver says it in its words: Required value",
    ),
    AtMostSum(
        "volcano/min-available",
        "the job's minAvailable is at most the total of the tasks' replicas",
        "spec.minAvailable",
        "spec.tasks",
        "replicas",
        # Volcano's words on CREATE and on UPDATE.
        "job 'minAvailable' should not be greater than total replicas in tasks",
        update_message="job 'minAvailable' must not be greater than total replicas",
    ),
    KnownKeys(
        "volcano/plugins",
        "plugins are " + ", ".join(PLUGINS),
        "spec.plugins",
        PLUGINS,
        "unable to find job plugin: {key}",
    ),
    FlagNamesEntry(
        "volcano/mpi-master",
        "the mpi plugin's master task (--master, else master) is a task of the job",
        "spec.plugins",
        "mpi",
        "master",
        DEFAULT_MPI_MASTER,
        "spec.tasks",
        "name",
        "The specified mpi master task was not found",
        VOLCANO_BOUNDS["pluginArguments"],
        create_only=True,
        why="CREATE only",
    ),
    ClaimVolumes(
        "volcano/volumes",
        "spec.volumes",
        "mountPath",
        "volumeClaim",
        "volumeClaimName",
        mount_required="mountPath is required;",
        mount_twice="duplicated mountPath: {path};",
        neither="either VolumeClaim or VolumeClaimName must be specified;",
        both=CLAIM_CONFLICT,
        bad_name="invalid VolumeClaimName {name} : [{problems}]",
    ),
    Acyclic(
        "volcano/dag",
        "the tasks' dependencies (dependsOn) name tasks of the job and form no cycle",
        "spec.tasks",
        "name",
        "dependsOn.name",
        DAG_MESSAGE,
        VOLCANO_BOUNDS["tasks"],
        missing=" (no task named {names})",
        create_only=True,
        why="CREATE only; reported at the tasks (a rule on a list cannot name the item)",
    ),
    LifecyclePolicies(
        "volcano/policies",
        ("spec.policies", "spec.tasks[*].policies"),
        USER_EVENTS,
        USER_ACTIONS,
        ANY_EVENT,
        both="must not specify event and exitCode simultaneously",
        neither="either event and exitCode should be specified",
        action=f"invalid policy action; {VALID_LISTS}",
        event=f"invalid policy event; {VALID_LISTS}",
        event_twice="duplicate event {event}  across different policy",
        zero="0 is not a valid error code",
        code_twice="duplicate exitCode {code}",
        not_alone=f"if there's {ANY_EVENT} here, no other policy should be here",
    ),
    NotBoth(
        "volcano/network-topology",
        "a network topology has highestTierAllowed or highestTierName, not both",
        ("spec.networkTopology", "spec.tasks[*].partitionPolicy.networkTopology"),
        "highestTierAllowed",
        "highestTierName",
        TIER_CONFLICT,
    ),
    Subdomain(
        "volcano/priority-class-name",
        "priorityClassName is a DNS-1123 subdomain",
        "spec.priorityClassName",
        # An UPDATE may change it unchecked, which is also why it has no maxLength.
        create_only=True,
        why="CREATE only",
    ),
    Bounds(
        "volcano/bounds",
        "lists and strings within bounds: "
        + ", ".join(f"{k} {v}" for k, v in VOLCANO_BOUNDS.items())
        + f", mountPath {MOUNT_PATH_MAX_LENGTH}, plugin argument {PLUGIN_ARGUMENT_MAX_LENGTH}, "
        f"volumeClaimName {VOLUME_CLAIM_NAME_MAX_LENGTH}, dependency {DEPENDENCY_NAME_MAX_LENGTH}, "
        f"policy action and timeout {POLICY_STRING_MAX_LENGTH}",
        (
            Bound("spec.tasks", VOLCANO_BOUNDS["tasks"]),
            Bound("spec.policies", VOLCANO_BOUNDS["policies"], each=_POLICY_BOUNDS),
            Bound(
                "spec.volumes",
                VOLCANO_BOUNDS["volumes"],
                each=(
                    Bound("mountPath", MOUNT_PATH_MAX_LENGTH, string=True),
                    Bound("volumeClaimName", VOLUME_CLAIM_NAME_MAX_LENGTH, string=True),
                ),
            ),
            Bound(
                "spec.plugins{*}",
                VOLCANO_BOUNDS["pluginArguments"],
                each=(Bound("", PLUGIN_ARGUMENT_MAX_LENGTH, string=True),),
            ),
            Bound(
                "spec.tasks",
                each=(
                    Bound("policies", VOLCANO_BOUNDS["policies"], each=_POLICY_BOUNDS),
                    Bound(
                        "dependsOn.name",
                        VOLCANO_BOUNDS["dependsOn"],
                        each=(Bound("", DEPENDENCY_NAME_MAX_LENGTH, string=True),),
                    ),
                ),
            ),
        ),
        why=f"bounds the CEL cost estimator needs (tasks: {VOLCANO_BOUNDS['tasks']}, as the shared pod-template "
        "rules allow); no real job comes near them, and the webhook refuses beyond them too",
    ),
    FixedCount(
        "volcano/update/task-count",
        "an UPDATE neither adds nor removes tasks",
        "spec.tasks",
        "job updates may not add or remove tasks",
    ),
    StringField(
        "volcano/scheduler-name",
        f"schedulerName is {LABEL_MAX_LENGTH} bytes at most",
        "spec.schedulerName",
        max_length=LABEL_MAX_LENGTH,
    ),
    Unchanged(
        "volcano/update/immutable",
        "an UPDATE changes only minAvailable, priorityClassName and the tasks' replicas and minAvailable",
        "spec",
        UPDATE_FORBIDDEN,
        mutable=("minAvailable", "priorityClassName"),
        mutable_entries=(("tasks", ("replicas", "minAvailable")),),
        # The controller writes the name of the claim it creates: not a user's change.
        written=(("volumes", "volumeClaimName", "volumeClaim"),),
        # Go maps among the spec's fields: a key with an empty value differs from no key.
        maps=("plugins", "labels", "annotations", "nodeSelector", "requests", "limits"),
        # Down to spec.tasks[0].template, spec.plugins.mpi[0].
        depth=3,
        counted="tasks",
        fields=(
            *((f, Same(f)) for f in ("schedulerName", "queue", "maxRetry", "ttlSecondsAfterFinished", "minSuccess")),
            ("runningEstimate", Same("runningEstimate")),
            ("networkTopology", SameAll(tuple(Same(f"networkTopology.{f}") for f in _TOPOLOGY))),
            ("plugins", Same("plugins", non_empty=True)),
            ("policies", _POLICIES),
            (
                "volumes",
                SameEach(
                    "volumes",
                    VOLCANO_BOUNDS["volumes"],
                    SameAll(
                        (Same("mountPath"), Same("volumeClaim"), SameUnlessBoth("volumeClaimName", "volumeClaim")), True
                    ),
                ),
            ),
        ),
        entries=(
            "tasks",
            VOLCANO_BOUNDS["tasks"],
            (
                ("name", Same("name")),
                ("template", Same("template")),
                ("policies", _POLICIES),
                ("topologyPolicy", Same("topologyPolicy")),
                ("maxRetry", Same("maxRetry")),
                ("dependsOn", SameAll((Same("dependsOn.name", non_empty=True), Same("dependsOn.iteration")))),
                (
                    "partitionPolicy",
                    SameAll(
                        (
                            *(
                                Same(f"partitionPolicy.{f}")
                                for f in ("totalPartitions", "partitionSize", "minPartitions")
                            ),
                            *(Same(f"partitionPolicy.networkTopology.{f}") for f in _TOPOLOGY),
                        )
                    ),
                ),
            ),
        ),
        why="reported at the spec's field (the webhook names the field inside it); a pod template or a claim "
        "spec is compared as the apiserver compares objects (CEL cannot see into their unknown fields): an UPDATE "
        "that only adds or drops an empty list or object, or a null, inside one (env: [], metadata: {}, "
        "metadata.creationTimestamp: null as Go clients write it) is refused, where the webhook's comparison "
        "(Volcano's) admits it",
    ),
)


# Each kind's declarations, by its name (the family record's ``declared``: the generators compile them).
DECLARED = {"Job": JOB}
