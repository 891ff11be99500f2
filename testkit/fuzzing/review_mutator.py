"""Structure- and type-aware mutations of AdmissionReviews, and the oracle every answer must pass.

Shared by the CI slice (``tests/fuzz/test_fuzz_review.py``, a fixed seed) and the bench run
(``bench/fuzz_review.py``, a million inputs, optionally driven by atheris). Seeds are the
manifests in ``examples/``, wrapped as the apiserver wraps them.

The oracle: ``review_body`` either raises ``BadReview`` (the server's 400 with one line) or
returns an AdmissionReview that is not an internal error; /mutate admits every well-formed
review. Anything else (another exception, an InternalError answer, a /mutate denial, a
/mutate warning about an internal error) is a finding.
"""

from __future__ import annotations

import copy
import json
import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import yaml

from jobgate.webhook.admission import BadReview, Webhook, review_body

REPO = Path(__file__).resolve().parents[2]


def seed_reviews() -> list[dict[str, Any]]:
    """One CREATE and one UPDATE review per manifest in ``examples/`` (valid and invalid)."""
    reviews = []
    for path in sorted((REPO / "examples").rglob("*.yaml")):
        for manifest in yaml.safe_load_all(path.read_text()):
            if not isinstance(manifest, dict):
                continue
            reviews.append(review_of(manifest))
            reviews.append(review_of(manifest, old=copy.deepcopy(manifest)))
    return reviews


def review_of(manifest: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    group, _, version = str(manifest.get("apiVersion", "")).rpartition("/")
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.UUID(int=0)),
            "kind": {"group": group, "version": version, "kind": manifest.get("kind", "")},
            "name": (manifest.get("metadata") or {}).get("name"),
            "namespace": "default",
            "operation": "UPDATE" if old is not None else "CREATE",
            "userInfo": {"username": "fuzz"},
            "object": manifest,
            "oldObject": old,
            "dryRun": False,
        },
    }


# --- values that have broken, or could break, a rule ------------------------------------------

_STRINGS = [
    "",
    " ",
    "1e400",
    "-1e400",
    "1e-400",
    "9" * 5000,
    "1e99999999999999999999",
    "0.000000000000000000000000000001",
    "-1",
    "+3k",
    "100Mi",
    "1.5n",
    "NaN",
    "Infinity",
    "Worker",
    "worker",
    "WORKER",
    "Master",
    "PS",
    "Chief",
    "Launcher",
    "Scheduler",
    "Always",
    "OnFailure",
    "ExitCode",
    "Never",
    "All",
    "Running",
    "None",
    "tensorflow",
    "a" * 300,
    "x/y~z",
    "\u0000",
    "\u202e",
    "é" * 64,
    "\U0001f600",
    "A-B_C.D",
    "-start",
    "end-",
]
_NUMBERS: list[Any] = [
    0,
    1,
    -1,
    2,
    3,
    2**31,
    2**31 - 1,
    -(2**31),
    2**53 + 1,
    2**63 - 1,
    2**64 - 1,
    -(2**63),
    0.5,
    -0.0,
    1e300,
    1e-300,
    1.7976931348623157e308,
]


def random_scalar(rng: random.Random) -> Any:
    choice = rng.random()
    if choice < 0.4:
        return rng.choice(_STRINGS)
    if choice < 0.8:
        return rng.choice(_NUMBERS)
    if choice < 0.9:
        return rng.choice([True, False, None])
    return "".join(rng.choice("abcXYZ019-._/~:@ ") for _ in range(rng.randrange(0, 20)))


def random_value(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.random()
    if choice < 0.6 or depth > 3:
        return random_scalar(rng)
    if choice < 0.75:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    if choice < 0.9:
        return {rng.choice(_STRINGS[14:30]): random_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))}
    return deep_value(rng.randrange(900, 1023), rng.random() < 0.5)


def deep_value(levels: int, as_list: bool) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value] if as_list else {"a": value}
    return value


# --- picking a place in the tree ---------------------------------------------------------------


def containers_of(tree: Any) -> list[Any]:
    """Every dict and list in the tree, iteratively (trees may already be deep)."""
    found = []
    stack = [tree]
    while stack and len(found) < 20000:
        node = stack.pop()
        if isinstance(node, dict):
            found.append(node)
            stack.extend(v for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            found.append(node)
            stack.extend(v for v in node if isinstance(v, dict | list))
    return found


def _mutate_node(node: Any, rng: random.Random, everything: list[Any]) -> None:
    if isinstance(node, dict):
        keys = list(node)
        op = rng.randrange(8)
        if keys and op == 0:
            del node[rng.choice(keys)]
        elif keys and op <= 2:
            node[rng.choice(keys)] = random_value(rng)
        elif keys and op == 3:  # rename a key (case changes reach the replica-type normalisation)
            key = rng.choice(keys)
            new_key = rng.choice([key.lower(), key.upper(), key + "x", rng.choice(_STRINGS[14:30])])
            node[new_key] = node.pop(key)
        elif keys and everything and op == 4:  # a subtree from elsewhere in the review (types meet other places)
            node[rng.choice(keys)] = copy.deepcopy(rng.choice(everything)) if len(everything) < 2000 else {}
        elif op == 5:
            node[rng.choice([*_STRINGS[14:30], "replicas", "template", "spec", "containers", "env"])] = random_value(
                rng
            )
        elif keys and op == 6 and _size(node) < 2000:  # the same subtree under many keys: wide objects
            # Shared references: repeated widening of a shared subtree grows exponentially when encoded,
            # hence the size check on this node and the node budget in inputs().
            key = rng.choice(keys)
            for index in range(rng.choice([2, 10, 200])):
                node[f"{key}{index}"] = node[key]
        else:
            node.clear()
    elif isinstance(node, list):
        op = rng.randrange(5)
        if node and op == 0:
            del node[rng.randrange(len(node))]
        elif node and op == 1:
            node[rng.randrange(len(node))] = random_value(rng)
        elif node and op == 2:  # long lists: duplicates, and size
            node.extend(node[rng.randrange(len(node))] for _ in range(rng.choice([1, 5, 100])))
        elif op == 3:
            node.append(random_value(rng))
        else:
            node.reverse()


def mutate_review(review: dict[str, Any], rng: random.Random, rounds: int | None = None) -> dict[str, Any]:
    mutated = copy.deepcopy(review)
    request = mutated["request"]
    if rng.random() < 0.1:  # the envelope itself
        target = rng.choice([mutated, request, request["kind"]])
        _mutate_node(target, rng, [])
        return mutated
    if rng.random() < 0.1 and isinstance(request.get("object"), dict):
        request["operation"] = "UPDATE"
        request["oldObject"] = copy.deepcopy(request["object"])
    everything = containers_of(request.get("object"))
    if request.get("oldObject") is not None and rng.random() < 0.3:
        everything = containers_of(request["oldObject"])
    if not everything:
        request["object"] = random_value(rng)
        return mutated
    for _ in range(rounds or rng.choice([1, 1, 1, 2, 3, 5])):
        _mutate_node(rng.choice(everything), rng, everything)
    return mutated


def encode(review: dict[str, Any], rng: random.Random) -> bytes:
    """The review as bytes, sometimes damaged below the JSON level."""
    # The standard library's encoder: orjson refuses to write what it would read (depth > 255, ints > 64 bits).
    body = json.dumps(review, separators=(",", ":"), ensure_ascii=False).encode()
    choice = rng.random()
    if choice < 0.9:
        return body
    position = rng.randrange(len(body) + 1)
    if choice < 0.93:
        return body[:position]  # truncated
    if choice < 0.96:
        return body[:position] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"]) + body[position:]
    if choice < 0.98:
        return body.replace(b'"tensorflow"', b'"\\ud800"', 1).replace(b'"default"', b'"\\udfff x"', 1)
    return body.replace(b":1,", b":" + b"9" * rng.choice([20, 400, 5000]) + b",", 1)


MAX_NODES = 300_000  # values in one review, counted with repeats: a 7 MiB body holds fewer


def _size(tree: Any, budget: int = MAX_NODES + 1) -> int:
    """Values in the tree, shared subtrees counted each time they appear; stops counting past ``budget``."""
    count = 0
    stack = [tree]
    while stack and count < budget:
        node = stack.pop()
        count += 1
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


MAX_BODY_BYTES = 7 * 1024 * 1024  # the server answers 413 to anything larger, before any parsing


def inputs(seed: int, count: int) -> Iterator[bytes]:
    rng = random.Random(seed)
    seeds = seed_reviews()
    for _ in range(count):
        review = mutate_review(rng.choice(seeds), rng)
        while _size(review) > MAX_NODES:  # encoding a tree with shared subtrees could exhaust memory
            review = mutate_review(rng.choice(seeds), rng)
        body = encode(review, rng)
        while len(body) > MAX_BODY_BYTES:  # the server answers 413 before any parsing
            body = encode(mutate_review(rng.choice(seeds), rng), rng)
        yield body


class Finding(AssertionError):
    pass


def check(body: bytes, webhook: Webhook) -> str:
    """Review one body; return the outcome class or raise ``Finding`` (other exceptions escape)."""
    try:
        answer = orjson.loads(review_body(body, webhook))
    except BadReview as exc:
        message = str(exc)
        if "\n" in message or not message:
            raise Finding(f"400 message is not one line: {message!r}") from None
        return "400"
    response = answer["response"]
    status = response.get("status") or {}
    if status.get("code") == 500 or status.get("reason") == "InternalError":
        raise Finding(f"internal-error answer: {status.get('message')}")
    if any("internal error" in warning for warning in response.get("warnings", [])):
        raise Finding(f"internal error while defaulting: {response['warnings']}")
    if webhook is Webhook.MUTATE and not response["allowed"]:
        raise Finding(f"/mutate denied: {json.dumps(status)[:300]}")
    if response["allowed"]:
        return "patched" if "patch" in response else "allowed"
    return "denied"


def check_both(body: bytes) -> tuple[str, str]:
    return check(body, Webhook.MUTATE), check(body, Webhook.VALIDATE)


Oracle = Callable[[bytes], tuple[str, str]]
