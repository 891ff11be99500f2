"""Where a policy default may be written, and writing defaults into a copy of a job."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from jobgate.policy.fieldmap import FieldPath


def _unset_at(job: dict[str, Any], path: FieldPath) -> bool:
    """Whether a default may be written at ``path``: the field is missing or null, and so is each
    object on the way or it is an object. Something else in the way (a list, a string where the
    schema wants an object) is the author's, and wrong: the default leaves it for validation to report."""
    node: Any = job
    for segment in path:
        if node is None:
            return True
        if not isinstance(node, dict):
            return False
        node = node.get(segment)
    return node is None


def _labels_to_default(job: dict[str, Any]) -> dict[str, Any] | None:
    """The job's labels as label defaults read them (empty when it has none); None when its metadata
    or labels are no object: validation reports that, and no label is written into it."""
    metadata = job.get("metadata")
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        return None
    labels = metadata.get("labels")
    if labels is None:
        return {}
    return labels if isinstance(labels, dict) else None


def apply_defaults(job: dict[str, Any], ops: Iterable[tuple[list[str | int], object]]) -> dict[str, Any]:
    """A copy of ``job`` with ``ops`` set, creating missing intermediate objects."""
    import copy

    out = copy.deepcopy(job)
    for path, value in ops:
        node: Any = out
        for segment in path[:-1]:
            if isinstance(segment, int):
                node = node[segment]
                continue
            if not isinstance(node.get(segment), dict):
                node[segment] = {}
            node = node[segment]
        node[path[-1]] = value
    return out
