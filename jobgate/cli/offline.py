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

    from jobgate.engine.views import ClusterViews
    from jobgate.offline.cluster_objects import Located, Routed
    from jobgate.offline.results import DocumentResult, FieldValidation
    from jobgate.policy.snapshot import PolicySnapshot


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
    if volcano_jobs and (views is None or views.queues is None):
        # Imported here: the queue check's module loads the Volcano family, which a run without
        # Volcano jobs does not need.
        from jobgate.families.volcano.rules.queue_check import QUEUE_CHECK_SKIPPED

        print(
            f"jobgate: warning: {QUEUE_CHECK_SKIPPED} (offline; --queues FILE or --cluster-objects FILE "
            "checks against exported Queues)",
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
            if _default_notices(result):
                status = EXIT_USAGE  # the stored object depends on a namespace's labels not given
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


def _default_notices(result: DocumentResult) -> bool:
    """Print the warnings of a document ``jobgate default`` prints (a policy default dropped by a
    conflict, say), and the errors that make its output unreliable: whether the document has one."""
    where = f"jobgate: {result.source}:"
    for warning in result.warnings:
        print(f"{where}{warning.line}: {result.title}: warning: {warning.message}", file=sys.stderr)
    if not result.errors:
        return False
    from jobgate.policy.review import NAMESPACE_LABELS_UNKNOWN  # only a run with policies has such errors

    unreliable = [e for e in result.errors if e.rule == NAMESPACE_LABELS_UNKNOWN]
    for error in unreliable:
        print(f"{where}{error.line}: {result.title}: error: {error.message} [{error.rule}]", file=sys.stderr)
    return bool(unreliable)


def _cluster_views(args: argparse.Namespace | QuickArguments) -> tuple[ClusterViews | None, bool]:
    """The cluster objects given on the command line for the rules to read, and whether they could
    be read (False after printing why not). None when no flag gives any: a plain check imports no
    more than it needs."""
    queues_path = getattr(args, "queues", None)
    policy_paths = getattr(args, "policies", None)
    namespaces_path = getattr(args, "namespaces", None)
    namespace = getattr(args, "namespace", None)
    cluster_paths = getattr(args, "cluster_objects", None)
    jobset_gates = getattr(args, "jobset_feature_gates", None)
    if (
        queues_path is None
        and not policy_paths
        and namespaces_path is None
        and namespace is None
        and not cluster_paths
        and jobset_gates is None
    ):
        return None, True
    from jobgate.engine.views import ClusterViews

    views = ClusterViews(default_namespace=namespace or "default")
    if jobset_gates is not None:
        views.feature_gates = jobset_gates
    routed = None
    if cluster_paths:
        routed = _load_cluster_objects(cluster_paths)
        if routed is None:
            return None, False
    queues: list[dict[str, Any]] = list(routed.queues) if routed is not None else []
    if queues_path is not None:
        given = _objects_of(queues_path, "--queues")
        if given is None:
            return None, False
        queues = [*given, *queues]
    if queues_path is not None or queues:
        from jobgate.engine.views import QueueSnapshot

        views.queues = QueueSnapshot(queues)
    if routed is not None or queues:
        from jobgate.policy.queueobjects import queue_objects

        # Given a cluster's export, a queue missing from it is missing from the cluster (require.fitsQueue).
        views.queue_objects = queue_objects(
            [*(routed.kueue if routed is not None else []), *queues], views.default_namespace
        )
    if routed is not None:
        from jobgate.engine.views import DeviceSnapshot

        # Given a cluster's export, a claim template missing from it is missing from the cluster.
        views.devices = DeviceSnapshot(routed.devices, views.default_namespace)
    if routed is not None:
        from jobgate.families.trainer.rules.runtimes import OFFLINE_HINT, RuntimeSnapshot

        # Given a cluster's export, a runtime missing from it is missing from the cluster (the hint says how to add it).
        views.runtimes = RuntimeSnapshot(routed.runtimes, views.default_namespace, OFFLINE_HINT)
    if routed is not None and routed.claims:
        from jobgate.families.jobset.rules.claims import ClaimSnapshot

        # Given PVCs, one missing from them does not exist; given none, the check is not run (warned).
        views.claims = ClaimSnapshot(routed.claims, views.default_namespace)
    if policy_paths or namespaces_path or (routed is not None and (routed.policies or routed.namespaces)):
        exceptions: list[dict[str, Any]] = []  # TrainingJobPolicyExceptions among the policies' objects
        views.policies = _load_policies(policy_paths or [], namespaces_path, routed, exceptions)
        if views.policies is None:
            return None, False
        if exceptions:
            from jobgate.offline.exception_objects import exception_view

            views.exceptions = exception_view(exceptions, getattr(args, "now", None))
    return views, True


def _read_located(given: str, flag: str) -> list[Located] | None:
    """Every object under a path (a file, a directory walked recursively, or -), ``List`` items
    unwrapped, each with where it was written; None after printing why not."""
    from jobgate.offline.cluster_objects import Located, unwrap
    from jobgate.offline.sources import SourceError, display_name, expand_paths, iter_documents, read_source

    # Read as the jobs are, exactly as kubectl reads what it applies (YAML 1.1 scalars as go-yaml
    # v2 reads them, timestamps kept as written), with the reader a check has already loaded:
    # PyYAML's import alone cost a one-file check with --policies more than the rest of its start-up.
    located: list[Located] = []
    try:
        for path in expand_paths([given]):
            source = display_name(path)
            for document in iter_documents(read_source(path), path):
                for obj, prefix in unwrap(document.data):
                    located.append(Located(obj, source, document, prefix))
    except SourceError as exc:
        where = f"{display_name(exc.source)}:{exc.line}" if exc.line else display_name(exc.source)
        print(f"jobgate: {flag} {where}: {exc.message}", file=sys.stderr)
        return None
    except RecursionError:
        print(f"jobgate: {flag} {display_name(given)}: nesting too deep", file=sys.stderr)
        return None
    return located


def _objects_of(path: str, flag: str) -> list[dict[str, Any]] | None:
    """Every object in a YAML/JSON file (``List`` items unwrapped); None after printing why not."""
    located = _read_located(path, flag)
    return None if located is None else [item.obj for item in located]


def _load_cluster_objects(paths: list[str]) -> Routed | None:
    """``--cluster-objects FILE|DIR`` (repeatable): every object routed by apiVersion and kind; None
    after printing why not. What no check reads is said in one line."""
    from jobgate.offline.cluster_objects import route

    routed = None
    for given in paths:
        located = _read_located(given, "--cluster-objects")
        if located is None:
            return None
        routed = route(located, routed)
    if routed is not None:
        for note in routed.notes():
            print(f"jobgate: --cluster-objects: {note}", file=sys.stderr)
    return routed


def _known_elsewhere(obj: dict[str, Any]) -> bool:
    """An object a ``--policies`` folder or export may hold beside its policies without a mistake: a
    job jobgate serves (policies kept beside the jobs), or a kind ``--cluster-objects`` reads."""
    from jobgate.engine.registry import GroupVersionKind, lookup
    from jobgate.offline.cluster_objects import Located, Routed

    probe = Routed()
    probe.add(Located(obj, ""))
    if not probe.ignored:
        return True
    gvk = GroupVersionKind.from_object(obj)
    return gvk is not None and lookup(gvk) is not None


def _load_policies(
    paths: list[str],
    namespaces_path: str | None,
    routed: Routed | None = None,
    exceptions: list[dict[str, Any]] | None = None,
) -> PolicySnapshot | None:
    """``--policies FILE|DIR`` (repeatable), ``--namespaces FILE`` and what ``--cluster-objects`` gave of
    both: checked as the apiserver would admit them (every error of a malformed or misplaced policy
    printed, one a line; exit 2), and the namespaces' labels. The TrainingJobPolicyExceptions among
    them, checked the same way, are added to ``exceptions``."""
    from jobgate.offline.cluster_objects import namespace_labels_of
    from jobgate.offline.exception_objects import check_exceptions, split_exceptions
    from jobgate.offline.policy_objects import check_policies, merge_policies
    from jobgate.policy.snapshot import PolicySnapshot

    groups: list[list[dict[str, Any]]] = []
    errors: list[str] = []
    for given in paths:
        located = _read_located(given, "--policies")
        if located is None:
            return None
        located, waivers = split_exceptions(located)
        taken, problems = check_exceptions(waivers, "--policies")
        errors += problems
        if exceptions is not None:
            exceptions += taken
        found, problems = check_policies(located, "--policies", _known_elsewhere)
        errors += problems
        groups.append(found)
        if not found and not waivers and not problems and not _is_empty_export(located, given):
            errors.append(
                f"jobgate: --policies {given}: holds no ClusterTrainingJobPolicy or TrainingJobPolicy "
                "(export them with `kubectl get clustertrainingjobpolicies,trainingjobpolicies -A -o yaml`)"
            )
    if routed is not None and routed.policies:
        routed_policies, waivers = split_exceptions(routed.policies)
        taken, problems = check_exceptions(waivers, "--cluster-objects")
        errors += problems
        if exceptions is not None:
            exceptions += taken
        found, problems = check_policies(routed_policies, "--cluster-objects")
        errors += problems
        groups.append(found)
    policies, twice = merge_policies(groups)
    errors += twice
    if errors:
        for line in errors:
            print(line, file=sys.stderr)
        return None
    namespaces: dict[str, dict[str, str]] = dict(routed.namespaces) if routed is not None else {}
    if namespaces_path is not None:
        located = _read_located(namespaces_path, "--namespaces")
        if located is None:
            return None
        read = 0
        for item in located:
            if item.obj.get("kind") in (None, "Namespace"):
                found_namespace = namespace_labels_of(item.obj)
                if found_namespace is not None:
                    namespaces[found_namespace[0]] = found_namespace[1]
                    read += 1
        if located and not read:
            print(f"jobgate: --namespaces {namespaces_path}: holds no Namespace "
                  "(export them with `kubectl get namespaces -o yaml`)", file=sys.stderr)  # fmt: skip
            return None
    return PolicySnapshot(policies, namespaces)


def _is_empty_export(located: list[Located], given: str) -> bool:
    """Whether a path holding no policy is an export of a cluster that has none (an empty ``List``,
    as ``kubectl get clustertrainingjobpolicies -o yaml`` prints it there): accepted, not refused."""
    return not located and _has_empty_list(given)


def _has_empty_list(given: str) -> bool:
    from jobgate.offline.sources import SourceError, expand_paths, iter_documents, read_source

    try:
        for path in expand_paths([given]):
            for document in iter_documents(read_source(path), path):
                data = document.data
                if isinstance(data, dict) and str(data.get("kind")).endswith("List") and data.get("items") == []:
                    return True
    except (SourceError, RecursionError):
        return False
    return False


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
    """The rule id of each error and warning, on stderr: the AdmissionReview on stdout stays
    byte-identical to the webhook's answer (whose messages name no rule)."""
    from jobgate.engine.registry import lookup_names
    from jobgate.offline.sources import printable
    from jobgate.review import review_job
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
    for error in verdict.errors:
        print(f"jobgate: {printable(error.field)}: rule {error.rule or '(none)'}", file=sys.stderr)
    for warning in verdict.warnings:
        rule = verdict.warning_rule(warning)
        print(f"jobgate: warning {printable(warning)}: rule {rule or '(none)'}", file=sys.stderr)


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
        cluster_objects: list[str] | None = None,
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
        self.cluster_objects = cluster_objects
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
    "--cluster-objects": "cluster_objects",
}


def quick_validate_arguments(arguments: list[str]) -> QuickArguments | None:
    """``jobgate validate [-o FORMAT] [-j N] [--validate MODE] [--queues FILE] [--policies FILE|DIR]...
    [--namespaces FILE] [--namespace NS] [--cluster-objects FILE|DIR]... PATH...``, what a pre-commit
    hook or a CI step runs, read without argparse; None for anything else, which argparse then parses.

    Importing argparse (and gettext, and the locale look-ups of its messages when a parser is
    built) costs a one-file check more than its rules. Only the plain forms are read here: a
    flag and its value as two words, or a long flag and its value joined by "=", each value
    valid (argparse checks every occurrence, the last one wins), the paths in one run (argparse
    refuses paths on both sides of a flag). Any other word (--queues, -j2, an abbreviation, --,
    -h, a path starting with "-"), a bad value or no path at all is left to argparse, so that
    every usage error keeps argparse's message and exit status 2. A file or namespace flag's value
    is taken as argparse takes it (``--policies`` and ``--cluster-objects`` add to a list), an empty
    one is left to argparse.
    """
    if arguments[:1] != ["validate"]:
        return None
    from jobgate.offline.report import FORMATS
    from jobgate.offline.results import FieldValidation

    output, validation, jobs = "text", FieldValidation.STRICT, None
    names: dict[str, str] = {}  # --queues, --namespaces, --namespace: the last one given
    lists: dict[str, list[str]] = {}  # --policies, --cluster-objects: every one given
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
            if attribute in ("queues", "policies", "namespaces", "namespace", "cluster_objects"):
                if not value or value.startswith("-"):
                    return None
                if attribute in ("policies", "cluster_objects"):
                    lists.setdefault(attribute, []).append(value)
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
        policies=lists.get("policies"),
        namespaces=names.get("namespaces"),
        namespace=names.get("namespace"),
        cluster_objects=lists.get("cluster_objects"),
    )
