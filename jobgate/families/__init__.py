"""The API families jobgate serves: one package each, named in ``FAMILY_NAMES``.

``jobgate/families/<name>/__init__.py`` holds the family's record (``FAMILY``, a ``Family``
below); beside it, ``models`` (pydantic), ``rules`` (defaults and
validation; importing it registers the kinds), ``cel`` (the rules as the apiserver enforces them)
and, for the families jobgate's controller runs, an adapter under ``controller/adapters/``.
Adding a family is its package and its name below.

A record names its modules by string, so that reading it imports none of them: checking one file
loads the one family it needs, and the layers stay apart (the engine never imports a generator or
the controller). It lives here, not in the engine, because importing a family's rules imports
this package first anyway: one module fewer on the way to a one-file check.
"""

from __future__ import annotations


class Family:
    """One API family: its kinds, and the modules that hold its models, rules, CEL and controller adapter.

    Not a dataclass: importing ``dataclasses`` costs a one-file ``jobgate validate`` more than the
    rules it runs.
    """

    __slots__ = (
        "admission_only",
        "catalogue",
        "cel",
        "compiled_modules",
        "controller",
        "description",
        "group",
        "kinds",
        "models",
        "name",
        "rules",
        "version",
        "webhook_only_reason",
    )

    def __init__(
        self,
        *,
        name: str,
        group: str,
        version: str,
        kinds: tuple[str, ...],
        description: str,
        models: str,
        rules: str,
        cel: str | None = None,
        webhook_only_reason: str | None = None,
        catalogue: str | None = None,
        controller: str | None = None,
        compiled_modules: tuple[str, ...] = (),
        admission_only: bool = False,
    ) -> None:
        if (cel is None) == (webhook_only_reason is None):
            raise ValueError(f"family {name}: give either a CEL module or the reason its rules stay with the webhook")
        if catalogue is not None and cel is not None:
            raise ValueError(f"family {name}: a family with a CEL module lists its rules there, not in a catalogue")
        if admission_only and controller is not None:
            raise ValueError(f"family {name}: an admission-only family has no controller adapter")
        self.name = name
        # The API group and version of every kind of the family.
        self.group = group
        self.version = version
        self.kinds = kinds
        # The CRDs' description: "{kind}", "{group}" and "{version}" are filled per kind.
        self.description = description
        # Modules by dotted name: pydantic models; rules (importing it registers the kinds); the
        # catalogue's rules for the apiserver (``rules(kind)``, ``defaults(kind)``); the
        # controller's adapters (``ADAPTERS``).
        self.models = models
        self.rules = rules
        self.cel = cel
        self.webhook_only_reason = webhook_only_reason
        # A webhook-only family: the module whose ``rules(kind)`` names its rules (every one
        # ``Where.WEBHOOK``), for the rule ids of its findings and ``jobgate explain``.
        self.catalogue = catalogue
        self.controller = controller
        # Modules of the review's hot path that ``JOBGATE_COMPILE=1`` builds with mypyc.
        self.compiled_modules = compiled_modules
        # Its peer's CRD and operator run the jobs: jobgate ships neither a CRD nor controller
        # permissions for the kinds, only admission.
        self.admission_only = admission_only

    def __repr__(self) -> str:
        return f"Family({self.name!r}, {self.group}/{self.version}, kinds={self.kinds!r})"


# The registration: every family's package name. Adding a family is its package and its name here.
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
