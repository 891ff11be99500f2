"""The serving commands: ``jobgate webhook`` and ``jobgate controller`` (their modules imported lazily)."""

from __future__ import annotations

import sys

from jobgate.cli.offline import EXIT_USAGE

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    import argparse
    from typing import Any


def _webhook(args: argparse.Namespace) -> int:
    from pathlib import Path

    from jobgate.common import logs
    from jobgate.webhook.server import WebhookServer, run

    if not _serve_families(args):
        return EXIT_USAGE
    logs.configure(args.log_format, args.log_level)
    from jobgate.webhook.queues import start_queue_check

    server = WebhookServer(
        Path(args.tls_dir),
        args.host,
        args.port,
        cert_check_interval=args.cert_check_interval,
        shutdown_timeout=args.shutdown_timeout,
        shutdown_delay=args.shutdown_delay,
    )
    if args.jobset_feature_gates is not None:
        server.state.views.feature_gates = args.jobset_feature_gates
    start_queue_check(args.kubeconfig, server.state.views)
    from jobgate.webhook.policies import PolicyEnforcement
    from jobgate.webhook.queues import in_cluster

    policies = PolicyEnforcement(server.state.views)
    policies.start(args.kubeconfig, in_cluster())
    server.state.caches_synced = policies.ready
    runtimes = _trainer_runtimes(args.kubeconfig, in_cluster(), server.state.views)
    if runtimes is not None:
        server.state.caches_synced = lambda: policies.ready() and runtimes.synced()
    _jobset_claims(args.kubeconfig, in_cluster(), server.state.views)
    server.state.unready_while_draining = "readiness" not in args.drain_omit
    server.state.close_while_draining = "connection-close" not in args.drain_omit
    return run(server, args.event_loop)


def _trainer_runtimes(kubeconfig: str | None, in_cluster: bool, views: Any) -> Any:
    """The runtime informers TrainJob reviews read (webhook/trainer_runtimes.py), when the trainer family is served."""
    from jobgate.engine.registry import known_families, served_kinds

    if "trainer" not in known_families() or not any(k.family == "trainer" for k in served_kinds()):
        return None
    from jobgate.kube.client import Kube
    from jobgate.webhook.trainer_runtimes import start_runtime_cache

    kube = None
    if kubeconfig is not None or in_cluster:
        try:
            kube = Kube(kubeconfig)
        except Exception:  # an unreachable cluster must not stop admission: TrainJobs are refused as unknown
            kube = None
    return start_runtime_cache(kube, views)


def _jobset_claims(kubeconfig: str | None, in_cluster: bool, views: Any) -> None:
    """The PVC reads of JobSet's check of existing PVCs (webhook/jobset_claims.py), when JobSet is served."""
    from jobgate.engine.registry import known_families, served_kinds

    if "jobset" not in known_families() or not any(k.family == "jobset" for k in served_kinds()):
        return
    from jobgate.kube.client import Kube
    from jobgate.webhook.jobset_claims import start_claim_reader

    kube = None
    if kubeconfig is not None or in_cluster:
        try:
            kube = Kube(kubeconfig)
        except Exception:  # an unreachable cluster must not stop admission: PVCs are then not checked
            kube = None
    start_claim_reader(kube, views)


def _serve_families(args: argparse.Namespace) -> bool:
    """Apply ``--families`` (webhook and controller); False after printing why it is wrong."""
    from jobgate.engine.registry import parse_families, serve_families

    if args.families is None:
        return True
    try:
        serve_families(parse_families(args.families))
    except ValueError as exc:
        print(f"jobgate: --families: {exc}", file=sys.stderr)
        return False
    return True


def _controller(args: argparse.Namespace) -> int:
    from jobgate.controller.main import run

    # args.families is applied here for the rules; the controller picks its adapters from it.
    if not _serve_families(args):
        return EXIT_USAGE
    return run(args)
