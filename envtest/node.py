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
(ours, containerd's shims, the containers') is stopped by PID.
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
import socket
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from envtest.harness import SERVICE_CLUSTER_IP_RANGE, ControlPlane, ControlPlaneError, free_port
from envtest.node_build import JOB_IMAGE, PAUSE_IMAGE, build, missing_packages

BRIDGE = "jgbr0"
NODE_IP = "10.213.0.1"
POD_SUBNET = "10.213.0.0/24"
NODE_NAME = "jobgate-node"
CNI_BIN_DIR = Path("/usr/lib/cni")
STATE_FILE = Path("/run/jobgate-node.json")
LOCK_FILE = Path("/run/jobgate-node.lock")
# Sysctls the kubelet sets (it refuses to run with protectKernelDefaults otherwise) and ones
# CNI could touch: restored to their recorded values.
SYSCTLS = ("vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops", "net.ipv4.ip_forward")
# Directories the kubelet, containerd and CNI create outside the work directory.
OUTSIDE_DIRS = (
    "/var/lib/kubelet",
    "/var/log/containers",
    "/var/log/pods",
    "/usr/libexec/kubernetes",
    "/run/containerd",
    "/var/lib/cni",
    "/run/netns",
    "/var/lib/containerd",
    "/etc/cni",
    "/opt/cni",
)
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_NAMES = ("kubepods", "k8s.io")
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
# Sysctls kube-proxy writes when configured to (conntrack sizes and timeouts, route_localnet for
# localhost NodePorts) or reads (bridge netfilter): it is configured to leave them alone, and
# they are recorded and restored all the same. Only those this kernel has are recorded.
PROXY_SYSCTLS = (
    "net.ipv4.conf.all.route_localnet",
    "net.ipv4.conf.all.forwarding",
    "net.netfilter.nf_conntrack_max",
    "net.netfilter.nf_conntrack_tcp_timeout_established",
    "net.netfilter.nf_conntrack_tcp_timeout_close_wait",
    "net.netfilter.nf_conntrack_tcp_be_liberal",
    "net.netfilter.nf_conntrack_udp_timeout",
    "net.netfilter.nf_conntrack_udp_timeout_stream",
    "net.bridge.bridge-nf-call-iptables",
    "net.bridge.bridge-nf-call-ip6tables",
)
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


def _read_sysctl(name: str) -> str:
    return Path("/proc/sys", *name.split(".")).read_text().strip()


def _write_sysctl(name: str, value: str) -> None:
    with contextlib.suppress(OSError):
        Path("/proc/sys", *name.split(".")).write_text(value)


def _iptables_state(binary: str) -> dict[str, list[str]]:
    """Per table, the chains that exist (``:NAME`` lines of iptables-save)."""
    if shutil.which(binary) is None:
        return {}
    out = _run([binary], check=False).stdout
    tables: dict[str, list[str]] = {}
    table = ""
    for line in out.splitlines():
        if line.startswith("*"):
            table = line[1:]
            tables[table] = []
        elif line.startswith(":") and table:
            tables[table].append(line[1:].split()[0])
    return tables


def _remove_kube_chains(save: str, restore: str, before: dict[str, list[str]]) -> None:
    """Delete the KUBE-* chains that appeared and the rules that jump to them."""
    tool = restore.replace("-save", "")
    if shutil.which(save) is None:
        return
    out = _run([save], check=False).stdout
    table = ""
    new_chains: dict[str, list[str]] = {}
    jumps: list[tuple[str, list[str]]] = []
    for line in out.splitlines():
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith(":"):
            chain = line[1:].split()[0]
            if chain.startswith("KUBE-") and chain not in before.get(table, []):
                new_chains.setdefault(table, []).append(chain)
        elif line.startswith("-A "):
            words = shlex.split(line)
            if "-j" in words and words[words.index("-j") + 1].startswith("KUBE-") and not words[1].startswith("KUBE-"):
                jumps.append((table, words))
    for table, words in jumps:
        target = words[words.index("-j") + 1]
        if target in new_chains.get(table, []):
            _run([tool, "-t", table, "-D", *words[1:]], check=False)
    for table, chains in new_chains.items():
        for chain in chains:
            _run([tool, "-t", table, "-F", chain], check=False)
        for chain in chains:
            _run([tool, "-t", table, "-X", chain], check=False)


def _nft_tables() -> list[str] | None:
    """The nftables tables ("family name"), or None without the nft command."""
    if shutil.which("nft") is None:
        return None
    out = _run(["nft", "list", "tables"], check=False).stdout
    return sorted(line.removeprefix("table ").strip() for line in out.splitlines() if line.startswith("table "))


def _remove_new_nft_tables(before: list[str]) -> None:
    """Delete the tables that appeared (iptables-nft creates ``ip filter``, ``ip6 nat``, ... for
    the first rule in them) once nothing but empty base chains is left in them."""
    for table in sorted(set(_nft_tables() or []) - set(before)):
        family, name = table.split(maxsplit=1)
        listing = _run(["nft", "-j", "list", "table", family, name], check=False)
        try:
            objects = json.loads(listing.stdout)["nftables"]
        except (ValueError, KeyError):
            continue
        if not any("rule" in item for item in objects):
            _run(["nft", "delete", "table", family, name], check=False)


def _nfacct(command: int, name: str | None = None) -> list[str]:
    """One nfnetlink_acct request (no nfacct command on the machine): the names of a dump, or
    nothing for a delete. kube-proxy creates its packet counters this way; iptables rules use
    them (``-m nfacct``), and they outlive kube-proxy."""
    netlink_netfilter, subsystem_acct, attribute_name = 12, 7, 1
    request, ack, dump, error_message, done_message = 0x1, 0x4, 0x300, 2, 3
    attributes = b""
    if name is not None:
        data = name.encode() + b"\0"
        attributes = struct.pack("=HH", 4 + len(data), attribute_name) + data + b"\0" * (-len(data) % 4)
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, 0) + attributes
    flags = request | (dump if name is None else ack)
    header = struct.pack("=IHHII", 16 + len(body), (subsystem_acct << 8) | command, flags, 1, 0)
    names: list[str] = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, netlink_netfilter) as sock:
        sock.settimeout(5)
        sock.bind((0, 0))
        sock.send(header + body)
        while True:
            data = sock.recv(65536)
            offset = 0
            while offset < len(data):
                length, kind = struct.unpack_from("=IH", data, offset)
                if kind == error_message:
                    (error,) = struct.unpack_from("=i", data, offset + 16)
                    if error:
                        raise OSError(-error, os.strerror(-error))
                    return names
                if kind == done_message:
                    return names
                at = offset + 20  # after the netlink and nfgenmsg headers
                while at < offset + length:
                    size, kind = struct.unpack_from("=HH", data, at)
                    if kind & 0x3FFF == attribute_name:
                        names.append(data[at + 4 : at + size].rstrip(b"\0").decode())
                    at += (size + 3) & ~3
                offset += (length + 3) & ~3


def _nfacct_names() -> list[str] | None:
    try:
        return sorted(_nfacct(1))  # NFNL_MSG_ACCT_GET
    except OSError:  # no nfnetlink_acct in this kernel: nothing can create counters either
        return None


def _remove_new_nfacct(before: list[str]) -> None:
    for name in sorted(set(_nfacct_names() or []) - set(before)):
        with contextlib.suppress(OSError):  # EBUSY while a rule still uses it
            _nfacct(3, name)  # NFNL_MSG_ACCT_DEL


def _mounts_under(prefixes: list[str]) -> list[str]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if any(point == p or point.startswith(p.rstrip("/") + "/") for p in prefixes):
            points.append(point)
    return sorted(set(points), key=len, reverse=True)


def _netns_names() -> set[str]:
    directory = Path("/run/netns")
    return {p.name for p in directory.iterdir()} if directory.is_dir() else set()


def _cgroup_dirs() -> list[str]:
    found = []
    if CGROUP_ROOT.is_dir():
        for hierarchy in CGROUP_ROOT.iterdir():
            for name in CGROUP_NAMES:
                if (hierarchy / name).is_dir():
                    found.append(str(hierarchy / name))
    return found


def _pids_with_arg(marker: str) -> list[int]:
    """PIDs whose command line contains marker (our containerd's socket path: its shims)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker in entry.joinpath("cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(entry.name))
    return [p for p in pids if p != os.getpid()]


def _cgroup_pids(directories: list[str]) -> set[int]:
    pids: set[int] = set()
    for directory in directories:
        for root, _, files in os.walk(directory):
            if "cgroup.procs" in files:
                with contextlib.suppress(OSError):
                    pids.update(int(p) for p in Path(root, "cgroup.procs").read_text().split())
    return pids


def _remove_cgroup_tree(directory: str) -> None:
    for root, dirs, _ in os.walk(directory, topdown=False):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(root, name))
    with contextlib.suppress(OSError):
        os.rmdir(directory)


@dataclass
class HostRecord:
    """What the host looked like before the node started; enough to undo the node."""

    work_dir: str
    containerd_socket: str
    sysctls: dict[str, str] = field(default_factory=dict)
    iptables: dict[str, list[str]] = field(default_factory=dict)
    ip6tables: dict[str, list[str]] = field(default_factory=dict)
    absent_dirs: list[str] = field(default_factory=list)
    netns: list[str] = field(default_factory=list)
    cgroups: list[str] = field(default_factory=list)
    bridge_existed: bool = False
    pids: list[int] = field(default_factory=list)
    # Added by the harness itself (in-cluster mode), each recorded before it is made:
    # ``ip route`` specs, and iptables rules as [command, table, chain, *match].
    routes: list[list[str]] = field(default_factory=list)
    rules: list[list[str]] = field(default_factory=list)
    nft_tables: list[str] | None = None
    nfacct: list[str] | None = None

    @classmethod
    def take(cls, work_dir: Path, socket_path: Path, sysctls: tuple[str, ...] = SYSCTLS) -> HostRecord:
        present = [name for name in sysctls if Path("/proc/sys", *name.split(".")).exists()]
        return cls(
            work_dir=str(work_dir),
            containerd_socket=str(socket_path),
            sysctls={name: _read_sysctl(name) for name in present},
            iptables=_iptables_state("iptables-save"),
            ip6tables=_iptables_state("ip6tables-save"),
            absent_dirs=[d for d in OUTSIDE_DIRS if not os.path.lexists(d)],
            netns=sorted(_netns_names()),
            cgroups=_cgroup_dirs(),
            bridge_existed=Path("/sys/class/net", BRIDGE).exists(),
            nft_tables=_nft_tables(),
            nfacct=_nfacct_names(),
        )

    def save(self) -> None:
        STATE_FILE.write_text(json.dumps(self.__dict__))

    @classmethod
    def load(cls) -> HostRecord | None:
        try:
            return cls(**json.loads(STATE_FILE.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def restore(self) -> list[str]:
        """Undo everything the node did; returns what could not be undone."""
        problems: list[str] = []
        # Processes: containerd's shims (they carry our socket path), then whatever is left in
        # the pods' cgroups (the containers), then the recorded PIDs of our own daemons.
        for pid in _pids_with_arg(self.containerd_socket):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        new_cgroups = [d for d in _cgroup_dirs() if d not in self.cgroups]
        for _ in range(20):
            pids = _cgroup_pids(new_cgroups)
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        # Mounts: the work dir (kubelet bind-mounts its root dir, volumes, containerd's
        # overlay mounts and shm), the network namespaces, /run/containerd.
        for point in _mounts_under([self.work_dir, "/run/containerd", "/run/netns", "/var/lib/kubelet"]):
            if _run(["umount", point], check=False).returncode != 0:
                _run(["umount", "-l", point], check=False)
        for name in sorted(_netns_names() - set(self.netns)):
            with contextlib.suppress(OSError):
                os.unlink(Path("/run/netns") / name)
        for command, table, chain, *match in self.rules:
            for _ in range(10):  # once per copy, should a rule have been added twice
                if _run([command, "-t", table, "-C", chain, *match], check=False).returncode != 0:
                    break
                _run([command, "-t", table, "-D", chain, *match], check=False)
        for route in self.routes:
            _run(["ip", "route", "del", *route], check=False)
        if not self.bridge_existed and Path("/sys/class/net", BRIDGE).exists():
            _run(["ip", "link", "delete", BRIDGE], check=False)
        _remove_kube_chains("iptables-save", "iptables-save", self.iptables)
        _remove_kube_chains("ip6tables-save", "ip6tables-save", self.ip6tables)
        if self.nft_tables is not None:
            _remove_new_nft_tables(self.nft_tables)
        if self.nfacct is not None:  # after the rules that count with them
            _remove_new_nfacct(self.nfacct)
            left = sorted(set(_nfacct_names() or []) - set(self.nfacct))
            if left:
                problems.append(f"nfacct counters remain: {left}")
        for command, table, chain, *match in self.rules:
            if _run([command, "-t", table, "-C", chain, *match], check=False).returncode == 0:
                problems.append(f"{command} -t {table} rule remains: {chain} {shlex.join(match)}")
        for route in self.routes:
            if _run(["ip", "route", "show", route[0]], check=False).stdout.strip():
                problems.append(f"route {route[0]} remains")
        for name, value in self.sysctls.items():
            _write_sysctl(name, value)
            if _read_sysctl(name) != value:
                problems.append(f"sysctl {name} is {_read_sysctl(name)}, was {value}")
        for directory in new_cgroups:
            _remove_cgroup_tree(directory)
            if os.path.isdir(directory):
                problems.append(f"cgroup {directory} remains")
        for directory in self.absent_dirs:
            if os.path.lexists(directory):
                if directory == "/run/netns" and _mounts_under([directory]):
                    _run(["umount", "-l", directory], check=False)
                shutil.rmtree(directory, ignore_errors=True)
                if os.path.lexists(directory):
                    problems.append(f"{directory} remains")
        shutil.rmtree(self.work_dir, ignore_errors=True)
        return problems


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
        _write_sysctl(f"net.ipv4.conf.{BRIDGE}.forwarding", "1")
        if _read_sysctl(f"net.ipv4.conf.{BRIDGE}.forwarding") != "1":
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
