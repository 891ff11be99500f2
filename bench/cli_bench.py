"""``jobgate validate`` against kubeconform and a bare parse of the same files, in one run.

    python -m bench.cli_bench [--files 2000] [--rounds 3] [--cpu 1] [--one-file-only] [--no-compiled]
                              [--baseline REF]... [--instructions [--instruction-files 400]]

Two sets of 2,000 distinct files are generated in a temporary directory: realistic TFJobs
(~3.4 KB: PS + GPU workers, resources, env, volumes, tolerations) and copies of
``examples/valid/tfjob-mnist.yaml`` (each with its own name). Every tool runs pinned to
one CPU, one worker (``jobgate validate -j 1``, ``kubeconform -n 1``), in the same run,
rounds interleaved; the table gives the medians: manifests/s, the wall time of one small
file, peak RSS, and the ratios to kubeconform.

With mypy installed (``pip install '.[compile]'``) the tree with its rule engine compiled by mypyc
(as the image ships it) is measured too. ``--baseline REF`` (repeatable) adds a git ref, pure and
compiled, built once into its own tree and virtual environments outside the repository
(``bench/baseline.py``), in the same interleaved rounds: each of this tree's rows then gives its
ratio to the same engine of each baseline (``× REF``: above 1, this tree is faster).

``--instructions`` counts instructions instead of timing (``valgrind --tool=cachegrind``, a figure
the load of a shared machine cannot move): each build's ``jobgate validate -j 1`` over the first
``--instruction-files`` files of each set and over a tenth of them; the difference over the files
between is the cost per file, what is left of the smaller run once its files are taken off the
start-up (bytecode caches written first). Neither kubeconform nor the one-file figures run then.

The one-file figures (one small example of each family, the start-up users wait for in a
pre-commit hook or a CI step) come from the ``jobgate`` command of a wheel built from this tree
and installed into a fresh virtual environment (as ``pip install jobgate`` leaves it: no
editable-install finder), bytecode caches warm, against kubeconform on the same file,
interleaved.

kubeconform v0.8.0 is built from its Go module with ``go install`` (through the Go module
proxy) into ``~/.cache/jobgate/tools/kubeconform-v0.8.0/`` on first use. It is fed JSON
Schemas converted from jobgate's own CRDs (``manifests/base/crds/``), with ``-strict`` so
that it refuses unknown fields as jobgate does. It checks the schema only; jobgate runs
every rule (defaults, roles, pod templates, names, quantities) and locates every error.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from bench.baseline import Build, add_baseline_flag, baselines, counterpart, working_tree
from bench.common import pinned
from bench.fixtures import tfjob_manifest

REPO = Path(__file__).resolve().parents[1]
KUBECONFORM_VERSION = "v0.8.0"
KUBECONFORM_DIR = Path.home() / ".cache" / "jobgate" / "tools" / f"kubeconform-{KUBECONFORM_VERSION}"
KUBECONFORM = KUBECONFORM_DIR / "kubeconform"

PARSE_ONLY = """
import sys, yaml_rs
count = 0
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as handle:
        data = yaml_rs.loads(handle.read(), parse_datetime=False)
    count += 1
print(count)
"""

PARSE_ONLY_PYYAML = """
import sys, yaml
loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
count = 0
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as handle:
        yaml.load(handle.read(), Loader=loader)
    count += 1
print(count)
"""


def ensure_kubeconform() -> Path:
    if KUBECONFORM.exists():
        return KUBECONFORM
    KUBECONFORM_DIR.mkdir(parents=True, exist_ok=True)
    environment = {**os.environ, "GOBIN": str(KUBECONFORM_DIR), "CGO_ENABLED": "0"}
    module = f"github.com/yannh/kubeconform/cmd/kubeconform@{KUBECONFORM_VERSION}"
    print(f"building kubeconform {KUBECONFORM_VERSION} (go install {module}) ...", file=sys.stderr)
    subprocess.run(["go", "install", module], check=True, env=environment, cwd=tempfile.gettempdir())
    return KUBECONFORM


def _json_schema(node: Any) -> Any:
    """An apiextensions structural schema as the draft-4 JSON Schema kubeconform compiles (as openapi2jsonschema)."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes") and k != "nullable"}
    if node.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    if node.get("x-kubernetes-preserve-unknown-fields"):
        out.setdefault("additionalProperties", True)
    return out


def write_schemas(directory: Path) -> str:
    """One JSON Schema per served kind from the CRDs; returns kubeconform's -schema-location template."""
    yaml = YAML(typ="safe", pure=True)
    for crd_path in sorted((REPO / "manifests" / "base" / "crds").glob("*_*.yaml")):
        crd = yaml.load(crd_path.read_text())
        if not isinstance(crd, dict) or crd.get("kind") != "CustomResourceDefinition":
            continue
        kind = crd["spec"]["names"]["kind"].lower()
        for version in crd["spec"]["versions"]:
            schema = _json_schema(version["schema"]["openAPIV3Schema"])
            schema.setdefault("properties", {}).update(
                {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}
            )
            (directory / f"{kind}_{version['name']}.json").write_text(json.dumps(schema))
    return str(directory / "{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json")


def realistic_tfjob(index: int) -> dict[str, Any]:
    manifest = tfjob_manifest()
    manifest["metadata"]["name"] = f"imagenet-resnet50-{index}"
    manifest["metadata"]["annotations"] = {"owner": f"vision-{index % 17}@example.com", "ticket": f"ML-{1000 + index}"}
    for replica_type, replica in manifest["spec"]["tfReplicaSpecs"].items():
        container = replica["template"]["spec"]["containers"][0]
        container["image"] = f"registry.example.com/vision/resnet50:2.{index % 50}"
        container["env"] += [
            {"name": "RUN_ID", "value": f"run-{index}-{replica_type.lower()}"},
            {"name": "DATA_DIR", "value": "/data/imagenet/train"},
        ]
    return manifest


def generate(directory: Path, count: int) -> tuple[Path, Path, int, int]:
    realistic, mnist = directory / "realistic", directory / "mnist"
    realistic.mkdir()
    mnist.mkdir()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[attr-defined]
    sizes = []
    for index in range(count):
        path = realistic / f"tfjob-{index:05d}.yaml"
        with path.open("w") as handle:
            yaml.dump(realistic_tfjob(index), handle)
        sizes.append(path.stat().st_size)
    example = (REPO / "examples" / "valid" / "tfjob-mnist.yaml").read_text()
    for index in range(count):
        (mnist / f"mnist-{index:05d}.yaml").write_text(example.replace("name: mnist", f"name: mnist-{index}"))
    return realistic, mnist, int(statistics.mean(sizes)), len(example)


@dataclass
class Measure:
    seconds: float
    max_rss_kb: int
    returncode: int


# GNU time, which starts the measured process by a fork of its own small one: a process this bench
# starts directly reports in ru_maxrss the bench's own size, inherited through fork (or vfork) and exec.
GNU_TIME = "/usr/bin/time"


def measure(argv: list[str], cpu: int, build: Build | None = None) -> Measure:
    """Wall time and peak RSS of one process pinned to ``cpu`` (run as ``build`` runs, when it is one's).
    The peak RSS is GNU time's (``%M``); without it, the child's ru_maxrss, at least this bench's size."""

    command = pinned(argv, cpu)
    cwd, env = (build.cwd, build.environment()) if build is not None else (REPO, None)
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        timed = [GNU_TIME, "--format=%M", f"--output={rss.name}", *command] if os.path.exists(GNU_TIME) else command
        started = time.perf_counter()
        process = subprocess.Popen(timed, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        reported = rss.read().split()
    process.returncode = os.waitstatus_to_exitcode(status)
    peak = int(reported[-1]) if timed is not pinned and reported and reported[-1].isdigit() else usage.ru_maxrss
    return Measure(elapsed, peak, process.returncode)


# One small valid example per family.
ONE_FILE_EXAMPLES = {
    "kubedl": "xgboostjob-higgs.yaml",
    "mlkube": "mxjob-local.yaml",
    "t9k": "t9k-genericjob-ps.yaml",
    "diengine": "dijob-gobigger.yaml",
    "volcano": "volcano-pytorch.yaml",
}


def installed_jobgate(directory: Path) -> Path:
    """The ``jobgate`` command of this tree's wheel, installed with its dependencies in a new venv."""
    wheels = directory / "wheels"
    environment = {k: v for k, v in os.environ.items() if k != "JOBGATE_COMPILE"}
    build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels), str(REPO)]
    subprocess.run(build, check=True, env=environment)
    subprocess.run([sys.executable, "-m", "venv", str(directory / "venv")], check=True)
    (wheel,) = wheels.glob("jobgate-*.whl")
    subprocess.run([directory / "venv" / "bin" / "python", "-m", "pip", "install", "--quiet", str(wheel)], check=True)
    return directory / "venv" / "bin" / "jobgate"


def installed_build(directory: Path) -> Build:
    """This tree's wheel installed as a baseline's is (``installed_jobgate``), run where no jobgate
    source lies: the development environment's editable install adds its finder to every start-up
    (importlib.util, pathlib: some 50 M instructions), which no user's ``pip install`` pays."""
    python = installed_jobgate(directory).parent / "python"
    return Build("jobgate", python, directory)


def one_file_figures(jobgate: Path, kubeconform_argv: list[str], runs: int, cpu: int) -> None:
    print(f"\none small file per family (median of {runs} interleaved runs, wall):")
    print("| family | file | jobgate validate | kubeconform -strict | × kubeconform |")
    print("|---|---|---|---|---|")
    for family, name in ONE_FILE_EXAMPLES.items():
        path = str(REPO / "examples" / "valid" / name)
        tools = {"jobgate": [str(jobgate), "validate", "-j", "1", path], "kubeconform": [*kubeconform_argv, path]}
        for argv_ in tools.values():  # bytecode written, files in the page cache
            measure(argv_, cpu)
        times: dict[str, list[float]] = {tool: [] for tool in tools}
        for _ in range(runs):
            for tool, argv_ in tools.items():
                times[tool].append(measure(argv_, cpu).seconds)
        ours, theirs = statistics.median(times["jobgate"]), statistics.median(times["kubeconform"])
        print(f"| {family} | {name} | {ours * 1000:.1f} ms | {theirs * 1000:.1f} ms | {ours / theirs:.2f} |")
    # What any Python command costs here before its own code: the interpreter, and the modules
    # the console script (re) and an argparse command line need.
    python = str(jobgate.parent / "python")
    floors = {"python -c pass": [python, "-c", "pass"],
              "python -c 'import re, argparse'": [python, "-c", "import re, argparse"]}  # fmt: skip
    for label, argv_ in floors.items():
        floor = statistics.median(measure(argv_, cpu).seconds for _ in range(runs))
        print(f"| (floor) | {label} | {floor * 1000:.1f} ms | | |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--single-runs", type=int, default=15, help="runs of the one-file measurement")
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)), help="CPU to pin every tool to")
    parser.add_argument("--one-file-only", action="store_true", help="only the one-file figures of each family")
    parser.add_argument("--no-compiled", action="store_true", help="skip the mypyc-compiled builds")
    parser.add_argument(
        "--compiled-tree",
        type=Path,
        help="where the mypyc-compiled copy of this tree is kept: built there when absent, reused when there",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions per file and at start-up (valgrind) instead of timing; no kubeconform",
    )
    parser.add_argument("--instruction-files", type=int, default=400, help="files per set counted (default 400)")
    add_baseline_flag(parser)
    args = parser.parse_args(argv)
    # Start-up is measured as users meet it: with bytecode caches written on the first run.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.instructions:
        return instruction_counts(args)

    kubeconform = ensure_kubeconform()
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="jobgate-cli-bench-") as temporary:
        root = Path(temporary)
        compiled = None
        if not args.no_compiled and not args.one_file_only:
            from bench.webhook_bench import kept_or_compiled

            compiled = kept_or_compiled(args.compiled_tree, root)
        installed = installed_build(root / "installed")
        builds = [installed, *working_tree(compiled)[1:], *baselines(args.baseline, compiled=compiled is not None)]
        # The working tree's pure build keeps the name the docs' tables use.
        named = {("jobgate validate -j 1" if b.label == "jobgate" else f"{b.label} validate -j 1"): b for b in builds}
        (root / "schemas").mkdir()
        location = write_schemas(root / "schemas")
        realistic, mnist, realistic_size, mnist_size = generate(root, args.files)
        kubeconform_argv = [str(kubeconform), "-n", "1", "-strict", "-summary", "-schema-location", location]
        one_file_figures(installed.python.parent / "jobgate", kubeconform_argv, args.single_runs, args.cpu)
        if args.one_file_only:
            return 0
        sets = {
            f"realistic TFJobs (~{realistic_size / 1024:.1f} KB)": realistic,
            f"tfjob-mnist.yaml copies ({mnist_size / 1024:.1f} KB)": mnist,
        }
        for label, directory in sets.items():
            files = sorted(str(p) for p in directory.iterdir())
            tools: dict[str, tuple[list[str], Build | None]] = {
                **{name: (b.command("validate", "-j", "1", str(directory)), b) for name, b in named.items()},
                "kubeconform -n 1 -strict": ([*kubeconform_argv, str(directory)], None),
                "bare parse, yaml-rs": ([python, "-c", PARSE_ONLY, *files], None),
                "bare parse, PyYAML C loader": ([python, "-c", PARSE_ONLY_PYYAML, *files], None),
            }
            for name, (argv_, build) in tools.items():  # bytecode written, files in the page cache
                check = measure(argv_, args.cpu, build)
                if check.returncode != 0:
                    print(f"warning: {name} exited {check.returncode} on {label}", file=sys.stderr)
            results: dict[str, list[Measure]] = {name: [] for name in tools}
            for _ in range(args.rounds):
                for name, (tool_argv, build) in tools.items():
                    results[name].append(measure(tool_argv, args.cpu, build))
            single = files[0]
            one_file = {
                "jobgate validate -j 1": (installed.command("validate", "-j", "1", single), installed),
                "kubeconform -n 1 -strict": ([*kubeconform_argv, single], None),
            }
            single_times = {
                name: statistics.median(measure(a[0], args.cpu, a[1]).seconds for _ in range(args.single_runs))
                for name, a in one_file.items()
            }
            report(label, len(files), results, single_times, builds=named, refs=args.baseline)
    load = os.getloadavg()
    print(
        f"\nload average during the run: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
        f"({os.cpu_count()} CPUs; every tool pinned to CPU {args.cpu})"
    )
    return 0


def count_instructions(argv: list[str], build: Build) -> int:
    """Instructions of one run of ``argv`` as ``build`` runs (cachegrind, no cache simulation)."""
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", *argv]
    environment = build.environment()
    done = subprocess.run(command, cwd=build.cwd, env=environment, capture_output=True, text=True, check=False)
    found = [line for line in done.stderr.splitlines() if "I   refs:" in line or "I refs:" in line]
    if not found:
        raise SystemExit(f"{build.label}: no instruction count from valgrind:\n{done.stderr[-2000:]}")
    return int(found[-1].rsplit(":", 1)[1].replace(",", ""))


def instruction_counts(args: argparse.Namespace) -> int:
    """``--instructions``: instructions per file and at start-up of each build, on both sets."""
    import shutil

    if shutil.which("valgrind") is None:
        print("valgrind is needed for --instructions (apt-get install valgrind)", file=sys.stderr)
        return 2
    many = args.instruction_files
    few = max(1, many // 10)
    with tempfile.TemporaryDirectory(prefix="jobgate-cli-instructions-") as temporary:
        root = Path(temporary)
        compiled = None
        if not args.no_compiled:
            from bench.webhook_bench import kept_or_compiled

            compiled = kept_or_compiled(args.compiled_tree, root)
        installed = installed_build(root / "installed")
        builds = [installed, *working_tree(compiled)[1:], *baselines(args.baseline, compiled=compiled is not None)]
        realistic, mnist, realistic_size, mnist_size = generate(root, many)
        sets = {
            f"realistic TFJobs (~{realistic_size / 1024:.1f} KB)": realistic,
            f"tfjob-mnist.yaml copies ({mnist_size / 1024:.1f} KB)": mnist,
        }
        refs = args.baseline
        print(f"instructions of `jobgate validate -j 1`: per file from {few} and {many} files; x REF: REF's / this")
        for label, directory in sets.items():
            smaller = root / f"{directory.name}-{few}"
            smaller.mkdir()
            for path in sorted(directory.iterdir())[:few]:
                shutil.copyfile(path, smaller / path.name)
            counted: dict[str, tuple[float, float]] = {}
            for build in builds:
                run_few, run_many = (
                    build.command("validate", "-j", "1", str(smaller)),
                    build.command("validate", "-j", "1", str(directory)),
                )
                subprocess.run(run_few, cwd=build.cwd, env=build.environment(), stdout=subprocess.DEVNULL, check=False)
                small, large = count_instructions(run_few, build), count_instructions(run_many, build)
                per_file = (large - small) / (many - few)
                counted[build.label] = (per_file, small - few * per_file)
            print(f"\n{label}")
            print("| build | per file | start-up |" + "".join(f" × {ref} |" for ref in refs))
            print("|---|---:|---:|" + "---:|" * len(refs))
            for build in builds:
                per_file, start = counted[build.label]
                against = ""
                for ref in refs:
                    other = counterpart(build, builds, ref) if not build.baseline else None
                    against += f" {counted[other.label][0] / per_file:.2f} |" if other is not None else " |"
                print(f"| {build.label} | {per_file / 1000:,.1f} k | {start / 1e6:,.1f} M |{against}")
    return 0


def report(
    label: str,
    count: int,
    results: dict[str, list[Measure]],
    single: dict[str, float],
    *,
    builds: dict[str, Build],
    refs: list[str],
) -> None:
    rates = {name: count / statistics.median(m.seconds for m in runs) for name, runs in results.items()}
    reference = rates["kubeconform -n 1 -strict"]
    name_of = {id(b): name for name, b in builds.items()}
    print(f"\n{label}, {count} files")
    print(
        "| tool | manifests/s | × kubeconform |"
        + "".join(f" × {ref} |" for ref in refs)
        + " one file, wall | peak RSS |"
    )
    print("|---|---|---|" + "---|" * len(refs) + "---|---|")
    for name, runs in results.items():
        rss = max(m.max_rss_kb for m in runs) / 1024
        one = f"{single[name] * 1000:.0f} ms" if name in single else ""
        against = ""
        build = builds.get(name)
        for ref in refs:
            other = counterpart(build, list(builds.values()), ref) if build is not None and not build.baseline else None
            against += f" {rates[name] / rates[name_of[id(other)]]:.2f} |" if other is not None else " |"
        print(f"| {name} | {rates[name]:,.0f} | {rates[name] / reference:.2f} |{against} {one} | {rss:.0f} MB |")


if __name__ == "__main__":
    sys.exit(main())
