"""The one place the test control plane's Kubernetes release is pinned."""

KUBERNETES_VERSION = "v1.36.3"

COREDNS_VERSION = "v1.14.7"
