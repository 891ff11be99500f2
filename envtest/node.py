"""A real node for the test control plane: containerd + runc + CNI, kubelet, scheduler, DNS.

Layout (all on this machine, nothing reachable from or leading off it):

- a bridge ``jgbr0`` with ``NODE_IP`` (10.213.0.1/24); pods get addresses of that /24 from
  host-local IPAM, with **no gateway, no default route, no masquerade** (``isGateway: false``,
  ``ipMasq: false``, ``routes: []``), so a pod can reach only the bridge and other pods;
- the kubelet listens on ``NODE_IP`` and registers ``NODE_IP`` as the node's InternalIP; the
  apiserver runs with ``--kubelet-preferred-address-types=InternalIP``, so ``kubectl logs``
  never resolves the node's name through the machine's resolver;
- CoreDNS (built with only the ``kubernetes`` plugin, no ``forward``) answers on
  ``NODE_IP:53`` for ``cluster.local`` and the reverse zones and refuses everything else; the
  kubelet's ``clusterDNS`` is ``NODE_IP`` and its ``resolvConf`` is empty, so pods never see
  the host's resolvers;
- containerd never pulls: the sandbox image is imported before the kubelet starts, every
  registry is mirrored to a closed loopback port, and tests use ``imagePullPolicy: Never``.

In-cluster mode (``Node(in_cluster=True)``) makes the node behave like a cluster's for pods that
talk to the apiserver and to Services, as jobgate's own pods will:

- the apiserver binds (and advertises) ``NODE_IP`` only, so the ``kubernetes`` Service's
  endpoint is reachable from pods; its serving certificate names ``NODE_IP`` too;
- the ServiceAccount admission plugin is on and the controller-manager runs what Deployments,
  ReplicaSets, Jobs, Endpoints/EndpointSlices, PDBs and Evictions, service-account tokens and
  ``kube-root-ca.crt`` need (``IN_CLUSTER_CONTROLLERS``);
- kube-proxy (iptables mode, ``masqueradeAll``) translates ClusterIPs for pods and for the
  host (the apiserver calls webhooks through their Service's ClusterIP, as in a cluster);
- pods get one route, the Service CIDR via ``NODE_IP`` (still no default route); the host
  routes the Service CIDR onto the bridge (never towards its default gateway) and forwards
  only packets that arrive on the bridge (``net.ipv4.conf.jgbr0.forwarding``, not
  ``net.ipv4.ip_forward``), and a mangle-table rule drops anything forwarded between the bridge
  and another interface.

Host state the kubelet, kube-proxy and containerd change is recorded before start and restored by
``stop()`` (also at interpreter exit, and at the next start when a killed run left a record
in ``STATE_FILE``): sysctls, ``KUBE-*`` iptables chains (and the nftables tables iptables-nft
created for them), the harness's own rules and routes, directories created outside the
work directory, mounts, network namespaces, the bridge, cgroup directories; every process
(ours, containerd's shims, the containers') is stopped by PID. That bookkeeping is
``envtest.host``'s ``HostRecord``; this module starts and stops the node's processes.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from envtest.harness import SERVICE_CLUSTER_IP_RANGE, ControlPlane, ControlPlaneError, free_port
from envtest.host import BRIDGE, PROXY_SYSCTLS, STATE_FILE, SYSCTLS, HostRecord, read_sysctl, write_sysctl
from envtest.node_build import JOB_IMAGE, PAUSE_IMAGE, build, missing_packages

NODE_IP = "10.213.0.1"
POD_SUBNET = "10.213.0.0/24"
NODE_NAME = "jobgate-node"
CNI_BIN_DIR = Path("/usr/lib/cni")
LOCK_FILE = Path("/run/jobgate-node.lock")
CONTROLLERS = (
    "garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller,"
    "node-lifecycle-controller,taint-eviction-controller,endpoints-controller,endpointslice-controller"
)
# What a cluster runs for the workloads an in-cluster jobgate uses: its Deployments (and their
# ReplicaSets), the certificate Job (and a CronJob, should renewal run as one), PDBs and the
# Eviction API (disruption), tokens and the kube-root-ca.crt ConfigMap every token volume
# mounts (root-ca publisher), terminated and orphaned pods cleaned up, aggregated ClusterRoles.
IN_CLUSTER_CONTROLLERS = CONTROLLERS + (
    ",deployment-controller,replicaset-controller,job-controller,cronjob-controller,ttl-after-finished-controller,"
    "disruption-controller,root-ca-certificate-publisher-controller,pod-garbage-collector-controller,"
    "clusterrole-aggregation-controller"
)
SERVICE_CIDR = SERVICE_CLUSTER_IP_RANGE
# Forwarding is on for packets arriving on the bridge only (pods to ClusterIPs DNATed to other
# pods); these make sure nothing is ever forwarded between the bridge and another interface,
# whatever a pod's routes or a Service's endpoints say. The mangle table's FORWARD chain is
# traversed before the filter table's, where kube-proxy prepends its ACCEPT rules.
ISOLATION_RULES = (
    ("-i", BRIDGE, "!", "-o", BRIDGE),
    ("!", "-i", BRIDGE, "-o", BRIDGE),
)


class NodeError(RuntimeError):
    pass


def node_unavailable_reason() -> str | None:
    """Why a node cannot run on this machine, or None."""
    if os.geteuid() != 0:
        return "the node needs root (network namespaces, mounts, cgroups)"
    if shutil.which("go") is None:
        return "go is not installed (kubelet, scheduler and CoreDNS are built from Go modules)"
    missing = missing_packages()
    if missing:
        return f"Debian packages missing: {' '.join(missing)} (python -m envtest node-deps installs them)"
    if not CNI_BIN_DIR.joinpath("bridge").exists():
        return f"no CNI bridge plugin in {CNI_BIN_DIR}"
    return None


def _run(cmd: list[str], check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)
    if check and proc.returncode != 0:
        raise NodeError(f"{shlex.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return proc


@dataclass
class Node:
    """The control plane plus one real node. ``with Node() as node:`` or ``start()``/``stop()``.

    ``in_cluster=True``: the apiserver on ``NODE_IP``, service-account tokens, kube-proxy and the
    controllers of workloads (see the module's docstring), for pods that use the cluster.
    """

    in_cluster: bool = False
    # A node that a session's fixture keeps but need not hold to the end: another Node started
    # in this process stops it instead of failing on the machine's lock (one node at a time).
    give_way: bool = False
    work_dir: Path | None = None
    plane: ControlPlane | None = None
    cache: Path | None = None
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    record: HostRecord | None = None
    teardown_problems: list[str] = field(default_factory=list)
    _lock: object | None = None
    # The node this process started (one per machine, see LOCK_FILE): tests outside the e2e
    # suite's session use it instead of failing on the lock.
    running: ClassVar[Node | None] = None

    @property
    def kubeconfig(self) -> Path:
        assert self.plane is not None
        return self.plane.kubeconfig

    @property
    def containerd_socket(self) -> Path:
        assert self.work_dir is not None
        return self.work_dir / "containerd" / "containerd.sock"

    def kubectl_command(self, *args: str) -> list[str]:
        assert self.plane is not None
        return self.plane.kubectl_command(*args)

    def start(self, timeout: float = 120.0) -> Node:
        reason = node_unavailable_reason()
        if reason:
            raise NodeError(reason)
        self.cache = self.cache or build(log=lambda message: None)
        running = Node.running
        if running is not None and running is not self and running.give_way:
            running.stop()
        self._take_lock()
        stale = HostRecord.load()
        if stale is not None:  # a previous run was killed before its teardown
            stale.restore()
            STATE_FILE.unlink(missing_ok=True)
        self.work_dir = Path(tempfile.mkdtemp(prefix="jobgate-node-"))
        self.work_dir.chmod(0o755)
        sysctls = SYSCTLS + PROXY_SYSCTLS if self.in_cluster else SYSCTLS
        self.record = HostRecord.take(self.work_dir, self.containerd_socket, sysctls)
        self.record.save()
        Node.running = self
        atexit.register(self.stop)
        try:
            self._make_bridge()
            pki = self.work_dir / "plane" / "pki"
            self.plane = ControlPlane(
                work_dir=self.work_dir / "plane",
                keep_work_dir=True,
                controllers=IN_CLUSTER_CONTROLLERS if self.in_cluster else CONTROLLERS,
                # The bridge exists by now: the apiserver binds its address and nothing else.
                bind_address=NODE_IP if self.in_cluster else "127.0.0.1",
                service_account_admission=self.in_cluster,
                extra_apiserver_args=(
                    "--kubelet-preferred-address-types=InternalIP",
                    # logs/exec/attach: the apiserver authenticates to the kubelet as admin.
                    f"--kubelet-client-certificate={pki / 'admin.crt'}",
                    f"--kubelet-client-key={pki / 'admin.key'}",
                ),
            )
            self.plane.start(timeout)
            self.record.pids.extend(p.pid for p in self.plane.processes.values())
            self._start_containerd(timeout)
            self._import_images()
            self._start_coredns()
            self._start_scheduler()
            if self.in_cluster:
                self._start_kube_proxy()
            self._start_kubelet()
            self._wait_node_ready(timeout)
            if self.in_cluster:
                self._wait_in_cluster_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _take_lock(self) -> None:
        handle = LOCK_FILE.open("w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise NodeError(f"another node runs on this machine (lock {LOCK_FILE})") from None
        self._lock = handle

    def _spawn(self, name: str, command: list[str], **kwargs) -> subprocess.Popen:
        assert self.work_dir is not None and self.record is not None
        log = open(self.work_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **kwargs)
        self.processes[name] = process
        self.record.pids.append(process.pid)
        self.record.save()
        return process

    def log_tail(self, name: str, lines: int = 40) -> str:
        assert self.work_dir is not None
        path = self.work_dir / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def _make_bridge(self) -> None:
        if Path("/sys/class/net", BRIDGE).exists():
            raise NodeError(f"interface {BRIDGE} already exists; refusing to reuse it")
        _run(["ip", "link", "add", BRIDGE, "type", "bridge"])
        _run(["ip", "addr", "add", f"{NODE_IP}/24", "dev", BRIDGE])
        _run(["ip", "link", "set", BRIDGE, "up"])
        if self.in_cluster:
            self._route_services()

    def _route_services(self) -> None:
        """Service traffic stays on the bridge: the host forwards what pods send to ClusterIPs
        (kube-proxy DNATs it to a pod, back out of the bridge), and its own packets to the Service
        CIDR leave by the bridge, never by the default route, whether kube-proxy has a rule for
        the address or not."""
        assert self.record is not None
        # Per interface, unlike net.ipv4.ip_forward: only packets arriving on the bridge are
        # forwarded, never those arriving on the machine's own interfaces.
        write_sysctl(f"net.ipv4.conf.{BRIDGE}.forwarding", "1")
        if read_sysctl(f"net.ipv4.conf.{BRIDGE}.forwarding") != "1":
            raise NodeError(f"could not turn on forwarding on {BRIDGE}")
        for match in ISOLATION_RULES:
            rule = ["iptables", "mangle", "FORWARD", *match, "-m", "comment", "--comment", "jobgate-node", "-j", "DROP"]
            self.record.rules.append(rule)
            self.record.save()
            _run([rule[0], "-t", rule[1], "-I", rule[2], "1", *rule[3:]])
        route = [SERVICE_CIDR, "dev", BRIDGE, "src", NODE_IP]
        self.record.routes.append(route)
        self.record.save()
        _run(["ip", "route", "add", *route])

    def _start_containerd(self, timeout: float) -> None:
        assert self.work_dir is not None and self.cache is not None
        base = self.work_dir / "containerd"
        cni_conf = self.work_dir / "cni"
        for directory in (base, cni_conf):
            directory.mkdir(parents=True, exist_ok=True)
        conflist = {
            "cniVersion": "0.4.0",
            "name": "jobgate",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": False,
                    "isDefaultGateway": False,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_SUBNET, "rangeStart": "10.213.0.10", "rangeEnd": "10.213.0.250"}]],
                        # In-cluster: the Service CIDR through the node, where kube-proxy
                        # translates it; still no default route.
                        "routes": [{"dst": SERVICE_CIDR, "gw": NODE_IP}] if self.in_cluster else [],
                        "dataDir": str(self.work_dir / "ipam"),
                    },
                }
            ],
        }
        (cni_conf / "10-jobgate.conflist").write_text(json.dumps(conflist, indent=2))
        closed = "http://127.0.0.1:1"  # any pull attempt ends on a closed loopback port
        config = f"""version = 2
root = "{base}/root"
state = "{base}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{self.containerd_socket}"
[ttrpc]
  address = "{base}/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_tls_streaming = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{cni_conf}"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."*"]
    endpoint = ["{closed}"]
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
    endpoint = ["{closed}"]
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."registry.k8s.io"]
    endpoint = ["{closed}"]
"""
        (base / "config.toml").write_text(config)
        # containerd 1.6 appends a registry's own host after its mirrors, so a pull of an image
        # that is not imported would still resolve a registry name: every request of containerd
        # goes to a closed loopback proxy instead, which resolves nothing.
        blocked = {"HTTP_PROXY": closed, "HTTPS_PROXY": closed, "http_proxy": closed, "https_proxy": closed}
        environment = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "all_proxy")}
        self._spawn("containerd", ["containerd", "--config", str(base / "config.toml")], env={**environment, **blocked})
        deadline = time.monotonic() + timeout
        while self._ctr("version", check=False).returncode != 0:
            self._check_alive()
            if time.monotonic() > deadline:
                raise NodeError(f"containerd did not start:\n{self.log_tail('containerd')}")
            time.sleep(0.2)

    def _ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return _run(["ctr", "--address", str(self.containerd_socket), "-n", "k8s.io", *args], check=check)

    def _import_images(self) -> None:
        assert self.cache is not None
        for archive, image in (("pause.tar", PAUSE_IMAGE), ("job-python.tar", JOB_IMAGE)):
            self.import_image(self.cache / "images" / archive, image)

    def import_image(self, archive: Path, image: str) -> None:
        """Import an OCI archive named ``image`` (``io.containerd.image.name``) into containerd's
        k8s.io namespace, where the kubelet finds it; pods use ``imagePullPolicy: Never``."""
        self._ctr("images", "import", "--no-unpack", str(archive))
        listed = self._ctr("images", "ls", "-q").stdout.split()
        if image not in listed:
            raise NodeError(f"{image} is not in containerd after importing {archive}: {listed}")

    def _start_coredns(self) -> None:
        assert self.work_dir is not None and self.cache is not None
        corefile = self.work_dir / "Corefile"
        # One server block for the cluster zones only, bound to the bridge address; no
        # forward plugin exists in the binary, so any other name is refused.
        corefile.write_text(
            f"""cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {NODE_IP}
    errors
    ready 127.0.0.1:{free_port()}
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {self.kubeconfig}
        ttl 5
    }}
}}
"""
        )
        self._spawn("coredns", [str(self.cache / "coredns"), "-conf", str(corefile)], cwd=self.work_dir)

    def _start_scheduler(self) -> None:
        assert self.cache is not None
        config = str(self.kubeconfig)
        self._spawn(
            "kube-scheduler",
            [
                str(self.cache / "kube-scheduler"),
                "--kubeconfig", config,
                "--authentication-kubeconfig", config,
                "--authorization-kubeconfig", config,
                "--bind-address", "127.0.0.1",
                "--secure-port", str(free_port()),
                "--leader-elect=false",
                "--v", "1",
            ],
        )  # fmt: skip

    def _start_kube_proxy(self) -> None:
        assert self.work_dir is not None and self.cache is not None
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(self.kubeconfig)},
            "mode": "iptables",
            "hostnameOverride": NODE_NAME,
            # Its idea of the node's primary IP (it listens on nothing there).
            "bindAddress": NODE_IP,
            "healthzBindAddress": f"127.0.0.1:{free_port()}",
            "metricsBindAddress": f"127.0.0.1:{free_port()}",
            "clusterCIDR": POD_SUBNET,
            "detectLocalMode": "ClusterCIDR",
            # NodePorts on the bridge address only. IPv6 needs an entry too (a family without one
            # gets every address, the machine's own interfaces included): the discard prefix of
            # RFC 6666, which no address of this host is in, so no IPv6 NodePorts at all.
            "nodePortAddresses": [f"{NODE_IP}/32", "100::/64"],
            "iptables": {
                # Every Service packet is SNATed to the node: a pod reaching its own Service
                # (hairpin) or a peer on the bridge gets the answer back through the host's
                # conntrack, with no need for br_netfilter or a promiscuous bridge.
                "masqueradeAll": True,
                # On, it would set net.ipv4.conf.all.route_localnet=1 for the whole host.
                "localhostNodePorts": False,
            },
            # 0: leave nf_conntrack_max, its hash size and the timeouts as the host has them.
            "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
            # Lowering it (the default, -999) needs CAP_SYS_RESOURCE, which root lacks here.
            "oomScoreAdj": 0,
        }
        config_file = self.work_dir / "kube-proxy-config.json"
        config_file.write_text(json.dumps(config, indent=2))
        self._spawn("kube-proxy", [str(self.cache / "kube-proxy"), "--config", str(config_file), "--v", "1"])

    def _wait_in_cluster_ready(self, timeout: float) -> None:
        """kube-proxy has written the ``kubernetes`` Service's rules, and the default namespace's
        ServiceAccount exists (until it does, the admission plugin refuses pods there)."""
        deadline = time.monotonic() + timeout
        proxied = account = False
        while time.monotonic() < deadline:
            self._check_alive()
            if not proxied:
                rules = _run(["iptables", "-t", "nat", "-S", "KUBE-SERVICES"], check=False).stdout
                proxied = "default/kubernetes:https" in rules
            if not account:
                command = self.kubectl_command("get", "serviceaccount", "default", "-n", "default")
                account = _run(command, check=False).returncode == 0
            if proxied and account:
                return
            time.sleep(0.3)
        raise NodeError(
            f"in-cluster mode not ready after {timeout:.0f} s (kube-proxy rules: {proxied}, "
            f"default ServiceAccount: {account}):\n{self.log_tail('kube-proxy')}"
        )

    def _start_kubelet(self) -> None:
        assert self.work_dir is not None and self.cache is not None and self.plane is not None
        root = self.work_dir / "kubelet"
        root.mkdir()
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs",
            "containerRuntimeEndpoint": f"unix://{self.containerd_socket}",
            "address": NODE_IP,
            "port": free_port(),
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": free_port(),
            "readOnlyPort": 0,
            "failSwapOn": False,
            "authentication": {
                "x509": {"clientCAFile": str(self.plane.work_dir / "pki" / "ca.crt")},
                "webhook": {"enabled": False},
                "anonymous": {"enabled": False},
            },
            "authorization": {"mode": "AlwaysAllow"},
            "clusterDNS": [NODE_IP],
            "clusterDomain": "cluster.local",
            "resolvConf": "",
            "podLogsDir": str(self.work_dir / "pod-logs"),
            # Never garbage-collect the imported images (nothing could pull them back), never evict.
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {"memory.available": "1Mi", "nodefs.available": "0%", "imagefs.available": "0%"},
            "serializeImagePulls": False,
            "maxPods": 60,
            "syncFrequency": "5s",
        }
        config_file = self.work_dir / "kubelet-config.json"
        config_file.write_text(json.dumps(config, indent=2))
        self._spawn(
            "kubelet",
            [
                str(self.cache / "kubelet"),
                "--config", str(config_file),
                "--kubeconfig", str(self.kubeconfig),
                "--root-dir", str(root),
                "--cert-dir", str(self.work_dir / "kubelet-pki"),
                "--hostname-override", NODE_NAME,
                "--node-ip", NODE_IP,
                "--v", "1",
            ],
        )  # fmt: skip

    def _check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise NodeError(f"{name} exited with {process.returncode}:\n{self.log_tail(name)}")

    def _wait_node_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            self._check_alive()
            proc = _run(
                self.kubectl_command("get", "node", NODE_NAME, "-o", "json"),
                check=False,
            )
            if proc.returncode == 0:
                node = json.loads(proc.stdout)
                ready = any(
                    c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", [])
                )
                taints = [t["key"] for t in node["spec"].get("taints", [])]
                if ready and not taints:
                    return
                last = f"ready={ready} taints={taints}"
            time.sleep(0.5)
        raise NodeError(f"node not ready after {timeout:.0f} s ({last}):\n{self.log_tail('kubelet')}")

    def stop(self) -> None:
        if self.record is None:
            return
        # The kubelet first (so it does not restart containers), then the pods' containers
        # through containerd, then containerd and the others.
        for name in ("kubelet", "kube-proxy", "kube-scheduler", "coredns"):
            self._stop_process(name)
        if "containerd" in self.processes and self.processes["containerd"].poll() is None:
            self._remove_containers()
        self._stop_process("containerd")
        if self.plane is not None:
            self.plane.stop()
        self.teardown_problems = self.record.restore()
        STATE_FILE.unlink(missing_ok=True)
        self.record = None
        if Node.running is self:
            Node.running = None
        if self._lock is not None:
            LOCK_FILE.unlink(missing_ok=True)
            self._lock.close()  # type: ignore[attr-defined]
            self._lock = None

    def _remove_containers(self) -> None:
        tasks = self._ctr("tasks", "ls", "-q", check=False).stdout.split()
        for task in tasks:
            self._ctr("tasks", "kill", "-s", "SIGKILL", task, check=False)
        for task in tasks:
            for _ in range(20):
                if self._ctr("tasks", "delete", task, check=False).returncode == 0:
                    break
                time.sleep(0.1)
        for container in self._ctr("containers", "ls", "-q", check=False).stdout.split():
            self._ctr("containers", "delete", container, check=False)

    def _stop_process(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def __enter__(self) -> Node:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["JOB_IMAGE", "NODE_IP", "NODE_NAME", "PAUSE_IMAGE", "SERVICE_CIDR", "ControlPlaneError", "Node", "NodeError"]
