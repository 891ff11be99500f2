"""Every registered family provides every part its record names (tests/family_conformance.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from jobgate.families import FAMILY_NAMES, Family, every_family, family
from tests.family_conformance import policy_problems, problems

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_the_family_provides_every_part(name: str):
    record = family(name)
    assert record.name == name
    assert problems(record) == []


def test_a_missing_part_is_found():
    broken = Family(
        name="kubedl",
        group="training.kubedl.io",
        version="v1alpha1",
        kinds=("TFJob", "NoSuchJob"),
        description="no placeholder",
        models="jobgate.families.kubedl.models",
        rules="jobgate.families.kubedl.rules",
        cel="jobgate.families.kubedl.cel",
        controller="jobgate.controller.adapters.kubedl",
    )
    found = problems(broken)
    assert any("no {kind} placeholder" in p for p in found)
    assert any("register" in p for p in found)
    assert any("adapters for" in p for p in found)


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_the_family_has_a_policy_field_map_and_its_kinds_take_policies(name: str):
    """Each kind has a field map (``Family.policy``), and a policy naming the family and the kind
    is enforced on a job of it: a family a policy cannot name or apply to fails here."""
    record = family(name)
    assert record.policy == f"jobgate.families.{name}.policy"
    assert policy_problems(record) == []


def test_a_family_without_a_policy_field_map_is_found():
    record = family("mlkube")
    without = Family(
        name=record.name,
        group=record.group,
        version=record.version,
        kinds=record.kinds,
        description=record.description,
        models=record.models,
        rules=record.rules,
        cel=record.cel,
    )
    assert [p for p in problems(without) if "no policy field map" in p] == [
        "no policy field map: the record names no policy module (Family.policy), so no policy applies"
    ]


def test_a_field_map_of_other_kinds_is_found():
    record = family("mlkube")
    elsewhere = Family(
        name=record.name,
        group=record.group,
        version=record.version,
        kinds=record.kinds,
        description=record.description,
        models=record.models,
        rules=record.rules,
        cel=record.cel,
        policy="jobgate.families.diengine.policy",
    )
    found = policy_problems(elsewhere)
    assert any("field maps for ['DIJob'], the record ['MxJob']" in p for p in found)
    assert any("not of mlkube" in p for p in found)


def test_a_declarations_module_of_another_kind_is_found():
    record = family("mlkube")
    broken = Family(
        name="mlkube",
        group=record.group,
        version=record.version,
        kinds=record.kinds,
        description=record.description,
        models=record.models,
        rules=record.rules,
        declared="jobgate.families.kubedl.declared",
        cel=record.cel,
        controller=record.controller,
    )
    assert any("no kind of it" in p for p in problems(broken))


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_the_generator_compiles_the_declarations_the_record_names(name: str):
    """A family's declarations reach the generator through its record (``declared=``), not its CEL module."""
    import importlib

    from jobgate.engine.registry import load_family, registered_kinds
    from jobgate.generate.cel.generate import family_declarations

    record = family(name)
    load_family(name)
    declared = importlib.import_module(record.declared).DECLARED if record.declared else {}
    for kind in (k for k in registered_kinds() if k.family == name):
        compiled = family_declarations(kind)
        assert (compiled.declared if compiled else None) == (
            tuple(declared[kind.gvk.kind]) if kind.gvk.kind in declared else None
        )


def test_a_record_must_say_where_its_rules_are_enforced():
    with pytest.raises(ValueError, match="either a CEL module or the reason"):
        Family(name="x", group="g", version="v", kinds=("K",), description="{kind}", models="m", rules="r")


def test_every_served_kind_has_a_valid_example():
    """Each kind of a family jobgate installs has an admitted example in examples/valid/."""
    shown = set()
    for path in (REPO / "examples" / "valid").glob("*.yaml"):
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict):
                shown.add((document.get("apiVersion"), document.get("kind")))
    missing = [
        f"{record.group}/{record.version} {kind}"
        for record in every_family()
        for kind in record.kinds
        if not record.admission_only and (f"{record.group}/{record.version}", kind) not in shown
    ]
    assert missing == []
