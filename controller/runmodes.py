"""T9k GenericJob run modes as pure pod-template rewrites: debug, and the overrides used on resume.

Debug mode keeps the pods but replaces what they run (``sleep inf`` unless the entry gives a
command), so a user can exec into them. Pause deletes the pods (the engine does that); on
resume the pods are recreated, with the ``resumeSpecs`` command/args overrides. Both may drop
the init containers (``skipInitContainer``). The overrides apply to every container of the
replica: a GenericJob replica runs one program, and a sidecar left running its normal command in
a debug pod would do the work debug mode is meant to hold back.
"""

from __future__ import annotations

import copy
from typing import Any

DEBUG_COMMAND = ["sleep", "inf"]


def _entry_for(entries: Any, replica_type: str) -> dict[str, Any] | None:
    if not isinstance(entries, list):
        return None
    return next((e for e in entries if isinstance(e, dict) and e.get("type") == replica_type), None)


def debug_override(run_mode: dict[str, Any], replica_type: str) -> dict[str, Any] | None:
    """The debug entry for ``replica_type``, or None when this type runs normally.

    Debug enabled with no ``replicaSpecs`` puts every type in debug with the default command.
    """
    debug = run_mode.get("debug") if isinstance(run_mode.get("debug"), dict) else {}
    if not debug.get("enabled"):
        return None
    entries = debug.get("replicaSpecs")
    if not entries:
        return {"type": replica_type, "command": list(DEBUG_COMMAND)}
    entry = _entry_for(entries, replica_type)
    if entry is None:
        return None
    return {**entry, "command": entry.get("command") or list(DEBUG_COMMAND)}


def resume_override(run_mode: dict[str, Any], replica_type: str) -> dict[str, Any] | None:
    pause = run_mode.get("pause") if isinstance(run_mode.get("pause"), dict) else {}
    return _entry_for(pause.get("resumeSpecs"), replica_type)


def apply_override(template: dict[str, Any], override: dict[str, Any], *, replace_args: bool) -> dict[str, Any]:
    """A copy of ``template`` with the override's command (and args) in every container.

    ``replace_args``: debug replaces the whole invocation (the old args would be passed to
    ``sleep``); resume replaces args only when the entry gives them.
    """
    result = copy.deepcopy(template)
    spec = result.get("spec") if isinstance(result.get("spec"), dict) else None
    if spec is None:
        return result
    for container in spec.get("containers") or []:
        if not isinstance(container, dict):
            continue
        if override.get("command"):
            container["command"] = list(override["command"])
        if override.get("args") is not None:
            container["args"] = list(override["args"])
        elif replace_args:
            container.pop("args", None)
    if override.get("skipInitContainer"):
        spec.pop("initContainers", None)
    return result
