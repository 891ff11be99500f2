"""What a job's create costs with the apiserver's CEL rules, against jobgate's webhook pair.

Each configuration runs on a control plane of its own (etcd + kube-apiserver, no
controller-manager), all started by the bench and kept running side by side; the requests go to
them in rounds, the order of the (configuration, job) cells shuffled in every round, so that what
else the machine does hits every configuration alike:

- ``baseline``: the generated CRDs with every ``x-kubernetes-validations`` and every schema
  ``default`` removed (a walk of the generated CRDs; the typed pod templates stay, with their
  patterns, enums, ranges and list bounds), no policy, no webhook;
- ``cel``: ``manifests/overlays/cel-only`` (the CRDs with their rules, the
  ValidatingAdmissionPolicies and the MutatingAdmissionPolicies), no webhook;
- ``webhook``: the baseline CRDs and jobgate's webhook pair (MutatingWebhookConfiguration ->
  ``/mutate``, ValidatingWebhookConfiguration -> ``/validate``), a local ``jobgate webhook``
  process registered by URL as the end-to-end tests do (``manifests/overlays/url``, ``jobgate certs
  inject``), no policy;
- ``both``: cel-only and the webhook pair (the base install's defence in depth).

One plane per configuration rather than one plane re-configured between phases: interleaving
would then mean re-installing CRDs, policies and webhook configurations in every round, and
waiting each time for them to take effect; and a re-configured apiserver keeps what it cached for
the configuration before. An idle plane costs some memory and a little CPU while another is
measured.

``--stages`` adds three planes that split the CEL configuration into its stages: ``untyped`` (the
baseline with the pod templates back to ``x-kubernetes-preserve-unknown-fields``), ``crd-rules``
(the CRDs with their rules and defaults, no policy) and ``crd+vap`` (those and the
ValidatingAdmissionPolicies, no MutatingAdmissionPolicy).

Two jobs: ``small``, examples/valid/tfjob-mnist.yaml as it is; ``large``, a valid TFJob with four
replica types (PS, Worker, Chief, Evaluator: a fifth, Master, beside Chief is refused by both
jobgate and its CEL rules), each template at the pod-template bounds of ``POD_TEMPLATE_BOUNDS``:
16 containers, each with 32 named ports, 32 volume mounts (of 64 volumes), 32 environment
variables and requests within limits; about 340 KB of JSON.

The time of a request is the apiserver's POST as ``kubectl -v=6`` shows it (its round trip from
the client: the request's body sent, admission, validation, the answer's head), one kubectl
process creating a batch of the same job in turn. The creates are server-side dry runs
(``--dry-run=server``): every admission plugin, webhook (sideEffects: None), policy and schema
rule runs as for a real create; only the write to etcd is skipped, which is the same in every
configuration and would only add its own noise, and no objects pile up, so that the last request
meets the plane the first one met. ``--real-creates`` stores them instead (unique names).

Reported per configuration and job: median and p90 over the requests, the median added over the
baseline, and that added time as a ratio to the webhook pair's. Beside it, the CPU time per request
of the plane's etcd and kube-apiserver (and, where it is registered, of the webhook's processes),
from /proc around each kubectl batch: on a shared machine the wall times grow with the load, the
CPU a request costs much less (an idle apiserver's own background work is in it, a little).
The small job goes in batches of 20 per kubectl process, the large one request by request.

    python -m bench.cel_bench [--requests 200] [--large-requests 30] [--rounds 10] [--stages]
                              [--real-creates] [--seed 1]

Linux only (/proc). Each kubectl batch uses a discovery cache in the bench's temporary directory;
every process the bench starts (planes, webhook) is stopped at the end, also on Ctrl-C, SIGTERM or
an error. Run it niced on a shared machine (``nice -n 10``); the default run takes 4-8 minutes on
2 CPUs, ``--stages`` about 10.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.common import cpu_seconds, free_port, percentile

REPO = Path(__file__).resolve().parents[1]
SMALL_JOB = REPO / "examples/valid/tfjob-mnist.yaml"
CEL_ONLY = "manifests/overlays/cel-only"
CRDS = "manifests/base/crds"
POLICIES = "manifests/base/policies"
NAMESPACE = "default"
SIZES = ("small", "large")
APPLY_TIMEOUT = "Timeout: request did not complete within requested timeout"
TFJOB_POLICY = "jobgate.tfjobs.training.kubedl.io"
# Requests per cell sent (and not counted) before the rounds: the first requests of a plane compile
# and cache what later ones reuse (the first small CEL POST took 5-10x the later ones).
WARMUP = {"small": 5, "large": 2}
# The most requests of a cell one kubectl process sends in a row: the large job's go one by one, so
# that each meets the machine's noise at its own moment (a CEL one takes seconds).
BATCH = {"small": 20, "large": 1}
# Removed from the baseline CRDs (wherever they are schema keywords, not property names).
STRIPPED_KEYS = ("x-kubernetes-validations", "default")
WEBHOOK_CONFIGURATION_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
# kubectl -v=6: the structured line of kubectl 1.3x, and the older text line.
POST_LINES = (
    re.compile(r'"Response" verb="POST" url="(?P<url>[^"]+)" status="(?P<status>\d{3})[^"]*" milliseconds=(?P<ms>\d+)'),
    re.compile(r"\bPOST (?P<url>https://\S+) (?P<status>\d{3}) [^\n]*? in (?P<ms>\d+) milliseconds"),
)
# Refused by the CRD rules (and by the webhook) alike: Chief and Master together.
ROLE_PROBE = {
    "apiVersion": "training.kubedl.io/v1alpha1",
    "kind": "TFJob",
    "metadata": {"name": "probe-roles", "namespace": NAMESPACE},
    "spec": {
        "tfReplicaSpecs": {
            role: {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "x"}]}}}
            for role in ("Chief", "Master")
        }
    },
}
# Refused by a ValidatingAdmissionPolicy only (a request above its limit).
POLICY_PROBE = {
    "apiVersion": "training.kubedl.io/v1alpha1",
    "kind": "TFJob",
    "metadata": {"name": "probe-policy", "namespace": NAMESPACE},
    "spec": {
        "tfReplicaSpecs": {
            "Worker": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "tensorflow",
                                "image": "x",
                                "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
                            }
                        ]
                    }
                }
            }
        }
    },
}
POLICY_DENIAL = "ValidatingAdmissionPolicy"


class BenchError(RuntimeError):
    pass


# --- the jobs ------------------------------------------------------------------------------------


def small_job() -> dict[str, Any]:
    job = yaml.safe_load(SMALL_JOB.read_text())
    job["metadata"]["namespace"] = NAMESPACE
    return job


def large_job() -> dict[str, Any]:
    """A valid TFJob at the pod-template bounds: every rule runs over every item."""
    from jobgate.rules.podtemplate import POD_TEMPLATE_BOUNDS as BOUNDS

    volumes = [{"name": f"data-{i:02d}", "emptyDir": {}} for i in range(BOUNDS["volumes"])]

    def container(index: int) -> dict[str, Any]:
        ports = [
            {"name": f"p{index:02d}-{i:02d}", "containerPort": 10000 + 100 * index + i, "protocol": "TCP"}
            for i in range(BOUNDS["ports"])
        ]
        if index == 0:  # the framework container holds its port already: the default adds none (33 > 32)
            ports[0] = {"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}
        return {
            "name": "tensorflow" if index == 0 else f"sidecar-{index:02d}",
            "image": "tensorflow/tensorflow:2.16.1",
            "command": ["python", "train.py"],
            "ports": ports,
            "env": [{"name": f"VAR_{i:02d}", "value": f"value-{i}"} for i in range(32)],
            "volumeMounts": [
                {"name": volumes[(index + i) % len(volumes)]["name"], "mountPath": f"/mnt/data-{i:02d}"}
                for i in range(BOUNDS["volumeMounts"])
            ],
            "resources": {
                "requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
                "limits": {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "2Gi"},
            },
        }

    template = {"spec": {"containers": [container(i) for i in range(BOUNDS["containers"])], "volumes": volumes}}
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "large", "namespace": NAMESPACE},
        "spec": {
            "tfReplicaSpecs": {
                role: {"replicas": 1, "template": copy.deepcopy(template)}
                for role in ("PS", "Worker", "Chief", "Evaluator")
            }
        },
    }


def check_offline(job: dict[str, Any]) -> None:
    """The job as ``jobgate validate`` sees it: admitted, or the bench measures refusals."""
    from jobgate.review import kind_of, review_job

    kind = kind_of(job)
    assert kind is not None
    verdict = review_job(kind, job, None, with_patch=False)
    if verdict.errors:
        raise BenchError(f"{job['metadata']['name']}: not valid: {verdict.errors[:3]}")


# --- the CRDs of the baseline --------------------------------------------------------------------


def strip_schema(node: Any, counts: dict[str, int], parent: str | None = None) -> Any:
    """``node`` without ``STRIPPED_KEYS`` (counted in ``counts``); the keys of a ``properties`` map
    are field names, never keywords, and are kept whatever they are called."""
    if isinstance(node, dict):
        kept = {}
        for key, value in node.items():
            if parent != "properties" and key in STRIPPED_KEYS:
                # Rules are counted one by one (a list of them is one key).
                counts[key] = counts.get(key, 0) + (len(value) if isinstance(value, list) else 1)
                continue
            kept[key] = strip_schema(value, counts, key)
        return kept
    if isinstance(node, list):
        return [strip_schema(item, counts, parent) for item in node]
    return node


def untype_templates(node: Any, counts: dict[str, int], parent: str | None = None) -> Any:
    """``node`` with each pod template (an object schema with ``metadata`` and a ``spec`` typing
    ``containers``) back to an object kept whole, as before the CRDs typed them."""
    if isinstance(node, dict):
        properties = node.get("properties") if parent != "properties" else None
        spec = properties.get("spec") if isinstance(properties, dict) else None
        if (
            isinstance(spec, dict)
            and "metadata" in properties  # type: ignore[operator]
            and "containers" in (spec.get("properties") or {})
        ):
            counts["pod templates"] = counts.get("pod templates", 0) + 1
            untyped = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            if "description" in node:
                untyped["description"] = node["description"]
            return untyped
        return {key: untype_templates(value, counts, key) for key, value in node.items()}
    if isinstance(node, list):
        return [untype_templates(item, counts, parent) for item in node]
    return node


def generated_crds() -> list[dict[str, Any]]:
    documents = []
    for path in sorted((REPO / CRDS).glob("*.yaml")):
        if path.name != "kustomization.yaml":
            documents += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return documents


def baseline_crds(untyped: bool) -> tuple[str, dict[str, dict[str, int]]]:
    """The generated CRDs as YAML, stripped (and with untyped pod templates); what was removed, by CRD."""
    counts: dict[str, dict[str, int]] = {}
    documents = [strip_schema(crd, counts.setdefault(crd["metadata"]["name"], {})) for crd in generated_crds()]
    if untyped:
        documents = [untype_templates(crd, counts[crd["metadata"]["name"]]) for crd in documents]
    left: dict[str, int] = {}
    strip_schema(documents, left)
    if left:
        raise BenchError(f"left in the baseline CRDs: {left}")
    return yaml.safe_dump_all(documents, sort_keys=False), counts


# --- configurations and planes -------------------------------------------------------------------


@dataclass(frozen=True)
class Configuration:
    name: str
    crds: str | None  # "stripped" / "untyped": generated by the bench; None: from the kustomize dirs
    kustomize: tuple[str, ...] = ()
    webhook: bool = False
    map: bool = False  # MutatingAdmissionPolicies in force
    vap: bool = False  # ValidatingAdmissionPolicies in force

    @property
    def crd_rules(self) -> bool:
        return self.crds is None


BASELINE = Configuration("baseline", "stripped")
CEL = Configuration("cel", None, (CEL_ONLY,), map=True, vap=True)
WEBHOOK = Configuration("webhook", "stripped", webhook=True)
BOTH = Configuration("both", None, (CEL_ONLY,), webhook=True, map=True, vap=True)
STAGES = (
    Configuration("untyped", "untyped"),
    Configuration("crd-rules", None, (CRDS,)),
    Configuration("crd+vap", None, (CRDS, POLICIES), vap=True),
)


def run_kubectl(command: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


@dataclass
class Plane:
    configuration: Configuration
    work: Path
    plane: Any = None  # envtest.harness.ControlPlane

    def start(self) -> None:
        from envtest.harness import ControlPlane

        self.plane = ControlPlane(controller_manager=False)
        self.plane.start()

    def stop(self) -> None:
        if self.plane is not None:
            self.plane.stop()

    def kubectl(self, *args: str) -> list[str]:
        return [
            str(self.plane.kubectl),
            "--kubeconfig",
            str(self.plane.kubeconfig),
            "--cache-dir",
            str(self.work / "kubectl-cache" / self.configuration.name),
            *args,
        ]

    def must(self, *args: str, input: str | None = None) -> str:
        result = subprocess.run(
            self.kubectl(*args), input=input, capture_output=True, text=True, timeout=300, check=False
        )
        if result.returncode != 0:
            raise BenchError(f"{self.configuration.name}: kubectl {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout

    def dry_run(self, job: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-"),
            input=json.dumps(job),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def wait_until(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise BenchError(f"{what}: not within {timeout:.0f} s")


def install(plane: Plane, crd_texts: dict[str, str], webhook: WebhookProcess | None) -> None:
    """The configuration's objects, each stage checked in force before the next is added."""
    config = plane.configuration
    if config.crds is not None:
        plane.must("apply", "--server-side", "-f", "-", input=crd_texts[config.crds])
    for directory in config.kustomize:
        # Server-side: the CRDs are too large for a client-side apply's annotation.
        try:
            plane.must("apply", "--server-side", "-k", str(REPO / directory))
        except BenchError as error:
            # Volcano's policy of 280 KB takes the apiserver 10-20 s of CPU to compile: on a loaded
            # machine it answers 504 after 34 s. A policy of another kind than the TFJob measured
            # matches none of its requests; one of the TFJob's missing fails the bench below.
            if APPLY_TIMEOUT not in str(error):
                raise
            log(f"{config.name}: {directory}: the apiserver timed out on a policy (the others applied)")
    plane.must("wait", "--for=condition=Established", "crd", "-l", "app.kubernetes.io/part-of=jobgate", "--timeout=60s")
    for policy_kind, wanted in (("validatingadmissionpolicy", config.vap), ("mutatingadmissionpolicy", config.map)):
        if wanted:
            plane.must("get", policy_kind, TFJOB_POLICY)  # fails the bench when the TFJob's is missing

    if config.crd_rules:
        wait_until(
            f"{config.name}: the CRD rules refusing Chief with Master",
            lambda: "Chief or Master" in plane.dry_run(ROLE_PROBE).stderr,
        )
    else:
        answer = plane.dry_run(ROLE_PROBE)
        if answer.returncode != 0:
            raise BenchError(f"{config.name}: a rule in force where none should be: {answer.stderr.strip()}")
    if config.vap:
        wait_until(
            f"{config.name}: the ValidatingAdmissionPolicies",
            lambda: POLICY_DENIAL in plane.dry_run(POLICY_PROBE).stderr,
        )
    if config.map:

        def defaulted() -> bool:
            answer = plane.dry_run(small_job())
            return answer.returncode == 0 and "Worker" in json.loads(answer.stdout)["spec"]["tfReplicaSpecs"]

        wait_until(f"{config.name}: the MutatingAdmissionPolicies (worker renamed Worker)", defaulted)
    if config.webhook:
        assert webhook is not None
        plane.must("apply", "-f", "-", input=webhook.configurations)
        injected = subprocess.run(
            [sys.executable, "-m", "jobgate", "certs", "inject", "--kubeconfig", str(plane.plane.kubeconfig),
             "--ca-file", str(webhook.tls_dir / "ca.crt"),
             "--webhook", "jobgate-mutating", "--webhook", "jobgate-validating"],
            cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        if injected.returncode != 0:
            raise BenchError(f"{config.name}: jobgate certs inject: {injected.stderr.strip()}")
        attempt = iter(range(10**6))

        def webhook_answers() -> bool:
            probe = small_job()
            probe["metadata"]["name"] = name = f"ready-{config.name.replace('+', '-')}-{next(attempt)}"
            plane.dry_run(probe)
            return f"{NAMESPACE}/{name}" in webhook.log_text()

        wait_until(f"{config.name}: the webhook answering", webhook_answers)


class WebhookProcess:
    """``jobgate webhook`` on 127.0.0.1 (its own process group: its large-review workers go with it)."""

    def __init__(self, directory: Path) -> None:
        from jobgate.certs.authority import init_directory

        self.tls_dir = directory / "webhook-tls"
        init_directory(self.tls_dir, ["localhost"], ["127.0.0.1"])
        self.port = free_port()
        self.log = directory / "webhook.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.configurations = ""

    def start(self, kubectl: Path) -> None:
        command = [sys.executable, "-m", "jobgate", "webhook", "--tls-dir", str(self.tls_dir)]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--log-format", "json"]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, cwd=REPO, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 60
        while f"https://127.0.0.1:{self.port}" not in self.log_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"the webhook did not start: {self.log_text()[-2000:]}")
            time.sleep(0.1)
        # The url overlay's webhook configurations (without its CRDs), pointed at this port.
        rendered = run_kubectl([str(kubectl), "kustomize", str(REPO / "manifests/overlays/url")])
        if rendered.returncode != 0:
            raise BenchError(f"kubectl kustomize manifests/overlays/url: {rendered.stderr}")
        documents = [
            d for d in yaml.safe_load_all(rendered.stdout) if d and d.get("kind") in WEBHOOK_CONFIGURATION_KINDS
        ]
        text = yaml.safe_dump_all(documents, sort_keys=False)
        self.configurations = text.replace("https://127.0.0.1:9443/", f"https://127.0.0.1:{self.port}/")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def review_times(self) -> dict[tuple[str, str, str], list[float]]:
        """The webhook's own time per review, from its log, by (configuration, job, webhook path)."""
        times: dict[tuple[str, str, str], list[float]] = {}
        for line in self.log_text().splitlines():
            if not line.startswith("{") or '"ms"' not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            name = str(entry.get("object") or "")
            match = re.search(r"(?:^|/)(?P<config>[a-z-]+?)-(?P<size>small|large)-r(?P<round>\d+)-\d+$", name)
            if match is None or match["round"] == "0" or not isinstance(entry.get("ms"), int | float):  # r0: warm-up
                continue
            path = str(entry.get("webhook") or "?")
            times.setdefault((match["config"], match["size"], path), []).append(float(entry["ms"]))
        return times

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


# --- measuring ------------------------------------------------------------------------------------


def job_name(config: str, size: str, round_index: int, index: int) -> str:
    return f"{config.replace('+', '-')}-{size}-r{round_index}-{index}"


def post_times(stderr: str) -> list[tuple[int, int]]:
    """(status, milliseconds) of every POST of a TFJob in kubectl's -v=6 output."""
    found = []
    for pattern in POST_LINES:
        for match in pattern.finditer(stderr):
            if "/tfjobs" in match["url"]:
                found.append((int(match["status"]), int(match["ms"])))
        if found:
            break
    return found


def batch(
    plane: Plane,
    job: dict[str, Any],
    names: list[str],
    directory: Path,
    *,
    real: bool,
    cpu_pids: Callable[[], list[int]] = list,
) -> tuple[list[int], float]:
    """Create ``job`` once per name in one kubectl process; the POST times (ms), and the CPU seconds
    the processes of ``cpu_pids()`` used meanwhile."""
    items = []
    for name in names:
        item = copy.deepcopy(job) if len(names) > 1 else job
        item["metadata"] = {**job["metadata"], "name": name}
        items.append(item)
    path = directory / f"{plane.configuration.name}-{names[0]}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    try:
        dry_run = () if real else ("--dry-run=server",)
        pids = cpu_pids()
        before = cpu_seconds(pids)
        result = run_kubectl(plane.kubectl("create", *dry_run, "-v=6", "-o", "name", "-f", str(path)))
        used = cpu_seconds(pids) - before
    finally:
        path.unlink(missing_ok=True)
    times = post_times(result.stderr)
    refused = [status for status, _ in times if status != 201]
    if result.returncode != 0 or refused or len(times) != len(names):
        errors = [line for line in result.stderr.splitlines() if "round_trippers" not in line][-5:]
        raise BenchError(
            f"{plane.configuration.name}: {len(names)} creates of {job['metadata']['name']!r} gave "
            f"{len(times)} POSTs, statuses {sorted({s for s, _ in times})}: {' | '.join(errors)}"
        )
    return [ms for _, ms in times], used


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the webhook's large-review workers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry.name))
    tree, pending = [], [pid]
    while pending:
        current = pending.pop()
        tree.append(current)
        pending += children.get(current, [])
    return tree


def split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if index < total % parts else 0) for index in range(parts)]


@dataclass
class Results:
    times: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    loads: list[tuple[float, float, float]] = field(default_factory=list)
    started: datetime.datetime = field(default_factory=lambda: datetime.datetime.now(datetime.UTC))
    finished: datetime.datetime | None = None
    webhook_times: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)
    stripped: dict[str, dict[str, int]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # the configurations, as configured

    cpu: dict[tuple[str, str], float] = field(default_factory=dict)  # CPU seconds of the measured batches

    def median(self, config: str, size: str) -> float:
        return float(statistics.median(self.times[config, size]))

    def cpu_ms(self, config: str, size: str) -> float:
        """CPU milliseconds per request: the plane's apiserver and etcd, and the webhook's processes."""
        return 1000 * self.cpu[config, size] / len(self.times[config, size])


def measure(args: argparse.Namespace) -> Results:
    configurations = [BASELINE, CEL, WEBHOOK, BOTH, *(STAGES if args.stages else ())]
    sizes = [s for s in SIZES if s == "small" or args.large_requests > 0]
    requests = {"small": args.requests, "large": args.large_requests}
    jobs = {"small": small_job(), "large": large_job()}
    for job in jobs.values():
        check_offline(job)
    results = Results(order=[c.name for c in configurations])
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="jobgate-cel-bench-") as tmp:
        work = Path(tmp)
        stripped, results.stripped = baseline_crds(untyped=False)
        crd_texts = {"stripped": stripped, "untyped": baseline_crds(untyped=True)[0]}
        planes = [Plane(c, work) for c in configurations]
        webhook = WebhookProcess(work) if any(c.webhook for c in configurations) else None
        try:
            started = time.monotonic()
            for plane in planes:
                log(f"starting the {plane.configuration.name} plane ...")
                plane.start()
            if webhook is not None:
                webhook.start(planes[0].plane.kubectl)
            for plane in planes:
                install(plane, crd_texts, webhook)
                log(f"{plane.configuration.name}: installed and in force ({time.monotonic() - started:.0f} s)")
            for plane in planes:
                for size in sizes:
                    names = [job_name(plane.configuration.name, size, 0, i) for i in range(WARMUP[size])]
                    batch(plane, jobs[size], names, work, real=args.real_creates)
            log(f"warmed up ({time.monotonic() - started:.0f} s); {args.rounds} rounds")
            shares = {size: split(requests[size], args.rounds) for size in sizes}
            for round_index in range(args.rounds):
                # A cell's requests of the round in kubectl batches of at most BATCH[size], all the
                # round's batches in a random order.
                batches = []
                for plane in planes:
                    for size in sizes:
                        share, first = shares[size][round_index], 0
                        for count in split(share, -(-share // BATCH[size])) if share else []:
                            batches.append((plane, size, first, count))
                            first += count
                rng.shuffle(batches)
                for plane, size, first, count in batches:
                    config = plane.configuration
                    names = [job_name(config.name, size, round_index + 1, first + i) for i in range(count)]

                    def pids(plane: Plane = plane) -> list[int]:
                        own = [p.pid for p in plane.plane.processes.values()]  # etcd, kube-apiserver
                        if plane.configuration.webhook and webhook is not None and webhook.process is not None:
                            own += process_tree(webhook.process.pid)
                        return own

                    times, used = batch(plane, jobs[size], names, work, real=args.real_creates, cpu_pids=pids)
                    results.times.setdefault((config.name, size), []).extend(times)
                    results.cpu[config.name, size] = results.cpu.get((config.name, size), 0.0) + used
                results.loads.append(os.getloadavg())
                log(f"round {round_index + 1}/{args.rounds} done ({time.monotonic() - started:.0f} s)")
            if webhook is not None:
                results.webhook_times = webhook.review_times()
        finally:
            if webhook is not None:
                webhook.stop()
            for plane in planes:
                plane.stop()
    results.finished = datetime.datetime.now(datetime.UTC)
    return results


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- the report -----------------------------------------------------------------------------------


def report(results: Results, args: argparse.Namespace) -> None:
    from envtest.versions import KUBERNETES_VERSION

    large = large_job()
    assert results.finished is not None
    loads = results.loads or [os.getloadavg()]
    print(
        f"CEL against the webhook pair: {results.started:%Y-%m-%d %H:%M}-{results.finished:%H:%M} UTC, "
        f"Kubernetes {KUBERNETES_VERSION}, {os.cpu_count()} CPUs, load average (1 min) "
        f"{min(x[0] for x in loads):.1f}-{max(x[0] for x in loads):.1f} over the rounds "
        f"(last 1/5/15 min: {' '.join(f'{x:.1f}' for x in loads[-1])})"
    )
    mode = "real creates (unique names)" if args.real_creates else "server-side dry runs"
    print(
        f"{mode}; {args.requests} small / {args.large_requests} large requests per configuration in "
        f"{args.rounds} interleaved rounds; POST time as kubectl -v=6 shows it (whole milliseconds, truncated)"
    )
    print(
        f"small: {SMALL_JOB.relative_to(REPO)} ({len(json.dumps(small_job()))} bytes of JSON); "
        f"large: TFJob, 4 replica types x 16 containers x (32 ports, 32 mounts, 32 env), 64 volumes "
        f"({len(json.dumps(large))} bytes)"
    )
    tfjob = results.stripped.get("tfjobs.training.kubedl.io", {})
    total = {key: sum(c.get(key, 0) for c in results.stripped.values()) for key in STRIPPED_KEYS}
    print(
        f"baseline CRDs: removed {tfjob.get('x-kubernetes-validations', 0)} CEL rules and {tfjob.get('default', 0)} "
        f"defaults from the TFJob CRD ({total['x-kubernetes-validations']} and {total['default']} from all CRDs); "
        "kept the typed pod templates and every other schema keyword (patterns, enums, ranges, list bounds)"
    )
    print()
    sizes = [s for s in SIZES if any(size == s for _, size in results.times)]
    configs = [config for config in results.order if any(c == config for c, _ in results.times)]
    print(
        "| configuration | job | requests | median ms | p90 ms | added | ÷ webhook pair's added "
        "| CPU ms/request | added CPU | ÷ webhook pair's |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for config in configs:
        for size in sizes:
            times = results.times.get((config, size))
            if not times:
                continue
            median, p90, cpu = results.median(config, size), percentile(times, 0.9), results.cpu_ms(config, size)
            added = median - results.median("baseline", size)
            added_cpu = cpu - results.cpu_ms("baseline", size)
            if config == "baseline":
                columns = ["-"] * 4
            else:
                columns = [
                    f"{added:+.1f} ms",
                    ratio(added, results.median("webhook", size) - results.median("baseline", size)),
                    f"{added_cpu:+.1f} ms",
                    ratio(added_cpu, results.cpu_ms("webhook", size) - results.cpu_ms("baseline", size)),
                ]
            print(
                f"| {config} | {size} | {len(times)} | {median:.1f} | {p90:.1f} | {columns[0]} | {columns[1]} "
                f"| {cpu:.1f} | {columns[2]} | {columns[3]} |"
            )
    if results.webhook_times:
        print()
        rank = {name.replace("+", "-"): index for index, name in enumerate(results.order)}
        for (config, size, path), times in sorted(
            results.webhook_times.items(), key=lambda item: (rank.get(item[0][0], 99), item[0][1:])
        ):
            print(
                f"the webhook's own time per review (its log), {config}/{size} /{path}: "
                f"median {statistics.median(times):.1f} ms, p90 {percentile(times, 0.9):.1f} ms over {len(times)}"
            )
    if args.stages:
        print()
        print("stages of the CEL configuration (median POST differences, CPU per request in brackets):")
        chain = [
            ("pod-template typing and its keywords", "untyped", "baseline"),
            ("CRD rules and schema defaults", "baseline", "crd-rules"),
            ("ValidatingAdmissionPolicies", "crd-rules", "crd+vap"),
            ("MutatingAdmissionPolicies", "crd+vap", "cel"),
        ]
        for size in sizes:
            parts = [
                f"{label} {results.median(after, size) - results.median(before, size):+.1f} ms "
                f"(CPU {results.cpu_ms(after, size) - results.cpu_ms(before, size):+.1f} ms)"
                for label, before, after in chain
            ]
            print(f"  {size}: " + "; ".join(parts))


def ratio(added: float, webhook_added: float) -> str:
    """``added`` in units of the webhook pair's added time; none when that is lost in the noise."""
    # Not > 0: CPU figures are sums of clock ticks, and equal ones may differ by a rounding error.
    return f"{added / webhook_added:.1f}x" if webhook_added > 1e-6 else "n/a (webhook's added ≤ 0)"


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.cel_bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=positive, default=200, help="small-job requests per configuration")
    parser.add_argument(
        "--large-requests",
        type=positive,
        default=30,
        help="large-job requests per configuration (0: no large job); a CEL POST of it takes seconds",
    )
    parser.add_argument("--rounds", type=positive, default=10, help="interleaved rounds the requests are spread over")
    parser.add_argument("--stages", action="store_true", help="three more planes splitting CEL into its stages")
    parser.add_argument("--real-creates", action="store_true", help="store the jobs (unique names), no dry run")
    parser.add_argument("--seed", type=int, default=1, help="the order of the cells in each round")
    args = parser.parse_args(argv)
    if args.requests < 1:
        parser.error("--requests must be at least 1")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.rounds > args.requests or (args.large_requests and args.rounds > args.large_requests):
        parser.error(
            f"--rounds {args.rounds} is more than --requests {args.requests} or --large-requests "
            f"{args.large_requests}: every round must send each job to each configuration"
        )
    return args


@contextlib.contextmanager
def terminated_cleanly() -> Iterator[None]:
    """SIGTERM as KeyboardInterrupt: the finally blocks stop the planes and the webhook."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from envtest.build import cached_binaries

    if cached_binaries(controller_manager=False) is None:
        import shutil

        if shutil.which("go") is None:
            print("no cached Kubernetes binaries and no Go toolchain to build them (python -m envtest build)",
                  file=sys.stderr)  # fmt: skip
            return 1
    try:
        with terminated_cleanly():
            results = measure(args)
    except BenchError as exc:
        print(f"cel_bench: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cel_bench: interrupted; every process it started is stopped", file=sys.stderr)
        return 130
    report(results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
