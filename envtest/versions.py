"""The one place the test control plane's Kubernetes release is pinned."""

KUBERNETES_VERSION = "v1.36.3"

COREDNS_VERSION = "v1.14.7"

# The chart's tools (envtest/tools.py): helm from its Go module, and the helm-unittest plugin.
HELM_VERSION = "v3.22.0"
HELM_UNITTEST_VERSION = "v1.1.2"
