"""The rules of each task of a Volcano job (``rules/families/volcano/job.py``, ``tasks.py``,
``resources.py``) for the apiserver: CEL on the task, where its index is the apiserver's own."""

from __future__ import annotations

import re

from jobgate.families.volcano.cel.common import TASK, name_of, or_default, replicas_of
from jobgate.forms.catalogue import (
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_string,
)
from jobgate.rules.names import DNS1123_LABEL_PATTERN, LABEL_MAX_LENGTH

_IN_TASK = "' in task: ' + " + name_of("self")


def task_name_rule() -> Rule:
    return Rule(
        "volcano/task-name",
        "a task's name is a DNS-1123 label",
        Where.SCHEMA,
        (
            Produces("spec.tasks[*].name", "INVALID", "in body should match "),
            Produces("spec.tasks[*].name", "INVALID", r"^\[(a lowercase RFC 1123 label |must be no more than 63 )"),
        ),
        (Placement((*TASK, "name"), {"pattern": DNS1123_LABEL_PATTERN, "maxLength": LABEL_MAX_LENGTH}),),
        why="as Volcano's CRD does it (pattern); a longer name is Too long in the apiserver's words",
    )


def task_min_available_rule() -> Rule:
    return Rule(
        "volcano/task-min-available",
        "a task's minAvailable is at most its replicas",
        Where.CRD_RULE,
        (Produces("spec.tasks[*].minAvailable", "INVALID", "^'minAvailable' (is greater than|must be <=) 'replicas'"),),
        (
            Placement(
                TASK,
                validation=Validation(
                    rule=f"!has(self.minAvailable) || self.minAvailable <= {replicas_of('self')}",
                    message_expression=cel_string("'minAvailable' is greater than 'replicas'") + " + " + _IN_TASK,
                    field_path=".minAvailable",
                ),
            ),
        ),
    )


def partition_rule() -> Rule:
    """The partition policy's checks, in the webhook's order: the first that fails is reported."""
    policy = "self.partitionPolicy"
    total = or_default(policy, "totalPartitions", "0")
    size = or_default(policy, "partitionSize", "0")
    minimum = or_default(policy, "minPartitions", "0")
    replicas = replicas_of("self")
    checks = (
        (f"{total} > 0", ".partitionPolicy.totalPartitions", "'TotalPartitions' must be greater than 0"),
        (f"{size} > 0", ".partitionPolicy.partitionSize", "'PartitionSize' must be greater than 0"),
        (f"{replicas} == {total} * {size}", ".replicas", "'Replicas' are not equal to TotalPartitions*PartitionSize"),
        (
            f"!has(self.minAvailable) || {minimum} <= 0 || {minimum} * {size} == self.minAvailable",
            ".minAvailable",
            "'MinAvailable' is not equal to MinPartitions*PartitionSize",
        ),
    )
    placements = []
    earlier: list[str] = []
    for check, field_path, words in checks:
        unless = "".join(f"!({e}) || " for e in earlier)
        placements.append(
            Placement(
                TASK,
                validation=Validation(
                    rule=f"!has({policy}) || {unless}({check})",
                    message_expression=cel_string(words) + " + " + _IN_TASK,
                    field_path=field_path,
                ),
            )
        )
        earlier.append(check)
    return Rule(
        "volcano/partition",
        "a partition policy: partitions and their size above 0, replicas = totalPartitions x partitionSize, "
        "minAvailable = minPartitions x partitionSize",
        Where.CRD_RULE,
        (
            Produces("spec.tasks[*].partitionPolicy.totalPartitions", "INVALID", "^'TotalPartitions' must be"),
            Produces("spec.tasks[*].partitionPolicy.partitionSize", "INVALID", "^'PartitionSize' must be"),
            Produces("spec.tasks[*].replicas", "INVALID", "^'Replicas' are not equal"),
            Produces("spec.tasks[*].minAvailable", "INVALID", "^'MinAvailable' is not equal"),
        ),
        tuple(placements),
    )


# --- NUMA (resources.py numa_errors) ---------------------------------------------------------------

# A quantity of the template: an integer, or a string the apiserver parses once trimmed.
_IS_QUANTITY = "(type({v}) == int || isQuantity({v}.trim()))"
# CPUs are whole when their millicores, rounded up as Kubernetes' MilliValue does, make whole CPUs:
# the quantity lies in (k - 1m, k] for an integer k. CEL has no ceiling of a quantity: k is found
# near the quantity's float value, and the comparison is then exact. Beyond 10^15 CPUs (where a
# float no longer tells one CPU from the next) only an exact integer counts as whole.
_WHOLE_CPU = (
    "(type({v}) == int || [quantity({v}.trim())].all(q, q.isInteger() || "
    "(q.compareTo(quantity('1P')) < 0 && q.compareTo(quantity('-1P')) > 0 && "
    "[int(q.asApproximateFloat())].all(c, [c - 1, c, c + 1, c + 2].exists(k, "
    "q.sub(k).compareTo(quantity('0')) <= 0 && q.sub(k).compareTo(quantity('-1m')) > 0)))))"
)


def _cpu_not_whole(container: str) -> str:
    """CEL true when the container's cpu (its requests, else its limits) is a quantity of a fraction of a CPU."""
    resources = f"{container}.resources"

    def fraction(values: str) -> str:
        cpu = f"{values}['cpu']"
        return f"'cpu' in {values} && {_IS_QUANTITY.format(v=cpu)} && !{_WHOLE_CPU.format(v=cpu)}"

    requested = f"has({resources}.requests) && size({resources}.requests) > 0"
    return (
        f"(has({resources}) && ({requested} ? {fraction(resources + '.requests')} : "
        f"has({resources}.limits) && {fraction(resources + '.limits')}))"
    )


def numa_rule() -> Rule:
    spec = "self.template.spec"
    numa = "has(self.topologyPolicy) && self.topologyPolicy != '' && self.topologyPolicy != 'none'"
    placements = []
    produces = []
    for key in ("containers", "initContainers"):
        containers = f"{spec}.{key}"
        applies = f"{numa} && has(self.template) && has({spec}) && has({containers})"
        first = f"{containers}.filter(c, {_cpu_not_whole('c')}).map(c, has(c.name) ? c.name : '')[0]"
        placements.append(
            Placement(
                TASK,
                validation=Validation(
                    rule=f"!({applies}) || !{containers}.exists(c, {_cpu_not_whole('c')})",
                    message_expression="'the cpu request isn\\'t an integer in container ' + " + first,
                    field_path=f".template.spec.{key}",
                ),
            )
        )
        produces.append(
            Produces(
                f"spec.tasks[*].template.spec.{key}[*].resources",
                "INVALID",
                "^" + re.escape("the cpu request isn't an integer"),
                apiserver_drops=2,
            )
        )
    return Rule(
        "volcano/numa-cpu",
        "with a NUMA topologyPolicy, every container asks for whole CPUs (requests, else limits)",
        Where.POLICY,
        tuple(produces),
        tuple(placements),
        why="reported at the task's containers (a rule on a list cannot name the item); checked whatever else is "
        "wrong with the template (the webhook: on a template without errors only)",
    )
