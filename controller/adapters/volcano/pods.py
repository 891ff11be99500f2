"""What Volcano's plugins add to each pod: environment, mounts, ports, hostnames (``PodDecoration``)."""

from __future__ import annotations

import json
from typing import Any

from jobgate.families.volcano.rules.defaults import DEFAULT_QUEUE
from jobgate.rules.dicts import as_int

from ...lifecycle_policy import (
    JOB_NAME_KEY,
    JOB_NAMESPACE_KEY,
    PARTITION_KEY,
    QUEUE_NAME_KEY,
    TASK_INDEX_KEY,
    TASK_SPEC_KEY,
    TEMPLATE_UID_KEY,
)
from ...model import ReplicaGroup
from .plugins import (
    PYTORCH_DEFAULT_PORT,
    SSH_DEFAULT_PATH,
    SSH_FILES,
    SVC_MOUNT_PATH,
    TENSORFLOW_DEFAULT_PORT,
    TENSORFLOW_ROLES,
    _flag,
    _int_arg,
    env_key,
    plugin_args,
    task_hosts,
)


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
