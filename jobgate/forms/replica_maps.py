"""The forms of the kinds with a map of replica types (KubeDL's, Kubeflow's:
``jobgate/rules/replicajobs.py``). The map's keys are replica types (``{Worker: {replicas, ...}}``).
"""

from __future__ import annotations

from dataclasses import dataclass

from jobgate.forms.base import (
    Declaration,
    Declarations,
    FormError,
    Scalar,
    cel_literal,
    cel_zero,
    escape_detail,
    exact_detail,
    path_steps,
)
from jobgate.forms.catalogue import (
    MAP_VALUES,
    Default,
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_list,
    cel_string,
)
from jobgate.forms.python_text import (
    CHECK_NAMES,
    python_unset,
    read_lines,
    step_names,
    value_entry_copy,
    value_list_copy,
    value_list_reads,
)


@dataclass(frozen=True)
class KnownTypes(Declaration):
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

    def rule(self, decls: Declarations) -> Rule:
        return _known_types(self)

    def python_call(self) -> str:
        return f"known_types(obj, {path_steps(self.path)!r}, {self.types!r}, {self.any_case!r})"

    def python_check(self, decls: Declarations) -> list[str]:
        return _known_types_lines(self)

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        growth = f"linear, bounded by {len(self.types)} keys (maxProperties)"
        return [(self.id, growth + ("; quadratic in them for another spelling" if self.any_case else ""))]


@dataclass(frozen=True)
class DefaultTypeField(Declaration):
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

    IS_DEFAULT = True

    def default_record(self, decls: Declarations) -> Default:
        return _type_field_default(self)

    def value_map(self) -> str:
        return self.path

    def python_value_default(self, decls: Declarations, done: set[str]) -> list[str]:
        return [f"    if not only or {self.id!r} in only:", *_type_field_lines(self)]

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "linear (policy patch)")]


# Where a kind's run policy is: "spec" itself, "runPolicy" (spec.runPolicy alone: Kubeflow's), or
# "either" (spec.runPolicy when that is there, else spec: KubeDL's MPIJob).
RUN_POLICY_PLACES = ("spec", "runPolicy", "either")


@dataclass(frozen=True)
class RunPolicyImmutable(Declaration):
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

    def rule(self, decls: Declarations) -> Rule:
        return _run_policy_immutable(self)

    def python_call(self) -> str:
        return f"run_policy_immutable(obj, old, {path_steps(self.field)!r}, {self.place!r}, {self.message!r})"

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "constant")]


@dataclass(frozen=True)
class RunPolicyAtMostTotal(Declaration):
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

    def rule(self, decls: Declarations) -> Rule:
        return _run_policy_at_most_total(self)

    def python_call(self) -> str:
        return (
            f"run_policy_at_most_total(obj, {path_steps(self.field)!r}, {path_steps(self.path)!r}, {self.place!r}, "
            f"{self.message!r})"
        )

    def python_check(self, decls: Declarations) -> list[str]:
        return _at_most_total_lines(self)

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "linear in the map's keys")]


@dataclass(frozen=True)
class DefaultTypeSpelling(Declaration):
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

    IS_DEFAULT = True
    # Run by the engine itself (it reads the stored job), not by the generated defaulting.
    RUNS_IN_PYTHON = False

    def default_record(self, decls: Declarations) -> Default:
        return _type_spelling_default(self)

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "linear (policy patch)")]


@dataclass(frozen=True)
class DefaultTemplatePort(Declaration):
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

    IS_DEFAULT = True

    def default_record(self, decls: Declarations) -> Default:
        return _template_port_default(self)

    def value_map(self) -> str:
        return self.path

    def python_value_default(self, decls: Declarations, done: set[str]) -> list[str]:
        if not self.roles and not self.others:
            return []  # no key gets the port (no role of the kind does): no code
        # Its roles, and with ``others`` every key that is no known type: the known types but its roles.
        role = f" and key in {self.roles!r}"
        if self.others:
            without = tuple(k for k in self.known if k not in self.roles)
            role = f" and key not in {without!r}" if without else ""
        reads, lines = _port_lines(self, done)
        return [*reads, f"    if (not only or {self.id!r} in only){role}:", *lines]

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "linear (policy patch)")]


def _known_types(d: KnownTypes) -> Rule:
    """Rules on the map (a rule on a map cannot name the key): the message names it."""
    lowered = {t.casefold(): t for t in d.types}
    if d.any_case:
        # Another spelling (``worker``) is the defaults' to rename when no Worker is there; beside a
        # Worker it is a duplicate, and so are two other spellings of one type (neither renamed).
        unsupported = f"!(k.lowerAscii() in {cel_list(lowered)})"
        canonical = "{" + ", ".join(f"{cel_string(k)}: {cel_string(v)}" for k, v in lowered.items()) + "}"
        duplicate = (
            f"!(k in {cel_list(d.types)}) && k.lowerAscii() in {cel_list(lowered)} && "
            f"({canonical}[k.lowerAscii()] in self || self.exists(j, j != k && j.lowerAscii() == k.lowerAscii()))"
        )
    else:
        unsupported = f"!(k in {cel_list(d.types)})"
    supported = ", ".join(f'"{t}"' for t in d.types)
    at = path_steps(d.path)
    placements = [
        # A valid job has each type once at most: the bound the CEL cost estimate needs.
        Placement(at, {"maxProperties": len(d.types)}),
        Placement(
            at,
            validation=Validation(
                rule=f"!self.exists(k, {unsupported})",
                message_expression=f"'Unsupported value: \"' + self.filter(k, {unsupported})[0] + "
                f"'\": supported values: {supported}'",
            ),
        ),
    ]
    produces = [Produces(f"{d.path}[*]", "NOT_SUPPORTED", apiserver_drops=1)]
    if d.any_case:
        placements.append(
            Placement(
                at,
                validation=Validation(
                    rule=f"!self.exists(k, {duplicate})",
                    message_expression=f"'Duplicate value: \"' + self.filter(k, {duplicate})[0] + '\"'",
                ),
            )
        )
        produces.append(Produces(f"{d.path}[*]", "DUPLICATE", apiserver_drops=1))
    return Rule(d.id, d.summary, Where.CRD_RULE, tuple(produces), tuple(placements), why=d.why)


def _run_policy_places(place: str) -> tuple[tuple[str, str, str], ...]:
    """Where the run policy is (``RUN_POLICY_PLACES``): (CEL of it from spec's ``{v}``, its fieldPath
    from spec, CEL true when it is there). CEL cannot pick one of two differently typed objects: a rule
    is written per place."""
    if place not in RUN_POLICY_PLACES:
        raise FormError(f"the run policy is at one of {RUN_POLICY_PLACES}, not {place!r}")
    separate = ("{v}.runPolicy", ".runPolicy", "has({v}.runPolicy)")
    if place == "either":
        return (separate, ("{v}", "", "!has({v}.runPolicy)"))
    return (separate,) if place == "runPolicy" else (("{v}", "", "true"),)


def _run_policy_at_most_total(d: RunPolicyAtMostTotal) -> Rule:
    """A CRD rule on spec per place of the run policy."""
    top, *rest = path_steps(d.path)
    if top != "spec" or len(rest) != 1:
        raise FormError(f"{d.id}: the map is a field of spec, not {d.path}")
    entries = f"self.{rest[0]}"
    unset = " : ".join(f"t == {cel_string(name)} ? {n}" for name, n in d.counts) + f" : {d.others}"
    count = f"(has({entries}[t].replicas) ? {entries}[t].replicas : ({unset}))"
    total = f"{entries}.map(t, {count} > 0 ? {count} : 0).sum()"
    steps = d.field.split(".")
    placements = []
    produces = []
    for of, field_path, holds in _run_policy_places(d.place):
        policy = of.format(v="self")
        absent = " || ".join(f"!has({policy}.{'.'.join(steps[: i + 1])})" for i in range(len(steps)))
        placements.append(
            Placement(
                ("spec",),
                validation=Validation(
                    rule=f"!{holds.format(v='self')} || {absent} || !has({entries}) || {policy}.{d.field} <= {total}",
                    message=d.message,
                    field_path=f"{field_path}.{d.field}",
                ),
            )
        )
        produces.append(
            Produces(f"spec{field_path}.{d.field}", "INVALID", "^" + escape_detail(d.message) + r"( \(\d+\))?$")
        )
    return Rule(d.id, d.summary, Where.CRD_RULE, tuple(produces), tuple(placements))


def _run_policy_immutable(d: RunPolicyImmutable) -> Rule:
    """Transition rules on spec: the error where the new value is, else where the old one was."""
    places = _run_policy_places(d.place)
    steps = d.field.split(".")

    def value(place: tuple[str, str, str], variable: str) -> str:
        policy = place[0].format(v=variable)
        present = " && ".join(f"has({policy}.{'.'.join(steps[: i + 1])})" for i in range(len(steps)))
        return f"({present} ? {policy}.{d.field} : '')"

    def either(variable: str) -> str:
        if len(places) == 1:
            return value(places[0], variable)
        first, second = places
        return f"({first[2].format(v=variable)} ? {value(first, variable)} : {value(second, variable)})"

    new, old = either("self"), either("oldSelf")
    placements = []
    produces = []
    for place in places:
        here = f"{place[1]}.{d.field}"
        here_now, here_before = place[2].format(v="self"), place[2].format(v="oldSelf")
        for condition in (f"{new} != '' && {here_now}", f"{new} == '' && {here_before}"):
            placements.append(
                Placement(
                    ("spec",),
                    validation=Validation(rule=f"!({condition}) || {new} == {old}", message=d.message, field_path=here),
                )
            )
        produces.append(Produces(f"spec{here}", "INVALID", exact_detail(d.message)))
    return Rule(d.id, d.summary, Where.TRANSITION, tuple(produces), tuple(placements))


def _type_field_default(d: DefaultTypeField) -> Default:
    """A patch of each value whose key has a value (``k``: the key); a schema default on the map's
    values as well when all of them get one value, "" is no unset one and no other key gets one (a
    schema default cannot tell the keys apart: the types' defaults agree, the other keys' are refused)."""
    entries = f"object.{d.path}"
    pointer = f"'/{d.path.replace('.', '/')}/' + jsonpatch.escapeKey(k)"
    types = [t for t, _ in d.values]
    if d.others is None:
        known = f"k in {cel_list(types)}"
        value = "{" + ", ".join(f"{cel_string(t)}: {cel_literal(v)}" for t, v in d.values) + "}[k]"
    else:
        known = "true"
        value = "(" + " : ".join(f"k == {cel_string(t)} ? {cel_literal(v)}" for t, v in d.values)
        value += f" : {cel_literal(d.others)})"
    field = f"{entries}[k].{d.field}"
    unset = f"(!has({field}) || {field} == {cel_zero(d.values[0][1])})" if d.empty_is_unset else f"!has({field})"
    patch = (
        f"has({entries}) ? {entries}.filter(k, {known} && {unset})"
        f".map(k, JSONPatch{{op: 'add', path: {pointer} + '/{d.field}', value: {value}}}) : []"
    )
    uniform = _schema_defaulted(d)
    return Default(
        d.id,
        d.summary,
        Where.SCHEMA_DEFAULT if uniform else Where.MUTATING_POLICY,
        (patch,),
        (Placement((*path_steps(d.path), MAP_VALUES, d.field), {"default": d.values[0][1]}),) if uniform else (),
    )


def _type_spelling_default(d: DefaultTypeSpelling) -> Default:
    """A policy patch of a move (and, on UPDATE, a remove of the stale entry) per other spelling."""
    entries, before = f"object.{d.path}", f"oldObject.{d.path}"
    pointer = "/" + d.path.replace(".", "/") + "/"
    entry = f"'{pointer}' + jsonpatch.escapeKey(k)"
    canonical = "{" + ", ".join(f"{cel_string(t.casefold())}: {cel_string(t)}" for t in d.types) + "}"
    to = f"{canonical}[k.lowerAscii()]"
    stale = (
        f"(oldObject != null && has({before}) && !(k in {before}) && {to} in {before} && "
        f"{to} in {entries} && {entries}[{to}] == {before}[{to}])"
    )
    movable = (
        f"!(k in {cel_list(d.types)}) && k.lowerAscii() in {cel_list(t.casefold() for t in d.types)} && "
        f"{entries}.filter(j, !(j in {cel_list(d.types)}) && j.lowerAscii() == k.lowerAscii()).size() == 1 && "
        f"(!({to} in {entries}) || {stale})"
    )
    patch = (
        f"has({entries}) ? {entries}.filter(k, {movable}).map(k, "
        f"({stale} ? [JSONPatch{{op: 'remove', path: '{pointer}' + {to}}}] : []) + "
        f"[JSONPatch{{op: 'move', from: {entry}, path: '{pointer}' + {to}}}]).flatten() : []"
    )
    return Default(d.id, d.summary, Where.MUTATING_POLICY, (patch,))


def _schema_defaulted(d: DefaultTypeField) -> bool:
    """Whether the CRD's schema gives the field its default (every type's value the same, no other
    key's, "" no unset one): a schema default cannot tell the keys apart."""
    return len({v for _, v in d.values}) == 1 and d.others is None and not d.empty_is_unset


def _known_types_lines(d: KnownTypes) -> list[str]:
    """The Python ``KnownTypes``, written out: the map read object by object and its keys looked up
    among the types (a literal); at the first other key the form's function reports them all."""
    steps = path_steps(d.path)
    names = step_names(steps, CHECK_NAMES)
    return [
        *read_lines(["obj", *names], names, steps),
        f"        if isinstance({names[-1]}, dict):",
        f"            for key in {names[-1]}:",
        f"                if key not in {d.types!r}:",
        f"                    errors.extend(known_types(obj, {steps!r}, {d.types!r}, {d.any_case!r}))",
        "                    break",
    ]


def _at_most_total_lines(d: RunPolicyAtMostTotal) -> list[str]:
    """The Python ``RunPolicyAtMostTotal``, written out: the bound read where the run policy is
    (``place``), and only when it is set the replicas counted (``run_policy_at_most_total``'s reading)."""
    field = path_steps(d.field)
    steps = path_steps(d.path)
    if d.place == "spec":
        policy = ["            policy = spec"]
        at = f"{('spec', *field)!r}"
    elif d.place == "runPolicy":
        policy = ["            policy = spec.get('runPolicy', MISSING)"]
        at = f"{('spec', 'runPolicy', *field)!r}"
    else:  # "either": spec.runPolicy when it is an object, else spec
        policy = [
            "            policy = spec.get('runPolicy', MISSING)",
            "            separate = isinstance(policy, dict)",
            "            if not separate:",
            "                policy = spec",
        ]
        at = f"({('spec', 'runPolicy', *field)!r} if separate else {('spec', *field)!r})"
    parents = step_names(field[:-1], CHECK_NAMES | {"spec", "policy", "separate"})
    holder = parents[-1] if parents else "policy"
    reads = [
        f"            {name} = {parent}.get({step!r}, MISSING)"
        + (f" if isinstance({parent}, dict) else MISSING" if i else "")
        for i, (parent, name, step) in enumerate(zip(["policy", *parents], parents, field[:-1], strict=False))
    ]
    if d.place == "runPolicy" and reads:
        reads[0] += " if isinstance(policy, dict) else MISSING"
    bound = f"as_int({holder}.get({field[-1]!r}))"
    # The map from spec when it is under spec (read already), else from the job.
    start, rest = ("spec", steps[1:]) if steps[0] == "spec" else ("obj", steps)
    maps = step_names(rest, CHECK_NAMES | {"spec", "policy", "separate", *parents}) if rest else []
    entries = maps[-1] if maps else start
    map_reads = [
        f"                {name} = {parent}.get({step!r}, MISSING)"
        + (f" if isinstance({parent}, dict) else MISSING" if i or parent != "spec" else "")
        for i, (parent, name, step) in enumerate(zip([start, *maps], maps, rest, strict=False))
    ]
    return [
        "        spec = obj.get('spec', MISSING)",
        "        if isinstance(spec, dict):",
        *policy,
        *reads,
        f"            number = {bound} if isinstance({holder}, dict) else None",
        "            if number is not None:",
        *map_reads,
        "                total = 0",
        f"                if isinstance({entries}, dict):",
        f"                    for entry in {entries}.values():",
        "                        count = as_int(entry.get('replicas')) if isinstance(entry, dict) else None",
        "                        if count is not None and count > 0:",
        "                            total += count",
        "                if number > total:",
        f"                    errors.append(invalid({at}, number, {d.message + ' ('!r} + str(total) + ')'))",
    ]


def _port_lines(d: DefaultTemplatePort, done: set[str]) -> tuple[list[str], list[str]]:
    """The Python ``DefaultTemplatePort`` of one value of the map, written out (``with_port``'s reading):
    the port on the container named ``container`` (with ``requires_named``: only there; else the
    first container) unless a port of its name is there. The containers are read once for the value's
    defaults (``value_list_reads``), and the objects on the way and the container copied into ``value``
    (a copy the caller owns) only then, unless another default of the value copied them already. Its
    other locals are its own (``port_*``): mypyc gives a local one type for the whole function, and
    another block of the generated function may hold a dict in a local of the same name, which would
    turn a non-object here into a TypeError."""
    reads, names = value_list_reads(PORT_CONTAINERS, done)
    containers = names[-1]
    lines = [
        f"        if isinstance({containers}, list) and {containers}:",
        "            port_target = -1",
        f"            for port_index, port_given in enumerate({containers}):",
        f"                if isinstance(port_given, dict) and port_given.get('name') == {d.container!r}:",
        "                    port_target = port_index",
        "                    break",
    ]
    if not d.requires_named:
        lines += ["            if port_target < 0:", "                port_target = 0"]
    return reads, [
        *lines,
        f"            port_item = {containers}[port_target] if port_target >= 0 else MISSING",
        "            port_list = port_item.get('ports') if isinstance(port_item, dict) else MISSING",
        "            if port_list is None or isinstance(port_list, list):",
        "                for port_existing in port_list or ():",
        f"                    if isinstance(port_existing, dict) and port_existing.get('name') == {d.port_name!r}:",
        "                        break",
        "                else:",
        *value_list_copy(PORT_CONTAINERS, names, "                    "),
        *value_entry_copy(containers, "port_item", "port_target", "                    "),
        f"                    port = {{'name': {d.port_name!r}, 'containerPort': {d.port!r}}}",
        f"                    at = pointer + {'/' + '/'.join(PORT_CONTAINERS) + '/'!r} + str(port_target)",
        "                    recorder.append(port_item, 'ports', port, at)",
    ]


# Where a map's value holds the containers that ``DefaultTemplatePort`` gives the port.
PORT_CONTAINERS = ("template", "spec", "containers")


def _type_field_lines(d: DefaultTypeField) -> list[str]:
    """The Python default of one value's field by its key (``key``), unset (or empty, with
    ``empty_is_unset``) in ``value``: the key's value chosen by literal tests of the key."""
    # Where the schema defaults the field, the apiserver gives every key of the map the value, other
    # keys too, before any webhook or rule sees the job: so does the Python default.
    others = d.values[0][1] if _schema_defaulted(d) else d.others
    by_value: dict[Scalar, list[str]] = {}
    for key, value in d.values:
        by_value.setdefault(value, []).append(key)
    unset = python_unset(f"value.get({d.field!r})", d.values[0][1], d.empty_is_unset)
    if len(by_value) == 1 and others in (None, d.values[0][1]):
        value, keys = next(iter(by_value.items()))
        guard = "" if others is not None else f"key in {tuple(keys)!r} and "
        return [f"        if {guard}{unset}:", f"            recorder.set(value, {d.field!r}, {value!r}, pointer)"]
    chosen = " else ".join(f"{value!r} if key in {tuple(keys)!r}" for value, keys in by_value.items())
    guard = "default is not None and " if others is None else ""
    return [
        f"        default = {chosen} else {others!r}",
        f"        if {guard}{unset}:",
        f"            recorder.set(value, {d.field!r}, default, pointer)",
    ]


def _template_port_default(d: DefaultTemplatePort) -> Default:
    """A policy patch per role's template: the port appended to the named container's ports (or the
    first container's), or its ports made of it."""
    entries = f"object.{d.path}"
    template = f"{entries}[k].template"
    containers = f"{template}.spec.containers"
    pointer = f"'/{d.path.replace('.', '/')}/' + jsonpatch.escapeKey(k) + '/template'"
    named = f"has(c.name) && c.name == {cel_string(d.container)}"
    needs = f"!(has(c.ports) && c.ports.exists(p, has(p.name) && p.name == {cel_string(d.port_name)}))"
    # The apiserver's CEL wants literals of one type: the port's name and number are made dyn.
    value = f"{{'name': dyn({cel_string(d.port_name)}), 'containerPort': dyn({d.port})}}"
    at = f"{pointer} + '/spec/containers/' + string(i) + '/ports"
    add = (
        f"(has(c.ports) ? JSONPatch{{op: 'add', path: {at}/-', value: {value}}} : "
        f"JSONPatch{{op: 'add', path: {at}', value: [{value}]}})"
    )
    on_named = f"{containers}.transformList(i, c, {named} && {needs}, {add})"
    on_first = "[]" if d.requires_named else f"{containers}.transformList(i, c, i == 0 && {needs}, {add})"
    role = f"k in {cel_list(d.roles)}"
    if d.others:
        role = f"({role} || !(k in {cel_list(d.known)}))"
    patch = (
        f"(has({entries}) ? {entries}.filter(k, has({template}) && {role} && has({template}.spec) && "
        f"has({containers}) && size({containers}) > 0)"
        f".map(k, ({containers}.exists(c, {named}) ? {on_named} : {on_first})).flatten() : [])"
    )
    return Default(d.id, d.summary, Where.MUTATING_POLICY, (patch,))
