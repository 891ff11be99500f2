"""Volcano's lifecycle policies form: ``LifecyclePolicies`` (the job's and its tasks' ``policies``)."""

from __future__ import annotations

from dataclasses import dataclass

from jobgate.families.volcano.forms.base import ITEM_NOT_NAMED
from jobgate.forms.base import (
    Declaration,
    Declarations,
    escape_detail,
    exact_detail,
    split_message,
)
from jobgate.forms.catalogue import (
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
from jobgate.forms.fields import field_steps, render_steps

# The rules of a LifecyclePolicies, ``<id>/<name>``, in the order its runtime check takes their ids.
LIFECYCLE_RULES = (
    "event-or-exit-code",
    "action",
    "events",
    "events-unique",
    "exit-code",
    "exit-codes-unique",
    "any-event-alone",
)


@dataclass(frozen=True)
class LifecyclePolicies(Declaration):
    """Lists of lifecycle policies (``lists``: ``spec.policies``, ``spec.tasks[*].policies``) as
    Volcano's validatePolicies checks each: a policy names events (``events``, ``event``) or an exit
    code, not both (``both``) and not neither (``neither``); a policy on events has an action of
    ``actions`` (``action``) and events of ``events`` (``event``), each named by one policy of the list
    (``event_twice``, with ``{event}``); an exit code is not 0 (``zero``) and is named by one policy
    (``code_twice``, with ``{code}``); ``any_event`` is alone in its list (``not_alone``). Policy by
    policy, each stopping at its first problem of naming, as Volcano's loop. One declaration, a rule of
    the catalogue per check: ``<id>/event-or-exit-code``, ``/action``, ``/events``, ``/exit-code``,
    ``/events-unique``, ``/exit-codes-unique`` and ``/any-event-alone``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`LifecyclePolicies(id, lists, events, actions, any_event, both=, neither=, action=, event=, "
            "event_twice=, zero=, code_twice=, not_alone=)`",
            "lists of lifecycle policies checked as Volcano's validatePolicies: events or an exit code, not "
            "both; an action and events among the known ones; an event or exit code (not 0) named once in a "
            "list; the any-event alone; policy by policy, in Volcano's order",
            "per check: `Forbidden` at `exitCode`, `Required value` at the policy, `Invalid value` at the "
            "action, event or exit code, `Duplicate value` (`{event}`, `{code}`), `Invalid value` at the list",
            "a CRD rule per check on each policy or list: seven rules, `<id>/event-or-exit-code` ... "
            "`<id>/any-event-alone`",
        ),
    )

    id: str
    lists: tuple[str, ...]
    events: tuple[str, ...]
    actions: tuple[str, ...]
    any_event: str
    both: str
    neither: str
    action: str
    event: str
    event_twice: str
    zero: str
    code_twice: str
    not_alone: str

    def rules(self, decls: Declarations) -> list[Rule]:
        return _lifecycle_policies(self)

    def python_call(self) -> str:
        words = (
            self.both,
            self.neither,
            self.action,
            self.event,
            self.event_twice,
            self.zero,
            self.code_twice,
            self.not_alone,
        )
        return (
            f"lifecycle_policies(obj, lists={tuple(field_steps(p) for p in self.lists)!r}, events={self.events!r}, "
            f"actions={self.actions!r}, any_event={self.any_event!r}, words={words!r}, "
            f"rules={tuple(f'{self.id}/{name}' for name in LIFECYCLE_RULES)!r})"
        )

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "quadratic in a list's policies (its uniqueness rules), bounded by its maxItems")]


def _on_events(p: str) -> str:
    return f"((has({p}.events) && {p}.events.exists(e, e != '')) || (has({p}.event) && {p}.event != ''))"


def _names_event(p: str, event: str) -> str:
    return f"((has({p}.events) && {event} in {p}.events) || (has({p}.event) && {p}.event == {event}))"


def _checked_events(p: str) -> str:
    """A policy whose events Volcano counts: on events, without an exit code."""
    return f"({_on_events(p)} && !has({p}.exitCode))"


def _exit_code_only(p: str) -> str:
    return f"(!{_on_events(p)} && has({p}.exitCode))"


def _lifecycle_policies(d: LifecyclePolicies) -> list[Rule]:
    """A rule per check: what a policy says on the policy, what the policies of a list say together
    on the list, which the apiserver names (a rule on a list cannot name the item)."""
    places = []
    for path in d.lists:
        steps = field_steps(path)
        places.append((tuple({"[*]": LIST_ITEMS}.get(s, s) for s in steps), render_steps(steps)))
    events, actions = cel_list(d.events), cel_list(d.actions)
    checked = _checked_events("self")

    def each(check: str, at: Location, message: str, field_path: str = "", reason: str = "") -> Placement:
        return Placement(
            (*at, LIST_ITEMS), validation=Validation(rule=check, message=message, field_path=field_path, reason=reason)
        )

    def rule(name: str, summary: str, produces: list[Produces], placements: list[Placement], why: str = "") -> Rule:
        return Rule(f"{d.id}/{name}", summary, Where.CRD_RULE, tuple(produces), tuple(placements), why=why)

    twice = f"self.filter(p, {_checked_events('p')} && {_names_event('p', 'e')}).size() > 1"
    event_before, event_after = split_message(d.event_twice, "event")
    code_before, _ = split_message(d.code_twice, "code")
    any_event = cel_string(d.any_event)
    other = (
        f"((has(p.events) && p.events.exists(e, e != '' && e != {any_event})) || "
        f"(has(p.event) && p.event != '' && p.event != {any_event}))"
    )
    return [
        rule(
            "event-or-exit-code",
            "a policy names events or an exit code, not both",
            [
                p
                for _, path in places
                for p in (
                    Produces(f"{path}[*]", "REQUIRED", exact_detail(d.neither)),
                    Produces(f"{path}[*].exitCode", "FORBIDDEN", exact_detail(d.both)),
                )
            ],
            [
                p
                for at, _ in places
                for p in (
                    each(f"{_on_events('self')} || has(self.exitCode)", at, d.neither, reason="FieldValueRequired"),
                    each(
                        f"!({_on_events('self')} && has(self.exitCode))",
                        at,
                        d.both,
                        field_path=".exitCode",
                        reason="FieldValueForbidden",
                    ),
                )
            ],
        ),
        rule(
            "action",
            "a policy on events has an action of " + ", ".join(d.actions),
            [Produces(f"{path}[*].action", "INVALID", exact_detail(d.action)) for _, path in places],
            [
                each(f"!{checked} || (has(self.action) && self.action in {actions})", at, d.action, ".action")
                for at, _ in places
            ],
        ),
        rule(
            "events",
            "a policy's events are " + ", ".join(d.events),
            [
                p
                for _, path in places
                for p in (
                    Produces(f"{path}[*].events[*]", "INVALID", exact_detail(d.event), apiserver_drops=1),
                    Produces(f"{path}[*].event", "INVALID", exact_detail(d.event)),
                )
            ],
            [
                p
                for at, _ in places
                for p in (
                    each(
                        f"!{checked} || !has(self.events) || self.events.all(e, e == '' || e in {events})",
                        at,
                        d.event,
                        ".events",
                    ),
                    # An event also in ``events`` is reported there only.
                    each(
                        f"!{checked} || !has(self.event) || self.event == '' || "
                        f"(has(self.events) && self.event in self.events) || self.event in {events}",
                        at,
                        d.event,
                        ".event",
                    ),
                )
            ],
            why="an unknown one in events is reported at the list (a rule on a list cannot name the item)",
        ),
        rule(
            "exit-code",
            "a policy's exit code is not 0",
            [Produces(f"{path}[*].exitCode", "INVALID", exact_detail(d.zero)) for _, path in places],
            [
                each(f"{_on_events('self')} || !has(self.exitCode) || self.exitCode != 0", at, d.zero, ".exitCode")
                for at, _ in places
            ],
        ),
        rule(
            "events-unique",
            "an event is named by one policy of the list at most",
            [
                p
                for _, path in places
                for p in (
                    Produces(f"{path}[*].events[*]", "DUPLICATE", "^" + escape_detail(event_before), apiserver_drops=3),
                    Produces(f"{path}[*].event", "DUPLICATE", "^" + escape_detail(event_before), apiserver_drops=2),
                )
            ],
            [
                Placement(
                    at,
                    validation=Validation(
                        rule=f"!{events}.exists(e, {twice})",
                        message_expression=f"{cel_string(event_before)} + {events}.filter(e, {twice})[0] + "
                        f"{cel_string(event_after)}",
                    ),
                )
                for at, _ in places
            ],
            why=ITEM_NOT_NAMED,
        ),
        rule(
            "exit-codes-unique",
            "an exit code is named by one policy of the list at most",
            [
                Produces(f"{path}[*].exitCode", "DUPLICATE", "^" + escape_detail(code_before), apiserver_drops=2)
                for _, path in places
            ],
            [
                Placement(
                    at,
                    validation=Validation(
                        rule=f"self.all(p, !{_exit_code_only('p')} || p.exitCode == 0 || "
                        f"self.exists_one(q, {_exit_code_only('q')} && q.exitCode == p.exitCode))",
                        # CEL's cost estimator cannot size string(int): the message cannot quote the code.
                        message=f"{code_before.strip()}: two policies of the list have the same exitCode",
                    ),
                )
                for at, _ in places
            ],
            why=ITEM_NOT_NAMED,
        ),
        rule(
            "any-event-alone",
            f"a list with a policy on {d.any_event} has no policy on another event",
            [Produces(path, "INVALID", exact_detail(d.not_alone)) for _, path in places],
            [
                Placement(
                    at,
                    validation=Validation(
                        rule=f"!self.exists(p, {_checked_events('p')} && {_names_event('p', any_event)}) || "
                        f"!self.exists(p, {_checked_events('p')} && {other})",
                        message=d.not_alone,
                    ),
                )
                for at, _ in places
            ],
        ),
    ]
