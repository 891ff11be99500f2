"""One adapter per API family: job -> common model, and the engine's status -> the job's status.

Each family has its own module here, mirroring ``webhook/rules/families/``; a module exposes
``ADAPTERS``, and adding a family is one module plus one line below.
"""

from __future__ import annotations

from typing import Any

from jobgate.controller.adapters import diengine, kubedl, mlkube, t9k, volcano
from jobgate.controller.adapters.common import JOB_UID_LABEL, Adapter, common_status_document, read_status
from jobgate.webhook.rules.registry import GroupVersionKind

ADAPTERS: dict[GroupVersionKind, Adapter] = {
    adapter.gvk: adapter for family in (kubedl, mlkube, t9k, diengine, volcano) for adapter in family.ADAPTERS
}


def adapter_for(job: dict[str, Any]) -> Adapter | None:
    gvk = GroupVersionKind.from_object(job)
    return ADAPTERS.get(gvk) if gvk else None


__all__ = ["ADAPTERS", "JOB_UID_LABEL", "Adapter", "adapter_for", "common_status_document", "read_status"]
