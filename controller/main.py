"""``jobgate controller``: run the reconciler until SIGTERM, optionally behind leader election."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobgate.kube.client import Kube

    from .policy_audit import PolicyAudit
    from .runtime import Controller

log = logging.getLogger("jobgate.controller")
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def default_lease_namespace(namespace: str | None) -> str:
    if SERVICE_ACCOUNT_NAMESPACE.exists():
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
    return namespace or "default"


def served_families(value: str | frozenset[str] | None) -> frozenset[str] | None:
    """``--families`` as the CLI left it (checked there: unknown names exit 2); None serves all."""
    if value is None or isinstance(value, frozenset):
        return value
    return frozenset(part.strip() for part in value.split(",") if part.strip()) or None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    parser.add_argument("--namespace", help="reconcile jobs of this namespace only (default: all)")
    parser.add_argument("--leader-elect", action="store_true", help="act only while holding the Lease")
    parser.add_argument("--lease-namespace", help="namespace of the Lease (default: the pod's, else --namespace)")
    parser.add_argument(
        "--lease-name", default="jobgate-controller", help="name of the Lease (default: jobgate-controller)"
    )
    parser.add_argument(
        "--lease-duration",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="how long others wait after the last renewal before taking the Lease (default 15)",
    )
    parser.add_argument(
        "--renew-deadline",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="the leader steps down when it could not renew for this long (default 10)",
    )
    parser.add_argument(
        "--retry-period",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="how often to try to take or renew the Lease (default 2)",
    )
    parser.add_argument("--workers", type=int, default=16, help="jobs reconciled concurrently (default 16)")
    parser.add_argument("--resync", type=float, default=300.0, metavar="SECONDS", help="full resync period")
    parser.add_argument("--identity", help="leader-election identity (default: host name, pid and a random tag)")
    parser.add_argument(
        "--wait-for-pod-group",
        action="store_true",
        help="Volcano Jobs with schedulerName volcano get no pods while their PodGroup is Pending "
        "(only when Volcano's scheduler runs: it is what moves PodGroups on)",
    )
    parser.add_argument(
        "--policy-audit-interval",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="audit stored jobs against the platform policies on every policy or namespace change and "
        "this often (default 300; 0: no audit)",
    )
    parser.add_argument(
        "--no-openreports",
        action="store_true",
        help="write no OpenReports (openreports.io/v1alpha1 Report per violating job), even where their CRDs "
        "are installed",
    )
    parser.add_argument(
        "--openreports-writes-per-second",
        type=float,
        default=20.0,
        metavar="N",
        help="pace the audit's Report writes (default 20; 0: unpaced)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=0,
        metavar="PORT",
        help="serve Prometheus metrics (jobgate_policy_violations) on this port (default 0: not served)",
    )
    parser.add_argument("--log-format", choices=("text", "json"), default="text", help="log lines as text or JSON")
    parser.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"), default="info", help="least severe level logged"
    )


def run(args: argparse.Namespace) -> int:
    from jobgate.common import logs
    from jobgate.kube.client import Kube

    from .leader import LeaderElector, LeaseTiming
    from .runtime import Controller

    logs.configure(args.log_format, args.log_level)
    identity = args.identity or f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    kube = Kube(args.kubeconfig)
    controller = Controller(
        kube,
        namespace=args.namespace,
        workers=args.workers,
        resync_seconds=args.resync,
        identity=identity,
        families=served_families(getattr(args, "families", None)),
        wait_for_pod_group=args.wait_for_pod_group,
    )
    stop = threading.Event()
    signalled = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        signalled.set()
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.metrics_port:
        from prometheus_client import start_http_server

        start_http_server(args.metrics_port)
    audit = _policy_audit(kube, controller, args)
    if not args.leader_elect:
        controller.start_informers()
        controller.start_workers()
        if audit is not None:
            audit.start()
        stop.wait()
        if audit is not None:
            audit.stop()
        controller.stop()
        _report(kube, controller)
        return 0

    timing = LeaseTiming(args.lease_duration, args.renew_deadline, args.retry_period)
    elector = LeaderElector(
        kube, args.lease_namespace or default_lease_namespace(args.namespace), args.lease_name, identity, timing
    )
    log.info("waiting to lead (identity %s)", identity)
    election = threading.Thread(
        target=elector.run, args=(start_when_leading(controller, stop, audit), stop.set), name="leader", daemon=True
    )
    election.start()
    stop.wait()
    elector.stop()
    election.join(timeout=timing.retry_period + 10)
    if audit is not None:
        audit.stop()
    controller.stop()
    _report(kube, controller)
    if signalled.is_set():
        return 0
    log.error("exiting: leadership lost")
    return 1


def _policy_audit(kube: Kube, controller: Controller, args: argparse.Namespace) -> PolicyAudit | None:
    """The audit of stored jobs against the platform policies, over the kinds this controller runs."""
    if args.policy_audit_interval <= 0:
        return None
    from .policy_audit import PolicyAudit

    kinds = [adapter.kind for adapter in controller.adapters.values()]
    return PolicyAudit(
        kube,
        kinds,
        interval=args.policy_audit_interval,
        namespace=args.namespace,
        openreports=not args.no_openreports,
        report_writes_per_second=args.openreports_writes_per_second,
    )


def start_when_leading(
    controller: Controller, stop: threading.Event, audit: PolicyAudit | None = None
) -> Callable[[], None]:
    """The elector's ``on_started``: fill the caches and start the workers once this replica leads.

    A standby replica caches nothing: a pass needs the caches only to act, and it acts only while
    leading, so watching every job, pod and service while waiting for the Lease would cost the
    standby as much memory as the leader's caches for nothing. The price is the takeover: the new
    leader lists before its first pass, as a restarted controller does. The lists run in their own
    thread, so that the elector keeps renewing the Lease however long they take.
    """

    def start() -> None:
        if stop.is_set():
            return
        controller.start_informers()
        controller.start_workers()
        if audit is not None:
            audit.start()  # the audit writes the policies' status: the leader's alone

    def on_started() -> None:
        threading.Thread(target=start, name="start-leading", daemon=True).start()

    return on_started


def _report(kube: Kube, controller: Controller) -> None:
    """The API requests this process made, by verb, its reconcile passes and its status conflicts."""
    fields = {f"requests_{verb.lower()}": n for verb, n in sorted(kube.requests.items())}
    counts = {"reconciles": controller.reconciles, "status_conflicts": controller.status_conflicts}
    log.info("stopped", extra={"fields": {**fields, **counts}})
