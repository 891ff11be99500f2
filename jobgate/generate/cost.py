"""``python -m jobgate.generate.cost``: how the apiserver's check of each generated rule grows with
the lists it reads, one line per rule.

First the declared rules (``jobgate/forms/base.py``, ``Declarations.cost``), then every CEL
expression the generator writes for the apiserver: CRD rules (``x-kubernetes-validations``), the
ValidatingAdmissionPolicies' validations, the MutatingAdmissionPolicies' mutations and match
condition. Each expression is read, not run: its comprehensions (``all``, ``exists``, ``map``, ...)
and native scans of a list (``indexOf``, ``lastIndexOf``, ``in`` of a bound list) are found, and a
comprehension inside another over a list that does not come from the outer one's item is a product
of two lists (``quadratic``) — the cost that made one CRD rule 0.8 s of apiserver CPU at the
pod-template bounds. A comprehension over an item's own list (``containers.all(c, c.ports...)``) is
a walk of the object: linear in its size. A native scan inside a comprehension compares values
already converted, with no field read: ``native n²`` (bounded by the list's ``maxItems``)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from jobgate.engine.registry import JobKind
from jobgate.forms.catalogue import LIST_ITEMS, MAP_VALUES, Location, Where
from jobgate.forms.python_text import cost_report
from jobgate.generate.cel.generate import family_defaults, family_rules, patches_nonempty, rules_for
from jobgate.generate.manifests import declared_kinds, every_family_kind

ITERATING = ("all", "exists", "exists_one", "map", "filter", "transformList", "transformMap")
BINDING = ("optMap", "bind")
SCANNING = ("indexOf", "lastIndexOf")
_CALL = re.compile(r"\.(" + "|".join(ITERATING + BINDING + SCANNING) + r")\(")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IN = re.compile(r"\bin\s+([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*[.\[(])")


def _masked(expression: str) -> str:
    """``expression`` with the text of its string literals blanked (same length, no brackets)."""
    out = list(expression)
    i = 0
    while i < len(expression):
        quote = expression[i]
        if quote in "'\"":
            j = i + 1
            while j < len(expression) and expression[j] != quote:
                if expression[j] == "\\":
                    out[j] = "_"
                    j += 1
                out[j] = "_"
                j += 1
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _closing(text: str, opening: int) -> int:
    """The index of the bracket closing the one at ``opening``."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[text[opening]]]
    for i in range(opening + 1, len(text)):
        if text[i] in pairs:
            stack.append(pairs[text[i]])
        elif text[i] in ")]}":
            stack.pop()
            if not stack:
                return i
    raise ValueError(f"unbalanced expression: {text!r}")


def _receiver_start(text: str, dot: int) -> int:
    """Where the receiver of the call whose ``.`` is at ``dot`` begins."""
    openings = {")": "(", "]": "[", "}": "{"}
    i = dot - 1
    while i >= 0:
        ch = text[i]
        if ch in openings:
            depth = 0
            while i >= 0:
                if text[i] in openings:
                    depth += 1
                elif text[i] in "([{":
                    depth -= 1
                    if depth == 0:
                        break
                i -= 1
            i -= 1
        elif ch.isalnum() or ch in "_.":
            i -= 1
        else:
            break
    return i + 1


@dataclass(frozen=True)
class Call:
    name: str
    receiver: str
    variables: tuple[str, ...]
    start: int  # of the arguments
    end: int


def _one_item_list(receiver: str) -> bool:
    """A list literal of one item: ``[x]``."""
    if not (receiver.startswith("[") and _closing(receiver, 0) == len(receiver) - 1):
        return False
    depth = 0
    for ch in receiver[1:-1]:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            return False
    return True


def calls(expression: str) -> list[Call]:
    """The comprehensions, bindings and native scans of ``expression``."""
    text = _masked(expression)
    found = []
    for match in _CALL.finditer(text):
        name, dot, opening = match.group(1), match.start(), match.end() - 1
        closing = _closing(text, opening)
        receiver = text[_receiver_start(text, dot) : dot]
        arguments = text[opening + 1 : closing]
        variables: tuple[str, ...] = ()
        if name not in SCANNING:
            # A macro's leading arguments name its variables (two for map's filter form is one).
            names = [a.strip() for a in arguments.split(",")[:2]]
            count = 2 if name in ("transformList", "transformMap") else 1
            variables = tuple(n for n in names[:count] if _IDENTIFIER.fullmatch(n))
        if name in ITERATING and _one_item_list(receiver):
            name = "bind"  # [value].all(name, ...): a binding (catalogue.bound), no iteration
        found.append(Call(name, receiver, variables, opening, closing))
    return found


def growth(expression: str) -> str:
    """How the apiserver's evaluation of ``expression`` grows with the lists it reads."""
    found = calls(expression)
    text = _masked(expression)
    iterating = [c for c in found if c.name in ITERATING]
    if not iterating:
        return "constant"
    products: list[str] = []
    native: list[str] = []
    bound_lists = {v for c in found if c.name in BINDING for v in c.variables}

    def enclosing(position: int) -> list[Call]:
        return [c for c in iterating if c.start < position < c.end]

    def independent(receiver: str, outer: Call) -> bool:
        # Of the outer loop's item (or a variable bound inside it), the list is a part of the item.
        inside = {v for c in found if outer.start < c.start < outer.end for v in c.variables}
        names = set(_IDENTIFIER.findall(receiver))
        return not receiver.lstrip("(").startswith("[") and not names & {*outer.variables, *inside}

    for call in iterating:
        for outer in enclosing(call.start):
            if independent(call.receiver, outer):
                products.append(f"{_short(outer.receiver)} x {_short(call.receiver)}")
    scans = [(c.receiver, c.start) for c in found if c.name in SCANNING]
    scans += [(m.group(1), m.start()) for m in _IN.finditer(text) if m.group(1) in bound_lists]
    for receiver, position in scans:
        for outer in enclosing(position):
            if receiver not in outer.variables:
                native.append(f"{_short(outer.receiver)} x {_short(receiver)}")
    if products:
        return "quadratic: " + "; ".join(sorted(set(products)))
    if native:
        return "linear field reads, native compares " + "; ".join(sorted(set(native)))
    return "linear"


def _short(text: str, limit: int = 48) -> str:
    text = re.sub(r"\s+", " ", text.strip())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _location(at: Location) -> str:
    return "/".join({MAP_VALUES: "*", LIST_ITEMS: "[]"}.get(step, step) for step in at) or "(root)"


def expressions(kind: JobKind) -> Iterator[tuple[str, str, str, str]]:
    """(placement, rule or default id, the CEL run on every request, the CEL run only to word a
    refusal or '') of every expression generated for the kind."""
    rules = family_rules(kind)
    if rules is None:
        return
    for rule in rules_for(kind):
        if not rule.where.in_apiserver:
            continue
        where = "VAP" if rule.where is Where.POLICY else "CRD rule"
        for placement in rule.placements:
            validation = placement.validation
            if validation is None:
                continue
            # A policy runs the rule, then (only when it fails) the message: policy_message's
            # "rule ? '' : message" reads the same as the rule on a request it admits.
            yield f"{where} at {_location(placement.at)}", rule.id, validation.rule, validation.message_expression
        for check in rule.policy:
            yield "VAP", rule.id, check.message, ""
    patches = []
    for default in family_defaults(kind) or ():
        if not default.where.in_apiserver:
            continue
        for patch in default.patches:
            patches.append(patch)
            yield "MAP mutation", default.id, patch, ""
    if patches:
        yield "MAP match condition", "(every default)", patches_nonempty(patches), ""


def generated_report(kinds: Iterable[JobKind]) -> list[str]:
    lines = []
    for kind in kinds:
        for where, owner, expression, message in expressions(kind):
            line = f"{kind.gvk.kind} ({kind.gvk.group}) {where} {owner}: {growth(expression)}"
            if message and growth(message) != "constant":
                line += f" (its message, on a refusal only: {growth(message)})"
            lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobgate.generate.cost", description=__doc__)
    parser.add_argument("--quadratic", action="store_true", help="only the generated rules found quadratic")
    args = parser.parse_args(argv)
    kinds = every_family_kind()
    lines = [] if args.quadratic else cost_report(declared_kinds(kinds))
    generated = generated_report(kinds)
    lines += [line for line in generated if not args.quadratic or ": quadratic" in line.split(" (its message")[0]]
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
