"""``jobgate``: the command-line front end.

The offline commands (validate, default, review) import neither aiohttp nor the
kubernetes client; the serving and cluster commands import theirs lazily.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence

EXIT_OK = 0
EXIT_DENIED = 1
EXIT_USAGE = 2


def _validate(args: argparse.Namespace) -> int:
    from webhook.offline import validate_paths
    from webhook.report import render

    run = validate_paths(args.paths)
    sys.stdout.write(render(run, args.output))
    return run.exit_code


def _default(args: argparse.Namespace) -> int:
    from ruamel.yaml import YAML

    from webhook.offline import DocumentResult, Outcome, evaluate, job_documents, load
    from webhook.rules.jsonpatch import apply_patch

    yaml = YAML(typ="rt")
    yaml.width = 4096
    status = EXIT_OK
    outputs = []
    for item in load(args.paths):
        if isinstance(item, DocumentResult):
            print(f"jobgate: {item.source}:{item.line or 1}: {item.reason}", file=sys.stderr)
            status = EXIT_USAGE
            continue
        for obj, prefix in job_documents(item):
            result, verdict = evaluate(item, obj, prefix)
            if verdict is None:
                if result.outcome is Outcome.ERROR:
                    status = EXIT_USAGE
                print(f"jobgate: {result.source}:{result.line}: {result.title}: {result.reason}", file=sys.stderr)
                continue
            tree = item.tree
            for token in prefix:
                tree = tree[token]
            # Patching the round-trip tree keeps the author's comments and key order.
            outputs.append(apply_patch(tree, verdict.patch))
    buffer = io.StringIO()
    if outputs:
        yaml.dump_all(outputs, buffer)
    sys.stdout.write(buffer.getvalue())
    return status


def _review(args: argparse.Namespace) -> int:
    from webhook.admission import BadReview, Webhook, review_body
    from webhook.sources import SourceError, read_source

    try:
        text = read_source(args.file)
    except SourceError as exc:
        print(f"jobgate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        body = review_body(_as_json(text), Webhook(args.webhook))
    except BadReview as exc:
        print(f"jobgate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write(body.decode() + "\n")
    return EXIT_OK


def _as_json(text: str) -> str:
    """Reviews are JSON on the wire; a hand-written YAML review is accepted too."""
    import json

    stripped = text.lstrip()
    if not stripped or stripped[0] in "{[":
        return text
    from webhook.sources import SourceError, parse_documents

    try:
        documents = parse_documents(text, "review")
    except SourceError:
        return text
    if len(documents) != 1:
        return text
    return json.dumps(documents[0].data)


def build_parser() -> argparse.ArgumentParser:
    from webhook.report import FORMATS

    parser = argparse.ArgumentParser(
        prog="jobgate",
        description="Admission rules for distributed-training jobs: offline checks, webhook server, controller.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate = commands.add_parser(
        "validate",
        help="mutate then validate job manifests offline, as the cluster would",
        description="Exit status: 0 all admitted, 1 any denied, 2 usage error or unreadable input.",
    )
    validate.add_argument("paths", nargs="+", metavar="PATH", help="file, directory (recursive) or - for stdin")
    validate.add_argument("-o", "--output", choices=FORMATS, default="text", help="output format (default: text)")
    validate.set_defaults(handler=_validate)

    default = commands.add_parser("default", help="print job manifests as the mutating webhook would store them")
    default.add_argument("paths", nargs="+", metavar="PATH", help="file, directory (recursive) or - for stdin")
    default.set_defaults(handler=_default)

    review = commands.add_parser("review", help="answer an AdmissionReview request exactly as the webhook server would")
    review.add_argument("webhook", choices=("mutate", "validate"))
    review.add_argument("file", nargs="?", default="-", metavar="FILE", help="AdmissionReview JSON (default: stdin)")
    review.set_defaults(handler=_review)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
