"""Lifecycle policies of a Volcano job and of its tasks: events, actions, exit codes (``validatePolicies``)."""

from __future__ import annotations

from jobgate.engine.fielderrors import ErrorType, FieldError, FieldPath, forbidden, invalid, required
from jobgate.engine.findings import clip_warning
from jobgate.families.volcano.rules.tasks import job_tasks
from jobgate.rules.jobmeta import as_int

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

# Events and actions a user may write (volcano-sh/apis bus/v1alpha1, as the webhook filters them).
USER_EVENTS: tuple[str, ...] = (
    "*",
    "PodFailed",
    "PodEvicted",
    "PodPending",
    "Unknown",
    "TaskCompleted",
    "TaskFailed",
    "JobUpdated",
)
USER_ACTIONS: tuple[str, ...] = (
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "RestartPartition",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
)
ANY_EVENT = "*"

_VALID_LISTS = f"valid events are [{', '.join(USER_EVENTS)}], valid actions are [{', '.join(USER_ACTIONS)}]"


def policy_errors(policies: Any, path: FieldPath) -> Iterator[FieldError]:
    """Volcano's validatePolicies over one list (job-level, or one task's)."""
    if not isinstance(policies, list):
        return
    seen_events: set[str] = set()
    seen_codes: set[int] = set()
    for index, policy in enumerate(policies):
        if not isinstance(policy, dict):
            continue
        policy_path = (*path, index)
        located = list(_policy_events(policy, policy_path))
        exit_code = as_int(policy.get("exitCode"))
        if located and policy.get("exitCode") is not None:
            yield forbidden((*policy_path, "exitCode"), "must not specify event and exitCode simultaneously")
            continue
        if not located and policy.get("exitCode") is None:
            yield required(policy_path, "either event and exitCode should be specified")
            continue
        action = policy.get("action")
        if located:
            if action not in USER_ACTIONS:
                yield invalid((*policy_path, "action"), action or "", f"invalid policy action; {_VALID_LISTS}")
            for event, event_path in located:
                if event not in USER_EVENTS:
                    yield invalid(event_path, event, f"invalid policy event; {_VALID_LISTS}")
                elif event in seen_events:
                    yield FieldError(
                        ErrorType.DUPLICATE, event_path, event, f"duplicate event {event}  across different policy"
                    )
                seen_events.add(event)
        elif exit_code is not None:
            if exit_code == 0:
                yield invalid((*policy_path, "exitCode"), 0, "0 is not a valid error code")
            elif exit_code in seen_codes:
                yield FieldError(
                    ErrorType.DUPLICATE, (*policy_path, "exitCode"), exit_code, f"duplicate exitCode {exit_code}"
                )
            seen_codes.add(exit_code)
    if ANY_EVENT in seen_events and len(seen_events) > 1:
        yield invalid(path, ANY_EVENT, "if there's * here, no other policy should be here")


def _policy_events(policy: dict[str, Any], path: FieldPath) -> Iterator[tuple[str, FieldPath]]:
    """(event, where it is written) for ``events`` then ``event``, each event once."""
    seen: set[str] = set()
    events = policy.get("events")
    if isinstance(events, list):
        for index, event in enumerate(events):
            if isinstance(event, str) and event and event not in seen:
                seen.add(event)
                yield event, (*path, "events", index)
    event = policy.get("event")
    if isinstance(event, str) and event and event not in seen:
        yield event, (*path, "event")


def policy_warnings(spec: dict[str, Any]) -> list[str]:
    """Exit-code policies whose action Volcano does not check (it admits them; the controller ignores them)."""
    warnings = []
    lists = [("spec.policies", spec.get("policies"))]
    lists += [(f"spec.tasks[{i}].policies", t.get("policies")) for i, t in job_tasks(spec)]
    for where, policies in lists:
        for index, policy in enumerate(policies if isinstance(policies, list) else []):
            if isinstance(policy, dict) and policy.get("exitCode") is not None:
                action = policy.get("action")
                if action not in USER_ACTIONS:
                    import json  # only this warning needs it: not imported at start-up

                    what = f"action {json.dumps(action)}" if action not in (None, "") else "no action"
                    warnings.append(clip_warning(f"{where}[{index}]: exit-code policy with {what}: Volcano runs none"))
    return warnings
