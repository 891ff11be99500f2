"""``jobgate``: the command-line front end.

The offline commands (validate, default, review) import neither aiohttp nor the
kubernetes client; the serving and cluster commands import theirs lazily. The common
``jobgate validate [-o FORMAT] [-j N] [--validate MODE] PATH...`` does not import argparse
either (see ``_quick_validate_arguments``).
"""

from __future__ import annotations

import io
import os
import sys

# typing.TYPE_CHECKING without importing typing (a one-file check does not otherwise need it);
# type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

    from jobgate.engine.views import ClusterViews, QueueSnapshot
    from jobgate.offline.results import FieldValidation

EXIT_OK = 0
EXIT_DENIED = 1
EXIT_USAGE = 2


def _validate(args: argparse.Namespace | _QuickArguments) -> int:
    import gc
    import time

    from jobgate.api.constants import VOLCANO_GROUP, VOLCANO_VERSION
    from jobgate.offline.report import Reporter
    from jobgate.offline.results import iter_results

    views = _cluster_views(args.queues)
    if views is None:
        return EXIT_USAGE

    # Parsed documents hold no reference cycles and are freed by reference counting: the cyclic
    # collector, triggered by every few hundred allocations, would only rescan the rule engine.
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    reporter = Reporter(args.output, sys.stdout)
    progress = _Progress() if sys.stderr.isatty() else None
    started = time.monotonic()
    volcano_jobs = 0
    for done, results in enumerate(iter_results(args.paths, args.validate, args.jobs, views), start=1):
        reporter.add(results)
        # Counted here, not in the rules: with -j the rules run in worker processes.
        volcano_jobs += sum(r.api_version == f"{VOLCANO_GROUP}/{VOLCANO_VERSION}" and r.kind == "Job" for r in results)
        if progress is not None:
            progress.show(done, time.monotonic() - started)
    if progress is not None:
        progress.clear()
    if volcano_jobs and args.queues is None:
        # Imported here: the queue check's module loads the Volcano family, which a run without
        # Volcano jobs does not need.
        from jobgate.families.volcano.rules.queue_check import QUEUE_CHECK_SKIPPED

        print(
            f"jobgate: warning: {QUEUE_CHECK_SKIPPED} (offline; --queues FILE checks against exported Queues)",
            file=sys.stderr,
        )
    return reporter.finish()


class _Progress:
    """A progress line on a terminal, for runs longer than two seconds."""

    AFTER_SECONDS = 2.0

    def __init__(self) -> None:
        self.shown_at = 0.0

    def show(self, files: int, elapsed: float) -> None:
        if elapsed < self.AFTER_SECONDS or elapsed - self.shown_at < 0.2:
            return
        self.shown_at = elapsed
        sys.stderr.write(f"\rjobgate: {files} files checked ({files / elapsed:,.0f}/s)")
        sys.stderr.flush()

    def clear(self) -> None:
        if self.shown_at:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _default(args: argparse.Namespace) -> int:
    import json

    from jobgate.engine.jsonpatch import apply_patch
    from jobgate.offline.results import DocumentResult, Outcome, evaluate, job_documents, load

    status = EXIT_OK
    trees: list[object] = []
    objects: list[object] = []
    for item in load(args.paths):
        if isinstance(item, DocumentResult):
            where = f"{item.source}:{item.line}" if item.line else item.source
            print(f"jobgate: {where}: {item.reason}", file=sys.stderr)
            status = EXIT_USAGE
            continue
        for obj, prefix in job_documents(item):
            result, verdict = evaluate(item, obj, prefix, args.validate, with_patch=True)
            if verdict is None:
                if result.outcome is Outcome.ERROR:
                    status = EXIT_USAGE
                print(f"jobgate: {result.source}:{result.line}: {result.title}: {result.reason}", file=sys.stderr)
                continue
            objects.append(verdict.defaulted)
            if args.output == "json":
                continue
            if item.notes:
                # ruamel keeps the first of duplicate keys, kubectl the last: print the object as stored.
                trees.append(verdict.defaulted)
                continue
            try:
                tree = item.tree
                for token in prefix:
                    tree = tree[token]
                # Patching the round-trip tree keeps the author's comments and key order.
                trees.append(apply_patch(tree, verdict.patch))
            except (KeyError, IndexError, TypeError, ValueError):
                trees.append(verdict.defaulted)  # keys kubectl renames (``on:``): the plain object
    if args.output == "json":
        if objects:
            single = objects[0] if len(objects) == 1 else {"apiVersion": "v1", "kind": "List", "items": objects}
            sys.stdout.write(json.dumps(single, indent=2, ensure_ascii=False) + "\n")
        return status
    if trees:
        from ruamel.yaml import YAML

        yaml = YAML(typ="rt")
        yaml.width = 4096
        buffer = io.StringIO()
        yaml.dump_all(trees, buffer)
        sys.stdout.write(buffer.getvalue())
    return status


def _cluster_views(queues_path: str | None) -> ClusterViews | None:
    """The cluster objects given on the command line for the rules to read; None after printing why not."""
    from jobgate.engine.views import ClusterViews

    views = ClusterViews()
    if queues_path is not None:
        views.queues = _load_queues(queues_path)
        if views.queues is None:
            return None
    return views


def _load_queues(path: str) -> QueueSnapshot | None:
    """``--queues FILE``: Volcano Queues (e.g. ``kubectl get queues -o yaml``) for the queue check offline."""
    from ruamel.yaml import YAML, YAMLError

    from jobgate.engine.views import QueueSnapshot

    try:
        with open(path, encoding="utf-8") as handle:
            documents = [d for d in YAML(typ="safe", pure=True).load_all(handle) if d is not None]
    except (OSError, YAMLError, UnicodeDecodeError) as exc:
        print(f"jobgate: --queues {path}: {exc}", file=sys.stderr)
        return None
    queues: list = []
    for document in documents:
        items = (
            document.get("items") if isinstance(document, dict) and str(document.get("kind")).endswith("List") else None
        )
        queues.extend(items if isinstance(items, list) else [document])
    return QueueSnapshot(queues)


def _review(args: argparse.Namespace) -> int:
    from jobgate.offline.sources import SourceError, display_name, printable, read_source
    from jobgate.webhook.admission import BadReview, Webhook, review_body

    views = _cluster_views(args.queues)
    if views is None:
        return EXIT_USAGE
    try:
        text = read_source(args.file)
    except SourceError as exc:
        print(f"jobgate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        body = review_body(_as_json(text), Webhook(args.webhook), views)
    except BadReview as exc:
        print(f"jobgate: {printable(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except RecursionError:
        print(f"jobgate: {display_name(args.file)}: nesting too deep", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write(body.decode() + "\n")
    return EXIT_OK


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
    start_queue_check(args.kubeconfig, server.state.views)
    server.state.unready_while_draining = "readiness" not in args.drain_omit
    server.state.close_while_draining = "connection-close" not in args.drain_omit
    return run(server, args.event_loop)


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


def _add_families_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--families",
        metavar="LIST",
        help="comma-separated job API families to serve, e.g. volcano,kubedl (default: all); "
        "kinds of other families are admitted without checks",
    )


def _add_queues_flag(parser: argparse.ArgumentParser, default: object = None) -> None:
    parser.add_argument(
        "--queues",
        metavar="FILE",
        default=default,
        help="Volcano Queues (YAML/JSON, e.g. `kubectl get queues -o yaml`) to check Volcano jobs' queues against",
    )


def _certs_init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from jobgate.certs.authority import CertificateExists, init_directory, service_dns_names

    dns_names = list(args.dns)
    if args.service:
        dns_names += service_dns_names(args.service, args.namespace)
    ip_addresses = list(args.ip)
    if not dns_names and not ip_addresses:
        dns_names, ip_addresses = ["localhost"], ["127.0.0.1", "::1"]
    try:
        init_directory(Path(args.out), dns_names, ip_addresses, force=args.force, leaf_days=args.days)
    except CertificateExists as exc:
        print(f"jobgate: {exc}", file=sys.stderr)
        return EXIT_DENIED
    except ValueError as exc:
        print(f"jobgate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    names = ", ".join([*dns_names, *ip_addresses])
    print(f"wrote ca.crt, ca.key, tls.crt, tls.key to {args.out} (names: {names})")
    return EXIT_OK


def _certs_renew(args: argparse.Namespace) -> int:
    if args.dir:
        return _certs_renew_directory(args)
    return _certs_renew_cluster(args)


def _certs_renew_directory(args: argparse.Namespace) -> int:
    from pathlib import Path

    from jobgate.certs.authority import renew_directory

    try:
        result = renew_directory(Path(args.dir), within_days=args.within, rotate_ca=args.rotate_ca)
    except (OSError, ValueError) as exc:
        print(f"jobgate: cannot renew in {args.dir}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(result.message)
    return EXIT_OK


def _certs_renew_cluster(args: argparse.Namespace) -> int:
    from urllib3.exceptions import HTTPError

    from jobgate.certs.authority import service_dns_names
    from jobgate.certs.inject import InjectError, renew_in_cluster
    from jobgate.certs.renewal import Lifetimes, parse_duration

    missing = [flag for flag, value in (("--secret", args.secret), ("--service", args.service),
               ("--webhook", args.webhook)) if not value]  # fmt: skip
    if missing:
        print(f"jobgate: certs renew needs --dir, or {', '.join(missing)} to renew in the cluster", file=sys.stderr)
        return EXIT_USAGE
    namespace = args.namespace or args.secret.partition("/")[0]
    try:
        lifetimes = Lifetimes(
            ca=parse_duration(args.ca_lifetime),
            ca_renew_before=parse_duration(args.ca_renew_before),
            serving=parse_duration(args.cert_lifetime),
            serving_renew_before=parse_duration(args.cert_renew_before),
            ca_overlap=parse_duration(args.ca_overlap),
        )
    except ValueError as exc:
        print(f"jobgate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if problems := lifetimes.problems():
        print(f"jobgate: {'; '.join(problems)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        outcome = renew_in_cluster(
            args.kubeconfig,
            secret=args.secret,
            ca_secret=args.ca_secret or f"{namespace}/jobgate-ca",
            dns_names=service_dns_names(args.service, namespace),
            webhooks=args.webhook,
            lifetimes=lifetimes,
            rotate_ca=args.rotate_ca,
        )
    except (InjectError, OSError) as exc:
        print(f"jobgate: {exc}", file=sys.stderr)
        return EXIT_DENIED
    except HTTPError as exc:  # urllib3's: the apiserver out of reach
        print(f"jobgate: cannot reach the cluster: {exc}", file=sys.stderr)
        return EXIT_DENIED
    for reason in outcome.plan.reasons or ["every certificate is valid beyond its renewal margin: nothing to do"]:
        print(reason)
    state = outcome.plan.state
    assert state.serving is not None and state.authority is not None
    print(
        f"serving certificate valid until {state.serving.cert.not_valid_after_utc:%Y-%m-%d %H:%M:%S}Z; "
        f"CA until {state.authority.cert.not_valid_after_utc:%Y-%m-%d %H:%M:%S}Z; {len(state.trusted)} CA(s) trusted"
    )
    for done in outcome.injected:
        print(f"caBundle current on {done.webhooks} webhook(s) of {done.kind} {done.configuration}")
    return EXIT_OK


def _certs_inject(args: argparse.Namespace) -> int:
    from pathlib import Path

    from urllib3.exceptions import HTTPError

    from jobgate.certs.inject import InjectError, inject_ca_bundle, store_tls_secret

    try:
        if args.secret:
            if not args.tls_dir:
                print("jobgate: --secret needs --tls-dir", file=sys.stderr)
                return EXIT_USAGE
            outcome = store_tls_secret(args.kubeconfig, args.secret, Path(args.tls_dir))
            print(f"{outcome} Secret {args.secret}")
        bundle = Path(args.ca_file).read_bytes()
        for done in inject_ca_bundle(args.kubeconfig, bundle, args.webhook, source=args.ca_file):
            print(f"caBundle set on {done.webhooks} webhook(s) of {done.kind} {done.configuration}")
    except (InjectError, OSError) as exc:
        print(f"jobgate: {exc}", file=sys.stderr)
        return EXIT_DENIED
    except HTTPError as exc:  # urllib3's: the apiserver out of reach
        print(f"jobgate: cannot reach the cluster: {exc}", file=sys.stderr)
        return EXIT_DENIED
    return EXIT_OK


def _manifests(args: argparse.Namespace) -> int:
    from pathlib import Path

    from jobgate.generate.manifests import (
        TEST_CRDS_DIR,
        differences,
        e2e_crd_files,
        stale_package_tables,
        write,
        write_package_tables,
    )

    directory = Path(args.dir)
    test_crds = Path(args.test_crds) if args.test_crds else directory.absolute().parent / TEST_CRDS_DIR
    if args.check:
        stale = [str(directory / relative) for relative in differences(directory)]
        stale += [str(test_crds / relative) for relative in differences(test_crds, e2e_crd_files())]
        stale += [str(path) for path in stale_package_tables()]
        for path in stale:
            print(f"{path}: differs from what `jobgate manifests generate` produces", file=sys.stderr)
        return EXIT_DENIED if stale else EXIT_OK
    for path in write(directory):
        print(f"wrote {path}")
    for path in write(test_crds, e2e_crd_files()):
        print(f"wrote {path}")
    for table in write_package_tables():
        print(f"wrote {table}")
    return EXIT_OK


def _enforcement(args: argparse.Namespace) -> int:
    from jobgate.generate.cel.generate import enforcement_rows, enforcement_summary
    from jobgate.generate.manifests import every_family_kind

    kinds = [k for k in every_family_kind() if not args.family or k.family in args.family]
    if args.family and not kinds:
        print(f"jobgate: no family {', '.join(args.family)}", file=sys.stderr)
        return EXIT_USAGE
    if args.summary:
        print("| family | rules and defaults | enforced by the apiserver | webhook only |")
        print("|---|---:|---:|---:|")
        for family, total, enforced in enforcement_summary(kinds):
            if total:
                print(f"| {family} | {total} | {enforced} | {total - enforced} |")
            else:
                print(f"| {family} | every rule | 0 | every rule |")
        return EXIT_OK
    print("| family | rule | what it checks | where the apiserver enforces it | note |")
    print("|---|---|---|---|---|")
    for family, rule, summary, where, why in enforcement_rows(kinds):
        print(f"| {family} | {rule} | {summary} | {where} | {why} |")
    return EXIT_OK


def _policies(args: argparse.Namespace) -> int:
    from jobgate.generate.manifests import policy_documents, yaml_documents

    documents = policy_documents(mutating=args.kind != "validating", validating=args.kind != "mutating")
    sys.stdout.write(yaml_documents(documents))
    return EXIT_OK


def _controller(args: argparse.Namespace) -> int:
    from jobgate.controller.main import run

    # args.families is applied here for the rules; the controller picks its adapters from it.
    if not _serve_families(args):
        return EXIT_USAGE
    return run(args)


def _as_json(text: str) -> str:
    """Reviews are JSON on the wire; a hand-written YAML review is accepted too."""
    import json

    stripped = text.lstrip()
    if not stripped or stripped[0] in "{[":
        return text
    from jobgate.offline.sources import SourceError, parse_documents

    try:
        documents = parse_documents(text, "review")
    except (SourceError, RecursionError):
        return text
    if len(documents) != 1:
        return text
    return json.dumps(documents[0].data)


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
    _add_queues_flag(validate)
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
    default.set_defaults(handler=_default)


def _review_arguments(review: argparse.ArgumentParser) -> None:
    import argparse

    _add_queues_flag(review)
    # One sub-command per webhook, so that flags may come before or after FILE.
    webhooks = review.add_subparsers(dest="webhook", metavar="{mutate,validate}", required=True)
    for name in ("mutate", "validate"):
        answer = webhooks.add_parser(name, help=f"answer as /{name} would")
        answer.add_argument("file", nargs="?", default="-", metavar="FILE", help="AdmissionReview JSON (stdin if -)")
        _add_queues_flag(answer, default=argparse.SUPPRESS)
    review.set_defaults(handler=_review)


def _webhook_arguments(webhook: argparse.ArgumentParser) -> None:
    import argparse

    webhook.add_argument("--tls-dir", required=True, help="directory with tls.crt and tls.key (reloaded on change)")
    webhook.add_argument("--host", default="0.0.0.0", help="address to listen on (default: 0.0.0.0)")
    webhook.add_argument("--port", type=int, default=9443, help="port to listen on (default: 9443)")
    webhook.add_argument("--log-format", choices=("text", "json"), default="text")
    webhook.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info")
    webhook.add_argument(
        "--event-loop",
        choices=("asyncio", "uvloop"),
        default="asyncio",
        help="asyncio's event loop, or uvloop's (needs the uvloop package; see the README's throughput figures)",
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
        help="kubeconfig of the cluster (default: in-cluster when run in a pod); used for Volcano's queue check",
    )
    _add_families_flag(webhook)
    webhook.set_defaults(handler=_webhook)


def _controller_arguments(controller: argparse.ArgumentParser) -> None:
    from jobgate.controller.main import add_arguments

    add_arguments(controller)
    _add_families_flag(controller)
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


# One entry per command: its help line, and what adds its arguments.
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "validate": ("mutate then validate job manifests offline, as the cluster would", _validate_arguments),
    "default": ("print job manifests as the mutating webhook would store them", _default_arguments),
    "review": ("answer an AdmissionReview request exactly as the webhook server would", _review_arguments),
    "webhook": ("serve /mutate and /validate over TLS", _webhook_arguments),
    "controller": ("reconcile jobs into pods and services", _controller_arguments),
    "manifests": ("generated CRDs, policies and webhook configurations", _manifests_arguments),
    "certs": ("certificates for the webhook", _certs_arguments),
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
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add_arguments) in COMMANDS.items():
        if command is None or command == name:
            add_arguments(commands.add_parser(name, help=help_text, formatter_class=HelpFormatter))
    return parser


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


class _QuickArguments:
    """The namespace argparse gives ``jobgate validate`` when only -o, -j, --validate and paths are given."""

    def __init__(self, paths: list[str], output: str, validate: FieldValidation, jobs: int | None) -> None:
        self.command = "validate"
        self.paths = paths
        self.output = output
        self.validate = validate
        self.jobs = jobs
        self.queues = None
        self.handler = _validate


# The flags the quick parse reads, by the attribute each sets.
_QUICK_FLAGS = {"-o": "output", "--output": "output", "-j": "jobs", "--jobs": "jobs", "--validate": "validate"}


def _quick_validate_arguments(arguments: list[str]) -> _QuickArguments | None:
    """``jobgate validate [-o FORMAT] [-j N] [--validate MODE] PATH...``, what a pre-commit hook or
    a CI step runs, read without argparse; None for anything else, which argparse then parses.

    Importing argparse (and gettext, and the locale look-ups of its messages when a parser is
    built) costs a one-file check more than its rules. Only the plain forms are read here: a
    flag and its value as two words, or a long flag and its value joined by "=", each value
    valid (argparse checks every occurrence, the last one wins), the paths in one run (argparse
    refuses paths on both sides of a flag). Any other word (--queues, -j2, an abbreviation, --,
    -h, a path starting with "-"), a bad value or no path at all is left to argparse, so that
    every usage error keeps argparse's message and exit status 2.
    """
    if arguments[:1] != ["validate"]:
        return None
    from jobgate.offline.report import FORMATS
    from jobgate.offline.results import FieldValidation

    output, validation, jobs = "text", FieldValidation.STRICT, None
    paths: list[str] = []
    index, after_path = 1, False
    while index < len(arguments):
        word = arguments[index]
        flag, joined, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if flag in _QUICK_FLAGS:
            if not joined:
                value = arguments[index + 1] if index + 1 < len(arguments) else "-"
                if value.startswith("-"):
                    return None
                index += 1
            # Each value as argparse's choices= or type= takes it (FORMATS, _field_validation,
            # _positive_int); one argparse would refuse is left to it.
            if _QUICK_FLAGS[flag] == "output":
                if value not in FORMATS:
                    return None
                output = value
            elif _QUICK_FLAGS[flag] == "validate":
                try:
                    validation = FieldValidation.parse(value)
                except ValueError:
                    return None
            else:
                try:
                    jobs = int(value)
                except ValueError:
                    return None
                if jobs < 1:
                    return None
            index, after_path = index + 1, False
            continue
        if word.startswith("-") and word != "-":
            return None
        if paths and not after_path:
            return None
        paths.append(word)
        index, after_path = index + 1, True
    if not paths:
        return None
    return _QuickArguments(paths, output, validation, jobs)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args: argparse.Namespace | _QuickArguments | None = _quick_validate_arguments(arguments)
    if args is None:
        parser = build_parser(arguments[0] if arguments and arguments[0] in COMMANDS else None)
        args = parser.parse_args(arguments)
    if getattr(args, "jobs", 0) is None:
        from jobgate.offline.results import default_jobs

        args.jobs = default_jobs()
    for stream in (sys.stdout, sys.stderr):
        # Never a UnicodeEncodeError while printing what a file contained.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


def console_main() -> int:
    """The ``jobgate`` command (pyproject.toml's script) and ``python -m jobgate``: ``main()``, and
    for ``jobgate validate`` an exit that skips the interpreter's teardown.

    Once validate has printed everything, what is left is freeing every object one by one, a
    seventh of what a one-file check costs beyond the interpreter: ``os._exit`` ends the process
    with the same status instead. Only for validate, whose only output is stdout and stderr
    (flushed here first), and only while the process has one thread and nothing that registers
    exit handlers (``-j N`` starts multiprocessing's, which imports threading); a stream that
    cannot be flushed leaves the exit to the interpreter, which reports it as it always has.
    """
    validate = sys.argv[1:2] == ["validate"]
    if validate:
        # _validate's setting of the cyclic collector, from the start: the imports of a one-file
        # check would otherwise set it off a few dozen times, to find nothing to free.
        import gc

        gc.set_threshold(50_000, 50, 100)
    code = main()
    if not validate or "threading" in sys.modules:
        return code
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return code
    os._exit(code)


if __name__ == "__main__":
    sys.exit(console_main())
