"""``jobgate policy explain``: a namespace's effective platform policy, each value with its source."""

from __future__ import annotations

import sys

from jobgate.cli.offline import EXIT_OK, EXIT_USAGE

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping, Sequence
    from typing import Any


def _policy_explain(args: argparse.Namespace) -> int:
    from jobgate.policy.explain import explain_text
    from jobgate.policy.resolve import effective_policy

    if args.policies or args.namespaces:
        from jobgate.cli.offline import _load_policies

        snapshot = _load_policies(args.policies or [], args.namespaces)
        if snapshot is None:
            return EXIT_USAGE
        policies: Sequence[Mapping[str, Any]] = snapshot.policies()
        labels = snapshot.namespace_labels(args.namespace)
        if not snapshot.knows_namespace(args.namespace):
            from jobgate.engine.views import NAMESPACE_NAME_LABEL
            from jobgate.policy.resolve import CLUSTER_KIND, policy_ref, reads_unknown_labels

            unknown = [
                str(policy_ref(p))
                for p in policies
                if p.get("kind") == CLUSTER_KIND
                and reads_unknown_labels((p.get("spec") or {}).get("namespaceSelector"), NAMESPACE_NAME_LABEL)
            ]
            if unknown:
                print(
                    f"jobgate: warning: the labels of namespace {args.namespace} are unknown (no Namespace given "
                    f"with --namespaces): not shown, as their selection is unknown: {', '.join(sorted(unknown))}",
                    file=sys.stderr,
                )
    else:
        found = _from_cluster(args.kubeconfig, args.namespace)
        if found is None:
            return EXIT_USAGE
        policies, labels = found
    effective = effective_policy(policies, args.namespace, labels, None)
    sys.stdout.write(explain_text(effective).rstrip("\n") + "\n")
    return EXIT_OK


def _from_cluster(kubeconfig: str | None, namespace: str) -> tuple[list[Mapping[str, Any]], Mapping[str, str]] | None:
    """The cluster's policies and the namespace's labels, read once; None after printing why not."""
    from jobgate.engine.views import namespace_labels
    from jobgate.kube.client import ApiError, Kube
    from jobgate.policy.resources import CLUSTER_POLICIES, NAMESPACES, POLICIES

    try:
        kube = Kube(kubeconfig)
        policies = [*kube.get(CLUSTER_POLICIES.path()).get("items", []), *kube.get(POLICIES.path()).get("items", [])]
        try:
            labels = (kube.get(NAMESPACES.path(name=namespace)).get("metadata") or {}).get("labels") or {}
        except ApiError as exc:
            if exc.status != 404:
                raise
            print(f"jobgate: warning: namespace {namespace} does not exist; its labels are unknown", file=sys.stderr)
            labels = {}
    except ApiError as exc:
        print(f"jobgate: cannot read the policies: {exc}", file=sys.stderr)
        return None
    except Exception as exc:  # no kubeconfig, unreachable cluster: a message, never a traceback
        print(f"jobgate: cannot reach the cluster: {exc}", file=sys.stderr)
        return None
    return policies, namespace_labels(namespace, labels)
