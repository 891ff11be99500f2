"""What a test node changes on this machine, recorded before it starts and restored after it stops.

``HostRecord.take()`` notes the host's state before ``envtest.node`` starts anything; the record
is saved to ``STATE_FILE`` as it grows (every PID, rule and route the node adds is noted before
it is made), so that the next start restores what a killed run left. ``HostRecord.restore()``
undoes the node:

- processes: containerd's shims (found by the node's socket path), whatever is left in the
  pods' cgroups (the containers), the recorded PIDs of the node's own daemons;
- mounts under the work directory, ``/run/containerd``, ``/run/netns`` and ``/var/lib/kubelet``,
  and the network namespaces that appeared;
- the harness's own iptables rules and routes (in-cluster mode), the bridge ``BRIDGE``;
- the ``KUBE-*`` iptables chains (and the rules jumping to them) the kubelet and kube-proxy
  created, the nftables tables iptables-nft created for them, kube-proxy's nfacct counters;
- sysctls (``SYSCTLS``, and ``PROXY_SYSCTLS`` in in-cluster mode) to their recorded values;
- cgroup directories, the directories created outside the work directory (``OUTSIDE_DIRS``),
  and the work directory itself.

It goes on past what fails and returns what it could not undo (``Node.teardown_problems``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

# The bridge the node's pods hang on (envtest.node makes it; restore deletes it unless it was there).
BRIDGE = "jgbr0"
# The record of a running node, for the next start when a killed run left it.
STATE_FILE = Path("/run/jobgate-node.json")
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


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    """``cmd``'s outcome, never an exception for its failure: restoring goes on past it."""
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def read_sysctl(name: str) -> str:
    """The value of sysctl ``name`` (dotted, as ``sysctl`` names it)."""
    return Path("/proc/sys", *name.split(".")).read_text().strip()


def write_sysctl(name: str, value: str) -> None:
    """Set sysctl ``name``; a value the kernel refuses is left for the caller to read back."""
    with contextlib.suppress(OSError):
        Path("/proc/sys", *name.split(".")).write_text(value)


def _iptables_state(binary: str) -> dict[str, list[str]]:
    """Per table, the chains that exist (``:NAME`` lines of iptables-save)."""
    if shutil.which(binary) is None:
        return {}
    out = _run([binary]).stdout
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
    out = _run([save]).stdout
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
            _run([tool, "-t", table, "-D", *words[1:]])
    for table, chains in new_chains.items():
        for chain in chains:
            _run([tool, "-t", table, "-F", chain])
        for chain in chains:
            _run([tool, "-t", table, "-X", chain])


def _nft_tables() -> list[str] | None:
    """The nftables tables ("family name"), or None without the nft command."""
    if shutil.which("nft") is None:
        return None
    out = _run(["nft", "list", "tables"]).stdout
    return sorted(line.removeprefix("table ").strip() for line in out.splitlines() if line.startswith("table "))


def _remove_new_nft_tables(before: list[str]) -> None:
    """Delete the tables that appeared (iptables-nft creates ``ip filter``, ``ip6 nat``, ... for
    the first rule in them) once nothing but empty base chains is left in them."""
    for table in sorted(set(_nft_tables() or []) - set(before)):
        family, name = table.split(maxsplit=1)
        listing = _run(["nft", "-j", "list", "table", family, name])
        try:
            objects = json.loads(listing.stdout)["nftables"]
        except (ValueError, KeyError):
            continue
        if not any("rule" in item for item in objects):
            _run(["nft", "delete", "table", family, name])


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
    """The nfacct counters, or None where the kernel has no nfnetlink_acct."""
    try:
        return sorted(_nfacct(1))  # NFNL_MSG_ACCT_GET
    except OSError:  # no nfnetlink_acct in this kernel: nothing can create counters either
        return None


def _remove_new_nfacct(before: list[str]) -> None:
    """Delete the counters that appeared (those a rule still uses stay: see ``restore``)."""
    for name in sorted(set(_nfacct_names() or []) - set(before)):
        with contextlib.suppress(OSError):  # EBUSY while a rule still uses it
            _nfacct(3, name)  # NFNL_MSG_ACCT_DEL


def _mounts_under(prefixes: list[str]) -> list[str]:
    """Mount points at or below any of ``prefixes``, deepest first (the order to unmount them)."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if any(point == p or point.startswith(p.rstrip("/") + "/") for p in prefixes):
            points.append(point)
    return sorted(set(points), key=len, reverse=True)


def _netns_names() -> set[str]:
    """The named network namespaces (``ip netns``, which CNI uses for the pods)."""
    directory = Path("/run/netns")
    return {p.name for p in directory.iterdir()} if directory.is_dir() else set()


def _cgroup_dirs() -> list[str]:
    """The kubelet's and containerd's cgroup directories (``CGROUP_NAMES``) in every hierarchy."""
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
    """Every process in ``directories`` or the cgroups below them."""
    pids: set[int] = set()
    for directory in directories:
        for root, _, files in os.walk(directory):
            if "cgroup.procs" in files:
                with contextlib.suppress(OSError):
                    pids.update(int(p) for p in Path(root, "cgroup.procs").read_text().split())
    return pids


def _remove_cgroup_tree(directory: str) -> None:
    """Remove ``directory`` and the (empty) cgroups below it, deepest first."""
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
        """The host now, before the node in ``work_dir`` (containerd on ``socket_path``) starts;
        of ``sysctls``, those this kernel has."""
        present = [name for name in sysctls if Path("/proc/sys", *name.split(".")).exists()]
        return cls(
            work_dir=str(work_dir),
            containerd_socket=str(socket_path),
            sysctls={name: read_sysctl(name) for name in present},
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
        """Write the record to ``STATE_FILE`` (again after every addition)."""
        STATE_FILE.write_text(json.dumps(self.__dict__))

    @classmethod
    def load(cls) -> HostRecord | None:
        """The record a previous run left in ``STATE_FILE``, or None."""
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
            if _run(["umount", point]).returncode != 0:
                _run(["umount", "-l", point])
        for name in sorted(_netns_names() - set(self.netns)):
            with contextlib.suppress(OSError):
                os.unlink(Path("/run/netns") / name)
        for command, table, chain, *match in self.rules:
            for _ in range(10):  # once per copy, should a rule have been added twice
                if _run([command, "-t", table, "-C", chain, *match]).returncode != 0:
                    break
                _run([command, "-t", table, "-D", chain, *match])
        for route in self.routes:
            _run(["ip", "route", "del", *route])
        if not self.bridge_existed and Path("/sys/class/net", BRIDGE).exists():
            _run(["ip", "link", "delete", BRIDGE])
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
            if _run([command, "-t", table, "-C", chain, *match]).returncode == 0:
                problems.append(f"{command} -t {table} rule remains: {chain} {shlex.join(match)}")
        for route in self.routes:
            if _run(["ip", "route", "show", route[0]]).stdout.strip():
                problems.append(f"route {route[0]} remains")
        for name, value in self.sysctls.items():
            write_sysctl(name, value)
            if read_sysctl(name) != value:
                problems.append(f"sysctl {name} is {read_sysctl(name)}, was {value}")
        for directory in new_cgroups:
            _remove_cgroup_tree(directory)
            if os.path.isdir(directory):
                problems.append(f"cgroup {directory} remains")
        for directory in self.absent_dirs:
            if os.path.lexists(directory):
                if directory == "/run/netns" and _mounts_under([directory]):
                    _run(["umount", "-l", directory])
                shutil.rmtree(directory, ignore_errors=True)
                if os.path.lexists(directory):
                    problems.append(f"{directory} remains")
        shutil.rmtree(self.work_dir, ignore_errors=True)
        return problems
