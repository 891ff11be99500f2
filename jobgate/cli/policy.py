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

    queues = None
    if args.policies or args.namespaces or args.cluster_objects:
        from jobgate.cli.offline import _load_cluster_objects, _load_policies

        routed = _load_cluster_objects(args.cluster_objects) if args.cluster_objects else None
        if args.cluster_objects and routed is None:
            return EXIT_USAGE
        if routed is not None:
            from jobgate.policy.queueobjects import queue_objects

            queues = queue_objects([*routed.kueue, *routed.queues], args.namespace)
        snapshot = _load_policies(args.policies or [], args.namespaces, routed)
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
        policies, labels, queues = found
    effective = effective_policy(policies, args.namespace, labels, None)
    text = explain_text(effective).rstrip("\n") + "\n"
    if effective.required_fields.get("fitsQueue"):
        from jobgate.policy.queuefit import ceiling_lines

        title = "Queues (require.fitsQueue: the most each can ever give, per resource):"
        text += "\n".join([title, *ceiling_lines(queues, args.namespace)]) + "\n"
    sys.stdout.write(text)
    return EXIT_OK


def _from_cluster(
    kubeconfig: str | None, namespace: str
) -> tuple[list[Mapping[str, Any]], Mapping[str, str], Any] | None:
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
        queues = _queues_from_cluster(kube)
    except ApiError as exc:
        print(f"jobgate: cannot read the policies: {exc}", file=sys.stderr)
        return None
    except Exception as exc:  # no kubeconfig, unreachable cluster: a message, never a traceback
        print(f"jobgate: cannot reach the cluster: {exc}", file=sys.stderr)
        return None
    return policies, namespace_labels(namespace, labels), queues


def _queues_from_cluster(kube: Any) -> Any:
    """Kueue's and Volcano's queue objects, as the webhook's informers read them (each version served)."""
    from jobgate.kube.client import Resource
    from jobgate.policy.queueobjects import CLUSTER, KUEUE_GROUP, QueueObjects
    from jobgate.webhook.queuefit import KUEUE_RESOURCES, VOLCANO_QUEUES, _keeper

    store = QueueObjects(CLUSTER)
    wanted = [
        (KUEUE_GROUP, versions, plural, namespaced, kind) for kind, plural, namespaced, versions in KUEUE_RESOURCES
    ]
    wanted.append((VOLCANO_QUEUES.group, (VOLCANO_QUEUES.version,), VOLCANO_QUEUES.plural, False, "Queue"))
    for group, versions, plural, namespaced, kind in wanted:
        version = next((v for v in versions if kube.serves(group, v, plural)), None)
        if version is None:
            continue
        if kind == "Queue":
            store.volcano = True
        else:
            store.kueue = True
        keep = _keeper(f"{group}/{version}", kind)
        for item in kube.get(Resource(group, version, plural, namespaced=namespaced).path()).get("items", []):
            store.add(keep(item))
    return store
