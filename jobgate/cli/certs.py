"""``jobgate certs``: a CA and serving pair, renewal (of files or of the in-cluster Secret), injection."""

from __future__ import annotations

import sys

from jobgate.cli.offline import EXIT_DENIED, EXIT_OK, EXIT_USAGE

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    import argparse


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
