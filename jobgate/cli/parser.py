"""The argument parser of every command (argparse, built only when the quick parse of ``validate`` does not apply)."""

from __future__ import annotations

import os
import sys

from jobgate.cli.certs import _certs_init, _certs_inject, _certs_renew
from jobgate.cli.explain import _explain
from jobgate.cli.manifests import _enforcement, _manifests, _policies
from jobgate.cli.offline import _default, _review, _validate
from jobgate.cli.policy import _policy_explain
from jobgate.cli.serve import _controller, _webhook

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable


def _add_families_flag(parser: argparse.ArgumentParser, others: str) -> None:
    parser.add_argument(
        "--families",
        metavar="LIST",
        help=f"comma-separated job API families to serve, e.g. volcano,kubedl (default: all); {others}",
    )


def _add_cluster_flags(parser: argparse.ArgumentParser, default: object = None) -> None:
    """The cluster objects an offline verdict needs, exported to files (``default``: argparse.SUPPRESS
    on a sub-command, so that the flag may come before or after it)."""
    parser.add_argument(
        "--queues",
        metavar="FILE",
        default=default,
        help="Volcano Queues (YAML/JSON, e.g. `kubectl get queues -o yaml`) to check Volcano jobs' queues against",
    )
    parser.add_argument(
        "--policies",
        metavar="FILE|DIR",
        action="append",
        default=default,
        help="platform policies to enforce (ClusterTrainingJobPolicy, TrainingJobPolicy, and the "
        "TrainingJobPolicyExceptions that waive them; e.g. `kubectl get "
        "clustertrainingjobpolicies,trainingjobpolicies,trainingjobpolicyexceptions -A -o yaml`); may be given again",
    )
    parser.add_argument(
        "--namespaces",
        metavar="FILE",
        default=default,
        help="Namespace objects (e.g. `kubectl get namespaces -o yaml`) whose labels the policies' "
        "namespaceSelector reads",
    )
    parser.add_argument(
        "--namespace",
        metavar="NS",
        default=default,
        help="the namespace of a job that names none (default: default)",
    )
    parser.add_argument(
        "--cluster-objects",
        metavar="FILE|DIR",
        action="append",
        default=default,
        help="exported cluster objects, routed by apiVersion and kind (Namespaces, the policies, Volcano "
        "Queues, Kueue LocalQueues, ClusterQueues, ResourceFlavors and Cohorts, resource.k8s.io/v1 "
        "ResourceClaimTemplates, ResourceClaims, DeviceClasses, Trainer's runtimes, PersistentVolumeClaims "
        "for JobSet's existing-PVC check; other kinds are ignored): one `kubectl get "
        "namespaces,queues,localqueues,clusterqueues,resourceflavors,cohorts,resourceclaimtemplates,resourceclaims,"
        "deviceclasses,clustertrainingjobpolicies,trainingjobpolicies -A -o yaml` is all a check needs; may be "
        "given again",
    )
    _add_now_flag(parser, default)
    _add_jobset_gates_flag(parser, default)


def _jobset_gates(text: str) -> frozenset[str]:
    import argparse

    from jobgate.families.jobset.rules.gates import parse_gates

    try:
        return parse_gates(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_jobset_gates_flag(parser: argparse.ArgumentParser, default: object = None) -> None:
    parser.add_argument(
        "--jobset-feature-gates",
        metavar="LIST",
        type=_jobset_gates,
        default=default,
        help="JobSet's feature gates, as its controller's --feature-gates (e.g. InPlaceRestart=true,RestartJob=true,"
        "ElasticJobSet=true; default: all off, as JobSet v0.12.0): the JobSet rules behind a gate follow it",
    )


def _now_argument(text: str) -> object:
    from jobgate.offline.exception_objects import now_argument  # only a run given --now reads it

    return now_argument(text)


def _add_now_flag(parser: argparse.ArgumentParser, default: object = None) -> None:
    parser.add_argument(
        "--now",
        metavar="RFC3339",
        type=_now_argument,
        default=default,
        help="the time TrainingJobPolicyExceptions (in --policies or --cluster-objects) are judged at, e.g. "
        "2026-12-01T00:00:00Z, for reproducible CI (default: the current time)",
    )


def _positive_int(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _field_validation(text: str) -> object:
    import argparse

    from jobgate.offline.results import FieldValidation

    try:
        return FieldValidation.parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be strict, warn, ignore, true or false, not {text!r}") from None


def _add_validation_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--validate",
        type=_field_validation,
        default="strict",
        metavar="MODE",
        help="unknown fields, as kubectl's flag: strict (default: denied, as kubectl apply does), "
        "warn, ignore; true=strict, false=ignore",
    )


def _validate_arguments(validate: argparse.ArgumentParser) -> None:
    from jobgate.offline.report import FORMATS

    validate.description = "Exit status: 0 all admitted, 1 any denied, 2 usage error or unreadable input."
    validate.add_argument("paths", nargs="+", metavar="PATH", help="file, directory (recursive) or - for stdin")
    validate.add_argument("-o", "--output", choices=FORMATS, default="text", help="output format (default: text)")
    _add_validation_flag(validate)
    validate.add_argument(
        "-j",
        "--jobs",
        type=_positive_int,
        default=None,
        metavar="N",
        help="files checked in parallel (default: the number of CPUs); output stays in input order",
    )
    validate.add_argument(
        "--skip-non-objects",
        action="store_true",
        help="skip, rather than refuse (exit 2), documents that are no Kubernetes object: no apiVersion and no "
        "kind (a GitHub workflow), a template with {{ }} (a Helm chart's), a file with no apiVersion that "
        "does not parse; each is listed as skipped (the pre-commit hook passes it)",
    )
    _add_cluster_flags(validate)
    validate.set_defaults(handler=_validate)


def _default_arguments(default: argparse.ArgumentParser) -> None:
    default.add_argument("paths", nargs="+", metavar="PATH", help="file, directory (recursive) or - for stdin")
    default.add_argument(
        "-o",
        "--output",
        choices=("yaml", "json"),
        default="yaml",
        help="yaml keeps the author's comments and key order; json is the object as the apiserver stores it",
    )
    _add_validation_flag(default)
    _add_cluster_flags(default)
    default.set_defaults(handler=_default)


def _review_arguments(review: argparse.ArgumentParser) -> None:
    import argparse

    _add_cluster_flags(review)
    # One sub-command per webhook, so that flags may come before or after FILE.
    webhooks = review.add_subparsers(dest="webhook", metavar="{mutate,validate}", required=True)
    for name in ("mutate", "validate"):
        answer = webhooks.add_parser(name, help=f"answer as /{name} would")
        answer.add_argument("file", nargs="?", default="-", metavar="FILE", help="AdmissionReview JSON (stdin if -)")
        _add_cluster_flags(answer, default=argparse.SUPPRESS)
    review.set_defaults(handler=_review)


def _webhook_arguments(webhook: argparse.ArgumentParser) -> None:
    import argparse

    webhook.add_argument("--tls-dir", required=True, help="directory with tls.crt and tls.key (reloaded on change)")
    webhook.add_argument("--host", default="0.0.0.0", help="address to listen on (default: 0.0.0.0)")
    webhook.add_argument("--port", type=int, default=9443, help="port to listen on (default: 9443)")
    webhook.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="one line per review as text or JSON"
    )
    webhook.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"), default="info", help="least severe level logged"
    )
    webhook.add_argument(
        "--event-loop",
        choices=("asyncio", "uvloop"),
        default="asyncio",
        help="asyncio's event loop, or uvloop's (needs the uvloop package; see docs/performance.md)",
    )
    webhook.add_argument(
        "--cert-check-interval",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="how often to look for new certificates",
    )
    webhook.add_argument(
        "--shutdown-delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="on SIGTERM, keep serving this long while not ready before closing the listener",
    )
    webhook.add_argument(
        "--shutdown-timeout", type=float, default=10.0, metavar="SECONDS", help="how long in-flight reviews may take"
    )
    # Only to measure what each piece of a clean drain is worth (bench/drain_pieces.py): never in production.
    webhook.add_argument(
        "--drain-omit", action="append", default=[], choices=("readiness", "connection-close"), help=argparse.SUPPRESS
    )
    webhook.add_argument(
        "--kubeconfig",
        help="kubeconfig of the cluster (default: in-cluster when run in a pod); used to watch Volcano's Queues, "
        "the platform policies and the namespaces' labels",
    )
    _add_families_flag(webhook, "kinds of other families are admitted without checks")
    _add_jobset_gates_flag(webhook)
    webhook.set_defaults(handler=_webhook)


def _controller_arguments(controller: argparse.ArgumentParser) -> None:
    from jobgate.controller.main import add_arguments

    add_arguments(controller)
    _add_families_flag(controller, "jobs of other families are left to their own controllers")
    controller.set_defaults(handler=_controller)


def _manifests_arguments(manifests: argparse.ArgumentParser) -> None:
    manifests_commands = manifests.add_subparsers(dest="manifests_command", required=True, metavar="COMMAND")
    generate = manifests_commands.add_parser(
        "generate", help="write the CRDs and webhook configurations derived from the API models"
    )
    generate.add_argument("--dir", default="manifests", help="the manifests directory (default: manifests)")
    generate.add_argument(
        "--test-crds",
        default=None,
        help="where the CRDs of admission-only kinds (Kubeflow's) go, for the end-to-end tests "
        "(default: tests/e2e/crds beside the manifests directory)",
    )
    generate.add_argument("--check", action="store_true", help="write nothing; exit 1 if the files are stale")
    generate.set_defaults(handler=_manifests)
    enforcement = manifests_commands.add_parser(
        "enforcement", help="print where each rule and default is enforced: the CRDs, a policy, or the webhook only"
    )
    enforcement.add_argument("--family", action="append", default=[], help="only this family (repeatable)")
    enforcement.add_argument("--summary", action="store_true", help="per family: how many the apiserver enforces")
    enforcement.add_argument(
        "--policy",
        action="store_true",
        help="platform policy (policy.jobgate.io): what manifests/policy-vaps enforces and what only the webhook does",
    )
    enforcement.set_defaults(handler=_enforcement)
    policies = manifests_commands.add_parser(
        "policies", help="print the generated admission policies alone (for users who manage admission otherwise)"
    )
    policies.add_argument(
        "--kind",
        choices=("all", "validating", "mutating"),
        default="all",
        help="ValidatingAdmissionPolicies (Kubernetes 1.30+), MutatingAdmissionPolicies (1.36+), or both",
    )
    policies.set_defaults(handler=_policies)


def _certs_arguments(certs: argparse.ArgumentParser) -> None:
    certs_commands = certs.add_subparsers(dest="certs_command", required=True, metavar="COMMAND")
    init = certs_commands.add_parser("init", help="create a CA and a serving certificate signed by it")
    init.add_argument("--out", required=True, help="directory for ca.crt, ca.key, tls.crt, tls.key")
    init.add_argument("--dns", action="append", default=[], metavar="NAME", help="DNS subject alternative name")
    init.add_argument("--ip", action="append", default=[], metavar="ADDR", help="IP subject alternative name")
    init.add_argument("--service", help="add the names of this Service (svc, svc.ns, svc.ns.svc, ...)")
    init.add_argument("--namespace", default="default", help="namespace of --service (default: default)")
    init.add_argument("--days", type=int, default=365, help="validity of the serving certificate (default: 365)")
    init.add_argument("--force", action="store_true", help="replace existing keys")
    init.set_defaults(handler=_certs_init)
    renew = certs_commands.add_parser(
        "renew",
        help="renew the serving certificate (and the CA) when they expire soon: in the cluster, or in a --dir",
        description="In the cluster (what jobgate's certificate Job and CronJob run): keep the CA in --ca-secret, "
        "the serving pair in --secret and the trusted CAs in the webhooks' caBundle current; create what is "
        "missing. Idempotent: run it as often as you like. With --dir: re-issue the files of certs init.",
    )
    renew.add_argument("--dir", help="renew the files written by certs init in this directory instead")
    renew.add_argument("--within", type=int, default=30, metavar="DAYS", help="--dir: renew when expiring within")
    renew.add_argument("--rotate-ca", action="store_true", help="replace the CA now; the old one stays trusted a while")
    renew.add_argument("--secret", metavar="NAMESPACE/NAME", help="the webhook's TLS Secret (tls.crt, tls.key, ca.crt)")
    renew.add_argument("--ca-secret", metavar="NAMESPACE/NAME", help="the CA's Secret (default: NAMESPACE/jobgate-ca)")
    renew.add_argument("--service", help="the webhook's Service (its DNS names go into the certificate)")
    renew.add_argument("--namespace", help="namespace of --service (default: --secret's)")
    renew.add_argument("--webhook", action="append", metavar="NAME", help="webhook configuration name (repeatable)")
    renew.add_argument("--ca-lifetime", default="365d", metavar="DURATION", help="a new CA's lifetime (default 365d)")
    renew.add_argument(
        "--ca-renew-before", default="60d", metavar="DURATION", help="replace the CA this long before it ends (60d)"
    )
    renew.add_argument(
        "--cert-lifetime", default="150d", metavar="DURATION", help="a serving certificate's lifetime (default 150d)"
    )
    renew.add_argument(
        "--cert-renew-before", default="30d", metavar="DURATION", help="re-issue it this long before it ends (30d)"
    )
    renew.add_argument(
        "--ca-overlap", default="24h", metavar="DURATION", help="how long a replaced CA stays trusted (default 24h)"
    )
    renew.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    renew.set_defaults(handler=_certs_renew)
    inject = certs_commands.add_parser(
        "inject", help="write the CA into webhook configurations (and optionally the pair into a Secret)"
    )
    inject.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    inject.add_argument("--ca-file", required=True, help="PEM CA bundle to put into clientConfig.caBundle")
    inject.add_argument(
        "--webhook", action="append", required=True, metavar="NAME", help="webhook configuration name (repeatable)"
    )
    inject.add_argument("--secret", metavar="NAMESPACE/NAME", help="also store tls.crt/tls.key/ca.crt in this Secret")
    inject.add_argument("--tls-dir", help="directory with the pair for --secret")
    inject.set_defaults(handler=_certs_inject)


def _policy_test(args: argparse.Namespace) -> int:
    from jobgate.cli.policy_test import policy_test

    return policy_test(args)


def _policy_arguments(policy: argparse.ArgumentParser) -> None:
    actions = policy.add_subparsers(dest="action", metavar="{explain,test}", required=True)
    test = actions.add_parser("test", help="run declarative policy tests (jobgate-test.yaml) offline")
    test.description = (
        "Runs each test file (PATH, or every jobgate-test.yaml under a directory; default: .): its policies, "
        "exceptions and cluster objects against its jobs, with the engine of `jobgate validate`, and compares "
        "each job's outcome (admitted, warned, denied), rule ids and stored fields with the file's results "
        "(docs/policy-over-time.md). Exit status: 0 every expectation met, 1 any not met, 2 a test that cannot run."
    )
    test.add_argument("paths", nargs="*", metavar="PATH", help="test files or directories (default: .)")
    test.add_argument("-o", "--output", choices=("table", "json", "junit"), default="table", help="default: table")
    test.add_argument("--update", action="store_true", help="write each file's results from what the engine says now")
    test.set_defaults(handler=_policy_test)
    explain = actions.add_parser(
        "explain", help="print a namespace's effective policy, each value with the policy that gave it"
    )
    explain.description = (
        "Reads the policies from the cluster (--kubeconfig, or in-cluster), or from files with --policies. "
        "Exit status: 0 printed, 2 usage error or unreadable input."
    )
    explain.add_argument("--namespace", required=True, metavar="NS", help="the namespace whose jobs it is for")
    explain.add_argument(
        "--policies",
        metavar="FILE|DIR",
        action="append",
        help="policy objects from files instead of the cluster; may be given again",
    )
    explain.add_argument("--namespaces", metavar="FILE", help="Namespace objects, for the policies' namespaceSelector")
    explain.add_argument(
        "--cluster-objects",
        metavar="FILE|DIR",
        action="append",
        help="exported cluster objects instead of the cluster: the policies, Namespaces, and the Kueue and Volcano "
        "queues whose ceilings it prints when a policy requires fitsQueue; may be given again",
    )
    explain.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster configuration)")
    explain.set_defaults(handler=_policy_explain)


def _explain_arguments(explain: argparse.ArgumentParser) -> None:
    explain.description = (
        "Print a rule's documentation: what it checks, the errors it produces, where it is enforced, "
        "examples (from a checkout) and its page in docs/rules/. RULE is the id after an error's message "
        "(`jobgate validate`), e.g. roles/one-leader, or FAMILY/ID."
    )
    explain.add_argument("rule", metavar="RULE", help="a rule id, as `jobgate manifests enforcement` lists them")
    explain.add_argument("--family", help="only this family's rule of that id")
    explain.set_defaults(handler=_explain)


# One entry per command: its help line, and what adds its arguments.
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "validate": ("mutate then validate job manifests offline, as the cluster would", _validate_arguments),
    "default": ("print job manifests as the mutating webhook would store them", _default_arguments),
    "review": ("answer an AdmissionReview request exactly as the webhook server would", _review_arguments),
    "webhook": ("serve /mutate and /validate over TLS", _webhook_arguments),
    "controller": ("reconcile jobs into pods and services", _controller_arguments),
    "manifests": ("generated CRDs, policies and webhook configurations", _manifests_arguments),
    "certs": ("certificates for the webhook", _certs_arguments),
    "explain": ("print a rule's documentation: what it checks, where it is enforced, examples", _explain_arguments),
    "policy": ("platform policies: a namespace's effective policy, declarative policy tests", _policy_arguments),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of ``command``.

    A run uses one command: the others' parsers (and what their arguments import, the
    controller's among them) are not built, which saves most of the parser's cost at start-up.
    The output stays the same: the command list shows only in ``jobgate -h`` and in the error
    for an unknown command, and both of those build every command.
    """
    import argparse

    class HelpFormatter(argparse.HelpFormatter):
        """argparse's formatter, with the terminal's width read from os: argparse's own reads it
        through shutil, an import (and its compression modules) every run would pay for."""

        def __init__(self, prog: str) -> None:
            super().__init__(prog, width=_terminal_columns() - 2)

    parser = argparse.ArgumentParser(
        prog="jobgate",
        description="Admission rules for distributed-training jobs: offline checks, webhook server, controller.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"jobgate {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add_arguments) in COMMANDS.items():
        if command is None or command == name:
            add_arguments(commands.add_parser(name, help=help_text, formatter_class=HelpFormatter))
    return parser


def _version() -> str:
    """The installed distribution's version (a checkout run without installing has none)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jobgate")
    except PackageNotFoundError:
        return "(not installed)"


def _terminal_columns() -> int:
    """shutil.get_terminal_size's answer: $COLUMNS, else the terminal's, else 80."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80
