"""The offline commands: ``jobgate validate``, ``default`` and ``review``, and the quick read of
the common ``jobgate validate [-o FORMAT] [-j N] [--validate MODE] PATH...`` without argparse.

They import neither aiohttp nor the kubernetes client.
"""

from __future__ import annotations

import io
import sys

# The exit statuses every command shares (design.md's contract), here with the command that needs
# them first: a one-file ``jobgate validate`` loads this module and no other of the command's.
EXIT_OK = 0
EXIT_DENIED = 1
EXIT_USAGE = 2

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from jobgate.engine.views import ClusterViews, PolicySnapshot, QueueSnapshot
    from jobgate.offline.results import FieldValidation


def _validate(args: argparse.Namespace | QuickArguments) -> int:
    import gc
    import time

    from jobgate.api.constants import VOLCANO_GROUP, VOLCANO_VERSION
    from jobgate.offline.report import Reporter
    from jobgate.offline.results import iter_results

    views, readable = _cluster_views(args)
    if not readable:
        return EXIT_USAGE

    # Parsed documents hold no reference cycles and are freed by reference counting: the cyclic
    # collector, triggered by every few hundred allocations, would only rescan the rule engine.
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    reporter = Reporter(args.output, sys.stdout)
    progress = _Progress() if sys.stderr.isatty() else None
    started = time.monotonic()
    volcano_jobs = 0
    skip = getattr(args, "skip_non_objects", False)  # argparse's flag; the quick parse leaves it to argparse
    for done, results in enumerate(iter_results(args.paths, args.validate, args.jobs, views, skip_non_objects=skip), 1):
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

    views, readable = _cluster_views(args)
    if not readable:
        return EXIT_USAGE
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
            result, verdict = evaluate(item, obj, prefix, args.validate, with_patch=True, views=views)
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


def _cluster_views(args: argparse.Namespace | QuickArguments) -> tuple[ClusterViews | None, bool]:
    """The cluster objects given on the command line for the rules to read, and whether they could
    be read (False after printing why not). None when no flag gives any: a plain check imports no
    more than it needs."""
    queues_path = getattr(args, "queues", None)
    policy_paths = getattr(args, "policies", None)
    namespaces_path = getattr(args, "namespaces", None)
    namespace = getattr(args, "namespace", None)
    if queues_path is None and not policy_paths and namespaces_path is None and namespace is None:
        return None, True
    from jobgate.engine.views import ClusterViews

    views = ClusterViews(default_namespace=namespace or "default")
    if queues_path is not None:
        views.queues = _load_queues(queues_path)
        if views.queues is None:
            return None, False
    if policy_paths or namespaces_path:
        views.policies = _load_policies(policy_paths or [], namespaces_path)
        if views.policies is None:
            return None, False
    return views, True


def _objects_of(path: str, flag: str) -> list[dict[str, Any]] | None:
    """Every object in a YAML/JSON file (``List`` items unwrapped); None after printing why not."""
    # Read as the jobs are, exactly as kubectl reads what it applies (YAML 1.1 scalars as go-yaml
    # v2 reads them, timestamps kept as written), with the reader a check has already loaded:
    # PyYAML's import alone cost a one-file check with --policies more than the rest of its start-up.
    from jobgate.offline.sources import SourceError, iter_documents, read_source

    try:
        documents = [d.data for d in iter_documents(read_source(path), path) if d.data is not None]
    except SourceError as exc:
        where = f"{path}:{exc.line}" if exc.line else path
        print(f"jobgate: {flag} {where}: {exc.message}", file=sys.stderr)
        return None
    objects: list[dict[str, Any]] = []
    for document in documents:
        items = (
            document.get("items") if isinstance(document, dict) and str(document.get("kind")).endswith("List") else None
        )
        objects.extend(item for item in (items if isinstance(items, list) else [document]) if isinstance(item, dict))
    return objects


def _load_queues(path: str) -> QueueSnapshot | None:
    """``--queues FILE``: Volcano Queues (e.g. ``kubectl get queues -o yaml``) for the queue check offline."""
    from jobgate.engine.views import QueueSnapshot

    queues = _objects_of(path, "--queues")
    return None if queues is None else QueueSnapshot(queues)


def _load_policies(paths: list[str], namespaces_path: str | None) -> PolicySnapshot | None:
    """``--policies FILE|DIR`` (repeatable) and ``--namespaces FILE``: checked as the apiserver would
    admit them (a malformed policy is a usage error, exit 2), and the namespaces' labels."""
    from jobgate.engine.views import PolicySnapshot
    from jobgate.offline.sources import SourceError, expand_paths
    from jobgate.policy.plain import POLICY_KINDS, parse_policy_plain

    policies: list[dict[str, Any]] = []
    for given in paths:
        try:
            files = list(expand_paths([given]))
        except SourceError as exc:
            print(f"jobgate: --policies {given}: {exc.message}", file=sys.stderr)
            return None
        for path in files:
            objects = _objects_of(path, "--policies")
            if objects is None:
                return None
            for obj in objects:
                if obj.get("kind") not in POLICY_KINDS:
                    continue  # other objects of an export (e.g. the jobs themselves) are not policies
                # Plainly valid policies (an export of admitted ones) skip loading pydantic and the
                # models; the models judge the rest, and word what is wrong.
                plain = parse_policy_plain(obj)
                if plain is not None:
                    policies.append(plain)
                    continue
                from pydantic import ValidationError

                from jobgate.policy.models import parse_policy

                try:
                    policies.append(parse_policy(obj))
                except (ValidationError, ValueError) as exc:
                    name = (obj.get("metadata") or {}).get("name", "?")
                    first = str(exc).splitlines()
                    print(f"jobgate: --policies {path}: {obj.get('kind')} {name} is invalid: "
                          f"{'; '.join(first[:3])}", file=sys.stderr)  # fmt: skip
                    return None
    namespaces: dict[str, dict[str, str]] = {}
    if namespaces_path is not None:
        objects = _objects_of(namespaces_path, "--namespaces")
        if objects is None:
            return None
        for obj in objects:
            metadata = obj.get("metadata") if obj.get("kind") in (None, "Namespace") else None
            name = metadata.get("name") if isinstance(metadata, dict) else None
            if isinstance(name, str):
                labels = metadata.get("labels") if isinstance(metadata, dict) else None
                namespaces[name] = {str(k): str(v) for k, v in (labels or {}).items()}
    return PolicySnapshot(policies, namespaces)


def _review(args: argparse.Namespace) -> int:
    from jobgate.offline.sources import SourceError, display_name, printable, read_source
    from jobgate.webhook.admission import BadReview, Webhook, review_body

    views, readable = _cluster_views(args)
    if not readable:
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
        rule = verdict.rules.get(id(error)) or rule_id(gvk, error)  # a policy's error knows its rule
        print(f"jobgate: {printable(error.field)}: rule {rule or '(none)'}", file=sys.stderr)


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
    """The namespace argparse gives ``jobgate validate`` when only -o, -j, --validate, the cluster
    files' flags and paths are given."""

    def __init__(
        self,
        paths: list[str],
        output: str,
        validate: FieldValidation,
        jobs: int | None,
        *,
        queues: str | None = None,
        policies: list[str] | None = None,
        namespaces: str | None = None,
        namespace: str | None = None,
    ) -> None:
        self.command = "validate"
        self.paths = paths
        self.output = output
        self.validate = validate
        self.jobs = jobs
        self.queues = queues
        self.policies = policies
        self.namespaces = namespaces
        self.namespace = namespace
        self.handler = _validate


# The flags the quick parse reads, by the attribute each sets.
_QUICK_FLAGS = {
    "-o": "output",
    "--output": "output",
    "-j": "jobs",
    "--jobs": "jobs",
    "--validate": "validate",
    "--queues": "queues",
    "--policies": "policies",
    "--namespaces": "namespaces",
    "--namespace": "namespace",
}


def quick_validate_arguments(arguments: list[str]) -> QuickArguments | None:
    """``jobgate validate [-o FORMAT] [-j N] [--validate MODE] [--queues FILE] [--policies FILE|DIR]...
    [--namespaces FILE] [--namespace NS] PATH...``, what a pre-commit hook or a CI step runs, read
    without argparse; None for anything else, which argparse then parses.

    Importing argparse (and gettext, and the locale look-ups of its messages when a parser is
    built) costs a one-file check more than its rules. Only the plain forms are read here: a
    flag and its value as two words, or a long flag and its value joined by "=", each value
    valid (argparse checks every occurrence, the last one wins), the paths in one run (argparse
    refuses paths on both sides of a flag). Any other word (--queues, -j2, an abbreviation, --,
    -h, a path starting with "-"), a bad value or no path at all is left to argparse, so that
    every usage error keeps argparse's message and exit status 2. A file or namespace flag's value
    is taken as argparse takes it (``--policies`` adds to a list), an empty one is left to argparse.
    """
    if arguments[:1] != ["validate"]:
        return None
    from jobgate.offline.report import FORMATS
    from jobgate.offline.results import FieldValidation

    output, validation, jobs = "text", FieldValidation.STRICT, None
    names: dict[str, str] = {}  # --queues, --namespaces, --namespace: the last one given
    policies: list[str] | None = None
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
            attribute = _QUICK_FLAGS[flag]
            if attribute in ("queues", "policies", "namespaces", "namespace"):
                if not value or value.startswith("-"):
                    return None
                if attribute == "policies":
                    policies = [*(policies or []), value]
                else:
                    names[attribute] = value
            elif attribute == "output":
                if value not in FORMATS:
                    return None
                output = value
            elif attribute == "validate":
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
    return QuickArguments(
        paths,
        output,
        validation,
        jobs,
        queues=names.get("queues"),
        policies=policies,
        namespaces=names.get("namespaces"),
        namespace=names.get("namespace"),
    )
