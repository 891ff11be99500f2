"""``jobgate default``/``validate`` against the real apiserver on YAML 1.1 edge cases.

kubectl reads YAML with sigs.k8s.io/yaml (go-yaml v2: ``yes``/``on`` are booleans, ``0777``
is octal, underscores vanish, ``2.0`` reaches the apiserver as ``2``) and the apiserver
stores what jobgate's mutating webhook patches in. ``kubectl create --dry-run=server -o json``
shows that stored object; ``jobgate default -o json`` must print the same spec, and
``jobgate validate`` must refuse exactly what kubectl refuses.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import Cluster, jobgate

HEADER = """\
apiVersion: training.kubedl.io/v1alpha1
kind: TFJob
metadata:
  name: {name}
  namespace: default
"""

ADMITTED = {
    "numbers": """\
spec:
  backoffLimit: 0x10
  activeDeadlineSeconds: 0777
  ttlSecondsAfterFinished: 1_000
  tfReplicaSpecs:
    Worker:
      replicas: 2.0
      template:
        spec:
          terminationGracePeriodSeconds: +0b11110
          containers:
            - name: tensorflow
              image: tf:2
              ports:
                - containerPort: 2_223
    PS:
      replicas: 1e0
      template:
        spec:
          containers:
            - name: tensorflow
              image: tf:2
""",
    "booleans-and-strings": """\
spec:
  tfReplicaSpecs:
    worker:
      template:
        metadata:
          labels: {quoted: "yes", dated: 2001-12-14, time: "1:20"}
        spec:
          hostNetwork: off
          enableServiceLinks: No
          containers:
            - name: tensorflow
              image: tf:2
              tty: yes
              stdin: On
              workingDir: 2001-12-14t21:59:43.10-05:00
              args: ['on', "0777", '1_000', 1:20, v1.2]
              env:
                - {name: A, value: 'y'}
                - {name: B, value: "~"}
""",
    "duplicate-keys": """\
spec:
  backoffLimit: 1
  backoffLimit: 2
  tfReplicaSpecs:
    Worker: {replicas: 5, template: {spec: {containers: [{name: tensorflow, image: tf}]}}}
    Worker: {template: {spec: {containers: [{name: tensorflow, image: tf:2}]}}}
""",
    "merge-keys-and-tags": """\
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers:
            - &tf
              name: tensorflow
              image: !!str tf:2
              resources:
                limits: &limits {cpu: !!str 2, memory: 4Gi}
                requests:
                  <<: *limits
                  cpu: "1"
    Chief:
      template:
        spec:
          containers:
            - *tf
""",
}

WORKER = "{Worker: {template: {spec: {containers: [{name: tensorflow, image: tf}]}}}}"
REFUSED = {
    "boolean-enum": (f"spec:\n  cleanPodPolicy: yes\n  tfReplicaSpecs: {WORKER}\n", "cleanPodPolicy"),
    "octal-bound": (f"spec:\n  backoffLimit: -01\n  tfReplicaSpecs: {WORKER}\n", "backoffLimit"),
    "unknown-field": (
        "spec:\n  tfReplicaSpecs:\n    Worker:\n      replica: 2\n"
        "      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n",
        'unknown field "spec.tfReplicaSpecs.Worker.replica"',
    ),
}


def write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(HEADER.format(name=name) + body)
    return path


@pytest.mark.parametrize("name", sorted(ADMITTED))
def test_jobgate_default_stores_what_the_apiserver_stores(cluster: Cluster, tmp_path, name):
    path = write(tmp_path, name, ADMITTED[name])
    server = cluster.kubectl("create", "--dry-run=server", "-o", "json", "-f", str(path))
    assert server.returncode == 0, server.stderr
    offline = jobgate("default", "-o", "json", str(path))
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout)["spec"] == json.loads(server.stdout)["spec"]
    verdict = jobgate("validate", str(path))
    assert verdict.returncode == 0, verdict.stdout


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_jobgate_validate_refuses_what_kubectl_refuses(cluster: Cluster, tmp_path, name):
    body, field = REFUSED[name]
    path = write(tmp_path, name, body)
    server = cluster.kubectl("create", "--dry-run=server", "-f", str(path))
    assert server.returncode != 0, server.stdout
    assert field in server.stderr
    offline = jobgate("validate", str(path))
    assert offline.returncode in (1, 2), offline.stdout
    assert field in offline.stdout
