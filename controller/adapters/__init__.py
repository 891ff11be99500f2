"""One adapter per API family: job -> common model, and the engine's status -> the job's status.

Each family jobgate's controller runs has its own module here, named by its record
(``Family.controller``); a module exposes ``ADAPTERS``.
"""

from __future__ import annotations

import importlib
from typing import Any

from jobgate.engine.registry import GroupVersionKind
from jobgate.families import every_family

from .common import JOB_UID_LABEL, Adapter, common_status_document, read_status

ADAPTERS: dict[GroupVersionKind, Adapter] = {
    adapter.gvk: adapter
    for record in every_family()
    if record.controller is not None
    for adapter in importlib.import_module(record.controller).ADAPTERS
}


def adapter_for(job: dict[str, Any]) -> Adapter | None:
    gvk = GroupVersionKind.from_object(job)
    return ADAPTERS.get(gvk) if gvk else None


__all__ = ["ADAPTERS", "JOB_UID_LABEL", "Adapter", "adapter_for", "common_status_document", "read_status"]
