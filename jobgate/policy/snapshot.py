"""``PolicySnapshot``: the platform policies and namespaces given at once, as a review's ``PolicyView``.

The view's protocol stays with the engine (``jobgate.engine.views.PolicyView``), which knows nothing of
policy; this implementation builds a ``PolicySet``, so it lives with the policies.
"""

from __future__ import annotations

from jobgate.engine.views import namespace_labels
from jobgate.policy.resolve import PolicySet

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any


class PolicySnapshot:
    """A ``PolicyView`` over objects given at once (``jobgate validate --policies --namespaces``, tests).

    A namespace missing from ``namespaces`` shows only the label the apiserver gives every namespace,
    and is not known (``knows_namespace``): its other labels may be anything, so a selection by them
    cannot be made (``jobgate.policy.review`` refuses to guess it).
    """

    __slots__ = ("_labels", "_namespaces", "_policies")

    def __init__(
        self, policies: Sequence[Mapping[str, Any]], namespaces: Mapping[str, Mapping[str, str]] | None = None
    ) -> None:
        self._policies = PolicySet(policies)
        self._namespaces = dict(namespaces or {})
        # Each namespace's labels as selectors see them, built once: every review asks.
        self._labels: dict[str, Mapping[str, str]] = {}

    def policies(self) -> Sequence[Mapping[str, Any]]:
        return self._policies

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        labels = self._labels.get(namespace)
        if labels is None:
            labels = self._labels[namespace] = namespace_labels(namespace, self._namespaces.get(namespace))
        return labels

    def knows_namespace(self, namespace: str) -> bool:
        """Whether the namespace's labels were given (a Namespace object), not only its name."""
        return namespace in self._namespaces
