"""List + watch into a local cache, in a thread, as client-go's reflector does.

The cache is filled by a LIST; a WATCH from the list's resourceVersion keeps it current.
Bookmarks move the resourceVersion forward; a watch that ends is resumed from the last
version; "410 Gone" (the version is too old) triggers a fresh LIST. Handlers are called
with (event type, object, old object) for every change, including the LIST's additions.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from jobgate.kube.client import ApiError, Kube

log = logging.getLogger("jobgate.informer")

HEALTHY_WATCH_SECONDS = 10.0  # a watch that lasted this long was healthy: restart the backoff
SHORT_WATCH_SECONDS = 1.0  # a watch that ended sooner without an error is backed off like a failure
Handler = Callable[[str, dict[str, Any], dict[str, Any] | None], None]


def object_key(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata", {})
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


class Informer:
    def __init__(
        self,
        kube: Kube,
        path: str,
        *,
        name: str,
        label_selector: str | None = None,
        watch_timeout: int = 300,
    ) -> None:
        self.kube = kube
        self.path = path
        self.name = name
        self.label_selector = label_selector
        self.watch_timeout = watch_timeout
        self.handlers: list[Handler] = []
        self.synced = threading.Event()
        self._cache: dict[str, dict[str, Any]] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.relists = 0

    # --- cache ---------------------------------------------------------------------------------

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._cache.get(key)

    def items(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._cache.values())

    # --- loop ----------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _query(self) -> dict[str, Any]:
        return {"labelSelector": self.label_selector} if self.label_selector else {}

    def _run(self) -> None:
        # Backoff between failed attempts: 0.5 s doubling to 30 s with jitter, as client-go's
        # reflector; back to 0.5 s after a successful list or a watch that stayed up a while,
        # so that one outage does not slow the recovery from the next one.
        delay = 0.5
        resource_version: str | None = None
        while not self._stop.is_set():
            opened = time.monotonic()
            try:
                if resource_version is None:
                    resource_version = self._list()
                    delay = 0.5
                    opened = time.monotonic()
                resource_version = self._watch(resource_version)
                if time.monotonic() - opened < SHORT_WATCH_SECONDS:
                    # Ended at once without an error (a server shutting down): wait as after a
                    # failure, never spin.
                    self._stop.wait(delay * random.uniform(0.8, 1.2))
                    delay = min(delay * 2, 30.0)
                else:
                    delay = 0.5
            except ApiError as exc:
                if exc.status == 410:
                    log.info("%s: resource version %s too old (410), listing again", self.name, resource_version)
                    resource_version = None
                    continue
                if time.monotonic() - opened > HEALTHY_WATCH_SECONDS:
                    delay = 0.5
                log.warning("%s: %s; retrying in %.1f s", self.name, exc, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, 30.0)
            except Exception as exc:  # connection reset, timeouts: resume the watch
                if self._stop.is_set():
                    return
                if time.monotonic() - opened > HEALTHY_WATCH_SECONDS:
                    delay = 0.5
                log.warning("%s: watch interrupted (%s); resuming in %.1f s", self.name, exc, delay)
                self._stop.wait(delay * random.uniform(0.8, 1.2))
                delay = min(delay * 2, 30.0)

    def _list(self) -> str:
        listing = self.kube.get(self.path, **self._query())
        fresh = {object_key(o): o for o in listing.get("items") or []}
        with self._lock:
            previous, self._cache = self._cache, fresh
        self.relists += 1
        for key, obj in fresh.items():
            self._notify("ADDED" if key not in previous else "MODIFIED", obj, previous.get(key))
        for key, obj in previous.items():
            if key not in fresh:
                self._notify("DELETED", obj, None)
        self.synced.set()
        return str(listing.get("metadata", {}).get("resourceVersion", ""))

    def _watch(self, resource_version: str) -> str:
        for event in self.kube.watch(self.path, resource_version, self.watch_timeout, **self._query()):
            if self._stop.is_set():
                break
            kind, obj = str(event.get("type") or ""), event.get("object") or {}
            if kind == "ERROR":
                code = obj.get("code") or 0
                raise ApiError(int(code), obj.get("reason", "Error"), obj)
            version = obj.get("metadata", {}).get("resourceVersion")
            if kind == "BOOKMARK":
                resource_version = version or resource_version
                continue
            key = object_key(obj)
            with self._lock:
                old = self._cache.get(key)
                if kind == "DELETED":
                    self._cache.pop(key, None)
                else:
                    self._cache[key] = obj
            resource_version = version or resource_version
            self._notify(kind, obj, old)
        return resource_version

    def _notify(self, kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        for handler in self.handlers:
            try:
                handler(kind, obj, old)
            except Exception:
                log.exception("%s: handler failed for %s", self.name, object_key(obj))
