"""Admission load for the in-cluster experiments: clients sending jobs to the apiserver at a steady
rate and recording every answer where users see it (the client's status and message), so that a
failed admission is counted, never inferred from a server's log.

Used by tests/e2e/test_in_cluster_rollout.py and bench/drain_pieces.py.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

RATE = 25.0  # requests per second, all clients together
CLIENTS = 5
NAMESPACE = "rollout-load"

GROUP, VERSION, PLURAL = "training.kubedl.io", "v1alpha1", "tfjobs"
DENIAL = "must not have more than 1 Chief or Master role"


def tfjob(name: str, *, valid: bool, namespace: str = NAMESPACE) -> dict:
    # Pods of the real creates stay Pending (no node matches): the controller creates them, the
    # node runs nothing, and the load stays on admission.
    container = {"name": "tensorflow", "image": "jobgate.local/none:0"}
    template = {"spec": {"containers": [container], "nodeSelector": {"jobgate.test/none": "none"}}}
    replicas = {"Worker": {"replicas": 1, "template": template}}
    if not valid:
        replicas = {"Chief": {"template": template}, "Master": {"template": template}}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"tfReplicaSpecs": replicas},
    }


Answer = tuple[str, str, str, float]  # kind, outcome, detail, when it came (time.monotonic())


@dataclass
class Load:
    """Clients sending jobs at ``RATE`` until stopped; every answer kept."""

    kubeconfig: str
    run: str  # names the real creates, unique across runs
    namespace: str = NAMESPACE
    answers: list[Answer] = field(default_factory=list)
    started: float = 0.0
    stopped: float = 0.0
    # Set by the caller around the event the load watches (monotonic, like each answer's time).
    event_started: float = 0.0
    event_ended: float = 0.0
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Load:
        self.started = time.monotonic()
        for index in range(CLIENTS):
            thread = threading.Thread(target=self._client, args=(index,), daemon=True)
            thread.start()
            self.threads.append(thread)
        return self

    def finish(self) -> list[Answer]:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)
        self.stopped = time.monotonic()
        return self.answers

    @property
    def rate(self) -> float:
        return len(self.answers) / (self.stopped - self.started)

    def _client(self, index: int) -> None:
        from kubernetes import client, config

        configuration = client.Configuration()
        config.load_kube_config(config_file=self.kubeconfig, client_configuration=configuration)
        api = client.CustomObjectsApi(client.ApiClient(configuration))  # one connection pool per client
        interval = CLIENTS / RATE
        sent = 0
        next_at = time.monotonic() + index * interval / CLIENTS
        while not self.stop.is_set():
            time.sleep(max(0.0, next_at - time.monotonic()))
            next_at += interval
            sent += 1
            # Of every 8 requests: 3 dry-run valid, 3 dry-run invalid, 1 real invalid, 1 real valid.
            kind = ("dry-valid", "dry-invalid", "dry-valid", "real-invalid", "dry-invalid", "dry-valid",
                    "dry-invalid", "real-valid")[sent % 8]  # fmt: skip
            self._record(kind, api, f"{self.run}-c{index}-{sent}")

    def _record(self, kind: str, api, name: str) -> None:
        from kubernetes.client.exceptions import ApiException

        body = tfjob(name, valid=kind.endswith("-valid") and not kind.endswith("invalid"), namespace=self.namespace)
        dry_run = "All" if kind.startswith("dry") else None
        try:
            api.create_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, body, dry_run=dry_run, _request_timeout=30
            )
            outcome, detail = "admitted", ""
        except ApiException as exc:
            detail = exc.body if isinstance(exc.body, str) else str(exc)
            outcome = "refused" if exc.status == 422 and DENIAL in detail else f"failed {exc.status}"
        except Exception as exc:  # the connection itself: counted, never lost
            outcome, detail = "failed", repr(exc)
        with self.lock:
            self.answers.append((kind, outcome, detail[:300], time.monotonic()))


def failures(answers: list[Answer]) -> list[Answer]:
    expected = {"dry-valid": "admitted", "real-valid": "admitted", "dry-invalid": "refused", "real-invalid": "refused"}
    return [a for a in answers if a[1] != expected[a[0]]]


def summary(answers: list[Answer]) -> str:
    counts = Counter((kind, outcome) for kind, outcome, _, _ in answers)
    return ", ".join(f"{kind} {outcome}: {n}" for (kind, outcome), n in sorted(counts.items()))
