"""The rule forms (jobgate/forms/, and a family's own in its forms.py): each form's Python meaning
(its runtime twin in jobgate/forms/checks/), its compilation (the form's methods) to the generated
module, the apiserver's placements and the catalogue's records, and that the records explain exactly
the errors the Python check gives."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import pytest

from jobgate.engine.fielderrors import FieldError, Key, required
from jobgate.engine.jsonpatch import PatchRecorder
from jobgate.families.t9k.forms import DefaultFinishRules, EntriesUnchanged, IndexMaps, RefersTo
from jobgate.families.volcano.forms import (
    Acyclic,
    Bound,
    Bounds,
    ClaimVolumes,
    DefaultIndexed,
    DefaultItemProduct,
    DefaultItemWhen,
    DefaultSum,
    FixedCount,
    FlagNamesEntry,
    ImpliedKeys,
    KnownKeys,
    LifecyclePolicies,
    NotBoth,
    RequiredItemField,
    RequiredList,
    Subdomain,
    UniqueName,
)
from jobgate.forms.base import Declarations, FormError, Roles, When
from jobgate.forms.catalogue import LIST_ITEMS, MAP_VALUES, Where
from jobgate.forms.defaults import DefaultField, DefaultItemField
from jobgate.forms.entries import NamedEntries
from jobgate.forms.fields import AtMostOneOf, FieldBound, ForbiddenField, RequiredField, StringField
from jobgate.forms.python_text import cost_report, declared_module_path, declared_module_text
from jobgate.forms.replica_maps import (
    DefaultTemplatePort,
    DefaultTypeField,
    DefaultTypeSpelling,
    KnownTypes,
    RunPolicyAtMostTotal,
    RunPolicyImmutable,
)
from jobgate.forms.roles import AtMostSum, ForbiddenRoles, Immutable, MaxItems, RequiredRoles, RoleFieldBound, UniqueBy
from jobgate.forms.scopes import SCOPED_TABLE, Scope, ScopeDeclarations, ScopeSite, scoped_module_text
from jobgate.generate.cel.podtemplate import TemplateSite, pod_template_rules
from jobgate.generate.manifests import declared_families, declared_kinds, every_family_kind, package_tables
from jobgate.rules.names import DNS1123_SUBDOMAIN_MESSAGE, dns1123_label_problems
from jobgate.rules.podtemplate import check_pod_template
from jobgate.rules.podtemplate_declared import CONTAINER

ROLES = Roles("spec.members", "role", ("LEADER", "FOLLOWER", "OBSERVER"))
TOY = (
    DefaultField("toy/mode", "spec.mode", "solo", empty_is_unset=True),
    DefaultField("toy/nested", "spec.scheduler.settings.priority", 0),
    DefaultItemField("toy/replicas", "spec.members", "replicas", 1, entry="member"),
    DefaultItemField("toy/role", "spec.members", "role", "FOLLOWER", empty_is_unset=True, entry="member"),
    DefaultItemField(
        "toy/name", "spec.members", "name", ("LEADER", "OBSERVER"), empty_is_unset=True, from_field="role"
    ),
    MaxItems("toy/bounds", (("spec.members", 4), ("spec.volumes", 2))),
    UniqueBy("toy/roles-unique", "spec.members", "role", among=ROLES.among),
    UniqueBy("toy/volume-names-unique", "spec.volumes", "name"),
    RequiredRoles(
        "toy/team", "a team has a leader", ROLES, ("LEADER",), "team without {role}", when=When("spec.mode", "team")
    ),
    ForbiddenRoles(
        "toy/solo", "solo: no observer", ROLES, ("OBSERVER",), "solo has no observer", when=When("spec.mode", "solo")
    ),
    RoleFieldBound(
        "toy/leader", "one leader replica", ROLES, "LEADER", "replicas", "one leader", minimum=1, maximum=1, every=True
    ),
    RoleFieldBound(
        "toy/followers", "at most 3 followers", ROLES, "FOLLOWER", "replicas", "too many followers", maximum=3
    ),
    AtMostSum("toy/quorum", "quorum at most the replicas", "spec.quorum", "spec.members", "replicas", "quorum too big"),
    Immutable("toy/mode-immutable", "the mode stays", "spec.mode"),
)
DECLARED = Declarations(TOY)


@pytest.fixture(scope="module")
def generated():
    """The toy kind's generated module, compiled and loaded as jobgate manifests generate writes one."""
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("toy.example.com", "ToyJob", DECLARED)]), "toy", "exec"), namespace)
    return namespace


def _job(mode="team", members=None, **spec):
    members = (
        members if members is not None else [{"role": "LEADER", "replicas": 1}, {"role": "FOLLOWER", "replicas": 2}]
    )
    return {"spec": {"mode": mode, "members": members, **spec}}


def _errors(generated, obj, old=None):
    return [str(e) for e in generated["validate_toyjob_toy_example_com"](obj, old)]


def _explained(obj, old, generated):
    """Every error of the generated check is explained by the record of its own declaration."""
    rules = {r.id: r for r in DECLARED.rules()}
    for error in generated["validate_toyjob_toy_example_com"](obj, old):
        assert [i for i, r in rules.items() if r.explains(error)], str(error)


def test_defaults_in_declaration_order_entry_by_entry(generated):
    recorder = PatchRecorder()
    obj = {
        "spec": {"mode": "", "members": [{"role": ""}, {"role": "LEADER", "name": ""}], "scheduler": {"settings": {}}}
    }
    out = generated["default_toyjob_toy_example_com"](obj, recorder)
    assert out["spec"]["mode"] == "solo"
    assert out["spec"]["scheduler"]["settings"]["priority"] == 0
    assert out["spec"]["members"] == [
        {"role": "FOLLOWER", "replicas": 1},
        {"role": "LEADER", "name": "LEADER", "replicas": 1},
    ]
    assert [op["path"] for op in recorder.ops] == [
        "/spec/mode",
        "/spec/scheduler/settings/priority",
        "/spec/members/0/replicas",
        "/spec/members/0/role",
        "/spec/members/1/replicas",
        "/spec/members/1/name",
    ]
    assert obj["spec"]["members"][0] == {"role": ""}, "the input is not modified"


def test_a_nested_default_never_creates_its_parents(generated):
    out = generated["default_toyjob_toy_example_com"]({"spec": {"mode": "team"}}, PatchRecorder())
    assert "scheduler" not in out["spec"]


def test_valid_job(generated):
    assert _errors(generated, _job()) == []


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            _job(volumes=[{"name": "a"}, {"name": "b"}, {"name": "c"}]),
            ["spec.volumes: Too many: 3: must have at most 2 items"],
        ),
        (
            _job(members=[{"role": "LEADER", "replicas": 1}, {"role": "LEADER", "replicas": 1}]),
            ['spec.members[1].role: Duplicate value: "LEADER"'],
        ),
        (
            _job(members=[{"role": "LEADER", "replicas": 1}, {"role": "CHIEF"}, {"role": "CHIEF"}]),
            [],  # an unknown role is the schema's to name
        ),
        (_job(volumes=[{"name": "a"}, {"name": "a"}]), ['spec.volumes[1].name: Duplicate value: "a"']),
        (_job(members=[{"role": "FOLLOWER", "replicas": 1}]), ["spec.members: Required value: team without LEADER"]),
        (
            _job("solo", members=[{"role": "FOLLOWER", "replicas": 1}, {"role": "OBSERVER", "replicas": 1}]),
            ['spec.members[1].role: Invalid value: "OBSERVER": solo has no observer'],
        ),
        (
            _job(members=[{"role": "LEADER", "replicas": 2}, {"role": "FOLLOWER", "replicas": 1}]),
            ["spec.members[0].replicas: Invalid value: 2: one leader"],
        ),
        (
            _job(members=[{"role": "LEADER", "replicas": 1}, {"role": "FOLLOWER", "replicas": 4}]),
            ["spec.members[1].replicas: Invalid value: 4: too many followers"],
        ),
        (_job(quorum=4), ["spec.quorum: Invalid value: 4: quorum too big"]),
        (_job(quorum=3), []),
    ],
)
def test_each_form_in_python(generated, obj, expected):
    assert _errors(generated, obj) == expected
    _explained(obj, None, generated)


def test_a_sum_says_it_in_the_words_of_the_operation():
    rule = AtMostSum("s", "", "spec.quorum", "spec.members", "replicas", "on create", update_message="on update")
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("s.example.com", "S", Declarations((rule,)))]), "s", "exec"), namespace)
    check = namespace["validate_s_s_example_com"]
    job = {"spec": {"quorum": 1}}  # no list: a sum of 0
    assert [str(e) for e in check(job, None)] == ["spec.quorum: Invalid value: 1: on create"]
    assert [str(e) for e in check(job, job)] == ["spec.quorum: Invalid value: 1: on update"]
    (compiled,) = Declarations((rule,)).rules()
    assert [p.validation.optional_old_self for p in compiled.placements] == [True, True]
    assert [p.detail for p in compiled.produces] == ["^on create$", "^on update$"]


def test_every_role_bound_checks_each_entry_of_the_role(generated):
    obj = _job(members=[{"role": "LEADER", "replicas": 1}, {"role": "LEADER", "replicas": 0}])
    assert "spec.members[1].replicas: Invalid value: 0: one leader" in _errors(generated, obj)


def test_immutable_on_update_only(generated):
    assert _errors(generated, _job("solo", members=[]), None) == []
    old = _job("team")
    assert _errors(generated, _job("team"), old) == []
    changed = _job("solo", members=[{"role": "LEADER", "replicas": 1}])
    assert _errors(generated, changed, old) == ["spec.mode: Forbidden: field is immutable"]
    _explained(changed, old, generated)
    removed = {"spec": {"members": old["spec"]["members"]}}
    assert _errors(generated, removed, old) == ["spec.mode: Forbidden: field is immutable"]
    assert _errors(generated, {"spec": {"mode": None, **removed["spec"]}}, removed) == [], "a null is no value"


def test_where_each_form_goes():
    rules = {r.id: r for r in DECLARED.rules()}
    assert rules["toy/bounds"].where is Where.SCHEMA
    assert [p.keywords for p in rules["toy/bounds"].placements] == [{"maxItems": 4}, {"maxItems": 2}]
    # A key no default rereads: a list-map key, linear in the apiserver, reported at the entry.
    (list_map,) = rules["toy/volume-names-unique"].placements
    assert list_map.keywords == {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}
    assert rules["toy/volume-names-unique"].produces[0].apiserver_drops == 1
    # A key whose "" reads as its default: a CRD rule that reads through it, the list bounded.
    bound, rule = rules["toy/roles-unique"].placements
    assert bound.keywords == {"maxItems": 3}
    assert "'FOLLOWER'" in rule.validation.rule
    assert rules["toy/mode-immutable"].where is Where.TRANSITION
    assert rules["toy/mode-immutable"].placements[0].at == ("spec",)
    assert "oldSelf.mode" in rules["toy/mode-immutable"].placements[0].validation.rule
    defaults = {d.id: d for d in DECLARED.defaults()}
    assert defaults["toy/name"].where is Where.MUTATING_POLICY and not defaults["toy/name"].placements
    assert defaults["toy/replicas"].placements[0].at == ("spec", "members", "[]", "replicas")
    assert "has(object.spec.scheduler) && has(object.spec.scheduler.settings)" in defaults["toy/nested"].patches[0]


def test_records_are_exact_messages():
    rules = {r.id: r for r in DECLARED.rules()}
    assert rules["toy/leader"].produces[0].detail == "^one leader$"
    assert rules["toy/team"].produces[0].detail == "^team without (LEADER)$"


def test_declarations_a_form_cannot_compile_are_refused():
    with pytest.raises(FormError):
        Declarations((MaxItems("a", ()), MaxItems("a", ())))
    with pytest.raises(FormError):
        RequiredRoles("x", "", ROLES, ("LEADER",), "m", when=When("metadata.name", "x"))
        Declarations((RequiredRoles("x", "", ROLES, ("LEADER",), "m", when=When("metadata.name", "x")),)).rules()
    with pytest.raises(FormError):
        Declarations(
            (
                DefaultItemField("d", "spec.members", "role", "FOLLOWER", empty_is_unset=True),
                UniqueBy("u", "spec.members", "role"),
            )
        ).rules()


def test_the_cost_report_names_each_generated_rule():
    report = cost_report([("toy.example.com", "ToyJob", DECLARED)])
    assert "ToyJob (toy.example.com) toy/volume-names-unique: linear (list-map key)" in report
    assert "ToyJob (toy.example.com) toy/roles-unique: quadratic, bounded by 3 entries" in report


def test_the_generated_modules_are_the_declarations():
    """`jobgate manifests generate` writes one per family; --check (and test_cli_offline) fail when one is
    stale. Each holds its family's kinds' functions, and imports only what they call."""
    tables = {str(path): text for path, text in package_tables().items()}
    families = declared_families(every_family_kind())
    assert {"kubedl", "kubeflow", "mlkube", "volcano", "t9k", "diengine"} <= {family for family, _ in families}
    declared = {(group, kind) for group, kind, _ in declared_kinds(every_family_kind())}
    assert ("mxnet.mlkube.io", "MxJob") in declared
    for family, kinds in families:
        path = declared_module_path(family)
        assert tables[path] == Path(path).read_text()
        module = importlib.import_module(f"jobgate._generated.declared.{family}")
        for group, kind, _ in kinds:
            name = f"{kind}_{group}".replace(".", "_").replace("-", "_").lower()
            assert callable(getattr(module, f"validate_{name}"))
            assert callable(getattr(module, f"default_{name}"))
    # KubeDL's calls import none of Volcano's or T9k's runtime twins.
    assert "form_checks" not in Path(declared_module_path("kubedl")).read_text()


# --- generic field forms ---------------------------------------------------------------------------

FIELDS = Declarations(
    (
        RequiredField("f/type", "each task has a type", "spec.tasks[*].type", "needs a type", empty_is_unset=True),
        # Two checks of one rule: the role is there, with one replica.
        RequiredField("f/master", "one Master", "spec.reps[Master]", "must be present"),
        FieldBound("f/master", "one Master", "spec.reps[Master].replicas", 1, 1, "must be 1"),
        ForbiddenField(
            "f/solo-port",
            "a solo task opens no port",
            "spec.tasks[*].port",
            "solo",
            when=When("spec.tasks[*].mode", "solo"),
        ),
        FieldBound("f/replicas", "no negative replicas", "spec.reps{*}.replicas", minimum=0),
        StringField("f/names", "names", ("spec.tasks[*].name", "spec.name"), pattern="^[a-z]+$", max_length=8),
        StringField("f/kind", "kinds", "spec.reps{*}.kind", enum=("a", "b"), message="kind a or b"),
        StringField("f/mode", "modes", "spec.mode", enum=("solo", "team")),
        RequiredField("f/policy", "a run policy names its policy", "spec.run.policy"),
        AtMostOneOf("f/one-leader", "one leader", "spec.reps", ("[Chief]", "[Master]"), "one of Chief or Master"),
    )
)


@pytest.fixture(scope="module")
def fields():
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("f.example.com", "F", FIELDS)]), "f", "exec"), namespace)
    return namespace["validate_f_f_example_com"]


def _field_job(**spec):
    base = {"tasks": [{"type": "a", "name": "one"}], "reps": {"Master": {"replicas": 1}, "Worker": {"kind": "a"}}}
    return {"spec": {**base, **spec}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, []),
        (
            {"tasks": [{"type": ""}, {"name": "b"}]},
            ["spec.tasks[0].type: Required value: needs a type"] * 1
            + ["spec.tasks[1].type: Required value: needs a type"],
        ),
        ({"reps": {"Worker": {}}}, ["spec.reps[Master]: Required value: must be present"]),
        ({"reps": {"Master": {"replicas": 2}}}, ["spec.reps[Master].replicas: Invalid value: 2: must be 1"]),
        ({"reps": {"Master": {"replicas": None}}}, []),  # null is unset: the apiserver drops it
        (
            {"tasks": [{"type": "a", "mode": "solo", "port": 1}, {"type": "a", "port": 2}]},
            ["spec.tasks[0].port: Forbidden: solo"],
        ),
        (
            {"reps": {"Master": {}, "Worker": {"replicas": -1}}},
            [
                "spec.reps[Worker].replicas: Invalid value: -1: spec.reps[Worker].replicas in body should be "
                "greater than or equal to 0"
            ],
        ),
        (
            {"tasks": [{"type": "a", "name": "abcdefghi"}], "name": "A"},
            [
                "spec.tasks[0].name: Too long: may not be more than 8 bytes",
                "spec.name: Invalid value: \"A\": spec.name in body should match '^[a-z]+$'",
            ],
        ),
        (
            {"reps": {"Master": {}, "Worker": {"kind": "c"}}},
            ['spec.reps[Worker].kind: Invalid value: "c": kind a or b'],
        ),
        ({"mode": "duo"}, ['spec.mode: Unsupported value: "duo": supported values: "solo", "team"']),
        ({"run": {}}, ["spec.run.policy: Required value"]),
        (
            {"reps": {"Master": {"replicas": 1}, "Chief": {}}},
            ["spec.reps: Forbidden: one of Chief or Master"],
        ),
        ({"run": {"policy": "x"}, "tasks": "not a list", "reps": "not a map"}, []),  # the schema names the types
    ],
)
def test_each_field_form_in_python(fields, spec, expected):
    obj = _field_job(**spec)
    assert [str(e) for e in fields(obj, None)] == expected
    rules = {r.id: r for r in FIELDS.rules()}
    for error in fields(obj, None):
        assert [i for i, r in rules.items() if r.explains(error)], str(error)


def test_where_each_field_form_goes():
    rules = {r.id: r for r in FIELDS.rules()}
    # Without a message or condition, the schema keyword in the apiserver's own words.
    assert rules["f/replicas"].where is Where.SCHEMA
    assert [(p.at, p.keywords) for p in rules["f/replicas"].placements] == [
        (("spec", "reps", "*", "replicas"), {"minimum": 0})
    ]
    assert [(p.at, p.keywords) for p in rules["f/names"].placements] == [
        (("spec", "tasks", "[]", "name"), {"pattern": "^[a-z]+$", "maxLength": 8}),
        (("spec", "name"), {"pattern": "^[a-z]+$", "maxLength": 8}),
    ]
    assert rules["f/mode"].placements[0].keywords == {"enum": ["solo", "team"]}
    assert rules["f/policy"].placements[0].keywords == {"required": ["policy"]}
    # With a message: a CRD rule on each entry, which names the field.
    (each,) = rules["f/type"].placements
    assert each.at == ("spec", "tasks", "[]")
    assert each.validation.as_schema() == {
        "rule": "has(self.type) && self.type != ''",
        "message": "needs a type",
        "fieldPath": ".type",
        "reason": "FieldValueRequired",
    }
    # A condition read in the same entry.
    (solo,) = rules["f/solo-port"].placements
    assert solo.validation.rule == "!(has(self.mode) && self.mode == 'solo') || !has(self.port)"
    # Field forms of one id are one rule; a map key is read from the map, the rule sits on it.
    master = rules["f/master"]
    assert master.where is Where.CRD_RULE
    assert [p.path for p in master.produces] == ["spec.reps[Master]", "spec.reps[Master].replicas"]
    assert [p.validation.field_path for p in master.placements] == ["['Master']", "['Master'].replicas"]
    assert master.placements[1].validation.rule == (
        "!('Master' in self) || !has(self['Master'].replicas) || self['Master'].replicas == 1"
    )
    assert rules["f/kind"].produces[0].path == "spec.reps[*].kind"
    (one,) = rules["f/one-leader"].placements
    assert (one.at, one.validation.rule, one.validation.field_path) == (
        ("spec", "reps"),
        "('Chief' in self ? 1 : 0) + ('Master' in self ? 1 : 0) <= 1",
        "",
    )


def test_field_forms_a_form_cannot_compile_are_refused():
    with pytest.raises(FormError):  # a condition in another entry's list
        Declarations((ForbiddenField("x", "", "spec.a[*].b", "m", when=When("spec.c[*].d", "e")),)).rules()
    with pytest.raises(FormError):  # a CRD rule needs the message
        Declarations((RequiredField("x", "", "spec.a[Master]"),)).rules()
    with pytest.raises(FormError):
        Declarations((FieldBound("x", "", "spec.a"),)).rules()
    with pytest.raises(FormError):
        Declarations((RequiredField("x", "", "spec..a"),)).rules()
    with pytest.raises(FormError):  # an id shared by a field form and another form
        Declarations((RequiredField("x", "", "spec.a"), MaxItems("x", (("spec.b", 1),))))


def test_the_cost_of_field_forms():
    report = cost_report([("f.example.com", "F", FIELDS)])
    assert "F (f.example.com) f/replicas: constant (schema keyword)" in report
    assert "F (f.example.com) f/type: constant (CRD rule on each entry)" in report


def test_a_label_in_kubernetes_words_and_a_unique_key_that_is_no_list_map_key():
    declared = Declarations(
        (
            StringField("l/name", "names are labels", "spec.ports[*].name", label=True),
            UniqueBy("l/unique", "spec.ports", "name", list_map=False),
        )
    )
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("l.example.com", "L", declared)]), "l", "exec"), namespace)
    check = namespace["validate_l_l_example_com"]
    job = {"spec": {"ports": [{"name": "Bad_Name"}, {"name": ""}, {"name": "http"}, {"name": "http"}, {}]}}
    errors = check(job, None)
    assert [str(e) for e in errors][1:] == ['spec.ports[3].name: Duplicate value: "http"']
    assert str(errors[0]).startswith('spec.ports[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 label')
    rules = {r.id: r for r in declared.rules()}
    for error in errors:
        assert [i for i, r in rules.items() if r.explains(error)], str(error)
    # The label's keywords (an empty name is a RequiredField's to refuse); the uniqueness a CRD rule on the
    # list, which no missing key can break (a list-map key needs every entry to have it).
    assert rules["l/name"].where is Where.SCHEMA
    assert rules["l/name"].placements[0].keywords == {
        "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$",
        "maxLength": 63,
    }
    (unique,) = rules["l/unique"].placements
    assert (unique.at, unique.keywords, rules["l/unique"].where) == (("spec", "ports"), {}, Where.CRD_RULE)
    assert "lastIndexOf" in unique.validation.rule  # no pairs: catalogue.unique_values
    assert rules["l/unique"].produces[0].apiserver_drops == 2
    assert ("l/unique", "quadratic, bounded by the list's maxItems (CRD rule)") in declared.cost()


def test_a_default_another_field_replaces_and_a_list_default():
    declared = Declarations(
        (
            DefaultField("d/rate", "spec.rate", 90, unless=("spec.count",)),
            DefaultItemField("d/command", "spec.run.debug.entries", "command", ["sleep", "inf"], entry="entry"),
        )
    )
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("d.example.com", "D", declared)]), "d", "exec"), namespace)
    default = namespace["default_d_d_example_com"]
    job = {"spec": {"run": {"debug": {"entries": [{}, {"command": ["x"]}, {}]}}}}
    out = default(job, PatchRecorder())
    assert out["spec"]["rate"] == 90
    entries = out["spec"]["run"]["debug"]["entries"]
    assert entries == [{"command": ["sleep", "inf"]}, {"command": ["x"]}, {"command": ["sleep", "inf"]}]
    assert entries[0]["command"] is not entries[2]["command"], "each entry its own list"
    assert "rate" not in default({"spec": {"count": 3}}, PatchRecorder())["spec"]
    defaults = {d.id: d for d in declared.defaults()}
    # Replaced by another field: a policy patch only; the list default a schema default too.
    assert defaults["d/rate"].where is Where.MUTATING_POLICY and not defaults["d/rate"].placements
    assert defaults["d/rate"].patches[0].startswith("!has(object.spec.count) && !has(object.spec.rate) ? ")
    assert defaults["d/command"].placements[0].keywords == {"default": ["sleep", "inf"]}
    assert (
        defaults["d/command"]
        .patches[0]
        .startswith("(has(object.spec.run) && has(object.spec.run.debug) && has(object.spec.run.debug.entries)) ? ")
    )
    assert "value: ['sleep', 'inf']" in defaults["d/command"].patches[0]


def test_an_object_default_and_its_fields_are_one_default():
    policy = {"policy": "OnFailure", "limit": 0}
    declared = Declarations(
        (
            DefaultItemField("o/policy", "spec.members", "restartPolicy", policy, summary="the restart policy"),
            DefaultItemField("o/policy", "spec.members", "restartPolicy.policy", "OnFailure", empty_is_unset=True),
            DefaultItemField("o/policy", "spec.members", "restartPolicy.limit", 0),
        )
    )
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("o.example.com", "O", declared)]), "o", "exec"), namespace)
    recorder = PatchRecorder()
    job = {"spec": {"members": [{}, {"restartPolicy": {"policy": ""}}, {"restartPolicy": {"limit": 3}}]}}
    out = namespace["default_o_o_example_com"](job, recorder)
    assert [m["restartPolicy"] for m in out["spec"]["members"]] == [policy, policy, {"limit": 3, "policy": "OnFailure"}]
    assert [op["path"] for op in recorder.ops] == [
        "/spec/members/0/restartPolicy",
        "/spec/members/1/restartPolicy/policy",
        "/spec/members/1/restartPolicy/limit",
        "/spec/members/2/restartPolicy/policy",
    ]
    assert job["spec"]["members"][1] == {"restartPolicy": {"policy": ""}}, "the input is not modified"
    (default,) = declared.defaults()
    assert (default.id, default.summary, default.where) == ("o/policy", "the restart policy", Where.SCHEMA_DEFAULT)
    assert [p.at for p in default.placements] == [
        ("spec", "members", "[]", "restartPolicy"),
        ("spec", "members", "[]", "restartPolicy", "policy"),
        ("spec", "members", "[]", "restartPolicy", "limit"),
    ]
    assert "value: {'policy': dyn('OnFailure'), 'limit': dyn(0)}" in default.patches[0]
    assert default.patches[2].startswith(
        "has(object.spec.members) ? object.spec.members.transformList(i, e, has(e.restartPolicy) && "
    )
    with pytest.raises(FormError):  # one id, two lists
        Declarations(
            (DefaultItemField("x", "spec.a", "f", 1), DefaultItemField("x", "spec.b", "f", 1)),
        )


def test_a_default_of_a_list_in_each_value_of_a_map():
    declared = Declarations(
        (
            DefaultItemField(
                "m/policy",
                "spec.roles{*}.template.spec.containers",
                "policy",
                "Fallback",
                empty_is_unset=True,
                entry="container",
                summary="every container's policy: Fallback",
            ),
        )
    )
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("m.example.com", "M", declared)]), "m", "exec"), namespace)
    recorder = PatchRecorder()
    one = {"template": {"spec": {"containers": [{"name": "a"}, {"policy": "File"}, {"policy": ""}, "x"]}}}
    job = {"spec": {"roles": {"A~1/B": one, "C": {"template": {}}, "D": 3}}}
    out = namespace["default_m_m_example_com"](job, recorder)
    assert out["spec"]["roles"]["A~1/B"]["template"]["spec"]["containers"] == [
        {"name": "a", "policy": "Fallback"},
        {"policy": "File"},
        {"policy": "Fallback"},
        "x",
    ]
    assert out["spec"]["roles"]["C"] == {"template": {}} and out["spec"]["roles"]["D"] == 3
    # The map's key escaped in the pointer, as the policy's jsonpatch.escapeKey does.
    assert [op["path"] for op in recorder.ops] == [
        "/spec/roles/A~01~1B/template/spec/containers/0/policy",
        "/spec/roles/A~01~1B/template/spec/containers/2/policy",
    ]
    assert "policy" not in job["spec"]["roles"]["A~1/B"]["template"]["spec"]["containers"][0], "input untouched"
    (default,) = declared.defaults()
    # In an object the CRD keeps whole (a pod template): a policy patch only, no schema default.
    assert (default.summary, default.where, default.placements) == (
        "every container's policy: Fallback",
        Where.MUTATING_POLICY,
        (),
    )
    assert default.patches[0].startswith(
        "(has(object.spec.roles) ? object.spec.roles.filter(k, (has(object.spec.roles[k].template) && "
        "has(object.spec.roles[k].template.spec) && has(object.spec.roles[k].template.spec.containers)))"
    )
    assert (
        "path: '/spec/roles/' + jsonpatch.escapeKey(k) + '/template/spec/containers/' + string(i) + '/policy'"
        in (default.patches[0])
    )
    with pytest.raises(FormError):  # one map deep, a field of the entry
        Declarations((DefaultItemField("n", "spec.a{*}.b{*}.c", "f", 1),)).defaults()


def test_a_framework_port_on_each_roles_template():
    def port_default(**options):
        declared = Declarations(
            (DefaultTemplatePort("p/port", "the port", "spec.roles", ("A", "B"), "main", "fw", 7, **options),)
        )
        namespace: dict[str, object] = {}
        exec(compile(declared_module_text([("p.example.com", "P", declared)]), "p", "exec"), namespace)
        return namespace["default_p_p_example_com"], declared

    def template(*containers):
        return {"template": {"spec": {"containers": list(containers)}}}

    port = {"name": "fw", "containerPort": 7}
    job = {
        "spec": {
            "roles": {
                "A": template({"name": "side"}, {"name": "main", "ports": [{"name": "x"}]}),
                "B": template({"name": "side"}),
                "C": template({"name": "main"}),
                "X": template({"name": "main"}),
                "D~1": template({"name": "main", "ports": [{"name": "fw", "containerPort": 1}]}),
            }
        }
    }
    default, declared = port_default()
    recorder = PatchRecorder()
    roles = default(job, recorder)["spec"]["roles"]
    assert roles["A"]["template"]["spec"]["containers"][1]["ports"] == [{"name": "x"}, port]
    assert roles["B"]["template"]["spec"]["containers"] == [{"name": "side", "ports": [port]}], "the first container"
    assert roles["C"] == job["spec"]["roles"]["C"], "not a role of the port"
    assert [op["path"] for op in recorder.ops] == [
        "/spec/roles/A/template/spec/containers/1/ports/1",
        "/spec/roles/B/template/spec/containers/0/ports",
    ]
    assert "ports" not in job["spec"]["roles"]["B"]["template"]["spec"]["containers"][0], "the input is not modified"
    # A type not among the known ones too (others), and only on the named container (requires_named).
    default, _ = port_default(others=True, known=("A", "B", "C"), requires_named=True)
    recorder = PatchRecorder()
    roles = default(job, recorder)["spec"]["roles"]
    assert roles["X"]["template"]["spec"]["containers"] == [{"name": "main", "ports": [port]}]
    assert "ports" not in roles["B"]["template"]["spec"]["containers"][0]
    assert [op["path"] for op in recorder.ops] == [
        "/spec/roles/A/template/spec/containers/1/ports/1",
        "/spec/roles/X/template/spec/containers/0/ports",
    ]
    (record,) = declared.defaults()
    assert (record.id, record.summary, record.where, record.placements) == (
        "p/port",
        "the port",
        Where.MUTATING_POLICY,
        (),
    )
    patch = record.patches[0]
    assert "object.spec.roles.filter(k, has(object.spec.roles[k].template) && k in ['A', 'B'] && " in patch
    assert "value: {'name': dyn('fw'), 'containerPort': dyn(7)}" in patch
    assert "i == 0 && " in patch, "the first container when none is named main"
    (named,) = Declarations(
        (DefaultTemplatePort("p/port", "p", "spec.roles", ("A",), "m", "fw", 7, requires_named=True, others=True),)
    ).defaults()
    assert "i == 0" not in named.patches[0] and "(k in ['A'] || !(k in []))" in named.patches[0]


# --- the forms only Volcano uses, the zero of a number as "empty", and ``only`` ------------------

FLOW = (
    DefaultField("flow/retries", "spec.retries", 3, empty_is_unset=True),
    DefaultItemField("flow/step-retries", "spec.steps", "retries", 2, empty_is_unset=True, entry="step"),
    DefaultItemField("flow/step-kind", "spec.steps", "kind", "plain", entry="step"),
    Acyclic("flow/dag", "steps form a DAG", "spec.steps", "name", "after.names", "no DAG", 4, missing=" ({names}?)"),
    KnownKeys("flow/hooks", "known hooks", "spec.hooks", ("pre", "post"), "no hook {key} here"),
    FixedCount("flow/step-count", "steps stay", "spec.steps", "steps may not come or go"),
    Subdomain("flow/class", "a class is a subdomain", "spec.className", create_only=True),
    DefaultIndexed("flow/step-name", "a step's name: step<index>", "spec.steps", "name", "step", empty_is_unset=True),
    DefaultSum("flow/total", "total: the steps' retries", "spec.total", "spec.steps", "retries", empty_is_unset=True),
    ImpliedKeys("flow/implied-hooks", "pre implies post and log", "spec.hooks", (("pre", ("post", "log")),)),
    FlagNamesEntry(
        "flow/leader",
        "--leader names a step",
        "spec.hooks",
        "post",
        "leader",
        "main",
        "spec.steps",
        "name",
        "no leader",
        8,
    ),
)
FLOW_DECLARED = Declarations(FLOW)


@pytest.fixture(scope="module")
def flow():
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("flow.example.com", "Flow", FLOW_DECLARED)]), "flow", "exec"), namespace)
    return namespace


def _flow_errors(flow, obj, old=None, only=()):
    errors = flow["validate_flow_flow_example_com"](obj, old, only)
    rules = {r.id: r for r in FLOW_DECLARED.rules()}
    for error in errors:
        assert [i for i, r in rules.items() if r.explains(error)], str(error)
    return [str(e) for e in errors]


def test_a_zero_number_is_empty_and_only_picks_defaults(flow):
    recorder = PatchRecorder()
    obj = {"spec": {"retries": 0, "steps": [{"retries": 0.0}, {"retries": 1, "kind": "x"}]}}
    out = flow["default_flow_flow_example_com"](obj, recorder, ("flow/step-retries",))
    assert out["spec"] == {"retries": 0, "steps": [{"retries": 2}, {"retries": 1, "kind": "x"}]}
    out = flow["default_flow_flow_example_com"](obj, PatchRecorder())
    assert out["spec"]["retries"] == 3 and out["spec"]["steps"][0] == {"retries": 2, "kind": "plain", "name": "step0"}
    defaults = {d.id: d for d in FLOW_DECLARED.defaults()}
    assert "object.spec.retries == 0" in defaults["flow/retries"].patches[0]
    assert "e.retries == 0" in defaults["flow/step-retries"].patches[0]


def _steps(*steps):
    return [{"name": name, **({"after": {"names": list(after)}} if after is not None else {})} for name, after in steps]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"spec": {"steps": _steps(("a", None), ("b", "a"), ("c", "ab"))}}, []),
        (
            {"spec": {"steps": _steps(("a", "b"), ("b", "a"), ("c", None))}},
            [
                'spec.steps[0].after.names: Invalid value: ["b"]: no DAG',
                'spec.steps[1].after.names: Invalid value: ["a"]: no DAG',
            ],
        ),
        ({"spec": {"steps": _steps(("a", "a"))}}, ['spec.steps[0].after.names: Invalid value: ["a"]: no DAG']),
        (
            {"spec": {"steps": _steps(("a", "zy"))}},
            ['spec.steps[0].after.names: Invalid value: ["z","y"]: no DAG (y, z?)'],
        ),
        ({"spec": {"hooks": {"pre": [], "mid": []}}}, ['spec.hooks[mid]: Invalid value: "mid": no hook mid here']),
        ({"spec": {"className": "Gold"}}, None),
        ({"spec": {"className": ""}}, []),
        ({"spec": {"steps": _steps(("a", None), ("b", None)), "hooks": {"post": ["-x", "--leader=b"]}}}, []),
        ({"spec": {"steps": _steps(("main", None)), "hooks": {"post": ["--leader="]}}}, []),
        (
            {"spec": {"steps": _steps(("a", None)), "hooks": {"post": ["-leader", "z", "--leader=a"]}}},
            ['spec.hooks[post]: Invalid value: "z": no leader'],
        ),
        (
            {"spec": {"steps": _steps(("a", None)), "hooks": {"post": ["--leader"]}}},
            ['spec.hooks[post]: Invalid value: "main": no leader'],
        ),
    ],
)
def test_each_volcano_form_in_python(flow, obj, expected):
    errors = _flow_errors(flow, obj)
    if expected is None:
        assert len(errors) == 1 and errors[0].startswith('spec.className: Invalid value: "Gold": a lowercase RFC 1123')
    else:
        assert errors == expected


def test_volcano_forms_on_update_and_only(flow):
    old = {"spec": {"steps": _steps(("a", None)), "className": "Gold"}}
    grown = {"spec": {"steps": _steps(("a", None), ("b", "b")), "className": "Gold"}}
    # On UPDATE: the count is checked, the CREATE-only rules are not (the DAG's is not create_only here).
    assert _flow_errors(flow, grown, old, ("flow/step-count", "flow/class")) == [
        "spec.steps: Forbidden: steps may not come or go"
    ]
    assert _flow_errors(flow, grown, None, ("flow/dag",)) == ['spec.steps[1].after.names: Invalid value: ["b"]: no DAG']
    assert _flow_errors(flow, {"spec": {}}, {"spec": {"steps": []}}) == []


def test_where_the_volcano_forms_go():
    rules = {r.id: r for r in FLOW_DECLARED.rules()}
    assert rules["flow/step-count"].where is Where.TRANSITION
    assert rules["flow/step-count"].placements[0].validation.rule == (
        "(has(self.steps) ? size(self.steps) : 0) == (has(oldSelf.steps) ? size(oldSelf.steps) : 0)"
    )
    dag = rules["flow/dag"].placements[0].validation
    assert dag.rule.count(".all(s") == 4, "one round per entry the list may have"
    assert rules["flow/dag"].produces[0].apiserver_drops == 3
    bound, known = rules["flow/hooks"].placements
    assert bound.keywords == {"maxProperties": 2} and known.validation.rule == "self.all(k, k in ['pre', 'post'])"
    assert all(p.validation.optional_old_self for p in rules["flow/class"].placements)
    leader = rules["flow/leader"].placements[0]
    assert leader.at == ("spec",) and leader.validation.field_path == ".hooks['post']"
    assert leader.validation.rule.count("p < size(self.hooks['post'])") == 1 and "[0, 1, 2, 3, 4, 5, 6, 7]" in (
        leader.validation.rule
    )
    report = cost_report([("flow.example.com", "Flow", FLOW_DECLARED)])
    assert "Flow (flow.example.com) flow/step-count: constant" in report


def test_volcano_default_forms(flow):
    recorder = PatchRecorder()
    obj = {
        "spec": {"total": 0, "steps": [{"name": ""}, {"name": "b", "retries": 5}], "hooks": {"pre": [], "log": ["x"]}}
    }
    only = ("flow/step-name", "flow/total", "flow/implied-hooks")
    out = flow["default_flow_flow_example_com"](obj, recorder, only)
    assert out["spec"] == {
        "total": 5,
        "steps": [{"name": "step0"}, {"name": "b", "retries": 5}],
        "hooks": {"pre": [], "log": ["x"], "post": []},
    }
    assert [op["path"] for op in recorder.ops] == ["/spec/steps/0/name", "/spec/total", "/spec/hooks/post"]
    assert obj["spec"]["steps"][0] == {"name": ""}, "the input is not modified"
    # A total already given, or the sum 0 over a 0: kept; no list: nothing to add up.
    for spec in ({"total": 2, "steps": [{"retries": 1}]}, {"total": 0, "steps": []}, {}):
        recorder = PatchRecorder()
        flow["default_flow_flow_example_com"]({"spec": spec}, recorder, ("flow/total",))
        assert recorder.ops == []
    defaults = {d.id: d for d in FLOW_DECLARED.defaults()}
    assert all(defaults[i].where is Where.MUTATING_POLICY for i in only)
    assert "'step' + string(i)" in defaults["flow/step-name"].patches[0]
    assert (
        "object.spec.total == 0 && object.spec.steps.map(t, has(t.retries) ? t.retries : 0).sum() != 0"
        in (defaults["flow/total"].patches[0])
    )
    assert "!('log' in object.spec.hooks) && ('pre' in object.spec.hooks)" in defaults["flow/implied-hooks"].patches[0]


HOOKS = LifecyclePolicies(
    "h/hooks",
    ("spec.hooks", "spec.steps[*].hooks"),
    ("*", "Up", "Down"),
    ("Go", "Stop"),
    "*",
    both="not both",
    neither="one of them",
    action="bad action",
    event="bad event",
    event_twice="{event} twice",
    zero="no 0",
    code_twice="code {code} twice",
    not_alone="* alone",
)


def test_lifecycle_policies_in_python_and_their_rules():
    declared = Declarations((HOOKS,))
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("h.example.com", "H", declared)]), "h", "exec"), namespace)
    hooks = [
        {"event": "Up", "exitCode": 1},
        {},
        {"events": ["Up", "Up", "Side"], "event": "Down", "action": "Run"},
        {"event": "Up", "action": "Go"},
        {"exitCode": 0},
        {"exitCode": 3},
        {"exitCode": 3.0, "action": "Go"},
        {"events": ["*"], "action": "Go"},
    ]
    obj = {"spec": {"hooks": hooks, "steps": [{"hooks": [{"exitCode": 2}, {"exitCode": 2}]}, "x"]}}
    errors = namespace["validate_h_h_example_com"](obj, None, ("h/hooks",))
    assert [str(e) for e in errors] == [
        "spec.hooks[0].exitCode: Forbidden: not both",
        "spec.hooks[1]: Required value: one of them",
        'spec.hooks[2].action: Invalid value: "Run": bad action',
        'spec.hooks[2].events[2]: Invalid value: "Side": bad event',
        'spec.hooks[3].event: Duplicate value: "Up": Up twice',
        "spec.hooks[4].exitCode: Invalid value: 0: no 0",
        "spec.hooks[6].exitCode: Duplicate value: 3: code 3 twice",
        'spec.hooks: Invalid value: "*": * alone',
        "spec.steps[0].hooks[1].exitCode: Duplicate value: 2: code 2 twice",
    ]
    rules = {r.id: r for r in declared.rules()}
    assert sorted(rules) == sorted(
        f"h/hooks/{c}"
        for c in (
            "event-or-exit-code",
            "action",
            "events",
            "exit-code",
            "events-unique",
            "exit-codes-unique",
            "any-event-alone",
        )
    )
    for error in errors:
        assert [i for i, r in rules.items() if r.explains(error)], str(error)
    assert all(r.where is Where.CRD_RULE for r in rules.values())
    (job, step) = (p.at for p in rules["h/hooks/any-event-alone"].placements)
    assert (job, step) == (("spec", "hooks"), ("spec", "steps", LIST_ITEMS, "hooks"))
    unique = rules["h/hooks/events-unique"].placements[0].validation
    assert unique.message_expression.startswith(
        "'' + ['*', 'Up', 'Down'].filter(e, "
    ) and unique.message_expression.endswith("[0] + ' twice'")
    assert rules["h/hooks/exit-codes-unique"].placements[0].validation.message == (
        "code: two policies of the list have the same exitCode"
    )
    assert "h/hooks: quadratic" in " ".join(cost_report([("h.example.com", "H", declared)]))


def test_a_required_list_is_set_and_not_empty():
    declared = Declarations((RequiredList("l/steps", "steps", "spec.steps", "no steps"),))
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("l.example.com", "L", declared)]), "l", "exec"), namespace)
    check = namespace["validate_l_l_example_com"]
    for spec in ({}, {"steps": None}, {"steps": []}):
        assert [str(e) for e in check({"spec": spec}, None, ())] == ["spec.steps: Required value: no steps"]
    for obj in ({"spec": {"steps": [{}]}}, {"spec": "x"}, {}):
        assert check(obj, None, ()) == []
    (rule,) = declared.rules()
    assert rule.placements[0].at == ("spec",) and rule.placements[0].validation.rule == "has(self.steps)"
    assert rule.explains(check({"spec": {}}, None, ())[0])


def test_a_unique_name_reports_each_later_entry():
    declared = Declarations((UniqueName("u/names", "names once", "spec.steps", "name", "{name} again"),))
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("u.example.com", "U", declared)]), "u", "exec"), namespace)
    steps = [{"name": "a"}, {"name": "a"}, "x", {"name": 5}, {}, {"name": "a"}, {"name": "b"}]
    errors = namespace["validate_u_u_example_com"]({"spec": {"steps": steps}}, None, ())
    # A name that is no string reads as "" (Volcano's Go string): a second one is a duplicate too.
    assert [str(e) for e in errors] == [
        'spec.steps[1].name: Duplicate value: "a": a again',
        'spec.steps[4].name: Duplicate value: "":  again',
        'spec.steps[5].name: Duplicate value: "a": a again',
    ]
    (rule,) = declared.rules()
    assert rule.placements[0].at == ("spec", "steps") and rule.placements[0].validation.message_expression.startswith(
        "'' + self.map(t, (has(t.name) ? t.name : ''))"
    )
    assert all(rule.explains(e) for e in errors)


def test_a_required_item_field_names_its_entry():
    declared = Declarations((RequiredItemField("r/body", "a body", "spec.steps", "body", "step[{index}]: no body"),))
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("r.example.com", "R", declared)]), "r", "exec"), namespace)
    steps = [{"body": {}}, {}, "x", {"body": None}]
    errors = namespace["validate_r_r_example_com"]({"spec": {"steps": steps}}, None, ())
    assert [str(e) for e in errors] == [
        "spec.steps[1].body: Required value: step[1]: no body",
        "spec.steps[3].body: Required value: step[3]: no body",
    ]
    (rule,) = declared.rules()
    assert rule.where is Where.SCHEMA and rule.placements[0].keywords == {"required": ["body"]}
    assert rule.placements[0].at == ("spec", "steps", LIST_ITEMS) and all(rule.explains(e) for e in errors)


def test_bounds_walk_in_their_order():
    tree = (
        Bound("spec.steps", 2),
        Bound("spec.hooks{*}", 1, each=(Bound("", 3, string=True),)),
        Bound("spec.steps", each=(Bound("notes", 1, each=(Bound("text", 2, string=True),)),)),
    )
    declared = Declarations((Bounds("b/bounds", "bounds", tree),))
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("b.example.com", "B", declared)]), "b", "exec"), namespace)
    obj = {
        "spec": {
            "steps": [{"notes": [{"text": "abc"}, {"text": "é"}]}, {"notes": "x"}, {"notes": [{"text": "éé"}]}],
            "hooks": {"pre": ["ab", "abcd"], "post": "x"},
        }
    }
    errors = namespace["validate_b_b_example_com"](obj, None, ())
    # Bytes, not characters ("éé" is four); a map's key named as a field.
    assert [str(e) for e in errors] == [
        "spec.steps: Too many: 3: must have at most 2 items",
        "spec.hooks.pre: Too many: 2: must have at most 1 items",
        "spec.hooks.pre[1]: Too long: may not be more than 3 bytes",
        "spec.steps[0].notes: Too many: 2: must have at most 1 items",
        "spec.steps[0].notes[0].text: Too long: may not be more than 2 bytes",
        "spec.steps[2].notes[0].text: Too long: may not be more than 2 bytes",
    ]
    (rule,) = declared.rules()
    assert rule.where is Where.SCHEMA and all(rule.explains(e) for e in errors)
    assert [(p.at, p.keywords) for p in rule.placements] == [
        (("spec", "steps"), {"maxItems": 2}),
        (("spec", "hooks", MAP_VALUES), {"maxItems": 1}),
        (("spec", "hooks", MAP_VALUES, LIST_ITEMS), {"maxLength": 3}),
        (("spec", "steps", LIST_ITEMS, "notes"), {"maxItems": 1}),
        (("spec", "steps", LIST_ITEMS, "notes", LIST_ITEMS, "text"), {"maxLength": 2}),
    ]


def test_not_both_under_each_object():
    declared = Declarations(
        (NotBoth("n/tier", "a tier or its name", ("spec.net", "spec.parts[*].net"), "tier", "tierName", "one only"),)
    )
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("n.example.com", "N", declared)]), "n", "exec"), namespace)
    obj = {
        "spec": {
            "net": {"tier": 1, "tierName": "a"},
            "parts": [
                {"net": {"tier": 0, "tierName": ""}},
                {"net": {"tierName": "b"}},
                {"net": {"tier": 2, "tierName": "c"}},
            ],
        }
    }
    errors = namespace["validate_n_n_example_com"](obj, None, ())
    assert [str(e) for e in errors] == [
        "spec.net.tierName: Forbidden: one only",
        "spec.parts[2].net.tierName: Forbidden: one only",
    ]
    (rule,) = declared.rules()
    assert [p.at for p in rule.placements] == [("spec", "net"), ("spec", "parts", LIST_ITEMS, "net")]
    assert rule.placements[0].validation.rule == "!(has(self.tier) && has(self.tierName) && self.tierName != '')"
    assert all(rule.explains(e) for e in errors)


def test_claim_volumes_volume_by_volume():
    declared = Declarations(
        (
            ClaimVolumes(
                "d/disks",
                "spec.disks",
                "at",
                "make",
                "use",
                mount_required="at?",
                mount_twice="{path} twice",
                neither="make or use",
                both="not both",
                bad_name="use {name}: {problems}!",
            ),
        )
    )
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("d.example.com", "D", declared)]), "d", "exec"), namespace)
    disks = [
        {"at": "", "use": "ok"},
        {"at": "/a", "make": {}, "use": "x"},
        7,
        {"at": "/a", "use": "Bad"},
        {"at": "/b", "make": {}},
    ]
    errors = namespace["validate_d_d_example_com"]({"spec": {"disks": disks}}, None, ())
    assert [str(e) for e in errors] == [
        'spec.disks[0].at: Invalid value: "": spec.disks[0].at in body should be at least 1 chars long',
        "spec.disks[0].at: Required value: at?",
        'spec.disks[1].use: Invalid value: "x": not both',
        'spec.disks[3].at: Duplicate value: "/a": /a twice',
        f'spec.disks[3].use: Invalid value: "Bad": use Bad: {DNS1123_SUBDOMAIN_MESSAGE}!',
    ]
    assert namespace["validate_d_d_example_com"]({"spec": {"disks": [{"at": "/c"}]}}, None, ()) == [
        required(("spec", "disks", 0), "make or use")
    ]
    rules = {r.id: r for r in declared.rules()}
    assert sorted(rules) == [
        f"d/disks/{c}" for c in ("claim-conflict", "claim-name", "claim-required", "mount-path", "mount-paths-unique")
    ]
    for error in errors:
        assert [i for i, r in rules.items() if r.explains(error)], str(error)
    conflict = rules["d/disks/claim-conflict"].placements[0]
    assert conflict.at == ("spec",) and conflict.validation.optional_old_self
    assert rules["d/disks/mount-path"].placements[0].keywords == {"minLength": 1}
    name_checks = [p.validation.message_expression for p in rules["d/disks/claim-name"].placements]
    assert name_checks[0] == "'use ' + self.use + ': must be no more than 253 characters!'"


def test_volcano_item_defaults_with_a_condition_and_a_product():
    declared = Declarations(
        (
            DefaultItemWhen(
                "s/shell", "a step on the host: bash", "spec.steps", "run.env.shell", "bash", When("host", True), True
            ),
            DefaultItemProduct(
                "s/width", "lanes x size, else retries", "spec.steps", "width", ("split.lanes", "split.size"), "retries"
            ),
        )
    )
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("s.example.com", "S", declared)]), "s", "exec"), namespace)
    default = namespace["default_s_s_example_com"]
    steps = [
        {"run": {"env": {"host": True, "shell": ""}}, "split": {"lanes": 2, "size": 3}, "retries": 1},
        {"run": {"env": {"host": 1}}, "split": {"lanes": 0, "size": 3}, "retries": 4},
        {"run": {"env": {"host": True, "shell": "sh"}}, "width": 0},
        {"run": {}, "split": "x"},
        "not an object",
    ]
    recorder = PatchRecorder()
    obj = {"spec": {"steps": steps}}
    out = default(obj, recorder)["spec"]["steps"]
    assert out[0] == {
        "run": {"env": {"host": True, "shell": "bash"}},
        "split": {"lanes": 2, "size": 3},
        "retries": 1,
        "width": 6,
    }
    # 1 is not true; no lanes: the retries; a width of 0 is kept; no env: nothing to set.
    assert out[1]["run"] == {"env": {"host": 1}} and out[1]["width"] == 4
    assert out[2] == steps[2] and out[3] == {"run": {}, "split": "x", "width": 0} and out[4] == "not an object"
    assert [op["path"] for op in recorder.ops] == [
        "/spec/steps/0/run/env/shell",
        "/spec/steps/0/width",
        "/spec/steps/1/width",
        "/spec/steps/3/width",
    ]
    assert obj["spec"]["steps"][0]["run"]["env"]["shell"] == "", "the input is not modified"
    shell, width = declared.defaults()
    assert (shell.where, width.where) == (Where.MUTATING_POLICY, Where.MUTATING_POLICY)
    assert "t.run.env.host == true && (!has(t.run.env.shell) || t.run.env.shell == '')" in shell.patches[0]
    assert "'/spec/steps/' + string(ti) + '/run/env/shell', value: 'bash'" in shell.patches[0]
    assert "transformList(ti, t, !has(t.width), " in width.patches[0]
    assert "t.split.lanes : 0) > 0 ? " in width.patches[0] and "(has(t.retries)) ? t.retries : 0)" in width.patches[0]


def test_a_default_of_one_role():
    tuning = {"store": "/dev/shm", "lockFree": True}
    workers = ("spec.reps[Worker]",)
    declared = Declarations(
        (
            DefaultField("r/tuning", "spec.tuning", tuning, summary="tuning, when there are workers", when_set=workers),
            *(DefaultField("r/tuning", f"spec.tuning.{k}", v, when_set=workers) for k, v in tuning.items()),
        )
    )
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("r.example.com", "R", declared)]), "r", "exec"), namespace)
    default = namespace["default_r_r_example_com"]
    assert "tuning" not in default({"spec": {"reps": {"PS": {}}}}, PatchRecorder())["spec"]
    assert default({"spec": {"reps": {"Worker": {}}}}, PatchRecorder())["spec"]["tuning"] == tuning
    recorder = PatchRecorder()
    out = default({"spec": {"reps": {"Worker": {}}, "tuning": {"store": "/tmp"}}}, recorder)
    assert out["spec"]["tuning"] == {"store": "/tmp", "lockFree": True}
    assert [op["path"] for op in recorder.ops] == ["/spec/tuning/lockFree"]
    (compiled,) = declared.defaults()
    assert (compiled.where, compiled.placements, len(compiled.patches)) == (Where.MUTATING_POLICY, (), 3)
    assert compiled.patches[0].startswith(
        "has(object.spec) && has(object.spec.reps) && 'Worker' in object.spec.reps && !has(object.spec.tuning) ? "
    )


# --- the forms only T9k and DI-engine use ------------------------------------------------------------

CREW = (
    RefersTo(
        "crew/names-a-member",
        "a shift names a member",
        ("spec.shifts.day", "spec.shifts.night"),
        "who",
        "spec.members",
        "role",
        "no member of this role (roles: {known})",
        bound=3,
        unique_id="crew/one-shift-each",
        unique_summary="one shift per member and list",
    ),
)
CREW_DECLARED = Declarations(CREW)


def test_a_reference_to_an_entry_and_its_duplicate_entry_by_entry():
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("crew.example.com", "Crew", CREW_DECLARED)]), "crew", "exec"), namespace)
    validate = namespace["validate_crew_crew_example_com"]
    rules = {r.id: r for r in CREW_DECLARED.rules()}
    members = [{"role": "cook"}, {"role": "pilot"}, {"role": "cook"}, {"role": ""}]
    day = [{"who": "pilot"}, {"who": "pilot"}, {"who": "diver"}, {"who": ""}, {}, "x", {"who": "diver"}]
    obj = {"spec": {"members": members, "shifts": {"day": day, "night": [{"who": "cook"}]}}}
    errors = validate(obj, None)
    for error in errors:
        assert [i for i, r in rules.items() if r.explains(error)], str(error)
    # Entry by entry: the duplicate of entry 1 before entry 2's unknown value; an unknown value is
    # not found each time, never a duplicate; each known value listed once.
    assert [str(e) for e in errors] == [
        'spec.shifts.day[1].who: Duplicate value: "pilot"',
        'spec.shifts.day[2].who: Not found: "diver": no member of this role (roles: cook, pilot)',
        'spec.shifts.day[6].who: Not found: "diver": no member of this role (roles: cook, pilot)',
    ]
    assert [str(e) for e in validate(obj, None, ("crew/one-shift-each",))] == [str(e) for e in errors]
    assert [str(e) for e in validate({"spec": {"shifts": {"night": [{"who": "x"}]}}}, None)] == [
        'spec.shifts.night[0].who: Not found: "x": no member of this role (roles: none)'
    ]
    found, once = rules["crew/names-a-member"], rules["crew/one-shift-each"]
    assert (found.where, once.where) == (Where.CRD_RULE, Where.CRD_RULE)
    day_rule = found.placements[0]
    assert day_rule.at == ("spec",) and day_rule.validation.field_path == ".shifts.day"
    assert day_rule.validation.rule == (
        "!(has(self.shifts) && has(self.shifts.day)) || !has(self.members) || self.shifts.day.all(e, "
        "!has(e.who) || e.who == '' || self.members.exists(r, has(r.role) && r.role == e.who))"
    )
    # The known values written out to the bound, no further.
    assert "size(self.members) > 2" in day_rule.validation.message_expression
    assert "size(self.members) > 3" not in day_rule.validation.message_expression
    assert "exists_one" in once.placements[1].validation.rule and once.placements[1].validation.field_path == (
        ".shifts.night"
    )
    assert [p.apiserver_drops for p in found.produces] == [2, 2]
    report = cost_report([("crew.example.com", "Crew", CREW_DECLARED)])
    assert any(line.startswith("Crew (crew.example.com) crew/one-shift-each: quadratic") for line in report)


SHIFTS = IndexMaps(
    "crew/shift-not-empty",
    "a shift names a role",
    ("spec.shifts", "spec.spares"),
    "spec.members",
    "role",
    "size",
    1,
    "a shift names someone",
    "crew/shift-roles",
    "a shift names roles of the crew",
    "no such role (roles: {known})",
    "crew/shift-listed",
    "a shift lists a seat of each role",
    "must list a seat",
    "crew/shift-seats",
    "a shift's seats are the role's",
    "below {count} of {name}: 0 to {last}",
    "{name} has no seat",
    bound=2,
    max_maps=3,
    max_names=2,
    bounds_id="crew/bounds",
    index_why="a policy",
)


def test_maps_of_entries_to_their_indices_map_by_map():
    declared = Declarations((SHIFTS,))
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("crew.example.com", "Crew", declared)]), "crew", "exec"), namespace)
    validate = namespace["validate_crew_crew_example_com"]
    members = [{"role": "cook", "size": 2}, {"role": "pilot", "size": 0}, {"role": "cook", "size": 9}, {"role": "x"}]
    shifts = [
        {"cook": [0, 2, -1], "diver": [0]},
        {},
        {"pilot": [0], "cook": []},
        {"cook": None},
        {"a": [], "b": [], "c": []},
    ]
    errors = validate({"spec": {"members": members, "shifts": shifts, "spares": [{"x": [1]}]}}, None)
    assert [str(e) for e in errors] == [
        "spec.shifts: Too many: 5: must have at most 3 items",
        "spec.shifts[0][cook][1]: Invalid value: 2: below 2 of cook: 0 to 1",
        "spec.shifts[0][cook][2]: Invalid value: -1: below 2 of cook: 0 to 1",
        'spec.shifts[0][diver]: Not found: "diver": no such role (roles: cook, pilot, x)',
        "spec.shifts[1]: Required value: a shift names someone",
        "spec.shifts[2][pilot][0]: Invalid value: 0: pilot has no seat",
        "spec.shifts[2][cook]: Required value: must list a seat",
        "spec.shifts[3]: Required value: a shift names someone",
        "spec.shifts[4]: Too many: 3: must have at most 2 items",
        'spec.shifts[4][a]: Not found: "a": no such role (roles: cook, pilot, x)',
        'spec.shifts[4][b]: Not found: "b": no such role (roles: cook, pilot, x)',
        'spec.shifts[4][c]: Not found: "c": no such role (roles: cook, pilot, x)',
        "spec.spares[0][x][0]: Invalid value: 1: below 1 of x: 0 to 0",
    ]
    rules = {r.id: r for r in declared.rules()}
    assert list(rules) == ["crew/shift-not-empty", "crew/shift-roles", "crew/shift-listed", "crew/shift-seats"]
    for error in errors:
        if error.type.name != "TOO_MANY":  # the bounds' records are crew/bounds' (another rule places them)
            assert [i for i, r in rules.items() if r.explains(error)], str(error)
    # Any of the four ids runs the one check.
    assert validate({"spec": {"shifts": [{}]}}, None, ("crew/shift-seats",))
    seats = rules["crew/shift-seats"]
    assert seats.where is Where.POLICY and len(seats.policy) == 2
    assert "variables.replicaCounts[variables.replicaTypes.indexOf(t)] > 0 ? 'below ' + string(" in (
        seats.policy[0].message
    )
    assert dict(seats.policy[0].variables)["replicaCounts"] == (
        "has(object.spec.members) ? object.spec.members.map(r, has(r.size) ? r.size : 1) : []"
    )
    roles = rules["crew/shift-roles"].placements[1].validation
    assert roles.field_path == ".spares" and roles.rule == (
        "!has(self.spares) || !has(self.members) || "
        "self.spares.all(rule, rule.all(t, self.members.exists(r, has(r.role) && r.role == t)))"
    )
    listed = rules["crew/shift-listed"].placements[0]
    assert listed.at == ("spec", "shifts", "[]") and listed.validation.rule == "self.all(t, size(self[t]) > 0)"


TASKS = NamedEntries(
    ("one lead", "a plain task has a name", "names are labels", "names unique"),
    "spec.tasks",
    "name",
    required_id="t/name-required",
    unnamed="a plain task needs a name",
    label_id="t/name",
    unique_id="t/names-unique",
    type="kind",
    untyped="plain",
    singletons=("lead",),
    singleton_id="t/one-lead",
    singleton="only one {type} task",
    first=" (tasks[{first}] is one)",
)
PORTS = NamedEntries(
    ("ports named", "port names are labels", "port names unique"),
    "spec.ports",
    "name",
    required_id="p/name-required",
    unnamed="name each of several ports",
    label_id="p/name",
    unique_id="p/names-unique",
    several=True,
    label_stops=False,
)


def test_named_entries_entry_by_entry():
    declared = Declarations((TASKS, PORTS))
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("t.example.com", "T", declared)]), "t", "exec"), namespace)
    validate = namespace["validate_t_t_example_com"]
    rules = {r.id: r for r in declared.rules()}
    tasks = [
        {"kind": "lead", "name": "a"},
        {"kind": "lead"},  # a later lead; typed, so its missing name has no detail
        {"name": "B_b"},
        {"kind": "plain", "name": "a"},
        {"kind": "plain", "name": ""},  # (read defaulted: the webhook defaults a "" kind first)
        {"name": 3},
        {"name": "B_b"},  # not a label: no duplicate either
    ]
    ports = [{"name": "x"}, {}, {"name": "X"}, {"name": "X"}, "p"]
    errors = validate({"spec": {"tasks": tasks, "ports": ports}}, None)
    for error in errors:
        assert [i for i, r in rules.items() if r.explains(error)], str(error)
    label = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start"
    assert [str(e).split(label)[0] for e in errors] == [
        'spec.tasks[1].kind: Invalid value: "lead": only one lead task (tasks[0] is one)',
        "spec.tasks[1].name: Required value",
        'spec.tasks[2].name: Invalid value: "B_b": ',
        'spec.tasks[3].name: Duplicate value: "a"',
        "spec.tasks[4].name: Required value: a plain task needs a name",
        'spec.tasks[6].name: Invalid value: "B_b": ',
        "spec.ports[1].name: Required value: name each of several ports",
        'spec.ports[2].name: Invalid value: "X": ',
        'spec.ports[3].name: Invalid value: "X": ',
        'spec.ports[3].name: Duplicate value: "X"',
    ]
    # One port needs no name.
    assert validate({"spec": {"ports": [{}]}}, None) == []
    assert list(rules) == [
        "t/one-lead",
        "t/name-required",
        "t/name",
        "t/names-unique",
        "p/name-required",
        "p/name",
        "p/names-unique",
    ]
    assert rules["t/one-lead"].placements[0].validation.rule == (
        "self.filter(t, has(t.kind) && t.kind == 'lead').size() <= 1"
    )
    assert rules["t/name-required"].placements[0].validation.rule == (
        "(has(self.kind) && self.kind != '' ? self.kind : 'plain') != 'plain' || (has(self.name) && self.name != '')"
    )
    several = rules["p/name-required"].placements[0]
    assert several.at == ("spec", "ports") and several.validation.rule.startswith("size(self) <= 1 || ")
    assert rules["p/name"].where is Where.SCHEMA and rules["p/names-unique"].where is Where.CRD_RULE
    with pytest.raises(FormError):  # a summary per rule
        Declarations((NamedEntries(("x",), "spec.ports", "name", "a", "b", "c", "d"),)).rules()


# --- per-entry scopes --------------------------------------------------------------------------------

MEMBER = Scope(
    "member",
    "member",
    (
        StringField("s/{list}/name", "{list}: names are labels", "name", label=True),
        RequiredField("s/{list}/image", "{list}: an image", "image", empty_is_unset=True, string=True),
        # Not a field of the entry itself: the form's function, its errors rebased at the entry.
        RequiredField("s/{list}/port", "{list}: ports have numbers", "ports[*].number"),
        FieldBound("s/{list}/replicas", "{list}: replicas at most 3", "replicas", maximum=3, message="at most 3"),
    ),
    each=True,
    words=(("list", -2),),
)
MEMBERS = ScopeDeclarations(MEMBER)


@pytest.fixture(scope="module")
def scoped():
    namespace: dict[str, object] = {}
    exec(compile(scoped_module_text([MEMBER]), "scoped", "exec"), namespace)
    return namespace["check_member"]


def test_a_scope_checks_one_entry_at_its_path_in_declaration_order(scoped):
    entry = {"name": "Bad", "image": "", "ports": [{"number": 1}, {}], "replicas": 4}
    errors: list = ["an error of the loop before"]
    scoped(entry, ("spec", "teams", Key("a"), "members", 2), errors)
    at = "spec.teams[a].members[2]"
    assert [str(e) for e in errors[1:]] == [
        *(f'{at}.name: Invalid value: "Bad": {p}' for p in dns1123_label_problems("Bad")),
        f"{at}.image: Required value",
        f"{at}.ports[1].number: Required value",
        f"{at}.replicas: Invalid value: 4: at most 3",
    ]
    errors = []
    scoped({"name": "ok", "image": 7}, ("spec", "members", 0), errors, only=("s/{list}/image",))
    assert [str(e) for e in errors] == ["spec.members[0].image: Invalid value: 7: must be of type string"]
    errors = []
    scoped({"name": "ok", "image": "x", "ports": [{"number": 1}]}, ("spec", "members", 0), errors)
    assert errors == []


def test_a_scope_over_an_entry_of_a_list_and_over_the_whole_list():
    namespace: dict[str, object] = {}
    exec(compile(scoped_module_text([MEMBER]), "scoped", "exec"), namespace)
    one, each = namespace["check_member"], namespace["check_each_member"]
    members = [{"name": "a", "image": "x"}, {"image": "", "ports": [{}]}, "not an object"]
    by_index: list = []
    for index, member in enumerate(members[:2]):
        one(member, ("spec", "members"), by_index, index)
    assert [str(e) for e in by_index] == [
        "spec.members[1].image: Required value",
        "spec.members[1].ports[0].number: Required value",
    ]
    over_list: list = []
    each(members, ("spec", "members"), over_list)
    assert [str(e) for e in over_list] == [
        *(str(e) for e in by_index),
        'spec.members[2]: Invalid value: "not an object": must be of type object',
    ]


def test_a_scopes_list_loop_checks_a_unique_field_and_a_reference_around_each_entrys_errors():
    """``unique`` after each entry's own errors (the strings returned), ``refers`` before them: the
    order of a hand-written loop that made those checks between one entry's scoped errors and the next's."""
    linked = Scope(
        "link",
        "link",
        (
            RequiredField("l/name", "links are named", "name", empty_is_unset=True, string=True),
            StringField("l/name", "links are named", "name", label=True),
            RequiredField("l/to", "links go somewhere", "to", empty_is_unset=True, string=True),
        ),
        each=True,
        unique="name",
        refers=("to", "no such target"),
    )
    namespace: dict[str, object] = {}
    exec(compile(scoped_module_text([linked]), "scoped", "exec"), namespace)
    each = namespace["check_each_link"]
    links = [{"name": "a", "to": "x"}, {"name": "Bad", "to": "nowhere"}, {"name": "Bad", "to": 4}, {"name": "a"}]
    errors: list = []
    assert each(links, ("spec", "links"), errors, {"x"}) == {"a", "Bad"}
    label = [f'spec.links[2].name: Invalid value: "Bad": {p}' for p in dns1123_label_problems("Bad")]
    assert [str(e) for e in errors] == [
        'spec.links[1].to: Not found: "nowhere": no such target',
        *(line.replace("[2]", "[1]") for line in label),
        *label,
        "spec.links[2].to: Invalid value: 4: must be of type string",
        'spec.links[2].name: Duplicate value: "Bad"',
        "spec.links[3].to: Required value",
        'spec.links[3].name: Duplicate value: "a"',
    ]
    with pytest.raises(FormError):  # checks of the list's loop: only with each=True
        ScopeDeclarations(Scope("x", "entry", (), unique="name"))


def test_a_scope_is_placed_and_recorded_at_each_site(scoped):
    for list_name in ("members", "observers"):
        site = ScopeSite(MEMBER, f"spec.teams{{*}}.{list_name}[*]", (("list", list_name),))
        rules = {r.id: r for r in MEMBERS.rules_at(site)}
        assert list(rules) == [f"s/{list_name}/{n}" for n in ("name", "image", "port", "replicas")]
        image = rules[f"s/{list_name}/image"]
        assert image.summary == f"{list_name}: an image"
        assert [(p.path, p.type, p.detail) for p in image.produces] == [
            (f"spec.teams[*].{list_name}[*].image", "REQUIRED", "^$")
        ]
        item = ("spec", "teams", "*", list_name, "[]")
        assert [(p.at, p.keywords) for p in image.placements] == [
            (item, {"required": ["image"]}),
            ((*item, "image"), {"minLength": 1}),
        ]
        assert rules[f"s/{list_name}/replicas"].produces[0].detail == "^at most 3$"
        # Every error of the generated function, at an entry of the site, is explained by the site's records.
        errors: list = []
        entry = {"name": "Bad", "image": "", "ports": [{}], "replicas": 4}
        scoped(entry, ("spec", "teams", Key("a"), list_name, 0), errors)
        explained = [[i for i, r in rules.items() if r.explains(error)] for error in errors]
        expected = ["name"] * (len(errors) - 3) + ["image", "port", "replicas"]
        assert explained == [[f"s/{list_name}/{n}"] for n in expected]


def test_a_scopes_errors_carry_their_ids_the_placeholders_read_from_the_path(scoped):
    """Each declaration's errors carry its id, a placeholder's word read from the entry's path where the
    scope's ``words`` say (the caller passes nothing); a value of the wrong type is the schema's rule's."""
    namespace: dict[str, object] = {}
    exec(compile(scoped_module_text([MEMBER]), "scoped", "exec"), namespace)
    each = namespace["check_each_member"]
    entry = {"name": "Bad", "image": "", "ports": [{}], "replicas": 4}
    for list_name in ("members", "observers"):
        ids = [f"s/{list_name}/{n}" for n in ("name", "image", "port", "replicas")]
        at = ("spec", "teams", Key("a"), list_name)
        by_entry: list = []
        scoped(entry, (*at, 0), by_entry)
        by_index: list = []
        scoped(entry, at, by_index, 0)
        over_list: list = []
        each([entry], at, over_list)
        for errors in (by_entry, by_index, over_list):
            assert [e.rule for e in errors] == [ids[0]] * (len(errors) - 3) + ids[1:]
    errors = []
    scoped({"name": "ok", "image": 7}, ("spec", "members", 0), errors)
    assert [e.rule for e in errors] == ["schema/types"]
    with pytest.raises(FormError):  # a placeholder whose word the path does not hold
        ScopeDeclarations(dataclasses.replace(MEMBER, words=()))


def test_a_scope_a_form_cannot_compile_is_refused():
    with pytest.raises(FormError):  # not a field form
        ScopeDeclarations(Scope("x", "entry", (MaxItems("x", (("a", 1),)),)))  # type: ignore[arg-type]
    with pytest.raises(FormError):  # no Python name
        ScopeDeclarations(Scope("x-y", "entry", ()))
    with pytest.raises(FormError):  # an id twice
        ScopeDeclarations(Scope("x", "entry", (MaxItems("a", ()), MaxItems("a", ()))))  # type: ignore[arg-type]


def test_the_generated_scopes_are_the_declarations():
    """`jobgate manifests generate` writes them; the pod template's containers call them."""
    tables = {str(path): text for path, text in package_tables().items()}
    assert tables[SCOPED_TABLE] == Path(SCOPED_TABLE).read_text()
    assert "check_container" in tables[SCOPED_TABLE]
    # A list's check only for a scope that asks for one.
    assert "def check_each_env_var(" in tables[SCOPED_TABLE] and "def check_each_container(" not in tables[SCOPED_TABLE]
    assert "dataclasses" not in tables[SCOPED_TABLE] and "\nfrom typing" not in tables[SCOPED_TABLE]


def test_the_pod_templates_image_is_the_container_scopes():
    """The rule removed from the scope, no error: the scope is where the pod template's image is checked."""
    found = check_pod_template(
        {"spec": {"containers": [{"name": "a"}], "initContainers": [{"name": "b", "image": 3}]}},
        ("spec", "tasks", 0, "template"),
        where="t",
        replica_restart_policy=None,
    )
    assert [str(e) for e in found.errors] == [
        "spec.tasks[0].template.spec.initContainers[0].image: Invalid value: 3: must be of type string",
        "spec.tasks[0].template.spec.containers[0].image: Required value",
    ]
    assert any(d.id == "pod-template/{list}/image" for d in CONTAINER.declared)
    rules = {
        r.id: r for r in pod_template_rules(TemplateSite(("spec", "tasks", "[]", "template"), "spec.tasks[*].template"))
    }
    assert rules["pod-template/containers/image"].explains(found.errors[1])
    assert rules["pod-template/containers/image"].produces[0].detail == "^$"


# --- forms only the kinds of a map of replica types use ------------------------------------------

REPLICA_MAP = Declarations(
    (
        KnownTypes("m/types", "types are Leader, Worker", "spec.reps", ("Leader", "Worker"), any_case=True),
        KnownTypes("m/exact-types", "types are Leader, Worker (this case)", "spec.exact", ("Leader", "Worker")),
        RunPolicyImmutable("m/queue", "the queue stays", "scheduling.queue", place="either"),
        RunPolicyAtMostTotal(
            "m/gang", "the gang fits", "scheduling.gang", "spec.reps", (("Leader", 1), ("Worker", 2)), place="runPolicy"
        ),
        DefaultTypeField("m/count", "each type's replicas", "spec.reps", "replicas", (("Leader", 1), ("Worker", 1))),
        DefaultTypeField(
            "m/policy",
            "each type's policy, any other key's Never",
            "spec.reps",
            "policy",
            (("Leader", "Always"), ("Worker", "OnFailure")),
            others="Never",
            empty_is_unset=True,
        ),
    )
)


@pytest.fixture(scope="module")
def replica_map():
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("m.example.com", "M", REPLICA_MAP)]), "m", "exec"), namespace)
    return namespace


def test_known_types_in_python_and_their_records(replica_map):
    validate = replica_map["validate_m_m_example_com"]
    spec = {"reps": {"Leader": {}, "worker": {}, "Worker": {}, "Chief": {}, "chief": {}}, "exact": {"worker": {}}}
    errors = validate({"spec": spec}, None)
    assert [(e.field, e.type.name, e.detail) for e in errors] == [
        ("spec.reps[worker]", "DUPLICATE", ""),
        ("spec.reps[Chief]", "NOT_SUPPORTED", 'supported values: "Leader", "Worker"'),
        ("spec.reps[chief]", "NOT_SUPPORTED", 'supported values: "Leader", "Worker"'),
        ("spec.exact[worker]", "NOT_SUPPORTED", 'supported values: "Leader", "Worker"'),
    ]
    # A sole other spelling: the webhook checks the map once the defaults renamed it, the apiserver's
    # rule admits it (what the defaults make valid); unrenamed, it is no type.
    assert [e.type.name for e in validate({"spec": {"reps": {"worker": {}}}}, None, ("m/types",))] == ["NOT_SUPPORTED"]
    rules = {r.id: r for r in REPLICA_MAP.rules()}
    for error in errors:
        rule = rules["m/exact-types" if error.field.startswith("spec.exact") else "m/types"]
        assert rule.explains(error) is not None, error
    bound, unsupported, duplicate = rules["m/types"].placements
    assert (bound.at, bound.keywords) == (("spec", "reps"), {"maxProperties": 2})
    assert "k.lowerAscii() in ['leader', 'worker']" in unsupported.validation.rule
    assert "j.lowerAscii() == k.lowerAscii()" in duplicate.validation.rule
    assert [p.validation.rule for p in rules["m/exact-types"].placements[1:]] == [
        "!self.exists(k, !(k in ['Leader', 'Worker']))"
    ]


def test_default_type_field_in_python_and_in_the_apiserver(replica_map):
    default = replica_map["default_m_m_example_com"]
    recorder = PatchRecorder()
    given = {"spec": {"reps": {"Leader": {"policy": ""}, "Other": {"replicas": 2}, "Worker": {"replicas": 3}}}}
    out = default(given, recorder)
    assert out["spec"]["reps"] == {
        "Leader": {"policy": "Always", "replicas": 1},
        "Other": {"replicas": 2, "policy": "Never"},
        "Worker": {"replicas": 3, "policy": "OnFailure"},
    }
    assert given["spec"]["reps"]["Leader"] == {"policy": ""}  # copied, not changed in place
    assert [op["path"] for op in recorder.ops] == [
        "/spec/reps/Leader/replicas",
        "/spec/reps/Leader/policy",
        "/spec/reps/Other/policy",
        "/spec/reps/Worker/policy",
    ]
    defaults = {d.id: d for d in REPLICA_MAP.defaults()}
    # One value for every type and none for another key: a schema default on the map's values too.
    assert defaults["m/count"].where is Where.SCHEMA_DEFAULT
    assert [(p.at, p.keywords) for p in defaults["m/count"].placements] == [
        (("spec", "reps", "*", "replicas"), {"default": 1})
    ]
    assert defaults["m/policy"].where is Where.MUTATING_POLICY and not defaults["m/policy"].placements
    assert "(k == 'Leader' ? 'Always' : k == 'Worker' ? 'OnFailure' : 'Never')" in defaults["m/policy"].patches[0]
    assert "object.spec.reps[k].policy == ''" in defaults["m/policy"].patches[0]


def test_run_policy_immutable_where_each_version_has_it(replica_map):
    validate = replica_map["validate_m_m_example_com"]

    def job(queue, separate=False):
        policy = {"scheduling": {"queue": queue}} if queue is not None else {}
        return {"spec": {"runPolicy": policy} if separate else policy}

    def errors(new, old):
        return [(e.field, e.type.name, e.detail) for e in validate(new, old, ("m/queue",))]

    assert errors(job("a"), None) == []  # CREATE
    assert errors(job("a"), job("a", separate=True)) == []  # moved, not changed
    assert errors(job(""), job(None)) == []  # "" is unset
    assert errors(job("b", separate=True), job("a")) == [
        ("spec.runPolicy.scheduling.queue", "INVALID", "field is immutable")
    ]
    # Removed: reported where the old one was.
    assert errors(job(None), job("a", separate=True)) == [
        ("spec.runPolicy.scheduling.queue", "INVALID", "field is immutable")
    ]
    rules = {r.id: r for r in REPLICA_MAP.rules()}
    queue = rules["m/queue"]
    assert queue.where is Where.TRANSITION
    assert [p.validation.field_path for p in queue.placements] == [
        ".runPolicy.scheduling.queue",
        ".runPolicy.scheduling.queue",
        ".scheduling.queue",
        ".scheduling.queue",
    ]
    assert "has(oldSelf.runPolicy) ? (has(oldSelf.runPolicy.scheduling)" in queue.placements[0].validation.rule
    assert [p.detail for p in queue.produces] == ["^field is immutable$", "^field is immutable$"]


def test_run_policy_at_most_total(replica_map):
    validate = replica_map["validate_m_m_example_com"]

    def errors(gang, **reps):
        spec = {"reps": {k: {"replicas": v} for k, v in reps.items()}, "runPolicy": {"scheduling": {"gang": gang}}}
        return [(e.field, e.detail) for e in validate({"spec": spec}, None, ("m/gang",))]

    assert errors(3, Leader=1, Worker=2) == []
    assert errors(4, Leader=1, Worker=2, Other=-5) == [
        ("spec.runPolicy.scheduling.gang", "must be less than or equal to the total number of replicas (3)")
    ]
    # Read in spec.runPolicy alone: the same fields in spec are no run policy's.
    assert validate({"spec": {"scheduling": {"gang": 9}, "reps": {}}}, None, ("m/gang",)) == []
    (rule,) = [r for r in REPLICA_MAP.rules() if r.id == "m/gang"]
    (placement,) = rule.placements
    assert placement.at == ("spec",) and placement.validation.field_path == ".runPolicy.scheduling.gang"
    # The apiserver reads an unset count as the type's default, another key's as others (0).
    assert "(t == 'Leader' ? 1 : t == 'Worker' ? 2 : 0)" in placement.validation.rule
    error = validate({"spec": {"reps": {}, "runPolicy": {"scheduling": {"gang": 1}}}}, None, ("m/gang",))[0]
    assert rule.explains(error) is not None
    # The apiserver's message says no total: the record explains it too.
    apiserver = FieldError(error.type, error.path, error.value, placement.validation.message)
    assert rule.explains(apiserver) is not None


def test_default_type_spelling():
    from jobgate.forms.checks.replica_maps import default_type_spelling

    path, types = ("spec", "reps"), ("Leader", "Worker")

    def respell(reps, old=None):
        recorder = PatchRecorder()
        out = default_type_spelling({"spec": {"reps": reps}}, recorder, path, types, old)
        return list(out["spec"]["reps"]), [(op["op"], op.get("from"), op["path"]) for op in recorder.ops]

    assert respell({"worker": {}, "leader": {}}) == (
        ["Worker", "Leader"],
        [("move", "/spec/reps/worker", "/spec/reps/Worker"), ("move", "/spec/reps/leader", "/spec/reps/Leader")],
    )
    # Beside the type, or another spelling of it: each stays (KnownTypes' duplicates).
    assert respell({"Worker": {}, "worker": {}}) == (["Worker", "worker"], [])
    assert respell({"worker": {}, "WORKER": {}}) == (["worker", "WORKER"], [])
    # kubectl apply re-adds worker beside the stored Worker, unchanged: the new one replaces it.
    stored = {"spec": {"reps": {"Worker": {"replicas": 1}}}}
    assert respell({"Worker": {"replicas": 1}, "worker": {"replicas": 2}}, stored) == (
        ["Worker"],
        [("remove", None, "/spec/reps/Worker"), ("move", "/spec/reps/worker", "/spec/reps/Worker")],
    )
    (spelling,) = Declarations((DefaultTypeSpelling("m/spelling", "other spellings", "spec.reps", types),)).defaults()
    assert spelling.where is Where.MUTATING_POLICY and not spelling.placements
    assert "JSONPatch{op: 'move', from: '/spec/reps/' + jsonpatch.escapeKey(k)" in spelling.patches[0]
    assert "oldObject.spec.reps" in spelling.patches[0]


def test_respelled_types_on_the_map():
    # The engine's call (rules/replicajobs.py): the map itself, its pointer, the stored map.
    from jobgate.forms.checks.replica_maps import respelled_types

    types = ("Leader", "Worker")
    given = {"Worker": {}, "leader": {}}
    recorder = PatchRecorder()
    out = respelled_types(given, recorder, "/spec/reps", types, None)
    assert list(out) == ["Worker", "Leader"] and list(given) == ["Worker", "leader"]
    assert recorder.ops == [{"op": "move", "from": "/spec/reps/leader", "path": "/spec/reps/Leader"}]
    usual = {"Worker": {}}
    assert respelled_types(usual, recorder, "/spec/reps", types, {"Worker": {}}) == usual
    assert respelled_types(usual, recorder, "/spec/reps", types, None) is not usual
    stored, sent = {"Worker": {"n": 1}}, {"Worker": {"n": 1}, "worker": {"n": 2}}
    assert respelled_types(sent, recorder, "/p", types, stored) == {"Worker": {"n": 2}}


def _finish_rules(each: bool, path: str = "spec.done") -> DefaultFinishRules:
    return DefaultFinishRules(
        f"f/{path}", "the defaults", path, "spec.parts", "kind", "count", 1, each=each, max_entries=3, max_replicas=6
    )


def test_default_finish_rules_are_written_for_the_counts_and_follow_a_scale():
    namespace: dict[str, object] = {}
    declared = Declarations((_finish_rules(False), _finish_rules(True, "spec.failed")))
    exec(compile(declared_module_text([("f.example.com", "F", declared)]), "f", "exec"), namespace)
    default = namespace["default_f_f_example_com"]

    def job(*parts, **rules):
        return {"spec": {"parts": [{"kind": k, **({} if n is None else {"count": n})} for k, n in parts], **rules}}

    def written(obj, previous=None):
        recorder = PatchRecorder()
        out = default(obj, recorder, previous=previous)
        return out["spec"].get("done"), out["spec"].get("failed"), [(o["op"], o["path"]) for o in recorder.ops]

    # One rule listing every replica (none of a count of 0), one rule per replica; an unset count is `unset`.
    assert written(job(("a", None), ("b", 2), ("c", 0))) == (
        [{"a": [0], "b": [0, 1]}],
        [{"a": [0]}, {"b": [0]}, {"b": [1]}],
        [("add", "/spec/done"), ("add", "/spec/failed")],
    )
    # Nothing to write: no replica, a count below 0, a name twice or missing, past the bounds.
    assert written(job(("a", 0))) == (None, None, [])
    for parts in ((("a", -1),), (("a", 1), ("a", 1)), (("", 1),), (("a", 7),), (("a", 1),) * 4):
        assert written(job(*parts)) == (None, None, [])
    # Given rules stay, unless they are the defaults of the stored counts and the counts changed.
    stored = job(("a", 2), done=[{"a": [0, 1]}], failed=[{"a": [0]}, {"a": [1]}])
    assert written(job(("a", 1), done=[{"a": [0, 1]}], failed=[{"a": [0]}, {"a": [1]}]), stored) == (
        [{"a": [0]}],
        [{"a": [0]}],
        [("replace", "/spec/done"), ("replace", "/spec/failed")],
    )
    assert written(job(("a", 1), done=[{"a": [1]}], failed=[{"a": [1]}]), stored) == ([{"a": [1]}], [{"a": [1]}], [])
    assert written(job(("a", 1), done=[{"a": [0, 1]}]), None)[0] == [{"a": [0, 1]}]  # CREATE: the user's

    (done, failed) = declared.defaults()
    assert done.where is Where.MUTATING_POLICY and not done.placements
    assert "oldObject.spec.parts" in done.patches[0] and "<= 3" in done.patches[0] and "<= 6" in done.patches[0]
    assert "JSONPatch{op: 'add', path: '/spec/done/0/' + jsonpatch.escapeKey(r.kind)" in done.patches[0]
    each = "JSONPatch{op: 'add', path: '/spec/failed', value: object.spec.parts.map(r, lists.range("
    assert each in failed.patches[0]
    with pytest.raises(FormError, match="fields of one object"):
        Declarations((_finish_rules(False, "spec.run.done"),)).defaults()


def test_entries_keep_their_fields_on_update():
    kept = EntriesUnchanged(
        "k/kept", "kinds and bodies stay", "spec.parts", ("kind", "body"), ("body",), "parts are immutable"
    )
    declared = Declarations((kept,))
    namespace: dict[str, object] = {}
    exec(compile(declared_module_text([("k.example.com", "K", declared)]), "k", "exec"), namespace)
    validate = namespace["validate_k_k_example_com"]
    old = {"spec": {"parts": [{"kind": "a", "body": {"x": 1}, "count": 1}]}}
    assert validate({"spec": {"parts": [{"kind": "a", "body": {"x": 1}, "count": 5}]}}, old) == []
    assert validate({"spec": {"parts": [{"kind": "b", "body": {"x": 1}}]}}, None) == []  # CREATE
    for parts in ([{"kind": "b", "body": {"x": 1}}], [{"kind": "a", "body": {"x": 2}}], [], None):
        errors = validate({"spec": {"parts": parts}}, old)
        assert [str(e) for e in errors] == ["spec.parts: Forbidden: parts are immutable"]
    (rule,) = declared.rules()
    assert rule.where is Where.TRANSITION and rule.placements[0].at == ("spec",)
    assert rule.placements[0].validation.rule == (
        "!has(oldSelf.parts) || !has(self.parts) || (self.parts.map(r, has(r.kind) ? r.kind : '') == "
        "oldSelf.parts.map(r, has(r.kind) ? r.kind : '') && self.parts.map(r, r.body) == oldSelf.parts.map(r, r.body))"
    )


def test_every_form_has_its_rows_in_one_table_of_the_docs():
    """docs/rule-forms.md's tables are written from the forms' ``DOC`` rows (build_support/docs.py):
    a form that is in no table, or has no rows, is a form the page does not describe."""
    import dataclasses

    from build_support.docs import form_tables
    from jobgate.forms.base import Declaration

    def forms(cls: type) -> list[type]:
        below = [form for sub in cls.__subclasses__() for form in (sub, *forms(sub))]
        return [form for form in below if dataclasses.is_dataclass(form)]

    listed = [form for forms_of_table in form_tables().values() for form in forms_of_table]
    assert sorted(f.__name__ for f in listed) == sorted({f.__name__ for f in forms(Declaration)})
    for form in listed:
        assert form.DOC and all(len(row) == 4 and all(row) for row in form.DOC), form.__name__
        assert form.DOC[0][0].startswith(f"`{form.__name__}("), form.__name__
