"""List + watch into a local cache, in a thread, as client-go's reflector does.

The cache is filled by a LIST; a WATCH from the list's resourceVersion keeps it current.
Bookmarks move the resourceVersion forward; a watch that ends is resumed from the last
version; "410 Gone" (the version is too old) triggers a fresh LIST. Handlers are called
with (event type, object, old object) for every change, including the LIST's additions.

What is cached is the informer's ``transform`` of each object (controller-runtime's cache
transforms): only what its readers need, so that thousands of pods do not cost their whole
apiserver representation. ``metadata_only`` asks the apiserver for ``PartialObjectMetadata``
(client-go's metadata informers) where nobody reads the spec or status. The LIST is read in
pages of ``page_size``, each transformed and dropped before the next is fetched, so that a
restart at scale never holds the whole collection as the apiserver sent it.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from jobgate.kube.client import ApiError, Kube

log = logging.getLogger("jobgate.informer")

HEALTHY_WATCH_SECONDS = 10.0  # a watch that lasted this long was healthy: restart the backoff
SHORT_WATCH_SECONDS = 1.0  # a watch that ended sooner without an error is backed off like a failure
Handler = Callable[[str, dict[str, Any], dict[str, Any] | None], None]
Transform = Callable[[dict[str, Any]], dict[str, Any]]
# client-go's reflector lists in pages of 500 too.
DEFAULT_PAGE_SIZE = 500
METADATA_ONLY_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA_ONLY_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


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
        transform: Transform | None = None,
        metadata_only: bool = False,
        page_size: int | None = DEFAULT_PAGE_SIZE,
    ) -> None:
        self.kube = kube
        self.path = path
        self.name = name
        self.label_selector = label_selector
        self.watch_timeout = watch_timeout
        self.transform = transform
        self.metadata_only = metadata_only
        self.page_size = page_size
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

    def _keep(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.transform(obj) if self.transform is not None else obj

    def _list(self) -> str:
        fresh: dict[str, dict[str, Any]] = {}
        accept = METADATA_ONLY_LIST if self.metadata_only else "application/json"
        query = self._query()
        if self.page_size:
            query["limit"] = self.page_size
        while True:
            page = self.kube.get(self.path, accept=accept, **query)
            for item in page.get("items") or []:
                kept = self._keep(item)
                fresh[object_key(kept)] = kept
            page_metadata = page.get("metadata") or {}
            resource_version = str(page_metadata.get("resourceVersion", ""))
            token = page_metadata.get("continue")
            del page  # the page as the apiserver sent it: only the transformed items stay
            if not token:
                break
            # An expired token answers 410 Gone: _run lists again from the start.
            query["continue"] = token
        with self._lock:
            previous, self._cache = self._cache, fresh
        self.relists += 1
        for key, obj in fresh.items():
            self._notify("ADDED" if key not in previous else "MODIFIED", obj, previous.get(key))
        for key, obj in previous.items():
            if key not in fresh:
                self._notify("DELETED", obj, None)
        self.synced.set()
        return resource_version

    def _watch(self, resource_version: str) -> str:
        accept = METADATA_ONLY_WATCH if self.metadata_only else "application/json"
        events = self.kube.watch(self.path, resource_version, self.watch_timeout, accept=accept, **self._query())
        for event in events:
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
            obj = self._keep(obj)
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


class InformerGroup:
    """The informers of one cache, started, stopped and waited on together: the cache is synced when
    every one of them is. A subclass gives ``informers``."""

    informers: Sequence[Informer]

    def start(self) -> None:
        for informer in self.informers:
            informer.start()

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop()

    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self.informers)

    def wait_synced(self) -> None:
        for informer in self.informers:
            informer.synced.wait()
