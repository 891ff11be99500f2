"""``jobgate manifests``: the generated CRDs, policies and webhook configurations, and where each rule holds."""

from __future__ import annotations

import sys

from jobgate.cli.offline import EXIT_DENIED, EXIT_OK, EXIT_USAGE

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    import argparse
    from pathlib import Path


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
    problem = _other_checkout(directory)
    if problem:
        print(f"jobgate manifests generate: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if args.check:
        stale = [str(directory / relative) for relative in differences(directory)]
        stale += [str(test_crds / relative) for relative in differences(test_crds, e2e_crd_files())]
        stale += [str(path) for path in stale_package_tables()]
        for path in stale:
            print(f"{path}: differs from what `jobgate manifests generate` produces", file=sys.stderr)
        return EXIT_DENIED if stale else EXIT_OK
    written = [*write(directory), *write(test_crds, e2e_crd_files()), *write_package_tables()]
    for path in written:
        print(f"wrote {path}")
    if not written:
        print("nothing to write: every generated file is current")
    return EXIT_OK


def _other_checkout(directory: Path) -> str:
    """'' unless ``directory`` is the manifests folder of a checkout of jobgate other than the one
    running: then generating would write the running copy's rules over the checkout's (after
    ``pip install .`` rather than ``-e``); what to run instead."""
    from pathlib import Path

    import jobgate

    checkout = directory.absolute().parent / "jobgate" / "__init__.py"
    running = Path(jobgate.__file__).resolve()
    if not checkout.is_file() or checkout.resolve() == running:
        return ""
    return (
        f"{checkout.parent.parent} is a checkout of jobgate, but this jobgate runs from {running.parent}: it would "
        "write its own rules, not the checkout's; install the checkout editable: python3 -m pip install -e '.[test]'"
    )


def policy_enforcement_table() -> str:
    """The platform-policy enforcement table (Markdown), as docs/policy-enforcement.md carries it."""
    from jobgate.generate.policy_vap import enforcement_rows

    lines = ["| constraint | where (without the webhook) | note |", "|---|---|---|"]
    lines += [f"| {what} | {where} | {note} |" for what, where, note in enforcement_rows()]
    return "\n".join(lines) + "\n"


def _enforcement(args: argparse.Namespace) -> int:
    from jobgate.generate.cel.generate import enforcement_rows, enforcement_summary

    if args.policy:
        sys.stdout.write(policy_enforcement_table())
        return EXIT_OK
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
