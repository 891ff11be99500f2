"""Jobs of a map of replica types (``{Worker: {replicas, restartPolicy, template}}``) with a run
policy: what the KubeDL family (``training.kubedl.io``) and the Kubeflow family (``kubeflow.org``)
share.

Both families have the same kind names (TFJob, PyTorchJob, ...), the same ``ReplicaSpec`` and
nearly the same ``RunPolicy``; they differ in their group, in where the run policy sits (KubeDL
inlines it into ``spec``, Kubeflow keeps it under ``spec.runPolicy``), in their kinds and in a few
defaults and messages. ``ReplicaJobKind`` holds the common defaulting and checks; each family's
module subclasses it with its own hooks (``families/kubedl.py``, ``families/kubeflow.py``).
"""

from __future__ import annotations

import sys

from jobgate.api.constants import RESTART_POLICIES
from jobgate.engine.fielderrors import (
    FieldError,
    FieldPath,
    Key,
    invalid,
    required,
)
from jobgate.engine.findings import Findings
from jobgate.engine.jsonpatch import NO_PATCH, PatchRecorder, escape_pointer_token
from jobgate.engine.modelref import ModelRef
from jobgate.engine.registry import GroupVersionKind
from jobgate.forms.checks.replica_maps import respelled_types
from jobgate.rules.dicts import as_int, copied_dict
from jobgate.rules.jobmeta import check_job_name, check_spec_schema
from jobgate.rules.podtemplate import check_pod_template

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Final, TypeAlias

    from jobgate.engine.context import ReviewContext

# Models are named, not imported: see jobgate/engine/modelref.py.
JOB_STATUS_MODEL: Final = ModelRef("jobgate.api.common:JobStatus")

# The replica map's declared rules and defaults (jobgate/generate/cel/replicajobs.replica_declarations)
# are generated under the kind's group with this prefix (jobgate/_generated/declared/<family>.py).
REPLICA_MAP_GROUP: Final = "replicamap."
# The package of the families' generated modules of declared rules and defaults.
DECLARED_PACKAGE: Final = "jobgate._generated.declared."
# The ids of the declared replica map's rules and defaults.
TYPES: Final = "replicas/types"
TYPE_SPELLING: Final = "replicas/type-spelling"
QUEUE_IMMUTABLE: Final = "run-policy/queue-immutable"
MIN_AVAILABLE: Final = "run-policy/min-available"
REPLICA_DEFAULTS: Final = ("replicas/count", "replicas/restart-policy")
# Each container's terminationMessagePolicy (declared for the kinds that default it).
TERMINATION_MESSAGE_POLICY: Final = "pod-template/termination-message-policy"
# The framework's port on a container of each replica's template (rules/replicajobs_declared.py).
FRAMEWORK_PORT: Final = "pod-template/framework-port"


# The classes here are written out, not dataclasses: importing ``dataclasses`` costs a
# one-file ``jobgate validate`` more than the rules it runs.


class Role:
    """A replica type of a kind and what defaulting gives it."""

    __slots__ = ("default_replicas", "gets_port", "is_master", "name", "restart_policy")

    def __init__(
        self,
        name: str,
        restart_policy: str,
        gets_port: bool = True,
        is_master: bool = False,
        default_replicas: int = 1,
    ) -> None:
        self.name = name
        self.restart_policy = restart_policy
        self.gets_port = gets_port
        self.is_master = is_master
        self.default_replicas = default_replicas

    def _values(self) -> tuple[str, str, bool, bool, int]:
        return (self.name, self.restart_policy, self.gets_port, self.is_master, self.default_replicas)

    def __eq__(self, other: object) -> bool:
        if type(other) is not Role:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return (
            f"Role(name={self.name!r}, restart_policy={self.restart_policy!r}, "
            f"gets_port={self.gets_port!r}, is_master={self.is_master!r}, default_replicas={self.default_replicas!r})"
        )


# Aliases as text: at run time neither typing nor collections.abc is imported (start-up).
RoleRules: TypeAlias = "Callable[[dict[str, dict[str, Any]], FieldPath], list[FieldError]]"
# (spec, run policy, replica map, recorder, JSON pointer of the run policy)
ExtraDefaults: TypeAlias = "Callable[[dict[str, Any], dict[str, Any], dict[str, Any], PatchRecorder, str], None]"


def no_role_rules(replicas: dict[str, dict[str, Any]], path: FieldPath) -> list[FieldError]:
    return []


def no_extra_defaults(
    spec: dict[str, Any], run_policy: dict[str, Any], replicas: dict[str, Any], recorder: PatchRecorder, pointer: str
) -> None:
    return None


class ReplicaJobKind:
    """A kind whose spec holds a map of replica type to ``ReplicaSpec`` and a run policy.

    Subclasses say where the run policy is and what it defaults to (``_default_run_policy``,
    ``run_policy_path``), and may refine the checks (``_check_name``, ``_check_replica_type``,
    ``_check_family_rules``, ``_check_update``).
    """

    __slots__ = (
        "_canonical",
        "_generated",
        "_kind_generated",
        "_missing_containers",
        "_required_container",
        "_roles",
        "_types",
        "container",
        "extra_defaults",
        "family",
        "gvk",
        "kind",
        "normalise_types",
        "plural",
        "port",
        "port_name",
        "port_requires_named_container",
        "printer_columns",
        "replicas_field",
        "require_container",
        "role_rules",
        "roles",
        "separate_run_policy",
        "short_names",
        "spec_model",
        "status_model",
    )

    # Defaulting of every container's terminationMessagePolicy (KubeDL does it, Kubeflow not).
    termination_message_policy = True

    def unknown_type_restart_policy(self) -> str | None:
        """The restart policy given to a replica type the kind does not know (None: such types are
        left alone, as KubeDL does; Kubeflow's defaulters default every entry of the map).

        A method, not a class attribute a subclass overrides: compiled by mypyc, a base class's
        attribute is read natively and a subclass's override is not seen."""
        return None

    # Whether a framework container is still required when no container has a name.
    required_container_when_unnamed = False

    # Keyword-only, the one signature: a family's subclass passes its group, version and family and
    # forwards the rest (``KubeDLKind``, ``KubeflowKind``).
    def __init__(
        self,
        *,
        kind: str,
        plural: str,
        short_names: tuple[str, ...],
        replicas_field: str,
        spec_model: ModelRef,
        container: str,
        port_name: str,
        port: int,
        roles: tuple[Role, ...],
        require_container: bool = True,
        normalise_types: bool = True,
        port_requires_named_container: bool = False,
        role_rules: RoleRules = no_role_rules,
        extra_defaults: ExtraDefaults = no_extra_defaults,
        group: str,
        version: str,
        family: str,
        status_model: ModelRef = JOB_STATUS_MODEL,
        required_container_detail: str | None = None,
        missing_containers_detail: str | None = None,
        separate_run_policy: bool = False,
        printer_columns: tuple[dict[str, Any], ...] = (),
    ) -> None:
        self.kind = kind
        self.plural = plural
        self.short_names = short_names
        self.replicas_field = replicas_field
        self.spec_model = spec_model
        self.container = container
        self.port_name = port_name
        self.port = port
        self.roles = roles
        self.require_container = require_container
        self.normalise_types = normalise_types
        self.port_requires_named_container = port_requires_named_container
        self.role_rules = role_rules
        self.extra_defaults = extra_defaults
        self.family = family
        self.status_model = status_model
        self.gvk = GroupVersionKind(group, version, kind)
        self._roles: dict[str, Role] = {r.name: r for r in roles}
        self._canonical: dict[str, str] = {r.name.casefold(): r.name for r in roles}
        self._types: tuple[str, ...] = tuple(r.name for r in roles)
        # The kind's generated functions by prefix, found once: its replica map's (``_replica_map_function``)
        # and its own (``_kind_function``).
        self._generated: dict[str, Any] = {}
        self._kind_generated: dict[str, Any] = {}
        detail = required_container_detail or f"must have at least one container with name {container}"
        self._required_container: tuple[str, str] | None = (container, detail) if require_container else None
        self._missing_containers = missing_containers_detail
        # The run policy may be at spec.runPolicy instead of inline in spec (KubeDL's MPIJob).
        self.separate_run_policy = separate_run_policy
        # The CRD's printer columns; empty: jobgate's default ones.
        self.printer_columns = printer_columns

    def __repr__(self) -> str:
        return f"{type(self).__name__}(kind={self.kind!r})"

    def role(self, replica_type: str) -> Role | None:
        return self._roles.get(replica_type)

    def canonical_type(self, replica_type: str) -> str | None:
        return self._canonical.get(replica_type.casefold())

    def run_policy(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The object holding this job's run policy (``spec`` itself when it is inlined)."""
        raise NotImplementedError

    def run_policy_place(self) -> str:
        """Where the run policy is, for its declared rules: "spec", or "either" (spec.runPolicy when
        that is there, else spec); a kind whose run policy is spec.runPolicy alone says "runPolicy"."""
        return "either" if self.separate_run_policy else "spec"

    def run_policy_path(self, spec: dict[str, Any]) -> FieldPath:
        return ("spec", "runPolicy") if self.run_policy(spec) is not spec else ("spec",)

    # --- defaulting ------------------------------------------------------------------------

    def _default_run_policy(self, spec: dict[str, Any], recorder: PatchRecorder) -> tuple[dict[str, Any], str]:
        """Fill the run policy's defaults in place on ``spec`` (a copy); (run policy, its JSON pointer)."""
        raise NotImplementedError

    def default(
        self, obj: dict[str, Any], recorder: PatchRecorder = NO_PATCH, previous: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
            return obj
        job = dict(obj)
        spec = copied_dict(job, "spec")
        assert spec is not None
        run_policy, policy_pointer = self._default_run_policy(spec, recorder)

        replicas = spec.get(self.replicas_field)
        if not isinstance(replicas, dict):
            return job
        replicas = self._default_each(self._normalised_types(replicas, recorder, previous), recorder)
        if previous is not None and self.normalise_types:
            # The apiserver runs the defaults again after they changed the job (reinvocation): the
            # stored role, sent again beside its other spelling, is seen stale once defaulted.
            respelled = self._normalised_types(replicas, recorder, previous)
            if respelled.keys() != replicas.keys():
                replicas = self._default_each(respelled, recorder)
        spec[self.replicas_field] = replicas
        # The kind's declared defaults (a family's declared.py), where its hand-written ones were: after
        # the replicas', before the rest of its own (the order a default's new field takes in spec).
        declared = self.declared_defaults(job, recorder)
        if declared is not job:
            job = declared
            spec = job["spec"]
            run_policy = self.run_policy(spec)
        self.extra_defaults(spec, run_policy, replicas, recorder, policy_pointer)
        return job

    def _default_each(self, replicas: dict[str, Any], recorder: PatchRecorder) -> dict[str, Any]:
        """The declared count, restart policy, containers' terminationMessagePolicy and framework port
        of each replica (the generated defaults of one value of the map: each replica's patches before
        the next one's)."""
        default_value = self._replica_map_function("default_value")
        pointer = f"/spec/{self.replicas_field}/"
        for replica_type, given in replicas.items():
            if isinstance(given, dict):
                at = pointer + escape_pointer_token(replica_type)
                replicas[replica_type] = default_value(replica_type, dict(given), at, recorder)
        return replicas

    def _replica_map_function(self, prefix: str) -> Any:
        """The generated ``default_value_``/``validate_`` function of the replica map's declarations,
        looked up on first use (the generated module may be written after the kind is made)."""
        function = self._generated.get(prefix)
        if function is None:
            function = self._generated[prefix] = self._generated_function(prefix, REPLICA_MAP_GROUP + self.gvk.group)
        return function

    def _kind_function(self, prefix: str) -> Any:
        """The generated ``default_``/``validate_`` function of the kind's own declarations (its group)."""
        function = self._kind_generated.get(prefix)
        if function is None:
            function = self._kind_generated[prefix] = self._generated_function(prefix, self.gvk.group)
        return function

    def _generated_function(self, prefix: str, group: str) -> Any:
        """``<prefix>_<kind>_<group>`` (``function_name``) of the family's generated module,
        ``jobgate/_generated/declared/<family>.py``, imported with the first kind that asks."""
        name = (self.kind + "_" + group).replace(".", "_").replace("-", "_").lower()
        module = DECLARED_PACKAGE + self.family
        # __import__ rather than importlib: one builtin call, nothing more imported at start-up.
        __import__(module)
        return getattr(sys.modules[module], f"{prefix}_{name}")

    def declared_defaults(self, obj: dict[str, Any], recorder: PatchRecorder) -> dict[str, Any]:
        """The kind's declared defaults (``jobgate/_generated/declared/<family>.py``); none here."""
        return obj

    def declared_rules(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        """The kind's declared rules' errors, reported where its role rules are; none here."""
        return []

    def _normalised_types(
        self, replicas: dict[str, Any], recorder: PatchRecorder, previous: dict[str, Any] | None
    ) -> dict[str, Any]:
        """A copy of the map, ``worker``/``WORKER`` -> ``Worker`` (declared: ``TYPE_SPELLING``, called with
        the stored job, which the generated defaults do not have)."""
        if not self.normalise_types:
            return dict(replicas)
        old_spec = previous.get("spec") if previous is not None else None
        old_map = old_spec.get(self.replicas_field) if isinstance(old_spec, dict) else None
        return respelled_types(replicas, recorder, "/spec/" + self.replicas_field, self._types, old_map)

    # --- validation --------------------------------------------------------------------------

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None, context: ReviewContext) -> Findings:
        found = Findings()
        spec = check_spec_schema(obj, self.spec_model, found)
        replica_map = spec.get(self.replicas_field) if spec is not None else None
        replicas = (
            {t: r for t, r in replica_map.items() if isinstance(r, dict)} if isinstance(replica_map, dict) else {}
        )
        counts = [(t, as_int(r.get("replicas")) or 1) for t, r in replicas.items() if self._counts_for_name(t)]
        found.errors[:0] = self._check_name(obj, counts)

        base: FieldPath = ("spec", self.replicas_field)
        if isinstance(replica_map, dict):
            if self.checks_types():
                found.errors.extend(self._replica_map_function("validate")(obj, old, (TYPES,)))
            for replica_type in replica_map:
                self._check_replica_type(replica_type, replica_map, base, found)
        for replica_type, replica in replicas.items():
            self._check_replica(replica_type, replica, (*base, Key(replica_type)), found)
        found.errors.extend(self.role_rules(replicas, base))
        # The declared role rules read the replica map as the role rules always have: its object entries,
        # none when there is no map (a role is then missing too, beside the schema's error). The job
        # as it is when every entry is an object.
        whole_map = type(replica_map) is dict and len(replica_map) == len(replicas)
        roles_read = obj if whole_map else {**obj, "spec": {**(spec or {}), self.replicas_field: replicas}}
        found.errors.extend(self.declared_rules(roles_read, old))
        if spec is not None:
            self._check_run_policy(spec, replicas, found)
            self._check_family_rules(spec, replicas, found)
            if old is not None and isinstance(old.get("spec"), dict):
                found.errors.extend(self._check_update(spec, old["spec"]))
        return found

    def checks_types(self) -> bool:
        """Whether the replica types are checked (the declared ``TYPES``): a kind may take any type."""
        return True

    def _counts_for_name(self, replica_type: str) -> bool:
        """Whether pods of this replica type are named after the job (checked for length)."""
        return self.role(replica_type) is not None

    def _check_name(self, obj: dict[str, Any], counts: list[tuple[str, int]]) -> list[FieldError]:
        return check_job_name(obj, counts)

    def _check_replica_type(
        self, replica_type: str, replica_map: dict[str, Any], base: FieldPath, found: Findings
    ) -> None:
        """A kind's own finding of each replica type (the types themselves are declared: ``TYPES``)."""
        return None

    def _check_replica(self, replica_type: str, replica: dict[str, Any], path: FieldPath, found: Findings) -> None:
        policy = replica.get("restartPolicy")
        check_pod_template(
            replica.get("template"),
            (*path, "template"),
            where=f"{self.replicas_field}[{replica_type}]",
            replica_restart_policy=policy if policy in RESTART_POLICIES else None,
            required_container=self._required_container,
            found=found,
            required_container_when_unnamed=self.required_container_when_unnamed,
            missing_containers_detail=self._missing_containers,
        )

    def _check_run_policy(self, spec: dict[str, Any], replicas: dict[str, dict[str, Any]], found: Findings) -> None:
        """The gang size fits in the job: ``schedulingPolicy.minAvailable`` ≤ the total of all replicas (declared)."""
        replica_map = spec.get(self.replicas_field)
        whole_map = type(replica_map) is dict and len(replica_map) == len(replicas)
        job = {"spec": spec if whole_map else {**spec, self.replicas_field: replicas}}
        found.errors.extend(self._replica_map_function("validate")(job, None, (MIN_AVAILABLE,)))

    def _check_family_rules(self, spec: dict[str, Any], replicas: dict[str, dict[str, Any]], found: Findings) -> None:
        return None

    def _check_update(self, spec: dict[str, Any], old_spec: dict[str, Any]) -> list[FieldError]:
        """``schedulingPolicy.queue`` is immutable (any change, setting or removing it included): declared."""
        check = self._replica_map_function("validate")
        return check({"spec": spec}, {"spec": old_spec}, (QUEUE_IMMUTABLE,))  # type: ignore[no-any-return]

    def queue(self, spec: dict[str, Any]) -> tuple[Any, FieldPath]:
        """The job's scheduling queue (None when unset or empty) and its field path."""
        path = (*self.run_policy_path(spec), "schedulingPolicy", "queue")
        scheduling = self.run_policy(spec).get("schedulingPolicy")
        queue = scheduling.get("queue") if isinstance(scheduling, dict) else None
        return (None if queue == "" else queue), path


# --- role rules shared by the families --------------------------------------------------------


def exactly_one(replicas: dict[str, dict[str, Any]], base: FieldPath, role: str, rule: str) -> list[FieldError]:
    """``role`` is present with 1 replica (an unset count is 1 once defaulted); ``rule`` is the caller's id."""
    if role not in replicas:
        return [required((*base, Key(role)), "must be present", rule)]
    count = as_int(replicas[role].get("replicas"))
    if count is not None and count != 1:
        return [invalid((*base, Key(role), "replicas"), count, "must be 1", rule)]
    return []
