"""How many pods, and which pod templates, a TrainJob or a runtime implies (research §8).

A TrainJob has no pod template of its own: its pods are its runtime's replicated jobs, the trainer
job (labelled ``trainjob-ancestor-step: trainer``, or MPI's ``node``) sized by ``spec.trainer.numNodes``
(else the runtime's ``mlPolicy.numNodes``, else 1; MPI's launcher counts as a node when
``runLauncherAsNode``), its ``node`` container's resources merged per key with
``spec.trainer.resourcesPerNode``, its image ``spec.trainer.image`` when set. Every replicated job
counts, initializers included (Kueue reserves quota for all at once).
"""

from __future__ import annotations

import jobgate.families.trainer.rules.runtimes as rt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


class PodSet:
    """One replicated job of a runtime as it will run: ``pods`` pods of ``template``."""

    __slots__ = ("name", "path", "pods", "template", "template_path")

    def __init__(
        self, name: str, path: tuple[Any, ...], pods: int, template: dict[str, Any], template_path: tuple[Any, ...]
    ) -> None:
        self.name = name
        self.path = path
        self.pods = pods
        self.template = template
        self.template_path = template_path

    def __repr__(self) -> str:
        return f"PodSet({self.name!r}, pods={self.pods})"


def _is_trainer(rjob: dict[str, Any], policy: dict[str, Any]) -> bool:
    return rt.ancestor(rjob) == rt.ANCESTOR_TRAINER or (
        isinstance(policy.get("mpi"), dict) and rjob.get("name") == rt.NODE
    )


def runtime_pod_sets(
    runtime: Mapping[str, Any], trainjob_spec: dict[str, Any] | None = None, where: tuple[Any, ...] = ()
) -> list[PodSet]:
    """The pod sets of ``runtime`` (a TrainingRuntime or ClusterTrainingRuntime), for the TrainJob whose
    spec is ``trainjob_spec`` (None: the runtime alone, as a template). ``where`` prefixes the paths."""
    policy = rt.ml_policy(runtime)
    trainer = trainjob_spec.get("trainer") if isinstance(trainjob_spec, dict) else None
    trainer = trainer if isinstance(trainer, dict) else {}
    nodes = trainer.get("numNodes")
    nodes = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else None
    runtime_nodes = rt.int_or(policy.get("numNodes"), 1)
    mpi = policy.get("mpi") if isinstance(policy.get("mpi"), dict) else None
    launcher_as_node = mpi is not None and mpi.get("runLauncherAsNode") is True
    out = []
    for index, rjob in enumerate(rt.runtime_replicated_jobs(runtime)):
        path = (*where, "spec", "template", "spec", "replicatedJobs", index)
        given = rjob.get("name")
        name = given if isinstance(given, str) else str(index)
        parallelism = rt.int_or(rt.job_spec(rjob).get("parallelism"), 1)
        trainer_job = _is_trainer(rjob, policy)
        if trainer_job:
            count = runtime_nodes if policy else parallelism
            if nodes is not None:
                count = max(nodes - 1, 1) if launcher_as_node and name == rt.NODE else nodes
        else:
            count = parallelism
        template = rt.pod_template(rjob)
        if trainjob_spec is not None:
            template = with_patches(template, name, trainjob_spec.get("runtimePatches"))
        if trainer_job and trainjob_spec is not None:
            template = _with_trainer(template, trainer)
        out.append(PodSet(name, path, rt.replicas(rjob) * count, template, (*path, "template", "spec", "template")))
    return out


def _named(items: Any) -> dict[Any, dict[str, Any]]:
    return {i.get("name"): i for i in items if isinstance(i, dict)} if isinstance(items, list) else {}


def _merge_named(base: Any, patch: Any) -> list[Any]:
    """A list of named items (containers, volumes) with the patch's merged in by name (its fields win;
    a container's env and volumeMounts merged by name too), new names appended."""
    out = [dict(i) if isinstance(i, dict) else i for i in (base if isinstance(base, list) else [])]
    by_name = _named(out)
    for item in patch if isinstance(patch, list) else []:
        if not isinstance(item, dict):
            continue
        known = by_name.get(item.get("name"))
        if known is None:
            out.append(dict(item))
            continue
        for key, value in item.items():
            if key in ("env", "volumeMounts"):
                known[key] = _merge_named(known.get(key), value)
            elif key == "securityContext" and isinstance(value, dict) and isinstance(known.get(key), dict):
                known[key] = {**known[key], **value}
            else:
                known[key] = value
    return out


def with_patches(template: dict[str, Any], job_name: str, patches: Any) -> dict[str, Any]:
    """The pod template of one replicated job with every runtimePatch of it merged in, as Trainer
    strategic-merges them (by replicated job, container and volume name): what the pods will run with —
    the patches' security contexts, volumes, node selectors and labels included."""
    for patch in patches if isinstance(patches, list) else []:
        spec = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}) if isinstance(patch, dict) else {}
        jobs = rt.replicated_jobs(spec.get("spec") if isinstance(spec, dict) else None)
        patched = rt.find_job(jobs, job_name)
        if patched is None:
            continue
        pod = rt.pod_template(patched)
        metadata, pod_spec = pod.get("metadata"), pod.get("spec")
        merged = dict(template)
        if isinstance(metadata, dict):
            current = dict(merged.get("metadata") or {})
            for key in ("labels", "annotations"):
                if isinstance(metadata.get(key), dict):
                    current[key] = {**(current.get(key) or {}), **metadata[key]}
            merged["metadata"] = current
        if isinstance(pod_spec, dict):
            current_spec = dict(merged.get("spec") or {})
            for key, value in pod_spec.items():
                if key in ("containers", "initContainers", "volumes"):
                    current_spec[key] = _merge_named(current_spec.get(key), value)
                elif key in ("securityContext", "nodeSelector") and isinstance(value, dict):
                    current_spec[key] = {**(current_spec.get(key) or {}), **value}
                else:
                    current_spec[key] = value
            merged["spec"] = current_spec
        template = merged
    return template


def _with_trainer(template: dict[str, Any], trainer: dict[str, Any]) -> dict[str, Any]:
    """The pod template with the TrainJob's trainer overrides on its ``node`` container."""
    resources = trainer.get("resourcesPerNode")
    image = trainer.get("image")
    if not isinstance(resources, dict) and not isinstance(image, str):
        return template
    spec = template.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("containers"), list):
        return template
    containers = []
    for given in spec["containers"]:
        container = given
        if isinstance(given, dict) and given.get("name") == rt.NODE:
            container = dict(given)
            if isinstance(resources, dict):
                container["resources"] = rt.merge_resources(given.get("resources"), resources)
            if isinstance(image, str):
                container["image"] = image
        containers.append(container)
    return {**template, "spec": {**spec, "containers": containers}}


def trainjob_pods(runtime: Mapping[str, Any], trainjob_spec: dict[str, Any]) -> int:
    return sum(s.pods for s in runtime_pod_sets(runtime, trainjob_spec))
