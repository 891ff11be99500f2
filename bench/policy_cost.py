"""What platform policy costs: the webhook's reviews/s and ``jobgate validate``'s files/s with a set of
policies in force against the same without, measured in the same run.

    python -m bench.policy_cost [--policies 50] [--matching 10] [--files 2000] [--duration 10] [--rounds 5]
                                [--no-webhook] [--no-offline] [--no-compiled] [--compiled-tree DIR]

The policy set (``testkit/policy_set.py``) has ``--policies`` policies of which ``--matching`` apply to
the bench's TFJob (limits, GPUs, required labels, allow-lists, registries, forbid, defaults, one
Warn), all satisfied by it, so that both runs admit the same job; the others are kept from it by a
namespaceSelector, another namespace, match.families/kinds or an objectSelector.

- Offline: ``jobgate validate -j 1`` over ``--files`` realistic TFJobs (``bench/cli_bench.py``'s)
  without, then with ``--policies FILE --namespaces FILE``, pinned to one CPU, rounds interleaved,
  after one unmeasured run of each (bytecode caches written, as an installed jobgate has them).
- Webhook: a control plane (etcd + kube-apiserver from ``envtest``'s cache) serving the policy CRDs,
  the set and its namespaces; two ``jobgate webhook`` servers pinned to CPU 0 (one without a
  cluster, one with ``--kubeconfig``: its policy caches on, Ready once they are synced), wrk on
  CPU 1 (``bench/webhook_bench.py``'s), /mutate and /validate, rounds interleaved, fresh servers in each
  round (a process's layout moves its own figures by a few hundredths). /mutate gets the
  job as written; /validate gets it as that server's /mutate left it, as the apiserver sends it
  (with policies, their defaults too). The apiserver is idle during the runs (the caches are
  watch-fed; a review asks the API nothing) and pinned to wrk's CPU.

Issue 30's goal: with 50 policies of which 10 match, both rates at least 0.9 of the figures without.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from bench.cli_bench import generate, measure
from bench.common import free_port
from bench.fixtures import tfjob_review_bytes
from bench.webhook_bench import LOAD_CPU, LUA, compiled_tree_or_none, start_server, wrk
from jobgate.certs.authority import init_directory
from jobgate.engine.jsonpatch import apply_patch
from testkit.policy_set import NAMESPACE, namespaces, policy_set

if TYPE_CHECKING:
    from envtest.harness import ControlPlane

REPO = Path(__file__).resolve().parents[1]
POLICY_CRDS = [
    REPO / "manifests" / "base" / "crds" / "policy.jobgate.io_clustertrainingjobpolicies.yaml",
    REPO / "manifests" / "base" / "crds" / "policy.jobgate.io_trainingjobpolicies.yaml",
]


def offline(directory: Path, files: int, rounds: int, cpu: int, *, policies: Path, namespace_file: Path) -> dict:
    realistic, _, size, _ = generate(directory, files)
    jobgate = [sys.executable, "-m", "jobgate", "validate", "-j", "1"]
    commands = {
        "without policies": [*jobgate, str(realistic)],
        "with policies": [*jobgate, "--policies", str(policies), "--namespaces", str(namespace_file), str(realistic)],
    }
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    for command in commands.values():
        measure(command, cpu)  # writes the bytecode caches a first run writes (see main)
    for _ in range(rounds):
        for name, command in commands.items():
            result = measure(command, cpu)
            if result.returncode != 0:
                raise SystemExit(f"{name}: jobgate validate exited {result.returncode} (the set must admit the job)")
            seconds[name].append(result.seconds)
    rates = {name: files / statistics.median(values) for name, values in seconds.items()}
    return {"files": files, "bytes_per_file": size, "files_per_s": rates}


def wait_ready(port: int, ca_file: Path, timeout: float = 120.0) -> None:
    context = ssl.create_default_context(cafile=str(ca_file))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=context, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("the webhook with policies did not become Ready (its policy caches never synced)")


def as_mutated(port: int, ca_file: Path, review_file: Path) -> bytes:
    """The AdmissionReview of ``review_file`` with its object as the server's /mutate patches it."""
    context = ssl.create_default_context(cafile=str(ca_file))
    body = review_file.read_bytes()
    request = urllib.request.Request(
        f"https://127.0.0.1:{port}/mutate", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, context=context, timeout=30) as answer:
        response = json.loads(answer.read())["response"]
    review = json.loads(body)
    patch = json.loads(base64.b64decode(response["patch"])) if response.get("patch") else []
    review["request"]["object"] = apply_patch(review["request"]["object"], patch)
    return json.dumps(review).encode()


def policy_control_plane(texts: list[str]) -> ControlPlane:
    """A started control plane (etcd + kube-apiserver) serving the policy CRDs and holding ``texts``
    (YAML documents: namespaces, policies), pinned to wrk's CPU: its background work (the servers
    with policies keep watches open) must not take turns on the servers' CPU, which only one side
    would pay for."""
    from envtest.harness import ControlPlane

    plane = ControlPlane(controller_manager=False)
    plane.start()
    try:
        for process in plane.processes.values():
            subprocess.run(["taskset", "-a", "-p", "-c", LOAD_CPU, str(process.pid)], check=True, capture_output=True)
        kubectl = plane.kubectl_command
        for crd in POLICY_CRDS:
            subprocess.run(kubectl("apply", "--server-side", "-f", str(crd)), check=True, capture_output=True)
        subprocess.run(
            kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"),
            check=True,
            capture_output=True,
        )
        for text in texts:
            subprocess.run(kubectl("apply", "-f", "-"), input=text, text=True, check=True, capture_output=True)
    except BaseException:
        plane.stop()
        raise
    return plane


def webhook(
    directory: Path,
    duration: float,
    rounds: int,
    policy_text: str,
    namespace_text: str,
    *,
    builds: list[tuple[str, Path]],
) -> dict:
    if (os.cpu_count() or 1) < 2 or shutil.which("wrk") is None or shutil.which("taskset") is None:
        raise SystemExit("the webhook part needs two CPUs, wrk and taskset (apt-get install wrk util-linux)")
    init_directory(directory, ["localhost"], ["127.0.0.1"])
    (directory / "review.json").write_bytes(tfjob_review_bytes())
    (directory / "post.lua").write_text(LUA)
    env = {
        **os.environ,
        "JOBGATE_BENCH_BODY": str(directory / "review.json"),
        "JOBGATE_BENCH_SCRIPT": str(directory / "post.lua"),
        "PYTHONPATH": str(REPO),
    }
    plane = policy_control_plane([namespace_text, policy_text])
    servers: list[subprocess.Popen] = []
    try:
        command = [sys.executable, "-m", "jobgate", "webhook", "--tls-dir", str(directory), "--host", "127.0.0.1"]
        with_policies = ["--kubeconfig", str(plane.kubeconfig)]
        runs: dict[str, list] = {}
        # Fresh servers every round: one process's layout (its hash seed, where its objects landed)
        # moves its CPU per review by several hundredths for as long as it runs, so a median over
        # rounds of the same processes would keep that; over fresh ones it averages out.
        for _ in range(rounds):
            targets: list[tuple[str, str, int, dict[str, str]]] = []
            for build, tree in builds:
                for label, extra in (("without policies", []), ("with policies", with_policies)):
                    port = free_port()
                    log = f"{build} {label}.log"
                    servers.append(start_server([*command, "--port", str(port), *extra], port, directory, log, tree))
                    wait_ready(port, directory / "ca.crt")
                    # The apiserver sends /validate the job as the mutating webhooks left it: this server's
                    # /mutate answer applied to the review (with policies: their defaults too).
                    mutated = directory / f"review-validate-{len(servers)}.json"
                    mutated.write_bytes(as_mutated(port, directory / "ca.crt", directory / "review.json"))
                    for path, body in (("mutate", directory / "review.json"), ("validate", mutated)):
                        url = f"https://127.0.0.1:{port}/{path}"
                        target_env = {**env, "JOBGATE_BENCH_BODY": str(body)}
                        targets.append((f"{build}|{label}|{path}", url, servers[-1].pid, target_env))
            for _, url, _, target_env in targets:
                wrk(url, target_env, connections=32, seconds=2)  # warm up
            for name, url, pid, target_env in targets:
                runs.setdefault(name, []).append(
                    wrk(url, target_env, connections=32, seconds=duration, server_pids=[pid])
                )
            for server in servers:
                server.terminate()
                server.wait(timeout=20)
            servers.clear()
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=20)
        plane.stop()
    figures = {}
    for name, measured in runs.items():
        errors = sum(r.errors for r in measured)
        if errors:
            raise SystemExit(f"{name}: {errors} failed requests; see the servers' logs")
        figures[name] = {
            "reviews_per_s": statistics.median(r.rate for r in measured),
            "cpu_us_per_review": statistics.median(r.server_cpu_s / r.requests * 1e6 for r in measured),
        }
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policies", type=int, default=50, help="policies in force (default 50)")
    parser.add_argument("--matching", type=int, default=10, help="of which apply to the job (default 10)")
    parser.add_argument("--files", type=int, default=2000, help="files of the offline part (default 2000)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per webhook measurement (default 10)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="interleaved rounds, each with fresh servers; medians are reported (default 5)",
    )
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)), help="CPU of the offline runs")
    parser.add_argument("--no-webhook", action="store_true", help="skip the webhook part (needs a control plane)")
    parser.add_argument("--no-offline", action="store_true", help="skip the jobgate validate part")
    parser.add_argument("--no-compiled", action="store_true", help="skip the webhook of the mypyc-compiled engine")
    parser.add_argument(
        "--compiled-tree",
        type=Path,
        help="where the mypyc-compiled copy of this tree is kept: built there when absent, reused as it is "
        "when present (repeated runs skip the build; remove it after changing the tree)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args(argv)
    if not 0 <= args.matching <= args.policies:
        parser.error("--matching must be between 0 and --policies")

    # Start-up is measured as users meet it (as bench/cli_bench.py does): with bytecode caches, which
    # an installed jobgate has. Without them every run compiled each module it imports from source,
    # a cost of the development tree that grows with the modules a run imports, not with its work.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    policy_text = yaml.safe_dump_all(policy_set(args.policies, args.matching))
    namespace_text = yaml.safe_dump_all(namespaces())
    load_before = os.getloadavg()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="jobgate-policy-cost-") as tmp:
        directory = Path(tmp)
        (directory / "policies.yaml").write_text(policy_text)
        (directory / "namespaces.yaml").write_text(namespace_text)
        if not args.no_offline:
            (directory / "offline").mkdir()
            results["offline"] = offline(
                directory / "offline",
                args.files,
                args.rounds,
                args.cpu,
                policies=directory / "policies.yaml",
                namespace_file=directory / "namespaces.yaml",
            )
        if not args.no_webhook:
            (directory / "webhook").mkdir()
            builds = [("jobgate", REPO)]
            if not args.no_compiled:
                kept = args.compiled_tree
                compiled = (
                    kept
                    if kept is not None and kept.is_dir()
                    else compiled_tree_or_none(kept or directory / "compiled")
                )
                if compiled is not None:
                    builds.append(("jobgate compiled", compiled))
            results["webhook"] = webhook(
                directory / "webhook", args.duration, args.rounds, policy_text, namespace_text, builds=builds
            )

    print(
        f"platform policy cost: {args.policies} policies in force, {args.matching} apply to the job "
        f"(namespace {NAMESPACE}); medians of {args.rounds} interleaved rounds"
    )
    print(f"load average before/after: {load_before} / {os.getloadavg()}")
    if "offline" in results:
        rates = results["offline"]["files_per_s"]
        ratio = rates["with policies"] / rates["without policies"]
        print(
            f"jobgate validate -j 1, {results['offline']['files']} TFJobs of "
            f"{results['offline']['bytes_per_file']} bytes, CPU {args.cpu}:"
        )
        print(f"  without policies {rates['without policies']:8.0f} files/s")
        print(f"  with policies    {rates['with policies']:8.0f} files/s   x {ratio:.2f}")
    if "webhook" in results:
        hooks = results["webhook"]
        print("webhook (server on CPU 0, wrk on CPU 1, 32 keep-alive TLS connections):")
        print(f"  {'server':35} {'reviews/s':>9} {'ratio':>6} {'CPU us/review':>13} {'CPU ratio':>9}")
        for name, row in hooks.items():
            build, label, path = name.split("|")
            base = hooks[f"{build}|without policies|{path}"]
            rate_ratio = row["reviews_per_s"] / base["reviews_per_s"]
            # CPU per review survives a shared machine; as a ratio, reviews/s one CPU could serve.
            cpu_ratio = base["cpu_us_per_review"] / row["cpu_us_per_review"]
            print(
                f"  {build + ' /' + path + ', ' + label:35} {row['reviews_per_s']:9.0f} {rate_ratio:6.2f} "
                f"{row['cpu_us_per_review']:13.1f} {cpu_ratio:9.2f}"
            )
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
