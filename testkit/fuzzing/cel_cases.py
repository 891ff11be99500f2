"""Jobs nobody wrote, for the apiserver against the webhook (``python -m bench.cel_fuzz``, and its
generator's test ``tests/envtest/test_cel_fuzz_cases.py``): mutated from the CEL corpus (the
examples and the CEL test vectors of every family whose rules the apiserver enforces,
``testkit/cel_corpus.py``).

The mutations keep to what a person could write: a value replaced by one seen under the same key
elsewhere in the corpus or by a boundary (0, -1, a name of 64 characters, ...), a key removed or
copied in from another job, a list item dropped, repeated or taken from another job, a replica type
renamed; one to six of them per job. A quarter of the cases are UPDATEs of a valid job stored
first. Seeded: the same seed and count give the same cases.
"""

from __future__ import annotations

import collections
import copy
import random
from collections.abc import Iterator
from typing import Any

from envtest.cel_differential import Case
from jobgate.review import kind_of, review_job
from testkit.cel_corpus import enforced_examples, enforced_vectors

_NAMES = ["a", "x" * 20, "x" * 40, "x" * 50, "x" * 52, "x" * 53, "x" * 60, "x" * 63, "x" * 64, "Upper", "a_b", "a.b"]
_INTEGERS = [-1, 0, 1, 2, 3, 4, 8, 100, 2**31 - 1, 2**31]
_STRINGS = ["", "a", "A", "0", "-1", "x" * 64, "a/b", "1.5", "500m", "1Gi", "-1Gi"]


def _scalars_by_key(documents: list[Any]) -> dict[str, list[Any]]:
    """Every scalar of the corpus under the key it stands at (list items under their list's key)."""
    seen: dict[str, list[Any]] = collections.defaultdict(list)

    def walk(node: Any, key: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, str(k))
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif node not in seen[key]:
            seen[key].append(node)

    for document in documents:
        walk(document, "")
    return seen


def _subtrees_by_key(documents: list[Any]) -> dict[str, list[Any]]:
    """Every dict or list of the corpus under its key: to be copied in where that key is missing."""
    seen: dict[str, list[Any]] = collections.defaultdict(list)
    stack = [("", d) for d in documents]
    while stack:
        key, node = stack.pop()
        if isinstance(node, dict):
            if key:
                seen[key].append(node)
            stack.extend((str(k), v) for k, v in node.items())
        elif isinstance(node, list):
            if key:
                seen[key].append(node)
            stack.extend((key, v) for v in node)
    return seen


def _places(tree: Any) -> list[tuple[Any, Any, str]]:
    """(container, index or key, the key it stands under) for every value below the root's spec and metadata."""
    places = []
    stack: list[tuple[Any, str]] = [(tree, "")]
    while stack:
        node, key = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if node is tree and k in ("apiVersion", "kind"):
                    continue
                places.append((node, k, str(k)))
                stack.append((v, str(k)))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                places.append((node, i, key))
                stack.append((v, key))
    return places


class Mutator:
    """Values from jobs of the same family, subtrees from jobs of the same kind: what is copied in
    stays within the kind's schema, so that the apiserver's strict decoding seldom answers first."""

    def __init__(self, seeds: list[dict[str, Any]]) -> None:
        families: dict[str, list[Any]] = collections.defaultdict(list)
        kinds: dict[tuple[str, str], list[Any]] = collections.defaultdict(list)
        for seed_job in seeds:
            families[str(seed_job.get("apiVersion"))].append(seed_job)
            kinds[(str(seed_job.get("apiVersion")), str(seed_job.get("kind")))].append(seed_job)
        self.scalars = {family: _scalars_by_key(jobs) for family, jobs in families.items()}
        self.subtrees = {kind: _subtrees_by_key(jobs) for kind, jobs in kinds.items()}

    @staticmethod
    def _value_like(rng: random.Random, seen: list[Any], key: str, current: Any) -> Any:
        if seen and rng.random() < 0.6:
            return rng.choice(seen)
        if key == "name":
            return rng.choice(_NAMES)
        if isinstance(current, bool):
            return not current
        if isinstance(current, int):
            return rng.choice(_INTEGERS)
        return rng.choice(_STRINGS + _NAMES)

    def mutate(self, obj: dict[str, Any], rng: random.Random) -> str:
        scalars = self.scalars[str(obj.get("apiVersion"))]
        subtrees = self.subtrees[(str(obj.get("apiVersion")), str(obj.get("kind")))]
        places = _places(obj)
        container, index, key = rng.choice(places)
        value = container[index]
        op = rng.randrange(6)
        if op == 0 and isinstance(container, dict) and container is not obj and index != "name":
            del container[index]
            return f"removed {key}"
        if op == 0 and isinstance(container, list):
            del container[index]
            return f"dropped an item of {key}"
        if op == 1 and isinstance(container, list):
            donors = [item for t in subtrees.get(key, []) if isinstance(t, list) for item in t]
            if donors and rng.random() < 0.5:
                container.insert(index, copy.deepcopy(rng.choice(donors)))
                return f"added another job's item to {key}"
            container.insert(index, copy.deepcopy(value))
            return f"repeated an item of {key}"
        if op == 2 and isinstance(value, dict):
            candidates = [t for t in subtrees.get(key, []) if isinstance(t, dict)]
            if candidates:
                donor = rng.choice(candidates)
                if donor:
                    k = rng.choice(list(donor))
                    value[k] = copy.deepcopy(donor[k])
                    return f"copied {key}.{k} from another job"
        if op == 3 and isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            old_key = rng.choice(list(value))
            new_key = rng.choice(
                [k for t in subtrees.get(key, []) if isinstance(t, dict) for k in t] or [old_key.lower()]
            )
            value[new_key] = value.pop(old_key)
            return f"renamed {key}.{old_key} to {new_key}"
        if op == 4 and isinstance(value, dict | list):
            candidates = [t for t in subtrees.get(key, []) if type(t) is type(value)]
            if candidates:
                container[index] = copy.deepcopy(rng.choice(candidates))
                return f"replaced {key} by another job's"
        if not isinstance(value, dict | list):
            container[index] = self._value_like(rng, scalars.get(key, []), key, value)
            return f"set {key} to {container[index]!r}"[:120]
        return "unchanged"


def cases(seed: int, count: int, corpus: list[dict[str, Any]] | None = None) -> Iterator[Case]:
    """``count`` jobs mutated from ``corpus`` (default: the CEL corpus; Kubeflow's for its policies)."""
    if corpus is None:
        corpus = [v.obj for v in enforced_vectors()] + [c.obj for c in enforced_examples()]
    seeds = [copy.deepcopy(job) for job in corpus]
    for seed_job in seeds:
        seed_job.setdefault("metadata", {}).setdefault("name", "job")
    valid = [s for s in seeds if _admitted(s)]
    mutator = Mutator(seeds)
    rng = random.Random(seed)
    for number in range(count):
        update = rng.random() < 0.25
        base = rng.choice(valid if update else seeds)
        obj = copy.deepcopy(base)
        steps = [mutator.mutate(obj, rng) for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4, 6]))]
        if not isinstance(obj.get("metadata"), dict):
            obj["metadata"] = {}
        if update or not obj["metadata"].get("name"):
            obj["metadata"]["name"] = base["metadata"]["name"]
        if kind_of(obj) is None:
            continue
        name = f"#{number} {base.get('kind')} {base.get('metadata', {}).get('name')}: {'; '.join(steps)}"
        yield Case(name, obj, copy.deepcopy(base) if update else None)


def _admitted(obj: dict[str, Any]) -> bool:
    kind = kind_of(obj)
    return kind is not None and not review_job(kind, obj, None, with_patch=False).errors
