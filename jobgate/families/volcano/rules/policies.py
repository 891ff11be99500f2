"""Lifecycle policies of a Volcano job and of its tasks: the events and actions a user may write, and
the warnings of policies Volcano admits but never runs. The rules (``validatePolicies``) are declared:
``declared.py``'s ``LifecyclePolicies``."""

from __future__ import annotations

from jobgate.engine.findings import clip_warning
from jobgate.families.volcano.rules.tasks import job_tasks

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
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

VALID_LISTS = f"valid events are [{', '.join(USER_EVENTS)}], valid actions are [{', '.join(USER_ACTIONS)}]"


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
