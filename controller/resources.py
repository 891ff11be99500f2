"""Where the objects the controller reads and writes live in the API."""

from __future__ import annotations

from jobgate.kube.client import Resource

PODS = Resource("", "v1", "pods")
SERVICES = Resource("", "v1", "services")
CONFIG_MAPS = Resource("", "v1", "configmaps")
EVENTS = Resource("", "v1", "events")
LEASES = Resource("coordination.k8s.io", "v1", "leases")
POD_GROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups")
SECRETS = Resource("", "v1", "secrets")  # the Volcano ssh plugin's key pair

NETWORK_POLICIES = Resource("networking.k8s.io", "v1", "networkpolicies")  # the Volcano svc plugin's
COMMANDS = Resource("bus.volcano.sh", "v1alpha1", "commands")

KIND_RESOURCES = {
    "Pod": PODS,
    "Service": SERVICES,
    "ConfigMap": CONFIG_MAPS,
    "PodGroup": POD_GROUPS,
    "Secret": SECRETS,
    "NetworkPolicy": NETWORK_POLICIES,
}
