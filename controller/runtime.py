"""The controller process: informers, a work queue, and the execution of the engine's plans.

Each job is a key ``<Kind>.<version>.<group>/<namespace>/<name>``. Job, pod and service events enqueue the job
(children are found through their controller ownerReference); workers take one key at a time
and run one reconcile pass: read the job and its children from the caches, ask the engine for
a plan, carry it out. The status goes first, so that a restart the engine counted is durable
before its pod is deleted; a 409 on that write means the cache was stale and the key is simply
retried. Children are created in parallel; expectations keep a pass from acting before the
caches have seen the previous pass's writes.
"""

from __future__ import annotations

import datetime
import logging
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from urllib3.exceptions import HTTPError

from jobgate.engine.context import ReviewContext
from jobgate.engine.fielderrors import aggregate_message
from jobgate.engine.registry import GroupVersionKind
from jobgate.kube.client import ApiError, Kube, Resource
from jobgate.kube.informer import Informer
from jobgate.review import review_job

from .adapters import ADAPTERS, JOB_UID_LABEL, Adapter
from .clock import timestamp
from .engine import Deletion, Event, Observed, Plan, reconcile, set_condition
from .expectations import Expectations
from .model import JobModel
from .resources import COMMANDS, EVENTS, KIND_RESOURCES, POD_GROUPS, PODS, SERVICES
from .slim import slim_pod, slim_service, strip_managed_fields
from .volcano_apis import VolcanoApis, command_crd_recheck_seconds
from .workqueue import WorkQueue, job_key, split_key

log = logging.getLogger("jobgate.controller")
COMPONENT = "jobgate-controller"
CREATE_ONLY_KINDS = ("Secret",)  # RBAC grants create only: no owner check on AlreadyExists
TRACKED_KINDS = ("Pod", "Service")  # children seen through informers (others are created once per job)
# Test-only fault hook: with this variable set to N, the process SIGKILLs itself right after its
# N-th successful pod create, before any later write (status included). Unset in every deployment;
# tests/e2e/test_controller_faults.py uses it to crash at a chosen point deterministically.
KILL_AFTER_POD_CREATES_VARIABLE = "JOBGATE_TEST_KILL_AFTER_POD_CREATES"


def _kill_after_pod_creates() -> int | None:
    value = os.environ.get(KILL_AFTER_POD_CREATES_VARIABLE, "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def owner_gvk(reference: dict[str, Any]) -> GroupVersionKind | None:
    return GroupVersionKind.from_object(reference)


def job_resource(adapter: Adapter) -> Resource:
    gvk = adapter.gvk
    return Resource(gvk.group, gvk.version, adapter.kind.plural)


def _owner(obj: dict[str, Any]) -> dict[str, Any] | None:
    for reference in obj.get("metadata", {}).get("ownerReferences") or []:
        if reference.get("controller"):
            return reference
    return None


class Controller(VolcanoApis):
    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str | None = None,
        workers: int = 16,
        resync_seconds: float = 300.0,
        identity: str = COMPONENT,
        families: frozenset[str] | None = None,  # None: every family; else only these (``--families``)
        wait_for_pod_group: bool = False,  # ``--wait-for-pod-group``: a gang scheduler moves PodGroups on
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.workers = workers
        self.resync_seconds = resync_seconds
        self.identity = identity
        self.adapters: dict[GroupVersionKind, Adapter] = {
            gvk: a for gvk, a in ADAPTERS.items() if families is None or a.kind.family in families
        }
        # Each cache keeps only what a pass reads (controller/slim.py): jobs whole but for managedFields,
        # pods their identity, owner, labels and status, services (watched metadata-only) their identity.
        self.job_informers = {
            gvk: Informer(
                kube, job_resource(a).path(namespace), name=gvk.kind.lower(), transform=strip_managed_fields
            )  # the name is a log label only
            for gvk, a in self.adapters.items()
        }
        selector = JOB_UID_LABEL
        self.pods = Informer(kube, PODS.path(namespace), name="pods", label_selector=selector, transform=slim_pod)
        self.services = Informer(
            kube,
            SERVICES.path(namespace),
            name="services",
            label_selector=selector,
            transform=slim_service,
            metadata_only=True,
        )
        self.children: dict[str, dict[str, dict[str, dict[str, Any]]]] = {"Pod": {}, "Service": {}, "PodGroup": {}}
        self.wait_for_pod_group = wait_for_pod_group
        # Started once discovery shows the APIs (Volcano's PodGroup and Command CRDs may be absent).
        self.pod_groups: Informer | None = None
        self.commands: Informer | None = None
        # Actions of bus.volcano.sh Commands taken (deleted) and not yet carried out, by job key.
        self.pending_commands: dict[str, str] = {}
        self._commands_lock = threading.Lock()
        self._late_lock = threading.Lock()  # watches of APIs that appeared after start-up, against stop()
        self._acting = threading.Event()  # workers run (this replica leads): only then are Commands taken
        self._children_lock = threading.Lock()
        self.queue = WorkQueue()
        self.expectations = Expectations()
        # Children without an informer (PodGroup, ConfigMap, ...) this process created, by job uid.
        self.created_extras: dict[str, set[tuple[str, str]]] = {}
        self._extras_lock = threading.Lock()
        self.gang_supported = False
        self._pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="create")
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.reconciles = 0
        self.status_conflicts = 0  # status writes refused with 409 (reported on stop)
        self._kill_after_pod_creates = _kill_after_pod_creates()
        self._pod_creates = 0
        self._reconciles_lock = threading.Lock()  # workers count concurrently
        for gvk, informer in self.job_informers.items():
            informer.handlers.append(self._job_handler(gvk))
        self.pods.handlers.append(self._child_handler("Pod"))
        self.services.handlers.append(self._child_handler("Service"))

    # --- events from the informers ----------------------------------------------------------------

    def _job_handler(self, gvk: GroupVersionKind):
        def handle(event: str, job: dict[str, Any], old: dict[str, Any] | None) -> None:
            metadata = job.get("metadata", {})
            key = job_key(gvk, metadata.get("namespace", ""), metadata.get("name", ""))
            if event == "DELETED":
                self.expectations.forget(key)
                with self._extras_lock:
                    self.created_extras.pop(metadata.get("uid", ""), None)
            elif event == "MODIFIED" and old is not None and _only_status_changed(old, job):
                return  # our own status writes: nothing new to act on
            self.queue.add(key)

        return handle

    def _child_handler(self, kind: str):
        def handle(event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            metadata = obj.get("metadata", {})
            owner = _owner(obj)
            uid = (metadata.get("labels") or {}).get(JOB_UID_LABEL)
            with self._children_lock:
                bucket = self.children[kind].setdefault(uid or "", {})
                if event == "DELETED":
                    bucket.pop(metadata.get("name"), None)
                    if not bucket:  # the job's last child of this kind: keep the index small
                        del self.children[kind][uid or ""]
                else:
                    bucket[metadata.get("name")] = obj
            gvk = owner_gvk(owner) if owner is not None else None
            if owner is None or gvk is None or gvk not in self.adapters:
                return
            key = job_key(gvk, metadata.get("namespace", ""), owner.get("name", ""))
            if event == "ADDED":
                self.expectations.creation_observed(key, f"{kind}/{metadata.get('name')}")
            elif event == "DELETED":
                self.expectations.deletion_observed(key, metadata.get("uid", ""))
            self.queue.add(key)

        return handle

    def owned(self, kind: str, uid: str) -> list[dict[str, Any]]:
        with self._children_lock:
            items = list(self.children[kind].get(uid, {}).values())
        return [o for o in items if (_owner(o) or {}).get("uid") == uid]

    # --- lifecycle -----------------------------------------------------------------------------------

    def _informers(self) -> list[Informer]:
        optional = [i for i in (self.pod_groups, self.commands) if i is not None]
        return [*self.job_informers.values(), self.pods, self.services, *optional]

    def start_informers(self) -> None:
        self.gang_supported = self._has_pod_groups()
        if self.gang_supported:
            self.pod_groups = self._pod_group_informer()
        takes_commands = any(gvk.group == "batch.volcano.sh" for gvk in self.adapters)
        if takes_commands and self._serves(COMMANDS):
            self.commands = self._command_informer()
        for informer in self._informers():
            informer.start()
        interval = command_crd_recheck_seconds()
        if not self.gang_supported:
            # Volcano is often installed after jobgate: gang scheduling starts when its API appears.
            log.info(
                "Volcano's PodGroup API (scheduling.volcano.sh) is not served: no gang scheduling; "
                "checking again every %gs",
                interval,
            )
            self._watch_for_api(POD_GROUPS, self._start_late_pod_groups, interval, "podgroups-crd")
        if takes_commands and self.commands is None:
            log.info("Volcano's Command API (bus.volcano.sh) is not served: checking again every %gs", interval)
            self._watch_for_api(COMMANDS, self._start_late_commands, interval, "commands-crd")

    def wait_for_sync(self, timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        for informer in self._informers():
            remaining = deadline - time.monotonic()
            if not informer.synced.wait(max(remaining, 0)):
                return False
        return True

    def start_workers(self) -> None:
        if not self.wait_for_sync():
            log.warning("caches not synced after 60 s; starting anyway")
        for number in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"worker-{number}", daemon=True)
            thread.start()
            self._threads.append(thread)
        self._acting.set()
        for command in self.commands.items() if self.commands is not None else []:
            self._command_handler("ADDED", command, None)  # those that arrived before this replica led
        resync = threading.Thread(target=self._resync, name="resync", daemon=True)
        resync.start()
        self._threads.append(resync)
        log.info("reconciling with %d workers (%s)", self.workers, self.namespace or "all namespaces")

    def stop(self) -> None:
        with self._late_lock:  # a watch started late is either seen here or never started
            self._stop.set()
        self.queue.shutdown()
        for informer in self._informers():
            informer.stop()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _resync(self) -> None:
        while not self._stop.wait(self.resync_seconds):
            self._requeue_all_jobs()

    def _requeue_all_jobs(self) -> None:
        for gvk, informer in self.job_informers.items():
            for job in informer.items():
                self.queue.add(job_key(gvk, job["metadata"]["namespace"], job["metadata"]["name"]))

    def _work(self) -> None:
        while not self._stop.is_set():
            key = self.queue.get()
            if key is None:
                return
            try:
                self.reconcile_key(key)
                self.queue.forget(key)
            except Exception as exc:
                failures = self.queue.failures(key)
                level = logging.WARNING if failures < 5 else logging.ERROR
                # An apiserver answer (e.g. 403 while its RBAC caches warm up after a restart) or an
                # apiserver out of reach (connection refused, reset, timed out) says all there is to
                # say; a traceback is kept for the failures nobody expected.
                traceback = failures >= 5 and not isinstance(exc, ApiError | HTTPError)
                log.log(level, "reconcile %s failed (%s); retrying", key, exc, exc_info=traceback)
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)

    # --- one pass ------------------------------------------------------------------------------------

    def reconcile_key(self, key: str) -> None:
        gvk, namespace, name = split_key(key)
        adapter = self.adapters[gvk]
        job = self.job_informers[gvk].get(f"{namespace}/{name}")
        if job is None:
            self.expectations.forget(key)
            return
        if job.get("metadata", {}).get("deletionTimestamp"):
            return  # garbage collection removes the children
        if not self.expectations.satisfied(key):
            self.queue.add_after(key, 0.2)
            return
        with self._reconciles_lock:
            self.reconciles += 1
        # The stored job judged as on its creation: the controller has no request, and reads no Queue.
        context = ReviewContext(namespace=job.get("metadata", {}).get("namespace"))
        verdict = review_job(adapter.kind, job, context=context, with_patch=False)
        if not verdict.allowed:
            self._refuse(adapter, job, aggregate_message(verdict.errors))
            return
        model = adapter.model(job)
        uid = model.uid
        with self._commands_lock:
            command = self.pending_commands.get(key)
        observed = Observed(
            pods=self.owned("Pod", uid),
            services=self.owned("Service", uid),
            existing=self._extras_of(uid),
            now=datetime.datetime.now(datetime.UTC),
            gang_supported=self.gang_supported,
            pod_groups=tuple(self.owned("PodGroup", uid)),
            wait_for_pod_group=self.wait_for_pod_group,
            command=command,
        )
        plan = reconcile(model, adapter.read(job), observed)
        if plan.status_changed and adapter.projection_unchanged(job, plan.status):
            plan.status_changed = False
        if self.execute(key, adapter, job, model, plan) and command is not None:
            with self._commands_lock:
                if self.pending_commands.get(key) == command:
                    del self.pending_commands[key]

    def execute(self, key: str, adapter: Adapter, job: dict[str, Any], model: JobModel, plan: Plan) -> bool:
        """Carry the plan out; False when the status write lost a race and the pass is to be redone."""
        resource = job_resource(adapter)
        for obj in plan.update:  # whole rewrites, idempotent: safe before the status, redone on a conflict
            self._replace(key, model, obj)
        if plan.status_changed:
            body = {**job, "status": adapter.project(plan.status)}
            try:
                self.kube.replace(resource.path(model.namespace, model.name, "status"), body)
            except ApiError as exc:
                if exc.status == 409:  # a newer version exists: the next pass starts from it
                    with self._reconciles_lock:
                        self.status_conflicts += 1
                    log.debug("%s: status conflict, requeued", key)
                    self.queue.add_after(key, 0.05)
                    return False
                if exc.status == 404:
                    return False
                raise
        for deletion in plan.delete:
            self._delete(key, model, deletion)
        self._create_all(key, model, plan.create)
        for event in plan.events:
            self._record(job, event)
        if plan.delete_job:
            try:
                self.kube.delete(resource.path(model.namespace, model.name), uid=model.uid, propagation="Background")
                log.info("%s: deleted after ttlSecondsAfterFinished", key)
            except ApiError as exc:
                if exc.status not in (404, 409):
                    raise
        if plan.requeue_after is not None:
            self.queue.add_after(key, plan.requeue_after + 0.05)
        return True

    def _replace(self, key: str, model: JobModel, obj: dict[str, Any]) -> None:
        kind, name = obj["kind"], obj["metadata"]["name"]
        path = KIND_RESOURCES[kind].path(model.namespace, name)
        try:
            existing = self.kube.get(path)
        except ApiError as exc:
            if exc.status != 404:
                raise
            self._create(key, model, obj)
            return
        if (_owner(existing) or {}).get("uid") != model.uid:
            raise RuntimeError(f"{kind} {name} exists and does not belong to this job")
        body = {**obj, "metadata": {**obj["metadata"], "resourceVersion": existing["metadata"].get("resourceVersion")}}
        self.kube.replace(path, body)
        with self._extras_lock:
            self.created_extras.setdefault(model.uid, set()).add((kind, name))

    def _delete(self, key: str, model: JobModel, deletion: Deletion) -> None:
        resource = KIND_RESOURCES[deletion.kind]
        if deletion.kind in TRACKED_KINDS and deletion.uid:
            self.expectations.expect_deletions(key, [deletion.uid])
        try:
            self.kube.delete(resource.path(model.namespace, deletion.name), uid=deletion.uid)
        except ApiError as exc:
            if deletion.uid:
                self.expectations.deletion_observed(key, deletion.uid)
            if exc.status not in (404, 409):  # gone already, or replaced by a newer object
                raise
        if deletion.kind not in TRACKED_KINDS:  # no informer tells: forget it, so it can be created again
            with self._extras_lock:
                self.created_extras.get(model.uid, set()).discard((deletion.kind, deletion.name))

    def _create_all(self, key: str, model: JobModel, objects: list[dict[str, Any]]) -> None:
        tracked = [f"{o['kind']}/{o['metadata']['name']}" for o in objects if o["kind"] in TRACKED_KINDS]
        if tracked:
            self.expectations.expect_creations(key, tracked)
        futures = [self._pool.submit(self._create, key, model, o) for o in objects]
        errors = [f.exception() for f in futures if f.exception() is not None]
        if errors:
            raise errors[0]

    def _create(self, key: str, model: JobModel, obj: dict[str, Any]) -> None:
        kind, name = obj["kind"], obj["metadata"]["name"]
        resource = KIND_RESOURCES[kind]
        try:
            self.kube.create(resource.path(model.namespace), obj)
        except ApiError as exc:
            if exc.status != 409:
                self.expectations.lower_creation(key, f"{kind}/{name}")
                self._record_model(
                    model, Event("Warning", f"FailedCreate{kind}", f"Error creating {kind} {name}: {exc}")
                )
                raise
            # AlreadyExists: ours (the cache was behind) or somebody else's object in the way.
            self.expectations.lower_creation(key, f"{kind}/{name}")
            # Secrets are create-only for the controller (no cluster-wide read): one of that name is taken as
            # the job's — anyone able to create it could mount it in a pod of that namespace anyway.
            existing = {} if kind in CREATE_ONLY_KINDS else self.kube.get(resource.path(model.namespace, name))
            if kind not in CREATE_ONLY_KINDS and (_owner(existing) or {}).get("uid") != model.uid:
                message = f"{kind} {name} exists and does not belong to this job"
                self._record_model(model, Event("Warning", f"FailedCreate{kind}", message))
                raise RuntimeError(message) from None
        if kind == "Pod" and self._kill_after_pod_creates is not None:
            self._count_pod_create_for_fault()
        if kind not in TRACKED_KINDS:
            with self._extras_lock:
                self.created_extras.setdefault(model.uid, set()).add((kind, name))

    def _count_pod_create_for_fault(self) -> None:
        with self._reconciles_lock:
            self._pod_creates += 1
            reached = self._pod_creates >= (self._kill_after_pod_creates or 0)
        if reached:
            log.warning("%s reached: killing this process (test fault)", KILL_AFTER_POD_CREATES_VARIABLE)
            os.kill(os.getpid(), signal.SIGKILL)

    def _extras_of(self, uid: str) -> frozenset[tuple[str, str]]:
        with self._extras_lock:
            return frozenset(self.created_extras.get(uid, ()))

    def _refuse(self, adapter: Adapter, job: dict[str, Any], message: str) -> None:
        """A job the webhook never saw (created while it was bypassed) and that breaks the rules."""
        status = adapter.read(job)
        if status.is_true("Failed") or status.phase == "Failed":
            return
        now = timestamp(datetime.datetime.now(datetime.UTC))
        set_condition(status, "Failed", "InvalidSpec", message, now)
        status.phase = "Failed"  # families with their own phase (Volcano) show it there
        status.extra.update(reason="InvalidSpec", message=message[:1000], lastTransitionTime=now)
        status.completion_time = now
        metadata = job["metadata"]
        body = {**job, "status": adapter.project(status)}
        self.kube.replace(job_resource(adapter).path(metadata["namespace"], metadata["name"], "status"), body)
        self._record(job, Event("Warning", "InvalidSpec", message[:1000]))

    def _record(self, job: dict[str, Any], event: Event) -> None:
        metadata = job["metadata"]
        involved = {"apiVersion": job["apiVersion"], "kind": job["kind"], "name": metadata["name"]}
        self._post_event({**involved, "namespace": metadata["namespace"], "uid": metadata.get("uid")}, event)

    def _record_model(self, model: JobModel, event: Event) -> None:
        involved = {"apiVersion": model.api_version, "kind": model.kind, "name": model.name}
        self._post_event({**involved, "namespace": model.namespace, "uid": model.uid}, event)

    def _post_event(self, involved: dict[str, Any], event: Event) -> None:
        """A core/v1 Event on the job, so that `kubectl describe` shows what the controller did."""
        namespace, name = involved["namespace"], involved["name"]
        now = timestamp(datetime.datetime.now(datetime.UTC))
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{name}.", "namespace": namespace},
            "involvedObject": involved,
            "reason": event.reason,
            "message": event.message,
            "type": event.type,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.identity,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            self.kube.create(EVENTS.path(namespace), body)
        except ApiError as exc:
            log.warning("could not record event %s on %s/%s: %s", event.reason, namespace, name, exc)


def _only_status_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    before, after = old.get("metadata", {}), new.get("metadata", {})
    return (
        before.get("generation") == after.get("generation")
        and before.get("labels") == after.get("labels")
        and before.get("annotations") == after.get("annotations")
        and before.get("deletionTimestamp") == after.get("deletionTimestamp")
    )
