"""What one review knows about its request and the cluster: built per request, read by the rules.

The engine keeps no state between reviews. Each transport builds a ``ReviewContext`` its own way:
the webhook from the AdmissionReview and its watch-backed caches, ``jobgate validate`` from the
files it is given (``--queues``, ``--namespace``), the controller from the job it reconciles.
A rule reads the context it is handed and never a module global (as controller-runtime passes
the admission request in ``ctx`` and Kyverno a ``PolicyContext``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, Final

    from jobgate.engine.views import ClusterViews, DeviceView, QueueView

CREATE: Final = "CREATE"
UPDATE: Final = "UPDATE"


class ReviewContext:
    """One review's request (operation, namespace, user, dry run) and read-only views of cluster objects.

    ``skipped`` is the one thing a rule may write: the checks it could not run because the
    context had no view of the objects they read (offline without ``--queues``, say), so that the
    transport can say so. It belongs to this review alone.

    Not a dataclass: importing ``dataclasses`` costs a one-file ``jobgate validate`` more than the
    rules it runs.
    """

    __slots__ = (
        "claims",
        "devices",
        "dry_run",
        "exceptions",
        "feature_gates",
        "groups",
        "namespace",
        "namespace_labels",
        "namespace_labels_known",
        "operation",
        "policies",
        "queue_objects",
        "queues",
        "runtimes",
        "skipped",
        "user",
    )

    def __init__(
        self,
        *,
        operation: str = CREATE,
        namespace: str | None = None,
        namespace_labels: Mapping[str, str] | None = None,
        user: str | None = None,
        groups: tuple[str, ...] = (),
        dry_run: bool = False,
        queues: QueueView | None = None,
        policies: Sequence[Mapping[str, Any]] | None = None,
        devices: DeviceView | None = None,
        namespace_labels_known: bool = True,
        queue_objects: Any = None,
        exceptions: Any = None,
        feature_gates: frozenset[str] = frozenset(),
        runtimes: Any = None,
        claims: Any = None,
    ) -> None:
        self.operation = operation
        self.namespace = namespace
        # None: the namespace's labels are not known here (offline without --namespaces).
        self.namespace_labels = namespace_labels
        # False: only the name label of the namespace is known (offline, no Namespace object given),
        # so a policy selecting namespaces by another label can be neither applied nor skipped.
        self.namespace_labels_known = namespace_labels_known
        self.user = user
        self.groups = groups
        self.dry_run = dry_run
        # Volcano's Queues (scheduling.volcano.sh); None: no view, the queue check is skipped.
        self.queues = queues
        # The platform policies (ClusterTrainingJobPolicy, TrainingJobPolicy objects) that may apply;
        # None: policy enforcement is off for this review (no view of them), () none exist.
        self.policies = policies
        # DRA objects (resource.k8s.io/v1 claim templates, claims, device classes); None: no view,
        # so a count that needs one cannot be made.
        self.devices = devices
        # Kueue's and Volcano's queue objects for require.fitsQueue (jobgate.policy.queueobjects); None:
        # none given (offline), so a job the check would read them for is not admitted on a guess.
        self.queue_objects = queue_objects
        # TrainingJobPolicyExceptions in force (jobgate.policy.exceptions.ExceptionSnapshot or the
        # webhook's cache); None: none are known, nothing is waived.
        self.exceptions = exceptions
        # The peers' feature gates this transport was started with (``--jobset-feature-gates``): the
        # enabled ones' names, read by the rules a peer puts behind a gate.
        self.feature_gates = feature_gates
        # Kubeflow Trainer's runtimes a TrainJob is judged against (jobgate.families.trainer.views.RuntimeView);
        # None: no view (offline without --cluster-objects), so a TrainJob is refused with how to give one.
        self.runtimes = runtimes
        # The cluster's PersistentVolumeClaims, read by name (jobgate.families.jobset.rules.claims.ClaimView)
        # for JobSet's check of existing PVCs; None: no view, the check is not run (with a warning).
        self.claims = claims
        self.skipped: set[str] = set()

    def __repr__(self) -> str:
        return (
            f"ReviewContext(operation={self.operation!r}, namespace={self.namespace!r}, user={self.user!r}, "
            f"dry_run={self.dry_run!r}, queues={'yes' if self.queues is not None else 'none'})"
        )


def context_for(
    views: ClusterViews | None,
    *,
    operation: str = CREATE,
    namespace: str | None = None,
    user: str | None = None,
    dry_run: bool = False,
) -> ReviewContext:
    """A review's context with what the transport's views show of the cluster for this namespace."""
    if views is None:
        return ReviewContext(operation=operation, namespace=namespace, user=user, dry_run=dry_run)
    policies = views.policies
    knows = getattr(policies, "knows_namespace", None)  # absent: a view of every namespace (the webhook's)
    return ReviewContext(
        operation=operation,
        namespace=namespace,
        namespace_labels=policies.namespace_labels(namespace) if policies is not None and namespace else None,
        namespace_labels_known=knows is None or not namespace or bool(knows(namespace)),
        user=user,
        dry_run=dry_run,
        queues=views.queues,
        policies=policies.policies() if policies is not None else None,
        devices=views.devices,
        queue_objects=views.queue_objects,
        exceptions=views.exceptions,
        feature_gates=views.feature_gates,
        runtimes=views.runtimes,
        claims=views.claims,
    )
