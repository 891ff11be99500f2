"""The largest jobs the apiserver can send, in the worst shapes, and their AdmissionReviews: for
``python -m bench.big_review`` (timed) and ``tests/unit/test_big_reviews.py`` (the verdicts).

For every family with a collection of replica specs (KubeDL TFJob's map, Volcano's tasks, T9k's
replicaSpecs, DIJob's tasks), objects just under the apiserver's 3 MiB limit: 10,000 replica types
(valid where the family allows that many, and all invalid), 5,000 containers, 10,000 env entries,
and an UPDATE carrying the old object (a ~6 MB body). Built from ``examples/valid``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "valid"
OBJECT_BYTES = 3 * 1024 * 1024 - 64 * 1024  # just under the apiserver's 3 MiB request limit, with room for metadata

Job = dict[str, Any]


def _load(name: str) -> Job:
    loaded: Job = json.loads(json.dumps(YAML(typ="safe").load((EXAMPLES / name).read_text())))
    return loaded


@dataclass(frozen=True)
class Family:
    """Where a family keeps its replica specs, and how to make the n-th of 10,000."""

    label: str
    example: str
    collection: str  # key under spec
    is_map: bool
    item: Callable[[Job, int], tuple[str, Job]]  # (map key or "", replica spec) from the first one
    valid_types: bool  # can 10,000 replica types be valid at all?
    breaks: Callable[[Job], None]  # makes one replica spec invalid


def first_item(job: Job, family: Family) -> Job:
    collection = job["spec"][family.collection]
    first: Job = copy.deepcopy(next(iter(collection.values())) if family.is_map else collection[0])
    # Only what a container needs: the padding, not the example's own extras, sizes the object.
    containers = first["template"]["spec"]["containers"]
    containers[0] = {k: containers[0][k] for k in ("name", "image", "command") if k in containers[0]}
    del containers[1:]
    return first


def _kubedl_item(first: Job, index: int) -> tuple[str, Job]:
    return f"Worker{index}", copy.deepcopy(first)


def _named_item(key: str, prefix_key: str | None = None) -> Callable[[Job, int], tuple[str, Job]]:
    def make(first: Job, index: int) -> tuple[str, Job]:
        item = copy.deepcopy(first)
        item[key] = f"t{index}"
        if prefix_key is not None:
            item[prefix_key] = "none"
        for dropped in ("dependsOn", "minAvailable"):
            item.pop(dropped, None)
        return "", item

    return make


def _negative_replicas(item: Job) -> None:
    item["replicas"] = -1


def _bad_cpu(item: Job) -> None:
    container = item["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": "lots"}}
    item["replicas"] = -1


FAMILIES = (
    Family("kubedl TFJob", "tfjob-mnist.yaml", "tfReplicaSpecs", True, _kubedl_item, False, _negative_replicas),
    Family("volcano Job", "volcano-pytorch.yaml", "tasks", False, _named_item("name"), True, _negative_replicas),
    Family("t9k GenericJob", "t9k-genericjob-ps.yaml", "replicaSpecs", False, _named_item("type"), True, _bad_cpu),
    Family("DIJob", "dijob-gobigger.yaml", "tasks", False, _named_item("name", "type"), True, _bad_cpu),
)


def _padded(make: Callable[[int], Job], count: int) -> Job:
    """The job made with items padded (a long image name) so that the object is just under the limit."""
    bare = make(0)
    room = OBJECT_BYTES - len(orjson.dumps(bare))
    return make(max(0, room // count))


def base_job(family: Family) -> Job:
    job = _load(family.example)
    job["spec"].pop("plugins", None)  # Volcano's plugins name tasks that the shapes below replace
    return job


def types_job(family: Family, count: int = 10_000, *, broken: bool = False) -> Job:
    base = base_job(family)
    first = first_item(base, family)

    def make(pad: int) -> Job:
        job = copy.deepcopy(base)
        items: list[tuple[str, Job]] = []
        for index in range(count):
            key, item = family.item(first, index)
            item["template"]["spec"]["containers"][0]["image"] = "registry.example.com/" + "x" * pad
            if broken:
                family.breaks(item)
            items.append((key, item))
        job["spec"][family.collection] = dict(items) if family.is_map else [item for _, item in items]
        return job

    return _padded(make, count)


def _one_replica_job(family: Family, shape: Callable[[Job, int], None], count: int) -> Job:
    base = base_job(family)

    def make(pad: int) -> Job:
        job = copy.deepcopy(base)
        first = first_item(base, family)
        shape(first["template"]["spec"], pad)
        if family.is_map:
            job["spec"][family.collection] = {next(iter(base["spec"][family.collection])): first}
        else:
            job["spec"][family.collection] = [first]
        return job

    return _padded(make, count)


def containers_job(family: Family, count: int = 5_000) -> Job:
    def shape(pod: Job, pad: int) -> None:
        first = pod["containers"][0]
        pod["containers"] = [first] + [
            {"name": f"c{index}", "image": "registry.example.com/" + "x" * pad} for index in range(count - 1)
        ]

    return _one_replica_job(family, shape, count)


def env_job(family: Family, count: int = 10_000) -> Job:
    def shape(pod: Job, pad: int) -> None:
        pod["containers"][0]["env"] = [{"name": f"E{index}", "value": "v" * pad} for index in range(count)]

    return _one_replica_job(family, shape, count)


def review(job: Job, old: Job | None = None) -> bytes:
    group, version = job["apiVersion"].split("/")
    kind = job["kind"]
    resource = {"group": group, "version": version, "resource": kind.lower() + "s"}
    request = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": resource,
        "name": job["metadata"]["name"],
        "namespace": job["metadata"].get("namespace", "default"),
        "operation": "UPDATE" if old is not None else "CREATE",
        "userInfo": {"username": "alice@example.com"},
        "object": job,
        "oldObject": old,
        "dryRun": False,
    }
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})


def shapes(family: Family) -> dict[str, bytes]:
    """Bodies by shape name, for one family."""
    types = types_job(family)
    changed = copy.deepcopy(types)
    changed["metadata"].setdefault("labels", {})["revision"] = "2"
    first_item = next(iter(changed["spec"][family.collection].values())) if family.is_map else None
    if first_item is None:
        first_item = changed["spec"][family.collection][0]
    first_item["replicas"] = 3
    return {
        "types-10k" + ("" if family.valid_types else " (names refused)"): review(types),
        "types-10k all invalid": review(types_job(family, broken=True)),
        "containers-5k": review(containers_job(family)),
        "env-10k": review(env_job(family)),
        "update types-10k + old": review(changed, old=types),
    }
