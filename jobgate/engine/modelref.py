"""Pydantic models named, not imported: the rule engine starts without building any model.

A family declares ``spec_model=ModelRef("jobgate.families.kubedl.models:TFJobSpec")``. The admission
checks need only the model's structural schema, which ``jobgate manifests generate`` writes
ahead of time into ``structural_schemas.py``; the class itself is imported only by what
needs it (CRD generation, a schema missing from the table). A family that still names the
class directly (``spec_model=api.TFJobSpec``) keeps working, it just starts slower.
"""

from __future__ import annotations

from jobgate.engine.values import FrozenValue

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from pydantic import BaseModel


class ModelRef(FrozenValue):
    """``"module:QualifiedName"`` of a pydantic model; read-only and compared by value (a cache key)."""

    FIELDS = ("path",)
    __slots__ = FIELDS
    path: str

    def __init__(self, path: str) -> None:
        object.__setattr__(self, "path", path)

    def resolve(self) -> type[BaseModel]:
        # Imported here: importlib (and the warnings module it imports) is not needed to check a file.
        import importlib

        module_name, _, qualname = self.path.partition(":")
        target: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
        return target  # type: ignore[no-any-return]

    def __str__(self) -> str:
        return self.path


def model_key(model: Any) -> str:
    """The table key of a model given either way."""
    if isinstance(model, ModelRef):
        return model.path
    if isinstance(model, str):
        return model
    return f"{model.__module__}:{model.__qualname__}"


def model_class(model: Any) -> type[BaseModel]:
    if isinstance(model, ModelRef):
        return model.resolve()
    if isinstance(model, str):
        return ModelRef(model).resolve()
    return model  # type: ignore[no-any-return]
