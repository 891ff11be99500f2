"""JobSet's CRD's list checks, which the apiserver makes before any webhook: ``maxItems`` (a replicated
job's ``dependsOn`` ≤ 5, ``volumeClaimPolicies`` and each policy's ``templates`` ≤ 50) and the keys of its
list-maps (replicated jobs and their ``dependsOn`` by name, the pod templates' lists as core/v1 keys them).
On UPDATE both are ratcheted as the apiserver ratchets them (``jobgate.rules.crd_lists``)."""

from __future__ import annotations

import jobgate.rules.crd_lists as crd_lists  # noqa: PLR0402 (the module, not its package)
from jobgate.engine.modelref import ModelRef
from jobgate.families.jobset.rules.checks import R_LIST_BOUNDS, R_LIST_MAP_KEYS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.fielderrors import FieldError

SPEC_MODEL = ModelRef("jobgate.families.jobset.models:JobSetSpec")
# The list-maps on the way to a bounded list, for ratcheting (volumeClaimPolicies is atomic).
RATCHET_KEYS: dict[str, tuple[str, ...]] = {"replicatedJobs": ("name",), "dependsOn": ("name",)}


def crd_list_errors(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[FieldError]:
    """The lists of a JobSet's spec its CRD refuses: too long, or with an item whose keys an earlier one has."""
    path = ("spec",)
    errors = crd_lists.list_bound_errors(spec, SPEC_MODEL, path, R_LIST_BOUNDS)
    duplicates = crd_lists.duplicate_key_errors(spec, crd_lists.JOBSET_SPEC_LIST_MAPS, path, R_LIST_MAP_KEYS)
    if duplicates and old_spec is not None:
        stored = crd_lists.duplicate_key_errors(old_spec, crd_lists.JOBSET_SPEC_LIST_MAPS, path, R_LIST_MAP_KEYS)
        duplicates = crd_lists.duplicate_keys_ratcheted(duplicates, R_LIST_MAP_KEYS, bool(stored))
    return errors + duplicates


def ratcheted(errors: list[FieldError], new: Any, old: Any) -> list[FieldError]:
    """``errors`` of an UPDATE without the list bounds the apiserver ratchets: a too-long list found in a
    value unchanged from the stored JobSet (CRDValidationRatcheting)."""
    return crd_lists.ratcheted(errors, new, old, frozenset((R_LIST_BOUNDS,)), RATCHET_KEYS)
