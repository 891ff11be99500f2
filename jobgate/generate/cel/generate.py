"""From the catalogue to the apiserver: CRD schemas with the rules' keywords and CEL, the policies,
and the table of where each rule is enforced.
"""

from __future__ import annotations

import copy
import functools
import importlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

from jobgate.engine.registry import JobKind
from jobgate.families import family as family_record
from jobgate.forms.base import Declarations
from jobgate.forms.catalogue import (
    LIST_ITEMS,
    MAP_VALUES,
    Default,
    Location,
    Placement,
    PolicyValidation,
    Rule,
    Where,
    policy_message,
)
from jobgate.generate.cel.jobmeta import job_name_rule, schema_rules
from jobgate.generate.cel.podtemplate import pod_template_schema

POD_TEMPLATE_DESCRIPTION_START = "Pod template ("
NAME_MAX_LENGTH = 253


class CatalogueError(ValueError):
    """A rule that does not fit the schema it is generated into."""


def family_rules(kind: JobKind) -> list[Rule] | None:
    """The family's own rules for the kind, its declared ones in their places (its CEL module's
    ``rules(kind, declared)``); None when the family has no CEL module (webhook only)."""
    module = family_record(kind.family).cel
    if module is None:
        return None
    declared = family_declarations(kind) or Declarations(())
    rules: list[Rule] = importlib.import_module(module).rules(kind, declared)
    return rules


def family_defaults(kind: JobKind) -> list[Default] | None:
    """The family's defaults for the kind: its CEL module's own (``defaults(kind)``), then the declared
    ones; None when the family has no CEL module (webhook only)."""
    module = family_record(kind.family).cel
    if module is None:
        return None
    declared = family_declarations(kind)
    defaults: list[Default] = importlib.import_module(module).defaults(kind)
    return [*defaults, *(declared.defaults() if declared is not None else ())]


def family_declarations(kind: JobKind) -> Declarations | None:
    """The kind's declarations compiled (the family record's ``declared`` module's ``DECLARED``), None
    when it declares none."""
    return _declarations(kind.family, kind.gvk.kind)


@functools.cache
def _declarations(family: str, kind: str) -> Declarations | None:
    module = family_record(family).declared
    if module is None:
        return None
    declared = importlib.import_module(module).DECLARED.get(kind)
    return None if declared is None else Declarations(declared)


def _shared_job_name_rule(own: list[Rule]) -> list[Rule]:
    """The shared rule of the job's name, unless the family gives its own (a rule of the same id)."""
    shared = job_name_rule()
    return [] if any(rule.id == shared.id for rule in own) else [shared]


def webhook_only_rules(kind: JobKind) -> list[Rule] | None:
    """The rules of a family without a CEL module (its record's ``catalogue``): ``Where.WEBHOOK``, or
    ``Where.POLICY`` for a policy over a peer's kind (Kubeflow's); None for a family with a CEL
    module or without a catalogue."""
    record = family_record(kind.family)
    if record.cel is not None or record.catalogue is None:
        return None
    rules: list[Rule] = importlib.import_module(record.catalogue).rules(kind)
    return rules


def _webhook_schema_rules(why: str) -> list[Rule]:
    """The structural schema's checks of a kind whose CRD jobgate does not ship: the webhook's."""
    return [Rule(r.id, r.summary, Where.WEBHOOK, r.produces, why=why) for r in schema_rules()]


def rules_for(kind: JobKind) -> list[Rule]:
    """Every rule of the kind, the specific ones first (an error is explained by the first that matches)."""
    own = family_rules(kind)
    listed = webhook_only_rules(kind) if own is None else None
    if listed is not None:
        reason = family_record(kind.family).webhook_only_reason or ""
        rules = [*listed, *_webhook_schema_rules(reason)]
    else:
        rules = [*(_shared_job_name_rule(own) if own is not None else []), *(own or []), *schema_rules()]
    seen: set[str] = set()
    for rule in rules:
        if rule.id in seen:
            raise CatalogueError(f"{kind.gvk}: rule {rule.id} is listed twice")
        seen.add(rule.id)
    return rules


def enforced_in_apiserver(kind: JobKind) -> bool:
    return family_rules(kind) is not None


# --- CRD schemas ------------------------------------------------------------------------------


def _node(schema: dict[str, Any], at: Location, kind: JobKind) -> dict[str, Any]:
    node = schema
    for step in at:
        if step == MAP_VALUES:
            child = node.get("additionalProperties")
        elif step == LIST_ITEMS:
            child = node.get("items")
        else:
            child = node.get("properties", {}).get(step)
        if not isinstance(child, dict):
            raise CatalogueError(f"{kind.gvk}: no schema at {'/'.join(at) or '(root)'} (stopped at {step!r})")
        node = child
    return node


def _template_locations(node: dict[str, Any], at: Location = ()) -> Iterable[Location]:
    if str(node.get("description", "")).startswith(POD_TEMPLATE_DESCRIPTION_START):
        yield at
        return
    for name, child in node.get("properties", {}).items():
        yield from _template_locations(child, (*at, name))
    if isinstance(node.get("additionalProperties"), dict):
        yield from _template_locations(node["additionalProperties"], (*at, MAP_VALUES))
    if isinstance(node.get("items"), dict):
        yield from _template_locations(node["items"], (*at, LIST_ITEMS))


def with_rules(kind: JobKind, root: dict[str, Any]) -> dict[str, Any]:
    """The CRD's openAPIV3Schema with the kind's rules: pod templates typed where the rules read
    them, keywords merged, CEL validations added. ``root`` is not modified."""
    rules = family_rules(kind)
    if rules is None:
        return root
    root = copy.deepcopy(root)
    for at in _template_locations(root):
        parent = _node(root, at[:-1], kind)
        key = at[-1]
        holder = parent["properties"] if key not in (MAP_VALUES, LIST_ITEMS) else parent
        slot = key if key not in (MAP_VALUES, LIST_ITEMS) else {"*": "additionalProperties", "[]": "items"}[key]
        holder[slot] = pod_template_schema(holder[slot]["description"])
    # The name is read by the rules on it (fieldPath .metadata.name must name a field of the schema).
    # maxLength: the apiserver's own limit of a name (a DNS-1123 subdomain), a bound for the cost estimate.
    root["properties"]["metadata"] = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": NAME_MAX_LENGTH},
            "generateName": {"type": "string", "maxLength": NAME_MAX_LENGTH},
        },
    }
    placed: list[tuple[str, Placement]] = [
        (r.id, p) for r in [*_shared_job_name_rule(rules), *rules] for p in r.placements
    ]
    placed += [(d.id, p) for d in family_defaults(kind) or () for p in d.placements]
    # A policy's rule keeps its keywords in the CRD; its validations go to the policy.
    policy_rules = {r.id for r in rules if r.where is Where.POLICY}
    for owner, placement in placed:
        node = _node(root, placement.at, kind)
        for keyword, value in placement.keywords.items():
            if keyword == "required":
                node["required"] = sorted({*node.get("required", ()), *value})
            elif keyword == "properties":
                # Fields a family's rules read beyond the shared ones (in a pod template): added, never replaced.
                known = node.setdefault("properties", {})
                if set(known) & set(value):
                    raise CatalogueError(f"{kind.gvk}: {owner} retypes {sorted(set(known) & set(value))}")
                known.update(copy.deepcopy(value))
            elif keyword in node and node[keyword] != value:
                raise CatalogueError(
                    f"{kind.gvk}: {owner} sets {keyword}={value!r} at {'/'.join(placement.at)}, "
                    f"where the schema has {node[keyword]!r}"
                )
            else:
                node[keyword] = value
        if placement.validation is not None and owner not in policy_rules:
            node.setdefault("x-kubernetes-validations", []).append(placement.validation.as_schema())
    return root


# --- admission policies ---------------------------------------------------------------------------

POLICY_PREFIX = "jobgate"


def policy_name(kind: JobKind) -> str:
    return f"{POLICY_PREFIX}.{kind.plural}.{kind.gvk.group}"


def _match(kind: JobKind) -> dict[str, Any]:
    return {
        "resourceRules": [
            {
                "apiGroups": [kind.gvk.group],
                "apiVersions": [kind.gvk.version],
                "resources": [kind.plural],
                "operations": ["CREATE", "UPDATE"],
            }
        ]
    }


def message_variable(index: int) -> str:
    """The name of the policy variable holding the message of the policy's ``index``-th validation."""
    return f"m{index}"


def validating_policy(kind: JobKind, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The kind's rules that no CRD rule can carry, as a ValidatingAdmissionPolicy
    (admissionregistration.k8s.io/v1, Kubernetes 1.30+) and its binding; [] when there is none."""
    # rules_for: a family's CEL module's rules, or a webhook-only family's catalogue (Kubeflow's policies).
    checks = [
        check
        for rule in rules_for(kind)
        if rule.where is Where.POLICY
        for check in [
            *rule.policy,
            *(
                PolicyValidation(policy_message(p.at, p.validation))
                for p in rule.placements
                if p.validation is not None
            ),
        ]
    ]
    if not checks:
        return []
    variables = {name: expression for c in checks for name, expression in c.variables}
    # Each message is written once, as a variable both the check and its message read: the apiserver
    # evaluates a variable once per request, and the policy's size (what an apply sends, stores and
    # compiles) is not doubled. The checks' own variables come first: a variable reads only earlier ones.
    messages = [(message_variable(i), c.message) for i, c in enumerate(checks)]
    if clash := sorted(variables.keys() & dict(messages).keys()):
        raise ValueError(f"{kind.gvk}: policy variables {clash} are named as the messages' variables")
    validations = [
        {"expression": f"variables.{name} == ''", "messageExpression": f"variables.{name}", "reason": "Invalid"}
        for name, _ in messages
    ]
    spec = {
        "matchConstraints": _match(kind),
        # A job the policy cannot evaluate (a field of the wrong type) is refused by the CRD's
        # schema before the policy runs; an evaluation error otherwise refuses the job.
        "failurePolicy": "Fail",
        "variables": [{"name": n, "expression": e} for n, e in [*sorted(variables.items()), *messages]],
        "validations": validations,
    }
    return _policy_and_binding(kind, "ValidatingAdmissionPolicy", spec, {"validationActions": ["Deny"]}, labels)


def _policy_and_binding(
    kind: JobKind, policy_kind: str, spec: dict[str, Any], binding: dict[str, Any], labels: dict[str, str]
) -> list[dict[str, Any]]:
    name = policy_name(kind)
    metadata = {"name": name, "labels": dict(labels)}
    version = "admissionregistration.k8s.io/v1"
    return [
        {"apiVersion": version, "kind": policy_kind, "metadata": metadata, "spec": spec},
        {
            "apiVersion": version,
            "kind": f"{policy_kind}Binding",
            "metadata": metadata,
            "spec": {"policyName": name, **binding},
        },
    ]


def _patch_literals(expression: str) -> tuple[str, list[str]]:
    """``expression`` with each ``JSONPatch{...}`` literal replaced by 0, and the literals' bodies."""
    out: list[str] = []
    literals: list[str] = []
    i = 0
    while i < len(expression):
        if expression.startswith("JSONPatch{", i) and (
            i == 0 or not (expression[i - 1].isalnum() or expression[i - 1] in "._")
        ):
            depth, j, quote = 0, i + len("JSONPatch"), ""
            while j < len(expression):
                ch = expression[j]
                if quote:
                    if ch == "\\":
                        j += 1
                    elif ch == quote:
                        quote = ""
                elif ch in "'\"":
                    quote = ch
                elif ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if depth != 0:
                raise CatalogueError(f"an unbalanced JSONPatch literal in {expression!r}")
            literals.append(expression[i + len("JSONPatch{") : j])
            out.append("0")
            i = j + 1
            continue
        ch = expression[i]
        out.append(ch)
        i += 1
        if ch in "'\"":
            # Copy the string literal whole: a JSONPatch{ inside quotes is text.
            while i < len(expression) and expression[i] != ch:
                if expression[i] == "\\":
                    out.append(expression[i])
                    i += 1
                out.append(expression[i])
                i += 1
            if i < len(expression):
                out.append(expression[i])
                i += 1
    return "".join(out), literals


def _without_patch_literals(expression: str) -> str:
    """``expression`` with each ``JSONPatch{...}`` literal replaced by 0: the same lists, by length,
    in CEL that a match condition (which has no JSONPatch type) compiles."""
    return _patch_literals(expression)[0]


def _top_level_fields(body: str) -> dict[str, str]:
    """The fields of a message literal's body (``op: 'add', path: ...``), by name."""
    fields: dict[str, str] = {}
    depth, quote, start = 0, "", 0
    for i, ch in enumerate(body + ","):
        if quote:
            if ch == quote and body[i - 1] != "\\":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            name, _, value = body[start:i].partition(":")
            fields[name.strip()] = value.strip()
            start = i + 1
    return fields


_STRING_LITERALS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_LAST_STRING = re.compile(r"'([^'\\]*)'$")


def _added_fields(patch: str) -> set[str] | None:
    """The names of the fields ``patch`` adds (the last step of each operation's path), or None
    when it does anything else (move, remove, replace) or adds at a path that ends in a variable."""
    added: set[str] = set()
    for literal in _patch_literals(patch)[1]:
        fields = _top_level_fields(literal)
        last = _LAST_STRING.search(fields.get("path", ""))
        steps = [s for s in last.group(1).split("/") if s] if last else []
        if fields.get("op") != "'add'" or not steps or "from" in fields:
            return None
        added.add(steps[-2] if steps[-1] == "-" and len(steps) > 1 else steps[-1])
    return added


def _reads(patch: str) -> set[str]:
    """Every identifier of ``patch`` outside string literals: the fields it may read."""
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _STRING_LITERALS.sub("''", _without_patch_literals(patch))))


def merged_mutations(patches: Sequence[str]) -> list[str]:
    """The patches as few mutations: consecutive patches that only add fields, none of which another
    of them reads, become one JSON patch (their lists joined); the others stay mutations of their own.

    The apiserver encodes, patches, decodes and defaults the whole job once per mutation, empty or
    not (38 ms of CPU for a job of 340 KB): seven mutations cost more than every rule of the CRD.
    Joined lists are what the mutations made one after another when no patch reads a field an
    earlier one adds: each sees the job as the one before it left it, apart from fields it ignores.
    A patch that moves, removes or replaces (the renaming of replica types) stays alone."""
    merged: list[str] = []
    group: list[str] = []
    added: set[str] = set()
    read: set[str] = set()

    def flush() -> None:
        if group:
            merged.append(group[0] if len(group) == 1 else " + ".join(f"({p})" for p in group))

    for patch in patches:
        fields, reads = _added_fields(patch), _reads(patch)
        if fields is None:
            flush()
            group, added, read = [], set(), set()
            merged.append(patch)
            continue
        if group and (added & reads or fields & read or added & fields):
            flush()
            group, added, read = [], set(), set()
        group.append(patch)
        added |= fields
        read |= reads
    flush()
    return merged


def patches_nonempty(patches: Iterable[str]) -> str:
    """CEL true when one of the mutations' patch lists is not empty (for a match condition)."""
    terms = []
    for patch in patches:
        plain = _without_patch_literals(patch)
        if "JSONPatch" in plain or "jsonpatch." in plain:
            raise CatalogueError(f"a patch reads the JSONPatch library outside a literal: {patch!r}")
        terms.append(f"size({plain}) > 0")
    return " || ".join(terms)


def mutating_policy(kind: JobKind, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The kind's defaults as a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes
    1.36+) and its binding; [] when none is applied by a policy."""
    patches = [patch for d in family_defaults(kind) or () if d.where.in_apiserver for patch in d.patches]
    if not patches:
        return []
    spec = {
        "matchConstraints": _match(kind),
        # The policy runs only when one of its patches is not empty: otherwise the apiserver encodes,
        # patches and decodes the whole job once per mutation for nothing, marks it changed, and runs
        # the policy a second time (reinvocation). Exact: when every patch is empty on the job as sent,
        # each mutation sees the job unchanged by those before it, so all of them were empty.
        "matchConditions": [{"name": "jobgate-defaults-missing", "expression": patches_nonempty(patches)}],
        # A patch that cannot apply (a job of the wrong shape) is skipped: the CRD's schema and
        # rules then refuse the job with its fields, rather than the policy with its own error.
        "failurePolicy": "Ignore",
        # Defaulting is idempotent: run again when a later mutation changed the job.
        "reinvocationPolicy": "IfNeeded",
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": p}} for p in merged_mutations(patches)],
    }
    return _policy_and_binding(kind, "MutatingAdmissionPolicy", spec, {}, labels)


# --- the table ------------------------------------------------------------------------------------


def enforcement_rows(kinds: Iterable[JobKind]) -> list[tuple[str, str, str, str, str]]:
    """(family, rule or default, summary, where, why) of every rule and default, once per family
    (a rule that differs by kind lists each kind's summary)."""
    rows: dict[tuple[str, str], tuple[str, list[str], str, str]] = {}
    for kind in kinds:
        if family_rules(kind) is None and webhook_only_rules(kind) is None:
            reason = (
                family_record(kind.family).webhook_only_reason
                or "no rule of this family is generated for the apiserver"
            )
            rows.setdefault(
                (kind.family, "(every rule)"),
                ("", ["every rule and default of the family"], Where.WEBHOOK.value, reason),
            )
            continue
        entries: list[Rule | Default] = [*rules_for(kind), *(family_defaults(kind) or ())]
        # A family without a CEL module whose catalogue puts no rule in the apiserver either.
        if family_rules(kind) is None and not any(entry.where.in_apiserver for entry in entries):
            rows.setdefault(
                (kind.family, "(every rule)"),
                ("", ["every rule and default of the family"], Where.WEBHOOK.value, entries[0].why if entries else ""),
            )
        for entry in entries:
            name = entry.id if isinstance(entry, Rule) else f"default: {entry.id}"
            _, summaries, _, _ = rows.setdefault((kind.family, name), (name, [], entry.where.value, entry.why))
            if entry.summary not in summaries:
                summaries.append(entry.summary)
    return [
        (family, name, "; ".join(summaries), where, why)
        for (family, name), (_, summaries, where, why) in sorted(rows.items())
    ]


def enforcement_summary(kinds: Iterable[JobKind]) -> list[tuple[str, int, int]]:
    """(family, rules and defaults, enforced in the apiserver) per family; a family left to the
    webhook counts as (family, 0, 0)."""
    counts: dict[str, list[int]] = {}
    rows = enforcement_rows(kinds)
    # A family left to the webhook lists its rules (for their ids) but counts as every rule.
    webhook_only = {family for family, name, _, _, _ in rows if name == "(every rule)"}
    for family, _, _, where, _ in rows:
        entry = counts.setdefault(family, [0, 0])
        if family not in webhook_only:
            entry[0] += 1
            entry[1] += where != Where.WEBHOOK.value
    return [(family, total, enforced) for family, (total, enforced) in sorted(counts.items())]
