"""Generate the Helm chart ``charts/jobgate`` from ``manifests/``: one source, two front ends.

``python -m build_support.chart`` writes the chart; ``--check`` only reports what differs
(a unit test runs it). The YAML under ``manifests/`` stays the single source of every object:
this module reads the kustomize base and the ``self-signed`` and ``cert-manager`` overlays and
turns their objects into templates by putting Helm expressions at known field paths (image,
replicas, args, resources, scheduling, failurePolicy, namespaceSelector, timeoutSeconds, PDB) and
conditionals around whole objects (certificate mode, admission-only, CRDs, controller, PDB).
What is written by hand here is only what has no counterpart in ``manifests/``: the helpers,
the values' documentation, the schema, NOTES.txt and the optional ServiceMonitor.

How the overlays map onto values (``tests/chart/`` proves each equal to ``kubectl kustomize``):

- ``overlays/self-signed`` (the defaults): every object of that overlay's own resources, taken
  generically, so an object added there (a renewal CronJob, its RBAC) is in the next chart.
- ``overlays/cert-manager`` (``certificates.mode: certManager``): its objects, and its JSON
  patches applied to the base objects under the same condition.
- ``overlays/volcano-admission-only`` (``families: [volcano]``, ``admissionOnly: true``): not
  read, but reproduced by two general values: ``families`` narrows the webhook rules (and both
  processes' ``--families``), ``admissionOnly`` drops the controller and the CRDs of the served
  families, which their own system installs.
- ``overlays/kubeflow-admission-only`` likewise (and ``crds.install: false``), with the
  ``kubeflow-policies`` it adds: templates of their own, under ``admissionOnlyPolicies`` (on by
  default) with admissionOnly and the family served.

The templates keep the source's layout: ``templates/base/...``, ``templates/self-signed/...``,
``templates/cert-manager/...``. ``charts/jobgate/tests/`` (helm-unittest) is written by hand and
left alone here.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from build_support.chart_model import REPO, ChartError, Defaults

MANIFESTS = REPO / "manifests"
CHART = REPO / "charts" / "jobgate"
NAMESPACE = "jobgate-system"  # the base's namespace: the release's in the chart
HAND_WRITTEN = ("tests",)  # chart directories this generator leaves alone
CERT_MODES = {"self-signed": "selfSigned", "cert-manager": "certManager"}
# CRDs of a group that is no job API's: which family they belong to (Volcano's Command bus).
EXTRA_CRD_FAMILIES = {"bus.volcano.sh": "volcano"}


# --- template nodes: a YAML tree where some values are Helm template text -----------------


@dataclass
class Expr:
    """A scalar written as template text, e.g. ``{{ .Values.webhook.replicas }}``."""

    text: str


@dataclass
class Block:
    """A whole value from the values: ``toYaml``; with ``optional`` the key is left out when empty."""

    expr: str
    optional: bool = False


@dataclass
class When:
    """A mapping entry or list item present only when ``condition`` holds."""

    condition: str
    value: Any


@dataclass
class Choice:
    """A mapping value chosen by the first condition that holds; else ``default`` (absent if None)."""

    branches: list[tuple[str, Any]]
    default: Any = None


@dataclass
class Splice:
    """List items written by template text (a ``range``), one line each, at the list's indentation."""

    lines: list[str]


@dataclass
class Document:
    source: str  # manifests/-relative path
    obj: Any
    condition: str | None = None


# --- emitting ---------------------------------------------------------------------------------

_PLAIN = re.compile(r"^[A-Za-z0-9_./][A-Za-z0-9_./=:@-]*$|^--?[A-Za-z0-9][A-Za-z0-9_./=:@-]*$")


def scalar(value: Any) -> str:
    if isinstance(value, Expr):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if not isinstance(value, str):
        raise ChartError(f"cannot write {value!r} as a scalar")
    if NAMESPACE in value:  # always the release's namespace, wherever it appears
        return json.dumps(value).replace(NAMESPACE, "{{ .Release.Namespace }}")
    if "{{" in value or "}}" in value:  # Helm would read it as a template
        return "{{ " + json.dumps(value) + " | toJson }}"
    if _PLAIN.match(value) and yaml.safe_load(value) == value:
        return value
    return json.dumps(value, ensure_ascii=False)


def _key(key: str) -> str:
    return scalar(key)


def emit_mapping(mapping: dict[str, Any], indent: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for key, value in mapping.items():
        if isinstance(value, When):
            lines.append(f"{pad}{{{{- if {value.condition} }}}}")
            lines += emit_entry(key, value.value, indent)
            lines.append(f"{pad}{{{{- end }}}}")
        elif isinstance(value, Choice):
            for number, (condition, branch) in enumerate(value.branches):
                lines.append(f"{pad}{{{{- {'if' if number == 0 else 'else if'} {condition} }}}}")
                lines += emit_entry(key, branch, indent)
            if value.default is not None:
                lines.append(f"{pad}{{{{- else }}}}")
                lines += emit_entry(key, value.default, indent)
            lines.append(f"{pad}{{{{- end }}}}")
        else:
            lines += emit_entry(key, value, indent)
    return lines


def emit_entry(key: str, value: Any, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(value, Block):
        source = "." if value.optional else value.expr  # inside `with`, the value is the dot
        body = [f"{pad}{_key(key)}:", f"{pad}  {{{{- toYaml {source} | nindent {indent + 2} }}}}"]
        if value.optional:
            return [f"{pad}{{{{- with {value.expr} }}}}", *body, f"{pad}{{{{- end }}}}"]
        return body
    if isinstance(value, dict):
        if not value:
            return [f"{pad}{_key(key)}: {{}}"]
        return [f"{pad}{_key(key)}:", *emit_mapping(value, indent + 2)]
    if isinstance(value, list):
        if not value:
            return [f"{pad}{_key(key)}: []"]
        return [f"{pad}{_key(key)}:", *emit_list(value, indent + 2)]
    if isinstance(value, When | Choice | Splice):
        raise ChartError(f"{type(value).__name__} cannot be nested directly under {key!r}")
    return [f"{pad}{_key(key)}: {scalar(value)}"]


def emit_list(items: list[Any], indent: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for item in items:
        if isinstance(item, Splice):
            lines += [f"{pad}{line}" for line in item.lines]
        elif isinstance(item, When):
            lines.append(f"{pad}{{{{- if {item.condition} }}}}")
            lines += emit_item(item.value, indent)
            lines.append(f"{pad}{{{{- end }}}}")
        else:
            lines += emit_item(item, indent)
    return lines


def emit_item(item: Any, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(item, dict) and item:
        body = emit_mapping(item, indent + 2)
        if body[0].lstrip().startswith("{{"):  # a conditional first entry: the dash stands alone
            return [f"{pad}-", *body]
        return [f"{pad}- {body[0][indent + 2 :]}", *body[1:]]
    if isinstance(item, list) and item:
        return [f"{pad}-", *emit_list(item, indent + 2)]
    if isinstance(item, dict | list):
        return [f"{pad}- {'{}' if isinstance(item, dict) else '[]'}"]
    return [f"{pad}- {scalar(item)}"]


def emit_document(document: Document) -> str:
    lines = emit_mapping(document.obj, 0)
    if document.condition:
        lines = [f"{{{{- if {document.condition} }}}}", "---", *lines, "{{- end }}"]
    else:
        lines = ["---", *lines]
    return "\n".join(lines) + "\n"


def to_yaml(value: Any) -> str:
    """Plain data as block YAML (the values file), through the same emitter as the templates."""
    if isinstance(value, dict):
        return "\n".join(emit_mapping(value, 0)) + "\n"
    raise ChartError("values must be a mapping")


# --- reading the manifests ---------------------------------------------------------------------


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(REPO))
    except ValueError:  # a copy of manifests/ elsewhere (the tests')
        return str(path)


def load_documents(path: Path) -> list[dict[str, Any]]:
    try:
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except OSError as exc:
        raise ChartError(f"{_shown(path)}: cannot read it: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ChartError(f"{_shown(path)}: not YAML: {exc}") from None
    for document in documents:
        if not isinstance(document, dict) or "kind" not in document or "metadata" not in document:
            raise ChartError(f"{_shown(path)}: a document that is no Kubernetes object")
    return documents


KNOWN_KUSTOMIZATION_KEYS = {"apiVersion", "kind", "resources", "patches", "replacements"}


def kustomization(directory: Path) -> dict[str, Any]:
    path = directory / "kustomization.yaml"
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ChartError(f"{path}: {exc}") from None
    if not isinstance(document, dict):
        raise ChartError(f"{path}: not a kustomization")
    unknown = set(document) - KNOWN_KUSTOMIZATION_KEYS
    if unknown:
        raise ChartError(
            f"{_shown(directory / 'kustomization.yaml')}: {sorted(unknown)} not supported by "
            "build_support/chart.py: teach it how they map onto the chart"
        )
    return document


def resource_files(directory: Path, skip: Path | None = None) -> Iterator[Path]:
    """Every file a kustomization's resources name, directories followed, in kustomize's order;
    ``skip`` (the base, for an overlay) and everything under it left out."""
    for entry in kustomization(directory).get("resources", []):
        path = (directory / entry).resolve()
        if skip is not None and (path == skip or skip in path.parents):
            continue
        if path.is_dir():
            if kustomization(path).get("patches"):
                raise ChartError(f"{_shown(path)}: patches in a nested kustomization are not supported")
            yield from resource_files(path, skip)
        else:
            yield path


# --- the values' defaults, read from the base ------------------------------------------------


def find(documents: list[Document], kind: str, name: str) -> dict[str, Any]:
    found = [d.obj for d in documents if d.obj["kind"] == kind and d.obj["metadata"]["name"] == name]
    if len(found) != 1:
        raise ChartError(f"expected one {kind} {name} in the manifests, found {len(found)}")
    return found[0]


def container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for c in pod["containers"] if c["name"] == name]
    if len(found) != 1:
        raise ChartError(f"expected one container {name}, found {len(found)}")
    return found[0]


def pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec", {})
    if obj["kind"] == "CronJob":
        return [spec["jobTemplate"]["spec"]["template"]["spec"]]
    if obj["kind"] in ("Deployment", "Job", "StatefulSet", "DaemonSet", "ReplicaSet"):
        return [spec["template"]["spec"]]
    return []


def base_image(documents: list[Document]) -> str:
    images = {c["image"] for d in documents for pod in pod_specs(d.obj) for c in pod["containers"]}
    if len(images) != 1:
        raise ChartError(f"the base's pods should share one image, found {sorted(images)}")
    return images.pop()


def families_by_group() -> dict[str, str]:
    from jobgate.generate.manifests import every_family_kind

    groups = {k.gvk.group: k.family for k in every_family_kind()}
    return {**groups, **EXTRA_CRD_FAMILIES}


def read_defaults(base: list[Document]) -> Defaults:
    repository, _, tag = base_image(base).rpartition(":")
    webhook = find(base, "Deployment", "jobgate")
    controller = find(base, "Deployment", "jobgate-controller")
    mutating = find(base, "MutatingWebhookConfiguration", "jobgate-mutating")["webhooks"]
    validating = find(base, "ValidatingWebhookConfiguration", "jobgate-validating")["webhooks"]
    if len(mutating) != 1 or len(validating) != 1:
        raise ChartError("expected one webhook in each webhook configuration")
    policies = {mutating[0]["failurePolicy"], validating[0]["failurePolicy"]}
    if len(policies) != 1:
        raise ChartError(f"the two webhooks' failurePolicy differ ({sorted(policies)}): one value cannot hold both")

    def component(deployment: dict[str, Any], name: str) -> dict[str, Any]:
        pod = deployment["spec"]["template"]["spec"]
        return {
            "replicas": deployment["spec"]["replicas"],
            "resources": container(pod, name)["resources"],
            "nodeSelector": pod.get("nodeSelector", {}),
            "tolerations": pod.get("tolerations", []),
            "affinity": pod.get("affinity", {}),
        }

    groups = families_by_group()
    return Defaults(
        repository=repository,
        tag=tag,
        webhook=component(webhook, "webhook"),
        controller=component(controller, "controller"),
        pdb=find(base, "PodDisruptionBudget", "jobgate")["spec"],
        admission={
            "failurePolicy": policies.pop(),
            "mutatingTimeoutSeconds": mutating[0]["timeoutSeconds"],
            "validatingTimeoutSeconds": validating[0]["timeoutSeconds"],
        },
        families=sorted(set(groups.values())),
        groups=groups,
    )


# --- the substitutions ----------------------------------------------------------------------

IMAGE = Expr('{{ include "jobgate.image" . | quote }}')
PULL_POLICY = When(".Values.image.pullPolicy", Expr("{{ .Values.image.pullPolicy }}"))
SERVES = '(or (not .Values.families) (has "{family}" .Values.families))'
FAMILIES_ARG = Splice(
    [
        "{{- with .Values.families }}",
        '- {{ printf "--families=%s" (join "," .) | quote }}',
        "{{- end }}",
    ]
)


def extra_args(expr: str) -> Splice:
    return Splice([f"{{{{- range {expr} }}}}", "- {{ . | quote }}", "{{- end }}"])


def with_images(obj: dict[str, Any], image: str, extra: Callable[[dict[str, Any]], list[Any]] | None = None) -> None:
    """jobgate's image (and pull policy) from the values in every container that runs it."""
    for pod in pod_specs(obj):
        for box in pod["containers"]:
            if box["image"] != image:
                continue
            rebuilt: dict[str, Any] = {}
            for key, value in box.items():
                rebuilt[key] = IMAGE if key == "image" else value
                if key == "image":
                    rebuilt["imagePullPolicy"] = PULL_POLICY
            if extra is not None:
                rebuilt["args"] = [*box.get("args", []), *extra(box)]
            box.clear()
            box.update(rebuilt)
        pod["imagePullSecrets"] = Block(".Values.imagePullSecrets", optional=True)


def component_pod(deployment: dict[str, Any], name: str, values: str, families_arg: bool = True) -> None:
    """A Deployment's replicas, resources, args and scheduling from ``.Values.<values>``."""
    deployment["spec"]["replicas"] = Expr(f"{{{{ .Values.{values}.replicas }}}}")
    pod = deployment["spec"]["template"]["spec"]
    box = container(pod, name)
    box["args"] = [*box["args"], *([FAMILIES_ARG] if families_arg else []), extra_args(f".Values.{values}.extraArgs")]
    box["resources"] = Block(f".Values.{values}.resources")
    for key in ("nodeSelector", "tolerations", "affinity"):
        pod[key] = Block(f".Values.{values}.{key}", optional=True)
    pod["priorityClassName"] = When(
        f".Values.{values}.priorityClassName", Expr(f"{{{{ .Values.{values}.priorityClassName | quote }}}}")
    )


def webhook_configuration(obj: dict[str, Any], timeout: str, groups: dict[str, str]) -> None:
    for hook in obj["webhooks"]:
        hook["failurePolicy"] = Expr("{{ .Values.admission.failurePolicy }}")
        hook["timeoutSeconds"] = Expr(f"{{{{ .Values.admission.{timeout} }}}}")
        hook["namespaceSelector"] = Choice(
            [('kindIs "map" .Values.admission.namespaceSelector', Block(".Values.admission.namespaceSelector"))],
            default=hook["namespaceSelector"],
        )
        rules = []
        for rule in hook["rules"]:
            families = {groups.get(g) for g in rule["apiGroups"]}
            if len(families) != 1 or None in families:
                raise ChartError(f"{obj['metadata']['name']}: a rule over {rule['apiGroups']}: no single family")
            rules.append(When(SERVES.format(family=families.pop()), rule))
        hook["rules"] = rules


# CRDs of jobgate's own APIs, installed with the others whatever families are served.
OWN_CRD_GROUPS = ("policy.jobgate.io",)


def crd(obj: dict[str, Any], groups: dict[str, str]) -> str:
    group = obj["spec"]["group"]
    if group in OWN_CRD_GROUPS:
        metadata = obj["metadata"]
        keep = {"helm.sh/resource-policy": "keep"}
        metadata["annotations"] = When(".Values.crds.keep", keep)
        return ".Values.crds.installPolicies"
    family = groups.get(group)
    if family is None:
        raise ChartError(f"CRD {obj['metadata']['name']}: no family serves group {group}")
    metadata = obj["metadata"]
    keep = {"helm.sh/resource-policy": "keep"}
    metadata["annotations"] = (
        Choice([(".Values.crds.keep", {**metadata["annotations"], **keep})], default=metadata["annotations"])
        if "annotations" in metadata
        else When(".Values.crds.keep", keep)
    )
    # Admission only: the family's own system (Volcano) installs its CRDs.
    return f'and .Values.crds.install (not (and .Values.admissionOnly (has "{family}" .Values.families)))'


def apply_patch(documents: list[Document], patch: dict[str, Any], condition: str, where: str) -> None:
    """A kustomize JSON 6902 patch (``add``/``replace``), applied only when ``condition`` holds."""
    target = patch.get("target") or {}
    if set(target) - {"kind", "name"} or "path" in patch or not isinstance(patch.get("patch"), str):
        raise ChartError(f"{where}: only inline JSON 6902 patches with a kind/name target are supported")
    operations = yaml.safe_load(patch["patch"])
    if not isinstance(operations, list):
        raise ChartError(f"{where}: a strategic-merge patch is not supported (write it as JSON 6902 ops)")
    matches = [
        d.obj
        for d in documents
        if d.obj["kind"] == target.get("kind") and d.obj["metadata"]["name"] == target.get("name")
    ]
    if len(matches) != 1:
        raise ChartError(f"{where}: target {target} matches {len(matches)} objects of the base")
    for operation in operations:
        if operation.get("op") not in ("add", "replace"):
            raise ChartError(f"{where}: op {operation.get('op')!r} is not supported (add, replace)")
        *parents, last = [t.replace("~1", "/").replace("~0", "~") for t in operation["path"].split("/")[1:]]
        node: Any = matches[0]
        for token in parents:
            try:
                node = node[int(token)] if isinstance(node, list) else node.get(token)
            except (ValueError, IndexError):
                node = None
            if not isinstance(node, dict | list):
                raise ChartError(f"{where}: {operation['path']}: no such place, or one the chart templates")
        if isinstance(node, list):
            if last != "-":
                raise ChartError(f"{where}: {operation['path']}: only appending (/-) to a list is supported")
            node.append(When(condition, operation["value"]))
            continue
        current = node.get(last)
        if isinstance(current, When | Block | Expr | Splice):
            raise ChartError(f"{where}: {operation['path']} is already templated by the chart")
        if isinstance(current, Choice):
            current.branches.append((condition, operation["value"]))
        else:
            node[last] = Choice([(condition, operation["value"])], default=current)


# --- the chart ----------------------------------------------------------------------------------


def _field(obj: dict[str, Any], field_path: str, where: str) -> tuple[dict[str, Any], str]:
    """The mapping that holds the last key of a dotted ``fieldPath``, and that key."""
    *parents, last = field_path.split(".")
    holder = obj
    for key in parents:
        holder = holder.get(key) if isinstance(holder, dict) else None  # type: ignore[assignment]
        if not isinstance(holder, dict):
            raise ChartError(f"{where}: {field_path} leads nowhere in {obj['kind']} {obj['metadata']['name']}")
    return holder, last


def apply_replacements(documents: list[Document], replacements: list[dict[str, Any]], where: str) -> None:
    """kustomize's replacements, for what the overlays use: a subtree of one object copied into others."""
    import copy

    for number, replacement in enumerate(replacements):
        at = f"{where} replacement {number}"
        source = replacement.get("source", {})
        if set(source) - {"kind", "name", "fieldPath"} or "fieldPath" not in source:
            raise ChartError(f"{at}: only a source by kind, name and fieldPath is supported")
        holder, key = _field(find(documents, source["kind"], source["name"]), source["fieldPath"], at)
        if key not in holder:
            raise ChartError(f"{at}: the source has no {source['fieldPath']}")
        for target in replacement.get("targets", []):
            select = target.get("select", {})
            if set(select) - {"kind", "name"} or set(target) - {"select", "fieldPaths"}:
                raise ChartError(f"{at}: only targets selected by kind and name, with fieldPaths, are supported")
            obj = find(documents, select["kind"], select["name"])
            for field_path in target.get("fieldPaths", []):
                into, last = _field(obj, field_path, at)
                into[last] = copy.deepcopy(holder[key])


def documents_of(paths: list[Path], manifests: Path, condition: str | None = None) -> list[tuple[str, list[Document]]]:
    files = []
    for path in paths:
        source = str(path.relative_to(manifests.resolve()))
        files.append((source, [Document(source, obj, condition) for obj in load_documents(path)]))
    return files


# The ValidatingAdmissionPolicies of an admission-only family's jobs (manifests/kubeflow-policies): with
# admissionOnly and the family served, as its overlay (overlays/kubeflow-admission-only) has them.
PEER_POLICIES = 'and .Values.admissionOnlyPolicies .Values.admissionOnly (has "{family}" .Values.families)'


def peer_policy_files(manifests: Path) -> list[tuple[str, list[Document]]]:
    from jobgate.generate.manifests import PEER_POLICY_DIR, admission_only, every_family_kind

    files = []
    for family in sorted({k.family for k in every_family_kind() if admission_only(k)}):
        directory = manifests / PEER_POLICY_DIR.format(family=family)
        if directory.is_dir():
            files += documents_of(list(resource_files(directory)), manifests, PEER_POLICIES.format(family=family))
    return files


def template_name(source: str) -> str:
    return "templates/" + source.removeprefix("overlays/")


def build_templates(manifests: Path = MANIFESTS) -> tuple[dict[str, str], Defaults]:
    base_dir = (manifests / "base").resolve()
    base_files = documents_of(list(resource_files(base_dir)), manifests)
    base = [d for _, documents in base_files for d in documents]
    defaults = read_defaults(base)
    image = base_image(base)
    from build_support import chart_static

    webhook_pod = find(base, "Deployment", "jobgate")["spec"]["template"]["spec"]
    (secret,) = [v["secret"]["secretName"] for v in webhook_pod["volumes"] if "secret" in v] or [None]
    monitor = chart_static.service_monitor(find(base, "Service", "jobgate-webhook"), secret)

    for document in base:
        obj, kind, name = document.obj, document.obj["kind"], document.obj["metadata"]["name"]
        with_images(obj, image)
        if kind == "Namespace":
            document.condition = ".Values.namespace.create"
        elif kind == "CustomResourceDefinition":
            document.condition = crd(obj, defaults.groups)
        elif kind == "Deployment" and name == "jobgate":
            component_pod(obj, "webhook", "webhook")
        elif kind == "Deployment" and name == "jobgate-controller":
            component_pod(obj, "controller", "controller")
            document.condition = "not .Values.admissionOnly"  # the family's own controller runs its jobs
        elif kind == "PodDisruptionBudget" and name == "jobgate":
            document.condition = ".Values.webhook.podDisruptionBudget.enabled"
            spec = obj["spec"]
            budget = {
                "minAvailable": When(
                    "not .Values.webhook.podDisruptionBudget.maxUnavailable",
                    Expr("{{ .Values.webhook.podDisruptionBudget.minAvailable }}"),
                ),
                "maxUnavailable": When(
                    ".Values.webhook.podDisruptionBudget.maxUnavailable",
                    Expr("{{ .Values.webhook.podDisruptionBudget.maxUnavailable }}"),
                ),
            }
            obj["spec"] = {**{k: v for k, v in spec.items() if k not in budget}, **budget}
        elif kind == "MutatingWebhookConfiguration":
            webhook_configuration(obj, "mutatingTimeoutSeconds", defaults.groups)
        elif kind == "ValidatingWebhookConfiguration":
            webhook_configuration(obj, "validatingTimeoutSeconds", defaults.groups)

    files = list(base_files)
    files += peer_policy_files(manifests)
    for overlay, mode in CERT_MODES.items():
        directory = manifests / "overlays" / overlay
        condition = f'eq .Values.certificates.mode "{mode}"'
        overlay_files = documents_of(list(resource_files(directory, skip=base_dir)), manifests, condition)
        apply_replacements(
            [d for _, documents in overlay_files for d in documents],
            kustomization(directory).get("replacements", []),
            f"overlays/{overlay}",
        )
        for _, documents in overlay_files:
            for document in documents:
                name = document.obj["metadata"]["name"]
                hook = f'(index .Values.certificates.{mode}.extraArgs "{name}")'
                with_images(document.obj, image, lambda _box, hook=hook: [extra_args(hook)])
        for number, patch in enumerate(kustomization(directory).get("patches", [])):
            apply_patch(base, patch, condition, f"overlays/{overlay} patch {number}")
        files += overlay_files

    templates = {"templates/servicemonitor.yaml": monitor, "templates/validate.yaml": chart_static.VALIDATE}
    for source, documents in files:
        header = f"{{{{- /* Generated from manifests/{source} by `python -m build_support.chart`; do not edit. */}}}}\n"
        templates[template_name(source)] = header + "".join(emit_document(d) for d in documents)
    return templates, defaults


def chart_files(manifests: Path = MANIFESTS) -> dict[str, str]:
    """Every file of the chart but ``tests/``, by chart-relative path."""
    from build_support import chart_static

    templates, defaults = build_templates(manifests)
    return {
        "Chart.yaml": chart_static.chart_yaml(defaults.tag),
        "values.yaml": chart_static.values_yaml(defaults, to_yaml),
        "values.schema.json": json.dumps(chart_static.values_schema(defaults), indent=2) + "\n",
        ".helmignore": chart_static.HELMIGNORE,
        "templates/_helpers.tpl": chart_static.helpers(defaults),
        "templates/NOTES.txt": chart_static.NOTES,
        **templates,
    }


def _managed(directory: Path) -> set[str]:
    if not directory.is_dir():
        return set()
    return {
        str(p.relative_to(directory))
        for p in directory.rglob("*")
        if p.is_file() and p.relative_to(directory).parts[0] not in HAND_WRITTEN
    }


def differences(directory: Path = CHART, manifests: Path = MANIFESTS) -> list[str]:
    """What differs between ``directory`` and a fresh generation: empty when current."""
    wanted = chart_files(manifests)
    found = _managed(directory)
    problems = [f"{name}: missing" for name in sorted(set(wanted) - found)]
    problems += [f"{name}: not generated (remove it)" for name in sorted(found - set(wanted))]
    problems += [
        f"{name}: differs" for name in sorted(set(wanted) & found) if (directory / name).read_text() != wanted[name]
    ]
    return problems


def write(directory: Path = CHART, manifests: Path = MANIFESTS) -> list[str]:
    wanted = chart_files(manifests)
    for stale in _managed(directory) - set(wanted):
        (directory / stale).unlink()
    templates = directory / "templates"
    if templates.is_dir():  # directories left empty by a removed source file
        for sub in sorted(templates.rglob("*"), reverse=True):
            if sub.is_dir() and not any(sub.iterdir()):
                shutil.rmtree(sub)
    written = []
    for name, text in wanted.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(name)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build_support.chart", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only report what differs; exit 1 when stale")
    parser.add_argument("--dir", type=Path, default=CHART, help=f"the chart directory (default {CHART})")
    parser.add_argument("--manifests", type=Path, default=MANIFESTS, help="the kustomize tree to read")
    args = parser.parse_args(argv)
    try:
        if args.check:
            stale = differences(args.dir, args.manifests)
            for line in stale:
                print(f"{args.dir}/{line}", file=sys.stderr)
            if stale:
                print("the chart is stale: run `python -m build_support.chart`", file=sys.stderr)
            return 1 if stale else 0
        for name in write(args.dir, args.manifests):
            print(f"wrote {args.dir / name}")
    except ChartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
