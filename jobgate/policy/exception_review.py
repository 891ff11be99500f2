"""The exceptions' part of one review: the policies' findings on a job without what the
``TrainingJobPolicyException`` s in force for it waive, and a line per exception that waived something.

Called by :func:`jobgate.policy.review.verdict` only when the review's context knows exceptions and
the job has findings: a job that breaks no policy never needs one.
"""

from __future__ import annotations

from jobgate.policy.exceptions import covering, waive, waiver_lines

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.context import ReviewContext
    from jobgate.policy.check import PolicyFinding
    from jobgate.policy.memo import Resolution


def waive_in_review(
    found: list[PolicyFinding],
    context: ReviewContext,
    family: str,
    resolution: Resolution,
    defaulted: dict[str, Any],
    *,
    old: dict[str, Any] | None,
) -> tuple[list[PolicyFinding], list[str]]:
    """``found`` without the waived findings, and the lines saying which exception waived what."""
    effective = resolution.effective
    exceptions = covering(context.exceptions, defaulted, effective.namespace)
    if not exceptions or context.policies is None:
        return found, []
    kept, waived = waive(
        found,
        exceptions,
        context.policies,
        defaulted,
        old_job=old,
        family=family,
        applied=effective.policies,
        namespace=effective.namespace,
        kmap=resolution.kmap,
        devices=context.devices,
    )
    return kept, waiver_lines(waived)
