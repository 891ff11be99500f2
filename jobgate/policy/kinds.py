"""The policy field map of every kind jobgate serves, collected from the families.

Each family keeps its kinds' maps in its own package, in the module its record names
(``Family.policy``: ``jobgate/families/<name>/policy.py``, its ``KIND_MAPS``); the mechanism they
are written in is :mod:`jobgate.policy.fieldmap`. The modules are imported by name, as the registry
imports a family's rules: policy stands below the families and knows them only by their records.
"""

from __future__ import annotations

from jobgate.families import every_family
from jobgate.policy.fieldmap import KindMap

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any


# The families in the order their kinds' maps were listed before each family kept its own (Kubeflow's
# second, not last as registered): it orders the conflicts in a policy's status
# (jobgate.policy.resolve.conflicts), which the move was not to change. A family not named here
# follows, in registration order.
EARLIER_ORDER: tuple[str, ...] = ("kubedl", "kubeflow", "mlkube", "t9k", "diengine", "volcano")


def _place(name: str) -> int:
    return EARLIER_ORDER.index(name) if name in EARLIER_ORDER else len(EARLIER_ORDER)


def _collect() -> dict[tuple[str, str], KindMap]:
    table: dict[tuple[str, str], KindMap] = {}
    # sorted() is stable: the families not in EARLIER_ORDER keep their registration order.
    for record in sorted(every_family(), key=lambda record: _place(record.name)):
        if record.policy is None:
            continue
        # __import__ rather than importlib: one builtin call, nothing more imported.
        module = __import__(record.policy, fromlist=["KIND_MAPS"])
        for kmap in module.KIND_MAPS:
            table[kmap.group, kmap.kind] = kmap
    return table


# By (group, kind): one served version per group; families in EARLIER_ORDER, each family's kinds in its
# KIND_MAPS' order.
KINDS: dict[tuple[str, str], KindMap] = _collect()


def group_kind(job: dict[str, Any]) -> tuple[str, str]:
    """(group, kind) of a job object; the version is not needed (one served version per group)."""
    api_version = job.get("apiVersion") if isinstance(job, dict) else None
    group = api_version.rsplit("/", 1)[0] if isinstance(api_version, str) and "/" in api_version else ""
    kind = job.get("kind") if isinstance(job, dict) else None
    return group, kind if isinstance(kind, str) else ""


def kind_map(job: dict[str, Any]) -> KindMap | None:
    """The field map of the job's kind, or None for a kind jobgate does not serve."""
    if isinstance(job, dict):
        api_version, kind = job.get("apiVersion"), job.get("kind")
        if type(api_version) is str and type(kind) is str:
            # Every review asks this a few times, with one of a handful of pairs.
            key = (api_version, kind)
            found = _BY_API_VERSION.get(key, _UNKNOWN)
            if found is _UNKNOWN:
                found = KINDS.get(group_kind(job))
                if len(_BY_API_VERSION) >= _BY_API_VERSION_LIMIT:
                    _BY_API_VERSION.clear()
                _BY_API_VERSION[key] = found
            return found
    return KINDS.get(group_kind(job))


_UNKNOWN: Any = object()
_BY_API_VERSION: dict[tuple[str, str], Any] = {}
_BY_API_VERSION_LIMIT = 1024
