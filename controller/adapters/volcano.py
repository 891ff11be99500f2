"""The volcano family (``batch.volcano.sh/v1alpha1``): Volcano's Job.

A defaulted Job becomes one replica group per task (pods ``<job>-<task>-<index>``), with
Volcano's labels and annotations on every pod, the plugins' children and pod changes (env,
svc, ssh, tensorflow, pytorch, mpi), and ``controller.lifecycle`` as the job's state machine
(lifecycle policies, maxRetry, minSuccess, Volcano's phases). The status is written in
Volcano's own shape so that ``kubectl get vcjob`` reads as it does with Volcano.
"""

from __future__ import annotations

import base64
import copy
import functools
import hashlib
import json
from typing import Any

from jobgate.controller.adapters.common import Adapter, job_identity
from jobgate.controller.clock import parse_time
from jobgate.controller.lifecycle import run as run_lifecycle
from jobgate.controller.lifecycle_policy import (
    JOB_NAME_KEY,
    JOB_NAMESPACE_KEY,
    PARTITION_KEY,
    POD_GROUP_API,
    QUEUE_NAME_KEY,
    TASK_INDEX_KEY,
    TASK_SPEC_KEY,
    TEMPLATE_UID_KEY,
    Action,
    Child,
    JobRules,
    Policy,
    TaskRules,
    parse_go_duration,
)
from jobgate.controller.model import JobModel, JobStatusModel, ReplicaGroup, RestartMode, RunPolicy
from jobgate.engine.registry import JobKind
from jobgate.families.volcano import rules as volcano
from jobgate.families.volcano.rules.defaults import DEFAULT_MAX_RETRY, DEFAULT_QUEUE
from jobgate.rules.jobmeta import as_int

SVC_MOUNT_PATH = "/etc/volcano"
SSH_DEFAULT_PATH = "/root/.ssh"
SSH_DEFAULT_PORT = 22
SSH_FILES = ("id_rsa", "id_rsa.pub", "authorized_keys", "config")
PYTORCH_DEFAULT_PORT = 23456
TENSORFLOW_DEFAULT_PORT = 2222
TENSORFLOW_ROLES = ("ps", "worker", "chief", "evaluator")
# Bookkeeping the lifecycle keeps in ``status.extra``, by the status field it is written to.
STATE_FIELDS = ("reason", "message", "lastTransitionTime")
COUNT_FIELDS = ("pending", "running", "succeeded", "failed", "terminating", "unknown")


# --- plugin arguments ----------------------------------------------------------------------------


def plugin_args(spec: dict[str, Any], plugin: str) -> dict[str, str] | None:
    """``--key=value`` / ``--flag`` arguments of a plugin; None when the plugin is not enabled."""
    plugins = spec.get("plugins")
    if not isinstance(plugins, dict) or plugin not in plugins:
        return None
    args: dict[str, str] = {}
    for item in plugins.get(plugin) or []:
        if isinstance(item, str) and item.startswith("--"):
            key, _, value = item[2:].partition("=")
            args[key] = value if value else "true"
    return args


def _int_arg(args: dict[str, str], name: str, default: int) -> int:
    try:
        return int(args.get(name) or default)
    except ValueError:
        return default  # plugin arguments are not validated at admission (as in Volcano)


def _flag(args: dict[str, str], name: str, default: bool) -> bool:
    value = args.get(name)
    return default if value is None else value.lower() not in ("false", "0")


def env_key(task: str) -> str:
    """``VC_<TASK>``: the task name upper-cased, ``-`` as ``_``."""
    return "VC_" + task.upper().replace("-", "_")


def task_hosts(job_name: str, task: dict[str, Any]) -> list[str]:
    """``<pod>.<job>`` of each replica; a template with its own hostname gives one host."""
    name = task.get("name") or ""
    pod_spec = (task.get("template") or {}).get("spec") or {}
    if isinstance(pod_spec.get("hostname"), str) and pod_spec["hostname"]:
        return [f"{pod_spec['hostname']}.{job_name}"]
    return [f"{job_name}-{name}-{i}.{job_name}" for i in range(as_int(task.get("replicas")) or 0)]


# --- children ------------------------------------------------------------------------------------


def _metadata(identity: dict[str, Any], name: str, labels: dict[str, str]) -> dict[str, Any]:
    owner = {
        "apiVersion": identity["api_version"],
        "kind": identity["kind"],
        "name": identity["name"],
        "uid": identity["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {"name": name, "namespace": identity["namespace"], "labels": dict(labels), "ownerReferences": [owner]}


def svc_service(identity: dict[str, Any], labels: dict[str, str], args: dict[str, str]) -> dict[str, Any]:
    name = identity["name"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(identity, name, labels),
        "spec": {
            "clusterIP": "None",
            "selector": {JOB_NAME_KEY: name, JOB_NAMESPACE_KEY: identity["namespace"]},
            "publishNotReadyAddresses": _flag(args, "publish-not-ready-addresses", False),
        },
    }


def svc_config_map(identity: dict[str, Any], labels: dict[str, str], tasks: list[dict[str, Any]]) -> dict[str, Any]:
    data: dict[str, str] = {}
    for task in tasks:
        hosts = task_hosts(identity["name"], task)
        data[f"{task.get('name')}.host"] = "\n".join(hosts)
        data[f"{env_key(task.get('name') or '')}_HOSTS"] = ",".join(hosts)
        data[f"{env_key(task.get('name') or '')}_NUM"] = str(len(hosts))
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(identity, f"{identity['name']}-svc", labels),
        "data": data,
    }


def svc_network_policy(identity: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """Volcano's svc NetworkPolicy ``<job>``: the job's pods accept traffic from the job's pods only."""
    job_pods = {"matchLabels": {JOB_NAME_KEY: identity["name"], JOB_NAMESPACE_KEY: identity["namespace"]}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(identity, identity["name"], labels),
        "spec": {
            "podSelector": job_pods,
            "ingress": [{"from": [{"podSelector": job_pods}]}],
            "policyTypes": ["Ingress"],
        },
    }


def content_digest(obj: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(obj.get("data"), sort_keys=True).encode()).hexdigest()[:16]


def ssh_key_pair() -> tuple[str, str]:
    """A fresh RSA-2048 key: PKCS#1 PEM private key and OpenSSH public key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return private, public + "\n"


def ssh_secret(
    identity: dict[str, Any], labels: dict[str, str], tasks: list[dict[str, Any]], args: dict[str, str]
) -> dict[str, Any]:
    job = identity["name"]
    private, public = args.get("ssh-private-key"), args.get("ssh-public-key")
    if not private or not public:
        private, public = ssh_key_pair()
    port = _int_arg(args, "ssh-port", SSH_DEFAULT_PORT)
    config = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in tasks:
        for i in range(as_int(task.get("replicas")) or 0):
            pod = f"{job}-{task.get('name')}-{i}"
            config += [f"Host {pod}", f"  HostName {pod}.{job}", f"  Port {port}"]
    files = {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public, "config": "\n".join(config) + "\n"}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(identity, f"{job}-ssh", labels),
        "type": "Opaque",
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in files.items()},
    }


def pod_group(identity: dict[str, Any], labels: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    tasks = [t for t in spec.get("tasks") or [] if isinstance(t, dict)]
    group_spec: dict[str, Any] = {
        "minMember": as_int(spec.get("minAvailable")) or 0,
        "minTaskMember": {t.get("name"): as_int(t.get("minAvailable")) or 0 for t in tasks},
        "queue": spec.get("queue") or DEFAULT_QUEUE,
    }
    if spec.get("priorityClassName"):
        group_spec["priorityClassName"] = spec["priorityClassName"]
    return {
        "apiVersion": POD_GROUP_API,
        "kind": "PodGroup",
        "metadata": _metadata(identity, pod_group_name(identity), labels),
        "spec": group_spec,
    }


def pod_group_name(identity: dict[str, Any]) -> str:
    return f"{identity['name']}-{identity['uid']}"


# --- pods ----------------------------------------------------------------------------------------


def _all_containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod["spec"]
    return [c for key in ("initContainers", "containers") for c in spec.get(key) or [] if isinstance(c, dict)]


def _set_env(container: dict[str, Any], additions: list[dict[str, Any]]) -> None:
    names = {a["name"] for a in additions}
    container["env"] = [e for e in container.get("env") or [] if e.get("name") not in names] + additions


def _mount(pod: dict[str, Any], volume: dict[str, Any], mount: dict[str, Any]) -> None:
    spec = pod["spec"]
    spec["volumes"] = [v for v in spec.get("volumes") or [] if v.get("name") != volume["name"]] + [volume]
    for container in _all_containers(pod):
        given = [m for m in container.get("volumeMounts") or [] if m.get("mountPath") != mount["mountPath"]]
        container["volumeMounts"] = [*given, dict(mount)]


class PodDecoration:
    """Volcano's labels, annotations and plugin changes on one pod."""

    def __init__(self, identity: dict[str, Any], spec: dict[str, Any]) -> None:
        self.job = identity["name"]
        self.namespace = identity["namespace"]
        self.spec = spec
        self.tasks = [t for t in spec.get("tasks") or [] if isinstance(t, dict)]
        self.replicas = {t.get("name"): as_int(t.get("replicas")) or 0 for t in self.tasks}
        self.partition_sizes = {
            t.get("name"): as_int(t["partitionPolicy"].get("partitionSize")) or 0
            for t in self.tasks
            if isinstance(t.get("partitionPolicy"), dict)
        }

    def hosts(self, task: str) -> list[str]:
        found = next((t for t in self.tasks if t.get("name") == task), None)
        return task_hosts(self.job, found) if found else []

    def __call__(self, group: ReplicaGroup, index: int, pod: dict[str, Any]) -> None:
        metadata, spec = pod["metadata"], pod["spec"]
        queue = self.spec.get("queue") or DEFAULT_QUEUE
        keys = {
            JOB_NAME_KEY: self.job,
            JOB_NAMESPACE_KEY: self.namespace,
            TASK_SPEC_KEY: group.name,
            TASK_INDEX_KEY: str(index),
            QUEUE_NAME_KEY: queue,
        }
        metadata["labels"].update(keys)
        metadata["annotations"].update(keys)
        size = self.partition_sizes.get(group.name)
        if size is not None:
            metadata["labels"][PARTITION_KEY] = str(index // size if size > 0 else 0)
        metadata["annotations"][TEMPLATE_UID_KEY] = f"{self.job}-{group.name}"
        if self.spec.get("schedulerName") and not spec.get("schedulerName"):
            spec["schedulerName"] = self.spec["schedulerName"]
        if self.spec.get("priorityClassName") and not spec.get("priorityClassName"):
            spec["priorityClassName"] = self.spec["priorityClassName"]
        self.env_plugin(index, pod)
        self.svc_plugin(pod)
        self.ssh_plugin(pod)
        self.frameworks(group, index, pod)

    def env_plugin(self, index: int, pod: dict[str, Any]) -> None:
        if plugin_args(self.spec, "env") is None:
            return
        for container in _all_containers(pod):
            _set_env(
                container,
                [{"name": "VK_TASK_INDEX", "value": str(index)}, {"name": "VC_TASK_INDEX", "value": str(index)}],
            )

    def svc_plugin(self, pod: dict[str, Any]) -> None:
        args = plugin_args(self.spec, "svc")
        if args is None:
            return
        spec = pod["spec"]
        spec.setdefault("hostname", pod["metadata"]["name"])
        spec.setdefault("subdomain", self.job)
        config_map = f"{self.job}-svc"
        _mount(
            pod,
            {"name": config_map, "configMap": {"name": config_map}},
            {"name": config_map, "mountPath": SVC_MOUNT_PATH},
        )
        if not _flag(args, "inject-hosts-env", True):
            return
        additions = []
        for task in self.tasks:
            key = env_key(task.get("name") or "")
            for suffix in ("_HOSTS", "_NUM"):
                reference = {"configMapKeyRef": {"name": config_map, "key": key + suffix}}
                additions.append({"name": key + suffix, "valueFrom": reference})
        for container in _all_containers(pod):
            _set_env(container, additions)

    def ssh_plugin(self, pod: dict[str, Any]) -> None:
        args = plugin_args(self.spec, "ssh")
        if args is None:
            return
        path = args.get("ssh-key-file-path") or SSH_DEFAULT_PATH
        secret = f"{self.job}-ssh"
        mode = 0o600 if path == SSH_DEFAULT_PATH else 0o644
        volume = {
            "name": secret,
            "secret": {
                "secretName": secret,
                "defaultMode": mode,
                "items": [{"key": f, "path": f".ssh/{f}"} for f in SSH_FILES],
            },
        }
        _mount(pod, volume, {"name": secret, "mountPath": path, "subPath": ".ssh"})

    def frameworks(self, group: ReplicaGroup, index: int, pod: dict[str, Any]) -> None:
        tensorflow = plugin_args(self.spec, "tensorflow")
        if tensorflow is not None:
            self.tensorflow(tensorflow, group, index, pod)
        pytorch = plugin_args(self.spec, "pytorch")
        if pytorch is not None:
            self.pytorch(pytorch, group, index, pod)
        mpi = plugin_args(self.spec, "mpi")
        if mpi is not None:
            master, worker = mpi.get("master") or "master", mpi.get("worker") or "worker"
            if group.name == master:
                for container in _all_containers(pod):
                    _set_env(container, [{"name": "MPI_HOST", "value": ",".join(self.hosts(worker))}])

    def tensorflow(self, args: dict[str, str], group: ReplicaGroup, index: int, pod: dict[str, Any]) -> None:
        if len(self.tasks) == 1 and sum(self.replicas.values()) == 1:
            return  # a stand-alone TensorFlow job needs no cluster spec
        port = _int_arg(args, "port", TENSORFLOW_DEFAULT_PORT)
        task_of_role = {role: args.get(role) or role for role in TENSORFLOW_ROLES}
        # A task that plays no role keeps its own name as the type (as Volcano's plugin does).
        role = next((r for r, t in task_of_role.items() if t == group.name), group.name)
        cluster = {r: [f"{h}:{port}" for h in self.hosts(t)] for r, t in task_of_role.items() if self.replicas.get(t)}
        config = json.dumps({"cluster": cluster, "task": {"type": role, "index": index}}, separators=(",", ":"))
        for container in pod["spec"].get("containers") or []:
            _set_env(container, [{"name": "TF_CONFIG", "value": config}])

    def pytorch(self, args: dict[str, str], group: ReplicaGroup, index: int, pod: dict[str, Any]) -> None:
        master, worker = args.get("master") or "master", args.get("worker") or "worker"
        master_task = next((t for t in self.tasks if t.get("name") == master), None)
        if master_task is None:
            return  # Volcano's plugin does nothing without its master task
        port = _int_arg(args, "port", PYTORCH_DEFAULT_PORT)
        template_spec = (master_task.get("template") or {}).get("spec") or {}
        host = template_spec.get("hostname") or f"{self.job}-{master}-0"
        env = [
            {"name": "MASTER_ADDR", "value": f"{host}.{template_spec.get('subdomain') or self.job}"},
            {"name": "MASTER_PORT", "value": str(port)},
            # Every task's replicas, as Volcano counts them.
            {"name": "WORLD_SIZE", "value": str(sum(self.replicas.values()))},
        ]
        if group.name == worker:
            env.append({"name": "RANK", "value": str(index + 1)})
        elif group.name == master:
            env.append({"name": "RANK", "value": "0"})
        for container in pod["spec"].get("containers") or []:
            _set_env(container, env)
            ports = container.get("ports") or []
            if not any(p.get("containerPort") == port for p in ports):
                container["ports"] = [*ports, {"name": "pytorchjob-port", "containerPort": port}]


# --- the model -----------------------------------------------------------------------------------


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


# --- status --------------------------------------------------------------------------------------


def project_volcano_status(status: JobStatusModel, min_available: int | None = None) -> dict[str, Any]:
    extra = status.extra
    counts = extra.get("counts") or {}
    document: dict[str, Any] = {
        "state": {"phase": status.phase or "Pending", **{k: extra[k] for k in STATE_FIELDS if extra.get(k)}},
        "minAvailable": extra.get("minAvailable"),
        **{k: counts.get(k, 0) for k in COUNT_FIELDS},
        "version": status.run_version,
        "retryCount": status.restart_count,
        "taskStatusCount": extra.get("taskStatusCount") or None,
        "conditions": extra.get("conditions") or None,
        "runningDuration": extra.get("runningDuration"),
        "controlledResources": extra.get("controlledResources") or None,
        # jobgate's own bookkeeping (Volcano keeps it in memory; here it survives a restart)
        "startTime": status.start_time,
        "observedGeneration": status.observed_generation,
        "handledPods": status.restarting_pods or None,
        "knownPods": extra.get("knownPods") or None,
        "delayedActions": extra.get("delayedActions") or None,
        "childDigests": extra.get("childDigests") or None,
    }
    return {k: v for k, v in document.items() if v is not None}


def read_volcano_status(job: dict[str, Any]) -> JobStatusModel:
    raw = job.get("status") if isinstance(job.get("status"), dict) else {}
    state = raw.get("state") if isinstance(raw.get("state"), dict) else {}
    extra: dict[str, Any] = {k: state[k] for k in STATE_FIELDS if state.get(k)}
    if raw.get("state") is not None or raw.get("pending") is not None:
        extra["counts"] = {k: as_int(raw.get(k)) or 0 for k in COUNT_FIELDS}
    for key in (
        "taskStatusCount",
        "conditions",
        "runningDuration",
        "controlledResources",
        "knownPods",
        "minAvailable",
        "delayedActions",
        "childDigests",
    ):
        if raw.get(key) not in (None, {}, []):
            extra[key] = raw[key]
    # Volcano measures runningDuration from the job's creation; that is also the start when none was written.
    start = raw.get("startTime") or (job.get("metadata") or {}).get("creationTimestamp")
    return JobStatusModel(
        start_time=start if isinstance(start, str) and parse_time(start) is not None else None,
        restart_count=as_int(raw.get("retryCount")) or 0,
        restarting_pods=[str(u) for u in raw.get("handledPods") or []],
        observed_generation=as_int(raw.get("observedGeneration")),
        phase=state.get("phase") if isinstance(state.get("phase"), str) else None,
        run_version=as_int(raw.get("version")) or 0,
        extra=extra,
    )


ADAPTERS = (Adapter(volcano.VOLCANO_JOB, build_volcano_job, project_volcano_status, read_volcano_status),)
