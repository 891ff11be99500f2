"""The API families jobgate serves: one package each, named in ``FAMILY_NAMES``.

``jobgate/families/<name>/__init__.py`` holds the family's record (``FAMILY``, a ``Family``
below); beside it, ``models`` (pydantic), ``rules`` (defaults and
validation; importing it registers the kinds), ``declared`` (the rules and defaults of a known form),
``cel`` (the rules the apiserver enforces that no form says, placed among the declared ones),
``forms`` and ``form_checks`` (the forms only this family uses and their runtime twins) and, for
the families jobgate's controller runs, an adapter under ``controller/adapters/``.
Adding a family is its package and its name below.

A record names its modules by string, so that reading it imports none of them: checking one file
loads the one family it needs, and the layers stay apart (the engine never imports a generator or
the controller). This package and the records import nothing of the families' code, so every
layer may read them (platform policy finds the families' field maps here); the engine reads the
generated family index instead (``jobgate/_generated/family_index.py``).
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
        "declared",
        "description",
        "form_checks",
        "group",
        "kinds",
        "models",
        "name",
        "policy",
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
        declared: str | None = None,
        cel: str | None = None,
        webhook_only_reason: str | None = None,
        catalogue: str | None = None,
        controller: str | None = None,
        compiled_modules: tuple[str, ...] = (),
        admission_only: bool = False,
        policy: str | None = None,
        form_checks: tuple[str, ...] = (),
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
        # The module of its declarations (docs/rule-forms.md): ``DECLARED`` maps each kind's name to
        # its declarations, which the generators compile (and ``SCOPES``, its per-entry scopes).
        self.declared = declared
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
        # The module of the kinds' policy field maps (``KIND_MAPS``, jobgate.policy.fieldmap): where
        # platform policies find the queue, scheduler, TTL and pod templates. None: no policy applies.
        self.policy = policy
        # The runtime twins of the forms only this family uses (docs/rule-forms.md): the functions its
        # generated checks call, found by the generator after the shared twins and compiled with them.
        self.form_checks = form_checks

    def __repr__(self) -> str:
        return f"Family({self.name!r}, {self.group}/{self.version}, kinds={self.kinds!r})"


# The registration: every family's package name. Adding a family is its package and its name here.
FAMILY_NAMES: tuple[str, ...] = ("kubedl", "mlkube", "t9k", "diengine", "volcano", "kubeflow", "jobset", "trainer")


def family(name: str) -> Family:
    """The record of a family (KeyError for a name that is not registered)."""
    if name not in FAMILY_NAMES:
        raise KeyError(name)
    module = __import__(f"{__name__}.{name}", fromlist=["FAMILY"])
    record: Family = module.FAMILY
    return record


def every_family() -> list[Family]:
    return [family(name) for name in FAMILY_NAMES]
