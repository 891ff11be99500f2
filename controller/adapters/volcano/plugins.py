"""Volcano's job plugins as the controller reads them: their arguments, and the hosts and environment they give pods."""

from __future__ import annotations

from typing import Any

from jobgate.rules.dicts import as_int

SVC_MOUNT_PATH = "/etc/volcano"


SSH_DEFAULT_PATH = "/root/.ssh"


SSH_DEFAULT_PORT = 22


SSH_FILES = ("id_rsa", "id_rsa.pub", "authorized_keys", "config")


PYTORCH_DEFAULT_PORT = 23456


TENSORFLOW_DEFAULT_PORT = 2222


TENSORFLOW_ROLES = ("ps", "worker", "chief", "evaluator")


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
