"""Names and enumerations of the job APIs, without pydantic: what the rule modules import.

The pydantic models in this package import their groups and versions from here; their
``Literal`` enumerations must equal the tuples below (tests/unit/test_cli_offline.py checks).
"""

from __future__ import annotations

RESTART_POLICIES: tuple[str, ...] = ("Always", "OnFailure", "Never", "ExitCode")
CLEAN_POD_POLICIES: tuple[str, ...] = ("All", "Running", "None")

KUBEDL_GROUP = "training.kubedl.io"
KUBEDL_VERSION = "v1alpha1"

MLKUBE_GROUP = "mxnet.mlkube.io"
MLKUBE_VERSION = "v1beta1"
MX_JOB_MODES: tuple[str, ...] = ("local", "dist")
MX_REPLICA_TYPES: tuple[str, ...] = ("SCHEDULER", "SERVER", "WORKER")

T9K_GROUP = "batch.tensorstack.dev"
T9K_VERSION = "v1beta1"

DIENGINE_GROUP = "diengine.opendilab.org"
DIENGINE_VERSION = "v2alpha1"

VOLCANO_GROUP = "batch.volcano.sh"
VOLCANO_VERSION = "v1alpha1"

KUBEFLOW_GROUP = "kubeflow.org"
KUBEFLOW_VERSION = "v1"
# spec.runPolicy.managedBy: the controllers Kubeflow's webhooks accept (Kubeflow's operator, Kueue's MultiKueue).
KUBEFLOW_MANAGED_BY: tuple[str, ...] = ("kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue")
