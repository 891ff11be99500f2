"""What every registered family must provide, checked from its record alone.

Used by tests/unit/test_family_conformance.py on the families of the tree, and by
tests/unit/test_adding_a_family.py on a toy family added from docs/adding-a-family.md.
"""

from __future__ import annotations

import importlib
import inspect

from jobgate.engine.context import ReviewContext
from jobgate.engine.modelref import ModelRef, model_class
from jobgate.engine.registry import registered_kinds
from jobgate.families import Family

KIND_ATTRIBUTES = ("kind", "plural", "short_names", "family", "spec_model", "status_model", "gvk", "printer_columns")


def problems(record: Family) -> list[str]:
    """Every part the record names that is missing or does not fit; [] for a conforming family."""
    found: list[str] = []
    if "{kind}" not in record.description:
        found.append("description: no {kind} placeholder")
    models = importlib.import_module(record.models)
    importlib.import_module(record.rules)
    kinds = [k for k in registered_kinds() if k.family == record.name]
    if sorted(k.gvk.kind for k in kinds) != sorted(record.kinds):
        found.append(f"rules {record.rules} register {sorted(k.gvk.kind for k in kinds)}, the record {record.kinds}")
    for kind in kinds:
        where = f"{record.name} {kind.gvk.kind}"
        if (kind.gvk.group, kind.gvk.version) != (record.group, record.version):
            found.append(f"{where}: served as {kind.gvk.group}/{kind.gvk.version}")
        found += [f"{where}: no {a}" for a in KIND_ATTRIBUTES if not hasattr(kind, a)]
        # The spec's model is the family's own (its status may be the shared one, jobgate.api.common).
        spec_model = model_class(getattr(kind, "spec_model", ModelRef("missing:missing")))
        if inspect.getmodule(spec_model) is not models:
            found.append(f"{where}: spec_model {spec_model.__qualname__} is not in {record.models}")
        model_class(getattr(kind, "status_model", ModelRef("missing:missing")))
        parameters = list(inspect.signature(kind.validate).parameters)
        if parameters[:3] != ["obj", "old", "context"]:
            found.append(f"{where}: validate{tuple(parameters)} does not take (obj, old, context)")
    if record.cel is not None:
        cel = importlib.import_module(record.cel)
        found += [
            f"{record.cel}: no {name}()" for name in ("rules", "defaults") if not callable(getattr(cel, name, None))
        ]
        rules = getattr(cel, "rules", None)
        if callable(rules) and list(inspect.signature(rules).parameters)[:2] != ["kind", "declared"]:
            found.append(
                f"{record.cel}: rules{tuple(inspect.signature(rules).parameters)} does not take (kind, declared)"
            )
    if record.declared is not None:
        declared = getattr(importlib.import_module(record.declared), "DECLARED", None)
        if not isinstance(declared, dict):
            found.append(f"{record.declared}: no DECLARED (each kind's name to its declarations)")
        elif set(declared) - set(record.kinds):
            found.append(
                f"{record.declared}: declarations of {sorted(set(declared) - set(record.kinds))}, no kind of it"
            )
    elif not record.webhook_only_reason:
        found.append("neither a CEL module nor the reason its rules stay with the webhook")
    if record.controller is not None:
        adapters = importlib.import_module(record.controller).ADAPTERS
        covered = sorted(a.gvk.kind for a in adapters)
        if covered != sorted(record.kinds):
            found.append(f"{record.controller}: adapters for {covered}, the record {sorted(record.kinds)}")
    for module in record.compiled_modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            found.append(f"compiled module {module}: {exc}")
    for module in record.form_checks:
        # Its own forms' runtime twins, in its package (the shared ones are jobgate/forms/checks/).
        if not module.startswith(f"jobgate.families.{record.name}."):
            found.append(f"form checks {module}: not in the family's package")
        try:
            importlib.import_module(module)
        except ImportError as exc:
            found.append(f"form checks {module}: {exc}")
    return found + policy_problems(record)


# The label a conformance policy requires: a requirement every kind can meet (every job has labels).
REQUIRED_LABEL = "conformance.jobgate.dev/team"


def conformance_policy(record: Family, kind: str) -> dict:
    """A cluster policy that names the family and the kind, and requires one label."""
    return {
        "apiVersion": "policy.jobgate.io/v1alpha1",
        "kind": "ClusterTrainingJobPolicy",
        "metadata": {"name": "conformance"},
        "spec": {
            "match": {"families": [record.name], "kinds": [{"group": record.group, "kind": kind}]},
            "require": {"labels": [{"key": REQUIRED_LABEL}]},
        },
    }


def policy_problems(record: Family) -> list[str]:
    """Whether platform policies can name the family's kinds and apply to its jobs: a policy field map
    for each kind (the record's ``policy``), and a policy naming the family and a kind enforced on a
    job of it (the required label refused when missing, not when given)."""
    from jobgate.policy.kinds import KINDS
    from jobgate.policy.models import parse_policy
    from jobgate.policy.snapshot import PolicySnapshot
    from jobgate.review import review_job

    if record.policy is None:
        return ["no policy field map: the record names no policy module (Family.policy), so no policy applies"]
    maps = getattr(importlib.import_module(record.policy), "KIND_MAPS", None)
    if maps is None:
        return [f"{record.policy}: no KIND_MAPS"]
    found = []
    if sorted(m.kind for m in maps) != sorted(record.kinds):
        found.append(
            f"{record.policy}: field maps for {sorted(m.kind for m in maps)}, the record {sorted(record.kinds)}"
        )
    found += [
        f"{m!r}: not of {record.name} ({record.group})"
        for m in maps
        if (m.family, m.group) != (record.name, record.group)
    ]
    kinds = {k.gvk.kind: k for k in registered_kinds() if k.family == record.name}
    for kind_name in record.kinds:
        where = f"{record.name} {kind_name}"
        if KINDS.get((record.group, kind_name)) is None:
            found.append(f"{where}: no field map in jobgate.policy.kinds.KINDS")
        kind = kinds.get(kind_name)
        if kind is None:
            continue
        policy = conformance_policy(record, kind_name)
        try:
            parse_policy(policy)
        except ValueError as exc:  # pydantic's ValidationError: the policy CRD does not know the family
            found.append(f"{where}: a policy cannot name it: {exc}")
            continue
        snapshot = PolicySnapshot([policy])
        refused = []
        for labels in ({}, {REQUIRED_LABEL: "a"}):
            job = {
                "apiVersion": f"{record.group}/{record.version}",
                "kind": kind_name,
                "metadata": {"name": "conformance", "namespace": "default", "labels": labels},
                "spec": {},
            }
            context = ReviewContext(
                namespace="default", namespace_labels=snapshot.namespace_labels("default"), policies=snapshot.policies()
            )
            errors = review_job(kind, job, context=context).errors
            refused.append(
                any(REQUIRED_LABEL in str(e) and "ClusterTrainingJobPolicy conformance" in str(e) for e in errors)
            )
        if refused != [True, False]:
            found.append(
                f"{where}: a policy requiring a label is not enforced (refused without it, with it: {refused})"
            )
    return found
