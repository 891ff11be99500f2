"""Field errors, names, quantities, the structural schema and JSON Patch."""

from __future__ import annotations

from fractions import Fraction

import pytest

from jobgate.engine.fielderrors import (
    Key,
    aggregate_message,
    duplicate,
    forbidden,
    invalid,
    not_found,
    not_supported,
    render_path,
    required,
)
from jobgate.engine.jsonpatch import apply_patch, json_patch
from jobgate.engine.modelref import ModelRef
from jobgate.engine.schema import check_against_schema, schema_checker, structural_schema
from jobgate.families.kubedl.models import TFJobSpec
from jobgate.families.mlkube.models import MxJobSpec
from jobgate.rules import podtemplate, quantity
from jobgate.rules.names import dns1035_label_problems, dns1123_label_problems, port_name_problems
from jobgate.rules.quantity import parse_quantity


def test_paths_render_like_field_path():
    assert render_path(("spec", "tfReplicaSpecs", Key("Worker"), "template", "spec", "containers", 0, "name")) == (
        "spec.tfReplicaSpecs[Worker].template.spec.containers[0].name"
    )


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (required(("spec", "x")), "spec.x: Required value"),
        (required(("spec",), "why"), "spec: Required value: why"),
        (invalid(("a",), -1, "bad"), "a: Invalid value: -1: bad"),
        (invalid(("a",), "s", "bad"), 'a: Invalid value: "s": bad'),
        (invalid(("a",), True, "bad"), "a: Invalid value: true: bad"),
        (invalid(("a",), None, "bad"), 'a: Invalid value: "null": bad'),
        (invalid(("a",), {"k": [1]}, "bad"), 'a: Invalid value: {"k":[1]}: bad'),
        (not_supported(("a",), "x", ["y", "z"]), 'a: Unsupported value: "x": supported values: "y", "z"'),
        (forbidden(("a",), "no"), "a: Forbidden: no"),
        (duplicate(("a",), "d"), 'a: Duplicate value: "d"'),
        (not_found(("a",), "n"), 'a: Not found: "n"'),
    ],
)
def test_error_text(error, text):
    assert str(error) == text


def test_aggregate_deduplicates_and_brackets():
    one, two = required(("a",)), required(("b",))
    assert aggregate_message([one]) == "a: Required value"
    assert aggregate_message([one, two, one]) == "[a: Required value, b: Required value]"


def test_label_checks():
    assert dns1123_label_problems("123-abc") == []
    assert dns1035_label_problems("123-abc") != []
    assert dns1035_label_problems("abc-123") == []
    assert len(dns1035_label_problems("a" * 64)) == 1
    assert port_name_problems("tfjob-port") == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", Fraction(1)),
        (2, Fraction(2)),
        (0.25, Fraction(1, 4)),
        ("500m", Fraction(1, 2)),
        ("1Gi", Fraction(2**30)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("1G", Fraction(10**9)),
        ("1.5", Fraction(3, 2)),
        ("1e3", Fraction(1000)),
        ("2.5E-3", Fraction(25, 10000)),
        ("100Mi", Fraction(100 * 2**20)),
        (".5", Fraction(1, 2)),
        ("-1", Fraction(-1)),
        ("+3k", Fraction(3000)),
        ("7n", Fraction(7, 10**9)),
        ("1.5n", Fraction(2, 10**9)),  # rounded up to nano precision, as Kubernetes does
        ("250u", Fraction(250, 10**6)),
    ],
)
def test_quantities(text, value):
    assert parse_quantity(text) == value * 10**9


@pytest.mark.parametrize("text", ["", "lots", "1Gb", "1.2.3", "1e", None, True, [], "1e1234567890123456789"])
def test_invalid_quantities(text):
    assert parse_quantity(text) is None


MAX_NANOS = (2**63 - 1) * 10**9  # apimachinery caps magnitudes at max int64 units


@pytest.mark.parametrize(
    "value",
    ["1e400", "1e999", "9" * 5000, "9" * 5000 + "Ei", "1" + "0" * 5000 + ".5", 1e300, 2**70, "9223372036854775808"],
)
def test_huge_quantities_are_capped_like_the_apiserver(value):
    assert parse_quantity(value) == MAX_NANOS


@pytest.mark.parametrize("value", ["-1e400", "-" + "9" * 5000, -(2**70)])
def test_huge_negative_quantities_are_capped(value):
    assert parse_quantity(value) == -MAX_NANOS


@pytest.mark.parametrize("value", ["1e-400", "0." + "0" * 5000 + "1", 1e-300, "1e-" + "0" * 5000 + "30"])
def test_tiny_quantities_round_up_to_one_nano(value):
    assert parse_quantity(value) == 1


@pytest.mark.parametrize(
    ("value", "nanos"),
    [("0e400", 0), ("1e" + "0" * 5000 + "3", 10**12), ("1." + "0" * 5000, 10**9), (2.5, 25 * 10**8), ("1e+3", 10**12)],
)
def test_long_but_ordinary_quantities(value, nanos):
    assert parse_quantity(value) == nanos


def _walk(schema, node):
    yield node
    for key in ("properties", "additionalProperties", "items"):
        sub = node.get(key)
        if isinstance(sub, dict):
            children = sub.values() if key == "properties" else [sub]
            for child in children:
                yield from _walk(schema, child)


@pytest.mark.parametrize("model", [TFJobSpec, MxJobSpec])
def test_structural_schema_is_structural(model):
    schema = structural_schema(model)
    for node in _walk(schema, schema):
        assert "anyOf" not in node and "$ref" not in node and "title" not in node and "default" not in node
        assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields")
        assert node.get("type") != "null"


def test_structural_schema_keeps_descriptions_enums_and_bounds():
    schema = structural_schema(TFJobSpec)
    props = schema["properties"]
    assert props["cleanPodPolicy"]["enum"] == ["All", "Running", "None"]
    assert props["activeDeadlineSeconds"] == {
        "description": props["activeDeadlineSeconds"]["description"],
        "type": "integer",
        "format": "int64",
        "minimum": 0,
        "exclusiveMinimum": True,
    }
    replica = props["tfReplicaSpecs"]["additionalProperties"]
    assert replica["properties"]["template"]["x-kubernetes-preserve-unknown-fields"] is True
    assert replica["required"] == ["template"]
    assert props["tfReplicaSpecs"]["minProperties"] == 1
    assert all(node.get("description") for node in props.values())


def test_schema_walker_reports_unknown_fields_separately():
    errors, unknown = [], []
    check_against_schema({"backoffLimit": 1, "mystery": 2}, structural_schema(TFJobSpec), ("spec",), errors, unknown)
    assert [str(e) for e in errors] == ["spec.tfReplicaSpecs: Required value"]
    assert unknown == [("spec", "mystery")]


def test_schema_walker_accepts_integral_floats_and_rejects_booleans():
    errors, unknown = [], []
    schema = structural_schema(TFJobSpec)
    check_against_schema({"tfReplicaSpecs": {}, "backoffLimit": 2.0}, schema, ("spec",), errors, unknown)
    check_against_schema({"tfReplicaSpecs": {"W": {"template": {}}}, "backoffLimit": True}, schema, ("s",), errors, [])
    assert [str(e) for e in errors] == [
        "spec.tfReplicaSpecs: Invalid value: 0: spec.tfReplicaSpecs in body should have at least 1 properties",
        's.backoffLimit: Invalid value: "": s.backoffLimit in body must be of type int32: ""',
    ]


def test_patch_add_replace_and_move():
    before = {"spec": {"worker": {"a": 1}, "list": [1], "x": 1}}
    after = {"spec": {"Worker": {"a": 1, "b": 2}, "list": [1, 2], "x": "1"}}
    patch = json_patch(before, after)
    assert patch == [
        {"op": "add", "path": "/spec/list/1", "value": 2},
        {"op": "replace", "path": "/spec/x", "value": "1"},
        {"op": "move", "from": "/spec/worker", "path": "/spec/Worker"},
        {"op": "add", "path": "/spec/Worker/b", "value": 2},
    ]
    assert apply_patch(before, patch) == after


def test_patch_escapes_pointer_tokens():
    before = {"m": {}}
    after = {"m": {"a/b": 1, "c~d": 2}}
    patch = json_patch(before, after)
    assert [op["path"] for op in patch] == ["/m/a~1b", "/m/c~0d"]
    assert apply_patch(before, patch) == after


def test_patch_distinguishes_json_types():
    assert json_patch({"a": 1}, {"a": True}) == [{"op": "replace", "path": "/a", "value": True}]
    assert json_patch({"a": 1}, {"a": 1.0}) == [{"op": "replace", "path": "/a", "value": 1.0}]
    assert json_patch({"a": [1, 2]}, {"a": [1]}) == [{"op": "replace", "path": "/a", "value": [1]}]


def test_the_quantity_cache_stays_bounded_and_keeps_no_long_text():
    for number in range(quantity.TEXT_CACHE_MAX + 10):
        assert parse_quantity(f"{number}Mi") == number * 2**20 * 10**9
    assert len(quantity._parsed_texts) <= quantity.TEXT_CACHE_MAX
    long_text = "0" * quantity.TEXT_CACHE_MAX_LENGTH + "5"
    assert parse_quantity(long_text) == 5 * 10**9
    assert long_text not in quantity._parsed_texts
    assert parse_quantity("16Gi") == parse_quantity("16Gi") == 16 * 2**30 * 10**9  # the second one cached


def test_every_reference_to_a_model_gets_its_one_checker():
    first = schema_checker(ModelRef("jobgate.families.kubedl.models:TFJobSpec"))
    assert schema_checker(ModelRef("jobgate.families.kubedl.models:TFJobSpec")) is first
    assert schema_checker(TFJobSpec) is schema_checker(TFJobSpec)
    assert schema_checker(ModelRef("jobgate.families.mlkube.models:MxJobSpec")) is not first


def test_resource_classes_stay_bounded():
    for number in range(2000):
        assert podtemplate._resource_class(f"example.com/device-{number}") == (False, False)
    assert len(podtemplate._resource_classes) <= podtemplate._RESOURCE_CLASS_MAX
    assert podtemplate._resource_class("cpu") == (True, True)
    assert podtemplate._resource_class("hugepages-2Mi") == (True, False)
    assert podtemplate._resource_class("nvidia.com/gpu") == (False, False)
