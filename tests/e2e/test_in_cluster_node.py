"""Pods that use the cluster the way jobgate's own pods will, on the in-cluster node (envtest.node).

(a) a pod's automounted service-account token and CA get it through the ``kubernetes`` Service
(``KUBERNETES_SERVICE_HOST``, kube-proxy, the apiserver on the node's address);
(b) a Deployment of two replicas behind a Service answers another pod at its DNS name (CoreDNS
on the node) and at its ClusterIP, and a replica reaching its own Service (hairpin);
(c) a TCP connection from this host to the ClusterIP reaches a replica: the path the apiserver
takes to a webhook behind a Service.

Every program runs in the node's Python job image; nothing is patched or faked.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from envtest.node import JOB_IMAGE, NODE_IP, Node
from tests.e2e.conftest import Cluster, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.node]

NS = "in-cluster-e2e"
REQUESTS = 20  # per target at least: both replicas answer with probability 1 - 2**-19
# kube-proxy programs a new endpoint some time after the EndpointSlice lists it (its own sync,
# slower under load): a client keeps asking, for this long at most, until every replica answered.
ANSWER_SECONDS = 30

# (a): the token and CA the kubelet mounts, the address the kubelet injects; /version, then a
# SelfSubjectReview, which says whom the token authenticated.
API_PROBE = """
import json, os, ssl, urllib.request
mount = "/var/run/secrets/kubernetes.io/serviceaccount"
host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
context = ssl.create_default_context(cafile=f"{mount}/ca.crt")
headers = {"Authorization": "Bearer " + open(f"{mount}/token").read(), "Content-Type": "application/json"}
def call(path, body=None):
    request = urllib.request.Request(f"https://{host}:{port}{path}", data=body, headers=headers)
    with urllib.request.urlopen(request, context=context, timeout=10) as answer:
        return answer.status, json.loads(answer.read())
status, version = call("/version")
review = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).encode()
review_status, review = call("/apis/authentication.k8s.io/v1/selfsubjectreviews", review)
print(json.dumps({"host": host, "port": port, "status": status, "version": version["gitVersion"],
                  "review_status": review_status, "user": review["status"]["userInfo"]["username"]}))
"""

# Answers every GET with the pod's name, so a client sees which replica it reached.
WEB_SERVER = """
import http.server, socket
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = socket.gethostname().encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("", 8080), Handler).serve_forever()
"""

# (b) and hairpin: which replicas answer at each target (arguments: how many requests each at
# least, how many replicas to wait for, for how many seconds at most, the targets). No proxy
# variables exist in a pod.
WEB_CLIENT = """
import json, socket, sys, time, urllib.request
count, expected, seconds, targets = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
resolved = {t: socket.gethostbyname(t) for t in targets}
def answers(target):
    found, asked, deadline = set(), 0, time.monotonic() + seconds
    while asked < count or (len(found) < expected and time.monotonic() < deadline):
        found.add(urllib.request.urlopen(f"http://{target}/", timeout=5).read().decode())
        asked += 1
    return sorted(found)
seen = {t: answers(t) for t in targets}
print(json.dumps({"resolved": resolved, "seen": seen}))
"""


def python_container(name: str, program: str, *args: str) -> dict:
    return {
        "name": name,
        "image": JOB_IMAGE,
        "imagePullPolicy": "Never",
        "command": ["python3", "-c", program, *args],
    }


def run_pod(cluster: Cluster, name: str, program: str, *args: str) -> str:
    """A pod that runs ``program`` once; its log once it succeeded."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [python_container(name, program, *args)],
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod), check=True)
    waited = cluster.kubectl(
        "wait", "-n", NS, "--for=jsonpath={.status.phase}=Succeeded", f"pod/{name}", "--timeout=180s"
    )
    log = cluster.kubectl("logs", "-n", NS, name).stdout
    if waited.returncode != 0:
        described = cluster.kubectl("describe", "-n", NS, f"pod/{name}").stdout
        raise AssertionError(f"pod {name} did not succeed: {waited.stderr}\n{log}\n{described}")
    return log


@pytest.fixture(scope="module")
def namespace(in_cluster_node: Cluster) -> str:
    in_cluster_node.kubectl("create", "namespace", NS, check=True)
    # The ServiceAccount admission plugin refuses pods until the namespace's account exists.
    wait_until(
        lambda: in_cluster_node.kubectl("get", "serviceaccount", "default", "-n", NS).returncode == 0,
        30,
        message="the namespace's default ServiceAccount",
    )
    return NS


@pytest.fixture(scope="module")
def web(in_cluster_node: Cluster, namespace: str) -> Iterator[dict]:
    """Two replicas of the web server behind Service ``web``, rolled out; yields the Service."""
    labels = {"app": "web"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            **python_container("web", WEB_SERVER),
                            "ports": [{"containerPort": 8080}],
                            "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
                        }
                    ],
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    documents = {"apiVersion": "v1", "kind": "List", "items": [deployment, service]}
    in_cluster_node.kubectl("apply", "-f", "-", input=json.dumps(documents), check=True)
    rollout = in_cluster_node.kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=90s")
    assert rollout.returncode == 0, (
        rollout.stdout + rollout.stderr + in_cluster_node.kubectl("describe", "-n", namespace, "deployment/web").stdout
    )
    wait_until(
        lambda: len(ready_endpoints(in_cluster_node)) == 2, timeout=60, message="two ready endpoints of Service web"
    )
    yield in_cluster_node.get_json("service/web", "-n", namespace)


def ready_endpoints(cluster: Cluster) -> list[str]:
    slices = cluster.get_json("endpointslices", "-n", NS, "-l", "kubernetes.io/service-name=web")["items"]
    return sorted(
        address
        for endpoint_slice in slices
        for endpoint in endpoint_slice.get("endpoints") or []
        if (endpoint.get("conditions") or {}).get("ready")
        for address in endpoint["addresses"]
    )


def listening_addresses(port: int) -> list[str]:
    """The local addresses of the host's TCP sockets listening on ``port`` (IPv4 and IPv6)."""
    found = []
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if fields[3] == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                raw = bytes.fromhex(address)
                # /proc shows each 32-bit word in host (little-endian) order
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                found.append(socket.inet_ntop(family, words))
    return found


def replica_names(cluster: Cluster) -> list[str]:
    pods = cluster.get_json("pods", "-n", NS, "-l", "app=web")["items"]
    return sorted(p["metadata"]["name"] for p in pods if p["metadata"].get("deletionTimestamp") is None)


def test_pod_reaches_the_apiserver_with_its_service_account_token(in_cluster_node: Cluster, namespace: str) -> None:
    result = json.loads(run_pod(in_cluster_node, "api-probe", API_PROBE).strip().splitlines()[-1])
    kubernetes = in_cluster_node.get_json("service/kubernetes", "-n", "default")
    # The address the kubelet injected is the kubernetes Service's, translated by kube-proxy to
    # the apiserver on the node's address.
    assert result["host"] == kubernetes["spec"]["clusterIP"], result
    assert result["port"] == "443", result
    assert result["status"] == 200, result
    assert result["version"].startswith("v1."), result
    assert (result["review_status"], result["user"]) == (201, f"system:serviceaccount:{namespace}:default"), result
    # The token came from the admission plugin's projected volume, not from anything the test mounted.
    volumes = in_cluster_node.get_json("pod/api-probe", "-n", namespace)["spec"]["volumes"]
    assert any(v["name"].startswith("kube-api-access-") for v in volumes), volumes
    # The apiserver listens on the node's address and nowhere else (loopback included).
    port = urllib.parse.urlsplit(in_cluster_node.plane.server).port
    assert port is not None and listening_addresses(port) == [NODE_IP], listening_addresses(port or 0)
    endpoints = in_cluster_node.get_json(
        "endpointslices", "-n", "default", "-l", "kubernetes.io/service-name=kubernetes"
    )
    assert [a for s in endpoints["items"] for e in s["endpoints"] for a in e["addresses"]] == [NODE_IP]


def client_arguments(expected: int) -> tuple[str, ...]:
    return str(REQUESTS), str(expected), str(ANSWER_SECONDS)


def test_deployment_replicas_answer_at_the_service_name_and_cluster_ip(in_cluster_node: Cluster, web: dict) -> None:
    cluster_ip = web["spec"]["clusterIP"]
    replicas = replica_names(in_cluster_node)
    assert len(replicas) == 2, replicas
    targets = ["web", f"web.{NS}.svc.cluster.local", cluster_ip]
    arguments = client_arguments(len(replicas))
    log = run_pod(in_cluster_node, "web-client", WEB_CLIENT, *arguments, *targets)
    result = json.loads(log.strip().splitlines()[-1])
    assert result["resolved"] == dict.fromkeys(targets, cluster_ip), result
    for target in targets:
        assert result["seen"][target] == replicas, (target, result)
    # Hairpin: a replica reaching its own Service gets answers from itself as well (masqueradeAll:
    # the answer comes back through the node's conntrack, not straight across the bridge).
    hairpin = in_cluster_node.kubectl(
        "exec", "-n", NS, replicas[0], "--", "python3", "-c", WEB_CLIENT, *arguments, "web", check=True
    ).stdout
    assert json.loads(hairpin.strip().splitlines()[-1])["seen"]["web"] == replicas, hairpin


def test_host_reaches_a_replica_through_the_cluster_ip(in_cluster_node: Cluster, web: dict) -> None:
    cluster_ip = web["spec"]["clusterIP"]
    # The host's own route for the Service CIDR is the bridge, never its default route.
    route = subprocess.run(["ip", "route", "get", cluster_ip], capture_output=True, text=True, check=True).stdout
    assert "dev jgbr0" in route and f"src {NODE_IP}" in route, route
    expected = replica_names(in_cluster_node)
    seen: set[str] = set()
    asked, deadline = 0, time.monotonic() + ANSWER_SECONDS
    while asked < REQUESTS or (len(seen) < len(expected) and time.monotonic() < deadline):
        asked += 1
        # http.client: a plain TCP connection, whatever proxy variables this process has.
        connection = http.client.HTTPConnection(cluster_ip, 80, timeout=5)
        try:
            connection.request("GET", "/")
            answer = connection.getresponse()
            assert answer.status == 200
            seen.add(answer.read().decode())
        finally:
            connection.close()
    assert sorted(seen) == expected, seen


def test_host_settings_are_left_alone(in_cluster_node: Cluster, web: dict) -> None:
    """Pods forwarded through the bridge above; the host's forwarding switch and conntrack
    settings are still what they were before the node started."""
    node = Node.running
    assert node is not None and node.in_cluster and node.record is not None
    for name, before in node.record.sysctls.items():
        if name.startswith(("net.ipv4.ip_forward", "net.ipv4.conf.all.", "net.netfilter.", "net.bridge.")):
            now = Path("/proc/sys", *name.split(".")).read_text().strip()
            assert now == before, (name, before, now)
    assert Path("/proc/sys/net/ipv4/conf/jgbr0/forwarding").read_text().strip() == "1"
