"""Volcano's volumes form: ``ClaimVolumes`` (a mount path, a claim or a new claim, each once)."""

from __future__ import annotations

from dataclasses import dataclass

from jobgate.families.volcano.forms.base import ITEM_NOT_NAMED, _create_only
from jobgate.forms.base import (
    Declaration,
    Declarations,
    escape_detail,
    exact_detail,
    path_steps,
    split_message,
)
from jobgate.forms.catalogue import (
    LIST_ITEMS,
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_raw_string,
    cel_string,
)
from jobgate.rules.names import (
    DNS1123_SUBDOMAIN,
    DNS1123_SUBDOMAIN_MESSAGE,
    SUBDOMAIN_MAX_LENGTH,
    max_length_message,
)

# The rules of a ClaimVolumes, ``<id>/<name>``, in the order its runtime check takes their ids.
CLAIM_VOLUME_RULES = ("mount-path", "mount-paths-unique", "claim-required", "claim-conflict", "claim-name")


@dataclass(frozen=True)
class ClaimVolumes(Declaration):
    """A list of volumes mounted at ``mount`` and backed by a claim, ``claim`` (one to create) or
    ``claim_name`` (one that exists), as Volcano's validateIO checks each, volume by volume: the
    mount path set (``mount_required``; "" is also too short, in the apiserver's words) and once in
    the list (``mount_twice``, with ``{path}``); a claim or a claim's name (``neither``), not both
    (``both``: CREATE only, the controller writes the name of the claim it creates); a claim's name
    a DNS-1123 subdomain (``bad_name``, with ``{name}`` and ``{problems}``). One declaration, a rule
    of the catalogue per check: ``<id>/mount-path``, ``/mount-paths-unique``, ``/claim-required``,
    ``/claim-conflict`` and ``/claim-name``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`ClaimVolumes(id, list, mount, claim, claim_name, mount_required=, mount_twice=, neither=, "
            "both=, bad_name=)`",
            "volumes checked as Volcano's validateIO, volume by volume: a mount path, once in the list; a "
            "claim or a claim's name, not both (CREATE only); the claim's name a DNS-1123 subdomain",
            'per check: `Invalid value` (`""`: too short, the apiserver\'s words) and `Required value` at the '
            "mount path, `Duplicate value` (`{path}`), `Required value` at the volume, `Invalid value` at "
            "the claim's name (`{name}`, `{problems}`)",
            "five rules, `<id>/mount-path` (`minLength`) ... `<id>/claim-name`, CRD rules on each volume, "
            "the list or its parent",
        ),
    )

    id: str
    list: str
    mount: str
    claim: str
    claim_name: str
    mount_required: str
    mount_twice: str
    neither: str
    both: str
    bad_name: str

    def rules(self, decls: Declarations) -> list[Rule]:
        return _claim_volumes(self)

    def python_call(self) -> str:
        words = (self.mount_required, self.mount_twice, self.neither, self.both, self.bad_name)
        fields = (self.mount, self.claim, self.claim_name)
        rules = tuple(f"{self.id}/{name}" for name in CLAIM_VOLUME_RULES)
        return f"claim_volumes(obj, {path_steps(self.list)!r}, fields={fields!r}, words={words!r}, rules={rules!r})"

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "quadratic in the volumes (distinct mount paths), bounded by their maxItems")]


def _claim_volumes(d: ClaimVolumes) -> list[Rule]:
    """A rule per check: on each volume where it can name the field, else on the list or its parent."""
    parent, name = d.list.rsplit(".", 1)
    items = (*path_steps(d.list), LIST_ITEMS)
    mount, claim, claim_name = d.mount, d.claim, d.claim_name
    before_twice, after_twice = split_message(d.mount_twice, "path")
    first_twice = (
        f"self.map(v, has(v.{mount}) ? v.{mount} : '')"
        f".filter(p, p != '' && self.filter(w, has(w.{mount}) && w.{mount} == p).size() > 1)[0]"
    )
    name_set = f"has(self.{claim_name}) && self.{claim_name} != ''"
    before_name, rest = split_message(d.bad_name, "name")
    between, after = split_message(rest, "problems")
    too_long = max_length_message(SUBDOMAIN_MAX_LENGTH)
    return [
        Rule(
            f"{d.id}/mount-path",
            "a volume has a mount path",
            Where.SCHEMA,
            (
                Produces(f"{d.list}[*].{mount}", "REQUIRED", exact_detail(d.mount_required)),
                Produces(f"{d.list}[*].{mount}", "INVALID", "should be at least 1 chars long$"),
            ),
            (Placement((*items, mount), {"minLength": 1}),),
            why="as Volcano's CRD does it (required, minLength 1)",
        ),
        Rule(
            f"{d.id}/mount-paths-unique",
            "volumes have distinct mount paths",
            Where.CRD_RULE,
            (Produces(f"{d.list}[*].{mount}", "DUPLICATE", "^" + escape_detail(before_twice), apiserver_drops=2),),
            (
                Placement(
                    path_steps(d.list),
                    validation=Validation(
                        rule=f"self.all(v, !has(v.{mount}) || v.{mount} == '' || "
                        f"self.exists_one(w, has(w.{mount}) && w.{mount} == v.{mount}))",
                        message_expression=f"{cel_string(before_twice)} + {first_twice} + {cel_string(after_twice)}",
                    ),
                ),
            ),
            why=ITEM_NOT_NAMED,
        ),
        Rule(
            f"{d.id}/claim-required",
            f"a volume has a {claim} or a {claim_name}",
            Where.CRD_RULE,
            (Produces(f"{d.list}[*]", "REQUIRED", exact_detail(d.neither)),),
            (
                Placement(
                    items,
                    validation=Validation(
                        rule=f"has(self.{claim}) || ({name_set})", message=d.neither, reason="FieldValueRequired"
                    ),
                ),
            ),
        ),
        Rule(
            f"{d.id}/claim-conflict",
            f"a volume has a {claim} or a {claim_name}, not both",
            Where.CRD_RULE,
            (Produces(f"{d.list}[*].{claim_name}", "INVALID", exact_detail(d.both), apiserver_drops=2),),
            (
                Placement(
                    path_steps(parent),
                    validation=Validation(
                        rule=_create_only(
                            f"!has(self.{name}) || !self.{name}.exists(v, has(v.{claim}) && "
                            f"has(v.{claim_name}) && v.{claim_name} != '')",
                            True,
                        ),
                        message=d.both,
                        field_path=f".{name}",
                        optional_old_self=True,
                    ),
                ),
            ),
            why="CREATE only (the controller writes the name of the claim it creates); reported at the volumes "
            "(a rule on a list cannot name the item)",
        ),
        Rule(
            f"{d.id}/claim-name",
            f"a {claim_name} (without a {claim}) is a DNS-1123 subdomain",
            Where.CRD_RULE,
            (Produces(f"{d.list}[*].{claim_name}", "INVALID", "^" + escape_detail(before_name)),),
            tuple(
                Placement(
                    items,
                    validation=Validation(
                        rule=f"has(self.{claim}) || !({name_set}) || {rule}",
                        message_expression=f"{cel_string(before_name)} + self.{claim_name} + "
                        f"{cel_string(between + problem + after)}",
                        field_path=f".{claim_name}",
                    ),
                )
                for rule, problem in (
                    (f"size(self.{claim_name}) <= {SUBDOMAIN_MAX_LENGTH}", too_long),
                    (
                        f"self.{claim_name}.matches({cel_raw_string('^' + DNS1123_SUBDOMAIN + '$')})",
                        DNS1123_SUBDOMAIN_MESSAGE,
                    ),
                )
            ),
            why=f"not with a {claim}, whose claim's name the controller writes on UPDATE",
        ),
    ]
