"""What the controller keeps of the objects it watches: the fields a reconcile pass reads, nothing else.

The informers used to cache every pod, service and job as the whole dict the apiserver sent,
``managedFields``, the defaulted pod spec, the service account volume and all: about 10 KiB of
Python objects per child, 110 MiB per 1,000 jobs of 5 replicas. Go controllers cut the same
cost with controller-runtime's cache transforms (``TransformStripManagedFields``, a ``Transform``
per informer); these are the transforms of this controller, applied before an object enters
its informer's cache, so handlers, ``Informer.get`` and every pass see the slim record only.

Children (pods, services, PodGroups) keep exactly what the controller reads from them, in the
same dict shape as the apiserver's, so the engine reads them unchanged:

- ``metadata``: name, namespace, uid, labels (replica type and index, the job's uid, Volcano's
  task and partition), ``deletionTimestamp``, ``ownerReferences`` (the controller reference
  decides whose child it is) and, of the annotations, only those in ``READ_ANNOTATIONS``;
- pods: ``spec.containers[0].name`` (Volcano reports the first container's exit code) and
  ``status.phase``/``reason`` plus, per container, name, ``restartCount``, ``state`` and
  ``lastState.terminated`` (exit codes; T9k and DI-engine copy states into the job's status);
- PodGroups: ``status.phase``; services: metadata only.

Jobs are kept whole but for ``managedFields``: the spec is reviewed and modelled on every pass and
the status write sends the cached job back (the apiserver keeps the stored ``managedFields``
when an update leaves them out).

Repeated strings (the namespace, label keys and values, the job's uid in every child's label and
owner reference, owner kinds) are interned, so that the 10 children of a job share one copy.
Repeated small structures are shared the same way: the owner reference list (one per job, not
one per child), a pod's ``spec`` stub (one per container name) and a status that holds only a
phase (one per phase). Cached objects are read-only (no pass writes to what it observed); the
shared parts are ``Shared``/``SharedList`` instances, held weakly by their table so that they go
with the last child using them.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any

from .lifecycle_policy import JOB_VERSION_KEY

# The only pod annotations a pass reads (``lifecycle._version``): everything else a template adds
# (user annotations, scheduler hints) is written to the pod and never read back.
READ_ANNOTATIONS = (JOB_VERSION_KEY,)
_intern = sys.intern
# The fields of an owner reference (meta/v1 OwnerReference): a reference with exactly these is shared.
OWNER_FIELDS = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
_ABSENT = object()


class Shared(dict[str, Any]):
    """A dict that several cached objects share: never to be modified."""

    __slots__ = ("__weakref__",)


class SharedList(list[Any]):
    """A list that several cached objects share: never to be modified."""

    __slots__ = ("__weakref__",)


_shared: weakref.WeakValueDictionary[Hashable, Any] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()  # informers transform in their own threads


def _share(key: Hashable, build: Callable[[], Any]) -> Any:
    with _shared_lock:
        value = _shared.get(key)
        if value is None:
            value = _shared[key] = build()
        return value


def _string(value: Any) -> Any:
    return _intern(value) if type(value) is str else value


def _strings(mapping: Any) -> dict[str, Any]:
    if not isinstance(mapping, dict):
        return {}
    return {_intern(k) if type(k) is str else k: _string(v) for k, v in mapping.items()}


def _owner_references(references: Any) -> list[dict[str, Any]]:
    if not isinstance(references, list):
        return []
    if len(references) == 1 and isinstance(references[0], dict) and references[0].keys() <= set(OWNER_FIELDS):
        # The common case, a job's children: one list for all of them.
        reference = references[0]
        key = ("ownerReferences", *(_string(reference.get(f, _ABSENT)) for f in OWNER_FIELDS))
        return _share(key, lambda: SharedList([Shared(_strings(reference))]))
    return [_strings(r) for r in references if isinstance(r, dict)]


def slim_metadata(metadata: Any) -> dict[str, Any]:
    """The metadata a pass reads of a child: identity, labels, owner, deletion and read annotations."""
    if not isinstance(metadata, dict):
        return {}
    slim: dict[str, Any] = {
        "name": metadata.get("name"),
        "namespace": _string(metadata.get("namespace")),
        "uid": metadata.get("uid"),
    }
    labels = metadata.get("labels")
    if labels:
        slim["labels"] = _strings(labels)
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict):
        kept = {key: _string(annotations[key]) for key in READ_ANNOTATIONS if key in annotations}
        if kept:
            slim["annotations"] = kept
    references = metadata.get("ownerReferences")
    if references:
        slim["ownerReferences"] = _owner_references(references)
    if metadata.get("deletionTimestamp"):
        slim["deletionTimestamp"] = metadata["deletionTimestamp"]
    return slim


def _container_status(status: Any) -> dict[str, Any]:
    if not isinstance(status, dict):
        return {}
    slim: dict[str, Any] = {"name": _string(status.get("name")), "restartCount": status.get("restartCount") or 0}
    if status.get("state"):
        slim["state"] = status["state"]
    last = status.get("lastState")
    terminated = last.get("terminated") if isinstance(last, dict) else None
    if terminated:
        slim["lastState"] = {"terminated": terminated}
    return slim


def slim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    slim: dict[str, Any] = {"metadata": slim_metadata(pod.get("metadata"))}
    containers = (pod.get("spec") or {}).get("containers")
    if isinstance(containers, list) and containers and isinstance(containers[0], dict):
        name = _string(containers[0].get("name"))
        slim["spec"] = _share(("spec", name), lambda: Shared(containers=SharedList([Shared(name=name)])))
    status = pod.get("status")
    if isinstance(status, dict):
        kept: dict[str, Any] = {}
        if status.get("phase"):
            kept["phase"] = _string(status["phase"])
        if status.get("reason"):
            kept["reason"] = _string(status["reason"])
        for field in ("containerStatuses", "initContainerStatuses"):
            statuses = status.get(field)
            if isinstance(statuses, list) and statuses:
                kept[field] = [_container_status(s) for s in statuses]
        if kept.keys() == {"phase"}:  # a pod no kubelet has reported on yet, or one with no container status
            phase = kept["phase"]
            kept = _share(("status", phase), lambda: Shared(phase=phase))
        slim["status"] = kept
    return slim


def slim_service(service: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": slim_metadata(service.get("metadata"))}


def slim_pod_group(group: dict[str, Any]) -> dict[str, Any]:
    slim: dict[str, Any] = {"metadata": slim_metadata(group.get("metadata"))}
    phase = (group.get("status") or {}).get("phase") if isinstance(group.get("status"), dict) else None
    if phase is not None:
        slim["status"] = {"phase": _string(phase)}
    return slim


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """controller-runtime's ``TransformStripManagedFields``: the one part of a job no pass reads."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
        if isinstance(metadata.get("namespace"), str):
            metadata["namespace"] = _intern(metadata["namespace"])
    return obj
