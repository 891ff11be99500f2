"""Rule forms: a rule or default declared once, as data, and compiled to everything that enforces it.

A declaration names a form and its values (paths, bounds, roles, the message) and nothing else:
no CEL, no Python. ``jobgate/generate/forms.py`` compiles each one to

- the Python check: a call of the form's function (its runtime twin, ``jobgate/forms/checks/<group>.py``) written into
  ``jobgate/_generated/declared_rules.py`` by ``jobgate manifests generate``;
- its place in the apiserver: a schema keyword, a CRD rule or transition rule, a schema default
  and a MutatingAdmissionPolicy patch, with their CEL;
- the catalogue's record (``Rule``/``Default`` with ``Produces``): the field, the error type and the
  exact message, derived, never a hand-written pattern.

Paths are dotted from the object's root (``spec.replicaSpecs``). A list of *roles* (``Roles``) is a
list whose entries name what they are by a key field (``mxReplicaType``); a role rule reads the key
as the webhook reads it once defaulted, through the kind's declared default of that key.
``docs/rule-forms.md`` describes each form and how to add a rule of one.
"""

from __future__ import annotations

from dataclasses import dataclass

Scalar = int | str | bool
ScalarList = list[Scalar]
ScalarMap = dict[str, Scalar]


@dataclass(frozen=True)
class When:
    """A rule's condition: the field at ``path`` equals ``value``. For a field form the path may
    reach through the same list items and map values as the rule's own (``spec.tasks[*].type``):
    the condition is then read in the same entry."""

    path: str
    value: Scalar


@dataclass(frozen=True)
class Roles:
    """A list whose entries are roles named by ``key``; ``among`` the known roles (another value is
    the schema's to refuse, and counts for no rule)."""

    path: str
    key: str
    among: tuple[str, ...]


# --- defaults ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DefaultField:
    """A field set to ``value`` when unset (or, with ``empty_is_unset``, ""): a schema default, and a
    MutatingAdmissionPolicy patch for what a schema default cannot cover ("")."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultField(id, path, value, empty_is_unset=False)`",
            'the field set when unset (or "") under an object that exists',
            "— (a patch)",
            "schema `default` and a MutatingAdmissionPolicy patch",
        ),
        (
            "`DefaultField(..., unless=(path, ...))`",
            "the field set when unset and none of the other fields is set (a default another field replaces)",
            "— (a patch)",
            "a MutatingAdmissionPolicy patch only",
        ),
        (
            "`DefaultField(..., when_set=(path, ...))`",
            "the field set when unset and each of the other fields or map keys "
            "(`spec.marsReplicaSpecs[Worker]`) is there: a role's default; `DefaultField`s of one id are one "
            "default (an object when absent, else each of its fields)",
            "— (a patch)",
            "a MutatingAdmissionPolicy patch only",
        ),
    )

    id: str
    path: str
    value: Scalar | ScalarList | ScalarMap
    empty_is_unset: bool = False
    summary: str = ""
    # Fields (paths from the root) any of which, set, means no default: a default another field
    # replaces (XDLJob's minFinishWorkRate, unless minFinishWorkNum). A policy patch only: no schema
    # default can say it.
    unless: tuple[str, ...] = ()
    # Fields or map keys (``spec.marsReplicaSpecs[Worker]``) each of which must be there (a key even
    # when null) for the default to apply: a default of one role. A policy patch only, too. Defaults
    # that share an id are one default (an object when absent, else each of its fields).
    when_set: tuple[str, ...] = ()


@dataclass(frozen=True)
class DefaultItemField:
    """A field of every entry of the list at ``list`` set to ``value`` when unset (or "").

    A derived default: with ``from_field``, the value is the entry's ``from_field`` when that is one
    of ``value``'s strings (``value`` then a tuple); a policy patch only, no schema default can say it.
    Defaults of one list may share an ``id``: one default of the catalogue (an object and its fields).
    A ``list`` through ``{*}`` (``spec.replicaSpecs{*}.template.spec.containers``) is the list in each
    value of that map that holds one: a policy patch only, as its entries are in an object the CRD keeps
    whole (a pod template), which has no schema to hold a default."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultItemField(id, list, field, value, empty_is_unset=False, entry=...)`",
            "each entry's field set when unset; the defaults of one list are applied entry by entry in "
            "declaration order",
            "— (a patch)",
            "schema `default` on the items and a patch",
        ),
        (
            "`DefaultItemField(..., value=(values...), from_field=f)`",
            "derived: the entry's field copied from its field `f` when that is one of `values`",
            "— (a patch)",
            "a patch only",
        ),
        (
            "`DefaultItemField(..., value=[...])`",
            "a list value (a command), each entry its own copy",
            "— (a patch)",
            "schema `default` on the items and a patch",
        ),
        (
            '`DefaultItemField(..., list="spec.m{*}.template.spec.containers")`',
            "the list in each value of a map (one `{*}`): each replica's containers' "
            "`terminationMessagePolicy` (KubeDL's)",
            "— (a patch)",
            "a patch only (the pod template is kept whole, no schema to hold a default)",
        ),
        (
            '`DefaultItemField(..., field="a.b", value={...})`',
            "a field of an object of each entry (set when that object exists), an object value; defaults of "
            "one list may share an id: one default (an object when absent, else each of its fields)",
            "— (a patch)",
            "schema `default`s and a patch each",
        ),
    )

    id: str
    list: str
    # A field of the entry, or of an object of it ("restartPolicy.policy": set when that object exists).
    field: str
    # A list or object value ([...], {...}: of scalars) is written as a whole: a command, a policy.
    value: Scalar | tuple[str, ...] | ScalarList | ScalarMap
    empty_is_unset: bool = False
    # How the summary names an entry ("replica spec", "task").
    entry: str = "entry"
    from_field: str = ""
    summary: str = ""


# --- rules ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MaxItems:
    """Lists of at most so many entries, ``(path, limit)`` each (a schema keyword; a bound the CEL
    cost estimate needs)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`MaxItems(id, ((path, limit), ...))`",
            "lists of at most so many entries",
            "`Too many` at the list",
            "`maxItems`",
        ),
    )

    id: str
    lists: tuple[tuple[str, int], ...]
    summary: str = ""
    why: str = ""


@dataclass(frozen=True)
class UniqueBy:
    """No two entries of a list with the same ``key`` (the later one is the duplicate).

    Where the key is required by the schema and has no "" that a default reads as another value,
    it compiles to a list-map key (``x-kubernetes-list-type: map``), which the apiserver checks in
    linear time; otherwise to a CRD rule. ``among``: only these values count, and the list then has
    at most ``len(among)`` entries (a longer one holds a duplicate)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`UniqueBy(id, list, key, among=())`",
            "no two entries with the same key; the later one is the duplicate",
            "`Duplicate value` at `<list>[i].<key>`",
            'a list-map key (`x-kubernetes-list-type: map`), linear, when no default rereads "" as another '
            "key; otherwise a CRD rule through the default, the list bounded by `len(among)`",
        ),
        (
            "`UniqueBy(..., list_map=False)`",
            "as `UniqueBy`, for a list whose entries the key does not identify (or may lack it)",
            "`Duplicate value` at `<list>[i].<key>`",
            "a CRD rule on the list, quadratic, bounded by its `maxItems`",
        ),
    )

    id: str
    list: str
    key: str
    among: tuple[str, ...] = ()
    summary: str = ""
    # False: a CRD rule even where a list-map key could say it, for a list whose entries the key does
    # not identify for server-side apply (or whose key may be missing): no two entries with the same
    # non-empty key, reported at the list, bounded by the list's maxItems.
    list_map: bool = True


@dataclass(frozen=True)
class RequiredRoles:
    """When ``when`` holds, the list holds an entry of each of ``roles``; reported at the list,
    ``message`` formatted with ``{role}``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`RequiredRoles(id, summary, roles, (role...), message, when=When(path, value))`",
            "when the condition holds, an entry of each role",
            "`Required value` at the list, `{role}` in the message",
            "a CRD rule per role on the list's parent",
        ),
    )

    id: str
    summary: str
    of: Roles
    roles: tuple[str, ...]
    message: str
    when: When | None = None


@dataclass(frozen=True)
class ForbiddenRoles:
    """When ``when`` holds, the list holds no entry of ``roles``; reported at that entry's key."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`ForbiddenRoles(id, summary, roles, (role...), message, when=...)`",
            "when the condition holds, no entry of these roles",
            "`Invalid value` at the first entry's key",
            "a CRD rule on the list's parent",
        ),
    )

    id: str
    summary: str
    of: Roles
    roles: tuple[str, ...]
    message: str
    when: When | None = None


@dataclass(frozen=True)
class RoleFieldBound:
    """An integer field of the role's entry within [minimum, maximum] (an unset field passes).
    ``every``: of each entry of the role (a duplicate too), else of the first."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`RoleFieldBound(id, summary, roles, role, field, message, minimum=, maximum=, every=False, when=...)`",
            "an integer field of the role's first entry (`every`: of each) within bounds",
            "`Invalid value` at the field",
            "a CRD rule on the entry (`every`) or on the list's parent",
        ),
    )

    id: str
    summary: str
    of: Roles
    role: str
    field: str
    message: str
    minimum: int | None = None
    maximum: int | None = None
    every: bool = False
    when: When | None = None
    why: str = ""


@dataclass(frozen=True)
class AtMostSum:
    """The integer at ``path`` is at most the sum of ``field`` over the entries of ``list`` (an entry
    without it counts ``unset``; no list sums to 0): a count across replicas. ``update_message``:
    the words on UPDATE, when they differ (Volcano says it otherwise)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`AtMostSum(id, summary, path, list, field, message, unset=0)`",
            "an integer at most the sum of a field over a list's entries",
            "`Invalid value` at the integer",
            "a CRD rule on their parent",
        ),
    )

    id: str
    summary: str
    path: str
    list: str
    field: str
    message: str
    unset: int = 0
    update_message: str = ""


@dataclass(frozen=True)
class Immutable:
    """On UPDATE the field is neither set, removed nor changed (a CRD transition rule)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`Immutable(id, summary, path, message="field is immutable")`',
            "on UPDATE the field is neither set, removed nor changed (null counts as unset)",
            "`Forbidden` at the field",
            "a transition rule on `spec`, which every version of the job has",
        ),
    )

    id: str
    summary: str
    path: str
    message: str = "field is immutable"


# --- generic field forms ---------------------------------------------------------------------------
#
# A field form names its field by a path that may reach through every item of a list (``[*]``),
# every value of a map (``{*}``) and one key of a map (``[Master]``), e.g. ``spec.tasks[*].name``,
# ``spec.tfReplicaSpecs{*}.restartPolicy``, ``spec.pytorchReplicaSpecs[Master].replicas``. It
# checks the field under each object on the way that exists (a missing list or entry: nothing to
# check). ``path`` may be a tuple of such paths: one rule at each. Field forms that share an ``id``
# are one rule of the catalogue (a rule of two checks, e.g. a role that is present with one replica).
#
# Without a ``message`` (and a condition) a form says what the apiserver's schema keyword says, in
# its words, and compiles to that keyword; with one it compiles to a CRD rule with that message.


@dataclass(frozen=True)
class RequiredField:
    """When ``when`` holds, the field (or map key) is set (with ``empty_is_unset``, not "" either).
    ``Required value`` at the field, with ``message`` as its detail."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`RequiredField(id, summary, path, message="", empty_is_unset=False, when=...)`',
            "the field (or map key) is set under each object on the path that exists",
            "`Required value` at the field, `message` its detail",
            "the schema's `required` without a message or condition; otherwise a CRD rule on the field's object",
        ),
    )

    id: str
    summary: str
    path: str | tuple[str, ...]
    message: str = ""
    empty_is_unset: bool = False
    when: When | None = None
    why: str = ""
    # A string: another type is ``Invalid value: must be of type string`` (a field of an object the
    # CRD keeps whole, such as a pod template's, that no structural schema check reads).
    string: bool = False


@dataclass(frozen=True)
class ForbiddenField:
    """When ``when`` holds, the field (or map key) is not set (with ``empty_is_unset``, "" is unset).
    ``Forbidden`` at the field, with ``message``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`ForbiddenField(id, summary, path, message, empty_is_unset=False, when=...)`",
            "the field (or map key) is not set",
            "`Forbidden` at the field",
            "a CRD rule on the field's object",
        ),
    )

    id: str
    summary: str
    path: str | tuple[str, ...]
    message: str
    empty_is_unset: bool = False
    when: When | None = None
    why: str = ""


@dataclass(frozen=True)
class FieldBound:
    """An integer field within [minimum, maximum] (an unset one passes). ``Invalid value`` at the
    field: ``message``, or without one the apiserver's words for ``minimum``/``maximum``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`FieldBound(id, summary, path, minimum=, maximum=, message="", when=...)`',
            "an integer field within bounds (an unset one passes)",
            "`Invalid value` at the field: `message`, or the apiserver's `... in body should be greater than "
            "or equal to N`",
            "`minimum`/`maximum` without a message or condition; otherwise a CRD rule",
        ),
        (
            "`FieldBound(..., message=..., keyword=True)`",
            "a bound the webhook says in Kubernetes' words and the apiserver in its own",
            "`Invalid value: message`",
            "`minimum`/`maximum`",
        ),
    )

    id: str
    summary: str
    path: str | tuple[str, ...]
    minimum: int | None = None
    maximum: int | None = None
    message: str = ""
    when: When | None = None
    why: str = ""
    # An integer: another type is refused with ``message`` too (a field of an object the CRD keeps
    # whole, whose types no structural schema check reads).
    integer: bool = False
    # The schema's ``minimum``/``maximum`` even with a ``message``: the apiserver refuses the same
    # values in its own words (a pod's container port, which Kubernetes' validation words as the webhook does).
    keyword: bool = False


@dataclass(frozen=True)
class StringField:
    """A string field that matches ``pattern``, is ``min_length`` to ``max_length`` characters
    long and is one of ``enum`` (each when given; an unset field passes). Without ``message`` each
    check is its schema keyword, in the apiserver's words (``Unsupported value``, ``... in body
    should match '<pattern>'``, ``Too long``, ``... should be at least N chars long``); with one, a
    CRD rule whose ``Invalid value`` says ``message``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`StringField(id, summary, path, pattern=, min_length=, max_length=, enum=(), message="", when=...)`',
            "a string of the pattern (searched, as CEL and the schema do), lengths and values",
            "without `message` each check in its keyword's words (`... should match '<pattern>'`, `Too "
            "long`, `... should be at least N chars long`, `Unsupported value`); with one, `Invalid value: "
            "message`",
            "`pattern`, `minLength`, `maxLength`, `enum` without a message or condition; otherwise a CRD rule",
        ),
        (
            "`StringField(id, summary, path, label=True)`",
            'a DNS-1123 label; "" passes (a `RequiredField`\'s)',
            "`Invalid value` for each problem, in Kubernetes' validation's words",
            "`pattern` and `maxLength: 63` (the apiserver refuses the same values in its own words: no "
            "keyword says Kubernetes')",
        ),
        (
            '`StringField(id, summary, path, syntax="port-name"` or `"env-var-name")`',
            "as `label`, an IANA service name (a container port's) or an environment variable's name "
            "(printable ASCII but `=`)",
            "`Invalid value` for each problem, in Kubernetes' words; the record lists each message exactly",
            "`pattern` (and `maxLength: 15` for a port name)",
        ),
        (
            "`...(string=True)` on `RequiredField`, `StringField`; `FieldBound(integer=True)`",
            "a field of an object the CRD keeps whole (a pod template's), whose types no structural schema "
            "check reads: another type is refused",
            "`must be of type string` (`Unsupported value` with an `enum`); a bound's `message`",
            "the schema's `type`, given by the template's schema",
        ),
    )

    id: str
    summary: str
    path: str | tuple[str, ...]
    pattern: str = ""
    min_length: int | None = None
    max_length: int | None = None
    enum: tuple[str, ...] = ()
    message: str = ""
    when: When | None = None
    why: str = ""
    # A DNS-1123 label, each problem in Kubernetes' own words (its validation's, which no schema
    # keyword says: the keywords refuse the same values in theirs); "" passes (a RequiredField's).
    label: bool = False
    # Another name of Kubernetes' validation, as ``label``: "port-name" (IANA service name) or
    # "env-var-name" (printable ASCII but '='); "" passes (a RequiredField's).
    syntax: str = ""
    # A string: another type is refused, ``Unsupported value`` with an ``enum``, else ``Invalid value:
    # must be of type string`` (a field of an object the CRD keeps whole, whose types no structural
    # schema check reads).
    string: bool = False


@dataclass(frozen=True)
class AtMostOneOf:
    """Of the fields (or map keys, ``[Chief]``) of the object at ``path``, at most one is set.
    ``Forbidden`` at the object, with ``message``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`AtMostOneOf(id, summary, path, fields, message)`",
            "of the object's fields or map keys (`[Chief]`), at most one is set",
            "`Forbidden` at the object",
            "a CRD rule on the object",
        ),
    )

    id: str
    summary: str
    path: str
    fields: tuple[str, ...]
    message: str
    why: str = ""


FIELD_FORMS = (RequiredField, ForbiddenField, FieldBound, StringField, AtMostOneOf)
FieldForm = RequiredField | ForbiddenField | FieldBound | StringField | AtMostOneOf


# --- per-entry scopes --------------------------------------------------------------------------------
#
# A family (or the pod template) checks some rules entry by entry, interleaved with other errors of
# the same entry (a container's name, then its image, then its ports ...). A generated check that ran
# one declaration over the whole job would reorder the errors of a denial. A scope is a named set of
# field declarations whose paths are relative to one entry (``image``, ``ports[*].name``); it compiles
#
# - to ONE generated Python function, ``check_<name>(entry, path, errors, only=())``
#   (``jobgate/_generated/scoped_rules.py``), that the hand-written loop calls for each entry where
#   the old hand-written checks ran, so that the errors keep their order;
# - at every site where it is used (``ScopeSite``: the entries' path from the object's root, and the
#   words that fill the ids' and summaries' ``{placeholders}``), to the catalogue's records, their
#   placements and CEL, as the same declarations with the site's path in front.


@dataclass(frozen=True)
class Scope:
    """Field declarations (``RequiredField``, ``ForbiddenField``, ``FieldBound``, ``StringField``,
    ``AtMostOneOf``) whose paths are relative to one entry (``entry`` names it: "container"). Their
    ids and summaries may hold ``{placeholders}`` that each site fills (``pod-template/{list}/image``)."""

    name: str
    entry: str
    declared: tuple[FieldForm, ...]
    # Also ``check_each_<name>(items, path, errors)``: the checks over a whole list, for a loop that
    # reports nothing between its entries (one call per list, not per entry).
    each: bool = False


@dataclass(frozen=True)
class ScopeSite:
    """Where a scope's entries are: ``path`` from the object's root (``spec.tasks[*]``,
    ``spec.tfReplicaSpecs{*}.template.spec.containers[*]``) and ``names``, the words of its
    placeholders (``(("list", "containers"),)``)."""

    scope: Scope
    path: str
    names: tuple[tuple[str, str], ...] = ()


# --- forms only Volcano's rules use (jobgate/families/volcano/declared.py) ---------------------------
# Kept apart from the forms above so that the generic forms grow without touching these.


@dataclass(frozen=True)
class Acyclic:
    """The entries of ``list`` depend on others, named by ``depends`` (a list of names under each
    entry, ``dependsOn.name``) and found by ``key``: the names exist and form no cycle, as a
    topological sort (Kahn's) finds them. Each entry the sort leaves is reported at its
    dependencies in ``message``, with ``missing`` (``{names}``) when it names no entry. The CEL
    sorts in at most ``bound`` rounds: the list's maxItems. CREATE only with ``create_only``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`Acyclic(id, summary, list, key, depends, message, bound, missing="", create_only=False)`',
            "the entries' dependencies (a list of names under each entry, `dependsOn.name`) name entries by "
            "`key` and form no cycle (Kahn's algorithm, as Volcano's topological sort)",
            "`Invalid value` at each unsorted entry's dependencies, `missing` (`{names}`) added when it names no entry",
            "a CRD rule on the list's parent: the sort in `bound` rounds (the list's maxItems), each round "
            "bound once (`[x].all(s, ...)`: 1.30 has no `cel.bind`)",
        ),
    )

    id: str
    summary: str
    list: str
    key: str
    depends: str
    message: str
    bound: int
    missing: str = ""
    create_only: bool = False
    why: str = ""


@dataclass(frozen=True)
class KnownKeys:
    """The keys of the map at ``path`` are among ``keys``; each other key is reported at itself,
    ``message`` formatted with ``{key}``. The map then has at most ``len(keys)`` keys: its
    ``maxProperties``, which bounds the CEL cost."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`KnownKeys(id, summary, path, keys, message)`",
            "the map's keys are among `keys`",
            "`Invalid value` at the key (`spec.plugins[gang]`), `{key}` in the message",
            "`maxProperties: len(keys)` and a CRD rule on the map",
        ),
    )

    id: str
    summary: str
    path: str
    keys: tuple[str, ...]
    message: str
    why: str = ""


@dataclass(frozen=True)
class FixedCount:
    """On UPDATE the list at ``path`` keeps its number of entries (unset counts 0)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`FixedCount(id, summary, path, message)`",
            "on UPDATE the list keeps its number of entries (unset: 0)",
            "`Forbidden` at the list",
            "a transition rule on its parent",
        ),
    )

    id: str
    summary: str
    path: str
    message: str


@dataclass(frozen=True)
class Subdomain:
    """A string field, when set and not "", is a DNS-1123 subdomain: each problem (its length, its
    characters) reported in Kubernetes' words. CREATE only with ``create_only``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`Subdomain(id, summary, path, create_only=False)`",
            'a string (set, not "") is a DNS-1123 subdomain',
            "`Invalid value`, each problem in Kubernetes' words",
            "two CRD rules (length, pattern) on its parent",
        ),
    )

    id: str
    summary: str
    path: str
    create_only: bool = False
    why: str = ""


@dataclass(frozen=True)
class FlagNamesEntry:
    """A flag in the argument list ``map[name]`` (Go's syntax: ``--flag=v``, ``-flag=v``, ``--flag v``;
    ``default`` when it is not there or empty) names an entry of ``list`` by its ``key``. Reported at
    the arguments with ``message``; the map and the list are beside each other. The CEL walks at
    most ``bound`` arguments (their maxItems). CREATE only with ``create_only``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`FlagNamesEntry(id, summary, map, name, flag, default, list, key, message, bound, create_only=False)`",
            "a Go-syntax flag (`--flag=v`, `-flag v`) in the argument list `map[name]`, else `default`, "
            "names an entry of `list` by `key`",
            "`Invalid value` at `map[name]`",
            "a CRD rule on their parent, the arguments walked by index up to `bound`",
        ),
    )

    id: str
    summary: str
    map: str
    name: str
    flag: str
    default: str
    list: str
    key: str
    message: str
    bound: int
    create_only: bool = False
    why: str = ""


@dataclass(frozen=True)
class DefaultIndexed:
    """Each entry's ``field`` set, when unset (or, with ``empty_is_unset``, ""), to ``prefix`` and
    the entry's index (``default0``): a policy patch (no schema default knows the index)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultIndexed(id, summary, list, field, prefix, empty_is_unset=False)`",
            "each entry's field, when unset, the prefix and the entry's index (`default0`)",
            "— (a patch)",
            "a MutatingAdmissionPolicy patch",
        ),
    )

    id: str
    summary: str
    list: str
    field: str
    prefix: str
    empty_is_unset: bool = False


@dataclass(frozen=True)
class DefaultSum:
    """The integer at ``path`` set, when unset (or, with ``empty_is_unset``, 0) and the list exists,
    to the sum of ``field`` over the list's entries (an entry without it counts 0), read once they
    are defaulted: a policy patch after theirs."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultSum(id, summary, path, list, field, empty_is_unset=False)`",
            "the integer, when unset (or 0) and the list exists, the sum of the entries' field once they are defaulted",
            "— (a patch)",
            "a patch",
        ),
    )

    id: str
    summary: str
    path: str
    list: str
    field: str
    empty_is_unset: bool = False


@dataclass(frozen=True)
class ImpliedKeys:
    """Keys of the map at ``path`` that imply others (``implies``: (key, (implied key, ...)), ...):
    each implied key that is absent is added with an empty list (a policy patch)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`ImpliedKeys(id, summary, path, implies)`",
            "each absent key that a present key of the map implies, added with `[]`",
            "— (a patch)",
            "a patch",
        ),
    )

    id: str
    summary: str
    path: str
    implies: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Same:
    """``Unchanged``'s CEL: the field (dotted under the object compared) set in both and equal, or in
    neither; ``non_empty``: an empty list or map counts as unset."""

    field: str
    non_empty: bool = False


@dataclass(frozen=True)
class SameAll:
    """Each of ``parts`` the same (in parentheses with ``parens``)."""

    parts: tuple[Shape, ...]
    parens: bool = False


@dataclass(frozen=True)
class SameEach:
    """A list (unset and empty alike) of as many entries, each the same as ``item`` says; CEL walks at
    most ``bound`` indexes (its maxItems), by the variable ``<first letter>i``."""

    field: str
    bound: int
    item: Shape


@dataclass(frozen=True)
class SameUnlessBoth:
    """The field the same unless both objects have ``both`` (then another writes it: a controller)."""

    field: str
    both: str


Shape = Same | SameAll | SameEach | SameUnlessBoth


@dataclass(frozen=True)
class Unchanged:
    """On UPDATE nothing under ``path`` changes but its fields ``mutable``, the fields ``(list,
    fields)`` of each entry of its lists in ``mutable_entries``, and an entry's field ``(list, field,
    beside)`` in ``written`` when the entry has ``beside`` (another writes it). Compared as Go's
    semantic equality: unset, null, empty lists and objects alike, except in the Go maps ``maps``.
    Each change is reported (``Forbidden``, ``message``) down to ``depth`` levels below ``path``;
    not under ``counted`` when its entries are not as many (a ``FixedCount`` says that).

    The CEL cannot see into unknown fields, so it compares what ``fields`` lists, one transition
    rule each (``(field, shape)``), and with ``entries`` ``(list, bound, ((field, shape), ...))`` each
    field of the list's entries, one rule each, when the entries are as many."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`Unchanged(id, summary, path, message, mutable, mutable_entries, written, maps, depth, counted, "
            "fields, entries)`",
            "on UPDATE nothing under `path` changes but the fields `mutable`, the entries' fields of "
            "`mutable_entries` and a field `written` by another beside its `beside`; compared as Go's "
            "semantic equality (unset, null, empty alike, except in the Go maps `maps`)",
            "`Forbidden` at each change, down to `depth` levels below `path`; none under `counted` when its "
            "entries are not as many (a `FixedCount`'s)",
            "a transition rule per field of `fields` (`Same`, `SameAll`, `SameEach`, `SameUnlessBoth`) and "
            "per field of the entries of `entries` when they are as many: CEL cannot see into unknown fields",
        ),
    )

    id: str
    summary: str
    path: str
    message: str
    mutable: tuple[str, ...]
    mutable_entries: tuple[tuple[str, tuple[str, ...]], ...]
    written: tuple[tuple[str, str, str], ...]
    maps: tuple[str, ...]
    depth: int
    counted: str
    fields: tuple[tuple[str, Shape], ...]
    entries: tuple[str, int, tuple[tuple[str, Shape], ...]]
    why: str = ""


@dataclass(frozen=True)
class DefaultItemWhen:
    """Each entry's ``field`` (dotted under the entry, ``template.spec.dnsPolicy``: set when the
    objects on the way exist) set to ``value`` when unset (or, with ``empty_is_unset``, "") and the
    field ``when`` beside it (``When("hostNetwork", True)``) holds the value, of its type: a policy
    patch (no schema default has a condition)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultItemWhen(id, summary, list, field, value, when=When(beside, value), empty_is_unset=False)`",
            "each entry's field (`template.spec.dnsPolicy`, under objects that exist) set when unset and the "
            "field beside it holds the value, of its type (`hostNetwork: true`)",
            "— (a patch)",
            "a patch",
        ),
    )

    id: str
    summary: str
    list: str
    field: str
    value: Scalar
    when: When
    empty_is_unset: bool = False


@dataclass(frozen=True)
class DefaultItemProduct:
    """Each entry's integer ``field``, when unset, the product of ``factors`` (integer fields of the
    entry, dotted; unset counts 0) when the first is above 0, else its field ``otherwise`` (unset: 0):
    a policy patch (no schema default reads another field)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultItemProduct(id, summary, list, field, factors, otherwise)`",
            "each entry's integer, when unset, the product of its `factors` (unset: 0) when the first is "
            "above 0, else its field `otherwise`",
            "— (a patch)",
            "a patch",
        ),
    )

    id: str
    summary: str
    list: str
    field: str
    factors: tuple[str, ...]
    otherwise: str


@dataclass(frozen=True)
class LifecyclePolicies:
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


@dataclass(frozen=True)
class ClaimVolumes:
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


@dataclass(frozen=True)
class NotBoth:
    """Under each object ``path`` reaches (``spec.tasks[*].partitionPolicy.networkTopology``), the field
    ``second``, when set and not "", is not beside a ``first`` that is set: ``Forbidden`` at ``second``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`NotBoth(id, summary, path, first, second, message)`",
            'under each object the path reaches (`[*]`), `second` (set, not "") is not beside a `first` that is set',
            "`Forbidden` at `second`",
            "a CRD rule on each object",
        ),
    )

    id: str
    summary: str
    path: str | tuple[str, ...]
    first: str
    second: str
    message: str


@dataclass(frozen=True)
class RequiredList:
    """The list at ``path`` (under an object that exists) is set and not empty: ``Required value`` at
    the list with ``message``. The apiserver's CRD rule refuses it unset; an empty one is the schema's
    ``minItems`` to refuse, in its words."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`RequiredList(id, summary, path, message)`",
            "the list (under an object that exists) is set and not empty",
            "`Required value` at the list",
            "a CRD rule on its parent (`has`); an empty list is the schema's `minItems` to refuse",
        ),
    )

    id: str
    summary: str
    path: str
    message: str
    why: str = ""


@dataclass(frozen=True)
class UniqueName:
    """No two entries of the list with the same ``key`` (a string, else ""), each later one reported
    at its key with ``message`` (``{name}``), as Volcano's loop over its tasks does it. The CRD rule
    (on the list: it cannot name the entry) counts the keys that are set and not "", all a defaulted
    job has."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`UniqueName(id, summary, list, key, message)`",
            'no two entries with the same key (a string, else ""): each later one a duplicate',
            "`Duplicate value` at `<list>[i].<key>`, `{name}` in the message",
            'a CRD rule on the list (keys set and not ""), quadratic, bounded by its maxItems',
        ),
    )

    id: str
    summary: str
    list: str
    key: str
    message: str


@dataclass(frozen=True)
class RequiredItemField:
    """Each entry of the list has ``field`` (null is unset): ``Required value`` at it with ``message``,
    ``{index}`` the entry's index (Volcano's words). The schema's ``required``, which the apiserver says
    in its words."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`RequiredItemField(id, summary, list, field, message)`",
            "each entry has the field (null is unset)",
            "`Required value` at it, `{index}` in the message",
            "the schema's `required` on the items (the apiserver's words)",
        ),
    )

    id: str
    summary: str
    list: str
    field: str
    message: str
    why: str = ""


@dataclass(frozen=True)
class Bound:
    """A node of ``Bounds``: the value at ``path`` (dotted from the parent's object or entry, through
    ``{*}``, a map's values, named as fields as the schema's errors name them; "" the entry itself),
    a list of at most ``limit`` entries or, with ``string``, a string of at most ``limit`` bytes (None:
    no bound of its own); ``each`` checked under each of its entries."""

    path: str
    limit: int | None = None
    string: bool = False
    each: tuple[Bound, ...] = ()


@dataclass(frozen=True)
class Bounds:
    """Lists and strings within bounds (``Too many``, ``Too long`` in the apiserver's words), walked in
    the order of ``bounds``, each node's entries before the next node: the schema's ``maxItems`` and
    ``maxLength``, which the CEL cost estimate needs."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`Bounds(id, summary, (Bound(path, limit, string=False, each=(...)), ...))`",
            "lists of at most `limit` entries and strings of at most `limit` bytes, walked in the declared "
            "order, each node's entries (`each`, paths from the entry; `{*}` a map's values, named as "
            'fields; "" the entry itself) before the next node',
            "`Too many`, `Too long` (the apiserver's words)",
            "`maxItems`, `maxLength`",
        ),
    )

    id: str
    summary: str
    bounds: tuple[Bound, ...]
    why: str = ""


VOLCANO_FORMS = (
    Acyclic,
    KnownKeys,
    FixedCount,
    Subdomain,
    FlagNamesEntry,
    Unchanged,
    LifecyclePolicies,
    ClaimVolumes,
    NotBoth,
    RequiredList,
    UniqueName,
    RequiredItemField,
    Bounds,
)
VolcanoForm = (
    Acyclic
    | KnownKeys
    | FixedCount
    | Subdomain
    | FlagNamesEntry
    | Unchanged
    | LifecyclePolicies
    | ClaimVolumes
    | NotBoth
    | RequiredList
    | UniqueName
    | RequiredItemField
    | Bounds
)
VOLCANO_DEFAULT_FORMS = (DefaultIndexed, DefaultSum, ImpliedKeys, DefaultItemWhen, DefaultItemProduct)


# --- forms only the kinds of a map of replica types use (jobgate/rules/replicajobs.py: KubeDL's, Kubeflow's) ---
# Kept apart, as Volcano's are. The map's keys are replica types (``{Worker: {replicas, ...}}``).


@dataclass(frozen=True)
class KnownTypes:
    """The keys of the map at ``path`` are among ``types``: another key is ``Unsupported value`` at
    itself, the types listed. With ``any_case`` a key that spells a type in another case (``worker``)
    is the defaults' to rename, unless the type or another spelling of it is there too: then it is a
    ``Duplicate value`` (the webhook checks the renamed map; the apiserver's rule admits a sole other
    spelling, as the defaults make it valid). The map has at most ``len(types)`` keys
    (``maxProperties``: a valid job has each type once), the bound of the CEL cost."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`KnownTypes(id, summary, path, types, any_case=False)`",
            "the map's keys are among `types`; with `any_case` another spelling (`worker`) is the defaults' "
            "to rename, and a duplicate beside the type or another spelling",
            "`Unsupported value` at the key (the types listed), `Duplicate value`",
            "`maxProperties: len(types)` and CRD rules on the map (their messages name the key)",
        ),
    )

    id: str
    summary: str
    path: str
    types: tuple[str, ...]
    any_case: bool = False
    why: str = "reported at the map (a rule on a map cannot name the key)"


@dataclass(frozen=True)
class DefaultTypeField:
    """The ``field`` of each value of the map at ``path`` whose key is a type of ``values`` ((type,
    value), ...) set, when unset (or, with ``empty_is_unset``, ""), to that type's value; with
    ``others``, a value of any other key to ``others``. A schema default on the map's values when every
    key gets one value and no other key does (it cannot tell the keys apart), and a policy patch."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultTypeField(id, summary, path, field, ((type, value), ...), others=None, empty_is_unset=False)`",
            "each map value's field, by its key's type (`others`: any other key's), set when unset",
            "— (a patch)",
            "a patch; a schema default on the map's values too when every type's value is one, no other key "
            'gets one and "" is not unset',
        ),
    )

    id: str
    summary: str
    path: str
    field: str
    values: tuple[tuple[str, Scalar], ...]
    others: Scalar | None = None
    empty_is_unset: bool = False


# Where a kind's run policy is: "spec" itself, "runPolicy" (spec.runPolicy alone: Kubeflow's), or
# "either" (spec.runPolicy when that is there, else spec: KubeDL's MPIJob).
RUN_POLICY_PLACES = ("spec", "runPolicy", "either")


@dataclass(frozen=True)
class RunPolicyImmutable:
    """On UPDATE the run policy's ``field`` (dotted, ``schedulingPolicy.queue``; "" is unset) is neither
    set, removed nor changed, read where each version's run policy is (``place``). ``Invalid value``
    at the new field, or at the old one when the new one is unset."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`RunPolicyImmutable(id, summary, field, place="spec", message="field is immutable")`',
            'on UPDATE the run policy\'s field ("" is unset) is neither set, removed nor changed, read where '
            "each version's run policy is (`place`: `spec`, `runPolicy`, or `either`: spec.runPolicy when "
            "there, else spec, as KubeDL's MPIJob)",
            "`Invalid value` at the new field, else at the old one",
            "transition rules on `spec`, one per place of the run policy",
        ),
    )

    id: str
    summary: str
    field: str
    place: str = "spec"
    message: str = "field is immutable"


@dataclass(frozen=True)
class RunPolicyAtMostTotal:
    """The run policy's integer ``field`` (``schedulingPolicy.minAvailable``) is at most the total of the
    replicas of the map at ``path`` (each value's ``replicas`` above 0; the apiserver reads an unset one
    as its type's count in ``counts``, ``others`` for another key, as once defaulted). ``Invalid value``:
    ``message`` and the total in parentheses; the CEL's message cannot say the total (CEL's cost
    estimator cannot size a number made a string)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`RunPolicyAtMostTotal(id, summary, field, path, ((type, count), ...), others=0, place="spec")`',
            "the run policy's integer (the gang, `schedulingPolicy.minAvailable`) at most the total of the "
            "map's replicas (each above 0); the apiserver reads an unset count as its type's (`others` for "
            "another key), as once defaulted; `place`: `spec`, `runPolicy` (Kubeflow's) or `either`",
            "`Invalid value` at the field, the total in parentheses (CEL's cost estimator cannot size a "
            "number made a string: the apiserver's message says none)",
            "a CRD rule on `spec` per place",
        ),
    )

    id: str
    summary: str
    field: str
    path: str
    counts: tuple[tuple[str, int], ...]
    others: int = 0
    place: str = "spec"
    message: str = "must be less than or equal to the total number of replicas"


@dataclass(frozen=True)
class DefaultTypeSpelling:
    """A key of the map at ``path`` that spells one of ``types`` in another case (``worker``) renamed
    to it (a JSON Patch ``move``), unless the type is there too or another spelling of it (then each
    stays, ``KnownTypes``' duplicates). On UPDATE ``kubectl apply`` of a manifest that says ``worker``
    re-adds it beside the stored ``Worker``: when ``Worker`` is the stored entry, unchanged, and
    ``worker`` is new, ``worker`` replaces it. A policy patch (it reads ``oldObject``); the webhook
    calls the form's function with the stored job itself (``rules/replicajobs.py``): the generated
    defaults make no call of it."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultTypeSpelling(id, summary, path, types)`",
            "a key spelling a type in another case (`worker`) renamed to it, unless the type or another "
            "spelling is there; on UPDATE a re-added `worker` beside the stored, unchanged `Worker` replaces "
            "it",
            "— (a `move`, and a `remove` of the stale entry)",
            "a patch (it reads `oldObject`); the webhook calls the form's function with the stored job (the "
            "generated defaults make no call of it)",
        ),
    )

    id: str
    summary: str
    path: str
    types: tuple[str, ...]


@dataclass(frozen=True)
class DefaultTemplatePort:
    """The framework's port (``{name: port_name, containerPort: port}``) on a container of the pod
    template (``template.spec.containers``) of each value of the map at ``path`` whose key is among
    ``roles`` (with ``others``, a key not among ``known`` too): on the container named ``container``,
    else on the first (unless ``requires_named``), unless it has a port of that name. A policy patch:
    the CRD keeps the pod template whole."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultTemplatePort(id, summary, path, roles, container, port_name, port, "
            "requires_named=False, others=False, known=())`",
            "the framework's port on the pod template of each value whose key is among `roles` (`others`: a "
            "key not among `known` too): on the container named `container`, else the first (unless "
            "`requires_named`), unless a port of that name is there; one form, one rule "
            "(`pod-template/framework-port`, every replica-map kind's)",
            "— (a patch)",
            "a patch only",
        ),
    )

    id: str
    summary: str
    path: str
    roles: tuple[str, ...]
    container: str
    port_name: str
    port: int
    requires_named: bool = False
    others: bool = False
    known: tuple[str, ...] = ()


REPLICA_MAP_FORMS = (KnownTypes, RunPolicyImmutable, RunPolicyAtMostTotal)
REPLICA_MAP_DEFAULT_FORMS = (DefaultTypeField, DefaultTypeSpelling, DefaultTemplatePort)


# --- forms only T9k's and DI-engine's rules use (jobgate/families/{t9k,diengine}/declared.py) ----------
# Kept apart from the forms above, as Volcano's are.


@dataclass(frozen=True)
class RefersTo:
    """Each entry of the lists at ``paths`` names by its ``key`` an entry of ``list`` (by the entries'
    ``by``): another value is ``Not found`` at the key, ``message`` formatted with ``{known}`` (the
    values ``list`` has, each once, ", "-joined; "none"). With ``unique_id``, each value that names an
    entry is named once per list: a later one is ``Duplicate value``, a rule of that id. Checked in
    one pass, entry by entry (an entry's error before the next entry's); an entry without the key
    (or "") passes (a ``RequiredField``'s). The CEL sits on the lists' common parent and writes the
    known values out up to ``bound`` (the maxItems of ``list``: CEL's cost estimator cannot size
    join())."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`RefersTo(id, summary, paths, key, list, by, message, bound, unique_id="", unique_summary="")`',
            "each entry of the lists `paths` names by `key` an entry of `list` (by its `by`); with "
            "`unique_id`, each value that names one once per list. One pass, entry by entry, so a denial "
            "lists an entry's error before the next entry's; a missing or \"\" key passes (a `RequiredField`'s)",
            "`Not found` at the key, `message` with `{known}` (the list's values, each once, or `none`); "
            "`Duplicate value` at a later one (the `unique_id` rule)",
            "a CRD rule per list on the lists' common parent, reported at the list; the known values written "
            "out up to `bound` (the list's maxItems: CEL cannot size `join()`)",
        ),
    )

    id: str
    summary: str
    paths: tuple[str, ...]
    key: str
    list: str
    by: str
    message: str
    bound: int
    unique_id: str = ""
    unique_summary: str = ""
    why: str = ""


@dataclass(frozen=True)
class IndexMaps:
    """Each entry of the lists at ``paths`` maps names of entries of ``list`` (their ``by``; the first
    entry of a name counts) to indices of that entry's replicas, 0 to its ``count`` - 1 (``unset``
    when it has none): T9k's finish rules. Four rules, checked in one pass, map by map and name by
    name (a map's errors before the next map's):

    - ``id``: the map names an entry at least (``Required value`` at the map, ``empty``);
    - ``unknown_id``: a name is an entry's (``Not found`` at the name, ``unknown`` with ``{known}``:
      the names there are, each once, or "none");
    - ``unlisted_id``: a name lists an index at least (``Required value`` at the name, ``unlisted``);
    - ``index_id``: each index is one of the entry's (``Invalid value`` at the index, ``below`` with
      ``{count}``, ``{name}`` and ``{last}``; ``none`` with ``{name}`` when the count is 0), a
      ValidatingAdmissionPolicy: up to ``max_maps`` maps of as many indices, each compared with its
      entry's count, cost more than a CRD rule may (``index_why``).

    ``max_maps`` and ``max_names`` bound the lists and the maps (``Too many``), reported where these
    rules are, in the words of the schema's ``maxItems``/``maxProperties`` that another rule places
    (``bounds_id``: the kind's bounds). ``bound``: the maxItems of ``list``, to which the CEL writes
    the known names out (CEL's cost estimator cannot size join())."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`IndexMaps(id, summary, paths, list, by, count, unset, empty, unknown_id, ..., unknown, "
            "unlisted_id, ..., unlisted, index_id, ..., below, none, bound, max_maps, max_names, bounds_id, "
            'index_why="")`',
            "each entry of the lists `paths` maps names of entries of `list` (their `by`) to indices below "
            "that entry's `count` (`unset` when absent): T9k's finish rules",
            "`Required value` at an empty map (`empty`, rule `id`); `Not found` at an unknown name "
            "(`unknown`, `{known}`); `Required value` at a name listing no index (`unlisted`); `Invalid "
            "value` at an index past the count (`below` with `{count}`, `{name}`, `{last}`, or `none`); `Too "
            "many` past `max_maps`/`max_names` (the records of `bounds_id`, which places the keywords)",
            "CRD rules on each map (empty, unlisted), a CRD rule per list on their common parent (unknown "
            "names, known ones written out to `bound`), a ValidatingAdmissionPolicy for the indices (each "
            "entry's count read once per request)",
        ),
    )

    id: str
    summary: str
    paths: tuple[str, ...]
    list: str
    by: str
    count: str
    unset: int
    empty: str
    unknown_id: str
    unknown_summary: str
    unknown: str
    unlisted_id: str
    unlisted_summary: str
    unlisted: str
    index_id: str
    index_summary: str
    below: str
    none: str
    bound: int
    max_maps: int
    max_names: int
    bounds_id: str
    index_why: str = ""


@dataclass(frozen=True)
class NamedEntries:
    """The entries of the list at ``path`` are named by their ``name`` (DI-engine's tasks, T9k's
    service ports). Up to four rules, checked in one pass, entry by entry (an entry's type, then its
    name); ``summaries``: one per rule, in this order:

    - with ``singleton_id``: at most one entry of each type (``type``, ``untyped`` when unset or "")
      of ``singletons`` (``Invalid value`` at a later one's type, ``singleton`` with ``{type}``, then
      ``first`` with ``{first}``, the first one's index: a CRD rule on the list, which says
      ``singleton`` only, cannot index a list by a computed value);
    - ``required_id``: every entry has a name (``Required value`` at it; ``unnamed``, or with a
      ``type`` no detail for a typed entry: a default names it after its type); with ``several``
      only in a list of more than one entry (a service's one port needs no name);
    - ``label_id``: a name is a DNS-1123 label (each problem in Kubernetes' words; schema keywords);
    - ``unique_id``: no two entries of one name (``Duplicate value`` at the later one's).

    A name missing or not a string is checked no further; one that is no label neither, unless
    ``label_stops`` is False (its duplicates are reported too)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`NamedEntries(summaries, path, name, required_id, unnamed, label_id, unique_id, type="", '
            'untyped="", singletons=(), singleton_id="", singleton="", first="", several=False, '
            "label_stops=True)`",
            "entries named by `name`: (with `singleton_id`) one entry of each type of `singletons`; a name "
            "set (`several`: only in a list of more than one entry); a DNS-1123 label; unique. A name that "
            "is no label is checked no further unless `label_stops=False`",
            "`Invalid value` at a later singleton's type (`singleton` + `first`, with `{type}`, `{first}`); "
            "`Required value` (`unnamed`; no detail for a typed entry, which a default names); the label's "
            "problems in Kubernetes' words; `Duplicate value`",
            "a CRD rule per singleton type on the list (`singleton` only: no index); the name required by a "
            "CRD rule on each entry through the type's default (`several`: on the list); `pattern` and "
            "`maxLength`; a CRD rule on the list for uniqueness",
        ),
    )

    summaries: tuple[str, ...]
    path: str
    name: str
    required_id: str
    unnamed: str
    label_id: str
    unique_id: str
    type: str = ""
    untyped: str = ""
    singletons: tuple[str, ...] = ()
    singleton_id: str = ""
    singleton: str = ""
    first: str = ""
    several: bool = False
    label_stops: bool = True

    @property
    def id(self) -> str:
        return self.singleton_id or self.required_id


@dataclass(frozen=True)
class EntriesUnchanged:
    """On UPDATE the entries of the list at ``path`` keep ``fields`` (T9k's replica types and pod
    templates): the list of each entry's fields, in order, is the stored one's (a list unset counts as
    none; an entry that is no object as itself). ``Forbidden`` at the list, ``message``. A transition
    rule on the list's parent, which holds when either version lacks the list; a field not in
    ``required`` (the schema requires those) is a string, read as "" when unset."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`EntriesUnchanged(id, summary, path, fields, required, message)`",
            "on UPDATE the entries of the list keep `fields` (each entry's, in order; an unset list counts "
            "as none): T9k's replica types and pod templates",
            "`Forbidden` at the list",
            "a transition rule on the list's parent, which holds when either version lacks the list; a field "
            'not in `required` is a string, read as "" when unset',
        ),
    )

    id: str
    summary: str
    path: str
    fields: tuple[str, ...]
    required: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class DefaultFinishRules:
    """One family uses it: T9k's default finish rules (``successRules``, ``failureRules``). The list at
    ``path`` (maps of names of entries of ``list``, their ``by``, to indices of that entry's replicas)
    set, when unset, to one rule listing every replica of each entry (``each=False``: success when all
    succeeded), or to one rule per replica (``each``: failure when any failed); an entry's ``count`` is
    ``unset`` when absent, an entry of count 0 is named by no rule, and no rules are written when that
    would be none. Written only when every entry has a name of its own and a count of 0 at least, and
    there are at most ``max_entries`` entries of at most ``max_replicas`` replicas in all (a rule's size
    follows the counts, not the object's: ``replicas: 2000000000`` would make a patch of gigabytes).

    On UPDATE, rules that are these defaults of the stored job's counts (themselves within the bounds)
    are rewritten for the new counts when those differ: the defaults follow a scale, rules a user wrote
    never change. A MutatingAdmissionPolicy patch (it reads every entry, and ``oldObject``); the
    generated defaults take the stored job (``previous``). ``path`` and ``list`` are fields of one
    object."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultFinishRules(id, summary, path, list, by, count, unset, each, max_entries, max_replicas)`",
            "one family uses it (T9k's `successRules`, `failureRules`): the list set, when unset, to one "
            "rule listing every replica of `list`'s entries (named by `by`, `count` replicas, `unset` when "
            "absent), or (`each`) to one rule per replica; only when each entry has a name of its own and a "
            "count of 0 at least, at most `max_entries` entries and `max_replicas` replicas in all. On "
            "UPDATE, rules that are the defaults of the stored counts are rewritten when the counts change; "
            "rules a user wrote never change",
            "— (a patch: `add`, `replace` when rescaled)",
            "a MutatingAdmissionPolicy patch only (it reads every entry and `oldObject`); the generated "
            "default takes the stored job (`previous`)",
        ),
    )

    id: str
    summary: str
    path: str
    list: str
    by: str
    count: str
    unset: int
    each: bool
    max_entries: int
    max_replicas: int


ENTRY_FORMS = (RefersTo, IndexMaps, NamedEntries, EntriesUnchanged)
ENTRY_DEFAULT_FORMS = (DefaultFinishRules,)


Declaration = (
    (DefaultField | DefaultItemField | MaxItems | UniqueBy | RequiredRoles | ForbiddenRoles | RoleFieldBound)
    | (AtMostSum | Immutable | RequiredField | ForbiddenField | FieldBound | StringField | AtMostOneOf)
    | (Acyclic | KnownKeys | FixedCount | Subdomain | FlagNamesEntry | Unchanged | LifecyclePolicies | ClaimVolumes)
    | NotBoth
    | RequiredList
    | UniqueName
    | RequiredItemField
    | Bounds
    | (DefaultIndexed | DefaultSum | ImpliedKeys | DefaultItemWhen | DefaultItemProduct)
    | (KnownTypes | RunPolicyImmutable | RunPolicyAtMostTotal | DefaultTypeField | DefaultTypeSpelling)
    | DefaultTemplatePort
    | (RefersTo | IndexMaps | NamedEntries | EntriesUnchanged | DefaultFinishRules)
)
DEFAULT_FORMS = (
    DefaultField,
    DefaultItemField,
    *VOLCANO_DEFAULT_FORMS,
    *REPLICA_MAP_DEFAULT_FORMS,
    *ENTRY_DEFAULT_FORMS,
)


# The tables of docs/rule-forms.md, by marker: the forms whose DOC rows each lists, in order.
DOC_TABLES = {
    "forms": (
        DefaultField,
        DefaultItemField,
        MaxItems,
        UniqueBy,
        RequiredRoles,
        ForbiddenRoles,
        RoleFieldBound,
        AtMostSum,
        Immutable,
        RequiredField,
        ForbiddenField,
        FieldBound,
        StringField,
        AtMostOneOf,
    ),
    "volcano-forms": (
        Acyclic,
        KnownKeys,
        FixedCount,
        Subdomain,
        FlagNamesEntry,
        Unchanged,
        LifecyclePolicies,
        ClaimVolumes,
        RequiredList,
        UniqueName,
        RequiredItemField,
        Bounds,
        NotBoth,
        DefaultIndexed,
        DefaultSum,
        ImpliedKeys,
        DefaultItemWhen,
        DefaultItemProduct,
    ),
    "replica-map-forms": (
        KnownTypes,
        RunPolicyImmutable,
        RunPolicyAtMostTotal,
        DefaultTypeSpelling,
        DefaultTypeField,
        DefaultTemplatePort,
    ),
    "entry-forms": (
        RefersTo,
        IndexMaps,
        NamedEntries,
        EntriesUnchanged,
        DefaultFinishRules,
    ),
}
