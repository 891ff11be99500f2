"""What every registered family must provide, checked from its record alone.

Used by tests/unit/test_family_conformance.py on the families of the tree, and by
tests/unit/test_adding_a_family.py on a toy family added from docs/adding-a-family.md.
"""

from __future__ import annotations

import importlib
import inspect

from jobgate.engine.modelref import ModelRef, model_class
from jobgate.engine.registry import load_family, registered_kinds
from jobgate.families import Family

KIND_ATTRIBUTES = ("kind", "plural", "short_names", "family", "spec_model", "status_model", "gvk", "printer_columns")


def problems(record: Family) -> list[str]:
    """Every part the record names that is missing or does not fit; [] for a conforming family."""
    found: list[str] = []
    if "{kind}" not in record.description:
        found.append("description: no {kind} placeholder")
    models = importlib.import_module(record.models)
    load_family(record.name)
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
    return found
