"""A real control plane on loopback: etcd, kube-apiserver and kube-controller-manager.

The envtest approach of controller-runtime, with binaries built from source (``envtest.build``).
Every component listens on free 127.0.0.1 ports (the apiserver on ``bind_address`` when a
real node's pods must reach it), keeps its state in a temporary directory and writes its log
there; ``stop()`` (also run by the context manager, and at interpreter exit) terminates them
and removes the directory. RBAC is enforced, so permission tests mean
something; the admin kubeconfig belongs to ``system:masters``.

``ControlPlane.oldest()`` is etcd and kube-apiserver of the oldest Kubernetes release jobgate
supports (``OLDEST_KUBERNETES_VERSION``), built and cached the same way and started with the
same flags (every one of them exists in 1.30), without a controller-manager: it is there to
prove that jobgate's CRD validation rules and admission policies load on that release.
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from cryptography.x509.oid import ExtendedKeyUsageOID

from envtest.build import build
from envtest.pki import _leaf, create_pki, kubeconfig
from envtest.versions import KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION
from jobgate.certs.authority import cert_pem, key_pem

SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
DEFAULT_CONTROLLERS = (
    "garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller"
)


class ControlPlaneError(RuntimeError):
    pass


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _add_serving_address(pki: dict[str, Path], address: str) -> None:
    """Re-issue the apiserver's serving certificate with ``address`` among its names: an
    apiserver bound there (not on loopback) is reached there by every client on the host."""
    current = x509.load_pem_x509_certificate(pki["apiserver.crt"].read_bytes())
    names = list(current.extensions.get_extension_for_class(x509.SubjectAlternativeName).value)
    names.append(x509.IPAddress(ipaddress.ip_address(address)))
    ca_cert = x509.load_pem_x509_certificate(pki["ca.crt"].read_bytes())
    ca_key = load_pem_private_key(pki["ca.key"].read_bytes(), password=None)
    key, cert = _leaf(
        ca_key,  # type: ignore[arg-type]
        ca_cert,
        current.subject,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        alternative_names=names,
    )
    pki["apiserver.crt"].write_bytes(cert_pem(cert))
    pki["apiserver.key"].write_bytes(key_pem(key))


@dataclass
class ControlPlane:
    """Start with ``start()`` (or ``with ControlPlane() as cp:``); ``kubeconfig`` is the admin's."""

    work_dir: Path | None = None
    keep_work_dir: bool = False
    binaries: dict[str, Path] = field(default_factory=dict)
    api_port: int = 0
    etcd_url: str = ""
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    # A real node (envtest.node) needs the node-lifecycle and endpoint controllers as well.
    controllers: str = DEFAULT_CONTROLLERS
    extra_apiserver_args: tuple[str, ...] = ()
    # The apiserver's only listening (and advertised) address. An in-cluster node sets its bridge
    # address: the ``kubernetes`` Service's endpoint must be one that pods can reach.
    bind_address: str = "127.0.0.1"
    # Off by default (pods without service-account tokens start faster and need no token
    # controller); an in-cluster node turns it on so that pods get their tokens like in a cluster.
    service_account_admission: bool = False
    # The Kubernetes release to build (or find) and run; with controller_manager=False, only etcd
    # and kube-apiserver run (and kube-controller-manager is not built).
    version: str = KUBERNETES_VERSION
    controller_manager: bool = True
    # The apiserver's command line, kept so that fault tests can stop and start it again.
    _apiserver_command: list[str] = field(default_factory=list)
    _pki: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def oldest(cls, **fields: object) -> ControlPlane:
        """The oldest supported release's etcd + kube-apiserver (see the module's docstring)."""
        settings: dict = {"version": OLDEST_KUBERNETES_VERSION, "controller_manager": False, **fields}
        return cls(**settings)

    @property
    def kubeconfig(self) -> Path:
        assert self.work_dir is not None
        return self.work_dir / "admin.kubeconfig"

    @property
    def server(self) -> str:
        return f"https://{self.bind_address}:{self.api_port}"

    @property
    def kubectl(self) -> Path:
        return self.binaries["kubectl"]

    def start(self, timeout: float = 120.0) -> ControlPlane:
        self.binaries = self.binaries or build(
            self.version, controller_manager=self.controller_manager, log=lambda message: None
        )
        if self.work_dir is None:
            self.work_dir = Path(tempfile.mkdtemp(prefix="jobgate-envtest-"))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        atexit.register(self.stop)
        pki = self._pki = create_pki(self.work_dir / "pki")
        if self.bind_address != "127.0.0.1":
            _add_serving_address(pki, self.bind_address)
        try:
            etcd_url = self.etcd_url = self._start_etcd()
            self._start_apiserver(etcd_url, pki)
            self._wait_ready(pki, timeout)
            if self.controller_manager:
                self._start_controller_manager(pki)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, command: list[str]) -> subprocess.Popen:
        assert self.work_dir is not None
        log = open(self.work_dir / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process; restarts append
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.processes[name] = process
        return process

    def _start_etcd(self) -> str:
        assert self.work_dir is not None
        client, peer = free_port(), free_port()
        url = f"http://127.0.0.1:{client}"
        self._spawn(
            "etcd",
            [
                str(self.binaries["etcd"]),
                "--data-dir", str(self.work_dir / "etcd"),
                "--listen-client-urls", url,
                "--advertise-client-urls", url,
                "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-cluster", f"default=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync",
                "--quota-backend-bytes", str(2 * 1024**3),
                "--log-level", "warn",
            ],
        )  # fmt: skip
        return url

    def _start_apiserver(self, etcd_url: str, pki: dict[str, Path]) -> None:
        assert self.work_dir is not None
        self.api_port = free_port(self.bind_address)
        self._apiserver_command = [
                str(self.binaries["kube-apiserver"]),
                "--etcd-servers", etcd_url,
                "--bind-address", self.bind_address,
                "--advertise-address", self.bind_address,
                "--secure-port", str(self.api_port),
                "--cert-dir", str(self.work_dir / "apiserver-certs"),
                "--tls-cert-file", str(pki["apiserver.crt"]),
                "--tls-private-key-file", str(pki["apiserver.key"]),
                "--client-ca-file", str(pki["ca.crt"]),
                "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file", str(pki["sa.pub"]),
                "--service-account-signing-key-file", str(pki["sa.key"]),
                "--service-cluster-ip-range", SERVICE_CLUSTER_IP_RANGE,
                "--authorization-mode", "RBAC",
                "--allow-privileged=true",
                *(() if self.service_account_admission else ("--disable-admission-plugins", "ServiceAccount")),
                "--v", "1",
                *self.extra_apiserver_args,
        ]  # fmt: skip
        self._spawn("kube-apiserver", self._apiserver_command)
        for name, cert, key, user in (
            ("admin", "admin.crt", "admin.key", "admin"),
            (
                "controller-manager",
                "controller-manager.crt",
                "controller-manager.key",
                "system:kube-controller-manager",
            ),
        ):
            text = kubeconfig(self.server, pki["ca.crt"], pki[cert], pki[key], user)
            (self.work_dir / f"{name}.kubeconfig").write_text(text)

    def _wait_ready(self, pki: dict[str, Path], timeout: float) -> None:
        context = ssl.create_default_context(cafile=str(pki["ca.crt"]))
        context.load_cert_chain(pki["admin.crt"], pki["admin.key"])
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise ControlPlaneError(f"{name} exited with {process.returncode}:\n{self.log_tail(name)}")
            try:
                with urllib.request.urlopen(f"{self.server}/readyz", context=context, timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.25)
        raise ControlPlaneError(
            f"kube-apiserver not ready after {timeout:.0f} s ({last}):\n{self.log_tail('kube-apiserver')}"
        )

    def _start_controller_manager(self, pki: dict[str, Path]) -> None:
        assert self.work_dir is not None
        self._spawn(
            "kube-controller-manager",
            [
                str(self.binaries["kube-controller-manager"]),
                "--kubeconfig", str(self.work_dir / "controller-manager.kubeconfig"),
                "--authentication-kubeconfig", str(self.work_dir / "controller-manager.kubeconfig"),
                "--authorization-kubeconfig", str(self.work_dir / "controller-manager.kubeconfig"),
                "--bind-address", "127.0.0.1",
                "--secure-port", str(free_port()),
                "--leader-elect=false",
                "--controllers", self.controllers,
                "--service-account-private-key-file", str(pki["sa.key"]),
                "--root-ca-file", str(pki["ca.crt"]),
                "--use-service-account-credentials=false",
                "--concurrent-gc-syncs", "10",
                "--v", "1",
            ],
        )  # fmt: skip

    # --- faults (tests only) -------------------------------------------------------------------

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver (SIGTERM, then SIGKILL); etcd and the controller-manager keep running."""
        process = self.processes.pop("kube-apiserver")
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)

    def start_apiserver(self, timeout: float = 120.0) -> None:
        """Start kube-apiserver again: same etcd, port, certificates and flags; wait until ready."""
        if "kube-apiserver" in self.processes and self.processes["kube-apiserver"].poll() is None:
            return
        # Go listeners set SO_REUSEADDR: the port is free again once the old process has exited.
        self._spawn("kube-apiserver", self._apiserver_command)
        self._wait_ready(self._pki, timeout)

    def etcd_revision(self) -> int:
        """The current revision of etcd's keyspace (through etcd's JSON gateway)."""
        answer = self._etcd_call("/v3/kv/range", {"key": "AA==", "limit": 1})  # key "\0": any key
        return int(answer["header"]["revision"])

    def compact_etcd(self, revision: int | None = None) -> int:
        """Compact etcd up to ``revision`` (default: the current one): older versions are gone, so a
        watch or list from a resourceVersion before it gets 410 Gone. Returns the revision."""
        target = revision if revision is not None else self.etcd_revision()
        self._etcd_call("/v3/kv/compaction", {"revision": str(target), "physical": True})
        return target

    def _etcd_call(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(
            f"{self.etcd_url}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def log_tail(self, name: str, lines: int = 40) -> str:
        assert self.work_dir is not None
        path = self.work_dir / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def kubectl_command(self, *args: str) -> list[str]:
        return [str(self.kubectl), "--kubeconfig", str(self.kubeconfig), *args]

    def stop(self) -> None:
        for name in reversed(list(self.processes)):
            process = self.processes.pop(name)
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=10)
        if self.work_dir is not None and not self.keep_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
