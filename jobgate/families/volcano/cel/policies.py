"""Lifecycle policies (``rules/families/volcano/policies.py``) for the apiserver: the job's and each
task's list, checked as Volcano's validatePolicies does.

A policy is *on events* when it names an event (``events`` or ``event``), else *on an exit code*.
What each policy says is checked on the policy; what the policies of a list say together (an
event or exit code twice, ``*`` beside other events) on the list, which the apiserver names.
"""

from __future__ import annotations

import re

from jobgate.families.volcano.cel.common import SPEC, TASK
from jobgate.families.volcano.rules.policies import _VALID_LISTS, ANY_EVENT, USER_ACTIONS, USER_EVENTS
from jobgate.generate.cel.catalogue import (
    LIST_ITEMS,
    Location,
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_list,
    cel_string,
)

# Where policies are: (location of the list, its field path with wildcards).
PLACES: tuple[tuple[Location, str], ...] = (
    ((*SPEC, "policies"), "spec.policies"),
    ((*TASK, "policies"), "spec.tasks[*].policies"),
)


def _on_events(p: str) -> str:
    return f"((has({p}.events) && {p}.events.exists(e, e != '')) || (has({p}.event) && {p}.event != ''))"


def _names_event(p: str, event: str) -> str:
    return f"((has({p}.events) && {event} in {p}.events) || (has({p}.event) && {p}.event == {event}))"


def _checked_events(p: str) -> str:
    """A policy whose events the webhook counts: on events, without an exit code."""
    return f"({_on_events(p)} && !has({p}.exitCode))"


def _exit_code_only(p: str) -> str:
    return f"(!{_on_events(p)} && has({p}.exitCode))"


def _each(check: str, at: Location, message: str, field_path: str = "", reason: str = "") -> Placement:
    """A validation of each policy of the list at ``at``."""
    return Placement(
        (*at, LIST_ITEMS), validation=Validation(rule=check, message=message, field_path=field_path, reason=reason)
    )


def policy_rules() -> list[Rule]:
    events = cel_list(USER_EVENTS)
    actions = cel_list(USER_ACTIONS)
    checked = _checked_events("self")
    rules = []

    def rule(rule_id: str, summary: str, produces: list[Produces], placements: list[Placement], why: str = "") -> None:
        rules.append(Rule(rule_id, summary, Where.CRD_RULE, tuple(produces), tuple(placements), why=why))

    rule(
        "volcano/policies/event-or-exit-code",
        "a policy names events or an exit code, not both",
        [
            p
            for _, path in PLACES
            for p in (
                Produces(f"{path}[*]", "REQUIRED", "^either event and exitCode should be specified$"),
                Produces(f"{path}[*].exitCode", "FORBIDDEN", "^must not specify event and exitCode simultaneously$"),
            )
        ],
        [
            p
            for at, _ in PLACES
            for p in (
                _each(
                    f"{_on_events('self')} || has(self.exitCode)",
                    at,
                    message="either event and exitCode should be specified",
                    reason="FieldValueRequired",
                ),
                _each(
                    f"!({_on_events('self')} && has(self.exitCode))",
                    at,
                    message="must not specify event and exitCode simultaneously",
                    field_path=".exitCode",
                    reason="FieldValueForbidden",
                ),
            )
        ],
    )
    rule(
        "volcano/policies/action",
        "a policy on events has an action of " + ", ".join(USER_ACTIONS),
        [Produces(f"{path}[*].action", "INVALID", "^invalid policy action; ") for _, path in PLACES],
        [
            _each(
                f"!{checked} || (has(self.action) && self.action in {actions})",
                at,
                message=f"invalid policy action; {_VALID_LISTS}",
                field_path=".action",
            )
            for at, _ in PLACES
        ],
    )
    rule(
        "volcano/policies/events",
        "a policy's events are " + ", ".join(USER_EVENTS),
        [
            p
            for _, path in PLACES
            for p in (
                Produces(f"{path}[*].events[*]", "INVALID", "^invalid policy event; ", apiserver_drops=1),
                Produces(f"{path}[*].event", "INVALID", "^invalid policy event; "),
            )
        ],
        [
            p
            for at, _ in PLACES
            for p in (
                _each(
                    f"!{checked} || !has(self.events) || self.events.all(e, e == '' || e in {events})",
                    at,
                    message=f"invalid policy event; {_VALID_LISTS}",
                    field_path=".events",
                ),
                # An event also in ``events`` is reported there only.
                _each(
                    f"!{checked} || !has(self.event) || self.event == '' || "
                    f"(has(self.events) && self.event in self.events) || self.event in {events}",
                    at,
                    message=f"invalid policy event; {_VALID_LISTS}",
                    field_path=".event",
                ),
            )
        ],
        why="an unknown one in events is reported at the list (a rule on a list cannot name the item)",
    )
    rule(
        "volcano/policies/exit-code",
        "a policy's exit code is not 0",
        [Produces(f"{path}[*].exitCode", "INVALID", "^0 is not a valid error code$") for _, path in PLACES],
        [
            _each(
                f"{_on_events('self')} || !has(self.exitCode) || self.exitCode != 0",
                at,
                message="0 is not a valid error code",
                field_path=".exitCode",
            )
            for at, _ in PLACES
        ],
    )
    twice = f"self.filter(p, {_checked_events('p')} && {_names_event('p', 'e')}).size() > 1"
    rule(
        "volcano/policies/events-unique",
        "an event is named by one policy of the list at most",
        [
            p
            for _, path in PLACES
            for p in (
                Produces(f"{path}[*].events[*]", "DUPLICATE", "^duplicate event ", apiserver_drops=3),
                Produces(f"{path}[*].event", "DUPLICATE", "^duplicate event ", apiserver_drops=2),
            )
        ],
        [
            Placement(
                at,
                validation=Validation(
                    rule=f"!{events}.exists(e, {twice})",
                    message_expression=f"'duplicate event ' + {events}.filter(e, {twice})[0] + "
                    "'  across different policy'",
                ),
            )
            for at, _ in PLACES
        ],
        why="reported at the list (a rule on a list cannot name the item)",
    )
    rule(
        "volcano/policies/exit-codes-unique",
        "an exit code is named by one policy of the list at most",
        [Produces(f"{path}[*].exitCode", "DUPLICATE", "^duplicate exitCode ", apiserver_drops=2) for _, path in PLACES],
        [
            Placement(
                at,
                validation=Validation(
                    rule=f"self.all(p, !{_exit_code_only('p')} || p.exitCode == 0 || "
                    f"self.exists_one(q, {_exit_code_only('q')} && q.exitCode == p.exitCode))",
                    # CEL's cost estimator cannot size string(int): the message cannot quote the code.
                    message="duplicate exitCode: two policies of the list have the same exitCode",
                ),
            )
            for at, _ in PLACES
        ],
        why="reported at the list (a rule on a list cannot name the item)",
    )
    any_event = cel_string(ANY_EVENT)
    other = (
        f"((has(p.events) && p.events.exists(e, e != '' && e != {any_event})) || "
        f"(has(p.event) && p.event != '' && p.event != {any_event}))"
    )
    rule(
        "volcano/policies/any-event-alone",
        "a list with a policy on * has no policy on another event",
        [
            Produces(path, "INVALID", "^" + re.escape("if there's * here, no other policy should be here"))
            for _, path in PLACES
        ],
        [
            Placement(
                at,
                validation=Validation(
                    rule=f"!self.exists(p, {_checked_events('p')} && {_names_event('p', any_event)}) || "
                    f"!self.exists(p, {_checked_events('p')} && {other})",
                    message="if there's * here, no other policy should be here",
                ),
            )
            for at, _ in PLACES
        ],
    )
    return rules
