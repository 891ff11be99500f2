"""A realistic TFJob AdmissionReview, as the apiserver sends it after ``kubectl apply``.

PS x2 and Worker x4 with resources, volumes, tolerations and node selection, plus the
``last-applied-configuration`` annotation client-side apply writes: about 5 KB on the wire.
"""

from __future__ import annotations

import json
from typing import Any

from testkit.policy_set import tfjob_manifest


def tfjob_review(uid: str = "705ab4f5-6393-11e8-b7cc-42010a800002") -> dict[str, Any]:
    manifest = tfjob_manifest()
    stored = json.loads(json.dumps(manifest))
    stored["metadata"].update(
        {
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(manifest, separators=(",", ":"))
            },
            "creationTimestamp": None,
            "generation": 1,
            "uid": "0d4f4e4e-8f6c-4b8e-9f7d-2b1f3d9c5a10",
        }
    )
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "training.kubedl.io", "version": "v1alpha1", "kind": "TFJob"},
            "resource": {"group": "training.kubedl.io", "version": "v1alpha1", "resource": "tfjobs"},
            "requestKind": {"group": "training.kubedl.io", "version": "v1alpha1", "kind": "TFJob"},
            "requestResource": {"group": "training.kubedl.io", "version": "v1alpha1", "resource": "tfjobs"},
            "name": "imagenet-resnet50",
            "namespace": "vision",
            "operation": "CREATE",
            "userInfo": {"username": "alice@example.com", "groups": ["system:authenticated", "vision-team"]},
            "object": stored,
            "oldObject": None,
            "dryRun": False,
            "options": {
                "kind": "CreateOptions",
                "apiVersion": "meta.k8s.io/v1",
                "fieldManager": "kubectl-client-side-apply",
            },
        },
    }


def tfjob_review_bytes() -> bytes:
    return json.dumps(tfjob_review(), separators=(",", ":")).encode()


if __name__ == "__main__":
    print(len(tfjob_review_bytes()), "bytes")
