"""The one place the test control plane's Kubernetes release is pinned."""

KUBERNETES_VERSION = "v1.36.3"

# The oldest release jobgate supports (the first with ValidatingAdmissionPolicy GA): the CRD CEL
# rules and admission policies jobgate generates must load on it. ``python -m envtest build
# --oldest`` builds it and ``python -m envtest up --oldest`` runs it (etcd + kube-apiserver only);
# tests/envtest/test_oldest_plane.py proves it really is that release.
OLDEST_KUBERNETES_VERSION = "v1.30.14"

COREDNS_VERSION = "v1.14.7"

# The chart's tools (envtest/tools.py): helm from its Go module, and the helm-unittest plugin.
HELM_VERSION = "v3.22.0"
HELM_UNITTEST_VERSION = "v1.1.2"

# Volcano's own Job CRD (its Go module's config/crd/volcano/bases), for the tests that check
# jobgate against the CRD a Volcano install brings rather than jobgate's copy of it.
VOLCANO_VERSION = "v1.10.0"
# The first release whose scheduler reads a Queue's spec.parent (the capacity plugin's
# `enableHierarchy`), for the hierarchical-queue cases of tests/e2e/test_volcano_agreement.py. The
# module proxy refuses volcano.sh/volcano at it here: envtest/volcano.py builds it from git.
VOLCANO_HIERARCHY_VERSION = "v1.11.0"

# Kueue's queue CRDs (LocalQueue, ClusterQueue, ResourceFlavor, Cohort) from its Go module, for the
# queue-fit tests (tests/e2e/test_policy_queuefit.py). The module proxy serves sigs.k8s.io/kueue at
# this version only here; it serves ``kueue.x-k8s.io/v1beta2`` (storage) and ``v1beta1``. Volcano's
# Queue CRD comes from VOLCANO_VERSION's module.
KUEUE_VERSION = "v0.17.0"

# Kubeflow Trainer's own CRDs (TrainJob, TrainingRuntime, ClusterTrainingRuntime) from its Go module
# (github.com/kubeflow/trainer/v2, manifests/base/crds), for tests/e2e/test_trainer_admission.py: the
# release the trainer family pins (jobgate/families/trainer TRAINER_VERSION; a test holds them equal).
TRAINER_VERSION = "v2.3.0"
