"""The two CRDs of ``policy.jobgate.io/v1alpha1``, generated from the models.

pydantic's JSON schema is not structural: it has ``$defs``/``$ref``, ``anyOf: [X, {type: null}]`` for
optionals, ``title``s and draft-2020 numeric ``exclusiveMinimum``. The apiserver wants every node
typed, refs inlined, no ``anyOf`` with a null branch, and OpenAPI v3.0 bounds
(``minimum`` + boolean ``exclusiveMinimum``). :func:`structural` converts; the CEL rules
(``x-kubernetes-validations``) come from the models' ``json_schema_extra``.
"""

from __future__ import annotations

from typing import Any

from jobgate.policy.models import (
    CLUSTER_KIND,
    GROUP,
    NAMESPACED_KIND,
    VERSION,
    ClusterTrainingJobPolicySpec,
    PolicyStatus,
    TrainingJobPolicySpec,
)

_DROP = {"title", "$defs"}


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if key in out and isinstance(out[key], dict) and isinstance(value, dict):
            out[key] = _merge(out[key], value)
        elif key == "x-kubernetes-validations" and key in out:
            out[key] = [*out[key], *value]
        else:
            out[key] = value
    return out


def structural(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pydantic JSON schema node as a structural OpenAPI v3.0 schema node."""
    defs = defs if defs is not None else schema.get("$defs", {})
    node = dict(schema)
    if "$ref" in node:
        target = defs[node.pop("$ref").rsplit("/", 1)[-1]]
        node = _merge(dict(target), node)
    if "anyOf" in node:
        branches = [b for b in node.pop("anyOf") if b.get("type") != "null"]
        if len(branches) != 1:
            raise ValueError(f"cannot make a structural schema of a union: {branches}")
        # The outer node's keys (description, CEL rules, list types) go onto the one real branch.
        inner = structural(branches[0], defs)
        node = _merge(inner, {k: v for k, v in node.items()})
        if "$ref" in node:
            node = structural(node, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP:
            continue
        if key == "default" and value is None:
            continue
        if key == "properties":
            out[key] = {name: structural(sub, defs) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = structural(value, defs)
        elif key == "additionalProperties" and value is False:
            continue  # structural schemas prune unknown fields by default; false is not allowed beside properties
        elif key == "exclusiveMinimum" and not isinstance(value, bool):
            out["minimum"], out["exclusiveMinimum"] = value, True
        elif key == "exclusiveMaximum" and not isinstance(value, bool):
            out["maximum"], out["exclusiveMaximum"] = value, True
        elif key == "maxProperties" and "properties" in node:
            continue
        else:
            out[key] = value
    if "type" not in out:
        if "properties" in out:
            out["type"] = "object"
        elif "enum" in out or "const" in out:
            out["type"] = "string"
    if "const" in out:
        out["enum"] = [out.pop("const")]
    return out


def group_crd(
    *,
    kind: str,
    plural: str,
    scope: str,
    short: list[str],
    columns: list[dict[str, str]],
    description: str,
    spec_model: type,
    status_model: type,
    required: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A CRD of the policy group from its spec and status models (the policies' and the exceptions')."""
    spec = structural(spec_model.model_json_schema(mode="validation"))
    status = structural(status_model.model_json_schema(mode="validation"))
    spec.pop("description", None)
    schema: dict[str, Any] = {"type": "object", "description": description}
    if required:
        schema["required"] = list(required)
    schema["properties"] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": spec,
        "status": status,
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short,
                "categories": ["jobgate", "policy"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


_POLICY_COLUMNS = [
    {"name": "Action", "type": "string", "jsonPath": ".spec.enforcementAction"},
    {"name": "Priority", "type": "integer", "jsonPath": ".spec.priority"},
    {"name": "Violations", "type": "integer", "jsonPath": ".status.totalViolations"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def _crd(kind: str, plural: str, scope: str, spec_model: type, short: list[str]) -> dict[str, Any]:
    return group_crd(
        kind=kind,
        plural=plural,
        scope=scope,
        short=short,
        columns=_POLICY_COLUMNS,
        description=spec_model.__doc__.strip().splitlines()[0] if spec_model.__doc__ else "",
        spec_model=spec_model,
        status_model=PolicyStatus,
    )


def policy_crds() -> list[dict[str, Any]]:
    """The ClusterTrainingJobPolicy (cluster-scoped) and TrainingJobPolicy (namespaced) CRDs."""
    return [
        _crd(CLUSTER_KIND, "clustertrainingjobpolicies", "Cluster", ClusterTrainingJobPolicySpec, ["ctjp"]),
        _crd(NAMESPACED_KIND, "trainingjobpolicies", "Namespaced", TrainingJobPolicySpec, ["tjp"]),
    ]
