"""T9k GenericJob's variable substitution in a pod's ``command``, ``args`` and ``env`` values.

The reference defines five variables: ``$(type)``, ``$(rank)``, ``$(replicas[<type>])``,
``$(service.<type>[<rank>].host)`` and ``$(service.port[<name>])`` (the last two only when the
job has ``spec.service``). Anything else in ``$(...)`` is left as it is, so the kubelet's own
``$(ENV_VAR)`` expansion still works, and ``$$(`` stays the kubelet's escape for a literal ``$(``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# ``$$(...)`` is skipped (the kubelet turns it into a literal), ``$(...)`` is captured.
_VARIABLE = re.compile(r"\$\$\(|\$\(([^()$]*)\)")
_REPLICAS = re.compile(r"replicas\[([^\]]+)\]")
_SERVICE_HOST = re.compile(r"service\.([^\[\].]+)\[(\d+)\]\.host")
_SERVICE_PORT = re.compile(r"service\.port\[([^\]]+)\]")


@dataclass(frozen=True)
class SubstitutionContext:
    """What the variables of one replica's pod resolve to."""

    job_name: str
    namespace: str
    replica_type: str
    rank: int
    replicas: dict[str, int]  # per replica type
    service_ports: dict[str, int] | None  # port name -> port; None: the job has no spec.service

    def host(self, replica_type: str, rank: int) -> str:
        return f"{self.job_name}-{replica_type.lower()}-{rank}.{self.namespace}.svc"

    def resolve(self, variable: str) -> str | None:
        """The value of ``variable`` (the text inside ``$(...)``), None when it is not one of T9k's."""
        if variable == "type":
            return self.replica_type
        if variable == "rank":
            return str(self.rank)
        if match := _REPLICAS.fullmatch(variable):
            count = self.replicas.get(match.group(1))
            return str(count) if count is not None else None
        if self.service_ports is None:
            return None
        if match := _SERVICE_HOST.fullmatch(variable):
            replica_type, rank = match.group(1), int(match.group(2))
            if rank >= self.replicas.get(replica_type, 0):
                return None
            return self.host(replica_type, rank)
        if match := _SERVICE_PORT.fullmatch(variable):
            port = self.service_ports.get(match.group(1))
            return str(port) if port is not None else None
        return None


def substitute(text: str, context: SubstitutionContext) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$(":
            return match.group(0)
        value = context.resolve(match.group(1))
        return match.group(0) if value is None else value

    return _VARIABLE.sub(replace, text)


def substitute_pod(pod: dict[str, Any], context: SubstitutionContext) -> None:
    """Substitute in place in every container's and init container's command, args and env values."""
    spec = pod.get("spec") or {}
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            for field in ("command", "args"):
                values = container.get(field)
                if isinstance(values, list):
                    container[field] = [substitute(v, context) if isinstance(v, str) else v for v in values]
            for env in container.get("env") or []:
                if isinstance(env, dict) and isinstance(env.get("value"), str):
                    env["value"] = substitute(env["value"], context)
