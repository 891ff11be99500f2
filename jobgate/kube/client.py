"""A thin JSON client on the ``kubernetes`` package: its kubeconfig/in-cluster loading, auth
and connection pool, without its model classes (building V1Pod objects for thousands of pods
costs more than the requests themselves). Thread-safe; counts requests by verb.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson


class ApiError(Exception):
    def __init__(self, status: int, reason: str, body: dict[str, Any] | None = None) -> None:
        message = (body or {}).get("message") or reason
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = (body or {}).get("reason") or reason
        self.body = body or {}


@dataclass(frozen=True)
class Resource:
    """Where a kind lives in the API."""

    group: str
    version: str
    plural: str
    namespaced: bool = True

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace)}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name)}"
        if subresource:
            base += f"/{subresource}"
        return base


class Kube:
    def __init__(self, kubeconfig: str | None = None, *, pool_size: int = 64) -> None:
        from kubernetes import client, config

        configuration = client.Configuration()
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        else:
            try:
                config.load_incluster_config(client_configuration=configuration)
            except config.ConfigException:
                config.load_kube_config(client_configuration=configuration)
        configuration.connection_pool_maxsize = pool_size
        self._client = client.ApiClient(configuration)
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: dict[str, Any] | None = None,
        content_type: str = "application/json",
        timeout: float | tuple[float, float] = 30.0,
        stream: bool = False,
        accept: str = "application/json",
    ) -> Any:
        with self._lock:
            self.requests[method] += 1
        headers = {"Accept": accept, "Content-Type": content_type}
        method, url, headers, body, _ = self._client.param_serialize(
            method=method,
            resource_path=path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self._client.call_api(method, url, header_params=headers, body=body, _request_timeout=timeout)
        raw = response.response
        if stream and 200 <= raw.status < 300:
            return raw
        data = response.read()
        if not 200 <= raw.status < 300:
            try:
                detail = orjson.loads(data) if data else None
            except orjson.JSONDecodeError:
                detail = None
            raise ApiError(raw.status, raw.reason or "", detail if isinstance(detail, dict) else None)
        return orjson.loads(data) if data else {}

    def get(self, path: str, *, accept: str = "application/json", **query: Any) -> dict[str, Any]:
        return self.request("GET", path, query=query, accept=accept)

    def serves(self, group: str, version: str, *plurals: str) -> bool:
        """Whether discovery lists every one of ``plurals`` in ``group/version`` (False when the group
        version is not served at all; any other error is raised)."""
        try:
            listing = self.get(f"/apis/{group}/{version}")
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        served = {r.get("name") for r in listing.get("resources") or []}
        return set(plurals) <= served

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", path, body=body)

    def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.request("PUT", path, body=body)

    def delete(self, path: str, *, uid: str | None = None, propagation: str | None = None) -> dict[str, Any]:
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            options["preconditions"] = {"uid": uid}
        if propagation:
            options["propagationPolicy"] = propagation
        return self.request("DELETE", path, body=options)

    def watch(
        self,
        path: str,
        resource_version: str,
        timeout_seconds: int,
        *,
        accept: str = "application/json",
        **query: Any,
    ) -> Iterator[dict[str, Any]]:
        """Watch events, one dict per line, until the server ends the watch."""
        params = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
            **query,
        }
        response = self.request(
            "GET", path, query=params, stream=True, timeout=(10.0, timeout_seconds + 30), accept=accept
        )
        try:
            buffer = b""
            for chunk in response.stream(65536, decode_content=False):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield orjson.loads(line)
        finally:
            response.release_conn()

    def total_requests(self) -> int:
        with self._lock:
            return sum(self.requests.values())
