"""The kinds jobgate serves, found by group + version + kind (never by kind alone).

TFJob exists in ``training.kubedl.io`` and in ``kubeflow.org`` with different shapes and
defaults, so every lookup takes the full group/version/kind.

A family registers its kinds when its rules module (``jobgate/families/<family>/rules``) is
imported. The registry imports a family the first time one of its kinds is looked up, through
``family_index`` (a table generated from the families' records: each kind's family, each family's
rules module), so that checking one file loads one family; the webhook and the controller load
every family they serve at start (``served_kinds``). The registry reads no record: the engine
stands below the families.
"""

from __future__ import annotations

from jobgate._generated.family_index import FAMILY_RULES, KIND_FAMILIES
from jobgate.engine.findings import Findings
from jobgate.engine.jsonpatch import PatchRecorder
from jobgate.engine.values import FrozenValue

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any, Protocol

    from pydantic import BaseModel

    from jobgate.engine.context import ReviewContext
    from jobgate.engine.modelref import ModelRef
else:
    # The rules' protocols (JobKind here, QueueView in the Volcano family) are for type checkers:
    # nothing checks isinstance against them. At run time their base is a plain class, so that
    # checking a file does not import typing. Compiled modules take this Protocol from here: mypyc
    # compiles neither a class under TYPE_CHECKING nor an else branch like this one.
    Protocol = object


class GroupVersionKind(FrozenValue):
    """Equal, hashed and read-only by value: a dict key."""

    FIELDS = ("group", "version", "kind")
    __slots__ = FIELDS
    group: str
    version: str
    kind: str

    def __init__(self, group: str, version: str, kind: str) -> None:
        object.__setattr__(self, "group", group)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "kind", kind)

    def _key(self) -> tuple[str, str, str]:  # written out: the registry's dict key, hashed per review
        return (self.group, self.version, self.kind)

    @classmethod
    def from_object(cls, obj: Any) -> GroupVersionKind | None:
        if not isinstance(obj, dict):
            return None
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return None
        group, _, version = api_version.rpartition("/")
        return cls(group, version, kind)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.api_version}, Kind={self.kind}"


class JobKind(Protocol):
    """What a family adapter provides for each kind it serves."""

    # Read-only members: adapters expose them as attributes or properties.
    @property
    def gvk(self) -> GroupVersionKind: ...
    @property
    def family(self) -> str: ...
    @property
    def plural(self) -> str: ...
    @property
    def short_names(self) -> tuple[str, ...]: ...
    # A ModelRef keeps pydantic out of start-up (see jobgate/engine/modelref.py); a class works too.
    @property
    def spec_model(self) -> type[BaseModel] | ModelRef: ...
    @property
    def status_model(self) -> type[BaseModel] | ModelRef: ...
    # The CRD's printer columns; empty: jobgate's default columns (state, age).
    @property
    def printer_columns(self) -> tuple[dict[str, Any], ...]: ...

    def default(
        self, obj: dict[str, Any], recorder: PatchRecorder = ..., previous: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The object as the mutating webhook stores it; ``obj`` itself is not modified.

        Each change is made through ``recorder``, which collects the JSON Patch for /mutate;
        ``previous`` is the stored object on UPDATE.
        """
        ...

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None, context: ReviewContext) -> Findings:
        """Every violation in the (defaulted) object; ``old`` is the stored object on UPDATE; ``context``
        what the review knows of its request and the cluster."""
        ...


_KINDS: dict[GroupVersionKind, JobKind] = {}
# The same kinds by (group, version, kind): a review's look-up then builds a tuple, not a
# GroupVersionKind (whose __init__ and __hash__ cost a microsecond together).
_KINDS_BY_NAMES: dict[tuple[str, str, str], JobKind] = {}


def register(kind: JobKind) -> JobKind:
    if kind.gvk in _KINDS:
        raise ValueError(f"{kind.gvk} is registered twice")
    _KINDS[kind.gvk] = kind
    _KINDS_BY_NAMES[kind.gvk.group, kind.gvk.version, kind.gvk.kind] = kind
    return kind


# The families this process serves (``--families``); None: all. Kinds of other families are
# answered like unknown kinds, so a cluster running Volcano can leave its Job to Volcano.
_served_families: frozenset[str] | None = None


def known_families() -> list[str]:
    return sorted(set(KIND_FAMILIES.values()))


def parse_families(text: str) -> frozenset[str]:
    """``volcano,kubedl`` -> the set; ValueError naming the unknown ones and the known ones."""
    names = frozenset(part.strip() for part in text.split(",") if part.strip())
    known = known_families()
    unknown = sorted(names - set(known))
    if unknown or not names:
        raise ValueError(f"unknown families {unknown or [text]}: choose from {', '.join(known)}")
    return names


def serve_families(families: frozenset[str] | None) -> None:
    global _served_families  # noqa: PLW0603 - one setting for the process, made once at start-up
    _served_families = families


def lookup(gvk: GroupVersionKind) -> JobKind | None:
    return lookup_names(gvk.group, gvk.version, gvk.kind)


def lookup_names(group: str, version: str, kind_name: str) -> JobKind | None:
    """``lookup`` of GroupVersionKind(group, version, kind_name)."""
    key = (group, version, kind_name)
    kind = _KINDS_BY_NAMES.get(key)
    if kind is None:
        family = KIND_FAMILIES.get(key)
        if family is None:
            return None
        load_family(family)
        kind = _KINDS_BY_NAMES.get(key)
        if kind is None:
            raise RuntimeError(f"{family_module(family)} registers no {key}: run `jobgate manifests generate`")
    if _served_families is not None and kind.family not in _served_families:
        return None
    return kind


def served_kinds() -> list[JobKind]:
    for family in known_families() if _served_families is None else sorted(_served_families):
        load_family(family)
    return [k for k in _KINDS.values() if _served_families is None or k.family in _served_families]


def registered_kinds() -> list[JobKind]:
    """The kinds of the families imported so far, served or not."""
    return list(_KINDS.values())


def family_module(family: str) -> str:
    """The module that registers the family's kinds (its record's ``rules``, as the index gives it)."""
    return FAMILY_RULES[family]


def load_family(family: str) -> None:
    # __import__ rather than importlib: one builtin call, nothing more imported at start-up.
    __import__(family_module(family))
