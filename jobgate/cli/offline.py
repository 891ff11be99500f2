"""The offline commands: ``jobgate validate``, ``default`` and ``review``.

They import neither aiohttp nor the kubernetes client.
"""

from __future__ import annotations

import io
import sys

from jobgate.cli.exits import EXIT_OK, EXIT_USAGE

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    import argparse

    from jobgate.engine.views import ClusterViews, QueueSnapshot
    from jobgate.offline.results import FieldValidation


def _validate(args: argparse.Namespace | QuickArguments) -> int:
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
    _review_rule_ids(text, args, views)
    return EXIT_OK


def _review_rule_ids(text: str, args: argparse.Namespace, views: ClusterViews | None) -> None:
    """The rule id of each error of a denial, on stderr: the AdmissionReview on stdout stays
    byte-identical to the webhook's answer (whose messages name no rule)."""
    from jobgate.engine.registry import lookup_names
    from jobgate.engine.review import review_job
    from jobgate.engine.ruleids import rule_id
    from jobgate.offline.sources import printable
    from jobgate.webhook.admission import Webhook, parse_review, review_context

    if Webhook(args.webhook) is not Webhook.VALIDATE:
        return
    try:
        request = parse_review(_as_json(text)).request
        if request.operation not in ("CREATE", "UPDATE") or not isinstance(request.object, dict):
            return
        kind = lookup_names(request.kind.group, request.kind.version, request.kind.kind)
        if kind is None:
            return
        old = request.oldObject if request.operation == "UPDATE" and isinstance(request.oldObject, dict) else None
        verdict = review_job(kind, request.object, old, context=review_context(request, views), with_patch=False)
    except Exception:  # the answer is printed already; ids are a courtesy, never a second failure
        return
    gvk = (kind.gvk.group, kind.gvk.version, kind.gvk.kind)
    for error in verdict.errors:
        print(f"jobgate: {printable(error.field)}: rule {rule_id(gvk, error) or '(none)'}", file=sys.stderr)


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


class QuickArguments:
    """The namespace argparse gives ``jobgate validate`` when only -o, -j, --validate and paths are given."""

    def __init__(self, paths: list[str], output: str, validate: FieldValidation, jobs: int | None) -> None:
        self.command = "validate"
        self.paths = paths
        self.output = output
        self.validate = validate
        self.jobs = jobs
        self.queues = None
        self.handler = _validate
