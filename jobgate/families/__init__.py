"""The API families jobgate serves: one package each, named in ``FAMILY_NAMES``.

``jobgate/families/<name>/__init__.py`` holds the family's record (``FAMILY``, a
``jobgate.engine.family.Family``); beside it, ``models`` (pydantic), ``rules`` (defaults and
validation; importing it registers the kinds), ``cel`` (the rules as the apiserver enforces them)
and, for the families jobgate's controller runs, an adapter under ``jobgate/controller/adapters``.
Adding a family is its package and its name below.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from jobgate.engine.family import Family

FAMILY_NAMES: tuple[str, ...] = ("kubedl", "mlkube", "t9k", "diengine", "volcano", "kubeflow")


def family(name: str) -> Family:
    """The record of a family (KeyError for a name that is not registered)."""
    if name not in FAMILY_NAMES:
        raise KeyError(name)
    module = __import__(f"{__name__}.{name}", fromlist=["FAMILY"])
    record: Family = module.FAMILY
    return record


def every_family() -> list[Family]:
    return [family(name) for name in FAMILY_NAMES]
