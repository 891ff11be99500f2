"""The record a family registers: every part of it, named once.

A family is one package, ``jobgate/families/<name>/``, whose ``__init__`` holds its ``FAMILY``
record, plus its name in ``jobgate.families.FAMILY_NAMES``. The record names modules by string,
so that reading it imports none of them: checking one file loads the one family it needs, and
the layers stay apart (the engine never imports a generator or the controller).
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
