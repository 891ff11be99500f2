"""A Volcano Job as the controller's common model: its tasks as replica groups, its policies, its run policy."""

from __future__ import annotations

import copy
import functools
from typing import Any

from jobgate.engine.registry import JobKind
from jobgate.families.volcano.rules.defaults import DEFAULT_MAX_RETRY
from jobgate.rules.dicts import as_int

from ...lifecycle import run as run_lifecycle
from ...lifecycle_policy import (
    Action,
    Child,
    JobRules,
    Policy,
    TaskRules,
    parse_go_duration,
)
from ...model import JobModel, ReplicaGroup, RestartMode, RunPolicy
from ..common import job_identity
from .children import (
    content_digest,
    pod_group,
    pod_group_name,
    ssh_secret,
    svc_config_map,
    svc_network_policy,
    svc_service,
)
from .plugins import _flag, plugin_args
from .pods import PodDecoration


def _policies(raw: Any) -> tuple[Policy, ...]:
    policies = []
    for item in raw or []:
        if not isinstance(item, dict):
            continue
        try:
            action = Action(item.get("action"))
        except ValueError:
            continue  # admission refuses unknown actions; one that slipped through does nothing
        events = {e for e in item.get("events") or [] if isinstance(e, str)}
        if isinstance(item.get("event"), str):
            events.add(item["event"])
        timeout = parse_go_duration(item.get("timeout"))
        policies.append(Policy(action, frozenset(events), as_int(item.get("exitCode")), timeout))
    return tuple(policies)


def build_volcano_job(kind: JobKind, job: dict[str, Any]) -> JobModel:
    spec = job["spec"]
    identity = job_identity(kind, job)
    labels = identity.pop("labels")
    tasks = [t for t in spec.get("tasks") or [] if isinstance(t, dict)]
    groups, task_rules = [], []
    for task in tasks:
        name = str(task.get("name"))
        replicas = as_int(task.get("replicas")) or 0
        template = task.get("template") or {}
        pod_spec = template.get("spec") or {}
        containers = pod_spec.get("containers") or []
        policy = pod_spec.get("restartPolicy") or "Always"  # Volcano leaves the template's policy alone
        groups.append(
            ReplicaGroup(
                name=name,
                replicas=replicas,
                template=template,
                restart=RestartMode(policy) if policy in RestartMode._value2member_map_ else RestartMode.ALWAYS,
                default_container=containers[0].get("name") if containers else None,
            )
        )
        depends = task.get("dependsOn") or {}
        task_rules.append(
            TaskRules(
                name=name,
                replicas=replicas,
                min_available=as_int(task.get("minAvailable")) or 0,
                max_retry=as_int(task.get("maxRetry")) or DEFAULT_MAX_RETRY,
                policies=_policies(task.get("policies")),
                depends_on=tuple(str(n) for n in depends.get("name") or []),
                depends_on_any=depends.get("iteration") == "any",
                partition_size=(
                    as_int(task["partitionPolicy"].get("partitionSize"))
                    if isinstance(task.get("partitionPolicy"), dict)
                    else None
                ),
            )
        )
    full_identity = {**identity, "labels": labels}
    children = []
    svc = plugin_args(spec, "svc")
    if svc is not None:
        children.append(Child("Service", identity["name"], lambda: svc_service(full_identity, labels, svc)))
        hosts = svc_config_map(full_identity, labels, tasks)
        children.append(
            Child("ConfigMap", hosts["metadata"]["name"], lambda: copy.deepcopy(hosts), digest=content_digest(hosts))
        )
        if not _flag(svc, "disable-network-policy", False):
            children.append(Child("NetworkPolicy", identity["name"], lambda: svc_network_policy(full_identity, labels)))
    ssh = plugin_args(spec, "ssh")
    if ssh is not None:
        children.append(
            Child("Secret", f"{identity['name']}-ssh", lambda: ssh_secret(full_identity, labels, tasks, ssh))
        )
    min_success = as_int(spec.get("minSuccess"))
    rules = JobRules(
        min_available=as_int(spec.get("minAvailable")) or 0,
        max_retry=as_int(spec.get("maxRetry")) or DEFAULT_MAX_RETRY,
        min_success=min_success if min_success and min_success > 0 else None,
        policies=_policies(spec.get("policies")),
        tasks=tuple(task_rules),
        children=tuple(children),
        controlled_resources={f"plugin-{name}": name for name in sorted(spec.get("plugins") or {})},
        scheduler_name=spec.get("schedulerName") if isinstance(spec.get("schedulerName"), str) else None,
        pod_group=Child("PodGroup", pod_group_name(identity), lambda: pod_group(full_identity, labels, spec)),
    )
    return JobModel(
        **identity,
        groups=tuple(groups),
        run_policy=RunPolicy(
            ttl_seconds_after_finished=as_int(spec.get("ttlSecondsAfterFinished")),
            queue=spec.get("queue"),
            priority_class=spec.get("priorityClassName"),
        ),
        success_rules=(),
        labels=labels,
        pod_decoration=PodDecoration(identity, spec),
        lifecycle=functools.partial(run_lifecycle, rules=rules),
    )
